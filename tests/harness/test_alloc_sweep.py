# SPDX-License-Identifier: MIT
"""Tests of bench/harness/alloc_sweep.py: the rotation of the allocators,
the paired ratios, the irrevocable share and the summary table, against
stand-ins for the benchmark binaries (ctest: unit.harness.python.*)."""

import json
import os
import stat
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, os.pardir, os.pardir))
sys.path.insert(0, os.path.join(ROOT, "bench", "harness"))

import alloc_sweep  # noqa: E402


def run(alloc, threads, rep, rate, update=50, commits=100, irrevocable=0, aborts=None):
    return {"allocator": alloc, "variant": alloc, "threads": threads, "rep": rep,
            "update": update, "commits_per_s": rate, "commits": commits,
            "commits_irrevocable": irrevocable, "aborts": sum((aborts or {}).values()),
            "aborts_by_reason": aborts or {}, "effective_update": 49.0,
            "commits_per_cpu_s": 2 * rate}


class AllocSweepTest(unittest.TestCase):
    def test_ratio_is_the_median_of_per_repetition_pairs(self):
        runs = [run("sstm", 2, 0, 10.0), run("glibc-lock", 2, 0, 5.0),
                run("sstm", 2, 1, 30.0), run("glibc-lock", 2, 1, 10.0),
                run("sstm", 2, 2, 8.0), run("glibc-lock", 2, 2, 8.0)]
        # pairs 2.0, 3.0, 1.0: median 2.0 (the ratio of medians would be 10/8)
        self.assertAlmostEqual(alloc_sweep.paired_ratio(runs, 50, 2, "sstm", "glibc-lock"), 2.0)
        self.assertIsNone(alloc_sweep.paired_ratio(runs, 50, 4, "sstm", "glibc-lock"))
        self.assertIsNone(alloc_sweep.paired_ratio(runs, 50, 2, "sstm", "irrevocable"))

    def test_summary_row(self):
        runs = [run("sstm", 1, r, 1e6 * (r + 1), aborts={"validate": 5, "irrevocable": 0})
                for r in range(3)]
        runs += [run("irrevocable", 1, r, 5e5, irrevocable=40) for r in range(3)]
        text = alloc_sweep.summary(runs, ["sstm", "glibc-lock", "irrevocable"])
        rows = [line for line in text.splitlines() if line.startswith("| 50 % | 1 |")]
        self.assertEqual(len(rows), 2)  # wall clock, then per CPU second
        cells = [c.strip() for c in rows[0].strip("|").split("|")]
        self.assertEqual(cells[2], "2.000")   # sstm median, Mtx/s
        self.assertEqual(cells[3], "-")       # glibc-lock never ran
        self.assertEqual(cells[4], "0.500")   # irrevocable
        self.assertEqual(cells[5], "-")       # no glibc-lock pair
        self.assertEqual(cells[6], "4.00")    # pairs 2, 4, 6
        self.assertEqual(cells[7], "0.400")   # 120 irrevocable of 300 commits
        self.assertEqual(cells[8], "0.0500")  # sstm: 15 aborts over 300 commits
        self.assertEqual(cells[10], "0.0000")  # irrevocable: none
        self.assertEqual(cells[11], "validate 15")
        cells = [c.strip() for c in rows[1].strip("|").split("|")]
        self.assertEqual(cells[2:], ["4.000", "-", "1.000", "-", "4.00"])

    def test_sweep_rotates_the_allocators_and_passes_the_options(self):
        with tempfile.TemporaryDirectory() as d:
            log = os.path.join(d, "calls")
            for name in alloc_sweep.ALLOCATORS.values():
                fake = os.path.join(d, name)
                with open(fake, "w") as f:
                    f.write("#!/bin/sh\necho %s \"$@\" >> %s\n"
                            "echo '{\"update\":50,\"threads\":1,\"commits_per_s\":1,"
                            "\"commits\":1}'\n" % (name, log))
                os.chmod(fake, os.stat(fake).st_mode | stat.S_IXUSR)

            class A:
                bin_dir = d
                allocators = "sstm,glibc-lock,irrevocable"
                updates = "25,75"
                threads = "1"
                reps = 3
                ms = 7
                initial = 64
                range = 1000

            runs = alloc_sweep.sweep(A())
            self.assertEqual(len(runs), 18)
            with open(log) as f:
                calls = [line.split() for line in f]
            names = [c[0] for c in calls]
            self.assertEqual(names[:3], ["intset-schedstm", "intset-schedstm-glibc-lock",
                                         "intset-schedstm-irrevocable"])
            self.assertEqual(names[3:6], ["intset-schedstm-glibc-lock",
                                          "intset-schedstm-irrevocable", "intset-schedstm"])
            self.assertTrue(all(c[c.index("-d") + 1] == "7" and c[c.index("-S") + 1] == "rb"
                                and c[c.index("-i") + 1] == "64"
                                and c[c.index("-r") + 1] == "1000" for c in calls))
            self.assertEqual([c[c.index("-u") + 1] for c in calls], ["25"] * 9 + ["75"] * 9)
            self.assertEqual([r["variant"] for r in runs[:3]],
                             ["sstm", "glibc-lock", "irrevocable"])
            self.assertTrue(all(r["status"] == "ok" for r in runs))
            json.dumps(runs)

    def test_unknown_allocator_and_missing_binary_are_errors(self):
        class A:
            bin_dir = "/nonexistent"
            allocators = "sstm,tcmalloc"
            updates = "50"
            threads = "1"
            reps = 1
            ms = 1
            initial = 1
            range = 2

        with self.assertRaises(SystemExit) as e:
            alloc_sweep.sweep(A())
        self.assertIn("unknown allocator 'tcmalloc'", str(e.exception))
        A.allocators = "sstm"
        with self.assertRaises(SystemExit) as e:
            alloc_sweep.sweep(A())
        self.assertIn("is not built", str(e.exception))


if __name__ == "__main__":
    unittest.main()
