#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Runs the harness's unit tests for ctest (unit.harness.python).

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


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    suite = unittest.defaultTestLoader.discover(start_dir=here, top_level_dir=here)
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
