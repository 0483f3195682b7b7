#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tools/sstm-mapeval end to end: on a small synthetic topology, for a
generated pattern and for a matrix file, every strategy prints one CSV line
with the fields its header names; the sharing-aware mappers (stmap, Scotch)
cost no more than the random placement on a pattern whose optimum is known
(a ring), and a malformed matrix file or topology is refused with its
reason and exit status 2.

usage: check_mapeval.py SSTM_MAPEVAL
"""
import csv
import io
import os
import subprocess
import sys
import tempfile

STRATEGIES = ["none", "compact", "scatter", "round-robin", "stmap", "stmap-smt", "scotch"]
TOPO = "Package:2 Core:4 PU:2"


def run(tool, *args):
    return subprocess.run([tool, *args], capture_output=True, text=True, timeout=60)


def fail(msg):
    print("check_mapeval: FAILED: " + msg)
    sys.exit(1)


def main(argv):
    if len(argv) != 2:
        print("usage: check_mapeval.py SSTM_MAPEVAL", file=sys.stderr)
        return 2
    tool = argv[1]
    with tempfile.TemporaryDirectory() as d:
        mat = os.path.join(d, "chain.mat")
        n = 8
        rows = [[0] * n for _ in range(n)]
        for i in range(n - 1):
            rows[i][i + 1] = rows[i + 1][i] = 10
        with open(mat, "w") as f:
            f.write("schedstm-comm-matrix 1\nthreads %d\n" % n)
            for r in rows:
                f.write(" ".join(map(str, r)) + "\n")
        p = run(tool, "--topo", TOPO, "--matrix", mat, "--pattern", "ring", "--threads", "16")
        if p.returncode != 0:
            fail("exit %d: %s" % (p.returncode, p.stderr))
        recs = list(csv.DictReader(io.StringIO(p.stdout)))
        for name, threads in (("chain.mat", "8"), ("ring", "16")):
            got = [r for r in recs if r["matrix"] == name]
            if [r["strategy"] for r in got] != STRATEGIES:
                fail("%s: strategies %s" % (name, [r["strategy"] for r in got]))
            for r in got:
                if r["threads"] != threads or float(r["cost"]) < 0 or int(r["max_load"]) < 1:
                    fail("%s: bad line %s" % (name, r))
            cost = {r["strategy"]: float(r["cost"]) for r in got}
            for s in ("stmap", "stmap-smt", "scotch"):
                if cost[s] > cost["none"]:
                    fail("%s: %s costs %g, more than none's %g" % (name, s, cost[s], cost["none"]))
        # A chain of 8 on 2 x 4 cores, one thread per core: 6 links inside
        # the packages (distance 2), 1 across (3): 10 * (6 * 2 + 3) = 150.
        chain = {r["strategy"]: float(r["cost"]) for r in recs if r["matrix"] == "chain.mat"}
        if chain["stmap"] != 150:
            fail("chain: stmap costs %g, the optimum is 150" % chain["stmap"])
        with open(mat, "a") as f:
            f.write("0 0\n")
        p = run(tool, "--topo", TOPO, "--matrix", mat)
        if p.returncode != 2 or "chain.mat:11:1: unexpected text after the last row" not in p.stderr:
            fail("malformed matrix: exit %d, %r" % (p.returncode, p.stderr))
        # A good file before the malformed one: nothing printed, not the
        # good file's lines and then the error.
        good = os.path.join(d, "good.mat")
        with open(good, "w") as f:
            f.write("schedstm-comm-matrix 1\nthreads 2\n0 1\n1 0\n")
        p = run(tool, "--topo", TOPO, "--matrix", good, "--matrix", mat)
        if p.returncode != 2 or "chain.mat:11:1" not in p.stderr or p.stdout:
            fail("good then malformed matrix: exit %d, %r, stdout %r" %
                 (p.returncode, p.stderr, p.stdout))
        # Counts whose costs would pass 2^64-1 are refused: the costs
        # saturated, every strategy printed the same number, rel_none 1.
        big = os.path.join(d, "big.mat")
        top = 2**64 - 1
        with open(big, "w") as f:
            f.write("schedstm-comm-matrix 1\nthreads 2\n0 %d\n%d 0\n" % (top, top))
        p = run(tool, "--topo", TOPO, "--matrix", big)
        if p.returncode != 2 or "big.mat: counts too large" not in p.stderr or \
                p.stdout.count("\n") > 1:
            fail("counts past 2^64-1: exit %d, %r, %r" % (p.returncode, p.stderr, p.stdout))
        with open(big, "w") as f:  # the largest count whose costs fit (distance 3)
            f.write("schedstm-comm-matrix 1\nthreads 2\n0 %d\n%d 0\n" % (top // 3, top // 3))
        p = run(tool, "--topo", TOPO, "--matrix", big)
        if p.returncode != 0:
            fail("counts up to 2^64-1: exit %d, %r" % (p.returncode, p.stderr))
        # More --matrix files than it takes: the reason, not the usage.
        p = run(tool, "--topo", TOPO, *(["--matrix", mat] * 257))
        if p.returncode != 2 or "--matrix: at most 256 files" not in p.stderr or p.stdout:
            fail("257 --matrix: exit %d, %r" % (p.returncode, p.stderr))
        p = run(tool, "--topo", "Package:x", "--pattern", "ring", "--threads", "4")
        if p.returncode != 2 or "invalid hwloc synthetic description" not in p.stderr:
            fail("bad topology: exit %d, %r" % (p.returncode, p.stderr))
        # Mistyped numbers are refused, not read as something else (a seed
        # of 0, a thread list without its empty item) or as a count that
        # runs for ever (2^64 seeds).
        for args, why in ((["--seed", "abc"], "--seed: bad value"),
                          (["--seed", "-1"], "--seed: bad value"),
                          (["--seeds", "99999999999999999999"], "--seeds: bad value"),
                          (["--seeds", "5x"], "--seeds: bad value"),
                          (["--threads", "4,,5"], "--threads: an empty item"),
                          (["--threads", "4,"], "--threads: an empty item"),
                          (["--threads", ""], "--threads: an empty item"),
                          (["--threads", "+4"], "--threads: bad value"),
                          (["--threads", "5000"], "--threads: bad value")):
            extra = args if args[0] == "--threads" else args + ["--threads", "4"]
            p = run(tool, "--topo", TOPO, "--pattern", "ring", *extra)
            if p.returncode != 2 or why not in p.stderr or p.stdout.count("\n") > 1:
                fail("%s: exit %d, %r" % (" ".join(args), p.returncode, p.stderr))
        # --help: the whole usage on standard output, status 0, nothing
        # evaluated; it names the strategies and the CSV columns (the user
        # should not need the source for them).
        for opt in ("--help", "-h"):
            p = run(tool, opt)
            if p.returncode != 0 or not p.stdout.startswith("usage: sstm-mapeval") or p.stderr:
                fail("%s: exit %d, %r, %r" % (opt, p.returncode, p.stdout, p.stderr))
            for word in STRATEGIES + ["topology,matrix,threads,strategy,cost,rel_none,ms,max_load",
                                      "pairs", "clusters", "--seeds"]:
                if word not in p.stdout:
                    fail("%s does not mention %s: %r" % (opt, word, p.stdout))
        # A mistake is named, not answered with the bare usage; nothing is
        # printed on standard output (no CSV header before the error).
        for args, why in ((["--bogus", "1"], "unknown option '--bogus'"),
                          (["--pattern", "ring", "--threads"], "--threads needs a value"),
                          (["--pattern", "ring", "--threads", "4", "--seeds", "0"],
                           "--seeds: at least 1"),
                          ([], "nothing to evaluate"),
                          (["--pattern", "ring"], "--pattern needs --threads"),
                          (["--threads", "4", "--matrix", mat], "--threads goes with --pattern"),
                          (["--pattern", "rings", "--threads", "4"], "unknown pattern \"rings\""),
                          (["--pattern", "ring", "--threads", "4,0"], "bad thread count \"0\"")):
            p = run(tool, "--topo", TOPO, *args) if args else run(tool)
            if p.returncode != 2 or why not in p.stderr or p.stdout:
                fail("%s: exit %d, %r, %r" % (" ".join(args) or "no argument", p.returncode,
                                              p.stderr, p.stdout))
    print("check_mapeval: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
