#!/bin/sh
# SPDX-License-Identifier: MIT
# Build TinySTM's runtime for code compiled with gcc -fgnu-tm (its abi/gcc
# directory: a libitm.so of its own) from a TinySTM tree that the user
# provides, so that the benchmarks' itm binaries, the very object code that
# libitm and libschedstm-itm run, can run on TinySTM too:
#
#   bench/peers/build-tinystm-abi.sh /path/to/tinystm /tmp/tinystm-abi
#   bench/harness/sweep.py --backends itm,schedstm-itm --itm-lib tinystm=/tmp/tinystm-abi ...
#
# The tree is copied to OUT/src and built there with its own Makefiles and
# defaults (the user's tree is never written); OUT/libitm.so.1 then names
# the library, and LD_LIBRARY_PATH=OUT makes a -fgnu-tm binary load it in
# place of GCC's libitm. Nothing of TinySTM is in this repository.
set -eu

usage() { # usage STATUS: on stdout for --help (0), else on stderr
  if [ "$1" -eq 0 ]; then
    echo "usage: $0 TINYSTM_TREE OUT_DIR"
  else
    echo "usage: $0 TINYSTM_TREE OUT_DIR" >&2
  fi
  exit "$1"
}
case "${1:-}" in
  -h | --help) usage 0 ;;
  -*)
    echo "$0: unknown option '$1'" >&2
    usage 2
    ;;
esac
[ $# -eq 2 ] || usage 2
tree=$1
out=$2
for f in include/stm.h Makefile abi/gcc/Makefile; do
  if [ ! -e "$tree/$f" ]; then
    echo "$0: $tree is not a TinySTM tree with its gcc ABI (no $f)" >&2
    exit 1
  fi
done
make=$(command -v make || command -v gmake) || {
  echo "$0: make not found" >&2
  exit 1
}
mkdir -p "$out"
rm -rf "$out/src"
cp -R "$tree" "$out/src"
"$make" -C "$out/src" clean >/dev/null
"$make" -C "$out/src" >"$out/build.log" 2>&1 || {
  echo "$0: building TinySTM failed, see $out/build.log" >&2
  exit 1
}
"$make" -C "$out/src/abi/gcc" >>"$out/build.log" 2>&1 || {
  echo "$0: building TinySTM's gcc ABI failed, see $out/build.log" >&2
  exit 1
}
[ -e "$out/src/abi/gcc/libitm.so" ] || {
  echo "$0: $out/src/abi/gcc/libitm.so was not built, see $out/build.log" >&2
  exit 1
}
ln -sf src/abi/gcc/libitm.so "$out/libitm.so.1"
echo "$0: $out/libitm.so.1 -> TinySTM's gcc ABI (LD_LIBRARY_PATH=$out)"
