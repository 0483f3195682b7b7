#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Line and branch coverage of the library (src/) and sstm-top (tools/) under
# the default ctest set, for finding code that no test runs. Not part of
# tests/run_all.sh: a coverage number is a map, not a target.
#
#   scripts/coverage.sh [BUILD_DIR]   (default build/coverage)
#   scripts/coverage.sh -h | --help   this text
#
# Builds with --coverage's counters (-fprofile-arcs -ftest-coverage, which the
# programs written with gcc -fgnu-tm turn off: CMakeLists.txt, SSTM_GNU_TM_COPTS;
# SCHEDSTM_DEBUG on so the engine's test seams run;
# -fprofile-update=atomic, since the tests are multi-threaded; the library
# keeps its own -O2, so a line of an inlined function counts where it was
# inlined, and the tests are built -O1), runs ctest there, and writes
# BUILD_DIR/coverage.txt (printed) and
# BUILD_DIR/coverage/index.html (per line). Code run only in forked children
# that die by a signal or _exit (the default misuse handler, the state
# table's fork handler) is not counted: gcov writes its counts at exit.
# Installs gcovr with scripts/install-deps.sh --coverage if it is missing
# (into the project's virtual environment, $SCHEDSTM_VENV, default build/venv).
set -euo pipefail

case "${1:-}" in
  -h | --help)
    sed -n '3,/^[^#]/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"
    exit 0
    ;;
  -*)
    echo "coverage: unknown option '$1' (try --help)" >&2
    exit 2
    ;;
esac
if [ $# -gt 1 ]; then
  echo "coverage: one argument at most, the build directory (try --help)" >&2
  exit 2
fi

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(realpath -m "${1:-$root/build/coverage}")
jobs=$(nproc 2>/dev/null || echo 2)

"$root/scripts/install-deps.sh" --coverage
python=${SCHEDSTM_VENV:-$root/build/venv}/bin/python
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DSCHEDSTM_BUILD_TESTS=ON \
  -DSCHEDSTM_DEBUG=ON -DCMAKE_C_FLAGS="-fprofile-arcs -ftest-coverage -O1 -fprofile-update=atomic" \
  -DCMAKE_EXE_LINKER_FLAGS=--coverage -DCMAKE_SHARED_LINKER_FLAGS=--coverage >/dev/null
cmake --build "$build" -j"$jobs" >/dev/null
find "$build" -name '*.gcda' -delete # counts of this run only
rc=0
(cd "$build" && ctest -j"$jobs" --timeout 600 --output-on-failure) || rc=$?
mkdir -p "$build/coverage"
# Filters relative to the working directory (gcovr reads them as regular
# expressions: the root's own path could hold metacharacters).
(cd "$root" && "$python" -m gcovr -r . "$build" --filter 'src/' --filter 'tools/' \
  --txt "$build/coverage.txt" --html-details "$build/coverage/index.html" --print-summary)
cat "$build/coverage.txt"
if [ "$rc" -ne 0 ]; then
  echo "coverage: some tests failed (ctest exit $rc); the figures above are from that run" >&2
fi
exit "$rc"
