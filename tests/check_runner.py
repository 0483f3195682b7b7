#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The test runner's command line (tests/common/runner.c), on one test
program: --help prints the usage on stdout with status 0, --list the cases,
an unknown case is named with status 2, and SSTM_TEST_SEED is read
strictly: a mistyped seed (letters, a sign, trailing text) stops the run
with its name instead of running the case with seed 0, which the printed
reproduce line would then not reproduce.

usage: check_runner.py TEST_PROGRAM CASE
"""
import os
import subprocess
import sys


def run(argv, **env):
    full = dict(os.environ)
    full.pop("SSTM_TEST_SEED", None)
    full.update(env)
    return subprocess.run(argv, capture_output=True, text=True, env=full, timeout=60)


def fail(msg):
    print("check_runner: FAILED: " + msg)
    sys.exit(1)


def main(argv):
    if len(argv) != 3:
        print("usage: check_runner.py TEST_PROGRAM CASE", file=sys.stderr)
        return 2
    prog, case = argv[1], argv[2]
    for opt in ("--help", "-h"):
        p = run([prog, opt])
        if p.returncode != 0 or "usage:" not in p.stdout or "SSTM_TEST_SEED" not in p.stdout:
            fail("%s: exit %d, %r, %r" % (opt, p.returncode, p.stdout, p.stderr))
    p = run([prog, "--list"])
    if p.returncode != 0 or case not in p.stdout.split():
        fail("--list: exit %d, %r" % (p.returncode, p.stdout))
    p = run([prog, "no_such_case"])
    if p.returncode != 2 or "unknown test \"no_such_case\"" not in p.stderr:
        fail("unknown case: exit %d, %r" % (p.returncode, p.stderr))
    for seed in ("12345", "0x3039"):
        p = run([prog, case], SSTM_TEST_SEED=seed)
        if p.returncode != 0 or "PASS " + case not in p.stdout:
            fail("SSTM_TEST_SEED=%s: exit %d, %r" % (seed, p.returncode, p.stdout + p.stderr))
    for seed in ("abc", "-1", "12x", " 7", "99999999999999999999999"):
        p = run([prog, case], SSTM_TEST_SEED=seed)
        if p.returncode == 0 or "bad value of SSTM_TEST_SEED" not in p.stderr:
            fail("SSTM_TEST_SEED=%r: exit %d, %r" % (seed, p.returncode, p.stdout + p.stderr))
    print("check_runner: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
