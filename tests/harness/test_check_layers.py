# SPDX-License-Identifier: MIT
"""Tests of tests/check_layers.py (unit.meta.layers): the repository's own
src/ and include/ pass, and each kind of arrow the check exists for fails
it when planted in a copy: an engine header included by src/arch in C and
in assembly (the one-call begin once did that through core/desc_offsets.h),
an engine name used by src/arch assembly, an engine header included by
src/os, an include that climbs out of a subsystem's view."""

import contextlib
import io
import os
import shutil
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
sys.path.insert(0, os.path.join(ROOT, "tests"))

import check_layers  # noqa: E402


class CheckLayersTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.root = cls.tmp.name
        for d in ("src", "include"):
            shutil.copytree(os.path.join(ROOT, d), os.path.join(cls.root, d))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_check(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            rc = check_layers.main(["check_layers.py", self.root])
        return rc, out.getvalue()

    def plant(self, rel, line, after=None):
        """Adds line to the copy's src/rel, after the first line that starts
        with `after`, else at the end; the test's end restores the file."""
        path = os.path.join(self.root, "src", rel)
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        at = len(lines)
        if after is not None:
            at = next(i + 1 for i, l in enumerate(lines) if l.startswith(after))
        lines.insert(at, line)
        self.addCleanup(shutil.copyfile, os.path.join(ROOT, "src", rel), path)
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))

    def assert_refused(self, rel, what):
        rc, out = self.run_check()
        self.assertEqual(rc, 1, out)
        self.assertIn(f"src/{rel}: {what}", out)

    def test_the_tree_passes(self):
        rc, out = self.run_check()
        self.assertEqual(rc, 0, out)
        self.assertIn("machine-facility files use no engine header or name", out)
        self.assertIn("OS-facility files use no engine header or name", out)

    def test_engine_header_in_arch_assembly(self):
        self.plant("arch/x86_64-ckpt.S", '#include "core/desc_offsets.h"', after="#include")
        self.assert_refused("arch/x86_64-ckpt.S", 'includes "core/desc_offsets.h"')

    def test_engine_header_in_arch_c(self):
        self.plant("arch/ckpt-libc.c", '#include "core/engine.h"', after="#include")
        self.assert_refused("arch/ckpt-libc.c", 'includes "core/engine.h"')

    def test_engine_name_in_arch_assembly(self):
        self.plant("arch/x86_64-ckpt.S", "        jmp     sstm__begin_top")
        self.assert_refused("arch/x86_64-ckpt.S", "uses the engine's sstm__begin_top")

    def test_engine_header_in_os(self):
        self.plant("os/futex.c", '#include "../core/engine.h"', after="#include")
        self.assert_refused("os/futex.c", 'includes "../core/engine.h"')

    def test_include_out_of_a_subsystem_view(self):
        self.plant("cm/suicide.c", '#include "../core/engine.h"', after="#include")
        self.assert_refused("cm/suicide.c", 'includes "../core/engine.h"')


if __name__ == "__main__":
    unittest.main()
