#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Runs the harness's unit tests for ctest (unit.harness.python.<k>).

    run.py [--shard K/N]

With --shard K/N, runs the K-th of N shares (K in 1..N) of the test cases:
the cases of every module, sorted by their id, dealt out in turn, so that
the N ctest entries together run each case exactly once and each stays
well inside its time limit on a loaded machine (the plot and set-up script
cases, the slow ones, end up spread over the shares). Without it, runs
them all.

Exit status: 0 when every test ran and passed; 1 on a failure or error;
77 (ctest's SKIP_RETURN_CODE) when they passed but some were skipped for a
missing tool (matplotlib, clang-format 14, ...), so that the entry shows
as skipped, not as a pass that did not check everything.

matplotlib is installed into the project's virtual environment
($SCHEDSTM_VENV, default build/venv: scripts/install-deps.sh --demo), not
into the system's Python: when the interpreter that runs this lacks it and
that environment has it, the tests run again with the environment's.
"""
import importlib.util
import os
import sys
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                     os.pardir, os.pardir))


def reexec_in_venv():
    """Run this script with the virtual environment's interpreter when it
    has matplotlib and the current one does not (once: no loop)."""
    if importlib.util.find_spec("matplotlib") is not None or \
            os.environ.get("SCHEDSTM_HARNESS_IN_VENV"):
        return
    venv = os.environ.get("SCHEDSTM_VENV") or os.path.join(ROOT, "build", "venv")
    python = os.path.join(venv, "bin", "python")
    if not os.access(python, os.X_OK):
        return
    sys.stdout.flush()
    os.environ["SCHEDSTM_HARNESS_IN_VENV"] = "1"
    os.execv(python, [python, os.path.abspath(__file__)] + sys.argv[1:])


def flatten(suite):
    """The test cases of a (nested) suite, in order."""
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from flatten(t)
        else:
            yield t


def fail(msg, usage):
    print("run.py: %s\n%s" % (msg, usage), file=sys.stderr)
    sys.exit(2)


def parse_shard(argv):
    """(k, n) from ["--shard", "K/N"], (1, 1) without it; exits with
    status 2 and a message on anything else."""
    if not argv:
        return 1, 1
    usage = "usage: run.py [--shard K/N]   (1 <= K <= N)"
    if len(argv) != 2 or argv[0] != "--shard":
        fail("unexpected arguments %r" % (argv,), usage)
    try:
        k, n = (int(x) for x in argv[1].split("/"))
    except ValueError:
        fail("--shard %r is not K/N" % argv[1], usage)
    if not 1 <= k <= n:
        fail("--shard %s: K must be in 1..N" % argv[1], usage)
    return k, n


def main():
    k, n = parse_shard(sys.argv[1:])
    here = os.path.dirname(os.path.abspath(__file__))
    found = unittest.defaultTestLoader.discover(start_dir=here, top_level_dir=here)
    cases = sorted(flatten(found), key=lambda t: t.id())
    # A module that fails to import shows up as a failing case of its own
    # (unittest.loader._FailedTest), dealt out like the others.
    mine = cases[k - 1::n]
    print("shard %d/%d: %d of the %d cases" % (k, n, len(mine), len(cases)))
    suite = unittest.TestSuite(mine)
    result = unittest.TextTestRunner(verbosity=1).run(suite)
    if not result.wasSuccessful():
        return 1
    if result.skipped:
        for test, why in result.skipped:
            print("skipped: %s: %s" % (test.id(), why))
        return 77
    return 0


if __name__ == "__main__":
    reexec_in_venv()
    sys.exit(main())
