#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Thread-mapping evaluation (docs/design/mapping.md, docs/benchmarks.md):
record communication matrices from benchmark runs, evaluate placements of
them on the two machines of [Pasqualin20] described as hwloc synthetic
topologies, and draw the results.

  mapeval.py record   --out DIR [--threads 32,64,96] [--intset hs,rb]
                      [--stamp-build DIR --apps a,b,...] [--si N]
      Runs each program with SCHEDSTM_MAP_STRATEGY=detect and
      SCHEDSTM_MAP_DUMP=DIR/<name>-<threads>.mat (the library's detection,
      no pinning), and logs every run to DIR/record.jsonl.
  mapeval.py evaluate --matrices DIR [--topos xeon,opteron] [--seeds N]
                      [--patterns pairs,ring,... --pattern-threads 16,...]
      Runs tools/sstm-mapeval on every DIR/*.mat (and generated patterns)
      per topology; writes DIR/eval.csv (patterns: DIR/patterns.csv).
  mapeval.py plot     --matrices DIR [--img-dir D] [--prefix P]
      From DIR/eval.csv: one figure per topology like [Pasqualin20]'s Fig. 2
      (a panel per application, bars per thread count and strategy: the
      cost relative to the Linux model, lower is better) and a heat map of
      every matrix.
  mapeval.py table    --matrices DIR
      Markdown tables on stdout: per application and thread count, and the
      mean cost relative to the Linux model per topology and strategy
      (arithmetic mean over the points), and from patterns.csv stmap against Scotch.

  mapeval.py onoff    --out DIR [--reps N] [--threads 2] [--intset-ms 1] [--example hello]
                      [--stamp-build DIR --apps a,b] [--variant NAME:K=V,K=V[:STAMP:LIB]]...
      The cost of mapping on this host: each program (bench/intset for
      --intset-ms, then each STAMP application, simulation inputs) under
      each variant (default: none, detect and stmap with the topology
      cache warm, and stmap with it off), interleaved per repetition; the
      wall time from outside (process start to exit) and the CPU time
      (wait4). A variant's optional STAMP and LIB name another STAMP build
      and schedstm build directory (an older library, for before/after).
      Writes DIR/onoff.jsonl and prints medians and the median ratio to
      the first variant.

"none" is the Linux scheduler modelled as a random balanced placement
averaged over seeds (tools/sstm-mapeval's head says how). A lower cost is a
prediction under the cost model, not a measured speed-up. Needs matplotlib
for plot (scripts/install-deps.sh --demo).
"""

import argparse
import csv
import glob
import json
import os
import re
import resource
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
STRATEGIES = ["none", "compact", "scatter", "round-robin", "stmap", "stmap-smt", "scotch"]
SHOWN = ["compact", "scatter", "round-robin", "stmap", "stmap-smt", "scotch"]
MAT_NAME = re.compile(r"^(?P<app>.+)-(?P<threads>\d+)\.mat$")


def items(text, conv=str):
    out = [conv(x) for x in text.split(",") if x]
    if not out:
        raise argparse.ArgumentTypeError("empty list")
    return out


def log(msg):
    print("mapeval: " + msg, file=sys.stderr)


# ---- record ---------------------------------------------------------------

def record(args):
    os.makedirs(args.out, exist_ok=True)
    runs = []
    intset = os.path.join(args.schedstm_build, "bench", "intset-schedstm")
    for s in args.intset:
        for t in args.threads:
            runs.append(("intset-%s" % s, t, [intset, "-S", s, "-n", str(t), "-i", "1024",
                                               "-u", "20", "-d", str(args.duration_ms)], None))
    if args.stamp_build:
        import stamp  # the STAMP runner's applications and command lines
        # Absolute: each application runs in its own directory.
        args.stamp_build = os.path.abspath(args.stamp_build)
        for a in args.apps:
            app = stamp.APPS.get(a)
            if app is None:
                log("unknown STAMP application %s" % a)
                return 2
            for t in args.threads:
                cmd = stamp.command(args.stamp_build, app, args.inputs, t, "schedstm")
                runs.append((a, t, cmd, os.path.join(args.stamp_build, app.base)))
    failed = 0
    with open(os.path.join(args.out, "record.jsonl"), "a") as logf:
        for name, t, cmd, cwd in runs:
            path = os.path.abspath(os.path.join(args.out, "%s-%d.mat" % (name, t)))
            env = dict(os.environ, SCHEDSTM_MAP_STRATEGY="detect", SCHEDSTM_MAP_DUMP=path,
                       SCHEDSTM_MAP_SI=str(args.si))
            if os.path.exists(path):
                os.unlink(path)
            try:
                p = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True,
                                   timeout=args.timeout_s)
                rc, err = p.returncode, p.stderr
            except subprocess.TimeoutExpired:
                rc, err = None, "timeout"
            ok = rc == 0 and os.path.exists(path)
            failed += not ok
            rec = {"name": name, "threads": t, "cmd": cmd, "si": args.si, "rc": rc,
                   "matrix": path if ok else None}
            logf.write(json.dumps(rec) + "\n")
            log("%s %d threads: %s" % (name, t, "ok" if ok else
                                       "FAILED (exit %s) %s" % (rc, err.strip()[-300:])))
    return 1 if failed else 0


# ---- evaluate -------------------------------------------------------------

def run_mapeval(tool, topo, extra, seeds):
    p = subprocess.run([tool, "--topo", topo, "--seeds", str(seeds)] + extra,
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("sstm-mapeval %s: %s" % (topo, p.stderr.strip()))
    return list(csv.DictReader(p.stdout.splitlines()))


def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


def matrix_order(path):
    """The order a matrix file declares ("threads N"), or None."""
    with open(path) as f:
        for line in f:
            toks = line.split()
            if toks[:1] == ["threads"] and len(toks) == 2 and toks[1].isdigit():
                return int(toks[1])
    return None


def evaluate(args):
    mats, skipped = [], []
    for m in sorted(glob.glob(os.path.join(args.matrices, "*.mat"))):
        # A matrix has a row per thread that registered (rows are keyed by
        # thread: a worker that registers for each phase keeps its row). One
        # with fewer rows than threads (threads that never ran a
        # transaction, or a dump from a library that keyed rows by
        # descriptor slot) says little about the placement of all of them.
        k = MAT_NAME.match(os.path.basename(m))
        order = matrix_order(m)
        if k and order is not None and order < int(k.group("threads")):
            skipped.append("%s: %d rows for %s threads" % (os.path.basename(m), order,
                                                           k.group("threads")))
        else:
            mats.append(m)
    with open(os.path.join(args.matrices, "skipped.txt"), "w") as f:
        f.writelines(line + "\n" for line in skipped)
    for line in skipped:
        log("skipped " + line)
    if mats:
        rows = []
        for topo in args.topos:
            rows += run_mapeval(args.mapeval, topo, sum((["--matrix", m] for m in mats), []),
                                args.seeds)
        write_csv(os.path.join(args.matrices, "eval.csv"), rows)
        log("%d matrices x %d topologies -> eval.csv" % (len(mats), len(args.topos)))
    elif not args.patterns:
        log("no *.mat in %s" % args.matrices)
        return 1
    if args.patterns:
        rows = []
        for topo in args.topos:
            for pat in args.patterns:
                rows += run_mapeval(args.mapeval, topo,
                                    ["--pattern", pat, "--threads",
                                     ",".join(map(str, args.pattern_threads))], args.seeds)
        write_csv(os.path.join(args.matrices, "patterns.csv"), rows)
        log("patterns -> patterns.csv")
    return 0


# ---- results --------------------------------------------------------------

def load_eval(path):
    """{topology: {(app, threads): {strategy: row}}}"""
    out = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            # A recorded matrix is named by the benchmark's thread count; its
            # order may be larger (the main thread registers too).
            m = MAT_NAME.match(r["matrix"])
            app = m.group("app") if m else r["matrix"]
            key = (app, int(m.group("threads")) if m else int(r["threads"]))
            out.setdefault(r["topology"], {}).setdefault(key, {})[r["strategy"]] = r
    return out


def mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")


def table(args):
    data = load_eval(os.path.join(args.matrices, "eval.csv"))
    for topo, pts in data.items():
        print("\n%s: cost relative to none (Linux model), lower is better\n" % topo)
        print("| application | threads | " + " | ".join(STRATEGIES[1:]) + " |")
        print("|---|---:|" + "---:|" * (len(STRATEGIES) - 1))
        for (app, t) in sorted(pts):
            row = pts[(app, t)]
            print("| %s | %d | " % (app, t) + " | ".join(
                "%.3f" % float(row[s]["rel_none"]) if s in row else "-" for s in STRATEGIES[1:])
                + " |")
        print("| mean | | " + " | ".join(
            "%.3f" % mean([float(r[s]["rel_none"]) for r in pts.values() if s in r])
            for s in STRATEGIES[1:]) + " |")
    spath = os.path.join(args.matrices, "skipped.txt")
    if os.path.exists(spath):
        with open(spath) as f:
            skipped = [line.strip() for line in f if line.strip()]
        if skipped:
            print("\nNot evaluated (fewer thread slots registered at once than threads): " +
                  "; ".join(skipped) + ".")
    ppath = os.path.join(args.matrices, "patterns.csv")
    if os.path.exists(ppath):
        print("\nstmap against Scotch on generated patterns: cost ratio stmap/scotch "
              "(< 1: stmap better), time of one computation in ms\n")
        print("| topology | pattern | threads | cost stmap/scotch | ms stmap | ms scotch |")
        print("|---|---|---:|---:|---:|---:|")
        rows = {}
        with open(ppath) as f:
            for r in csv.DictReader(f):
                rows.setdefault((r["topology"], r["matrix"], int(r["threads"])), {})[
                    r["strategy"]] = r
        for k in sorted(rows, key=lambda k: (k[0], k[1], k[2])):
            st, sc = rows[k].get("stmap"), rows[k].get("scotch")
            if not st or not sc:
                continue
            ratio = float(st["cost"]) / float(sc["cost"]) if float(sc["cost"]) else (
                1.0 if float(st["cost"]) == 0 else float("inf"))
            print("| %s | %s | %d | %.3f | %.2f | %.2f |" % (k[0], k[1], k[2], ratio,
                                                            float(st["ms"]), float(sc["ms"])))
    return 0


def need_matplotlib():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError as e:
        raise SystemExit("mapeval: matplotlib is not installed: run scripts/install-deps.sh "
                         "--demo (or pip install -r bench/requirements.txt) (%s)" % e)


def plot(args):
    plt = need_matplotlib()
    data = load_eval(os.path.join(args.matrices, "eval.csv"))
    os.makedirs(args.img_dir, exist_ok=True)
    for topo, pts in data.items():
        apps = sorted({a for a, _ in pts})
        cols = min(4, len(apps))
        rows = (len(apps) + cols - 1) // cols
        fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 2.9 * rows), squeeze=False)
        width = 0.8 / len(SHOWN)
        for i, app in enumerate(apps):
            ax = axes[i // cols][i % cols]
            threads = sorted(t for a, t in pts if a == app)
            for j, s in enumerate(SHOWN):
                ys = [float(pts[(app, t)][s]["rel_none"]) if s in pts[(app, t)] else 0
                      for t in threads]
                ax.bar([x + (j - (len(SHOWN) - 1) / 2) * width for x in range(len(threads))],
                       ys, width, label=s)
            ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
            ax.set_xticks(range(len(threads)))
            ax.set_xticklabels([str(t) for t in threads])
            ax.set_title(app, fontsize=10)
            ax.set_xlabel("threads", fontsize=8)
            if i % cols == 0:
                ax.set_ylabel("cost / none", fontsize=8)
            ax.tick_params(labelsize=8)
        for k in range(len(apps), rows * cols):
            axes[k // cols][k % cols].axis("off")
        handles, labels = axes[0][0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="upper center", ncol=len(SHOWN), fontsize=8)
        fig.suptitle("", fontsize=1)
        fig.text(0.5, 0.005, "%s: communication x hop distance of each placement, relative to "
                 "none (Linux, modelled as random balanced placements; dashed line); lower is "
                 "better. A prediction of the cost model, not a measured time." % topo,
                 ha="center", fontsize=7, wrap=True)
        fig.tight_layout(rect=(0, 0.03, 1, 0.94))
        out = os.path.join(args.img_dir, "%s-%s.png" % (args.prefix, topo))
        fig.savefig(out, dpi=110)
        plt.close(fig)
        log("wrote " + out)
    mats = sorted(glob.glob(os.path.join(args.matrices, "*.mat")))
    if mats:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        grid = {}
        for m in mats:
            k = MAT_NAME.match(os.path.basename(m))
            if k:
                grid.setdefault(k.group("app"), {})[int(k.group("threads"))] = m
        apps = sorted(grid)
        threads = sorted({t for a in grid.values() for t in a})
        fig, axes = plt.subplots(len(apps), len(threads),
                                 figsize=(2.6 * len(threads), 2.5 * len(apps)), squeeze=False)
        for i, app in enumerate(apps):
            for j, t in enumerate(threads):
                ax = axes[i][j]
                ax.set_xticks([])
                ax.set_yticks([])
                if t not in grid[app]:
                    ax.axis("off")
                    continue
                n, mat = read_matrix(grid[app][t])
                peak = max(max(r) for r in mat) or 1
                ax.imshow([[v / peak for v in r] for r in mat], cmap="Greys",
                          interpolation="nearest", vmin=0, vmax=1)
                ax.set_title("%s, %d threads" % (app, t), fontsize=8)
        fig.text(0.5, 0.005, "Communication matrices: cell (i, j) = events between threads "
                 "i and j, darker = more (each matrix scaled to its own maximum).",
                 ha="center", fontsize=7)
        fig.tight_layout(rect=(0, 0.02, 1, 1))
        out = os.path.join(args.img_dir, "%s-matrices.png" % args.prefix)
        fig.savefig(out, dpi=100)
        plt.close(fig)
        log("wrote " + out)
    return 0


def read_matrix(path):
    """A matrix file (the format of src/map/mapping.h): (n, rows). Raises
    ValueError naming the line on a malformed file (the C reader is the
    strict one; this one only draws what that one wrote)."""
    with open(path) as f:
        lines = [(i + 1, ln.split()) for i, ln in enumerate(f)
                 if ln.strip() and not ln.lstrip().startswith("#")]
    if len(lines) < 2 or lines[0][1] != ["schedstm-comm-matrix", "1"] or \
            lines[1][1][:1] != ["threads"]:
        raise ValueError("%s: not a schedstm-comm-matrix 1 file" % path)
    n = int(lines[1][1][1])
    rows = []
    for ln, toks in lines[2:]:
        if len(toks) != n:
            raise ValueError("%s:%d: %d numbers, expected %d" % (path, ln, len(toks), n))
        rows.append([int(x) for x in toks])
    if len(rows) != n:
        raise ValueError("%s: %d rows, expected %d" % (path, len(rows), n))
    return n, rows


# ---- onoff ---------------------------------------------------------------

DEFAULT_VARIANTS = ["none:SCHEDSTM_MAP_STRATEGY=none",
                    "detect:SCHEDSTM_MAP_STRATEGY=detect",
                    "stmap:SCHEDSTM_MAP_STRATEGY=stmap",
                    "stmap-nocache:SCHEDSTM_MAP_STRATEGY=stmap,SCHEDSTM_MAP_TOPO_CACHE=off"]


def parse_variant(text):
    parts = text.split(":")
    if len(parts) not in (2, 4) or not parts[0]:
        raise argparse.ArgumentTypeError("variant %r: NAME:K=V,K=V[:STAMP_BUILD:LIB_BUILD]" % text)
    env = {}
    for kv in parts[1].split(","):
        if kv:
            k, sep, v = kv.partition("=")
            if not sep:
                raise argparse.ArgumentTypeError("variant %r: %r is not K=V" % (text, kv))
            env[k] = v
    return {"name": parts[0], "env": env, "stamp": parts[2] if len(parts) == 4 else None,
            "lib": parts[3] if len(parts) == 4 else None}


def timed(argv, env, cwd, timeout):
    """(returncode, wall s, CPU s) of one run, timed from outside."""
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return None, time.monotonic() - t0, None, "timed out"
    wall = time.monotonic() - t0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime - timed.cpu_before
    timed.cpu_before = usage.ru_utime + usage.ru_stime
    return proc.returncode, wall, cpu, err.decode(errors="replace").strip()[-300:]


timed.cpu_before = 0.0


def onoff(args):
    os.makedirs(args.out, exist_ok=True)
    variants = args.variant or [parse_variant(v) for v in DEFAULT_VARIANTS]
    progs = []  # (name, argv for a variant, cwd for a variant)
    if args.intset_ms:
        def intset_argv(v):
            build = v["lib"] or args.schedstm_build
            return [os.path.join(build, "bench", "intset-schedstm"), "-S", "hs", "-n",
                    str(args.threads), "-i", "1024", "-u", "20", "-d", str(args.intset_ms)]
        progs.append(("intset-hs-%dms" % args.intset_ms, intset_argv, lambda v: None))
    for ex in args.example:
        # examples/ link the shared library with a RUNPATH: a variant's
        # LD_LIBRARY_PATH (its LIB) takes precedence
        progs.append((ex, lambda v, ex=ex: [os.path.join(args.schedstm_build, "examples", ex)],
                      lambda v: None))
    if args.stamp_build:
        import stamp
        for a in args.apps:
            app = stamp.APPS[a]

            def stamp_argv(v, app=app):
                build = os.path.abspath(v["stamp"] or args.stamp_build)
                return stamp.command(build, app, "sim", args.threads, "stm")
            progs.append((a, stamp_argv, lambda v, f=stamp_argv: os.path.dirname(f(v)[0])))
    rows = []
    with open(os.path.join(args.out, "onoff.jsonl"), "a") as out:
        for rep in range(args.reps):
            for name, argv_of, cwd_of in progs:
                for v in variants:
                    env = dict(os.environ, **v["env"])
                    if v["lib"]:
                        env["LD_LIBRARY_PATH"] = os.path.join(v["lib"], "src")
                    argv = argv_of(v)
                    rc, wall, cpu, err = timed(argv, env, cwd_of(v), args.timeout_s)
                    row = {"prog": name, "variant": v["name"], "rep": rep, "rc": rc,
                           "wall_s": wall, "cpu_s": cpu, "env": v["env"], "cmd": argv}
                    if rc != 0:
                        row["error"] = err
                        log("%s %s rep %d: exit %s: %s" % (name, v["name"], rep, rc, err))
                    rows.append(row)
                    out.write(json.dumps(row, sort_keys=True) + "\n")
                    out.flush()
    names = [v["name"] for v in variants]
    print("| program | %s (s) | %s |" % (names[0], " | ".join(names[1:])))
    print("|---|---:|%s" % ("---:|" * (len(names) - 1)))
    for name, _, _ in progs:
        ok = [r for r in rows if r["prog"] == name and r["rc"] == 0]
        base = {r["rep"]: r["wall_s"] for r in ok if r["variant"] == names[0]}
        cells = ["%.3f" % median([r["wall_s"] for r in ok if r["variant"] == names[0]])]
        for n in names[1:]:
            ratios = [r["wall_s"] / base[r["rep"]] for r in ok
                      if r["variant"] == n and r["rep"] in base]
            cells.append("%.2f (%.2f-%.2f)" % (median(ratios), min(ratios), max(ratios))
                         if ratios else "-")
        print("| %s | %s |" % (name, " | ".join(cells)))
    return 1 if any(r["rc"] != 0 for r in rows) else 0


def median(xs):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("--out", required=True)
    r.add_argument("--schedstm-build", default=os.path.join(REPO, "build"))
    r.add_argument("--threads", type=lambda s: items(s, int), default=[32, 64, 96])
    r.add_argument("--intset", type=lambda s: [x for x in s.split(",") if x],
                   default=["hs", "rb"], help="structures (empty: none)")
    r.add_argument("--duration-ms", type=int, default=2000)
    r.add_argument("--stamp-build", default=None)
    r.add_argument("--apps", type=items, default=["bayes", "genome", "intruder", "kmeans",
                                                  "labyrinth", "ssca2", "vacation", "yada"])
    r.add_argument("--inputs", choices=("sim", "standard"), default="sim")
    r.add_argument("--si", type=int, default=100)
    r.add_argument("--timeout-s", type=float, default=600)
    e = sub.add_parser("evaluate")
    e.add_argument("--matrices", required=True)
    e.add_argument("--mapeval", default=os.path.join(REPO, "build", "tools", "sstm-mapeval"))
    e.add_argument("--topos", type=items, default=["xeon", "opteron"])
    e.add_argument("--seeds", type=int, default=20)
    e.add_argument("--patterns", type=items, default=[])
    e.add_argument("--pattern-threads", type=lambda s: items(s, int),
                   default=[16, 32, 64, 96, 128, 192, 256])
    pl = sub.add_parser("plot")
    pl.add_argument("--matrices", required=True)
    pl.add_argument("--img-dir", default=os.path.join(REPO, "docs", "img"))
    pl.add_argument("--prefix", default="mapping")
    t = sub.add_parser("table")
    t.add_argument("--matrices", required=True)
    o = sub.add_parser("onoff")
    o.add_argument("--out", required=True)
    o.add_argument("--reps", type=int, default=7)
    o.add_argument("--threads", type=int, default=2)
    o.add_argument("--intset-ms", type=int, default=1, help="0: no intset run")
    o.add_argument("--schedstm-build", default=os.path.join(REPO, "build"))
    o.add_argument("--example", action="append", default=[],
                   help="a program of examples/ (e.g. hello: sstm_init(NULL), two threads, "
                        "a fixed number of transactions)")
    o.add_argument("--stamp-build", default=None)
    o.add_argument("--apps", type=items, default=["bayes", "vacation", "kmeans", "labyrinth",
                                                  "intruder"])
    o.add_argument("--variant", type=parse_variant, action="append")
    o.add_argument("--timeout-s", type=float, default=600)
    return p.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    return {"record": record, "evaluate": evaluate, "plot": plot, "table": table,
            "onoff": onoff}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
