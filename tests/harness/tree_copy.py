# SPDX-License-Identifier: MIT
"""A test case of one of the repository's checkers (tests/check_*.py) run
on a copy of the tree, in which a test plants what the checker must catch.
Not a test module itself (the harness's run.py collects test_*.py)."""

import contextlib
import io
import os
import shutil
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
sys.path.insert(0, os.path.join(ROOT, "tests"))


class TreeCopyTest(unittest.TestCase):
    """COPY: the folders and files of the tree to copy (relative paths);
    CHECK: the checker's module, whose main(argv) takes the tree's root."""

    COPY = ()
    CHECK = None

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.root = self.tmp.name
        for rel in self.COPY:
            src, dst = os.path.join(ROOT, rel), os.path.join(self.root, rel)
            if os.path.isdir(src):
                shutil.copytree(src, dst)
            else:
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copy(src, dst)

    def run_check(self):
        """(exit status, everything the checker printed)."""
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            rc = self.CHECK.main([self.CHECK.__name__ + ".py", self.root])
        return rc, out.getvalue()

    def append(self, rel, text):
        with open(os.path.join(self.root, rel), "a", encoding="utf-8") as f:
            f.write(text)
