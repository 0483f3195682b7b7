# SPDX-License-Identifier: MIT
"""Tests of bench/harness/stdio_sweep.py: the rotation of the modes, the
paired ratios, the medians and the summary table, against a stand-in for
the benchmark binary (ctest: unit.harness.python.*)."""

import json
import os
import stat
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, os.pardir, os.pardir))
sys.path.insert(0, os.path.join(ROOT, "bench", "harness"))

import stdio_sweep  # noqa: E402


def run(op, mode, threads, rep, ops_per_s, sharing="private", aborts=None, commits=100):
    return {"op": op, "mode": mode, "sharing": sharing, "threads": threads, "rep": rep,
            "ops_per_s": ops_per_s, "irrevocable_frac": 1.0 if mode == "irr" else 0.0,
            "aborts": aborts or {}, "commits": commits}


class Args:
    ops = "fputc"
    modes = "tx,irr,glibc"
    sharing = "private,shared"


class StdioSweepTest(unittest.TestCase):
    def test_ratio_is_the_median_of_per_repetition_pairs(self):
        runs = [run("fputc", "tx", 2, 0, 10.0), run("fputc", "irr", 2, 0, 5.0),
                run("fputc", "tx", 2, 1, 30.0), run("fputc", "irr", 2, 1, 10.0),
                run("fputc", "tx", 2, 2, 8.0), run("fputc", "irr", 2, 2, 8.0)]
        # pairs 2.0, 3.0, 1.0: median 2.0 (the ratio of medians would be 10/8)
        self.assertAlmostEqual(
            stdio_sweep.paired_ratio(runs, "fputc", "private", 2, "tx", "irr"), 2.0)
        self.assertIsNone(stdio_sweep.paired_ratio(runs, "fputc", "shared", 2, "tx", "irr"))

    def test_summary_reports_medians_aborts_and_missing_modes(self):
        runs = [run("fputc", "tx", 1, r, 1e6 * (r + 1), aborts={"read-locked": 5})
                for r in range(3)]
        runs += [run("fputc", "irr", 1, r, 5e5) for r in range(3)]
        text = stdio_sweep.summary(runs, Args())
        row = [line for line in text.splitlines() if line.startswith("| fputc | private | 1 |")]
        self.assertEqual(len(row), 1)
        cells = [c.strip() for c in row[0].strip("|").split("|")]
        self.assertEqual(cells[3], "2.000")  # tx median
        self.assertEqual(cells[4], "0.500")  # irr
        self.assertEqual(cells[5], "-")      # glibc never ran
        self.assertEqual(cells[6], "4.00")   # tx/irr: pairs 2, 4, 6
        self.assertEqual(cells[7], "-")      # no CPU time recorded
        self.assertEqual(cells[10], "0.050")  # 15 aborts over 300 commits
        self.assertEqual(cells[11], "read-locked 15")

    def test_per_cpu_ratio_pairs_calls_per_cpu_second(self):
        runs = []
        # tx: 100 calls on 0.5, 1, 2 CPU s; irr: 100 calls on 1 CPU s each:
        # per CPU s pairs 2, 1, 0.5 (median 1.0), per wall s pairs 4, 4, 4
        for r, cpu in enumerate((0.5, 1.0, 2.0)):
            t = run("fputc", "tx", 8, r, 4e6)
            t.update(ops=100, cpu_s=cpu)
            i = run("fputc", "irr", 8, r, 1e6)
            i.update(ops=100, cpu_s=1.0)
            runs += [t, i]
        self.assertAlmostEqual(stdio_sweep.paired_ratio(
            runs, "fputc", "private", 8, "tx", "irr", stdio_sweep.per_cpu_s), 1.0)
        text = stdio_sweep.summary(runs, Args())
        row = [line for line in text.splitlines() if line.startswith("| fputc | private | 8 |")]
        cells = [c.strip() for c in row[0].strip("|").split("|")]
        self.assertEqual(cells[6:8], ["4.00", "1.00"])  # tx/irr, tx/irr per CPU s

    def test_sweep_rotates_the_modes_and_passes_the_options(self):
        with tempfile.TemporaryDirectory() as d:
            log = os.path.join(d, "calls")
            fake = os.path.join(d, "stdio-fake")
            with open(fake, "w") as f:
                f.write("#!/bin/sh\necho \"$@\" >> %s\n"
                        "echo '{\"op\":\"fputc\",\"mode\":\"x\",\"sharing\":\"private\","
                        "\"threads\":1,\"ops_per_s\":1,\"irrevocable_frac\":0,"
                        "\"aborts\":{},\"commits\":1}'\n" % log)
            os.chmod(fake, os.stat(fake).st_mode | stat.S_IXUSR)

            class A:
                bin = fake
                ops = "fputc"
                modes = "tx,irr,glibc"
                sharing = "private,shared"
                threads = "1"
                reps = 3
                ms = 7
                k = 4

            runs = stdio_sweep.sweep(A())
            self.assertEqual(len(runs), 18)  # private and shared
            with open(log) as f:
                calls = [line.split() for line in f]
            modes = [c[c.index("-m") + 1] for c in calls]
            self.assertEqual(modes[:3], ["tx", "irr", "glibc"])
            self.assertEqual(modes[3:6], ["irr", "glibc", "tx"])
            self.assertTrue(all(c[c.index("-d") + 1] == "7" and c[c.index("-k") + 1] == "4"
                                for c in calls))
            self.assertEqual([c[c.index("-s") + 1] for c in calls],
                             ["private"] * 9 + ["shared"] * 9)
            self.assertEqual([r["rep"] for r in runs], [0, 0, 0, 1, 1, 1, 2, 2, 2] * 2)
            json.dumps(runs)

    def test_a_mode_with_a_policy_sets_schedstm_cm_and_keeps_its_name(self):
        with tempfile.TemporaryDirectory() as d:
            log = os.path.join(d, "calls")
            fake = os.path.join(d, "stdio-fake")
            with open(fake, "w") as f:
                f.write("#!/bin/sh\necho \"cm=${SCHEDSTM_CM:-default} $@\" >> %s\n"
                        "echo '{\"op\":\"fputc\",\"mode\":\"tx\",\"sharing\":\"shared\","
                        "\"threads\":2,\"ops_per_s\":1,\"irrevocable_frac\":0,"
                        "\"aborts\":{},\"commits\":1}'\n" % log)
            os.chmod(fake, os.stat(fake).st_mode | stat.S_IXUSR)
            os.environ["SCHEDSTM_CM"] = "suicide"  # not passed to the default's runs
            try:
                r1 = stdio_sweep.run_one(fake, "fputc", "tx@ser-block", "shared", 2, 5, 1)
                r2 = stdio_sweep.run_one(fake, "fputc", "tx", "shared", 2, 5, 1)
            finally:
                del os.environ["SCHEDSTM_CM"]
            self.assertEqual((r1["mode"], r2["mode"]), ("tx@ser-block", "tx"))
            with open(log) as f:
                calls = [line.split() for line in f]
            self.assertEqual([c[0] for c in calls], ["cm=ser-block", "cm=default"])
            self.assertTrue(all(c[c.index("-m") + 1] == "tx" for c in calls))
        runs = [run("fputc", "tx", 2, 0, 4.0), run("fputc", "tx@ser-block", 2, 0, 6.0),
                run("fputc", "irr", 2, 0, 2.0)]

        class B:
            ops = "fputc"
            modes = "tx,tx@ser-block,irr"
            sharing = "private,shared"

        text = stdio_sweep.summary(runs, B())
        row = [line for line in text.splitlines() if line.startswith("| fputc | private | 2 |")]
        cells = [c.strip() for c in row[0].strip("|").split("|")]
        self.assertEqual(cells[6:8], ["2.00", "3.00"])  # tx/irr, tx@ser-block/irr

    def test_summary_states_the_load_range_and_reads_several_files(self):
        runs = [run("fputc", "tx", 1, r, 1e6) for r in range(3)]
        runs += [run("fputc", "irr", 1, r, 5e5) for r in range(3)]
        text = stdio_sweep.summary(runs, Args())
        self.assertNotIn("Load average", text)  # none recorded: no line
        for r, load in zip(runs, [3.0, 9.5, 4.0, 20.25, 7.0, 5.0]):
            r["loadavg"] = load
        text = stdio_sweep.summary(runs, Args())
        self.assertIn("Load average (1 min) during the runs: 3.0-20.2 (median 6.0).", text)
        with tempfile.TemporaryDirectory() as d:
            paths = []
            for i, part in enumerate((runs[:3], runs[3:])):
                paths.append(os.path.join(d, f"part{i}.jsonl"))
                with open(paths[-1], "w") as f:
                    f.writelines(json.dumps(r) + "\n" for r in part)
            out = os.path.join(d, "out")
            argv = sys.argv
            sys.argv = ["stdio_sweep.py", "--bin", "unused", "--out", out, "--ops", "fputc",
                        "--modes", "tx,irr", "--from-jsonl", ",".join(paths)]
            try:
                stdio_sweep.main()
            finally:
                sys.argv = argv
            with open(os.path.join(out, "stdio-summary.md")) as f:
                row = [line for line in f if line.startswith("| fputc | private | 1 |")]
            cells = [c.strip() for c in row[0].strip("|").split("|")]
            self.assertEqual(cells[3:6], ["1.000", "0.500", "2.00"])  # both files read


if __name__ == "__main__":
    unittest.main()
