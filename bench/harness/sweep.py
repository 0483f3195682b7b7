#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Parameter sweep over the schedstm benchmarks and their peers.

Runs every point (workload x thread count x variant) --reps times. Within
one repetition the variants of a point run back to back (in an order that
rotates with the repetition), so ratios between back-ends compare runs
made under the same machine conditions. Writes, in --out:
  results.jsonl  one raw record per run (the binary's JSON plus harness fields)
  results.csv    the main fields of every run
  summary.md     median per point, ratios vs --baseline, abort ratios
and prints the summary on stdout; progress goes to stderr. Each run's
record is appended to results.jsonl as soon as the run ends; after Ctrl-C
the CSV and the summary are written for the runs that completed (exit
status 130). Exit status 1 if any run failed (the failures are listed in
the summary), 2 on a bad command line or an --out that cannot be written.
The whole command line is checked before the first run: a bad value, an
empty item in a list (2,,4), a policy the schedstm binaries do not know
or an option that does not apply to the benchmark (--structures with
--bench bank) stops the sweep with "sweep: error: ...".

Repetitions are numbered from 1 (the "rep" field, the CSV and the
progress lines agree); repetition r runs with seed --seed + r - 1. Every
record also says where it was measured: git_commit and git_dirty (of the
tree the harness is in), compiler (from the program's ELF .comment),
cpu_model, cpus (the CPUs the sweep may run on), kernel and date (UTC,
when the run started).

Examples:
  sweep.py --structures ll,rb --threads 1,2,4 --reps 3 --baseline itm
  sweep.py --backends schedstm --designs etl,ctl --cms suicide,backoff
  sweep.py --peer tinystm=/path/to/tinystm/test/intset --baseline tinystm
  sweep.py --backends schedstm --cms ser-block --also-bin-dir base=../main/build/bench
  sweep.py --bench bank --audits 10,50 --threads 1,2
  sweep.py --bench stamp --stamp-dir ~/stamp-0.9.10 --threads 1,2,8 \
      --cms default,adaptive        (STAMP: options of its own, stamp.py)
  sweep.py --bench sb7 --mixes r,rw,w --threads 1,4,16 --backends schedstm \
      --cms suicide,backoff --plot

libitm runs get ITM_DEFAULT_METHOD=ml_wt unless --itm-method says otherwise:
without it libitm runs single-threaded programs in serial-irrevocable mode,
which is not a software TM at all.

--outside-clock MS times every variant from outside, the same way: each run
is preceded by a run of the same command for MS milliseconds, both are
timed by the harness (process start to exit), and the rate is the
difference of the commits over the difference of the wall times. Start-up,
set-up, teardown and whatever a program's own clock leaves out cancel.
This matters for peers whose driver starts its clock late or stops it
early when threads outnumber CPUs (TinySTM's intset: see
docs/benchmarks.md); the program's own figure is kept as
commits_per_s_inside.

--report DIR[,DIR...] runs nothing: it summarizes the results.jsonl of
earlier sweeps again, pooled (with this harness's summary, so that an older
sweep gets today's tables), prints the summary and, with --out, writes
results.jsonl (the pooled records), results.csv and summary.md there (and
the figures with --plot). --baseline applies (by default the sweeps' own,
which each record names, when they agree; else the first variant); the
options that describe runs do not. Records of different sweeps pair within their own sweep when
their seeds differ, and in their order when they do not.

Every record also has cpu_s, the run's user + system CPU time as the
harness sees it (with --outside-clock, the difference between the two
runs), and commits_per_cpu_s: on a host shared with other programs, a
figure that depends much less on how much of the CPUs the run was given.
"""

import argparse
import csv
import datetime
import json
import math
import os
import resource
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import adapters  # noqa: E402
from provenance import compiler_of, host_provenance, utc_now  # noqa: E402,F401
import stamp  # noqa: E402
import summary  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))


ERROR = "sweep: error: "


class _Parser(argparse.ArgumentParser):
    """argparse with the sweep's one error prefix (and no usage dump)."""

    def error(self, message):
        sys.stderr.write("%s%s (see --help)\n" % (ERROR, message))
        sys.exit(2)


def csv_list(text):
    """Comma-separated values; "" is the empty list, an empty item (2,,4,
    a leading or trailing comma) is an error, not a value to skip."""
    if not text.strip():
        return []
    items = [x.strip() for x in text.split(",")]
    if not all(items):
        raise argparse.ArgumentTypeError("empty item in %r (separate values with single commas)"
                                         % text)
    return items


def int_list(text):
    items = csv_list(text)
    try:
        return [int(x) for x in items]
    except ValueError:
        raise argparse.ArgumentTypeError("expected comma-separated integers: %r" % text)


# Options that shape one benchmark's workload, and their defaults. Given for
# another benchmark they are an error: they would silently do nothing.
BENCH_OPTIONS = (
    ("structures", ("intset",), list(adapters.BASE_STRUCTURES)),
    ("updates", ("intset",), [20]),
    ("initial", ("intset",), 1024),
    ("range", ("intset",), None),
    ("buckets", ("intset",), 0),
    ("accounts", ("bank",), 1024),
    ("audits", ("bank",), [20]),
    ("mixes", ("sb7",), list(adapters.SB7_MIXES)),
    ("long", ("sb7",), [1]),
    ("scale", ("sb7",), 1),
)


def parse_args(argv):
    p = _Parser(prog="sweep.py",
                description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench", choices=("intset", "bank", "sb7", "stamp"), default="intset",
                   help="stamp: STAMP 0.9.10, run by stamp.py with options of its own "
                        "(sweep.py --bench stamp --help)")
    p.add_argument("--bin-dir", default=os.path.join(REPO, "build", "bench"),
                   help="directory of intset-<backend>/bank-<backend>/sb7-<backend> "
                        "(default: build/bench)")
    p.add_argument("--backends", type=csv_list, default=["schedstm", "itm", "seq"],
                   help="our back-ends: schedstm,schedstm-inline,schedstm-itm (the itm "
                        "code on schedstm),itm,seq, and tinystm-same "
                        "(our structures on TinySTM; built with -DSCHEDSTM_TINYSTM_DIR) "
                        "(default: schedstm,itm,seq; may be empty with --peer)")
    p.add_argument("--also-bin-dir", action="append", default=[], metavar="NAME=DIR",
                   help="also run the schedstm back-ends from another build's bench "
                        "directory, labelled @NAME (A/B of two library builds, "
                        "interleaved like any variants; repeatable)")
    p.add_argument("--itm-lib", action="append", default=[], metavar="NAME=DIR",
                   help="also run the itm binaries (code compiled with gcc -fgnu-tm) on "
                        "another runtime of that ABI: DIR holds its libitm.so.1 "
                        "(bench/peers/build-tinystm-abi.sh makes one from a TinySTM "
                        "tree); labelled itm@NAME (repeatable)")
    p.add_argument("--peer", action="append", default=[], metavar="NAME=DIR",
                   help="peer back-end, e.g. tinystm=/path/tinystm/test/intset (repeatable)")
    # The benchmark-specific options default to None here, so that one given
    # for another benchmark is seen (BENCH_OPTIONS holds their defaults).
    p.add_argument("--structures", type=csv_list, default=None,
                   help="intset structures: ll,sl,rb,hs, and rb-aw,sl-aw (the search "
                        "as written: bench/README.md) (default: ll,sl,rb,hs)")
    p.add_argument("--updates", type=int_list, default=None,
                   help="intset update percentages (default 20)")
    p.add_argument("--threads", type=int_list, default=[1, 2, 4])
    p.add_argument("--designs", type=csv_list, default=[], help="schedstm designs: etl,ctl")
    p.add_argument("--cms", type=csv_list, default=[],
                   help="schedstm contention managers (policies), e.g. suicide,backoff; "
                        "the binary's --list-cms names the valid ones; \"%s\" runs the "
                        "library's default policy (no -C: what a user who picks none gets)"
                        % DEFAULT_CM)
    p.add_argument("--initial", type=int, default=None, help="intset initial size (1024)")
    p.add_argument("--range", type=int, default=None,
                   help="intset key range (default 2*initial)")
    p.add_argument("--buckets", type=int, default=None,
                   help="hash-set buckets (default: the binary's)")
    p.add_argument("--accounts", type=int, default=None, help="bank accounts (1024)")
    p.add_argument("--audits", type=int_list, default=None,
                   help="bank audit percentages (default 20)")
    p.add_argument("--mixes", type=csv_list, default=None,
                   help="sb7 mixes: r (90%% read-only), rw (60%%), w (10%%) (default: all)")
    p.add_argument("--long", type=int_list, default=None,
                   help="sb7 long traversals: 1 on, 0 off, or 1,0 for both (default 1)")
    p.add_argument("--scale", type=int, default=None, help="sb7 size factor (-z, default 1)")
    p.add_argument("--duration-ms", type=int, default=1000)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--seed", type=int, default=1, help="repetition r uses seed+r")
    p.add_argument("--baseline", default=None,
                   help="variant the ratios are computed against (default: the first)")
    p.add_argument("--itm-method", default=None,
                   help="ITM_DEFAULT_METHOD for libitm runs (default ml_wt)")
    p.add_argument("--outside-clock", type=int, default=0, metavar="MS",
                   help="time every run from outside: rate = commits difference over "
                        "wall-time difference against a run of MS ms (e.g. 20)")
    p.add_argument("--timeout-s", type=float, default=None,
                   help="kill a run after this long (default: duration + 60 s)")
    p.add_argument("--out", default=None, help="output directory (default results/sweep-<time>)")
    p.add_argument("--plot", action="store_true", help="also draw figures with plot.py")
    p.add_argument("--dry-run", action="store_true", help="print the commands only")
    p.add_argument("--report", type=csv_list, default=None, metavar="DIR[,DIR...]",
                   help="run nothing: summarize the results.jsonl of these earlier sweeps "
                        "again, pooled (see above)")
    args = p.parse_args(argv)
    if args.report is not None:
        if not args.report:
            p.error("--report needs at least one directory")
        ran = [o for o in ("--dry-run",) if args.dry_run]
        if ran:
            p.error("--report runs nothing: %s does not apply" % ", ".join(ran))
        return args
    for option, benches, default in BENCH_OPTIONS:
        if getattr(args, option) is None:
            setattr(args, option, default)
        elif args.bench not in benches:
            p.error("--%s does not apply to --bench %s (it is an option of --bench %s)"
                    % (option, args.bench, " and ".join(benches)))
    if not args.backends and not args.peer:
        p.error("nothing to compare: --backends is empty and there is no --peer")
    ours = [b for b in args.backends if b.startswith("schedstm")]
    for option in ("designs", "cms"):
        if getattr(args, option) and not ours:
            p.error("--%s applies to the schedstm back-ends, and --backends has none (%s)"
                    % (option, ",".join(args.backends) or "empty"))
    bad = [d for d in args.designs if d not in adapters.DESIGNS]
    if bad:
        p.error("unknown design(s) %s (valid: %s)" % (",".join(bad), ",".join(adapters.DESIGNS)))
    bad = [c for c in args.cms if not adapters.CM_NAME.match(c)]
    if bad:
        p.error("bad contention manager name(s) %s (names are made of a-z, 0-9, +, _ and -)"
                % ",".join(bad))
    if args.itm_method is None:
        args.itm_method = "ml_wt"
    elif "itm" not in args.backends:
        p.error("--itm-method applies to the itm back-end, and --backends does not have it")
    for option in ("structures", "updates", "threads", "audits", "mixes", "long"):
        if not getattr(args, option):
            p.error("--%s needs at least one value" % option)
    if args.reps < 1 or args.duration_ms < 1 or min(args.threads) < 1:
        p.error("--reps, --duration-ms and --threads must be positive")
    for option, values in (("updates", args.updates), ("audits", args.audits)):
        if not all(0 <= x <= 100 for x in values):
            p.error("--%s takes percentages from 0 to 100 (got %s)"
                    % (option, ",".join(map(str, values))))
    if args.timeout_s is not None and not 0 < args.timeout_s < math.inf:
        p.error("--timeout-s must be positive and finite (got %s)" % args.timeout_s)
    if args.initial < 1 or (args.range is not None and args.range < 1):
        p.error("--initial and --range must be positive")
    if args.accounts < 1 or args.buckets < 0:
        p.error("--accounts must be positive, --buckets positive or 0 (the binary's default)")
    bad = [s for s in args.structures if s not in adapters.STRUCTURES]
    if bad:
        p.error("unknown structure(s) %s (valid: %s)" % (bad, ",".join(adapters.STRUCTURES)))
    bad = [m for m in args.mixes if m not in adapters.SB7_MIXES]
    if bad:
        p.error("unknown sb7 mix(es) %s (valid: %s)" % (bad, ",".join(adapters.SB7_MIXES)))
    if args.outside_clock < 0 or (args.outside_clock and
                                  args.outside_clock * 2 > args.duration_ms):
        p.error("--outside-clock takes a duration in ms of at most half --duration-ms "
                "(got %d against %d)" % (args.outside_clock, args.duration_ms))
    if any(x not in (0, 1) for x in args.long) or args.scale < 1:
        p.error("--long takes 0 and/or 1, --scale a positive integer")
    # A value given twice would run its points twice per repetition, and
    # the pairing of runs by repetition would then drop one of them.
    for option in ("structures", "updates", "threads", "audits", "mixes", "long", "designs",
                   "cms"):
        setattr(args, option, list(dict.fromkeys(getattr(args, option))))
    return args


# --cms name of the library's default policy: the variant passes no -C, so
# that it runs whatever sstm_config_default() selects (its record's cm field
# is the name the program reports).
DEFAULT_CM = "default"


def build_variants(args):
    variants = adapters.make_native_variants(
        args.backends, args.bin_dir, args.designs, args.cms, args.itm_method)
    for v in variants:
        if isinstance(v, adapters.NativeVariant) and v.cm == DEFAULT_CM:
            v.cm = None  # labelled "-default", run without -C
    for spec in args.also_bin_dir:
        name, sep, directory = spec.partition("=")
        if not sep or not name or not directory:
            raise ValueError("--also-bin-dir %r: expected NAME=DIR" % spec)
        if not os.path.isdir(directory):
            raise ValueError("--also-bin-dir %s: %s is not a directory" % (name, directory))
        more = adapters.make_native_variants(
            [b for b in args.backends if b.startswith("schedstm")], directory, args.designs,
            args.cms, args.itm_method)
        for v in more:
            v.label += "@" + name
            if v.cm == DEFAULT_CM:
                v.cm = None
        variants += more
    for spec in args.itm_lib:
        name, sep, directory = spec.partition("=")
        if not sep or not name or not directory:
            raise ValueError("--itm-lib %r: expected NAME=DIR" % spec)
        if not os.path.isfile(os.path.join(directory, "libitm.so.1")):
            raise ValueError("--itm-lib %s: %s has no libitm.so.1" % (name, directory))
        variants.append(adapters.NativeVariant("itm@" + name, "itm", args.bin_dir,
                                               lib_dir=os.path.abspath(directory)))
    variants += [adapters.make_peer(spec) for spec in args.peer]
    labels = [v.label for v in variants]
    if len(set(labels)) != len(labels):
        raise ValueError("duplicate variant names: %s" % labels)
    return variants


def unknown_cms(args, variants):
    """Messages for the --cms names that a schedstm binary of this sweep
    does not accept (asked once per binary with --list-cms). A binary that
    cannot be asked is left to its runs (which then fail and say why)."""
    if not args.cms:
        return []
    problems, asked = [], set()
    for v in variants:
        if not isinstance(v, adapters.NativeVariant) or not v.backend.startswith("schedstm"):
            continue
        binary = v.binary(args.bench)
        if binary in asked or not os.access(binary, os.X_OK):
            continue
        asked.add(binary)
        known = adapters.list_cms(binary)
        if known is None:
            sys.stderr.write("sweep: warning: %s --list-cms did not answer; --cms is checked "
                             "by the runs\n" % binary)
            continue
        bad = [c for c in args.cms
               if c != DEFAULT_CM and not adapters.cm_accepted(c, known)]
        if bad:
            problems.append("unknown contention manager(s) %s for %s (valid: %s, ext, P+ext)"
                            % (",".join(bad), os.path.basename(binary), ", ".join(known)))
    return problems


def build_points(args):
    """Workload x threads points, without the repetition and variant."""
    points = []
    if args.bench == "sb7":
        for long_ in args.long:
            for mix in args.mixes:
                for t in args.threads:
                    points.append({"bench": "sb7", "threads": t,
                                   "duration_ms": args.duration_ms,
                                   "structure": "sb7" if long_ else "sb7-nolong",
                                   "update": mix, "mix": mix, "long": long_,
                                   "scale": args.scale})
        return points
    if args.bench == "bank":
        workloads = [{"structure": "bank", "audit": a, "update": 100 - a}
                     for a in args.audits]
    else:
        workloads = [{"structure": s, "update": u}
                     for s in args.structures for u in args.updates]
    for w in workloads:
        for t in args.threads:
            point = {"bench": args.bench, "threads": t, "duration_ms": args.duration_ms,
                     "initial": args.initial, "range": args.range or 2 * args.initial,
                     "buckets": args.buckets, "accounts": args.accounts, "audit": None}
            point.update(w)
            points.append(point)
    return points


def schedule(points, variants, reps):
    """(rep, point, variant) in run order, rep counted from 1:
    repetition-major, the variants
    of each point adjacent, their order rotated by the repetition. The
    rotation is over the variants that run the point (not all of them):
    otherwise a variant that skips it (seq beyond 1 thread, a peer without
    the benchmark) makes some orders repeat and others never come."""
    runs = []
    for rep in range(1, reps + 1):
        for point in points:
            order = [v for v in variants if v.supports(point)]
            if order:
                shift = (rep - 1) % len(order)
                order = order[shift:] + order[:shift]
            runs += [(rep, point, v) for v in order]
    return runs


def execute(argv, env_extra, timeout):
    """Run one process; returns (CompletedProcess, wall seconds from start
    to exit as the harness sees them). Its output is decoded as UTF-8, an
    invalid byte becoming U+FFFD. The process starts a session (and process
    group) of its own: on a timeout or an interrupt the whole group is
    killed, so a wrapper script's children do not outlive the run."""
    started = time.monotonic()
    with subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, encoding="utf-8", errors="replace",
                          env=dict(os.environ, **env_extra), start_new_session=True) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except BaseException:  # TimeoutExpired, KeyboardInterrupt
            kill_group(proc)
            raise
    wall = time.monotonic() - started
    return subprocess.CompletedProcess(argv, proc.returncode, out, err), wall


def kill_group(proc):
    """SIGKILL the process group led by proc (not reaped yet, so the group
    id is still ours), then reap proc."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()


def outside_rates(short, short_wall, long_, long_wall, short_cpu=None, long_cpu=None):
    """Rates of the long run timed from outside: (commits, aborts) of the
    long run minus those of the short one, over the difference of their
    wall times; with the CPU times of both runs, also the commits per
    CPU-second of the difference (cpu_s, commits_per_cpu_s). Raises
    RunFailed when the difference cannot be a rate."""
    dt = long_wall - short_wall
    dc = (long_.get("commits") or 0) - (short.get("commits") or 0)
    if dt <= 0 or dc <= 0:
        raise adapters.RunFailed(
            "outside clock: the long run did not outlast the short one "
            "(%+.3f s, %+d commits); lengthen --duration-ms" % (dt, dc))
    rates = {"commits_per_s": dc / dt, "elapsed_s": dt}
    if long_.get("aborts") is not None and short.get("aborts") is not None:
        rates["aborts_per_s"] = max(0, long_["aborts"] - short["aborts"]) / dt
    if short_cpu is not None and long_cpu is not None and long_cpu > short_cpu:
        rates["cpu_s"] = long_cpu - short_cpu
        rates["commits_per_cpu_s"] = dc / (long_cpu - short_cpu)
    return rates


def children_switches():
    """Voluntary and involuntary context switches of the harness's ended
    children so far (a run's are the differences around it, as for
    children_cpu_s): involuntary ones count preemptions (of lock holders
    among them), voluntary ones sleeps (futex waits)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_nvcsw, ru.ru_nivcsw


def children_cpu_s():
    """User + system CPU time of the harness's ended children so far. A
    run's CPU time is the difference around it (runs are sequential and
    reaped before the next starts): on a shared host the commits per
    CPU-second of a run depend far less on the other programs' load than
    its commits per second, which also measure the share of the CPUs the
    run was given."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


NUMERIC_FIELDS = ("commits_per_s", "aborts_per_s", "abort_ratio", "commits", "aborts",
                  "elapsed_s")


def check_numbers(parsed):
    """Raises RunFailed when a field the summary computes with is not a
    number (output that parsed, but not into a result), or when there is
    no throughput at all (a JSON object without commits_per_s)."""
    if parsed.get("commits_per_s") is None:
        raise adapters.RunFailed("unusable result: no commits_per_s in %s"
                                 % _shorten(json.dumps(parsed, sort_keys=True, default=str)))
    for key in NUMERIC_FIELDS:
        value = parsed.get(key)
        if value is not None and (isinstance(value, bool)
                                  or not isinstance(value, (int, float))):
            raise adapters.RunFailed("unusable result: %s is %r, not a number" % (key, value))


def _shorten(text, limit=120):
    return text if len(text) <= limit else text[:limit - 3] + "..."


def base_record(rep, point, variant):
    """The harness's fields of a run's record (the workload, the variant).
    sb7's scale is part of its workload (summary.workload_key): a failed
    run, which has no output to take it from, must carry it too."""
    record = {k: point.get(k) for k in adapters.RESULT_FIELDS + ("scale",) if k in point}
    record.update(variant=variant.label, backend=variant.backend, design=variant.design,
                  cm=variant.cm, rep=rep)
    return record


def run_one(rep, point, variant, args):
    """Run one benchmark process (two with --outside-clock: a short one
    first); returns its result record."""
    point = dict(point, seed=args.seed + rep - 1)
    argv, env_extra = variant.command(point)
    record = base_record(rep, point, variant)
    record.update(cmd=" ".join(argv), env=env_extra)
    timeout = args.timeout_s or args.duration_ms / 1000.0 + 60
    try:
        if args.outside_clock:
            short_argv, _ = variant.command(dict(point, duration_ms=args.outside_clock))
            cpu0 = children_cpu_s()
            proc, short_wall = execute(short_argv, env_extra, timeout)
            short_cpu = children_cpu_s() - cpu0
            short = variant.parse(proc.stdout, proc.stderr, proc.returncode)
            check_numbers(short)
        cpu0 = children_cpu_s()
        sw0 = children_switches()
        proc, wall = execute(argv, env_extra, timeout)
        cpu = children_cpu_s() - cpu0
        sw1 = children_switches()
        parsed = variant.parse(proc.stdout, proc.stderr, proc.returncode)
        check_numbers(parsed)
        if args.outside_clock:
            inside = {"commits_per_s_inside": parsed.get("commits_per_s"),
                      "aborts_per_s_inside": parsed.get("aborts_per_s"),
                      "elapsed_s_inside": parsed.get("elapsed_s"),
                      "clock": "outside", "outside_short_ms": args.outside_clock}
            parsed.update(outside_rates(short, short_wall, parsed, wall, short_cpu, cpu))
            parsed.update(inside)
        elif cpu > 0 and parsed.get("commits"):
            parsed.update(cpu_s=cpu, commits_per_cpu_s=parsed["commits"] / cpu)
        # the long run's own (with --outside-clock, not a difference)
        parsed.update(nvcsw=sw1[0] - sw0[0], nivcsw=sw1[1] - sw0[1])
    except subprocess.TimeoutExpired:
        return dict(record, status="fail",
                    error="timed out after %g s (its process group was killed)" % timeout)
    except (adapters.RunFailed, OSError) as e:
        return dict(record, status="fail", error=str(e))
    raw = dict(parsed)
    for key in ("backend", "threads", "structure", "update", "bench"):
        raw.pop(key, None)  # keep the harness's names for these
    if raw.get("design") in (None, "-"):
        raw.pop("design", None)
    if raw.get("cm") in (None, "-"):
        raw.pop("cm", None)
    record.update(raw)
    record["status"] = "ok"
    return record


def run_guarded(rep, point, variant, args):
    """run_one, with any error of the harness itself (an output it did not
    expect) turned into a failed run, so that the other runs go on."""
    try:
        return run_one(rep, point, variant, args)
    except Exception as e:  # noqa: BLE001 -- reported in the record
        return dict(base_record(rep, dict(point, seed=args.seed + rep - 1), variant),
                    status="fail", error="harness error: %s: %s" % (type(e).__name__, e))


def progress(i, total, started, rec):
    elapsed = time.monotonic() - started
    eta = elapsed / i * (total - i)
    what = "%s %s%%" % (rec.get("structure"), rec.get("update"))
    if rec.get("bench") == "sb7":
        what = "%s %s" % (rec.get("structure"), rec.get("update"))
    if rec["status"] == "ok":
        result = "%s commits/s" % summary.fmt_rate(rec.get("commits_per_s"))
        if rec.get("abort_ratio") is not None:
            result += ", %s aborted" % summary.fmt_pct(rec["abort_ratio"])
    else:
        result = "FAILED: " + rec.get("error", "?")
    sys.stderr.write("[%3d/%d] rep %d  %-10s n=%-3d %-22s %s  (%s elapsed, eta %s)\n" % (
        i, total, rec["rep"], what, rec["threads"], rec["variant"], result,
        fmt_secs(elapsed), fmt_secs(eta)))
    sys.stderr.flush()


def fmt_secs(s):
    s = int(s + 0.5)
    return "%d:%02d" % (s // 60, s % 60)


def write_outputs(out_dir, records, args):
    """results.csv and summary.md (results.jsonl is written run by run);
    returns the summary's text."""
    with open(os.path.join(out_dir, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=adapters.RESULT_FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in records:
            w.writerow(r)
    text = summary.markdown(records, args.baseline, title="%s sweep (%s)" % (
        args.bench, datetime.datetime.now().strftime("%Y-%m-%d %H:%M")))
    with open(os.path.join(out_dir, "summary.md"), "w") as f:
        f.write(text)
    return text


def maybe_plot(out_dir):
    """Draw the figure; a missing matplotlib, no successful run or an
    unwritable figure is reported, and the results stay as they are."""
    import plot  # imports matplotlib only when it draws
    try:
        paths = plot.plot_file(os.path.join(out_dir, "results.jsonl"), out_dir)
    except (ImportError, ValueError, OSError) as e:
        sys.stderr.write("sweep: warning: no plot: %s\n" % e)
        return
    for path in paths:
        sys.stderr.write("sweep: wrote %s\n" % path)


def new_default_out_dir():
    """results/sweep-<time>, created here; two sweeps started within the
    same second get two directories (-2, -3... on the second one) instead
    of writing into one."""
    base = os.path.join(REPO, "results",
                        "sweep-" + datetime.datetime.now().strftime("%Y%m%d-%H%M%S"))
    os.makedirs(os.path.dirname(base), exist_ok=True)
    for n in range(1, 1000):
        path = base if n == 1 else "%s-%d" % (base, n)
        try:
            os.mkdir(path)
            return path
        except FileExistsError:
            continue
    raise FileExistsError("too many sweeps named %s-*" % base)


def read_results(dirs):
    """The records of each DIR/results.jsonl, in order; a missing file or a
    line that is not a JSON object of a run raises ValueError naming it."""
    records = []
    for d in dirs:
        path = os.path.join(d, "results.jsonl")
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.readlines()
        except OSError as e:
            raise ValueError("--report %s: cannot read %s: %s" % (d, path, e.strerror or e))
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError as e:
                raise ValueError("%s:%d: not JSON (%s)" % (path, n, e))
            if isinstance(rec, dict) and "app" in rec and "bench" not in rec:
                raise ValueError("%s:%d: a STAMP run's record: bench/harness/stamp.py --report "
                                 "reads those" % (path, n))
            missing = [k for k in ("bench", "variant", "threads", "rep", "status") if not
                       isinstance(rec, dict) or k not in rec]
            if missing:
                raise ValueError("%s:%d: not a run's record (no %s)" % (path, n, ", ".join(missing)))
            records.append(rec)
    if not records:
        raise ValueError("--report %s: no records" % ",".join(dirs))
    return records


def report(args):
    """--report: the summary of earlier sweeps' records, pooled."""
    try:
        records = read_results(args.report)
    except ValueError as e:
        sys.stderr.write(ERROR + "%s\n" % e)
        return 2
    variants = summary.ordered_unique(r["variant"] for r in records)
    if args.baseline is None:
        # the sweeps' own --baseline, when they all had the same one
        said = summary.ordered_unique(r.get("baseline") for r in records)
        args.baseline = said[0] if len(said) == 1 and said[0] in variants else variants[0]
    elif args.baseline not in variants:
        sys.stderr.write(ERROR + "--baseline %s is not one of the variants (%s)\n"
                         % (args.baseline, ", ".join(variants)))
        return 2
    args.bench = records[0].get("bench", args.bench)
    if args.out is None:
        print(summary.markdown(records, args.baseline, title="%s sweep, reported again (%s)"
                               % (args.bench, ", ".join(args.report))), end="")
        return 0
    try:
        os.makedirs(args.out, exist_ok=True)
        if any(os.path.samefile(args.out, d) for d in args.report if os.path.isdir(d)):
            sys.stderr.write(ERROR + "--out %s is one of the --report directories; its "
                             "results would be replaced\n" % args.out)
            return 2
        with open(os.path.join(args.out, "results.jsonl"), "w") as f:
            for r in records:
                f.write(json.dumps(r, sort_keys=True) + "\n")
        print(write_outputs(args.out, records, args), end="")
    except OSError as e:
        sys.stderr.write(ERROR + "cannot write the report in --out %s: %s\n"
                         % (args.out, e.strerror or e))
        return 2
    if args.plot:
        maybe_plot(args.out)
    return 0


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if stamp.selected(argv):
        return stamp.main(argv)
    args = parse_args(argv)
    if args.report is not None:
        return report(args)
    try:
        variants = build_variants(args)
    except ValueError as e:
        sys.stderr.write(ERROR + "%s\n" % e)
        return 2
    points = build_points(args)
    unusable = [(v.label, problem) for v in variants for problem in v.unusable_programs(points)]
    for label, problem in unusable:
        sys.stderr.write("%speer %s: %s\n" % (ERROR, label, problem))
    if unusable:
        return 2
    problems = unknown_cms(args, variants)
    for problem in problems:
        sys.stderr.write(ERROR + problem + "\n")
    if problems:
        return 2
    runs = schedule(points, variants, args.reps)
    for v in variants:
        if not any(v.supports(p) for p in points):
            sys.stderr.write("sweep: warning: %s has nothing to run (binary missing, or it "
                             "does not run this benchmark)\n" % v.label)
            if v.label == "tinystm-same":
                sys.stderr.write("sweep: tinystm-same is built only when CMake is given "
                                 "-DSCHEDSTM_TINYSTM_DIR=<a TinySTM tree> (bench/README.md)\n")
    if not runs:
        sys.stderr.write(ERROR + "nothing to run (check --bin-dir / --peer)\n")
        return 2
    if args.baseline is None:
        args.baseline = runs[0][2].label
    elif args.baseline not in [v.label for v in variants]:
        sys.stderr.write(ERROR + "--baseline %s is not one of the variants (%s)\n"
                         % (args.baseline, ", ".join(v.label for v in variants)))
        return 2
    if args.dry_run:
        for rep, point, v in runs:
            argv_, env = v.command(dict(point, seed=args.seed + rep - 1))
            print(" ".join(["%s=%s" % kv for kv in env.items()] + argv_))
        return 0
    out_dir = args.out
    try:
        if out_dir is None:
            out_dir = new_default_out_dir()
        else:
            os.makedirs(out_dir, exist_ok=True)
            if os.path.exists(os.path.join(out_dir, "results.jsonl")):
                sys.stderr.write("sweep: warning: --out %s holds the results of an earlier "
                                 "sweep; they are replaced\n" % out_dir)
        jsonl = open(os.path.join(out_dir, "results.jsonl"), "w")
    except OSError as e:
        sys.stderr.write(ERROR + "cannot write the results in --out %s: %s\n"
                         % (out_dir or os.path.join(REPO, "results"), e.strerror or e))
        return 2
    sys.stderr.write("sweep: %d runs of ~%.1f s, output in %s\n" % (
        len(runs), args.duration_ms / 1000.0, out_dir))
    records, started = [], time.monotonic()
    host = host_provenance()
    # The runs are in sessions of their own, out of reach of a terminal's
    # signals: a hang-up or SIGTERM stops the sweep like Ctrl-C, which
    # kills the current run's process group (unless ignored, as by nohup).
    handlers = {s: signal.signal(s, _interrupt) for s in (signal.SIGTERM, signal.SIGHUP)
                if signal.getsignal(s) is not signal.SIG_IGN}
    try:
        with jsonl:
            for i, (rep, point, variant) in enumerate(runs, 1):
                date = utc_now()
                record = run_guarded(rep, point, variant, args)
                record.update(host, date=date, baseline=args.baseline,
                              compiler=compiler_of(variant.program(point)))
                jsonl.write(json.dumps(record, sort_keys=True) + "\n")
                jsonl.flush()
                records.append(record)
                progress(i, len(runs), started, record)
    except KeyboardInterrupt:
        write_outputs(out_dir, records, args)
        sys.stderr.write("\nsweep: interrupted after %d of %d runs; their results and "
                         "summary are in %s\n" % (len(records), len(runs), out_dir))
        return 130
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    print(write_outputs(out_dir, records, args), end="")
    if args.plot:
        maybe_plot(out_dir)
    failed = sum(1 for r in records if r["status"] != "ok")
    if failed:
        sys.stderr.write("sweep: %d of %d runs FAILED (see summary.md)\n" % (failed, len(records)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
