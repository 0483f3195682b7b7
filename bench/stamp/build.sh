#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build STAMP 0.9.10's applications against schedstm, and their sequential
# versions for reference, from a STAMP tree that you provide (it is never
# part of this repository; docs/stamp.md says where to get it).
#
#   bench/stamp/build.sh [options] STAMP_DIR OUT_DIR
#
#   --schedstm-build DIR  a CMake build directory of this repository: headers
#                         from its include/, the library from DIR/src
#                         (default: <repo>/build)
#   --prefix DIR          an installed schedstm instead (DIR/include, and the
#                         library in DIR/lib, lib64 or lib/<multiarch>)
#   --apps "A B ..."      the applications, separated by spaces or commas
#                         (default: all eight: bayes genome intruder kmeans
#                         labyrinth ssca2 vacation yada)
#   --variants "V ..."    stm, seq, tinystm and/or itm (default: stm seq,
#                         and tinystm too when --tinystm-dir is given)
#   --tinystm-dir DIR     a TinySTM source tree: also build every application
#                         against TinySTM (bench/stamp/tinystm), the tree
#                         copied to OUT_DIR/tinystm-lib and built there with
#                         its own default Makefile settings
#   --no-inline           the barriers as calls (default: SSTM_INLINE_BARRIERS)
#   --itm-relaxed         the itm variant's transactions as __transaction_relaxed
#                         blocks and TM_CALLABLE as transaction_callable (default:
#                         __transaction_atomic and transaction_safe; docs/stamp.md)
#   --cc CC               the C compiler (default: gcc)
#   -j N                  parallel compilations (default: 2)
#
# Writes OUT_DIR/<app>/<app>-stm (schedstm: STAMP's lib/tm.h with -DSTM,
# which includes bench/stamp/stm.h) and OUT_DIR/<app>/<app>-seq (STAMP's
# sequential configuration: no TM at all), each with its objects under
# OUT_DIR/<app>/obj-<variant>/ and the compiler's messages in
# OUT_DIR/<app>/build-<variant>.log; and the inputs STAMP ships gzipped,
# decompressed into OUT_DIR/<app>/inputs/. Nothing is written into
# STAMP_DIR and no STAMP file is modified: the source list and each
# application's own flags are read from its Defines.common.mk by make, and
# the compilation rules are this script's. ssca2's two builds also get
# bench/stamp/ssca2_digest.c (a digest of the graph it builds, which it does
# not print itself), linked with -Wl,--wrap=thread_start. The itm variant
# compiles the application once with gcc -fgnu-tm, STAMP's lib/tm.h
# replaced by bench/stamp/tm_itm.h (force-included), and links the same
# objects twice: OUT_DIR/<app>/<app>-itm with GCC's libitm (libitm.so.1:
# another runtime of that ABI replaces it through LD_LIBRARY_PATH) and
# OUT_DIR/<app>/<app>-schedstm-itm with libschedstm-itm. An application
# that GCC rejects in this mode fails to build (docs/stamp.md says which).
#
# Flags: STAMP's own (-O3 -g -pthread -Wall, the application's -D options),
# plus -fcommon (STAMP defines some globals in more than one file, which
# GCC >= 10 rejects by default). Exit status: 0 when every requested
# program was built (or with --help), 1 otherwise (each failure is reported
# with the errors of its log), 2 on a usage error (a wrong option, a
# directory that is not a STAMP or TinySTM tree, an application the tree
# lacks, no schedstm library).
set -u

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=../common/tinystm-copy.sh
. "$repo/bench/common/tinystm-copy.sh"
sstm_build="$repo/build"
prefix=""
apps="bayes genome intruder kmeans labyrinth ssca2 vacation yada"
variants=""
tinystm=""
inline=1
itm_relaxed=0
cc=gcc
jobs=2

usage() { # usage [STATUS]: the usage text, on stdout for --help (0), else on stderr
  if [ "${1:-2}" = 0 ]; then
    sed -n '3,29p' "$0" | sed 's/^# \{0,1\}//'
  else
    sed -n '3,29p' "$0" | sed 's/^# \{0,1\}//' >&2
  fi
  exit "${1:-2}"
}

while [ $# -gt 0 ]; do
  case "$1" in
    --schedstm-build) [ $# -ge 2 ] || usage; sstm_build=$2; shift 2 ;;
    --prefix) [ $# -ge 2 ] || usage; prefix=$2; shift 2 ;;
    --apps) [ $# -ge 2 ] || usage; apps=${2//,/ }; shift 2 ;; # commas too, as the harness's
    --variants) [ $# -ge 2 ] || usage; variants=$2; shift 2 ;;
    --tinystm-dir) [ $# -ge 2 ] || usage; tinystm=$2; shift 2 ;;
    --no-inline) inline=0; shift ;;
    --itm-relaxed) itm_relaxed=1; shift ;;
    --cc) [ $# -ge 2 ] || usage; cc=$2; shift 2 ;;
    -j) [ $# -ge 2 ] || usage; jobs=$2; shift 2 ;;
    -h | --help) usage 0 ;;
    --) shift; break ;;
    -*) echo "build.sh: unknown option '$1'" >&2; usage ;;
    *) break ;;
  esac
done
[ $# -eq 2 ] || { echo "build.sh: STAMP_DIR and OUT_DIR are required" >&2; usage; }
stamp=$1
out=$2

for a in $apps; do
  case " bayes genome intruder kmeans labyrinth ssca2 vacation yada " in
    *" $a "*) ;;
    *) echo "build.sh: unknown application '$a'" >&2; exit 2 ;;
  esac
done
if [ -z "$variants" ]; then
  variants="stm seq"
  [ -n "$tinystm" ] && variants="$variants tinystm"
fi
for v in $variants; do
  case "$v" in
    stm | seq | itm) ;;
    tinystm) [ -n "$tinystm" ] || { echo "build.sh: variant tinystm needs --tinystm-dir" >&2; exit 2; } ;;
    *) echo "build.sh: unknown variant '$v' (stm, seq, tinystm, itm)" >&2; exit 2 ;;
  esac
done
if [ -n "$tinystm" ]; then
  if [ ! -f "$tinystm/include/stm.h" ] || [ ! -f "$tinystm/include/mod_mem.h" ] || [ ! -f "$tinystm/Makefile" ]; then
    echo "build.sh: '$tinystm' is not a TinySTM tree (no include/stm.h, include/mod_mem.h, Makefile)" >&2
    exit 2
  fi
  tinystm=$(cd "$tinystm" && pwd)
fi
case "$jobs" in '' | *[!0-9]* | 0) echo "build.sh: -j needs a positive number" >&2; exit 2 ;; esac
if [ ! -f "$stamp/lib/tm.h" ] || [ ! -f "$stamp/common/Defines.common.mk" ]; then
  echo "build.sh: '$stamp' is not a STAMP 0.9.10 tree (no lib/tm.h, common/Defines.common.mk)" >&2
  exit 2
fi
missing_apps=""
for a in $apps; do
  [ -f "$stamp/$a/Defines.common.mk" ] || missing_apps="$missing_apps $a"
done
if [ -n "$missing_apps" ]; then
  echo "build.sh: '$stamp' has no$missing_apps (no <app>/Defines.common.mk there);" \
    "build the others with --apps" >&2
  exit 2
fi
stamp=$(cd "$stamp" && pwd)
command -v make >/dev/null || { echo "build.sh: make not found" >&2; exit 2; }
command -v "$cc" >/dev/null || { echo "build.sh: compiler '$cc' not found" >&2; exit 2; }

# Where the library is.
if [ -n "$prefix" ]; then
  inc="$prefix/include"
  libdir=""
  for d in "$prefix/lib" "$prefix/lib64" "$prefix"/lib/*-linux-gnu; do
    if [ -e "$d/libschedstm.so" ]; then libdir=$d; break; fi
  done
else
  inc="$repo/include"
  libdir="$sstm_build/src"
fi
if [ ! -f "$inc/schedstm/schedstm.h" ] || [ -z "$libdir" ] || [ ! -e "$libdir/libschedstm.so" ]; then
  echo "build.sh: no schedstm headers in '$inc' or no libschedstm.so in '${libdir:-$prefix/lib*}'" >&2
  echo "  (build the library first: cmake -B build && cmake --build build, or pass --prefix)" >&2
  exit 2
fi
libdir=$(cd "$libdir" && pwd)
case " $variants " in
  *" itm "*)
    if [ ! -e "$libdir/libschedstm-itm.so" ]; then
      echo "build.sh: variant itm needs libschedstm-itm.so in '$libdir' (the library's ABI target)" >&2
      exit 2
    fi
    if ! printf 'int x;\nint main(void) { __transaction_atomic { x = 1; } return x - 1; }\n' |
      "$cc" -fgnu-tm -x c - -o /dev/null >/dev/null 2>&1; then
      echo "build.sh: variant itm: '$cc' cannot compile and link -fgnu-tm code (GCC with libitm)" >&2
      exit 2
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

base_cflags="-O3 -g -pthread -fcommon -Wall -Wno-unused-variable -Wno-unused-but-set-variable"
stm_cflags="-DSTM -I$here -I$inc"
[ "$inline" = 1 ] && stm_cflags="$stm_cflags -DSSTM_INLINE_BARRIERS"

# The application's own variables, as its Defines.common.mk sets them.
app_vars() { # app -> lines SRCS=..., CFLAGS=..., LIBS=..., PROG=...
  make -s --no-print-directory -C "$stamp/$1" -f - LIB=../lib sstm-print <<'MK'
include ./Defines.common.mk
sstm-print:
	@printf '%s\n' "SRCS=$(strip $(SRCS))" "CFLAGS=$(strip $(CFLAGS))" "LIBS=$(strip $(LIBS))" "PROG=$(strip $(PROG))"
MK
}

# compile SRC OBJ FLAGS... (run by xargs; messages to OBJ.log). The old
# object goes first: a compiler that fails leaves it in place, and the link
# would take an earlier build's (or another --itm-relaxed setting's) code.
compile_one() {
  src=$1 obj=$2
  shift 2
  rm -f "$obj"
  # shellcheck disable=SC2068
  "$cc" $@ -c "$src" -o "$obj" >"$obj.log" 2>&1
}
export -f compile_one
export cc

failed=0
built=""
for app in $apps; do
  vars=$(app_vars "$app") || { echo "build.sh: $app: cannot read $stamp/$app/Defines.common.mk" >&2; failed=1; continue; }
  srcs=$(sed -n 's/^SRCS=//p' <<<"$vars")
  app_cflags=$(sed -n 's/^CFLAGS=//p' <<<"$vars")
  app_libs=$(sed -n 's/^LIBS=//p' <<<"$vars")
  mkdir -p "$out/$app"
  for variant in $variants; do
    objdir="$out/$app/obj-$variant"
    log="$out/$app/build-$variant.log"
    mkdir -p "$objdir"
    if [ "$variant" = stm ]; then
      # STAMP's lib first: its tm.h, not bench/stamp/tm.h, for every file
      flags="$base_cflags $app_cflags -I$stamp/lib $stm_cflags"
      extra_src="$here/stm.c"
      libs="-L$libdir -Wl,-rpath,$libdir -lschedstm $app_libs -lpthread -lm"
    elif [ "$variant" = itm ]; then
      # tm_itm.h first in every file; STAMP's lib/tm.h, still included,
      # is then empty (its guard). -fno-tree-pre: as libschedstm-itm's
      # consumers get it (docs/design/itm.md), for libitm's link as well,
      # so that the three runtimes run one object code.
      flags="$base_cflags $app_cflags -DSTM -fgnu-tm -fno-tree-pre -I$stamp/lib -include $here/tm_itm.h"
      [ "$itm_relaxed" = 1 ] && flags="$flags -DSSTM_STAMP_ITM_RELAXED"
      extra_src="$here/stm_itm.c"
      libs="$app_libs -lpthread -lm"
    elif [ "$variant" = tinystm ]; then
      # bench/stamp/tinystm/stm.h is STAMP's <stm.h>; it includes TinySTM's
      # own stm.h from the directory after it (#include_next)
      flags="$base_cflags $app_cflags -DSTM -I$stamp/lib -I$here/tinystm -I$tiny_build/include"
      extra_src="$here/tinystm/stm.c"
      libs="$tiny_build/lib/libstm.a $app_libs -lpthread -lm"
    else
      flags="$base_cflags $app_cflags -I$stamp/lib"
      extra_src=""
      libs="$app_libs -lpthread -lm"
    fi
    # ssca2 prints nothing about the graph it builds: ssca2_digest.c, in
    # both builds, prints a digest of it for the harness to compare.
    if [ "$app" = ssca2 ]; then
      extra_src="$extra_src $here/ssca2_digest.c"
      flags="$flags -iquote $stamp/ssca2" # its quoted includes are ssca2's
      libs="-Wl,--wrap=thread_start $libs"
    fi
    objs=""
    jobsfile="$objdir/jobs"
    : >"$jobsfile"
    for s in $srcs $extra_src; do
      case "$s" in /*) path=$s ;; *) path="$stamp/$app/$s" ;; esac
      name=$(basename "$s" .c)
      case "$s" in
        "$here/stm.c") name=sstm_stamp_adapter ;;
        "$here/tinystm/stm.c") name=sstm_stamp_tinystm_adapter ;;
        "$here/stm_itm.c") name=sstm_stamp_itm_adapter ;;
        "$here/ssca2_digest.c") name=sstm_ssca2_digest ;;
      esac
      case "$s" in ../lib/*) name="lib_$name" ;; esac
      obj="$objdir/$name.o"
      objs="$objs $obj"
      # one line per compilation: src obj flags (cwd: the app's directory,
      # so that its quoted includes resolve as in STAMP's own build)
      f=$flags
      # the adapter's functions: no transactions, none of STAMP's headers
      [ "$s" = "$here/stm_itm.c" ] && f="$base_cflags"
      printf '%s %s %s\n' "$path" "$obj" "$f" >>"$jobsfile"
    done
    (cd "$stamp/$app" && xargs -P "$jobs" -L 1 bash -c 'compile_one "$@"' _ <"$jobsfile")
    cat "$objdir"/*.log >"$log" 2>/dev/null
    prog="$out/$app/$app-$variant"
    ok=1
    for o in $objs; do [ -f "$o" ] || ok=0; done
    if [ "$variant" = itm ]; then
      # the same objects twice: libitm (-fgnu-tm at the link adds it), and
      # libschedstm-itm (linked without -fgnu-tm)
      # shellcheck disable=SC2086
      if [ $ok = 1 ] && "$cc" -pthread -fgnu-tm $objs $libs -o "$prog" >>"$log" 2>&1 &&
        "$cc" -pthread $objs -L"$libdir" -Wl,-rpath,"$libdir" -lschedstm-itm -lschedstm $libs \
          -o "$out/$app/$app-schedstm-itm" >>"$log" 2>&1; then
        built="$built $app-itm $app-schedstm-itm"
      else
        rm -f "$prog" "$out/$app/$app-schedstm-itm"
        echo "build.sh: $app ($variant) failed; the end of $log:" >&2
        grep -E "error|undefined reference" "$log" | head -20 >&2
        failed=1
      fi
      continue
    fi
    # shellcheck disable=SC2086
    if [ $ok = 1 ] && "$cc" -pthread $objs $libs -o "$prog" >>"$log" 2>&1; then
      built="$built $app-$variant"
    else
      rm -f "$prog" # not an earlier build's, run as this one's
      echo "build.sh: $app ($variant) failed; the end of $log:" >&2
      grep -E "error|undefined reference" "$log" | head -20 >&2
      failed=1
    fi
  done
  # Inputs STAMP ships gzipped (kmeans, yada; a tree may lack the largest).
  if [ -d "$stamp/$app/inputs" ]; then
    mkdir -p "$out/$app/inputs"
    for f in "$stamp/$app/inputs"/*; do
      [ -e "$f" ] || continue
      case "$f" in
        *.gz)
          t="$out/$app/inputs/$(basename "$f" .gz)"
          if [ ! -f "$t" ]; then
            if gzip -dc "$f" >"$t.tmp" 2>/dev/null; then mv "$t.tmp" "$t"; else rm -f "$t.tmp"; fi
          fi
          ;;
        *) ln -sf "$f" "$out/$app/inputs/" ;;
      esac
    done
  fi
done
echo "build.sh: built:${built:- nothing} (in $out)"
exit $failed
