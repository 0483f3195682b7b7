# SPDX-License-Identifier: MIT
"""Tests of bench/harness/synchrobench.py (synchrobench runs): the output
parser, the size check, the paired ratios and the summary, and whole
sweeps against stand-ins for the programs (shell scripts in a temporary
BIN_DIR) that pass, print a wrong size, or crash; and
bench/synchrobench/build.sh's command line (its help, a tree that is not
synchrobench's). Synchrobench itself is not needed (ctest:
unit.harness.python.*)."""

import io
import contextlib
import json
import os
import stat
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, os.pardir, os.pardir))
sys.path.insert(0, os.path.join(ROOT, "bench", "harness"))

import synchrobench  # noqa: E402

# The end of a synchrobench program's output (test.c's format).
OUTPUT = """\
Set size      : 258 (expected: 258)
Duration      : 1000 (ms)
#txs          : 1953234 (1953234.000000 / s)
#read txs     : 1562587 (1562587.000000 / s)
#eff. upd rate: 19.999974 
#aborts       : 17 (17.000000 / s)
  #lock-r     : 0 (0.000000 / s)
Max retries   : 2
"""


def fake(bin_dir, variant, bench, size="258", expected="258", rate=None, rc=0, per_ms=0):
    """A stand-in for BIN_DIR/<variant>/<bench>: logs its arguments and
    SCHEDSTM_CM to BIN_DIR/calls, prints OUTPUT's form: `rate` operations
    (and per second), or with per_ms, per_ms operations per ms of its -d
    after sleeping for -d ms."""
    d = os.path.join(bin_dir, variant)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, bench)
    rate = rate or {"schedstm": 2e6, "schedstm-inline": 3e6, "tinystm": 1e6}.get(variant, 4e6)
    ops = "$((d * %d))" % per_ms if per_ms else str(int(rate))
    with open(path, "w") as f:
        f.write("#!/bin/sh\n"
                "echo \"%s/%s cm=${SCHEDSTM_CM:-none} $*\" >> %s\n"
                "d=0; while [ $# -gt 0 ]; do [ \"$1\" = -d ] && d=$2; shift; done\n"
                "[ %d -gt 0 ] && sleep \"$(printf '%%d.%%03d' $((d / 1000)) $((d %% 1000)))\"\n"
                "echo 'Set size      : %s (expected: %s)'\n"
                "echo \"#txs          : %s (%f / s)\"\n"
                "echo \"#aborts       : $((d / 10)) (5.0 / s)\"\n"
                "exit %d\n" % (variant, bench, os.path.join(bin_dir, "calls"), per_ms, size,
                               expected, ops, rate, rc))
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


def args_for(bin_dir, out, *extra):
    return synchrobench.parse_args(["--bin-dir", bin_dir, "--out", out, "--ms", "5"]
                                   + list(extra))


def rec(bench, variant, threads, rep, ops_per_s, ok=True, aborts=None, ops=None, cpu_s=None):
    return {"bench": bench, "variant": variant, "threads": threads, "rep": rep, "seed": rep,
            "ops_per_s": ops_per_s, "ok": ok, "aborts": aborts, "ops": ops, "cpu_s": cpu_s,
            "error": None if ok else "final size 3, expected 4"}


class ParseTest(unittest.TestCase):
    def test_output_figures(self):
        p = synchrobench.parse_output(OUTPUT)
        self.assertEqual((p["size"], p["expected"], p["ops"], p["aborts"], p["duration_ms"]),
                         (258, 258, 1953234, 17, 1000))
        self.assertAlmostEqual(p["upd_pct"], 19.999974)
        self.assertAlmostEqual(p["ops_per_s"], 1953234.0)
        # the initial "Set size : N" line (no expectation) is not the final one
        p = synchrobench.parse_output("Set size     : 256\n")
        self.assertEqual((p["size"], p["expected"], p["ops_per_s"]), (None, None, None))

    def test_check(self):
        ok = synchrobench.parse_output(OUTPUT)
        self.assertIsNone(synchrobench.check(0, ok))
        self.assertEqual(synchrobench.check(139, ok), "exit status 139")
        bad = synchrobench.parse_output(OUTPUT.replace("258 (expected", "257 (expected"))
        self.assertEqual(synchrobench.check(0, bad), "final size 257, expected 258")
        self.assertEqual(synchrobench.check(0, synchrobench.parse_output("#txs : 1 (1 / s)\n")),
                         "no 'Set size : N (expected: M)' line")

    def test_variants(self):
        self.assertEqual(synchrobench.split_variant("schedstm@ser-yield"),
                         ("schedstm", "ser-yield"))
        self.assertEqual(synchrobench.split_variant("tinystm"), ("tinystm", None))
        self.assertIsNone(synchrobench.check_variants(["schedstm-inline@adaptive", "tinystm"]))
        self.assertIn("unknown variant", synchrobench.check_variants(["tiny"]))
        self.assertIn("schedstm variants only", synchrobench.check_variants(["tinystm@x"]))


class SummaryTest(unittest.TestCase):
    def test_ratio_is_the_median_of_per_repetition_pairs(self):
        runs = [rec("rbtree", "schedstm", 2, 1, 10.0), rec("rbtree", "tinystm", 2, 1, 5.0),
                rec("rbtree", "schedstm", 2, 2, 30.0), rec("rbtree", "tinystm", 2, 2, 10.0),
                rec("rbtree", "schedstm", 2, 3, 8.0), rec("rbtree", "tinystm", 2, 3, 8.0),
                # a failed run pairs with nothing
                rec("rbtree", "schedstm", 2, 4, 80.0, ok=False),
                rec("rbtree", "tinystm", 2, 4, 8.0)]
        ratios = synchrobench.paired(runs, "rbtree", 2, "schedstm", "tinystm")
        self.assertEqual(sorted(ratios), [1.0, 2.0, 3.0])
        self.assertEqual(synchrobench.fmt_ratio(ratios), "2.00 (1.00-3.00, 3)")
        self.assertEqual(synchrobench.fmt_ratio([]), "-")

    def test_summary_table_aborts_and_failures(self):
        runs = []
        for r in (1, 2, 3):
            runs.append(rec("hashtable", "schedstm", 1, r, 2e6 * r, aborts=10, ops=1000,
                            cpu_s=1.0))
            runs.append(rec("hashtable", "tinystm", 1, r, 1e6 * r, ops=500, cpu_s=1.0))
        runs.append(rec("hashtable", "schedstm", 1, 4, 1.0, ok=False))
        text = synchrobench.summary(runs, "tinystm")
        row = [line for line in text.splitlines() if line.startswith("| hashtable | 1 |")]
        self.assertEqual(len(row), 1)
        cells = [c.strip() for c in row[0].strip("|").split("|")]
        self.assertEqual(cells[2:4], ["4.000", "2.000"])  # medians of the passing runs
        self.assertEqual(cells[4], "2.00 (2.00-2.00, 3)")  # schedstm / tinystm
        self.assertEqual(cells[5], "2.00 (2.00-2.00, 3)")  # per CPU second: 1000 vs 500
        self.assertEqual(cells[6], "0.0100")  # 30 aborts over 3000 operations
        self.assertIn("FAILED runs:\n- hashtable schedstm t=1 rep 4: final size 3", text)


    def test_no_per_cpu_figure_from_a_cpu_time_that_is_not_positive(self):
        """--outside-clock's CPU time is a difference of two runs' and can
        come out negative; it gives no per-CPU-second figure, not a
        negative ratio."""
        short = {"wall_s": 1.0, "ops": 100, "cpu_s": 2.5, "aborts": None}
        long_ = {"wall_s": 3.0, "ops": 500, "cpu_s": 2.0, "aborts": None}
        r, err = synchrobench.outside(short, long_)
        self.assertIsNone(err)
        self.assertEqual((r["ops"], r["ops_per_s"], r["cpu_s"]), (400, 200.0, None))
        self.assertIsNone(synchrobench.per_cpu_s({"ops": 400, "cpu_s": -0.5}))
        self.assertIsNone(synchrobench.per_cpu_s({"ops": 400, "cpu_s": None}))
        runs = [rec("skiplist", "schedstm", 64, 1, 2.0, ops=400, cpu_s=-0.5),
                rec("skiplist", "tinystm", 64, 1, 1.0, ops=200, cpu_s=1.0)]
        self.assertEqual(synchrobench.paired(runs, "skiplist", 64, "schedstm", "tinystm",
                                             synchrobench.per_cpu_s), [])


class SweepTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.bin = os.path.join(self.tmp.name, "bin")
        self.out = os.path.join(self.tmp.name, "out")
        for v in synchrobench.VARIANTS:
            fake(self.bin, v, "rbtree")

    def tearDown(self):
        self.tmp.cleanup()

    def calls(self):
        with open(os.path.join(self.bin, "calls")) as f:
            return [line.split() for line in f]

    def main(self, *argv):
        err, out = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            try:
                rc = synchrobench.main(["--bin-dir", self.bin, "--out", self.out, "--ms", "5"]
                                       + list(argv))
            except SystemExit as e:
                rc = e.code
        return rc, out.getvalue(), err.getvalue()

    def test_rotation_options_policies_and_sequential_at_one_thread(self):
        os.environ["SCHEDSTM_CM"] = "suicide"  # not passed to the default's runs
        try:
            rc, out, _ = self.main("--benchs", "rbtree", "--threads", "1,2", "--reps", "3",
                                   "--variants", "schedstm,schedstm@ser-yield,tinystm,sequential",
                                   "--update", "50", "--seed", "7")
        finally:
            del os.environ["SCHEDSTM_CM"]
        self.assertEqual(rc, 0, out)
        calls = self.calls()
        names = [c[0] + ("@" + c[1][3:] if c[1] != "cm=none" else "") for c in calls]
        # one thread: four variants rotated per repetition; two: no sequential
        self.assertEqual(names[:4], ["schedstm/rbtree", "schedstm/rbtree@ser-yield",
                                     "tinystm/rbtree", "sequential/rbtree"])
        self.assertEqual(names[4:8], ["schedstm/rbtree@ser-yield", "tinystm/rbtree",
                                      "sequential/rbtree", "schedstm/rbtree"])
        self.assertEqual(len(calls), 12 + 9)
        self.assertNotIn("sequential/rbtree", names[12:])
        for c in calls:
            self.assertEqual(c[c.index("-d") + 1], "5")
            self.assertEqual(c[c.index("-u") + 1], "50")
            self.assertNotIn("-i", c)  # the program's default
            # the key range: twice the initial size, not the programs' 2^31
            self.assertEqual(c[c.index("-r") + 1], "512")
        self.assertEqual([c[c.index("-S") + 1] for c in calls[:8]], ["7"] * 4 + ["8"] * 4)
        self.assertEqual(sorted({c[c.index("-t") + 1] for c in calls[12:]}), ["2"])
        with open(os.path.join(self.out, "synchrobench.jsonl")) as f:
            recs = [json.loads(line) for line in f]
        self.assertEqual(len(recs), 21)
        self.assertTrue(all(r["ok"] for r in recs))
        self.assertEqual({r["aborts"] for r in recs if r["backend"] != "schedstm"}, {None})
        self.assertIn("git_commit", recs[0])
        self.assertIn("| rbtree | 1 |", out)
        self.assertIn("schedstm / tinystm", out)
        self.assertIn("2.00 (2.00-2.00, 3)", out)  # 2e6 against 1e6
        self.assertIn("sequential (no synchronisation) runs at one thread only.", out)
        with open(os.path.join(self.out, "synchrobench-summary.md")) as f:
            self.assertEqual(f.read(), out)

    def test_a_wrong_size_or_a_crash_fails_the_sweep(self):
        fake(self.bin, "schedstm", "rbtree", size="300", expected="301")
        fake(self.bin, "tinystm", "rbtree", rc=139)
        rc, out, err = self.main("--benchs", "rbtree", "--threads", "1", "--reps", "1",
                                 "--variants", "schedstm,tinystm")
        self.assertEqual(rc, 1)
        self.assertIn("- rbtree schedstm t=1 rep 1: final size 300, expected 301", out)
        self.assertIn("- rbtree tinystm t=1 rep 1: exit status 139", out)
        self.assertIn("FAILED", err)

    def test_outside_clock_rates_are_differences_of_two_runs(self):
        fake(self.bin, "schedstm", "rbtree", per_ms=1000)
        # Each run's wall time is its -d plus a fixed start-up, not the
        # host's clock: on a loaded host the short run's start-up could
        # outlast the long run's extra 30 ms and make the difference no rate.
        real = synchrobench.execute

        def execute(cmd, env, ms):
            rc, out, err, _, cpu = real(cmd, env, ms)
            return rc, out, err, 0.005 + ms / 1000.0, cpu

        with mock.patch.object(synchrobench, "execute", execute):
            rc, out, _ = self.main("--benchs", "rbtree", "--threads", "1", "--reps", "1",
                                   "--variants", "schedstm", "--baseline", "schedstm",
                                   "--ms", "40", "--outside-clock", "10")
        self.assertEqual(rc, 0, out)
        self.assertEqual([c[c.index("-d") + 1] for c in self.calls()], ["10", "40"])
        with open(os.path.join(self.out, "synchrobench.jsonl")) as f:
            r = json.loads(f.readline())
        self.assertEqual((r["clock"], r["outside_short_ms"], r["ops"], r["aborts"]),
                         ("outside", 10, 30000, 3))  # 40000 - 10000; aborts 4 - 1
        self.assertAlmostEqual(r["elapsed_s"], 0.030)  # 0.045 - 0.015
        self.assertAlmostEqual(r["ops_per_s"], r["ops"] / r["elapsed_s"])
        self.assertIsNotNone(r["ops_per_s_inside"])
        self.assertIn("timed from outside", out)
        # operations that do not grow with the duration are no rate
        fake(self.bin, "schedstm", "rbtree")
        rc, out, _ = self.main("--benchs", "rbtree", "--threads", "1", "--reps", "1",
                               "--variants", "schedstm", "--baseline", "schedstm",
                               "--ms", "40", "--outside-clock", "10")
        self.assertEqual(rc, 1)
        self.assertIn("outside clock: the long run did not outlast the short one", out)
        rc, _, err = self.main("--ms", "40", "--outside-clock", "30")
        self.assertEqual(rc, 2)
        self.assertIn("at most half --ms", err)
        rc, _, err = self.main("--ms", "40", "--outside-clock", "10", "--wall-clock")
        self.assertEqual(rc, 2)
        self.assertIn("one at most", err)

    def test_wall_clock_rates_are_operations_over_the_runs_wall_time(self):
        fake(self.bin, "schedstm", "rbtree", per_ms=1000)
        rc, out, _ = self.main("--benchs", "rbtree", "--threads", "1", "--reps", "1",
                               "--variants", "schedstm", "--baseline", "schedstm",
                               "--ms", "20", "--wall-clock")
        self.assertEqual(rc, 0, out)
        self.assertEqual(len(self.calls()), 1)
        with open(os.path.join(self.out, "synchrobench.jsonl")) as f:
            r = json.loads(f.readline())
        self.assertEqual((r["clock"], r["ops"]), ("wall", 20000))
        self.assertAlmostEqual(r["ops_per_s"], r["ops"] / r["wall_s"])
        self.assertIn("--wall-clock", out)

    def test_from_jsonl_pools_without_running(self):
        self.main("--benchs", "rbtree", "--threads", "1", "--reps", "2",
                  "--variants", "schedstm,tinystm")
        first = os.path.join(self.tmp.name, "first.jsonl")
        os.rename(os.path.join(self.out, "synchrobench.jsonl"), first)
        os.remove(os.path.join(self.bin, "calls"))
        rc, out, _ = self.main("--from-jsonl", "%s,%s" % (first, first))
        self.assertEqual(rc, 0)
        self.assertFalse(os.path.exists(os.path.join(self.bin, "calls")))
        self.assertIn("2.00 (2.00-2.00, 4)", out)  # two files' pairs, each within its own

    def test_from_jsonl_does_not_pool_different_workloads(self):
        self.main("--benchs", "rbtree", "--threads", "1", "--reps", "1",
                  "--variants", "schedstm,tinystm")
        first = os.path.join(self.tmp.name, "first.jsonl")
        os.rename(os.path.join(self.out, "synchrobench.jsonl"), first)
        self.main("--benchs", "rbtree", "--threads", "1", "--reps", "1",
                  "--variants", "schedstm,tinystm", "--update", "50")
        second = os.path.join(self.out, "synchrobench.jsonl")
        rc, out, err = self.main("--from-jsonl", "%s,%s" % (first, second))
        self.assertEqual((rc, out), (2, ""))
        self.assertIn("the rbtree runs at 1 threads ran different workloads (update, initial, "
                      "range: 50, None, 512; None, None, 512)", err)
        rc, out, _ = self.main("--from-jsonl", "%s,%s" % (first, first))
        self.assertEqual(rc, 0, out)

    def test_bad_command_lines(self):
        for argv, msg in ((["--variants", "tinystm@adaptive"], "schedstm variants only"),
                          (["--benchs", "btree"], "unknown benchmark 'btree'"),
                          (["--benchs", "sftree"], "no program"),
                          (["--threads", "0"], "must be positive")):
            rc, _, err = self.main(*argv)
            self.assertEqual(rc, 2, argv)
            self.assertIn("synchrobench: error: " + "", err)
            self.assertIn(msg, err, argv)
        self.assertFalse(os.path.exists(os.path.join(self.bin, "calls")))

    def test_the_key_range_is_twice_the_initial_size_unless_given(self):
        """With the programs' own range (2^31) a removal almost never
        succeeds and a run makes almost no updates: -r is always passed."""
        for argv, r in ((["--initial", "1000"], "2000"), (["--range", "300"], "300"),
                        (["--initial", "10", "--range", "10"], "10")):
            if os.path.exists(os.path.join(self.bin, "calls")):
                os.remove(os.path.join(self.bin, "calls"))
            rc, out, _ = self.main("--benchs", "rbtree", "--threads", "1", "--reps", "1",
                                   "--variants", "schedstm", *argv)
            self.assertEqual(rc, 0, out)
            calls = self.calls()
            self.assertEqual([c[c.index("-r") + 1] for c in calls], [r], argv)
        with open(os.path.join(self.out, "synchrobench.jsonl")) as f:
            self.assertEqual(json.loads(f.readlines()[-1])["range"], 10)
        # --range program: no -r, the program's own range
        os.remove(os.path.join(self.bin, "calls"))
        rc, out, _ = self.main("--benchs", "rbtree", "--threads", "1", "--reps", "1",
                               "--variants", "schedstm", "--range", "program")
        self.assertEqual(rc, 0, out)
        self.assertNotIn("-r", self.calls()[0])
        with open(os.path.join(self.out, "synchrobench.jsonl")) as f:
            self.assertEqual(json.loads(f.readlines()[-1])["range"], "program")
        for argv, msg in ((["--range", "100"], "smaller than the initial size 256"),
                          (["--range", "x"], "a positive number of keys or 'program'"),
                          (["--range", "0"], "a positive number of keys or 'program'"),
                          (["--initial", "600", "--range", "599"], "smaller than the initial"),
                          (["--update", "101"], "a percentage"),
                          (["--initial", "0"], "--initial must be positive")):
            rc, _, err = self.main("--benchs", "rbtree", *argv)
            self.assertEqual(rc, 2, argv)
            self.assertIn(msg, err, argv)

    def test_empty_lists_an_unknown_baseline_and_unreadable_files(self):
        """Refused with status 2 and a message: no traceback, no empty
        summary, no baseline silently replaced."""
        junk = os.path.join(self.tmp.name, "junk.jsonl")
        with open(junk, "w") as f:
            f.write("not json\n")
        empty = os.path.join(self.tmp.name, "empty.jsonl")
        open(empty, "w").close()
        blocker = os.path.join(self.tmp.name, "file")
        open(blocker, "w").close()
        for argv, msg in ((["--variants", ""], "need at least one name"),
                          (["--benchs", ""], "need at least one name"),
                          (["--variants", "schedstm", "--baseline", "tinystm"],
                           "--baseline tinystm is not one of --variants"),
                          (["--from-jsonl", os.path.join(self.tmp.name, "none.jsonl")],
                           "No such file"),
                          (["--from-jsonl", junk], "--from-jsonl %s" % junk),
                          (["--from-jsonl", empty], "no records"),
                          (["--benchs", "rbtree", "--out", os.path.join(blocker, "out")],
                           "--out")):
            rc, out, err = self.main(*argv)
            self.assertEqual((rc, out), (2, ""), argv)
            self.assertIn("synchrobench: error: ", err, argv)
            self.assertIn(msg, err, argv)
            self.assertNotIn("Traceback", err, argv)
        self.assertFalse(os.path.exists(os.path.join(self.bin, "calls")))
        # a --from-jsonl baseline that none of the records has
        self.main("--benchs", "rbtree", "--threads", "1", "--reps", "1",
                  "--variants", "schedstm,tinystm")
        rc, _, err = self.main("--from-jsonl", os.path.join(self.out, "synchrobench.jsonl"),
                               "--baseline", "sequential")
        self.assertEqual(rc, 2)
        self.assertIn("--baseline sequential: no run of that variant", err)


class BuildShTest(unittest.TestCase):
    """bench/synchrobench/build.sh's command line: its help, and directories
    that are not the trees it needs (no compiler runs)."""

    BUILD_SH = os.path.join(ROOT, "bench", "synchrobench", "build.sh")

    def build_sh(self, *argv):
        return subprocess.run([self.BUILD_SH] + list(argv), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True)

    def test_help_and_usage_errors(self):
        for flag in ("--help", "-h"):
            r = self.build_sh(flag)
            self.assertEqual((r.returncode, r.stderr), (0, ""), flag)
            self.assertIn("bench/synchrobench/build.sh [options] SYNCHROBENCH_DIR OUT_DIR",
                          r.stdout)
            self.assertIn("-j N", r.stdout)  # the whole option list
        r = self.build_sh()
        self.assertEqual((r.returncode, r.stdout), (2, ""))
        self.assertIn("SYNCHROBENCH_DIR and OUT_DIR are required", r.stderr)
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "out")
            for argv, msg in ((["--benchs", "btree"], "unknown benchmark 'btree'"),
                              (["--variants", "tinystm"], "variant tinystm needs --tinystm-dir"),
                              (["--link", "dynamic"], "--link takes static or shared"),
                              (["--tinystm-dir", d], "is not a TinySTM tree"),
                              ([], "is not a synchrobench tree")):
                r = self.build_sh(*(argv + [d, out]))
                self.assertEqual(r.returncode, 2, (argv, r.stderr))
                self.assertIn(msg, r.stderr)
                self.assertFalse(os.path.exists(out))

    def test_a_tree_without_a_benchmark_is_refused_up_front(self):
        with tempfile.TemporaryDirectory() as d:
            tree = os.path.join(d, "synchrobench")
            for f in ("c-cpp/include/tm.h", "c-cpp/common/Makefile.common",
                      "c-cpp/src/trees/rbtree/Makefile"):
                os.makedirs(os.path.dirname(os.path.join(tree, f)), exist_ok=True)
                open(os.path.join(tree, f), "w").close()
            out = os.path.join(d, "out")
            r = self.build_sh("--benchs", "rbtree,skiplist", tree, out)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("has no skiplist (no src/<dir>/Makefile there); build the others "
                          "with --benchs", r.stderr)
            self.assertFalse(os.path.exists(out))

    def test_the_tinystm_copy_is_rebuilt_from_another_tree_or_a_changed_one(self):
        """The tinystm variant's TinySTM is a copy built in OUT_DIR: another
        --tinystm-dir, or a tree whose Makefile changed, is built again
        (stand-in trees whose make writes their name into libstm.a)."""
        def write(path, text):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)

        with tempfile.TemporaryDirectory() as d:
            tree = os.path.join(d, "synchrobench")
            write(os.path.join(tree, "c-cpp/include/tm.h"), "")
            write(os.path.join(tree, "c-cpp/common/Makefile.common"), "")
            write(os.path.join(tree, "c-cpp/src/hashtables/lockfree-ht/Makefile"),
                  "all:\n\tmkdir -p $(BINDIR) && printf '#!/bin/sh\\n' >$(BINDIR)/hashtable"
                  " && chmod +x $(BINDIR)/hashtable\n")

            def tinystm(name, config):
                t = os.path.join(d, name)
                write(os.path.join(t, "include/stm.h"), "")
                write(os.path.join(t, "include/mod_mem.h"), "")
                write(os.path.join(t, "Makefile"), "all:\n\tmkdir -p lib && echo %s >lib/libstm.a"
                      "\nclean:\n\trm -rf lib\n" % config)
                return t

            def age(t):  # a tree written an hour ago
                for dirpath, _, files in os.walk(t):
                    for f in files:
                        st = os.stat(os.path.join(dirpath, f))
                        os.utime(os.path.join(dirpath, f), (st.st_atime - 3600,
                                                             st.st_mtime - 3600))

            a, b = tinystm("tiny-a", "a"), tinystm("tiny-b", "b")
            age(a)
            age(b)
            out = os.path.join(d, "out")
            lib = os.path.join(out, "tinystm-lib", "lib", "libstm.a")

            def build(t):
                r = self.build_sh("--variants", "tinystm", "--benchs", "hashtable",
                                  "--tinystm-dir", t, tree, out)
                self.assertEqual(r.returncode, 0, r.stderr)
                with open(lib) as f:
                    return f.read().strip()

            self.assertEqual(build(a), "a")
            self.assertEqual(build(b), "b")  # another tree, its headers no newer
            self.assertEqual(build(b), "b")
            tinystm("tiny-b", "b-write-through")  # the configuration changed
            self.assertEqual(build(b), "b-write-through")


if __name__ == "__main__":
    unittest.main()
