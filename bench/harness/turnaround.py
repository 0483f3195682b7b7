#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Turnaround per priority level through the request server, as in
[Silvestri17]'s Figures 7-9: sstm-server runs requests on the executor,
sstm-loadgen offers an open-loop load in equal shares over five classes at
the paper's priorities, and the server
reports, per birth priority, the mean turnaround (arrival in the executor
to the end of the transaction, aborted attempts and pauses included) and
the abort probability per attempt, with the share of time its context pool
was at least 90 % busy (the paper's "peak load").

Workloads (--workload):
  synthetic     null requests that run [Silvestri17]'s Table I CPU demands
                inside their transactions: 5 ms at priority 1 (delivery),
                650 us at 2 (stock-level), 350 us at 3 (new-order), 10 us at
                4 (order-status), 5 us at 5 (payment) (the default)
  tpcc          the five TPC-C profiles (bench/tpcc) at the same priorities,
                with their own CPU demands, plus --demand times Table I's
                spun inside each transaction

Variants (each a server configuration; --variants picks some):
  baseline      no preemption, no tick: a worker takes the next request
                only when its transaction ends
  ticks         periodic tick every 100 us, delivered and handled (signal,
                redirect, preemption check) but never switching:
                [Silvestri17]'s "ticks without preemption", the tick
                machinery's cost against the baseline
  event         event-driven preemption (the submitter signals the worker)
  poll          polled preemption at the barriers (signal as a fallback)
  tick100       periodic tick every 100 us, preemption at the ticks only
                (no signal on arrival: [Silvestri17]'s extra ticks)
  tick1000      the same every 1 ms
  aa            a second baseline, the A/A control: its ratios to the
                baseline, shown in the targets' table, are what the host's
                noise alone gives
  handover      event-driven, and a conflict with a paused transaction of
                higher priority hands the worker over to it instead of
                taking its locks over (sstm-server --paused-conflict
                handover; every other variant takes over)
  inherit       event-driven, and a conflict with a paused transaction
                hands the worker over to the one that has done more work
                (sstm-server --paused-conflict inherit: the paused one
                resumes at once on the blocked one's worker, with its
                priority if higher; a lower-priority one only when it is
                at least half-way through its attempt)
  holder3       event-driven, and a transaction preempted while it holds locks
                is raised to priority 3 (sstm-server --holder-level 3): resumed
                before the requests at 3 and below that have not started, and
                preempted only by 4 and 5 (a request at 3 or below does not
                preempt it)
  holder2       the same at priority 2
  waiter        event-driven, and a request preempts a worker whose transaction waits in
                its policy for another's end (a ser-* loser between attempts) before one
                whose transaction runs (sstm-server --waiter-first 1)
  waiter3       waiter and holder3 together
each preemptive one with C_max in --c-max (inf = never promote) x lazy
promotion off/on (--lazy). Within a repetition every variant runs back to
back in an order that rotates with the repetition, and ratios are taken
against the baseline of the same repetition.

The offered rate (--rate): a number, or "peak" (the default),
[Silvestri17]'s peak load, found on the host itself: the
capacity of the baseline is measured first (a burst), then the baseline is
offered rising fractions of it (--peak-fractions) until the context pool
counts at least --contexts x 90 % requests (in the executor or parked in
the server for a context) for at least --peak-busy of the run; the rate
kept is the lowest such fraction whose backlog stays bounded (the load
generator's drain, from its last send to its last reply, at most
--peak-drain of the run), else the highest fraction below it whose backlog
was bounded. Every probe is recorded (kind "peak") and the summary says
which rate was kept and why. --load X instead offers X times the
capacity (the earlier default, 3: an overload whose backlog grows for the
whole run).

--window N keeps at most N requests outstanding (sstm-loadgen --window): offered above the
capacity (--rate), the pool stays full whatever the host's speed and the backlog is bounded
by N, which no open-loop rate gives on a host whose capacity moves by several times
between runs.

--overhead adds the machinery's cost with no high-priority load: every
profile at priority 1 (nothing ever outranks a running transaction), the
load above capacity, the completion rate of each variant against the
baseline's.

Writes, in --out: results.jsonl (one record per run: the server's and the
load generator's JSON and the provenance fields), summary.md, and with
--plot turnaround.png (Fig. 7), speedup.png (Fig. 8), aborts.png (Fig. 9).
Exit status 0, 1 if a run failed, 2 bad command line.

Example (the figures of docs/benchmarks.md):
  turnaround.py --duration-ms 4000 --reps 3 --c-max 1,2,4,8,inf \
      --lazy off,on --plot --out results/turnaround
  turnaround.py --variants baseline,event,poll --c-max inf --reps 10 --metric vexec
"""

import argparse
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import textwrap
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from provenance import compiler_of, host_provenance, utc_now  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
LEVELS = 5
PROFILES = ("new-order", "payment", "order-status", "delivery", "stock-level")

# name -> (server options, preemptive?)
VARIANTS = {
    "baseline": (["--preempt", "none", "--tick-us", "0"], False),
    "ticks": (["--preempt", "check-only", "--tick-us", "100"], False),
    "event": (["--preempt", "signal", "--tick-us", "0"], True),
    "poll": (["--preempt", "poll", "--tick-us", "0"], True),
    "tick100": (["--preempt", "none", "--tick-us", "100"], True),
    "tick1000": (["--preempt", "none", "--tick-us", "1000"], True),
    "handover": (["--preempt", "signal", "--tick-us", "0", "--paused-conflict", "handover"], True),
    "inherit": (["--preempt", "signal", "--tick-us", "0", "--paused-conflict", "inherit"], True),
    # A second baseline, the A/A control: its ratios to the baseline show what the runs
    # resolve at all (a target's interval must be narrower than this one's spread).
    "aa": (["--preempt", "none", "--tick-us", "0"], False),
    "holder3": (["--preempt", "signal", "--tick-us", "0", "--holder-level", "3"], True),
    "holder2": (["--preempt", "signal", "--tick-us", "0", "--holder-level", "2"], True),
    "waiter": (["--preempt", "signal", "--tick-us", "0", "--waiter-first", "1"], True),
    "waiter3": (["--preempt", "signal", "--tick-us", "0", "--waiter-first", "1",
                 "--holder-level", "3"], True),
}
ERROR = "turnaround: error: "
# Every turnaround field the server reports, with the clock it is on.
CLOCKS = {"turnaround_us_mean": "wall, from the submission to the executor",
          "server_turnaround_us_mean": "wall, from the arrival at the server",
          "vturnaround_us_mean": "executor's clock, from the arrival at the server",
          "vexec_turnaround_us_mean": "executor's clock, from the submission to the executor"}
# The server's field of mean turnaround that the tables and figures use (--metric).
TURN = "turnaround_us_mean"


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        print(ERROR + message, file=sys.stderr)
        sys.exit(2)


def parse_args(argv):
    p = _Parser(description=__doc__.split("\n\n")[0],
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(REPO, "build"),
                   help="build directory holding bench/server/sstm-server (default build)")
    p.add_argument("--out", help="output directory (default results/turnaround-DATE)")
    p.add_argument("--workload", choices=("synthetic", "tpcc"), default="synthetic")
    p.add_argument("--classes", default="5000:1,650:2,350:3,10:4,5:5",
                   help="synthetic: SPIN_US:PRIORITY,... (default [Silvestri17]'s Table I)")
    p.add_argument("--variants", default="baseline,ticks,event,poll,tick100,tick1000")
    p.add_argument("--c-max", default="4", help="C_max values, inf = never (default 4)")
    p.add_argument("--lazy", default="off", help="off, on or off,on (default off)")
    p.add_argument("--rate", default="peak",
                   help="offered requests per second, or peak (default): the peak load found "
                        "first on this host (see above)")
    p.add_argument("--load", type=float, default=0,
                   help="offer this multiple of the measured capacity instead of the peak "
                        "load (3: an overload, the backlog grows for the whole run)")
    p.add_argument("--peak-fractions", default="0.6,0.8,1.0,1.2,1.5,2.0",
                   help="--rate peak: the fractions of the capacity tried, rising")
    p.add_argument("--peak-busy", type=float, default=0.9,
                   help="--rate peak: the share of the run the pool must be at least 90 %% "
                        "busy (default 0.9)")
    p.add_argument("--peak-drain", type=float, default=0.25,
                   help="--rate peak: the longest drain after the last send, as a share of "
                        "--duration-ms, for a bounded backlog (default 0.25)")
    p.add_argument("--first-rep", type=int, default=1,
                   help="number of the first repetition (to add repetitions to --out in "
                        "several invocations; the summary covers every record in --out)")
    p.add_argument("--duration-ms", type=int, default=3000)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--workers", type=int, default=0, help="executor workers (0: one per CPU)")
    p.add_argument("--contexts", type=int, default=64,
                   help="contexts, NUM_CONTEXTS (default 64)")
    p.add_argument("--connections", type=int, default=16)
    p.add_argument("--scale", default="1,1,3000,100000",
                   help="warehouses,districts,customers,items (default 1,1,3000,100000: "
                        "[Silvestri17]'s one district)")
    p.add_argument("--cm", default="",
                   help="the server's contention manager (SCHEDSTM_CM; default: the "
                        "library's, adaptive). TPC-C with --demand wants a waiting one "
                        "(ser-block): its deliveries all meet each other's locks")
    p.add_argument("--demand", type=float, default=0,
                   help="tpcc: each request also spins this multiple of [Silvestri17]'s "
                        "Table I CPU demand of its profile (default 0)")
    p.add_argument("--reserve-pct", type=int, default=None,
                   help="the executor's priority-graded admission (sstm-server --reserve-pct; "
                        "default: the server's)")
    p.add_argument("--metric", choices=("wall", "server", "cpu", "vexec"), default="wall",
                   help="turnaround on the wall clock from the submission to the executor "
                        "(default), on the wall clock from the arrival at the server (server: "
                        "the time a request waited parked for a context included), or on the "
                        "executor's clock (cpu, sstm-server --vclock: the CPU time its workers "
                        "ran between a request's arrival and its end, over the number of "
                        "workers), which leaves out the time the host kept the workers off "
                        "their CPUs; vexec: the same clock from the submission to the "
                        "executor, [Silvestri17]'s definition). cpu and vexec run the server "
                        "with --vclock; the summary then gives the targets on every clock")
    p.add_argument("--overhead", action="store_true",
                   help="also measure the machinery's cost with no high-priority load")
    p.add_argument("--plot", action="store_true", help="draw the figures (matplotlib)")
    p.add_argument("--window", type=int, default=0,
                   help="at most this many requests outstanding (sstm-loadgen --window; "
                        "default 0: open loop). Offered above the capacity (--rate), it keeps "
                        "that many requests in the server whatever the host's speed: the pool "
                        "busy by construction and the backlog bounded by the window")
    p.add_argument("--timeout", type=float, default=300, help="seconds per run")
    a = p.parse_args(argv)
    a.variants = [v for v in a.variants.split(",") if v]
    for v in a.variants:
        if v not in VARIANTS:
            p.error("--variants: unknown variant %r (known: %s)" % (v, ", ".join(VARIANTS)))
    try:
        a.c_max = [0 if c == "inf" else int(c) for c in a.c_max.split(",")]
    except ValueError:
        p.error("--c-max: %r is not a list of integers and inf" % a.c_max)
    if any(c < 0 for c in a.c_max):
        p.error("--c-max: values must be >= 1 or inf")
    lazy = a.lazy.split(",")
    if not lazy or any(x not in ("off", "on") for x in lazy):
        p.error("--lazy: %r is not off, on or off,on" % a.lazy)
    a.lazy = [x == "on" for x in lazy]
    try:
        w, d, c, i = (int(x) for x in a.scale.split(","))
    except ValueError:
        p.error("--scale: %r is not warehouses,districts,customers,items" % a.scale)
    a.scale_args = ["--warehouses", str(w), "--districts", str(d), "--customers", str(c),
                    "--items", str(i)]
    if a.workload == "synthetic":
        a.server_args, a.loadgen_args = ["--no-tpcc"], ["--classes", a.classes]
    else:
        a.server_args, a.loadgen_args = a.scale_args + ["--demand", str(a.demand)], a.scale_args
    if a.window < 0:
        p.error("--window: %d is not a count of requests (>= 0)" % a.window)
    if a.window:
        a.loadgen_args = a.loadgen_args + ["--window", str(a.window)]
    if a.reps < 1 or a.duration_ms < 100 or a.first_rep < 1:
        p.error("--reps and --first-rep must be >= 1 and --duration-ms >= 100")
    if a.rate != "peak":
        try:
            a.rate = float(a.rate)
        except ValueError:
            p.error("--rate: %r is neither a number nor peak" % a.rate)
        if a.rate <= 0:
            p.error("--rate must be positive")
    if a.load < 0:
        p.error("--load must be 0 (the peak load) or a positive multiple of the capacity")
    if not 0 < a.peak_busy <= 1:
        p.error("--peak-busy must be a share of the run, in (0, 1]")
    if a.peak_drain < 0:
        p.error("--peak-drain must be >= 0")
    try:
        a.peak_fractions = [float(x) for x in a.peak_fractions.split(",")]
    except ValueError:
        p.error("--peak-fractions: %r is not a list of numbers" % a.peak_fractions)
    if not a.peak_fractions or any(f <= 0 for f in a.peak_fractions) or \
            a.peak_fractions != sorted(a.peak_fractions):
        p.error("--peak-fractions must be positive and rising")
    a.server = os.path.join(a.build, "bench", "server", "sstm-server")
    a.loadgen = os.path.join(a.build, "bench", "server", "sstm-loadgen")
    for prog in (a.server, a.loadgen):
        if not os.access(prog, os.X_OK):
            p.error("%s is not built (cmake --build %s --target sstm-server sstm-loadgen)"
                    % (prog, a.build))
    if not a.out:
        a.out = os.path.join(REPO, "results", "turnaround-" +
                             time.strftime("%Y%m%d-%H%M%S", time.gmtime()))
    return a


def configurations(args):
    """(label, variant, c_max, lazy) of every configuration to run."""
    out = []
    for v in args.variants:
        if VARIANTS[v][1]:
            for c in args.c_max:
                for lz in args.lazy:
                    label = "%s C%s%s" % (v, "inf" if c == 0 else c, " lazy" if lz else "")
                    out.append((label, v, c, lz))
        else:
            out.append((v, v, 0, False))
    return out


def run_once(args, variant, c_max, lazy, rate, extra_loadgen=()):
    """One server + load generator run; returns (server stats, loadgen stats)."""
    cmd = [args.server, "--port", "0", "--contexts", str(args.contexts),
           "--workers", str(args.workers), "--c-max", str(c_max)] + VARIANTS[variant][0]
    cmd += args.server_args + (["--lazy"] if lazy else [])
    cmd += ["--vclock"] if args.metric in ("cpu", "vexec") else []
    cmd += ["--reserve-pct", str(args.reserve_pct)] if args.reserve_pct is not None else []
    env = dict(os.environ, SCHEDSTM_CM=args.cm) if args.cm else None
    srv = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=env)
    try:
        line = srv.stdout.readline()
        if not line.startswith("listening on "):
            raise RuntimeError("server did not start: %s %s" % (line, srv.stderr.read()[-500:]))
        port = line.rsplit(":", 1)[1].strip()
        lg = subprocess.run([args.loadgen, "--port", port, "--rate", str(rate),
                             "--duration-ms", str(args.duration_ms), "--connections",
                             str(args.connections), "--drain-ms", "60000"]
                            + args.loadgen_args + list(extra_loadgen),
                            capture_output=True, text=True, timeout=args.timeout)
        srv.send_signal(signal.SIGTERM)
        out, err = srv.communicate(timeout=args.timeout)
    except BaseException:
        srv.kill()
        srv.wait()
        raise
    if srv.returncode != 0:
        raise RuntimeError("server exit status %d: %s" % (srv.returncode, err[-500:]))
    if lg.returncode not in (0, 1):
        raise RuntimeError("loadgen exit status %d: %s" % (lg.returncode, lg.stderr[-500:]))
    return json.loads(out.strip().splitlines()[-1]), json.loads(lg.stdout.strip().splitlines()[-1])


def capacity(args):
    """Replies per second of the baseline to a burst of requests sent at once (a bounded
    count, so that the backlog drains quickly)."""
    # TPC-C's own profiles take 3-50 us; with --demand they take Table I's milliseconds
    n = 1500 if args.workload == "synthetic" or args.demand > 0 else 30000
    st, lg = run_once(args, "baseline", 0, False, 1000000, ["--count", str(n)])
    return lg["reply_rate"], st, lg


def drain_s(lg):
    """The load generator's time from its last send to its last reply: the backlog
    the offered load left behind, in seconds of service."""
    return max(0.0, lg.get("elapsed_s", 0.0) - lg.get("send_span_s", 0.0))


def peak_choice(probes, busy, drain_limit):
    """The rate kept among probes [(fraction, rate, busy90 share, drain s)], rising:
    (rate, reason). The lowest fraction at which the pool is at least 90 % busy for
    `busy` of the run, if its drain is at most drain_limit; else the highest bounded
    fraction below it; else the lowest bounded one, or the lowest probed."""
    bounded = [p for p in probes if p[3] <= drain_limit]
    for i, (f, rate, b, d) in enumerate(probes):
        if b >= busy:
            if d <= drain_limit:
                return rate, "%.2fx capacity: pool >= 90 %% busy %.0f %% of the run, drain " \
                    "%.2f s" % (f, 100 * b, d)
            below = [p for p in probes[:i] if p[3] <= drain_limit]
            if below:
                f2, r2, b2, d2 = below[-1]
                return r2, "%.2fx capacity: the highest bounded backlog (drain %.2f s; pool " \
                    ">= 90 %% busy %.0f %% of the run); at %.2fx the pool was busy but the " \
                    "drain %.2f s" % (f2, d2, 100 * b2, f, d)
            break
    if bounded:
        f2, r2, b2, d2 = bounded[-1]
        return r2, "%.2fx capacity: the highest bounded backlog (drain %.2f s), the pool " \
            ">= 90 %% busy only %.0f %% of the run" % (f2, d2, 100 * b2)
    return probes[0][1], "%.2fx capacity: no probe had a bounded backlog" % probes[0][0]


def peak_rate(args, cap, keep, prov):
    """--rate peak: probes rising fractions of the capacity with the baseline and keeps
    one (peak_choice); returns (rate, reason)."""
    probes = []
    limit = args.peak_drain * args.duration_ms / 1e3
    for f in args.peak_fractions:
        rate = round(cap * f)
        st, lg = run_once(args, "baseline", 0, False, rate)
        keep(record(args, 0, "peak %.2f" % f, "baseline", 0, False, rate, st, lg, prov,
                    kind="peak"))
        probes.append((f, rate, st["context_busy90_share"], drain_s(lg)))
        print("peak probe %.2fx = %d/s: pool >= 90 %% busy %.0f %%, drain %.2f s, parked "
              "mean %.0f" % (f, rate, 100 * probes[-1][2], probes[-1][3],
                             st.get("parked_mean", 0)), file=sys.stderr)
        if probes[-1][2] >= args.peak_busy:
            break
    return peak_choice(probes, args.peak_busy, limit)


def level_means(st):
    return {lv["priority"]: lv for lv in st["levels_stats"]}


def record(args, rep, label, variant, c_max, lazy, rate, st, lg, prov, kind="turnaround"):
    return dict(prov, kind=kind, workload=args.workload, scale=args.scale, metric=args.metric,
                rep=rep, label=label,
                variant=variant, c_max=c_max, lazy=lazy, rate=rate, date=utc_now(), server=st,
                loadgen=lg, compiler=compiler_of(args.server))


def exec_counter(st, key):
    """A counter of the executor's description line (sstm_exec_describe), 0 if absent."""
    for word in st.get("exec", "").split():
        if word.startswith(key + "="):
            try:
                return int(word.split("=", 1)[1])
            except ValueError:
                return 0
    return 0


def rate_of(rec):
    """Completions per second while the executor had work (first acceptance to last
    completion)."""
    st = rec["server"]
    return st["completed"] / st["active_s"] if st.get("active_s") else 0.0


# Two-sided 95 % quantiles of Student's t, by degrees of freedom (1..30; 1.96 beyond).
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def gm_ci(ratios):
    """Geometric mean of paired ratios and its 95 % confidence interval (a t interval on
    the logarithms: ratios of turnarounds are multiplicative, and the host's noise acts on
    them as a factor). None for fewer than two ratios."""
    logs = [math.log(r) for r in ratios if r > 0]
    if len(logs) < 2:
        return None
    df = len(logs) - 1
    t = _T975[df - 1] if df <= len(_T975) else 1.96
    m = statistics.mean(logs)
    half = t * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(m), math.exp(m - half), math.exp(m + half)


def verdict(series, bound):
    """A target "ratio <= bound" over several levels' paired ratios: met when every
    level's confidence interval lies at or below the bound, not met when one lies wholly
    above it, unresolved otherwise (the host's spread is wider than the distance to the
    bound, or fewer than two repetitions)."""
    cis = [gm_ci(v) for v in series]
    if any(c and c[1] > bound for c in cis):
        return "not met"
    if all(c and c[2] <= bound for c in cis):
        return "met"
    return "unresolved"


def targets(ok, base, configs, key=None):
    """Lines of the targets' table: per preemptive configuration, the ratio to the
    same repetition's baseline of P4 and P5 (target <= 0.35: 65 % lower) and of P1 and P2
    (target <= 1.05), as median [min-max] over the repetitions, on the turnaround field
    `key` (default the --metric's)."""
    key = key or TURN

    def ratios(mine, p):
        out = []
        for r in mine:
            b = base.get(r["rep"], {}).get(p, {}).get(key)
            m = level_means(r["server"]).get(p, {}).get(key)
            if b and m:
                out.append(m / b)
        return out

    def cell(v):
        if not v:
            return "-"
        g = gm_ci(v)
        return "%.2f [%.2f-%.2f]%s" % (statistics.median(v), min(v), max(v),
                                       " gm %.2f (%.2f-%.2f)" % g if g else "")

    lines = ["", "## Targets (ratios to the baseline of the same repetition; %s)" % key, "",
             "Each cell: median [min-max] over the repetitions, then the geometric mean and "
             "its 95 % confidence interval (t on the logarithms). A target is shown by a "
             "confidence interval on its side of the bound, not by a median alone.", "",
             "| configuration | P4 | P5 | P4-P5 <= 0.35 | P1 | P2 | P1-P2 <= 1.05 | reps |",
             "|---|---|---|---|---|---|---|---|"]
    for label, variant, _c, _l in configs:
        if variant == "baseline":
            continue
        mine = [r for r in ok if r["label"] == label and r["rep"] in base]
        v = {p: ratios(mine, p) for p in (1, 2, 4, 5)}
        # The A/A control is the baseline again: no target applies, its spread is the point.
        ctl = variant == "aa"
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %d |" % (
            label, cell(v[4]), cell(v[5]), "(control)" if ctl else verdict([v[4], v[5]], 0.35),
            cell(v[1]), cell(v[2]), "(control)" if ctl else verdict([v[1], v[2]], 1.05),
            len(mine)))
    return lines


def cpu_per_request(st):
    """The workers' CPU time per completed request (s), None without completions."""
    return st["workers_cpu_s"] / st["completed"] if st.get("completed") and \
        "workers_cpu_s" in st else None


def lowest_penalty(st):
    """The lowest level's penalty from preemption within one run: 1 + paused / (turnaround -
    paused), its mean time paused over the rest of its mean turnaround. In an M/G/1 queue
    with priorities the lowest class waits as long for its start under preemptive-resume as
    without preemption (the work ahead of it is the same); all it loses is the time it is
    paused, S1 * sigma / (1 - sigma) with sigma the higher classes' load. So this estimates
    the A/B ratio's P1 from one run, free of the second run's different host speed. None
    when the level has no completions."""
    lv = level_means(st).get(1)
    if not lv or "paused_us_mean" not in lv:
        return None
    rest = lv["turnaround_us_mean"] - lv["paused_us_mean"]
    return 1 + lv["paused_us_mean"] / rest if rest > 0 else None


def lowest_attempts(st):
    """Attempts per completed request of the lowest level, 1 / (1 - abort probability):
    the work its aborts repeat, which lowest_penalty leaves out (a paused transaction that
    a conflict kills runs again). None without the level."""
    lv = level_means(st).get(1)
    if not lv or lv.get("abort_probability") is None or lv["abort_probability"] >= 1:
        return None
    return 1 / (1 - lv["abort_probability"])


def robust(ok, configs):
    """Lines of the readings that do not compare two runs' turnarounds: per configuration,
    the workers' CPU time per request over the same repetition's baseline's, and the lowest
    level's penalty within each run (lowest_penalty), with the target P1 <= 1.05; and the
    lowest level's attempts per request over the baseline's, the aborts preemption adds
    (a paired ratio again, but of a count the host's speed moves less than a queue)."""
    base = {r["rep"]: r for r in ok if r["variant"] == "baseline"}

    def cell(v):
        g = gm_ci(v)
        return ("%.3f [%.3f-%.3f] gm %.3f (%.3f-%.3f)" % ((statistics.median(v), min(v), max(v))
                                                          + g)
                if g else "%.3f" % v[0] if v else "-")

    lines = ["", "## Work per request, and the lowest level's penalty within the run", "",
             "CPU/request: the workers' CPU time per completed request over the baseline's of "
             "the same repetition. P1 within the run: 1 + paused / (turnaround - paused) of "
             "priority 1, the time preemption paused it over the rest of its turnaround (the "
             "whole of the lowest level's loss under preemptive-resume in an M/G/1 queue with "
             "priorities: its wait for a start is that of the baseline; not the work of its "
             "attempts killed while paused, which the last column shows). Median [min-max], "
             "geometric mean (95 % interval).", "",
             "| configuration | CPU/request (x base) | P1 within the run | P1 <= 1.05 | "
             "P1 attempts/request (x base) | reps |",
             "|---|---|---|---|---|---|"]
    for label, variant, _c, _l in configs:
        if variant == "baseline":
            continue
        mine = [r for r in ok if r["label"] == label]
        cpu, att = [], []
        for r in mine:
            a = cpu_per_request(r["server"])
            b = cpu_per_request(base[r["rep"]]["server"]) if r["rep"] in base else None
            if a and b:
                cpu.append(a / b)
            a = lowest_attempts(r["server"])
            b = lowest_attempts(base[r["rep"]]["server"]) if r["rep"] in base else None
            if a and b:
                att.append(a / b)
        pen = [x for x in (lowest_penalty(r["server"]) for r in mine) if x]
        # Met when the pauses stay under the bound and the aborts added none beyond it
        # (both intervals); not met when the pauses alone exceed it.
        g, ga = gm_ci(pen), gm_ci(att)
        v = "-" if not g or variant == "aa" else \
            "not met" if g[1] > 1.05 else \
            "met" if g[2] <= 1.05 and ga and ga[2] <= 1.05 else "unresolved"
        lines.append("| %s | %s | %s | %s | %s | %d |" % (label, cell(cpu), cell(pen), v, cell(att),
                                                           len(mine)))
    return lines


def summarize(records, configs):
    """summary.md text: per configuration and level, the mean turnaround
    (median over repetitions), its ratio to the same repetition's baseline,
    and the abort probability."""
    ok = [r for r in records if r.get("kind") == "turnaround" and "error" not in r]
    base = {r["rep"]: level_means(r["server"]) for r in ok if r["variant"] == "baseline"}
    lines = ["# Turnaround per priority level (%s)" % (ok[0]["date"] if ok else "no runs"), ""]
    if ok:
        r0 = ok[0]
        engine = " ".join(w for w in r0["server"].get("config", "").split()
                          if w.split("=")[0] in ("design", "cm"))
        lines += ["Host: %s, %s CPUs, kernel %s, commit %s%s; offered %.0f requests/s for %d "
                  "ms, %s contexts; %s, %s%s." % (
                      r0.get("cpu_model"), r0.get("cpus"), r0.get("kernel"),
                      (r0.get("git_commit") or "?")[:10],
                      " (dirty)" if r0.get("git_dirty") else "", r0["rate"],
                      r0["loadgen"]["duration_ms"], r0["server"]["contexts"],
                      r0.get("workload"), engine or "engine ?",
                      "; TPC-C %s, demand x%g" % (r0.get("scale"), r0["server"].get("demand", 0))
                      if r0.get("workload") == "tpcc" else ""),
                  ""]
    head = "| configuration | busy>=90% | " + " | ".join(
        "P%d mean ms (x base)" % p for p in range(1, LEVELS + 1)) + " | " + " | ".join(
        "P%d abort %%" % p for p in range(1, LEVELS + 1)) + " | preempt/req | checks/req | handovers/req |"
    lines += [head, "|" + "---|" * (2 + 2 * LEVELS + 3)]
    for label, variant, c_max, lazy in configs:
        mine = [r for r in ok if r["label"] == label]
        if not mine:
            lines.append("| %s | failed |" % label + " |" * (2 * LEVELS + 3))
            continue
        cells = [label, "%.0f %%" % (100 * statistics.median(
            r["server"]["context_busy90_share"] for r in mine))]
        for p in range(1, LEVELS + 1):
            vals = [level_means(r["server"]).get(p, {}).get(TURN) for r in mine]
            ratios = [level_means(r["server"])[p][TURN] /
                      base[r["rep"]][p][TURN] for r in mine
                      if r["rep"] in base and base[r["rep"]].get(p, {}).get(TURN)]
            vals = [v for v in vals if v is not None]
            cells.append("%.2f (%s)" % (statistics.median(vals) / 1e3,
                                        "%.2f" % statistics.median(ratios) if ratios else "-")
                         if vals else "-")
        for p in range(1, LEVELS + 1):
            vals = [level_means(r["server"]).get(p, {}).get("abort_probability") for r in mine]
            vals = [v for v in vals if v is not None]
            cells.append("%.2f" % (100 * statistics.median(vals)) if vals else "-")
        pre = [sum(lv["preemptions"] for lv in r["server"]["levels_stats"]) /
               max(1, r["server"]["completed"]) for r in mine]
        cells.append("%.3f" % statistics.median(pre))
        chk = [exec_counter(r["server"], "checks") / max(1, r["server"]["completed"]) for r in mine]
        cells.append("%.2f" % statistics.median(chk))
        ho = [exec_counter(r["server"], "handovers") / max(1, r["server"]["completed"])
              for r in mine]
        cells.append("%.4f" % statistics.median(ho))
        lines.append("| " + " | ".join(cells) + " |")
    clock = {"vturnaround_us_mean": "the executor's clock (the CPU time its workers ran, over "
                                    "their number: the host's time off-CPU left out), from the "
                                    "request's arrival at the server",
             "server_turnaround_us_mean": "the wall clock from the request's arrival at the "
                                          "server (its time parked for a context included)"}.get(
                                              TURN, "the wall clock from the submission")
    lines += ["", "Mean turnaround, on " + clock + ": arrival in the executor to the end of the "
              "transaction "
              "(queueing, pauses and aborted attempts included), the median over %d "
              "repetitions; (x base): its ratio to the baseline of the same repetition "
              "(below 1: faster). Abort %%: aborted attempts / all attempts of the level. "
              "checks/req: preemption checks run (ticks, signals and polled points that "
              "reached the check) per completed request." % len({r["rep"] for r in ok})]
    lines += targets(ok, base, configs)
    for key in CLOCKS:
        if key != TURN and any(key in lv for r in ok for lv in r["server"]["levels_stats"]):
            lines += targets(ok, base, configs, key)
    if ok:
        lines += robust(ok, configs)
    peak = [r for r in records if r.get("kind") == "peak" and "error" not in r]
    if peak:
        lines += ["", "## Peak load: the probes (baseline)", "",
                  "| probe | offered/s | pool >= 90 % busy | executor's contexts (mean) | "
                  "parked (mean, max) | drain s |", "|---|---|---|---|---|---|"]
        for r in peak:
            st = r["server"]
            lines.append("| %s | %d | %.0f %% | %.0f %% | %.0f, %d | %.2f |" % (
                r["label"], r["rate"], 100 * st["context_busy90_share"],
                100 * st.get("exec_occupancy_mean", 0), st.get("parked_mean", 0),
                st.get("parked_max", 0), drain_s(r["loadgen"])))
    why = [r for r in records if r.get("kind") == "rate"]
    if why:
        lines += ["", "Rate kept: %d requests/s, %s." % (why[-1]["rate"], why[-1]["reason"])]
    over = [r for r in records if r.get("kind") == "overhead" and "error" not in r]
    if over:
        lines += ["", "## Overhead with no high-priority load", "",
                  "| variant | completions/s (median) | x baseline (paired: median [min-max]) |",
                  "|---|---|---|"]
        bases = {r["rep"]: rate_of(r) for r in over if r["variant"] == "baseline"}
        for v in sorted({r["label"] for r in over}, key=lambda x: x != "baseline"):
            mine = [r for r in over if r["label"] == v]
            rates = [rate_of(r) for r in mine]
            ratios = [x / bases[r["rep"]] for x, r in zip(rates, mine) if r["rep"] in bases]
            lines.append("| %s | %.0f | %s |" % (v, statistics.median(rates),
                                                 "%.3f [%.3f-%.3f]" % (statistics.median(ratios),
                                                                       min(ratios), max(ratios))
                                                 if ratios else "-"))
    failed = [r for r in records if "error" in r]
    if failed:
        lines += ["", "## Failed runs", ""] + ["- %s rep %d: %s" % (r["label"], r["rep"],
                                                                   r["error"]) for r in failed]
    return "\n".join(lines) + "\n"


def plot(records, configs, out_dir):
    import plot as plotmod
    plotmod.need_matplotlib()
    plt = plotmod.plt
    ok = [r for r in records if r.get("kind") == "turnaround" and "error" not in r]
    base = {r["rep"]: level_means(r["server"]) for r in ok if r["variant"] == "baseline"}
    levels = list(range(1, LEVELS + 1))
    cpus = ok[0].get("cpus") if ok else None
    workload = ok[0].get("workload") if ok else None
    classes = ok[0]["loadgen"].get("classes") if ok else None
    classes = ",".join("%d:%d" % (k["spin_us"], k["priority"]) for k in classes or [])
    contexts = ok[0]["server"]["contexts"] if ok else None
    busy = "%.0f %%" % (100 * statistics.median(r["server"]["context_busy90_share"]
                                               for r in ok)) if ok else "?"

    def series(label, fn):
        mine = [r for r in ok if r["label"] == label]
        ys = []
        for p in levels:
            vals = [fn(r, p) for r in mine]
            vals = [v for v in vals if v is not None and v > 0]
            ys.append(statistics.median(vals) if vals else float("nan"))
        return ys

    def turn(r, p):
        return level_means(r["server"]).get(p, {}).get(TURN, 0) / 1e3

    def speed(r, p):
        b = base.get(r["rep"], {}).get(p, {}).get(TURN)
        m = level_means(r["server"]).get(p, {}).get(TURN)
        return b / m if b and m else None

    def aborts(r, p):
        return 100 * level_means(r["server"]).get(p, {}).get("abort_probability", 0)

    figs = [("turnaround.png", turn, "mean turnaround (ms, log scale)", True,
             "Fig. 7 of [Silvestri17]: mean turnaround per birth priority"),
            ("speedup.png", speed, "baseline turnaround / turnaround", False,
             "Fig. 8: speed-up against the baseline of the same repetition (above 1: faster)"),
            ("aborts.png", aborts, "abort probability per attempt (%)", False,
             "Fig. 9: abort probability per birth priority")]
    for name, fn, ylabel, logy, title in figs:
        fig, ax = plt.subplots(figsize=(8, 5))
        positive = False
        for i, (label, variant, _c, _l) in enumerate(configs):
            if name == "speedup.png" and variant == "baseline":
                continue
            ys = series(label, fn)
            positive |= any(y > 0 for y in ys if not math.isnan(y))
            ax.plot(levels, ys, marker="osD^v<>pPX*h"[i % 12], label=label,
                    linestyle="--" if variant == "baseline" else "-")
        ax.set_xticks(levels)
        if workload == "synthetic":
            ax.set_xlabel("priority level at birth (its CPU demand: %s)" % ", ".join(
                "%s: %s us" % (p, s) for s, p in (x.split(":") for x in classes.split(","))))
        else:
            ax.set_xlabel("priority level at birth (1 delivery, 2 stock-level, 3 new-order, "
                          "4 order-status, 5 payment)")
        ax.set_ylabel(ylabel)
        if logy and positive:
            ax.set_yscale("log")
        if name == "speedup.png":
            ax.axhline(1.0, color="grey", linewidth=0.8)
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=7, ncol=2)
        reps = len({r["rep"] for r in ok})
        caption = ("Each point: median over %d repetitions; %s through sstm-server, %s CPUs; "
                   "%s contexts, %s of the time at least 90 %% busy (median)."
                   % (reps, "TPC-C" if workload == "tpcc" else "null requests spinning "
                      "[Silvestri17]'s Table I CPU demands", cpus, contexts, busy))
        fig.text(0.01, 0.005, textwrap.fill(caption, 150), fontsize=7)
        fig.tight_layout(rect=(0, 0.05, 1, 1))
        fig.savefig(os.path.join(out_dir, name), dpi=110)
        plt.close(fig)


def main(argv=None):
    global TURN
    args = parse_args(sys.argv[1:] if argv is None else argv)
    TURN = {"cpu": "vturnaround_us_mean", "server": "server_turnaround_us_mean",
            "vexec": "vexec_turnaround_us_mean"}.get(args.metric, "turnaround_us_mean")
    os.makedirs(args.out, exist_ok=True)
    prov = host_provenance()
    records = []
    jsonl = open(os.path.join(args.out, "results.jsonl"), "a", encoding="utf-8")

    def keep(rec):
        records.append(rec)
        jsonl.write(json.dumps(rec) + "\n")
        jsonl.flush()

    rate = args.rate
    if rate == "peak" or args.load:
        cap, st, lg = capacity(args)
        keep(record(args, 0, "capacity", "baseline", 0, False, 200000, st, lg, prov,
                    kind="capacity"))
        if args.load:
            rate, reason = round(cap * args.load), "%gx the capacity (--load)" % args.load
        else:
            rate, reason = peak_rate(args, cap, keep, prov)
        print("capacity %.0f completions/s; offering %.0f requests/s: %s" % (cap, rate, reason),
              file=sys.stderr)
        keep(dict(prov, kind="rate", rate=rate, reason=reason, capacity=cap, date=utc_now()))
    configs = configurations(args)
    total = args.reps * len(configs)
    n = 0
    failed = False
    for rep in range(args.first_rep, args.first_rep + args.reps):
        k = (rep - 1) % len(configs)
        for label, variant, c_max, lazy in configs[k:] + configs[:k]:
            n += 1
            t0 = time.time()
            try:
                st, lg = run_once(args, variant, c_max, lazy, rate)
                keep(record(args, rep, label, variant, c_max, lazy, rate, st, lg, prov))
                msg = "busy90 %.0f%%" % (100 * st["context_busy90_share"])
            except (RuntimeError, subprocess.SubprocessError, ValueError) as e:
                failed = True
                keep(dict(prov, kind="turnaround", rep=rep, label=label, variant=variant,
                          c_max=c_max, lazy=lazy, rate=rate, error=str(e)))
                msg = "FAILED: %s" % e
            print("[%d/%d] rep %d %s: %.1f s, %s" % (n, total, rep, label, time.time() - t0,
                                                    msg), file=sys.stderr)
    if args.overhead:
        over = ["baseline"] + [v for v in args.variants if v != "baseline"]
        if args.workload == "synthetic":
            # The same demands, every one at priority 1 (--classes sets the priorities).
            flat = ["--classes", ",".join(c.split(":")[0] + ":1" for c in args.classes.split(","))]
        else:
            flat = ["--priority", "new-order=1", "--priority", "payment=1", "--priority",
                    "order-status=1", "--priority", "delivery=1", "--priority", "stock-level=1"]
        for rep in range(args.first_rep, args.first_rep + args.reps):
            k = (rep - 1) % len(over)
            for v in over[k:] + over[:k]:
                try:
                    st, lg = run_once(args, v, args.c_max[0], False, rate * 1.5, flat)
                    keep(record(args, rep, v, v, args.c_max[0], False, rate * 1.5, st, lg, prov,
                                kind="overhead"))
                except (RuntimeError, subprocess.SubprocessError, ValueError) as e:
                    failed = True
                    keep(dict(prov, kind="overhead", rep=rep, label=v, variant=v, error=str(e)))
                print("overhead rep %d %s done" % (rep, v), file=sys.stderr)
    jsonl.close()
    # Every record in --out, earlier invocations' included (--first-rep).
    with open(os.path.join(args.out, "results.jsonl"), encoding="utf-8") as f:
        records = [json.loads(x) for x in f if x.strip()]
    text = summarize(records, configs)
    with open(os.path.join(args.out, "summary.md"), "w", encoding="utf-8") as f:
        f.write(text)
    print(text)
    if args.plot:
        try:
            plot(records, configs, args.out)
        except ImportError as e:
            print(ERROR + str(e), file=sys.stderr)
            return 3
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
