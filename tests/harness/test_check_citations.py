# SPDX-License-Identifier: MIT
"""Tests of tests/check_citations.py (unit.meta.citations): the repository's
own src/ and include/ cite only design steps that exist, and a citation
planted in a copy fails it when its item or section is missing, as does a
design document whose cited section was cut."""

import os
import unittest

from tree_copy import TreeCopyTest

import check_citations  # tests/, on the path through tree_copy


class CheckCitationsTest(TreeCopyTest):
    COPY = ("src", "include", os.path.join("docs", "design"))
    CHECK = check_citations

    def test_the_tree_passes(self):
        rc, out = self.run_check()
        self.assertEqual(rc, 0, out)
        self.assertIn(" 0 unresolved", out)

    def test_a_missing_item_of_core_fails(self):
        self.append("src/core/txn.c", "\n/* the re-check (8.42) */\n")
        rc, out = self.run_check()
        self.assertEqual(rc, 1, out)
        self.assertIn("src/core/txn.c:", out)
        self.assertIn("section (8) of docs/design/core.md has no item 42", out)

    def test_a_range_and_a_list_are_read(self):
        self.append("src/cm/ser.c", "\n/* (8.1-8.42), (1.1, 3.77) */\n")
        rc, out = self.run_check()
        self.assertEqual(rc, 1, out)
        self.assertIn("has no item 42", out)
        self.assertIn("section (3) of docs/design/core.md has no item 77", out)
        self.assertNotIn("no item 1\n", out)

    def test_a_missing_lettered_section_fails(self):
        self.append("include/schedstm/stdio.h", "\n/* as (S99) says */\n")
        self.append("src/abi/itm.c", "\n// (I3.9)\n")
        rc, out = self.run_check()
        self.assertEqual(rc, 1, out)
        self.assertIn("no section (S99) in docs/design/tm-libc.md", out)
        self.assertIn("section (I3) of docs/design/itm.md has no item 9", out)

    def test_values_and_calls_are_not_citations(self):
        self.append("src/core/txn.c", '\n/* f(0), (default 32), (0.5 s) */\nstatic const char *s = "(8.42)";\n')
        rc, out = self.run_check()
        self.assertEqual(rc, 0, out)

    def test_a_cut_section_fails(self):
        path = os.path.join(self.root, "docs", "design", "admission.md")
        with open(path, encoding="utf-8") as f:
            text = f.read()
        with open(path, "w", encoding="utf-8") as f:
            f.write(text.replace("## (A4) ", "## "))
        rc, out = self.run_check()
        self.assertEqual(rc, 1, out)
        self.assertIn("no section (A4) in docs/design/admission.md", out)


if __name__ == "__main__":
    unittest.main()
