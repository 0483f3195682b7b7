# SPDX-License-Identifier: MIT
# Sourced by bench/stamp/build.sh and bench/synchrobench/build.sh.
#
# sstm_tinystm_copy TREE OUT: build TinySTM once in a copy of the user's
# tree TREE (nothing is written into that tree), OUT/tinystm-lib, with its
# Makefile's defaults: the design, contention manager (CM_SUICIDE) and
# options the other same-code comparisons use (bench/CMakeLists.txt,
# tinystm-same). The copy is rebuilt when it came from another tree (its
# path in .sstm-source) or when any file of the tree is newer than its
# libstm.a (a configuration is set in the Makefile as much as in the
# headers). The build's messages go to OUT/tinystm-lib.log. Returns 0, or
# 1 with the log's end on stderr.
sstm_tinystm_copy() {
  local tree=$1 out=$2 tiny_build="$2/tinystm-lib"
  if [ ! -f "$tiny_build/lib/libstm.a" ] ||
    [ "$(cat "$tiny_build/.sstm-source" 2>/dev/null)" != "$tree" ] ||
    [ -n "$(find "$tree" -type f -newer "$tiny_build/lib/libstm.a" -print -quit)" ]; then
    rm -rf "$tiny_build" && cp -r "$tree" "$tiny_build" || return 1
    printf '%s\n' "$tree" >"$tiny_build/.sstm-source" || return 1
    if ! { make -C "$tiny_build" clean && make -C "$tiny_build"; } >"$out/tinystm-lib.log" 2>&1; then
      echo "build.sh: building TinySTM in $tiny_build failed; the end of $out/tinystm-lib.log:" >&2
      tail -20 "$out/tinystm-lib.log" >&2
      return 1
    fi
  fi
  return 0
}
