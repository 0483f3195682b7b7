#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Sweep and plot the allocation benchmark: [Smiljkovic13]'s red-black tree
figure on our allocators.

A red-black tree (bench/ds/rb.c through the intset driver) where every
update allocates a node (an insertion) or frees one (a removal), at 25, 50
and 75 % updates, with three allocators, each its own build of the driver
(bench/tm/tm.h, TM_ALLOC_*):
  sstm         the library's transactional allocator (intset-schedstm)
  glibc-lock   glibc malloc/free under one lock, an abort action freeing
               what an attempt allocated, the frees retired at commit and
               freed after sstm_quiesce() (intset-schedstm-glibc-lock)
  irrevocable  the transaction becomes irrevocable at its first allocation
               or free (intset-schedstm-irrevocable)
The allocators of one (update, threads) point run back to back, in an order
rotated on each repetition, and the ratios are medians of per-repetition
ratios, so that they compare runs made under the same load.

usage: alloc_sweep.py --bin-dir build/bench --out DIR [--reps 3] [--ms 500]
                      [--threads 1,2,4,8,32] [--updates 25,50,75]
                      [--initial 4096] [--range 131072]
                      [--allocators sstm,glibc-lock,irrevocable] [--cm NAME]
                      [--from-jsonl FILE]
Writes DIR/results.jsonl (every run, in plot.py's form: "variant" is the
allocator), DIR/summary.md (medians, paired ratios, irrevocable share,
aborts) and plot.py's figures (need matplotlib): DIR/alloc.png (commits/s)
and DIR/alloc-cpu.png (commits per CPU second).
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

ALLOCATORS = {
    "sstm": "intset-schedstm",
    "glibc-lock": "intset-schedstm-glibc-lock",
    "irrevocable": "intset-schedstm-irrevocable",
}


def parse_list(text, what, convert=str):
    items = [x.strip() for x in text.split(",") if x.strip()]
    if not items:
        raise SystemExit("alloc_sweep: --%s is empty" % what)
    try:
        return [convert(x) for x in items]
    except ValueError:
        raise SystemExit("alloc_sweep: --%s: %r is not a list of numbers" % (what, text))


def rotated(items, rep):
    k = rep % len(items)
    return items[k:] + items[:k]


def run_one(binary, alloc, update, threads, args):
    cmd = [binary, "-S", "rb", "-i", str(args.initial), "-r", str(args.range),
           "-u", str(update), "-n", str(threads), "-d", str(args.ms)]
    if getattr(args, "cm", None):
        cmd += ["-C", args.cm]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit("alloc_sweep: %s failed (exit status %d): %s"
                         % (" ".join(cmd), proc.returncode, proc.stderr.strip()))
    rec = json.loads(proc.stdout.strip().splitlines()[-1])
    # CPU time of the run (its threads together, user and system): on a
    # machine shared with other work the wall-clock rate mostly measures the
    # share of the CPUs the run was given; commits per CPU second measures
    # what a commit costs, waiting and aborted attempts included.
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rec.update({"variant": alloc, "allocator": alloc, "status": "ok",
                "cpus": os.cpu_count(), "command": " ".join(cmd), "cpu_s": cpu,
                "commits_per_cpu_s": rec["commits"] / cpu if cpu > 0 else None})
    return rec


def sweep(args):
    allocs = parse_list(args.allocators, "allocators")
    for a in allocs:
        if a not in ALLOCATORS:
            raise SystemExit("alloc_sweep: unknown allocator %r (valid: %s)"
                             % (a, ", ".join(ALLOCATORS)))
    binaries = {a: os.path.join(args.bin_dir, ALLOCATORS[a]) for a in allocs}
    for a, b in binaries.items():
        if not os.access(b, os.X_OK):
            raise SystemExit("alloc_sweep: %s (allocator %s) is not built" % (b, a))
    runs = []
    for update in parse_list(args.updates, "updates", int):
        for n in parse_list(args.threads, "threads", int):
            for rep in range(args.reps):
                for a in rotated(allocs, rep):
                    r = run_one(binaries[a], a, update, n, args)
                    r["rep"] = rep
                    runs.append(r)
                    print(json.dumps(r), flush=True)
    return runs


def select(runs, update, threads, alloc):
    return [r for r in runs
            if (r["update"], r["threads"], r["allocator"]) == (update, threads, alloc)]


def paired_ratio(runs, update, threads, a, b, field="commits_per_s"):
    """Median over repetitions of a's field (commits/s) over b's, each pair
    from one repetition; None without a pair."""
    ra = {r["rep"]: r.get(field) for r in select(runs, update, threads, a)}
    rb = {r["rep"]: r.get(field) for r in select(runs, update, threads, b)}
    ratios = [ra[k] / rb[k] for k in ra if k in rb and ra[k] is not None and rb[k]]
    return statistics.median(ratios) if ratios else None


def point(runs, update, threads, alloc):
    """Median rate, the share of commits that were irrevocable, aborted
    attempts per commit and the aborts by reason, over the repetitions."""
    rs = select(runs, update, threads, alloc)
    if not rs:
        return None
    commits = sum(r["commits"] for r in rs)
    reasons = {}
    for r in rs:
        for k, v in (r.get("aborts_by_reason") or {}).items():
            if v:
                reasons[k] = reasons.get(k, 0) + v
    return {
        "rate": statistics.median(r["commits_per_s"] for r in rs),
        "cpu_rate": _median([r.get("commits_per_cpu_s") for r in rs]),
        "irrevocable": sum(r.get("commits_irrevocable", 0) for r in rs) / max(1, commits),
        "aborts_per_commit": sum(r.get("aborts") or 0 for r in rs) / max(1, commits),
        "reasons": reasons,
        "effective_update": statistics.median(r["effective_update"] for r in rs),
    }


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def summary(runs, allocs):
    """Two tables: wall-clock rates with their paired ratios, the
    irrevocable share and the aborts; then the rates per CPU second."""
    updates = sorted({r["update"] for r in runs})
    threads = sorted({r["threads"] for r in runs})
    lines = ["| updates | threads | " + " | ".join("%s Mtx/s" % a for a in allocs)
             + " | sstm/glibc-lock | sstm/irrevocable | irrevocable share (irrevocable)"
             + " | " + " | ".join("%s aborts/commit" % a for a in allocs)
             + " | sstm aborts by reason |",
             "|" + "---|" * (6 + 2 * len(allocs))]
    cpu_lines = ["| updates | threads | " + " | ".join("%s Mtx/CPU-s" % a for a in allocs)
                 + " | sstm/glibc-lock | sstm/irrevocable |",
                 "|" + "---|" * (4 + len(allocs))]
    for u in updates:
        for n in threads:
            pts = {a: point(runs, u, n, a) for a in allocs}
            s = pts.get("sstm")
            irr = pts.get("irrevocable")
            reasons = ", ".join("%s %d" % kv for kv in sorted(s["reasons"].items())) if s else ""
            lines.append(
                "| %d %% | %d | " % (u, n)
                + " | ".join(fmt(p and p["rate"] / 1e6, ".3f") for p in pts.values()) + " | "
                + fmt(paired_ratio(runs, u, n, "sstm", "glibc-lock"), ".2f") + " | "
                + fmt(paired_ratio(runs, u, n, "sstm", "irrevocable"), ".2f") + " | "
                + fmt(irr and irr["irrevocable"], ".3f") + " | "
                + " | ".join(fmt(p and p["aborts_per_commit"], ".4f") for p in pts.values())
                + " | " + (reasons or ("none" if s else "-")) + " |")
            cpu_lines.append(
                "| %d %% | %d | " % (u, n)
                + " | ".join(fmt(p and p["cpu_rate"] and p["cpu_rate"] / 1e6, ".3f")
                             for p in pts.values()) + " | "
                + fmt(paired_ratio(runs, u, n, "sstm", "glibc-lock", "commits_per_cpu_s"), ".2f")
                + " | "
                + fmt(paired_ratio(runs, u, n, "sstm", "irrevocable", "commits_per_cpu_s"), ".2f")
                + " |")
    return ("\n".join(lines) + "\n\nPer CPU second (the run's user and system time):\n\n"
            + "\n".join(cpu_lines) + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", default="build/bench")
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--ms", type=int, default=500)
    ap.add_argument("--threads", default="1,2,4,8,32")
    ap.add_argument("--updates", default="25,50,75")
    ap.add_argument("--initial", type=int, default=4096)
    ap.add_argument("--range", type=int, default=131072)
    ap.add_argument("--allocators", default=",".join(ALLOCATORS))
    ap.add_argument("--cm", help="contention manager of every run (-C; default: the library's)")
    ap.add_argument("--from-jsonl", help="summarise and plot an earlier run instead")
    args = ap.parse_args(argv)
    if args.reps < 1 or args.ms < 1:
        raise SystemExit("alloc_sweep: --reps and --ms must be positive")
    os.makedirs(args.out, exist_ok=True)
    results = os.path.join(args.out, "results.jsonl")
    if args.from_jsonl:
        with open(args.from_jsonl) as f:
            runs = [json.loads(line) for line in f if line.strip()]
    else:
        runs = sweep(args)
        with open(results, "w") as f:
            for r in runs:
                f.write(json.dumps(r) + "\n")
    allocs = [a for a in parse_list(args.allocators, "allocators")
              if any(r["allocator"] == a for r in runs)]
    text = summary(runs, allocs)
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write(text)
    print(text)
    what = ("sstm: the library's transactional allocator; glibc-lock: glibc malloc/free under "
            "one lock, frees after sstm_quiesce(); irrevocable: the transaction becomes "
            "irrevocable when it allocates or frees.")
    try:
        import plot
        plot.plot_records(runs, os.path.join(args.out, "alloc.png"), "aborts_per_s",
                          "Red-black tree, an allocation or a free in every update", what)
        # The same per CPU second of the run, where the host is shared.
        plot.plot_records(runs, os.path.join(args.out, "alloc-cpu.png"), "aborts_per_s",
                          "Red-black tree, an allocation or a free in every update",
                          what + " Throughput: commits per CPU second the run used (its "
                          "threads' user and system time).",
                          rate_field="commits_per_cpu_s", rate_label="commits per CPU second")
    except (ImportError, ValueError) as e:
        print("alloc_sweep: no plot: %s" % e, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
