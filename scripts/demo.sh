#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/demo.sh: build schedstm and show, in a few minutes, what it is for.
#
#  1. One thread and two: schedstm against GCC's libitm (ml_wt) and
#     uninstrumented sequential code on the four intset structures (linked
#     list, skip list, red-black tree, hash set), 20% updates: what the
#     instrumentation costs; and schedstm-itm, libitm's own compiled code
#     (gcc -fgnu-tm) run on schedstm through libschedstm-itm.
#  2. Oversubscribed: more threads than CPUs (2, 8, 32 and 64 threads on a
#     hash set, 50% updates), schedstm with suicide (abort and retry at
#     once, TinySTM's default), with scheduling policies (ser-block,
#     ser-yield, adaptive, the library's default) and libitm. When threads outnumber
#     CPUs, a transaction descheduled in the middle keeps its locks and the
#     others abort against it again and again; the policies make the loser
#     wait until the winner has ended, so the throughput holds.
#
# Prints the tables of both sweeps and a digest of the second, and writes
# results/demo/single-thread/ and results/demo/oversubscribed/
# (summary.md, results.jsonl, results.csv) and the figures
# results/demo/single-thread.png and results/demo/oversubscribed.png (lines:
# medians over the repetitions, bands: min-max, the CPU count in the
# caption; the second also has each variant's throughput as a share of its
# own at 2 threads). About 4 minutes on 2 vCPUs, the build included.
#
# Runs scripts/install-deps.sh --demo first (apt-get through sudo for
# missing tools; matplotlib with pip into the virtual environment
# $SCHEDSTM_VENV, default build/venv, whose interpreter runs the harness). A
# new build directory is configured without the test suite
# (-DSCHEDSTM_BUILD_TESTS=OFF), which the demo does not use; an existing one
# keeps its settings.
#
# Environment: BUILD_DIR (default build), OUT_DIR (default results/demo),
# DEMO_REPS (3), DEMO_DURATION_MS (part 1, 500), DEMO_THREADS (part 1, 1,2),
# DEMO_BACKENDS (part 1, default schedstm,schedstm-itm,itm,seq), DEMO_OVERSUB_MS (part 2,
# 1000), DEMO_OVERSUB_THREADS (part 2, 2,8,32,64), DEMO_OVERSUB_CMS (part 2,
# suicide,ser-block,ser-yield,adaptive).
# Exit status: 0 with the tables and both figures; 1 if some runs failed
# (the sweeps list them; the figures show the runs that succeeded); a
# sweep's status if it could not run (2: bad command line); 3 if the
# tables were printed but a figure could not be drawn; 4 if the build tools
# are missing and install-deps.sh could not install them (not root, no sudo).
# Extra arguments go to both runs of bench/harness/sweep.py; -h or --help
# as the first prints this text and does nothing else.
set -euo pipefail

case "${1:-}" in
  -h | --help)
    sed -n '3,/^[^#]/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"
    exit 0
    ;;
esac

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build}
OUT=${OUT_DIR:-$ROOT/results/demo}
REPS=${DEMO_REPS:-3}
DURATION_MS=${DEMO_DURATION_MS:-500}
THREADS=${DEMO_THREADS:-1,2}
OVERSUB_MS=${DEMO_OVERSUB_MS:-1000}
OVERSUB_THREADS=${DEMO_OVERSUB_THREADS:-2,8,32,64}
OVERSUB_CMS=${DEMO_OVERSUB_CMS:-suicide,ser-block,ser-yield,adaptive}
started=$(date +%s)

say() { printf '\n==> %s\n' "$*" >&2; }

say "install what is missing (tools; matplotlib into a virtual environment)"
if ! "$ROOT/scripts/install-deps.sh" --demo >&2; then
  # Without the build tools there is nothing to try: say so, not "cmake:
  # command not found". With them, what failed was matplotlib or a library
  # the build may find anyway: go on (the tables come without figures).
  for tool in cmake gcc make; do
    if ! command -v "$tool" >/dev/null 2>&1; then
      echo "demo: no $tool, and install-deps.sh could not install it (its message is above)" >&2
      exit 4
    fi
  done
  echo "demo: install-deps.sh failed; trying anyway" >&2
fi

say "configure and build ($BUILD)"
CONFIGURE=(-DCMAKE_BUILD_TYPE=Release)
if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
  CONFIGURE+=(-DSCHEDSTM_BUILD_TESTS=OFF) # only the library and the benchmarks are needed
fi
cmake -B "$BUILD" -S "$ROOT" "${CONFIGURE[@]}" >/dev/null
cmake --build "$BUILD" -j2 >&2

# The harness runs with the interpreter of the virtual environment that
# install-deps.sh --demo made (matplotlib is there, not in the system's
# Python); without it, with python3, and the tables come without figures.
PYTHON=${SCHEDSTM_VENV:-$ROOT/build/venv}/bin/python
if [[ ! -x "$PYTHON" ]]; then
  echo "demo: no virtual environment at ${PYTHON%/bin/python}: running the harness with python3" >&2
  PYTHON=python3
fi
FIGURES=1
if ! "$PYTHON" -c 'import matplotlib' 2>/dev/null; then
  echo "demo: matplotlib unavailable: the tables are printed, no figures" >&2
  FIGURES=0
fi
CPUS=$(nproc 2>/dev/null || echo "?")

BACKENDS=schedstm,seq
BASELINE=seq
ITM=
if [[ -x "$BUILD/bench/intset-itm" ]]; then
  BACKENDS=schedstm,itm,seq
  # schedstm-itm: libitm's very object code (gcc -fgnu-tm) linked with
  # libschedstm-itm instead (docs/design/itm.md)
  [[ -x "$BUILD/bench/intset-schedstm-itm" ]] && BACKENDS=schedstm,schedstm-itm,itm,seq
  BASELINE=itm
  ITM=,itm
else
  echo "demo: no libitm build (compiler without -fgnu-tm): comparing with seq only" >&2
fi
BACKENDS=${DEMO_BACKENDS:-$BACKENDS}
[[ ",$BACKENDS," == *",$BASELINE,"* ]] || BASELINE=${BACKENDS%%,*}

status=0
failed_runs=0
missing=()
# ran NAME STATUS: true if the sweep NAME produced results: it succeeded, or
# it ended with status 1 (some runs failed, the others were recorded).
ran() {
  if [[ "$2" -eq 1 && -s "$OUT/$1/results.jsonl" ]]; then
    failed_runs=1
    return 0
  fi
  [[ "$2" -eq 0 ]]
}
# figure NAME TITLE CAPTION [PLOT OPTIONS]: draw $OUT/NAME.png from
# $OUT/NAME/results.jsonl.
figure() {
  local name=$1 title=$2 caption=$3
  shift 3
  [[ "$FIGURES" = 1 ]] || { missing+=("$name.png"); return 0; }
  if ! "$PYTHON" "$ROOT/bench/harness/plot.py" "$OUT/$name/results.jsonl" \
    -o "$OUT/$name.png" --title "$title" --caption "$caption" "$@" >/dev/null; then
    missing+=("$name.png")
  fi
}

say "1/2 one thread and two: $BACKENDS on ll/sl/rb/hs (1k elements), 20% updates, threads $THREADS, ${DURATION_MS} ms x $REPS reps"
echo "# 1/2: what the instrumentation costs (one thread and two)"
"$PYTHON" "$ROOT/bench/harness/sweep.py" \
  --bin-dir "$BUILD/bench" --backends "$BACKENDS" --baseline "$BASELINE" \
  --structures ll,sl,rb,hs --updates 20 --threads "$THREADS" \
  --initial 1024 --duration-ms "$DURATION_MS" --reps "$REPS" \
  --out "$OUT/single-thread" "$@" || status=$?
if ran single-thread "$status"; then
  status=0
  figure single-thread "schedstm, libitm and uninstrumented code, 20% updates" \
    "schedstm: this library with its default policy; schedstm-itm: the itm binaries' code, compiled by gcc -fgnu-tm, linked with libschedstm-itm; itm: GCC's libitm (ITM_DEFAULT_METHOD=ml_wt); seq: the same code uninstrumented, one thread only (dashed line)."
fi

if [[ "$status" -eq 0 ]]; then
  say "2/2 oversubscribed: schedstm with $OVERSUB_CMS${ITM:+ and libitm} on a hash set (16k elements), 50% updates, threads $OVERSUB_THREADS on $CPUS CPUs, ${OVERSUB_MS} ms x $REPS reps"
  echo
  echo "# 2/2: more threads than CPUs ($OVERSUB_THREADS threads on $CPUS CPUs)"
  "$PYTHON" "$ROOT/bench/harness/sweep.py" \
    --bin-dir "$BUILD/bench" --backends "schedstm$ITM" --cms "$OVERSUB_CMS" \
    --structures hs --initial 16384 --updates 50 --threads "$OVERSUB_THREADS" \
    --duration-ms "$OVERSUB_MS" --reps "$REPS" \
    --out "$OUT/oversubscribed" "$@" || status=$?
  if ran oversubscribed "$status"; then
    status=0
    OVERSUB_RAN=1
  fi
fi
if [[ "$status" -eq 0 && "${OVERSUB_RAN:-0}" = 1 ]]; then
  figure oversubscribed "More threads than CPUs: a hash set (16k), 50% updates" \
    "suicide, ser-block, ser-yield, adaptive (the default): schedstm's contention managers (suicide retries at once; ser-* wait for the winner to end, sleeping on a futex or yielding; adaptive chooses online); itm: GCC's libitm (ml_wt), which reports no abort counts." \
    --relative
  # What the second sweep shows, in a few lines: each variant's throughput
  # at the most threads as a share of its own at the fewest.
  "$PYTHON" - "$OUT/oversubscribed/results.jsonl" "$ROOT/bench/harness" <<'PY' || true
import json, sys
sys.path.insert(0, sys.argv[2])
import summary
records = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
ok = summary.ok_records(records)
threads = sorted({r["threads"] for r in ok})
if len(threads) >= 2:
    w = summary.workload_key(ok[0])
    cpus = ok[0].get("cpus", "?")
    print("\nAt %d threads on %s CPUs, each variant keeps this share of its own %d-thread "
          "throughput (median of per-repetition ratios):" % (threads[-1], cpus, threads[0]))
    for v in summary.ordered_unique(r["variant"] for r in ok):
        share = summary.scaling_ratio(records, w, threads[-1], v, threads[0])
        rate = summary.median_of([r for r in ok if r["variant"] == v
                                  and r["threads"] == threads[-1]], "commits_per_s")
        print("  %-20s %6s   (%s commits/s)" % (v, summary.fmt_share(share),
                                                 summary.fmt_rate(rate)))
PY
fi

if [[ -d "$OUT" ]]; then
  say "results in $OUT ($(($(date +%s) - started)) s)"
  ls -1 "$OUT" >&2
fi
if [[ "$status" -ne 0 ]]; then
  echo "demo: the sweep failed (exit status $status; its messages are above)" >&2
elif [[ "$failed_runs" = 1 ]]; then
  echo "demo: some runs failed (listed under the tables above, and in summary.md); the figures show the others" >&2
  status=1
elif [[ ${#missing[@]} -gt 0 ]]; then
  # The tables are above, but the demonstration promised figures.
  if [[ "$FIGURES" = 0 ]]; then
    echo "demo: no figure: matplotlib could not be installed (scripts/install-deps.sh --demo)" >&2
  else
    echo "demo: no figure was written for ${missing[*]} in $OUT (see the messages above)" >&2
  fi
  status=3
fi
exit "$status"
