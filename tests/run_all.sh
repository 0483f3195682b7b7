#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/run_all.sh: THE full test command of schedstm.
#
# Builds and runs, each in its own build directory under build/:
#   (a) build/test-normal  the default build: the whole ctest suite
#   (b) build/test-asan    -DSCHEDSTM_SANITIZE=address,undefined: whole suite
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
# For the same reason the debug, clang and format parts run beside the delay
# part (each in its own build directory, their output printed when the
# delay part is done), not after it; RUN_ALL_BESIDE=0 runs every part in
# turn. With ccache installed (scripts/install-deps.sh --tests), every
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
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
jobs=${RUN_ALL_JOBS:-2}
parts=${RUN_ALL_PARTS:-"normal asan tsan delay debug clang format"}

configured=" " # the parts whose configure succeeded, space-separated
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

# run_part NAME SCALE CTEST_JOBS CTEST_ARGS BUILD_TARGET CMAKE_ARGS...
run_part() {
  local name=$1 scale=$2 ctest_jobs=$3 ctest_args=$4 target=$5
  shift 5
  local dir="$root/build/test-$name"
  mkdir -p "$root/build"
  local t0
  t0=$(date +%s)
  echo "=== [$name] configure + build ($dir)"
  if [ "${RUN_ALL_CLEAN:-0}" = 1 ]; then rm -rf "$dir"; fi
  if ! cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" \
      "-DCMAKE_ASM_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" \
      -DSCHEDSTM_WERROR=ON -DSCHEDSTM_BUILD_TESTS=ON ${launcher[@]+"${launcher[@]}"} "$@" \
      >"$dir.configure.log" 2>&1; then
    cat "$dir.configure.log"
    echo "=== [$name] CONFIGURE FAILED"
    record 0 1 0 "$name: configure failed"
    return
  fi
  configured+="$name "
  # keep going past a broken target, so that the tests that did build run
  local keep=""
  if [ -f "$dir/Makefile" ]; then keep="-- -k"; elif [ -f "$dir/build.ninja" ]; then keep="-- -k 0"; fi
  local build_failed=0
  # shellcheck disable=SC2086
  if ! cmake --build "$dir" -j"$jobs" --target "$target" $keep >"$dir.build.log" 2>&1; then
    grep -E "error:|warning:|Error [0-9]" "$dir.build.log" | sort | uniq -c | sort -rn | head -30
    echo "=== [$name] BUILD FAILED (full log: $dir.build.log); running what was built"
    build_failed=1
  fi
  echo "=== [$name] ctest -j$ctest_jobs $ctest_args (SSTM_TEST_SCALE=$scale)"
  local log="$dir.ctest.log"
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
    "$name: $passed passed ($skipped skipped), $failed failed$note, $((t1 - t0)) s"
  echo "=== [$name] $passed passed, $failed failed ($((t1 - t0)) s)"
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

# run_one PART
run_one() {
  local p=$1
  case $p in
  normal)
    run_part normal "${RUN_ALL_SCALE_NORMAL:-1}" "${RUN_ALL_CTEST_JOBS_NORMAL:-$jobs}" "" all
    ;;
  asan)
    # unit.generic.compile.*: the compiler run on a test source with fixed
    # flags, the same in every GCC build: the normal part runs them
    run_part asan "${RUN_ALL_SCALE_ASAN:-0.15}" "${RUN_ALL_CTEST_JOBS_ASAN:-$jobs}" \
      "-E ^unit\.generic\.compile\." all -DSCHEDSTM_SANITIZE=address,undefined
    ;;
  tsan)
    # the scale of the delay part, which runs the same entries: every
    # count they assert on is reached at it
    run_part tsan "${RUN_ALL_SCALE_TSAN:-0.03}" "${RUN_ALL_CTEST_JOBS_TSAN:-$jobs}" "-L stress" \
      sstm_stress_bins -DSCHEDSTM_SANITIZE=thread
    ;;
  delay)
    run_part delay "${RUN_ALL_SCALE_DELAY:-0.03}" "${RUN_ALL_CTEST_JOBS_DELAY:-4}" "-L stress" \
      sstm_stress_bins -DSCHEDSTM_RANDOM_DELAY=ON
    ;;
  debug)
    run_part debug "${RUN_ALL_SCALE_DEBUG:-0.2}" "${RUN_ALL_CTEST_JOBS_DEBUG:-4}" \
      "-L unit -E ^unit\.generic\.compile\." sstm_unit_bins \
      -DSCHEDSTM_DEBUG=ON -DSCHEDSTM_BUILD_BENCH=OFF -DSCHEDSTM_BUILD_EXAMPLES=OFF \
      -DSCHEDSTM_TEST_HARNESS=OFF
    ;;
  clang)
    if command -v clang >/dev/null 2>&1; then
      run_part clang "${RUN_ALL_SCALE_CLANG:-0.2}" "${RUN_ALL_CTEST_JOBS_CLANG:-4}" "-L unit" \
        sstm_unit_bins -DCMAKE_C_COMPILER=clang -DSCHEDSTM_BUILD_BENCH=OFF \
        -DSCHEDSTM_BUILD_EXAMPLES=OFF -DSCHEDSTM_TEST_HARNESS=OFF
    else
      echo "=== [clang] skipped: no clang (scripts/install-deps.sh --tests installs it)"
      record 0 0 1 "clang: skipped (no clang)"
    fi
    ;;
  format)
    run_script format "$root/build/check-format.log" "$root/scripts/check-format.sh"
    ;;
  install) ;; # after the other parts, on the normal build (below)
  *)
    echo "unknown part '$p' (normal asan tsan delay debug clang format install)"
    record 0 1 0 "$p: unknown part"
    ;;
  esac
}

# The parts that run beside the delay part, when both it and they are asked
# for: short ctest runs after a build (debug, clang) and a script (format).
# The delay part's entries mostly sleep; these fill the CPUs meanwhile.
beside=""
if [ "${RUN_ALL_BESIDE:-1}" != 0 ] && [[ " $parts " == *" delay "* ]]; then
  for p in $parts; do
    case $p in debug | clang | format) beside+="$p " ;; esac
  done
fi
for p in $parts; do
  if [[ " $beside " == *" $p "* ]]; then continue; fi
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

# The installed library as a consumer sees it (pkg-config, find_package,
# exported symbols, headers alone), against the normal build (skipped when
# that build failed to configure: the failure is counted once, above).
# It runs with the normal part, or alone as the part "install" on the normal
# build that an earlier run left.
if [[ " $parts " == *" normal "* ]] && [[ "$configured" != *" normal "* ]]; then
  echo "=== [install] skipped: the normal build failed to configure"
  record 0 0 0 "install: skipped (normal build not configured)"
elif [[ " $parts " == *" normal "* ]] || [[ " $parts " == *" install "* ]]; then
  run_script install "$root/build/check-install.log" \
    "$root/scripts/check-install.sh" "$root/build/test-normal"
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
