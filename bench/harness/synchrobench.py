#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Run synchrobench's C STM benchmarks [Gramoli15] on schedstm and TinySTM,
interleaved and repeated, and report median paired ratios.

The programs are bench/synchrobench/build.sh's: BIN_DIR/<variant>/<bench>
(variants schedstm, schedstm-inline, tinystm, sequential; benchmarks
sftree, linkedlist, hashtable, rbtree, skiplist). A variant on the command
line may name a contention-management policy after '@'
(schedstm@ser-yield): that run gets SCHEDSTM_CM=<policy>; a schedstm
variant without one runs under the library's default policy (SCHEDSTM_CM
is removed from its environment). The sequential variant has no
synchronisation: it runs at one thread only (its points at more threads
are skipped, and the summary says so).

Every point (benchmark x threads) runs --reps repetitions; within one
repetition the variants run back to back, in an order that rotates with
the repetition, so that a ratio compares runs made under the same machine
conditions (the host is shared). The ratio of a variant to --baseline
(default: tinystm when it runs, else the first variant) is the median over
the repetitions of the ratio of the two runs of each repetition, with the
range of those ratios. Each run gets the benchmark's own options: -t
threads, -d --ms, -u --update and -i --initial when given (else the
program's defaults: 256 elements, 20 % updates), -r --range, by default
twice the initial size, -S seed (the same for every variant of a
repetition: repetition r, numbered from 1, gets --seed + r - 1; the
program's -S 0 would be time-based, so --seed starts at 1).

The key range matters: the programs count a failed insert or removal as a
read-only operation and retry the update at the next operation until one
succeeds (their "effective" mode), so a removal of a random key from
1..2^31 (the programs' own default range; the red-black tree's 2^16 fares
little better) almost never succeeds, and the run makes almost no updates
whatever -u says. At twice the initial size inserts and removals succeed
about half the time and the set stays near its initial size; each record
keeps the program's effective update rate ("#eff. upd rate") as upd_pct.
--range program passes no -r (the program's own range), for comparison
with runs made that way.

Each run is checked: exit status 0 and the final size the program prints
equal to the size it expects ("Set size : N (expected: M)"). A run that
fails the check, crashes or does not end within --ms plus 60 s is a failed
record, listed in the summary; the exit status is then 1.

--outside-clock MS times every run from outside: each run is preceded by
a run of the same command for MS ms, both timed by the harness (process
start to exit), and the rate is the difference of their operations over
the difference of their wall times (the program's own is kept as
ops_per_s_inside). The programs read the clock in the main thread after
the start barrier and after their sleep: with more threads than CPUs that
thread waits for a CPU, the clock starts late, and the operations done
meanwhile count over a shorter time (most under policies that give the
benchmark's threads long time slices). Start-up, filling the set and
teardown cancel in the difference. When that thread's wait itself varies
by seconds from run to run (64 threads on 2 CPUs), the difference can be
negative (a failed record): --wall-clock then times each run alone, its
operations over its wall time, process start to exit (start-up and
teardown, a few ms, count as time without operations, alike in every
variant); the threads go on working while the main thread waits, so
that a wait lengthens both.

Writes, in --out: synchrobench.jsonl (one record per run, appended as it
ends: the benchmark, variant, policy, threads, repetition, the program's
operations per second ("#txs ... / s", over its own clock), its aborts
(schedstm variants: the library's count, which the adapter hands to the
program; none for TinySTM, whose default build counts nothing), the sizes,
the run's CPU time, the load average after it, and the provenance fields
of every harness record: git commit, CPU model, kernel, compiler, date) and
synchrobench-summary.md (also printed). --from-jsonl FILE[,FILE...] runs
nothing and summarises earlier runs again, pooled (blocks run one at a
time under a lock). Exit status 0, 1 when a run failed, 2 on a bad command
line (also: a --baseline that is not among the variants, a --from-jsonl
file that cannot be read or holds no records, --from-jsonl records of one
benchmark and thread count that ran different --update, --initial or
--range, an --out that cannot be made).

Example:
  bench/synchrobench/build.sh --tinystm-dir /tmp/tinystm ~/synchrobench /tmp/sb
  synchrobench.py --bin-dir /tmp/sb --out /tmp/sb-res --threads 1,2 --reps 5 \\
      --variants schedstm,schedstm-inline,tinystm --baseline tinystm
"""
import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from provenance import compiler_of, host_provenance, utc_now  # noqa: E402

BENCHS = ["sftree", "linkedlist", "hashtable", "rbtree", "skiplist"]
VARIANTS = ["schedstm", "schedstm-inline", "tinystm", "sequential"]
ERROR = "synchrobench: error: "
INITIAL = 256  # the programs' default initial size (-i)
# A record's workload: what --from-jsonl does not pool across
WORKLOAD = ("update", "initial", "range")


def split_variant(variant):
    """'schedstm@ser-yield' -> ('schedstm', 'ser-yield'); no policy: None."""
    base, _, policy = variant.partition("@")
    return base, (policy or None)


def csv_list(text):
    items = [x.strip() for x in text.split(",")] if text.strip() else []
    if not all(items):
        raise argparse.ArgumentTypeError("empty item in %r" % text)
    return items


def int_list(text):
    try:
        return [int(x) for x in csv_list(text)]
    except ValueError:
        raise argparse.ArgumentTypeError("expected comma-separated integers: %r" % text)


def range_arg(text):
    """--range: a positive number of keys, or 'program' (the program's own)."""
    if text == "program":
        return text
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError("expected a positive number of keys or 'program': %r"
                                         % text)
    return value


def check_variants(variants):
    """None when every variant is known (a policy only on schedstm's), else
    the error message."""
    for v in variants:
        base, policy = split_variant(v)
        if base not in VARIANTS:
            return "unknown variant %r (%s, optionally @policy)" % (v, ", ".join(VARIANTS))
        if policy and not base.startswith("schedstm"):
            return "a policy (@%s) applies to the schedstm variants only, not %r" % (policy, v)
    return None


def loadavg():
    """The 1-minute load average, or None where /proc/loadavg is missing."""
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


_NUM = r"(\d+(?:\.\d+)?)"


def parse_output(text):
    """The figures of a synchrobench program's output: the final and the
    expected size, operations and their rate, aborts, duration (ms). A
    figure that is missing is None."""
    def find(pattern, conv=int):
        m = re.search(pattern, text, re.M)
        return conv(m.group(1)) if m else None

    m = re.search(r"^Set size\s*:\s*(\d+)\s*\(expected:\s*(\d+)\)", text, re.M)
    return {
        "size": int(m.group(1)) if m else None,
        "expected": int(m.group(2)) if m else None,
        "ops": find(r"^#txs\s*:\s*(\d+)"),
        "ops_per_s": find(r"^#txs\s*:\s*\d+\s*\(" + _NUM + r"\s*/\s*s\)", float),
        "aborts": find(r"^#aborts\s*:\s*(\d+)"),
        "duration_ms": find(r"^Duration\s*:\s*(\d+)"),
        "upd_pct": find(r"^#eff\. upd rate\s*:\s*" + _NUM, float),
    }


def check(rc, parsed):
    """None when the run passed its check, else why it did not."""
    if rc != 0:
        return "exit status %d" % rc
    if parsed["size"] is None:
        return "no 'Set size : N (expected: M)' line"
    if parsed["size"] != parsed["expected"]:
        return "final size %d, expected %d" % (parsed["size"], parsed["expected"])
    if parsed["ops_per_s"] is None:
        return "no '#txs' line"
    return None


def command(args, bench, variant, threads, seed, ms):
    base, _ = split_variant(variant)
    cmd = [os.path.join(args.bin_dir, base, bench), "-t", str(threads), "-d", str(ms),
           "-S", str(seed)]
    for flag, value in (("-u", args.update), ("-i", args.initial), ("-r", args.range)):
        if value is not None and value != "program":
            cmd += [flag, str(value)]
    return cmd


def execute(cmd, env, ms):
    """Run one program: (exit status or None, stdout, error text, wall s,
    CPU s). The error text is the last line of stderr, or why it did not
    run ("timed out")."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, errors="replace", timeout=ms / 1000.0 + 60)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        rc, out, err = None, "", "timed out after %g s" % (ms / 1000.0 + 60)
    except OSError as e:
        rc, out, err = None, "", str(e)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = err.strip().splitlines()
    return rc, out, (lines[-1] if lines else ""), wall, cpu


def outside(short, long_):
    """The long run's figures timed from outside: its operations (and
    aborts) minus the short run's, over the difference of the two runs'
    wall times (and CPU times); the error when that is not a rate."""
    dt = long_["wall_s"] - short["wall_s"]
    dops = (long_["ops"] or 0) - (short["ops"] or 0)
    if dt <= 0 or dops <= 0:
        return None, ("outside clock: the long run did not outlast the short one "
                      "(%+.3f s, %+d operations); lengthen --ms" % (dt, dops))
    dcpu = long_["cpu_s"] - short["cpu_s"]
    # a difference of CPU times that is not positive (the short run's
    # start-up outweighed the long run's extra work) is no CPU time: the run
    # keeps its rate but has no per-CPU-second figure
    r = {"ops": dops, "ops_per_s": dops / dt, "elapsed_s": dt,
         "cpu_s": dcpu if dcpu > 0 else None}
    if long_.get("aborts") is not None and short.get("aborts") is not None:
        r["aborts"] = max(0, long_["aborts"] - short["aborts"])
    return r, None


def run_one(args, bench, variant, threads, rep):
    base, policy = split_variant(variant)
    env = dict(os.environ)
    env.pop("SCHEDSTM_CM", None)
    if policy:
        env["SCHEDSTM_CM"] = policy
    seed = args.seed + rep - 1
    cmd = command(args, bench, variant, threads, seed, args.ms)
    rec = {"bench": bench, "variant": variant, "backend": base, "policy": policy,
           "threads": threads, "rep": rep, "seed": seed, "ms": args.ms, "update": args.update,
           "initial": args.initial, "range": args.range, "date": utc_now(),
           "compiler": compiler_of(cmd[0]), "cmd": " ".join(cmd),
           "clock": "outside" if args.outside_clock else "wall" if args.wall_clock else "inside"}

    def one(c, ms):
        rc, out, err, wall, cpu = execute(c, env, ms)
        r = parse_output(out)
        if not base.startswith("schedstm"):
            r["aborts"] = None  # TinySTM's default build and sequential count nothing
        r.update(wall_s=wall, cpu_s=cpu)
        return r, (err or "no output") if rc is None else check(rc, r)

    error = None
    if args.outside_clock:
        short, error = one(command(args, bench, variant, threads, seed, args.outside_clock),
                           args.outside_clock)
        if error:
            error = "short run: " + error
    long_, long_error = one(cmd, args.ms)
    rec.update(long_)
    error = error or long_error
    if args.outside_clock and not error:
        rec["ops_per_s_inside"] = long_["ops_per_s"]
        rec["outside_short_ms"] = args.outside_clock
        rates, error = outside(short, long_)
        if rates:
            rec.update(rates)
    if args.wall_clock and not error:
        rec["ops_per_s_inside"] = long_["ops_per_s"]
        rec["ops_per_s"] = long_["ops"] / long_["wall_s"] if long_["ops"] else None
        if not rec["ops_per_s"]:
            error = "no operations"
    rec["loadavg"] = loadavg()  # after the run: it was part of the load
    rec["error"] = error
    rec["ok"] = error is None
    return rec


def points(args):
    """(bench, threads, variants that run there) in run order; the
    sequential variant only at one thread."""
    for bench in args.benchs:
        for n in args.threads:
            vs = [v for v in args.variants if n == 1 or split_variant(v)[0] != "sequential"]
            yield bench, n, vs


def sweep(args, sink=None):
    runs = []
    for bench, n, vs in points(args):
        for rep in range(1, args.reps + 1):
            k = (rep - 1) % len(vs)
            for variant in vs[k:] + vs[:k]:
                rec = run_one(args, bench, variant, n, rep)
                rec.update(args.provenance)
                runs.append(rec)
                if sink:
                    sink(rec)
                print("%s %s t=%d rep %d: %s" % (
                    bench, variant, n, rep,
                    "%.0f ops/s" % rec["ops_per_s"] if rec["ok"] else "FAILED: " + rec["error"]),
                    file=sys.stderr, flush=True)
    return runs


def paired(runs, bench, n, a, b, value=lambda r: r["ops_per_s"]):
    """The ratios value(a)/value(b) of the repetitions where both ran and
    passed (a repetition is told by its seed and rep)."""
    def by_rep(v):
        return {(r["rep"], r.get("seed"), r.get("block")): value(r) for r in runs
                if r["ok"] and (r["bench"], r["threads"], r["variant"]) == (bench, n, v)}
    ra, rb = by_rep(a), by_rep(b)
    return [ra[k] / rb[k] for k in ra if k in rb and ra[k] is not None and rb[k]]


def fmt_ratio(ratios):
    if not ratios:
        return "-"
    return "%.2f (%.2f-%.2f, %d)" % (statistics.median(ratios), min(ratios), max(ratios),
                                     len(ratios))


def per_cpu_s(r):
    cpu = r.get("cpu_s")
    return r["ops"] / cpu if r.get("ops") and cpu is not None and cpu > 0 else None


def summary(runs, baseline=None):
    ok = [r for r in runs if r["ok"]]
    variants = []
    for r in runs:
        if r["variant"] not in variants:
            variants.append(r["variant"])
    if baseline is None or baseline not in variants:
        baseline = "tinystm" if "tinystm" in variants else (variants[0] if variants else None)
    others = [v for v in variants if v != baseline]
    keys = []
    for r in runs:
        if (r["bench"], r["threads"]) not in keys:
            keys.append((r["bench"], r["threads"]))
    clocks = {r.get("clock", "inside") for r in ok}
    clock = ("timed from outside (--outside-clock: operations and wall times of a long and "
             "a short run, differences)" if clocks == {"outside"} else
             "timed from outside (--wall-clock: each run's operations over its wall time, "
             "process start to exit)" if clocks == {"wall"} else
             "the program's own count and clock" if clocks <= {"inside"} else
             "mixed clocks: some timed from outside, some by the program")
    lines = ["Operations per second (%s), medians; " % clock
             + "ratios to %s: median of the per-repetition ratios (range, pairs)." % baseline,
             "",
             "| bench | threads | " + " | ".join("%s Mops/s" % v for v in variants)
             + "".join(" | %s / %s" % (v, baseline) for v in others)
             + "".join(" | %s / %s per CPU s" % (v, baseline) for v in others)
             + "".join(" | %s aborts/op" % v for v in variants if v.startswith("schedstm"))
             + " |",
             "|" + "---|" * (2 + len(variants) + 2 * len(others)
                             + sum(v.startswith("schedstm") for v in variants))]
    for bench, n in keys:
        cells = []
        for v in variants:
            rs = [r["ops_per_s"] for r in ok if (r["bench"], r["threads"], r["variant"])
                  == (bench, n, v)]
            cells.append("%.3f" % (statistics.median(rs) / 1e6) if rs else "-")
        for v in others:
            cells.append(fmt_ratio(paired(runs, bench, n, v, baseline)))
        for v in others:
            cells.append(fmt_ratio(paired(runs, bench, n, v, baseline, per_cpu_s)))
        for v in variants:
            if v.startswith("schedstm"):
                rs = [r for r in ok if (r["bench"], r["threads"], r["variant"]) == (bench, n, v)
                      and r.get("aborts") is not None and r.get("ops")]
                cells.append("%.4f" % (sum(r["aborts"] for r in rs) / sum(r["ops"] for r in rs))
                             if rs else "-")
        lines.append("| %s | %d | " % (bench, n) + " | ".join(cells) + " |")
    skipped = sorted({(r["bench"], r["threads"]) for r in runs} - {(r["bench"], r["threads"])
                     for r in runs if r["variant"] == "sequential"})
    if "sequential" in variants and skipped:
        lines += ["", "sequential (no synchronisation) runs at one thread only."]
    loads = [r["loadavg"] for r in runs if r.get("loadavg") is not None]
    if loads:
        lines += ["", "Load average (1 min) after the runs: %.1f-%.1f (median %.1f)."
                  % (min(loads), max(loads), statistics.median(loads))]
    dates = sorted(r["date"] for r in runs if r.get("date"))
    if dates:
        lines.append("Runs from %s to %s; %s, %s CPUs, kernel %s, commit %s%s." % (
            dates[0], dates[-1], runs[0].get("cpu_model"), runs[0].get("cpus"),
            runs[0].get("kernel"), (runs[0].get("git_commit") or "?")[:10],
            " (dirty)" if runs[0].get("git_dirty") else ""))
    failed = [r for r in runs if not r["ok"]]
    if failed:
        lines += ["", "FAILED runs:"]
        lines += ["- %s %s t=%d rep %d: %s" % (r["bench"], r["variant"], r["threads"], r["rep"],
                                              r["error"]) for r in failed]
    return "\n".join(lines) + "\n"


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[2:]))
    ap.add_argument("--bin-dir", help="build.sh's OUT_DIR")
    ap.add_argument("--out", required=True)
    ap.add_argument("--benchs", type=csv_list, default=BENCHS)
    ap.add_argument("--variants", type=csv_list, default=["schedstm", "schedstm-inline",
                                                          "tinystm"])
    ap.add_argument("--baseline", help="the variant the ratios divide by (default: tinystm "
                    "when it runs, else the first variant)")
    ap.add_argument("--threads", type=int_list, default=[1, 2])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--ms", type=int, default=1000, help="each run's duration (-d)")
    ap.add_argument("--update", type=int, help="-u (the program's default: 20)")
    ap.add_argument("--initial", type=int, help="-i (the program's default: 256)")
    ap.add_argument("--range", type=range_arg,
                    help="-r, the key range (default: twice the initial size); 'program': "
                         "no -r, the program's own (almost no successful updates)")
    ap.add_argument("--seed", type=int, default=1, help="the first repetition's -S")
    ap.add_argument("--wall-clock", action="store_true",
                    help="rate = the run's operations over its wall time, process start to exit")
    ap.add_argument("--outside-clock", type=int, default=0, metavar="MS",
                    help="time every run from outside: a run of MS ms first, the rate is "
                         "the operations' difference over the wall times' difference")
    ap.add_argument("--from-jsonl", type=csv_list,
                    help="summarise earlier runs' synchrobench.jsonl files instead")
    args = ap.parse_args(argv)

    def fail(msg):
        sys.stderr.write(ERROR + msg + "\n")
        sys.exit(2)

    if args.from_jsonl:
        return args
    if not args.benchs or not args.variants:
        fail("--benchs and --variants need at least one name each")
    if args.baseline is not None and args.baseline not in args.variants:
        fail("--baseline %s is not one of --variants (%s)" % (args.baseline,
                                                             ",".join(args.variants)))
    if not args.bin_dir:
        fail("--bin-dir is required (build.sh's OUT_DIR), or --from-jsonl")
    msg = check_variants(args.variants)
    if msg:
        fail(msg)
    for b in args.benchs:
        if b not in BENCHS:
            fail("unknown benchmark %r (%s)" % (b, ", ".join(BENCHS)))
    if args.reps < 1 or args.ms < 1 or args.seed < 1 or not args.threads or \
            min(args.threads) < 1:
        fail("--reps, --ms, --seed and every --threads value must be positive")
    if args.update is not None and not 0 <= args.update <= 100:
        fail("--update is a percentage, 0 to 100 (got %d)" % args.update)
    if args.initial is not None and args.initial < 1:
        fail("--initial must be positive (got %d)" % args.initial)
    if args.range is None:
        args.range = 2 * (INITIAL if args.initial is None else args.initial)
    if args.range != "program" and \
            args.range < (INITIAL if args.initial is None else args.initial):
        fail("--range %d is smaller than the initial size %d: the programs could not fill "
             "the set" % (args.range, INITIAL if args.initial is None else args.initial))
    if args.wall_clock and args.outside_clock:
        fail("--wall-clock and --outside-clock are two ways to time a run: one at most")
    if args.outside_clock < 0 or args.outside_clock * 2 > args.ms:
        fail("--outside-clock takes a duration in ms of at most half --ms (got %d against %d)"
             % (args.outside_clock, args.ms))
    missing = [os.path.join(args.bin_dir, split_variant(v)[0], b)
               for b in args.benchs for v in args.variants
               if not os.access(os.path.join(args.bin_dir, split_variant(v)[0], b), os.X_OK)]
    if missing:
        fail("no program %s (build it with bench/synchrobench/build.sh)" % missing[0])
    return args


def read_jsonl(paths):
    """The records of earlier runs' synchrobench.jsonl files, each marked with
    its file's index; a file that cannot be read or holds something other
    than those records ends the program (status 2)."""
    runs = []
    for i, path in enumerate(paths):
        try:
            with open(path) as f:
                for n, line in enumerate(f, 1):
                    if not line.strip():
                        continue
                    r = json.loads(line)
                    if not isinstance(r, dict) or not {"bench", "variant", "threads", "rep",
                                                       "ok", "ops_per_s"} <= r.keys():
                        raise ValueError("line %d is not a synchrobench.py record" % n)
                    r["block"] = i  # repetitions pair within their own file
                    runs.append(r)
        except (OSError, UnicodeDecodeError, ValueError) as e:
            sys.stderr.write(ERROR + "--from-jsonl %s: %s\n" % (path, e))
            sys.exit(2)
    return runs


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as e:
        sys.stderr.write(ERROR + "--out %s: %s\n" % (args.out, e))
        return 2
    if args.from_jsonl:
        runs = read_jsonl(args.from_jsonl)
        if not runs:
            sys.stderr.write(ERROR + "--from-jsonl: no records in %s\n"
                             % ", ".join(args.from_jsonl))
            return 2
        # a row pools the runs of one benchmark at one thread count: they
        # must have run the same workload
        workloads = {}
        for r in runs:
            workloads.setdefault((r["bench"], r["threads"]), set()).add(
                tuple(r.get(k) for k in WORKLOAD))
        mixed = sorted(k for k, w in workloads.items() if len(w) > 1)
        if mixed:
            bench, n = mixed[0]
            sys.stderr.write(ERROR + "--from-jsonl: the %s runs at %d threads ran different "
                             "workloads (%s: %s); summarise them apart\n" % (
                                 bench, n, ", ".join(WORKLOAD),
                                 "; ".join(", ".join(str(x) for x in w)
                                           for w in sorted(workloads[mixed[0]], key=str))))
            return 2
        if args.baseline is not None and args.baseline not in {r["variant"] for r in runs}:
            sys.stderr.write(ERROR + "--baseline %s: no run of that variant in --from-jsonl\n"
                             % args.baseline)
            return 2
    else:
        args.provenance = host_provenance()
        path = os.path.join(args.out, "synchrobench.jsonl")
        with open(path, "a") as f:
            def sink(rec):
                f.write(json.dumps(rec) + "\n")
                f.flush()
            runs = sweep(args, sink)
    text = summary(runs, args.baseline)
    with open(os.path.join(args.out, "synchrobench-summary.md"), "w") as f:
        f.write(text)
    print(text, end="")
    return 1 if any(not r["ok"] for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
