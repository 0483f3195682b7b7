#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Sweep and plot the transactional stdio benchmarks (bench/stdio.c).

[Smiljkovic13]'s Fig. 4 file operations, on one shared stream and on a
stream per thread, at 1, 2, 4 and 8 threads, for each mode of the binary
(tx: our stdio in transactions, irr: the same in irrevocable transactions,
glibc: glibc's stdio under one lock, ntx: our calls outside transactions).
The modes of one (operation, sharing, threads) point run back to back, in
an order rotated on each repetition, so that the ratios compare runs made
under the same load (the machines are shared).

A mode may name a contention-management policy after '@' (tx@ser-block):
that run gets SCHEDSTM_CM=<policy>; a mode without one runs under the
library's default policy (SCHEDSTM_CM is removed from its environment).
A mode may end in ':BYTES' (tx:16384, glibc:16384): that run's streams get
BYTES-byte buffers (the binary's -b); without it, each library's default.

usage: stdio_sweep.py --bin build/bench/stdio-schedstm --out DIR
                      [--reps 3] [--ms 250] [--threads 1,2,4,8]
                      [--ops fgetc,...] [--modes tx,tx@ser-block,irr,glibc] [--k 1]
                      [--sharing private,shared]
Writes DIR/stdio.jsonl (every run, with the load average after it),
DIR/stdio-summary.md (medians and ratios, also of calls per CPU second,
which with more threads than CPUs tell a call's cost apart from the CPU
share a run got; the range of the load averages),
DIR/stdio.png (throughput per operation; needs matplotlib). --from-jsonl
takes one or more files (comma-separated), e.g. sweeps of one operation
each, run under a lock one at a time.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

OPS = ["fgetc", "fgets", "fread", "fputc", "fputs", "fwrite", "mix"]
MODES = ["tx", "tx@ser-block", "irr", "glibc"]


def loadavg():
    """The 1-minute load average, or None where /proc/loadavg is missing."""
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def run_one(binary, op, mode, sharing, threads, ms, k):
    name, _, buf = mode.partition(":")
    base, _, policy = name.partition("@")
    env = dict(os.environ)
    env.pop("SCHEDSTM_CM", None)
    if policy:
        env["SCHEDSTM_CM"] = policy
    cmd = [binary, "-o", op, "-m", base, "-s", sharing, "-n", str(threads), "-d", str(ms),
           "-k", str(k)]
    if buf:
        cmd += ["-b", buf]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    r = json.loads(out.strip().splitlines()[-1])
    r["mode"] = mode  # the policy's runs apart from the default's
    r["loadavg"] = loadavg()  # after the run: it was part of the load
    return r


def sweep(args):
    runs = []
    modes = args.modes.split(",")
    for op in args.ops.split(","):
        for sharing in getattr(args, "sharing", "private,shared").split(","):
            for n in [int(x) for x in args.threads.split(",")]:
                for rep in range(args.reps):
                    order = modes[rep % len(modes):] + modes[:rep % len(modes)]
                    for mode in order:
                        r = run_one(args.bin, op, mode, sharing, n, args.ms, args.k)
                        r["rep"] = rep
                        runs.append(r)
                        print(json.dumps(r), flush=True)
    return runs


def medians(runs):
    by = {}
    for r in runs:
        by.setdefault((r["op"], r["sharing"], r["threads"], r["mode"]), []).append(r)
    med = {}
    for key, rs in by.items():
        aborts = {}
        for r in rs:
            for reason, c in r["aborts"].items():
                aborts[reason] = aborts.get(reason, 0) + c
        med[key] = {
            "ops_per_s": statistics.median(r["ops_per_s"] for r in rs),
            "irrevocable_frac": statistics.median(r["irrevocable_frac"] for r in rs),
            "aborts_per_commit": (sum(sum(r["aborts"].values()) for r in rs)
                                  / max(1, sum(r["commits"] for r in rs))),
            "aborts": aborts,
        }
    return med


def per_cpu_s(r):
    """Calls per CPU second of the run (user and system), None without it."""
    cpu = r.get("cpu_s")
    return r["ops"] / cpu if cpu else None


def paired_ratio(runs, op, sharing, n, a, b, value=lambda r: r["ops_per_s"]):
    """Median over repetitions of value(a)/value(b), each pair from one
    repetition."""
    ra = {r["rep"]: value(r) for r in runs
          if (r["op"], r["sharing"], r["threads"], r["mode"]) == (op, sharing, n, a)}
    rb = {r["rep"]: value(r) for r in runs
          if (r["op"], r["sharing"], r["threads"], r["mode"]) == (op, sharing, n, b)}
    ratios = [ra[k] / rb[k] for k in ra if k in rb and ra[k] is not None and rb[k]]
    return statistics.median(ratios) if ratios else None


def fmt_ratio(x):
    return "-" if x is None else f"{x:.2f}"


def summary(runs, args):
    med = medians(runs)
    threads = sorted({r["threads"] for r in runs})
    modes = [m for m in args.modes.split(",")]
    txs = [m for m in modes if m.split(":")[0].split("@")[0] == "tx"]
    lines = ["| op | sharing | threads | " + " | ".join(f"{m} Mops/s" for m in modes)
             + "".join(f" | {m}/irr" for m in txs)
             + " | tx/irr per CPU s | tx/glibc | tx irrevocable | tx aborts/commit"
             + " | tx aborts by reason |",
             "|" + "---|" * (8 + len(modes) + len(txs))]
    for op in args.ops.split(","):
        for sharing in getattr(args, "sharing", "private,shared").split(","):
            for n in threads:
                cells = []
                for m in modes:
                    v = med.get((op, sharing, n, m))
                    cells.append("-" if v is None else f"{v['ops_per_s'] / 1e6:.3f}")
                t = med.get((op, sharing, n, "tx"), {})
                reasons = ", ".join(f"{k} {v}" for k, v in sorted(t.get("aborts", {}).items()))
                lines.append(
                    f"| {op} | {sharing} | {n} | " + " | ".join(cells) + " | "
                    + "".join(fmt_ratio(paired_ratio(runs, op, sharing, n, m, "irr")) + " | "
                              for m in txs)
                    + fmt_ratio(paired_ratio(runs, op, sharing, n, "tx", "irr", per_cpu_s)) + " | "
                    + fmt_ratio(paired_ratio(runs, op, sharing, n, "tx", "glibc")) + " | "
                    + (f"{t['irrevocable_frac']:.3f}" if t else "-") + " | "
                    + (f"{t['aborts_per_commit']:.3f}" if t else "-") + " | "
                    + (reasons or "none") + " |")
    loads = [r["loadavg"] for r in runs if r.get("loadavg") is not None]
    if loads:
        lines.append("")
        lines.append(f"Load average (1 min) during the runs: {min(loads):.1f}-{max(loads):.1f} "
                     f"(median {statistics.median(loads):.1f}).")
    return "\n".join(lines) + "\n"


def plot(runs, args, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("stdio_sweep: matplotlib missing, no plot", file=sys.stderr)
        return
    med = medians(runs)
    ops = args.ops.split(",")
    threads = sorted({r["threads"] for r in runs})
    fig, axes = plt.subplots(2, len(ops), figsize=(3.0 * len(ops), 6.0), squeeze=False)
    for row, sharing in enumerate(("private", "shared")):
        for col, op in enumerate(ops):
            ax = axes[row][col]
            for m in args.modes.split(","):
                ys = [med.get((op, sharing, n, m), {}).get("ops_per_s", float("nan")) / 1e6
                      for n in threads]
                ax.plot(threads, ys, marker="o", label=m)
            ax.set_xscale("log", base=2)
            ax.set_xticks(threads)
            ax.set_xticklabels([str(n) for n in threads])
            ax.set_title(f"{op}, {'stream per thread' if sharing == 'private' else 'one stream'}",
                         fontsize=9)
            ax.set_ylim(bottom=0)
            if col == 0:
                ax.set_ylabel("Mcalls/s")
            if row == 1:
                ax.set_xlabel("threads")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--ms", type=int, default=250)
    ap.add_argument("--k", type=int, default=1)
    ap.add_argument("--threads", default="1,2,4,8")
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--sharing", default="private,shared",
                    help="which of private (a stream per thread), shared to sweep")
    ap.add_argument("--from-jsonl", help="summarise and plot an earlier run instead")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.from_jsonl:
        runs = []
        for path in args.from_jsonl.split(","):
            with open(path) as f:
                runs += [json.loads(line) for line in f if line.strip()]
    else:
        runs = sweep(args)
        with open(os.path.join(args.out, "stdio.jsonl"), "w") as f:
            for r in runs:
                f.write(json.dumps(r) + "\n")
    with open(os.path.join(args.out, "stdio-summary.md"), "w") as f:
        f.write(summary(runs, args))
    plot(runs, args, os.path.join(args.out, "stdio.png"))
    print(summary(runs, args))


if __name__ == "__main__":
    main()
