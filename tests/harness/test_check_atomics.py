# SPDX-License-Identifier: MIT
"""Tests of tests/check_atomics.py (unit.meta.atomics): each implicit-order
call is found with its line, the _explicit forms and mentions in comments
and string literals are not, and a tree with one planted call fails."""

import contextlib
import io
import os
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
sys.path.insert(0, os.path.join(ROOT, "tests"))

import check_atomics  # noqa: E402


class CheckAtomicsTest(unittest.TestCase):
    def test_finds_each_implicit_call_by_line(self):
        text = ("int a = atomic_load(&x);\n"
                "atomic_store (&x, 1); atomic_fetch_add(&x, 1);\n"
                "atomic_compare_exchange_weak(&x, &e, 2);\n"
                "atomic_flag_test_and_set(&f);\n")
        self.assertEqual(check_atomics.implicit_calls(text),
                         [(1, "atomic_load"), (2, "atomic_store"), (2, "atomic_fetch_add"),
                          (3, "atomic_compare_exchange_weak"), (4, "atomic_flag_test_and_set")])

    def test_ignores_explicit_forms_comments_and_strings(self):
        text = ("atomic_load_explicit(&x, memory_order_acquire);\n"
                "/* atomic_load(&x) in a comment */ // atomic_store(&x, 1)\n"
                "puts(\"atomic_exchange(&x, 1)\"); char c = '\\'';\n"
                "my_atomic_load(&x);\n")
        self.assertEqual(check_atomics.implicit_calls(text), [])

    def test_tree_with_a_planted_call_fails_and_clean_one_passes(self):
        with tempfile.TemporaryDirectory() as root:
            os.makedirs(os.path.join(root, "src", "core"))
            path = os.path.join(root, "src", "core", "x.c")
            with open(path, "w", encoding="utf-8") as f:
                f.write("void f(void) { atomic_store_explicit(&x, 1, memory_order_release); }\n")
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(check_atomics.main(["check_atomics.py", root]), 0)
            with open(path, "a", encoding="utf-8") as f:
                f.write("void g(void) { atomic_store(&x, 1); }\n")
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(check_atomics.main(["check_atomics.py", root]), 1)
            self.assertIn("src/core/x.c:2: atomic_store without a memory order", out.getvalue())

    def test_not_a_tree_is_a_usage_error(self):
        with tempfile.TemporaryDirectory() as root:
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                self.assertEqual(check_atomics.main(["check_atomics.py", root]), 2)
            self.assertIn("not a source tree", err.getvalue())


if __name__ == "__main__":
    unittest.main()
