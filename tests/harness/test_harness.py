# SPDX-License-Identifier: MIT
"""Tests of the benchmark harness (bench/harness): the statistics the
summary reports, the command lines of the variants, the parsing of the
peers' output, the plot, the sweep's handling of bad options, failing
runs and interrupts, and the set-up scripts around it (install-deps.sh,
demo.sh, run_all.sh, run against stand-ins for the tools they call).

Run: python3 -m unittest discover -s tests/harness (ctest: unit.harness.python.*).
"""

import contextlib
import io
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, os.pardir, os.pardir))
sys.path.insert(0, os.path.join(ROOT, "bench", "harness"))

import adapters  # noqa: E402
import summary  # noqa: E402
import sweep  # noqa: E402


def rec(variant, threads, rep, cps, **extra):
    r = {"bench": "intset", "structure": "hs", "update": 50, "threads": threads,
         "variant": variant, "rep": rep, "status": "ok", "commits_per_s": cps,
         "abort_ratio": 0.0}
    r.update(extra)
    return r


class PairedRatio(unittest.TestCase):
    def test_ratio_pairs_runs_of_one_repetition(self):
        # per repetition b/a = 3.0, 1.1, 1.2: median 1.2; the ratio of the
        # medians (4.4 / 4.0 = 1.1) would mix runs made under different
        # machine conditions.
        records = [rec("a", 2, 0, 1e6), rec("b", 2, 0, 3e6),
                   rec("a", 2, 1, 4e6), rec("b", 2, 1, 4.4e6),
                   rec("a", 2, 2, 10e6), rec("b", 2, 2, 12e6)]
        w = summary.workload_key(records[0])
        ratio, vs_one = summary.paired_ratio(records, w, 2, "b", "a")
        self.assertAlmostEqual(ratio, 1.2)
        self.assertFalse(vs_one)
        self.assertIn("| hs 50% upd | 2 | 4.00 M | 4.40 M | 1.20x |", summary.markdown(records, "a"))

    def test_an_interval_comes_with_five_pairs(self):
        # b/a per repetition: 0.8, 0.9, 1.0, 1.1, 1.2 (median 1.0); with four
        # of them no interval is given.
        rs = (0.8, 0.9, 1.0, 1.1, 1.2)
        records = []
        for rep, x in enumerate(rs):
            records += [rec("a", 2, rep, 1e6), rec("b", 2, rep, 1e6 * x)]
        w = summary.workload_key(records[0])
        each = summary.paired_ratios(records, w, 2, "b", "a")
        self.assertEqual([round(x, 6) for x in each], list(rs))
        lo, hi = summary.median_interval(each)
        # The resamples' medians are values of the set: the interval's ends
        # are two of them, around the median, inside the range.
        self.assertTrue(0.8 <= lo < 1.0 < hi <= 1.2, (lo, hi))
        self.assertIn(round(lo, 6), rs)
        self.assertIn(round(hi, 6), rs)
        self.assertEqual(summary.median_interval(each), (lo, hi))  # seeded
        self.assertIn("| 1.00x (%.2f-%.2f) |" % (lo, hi), summary.markdown(records, "a"))
        self.assertIsNone(summary.median_interval(each[:4]))
        self.assertIn("| 0.95x |", summary.markdown(records[:8], "a"))
        # Identical ratios: an interval of one point; more pairs, narrower.
        self.assertEqual(summary.median_interval([1.1] * 6), (1.1, 1.1))
        wide = summary.median_interval([0.5, 1.5] * 3 + [1.0])
        narrow = summary.median_interval([0.5, 1.5] * 3 + [1.0] * 30)
        self.assertEqual(narrow, (1.0, 1.0))
        self.assertGreater(wide[1] - wide[0], 0.0)

    def test_one_thread_baseline_is_a_speedup_with_a_footnote(self):
        records = [rec("seq", 1, 0, 4.0), rec("stm", 4, 0, 6.0)]
        w = summary.workload_key(records[0])
        ratio, vs_one = summary.paired_ratio(records, w, 4, "stm", "seq")
        self.assertAlmostEqual(ratio, 1.5)
        self.assertTrue(vs_one)
        self.assertIn("baseline measured at 1 thread only", summary.markdown(records, "seq"))

    def test_failed_runs_are_listed_not_averaged(self):
        records = [rec("a", 2, 0, 5e6), rec("a", 2, 1, 7e6),
                   dict(rec("a", 2, 2, 1e9), status="failed", error="exit 1: boom")]
        text = summary.markdown(records)
        self.assertIn("| 6.00 M |", text)  # median of 5 and 7 M, the failed run left out
        self.assertIn("Failed runs (1)", text)
        self.assertIn("boom", text)


class Workloads(unittest.TestCase):
    def test_initial_size_separates_workloads(self):
        # ll1k and ll8k at the same update rate are two workloads: a summary
        # keyed on structure and update alone merged their rows.
        records = [rec("a", 2, 0, 1e6, structure="ll", update=20, initial=1024, range=2048),
                   rec("a", 2, 0, 9e6, structure="ll", update=20, initial=8192, range=16384)]
        keys = {summary.workload_key(r) for r in records}
        self.assertEqual(len(keys), 2)
        text = summary.markdown(records)
        self.assertIn("| ll1k 20% upd | 2 | 1.00 M |", text)
        self.assertIn("| ll8k 20% upd | 2 | 9.00 M |", text)

    def test_labels_of_sizes_ranges_banks_and_sb7(self):
        self.assertEqual(summary.workload_label(summary.workload_key(
            rec("a", 1, 0, 1, structure="rb", update=5, initial=1000, range=4096))),
            "rb1000/r4k 5% upd")
        self.assertEqual(summary.workload_label(summary.workload_key(
            {"bench": "bank", "update": 20, "accounts": 4096})),
            "bank (20% transfers, 4k accounts)")
        self.assertEqual(summary.workload_label(summary.workload_key(
            {"bench": "sb7", "structure": "sb7", "update": "rw", "scale": 1})),
            "sb7 read-write")


class PolicyTables(unittest.TestCase):
    def test_wait_share_and_priority_changes(self):
        records = [
            rec("ser-block", 8, 0, 1e6, cm_wait_s=3.0, elapsed_s=1.5, cm_stats={"ser_waits": 9}),
            rec("ser-block", 8, 1, 1e6, cm_wait_s=6.0, elapsed_s=1.5, cm_stats={"ser_waits": 9}),
            rec("softser", 8, 0, 1e6, cm_wait_s=0.0, elapsed_s=2.0,
                cm_stats={"prio_changes": 500, "registrations": 3}),
            rec("tinystm", 8, 0, 1e6, elapsed_s=2.0),
        ]
        self.assertAlmostEqual(summary.policy_wait_share(records[0]), 2.0)
        self.assertIsNone(summary.policy_wait_share(records[3]))
        self.assertAlmostEqual(summary.prio_changes_per_s(records[2]), 250.0)
        self.assertIsNone(summary.prio_changes_per_s(records[0]))
        text = summary.markdown(records)
        wait = text[text.index("Median time in policy actions"):]
        wait = wait[:wait.index("Median OS priority changes")]
        self.assertIn("| hs 50% upd | 8 | 3.00 | 0.00 |", wait)  # median of 2.0 and 4.0
        self.assertNotIn("tinystm", wait)  # it reports no policy time
        prio = text[text.index("Median OS priority changes"):]
        self.assertIn("| workload | threads | softser |", prio)
        self.assertIn("| hs 50% upd | 8 | 250 |", prio)

    def test_no_policy_tables_without_policy_fields(self):
        text = summary.markdown([rec("itm", 1, 0, 5.0)])
        self.assertNotIn("policy actions", text)
        self.assertNotIn("priority changes", text)


class AdaptiveTable(unittest.TestCase):
    def test_adaptive_against_the_best_fixed_policy_paired(self):
        def r(cm, rep, cps):
            return rec("schedstm-inline-" + cm, 8, rep, cps, cm_wait_s=0.1, elapsed_s=1.0)
        records = [r("suicide", 0, 1e6), r("yield", 0, 4e6), r("adaptive", 0, 3.8e6),
                   r("suicide", 1, 2e6), r("yield", 1, 8e6), r("adaptive", 1, 5.6e6),
                   r("suicide", 2, 1e6), r("yield", 2, 2e6), r("adaptive", 2, 1.9e6),
                   rec("tinystm", 8, 0, 9e6)]  # a peer is not a fixed policy
        text = summary.markdown(records)
        table = text[text.index("Adaptive against"):]
        # paired ratios 0.95, 0.70, 0.95: median 0.95 (the medians: 3.8 / 4.0)
        self.assertIn("| hs 50% upd | 8 | schedstm-inline-adaptive | schedstm-inline-yield "
                      "| 0.95x | 0.70x-0.95x | open (3) |  |", table)
        self.assertIn("Within 10 %: 1 of 1.", table)
        self.assertIn("within at 0, not within at 0; open at 1", table)

    def test_worst_is_flagged(self):
        records = [rec("s-" + cm, 2, 0, cps, cm_wait_s=0.0, elapsed_s=1.0)
                   for cm, cps in (("suicide", 2e6), ("yield", 3e6), ("adaptive", 1e6))]
        table = summary.markdown(records)
        self.assertIn("| s-adaptive | s-yield | 0.33x | 0.33x-0.33x | open (1) | yes |", table)
        self.assertIn("Within 10 %: 0 of 1.", table)

    def test_worst_compares_runs_of_the_same_repetition(self):
        # adaptive's median (3 M) is below both fixed medians (4 M), but in
        # each repetition it beats suicide (ratios 1.5, 1.5, 0.75): not the
        # worst. The best fixed policy is yield, by its median.
        runs = {"suicide": (2e6, 4e6, 4e6), "yield": (4.1e6, 4.1e6, 1e6),
                "adaptive": (3e6, 6e6, 3e6)}
        records = [rec("s-" + cm, 8, rep, cps, cm_wait_s=0.0, elapsed_s=1.0)
                   for cm, xs in runs.items() for rep, cps in enumerate(xs)]
        table = summary.markdown(records)
        self.assertIn("| s-adaptive | s-yield | 1.46x | 0.73x-3.00x | open (3) |  |", table)

    def test_an_adaptive_run_at_zero_commits_is_the_worst(self):
        records = [rec("s-" + cm, 2, 0, cps, cm_wait_s=0.0, elapsed_s=1.0)
                   for cm, cps in (("suicide", 2e6), ("yield", 3e6), ("adaptive", 0.0))]
        self.assertIn("| s-adaptive | s-yield | 0.00x | 0.00x-0.00x | open (1) | yes |",
                      summary.markdown(records))

    def test_every_repetition_on_one_side_decides_a_point(self):
        # Three points of three repetitions each against yield: all at or
        # above 0.90x (0.90 exactly counts), all below, and on both sides
        # (whose median, 0.95x, is within: the median alone would say so).
        ratios = {2: (0.90, 1.20, 0.95), 4: (0.85, 0.50, 0.88), 8: (0.95, 0.70, 1.05)}
        records = []
        for threads, rs in ratios.items():
            for rep, x in enumerate(rs):
                records += [rec("s-suicide", threads, rep, 1e6, cm_wait_s=0.0, elapsed_s=1.0),
                            rec("s-yield", threads, rep, 4e6, cm_wait_s=0.0, elapsed_s=1.0),
                            rec("s-adaptive", threads, rep, 4e6 * x, cm_wait_s=0.0,
                                elapsed_s=1.0)]
        table = summary.markdown(records)
        self.assertIn("| 2 | s-adaptive | s-yield | 0.95x | 0.90x-1.20x | yes (3) |  |", table)
        self.assertIn("| 4 | s-adaptive | s-yield | 0.85x | 0.50x-0.88x | no (3) |  |", table)
        self.assertIn("| 8 | s-adaptive | s-yield | 0.95x | 0.70x-1.05x | open (3) |  |", table)
        self.assertIn("Within 10 %: 2 of 3.", table)
        self.assertIn("within at 1, not within at 1; open at 1", table)

    def test_from_five_pairs_the_interval_decides(self):
        # One repetition of ten below 0.90x: every-repetition agreement
        # would leave the point open; the median's interval (0.94-0.99)
        # lies above the line.
        within = [0.85, 0.92, 0.95, 0.97, 1.0, 1.02, 0.99, 0.96, 0.94, 1.05]
        lo, hi = summary.median_interval(within)
        self.assertGreaterEqual(lo, 0.9)
        self.assertEqual(summary.agreement(within), "yes")
        self.assertEqual(summary.agreement([x - 0.2 for x in within]), "no")
        self.assertEqual(summary.agreement([0.6, 1.2, 0.7, 1.1, 0.8, 1.0, 0.85, 0.95]), "open")
        # Four pairs: still every repetition.
        self.assertEqual(summary.agreement(within[:4]), "open")
        self.assertEqual(summary.agreement(within[1:5]), "yes")

    def test_worst_by_a_hair_is_a_tie(self):
        # adaptive below both fixed policies (whose rates are equal) by its
        # paired medians, but by 1 % with repetitions on both sides of
        # 1.00x: not told apart, 'tied'; well below both: 'yes'.
        def table(adaptive_x):
            records = []
            for rep, x in enumerate(adaptive_x):
                records += [rec("s-suicide", 8, rep, 4e6, cm_wait_s=0.0, elapsed_s=1.0),
                            rec("s-yield", 8, rep, 4e6, cm_wait_s=0.0, elapsed_s=1.0),
                            rec("s-adaptive", 8, rep, 4e6 * x, cm_wait_s=0.0, elapsed_s=1.0)]
            text = summary.markdown(records)
            return text[text.index("Adaptive against"):]
        tied = table([0.90, 1.05, 0.97, 1.02, 0.99, 1.03, 0.95])
        self.assertIn("| 0.99x (0.95-1.03) | 0.90x-1.05x | yes (7) | tied |", tied)
        self.assertIn("'tied' where an interval reaches 1.00x", tied)
        worst = table([0.40, 0.45, 0.42, 0.38, 0.44])
        self.assertIn("| yes |", worst.splitlines()[-1])
        self.assertIn("no (5) | yes |", worst)

    def test_two_agreeing_repetitions_leave_a_point_open(self):
        self.assertEqual(summary.agreement([0.95, 1.1]), "open")
        self.assertEqual(summary.agreement([0.95, 1.1, 0.91]), "yes")
        self.assertEqual(summary.agreement([0.5, 0.6, 0.7]), "no")
        self.assertEqual(summary.agreement([]), "open")


class Commands(unittest.TestCase):
    def setUp(self):
        self.point = {"bench": "intset", "structure": "rb", "initial": 16384, "range": 32768,
                      "update": 20, "threads": 4, "duration_ms": 500, "seed": 7}

    def test_schedstm_variant_passes_design_and_policy(self):
        (v,) = adapters.make_native_variants(["schedstm"], "/bin", ["ctl"], ["ser-block+ext"],
                                             None)
        argv, env = v.command(self.point)
        self.assertEqual(argv[0], "/bin/intset-schedstm")
        for flag, value in (("-S", "rb"), ("-i", "16384"), ("-r", "32768"), ("-u", "20"),
                            ("-n", "4"), ("-d", "500"), ("-s", "7"), ("-D", "ctl"),
                            ("-C", "ser-block+ext")):
            self.assertEqual(argv[argv.index(flag) + 1], value)
        self.assertEqual(env, {})

    def test_as_written_variants_run_our_binary_and_the_peers_plain_program(self):
        point = dict(self.point, structure="rb-aw")
        (v,) = adapters.make_native_variants(["schedstm"], "/bin", None, None, None)
        argv, _ = v.command(point)
        self.assertEqual(argv[argv.index("-S") + 1], "rb-aw")
        peer = adapters.TinySTMVariant("tinystm", "/t/intset")
        self.assertEqual(peer.binary(point), "/t/intset/intset-rb")
        self.assertEqual(peer.binary(dict(point, structure="sl-aw")), "/t/intset/intset-sl")
        args = sweep.parse_args(["--structures", "rb,rb-aw,sl-aw"])
        self.assertEqual(args.structures, ["rb", "rb-aw", "sl-aw"])
        self.assertEqual(sweep.parse_args([]).structures, ["ll", "sl", "rb", "hs"])

    def test_libitm_runs_its_stm_not_serial_mode(self):
        variants = adapters.make_native_variants(["itm"], "/bin", None, None, "ml_wt")
        _, env = variants[0].command(self.point)
        self.assertEqual(env, {"ITM_DEFAULT_METHOD": "ml_wt"})

    def test_the_itm_code_on_schedstm_takes_the_schedstm_options(self):
        (v,) = adapters.make_native_variants(["schedstm-itm"], "/bin", ["ctl"], ["ser-block"],
                                             None)
        argv, env = v.command(self.point)
        self.assertEqual(argv[0], "/bin/intset-schedstm-itm")
        self.assertEqual(argv[argv.index("-D") + 1], "ctl")
        self.assertEqual(argv[argv.index("-C") + 1], "ser-block")
        self.assertEqual(env, {})

    def test_the_itm_code_on_another_runtime_of_the_abi(self):
        with tempfile.TemporaryDirectory() as d:
            open(os.path.join(d, "libitm.so.1"), "w").close()
            args = sweep.parse_args(["--backends", "itm", "--itm-lib", "tiny=" + d])
            variants = sweep.build_variants(args)
            self.assertEqual([v.label for v in variants], ["itm", "itm@tiny"])
            argv, env = variants[1].command(self.point)
            self.assertEqual(os.path.basename(argv[0]), "intset-itm")
            self.assertEqual(env["LD_LIBRARY_PATH"], os.path.abspath(d))
            with self.assertRaisesRegex(ValueError, "NAME=DIR"):
                sweep.build_variants(sweep.parse_args(["--itm-lib", d]))
        with tempfile.TemporaryDirectory() as d:  # no libitm.so.1 there
            with self.assertRaisesRegex(ValueError, "has no libitm.so.1"):
                sweep.build_variants(sweep.parse_args(["--itm-lib", "x=" + d]))

    def test_labels_name_the_crossed_dimensions(self):
        labels = [v.label for v in adapters.make_native_variants(
            ["schedstm", "seq"], "/bin", ["etl", "ctl"], ["suicide"], None)]
        self.assertEqual(labels, ["schedstm-etl", "schedstm-ctl", "seq"])

    def test_default_cm_runs_without_a_policy_option(self):
        args = sweep.parse_args(["--backends", "schedstm", "--cms", "default,suicide"])
        variants = sweep.build_variants(args)
        self.assertEqual([v.label for v in variants], ["schedstm-default", "schedstm-suicide"])
        argv, _ = variants[0].command(self.point)
        self.assertNotIn("-C", argv)
        argv, _ = variants[1].command(self.point)
        self.assertEqual(argv[argv.index("-C") + 1], "suicide")

    def test_bad_backend_and_peer_specs_are_errors(self):
        with self.assertRaisesRegex(ValueError, "unknown back-end 'tl2'"):
            adapters.make_native_variants(["tl2"], "/bin", None, None, None)
        with self.assertRaisesRegex(ValueError, "NAME=DIR"):
            adapters.make_peer("tinystm")
        with self.assertRaisesRegex(ValueError, "unknown peer"):
            adapters.make_peer("rstm=/tmp")
        with self.assertRaisesRegex(ValueError, "not a directory"):
            adapters.make_peer("tinystm=/nonexistent/dir")


class Parsing(unittest.TestCase):
    def test_native_output_takes_the_last_json_line(self):
        v = adapters.NativeVariant("schedstm", "schedstm", "/bin")
        out = 'warming up\n{"commits_per_s": 1.0}\n{"commits_per_s": 2.5, "commits": 5}\n'
        self.assertEqual(v.parse(out, "", 0)["commits_per_s"], 2.5)
        with self.assertRaisesRegex(adapters.RunFailed, "exit 3: it broke"):
            v.parse(out, "it broke\n", 3)
        with self.assertRaisesRegex(adapters.RunFailed, "no JSON result"):
            v.parse("nothing here\n", "", 0)

    # The shape of TinySTM's intset output: per-thread blocks first, then
    # the totals, whose abort breakdown is indented and carries rates.
    TINY = """STM flags    : -DDESIGN=WRITE_BACK_ETL -DCM=CM_SUICIDE -DTM_STATISTICS
Thread 0
  #add        : 10
  #aborts     : 250
    #val-r    : 200
    #lock-w   : 50
  Max retries : 3
Set size      : 16384 (expected: 16384)
Duration      : 2000 (ms)
#txs          : 1000 (500.000000 / s)
#read txs     : 800 (400.000000 / s)
#update txs   : 200 (100.000000 / s)
#aborts       : 250 (125.000000 / s)
  #val-r      : 200 (100.000000 / s)
  #lock-w     : 50 (25.000000 / s)
#aborts>=1    : 40 (20.000000 / s)
Max retries   : 3
"""

    def test_tinystm_totals_reasons_and_check(self):
        v = adapters.TinySTMVariant("tinystm", "/tmp")
        r = v.parse(self.TINY, "", 0)
        self.assertEqual(r["commits"], 1000)
        self.assertAlmostEqual(r["commits_per_s"], 500.0)
        self.assertAlmostEqual(r["abort_ratio"], 250 / 1250)
        self.assertEqual(r["aborts_by_reason"], {"val-r": 200, "lock-w": 50})
        self.assertAlmostEqual(r["elapsed_s"], 2.0)

    def test_tinystm_without_statistics_reports_unknown_aborts(self):
        v = adapters.TinySTMVariant("tinystm", "/tmp")
        text = self.TINY.replace("-DTM_STATISTICS", "-UTM_STATISTICS")
        self.assertIsNone(v.parse(text, "", 0)["abort_ratio"])

    def test_tinystm_failed_check_is_a_failed_run(self):
        v = adapters.TinySTMVariant("tinystm", "/tmp")
        text = self.TINY.replace("16384 (expected", "16383 (expected")
        with self.assertRaisesRegex(adapters.RunFailed, "16383 != expected 16384"):
            v.parse(text, "", 0)


# A stand-in for TinySTM's intset whose own clock misses work: it reports
# 1000 commits per ms of its -d duration plus 200000 done outside its timed
# window (a late start and an early stop), so its printed rate is inflated.
FAKE_PEER = """#!/usr/bin/env python3
import sys
d = int(sys.argv[sys.argv.index("-d") + 1])
txs = 1000 * d + 200000
print("STM flags    : -DCM=CM_SUICIDE -UTM_STATISTICS")
print("Set size      : 16384 (expected: 16384)")
print("Duration      : %d (ms)" % d)
print("#txs          : %d (%f / s)" % (txs, txs / (d / 1000.0)))
"""


class OutsideClock(unittest.TestCase):
    def test_rates_are_differences(self):
        r = sweep.outside_rates({"commits": 100, "aborts": 10}, 0.5,
                                {"commits": 2100, "aborts": 30}, 2.5)
        self.assertAlmostEqual(r["commits_per_s"], 1000.0)
        self.assertAlmostEqual(r["aborts_per_s"], 10.0)
        self.assertAlmostEqual(r["elapsed_s"], 2.0)
        self.assertNotIn("aborts_per_s", sweep.outside_rates(
            {"commits": 1, "aborts": None}, 0.1, {"commits": 5, "aborts": None}, 0.2))

    def test_commits_per_cpu_second_of_the_difference(self):
        r = sweep.outside_rates({"commits": 100}, 0.5, {"commits": 2100}, 2.5, 0.2, 4.2)
        self.assertAlmostEqual(r["cpu_s"], 4.0)
        self.assertAlmostEqual(r["commits_per_cpu_s"], 500.0)
        self.assertNotIn("commits_per_cpu_s",
                         sweep.outside_rates({"commits": 100}, 0.5, {"commits": 2100}, 2.5))

    def test_a_long_run_no_longer_than_the_short_one_is_an_error(self):
        with self.assertRaisesRegex(adapters.RunFailed, "did not outlast"):
            sweep.outside_rates({"commits": 100}, 1.0, {"commits": 200}, 0.9)
        with self.assertRaisesRegex(adapters.RunFailed, "did not outlast"):
            sweep.outside_rates({"commits": 300}, 0.5, {"commits": 200}, 0.9)

    def test_option_is_checked(self):
        with self.assertRaises(SystemExit):
            sweep.parse_args(["--duration-ms", "100", "--outside-clock", "60"])
        self.assertEqual(sweep.parse_args(["--duration-ms", "100",
                                           "--outside-clock", "50"]).outside_clock, 50)

    def test_a_peer_with_a_late_clock_is_measured_from_outside(self):
        with tempfile.TemporaryDirectory() as d:
            prog = os.path.join(d, "intset-hs")
            with open(prog, "w") as f:
                f.write(FAKE_PEER)
            os.chmod(prog, 0o755)
            peer = adapters.make_peer("tinystm=" + d)
            real = sweep.execute

            def execute(argv, env, timeout):
                # The real process, and a wall time that is exact: 0.2 s of
                # set-up plus the run's -d duration.
                proc, _ = real(argv, env, timeout)
                return proc, 0.2 + int(argv[argv.index("-d") + 1]) / 1000.0

            sweep.execute = execute
            try:
                args = sweep.parse_args(["--duration-ms", "400", "--outside-clock", "20",
                                         "--structures", "hs"])
                point = sweep.build_points(args)[0]
                r = sweep.run_one(0, point, peer, args)
                args.outside_clock = 0
                plain = sweep.run_one(0, point, peer, args)
            finally:
                sweep.execute = real
        self.assertEqual(r["status"], "ok", r.get("error"))
        self.assertAlmostEqual(r["commits_per_s"], 1e6)  # (600000 - 220000) / 0.38 s
        self.assertAlmostEqual(r["commits_per_s_inside"], 1.5e6)
        self.assertEqual(r["clock"], "outside")
        self.assertAlmostEqual(plain["commits_per_s"], 1.5e6)
        self.assertNotIn("clock", plain)
        text = summary.markdown([dict(r, bench="intset", threads=1)])
        self.assertIn("timed from outside the programs (--outside-clock 20)", text)


class Plot(unittest.TestCase):
    def test_plot_writes_a_figure(self):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            self.skipTest("matplotlib is not installed (scripts/install-deps.sh installs it)")
        import plot
        records = []
        for v in ("schedstm-inline-suicide", "schedstm-inline-ser-block"):
            for t, cps in ((1, 1e6), (2, 1.8e6), (8, 1.5e6)):
                records.append(rec(v, t, 0, cps, abort_ratio=0.1))
        with tempfile.TemporaryDirectory() as d:
            jsonl = os.path.join(d, "results.jsonl")
            with open(jsonl, "w") as f:
                for r in records:
                    f.write(json.dumps(r) + "\n")
            plot.plot_file(jsonl, d)
            pngs = [n for n in os.listdir(d) if n.endswith(".png")]
            self.assertTrue(pngs, "no figure written")
            with open(os.path.join(d, pngs[0]), "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")



class PlotCaption(unittest.TestCase):
    def records(self, **extra):
        return [rec(v, t, r, 1e6, **extra) for v in ("a", "b") for t in (2, 8, 64)
                for r in (1, 2, 3)]

    def test_the_caption_says_what_lines_band_and_cpus_are(self):
        import plot
        text = plot.caption_text(self.records(cpus=2, cpu_model="Some CPU"), "a and b: x.")
        self.assertIn("median over the 3 runs of each point", text)
        self.assertIn("min-max over the repetitions", text)
        self.assertIn("The runs had 2 CPUs (Some CPU)", text)
        self.assertIn("the dotted line marks 2 threads", text)
        self.assertIn("oversubscribed", text)
        self.assertTrue(text.endswith("a and b: x."))
        # the count the sweep recorded, not the plotting machine's
        self.assertIn("The runs had 48 CPUs", plot.caption_text(self.records(cpus=48)))
        self.assertNotIn("oversubscribed", plot.caption_text(self.records(cpus=64)))
        self.assertIn("CPU count of the runs was not recorded",
                      plot.caption_text(self.records()))
        self.assertIsNone(plot.run_cpus(self.records(cpus=2) + [rec("a", 2, 4, 1e6, cpus=4)]))
        uneven = self.records(cpus=2)[:-1]
        self.assertIn("median over the 2 to 3 runs", plot.caption_text(uneven))

    def test_relative_series_pairs_runs_of_one_repetition(self):
        import plot
        # a at 8 threads over a at 2, per repetition: 0.5, 0.9, 1.2 (the
        # ratio of medians would be 9/10 = 0.9 too, but from other runs)
        records = [rec("a", 2, 1, 10.0), rec("a", 8, 1, 5.0),
                   rec("a", 2, 2, 20.0), rec("a", 8, 2, 18.0),
                   rec("a", 2, 3, 5.0), rec("a", 8, 3, 6.0),
                   rec("b", 8, 1, 1.0)]
        w = summary.workload_key(records[0])
        (t2, one, lo2, hi2), (t8, med, lo, hi) = plot.relative_series(records, w, "a")
        self.assertEqual((t2, one, lo2, hi2), (2, 1.0, 1.0, 1.0))
        self.assertEqual(t8, 8)
        self.assertAlmostEqual(med, 0.9)
        self.assertAlmostEqual(lo, 0.5)
        self.assertAlmostEqual(hi, 1.2)
        self.assertEqual(plot.relative_series(records, w, "b"), [])  # one thread count
        self.assertIn("The middle panel divides each run",
                      plot.caption_text(records, relative=True))
        self.assertNotIn("middle panel", plot.caption_text(records))

    def test_a_figure_with_its_caption_is_written(self):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            self.skipTest("matplotlib is not installed (scripts/install-deps.sh --demo)")
        import plot
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "f.png")
            plot.plot_records(self.records(cpus=2), out, title="t", caption="c.")
            with open(out, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            plot.plot_records(self.records(cpus=2), out, caption="c.", relative=True)
            with open(out, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")


# ---- the sweep: options, output, failing runs ------------------------------

def write_script(path, text, mode=0o755):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def run_sweep(argv):
    """sweep.main(argv) -> (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = sweep.main(argv)
        except SystemExit as e:
            rc = e.code
    return rc, out.getvalue(), err.getvalue()


@contextlib.contextmanager
def patched(module, name, value):
    real = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, real)


def fake_record(rep, point, variant, status="ok"):
    r = {k: point[k] for k in adapters.RESULT_FIELDS if k in point}
    r.update(variant=variant.label, backend=variant.backend, rep=rep)
    if status == "ok":
        r.update(status="ok", commits_per_s=1000.0, abort_ratio=0.0)
    else:
        r.update(status="fail", error="exit 1: boom")
    return r


class SweepOptions(unittest.TestCase):
    def assert_usage_error(self, argv):
        with contextlib.redirect_stderr(io.StringIO()) as err:
            with self.assertRaises(SystemExit) as cm:
                sweep.parse_args(argv)
        self.assertEqual(cm.exception.code, 2, argv)
        self.assertIn("error:", err.getvalue())

    def test_an_empty_list_of_variants_is_a_usage_error(self):
        # was a ZeroDivisionError in schedule()
        self.assert_usage_error(["--backends", ""])
        self.assert_usage_error(["--backends", ","])
        rc, _, err = run_sweep(["--backends", "", "--dry-run"])
        self.assertEqual(rc, 2)
        self.assertIn("sweep: error: nothing to compare: --backends is empty", err)
        # peers alone are a comparison
        self.assertEqual(sweep.parse_args(["--backends", "", "--peer", "tinystm=/x"]).backends, [])

    def test_values_out_of_range_are_usage_errors(self):
        for argv in (["--threads", "0"], ["--threads", "1,-2"], ["--threads", ","],
                     ["--updates", "101"], ["--updates", "-1"], ["--audits", "120"],
                     ["--timeout-s", "0"], ["--timeout-s", "-5"], ["--initial", "0"],
                     ["--range", "0"], ["--structures", ""], ["--mixes", ","],
                     ["--accounts", "0"]):
            self.assert_usage_error(argv)
        args = sweep.parse_args(["--updates", "0,100", "--timeout-s", "0.5"])
        self.assertEqual((args.updates, args.timeout_s), ([0, 100], 0.5))

    def test_a_peer_program_that_cannot_run_is_an_error_naming_it(self):
        with tempfile.TemporaryDirectory() as d:
            good = os.path.dirname(write_script(os.path.join(d, "good", "intset-ll"), FAKE_PEER))
            noexec = os.path.dirname(write_script(os.path.join(d, "noexec", "intset-ll"),
                                                  FAKE_PEER, mode=0o644))
            empty = os.path.join(d, "empty")
            os.mkdir(empty)
            for peer, problem in ((noexec, "intset-ll is not an executable file"),
                                  (empty, "intset-ll does not exist")):
                # before: a warning, and a sweep of the other variants
                rc, _, err = run_sweep(["--backends", "", "--peer", "tinystm=" + good,
                                        "--peer", "tinystm-x=" + peer, "--structures", "ll",
                                        "--dry-run"])
                self.assertEqual(rc, 2, err)
                self.assertIn(os.path.join(peer, problem), err)


# A stand-in for our intset-schedstm: --list-cms as the library prints it,
# else one JSON result whose rate is its seed (the argv's -s) times 1000.
FAKE_NATIVE = """#!/usr/bin/env python3
import json, sys
if "--list-cms" in sys.argv:
    print("suicide, backoff, ser-block, adaptive, ext (and P+ext for any P above with at "
          "most 7 counters)")
    sys.exit(0)
seed = int(sys.argv[sys.argv.index("-s") + 1])
print(json.dumps({"commits_per_s": 1000.0 * seed, "commits": seed, "aborts": 0,
                  "abort_ratio": 0.0, "elapsed_s": 0.01}))
"""


class SweepValidation(unittest.TestCase):
    """The whole command line is checked before anything runs, and every
    error has the one prefix "sweep: error: "."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.bin = os.path.join(self.tmp.name, "bin")
        for bench in ("intset", "bank", "sb7"):
            write_script(os.path.join(self.bin, "%s-schedstm" % bench), FAKE_NATIVE)
        self.calls = []

    def tearDown(self):
        self.tmp.cleanup()

    def sweep(self, argv):
        def run_one(rep, point, variant, args):
            self.calls.append(rep)
            return fake_record(rep, point, variant)

        out = os.path.join(self.tmp.name, "out")
        with patched(sweep, "run_one", run_one):
            return run_sweep(["--bin-dir", self.bin, "--backends", "schedstm",
                              "--duration-ms", "10", "--reps", "1", "--out", out] + argv)

    def assert_refused(self, argv, message):
        rc, out, err = self.sweep(argv)
        self.assertEqual(rc, 2, (argv, err))
        self.assertEqual(self.calls, [], argv)
        self.assertEqual(out, "", argv)
        lines = err.splitlines()
        self.assertTrue(lines, argv)
        for line in lines:
            self.assertTrue(line.startswith("sweep: error: "), (argv, line))
        self.assertIn(message, err, argv)
        self.assertFalse(os.path.exists(os.path.join(self.tmp.name, "out")), argv)

    def test_bad_thread_lists(self):
        for value, message in (("2,,4", "empty item in '2,,4'"), (",2", "empty item"),
                               ("2,", "empty item"), ("0", "must be positive"),
                               ("-1", "must be positive"), ("1,-2", "must be positive"),
                               ("abc", "expected comma-separated integers: 'abc'"),
                               ("2.5", "expected comma-separated integers"), ("", "at least one")):
            self.assert_refused(["--threads", value], message)
        self.assert_refused(["--threads=-1"], "must be positive")

    def test_bad_designs_and_policies(self):
        self.assert_refused(["--designs", "etl,tl2"], "unknown design(s) tl2 (valid: etl,ctl)")
        self.assert_refused(["--designs", "etl,,ctl"], "empty item")
        self.assert_refused(["--cms", "suicide,,backoff"], "empty item")
        self.assert_refused(["--cms", "Suicide"], "bad contention manager name(s) Suicide")
        # a name the binary does not list (asked with --list-cms)
        self.assert_refused(["--cms", "suicide,ser-blok"],
                            "unknown contention manager(s) ser-blok for intset-schedstm "
                            "(valid: suicide, backoff, ser-block, adaptive")
        self.assert_refused(["--cms", "bogus+ext"], "unknown contention manager(s) bogus+ext")
        rc, _, err = self.sweep(["--cms", "suicide,ser-block+ext,ext,adaptive", "--threads", "1",
                                 "--structures", "ll"])
        self.assertEqual(rc, 0, err)
        self.assertEqual(len(self.calls), 4)

    def test_options_that_do_not_apply(self):
        for argv, message in (
                (["--bench", "bank", "--structures", "ll"],
                 "--structures does not apply to --bench bank (it is an option of --bench intset)"),
                (["--bench", "bank", "--updates", "20"], "--updates does not apply"),
                (["--bench", "sb7", "--initial", "64"], "--initial does not apply"),
                (["--bench", "intset", "--accounts", "64"], "--accounts does not apply"),
                (["--audits", "10"], "--audits does not apply to --bench intset"),
                (["--mixes", "r"], "--mixes does not apply"),
                (["--bench", "bank", "--scale", "2"], "--scale does not apply"),
                (["--backends", "itm", "--cms", "suicide"],
                 "--cms applies to the schedstm back-ends"),
                (["--backends", "seq", "--designs", "ctl"], "--designs applies"),
                (["--itm-method", "ml_wt"], "--itm-method applies to the itm back-end")):
            self.assert_refused(argv, message)

    def test_argparse_errors_have_the_same_prefix(self):
        self.assert_refused(["--bench", "tpcc"], "invalid choice: 'tpcc'")
        self.assert_refused(["--reps", "x"], "invalid int value")
        self.assert_refused(["--no-such-option"], "unrecognized arguments")


class SweepRecords(unittest.TestCase):
    def test_rep_is_numbered_alike_in_records_csv_summary_and_progress(self):
        with tempfile.TemporaryDirectory() as d:
            bin_dir = os.path.join(d, "bin")
            write_script(os.path.join(bin_dir, "intset-schedstm"), FAKE_NATIVE)
            write_script(os.path.join(bin_dir, "intset-seq"), "#!/bin/sh\nexit 3\n")
            out = os.path.join(d, "out")
            rc, _, err = run_sweep(["--bin-dir", bin_dir, "--backends", "schedstm,seq",
                                    "--structures", "ll", "--threads", "1", "--reps", "2",
                                    "--seed", "5", "--duration-ms", "10", "--out", out])
            self.assertEqual(rc, 1, err)  # seq fails
            with open(os.path.join(out, "results.jsonl")) as f:
                records = [json.loads(line) for line in f]
            with open(os.path.join(out, "results.csv")) as f:
                import csv
                rows = list(csv.DictReader(f))
            with open(os.path.join(out, "summary.md")) as f:
                text = f.read()
        progress = [line for line in err.splitlines() if line.startswith("[")]
        self.assertEqual([r["rep"] for r in records], [1, 1, 2, 2])
        self.assertEqual([row["rep"] for row in rows], ["1", "1", "2", "2"])
        self.assertEqual([line.split()[3] for line in progress], ["1", "1", "2", "2"])
        # repetition r runs with seed + r - 1
        ok = [r for r in records if r["status"] == "ok"]
        self.assertEqual([(r["rep"], r["seed"], r["commits_per_s"]) for r in ok],
                         [(1, 5, 5000.0), (2, 6, 6000.0)])
        self.assertIn("- seq ll1k 20% upd n=1 rep 1: exit 3", text)
        self.assertIn("- seq ll1k 20% upd n=1 rep 2: exit 3", text)

    def test_records_carry_their_provenance(self):
        with tempfile.TemporaryDirectory() as d:
            bin_dir = os.path.join(d, "bin")
            write_script(os.path.join(bin_dir, "intset-schedstm"), FAKE_NATIVE)
            out = os.path.join(d, "out")
            rc, _, err = run_sweep(["--bin-dir", bin_dir, "--backends", "schedstm",
                                    "--structures", "ll", "--threads", "1", "--reps", "1",
                                    "--duration-ms", "10", "--out", out])
            self.assertEqual(rc, 0, err)
            with open(os.path.join(out, "results.jsonl")) as f:
                (r,) = map(json.loads, f)
            with open(os.path.join(out, "results.csv")) as f:
                import csv
                (row,) = csv.DictReader(f)
            with open(os.path.join(out, "summary.md")) as f:
                text = f.read()
        self.assertEqual(r["cpus"], len(os.sched_getaffinity(0)))
        self.assertEqual(r["kernel"], os.uname().release)
        self.assertTrue(r["cpu_model"])
        self.assertRegex(r["date"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        self.assertIsNone(r["compiler"])  # a script has no ELF .comment
        if shutil.which("git") and os.path.exists(os.path.join(ROOT, ".git")):
            self.assertRegex(r["git_commit"], r"^[0-9a-f]{40}$")
            self.assertIsInstance(r["git_dirty"], bool)
        for field in ("date", "git_commit", "git_dirty", "compiler", "cpu_model", "cpus",
                      "kernel"):
            self.assertIn(field, row)
        self.assertEqual(row["kernel"], r["kernel"])
        self.assertIn("Measured on %s, %d CPUs; Linux %s" % (r["cpu_model"], r["cpus"],
                                                             r["kernel"]), text)

    def test_the_compiler_is_read_from_the_program(self):
        cc = shutil.which("gcc")
        if cc is None or shutil.which("readelf") is None:
            self.skipTest("no gcc or readelf")
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "p.c")
            with open(src, "w") as f:
                f.write("int main(void) { return 0; }\n")
            subprocess.run([cc, src, "-o", os.path.join(d, "p")], check=True)
            version = subprocess.run([cc, "-dumpfullversion"], capture_output=True,
                                     text=True).stdout.strip()
            self.assertIn("GCC: ", sweep.compiler_of(os.path.join(d, "p")))
            self.assertIn(version, sweep.compiler_of(os.path.join(d, "p")))
            self.assertIsNone(sweep.compiler_of(src))


class SweepOutput(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.peer = os.path.dirname(write_script(os.path.join(self.dir, "peer", "intset-ll"),
                                                 FAKE_PEER))
        self.out = os.path.join(self.dir, "out")
        self.argv = ["--backends", "", "--peer", "tinystm=" + self.peer, "--structures", "ll",
                     "--threads", "1", "--duration-ms", "10", "--out", self.out]

    def tearDown(self):
        self.tmp.cleanup()

    def test_an_unusable_out_is_an_error_before_the_first_run(self):
        afile = os.path.join(self.dir, "afile")
        open(afile, "w").close()
        calls = []

        def run_one(rep, point, variant, args):
            calls.append(rep)
            return fake_record(rep, point, variant)

        for out in (afile, os.path.join(afile, "sub")):
            argv = self.argv[:-1] + [out]
            with patched(sweep, "run_one", run_one):
                rc, _, err = run_sweep(argv)
            self.assertEqual(rc, 2)
            self.assertIn("cannot write the results in --out " + out, err)
        self.assertEqual(calls, [])

    def test_records_are_written_as_runs_end_and_ctrl_c_keeps_them(self):
        seen = []

        def run_one(rep, point, variant, args):
            if rep == 2:
                with open(os.path.join(self.out, "results.jsonl")) as f:
                    seen.append(f.read().count("\n"))
                raise KeyboardInterrupt
            return fake_record(rep, point, variant)

        with patched(sweep, "run_one", run_one):
            rc, _, err = run_sweep(self.argv + ["--reps", "3"])
        self.assertEqual(rc, 130)
        self.assertEqual(seen, [1])  # the first run's record was on disk when it ended
        self.assertIn("interrupted after 1 of 3 runs", err)
        self.assertNotIn("Traceback", err)
        with open(os.path.join(self.out, "results.jsonl")) as f:
            self.assertEqual([json.loads(line)["rep"] for line in f], [1])
        with open(os.path.join(self.out, "results.csv")) as f:
            self.assertEqual(len(f.read().splitlines()), 2)
        with open(os.path.join(self.out, "summary.md")) as f:
            self.assertIn("| ll1k 20% upd | 1 | 1.0 k |", f.read())

    def test_plot_without_a_successful_run_keeps_the_results(self):
        def run_one(rep, point, variant, args):
            return fake_record(rep, point, variant, status="fail")

        with patched(sweep, "run_one", run_one):
            rc, out, err = run_sweep(self.argv + ["--reps", "1", "--plot"])
        self.assertEqual(rc, 1)  # as for any sweep with a failed run
        self.assertIn("sweep: warning: no plot:", err)
        self.assertIn("Failed runs (1)", out)
        self.assertTrue(os.path.exists(os.path.join(self.out, "summary.md")))

    def test_output_that_is_not_utf8_is_a_failed_run(self):
        bad = os.path.dirname(write_script(os.path.join(self.dir, "bad", "intset-ll"),
                                           "#!/bin/sh\nprintf '\\377\\376 garbage\\n'\n"))
        rc, _, err = run_sweep(self.argv + ["--peer", "tinystm-bad=" + bad, "--reps", "1"])
        self.assertEqual(rc, 1, err)
        with open(os.path.join(self.out, "results.jsonl")) as f:
            records = {r["variant"]: r for r in map(json.loads, f)}
        self.assertEqual(records["tinystm"]["status"], "ok")
        self.assertEqual(records["tinystm-bad"]["status"], "fail")
        self.assertIn("no '#txs' line in TinySTM output: \ufffd\ufffd garbage",
                      records["tinystm-bad"]["error"])


class FailedRuns(unittest.TestCase):
    def test_a_run_killed_by_a_signal_names_it(self):
        for v in (adapters.NativeVariant("schedstm", "schedstm", "/bin"),
                  adapters.TinySTMVariant("tinystm", "/tmp")):
            with self.assertRaisesRegex(adapters.RunFailed, r"^killed by SIGSEGV \(signal 11\)$"):
                v.parse("", "", -signal.SIGSEGV)
        self.assertEqual(adapters.describe_exit(3), "exit 3")

    def test_failed_repetitions_are_counted_from_one_as_in_the_progress(self):
        text = summary.markdown([rec("a", 2, 1, 5e6),
                                 dict(rec("a", 2, 1, 0), variant="b", status="fail",
                                      error="exit 1: boom")])
        self.assertIn("- b hs 50% upd n=2 rep 1: exit 1: boom", text)

    def test_a_timeout_kills_the_whole_process_group(self):
        with tempfile.TemporaryDirectory() as d:
            pidfile = os.path.join(d, "pid")
            # a wrapper script whose child outlives it unless its group is killed
            prog = write_script(os.path.join(d, "wrapper"),
                                "#!/bin/sh\nsleep 300 &\necho $! >%s\nwait\n" % pidfile)
            # On a loaded machine the wrapper may be killed before it has
            # started its child: then nothing was tested, and the run is
            # repeated with a longer timeout (no verdict depends on speed).
            timeout = 1.0
            while True:
                with self.assertRaises(subprocess.TimeoutExpired):
                    sweep.execute([prog], {}, timeout)
                try:
                    with open(pidfile) as f:
                        pid = int(f.read())
                    break
                except (FileNotFoundError, ValueError):
                    timeout *= 2
        try:
            # SIGKILL is sent; wait for the process to be gone (no time
            # limit here: ctest's timeout ends a wait that never would)
            while _alive(pid):
                time.sleep(0.05)
        finally:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def _alive(pid):
    """True while pid runs (not gone, not a zombie)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class PlotRobustness(unittest.TestCase):
    def write_results(self, d, lines):
        path = os.path.join(d, "results.jsonl")
        with open(path, "w") as f:
            f.write("".join(line + "\n" for line in lines))
        return path

    def test_lines_that_are_not_records_are_skipped_with_a_warning(self):
        import plot
        good = [rec("a", t, 0, 1e6 * t) for t in (1, 2)]
        with tempfile.TemporaryDirectory() as d:
            path = self.write_results(d, ["[1, 2]", '"text"', '{"variant": "a"}',
                                          '{"threads": 2}'] + [json.dumps(r) for r in good])
            with contextlib.redirect_stderr(io.StringIO()) as err:
                records = plot.load(path)
            self.assertEqual(records, good)
            self.assertEqual(err.getvalue().count("plot: warning: "), 4)
            self.assertIn("line 1 skipped: not a JSON object", err.getvalue())
            # a last line cut short (a sweep killed while writing it)
            path = self.write_results(d, [json.dumps(good[0]), '{"variant": "a", "thr'])
            with contextlib.redirect_stderr(io.StringIO()) as err:
                self.assertEqual(plot.load(path), good[:1])
            self.assertIn("line 2 skipped: not JSON", err.getvalue())
            try:
                import matplotlib  # noqa: F401
            except ImportError:
                return
            out = os.path.join(d, "f.png")
            self.assertEqual(plot.plot_records(good + [[1], {"variant": "a"}, "x"], out), out)

    def test_without_matplotlib_plot_says_how_to_install_it(self):
        with tempfile.TemporaryDirectory() as d:
            path = self.write_results(d, [json.dumps(rec("a", 1, 0, 1e6))])
            code = ("import runpy, sys; sys.modules['matplotlib'] = None; "
                    "sys.argv = ['plot.py', %r]; "
                    "runpy.run_path(%r, run_name='__main__')"
                    % (path, os.path.join(ROOT, "bench", "harness", "plot.py")))
            proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 1)
        self.assertNotIn("Traceback", proc.stderr)
        self.assertIn("matplotlib is not installed: run scripts/install-deps.sh --demo",
                      proc.stderr)

    def test_the_scripts_with_a_shebang_are_executable(self):
        for name in ("sweep.py", "plot.py"):
            path = os.path.join(ROOT, "bench", "harness", name)
            with open(path) as f:
                self.assertTrue(f.readline().startswith("#!"), name)
            self.assertTrue(os.stat(path).st_mode & stat.S_IXUSR, "%s is not executable" % name)


# ---- review of 2026-11-25: rotation, pairing, outside clock, bad results ----

class _Fake(adapters.Variant):
    """A variant that runs the points whose thread count it is given."""

    def __init__(self, label, threads=None):
        super().__init__(label, label)
        self.threads = threads

    def supports(self, point):
        return self.threads is None or point["threads"] in self.threads


class Rotation(unittest.TestCase):
    def orders(self, variants, threads, reps):
        runs = sweep.schedule([{"threads": threads}], variants, reps)
        out = {}
        for rep, _, v in runs:
            out.setdefault(rep, []).append(v.label)
        return [out[r] for r in range(1, reps + 1)]

    def test_the_order_rotates_with_the_repetition(self):
        variants = [_Fake("a"), _Fake("b"), _Fake("c")]
        self.assertEqual(self.orders(variants, 1, 4),
                         [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"], ["a", "b", "c"]])

    def test_variants_that_skip_a_point_do_not_stall_the_rotation(self):
        # seq runs 1 thread only, the peer not this benchmark: at 4 threads
        # a and b must take the first slot in turn (before: a, b, a, a).
        variants = [_Fake("a"), _Fake("b"), _Fake("seq", threads=(1,)), _Fake("peer", threads=())]
        self.assertEqual(self.orders(variants, 4, 4),
                         [["a", "b"], ["b", "a"], ["a", "b"], ["b", "a"]])

    def test_repetition_r_runs_with_seed_plus_r(self):
        with tempfile.TemporaryDirectory() as d:
            peer = os.path.dirname(write_script(os.path.join(d, "p", "intset-ll"), FAKE_PEER))
            rc, out, err = run_sweep(["--backends", "", "--peer", "tinystm=" + peer,
                                      "--structures", "ll", "--threads", "1", "--reps", "3",
                                      "--seed", "5", "--dry-run"])
        self.assertEqual(rc, 0, err)
        seeds = [line.split()[line.split().index("-s") + 1] for line in out.splitlines()]
        self.assertEqual(seeds, ["5", "6", "7"])
        # and the runs themselves (run_one builds its own command line)
        argvs = []

        def execute(argv, env, timeout):
            argvs.append(argv)
            return subprocess.CompletedProcess(argv, 0, "#txs : 1 (1.0 / s)\n", ""), 1.0

        args = sweep.parse_args(["--seed", "5", "--structures", "ll"])
        peer = adapters.TinySTMVariant("tinystm", "/nonexistent")
        with patched(sweep, "execute", execute):
            records = [sweep.run_one(rep, sweep.build_points(args)[0], peer, args)
                       for rep in (1, 2, 3)]
        self.assertEqual([a[a.index("-s") + 1] for a in argvs], ["5", "6", "7"])
        self.assertEqual([r["seed"] for r in records], [5, 6, 7])

    def test_values_given_twice_run_once(self):
        args = sweep.parse_args(["--structures", "ll,rb,ll", "--threads", "1,2,1"])
        self.assertEqual((args.structures, args.threads), (["ll", "rb"], [1, 2]))


class PairingEdges(unittest.TestCase):
    W = ("intset", "hs", None, 50)

    def test_an_even_number_of_repetitions_takes_the_mean_of_the_middle_two(self):
        records = [rec("a", 2, 0, 1e6), rec("b", 2, 0, 1e6),
                   rec("a", 2, 1, 1e6), rec("b", 2, 1, 2e6)]
        self.assertAlmostEqual(summary.paired_ratio(records, self.W, 2, "b", "a")[0], 1.5)

    def test_a_repetition_at_zero_commits_is_a_ratio_of_zero(self):
        # before: left out of the ratio (2.00x) but not of the median (0)
        records = []
        for rep, b in enumerate((0.0, 0.0, 2e6)):
            records += [rec("a", 2, rep, 1e6), rec("b", 2, rep, b)]
        self.assertEqual(summary.paired_ratio(records, self.W, 2, "b", "a"), (0.0, False))

    def test_a_baseline_that_failed_is_not_replaced_by_its_one_thread_runs(self):
        records = [rec("a", 1, 0, 1e6), dict(rec("a", 2, 0, 5e6), status="fail", error="boom"),
                   rec("b", 2, 0, 3e6)]
        self.assertEqual(summary.paired_ratio(records, self.W, 2, "b", "a"), (None, False))
        self.assertNotIn("baseline measured at 1 thread only", summary.markdown(records, "a"))

    def test_pooled_sweeps_pair_within_their_own_sweep(self):
        # two sweeps (seeds 1 and 7), 3 repetitions each: ratios 2, 2, 2, 1, 1, 1
        records = []
        for seed, b in ((1, 2e6), (7, 1e6)):
            for rep in range(3):
                records += [rec("a", 2, rep, 1e6, seed=seed + rep),
                            rec("b", 2, rep, b, seed=seed + rep)]
        self.assertAlmostEqual(summary.paired_ratio(records, self.W, 2, "b", "a")[0], 1.5)


class Scaling(unittest.TestCase):
    W = ("intset", "hs", None, 50)

    def test_share_pairs_each_thread_count_with_the_base_of_its_repetition(self):
        # a at 64 over a at 2, per repetition: 0.5, 0.9, 1.0 -> 90 %; the
        # ratio of medians (5 M / 10 M = 50 %) would pair runs of different
        # repetitions, made in different phases of the machine.
        records = []
        for rep, (two, many) in enumerate(((10e6, 5e6), (20e6, 18e6), (4e6, 4e6))):
            records += [rec("a", 2, rep, two), rec("a", 64, rep, many),
                        rec("b", 2, rep, 10e6), rec("b", 64, rep, 5e6)]
        self.assertAlmostEqual(summary.scaling_ratio(records, self.W, 64, "a", 2), 0.9)
        self.assertEqual(summary.scaling_base(summary.group(records), self.W), 2)
        text = summary.markdown(records)
        self.assertIn("| hs 50% upd | 64 / 2 | 90 % | 50 % | a 90 % |", text)

    def test_five_pairs_give_the_share_an_interval(self):
        # a keeps 0.80-1.00 of its 2-thread rate in five repetitions: the
        # median 90 % with the interval of that median; b ran four.
        records = []
        for rep, kept in enumerate((0.8, 0.85, 0.9, 0.95, 1.0)):
            records += [rec("a", 2, rep, 10e6), rec("a", 64, rep, 10e6 * kept)]
            if rep < 4:
                records += [rec("b", 2, rep, 10e6), rec("b", 64, rep, 5e6)]
        lo, hi = summary.median_interval([0.8, 0.85, 0.9, 0.95, 1.0])
        text = summary.markdown(records)
        self.assertIn("| hs 50%% upd | 64 / 2 | 90 %% (%.0f-%.0f) | 50 %% | a 90 %% |"
                      % (100 * lo, 100 * hi), text)

    def test_base_is_two_threads_when_measured_else_the_smallest(self):
        with_one = [rec("a", t, 0, 1e6) for t in (1, 2, 8)]
        without_two = [rec("a", t, 0, 1e6) for t in (4, 8)]
        only_one = [rec("a", 1, 0, 1e6), rec("a", 2, 0, 1e6)]
        g = summary.group
        self.assertEqual(summary.scaling_base(g(with_one), self.W), 2)
        self.assertEqual(summary.scaling_base(g(without_two), self.W), 4)
        self.assertEqual(summary.scaling_base(g(only_one), self.W), 1)
        self.assertIsNone(summary.scaling_base(g([rec("a", 8, 0, 1e6)]), self.W))
        text = summary.markdown(with_one)
        self.assertIn("| hs 50% upd | 8 / 2 | 100 % | a 100 % |", text)
        self.assertNotIn("| 1 / 2 |", text)

    def test_a_variant_without_its_base_run_has_no_share(self):
        records = [rec("a", 2, 0, 1e6), rec("a", 8, 0, 2e6),
                   dict(rec("b", 2, 0, 1e6), status="fail", error="boom"), rec("b", 8, 0, 1e6)]
        self.assertIsNone(summary.scaling_ratio(records, self.W, 8, "b", 2))
        self.assertIn("| hs 50% upd | 8 / 2 | 200 % | - | a 200 % |", summary.markdown(records))

    def test_a_single_thread_count_has_no_scaling_table(self):
        self.assertNotIn("Scaling:", summary.markdown([rec("a", 2, 0, 1e6), rec("b", 2, 0, 2e6)]))


class AdaptiveEdges(unittest.TestCase):
    def test_fixed_policies_of_another_back_end_are_not_compared(self):
        records = []
        for rep in range(3):
            for backend, scale in (("schedstm", 1), ("schedstm-inline", 2)):
                for cm, cps in (("suicide", 1e6), ("yield", 2e6), ("adaptive", 2e6)):
                    records.append(rec("%s-%s" % (backend, cm), 8, rep, cps * scale,
                                       backend=backend, cm=cm, cm_wait_s=0.1, elapsed_s=1.0))
        table = summary.markdown(records)
        table = table[table.index("Adaptive against"):]
        self.assertIn("| schedstm-adaptive | schedstm-yield | 1.00x |", table)
        self.assertIn("| schedstm-inline-adaptive | schedstm-inline-yield | 1.00x |", table)

    def test_within_ten_percent_counts_the_ratio_not_its_rounding(self):
        def r(cm, threads, cps):
            return rec("s-" + cm, threads, 0, cps, cm_wait_s=0.0, elapsed_s=1.0)
        records = [r("suicide", 2, 5e5), r("yield", 2, 1e6), r("adaptive", 2, 0.85e6),
                   r("suicide", 4, 5e5), r("yield", 4, 1e6), r("adaptive", 4, 0.8996e6),
                   r("suicide", 8, 5e5), r("yield", 8, 1e6), r("adaptive", 8, 0.95e6)]
        table = summary.markdown(records)
        self.assertIn("| s-adaptive | s-yield | 0.90x |", table)  # 0.8996
        self.assertIn("Within 10 %: 1 of 3.", table)


class OutsideClockEdges(unittest.TestCase):
    def test_no_difference_is_an_error_not_a_rate(self):
        for short, long_ in (((100, 1.0), (200, 1.0)), ((100, 0.5), (100, 1.0))):
            with self.assertRaisesRegex(adapters.RunFailed, "did not outlast"):
                sweep.outside_rates({"commits": short[0]}, short[1],
                                    {"commits": long_[0]}, long_[1])

    def test_the_short_run_lasts_outside_clock_ms(self):
        durations = []

        def execute(argv, env, timeout):
            d = int(argv[argv.index("-d") + 1])
            durations.append(d)
            out = "#txs          : %d (%f / s)\n" % (1000 * d, 1e6)
            return subprocess.CompletedProcess(argv, 0, out, ""), 0.1 + d / 1000.0

        peer = adapters.TinySTMVariant("tinystm", "/nonexistent")
        args = sweep.parse_args(["--duration-ms", "400", "--outside-clock", "20",
                                 "--structures", "hs"])
        with patched(sweep, "execute", execute):
            r = sweep.run_one(0, sweep.build_points(args)[0], peer, args)
        self.assertEqual(durations, [20, 400])
        self.assertEqual(r["status"], "ok", r.get("error"))
        self.assertAlmostEqual(r["commits_per_s"], 1e6)

    def test_policy_time_goes_with_the_programs_own_clock(self):
        # --outside-clock 500 of 1000 ms: elapsed_s is 0.5 s (the difference),
        # while cm_wait_s and cm_stats count the whole 1 s run (before: 2x).
        r = rec("schedstm-a", 2, 0, 1e6, cm_wait_s=1.0, elapsed_s=0.5, elapsed_s_inside=1.0,
                clock="outside", cm_stats={"prio_changes": 100})
        self.assertAlmostEqual(summary.policy_wait_share(r), 1.0)
        self.assertAlmostEqual(summary.prio_changes_per_s(r), 100.0)


class UnusableResults(unittest.TestCase):
    def test_a_result_without_a_rate_or_with_a_non_number_is_a_failed_run(self):
        for parsed in ({}, {"commits": 5}, {"commits_per_s": True},
                       {"commits_per_s": 1.0, "abort_ratio": "0.1"}):
            with self.assertRaises(adapters.RunFailed, msg=parsed):
                sweep.check_numbers(parsed)
        sweep.check_numbers({"commits_per_s": 0.0, "aborts": None})

    def test_a_native_binary_that_prints_an_empty_object_fails_its_run(self):
        with tempfile.TemporaryDirectory() as d:
            write_script(os.path.join(d, "intset-schedstm"), "#!/bin/sh\necho '{}'\n")
            out = os.path.join(d, "out")
            rc, _, err = run_sweep(["--bin-dir", d, "--backends", "schedstm", "--structures",
                                    "ll", "--threads", "1", "--reps", "1", "--duration-ms", "10",
                                    "--out", out])
            self.assertEqual(rc, 1, err)
            with open(os.path.join(out, "results.jsonl")) as f:
                (r,) = map(json.loads, f)
        self.assertEqual(r["status"], "fail")
        self.assertIn("no commits_per_s", r["error"])

    def test_a_failed_sb7_run_keeps_its_scale(self):
        point = {"bench": "sb7", "threads": 1, "duration_ms": 10, "structure": "sb7",
                 "update": "rw", "mix": "rw", "long": 1, "scale": 2}
        v = adapters.NativeVariant("schedstm", "schedstm", "/nonexistent")
        args = sweep.parse_args(["--bench", "sb7"])
        r = sweep.run_guarded(1, point, v, args)
        self.assertEqual(r["status"], "fail")
        self.assertIn("- schedstm sb7 read-write x2 n=1 rep 1:", summary.markdown([r]))


class SweepDefaults(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.peer = os.path.dirname(write_script(os.path.join(self.dir, "p", "intset-ll"),
                                                 FAKE_PEER))

    def tearDown(self):
        self.tmp.cleanup()

    def test_the_default_baseline_is_the_first_variant(self):
        def run_one(rep, point, variant, args):
            return fake_record(rep, point, variant)

        argv = ["--backends", "", "--peer", "tinystm-b=" + self.peer, "--peer",
                "tinystm-a=" + self.peer, "--structures", "ll", "--threads", "1",
                "--reps", "2", "--out", os.path.join(self.dir, "out")]
        with patched(sweep, "run_one", run_one):
            rc, out, err = run_sweep(argv)
        self.assertEqual(rc, 0, err)
        self.assertIn("| tinystm-a / tinystm-b |", out)

    def test_sweeps_started_in_the_same_second_get_their_own_directories(self):
        import datetime
        import types

        class Frozen(datetime.datetime):  # both sweeps start at the same second
            @classmethod
            def now(cls, tz=None):
                return cls(2026, 11, 25, 10, 52, 55)

        with patched(sweep, "REPO", self.dir), \
                patched(sweep, "datetime", types.SimpleNamespace(datetime=Frozen)):
            first, second = sweep.new_default_out_dir(), sweep.new_default_out_dir()
        self.assertEqual(os.path.basename(first), "sweep-20261125-105255")
        self.assertEqual(os.path.basename(second), "sweep-20261125-105255-2")
        self.assertTrue(os.path.isdir(first) and os.path.isdir(second))

    def test_an_out_with_earlier_results_is_named_in_a_warning(self):
        def run_one(rep, point, variant, args):
            return fake_record(rep, point, variant)

        out = os.path.join(self.dir, "out")
        argv = ["--backends", "", "--peer", "tinystm=" + self.peer, "--structures", "ll",
                "--threads", "1", "--reps", "1", "--out", out]
        with patched(sweep, "run_one", run_one):
            _, _, err = run_sweep(argv)
            self.assertNotIn("earlier sweep", err)
            _, _, err = run_sweep(argv)
        self.assertIn("sweep: warning: --out %s holds the results of an earlier sweep" % out, err)

    def test_an_infinite_timeout_is_a_usage_error(self):
        # before: every run failed with OverflowError in communicate()
        with contextlib.redirect_stderr(io.StringIO()) as err:
            with self.assertRaises(SystemExit):
                sweep.parse_args(["--timeout-s", "inf"])
        self.assertIn("positive and finite", err.getvalue())


# ---- the set-up scripts, against stand-ins for the tools they call ----------

class SetupScripts(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.bin = os.path.join(self.dir, "bin")
        os.mkdir(self.bin)

    def tearDown(self):
        self.tmp.cleanup()

    def link_tools(self, *tools):
        for tool in tools:
            real = shutil.which(tool)
            if real is None:
                self.skipTest("%s is not installed" % tool)
            os.symlink(real, os.path.join(self.bin, tool))

    def copy_script(self, rel):
        dst = os.path.join(self.dir, "tree", rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy(os.path.join(ROOT, rel), dst)
        return dst

    def run_script(self, path, args=(), env=None, path_var=None):
        full = dict(os.environ, PATH=path_var or self.bin + os.pathsep + os.environ["PATH"])
        full.update(env or {})
        return subprocess.run([shutil.which("bash") or "/bin/bash", path] + list(args),
                              capture_output=True, text=True, env=full, timeout=120)

    def test_install_deps_asks_only_for_what_its_options_need(self):
        # Everything the README lists for building, no ninja, no clang, a
        # python3 without pip, and not root: nothing is to be installed
        # without options.
        self.link_tools("bash", "env", "dirname", "cut", "sed", "cat", "grep", "sh",
                        "cmake", "gcc", "g++", "make", "pkg-config", "readelf")
        log = os.path.join(self.dir, "apt.log")
        write_script(os.path.join(self.bin, "id"), "#!/bin/sh\necho 1000\n")
        write_script(os.path.join(self.bin, "sudo"), '#!/bin/sh\nexec "$@"\n')
        write_script(os.path.join(self.bin, "apt-get"), '#!/bin/sh\necho "$*" >>%s\n' % log)
        write_script(os.path.join(self.bin, "python3"),
                     '#!/bin/sh\nif [ "$1" = -m ] && [ "$2" = pip ]; then exit 1; fi\n'
                     'exec %s "$@"\n' % sys.executable)
        proc = self.run_script(os.path.join(ROOT, "scripts", "install-deps.sh"),
                               path_var=self.bin)
        asked = open(log).read() if os.path.exists(log) else ""
        self.assertNotIn("ninja", asked)
        self.assertNotIn("pip", asked)
        self.assertNotIn("clang", asked)  # only the test suite needs it
        if not asked:  # on a machine that has the compilers' libraries too
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        # The test suite's clang build: asked for with --tests (no clang on PATH).
        proc = self.run_script(os.path.join(ROOT, "scripts", "install-deps.sh"), ["--tests"],
                               path_var=self.bin)
        asked = open(log).read() if os.path.exists(log) else ""
        self.assertRegex(asked, r"install .*\bclang(\s|$)", proc.stdout + proc.stderr)
        self.assertRegex(asked, r"install .*\bclang-format\b", proc.stdout + proc.stderr)

    def test_install_deps_without_root_or_sudo_names_all_that_is_missing(self):
        # A fresh machine, a user who is not root and has no sudo: one
        # message names every package (the first apt-get batch, the C
        # library's headers that depend on gcc, python3-venv for --demo) and
        # the command that installs them; apt-get is never called.
        self.link_tools("bash", "env", "dirname", "sed", "cat", "grep", "sh")
        log = os.path.join(self.dir, "apt.log")
        write_script(os.path.join(self.bin, "id"), "#!/bin/sh\necho 1000\n")
        write_script(os.path.join(self.bin, "apt-get"), '#!/bin/sh\necho "$*" >>%s\n' % log)
        proc = self.run_script(os.path.join(ROOT, "scripts", "install-deps.sh"), ["--demo"],
                               path_var=self.bin)
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertFalse(os.path.exists(log), "apt-get was called without root or sudo")
        line = [ln for ln in proc.stderr.splitlines() if "apt-get install" in ln]
        self.assertEqual(len(line), 1, proc.stderr)
        for pkg in ("cmake", "gcc", "g++", "make", "python3", "libc6-dev", "python3-venv"):
            self.assertIn(" %s " % pkg, line[0] + " ", proc.stderr)
        self.assertNotIn("sudo", proc.stderr.replace("no sudo", ""))

    def venv_stubs(self, ensurepip=True):
        """Stand-ins for python3 and apt-get that log their calls; python3
        -m venv DIR makes DIR/bin/python, a stand-in that logs too and
        answers -m pip itself. Without ensurepip, -m venv fails until
        apt-get has installed python3-venv. Returns the log's path."""
        self.link_tools("bash", "env", "dirname", "cut", "sed", "cat", "grep", "sh", "rm",
                        "mkdir", "touch", "chmod", "cmake", "gcc", "g++", "make", "pkg-config",
                        "readelf")
        log = os.path.join(self.dir, "calls.log")
        marker = os.path.join(self.dir, "python3-venv-installed")
        write_script(os.path.join(self.bin, "id"), "#!/bin/sh\necho 0\n")
        write_script(os.path.join(self.bin, "apt-get"),
                     '#!/bin/sh\necho "apt-get $*" >>%s\n'
                     'case "$*" in *python3-venv*) touch %s ;; esac\n' % (log, marker))
        # its packages: none until "-m pip install" (then all of them)
        venv_python = ('#!/bin/sh\necho "venv-python $*" >>%s\n'
                       'installed="$(dirname "$0")/../installed"\n'
                       'if [ "$1" = -m ] && [ "$2" = pip ]; then\n'
                       '  if [ "$3" = install ]; then touch "$installed"; fi; exit 0\n'
                       'fi\n'
                       'if [ "$1" = - ]; then\n'
                       '  cat >/dev/null; [ -e "$installed" ] || echo matplotlib; exit 0\n'
                       'fi\n'
                       'exit 1\n' % log)
        write_script(os.path.join(self.bin, "python3"),
                     '#!/bin/sh\necho "python3 $*" >>%s\n'
                     'if [ "$1" = -m ] && [ "$2" = venv ]; then\n'
                     '  [ %s = 1 ] || [ -e %s ] || { mkdir -p "$3"; exit 1; }\n'
                     '  mkdir -p "$3/bin" && touch "$3/pyvenv.cfg"\n'
                     "  cat >\"$3/bin/python\" <<'EOF'\n%sEOF\n"
                     '  chmod +x "$3/bin/python"; exit 0\n'
                     'fi\n'
                     'if [ "$1" = -m ] && [ "$2" = pip ]; then exit 1; fi\n'
                     'exec %s "$@"\n'
                     % (log, 1 if ensurepip else 0, marker, venv_python, sys.executable))
        return log

    def test_install_deps_demo_installs_into_a_virtual_environment(self):
        log = self.venv_stubs()
        venv = os.path.join(self.dir, "venv")
        req = os.path.join(ROOT, "bench", "requirements.txt")
        proc = self.run_script(os.path.join(ROOT, "scripts", "install-deps.sh"), ["--demo"],
                               env={"SCHEDSTM_VENV": venv}, path_var=self.bin)
        calls = open(log).read()
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr + calls)
        self.assertIn("python3 -m venv %s\n" % venv, calls)
        # the packages that are missing (this stand-in has none of them) go
        # into the environment, with its interpreter
        self.assertIn("venv-python -m pip install --disable-pip-version-check -q -r %s" % req,
                      calls)
        self.assertNotIn("break-system-packages", calls)
        self.assertNotIn("python3 -m pip install", calls)
        self.assertNotIn("--user", calls)
        # a second run keeps the environment it has
        open(log, "w").close()
        self.run_script(os.path.join(ROOT, "scripts", "install-deps.sh"), ["--demo"],
                        env={"SCHEDSTM_VENV": venv}, path_var=self.bin)
        calls = open(log).read()
        self.assertNotIn("-m venv", calls)
        self.assertNotIn("pip install", calls)

    def test_install_deps_installs_python3_venv_when_venv_cannot_work(self):
        log = self.venv_stubs(ensurepip=False)
        venv = os.path.join(self.dir, "venv")
        proc = self.run_script(os.path.join(ROOT, "scripts", "install-deps.sh"), ["--demo"],
                               env={"SCHEDSTM_VENV": venv}, path_var=self.bin)
        calls = open(log).read()
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr + calls)
        self.assertRegex(calls, r"apt-get install .*python3-venv")
        self.assertEqual(calls.count("python3 -m venv"), 2, calls)
        self.assertIn("venv-python -m pip install", calls)

    def test_install_deps_never_removes_a_directory_that_is_not_a_venv(self):
        self.venv_stubs()
        precious = os.path.join(self.dir, "precious")
        os.mkdir(precious)
        open(os.path.join(precious, "keep"), "w").close()
        proc = self.run_script(os.path.join(ROOT, "scripts", "install-deps.sh"), ["--demo"],
                               env={"SCHEDSTM_VENV": precious}, path_var=self.bin)
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertIn("is not a virtual environment", proc.stderr)
        self.assertTrue(os.path.exists(os.path.join(precious, "keep")))

    def format_tree(self):
        script = self.copy_script("scripts/check-format.sh")
        tree = os.path.join(self.dir, "tree")
        shutil.copy(os.path.join(ROOT, ".clang-format"), tree)
        os.makedirs(os.path.join(tree, "src"))
        with open(os.path.join(tree, "src", "good.c"), "w") as f:
            f.write("int f(int x) { return x + 1; }\n")
        with open(os.path.join(tree, "src", "bad.c"), "w") as f:
            f.write("int g(int x){return x+1;}\n")
        return script

    def test_check_format_fails_an_unformatted_file(self):
        script = self.format_tree()
        real = shutil.which("clang-format-14") or shutil.which("clang-format")
        if not real or "version 14" not in subprocess.run([real, "--version"],
                                                          capture_output=True, text=True).stdout:
            self.skipTest("no clang-format 14 (scripts/install-deps.sh --tests installs it)")
        proc = self.run_script(script, env={"CLANG_FORMAT": real})
        self.assertEqual(proc.returncode, 1, proc.stdout)
        self.assertIn("src/bad.c: not formatted", proc.stdout)
        self.assertNotIn("good.c", proc.stdout)
        self.assertEqual(proc.stdout.strip().splitlines()[-1], "1 passed, 1 failed (0 skipped)")

    def test_check_format_skips_other_clang_format_versions(self):
        # Another major version lays out some code differently: skipped, not failed.
        script = self.format_tree()
        self.link_tools("bash", "env", "dirname", "sed", "head", "find", "sort", "sh")
        write_script(os.path.join(self.bin, "clang-format"),
                     "#!/bin/sh\necho 'clang-format version 17.0.1'\nexit 1\n")
        proc = self.run_script(script, path_var=self.bin)
        self.assertEqual(proc.returncode, 0, proc.stdout)
        self.assertIn("version 17, not 14", proc.stdout)
        self.assertEqual(proc.stdout.strip().splitlines()[-1], "0 passed, 0 failed (1 skipped)")

    def test_run_all_goes_on_without_the_optional_tools_and_counts_skips(self):
        # install-deps --tests fails (no clang, no apt-get): the suite still
        # runs; a script part's "(K skipped)" joins the totals; no clang on
        # PATH skips the clang part.
        script = self.copy_script("tests/run_all.sh")
        tree = os.path.join(self.dir, "tree")
        write_script(os.path.join(tree, "scripts", "install-deps.sh"),
                     '#!/bin/sh\n[ "$1" = --tests ] && exit 1\nexit 0\n')
        write_script(os.path.join(tree, "scripts", "check-format.sh"),
                     "#!/bin/sh\necho 'no clang-format 14: not checked'\n"
                     "echo '0 passed, 0 failed (1 skipped)'\n")
        self.link_tools("bash", "env", "dirname", "date", "mkdir", "grep", "tail", "cat", "sh")
        proc = self.run_script(script, env={"RUN_ALL_PARTS": "clang format"}, path_var=self.bin)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("install-deps.sh --tests failed", proc.stdout)
        self.assertIn("[clang] skipped: no clang", proc.stdout)
        self.assertEqual(proc.stdout.strip().splitlines()[-1], "0 passed, 0 failed (2 skipped)",
                         proc.stdout)

    def test_run_all_counts_a_failed_configure_once(self):
        script = self.copy_script("tests/run_all.sh")
        tree = os.path.join(self.dir, "tree")
        marker = os.path.join(self.dir, "check-install-ran")
        write_script(os.path.join(tree, "scripts", "install-deps.sh"), "#!/bin/sh\nexit 0\n")
        write_script(os.path.join(tree, "scripts", "check-install.sh"),
                     "#!/bin/sh\ntouch %s\necho '0 passed, 1 failed'\nexit 1\n" % marker)
        write_script(os.path.join(self.bin, "cmake"), "#!/bin/sh\necho 'CMake Error'\nexit 1\n")
        proc = self.run_script(script, env={"RUN_ALL_PARTS": "normal"})
        self.assertEqual(proc.stdout.strip().splitlines()[-1], "0 passed, 1 failed (0 skipped)",
                         proc.stdout)
        self.assertFalse(os.path.exists(marker), "check-install ran on an unconfigured tree")
        self.assertNotEqual(proc.returncode, 0)

    def demo_tree(self, sweep_body, plot_ok=True):
        """A copy of demo.sh with stand-ins: install-deps, cmake, sweep.py
        (sweep_body), plot.py (writes its -o file unless plot_ok is false)
        and a virtual environment whose python has matplotlib. Each stand-in
        logs its arguments to calls.log. Returns (script, env, out)."""
        script = self.copy_script("scripts/demo.sh")
        tree = os.path.join(self.dir, "tree")
        self.log = os.path.join(self.dir, "calls.log")
        write_script(os.path.join(tree, "scripts", "install-deps.sh"), "#!/bin/sh\nexit 0\n")
        write_script(os.path.join(tree, "bench", "harness", "sweep.py"),
                     "import sys\nopen(%r, 'a').write('sweep %%s\\n' %% ' '.join(sys.argv[1:]))\n"
                     % self.log + sweep_body)
        write_script(os.path.join(tree, "bench", "harness", "plot.py"),
                     "import sys\nopen(%r, 'a').write('plot %%s\\n' %% ' '.join(sys.argv[1:]))\n"
                     "out = sys.argv[sys.argv.index('-o') + 1]\n"
                     "%s\n" % (self.log, "open(out, 'wb').write(b'png')" if plot_ok
                                else "sys.exit(1)"))
        shutil.copy(os.path.join(ROOT, "bench", "harness", "summary.py"),
                    os.path.join(tree, "bench", "harness"))
        write_script(os.path.join(self.bin, "cmake"),
                     '#!/bin/sh\necho "cmake $*" >>%s\n' % self.log)
        venv = os.path.join(self.dir, "venv")
        write_script(os.path.join(venv, "bin", "python"),
                     '#!/bin/sh\n[ "$1 $2" = "-c import matplotlib" ] && exit 0\n'
                     'exec %s "$@"\n' % sys.executable)
        out = os.path.join(self.dir, "out")
        env = {"BUILD_DIR": os.path.join(self.dir, "build"), "OUT_DIR": out,
               "SCHEDSTM_VENV": venv}
        return script, env, out

    def calls(self, prefix):
        with open(self.log) as f:
            return [line.split()[1:] for line in f if line.split()[0] == prefix]

    # a sweep that succeeds: its summary and an (empty) results file
    SWEEP_OK = ("import os, sys\n"
                "out = sys.argv[sys.argv.index('--out') + 1]\n"
                "os.makedirs(out, exist_ok=True)\n"
                "open(os.path.join(out, 'summary.md'), 'w').write('table')\n"
                "open(os.path.join(out, 'results.jsonl'), 'w').close()\n"
                "print('table of', os.path.basename(out))\n")

    def test_demo_reports_the_sweeps_failure_and_builds_no_tests(self):
        # a sweep that fails before it writes anything (e.g. a bad option)
        script, env, out = self.demo_tree("sys.exit(1)\n")
        proc = self.run_script(script, env=env)
        self.assertEqual(proc.returncode, 1, proc.stderr)  # the sweep's status, not ls's
        self.assertIn("demo: the sweep failed", proc.stderr)
        self.assertEqual(len(self.calls("sweep")), 1)  # the second part is not run
        self.assertIn("-DSCHEDSTM_BUILD_TESTS=OFF", self.calls("cmake")[0])

    def test_demo_stops_with_a_message_without_the_build_tools(self):
        # install-deps.sh could not install them (not root, no sudo): the
        # demo says what is missing instead of "cmake: command not found".
        script, env, out = self.demo_tree(self.SWEEP_OK)
        tree = os.path.join(self.dir, "tree")
        write_script(os.path.join(tree, "scripts", "install-deps.sh"), "#!/bin/sh\nexit 1\n")
        os.remove(os.path.join(self.bin, "cmake"))
        self.link_tools("bash", "dirname", "date", "sh")
        proc = self.run_script(script, env=env, path_var=self.bin)
        self.assertEqual(proc.returncode, 4, proc.stderr)
        self.assertIn("demo: no cmake", proc.stderr)
        self.assertNotIn("command not found", proc.stderr)
        self.assertFalse(os.path.exists(self.log) and self.calls("sweep"))

    def test_demo_runs_both_parts_and_draws_both_figures(self):
        script, env, out = self.demo_tree(self.SWEEP_OK)
        proc = self.run_script(script, env=env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("table of single-thread", proc.stdout)
        self.assertIn("table of oversubscribed", proc.stdout)
        for name in ("single-thread.png", "oversubscribed.png"):
            self.assertTrue(os.path.exists(os.path.join(out, name)), name)
        self.assertNotIn("demo: no figure", proc.stderr)
        one, over = self.calls("sweep")
        self.assertEqual(one[one.index("--threads") + 1], "1,2")
        # the second part: more threads than the host has CPUs, the
        # default policy and scheduling ones side by side
        threads = [int(x) for x in over[over.index("--threads") + 1].split(",")]
        self.assertGreater(max(threads), os.cpu_count())
        cms = over[over.index("--cms") + 1].split(",")
        self.assertIn("suicide", cms)
        self.assertIn("ser-block", cms)
        self.assertIn("adaptive", cms)
        # each figure has a caption that says what its variants are
        plots = self.calls("plot")
        self.assertEqual(len(plots), 2)
        for argv in plots:
            self.assertIn("--caption", argv)
        self.assertIn("--relative", plots[1])  # the share of each one's own 2-thread rate

    def test_demo_with_failed_runs_goes_on_and_draws_the_others(self):
        # a sweep whose runs partly failed: status 1, its results written
        body = self.SWEEP_OK.replace("w').close()", "w').write('{}\\n')") + "sys.exit(1)\n"
        script, env, out = self.demo_tree(body)
        proc = self.run_script(script, env=env)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertEqual(len(self.calls("sweep")), 2)
        for name in ("single-thread.png", "oversubscribed.png"):
            self.assertTrue(os.path.exists(os.path.join(out, name)), name)
        self.assertIn("demo: some runs failed", proc.stderr)
        self.assertNotIn("the sweep failed", proc.stderr)

    def test_demo_runs_the_harness_with_the_virtual_environment(self):
        script, env, out = self.demo_tree(self.SWEEP_OK)
        log = os.path.join(self.dir, "python.log")
        write_script(os.path.join(env["SCHEDSTM_VENV"], "bin", "python"),
                     '#!/bin/sh\necho "$*" >>%s\n[ "$1 $2" = "-c import matplotlib" ] && exit 0\n'
                     'exec %s "$@"\n' % (log, sys.executable))
        proc = self.run_script(script, env=env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(log) as f:
            ran = f.read()
        self.assertIn(os.path.join(self.dir, "tree", "bench", "harness", "sweep.py"), ran)
        self.assertIn(os.path.join(self.dir, "tree", "bench", "harness", "plot.py"), ran)

    def test_demo_without_a_figure_says_so_and_fails(self):
        script, env, out = self.demo_tree(self.SWEEP_OK, plot_ok=False)
        proc = self.run_script(script, env=env)
        self.assertEqual(proc.returncode, 3, proc.stderr)
        self.assertIn("demo: no figure was written for single-thread.png oversubscribed.png",
                      proc.stderr)
        self.assertTrue(os.path.exists(os.path.join(out, "oversubscribed", "summary.md")))

    # The scripts a user runs, each with --help and with an argument it does
    # not take. None may install, configure or build anything then: before
    # they took --help, demo.sh and run_all.sh ran whole (minutes of apt-get,
    # builds and runs), coverage.sh built into a directory named "--help",
    # check-install.sh failed in a bare "cd".
    SCRIPTS = ("scripts/demo.sh", "scripts/coverage.sh", "scripts/check-install.sh",
               "scripts/check-format.sh", "scripts/install-deps.sh", "tests/run_all.sh",
               "bench/peers/build-tinystm-abi.sh")

    def script_with_stand_ins(self, rel):
        """A copy of rel whose install-deps.sh, cmake, ctest, apt-get and
        clang-format are stand-ins that log their calls to calls.log."""
        script = self.copy_script(rel)
        tree = os.path.join(self.dir, "tree")
        self.log = os.path.join(self.dir, "calls.log")
        if os.path.exists(self.log):  # an earlier subtest's
            os.remove(self.log)
        if rel != "scripts/install-deps.sh":
            write_script(os.path.join(tree, "scripts", "install-deps.sh"),
                         '#!/bin/sh\necho "install-deps $*" >>%s\n' % self.log)
        for tool in ("cmake", "ctest", "apt-get", "clang-format", "clang-format-14", "sudo",
                     "make", "gmake", "cp"):
            write_script(os.path.join(self.bin, tool),
                         '#!/bin/sh\necho "%s $*" >>%s\n' % (tool, self.log))
        return script

    def test_every_script_prints_its_usage_with_help_and_does_nothing_else(self):
        for rel in self.SCRIPTS:
            for opt in ("--help", "-h"):
                with self.subTest(script=rel, option=opt):
                    script = self.script_with_stand_ins(rel)
                    proc = self.run_script(script, [opt])
                    self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
                    # the header's usage line names the script
                    self.assertIn(os.path.basename(rel), proc.stdout)
                    self.assertFalse(os.path.exists(self.log),
                                     "%s %s ran: %s" % (rel, opt, open(self.log).read()
                                                        if os.path.exists(self.log) else ""))

    def test_scripts_refuse_an_option_they_do_not_take(self):
        # demo.sh hands its arguments to the sweeps (sweep.py checks them)
        for rel in set(self.SCRIPTS) - {"scripts/demo.sh"}:
            with self.subTest(script=rel):
                script = self.script_with_stand_ins(rel)
                proc = self.run_script(script, ["--bogus"])
                self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
                self.assertIn("--bogus", proc.stderr)
                self.assertFalse(os.path.exists(self.log), rel)

    def test_run_all_refuses_a_bad_setting_before_it_does_anything(self):
        # Each mistyped RUN_ALL_* variable is named at once (status 2), not
        # found by every part's build or ctest after the installs.
        for var, val in (("RUN_ALL_JOBS", "abc"), ("RUN_ALL_JOBS", "0"),
                         ("RUN_ALL_CTEST_JOBS_ASAN", "-1"), ("RUN_ALL_SCALE_TSAN", "0"),
                         ("RUN_ALL_SCALE_NORMAL", "fast"), ("RUN_ALL_BUILD_NICE", "20"),
                         ("RUN_ALL_PARTS", "normal tsna"), ("RUN_ALL_PARTS", " ")):
            with self.subTest(var=var, val=val):
                script = self.script_with_stand_ins("tests/run_all.sh")
                proc = self.run_script(script, env={var: val})
                self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
                self.assertIn(var, proc.stderr)
                self.assertFalse(os.path.exists(self.log), open(self.log).read()
                                 if os.path.exists(self.log) else "")
        # the defaults' own values pass (a stand-in run of the format part)
        script = self.script_with_stand_ins("tests/run_all.sh")
        tree = os.path.join(self.dir, "tree")
        write_script(os.path.join(tree, "scripts", "check-format.sh"),
                     "#!/bin/sh\necho '0 passed, 0 failed (0 skipped)'\n")
        proc = self.run_script(script, env={"RUN_ALL_PARTS": "format", "RUN_ALL_JOBS": "2",
                                            "RUN_ALL_SCALE_ASAN": "0.15",
                                            "RUN_ALL_SCALE_NORMAL": "1",
                                            "RUN_ALL_CTEST_JOBS_DELAY": "4",
                                            "RUN_ALL_BUILD_NICE": "0"})
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)

    def test_check_install_and_coverage_name_a_build_directory_that_is_not_one(self):
        missing = os.path.join(self.dir, "no-such-build")
        for rel in ("scripts/check-install.sh", "scripts/coverage.sh"):
            with self.subTest(script=rel):
                script = self.script_with_stand_ins(rel)
                proc = self.run_script(script, [missing, "extra"])
                self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
                self.assertFalse(os.path.exists(self.log), rel)
        script = self.script_with_stand_ins("scripts/check-install.sh")
        proc = self.run_script(script, [missing])
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertIn("no-such-build", proc.stderr)
        self.assertIn("not a directory", proc.stderr)
        self.assertFalse(os.path.exists(self.log))


if __name__ == "__main__":
    unittest.main()


class Report(unittest.TestCase):
    """sweep.py --report: earlier sweeps' records summarized again, pooled."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def sweep_dir(self, name, records):
        d = os.path.join(self.tmp.name, name)
        os.makedirs(d)
        with open(os.path.join(d, "results.jsonl"), "w") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
        return d

    def test_two_sweeps_pool_and_pair_within_their_own(self):
        # Sweep A: b/a 1.2 in both repetitions; sweep B (same seeds): 0.8.
        # Pooled, each run pairs with its own sweep's: 1.2, 1.2, 0.8, 0.8
        # (median 1.0); pairing across the sweeps would give 1.8 or 0.53.
        a = self.sweep_dir("a", [rec("a", 2, r, 1e6, seed=r) for r in (1, 2)]
                           + [rec("b", 2, r, 1.2e6, seed=r) for r in (1, 2)])
        b = self.sweep_dir("b", [rec("a", 2, r, 3e6, seed=r) for r in (1, 2)]
                           + [rec("b", 2, r, 2.4e6, seed=r) for r in (1, 2)])
        rc, out, err = run_sweep(["--report", a + "," + b, "--baseline", "a"])
        self.assertEqual(rc, 0, err)
        self.assertIn("| b / a |", out)
        self.assertIn("| 1.00x |", out)
        rc, out, err = run_sweep(["--report", a])
        self.assertEqual(rc, 0, err)
        self.assertIn("| 1.20x |", out)
        self.assertIn("reported again", out)

    def test_the_sweeps_own_baseline_is_the_default(self):
        # The records name b as their sweep's baseline: a / b, not b / a.
        a = self.sweep_dir("a", [rec("a", 2, 1, 1e6, baseline="b"),
                                 rec("b", 2, 1, 2e6, baseline="b")])
        rc, out, err = run_sweep(["--report", a])
        self.assertEqual(rc, 0, err)
        self.assertIn("| a / b |", out)
        self.assertIn("| 0.50x |", out)
        # Sweeps that disagree (or records that do not say): the first variant.
        b = self.sweep_dir("b", [rec("a", 2, 1, 1e6, baseline="a"),
                                 rec("b", 2, 1, 2e6, baseline="a")])
        rc, out, err = run_sweep(["--report", a + "," + b])
        self.assertIn("| b / a |", out)

    def test_out_gets_the_pooled_records_and_the_summary(self):
        a = self.sweep_dir("a", [rec("a", 2, 1, 1e6), rec("b", 2, 1, 2e6)])
        out_dir = os.path.join(self.tmp.name, "pooled")
        rc, out, err = run_sweep(["--report", a, "--out", out_dir])
        self.assertEqual(rc, 0, err)
        with open(os.path.join(out_dir, "results.jsonl")) as f:
            self.assertEqual(len(f.readlines()), 2)
        with open(os.path.join(out_dir, "summary.md")) as f:
            self.assertIn("| 2.00x |", f.read())
        self.assertTrue(os.path.exists(os.path.join(out_dir, "results.csv")))

    def test_bad_input_is_refused_with_a_message(self):
        good = self.sweep_dir("good", [rec("a", 2, 1, 1e6)])
        bad = self.sweep_dir("bad", [])
        with open(os.path.join(bad, "results.jsonl"), "w") as f:
            f.write('{"bench": "intset", "variant": "a", "threads": 2, "rep": 1, "status": "ok"}\n{not json\n')
        norec = self.sweep_dir("norec", [])
        with open(os.path.join(norec, "results.jsonl"), "w") as f:
            f.write('{"variant": "a"}\n')
        stamp_dir = self.sweep_dir("stamp", [])
        with open(os.path.join(stamp_dir, "results.jsonl"), "w") as f:
            f.write('{"app": "kmeans", "variant": "seq", "threads": 1, "rep": 1, "status": "ok"}\n')
        cases = [(["--report", os.path.join(self.tmp.name, "none")], "cannot read"),
                 (["--report", bad], "results.jsonl:2: not JSON"),
                 (["--report", norec], "not a run's record (no bench, threads, rep, status)"),
                 (["--report", stamp_dir], "a STAMP run's record: bench/harness/stamp.py --report"),
                 (["--report", self.sweep_dir("empty", [])], "no records"),
                 (["--report", good, "--baseline", "zz"], "--baseline zz is not one of"),
                 (["--report", good, "--out", good], "is one of the --report directories"),
                 (["--report", good, "--dry-run"], "--report runs nothing"),
                 (["--report", ""], "needs at least one directory")]
        for argv, message in cases:
            with self.subTest(argv=argv):
                rc, out, err = run_sweep(argv)
                self.assertEqual(rc, 2)
                self.assertIn(message, err)
        # the good directory's results were not replaced by the refused --out
        with open(os.path.join(good, "results.jsonl")) as f:
            self.assertEqual(len(f.readlines()), 1)
