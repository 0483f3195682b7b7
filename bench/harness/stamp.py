#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""STAMP 0.9.10 on schedstm: build, run, check, summarise, plot.

Run through sweep.py (`sweep.py --bench stamp ...`) or on its own
(`stamp.py ...`); the options are the same:

  --stamp-dir PATH    a STAMP 0.9.10 tree (you provide it: docs/stamp.md)
  --stamp-build DIR   where bench/stamp/build.sh puts the programs (default
                      build/stamp); built there first when a program is
                      missing, or always with --rebuild, against the
                      library of --schedstm-build DIR (default build/)
  --apps A,B          bayes, genome, intruder, kmeans, kmeans-high,
                      labyrinth, ssca2, vacation, vacation-high, yada
                      (default: the eight applications; kmeans-high and
                      vacation-high are STAMP's high-contention inputs)
  --inputs sim,medium,standard  input sets, one or more: STAMP's inputs for
                      simulated runs (small, the default), ours in between
                      (medium: a sequential run of 0.5-5 s CPU) or STAMP's
                      non-simulator ones (standard)
  --threads 1,2,8     thread counts of the schedstm runs
  --cms suicide,adaptive  policies (SCHEDSTM_CM; "default" sets nothing: the
                      library's default, adaptive since it was made so; "none":
                      no schedstm runs, e.g. with --tinystm alone)
  --tinystm           also run the TinySTM build of each application
                      (<app>-tinystm, bench/stamp/tinystm) at each thread
                      count, TinySTM's default configuration (CM_SUICIDE)
  --tinystm-dir PATH  the TinySTM tree to build it from when it is missing
                      (implies --tinystm)
  --abi V,...         also run STAMP compiled once with gcc -fgnu-tm
                      (build.sh's itm variant, bench/stamp/tm_itm.h) on
                      runtimes of the compiler ABI, at each thread count:
                      itm (GCC's libitm, with ITM_DEFAULT_METHOD=ml_wt),
                      schedstm-itm (the same objects linked with
                      libschedstm-itm; the library's default policy,
                      SCHEDSTM_ITM_PRIVATIZATION=1), schedstm-itm-nopriv
                      (the same with SCHEDSTM_ITM_PRIVATIZATION=0), and
                      NAME-itm for each
                      --itm-lib NAME=DIR (the itm program with DIR, which
                      holds that runtime's libitm.so.1, first in
                      LD_LIBRARY_PATH; e.g. tinystm=DIR for TinySTM's, which
                      bench/peers/build-tinystm-abi.sh builds). Only kmeans
                      and ssca2 compile this way (docs/stamp.md). itm is
                      refused while LD_LIBRARY_PATH holds a libitm.so.1
  --itm-lib NAME=DIR  a runtime of the ABI for --abi NAME-itm (repeatable)
  --reps N            repetitions (default 1)
  --out DIR, --timeout-s S
  --plot              also draw stamp.png; needs matplotlib, which
                      scripts/install-deps.sh --stamp installs into
                      build/venv: run the harness with build/venv/bin/python
  --dry-run           run nothing: print the commands a run would run, and
                      on stderr the build.sh command it would build the
                      programs with first (or why it would stop)
  --map-readback      read each thread's CPU affinity back from /proc while
                      the schedstm runs go, against the thread mapping's
                      log (map_affinity.py; the strategy from
                      SCHEDSTM_MAP_STRATEGY): the record's "affinity"
  --verify            the verification mode: the same runs, reported as a
                      matrix of checks (verify.json, verify.md) as well as
                      the timing summary
  --report DIR,...    run nothing: read the results.jsonl of earlier runs
                      (one or more output directories, merged) and write
                      the summary, verify.* (with --verify) and the plot
                      into --out
  --no-standins       skip an application whose standard input the STAMP
                      tree lacks instead of running it on a generated
                      stand-in (below)

STAMP 0.9.10 lacks two of its standard inputs: kmeans'
random-n65536-d32-c16.txt (kmeans and kmeans-high) and yada's
ttimeu1000000.2 (.node, .ele; only its .poly ships). When --inputs standard needs one that is not in the build's
inputs directory, the harness makes a stand-in with
bench/stamp/gen_inputs.py (deterministic: fixed seeds; kmeans by STAMP's
own generator's recipe, yada a Delaunay triangulation of a million
random points by Triangle, which needs bench/stamp/requirements.txt in
the project's virtual environment) into <stamp-build>/<app>/inputs/
standin/, once, and runs the application on it. It does so without being
asked, as it builds missing programs, because the stand-in can never be
taken for STAMP's file: it has its own directory, so the tree's file is
always used when there; every record that ran on it has input_origin
"standin" and the stand-in's manifest (standin: what it replaces, how it
was made, SHA-256 of its files), others input_origin "stamp"; the
progress lines, summary.md, verify.json ("standins") and verify.md say
so. --no-standins keeps the old behaviour (skip, with a warning).
--dry-run makes nothing, and prints the stand-in's path where a run
would use one; an application whose stand-in cannot be made here (yada's
needs the triangle package) it leaves out, as a run would skip it.

Every point runs the sequential build (STAMP's seq configuration, one
thread: the reference) and the schedstm build under each policy (and the
TinySTM build with --tinystm); within a repetition the variants of an
application run back to back. Each run's
record has the wall time (process start to exit, as the harness sees it),
the process CPU time (user + system of the process and its threads, from
wait4), the application's own time (the region STAMP times), commits and
aborts by reason (the library's statistics, dumped at TM_SHUTDOWN through
SSTM_STAMP_STATS), and the outcome of the application's own verification
or, where it has none, of a comparison with the sequential run's result:

  bayes      its asserts, and the learned network's score against the
             sequential run's: equal at one thread, within BAYES_TOLERANCE
             with more (the order of the learner's tasks depends on the
             threads)
  genome     "Sequence matches gene: yes"
  intruder   "Num found" equals "Num attack" (STAMP asserts it too)
  kmeans     the cluster centres against the sequential run's (within
             KMEANS_TOLERANCE: float sums in another order)
  labyrinth  "Verification passed."
  ssca2      bench/stamp/ssca2_digest.c (linked in by build.sh): the
             implied in-degrees its transactions counted, recounted from
             the graph; at one thread the graph's digest against the
             sequential run's (the time this takes, which the program
             prints, is subtracted from the run's wall and CPU times and
             recorded as check_cpu_s, check_wall_s)
  vacation   "Checking tables... done." (its consistency check asserts)
  yada       "Final mesh is valid."

Every record also says where it ran (git commit of the harness's tree,
compiler, CPU, kernel, date: sweep.py's provenance fields) and the host's
one-minute load average when the run started (loadavg). Writes
results.jsonl, results.csv and summary.md (medians; time relative
to the sequential build per application and thread count, wall and CPU,
each run over the sequential run of its own repetition, and the range of
the CPU ratios; aborts per commit and by reason; the checks; then the same
as tables with one column per variant) in --out, with --verify also
verify.json and verify.md, and with --plot stamp.png.
Exit status 1 if a run failed or a check failed, 2 on a bad command
line.
"""

import argparse
import csv
import datetime
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

import provenance  # the harness directory: on sys.path when run or imported from it

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
BUILD_SH = os.path.join(REPO, "bench", "stamp", "build.sh")
GEN_INPUTS = os.path.join(REPO, "bench", "stamp", "gen_inputs.py")
sys.path.insert(0, os.path.dirname(GEN_INPUTS))
import gen_inputs  # noqa: E402 (bench/stamp: the stand-ins' names and manifests)
ERROR = "stamp: error: "

# matplotlib is installed into the project's virtual environment, never
# into the system's Python (scripts/install-deps.sh).
PLOT_HINT = ("matplotlib is not installed for %s: scripts/install-deps.sh --stamp installs "
             "it into build/venv; run the harness with build/venv/bin/python"
             % os.path.basename(sys.executable or "python3"))

KMEANS_TOLERANCE = 0.05  # largest difference of a centre's coordinate
BAYES_TOLERANCE = 0.10  # relative difference of the learned score, more than 1 thread


class App:
    def __init__(self, name, base, tflag, sim, medium, standard, check):
        self.name, self.base, self.tflag = name, base, tflag
        self.args = {"sim": sim, "medium": medium, "standard": standard}
        self.check = check


INPUT_SETS = ("sim", "medium", "standard")


# Each check takes the run's output, the sequential run's output of the
# same repetition (or None) and the run's thread count, and returns
# (verdict, detail): "pass", "fail", or "n/a" (nothing to compare with).
def _grep(pattern):
    def check(out, seq_out, threads=1):
        return ("pass", pattern) if re.search(pattern, out, re.M) else \
            ("fail", "no line %r" % pattern)
    return check


def _intruder(out, seq_out, threads=1):
    a = re.search(r"^Num attack\s*=\s*(\d+)", out, re.M)
    f = re.search(r"^Num found\s*=\s*(\d+)", out, re.M)
    if not a or not f:
        return "fail", "no Num attack / Num found lines"
    return ("pass" if a.group(1) == f.group(1) else "fail",
            "found %s of %s attacks" % (f.group(1), a.group(1)))


def _centres(out):
    rows = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) > 2 and re.fullmatch(r"\d+", fields[0]):
            try:
                rows[int(fields[0])] = [float(x) for x in fields[1:]]
            except ValueError:
                continue
    return rows


def _kmeans(out, seq_out, threads=1):
    mine, ref = _centres(out), _centres(seq_out or "")
    if not mine:
        return "fail", "no cluster centres in the output"
    if not ref:
        return "n/a", "no sequential result to compare with"
    if sorted(mine) != sorted(ref):
        return "fail", "%d centres, the sequential run %d" % (len(mine), len(ref))
    diff = max(abs(a - b) for k in ref for a, b in zip(mine[k], ref[k]))
    return ("pass" if diff <= KMEANS_TOLERANCE else "fail",
            "%d centres, largest difference %.2g from the sequential run's" % (len(ref), diff))


def _bayes(out, seq_out, threads=1):
    """One thread learns exactly what the sequential build learns (the same
    tasks in the same order): the score must be equal. With more threads
    the order of the learner's tasks, hence the network, may differ: the
    score must be within BAYES_TOLERANCE of the sequential one."""
    m = re.search(r"^Learn score\s*=\s*(-?[0-9.]+)", out, re.M)
    if not m:
        return "fail", "no Learn score line"
    s = re.search(r"^Learn score\s*=\s*(-?[0-9.]+)", seq_out or "", re.M)
    if not s:
        return "n/a", "learn score %s (asserts passed; no sequential score)" % m.group(1)
    if m.group(1) == s.group(1):
        return "pass", "learn score %s, equal to the sequential run's" % m.group(1)
    mine, ref = float(m.group(1)), float(s.group(1))
    rel = abs(mine - ref) / max(abs(ref), 1e-12)
    if threads == 1:
        return "fail", "learn score %s at 1 thread, the sequential run's %s" % (
            m.group(1), s.group(1))
    return ("pass" if rel <= BAYES_TOLERANCE else "fail",
            "learn score %s, sequential %s: %.3g %% apart (task order differs)" % (
                m.group(1), s.group(1), 100 * rel))


_SSCA2_DIGEST = re.compile(r"^ssca2 graph digest: (.*)$", re.M)
_CHECK_TIME = re.compile(r"^ssca2 check time: cpu=([0-9.]+) wall=([0-9.]+)$", re.M)


def _ssca2(out, seq_out, threads=1):
    """bench/stamp/ssca2_digest.c's lines: the transactionally counted
    implied in-degrees recounted from the out-edges, and at one thread the
    graph's digest against the sequential build's (with more threads
    STAMP's own computeGraph builds a partition-dependent graph: that
    file says why)."""
    if re.search(r"^ssca2 implied in-degrees: MISMATCH", out, re.M):
        return "fail", re.search(r"^ssca2 implied in-degrees: (MISMATCH.*)$", out, re.M).group(1)
    ok = re.search(r"^ssca2 implied in-degrees: consistent \((.*)\)", out, re.M)
    if not ok:
        return "fail", ("no ssca2 implied in-degrees line (built without "
                        "bench/stamp/ssca2_digest.c?)")
    mine = _SSCA2_DIGEST.search(out)
    ref = _SSCA2_DIGEST.search(seq_out or "")
    if threads == 1 and mine and ref:
        if mine.group(1) != ref.group(1):
            return "fail", "graph digest %s at 1 thread, the sequential run's %s" % (
                mine.group(1), ref.group(1))
        return "pass", "implied in-degrees consistent (%s); graph equal to the sequential " \
            "run's" % ok.group(1)
    return "pass", "implied in-degrees consistent (%s)" % ok.group(1)


IN = "{inputs}"
# Three input sets per application: STAMP's simulation inputs (sim), its
# non-simulator ones (standard; the largest kmeans and yada files are
# missing from some copies of STAMP), and ours in between (medium: a
# sequential run of about 0.5-5 s of CPU, long enough that the library's
# fixed start costs do not decide the ratio, short enough to repeat).
APPS = {a.name: a for a in (
    App("bayes", "bayes", "-t", "-v32 -r1024 -n2 -p20 -s0 -i2 -e2",
        "-v32 -r1024 -n10 -p40 -i2 -e8 -s1", "-v32 -r4096 -n10 -p40 -i2 -e8 -s1", _bayes),
    App("genome", "genome", "-t", "-g256 -s16 -n16384", "-g4096 -s32 -n1048576",
        "-g16384 -s64 -n16777216", _grep(r"^Sequence matches gene: yes")),
    App("intruder", "intruder", "-t", "-a10 -l4 -n2038 -s1", "-a10 -l16 -n65536 -s1",
        "-a10 -l128 -n262144 -s1", _intruder),
    App("kmeans", "kmeans", "-p", "-m40 -n40 -t0.05 -i %s/random-n2048-d16-c16.txt" % IN,
        "-m40 -n40 -t0.00001 -i %s/random-n16384-d24-c16.txt" % IN,
        "-m40 -n40 -t0.00001 -i %s/random-n65536-d32-c16.txt" % IN, _kmeans),
    App("kmeans-high", "kmeans", "-p", "-m15 -n15 -t0.05 -i %s/random-n2048-d16-c16.txt" % IN,
        "-m15 -n15 -t0.00001 -i %s/random-n16384-d24-c16.txt" % IN,
        "-m15 -n15 -t0.00001 -i %s/random-n65536-d32-c16.txt" % IN, _kmeans),
    App("labyrinth", "labyrinth", "-t", "-i %s/random-x32-y32-z3-n96.txt" % IN,
        "-i %s/random-x256-y256-z3-n256.txt" % IN, "-i %s/random-x512-y512-z7-n512.txt" % IN,
        _grep(r"^Verification passed\.")),
    App("ssca2", "ssca2", "-t", "-s13 -i1.0 -u1.0 -l3 -p3", "-s16 -i1.0 -u1.0 -l3 -p3",
        "-s20 -i1.0 -u1.0 -l3 -p3", _ssca2),
    App("vacation", "vacation", "-c", "-n2 -q90 -u98 -r16384 -t4096",
        "-n2 -q90 -u98 -r65536 -t262144", "-n2 -q90 -u98 -r1048576 -t4194304",
        _grep(r"^Checking tables\.\.\. done\.")),
    App("vacation-high", "vacation", "-c", "-n4 -q60 -u90 -r16384 -t4096",
        "-n4 -q60 -u90 -r65536 -t262144", "-n4 -q60 -u90 -r1048576 -t4194304",
        _grep(r"^Checking tables\.\.\. done\.")),
    App("yada", "yada", "-t", "-a20 -i %s/633.2" % IN, "-a20 -i %s/ttimeu100000.2" % IN,
        "-a15 -i %s/ttimeu1000000.2" % IN, _grep(r"^Final mesh is valid\.")),
)}
DEFAULT_APPS = ["bayes", "genome", "intruder", "kmeans", "labyrinth", "ssca2", "vacation", "yada"]

# The application's own time: the first of these in its output.
_APP_TIME = [re.compile(p, re.M) for p in (
    r"^Learn time\s*=\s*([0-9.]+)",           # bayes (learning only)
    r"^Time taken for all is\s+([0-9.]+)",    # ssca2
    r"^Elapsed time\s*=\s*([0-9.]+)",         # intruder, labyrinth, yada
    r"^Time\s*[=:]\s*([0-9.]+)",              # genome, vacation, kmeans
)]

FIELDS = ("app", "inputs", "input_origin", "threads", "variant", "cm", "rep", "status", "check",
          "wall_s", "cpu_s", "app_time_s", "rel_wall", "rel_cpu", "rel_app", "commits", "aborts",
          "aborts_per_commit", "error")


def app_time(out):
    for p in _APP_TIME:
        m = p.search(out)
        if m:
            return float(m.group(1))
    return None


def parse_stats(text):
    """commits, aborts and aborts by reason from the "total" entry of
    sstm_stats_dump()."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not line.startswith("total"):
            continue
        c = re.search(r"\bcommits=(\d+)", line)
        a = re.search(r"\baborts=(\d+)", line)
        rec = {"commits": int(c.group(1)) if c else None,
               "aborts": int(a.group(1)) if a else None, "aborts_by_reason": {}}
        for follow in lines[i + 1:]:
            if not follow.startswith(" "):
                break
            if follow.strip().startswith("aborts:"):
                for name, n in re.findall(r"([a-z-]+)=(\d+)", follow):
                    rec["aborts_by_reason"][name] = int(n)
        return rec
    return {"commits": None, "aborts": None, "aborts_by_reason": {}}


def variants(cms, tinystm=False, abi=()):
    out = [("seq", None)]
    out += [("schedstm-" + cm, cm) for cm in cms]
    if tinystm:
        out.append(("tinystm", None))
    out += [(v, None) for v in abi]
    return out


# The --abi variants that are not NAME-itm of an --itm-lib.
ABI_OWN = ("itm", "schedstm-itm", "schedstm-itm-nopriv")


def is_abi(variant):
    """Whether a variant runs build.sh's itm programs (compiled with
    -fgnu-tm). The policies' names cannot end so (parse_args)."""
    return variant == "itm" or variant.endswith("-itm") or variant == "schedstm-itm-nopriv"


def program(build, app, variant):
    if variant in ("seq", "tinystm"):
        kind = variant
    elif variant.startswith("schedstm-itm"):
        kind = "schedstm-itm"  # the objects of <app>-itm, linked with libschedstm-itm
    elif is_abi(variant):
        kind = "itm"  # libitm's link; another runtime through LD_LIBRARY_PATH
    else:
        kind = "stm"
    return os.path.join(build, app.base, "%s-%s" % (app.base, kind))


def abi_env(variant, itm_libs):
    """The environment of an --abi variant's run (besides SSTM_STAMP_STATS)."""
    if variant == "itm":
        # libitm runs a single-threaded program serial-irrevocable, with no
        # instrumentation, unless told a method (sweep.py does the same)
        return {"ITM_DEFAULT_METHOD": "ml_wt"}
    if variant == "schedstm-itm-nopriv":
        return {"SCHEDSTM_ITM_PRIVATIZATION": "0"}
    if variant == "schedstm-itm":
        # on, as shipped, whatever the caller's environment says: the
        # variant is -nopriv's counterpart
        return {"SCHEDSTM_ITM_PRIVATIZATION": "1"}
    lib = itm_libs[variant[:-len("-itm")]]
    path = os.environ.get("LD_LIBRARY_PATH")
    return {"LD_LIBRARY_PATH": lib + (":" + path if path else "")}


def command(build, app, inputs, threads, variant, standin=False):
    """The run's argv; with standin, its input from the generated stand-ins'
    directory (<build>/<app>/inputs/standin) instead of the tree's inputs."""
    where = os.path.join(build, app.base, "inputs")
    if standin:
        where = os.path.join(where, gen_inputs.STANDIN_DIR)
    args = app.args[inputs].replace(IN, where)
    return [program(build, app, variant)] + shlex.split(args) + ["%s%d" % (app.tflag, threads)]


def missing_inputs(args, app, inputs, standin=False):
    """The first input file of the application's arguments that does not
    exist, or None."""
    argv = command(args.stamp_build, app, inputs, 1, "seq", standin)
    for flag, value in zip(argv, argv[1:]):
        # yada's -i names a prefix (PREFIX.node, PREFIX.ele, PREFIX.poly)
        if flag == "-i" and not (os.path.exists(value) or all(
                os.path.exists(value + ext) for ext in (".node", ".ele", ".poly"))):
            return value
    return None


def _standin_python(name):
    """The interpreter to run gen_inputs.py with: this one, unless the
    stand-in needs Triangle that this one lacks and the project's virtual
    environment ($SCHEDSTM_VENV, default build/venv) has a Python."""
    import importlib.util
    if gen_inputs.STANDINS[name][0] != "yada" or importlib.util.find_spec("triangle"):
        return sys.executable
    venv = os.environ.get("SCHEDSTM_VENV") or os.path.join(REPO, "build", "venv")
    python = os.path.join(venv, "bin", "python")
    return python if os.access(python, os.X_OK) else sys.executable


def standin_blocker(name):
    """Why the stand-in for the input file `name` cannot be made on this
    machine, or None. Only yada's needs more than Python: the triangle
    package, in the interpreter that _standin_python picks to run
    gen_inputs.py."""
    if gen_inputs.STANDINS[name][0] != "yada":
        return None
    r = subprocess.run([_standin_python(name), "-c", "import triangle"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if r.returncode == 0:
        return None
    return ("no stand-in: it needs the triangle package, which neither this Python nor the "
            "project's virtual environment has (scripts/install-deps.sh --stamp installs it)")


def standin(args, app, inputs, missing):
    """(manifest, None) when the application can run on a generated
    stand-in for its missing input MISSING (made now with gen_inputs.py
    if it is not there yet), or (None, why not)."""
    name = os.path.basename(missing)
    if name not in gen_inputs.STANDINS:
        return None, "no stand-in for it"
    if args.no_standins:
        return None, "no stand-in (--no-standins)"
    m = gen_inputs.read_manifest(args.stamp_build, name)
    if not m:
        sys.stderr.write("stamp: %s (%s inputs): the STAMP tree has no %s; generating a stand-in "
                         "into %s (bench/stamp/gen_inputs.py; yada's takes a minute or two)\n" % (
                             app.name, inputs, name,
                             gen_inputs.standin_dir(args.stamp_build, name)))
        r = subprocess.run([_standin_python(name), GEN_INPUTS, "--stamp-build", args.stamp_build,
                            gen_inputs.STANDINS[name][0]], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True)
        m = gen_inputs.read_manifest(args.stamp_build, name)
        if r.returncode != 0 or not m:
            why = (r.stderr.strip().splitlines() or ["status %d" % r.returncode])[-1]
            return None, "no stand-in: %s" % why
    if missing_inputs(args, app, inputs, standin=True):
        return None, "the stand-in's files are incomplete"
    return m, None


def standin_summary(m):
    """The fields of a stand-in's manifest that a record carries."""
    return {k: m.get(k) for k in ("standin_for", "generator", "description", "seed", "sha256",
                                  "triangle_version") if m.get(k) is not None}


def run(argv, env_extra, cwd, timeout, watch=None):
    """Run one program; returns (returncode, stdout, stderr, wall seconds,
    CPU seconds of the process and its threads). watch: a
    map_affinity.Watcher polled while it runs."""
    with tempfile.TemporaryFile("w+") as fo, tempfile.TemporaryFile("w+") as fe:
        started = time.monotonic()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=fo, stderr=fe, cwd=cwd,
                                env=dict(os.environ, **env_extra), start_new_session=True)
        if watch:
            watch.start(proc.pid)
        deadline = started + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                os.killpg(proc.pid, 9)
                pid, status, usage = os.wait4(proc.pid, 0)
                proc.returncode = -9
                wall = time.monotonic() - started
                fo.seek(0)
                fe.seek(0)
                return None, fo.read(), fe.read(), wall, usage.ru_utime + usage.ru_stime
            if watch:
                watch.poll()
            time.sleep(0.001 if watch else 0.005)
        wall = time.monotonic() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        fo.seek(0)
        fe.seek(0)
        return proc.returncode, fo.read(), fe.read(), wall, usage.ru_utime + usage.ru_stime


def run_point(args, app, inputs, threads, variant, cm, rep, seq_out):
    sub = getattr(args, "standins", {}).get((app.name, inputs))
    argv = command(args.stamp_build, app, inputs, threads, variant, standin=sub is not None)
    env = {}
    stats_path = None
    if variant != "seq":
        # both adapters (bench/stamp/stm.c, bench/stamp/tinystm/stm.c) dump
        # their counts there in sstm_stats_dump()'s format
        fd, stats_path = tempfile.mkstemp(prefix="sstm-stamp-stats-")
        os.close(fd)
        env["SSTM_STAMP_STATS"] = stats_path
        if cm not in (None, "default"):
            env["SCHEDSTM_CM"] = cm
        if is_abi(variant):
            # bench/stamp/stm_itm.c dumps schedstm's statistics there on
            # libschedstm-itm; nothing on the other runtimes
            env.update(abi_env(variant, args.itm_libs))
    watch = None
    if variant != "seq" and args.map_readback:
        import map_affinity  # the harness directory
        watch = map_affinity.Watcher()
        env.update(watch.env())
    rec = {"app": app.name, "inputs": inputs, "threads": threads, "variant": variant,
           "cm": cm, "rep": rep, "cmd": " ".join(argv), "env": env,
           "loadavg": os.getloadavg()[0], "input_origin": "standin" if sub else "stamp"}
    if sub:
        rec["standin"] = standin_summary(sub)
    try:
        rc, out, err, wall, cpu = run(argv, env, os.path.dirname(argv[0]), args.timeout_s, watch)
        if watch:
            rec["affinity"] = watch.result()
            env.pop("SCHEDSTM_MAP_LOG")  # a temporary file, gone
        stats = parse_stats(open(stats_path).read()) if stats_path else {}
    finally:
        if stats_path:
            os.unlink(stats_path)
    # The time of a check compiled into the program (ssca2's) is not the
    # application's: both builds would pay it, pulling their ratio to 1.
    own = _CHECK_TIME.search(out)
    if own:
        rec.update(check_cpu_s=float(own.group(1)), check_wall_s=float(own.group(2)))
        cpu, wall = cpu - rec["check_cpu_s"], wall - rec["check_wall_s"]
    rec.update(wall_s=wall, cpu_s=cpu, app_time_s=app_time(out), stdout=out[-4000:],
               stderr=err[-2000:])
    rec.update(stats)
    if rec.get("commits"):
        rec["aborts_per_commit"] = (rec.get("aborts") or 0) / rec["commits"]
    if rc is None:
        rec.update(status="fail", check="fail", error="timed out after %g s" % args.timeout_s)
    elif rc != 0:
        rec.update(status="fail", check="fail",
                   error="exit status %d: %s" % (rc, (err.strip().splitlines() or [""])[-1]))
    elif variant == "seq":
        # the reference: its own verification, or its result against itself
        verdict, detail = app.check(out, out, 1)
        rec.update(status="ok", check=verdict, check_detail="the reference: " + detail)
    else:
        verdict, detail = app.check(out, seq_out, threads)
        rec.update(status="ok", check=verdict, check_detail=detail)
    return rec, out


class _Parser(argparse.ArgumentParser):
    """argparse with one error prefix and no usage dump, as sweep.py's."""

    def error(self, message):
        sys.stderr.write("%s%s (see --help)\n" % (ERROR, message))
        sys.exit(2)


def parse_args(argv):
    # the name the user ran: stamp.py on its own, or sweep.py handing over
    prog = "stamp.py" if os.path.basename(sys.argv[0]) == "stamp.py" else \
        "sweep.py --bench stamp"
    p = _Parser(prog=prog, description=__doc__,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench", choices=("stamp",), default="stamp")
    p.add_argument("--stamp-dir", default=None)
    p.add_argument("--stamp-build", default=os.path.join(REPO, "build", "stamp"))
    p.add_argument("--rebuild", action="store_true")
    p.add_argument("--schedstm-build", default=None,
                   help="the schedstm build directory build.sh links against (default: its "
                        "own default, <repo>/build)")
    p.add_argument("--apps", default=",".join(DEFAULT_APPS))
    p.add_argument("--inputs", default="sim")
    p.add_argument("--threads", default="1,2,8")
    p.add_argument("--cms", default="suicide,adaptive")
    p.add_argument("--tinystm", action="store_true")
    p.add_argument("--tinystm-dir", default=None)
    p.add_argument("--abi", default="")
    p.add_argument("--itm-lib", action="append", default=[], metavar="NAME=DIR")
    p.add_argument("--reps", type=int, default=1)
    p.add_argument("--verify", action="store_true",
                   help="the verification mode: every run's check, reported in verify.json "
                        "(and a table on stdout) besides the timing summary")
    p.add_argument("--report", default=None)
    p.add_argument("--timeout-s", type=float, default=600.0)
    p.add_argument("--out", default=None)
    p.add_argument("--plot", action="store_true")
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--map-readback", action="store_true",
                   help="read each thread's CPU affinity back while it runs and compare it "
                        "with the thread mapping's log (SCHEDSTM_MAP_STRATEGY from the "
                        "environment): the record's \"affinity\" (map_affinity.py)")
    p.add_argument("--no-standins", action="store_true",
                   help="skip an application whose standard input the STAMP tree lacks, "
                        "instead of generating a stand-in for it (bench/stamp/gen_inputs.py)")
    p.add_argument("--skip-without-stamp", action="store_true",
                   help="exit 77 (skipped) with a message when the programs are not built "
                        "and no --stamp-dir is given (for ctest)")
    args = p.parse_args(argv)

    def items(option, text):
        values = [x.strip() for x in text.split(",")]
        if not all(values):
            p.error("--%s: empty item in %r" % (option, text))
        return list(dict.fromkeys(values))
    args.apps = items("apps", args.apps)
    bad = [a for a in args.apps if a not in APPS]
    if bad:
        p.error("unknown application(s) %s (valid: %s)" % (",".join(bad), ",".join(APPS)))
    try:
        args.threads = [int(t) for t in items("threads", args.threads)]
    except ValueError:
        p.error("--threads takes comma-separated integers")
    if min(args.threads) < 1 or args.reps < 1 or args.timeout_s <= 0:
        p.error("--threads, --reps and --timeout-s must be positive")
    args.inputs = items("inputs", args.inputs)
    bad = [i for i in args.inputs if i not in INPUT_SETS]
    if bad:
        p.error("--inputs: unknown input set(s) %s (valid: %s)" % (",".join(bad),
                                                                   ",".join(INPUT_SETS)))
    args.cms = [] if args.cms == "none" else items("cms", args.cms)
    args.tinystm = args.tinystm or args.tinystm_dir is not None
    args.itm_libs = {}
    for spec in args.itm_lib:
        name, sep, directory = spec.partition("=")
        if not sep or not re.fullmatch(r"[a-z0-9_]+", name) or not directory:
            p.error("--itm-lib %r: expected NAME=DIR (NAME: lower-case letters, digits, _)"
                    % spec)
        if name in ("schedstm",) or name in args.itm_libs:
            p.error("--itm-lib %s: that name is taken" % name)
        directory = os.path.abspath(os.path.expanduser(directory))
        if not os.path.isfile(os.path.join(directory, "libitm.so.1")):
            p.error("--itm-lib %s: %s has no libitm.so.1" % (name, directory))
        args.itm_libs[name] = directory
    args.abi = items("abi", args.abi) if args.abi else []
    bad = [v for v in args.abi
           if v not in ABI_OWN and not (v.endswith("-itm") and v[:-4] in args.itm_libs)]
    if bad:
        p.error("--abi: unknown variant(s) %s (valid: %s)" % (
            ",".join(bad), ",".join(list(ABI_OWN) + [n + "-itm" for n in args.itm_libs])))
    if "itm" in args.abi:
        # the itm runs inherit LD_LIBRARY_PATH: a libitm.so.1 there would
        # replace GCC's, and the variant would measure another runtime
        for d in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
            if d and os.path.isfile(os.path.join(d, "libitm.so.1")):
                p.error("--abi itm: LD_LIBRARY_PATH holds %s, which the itm runs would load "
                        "instead of GCC's libitm; unset it (and give that runtime with "
                        "--itm-lib NAME=DIR)" % os.path.join(d, "libitm.so.1"))
    if not args.cms and not args.tinystm and not args.abi:
        p.error("--cms none leaves nothing to run without --tinystm or --abi")
    if args.report is not None:
        args.report = items("report", args.report)
        if args.out is None:
            p.error("--report needs --out (where to write the report)")
    bad = [c for c in args.cms if not re.fullmatch(r"[a-z0-9+_-]+", c)
           or is_abi("schedstm-" + c)]
    if bad:
        p.error("bad policy name(s) %s" % ",".join(bad))
    # A wrong tree is refused here, not only when a build needs it: with
    # the programs already built, it would otherwise pass unnoticed.
    for option, what, files in (
            ("stamp_dir", "a STAMP 0.9.10 tree", ("lib/tm.h", "common/Defines.common.mk")),
            ("tinystm_dir", "a TinySTM tree", ("include/stm.h", "include/mod_mem.h",
                                               "Makefile"))):
        path = getattr(args, option)
        if path is None:
            continue
        path = os.path.expanduser(path)
        setattr(args, option, path)
        lacking = [f for f in files if not os.path.isfile(os.path.join(path, f))]
        if lacking:
            p.error("--%s %s is not %s (no %s)" % (option.replace("_", "-"), path, what,
                                                   ", ".join(lacking)))
    args.stamp_build = os.path.abspath(args.stamp_build)
    return args


def build_plan(args):
    """What a run must build first: (None, None) when every program it
    needs is there (and no --rebuild), (build.sh's command, None) when it
    builds them, or (None, why it cannot)."""
    need = sorted({program(args.stamp_build, APPS[a], v)
                   for a in args.apps for v in needed_variants(args) + args.abi})
    if not args.rebuild and all(os.access(x, os.X_OK) for x in need):
        return None, None
    if not args.stamp_dir:
        missing = [x for x in need if not os.access(x, os.X_OK)]
        return None, ("no STAMP programs in %s (missing %s); give --stamp-dir PATH (a STAMP "
                      "0.9.10 tree, docs/stamp.md) to build them" % (args.stamp_build, missing[0]))
    bases = " ".join(sorted({APPS[a].base for a in args.apps}))
    cmd = [BUILD_SH, "--apps", bases]
    if args.schedstm_build:
        cmd += ["--schedstm-build", args.schedstm_build]
    if args.tinystm:
        if not args.tinystm_dir:
            return None, ("the TinySTM programs are missing (%s); give --tinystm-dir PATH (a "
                          "TinySTM tree) to build them" % [x for x in need
                                                           if not os.access(x, os.X_OK)][0])
        cmd += ["--tinystm-dir", args.tinystm_dir]
    if args.tinystm or args.abi:
        cmd += ["--variants", " ".join(needed_variants(args))]
    return cmd + [args.stamp_dir, args.stamp_build], None


def ensure_built(args):
    """Build with bench/stamp/build.sh when a program is missing (or with
    --rebuild). Returns an error message, or None."""
    cmd, problem = build_plan(args)
    if problem or not cmd:
        return problem
    sys.stderr.write("stamp: building %s into %s\n" % (cmd[2], args.stamp_build))
    r = subprocess.run(cmd)
    return None if r.returncode == 0 else "bench/stamp/build.sh failed (status %d)" % r.returncode


def needed_variants(args):
    """The builds (build.sh's variants) the runs need."""
    return ["seq"] + (["stm"] if args.cms else []) + (["tinystm"] if args.tinystm else []) + (
        ["itm"] if args.abi else [])


def median(values):
    v = sorted(x for x in values if x is not None)
    if not v:
        return None
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def label(r, records):
    """The application's name, with its input set when the records hold
    more than one."""
    if len({x["inputs"] for x in records}) > 1:
        return "%s/%s" % (r["app"], r["inputs"])
    return r["app"]


def add_relative(records):
    """rel_wall / rel_cpu / rel_app: each run's time over the sequential
    run's of the same application, input set and repetition (the runs of a
    repetition are back to back, so the ratio is paired), or over the
    median of its sequential runs when that one failed. Records merged from
    several runs (--report) are paired within their own run (batch)."""
    for app, inputs in {(r["app"], r["inputs"]) for r in records}:
        mine = [r for r in records if (r["app"], r["inputs"]) == (app, inputs)]
        seq = [r for r in mine if r["variant"] == "seq" and r["status"] == "ok"]
        med = {"wall_s": median(r["wall_s"] for r in seq),
               "cpu_s": median(r["cpu_s"] for r in seq),
               "app_time_s": median(r.get("app_time_s") for r in seq)}
        by_rep = {(r.get("batch"), r["rep"]): r for r in seq}
        for r in mine:
            if r["status"] != "ok":
                continue
            ref = by_rep.get((r.get("batch"), r["rep"]))
            for field, rel in (("wall_s", "rel_wall"), ("cpu_s", "rel_cpu"),
                               ("app_time_s", "rel_app")):
                base = ref.get(field) if ref else med[field]
                mine_v = r.get(field)
                r[rel] = mine_v / base if base and mine_v is not None else None


def spread(values):
    """"min-max" of the values, or "-"."""
    v = [x for x in values if x is not None]
    return "%.2f-%.2f" % (min(v), max(v)) if v else "-"


def _fmt(x, spec="%.2f"):
    return "-" if x is None else spec % x


def standins_used(records):
    """The generated stand-ins the records ran on: one entry per
    application and input set (app, inputs, and the stand-in's manifest
    fields), sorted."""
    seen = {}
    for r in records:
        if r.get("standin"):
            seen.setdefault((r["app"], r["inputs"]), dict(app=r["app"], inputs=r["inputs"],
                                                          **r["standin"]))
    return [seen[k] for k in sorted(seen)]


def standin_lines(used):
    """Markdown lines that name the stand-ins USED (standins_used()); none
    when the runs used STAMP's own files only."""
    if not used:
        return []
    out = ["**Generated stand-in inputs, not STAMP's files** (bench/stamp/gen_inputs.py; the "
           "STAMP tree lacks them):", ""]
    out += ["- %s (%s inputs): %s: %s" % (u["app"], u["inputs"], u["standin_for"],
                                         u["description"]) for u in used]
    return out + [""]


def summary_markdown(records, title):
    lines = ["# %s" % title, ""] + standin_lines(standins_used(records)) + [
             "Median of the repetitions. wall, CPU: seconds (process start to exit; user + "
             "system CPU of the whole process). x seq: that time over the sequential build's "
             "(1 thread); app time: the region the application times itself. aborts/commit "
             "(all repetitions together) and the most frequent abort reasons (summed) from the "
             "library's statistics. check: passed runs / runs. x seq is paired: each run "
             "over the sequential run of its own repetition; range: the smallest and largest "
             "of those CPU ratios.", "",
             "| app | threads | variant | wall | x seq (wall) | CPU | x seq (CPU) | app time | "
             "x seq (app time) | aborts/commit | abort reasons | check | x seq (CPU) range |",
             "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- "
             "| --- |"]
    keys = []
    for r in records:
        k = (label(r, records), r["threads"], r["variant"])
        if k not in keys:
            keys.append(k)
    keys.sort(key=lambda k: (k[0], k[2] != "seq", k[1], k[2]))
    for k in keys:
        rs = [r for r in records if (label(r, records), r["threads"], r["variant"]) == k]
        ok = [r for r in rs if r["status"] == "ok"]
        reasons = {}
        for r in ok:
            for name, n in (r.get("aborts_by_reason") or {}).items():
                reasons[name] = reasons.get(name, 0) + n
        top = ", ".join("%s %d" % (n, c) for n, c in
                        sorted(reasons.items(), key=lambda x: -x[1])[:3]) or "-"
        passed = sum(1 for r in rs if r.get("check") == "pass")
        na = sum(1 for r in rs if r.get("check") == "n/a")
        check = "%d/%d" % (passed, len(rs)) + (" (%d n/a)" % na if na else "")
        commits = sum(r.get("commits") or 0 for r in ok)
        aborts = sum(r.get("aborts") or 0 for r in ok)
        lines.append("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            k[0], k[1], k[2], _fmt(median(r["wall_s"] for r in ok), "%.3f"),
            _fmt(median(r.get("rel_wall") for r in ok)),
            _fmt(median(r["cpu_s"] for r in ok), "%.3f"),
            _fmt(median(r.get("rel_cpu") for r in ok)),
            _fmt(median(r.get("app_time_s") for r in ok), "%.3f"),
            _fmt(median(r.get("rel_app") for r in ok)),
            _fmt(aborts / commits if commits else None, "%.3f"), top, check,
            spread(r.get("rel_cpu") for r in ok)))
    failed = [r for r in records if r["status"] != "ok" or r.get("check") == "fail"]
    if failed:
        lines += ["", "## Failures", ""]
        for r in failed:
            lines.append("- %s %s t=%d rep %d: %s" % (
                label(r, records), r["variant"], r["threads"], r["rep"],
                r.get("error") or r.get("check_detail")))
    details = sorted({(label(r, records), r.get("check_detail")) for r in records
                      if r.get("check_detail") and r["variant"] != "seq"})
    if details:
        lines += ["", "## Check details (distinct)", ""]
        lines += ["- %s: %s" % d for d in details]
    return "\n".join(lines + pivot_markdown(records)) + "\n"


def pivot_markdown(records):
    """The summary's numbers as tables with one row per application and
    thread count and one column per variant: the median CPU time over the
    sequential build's (with its range), aborts per commit, the most
    frequent abort reason with its share, and the checks passed; then the
    host's load average over the runs."""
    vs = []
    for r in records:
        if r["variant"] != "seq" and r["variant"] not in vs:
            vs.append(r["variant"])
    rows = sorted({(label(r, records), r["threads"]) for r in records if r["variant"] != "seq"})
    if not vs or not rows:
        return []

    def cell(app, t, v, what):
        rs = [r for r in records if (label(r, records), r["threads"], r["variant"]) == (app, t, v)]
        ok = [r for r in rs if r["status"] == "ok"]
        if what == "checks":
            return "%d/%d" % (sum(1 for r in rs if r.get("check") == "pass"), len(rs)) \
                if rs else "-"
        if not ok:
            return "-" if not rs else "failed"
        if what == "cpu":
            return "%s (%s)" % (_fmt(median(r.get("rel_cpu") for r in ok)),
                                spread(r.get("rel_cpu") for r in ok))
        commits = sum(r.get("commits") or 0 for r in ok)
        aborts = sum(r.get("aborts") or 0 for r in ok)
        if what == "aborts":
            return _fmt(aborts / commits if commits else None, "%.3f")
        reasons = {}
        for r in ok:
            for name, n in (r.get("aborts_by_reason") or {}).items():
                reasons[name] = reasons.get(name, 0) + n
        if not reasons or not sum(reasons.values()):
            return "-"
        name, n = max(reasons.items(), key=lambda x: x[1])
        return "%s %.0f %%" % (name, 100.0 * n / sum(reasons.values()))

    out = []
    for what, title in (("cpu", "CPU time x sequential (median, range)"),
                        ("aborts", "Aborts per commit"),
                        ("reason", "Most frequent abort reason"),
                        ("checks", "Checks passed")):
        out += ["", "## %s" % title, "",
                "| app | threads | " + " | ".join(vs) + " |",
                "| --- | ---: |" + " ---: |" * len(vs)]
        for app, t in rows:
            out.append("| %s | %d | %s |" % (app, t, " | ".join(cell(app, t, v, what)
                                                              for v in vs)))
    loads = [r["loadavg"] for r in records if r.get("loadavg") is not None]
    if loads:
        out += ["", "Load average (1 min) at the start of the runs: median %.1f, range %.1f-%.1f"
                % (median(loads), min(loads), max(loads))]
    return out


def plot(records, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    apps = sorted({label(r, records) for r in records})
    stm = sorted({r["variant"] for r in records if r["variant"] != "seq"})
    cols = min(4, len(apps))
    rows = (len(apps) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3.2 * rows), squeeze=False)
    for ax, app in zip([a for row in axes for a in row], apps):
        fields = (("rel_wall", "-o"), ("rel_cpu", "--x")) if len(stm) <= 1 else \
            (("rel_cpu", "-o"),)
        for v in stm:
            for field, style in fields:
                pts = sorted({r["threads"] for r in records if label(r, records) == app
                              and r["variant"] == v})
                ys = [median(r.get(field) for r in records if label(r, records) == app
                             and r["variant"] == v and r["threads"] == t
                             and r["status"] == "ok") for t in pts]
                ax.plot(pts, ys, style, label="%s %s" % (v, "wall" if field == "rel_wall"
                                                          else "CPU"))
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_title(app)
        ax.set_xlabel("threads")
        ax.set_ylabel("time / sequential" if len(stm) <= 1 else "CPU time / sequential")
    for ax in [a for row in axes for a in row][len(apps):]:
        ax.axis("off")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def verify_report(records, skipped, args):
    """The verification mode's report (verify.json): one entry per
    application, input set, thread count and policy with its check's
    verdict and detail, and the totals. ok is true when every run ran and
    passed (a check with nothing to compare with, "n/a", counts as neither
    a pass nor a failure)."""
    results = []
    for r in records:
        if r["variant"] == "seq":
            continue
        results.append({k: r.get(k) for k in (
            "app", "inputs", "input_origin", "threads", "cm", "variant", "rep", "status", "check",
            "check_detail", "error", "commits", "aborts", "aborts_by_reason", "wall_s", "cpu_s",
            "cmd")})
    reference = [{k: r.get(k) for k in ("app", "inputs", "input_origin", "rep", "status", "check",
                                        "check_detail", "error", "cmd")}
                 for r in records if r["variant"] == "seq"]
    count = {v: sum(1 for r in results if r["check"] == v) for v in ("pass", "fail", "n/a")}
    failed_refs = sum(1 for r in reference if r["status"] != "ok" or r["check"] == "fail")
    first = records[0] if records else {}
    return {
        "report": "schedstm STAMP verification",
        "date": provenance.utc_now(),
        "git_commit": first.get("git_commit"),
        "host": {k: first.get(k) for k in ("cpu_model", "cpus", "kernel", "git_dirty")
                 if k in first},
        "apps": sorted({r["app"] for r in results}),
        "inputs": sorted({r["inputs"] for r in results}),
        "threads": sorted({r["threads"] for r in results}),
        "variants": list(dict.fromkeys(r["variant"] for r in results)),
        "reps": max([r["rep"] for r in results] or [0]),
        "runs": len(results), "passed": count["pass"], "failed": count["fail"],
        "not_applicable": count["n/a"], "failed_references": failed_refs,
        "ok": count["fail"] == 0 and failed_refs == 0 and count["pass"] > 0,
        "skipped": skipped, "standins": standins_used(records), "results": results,
        "references": reference,
    }


def verify_table(report):
    """The verification matrix as markdown: one row per application and
    input set, one column per thread count and policy; each cell the passed
    runs over the runs."""
    cols = [(t, v) for t in report["threads"] for v in report["variants"]]
    rows = sorted({(r["app"], r["inputs"]) for r in report["results"]})
    lines = ["# STAMP verification: %d runs, %d passed, %d failed, %d n/a%s" % (
        report["runs"], report["passed"], report["failed"], report["not_applicable"],
        "" if report["ok"] else " (NOT OK)"), "",
    ] + standin_lines(report.get("standins", [])) + [
        "| app | inputs | " + " | ".join(
            "%d %s" % (t, v if is_abi(v) else v.replace("schedstm-", "")) for t, v in cols)
        + " |",
        "| --- | --- |" + " ---: |" * len(cols)]
    for app, inputs in rows:
        cells = []
        for t, v in cols:
            rs = [r for r in report["results"] if (r["app"], r["inputs"], r["threads"],
                                                   r["variant"]) == (app, inputs, t, v)]
            passed = sum(1 for r in rs if r["check"] == "pass")
            cells.append("%d/%d" % (passed, len(rs)) if rs else "-")
        lines.append("| %s | %s | %s |" % (app, inputs, " | ".join(cells)))
    for s in report["skipped"]:
        lines.append("")
        lines.append("skipped: %s (%s inputs): %s" % (s["app"], s["inputs"], s["reason"]))
    bad = [r for r in report["results"] if r["check"] != "pass"]
    if bad:
        lines += ["", "## Not passed", ""]
        lines += ["- %s %s t=%d %s rep %d: %s: %s" % (
            r["app"], r["inputs"], r["threads"], r["variant"], r["rep"], r["check"],
            r.get("error") or r.get("check_detail")) for r in bad]
    return "\n".join(lines) + "\n"


def selected(argv):
    """Whether a sweep.py command line asks for --bench stamp."""
    return "--bench=stamp" in argv or any(
        a == "--bench" and b == "stamp" for a, b in zip(argv, argv[1:]))


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.report:
        return report_only(args)
    if args.stamp_dir is None and args.skip_without_stamp and not args.dry_run and not all(
            os.access(program(args.stamp_build, APPS[a], v), os.X_OK)
            for a in args.apps for v in needed_variants(args)):
        sys.stderr.write("stamp: skipped: no STAMP tree given (--stamp-dir, or the "
                         "SCHEDSTM_STAMP_DIR CMake variable for ctest) and no programs built in "
                         "%s\n" % args.stamp_build)
        return 77
    if args.dry_run:
        # Nothing is built: say what a run would build first, or why it
        # would stop before running anything.
        cmd, problem = build_plan(args)
        if cmd:
            sys.stderr.write("stamp: note: a run would first build the programs: %s\n"
                             % " ".join(shlex.quote(c) for c in cmd))
        if problem:
            sys.stderr.write("stamp: warning: a run would stop here: %s\n" % problem)
        problem = None
    else:
        problem = ensure_built(args)
    if problem:
        sys.stderr.write(ERROR + problem + "\n")
        return 2
    points, skipped = [(i, a) for i in args.inputs for a in args.apps], []
    args.standins = {}
    if args.dry_run:
        # Nothing is made: the commands show the stand-in's path where the
        # run would use one (made first when it is not there yet), and an
        # application whose stand-in cannot be made here is left out, as a
        # run would skip it.
        for inputs, name in list(points):
            missing = missing_inputs(args, APPS[name], inputs)
            base = os.path.basename(missing or "")
            if missing and base in gen_inputs.STANDINS and not args.no_standins:
                made = gen_inputs.read_manifest(args.stamp_build, base)
                why = None if made else standin_blocker(base)
                if why:
                    sys.stderr.write("stamp: warning: %s (%s inputs) would be skipped: no input "
                                     "%s (%s)\n" % (name, inputs, missing, why))
                    points.remove((inputs, name))
                    continue
                args.standins[(name, inputs)] = True
                sys.stderr.write("stamp: note: %s (%s inputs) would run on a generated stand-in "
                                 "for %s%s\n" % (name, inputs, base,
                                                  "" if made else " (made first)"))
        if not points:
            sys.stderr.write(ERROR + "no application left to run\n")
            return 2
    else:
        for inputs, name in list(points):
            missing = missing_inputs(args, APPS[name], inputs)
            if not missing:
                continue
            m, why = standin(args, APPS[name], inputs, missing)
            if m:
                args.standins[(name, inputs)] = m
                sys.stderr.write("stamp: note: %s (%s inputs) runs on a generated stand-in for "
                                 "%s, not STAMP's file: %s\n" % (
                                     name, inputs, os.path.basename(missing),
                                     m.get("description")))
                continue
            sys.stderr.write("stamp: warning: %s (%s inputs) skipped: no input %s (a STAMP "
                             "tree may lack the largest inputs; %s)\n" % (
                                 name, inputs, missing, why))
            points.remove((inputs, name))
            skipped.append({"app": name, "inputs": inputs,
                            "reason": "no input %s (%s)" % (missing, why)})
        if not points:
            sys.stderr.write(ERROR + "no application left to run\n")
            return 2
    # Within a repetition the variants of an application run back to back
    # (the sequential reference first, whose output the others' checks
    # compare with), so that a change of the host's load between
    # repetitions affects the reference and its runs alike.
    runs = []
    for rep in range(1, args.reps + 1):
        for inputs, name in points:
            runs.append((rep, APPS[name], inputs, 1, "seq", None))
            for t in args.threads:
                for v, cm in variants(args.cms, args.tinystm, args.abi)[1:]:
                    runs.append((rep, APPS[name], inputs, t, v, cm))
    if args.dry_run:
        for rep, app, inputs, t, v, cm in runs:
            env = "" if cm in (None, "default") else "SCHEDSTM_CM=%s " % cm
            if is_abi(v):
                env = "".join("%s=%s " % kv for kv in sorted(abi_env(v, args.itm_libs).items()))
            print(env + " ".join(command(args.stamp_build, app, inputs, t, v,
                                         standin=(app.name, inputs) in args.standins)))
        return 0
    out_dir = args.out or os.path.join(REPO, "results", "stamp-" +
                                       datetime.datetime.now().strftime("%Y%m%d-%H%M%S"))
    os.makedirs(out_dir, exist_ok=True)
    records, seq_out = [], {}
    started = time.monotonic()
    host = provenance.host_provenance()
    with open(os.path.join(out_dir, "results.jsonl"), "w") as jsonl:
        for i, (rep, app, inputs, t, v, cm) in enumerate(runs, 1):
            rec, out = run_point(args, app, inputs, t, v, cm, rep,
                                 seq_out.get((app.name, inputs, rep)))
            if v == "seq" and rec["status"] == "ok":
                seq_out[(app.name, inputs, rep)] = out
            rec.update(host, date=provenance.utc_now(), batch=out_dir,
                       compiler=provenance.compiler_of(program(args.stamp_build, app, v)))
            jsonl.write(json.dumps(rec, sort_keys=True) + "\n")
            jsonl.flush()
            records.append(rec)
            sys.stderr.write("[%3d/%d] rep %d %-13s %-8s t=%-3d %-20s %s wall %.3fs cpu %.3fs "
                             "%s%s%s (%.0fs elapsed)\n" % (
                                 i, len(runs), rep, app.name, inputs, t, v, rec["status"],
                                 rec["wall_s"], rec["cpu_s"], rec.get("check"),
                                 " [stand-in input]" if rec.get("standin") else "",
                                 ": %s" % rec["error"] if rec.get("error") else "",
                                 time.monotonic() - started))
    return write_reports(args, records, skipped, out_dir)


def report_only(args):
    """--report: the reports of earlier runs, their records merged. Each
    record keeps its own run's batch (its output directory), so that its
    ratio is paired with the sequential run of its own run and
    repetition."""
    records, skipped = [], []
    for d in args.report:
        path = os.path.join(d, "results.jsonl")
        try:
            with open(path) as f:
                for n, line in enumerate(f, 1):
                    if not line.strip():
                        continue
                    try:
                        r = json.loads(line)
                    except ValueError as e:
                        sys.stderr.write(ERROR + "%s:%d: not a JSON record (%s)\n" % (path, n, e))
                        return 2
                    r.setdefault("batch", os.path.abspath(d))
                    records.append(r)
        except OSError as e:
            sys.stderr.write(ERROR + "cannot read %s: %s\n" % (path, e.strerror))
            return 2
        vpath = os.path.join(d, "verify.json")
        if os.path.exists(vpath):
            with open(vpath) as f:
                skipped += json.load(f).get("skipped", [])
    if not records:
        sys.stderr.write(ERROR + "no records in %s\n" % ", ".join(args.report))
        return 2
    os.makedirs(args.out, exist_ok=True)
    return write_reports(args, records, skipped, args.out)


def write_reports(args, records, skipped, out_dir):
    """results.csv, summary.md, with --verify verify.json and verify.md,
    with --plot stamp.png; the summary (and the verification table) on
    stdout. Returns the exit status: 1 if a run failed or failed its
    check."""
    add_relative(records)
    with open(os.path.join(out_dir, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in records:
            w.writerow(r)
    inputs = sorted({r["inputs"] for r in records})
    text = summary_markdown(records, "STAMP, %s inputs (%s)" % (
        ",".join(inputs), datetime.datetime.now().strftime("%Y-%m-%d %H:%M")))
    with open(os.path.join(out_dir, "summary.md"), "w") as f:
        f.write(text)
    if args.verify:
        report = verify_report(records, skipped, args)
        with open(os.path.join(out_dir, "verify.json"), "w") as f:
            json.dump(report, f, indent=1, sort_keys=True)
            f.write("\n")
        text = verify_table(report)
        with open(os.path.join(out_dir, "verify.md"), "w") as f:
            f.write(text)
    print(text, end="")
    if args.plot:
        try:
            sys.stderr.write("stamp: wrote %s\n" % plot(records, os.path.join(out_dir,
                                                                              "stamp.png")))
        except ImportError as e:
            sys.stderr.write("stamp: warning: no plot: %s (%s)\n" % (PLOT_HINT, e))
        except (ValueError, OSError) as e:
            sys.stderr.write("stamp: warning: no plot: %s\n" % e)
    bad = [r for r in records if r["status"] != "ok" or r.get("check") == "fail"]
    if bad:
        sys.stderr.write("stamp: %d of %d runs failed or failed their check\n"
                         % (len(bad), len(records)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
