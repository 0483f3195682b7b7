#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Runs the harness's unit tests for ctest (unit.harness.python).

Exit status: 0 when every test ran and passed; 1 on a failure or error;
77 (ctest's SKIP_RETURN_CODE) when they passed but some were skipped for a
missing tool (matplotlib, clang-format 14, ...), so that the entry shows
as skipped, not as a pass that did not check everything.
"""
import os
import sys
import unittest


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
    sys.exit(main())
