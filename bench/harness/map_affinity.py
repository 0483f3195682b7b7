#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Read the CPU affinity of a running program's threads back from the
kernel and compare it with what schedstm's thread mapping decided.

The library logs every affinity change it makes (SCHEDSTM_MAP_LOG, the
format below) with the time bracket of the system call; this module polls
/proc/PID/task/TID/status (Cpus_allowed_list) while the program runs, each
read with its own time bracket (CLOCK_MONOTONIC, the log's clock), and
checks every observation of a thread the library follows against the
decisions around it:

  - a decision whose call ended before the read began must be seen, unless
    a later one overlaps the read (then either is right);
  - an observation before the thread's first decision (its registration) is
    not checked: until then its affinity is whatever it inherited.

Used by stamp.py --map-readback (one record per STAMP run gets an
"affinity" entry) and by mapeval.py onoff; on its own:

  map_affinity.py run [--interval-ms 2] [--json] -- PROGRAM ARGS...

runs PROGRAM with SCHEDSTM_MAP_LOG set (the strategy comes from the
environment, SCHEDSTM_MAP_STRATEGY), prints the summary and exits 1 when an
observation contradicts the log, 2 on a usage error.

Log format (the library writes it, docs/design/mapping.md):

  schedstm-map-log 1
  pid PID
  allowed CPU-LIST          the process's CPUs at sstm_init
  strategy NAME
  pin T0 T1 TID CPUS WHY    CPUS a CPU or a list; WHY register, map,
                            unpin or shutdown; T0 <= T1 in ns
  refused T0 T1 TID CPUS WHY ERR   a change the kernel refused (EINVAL,
                            EPERM, or a number): the affinity did not change
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def parse_cpus(text):
    """A kernel CPU list ("0-3,8") as a frozenset of ints."""
    out = set()
    for part in text.strip().split(","):
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-", 1)
            out.update(range(int(a), int(b) + 1))
        else:
            out.add(int(part))
    return frozenset(out)


def fmt_cpus(cpus):
    return ",".join(str(c) for c in sorted(cpus)) if cpus else "-"


def read_log(path):
    """{tid: [(t0, t1, cpus, why), ...]} in the log's order, and the header."""
    decisions, header = {}, {}
    with open(path, encoding="ascii", errors="replace") as f:
        first = f.readline().strip()
        if first != "schedstm-map-log 1":
            raise ValueError("%s: not a schedstm-map-log 1 file (%r)" % (path, first))
        for n, line in enumerate(f, 2):
            w = line.split()
            if not w:
                continue
            if w[0] == "pin" and len(w) == 6:
                t0, t1, tid = int(w[1]), int(w[2]), int(w[3])
                decisions.setdefault(tid, []).append((t0, t1, parse_cpus(w[4]), w[5]))
            elif w[0] == "refused" and len(w) == 7:
                continue  # nothing changed
            elif w[0] in ("pid", "allowed", "strategy") and len(w) == 2:
                header[w[0]] = w[1]
            else:
                raise ValueError("%s:%d: unexpected line %r" % (path, n, line))
    return decisions, header


class Watcher:
    """Polls one process's threads' affinity; call start(pid), poll() in the
    wait loop (at most every interval), then result()."""

    def __init__(self, interval_ms=2.0, log_dir=None):
        fd, self.log_path = tempfile.mkstemp(prefix="sstm-map-log-", dir=log_dir)
        os.close(fd)
        self.interval_ns = int(interval_ms * 1e6)
        self.pid = None
        self.next_ns = 0
        self.obs = []  # (tid, r0, r1, cpus)
        self.polls = 0

    def env(self):
        return {"SCHEDSTM_MAP_LOG": self.log_path}

    def start(self, pid):
        self.pid = pid

    def poll(self, force=False):
        now = time.monotonic_ns()
        if self.pid is None or (not force and now < self.next_ns):
            return
        self.next_ns = now + self.interval_ns
        self.polls += 1
        base = "/proc/%d/task" % self.pid
        try:
            tids = os.listdir(base)
        except OSError:
            return
        for t in tids:
            r0 = time.monotonic_ns()
            try:
                with open("%s/%s/status" % (base, t), "rb") as f:
                    text = f.read().decode("ascii", "replace")
            except OSError:
                continue  # the thread ended
            r1 = time.monotonic_ns()
            for line in text.splitlines():
                if line.startswith("Cpus_allowed_list:"):
                    self.obs.append((int(t), r0, r1, parse_cpus(line.split(":", 1)[1])))
                    break

    def result(self, keep_log=False):
        try:
            return check(self.log_path, self.obs, self.polls)
        finally:
            if not keep_log:
                os.unlink(self.log_path)


def check(log_path, observations, polls=None):
    """The summary of observations against the log (a dict)."""
    try:
        if os.path.getsize(log_path) == 0:
            # sstm_init never opened it: the strategy none (or no sstm_init)
            return {"strategy": "none", "observations": len(observations), "polls": polls,
                    "checked": 0, "mismatches": 0, "note": "no log: thread mapping off"}
        decisions, header = read_log(log_path)
    except (OSError, ValueError) as e:
        return {"error": str(e), "observations": len(observations), "mismatches": None}
    res = {"strategy": header.get("strategy"), "allowed": header.get("allowed"),
           "polls": polls, "observations": len(observations), "checked": 0,
           "before_registration": 0, "unfollowed": 0, "mismatches": 0, "examples": [],
           "threads_followed": len(decisions), "threads_checked": 0, "pins": 0,
           "final": {}}
    res["pins"] = sum(1 for ds in decisions.values() for d in ds if d[3] in ("map", "register")
                      and len(d[2]) == 1)
    checked_tids = set()
    last_seen = {}
    for tid, r0, r1, cpus in observations:
        ds = decisions.get(tid)
        if not ds:
            res["unfollowed"] += 1
            continue
        before = [d for d in ds if d[1] < r0]
        overlap = [d for d in ds if d[0] <= r1 and d[1] >= r0]
        if not before and not overlap:
            res["before_registration"] += 1
            continue
        ok = {d[2] for d in overlap}
        if before:
            ok.add(before[-1][2])
        res["checked"] += 1
        checked_tids.add(tid)
        last_seen[tid] = cpus
        if cpus not in ok:
            res["mismatches"] += 1
            if len(res["examples"]) < 5:
                res["examples"].append({"tid": tid, "seen": fmt_cpus(cpus),
                                        "decided": sorted(fmt_cpus(c) for c in ok),
                                        "read_ns": [r0, r1]})
    res["threads_checked"] = len(checked_tids)
    # Each thread's last decision and the last affinity seen (the thread
    # may have ended, or been moved, after that read).
    for tid, ds in sorted(decisions.items()):
        res["final"][str(tid)] = {"decided": fmt_cpus(ds[-1][2]), "why": ds[-1][3],
                                  "seen": fmt_cpus(last_seen[tid]) if tid in last_seen else None}
    return res


def run_program(argv, interval_ms, env_extra=None, timeout=None):
    """Run argv with the watcher; (returncode, summary)."""
    w = Watcher(interval_ms)
    env = dict(os.environ, **(env_extra or {}))
    env.update(w.env())
    proc = subprocess.Popen(argv, env=env)
    w.start(proc.pid)
    deadline = time.monotonic() + timeout if timeout else None
    while proc.poll() is None:
        w.poll()
        if deadline and time.monotonic() > deadline:
            proc.kill()
        time.sleep(interval_ms / 4000.0)
    return proc.returncode, w.result()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--interval-ms", type=float, default=2.0)
    r.add_argument("--json", action="store_true")
    r.add_argument("program", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    prog = args.program[1:] if args.program[:1] == ["--"] else args.program
    if not prog:
        p.error("run: no program given")
    rc, res = run_program(prog, args.interval_ms)
    if args.json:
        print(json.dumps(res, sort_keys=True))
    else:
        print("map_affinity: %s, program exit %s: %d observations, %d checked on %d of %d "
              "followed threads, %d mismatches, %d before registration, %d of unfollowed "
              "threads" % (res.get("strategy"), rc, res["observations"], res.get("checked", 0),
                           res.get("threads_checked", 0), res.get("threads_followed", 0),
                           res["mismatches"] or 0, res.get("before_registration", 0),
                           res.get("unfollowed", 0)))
        for e in res.get("examples", []):
            print("  mismatch: %s" % json.dumps(e))
        if res.get("error"):
            print("  error: %s" % res["error"])
    return 1 if res.get("mismatches") or res.get("error") else 0


if __name__ == "__main__":
    sys.exit(main())
