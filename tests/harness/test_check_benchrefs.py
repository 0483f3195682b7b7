# SPDX-License-Identifier: MIT
"""Tests of tests/check_benchrefs.py (unit.meta.benchrefs): the repository's
code and docs cite only benchmark sections that exist in the file they
name, and a citation planted in a copy fails it when the section is in the
other file, when it is nowhere, or when its heading was renamed; a
bold-led paragraph and a name broken over comment lines resolve."""

import os
import unittest

from tree_copy import TreeCopyTest

import check_benchrefs  # tests/, on the path through tree_copy


class CheckBenchrefsTest(TreeCopyTest):
    COPY = ("src", "include", "docs", "README.md")
    CHECK = check_benchrefs

    def test_the_tree_passes(self):
        rc, out = self.run_check()
        self.assertEqual(rc, 0, out)
        self.assertIn(" 0 unresolved", out)
        self.assertNotIn(" 0 citations", out)

    def test_a_section_of_the_other_file_fails(self):
        # a section that lives in the history file, cited as benchmarks.md's
        self.append("src/core/txn.c", '\n/* (docs/benchmarks.md, "The gate\'s idle CPUs") */\n')
        rc, out = self.run_check()
        self.assertEqual(rc, 1, out)
        self.assertIn("src/core/txn.c:", out)
        self.assertIn("no such section in docs/benchmarks.md (it is in docs/benchmarks-history.md)", out)

    def test_a_section_of_no_file_fails_with_its_line(self):
        self.append("docs/design/core.md", '\n\nSee [history](../benchmarks-history.md),\n"A section nobody wrote".\n')
        with open(os.path.join(self.root, "docs/design/core.md"), encoding="utf-8") as f:
            line = f.read().count("\n") - 1
        rc, out = self.run_check()
        self.assertEqual(rc, 1, out)
        self.assertIn(f'docs/design/core.md:{line}: "A section nobody wrote": no such section in '
                      "docs/benchmarks-history.md\n", out)

    def test_a_renamed_heading_fails(self):
        path = os.path.join(self.root, "docs", "benchmarks-history.md")
        with open(path, encoding="utf-8") as f:
            text = f.read()
        self.assertIn("### The gate's idle CPUs", text)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text.replace("### The gate's idle CPUs", "### Idle CPUs under the gate"))
        rc, out = self.run_check()
        self.assertEqual(rc, 1, out)
        self.assertIn("src/cm/adaptive.c:", out)
        self.assertIn("\"The gate's idle CPUs\": no such section", out)

    def test_bold_paragraphs_and_broken_names_resolve(self):
        # a dated bold-led paragraph of the stdio section, its name broken
        # over the lines of a C comment
        self.append("src/core/txn.c", '\n/* see docs/benchmarks.md, "One shared stream:\n'
                    ' * yield only to a waiter that runs" */\n')
        rc, out = self.run_check()
        self.assertEqual(rc, 0, out)

    def test_options_and_values_are_not_citations(self):
        self.append("docs/stamp.md", '\nRun benchmarks.md\'s command with "--reps" or "x".\n')
        rc, out = self.run_check()
        self.assertEqual(rc, 0, out)


if __name__ == "__main__":
    unittest.main()
