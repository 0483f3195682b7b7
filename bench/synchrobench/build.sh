#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build synchrobench's C STM benchmarks [Gramoli15] against schedstm, against
# TinySTM and uninstrumented, from a synchrobench tree that you provide (it
# is never part of this repository; bench/synchrobench/README.md says where
# to get it).
#
#   bench/synchrobench/build.sh [options] SYNCHROBENCH_DIR OUT_DIR
#
#   SYNCHROBENCH_DIR      the repository's root or its c-cpp directory
#   --schedstm-build DIR  a CMake build directory of this repository: headers
#                         from its include/, the library from DIR/src
#                         (default: <repo>/build)
#   --prefix DIR          an installed schedstm instead (DIR/include, and the
#                         library in DIR/lib, lib64 or lib/<multiarch>)
#   --benchs "B ..."      the benchmarks, separated by spaces or commas
#                         (default: all five of c-cpp's Makefile's BENCHS:
#                         sftree linkedlist hashtable rbtree skiplist)
#   --variants "V ..."    schedstm, schedstm-inline, sequential and/or
#                         tinystm (default: the first three, and tinystm too
#                         when --tinystm-dir is given)
#   --tinystm-dir DIR     a TinySTM 1.0.x source tree: the tinystm variant,
#                         synchrobench's own tinystm.h mapping (STM=TINY10B)
#                         on a copy of the tree in OUT_DIR/tinystm-lib, built
#                         there with its own default Makefile settings
#   --link static|shared  schedstm's static library (default, as TinySTM's
#                         libstm.a is linked) or the shared one
#   --cc CC               the C compiler (default: gcc)
#   -j N                  parallel compilations (default: 2)
#
# Writes OUT_DIR/<variant>/<bench> for each variant and benchmark, the
# objects under OUT_DIR/<variant>/obj-<bench>/ and the compiler's messages
# in OUT_DIR/<variant>/build-<bench>.log. Each benchmark is built by its own
# Makefile in the tree (make -C, the tree's flags: -O3 -DNDEBUG, -std=gnu89
# where it asks; plus -fcommon, for a global the skip list defines in a
# header, which GCC >= 10 rejects by default), with BUILDIR and BINDIR in OUT_DIR, so that nothing is
# written into SYNCHROBENCH_DIR; glibc's malloc (MALLOC unset: the top-level
# Makefile's tcmalloc is not used, for any variant). The variants:
#   sequential       STM=SEQUENTIAL: no synchronisation (one thread only)
#   tinystm          STM=TINY10B, TINY10BDIR the TinySTM copy, with
#                    bench/synchrobench/tinystm-compat.h force-included
#                    (stm_start's argument, a union in TinySTM >= 1.0.5)
#   schedstm         STM=TINY10B as well (the benchmarks' STM code paths are
#                    under TINY10B), CFLAGS from the environment putting
#                    bench/synchrobench first on the include path, so that
#                    "tm.h" is bench/synchrobench/tm.h (schedstm.h's macros)
#                    and not the tree's; TINY10BDIR an empty directory in
#                    OUT_DIR/schedstm-shim, whose lib/libstm.a is an empty
#                    archive (the Makefile links -lstm)
#   schedstm-inline  the same with -DSSTM_INLINE_BARRIERS
# Exit status: 0 when every requested program was built (or with --help), 1
# otherwise (each failure is reported with the errors of its log), 2 on a
# usage error (a wrong option, a directory that is not a synchrobench or
# TinySTM tree, a benchmark the tree lacks, no schedstm library).
set -u

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=../common/tinystm-copy.sh
. "$repo/bench/common/tinystm-copy.sh"
sstm_build="$repo/build"
prefix=""
all_benchs="sftree linkedlist hashtable rbtree skiplist"
benchs=$all_benchs
variants=""
tinystm=""
link=static
cc=gcc
jobs=2

usage() { # usage [STATUS]: the usage text, on stdout for --help (0), else on stderr
  if [ "${1:-2}" = 0 ]; then
    sed -n '3,30p' "$0" | sed 's/^# \{0,1\}//'
  else
    sed -n '3,30p' "$0" | sed 's/^# \{0,1\}//' >&2
  fi
  exit "${1:-2}"
}

while [ $# -gt 0 ]; do
  case "$1" in
    --schedstm-build) [ $# -ge 2 ] || usage; sstm_build=$2; shift 2 ;;
    --prefix) [ $# -ge 2 ] || usage; prefix=$2; shift 2 ;;
    --benchs) [ $# -ge 2 ] || usage; benchs=${2//,/ }; shift 2 ;;
    --variants) [ $# -ge 2 ] || usage; variants=${2//,/ }; shift 2 ;;
    --tinystm-dir) [ $# -ge 2 ] || usage; tinystm=$2; shift 2 ;;
    --link) [ $# -ge 2 ] || usage; link=$2; shift 2 ;;
    --cc) [ $# -ge 2 ] || usage; cc=$2; shift 2 ;;
    -j) [ $# -ge 2 ] || usage; jobs=$2; shift 2 ;;
    -h | --help) usage 0 ;;
    --) shift; break ;;
    -*) echo "build.sh: unknown option '$1'" >&2; usage ;;
    *) break ;;
  esac
done
[ $# -eq 2 ] || { echo "build.sh: SYNCHROBENCH_DIR and OUT_DIR are required" >&2; usage; }
sb=$1
out=$2

bench_dir() { # bench -> its directory under c-cpp/src
  case "$1" in
    sftree) echo trees/sftree ;;
    linkedlist) echo linkedlists/lockfree-list ;;
    hashtable) echo hashtables/lockfree-ht ;;
    rbtree) echo trees/rbtree ;;
    skiplist) echo skiplists/sequential ;;
    *) return 1 ;;
  esac
}
for b in $benchs; do
  bench_dir "$b" >/dev/null || { echo "build.sh: unknown benchmark '$b' ($all_benchs)" >&2; exit 2; }
done
[ -n "$benchs" ] || { echo "build.sh: --benchs names no benchmark" >&2; exit 2; }
if [ -z "$variants" ]; then
  variants="schedstm schedstm-inline sequential"
  [ -n "$tinystm" ] && variants="$variants tinystm"
fi
for v in $variants; do
  case "$v" in
    schedstm | schedstm-inline | sequential) ;;
    tinystm) [ -n "$tinystm" ] || { echo "build.sh: variant tinystm needs --tinystm-dir" >&2; exit 2; } ;;
    *) echo "build.sh: unknown variant '$v' (schedstm, schedstm-inline, sequential, tinystm)" >&2; exit 2 ;;
  esac
done
case "$link" in static | shared) ;; *) echo "build.sh: --link takes static or shared" >&2; exit 2 ;; esac
case "$jobs" in '' | *[!0-9]* | 0) echo "build.sh: -j needs a positive number" >&2; exit 2 ;; esac
if [ -n "$tinystm" ]; then
  if [ ! -f "$tinystm/include/stm.h" ] || [ ! -f "$tinystm/include/mod_mem.h" ] || [ ! -f "$tinystm/Makefile" ]; then
    echo "build.sh: '$tinystm' is not a TinySTM tree (no include/stm.h, include/mod_mem.h, Makefile)" >&2
    exit 2
  fi
  tinystm=$(cd "$tinystm" && pwd)
fi
[ -f "$sb/c-cpp/include/tm.h" ] && sb="$sb/c-cpp"
if [ ! -f "$sb/include/tm.h" ] || [ ! -f "$sb/common/Makefile.common" ]; then
  echo "build.sh: '$1' is not a synchrobench tree (no c-cpp/include/tm.h, c-cpp/common/Makefile.common)" >&2
  exit 2
fi
sb=$(cd "$sb" && pwd)
missing=""
for b in $benchs; do
  [ -f "$sb/src/$(bench_dir "$b")/Makefile" ] || missing="$missing $b"
done
if [ -n "$missing" ]; then
  echo "build.sh: '$sb' has no$missing (no src/<dir>/Makefile there); build the others with --benchs" >&2
  exit 2
fi
command -v make >/dev/null || { echo "build.sh: make not found" >&2; exit 2; }
command -v "$cc" >/dev/null || { echo "build.sh: compiler '$cc' not found" >&2; exit 2; }

# Where the library is (only the schedstm variants need it).
case " $variants " in
  *" schedstm "* | *" schedstm-inline "*)
    if [ -n "$prefix" ]; then
      inc="$prefix/include"
      libdir=""
      for d in "$prefix/lib" "$prefix/lib64" "$prefix"/lib/*-linux-gnu; do
        if [ -e "$d/libschedstm.so" ] || [ -e "$d/libschedstm.a" ]; then libdir=$d; break; fi
      done
    else
      inc="$repo/include"
      libdir="$sstm_build/src"
    fi
    if [ "$link" = static ]; then libfile=libschedstm.a; else libfile=libschedstm.so; fi
    if [ ! -f "$inc/schedstm/schedstm.h" ] || [ -z "$libdir" ] || [ ! -e "$libdir/$libfile" ]; then
      echo "build.sh: no schedstm headers in '$inc' or no $libfile in '${libdir:-$prefix/lib*}'" >&2
      echo "  (build the library first: cmake -B build && cmake --build build, or pass --prefix;" \
        "the static library is the target schedstm_static, or use --link shared)" >&2
      exit 2
    fi
    libdir=$(cd "$libdir" && pwd)
    if [ "$link" = static ]; then
      # the static library's own dependencies (pkg-config's Libs.private):
      # hwloc when this system has it (the library then uses it)
      sstm_libs="$libdir/libschedstm.a -lpthread"
      if echo 'int main(void){return 0;}' | "$cc" -x c - -lhwloc -o /dev/null 2>/dev/null; then
        sstm_libs="$libdir/libschedstm.a -lhwloc -lpthread"
      fi
    else
      sstm_libs="-L$libdir -Wl,-rpath,$libdir -lschedstm -lpthread"
    fi
    ;;
esac

mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)

# TinySTM, built once in a copy of the user's tree (bench/common/tinystm-copy.sh).
case " $variants " in
  *" tinystm "*)
    tiny_build="$out/tinystm-lib"
    sstm_tinystm_copy "$tinystm" "$out" || exit 1
    ;;
esac
# The schedstm variants' stand-in for TINY10BDIR: an empty include
# directory and an empty libstm.a for the Makefile's -I and -lstm.
case " $variants " in
  *" schedstm "* | *" schedstm-inline "*)
    shim="$out/schedstm-shim"
    mkdir -p "$shim/include" "$shim/lib" || exit 1
    if [ ! -f "$shim/lib/libstm.a" ]; then
      ar rc "$shim/lib/libstm.a" || { echo "build.sh: cannot create $shim/lib/libstm.a" >&2; exit 1; }
    fi
    ;;
esac

failed=0
built=""
for variant in $variants; do
  vdir="$out/$variant"
  mkdir -p "$vdir" || exit 1
  # -fcommon: the skip list defines a global in a header, which GCC >= 10
  # rejects by default (as STAMP does: bench/stamp/build.sh)
  env_cflags="-fcommon"
  env_ldflags=""
  case "$variant" in
    sequential) stm_vars="STM=SEQUENTIAL" ;;
    tinystm)
      stm_vars="STM=TINY10B TINY10BDIR=$tiny_build"
      env_cflags="$env_cflags -I$tiny_build/include -include $here/tinystm-compat.h"
      ;;
    schedstm | schedstm-inline)
      stm_vars="STM=TINY10B TINY10BDIR=$shim"
      env_cflags="$env_cflags -I$here -I$inc"
      [ "$variant" = schedstm-inline ] && env_cflags="$env_cflags -DSSTM_INLINE_BARRIERS"
      env_ldflags=$sstm_libs
      ;;
  esac
  for b in $benchs; do
    objdir="$vdir/obj-$b"
    bindir="$vdir/bin-$b"
    log="$vdir/build-$b.log"
    rm -rf "$objdir" "$bindir" "$vdir/$b"
    mkdir -p "$objdir" "$bindir"
    # CFLAGS and LDFLAGS from the environment: the Makefiles append theirs
    # (+=) to them; on the command line they would replace them.
    # shellcheck disable=SC2086
    if env CFLAGS="$env_cflags" LDFLAGS="$env_ldflags" make --no-print-directory -j "$jobs" \
      -C "$sb/src/$(bench_dir "$b")" $stm_vars CC="$cc" MALLOC= VERSION= \
      BUILDIR="$objdir" BINDIR="$bindir" >"$log" 2>&1 &&
      prog=$(find "$bindir" -maxdepth 1 -type f -perm -u+x | head -1) && [ -n "$prog" ]; then
      mv "$prog" "$vdir/$b" && rmdir "$bindir" 2>/dev/null
      built="$built $variant/$b"
    else
      echo "build.sh: $b ($variant) failed; the end of $log:" >&2
      grep -E "error|undefined reference" "$log" | head -20 >&2
      failed=1
    fi
  done
done
echo "build.sh: built:${built:- nothing} (in $out)"
exit $failed
