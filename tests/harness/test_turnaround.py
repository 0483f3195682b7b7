# SPDX-License-Identifier: MIT
"""Tests of bench/harness/turnaround.py: the confidence interval of the
paired ratios and the targets' table built from it (ctest:
unit.harness.python.*)."""

import math
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, os.pardir, os.pardir))
sys.path.insert(0, os.path.join(ROOT, "bench", "harness"))

import turnaround  # noqa: E402


def run(rep, label, variant, means):
    """A server record: mean turnaround (us) per priority 1..5."""
    return {"rep": rep, "label": label, "variant": variant,
            "server": {"levels_stats": [{"priority": p, "turnaround_us_mean": m}
                                        for p, m in zip(range(1, 6), means)]}}


class GmCi(unittest.TestCase):
    def test_equal_ratios_have_no_width(self):
        g, lo, hi = turnaround.gm_ci([0.5, 0.5, 0.5])
        self.assertAlmostEqual(g, 0.5)
        self.assertAlmostEqual(lo, 0.5)
        self.assertAlmostEqual(hi, 0.5)

    def test_geometric_mean_and_t_interval(self):
        g, lo, hi = turnaround.gm_ci([0.25, 1.0])
        self.assertAlmostEqual(g, 0.5)
        # two values: t(1) = 12.706, sd of the logs = ln 4 / sqrt 2
        half = 12.706 * (math.log(4) / math.sqrt(2)) / math.sqrt(2)
        self.assertAlmostEqual(lo, 0.5 * math.exp(-half))
        self.assertAlmostEqual(hi, 0.5 * math.exp(half))

    def test_too_few(self):
        self.assertIsNone(turnaround.gm_ci([0.5]))
        self.assertIsNone(turnaround.gm_ci([]))


class Targets(unittest.TestCase):
    def test_cells_carry_median_range_and_interval(self):
        configs = [("baseline", "baseline", 0, False), ("event Cinf", "event", 0, False)]
        base = {1: {p: {"turnaround_us_mean": 100.0} for p in range(1, 6)},
                2: {p: {"turnaround_us_mean": 100.0} for p in range(1, 6)}}
        ok = [run(1, "event Cinf", "event", [102, 101, 100, 30, 20]),
              run(2, "event Cinf", "event", [104, 103, 100, 30, 40])]
        lines = turnaround.targets(ok, base, configs)
        row = [x for x in lines if x.startswith("| event Cinf")][0]
        self.assertIn("0.30 [0.30-0.30] gm 0.30 (0.30-0.30)", row)  # P4
        self.assertIn("0.30 [0.20-0.40] gm 0.28", row)  # P5
        # P5's two ratios straddle 0.35 widely: its interval decides nothing
        self.assertIn("(0.00-23.12) | unresolved |", row)
        self.assertTrue(row.endswith("| 2 |"))

    def test_the_control_has_no_verdict(self):
        configs = [("baseline", "baseline", 0, False), ("aa", "aa", 0, False)]
        base = {r: {p: {"turnaround_us_mean": 100.0} for p in range(1, 6)} for r in (1, 2)}
        ok = [run(1, "aa", "aa", [100, 100, 100, 100, 100]),
              run(2, "aa", "aa", [101, 101, 101, 101, 101])]
        row = [x for x in turnaround.targets(ok, base, configs) if x.startswith("| aa")][0]
        self.assertEqual(row.count("(control)"), 2)
        self.assertNotIn("met", row)

    def test_another_clock(self):
        configs = [("baseline", "baseline", 0, False), ("event Cinf", "event", 0, False)]
        key = "vexec_turnaround_us_mean"
        base = {1: {p: {key: 100.0} for p in range(1, 6)}}
        ok = [{"rep": 1, "label": "event Cinf", "variant": "event",
               "server": {"levels_stats": [{"priority": p, key: 10.0} for p in range(1, 6)]}}]
        lines = turnaround.targets(ok, base, configs, key)
        self.assertIn(key, lines[1])
        row = [x for x in lines if x.startswith("| event Cinf")][0]
        self.assertIn("0.10 [0.10-0.10]", row)


def srv(rep, label, variant, cpu_s, completed, p1_turn, p1_paused, aborts=0.0):
    """A server record with the workers' CPU time and priority 1's turnaround and pause."""
    return {"rep": rep, "label": label, "variant": variant,
            "server": {"workers_cpu_s": cpu_s, "completed": completed,
                       "levels_stats": [{"priority": 1, "turnaround_us_mean": p1_turn,
                                         "paused_us_mean": p1_paused,
                                         "abort_probability": aborts}]}}


class Robust(unittest.TestCase):
    def test_lowest_penalty_is_paused_over_the_rest(self):
        st = srv(1, "e", "event", 1, 1, 1100.0, 100.0)["server"]
        self.assertAlmostEqual(turnaround.lowest_penalty(st), 1.1)
        st["levels_stats"][0]["paused_us_mean"] = 0.0
        self.assertAlmostEqual(turnaround.lowest_penalty(st), 1.0)
        st["levels_stats"][0]["paused_us_mean"] = 1100.0  # nothing left: no reading
        self.assertIsNone(turnaround.lowest_penalty(st))
        self.assertIsNone(turnaround.lowest_penalty({"levels_stats": []}))

    def test_lowest_attempts(self):
        st = srv(1, "e", "event", 1, 1, 1.0, 0.0, 0.75)["server"]
        self.assertAlmostEqual(turnaround.lowest_attempts(st), 4.0)
        st["levels_stats"][0]["abort_probability"] = 1.0  # nothing completed: no reading
        self.assertIsNone(turnaround.lowest_attempts(st))

    def test_cpu_per_request(self):
        self.assertAlmostEqual(turnaround.cpu_per_request({"workers_cpu_s": 2.0,
                                                           "completed": 4}), 0.5)
        self.assertIsNone(turnaround.cpu_per_request({"workers_cpu_s": 2.0, "completed": 0}))
        self.assertIsNone(turnaround.cpu_per_request({"completed": 3}))

    def test_rows_and_verdicts(self):
        configs = [("baseline", "baseline", 0, False), ("aa", "aa", 0, False),
                   ("event Cinf", "event", 0, False), ("poll Cinf", "poll", 0, False)]
        ok = []
        for rep in (1, 2, 3):
            ok.append(srv(rep, "baseline", "baseline", 1.0, 100, 1000.0, 0.0))
            ok.append(srv(rep, "aa", "aa", 1.0, 100, 900.0, 0.0))
            # paused 2 % of the rest in every run: met
            ok.append(srv(rep, "event Cinf", "event", 1.1, 100, 1020.0, 20.0))
            # paused 10 % of the rest: not met
            ok.append(srv(rep, "poll Cinf", "poll", 1.0, 100, 1100.0, 100.0, 0.5))
        lines = turnaround.robust(ok, configs)
        row = {x.split(" | ")[0][2:]: x for x in lines if x.startswith("| ")}
        self.assertIn("| 1.100 [1.100-1.100] gm 1.100 (1.100-1.100) |", row["event Cinf"])
        self.assertIn("gm 1.020 (1.020-1.020) | met | 1.000 [1.000-1.000] gm 1.000 "
                      "(1.000-1.000) | 3 |", row["event Cinf"])
        # half its attempts aborted against none in the baseline: twice the attempts
        self.assertIn("| not met | 2.000 [2.000-2.000] gm 2.000 (2.000-2.000) | 3 |",
                      row["poll Cinf"])
        self.assertIn("(1.000-1.000) | - | 1.000", row["aa"])  # the control gets no verdict
        self.assertNotIn("baseline", row)

    def test_added_aborts_leave_it_unresolved(self):
        configs = [("baseline", "baseline", 0, False), ("event Cinf", "event", 0, False)]
        ok = []
        for rep, ab in ((1, 0.2), (2, 0.3), (3, 0.25)):
            ok.append(srv(rep, "baseline", "baseline", 1.0, 100, 1000.0, 0.0, 0.1))
            # pauses 2 % in every run, but more of its attempts aborted than the baseline's
            ok.append(srv(rep, "event Cinf", "event", 1.0, 100, 1020.0, 20.0, ab))
        row = [x for x in turnaround.robust(ok, configs) if x.startswith("| event")][0]
        self.assertIn("| unresolved |", row)


class PeakChoice(unittest.TestCase):
    # probes: (fraction, rate, share of the run the pool was >= 90 % busy, drain s)
    def test_lowest_busy_fraction_with_a_bounded_backlog(self):
        rate, why = turnaround.peak_choice(
            [(0.7, 700, 0.5, 0.1), (0.8, 800, 0.93, 0.4), (0.9, 900, 0.97, 0.2)], 0.9, 0.75)
        self.assertEqual(rate, 800)
        self.assertIn("0.80x", why)

    def test_busy_but_unbounded_falls_back_to_the_bounded_one_below(self):
        rate, why = turnaround.peak_choice(
            [(0.7, 700, 0.5, 0.1), (0.8, 800, 0.6, 0.3), (0.9, 900, 0.95, 5.0)], 0.9, 0.75)
        self.assertEqual(rate, 800)
        self.assertIn("drain 5.00 s", why)

    def test_never_busy_keeps_the_highest_bounded(self):
        rate, why = turnaround.peak_choice(
            [(0.7, 700, 0.2, 0.1), (0.8, 800, 0.3, 0.2), (0.9, 900, 0.4, 3.0)], 0.9, 0.75)
        self.assertEqual(rate, 800)
        self.assertIn("only 30 %", why)

    def test_nothing_bounded_keeps_the_lowest(self):
        rate, _ = turnaround.peak_choice([(0.7, 700, 0.95, 2.0), (0.8, 800, 0.99, 3.0)],
                                         0.9, 0.75)
        self.assertEqual(rate, 700)

    def test_drain(self):
        self.assertEqual(turnaround.drain_s({"elapsed_s": 3.5, "send_span_s": 3.0}), 0.5)
        self.assertEqual(turnaround.drain_s({"elapsed_s": 2.0, "send_span_s": 3.0}), 0.0)


class Verdict(unittest.TestCase):
    def test_met_not_met_unresolved(self):
        self.assertEqual(turnaround.verdict([[0.3, 0.31, 0.29], [0.2, 0.21]], 0.35), "met")
        self.assertEqual(turnaround.verdict([[0.3, 0.31], [0.5, 0.52, 0.51]], 0.35), "not met")
        self.assertEqual(turnaround.verdict([[0.3, 0.31], [0.2, 0.6]], 0.35), "unresolved")
        self.assertEqual(turnaround.verdict([[0.3], [0.2]], 0.35), "unresolved")


class BadOptions(unittest.TestCase):
    """Each bad value is refused with a message naming its option (exit 2),
    before the harness looks for the programs it runs."""

    def refused(self, *argv):
        import contextlib
        import io
        err = io.StringIO()
        with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as cm:
            turnaround.parse_args(list(argv))
        self.assertEqual(cm.exception.code, 2)
        return err.getvalue()

    def test_negative_window(self):
        self.assertIn("--window", self.refused("--window", "-1"))

    def test_window_goes_to_the_load_generator(self):
        # A build directory of its own with the two programs in place, so
        # that the test needs no built tree (a fresh clone has none).
        import tempfile
        with tempfile.TemporaryDirectory() as build:
            os.makedirs(os.path.join(build, "bench", "server"))
            for prog in ("sstm-server", "sstm-loadgen"):
                path = os.path.join(build, "bench", "server", prog)
                with open(path, "w", encoding="utf-8") as f:
                    f.write("#!/bin/sh\nexit 0\n")
                os.chmod(path, 0o755)
            a = turnaround.parse_args(["--build", build, "--window", "96", "--rate", "5000"])
            self.assertEqual(a.loadgen_args[-2:], ["--window", "96"])
            self.assertNotIn("--window", turnaround.parse_args(["--build", build]).loadgen_args)

    def test_negative_load(self):
        self.assertIn("--load", self.refused("--load", "-1"))

    def test_peak_busy_out_of_range(self):
        self.assertIn("--peak-busy", self.refused("--peak-busy", "0"))
        self.assertIn("--peak-busy", self.refused("--peak-busy", "1.5"))

    def test_negative_peak_drain(self):
        self.assertIn("--peak-drain", self.refused("--peak-drain", "-0.1"))

    def test_rate_neither_number_nor_peak(self):
        self.assertIn("--rate", self.refused("--rate", "fast"))


if __name__ == "__main__":
    unittest.main()
