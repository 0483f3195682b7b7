#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/demo.sh: build schedstm and run a short comparison of schedstm,
# GCC libitm (ml_wt) and uninstrumented sequential code on the four intset
# structures (linked list, skip list, red-black tree, hash set) at 1, 2 and
# 4 threads with 20% updates. Prints a markdown table and writes
# results/demo/{summary.md,results.jsonl,results.csv,throughput.png}.
# Takes about 3 minutes on a 2-vCPU machine. Runs scripts/install-deps.sh
# --demo first (apt-get through sudo and pip, for whatever is missing). A new
# build directory is configured without the test suite
# (-DSCHEDSTM_BUILD_TESTS=OFF), which the demo does not use; an existing one
# keeps its settings.
#
# Environment: BUILD_DIR (default build), OUT_DIR (default results/demo),
# DEMO_DURATION_MS (1000), DEMO_REPS (3), DEMO_THREADS (1,2,4),
# DEMO_BACKENDS (default schedstm,itm,seq; e.g. add schedstm-inline).
# Exit status: 0 with the table and the figure; the sweep's status if it
# failed; 3 if the table was printed but no figure could be drawn.
# Extra arguments go to bench/harness/sweep.py, e.g.
#   scripts/demo.sh --peer tinystm=/path/to/tinystm/test/intset
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build}
OUT=${OUT_DIR:-$ROOT/results/demo}
DURATION_MS=${DEMO_DURATION_MS:-1000}
REPS=${DEMO_REPS:-3}
THREADS=${DEMO_THREADS:-1,2,4}

say() { printf '\n==> %s\n' "$*" >&2; }

say "install what is missing (tools, matplotlib)"
"$ROOT/scripts/install-deps.sh" --demo >&2 || echo "demo: install-deps.sh failed; trying anyway" >&2

say "configure and build ($BUILD)"
CONFIGURE=(-DCMAKE_BUILD_TYPE=Release)
if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
  CONFIGURE+=(-DSCHEDSTM_BUILD_TESTS=OFF) # only the library and the benchmarks are needed
fi
cmake -B "$BUILD" -S "$ROOT" "${CONFIGURE[@]}" >/dev/null
cmake --build "$BUILD" -j2 >&2

# The harness runs with the interpreter of the virtual environment that
# install-deps.sh --demo made (matplotlib is there, not in the system's
# Python); without it, with python3, and the table has no figure.
PYTHON=${SCHEDSTM_VENV:-$ROOT/build/venv}/bin/python
if [[ ! -x "$PYTHON" ]]; then
  echo "demo: no virtual environment at ${PYTHON%/bin/python}: running the harness with python3" >&2
  PYTHON=python3
fi
PLOT=--plot
if ! "$PYTHON" -c 'import matplotlib' 2>/dev/null; then
  echo "demo: matplotlib unavailable: the table is printed, no figure" >&2
  PLOT=
fi

BACKENDS=schedstm,seq
BASELINE=seq
if [[ -x "$BUILD/bench/intset-itm" ]]; then
  BACKENDS=schedstm,itm,seq
  BASELINE=itm
else
  echo "demo: no libitm build (compiler without -fgnu-tm): comparing with seq only" >&2
fi
BACKENDS=${DEMO_BACKENDS:-$BACKENDS}
[[ ",$BACKENDS," == *",$BASELINE,"* ]] || BASELINE=${BACKENDS%%,*}

say "sweep: $BACKENDS, ll/sl/rb/hs, 20% updates, threads $THREADS, ${DURATION_MS} ms x $REPS reps"
status=0
"$PYTHON" "$ROOT/bench/harness/sweep.py" \
  --bin-dir "$BUILD/bench" --backends "$BACKENDS" --baseline "$BASELINE" \
  --structures ll,sl,rb,hs --updates 20 --threads "$THREADS" \
  --initial 1024 --duration-ms "$DURATION_MS" --reps "$REPS" \
  --out "$OUT" $PLOT "$@" || status=$?

if [[ -d "$OUT" ]]; then
  say "results in $OUT"
  ls -1 "$OUT" >&2
fi
if [[ "$status" -ne 0 ]]; then
  echo "demo: the sweep failed (exit status $status; its messages are above)" >&2
elif [[ ! -f "$OUT/throughput.png" ]]; then
  # The table is above, but the demonstration promised a figure.
  if [[ -z "$PLOT" ]]; then
    echo "demo: no figure: matplotlib could not be installed (pip install -r bench/requirements.txt)" >&2
  else
    echo "demo: no figure was written to $OUT/throughput.png (see the messages above)" >&2
  fi
  status=3
fi
exit "$status"
