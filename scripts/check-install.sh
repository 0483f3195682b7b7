#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install schedstm into a temporary prefix and build small consumers against
# the installed copy only: through pkg-config (shared and static) and through
# find_package(schedstm) (schedstm::schedstm and schedstm::schedstm_static),
# then run them. Also compiles every installed header on its own, as C and
# as C++ (g++ required), with and without SSTM_INLINE_BARRIERS. Checks that
# the version says what the ABI promises: on 0.x the soname is
# libschedstm.so.0.MINOR and find_package accepts only the same MAJOR.MINOR;
# from 1.0 the soname is libschedstm.so.MAJOR and find_package accepts the
# same MAJOR. Also configures schedstm inside a parent project
# (add_subdirectory) and for a target that is not x86-64.
#
#   scripts/check-install.sh              configure and build a fresh copy
#   scripts/check-install.sh BUILD_DIR    install an already built tree
#   scripts/check-install.sh -h | --help  this text
#
# Exits non-zero on the first failure; the last line is "N passed, N failed".
set -euo pipefail

case "${1:-}" in
  -h | --help)
    sed -n '3,/^[^#]/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"
    exit 0
    ;;
  -*)
    echo "check-install: unknown option '$1' (try --help)" >&2
    exit 2
    ;;
esac
if [ $# -gt 1 ]; then
  echo "check-install: one argument at most, the build directory (try --help)" >&2
  exit 2
fi
if [ $# -eq 1 ] && [ ! -d "$1" ]; then
  echo "check-install: '$1' is not a directory: give a configured build directory," \
    "or nothing to configure and build a fresh copy" >&2
  exit 2
fi

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/schedstm-check-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
jobs=$(nproc 2>/dev/null || echo 2)
passed=0

ok() { passed=$((passed + 1)); echo "check-install: ok: $*"; }
fail() {
  echo "check-install: FAILED: $*" >&2
  echo "check-install: $passed passed, 1 failed"
  exit 1
}
run() { # run a command quietly, show its output if it fails
  local log="$work/last.log"
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    return 1
  fi
}

# ---- build and install ------------------------------------------------------
if [ $# -ge 1 ]; then
  build=$(cd "$1" && pwd)
else
  build="$work/build"
  run cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DSCHEDSTM_BUILD_TESTS=OFF -DSCHEDSTM_BUILD_BENCH=OFF -DSCHEDSTM_BUILD_EXAMPLES=OFF \
    || fail "configure"
fi
run cmake --build "$build" -j "$jobs" || fail "build"
prefix="$work/prefix"
run cmake --install "$build" --prefix "$prefix" || fail "install"

# The version (project() in CMakeLists.txt) and the soname it implies.
version=$(sed -n 's/^project(schedstm VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
IFS=. read -r v_major v_minor v_patch <<<"$version"
[ -n "$v_major" ] && [ -n "$v_minor" ] && [ -n "$v_patch" ] || fail "no MAJOR.MINOR.PATCH version in CMakeLists.txt"
if [ "$v_major" = 0 ]; then
  want_soname="libschedstm.so.0.$v_minor"
else
  want_soname="libschedstm.so.$v_major"
fi
libdir=$(dirname "$(find "$prefix" -name "$want_soname" | head -n 1)")
[ -n "$libdir" ] && [ "$libdir" != . ] || fail "$want_soname not installed"
[ -e "$libdir/libschedstm.so.$version" ] || fail "libschedstm.so.$version not installed"
for f in "$libdir/libschedstm.so" "$libdir/libschedstm.a" "$libdir/pkgconfig/schedstm.pc" \
  "$libdir/cmake/schedstm/schedstmConfig.cmake" \
  "$libdir/cmake/schedstm/schedstmConfigVersion.cmake" \
  "$prefix/include/schedstm/schedstm.h"; do
  [ -e "$f" ] || fail "missing ${f#"$prefix"/}"
done
soname=$(readelf -d "$libdir/libschedstm.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ "$soname" = "$want_soname" ] || fail "SONAME is '$soname', expected $want_soname (version $version)"
ok "installed files, SONAME $soname (version $version)"

# Every public function is exported from the shared library; nothing internal.
# (Type A entries are version nodes of the linker version script.)
# The internal sstm__ symbols are exactly those the public headers use, and
# sstm__irrev_plain_writes, which schedstm/tx.h declares for the compiler
# ABI's library (a serial block on its uninstrumented path, src/schedstm.map).
if nm -D --defined-only "$libdir/libschedstm.so" | awk '$2 != "A" {print $3}' | sed 's/@.*//' \
  | grep -v -E '^(sstm_[a-z]|sstm__(begin|begin_ckpt|ckpt_save|load_slow|store_slow|atomic_end_error|irrev_plain_writes|fast_cur_abi[0-9]+)$|_init$|_fini$|_edata$|_end$|__bss_start$)' >"$work/extra.txt"; then
  echo "unexpected exported symbols:" >&2
  cat "$work/extra.txt" >&2
  fail "symbol visibility"
fi
ok "exported symbols: the sstm_* API, the seven sstm__ entries the headers use and the ABI's one"

# ---- headers ----------------------------------------------------------------
for h in "$prefix"/include/schedstm/*.h; do
  echo "#include <schedstm/$(basename "$h")>" >"$work/h.c"
  for def in -UNONE -DSSTM_INLINE_BARRIERS; do
    run gcc -std=c11 -Wall -Wextra -Werror -fsyntax-only $def -I"$prefix/include" "$work/h.c" \
      || fail "header $(basename "$h") does not compile on its own ($def)"
  done
done
ok "each header compiles on its own (-std=c11, with and without SSTM_INLINE_BARRIERS)"
# C++ programs include the same headers (extern "C"): each one alone, both
# forms of the loads.
command -v g++ >/dev/null 2>&1 || fail "g++ not found (scripts/install-deps.sh installs it)"
for h in "$prefix"/include/schedstm/*.h; do
  echo "#include <schedstm/$(basename "$h")>" >"$work/h.cc"
  for def in -UNONE -DSSTM_INLINE_BARRIERS; do
    run g++ -Wall -Wextra -Werror -fsyntax-only $def -I"$prefix/include" "$work/h.cc" \
      || fail "header $(basename "$h") does not compile as C++ ($def)"
  done
done
ok "each header compiles as C++ (with and without SSTM_INLINE_BARRIERS)"

# ---- the consumer -------------------------------------------------------------
cat >"$work/consumer.c" <<'C'
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <schedstm/schedstm.h>

#define ITERS 10000
static uint64_t counter;

static void incr(void *arg) {
  (void)arg;
  sstm_store_u64(&counter, sstm_load_u64(&counter) + 1);
}

static void *worker(void *arg) {
  (void)arg;
  if (sstm_thread_init() != 0)
    return (void *)1;
  for (int i = 0; i < ITERS; i++) {
    if (i % 2) {
      if (sstm_run(NULL, incr, NULL) != 0)
        return (void *)1;
    } else {
      SSTM_ATOMIC_BEGIN(NULL)
        incr(NULL);
      SSTM_ATOMIC_END();
    }
  }
  sstm_thread_exit();
  return NULL;
}

int main(void) {
  if (strcmp(SSTM_VERSION_STRING, "@VERSION@") != 0 || SSTM_VERSION_MAJOR != @MAJOR@ ||
      SSTM_VERSION_MINOR != @MINOR@ || SSTM_VERSION_PATCH != @PATCH@ || sstm_init(NULL) != 0)
    return 1;
  pthread_t t[2];
  void *r0, *r1;
  pthread_create(&t[0], NULL, worker, NULL);
  pthread_create(&t[1], NULL, worker, NULL);
  pthread_join(t[0], &r0);
  pthread_join(t[1], &r1);
  char desc[256];
  if (sstm_describe(desc, sizeof desc) <= 0 || strncmp(desc, "schedstm", 8) != 0)
    return 1;
  if (sstm_shutdown() != 0 || r0 || r1)
    return 1;
  printf("counter %llu (expected %d), schedstm %s\n", (unsigned long long)counter, 2 * ITERS,
         SSTM_VERSION_STRING);
  return counter == 2 * ITERS ? 0 : 1;
}
C
sed -i -e "s/@VERSION@/$version/" -e "s/@MAJOR@/$v_major/" -e "s/@MINOR@/$v_minor/" \
  -e "s/@PATCH@/$v_patch/" "$work/consumer.c"

# Runs $1; if $2 = shared, it must load the installed $want_soname; if
# static, it must not depend on libschedstm at all.
check_binary() {
  local exe=$1 kind=$2 deps
  deps=$(LD_LIBRARY_PATH="$libdir" ldd "$exe")
  if [ "$kind" = shared ]; then
    grep -q "$want_soname => $libdir/" <<<"$deps" || {
      echo "$deps" >&2
      fail "$(basename "$exe") does not load the installed $want_soname"
    }
  elif grep -q libschedstm <<<"$deps"; then
    echo "$deps" >&2
    fail "$(basename "$exe") should be linked statically"
  fi
  LD_LIBRARY_PATH="$libdir" run "$exe" || fail "$(basename "$exe") failed"
  ok "$(basename "$exe"): $(cat "$work/last.log")"
}

# Runs "$@" without LD_LIBRARY_PATH: a program linked with the README's
# -Wl,-rpath, one a CMake target recorded the path for, or an installed tool
# must find every library of the prefix by itself (libschedstm-itm's own
# dependency on libschedstm included, which the program does not name when
# the linker drops -lschedstm as not needed).
check_runs_alone() {
  env -u LD_LIBRARY_PATH "$@" >"$work/last.log" 2>&1 || {
    cat "$work/last.log" >&2
    fail "$(basename "$1") does not run without LD_LIBRARY_PATH"
  }
  ok "$(basename "$1") runs without LD_LIBRARY_PATH: $(head -n 1 "$work/last.log")"
}

# ---- pkg-config -----------------------------------------------------------------
if command -v pkg-config >/dev/null 2>&1; then
  export PKG_CONFIG_PATH="$libdir/pkgconfig"
  [ "$(pkg-config --modversion schedstm)" = "$version" ] || fail "pkg-config --modversion"
  # shellcheck disable=SC2046
  run gcc -std=c11 -Wall -Werror $(pkg-config --cflags schedstm) "$work/consumer.c" \
    -o "$work/pc_shared" $(pkg-config --libs schedstm) || fail "build with pkg-config (shared)"
  check_binary "$work/pc_shared" shared
  # The hot entry points are SSTM_NOPLT (<schedstm/common.h>): a program built
  # with GCC that links the shared library calls them through the GOT, not
  # through a PLT stub.
  calls=$(objdump -d --no-show-raw-insn "$work/pc_shared")
  plt=$(grep -cE 'call +[0-9a-f]+ <sstm_(load_u64|store_u64|run)@plt>' <<<"$calls" || true)
  got=$(grep -cE 'call +\*.*<sstm_(load_u64|store_u64|run)@' <<<"$calls" || true)
  [ "$plt" -eq 0 ] && [ "$got" -ge 3 ] ||
    fail "pc_shared: sstm_load_u64, sstm_store_u64, sstm_run: $plt calls through the PLT, $got through the GOT"
  ok "pc_shared: sstm_load_u64, sstm_store_u64 and sstm_run called through the GOT ($got calls), none through a PLT stub"
  # Static: the same flags with --static, the archive chosen explicitly.
  # shellcheck disable=SC2046
  run gcc -std=c11 -Wall -Werror $(pkg-config --cflags schedstm) "$work/consumer.c" \
    -o "$work/pc_static" \
    $(pkg-config --static --libs schedstm | sed 's/-lschedstm\b/-l:libschedstm.a/') \
    || fail "build with pkg-config --static"
  check_binary "$work/pc_static" static
  # The opt-in inline read fast path (SSTM_INLINE_BARRIERS, <schedstm/inline.h>).
  for kind in shared static; do
    if [ $kind = shared ]; then libs=$(pkg-config --libs schedstm); else
      libs=$(pkg-config --static --libs schedstm | sed 's/-lschedstm\b/-l:libschedstm.a/')
    fi
    # shellcheck disable=SC2046,SC2086
    run gcc -std=c11 -Wall -Werror -DSSTM_INLINE_BARRIERS $(pkg-config --cflags schedstm) \
      "$work/consumer.c" -o "$work/pc_inline_$kind" $libs \
      || fail "build with -DSSTM_INLINE_BARRIERS ($kind)"
    check_binary "$work/pc_inline_$kind" $kind
  done
  # The same program compiled as C++ (SSTM_ATOMIC_BEGIN, sstm_run, both
  # forms of the loads), against the shared library.
  for def in -UNONE -DSSTM_INLINE_BARRIERS; do
    # shellcheck disable=SC2046,SC2086
    run g++ -x c++ -Wall -Werror $def $(pkg-config --cflags schedstm) "$work/consumer.c" \
      -x none -o "$work/pc_cxx${def#-?}" $(pkg-config --libs schedstm) \
      || fail "build as C++ ($def)"
    check_binary "$work/pc_cxx${def#-?}" shared
  done
  # The gcc -fgnu-tm ABI (docs/design/itm.md), when this build has it: a
  # program compiled with -fgnu-tm, linked with schedstm-itm's flags and
  # without -fgnu-tm, runs on schedstm and not on libitm, and a C one does
  # not need libstdc++; a C++ one (g++ -fgnu-tm: new, delete, an exception
  # out of a transaction, (I7)) runs too; the library exports the _ITM_
  # entry points and the clones of operator new and delete, nothing else.
  if [ -e "$libdir/libschedstm-itm.so" ]; then
    if nm -D --defined-only "$libdir/libschedstm-itm.so" | awk '$2 != "A" {print $3}' \
      | sed 's/@.*//' | grep -v -E '^(_ITM_[A-Za-z0-9_]+|_ZGTtn[wa]m(RKSt9nothrow_t)?|_ZGTtd[la]Pv(m|RKSt9nothrow_t)?|_init|_fini|_edata|_end|__bss_start)$' \
      >"$work/itm-extra.txt"; then
      cat "$work/itm-extra.txt" >&2
      fail "libschedstm-itm.so exports more than the _ITM_ entry points and the _ZGTt clones"
    fi
    cat >"$work/itm.c" <<'C'
#include <pthread.h>
#include <stdio.h>
static long counter;
static void *work(void *arg) {
  for (int i = 0; i < 10000; i++)
    __transaction_atomic { counter++; }
  return arg;
}
int main(void) {
  pthread_t t[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, work, NULL);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  printf("counter=%ld\n", counter);
  return counter != 40000;
}
C
    # -fno-tree-pre: docs/design/itm.md, "Limits"
    pkg-config --cflags schedstm-itm | grep -q -- '-fno-tree-pre' \
      || fail "pkg-config --cflags schedstm-itm lacks -fno-tree-pre"
    # shellcheck disable=SC2046
    run gcc -std=gnu11 -Wall -Werror -fgnu-tm $(pkg-config --cflags schedstm-itm) -c "$work/itm.c" \
      -o "$work/itm.o" || fail "compile with -fgnu-tm"
    # shellcheck disable=SC2046
    run gcc "$work/itm.o" -o "$work/pc_itm" $(pkg-config --libs schedstm-itm) -lpthread \
      || fail "link with pkg-config --libs schedstm-itm"
    if LD_LIBRARY_PATH="$libdir" ldd "$work/pc_itm" | grep -q 'libitm\.'; then
      fail "the -fgnu-tm program is linked with libitm"
    fi
    if LD_LIBRARY_PATH="$libdir" ldd "$work/pc_itm" | grep -q 'libstdc++'; then
      fail "the C -fgnu-tm program needs libstdc++ through libschedstm-itm"
    fi
    LD_LIBRARY_PATH="$libdir" run "$work/pc_itm" || fail "the -fgnu-tm program failed"
    ok "gcc -fgnu-tm program on libschedstm-itm (pkg-config schedstm-itm): $(cat "$work/last.log")"
    # shellcheck disable=SC2046
    run gcc "$work/itm.o" -o "$work/pc_itm_rpath" $(pkg-config --libs schedstm-itm) -lpthread \
      -Wl,-rpath,"$(pkg-config --variable=libdir schedstm)" \
      || fail "link with pkg-config --libs schedstm-itm and -Wl,-rpath"
    check_runs_alone "$work/pc_itm_rpath"
    if command -v g++ >/dev/null; then
      cat >"$work/itm_cxx.cpp" <<'CXX'
#include <cstdio>
struct node { long v; node *next; };
struct refused { long v; };
static node *head;
static long sum;
__attribute__((transaction_safe)) void refuse(long v);
void refuse(long v) { throw refused{v}; }
int main() {
  for (long i = 1; i <= 100; i++)
    __transaction_atomic { node *n = new node; n->v = i; n->next = head; head = n; }
  for (long i = 1; i <= 100; i++)
    __transaction_atomic { node *n = head; head = n->next; sum += n->v; delete n; }
  long got = 0;
  try {
    __transaction_atomic { sum += 1; refuse(7); }
  } catch (refused &r) {
    got = r.v;
  }
  std::printf("sum=%ld got=%ld\n", sum, got);
  return !(sum == 5051 && got == 7 && head == nullptr);
}
CXX
      run g++ -Wall -Werror -fgnu-tm -c "$work/itm_cxx.cpp" -o "$work/itm_cxx.o" \
        || fail "compile C++ with g++ -fgnu-tm"
      # shellcheck disable=SC2046
      run g++ "$work/itm_cxx.o" -o "$work/pc_itm_cxx" $(pkg-config --libs schedstm-itm) -lpthread \
        || fail "link a g++ -fgnu-tm program with pkg-config --libs schedstm-itm"
      if LD_LIBRARY_PATH="$libdir" ldd "$work/pc_itm_cxx" | grep -q 'libitm\.'; then
        fail "the g++ -fgnu-tm program is linked with libitm"
      fi
      LD_LIBRARY_PATH="$libdir" run "$work/pc_itm_cxx" || fail "the g++ -fgnu-tm program failed"
      ok "g++ -fgnu-tm program on libschedstm-itm: $(cat "$work/last.log")"
    fi
  fi
  unset PKG_CONFIG_PATH
else
  fail "pkg-config not found (scripts/install-deps.sh installs it)"
fi

# ---- find_package ---------------------------------------------------------------
mkdir -p "$work/cmake-consumer"
cp "$work/consumer.c" "$work/cmake-consumer/"
[ ! -e "$work/itm.c" ] || cp "$work/itm.c" "$work/cmake-consumer/"
cat >"$work/cmake-consumer/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(schedstm_consumer C)
find_package(schedstm @REQ@ REQUIRED)
find_package(Threads REQUIRED)
add_executable(fp_shared consumer.c)
target_link_libraries(fp_shared PRIVATE schedstm::schedstm Threads::Threads)
add_executable(fp_static consumer.c)
target_link_libraries(fp_static PRIVATE schedstm::schedstm_static Threads::Threads)
# the gcc -fgnu-tm ABI, when the installed package has it: compiled with
# -fgnu-tm, linked through its target only (no libitm)
if(TARGET schedstm::schedstm_itm AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/itm.c)
  add_executable(fp_itm itm.c)
  target_compile_options(fp_itm PRIVATE -fgnu-tm)
  target_link_libraries(fp_itm PRIVATE schedstm::schedstm_itm Threads::Threads)
endif()
CMAKE
cp "$work/cmake-consumer/CMakeLists.txt" "$work/cmake-consumer/CMakeLists.txt.in"
sed -i "s/@REQ@/$v_major.$v_minor/" "$work/cmake-consumer/CMakeLists.txt"
run cmake -S "$work/cmake-consumer" -B "$work/cmake-consumer/build" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release || fail "find_package(schedstm)"
run cmake --build "$work/cmake-consumer/build" || fail "build with find_package"
check_binary "$work/cmake-consumer/build/fp_shared" shared
check_binary "$work/cmake-consumer/build/fp_static" static
if [ -e "$libdir/libschedstm-itm.so" ]; then
  [ -x "$work/cmake-consumer/build/fp_itm" ] || fail "find_package: no schedstm::schedstm_itm target"
  if LD_LIBRARY_PATH="$libdir" ldd "$work/cmake-consumer/build/fp_itm" | grep -q 'libitm\.'; then
    fail "fp_itm (find_package, schedstm::schedstm_itm) is linked with libitm"
  fi
  check_binary "$work/cmake-consumer/build/fp_itm" shared
  check_runs_alone "$work/cmake-consumer/build/fp_itm"
fi
check_runs_alone "$work/cmake-consumer/build/fp_shared"
# The installed server (bench/server, with libuv) links the shared library.
[ ! -x "$prefix/bin/sstm-server" ] || check_runs_alone "$prefix/bin/sstm-server" --help

# What find_package must accept and refuse: $1 = the requested version,
# $2 = accept or refuse.
find_request() {
  local req=$1 want=$2 dir="$work/cmake-consumer/req-$1"
  sed "s/@REQ@/$req/" "$work/cmake-consumer/CMakeLists.txt.in" >"$work/cmake-consumer/CMakeLists.txt"
  if cmake -S "$work/cmake-consumer" -B "$dir" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null 2>&1; then
    [ "$want" = accept ] || fail "find_package(schedstm $req) accepted version $version"
  else
    [ "$want" = refuse ] || fail "find_package(schedstm $req) refused version $version"
  fi
}
find_request "$v_major.$v_minor.0" accept
find_request "$((v_major + 1))" refuse
find_request "$version" accept
if [ "$v_major" = 0 ]; then
  # 0.x: another minor version is another ABI, older or newer.
  find_request "0.$((v_minor + 1))" refuse
  [ "$v_minor" = 0 ] || find_request "0.$((v_minor - 1))" refuse
  ok "find_package: $v_major.$v_minor accepted, other minor and major versions refused (version $version)"
else
  find_request "$v_major.0" accept
  [ "$v_major" = 1 ] || find_request "$((v_major - 1))" refuse
  ok "find_package: $v_major.x up to $version accepted, other majors refused (version $version)"
fi

# ---- add_subdirectory, and a target that is not x86-64 ---------------------------
# Configure only (no build): inside a parent project schedstm leaves the
# parent's build type alone, adds no tests, benchmarks or examples by
# default, and defines the schedstm:: targets.
mkdir -p "$work/parent"
cat >"$work/parent/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.20)
project(parent C)
add_subdirectory("$root" schedstm)
foreach(t schedstm::schedstm schedstm::schedstm_static)
  if(NOT TARGET \${t})
    message(FATAL_ERROR "add_subdirectory(schedstm) defines no \${t}")
  endif()
endforeach()
if(SCHEDSTM_BUILD_TESTS OR SCHEDSTM_BUILD_BENCH OR SCHEDSTM_BUILD_EXAMPLES)
  message(FATAL_ERROR "add_subdirectory(schedstm) turned on its tests, benchmarks or examples")
endif()
message(STATUS "parent build type: '\${CMAKE_BUILD_TYPE}'")
CMAKE
for type in "" Debug; do
  run cmake -S "$work/parent" -B "$work/parent/build-$type" -DCMAKE_BUILD_TYPE="$type" \
    || fail "add_subdirectory(schedstm) in a parent project (build type '$type')"
  grep -q "parent build type: '$type'\$" "$work/last.log" \
    || fail "add_subdirectory(schedstm) changed the parent's build type '$type': $(grep 'parent build type' "$work/last.log")"
  cached=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$work/parent/build-$type/CMakeCache.txt")
  [ "$cached" = "$type" ] || fail "add_subdirectory(schedstm) cached CMAKE_BUILD_TYPE='$cached' (parent gave '$type')"
done
ok "add_subdirectory(schedstm): the parent's build type stays as it was (none, Debug); no tests, bench or examples"

# The restart checkpoint is x86-64 assembly: another target is refused at
# configure time with a message that says so.
if cmake -S "$root" -B "$work/aarch64" -DCMAKE_SYSTEM_NAME=Linux \
  -DCMAKE_SYSTEM_PROCESSOR=aarch64 >"$work/last.log" 2>&1; then
  fail "configuring for aarch64 succeeded"
fi
grep -q "supports x86-64 (64-bit) targets only" "$work/last.log" || {
  cat "$work/last.log" >&2
  fail "configuring for aarch64 failed without saying why"
}
ok "a target that is not x86-64 (aarch64) is refused at configure time"

echo "check-install: $passed passed, 0 failed"
