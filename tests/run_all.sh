#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/run_all.sh: THE full test command of schedstm.
#
# Builds and runs, each in its own build directory under build/:
#   (a) build/test-normal  the default build: the whole ctest suite
#   (b) build/test-asan    -DSCHEDSTM_SANITIZE=address,undefined: whole suite
#                          (the tests, benchmarks and tools built at -O1)
#   (c) build/test-tsan    -DSCHEDSTM_SANITIZE=thread: the stress tests
#   (d) build/test-delay   -DSCHEDSTM_RANDOM_DELAY=ON: the stress tests
#   (e) build/test-debug   -DSCHEDSTM_DEBUG=ON: the unit tests (misuse that
#                          has an error code also reaches the misuse handler),
#                          and the engine's test seams (internal/seams.c)
#   (f) build/test-clang   built with clang (-Watomic-implicit-seq-cst on the
#                          library: no implicit seq_cst atomic): the unit
#                          tests; skipped when clang is missing
#   (g) format             scripts/check-format.sh: every C file follows
#                          .clang-format (one check per file)
# all with -DSCHEDSTM_WERROR=ON. Prints a final line "N passed, M failed (K
# skipped)"
# (summed over all parts; a part that fails to configure or build counts as
# one failure, and what depends on a failed configure is skipped, not counted
# again) and exits non-zero on any failure.
#
# Sanitizer and random-delay builds run fewer iterations (SSTM_TEST_SCALE,
# read by the tests). tests/README.md ("The parts of run_all.sh") says what
# each part covers and what it leaves to the others.
#
# The builds carry line tables only (-g1): what sanitizer reports and
# backtraces need (function, file, line), without the variables and types
# of -g, which made up a third of the compile time and which no test reads.
# The code generated is the same. ctest runs as many tests at once as a
# part's tests leave CPUs idle: the random-delay tests mostly sleep in their
# delays, the unit tests of the debug and clang parts are short processes.
# For the same reason the debug, clang and format parts and the install
# check run beside the delay part (each in its own build directory, their
# output printed when the delay part is done), not after it;
# RUN_ALL_BESIDE=0 runs every part in turn. The builds run ahead of the
# tests: while one part's tests run, the next parts are configured and
# built, one after the other, at a lower priority (builder(), below), so
# that the CPU time the tests leave idle goes into the builds. With ccache
# installed (scripts/install-deps.sh --tests), every
# build compiles through it, so that a second run, or a fresh clone on the
# same machine, recompiles only what changed.
#
# Environment:
#   RUN_ALL_PARTS="normal asan tsan delay debug clang format"   subset of parts to run
#                                             (the install check runs with normal, or
#                                             as "install" on an earlier normal build)
#   RUN_ALL_JOBS=2                            build parallelism, and ctest's where
#                                             the part has no own default
#   RUN_ALL_CTEST_JOBS_{NORMAL,ASAN,TSAN,DELAY,DEBUG,CLANG}   override a part's ctest -j
#   RUN_ALL_SCALE_{NORMAL,ASAN,TSAN,DELAY,DEBUG,CLANG}   override a part's scale
#   RUN_ALL_CLEAN=1                           start from empty build dirs
#   RUN_ALL_BESIDE=0                          run debug, clang and format after delay,
#                                             not beside it
#   RUN_ALL_CCACHE=0                          compile without ccache even where it is
#   RUN_ALL_PIPELINE=0                        build each part just before its tests, not
#                                             ahead of them
#   RUN_ALL_BUILD_NICE=5                      niceness added to the builds that run
#                                             beside tests (all but the first)
#   RUN_ALL_LOAD=0                            busy loops to run beside the whole run,
#                                             0..64: the suite on a host whose CPUs
#                                             other programs want too, as a shared CI
#                                             runner's can be (tests/README.md)
#
# It takes no arguments, but -h or --help, which prints this text.
set -u
case "${1:-}" in
  -h | --help)
    sed -n '3,/^[^#]/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"
    exit 0
    ;;
esac
if [ $# -gt 0 ]; then
  echo "run_all.sh: no arguments ('$1'): choose parts with RUN_ALL_PARTS (try --help)" >&2
  exit 2
fi

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
jobs=${RUN_ALL_JOBS:-2}
parts=${RUN_ALL_PARTS:-"normal asan tsan delay debug clang format"}

# RUN_ALL_LOAD is read as decimal (a leading zero does not make it octal,
# as it would in $((...))), and its digits are counted before any
# arithmetic, so that a number too long for it is refused too.
if [[ ${RUN_ALL_LOAD:-0} =~ ^0*([0-9]{1,2})$ ]] && [ $((10#${BASH_REMATCH[1]})) -le 64 ]; then
  load=$((10#${BASH_REMATCH[1]}))
else
  echo "RUN_ALL_LOAD=${RUN_ALL_LOAD}: must be a whole number of busy loops, 0 to 64" >&2
  exit 2
fi
# The other settings are checked here too, before anything is installed or
# built: a mistyped one would otherwise fail every part's build or ctest.
all_parts="normal asan tsan delay debug clang format install"
bad_setting() {
  echo "$1=$2: $3 (tests/run_all.sh --help lists the settings)" >&2
  exit 2
}
for v in RUN_ALL_JOBS RUN_ALL_CTEST_JOBS_NORMAL RUN_ALL_CTEST_JOBS_ASAN RUN_ALL_CTEST_JOBS_TSAN \
  RUN_ALL_CTEST_JOBS_DELAY RUN_ALL_CTEST_JOBS_DEBUG RUN_ALL_CTEST_JOBS_CLANG; do
  if [ -n "${!v+set}" ] && ! [[ ${!v} =~ ^[1-9][0-9]{0,2}$ ]]; then
    bad_setting "$v" "${!v}" "a number of jobs, 1 to 999"
  fi
done
for v in RUN_ALL_SCALE_NORMAL RUN_ALL_SCALE_ASAN RUN_ALL_SCALE_TSAN RUN_ALL_SCALE_DELAY \
  RUN_ALL_SCALE_DEBUG RUN_ALL_SCALE_CLANG; do
  # a positive number (the tests' SSTM_TEST_SCALE, read with strtod): digits,
  # a point, an exponent; a mantissa that is not all zeros
  if [ -n "${!v+set}" ] && ! { [[ ${!v} =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$ ]] &&
    [[ ${!v%%[eE]*} =~ [1-9] ]]; }; then
    bad_setting "$v" "${!v}" "a positive decimal scale such as 0.2 or 1"
  fi
done
if [ -n "${RUN_ALL_BUILD_NICE+set}" ] && ! [[ $RUN_ALL_BUILD_NICE =~ ^(1?[0-9])$ ]]; then
  bad_setting RUN_ALL_BUILD_NICE "$RUN_ALL_BUILD_NICE" "a niceness increment, 0 to 19"
fi
[ -n "${parts// /}" ] || bad_setting RUN_ALL_PARTS "$parts" "no part named ($all_parts)"
for p in $parts; do
  [[ " $all_parts " == *" $p "* ]] || bad_setting RUN_ALL_PARTS "$parts" "unknown part '$p' ($all_parts)"
done

start_all=$(date +%s)
mkdir -p "$root/build"
# Each part appends one line "PASSED FAILED SKIPPED SUMMARY" here (also from
# the parts that run beside the delay part, in a subshell); the totals are
# summed from it at the end.
results="$root/build/run_all.results"
: >"$results"
# record PASSED FAILED SKIPPED SUMMARY...
record() {
  local p=$1 f=$2 k=$3
  shift 3
  echo "$p $f $k $*" >>"$results"
}

# A fresh machine may lack the tools: install what is missing (a quick no-op
# when everything is there). The build tools are required; clang,
# clang-format (the clang and format parts) and doxygen (unit.meta.apidoc)
# are not: without them those parts and that test are skipped, and said so.
if ! "$root/scripts/install-deps.sh"; then
  echo "install-deps.sh failed"
  echo "0 passed, 1 failed"
  exit 1
fi
if ! "$root/scripts/install-deps.sh" --tests; then
  echo "install-deps.sh --tests failed: the parts that need clang or clang-format, and the" \
    "test that needs doxygen, are skipped"
fi

# RUN_ALL_LOAD busy loops, at the suite's own priority, for the whole run.
# Each loop ends by itself once this script has gone (it looks for the
# script's /proc entry between rounds), and the EXIT trap ends them at once.
load_pids=()
stop_load() {
  if [ ${#load_pids[@]} -gt 0 ]; then kill "${load_pids[@]}" 2>/dev/null; fi
}
if [ "$load" -gt 0 ]; then
  for ((li = 0; li < load; li++)); do
    (
      while [ -e "/proc/$$" ]; do
        for ((lj = 0; lj < 100000; lj++)); do :; done
      done
    ) &
    load_pids+=($!)
  done
  trap stop_load EXIT
  echo "=== $load busy loop(s) beside the whole run (RUN_ALL_LOAD)"
fi

# ccache: the cache is keyed by the compiler, its arguments and the
# preprocessed source. The paths under this tree are made relative
# (CCACHE_BASEDIR) and the build directory left out of the key
# (CCACHE_NOHASHDIR; it is only the compilation directory recorded in the
# line tables), so that another clone of the same sources hits the cache.
# A variable the caller set is kept.
launcher=()
if [ "${RUN_ALL_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
  export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
  echo "=== compiling through $(command -v ccache) (RUN_ALL_CCACHE=0: without)"
fi

# part_build NAME: the build target, the configure arguments and the C
# optimization level of a part that has a build (the others: empty
# target), in build_target, build_args and build_opt.
part_build() {
  build_target=""
  build_args=()
  build_opt=-O2
  case $1 in
  normal) build_target=all ;;
  asan)
    build_target=all
    build_args=(-DSCHEDSTM_SANITIZE=address,undefined)
    # The tests, benchmarks and tools at -O1 (the library's own targets
    # add -O2 after it, src/CMakeLists.txt: the code under test is the
    # code users get): the instrumentation of every access makes -O2 the
    # most expensive compile of the suite, and the checks do not need it.
    build_opt=-O1
    ;;
  tsan)
    build_target=sstm_stress_bins
    build_args=(-DSCHEDSTM_SANITIZE=thread)
    ;;
  delay)
    build_target=sstm_stress_bins
    build_args=(-DSCHEDSTM_RANDOM_DELAY=ON)
    ;;
  debug)
    build_target=sstm_unit_bins
    build_args=(-DSCHEDSTM_DEBUG=ON -DSCHEDSTM_BUILD_BENCH=OFF -DSCHEDSTM_BUILD_EXAMPLES=OFF
      -DSCHEDSTM_TEST_HARNESS=OFF)
    ;;
  clang)
    if command -v clang >/dev/null 2>&1; then
      build_target=sstm_unit_bins
      build_args=(-DCMAKE_C_COMPILER=clang -DSCHEDSTM_BUILD_BENCH=OFF
        -DSCHEDSTM_BUILD_EXAMPLES=OFF -DSCHEDSTM_TEST_HARNESS=OFF)
    fi
    ;;
  esac
}

# build_part NAME [NICE]: configure and build a part in build/test-NAME,
# at niceness NICE (added to the caller's) when given. Writes its messages
# to build/test-NAME.build.msg (printed when the part's tests start) and,
# last, one line to build/test-NAME.status: "ok|build-failed|configure-failed
# START END" (seconds since the epoch).
build_part() {
  local name=$1 nice_n=${2:-}
  part_build "$name"
  local dir="$root/build/test-$name"
  local msg="$dir.build.msg" status="$dir.status"
  local pre=()
  if [ -n "$nice_n" ]; then pre=(nice -n "$nice_n"); fi
  local t0
  t0=$(date +%s)
  if [ "${RUN_ALL_CLEAN:-0}" = 1 ]; then rm -rf "$dir"; fi
  mkdir -p "$dir"
  if ! ${pre[@]+"${pre[@]}"} cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$build_opt -g1 -DNDEBUG" \
      "-DCMAKE_ASM_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" \
      -DSCHEDSTM_WERROR=ON -DSCHEDSTM_BUILD_TESTS=ON ${launcher[@]+"${launcher[@]}"} \
      ${build_args[@]+"${build_args[@]}"} >"$dir.configure.log" 2>&1; then
    cat "$dir.configure.log" >"$msg"
    echo "configure-failed $t0 $(date +%s)" >"$status"
    return
  fi
  # keep going past a broken target, so that the tests that did build run
  local keep=""
  if [ -f "$dir/Makefile" ]; then keep="-- -k"; elif [ -f "$dir/build.ninja" ]; then keep="-- -k 0"; fi
  # shellcheck disable=SC2086
  if ! ${pre[@]+"${pre[@]}"} cmake --build "$dir" -j"$jobs" --target "$build_target" $keep \
      >"$dir.build.log" 2>&1; then
    grep -E "error:|warning:|Error [0-9]" "$dir.build.log" | sort | uniq -c | sort -rn |
      head -30 >"$msg"
    echo "build-failed $t0 $(date +%s)" >"$status"
    return
  fi
  : >"$msg"
  echo "ok $t0 $(date +%s)" >"$status"
}

# The builds run ahead of the tests, one after the other, in the order the
# parts' tests need them (builder(), in the background): while a part's
# tests run, the next parts build. The first build runs alone; the later
# ones run at a lower priority (RUN_ALL_BUILD_NICE, 5 by default: the
# tests keep their CPU, the builds take what the tests leave idle).
# RUN_ALL_PIPELINE=0 builds each part just before its tests instead.
builder() {
  local first=1 p
  for p in "$@"; do
    if [ $first = 1 ]; then
      build_part "$p"
      first=0
    else
      build_part "$p" "${RUN_ALL_BUILD_NICE:-5}"
    fi
  done
}

# await_build NAME: wait until NAME's build is done (its status line
# exists); prints the line.
await_build() {
  local status="$root/build/test-$1.status"
  while [ ! -s "$status" ]; do
    if [ -n "${builder_pid:-}" ] && ! kill -0 "$builder_pid" 2>/dev/null && [ ! -s "$status" ]; then
      echo "builder-died 0 0"
      return
    fi
    sleep 1
  done
  cat "$status"
}

# test_part NAME SCALE CTEST_JOBS CTEST_ARGS: run a part's ctest once its
# build is done, and record its counts.
test_part() {
  local name=$1 scale=$2 ctest_jobs=$3 ctest_args=$4
  local dir="$root/build/test-$name"
  if [ "${RUN_ALL_PIPELINE:-1}" = 0 ]; then build_part "$name"; fi
  local t0 st b0 b1
  t0=$(date +%s)
  read -r st b0 b1 <<<"$(await_build "$name")"
  local tw=$(($(date +%s) - t0))
  echo "=== [$name] configure + build ($dir): $((b1 - b0)) s (its tests waited $tw s for it)"
  cat "$dir.build.msg" 2>/dev/null
  case $st in
  configure-failed | builder-died)
    echo "=== [$name] CONFIGURE FAILED"
    record 0 1 0 "$name: configure failed"
    return
    ;;
  esac
  local build_failed=0
  if [ "$st" = build-failed ]; then
    echo "=== [$name] BUILD FAILED (full log: $dir.build.log); running what was built"
    build_failed=1
  fi
  echo "=== [$name] ctest -j$ctest_jobs $ctest_args (SSTM_TEST_SCALE=$scale)"
  local log="$dir.ctest.log" c0
  c0=$(date +%s)
  # shellcheck disable=SC2086
  (cd "$dir" && SSTM_TEST_SCALE=$scale \
     ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
     UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
     ctest -j"$ctest_jobs" --output-on-failure --no-tests=error $ctest_args) >"$log" 2>&1
  local rc=$?
  grep -E "^\s*[0-9]+/[0-9]+ Test" "$log" | grep -vE "Passed|Skipped|Not Run" || true
  local line
  line=$(grep -E "tests passed, [0-9]+ tests? failed out of [0-9]+" "$log" | tail -1)
  local failed=0 totaln=0 skipped=0
  if [ -n "$line" ]; then
    failed=$(echo "$line" | sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/')
    totaln=$(echo "$line" | sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\2/')
    skipped=$(grep -cE "\(Skipped\)" "$log" || true)
  elif [ $rc -ne 0 ]; then
    failed=1
  fi
  # A skipped entry (exit 77: not applicable here) is not a pass.
  local passed=$((totaln - failed - skipped))
  if [ "$failed" -gt 0 ]; then
    sed -n '/The following tests FAILED/,$p' "$log"
    echo "    (full output: $log)"
  fi
  local t1
  t1=$(date +%s)
  local note=""
  if [ $build_failed = 1 ]; then note=" + build failure"; fi
  # a build failure counts once, with the entries that failed
  record "$passed" $((failed + build_failed)) "$skipped" \
    "$name: $passed passed ($skipped skipped), $failed failed$note; build $((b1 - b0)) s (waited for: $tw s), tests $((t1 - c0)) s"
  echo "=== [$name] $passed passed, $failed failed (build $((b1 - b0)) s, waited for: $tw s; tests $((t1 - c0)) s)"
}

# run_script NAME LOG COMMAND...: a script that ends with a line "N passed,
# M failed" (and optionally "(K skipped)"); its counts join the totals, and
# a non-zero status without a failure in that line counts as one failure.
run_script() {
  local name=$1 log=$2
  shift 2
  mkdir -p "$root/build"
  echo "=== [$name] $*"
  local t0
  t0=$(date +%s)
  "$@" >"$log" 2>&1
  local rc=$?
  local line ipass ifail iskip
  line=$(grep -E "[0-9]+ passed, [0-9]+ failed" "$log" | tail -1)
  ipass=$(echo "$line" | grep -oE "[0-9]+ passed" | grep -oE "[0-9]+")
  ifail=$(echo "$line" | grep -oE "[0-9]+ failed" | grep -oE "[0-9]+")
  iskip=$(echo "$line" | grep -oE "[0-9]+ skipped" | grep -oE "[0-9]+")
  if [ -z "$line" ]; then ipass=0; ifail=1; fi
  if [ -z "$iskip" ]; then iskip=0; fi
  if [ $rc -ne 0 ] && [ "$ifail" = 0 ]; then ifail=1; fi
  [ "$ifail" -gt 0 ] && cat "$log"
  record "$ipass" "$ifail" "$iskip" \
    "$name: $ipass passed ($iskip skipped), $ifail failed, $(($(date +%s) - t0)) s"
}

# The installed library as a consumer sees it (pkg-config, find_package,
# exported symbols, headers alone), against the normal build (skipped when
# that build failed to configure: the failure is counted once). It runs
# with the normal part, or alone as the part "install" on the normal build
# that an earlier run left.
run_install() {
  if [[ " $parts " == *" normal "* ]] && [[ "$(cat "$root/build/test-normal.status" 2>/dev/null)" != ok* ]] &&
    [[ "$(cat "$root/build/test-normal.status" 2>/dev/null)" != build-failed* ]]; then
    echo "=== [install] skipped: the normal build failed to configure"
    record 0 0 0 "install: skipped (normal build not configured)"
  else
    run_script install "$root/build/check-install.log" \
      "$root/scripts/check-install.sh" "$root/build/test-normal"
  fi
}

# run_one PART
run_one() {
  local p=$1
  case $p in
  normal)
    test_part normal "${RUN_ALL_SCALE_NORMAL:-1}" "${RUN_ALL_CTEST_JOBS_NORMAL:-$jobs}" ""
    ;;
  asan)
    # unit.generic.compile.*, unit.headers.*: the compiler run on a test
    # source with fixed flags, the same in every GCC build: the normal part
    # runs them
    test_part asan "${RUN_ALL_SCALE_ASAN:-0.15}" "${RUN_ALL_CTEST_JOBS_ASAN:-$jobs}" \
      "-E ^unit\.(generic\.compile|headers)\."
    ;;
  tsan)
    # the scale of the delay part, which runs the same entries: every
    # count they assert on is reached at it
    test_part tsan "${RUN_ALL_SCALE_TSAN:-0.03}" "${RUN_ALL_CTEST_JOBS_TSAN:-$jobs}" "-L stress"
    ;;
  delay)
    test_part delay "${RUN_ALL_SCALE_DELAY:-0.03}" "${RUN_ALL_CTEST_JOBS_DELAY:-4}" "-L stress"
    ;;
  debug)
    test_part debug "${RUN_ALL_SCALE_DEBUG:-0.2}" "${RUN_ALL_CTEST_JOBS_DEBUG:-4}" \
      "-L unit -E ^unit\.(generic\.compile|headers)\."
    ;;
  clang)
    if command -v clang >/dev/null 2>&1; then
      test_part clang "${RUN_ALL_SCALE_CLANG:-0.2}" "${RUN_ALL_CTEST_JOBS_CLANG:-4}" "-L unit"
    else
      echo "=== [clang] skipped: no clang (scripts/install-deps.sh --tests installs it)"
      record 0 0 1 "clang: skipped (no clang)"
    fi
    ;;
  format)
    run_script format "$root/build/check-format.log" "$root/scripts/check-format.sh"
    ;;
  install) run_install ;;
  *)
    echo "unknown part '$p' (normal asan tsan delay debug clang format install)"
    record 0 1 0 "$p: unknown part"
    ;;
  esac
}

# The parts that run beside the delay part, when both it and they are asked
# for: short ctest runs after a build (debug, clang), a script (format) and
# the install check. The delay part's entries mostly sleep; these fill the
# CPUs meanwhile.
beside=""
if [ "${RUN_ALL_BESIDE:-1}" != 0 ] && [[ " $parts " == *" delay "* ]]; then
  for p in $parts; do
    case $p in debug | clang | format) beside+="$p " ;; esac
  done
  if [[ " $parts " == *" normal "* ]] || [[ " $parts " == *" install "* ]]; then
    beside+="install "
  fi
fi
# The order the tests run in; the builds follow it.
order=""
for p in $parts; do
  if [[ " $beside " == *" $p "* ]] || [ "$p" = install ]; then continue; fi
  order+="$p "
  if [ "$p" = delay ]; then order+="$beside"; fi
done
builds=""
for p in $order; do
  part_build "$p"
  if [ -n "$build_target" ]; then
    : >"$root/build/test-$p.status"
    builds+="$p "
  fi
done
builder_pid=""
if [ "${RUN_ALL_PIPELINE:-1}" != 0 ] && [ -n "$builds" ]; then
  echo "=== building ahead of the tests, in turn: $builds"
  # shellcheck disable=SC2086
  builder $builds >"$root/build/run_all.builder.log" 2>&1 &
  builder_pid=$!
fi

for p in $parts; do
  if [[ " $beside " == *" $p "* ]] || [ "$p" = install ]; then continue; fi
  if [ "$p" = delay ] && [ -n "$beside" ]; then
    beside_log="$root/build/run_all.beside.log"
    echo "=== [${beside% }] beside [delay] (output below, when delay is done)"
    (for q in $beside; do run_one "$q"; done) >"$beside_log" 2>&1 &
    beside_pid=$!
    run_one delay
    wait "$beside_pid"
    cat "$beside_log"
    continue
  fi
  run_one "$p"
done
if [ -n "$builder_pid" ]; then wait "$builder_pid"; fi

# Without the delay part, the install check runs after the other parts.
if [[ " $beside " != *" install "* ]] &&
  { [[ " $parts " == *" normal "* ]] || [[ " $parts " == *" install "* ]]; }; then
  run_install
fi

total_pass=0
total_fail=0
total_skip=0
echo
echo "=== summary ($(($(date +%s) - start_all)) s)"
while read -r p f k line; do
  total_pass=$((total_pass + p))
  total_fail=$((total_fail + f))
  total_skip=$((total_skip + k))
  echo "  $line"
done <"$results"
echo "$total_pass passed, $total_fail failed ($total_skip skipped)"
[ "$total_fail" -eq 0 ]
