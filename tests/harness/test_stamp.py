# SPDX-License-Identifier: MIT
"""Tests of bench/harness/stamp.py (STAMP runs): the statistics and time
parsers, each application's check, the command lines, the command-line
checks, sweep.py's hand-over, and whole runs against fake programs (shell
scripts in a temporary build directory) that pass, fail their check, or
crash; and bench/stamp/gen_inputs.py, the stand-ins for the standard
inputs a STAMP tree lacks (kmeans: STAMP's own generator's files, checked
by their SHA-256; yada: Triangle's file formats, the mesh's consistency,
and with the "triangle" package installed, that its triangulation is the
Delaunay one). STAMP itself is not needed."""

import contextlib
import csv
import hashlib
import io
import itertools
import json
import os
import stat
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
sys.path.insert(0, os.path.join(ROOT, "bench", "harness"))
sys.path.insert(0, os.path.join(ROOT, "bench", "stamp"))

import stamp  # noqa: E402
import sweep  # noqa: E402
import gen_inputs  # noqa: E402

try:
    import triangle  # noqa: F401 (bench/stamp/requirements.txt, in build/venv)
    HAVE_TRIANGLE = True
except ImportError:
    HAVE_TRIANGLE = False

DUMP = """\
total          commits=4763 (ro=1 update=4762 irrevocable=0) aborts=171023 (35.907/commit) max_retries=9
                 aborts: read-locked=171020 write-locked=2 validate-read=1
                 sets: reads avg=10.0 max=20, writes avg=1.0 max=2
policy         suicide: x
"""


# What bench/stamp/tinystm/stm.c writes.
TINY_DUMP = """\
TinySTM, counted by the STAMP adapter (bench/stamp/tinystm)
total commits=8202 aborts=7
  aborts: wr-conflict=5 val-read=1 explicit=1
"""


class ParseTest(unittest.TestCase):
    def test_stats_total_and_reasons(self):
        s = stamp.parse_stats(DUMP)
        self.assertEqual(s["commits"], 4763)
        self.assertEqual(s["aborts"], 171023)
        self.assertEqual(s["aborts_by_reason"],
                         {"read-locked": 171020, "write-locked": 2, "validate-read": 1})

    def test_stats_without_aborts_line_or_total(self):
        s = stamp.parse_stats("total          commits=5 (ro=0) aborts=0 (0.000/commit)\n")
        self.assertEqual((s["commits"], s["aborts"], s["aborts_by_reason"]), (5, 0, {}))
        self.assertIsNone(stamp.parse_stats("nothing here\n")["commits"])

    def test_app_time_forms(self):
        self.assertEqual(stamp.app_time("Learn time = 0.25\nTime = 9\n"), 0.25)
        self.assertEqual(stamp.app_time("Time taken for all is  1.5 sec.\n"), 1.5)
        self.assertEqual(stamp.app_time("Elapsed time    = 0.020255 seconds\n"), 0.020255)
        self.assertEqual(stamp.app_time("Time: 0.016 seconds\n"), 0.016)
        self.assertEqual(stamp.app_time("Time = 0.0105\n"), 0.0105)
        self.assertIsNone(stamp.app_time("no time\n"))


class CheckTest(unittest.TestCase):
    def check(self, app, out, seq=""):
        return stamp.APPS[app].check(out, seq)[0]

    def test_self_checking_apps(self):
        self.assertEqual(self.check("genome", "Sequence matches gene: yes\n"), "pass")
        self.assertEqual(self.check("genome", "Sequence matches gene: no\n"), "fail")
        self.assertEqual(self.check("labyrinth", "Verification passed.\n"), "pass")
        self.assertEqual(self.check("labyrinth", "Verification failed.\n"), "fail")
        self.assertEqual(self.check("vacation", "Checking tables... done.\n"), "pass")
        self.assertEqual(self.check("yada", "Final mesh is valid.\n"), "pass")
        self.assertEqual(self.check("yada", "Final mesh is not valid.\n"), "fail")

    def test_intruder_counts(self):
        self.assertEqual(self.check("intruder", "Num attack      = 174\nNum found       = 174\n"),
                         "pass")
        self.assertEqual(self.check("intruder", "Num attack      = 174\nNum found       = 173\n"),
                         "fail")
        self.assertEqual(self.check("intruder", "Num found       = 174\n"), "fail")

    def test_kmeans_against_the_sequential_centres(self):
        seq = "0 1.0 2.0 3.0\n1 -1.0 0.5 0.25\nTime: 1\n"
        near = "0 1.001 2.0 3.0\n1 -1.0 0.5 0.25\nTime: 2\n"
        far = "0 1.5 2.0 3.0\n1 -1.0 0.5 0.25\n"
        fewer = "0 1.0 2.0 3.0\n"
        self.assertEqual(self.check("kmeans", near, seq), "pass")
        self.assertEqual(self.check("kmeans", far, seq), "fail")
        self.assertEqual(self.check("kmeans-high", fewer, seq), "fail")
        self.assertEqual(self.check("kmeans", "Time: 1\n", seq), "fail")
        self.assertEqual(self.check("kmeans", near, ""), "n/a")

    def test_bayes_needs_a_score(self):
        self.assertEqual(self.check("bayes", "Learn score  = -5.0\n", "Learn score  = -5.0\n"),
                         "pass")
        self.assertEqual(self.check("bayes", "no score\n", "Learn score  = -5.0\n"), "fail")
        self.assertEqual(self.check("bayes", "Learn score  = -5.0\n"), "n/a")

    def test_bayes_equal_at_one_thread_close_with_more(self):
        seq = "Learn score  = -1000.0\n"
        close, far = "Learn score  = -1045.0\n", "Learn score  = -1200.0\n"
        bayes = stamp.APPS["bayes"].check
        self.assertEqual(bayes(close, seq, 1)[0], "fail")
        self.assertEqual(bayes(close, seq, 8)[0], "pass")
        self.assertEqual(bayes(far, seq, 8)[0], "fail")

    def test_ssca2_recount_and_digest(self):
        ok = "ssca2 implied in-degrees: consistent (8192 vertices, 47255 implied edges)\n"
        d1 = "ssca2 graph digest: vertices=8192 edges=1 directed=2 undirected=3 adjacency=ab\n"
        d2 = "ssca2 graph digest: vertices=8197 edges=1 directed=2 undirected=4 adjacency=cd\n"
        bad = "ssca2 implied in-degrees: MISMATCH at vertex 7: counted 2, computed 3\n"
        ssca2 = stamp.APPS["ssca2"].check
        self.assertEqual(ssca2(ok + d1, ok + d1, 1)[0], "pass")
        self.assertEqual(ssca2(ok + d2, ok + d1, 1)[0], "fail")
        self.assertEqual(ssca2(ok + d2, ok + d1, 8)[0], "pass")
        self.assertEqual(ssca2(bad + d1, ok + d1, 8)[0], "fail")
        self.assertIn("vertex 7", ssca2(bad + d1, ok + d1, 8)[1])
        self.assertEqual(ssca2(d1, d1, 1)[0], "fail")


STAMP_FILES = ("lib/tm.h", "common/Defines.common.mk", "genome/Defines.common.mk")
TINYSTM_FILES = ("include/stm.h", "include/mod_mem.h", "Makefile")


def fake_tree(root, files):
    """A directory with these (empty) files: what the harness checks of a
    STAMP or TinySTM tree."""
    for f in files:
        os.makedirs(os.path.dirname(os.path.join(root, f)), exist_ok=True)
        open(os.path.join(root, f), "w").close()
    return root


class CommandLineTest(unittest.TestCase):
    def test_threads_flag_and_inputs(self):
        cmd = stamp.command("/b", stamp.APPS["kmeans-high"], "sim", 8, "schedstm-adaptive")
        self.assertEqual(cmd[0], "/b/kmeans/kmeans-stm")
        self.assertIn("/b/kmeans/inputs/random-n2048-d16-c16.txt", cmd)
        self.assertEqual(cmd[-1], "-p8")
        cmd = stamp.command("/b", stamp.APPS["vacation"], "standard", 2, "seq")
        self.assertEqual(cmd[0], "/b/vacation/vacation-seq")
        self.assertIn("-r1048576", cmd)
        self.assertEqual(cmd[-1], "-c2")
        for app in stamp.APPS.values():
            self.assertEqual(sorted(app.args), sorted(stamp.INPUT_SETS), app.name)
        cmd = stamp.command("/b", stamp.APPS["yada"], "medium", 1, "seq")
        self.assertIn("/b/yada/inputs/ttimeu100000.2", cmd)

    def test_input_sets_list(self):
        self.assertEqual(stamp.parse_args(["--inputs", "sim,medium"]).inputs, ["sim", "medium"])
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = stamp.main(["--dry-run", "--stamp-build", "/b", "--apps", "genome",
                             "--inputs", "sim,medium", "--threads", "1", "--cms", "default"])
        self.assertEqual(rc, 0)
        self.assertEqual(out.getvalue().splitlines(), [
            "/b/genome/genome-seq -g256 -s16 -n16384 -t1",
            "/b/genome/genome-stm -g256 -s16 -n16384 -t1",
            "/b/genome/genome-seq -g4096 -s32 -n1048576 -t1",
            "/b/genome/genome-stm -g4096 -s32 -n1048576 -t1"])

    def test_abi_variants_run_the_itm_programs(self):
        """--abi: the program compiled with -fgnu-tm (<app>-itm) on libitm
        with a method, on another runtime of the ABI through
        LD_LIBRARY_PATH, and its libschedstm-itm link (<app>-schedstm-itm),
        with privatization safety off for -nopriv; after the policies'."""
        with tempfile.TemporaryDirectory() as tmp:
            open(os.path.join(tmp, "libitm.so.1"), "w").close()
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = stamp.main(["--dry-run", "--stamp-build", "/b", "--apps", "kmeans",
                                 "--threads", "2", "--cms", "default", "--abi",
                                 "itm,schedstm-itm,schedstm-itm-nopriv,tiny-itm",
                                 "--itm-lib", "tiny=" + tmp])
        self.assertEqual(rc, 0)
        args = "-m40 -n40 -t0.05 -i /b/kmeans/inputs/random-n2048-d16-c16.txt -p2"
        self.assertEqual(out.getvalue().splitlines(), [
            "/b/kmeans/kmeans-seq " + args.replace("-p2", "-p1"),
            "/b/kmeans/kmeans-stm " + args,
            "ITM_DEFAULT_METHOD=ml_wt /b/kmeans/kmeans-itm " + args,
            "SCHEDSTM_ITM_PRIVATIZATION=1 /b/kmeans/kmeans-schedstm-itm " + args,
            "SCHEDSTM_ITM_PRIVATIZATION=0 /b/kmeans/kmeans-schedstm-itm " + args,
            "LD_LIBRARY_PATH=%s%s /b/kmeans/kmeans-itm %s" % (
                tmp, ":" + os.environ["LD_LIBRARY_PATH"] if os.environ.get("LD_LIBRARY_PATH")
                else "", args)])

    def test_bad_abi_options_are_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            for argv, said in (
                    (["--abi", "nope"], "--abi: unknown variant(s) nope (valid: itm,"
                     "schedstm-itm,schedstm-itm-nopriv)"),
                    (["--abi", "tinystm-itm"], "unknown variant(s) tinystm-itm"),
                    (["--itm-lib", "tinystm"], "expected NAME=DIR"),
                    (["--itm-lib", "tinystm=" + tmp], "has no libitm.so.1"),
                    (["--cms", "itm"], "bad policy name(s) itm"),
                    (["--cms", "none", "--abi", ""], "nothing to run")):
                with contextlib.redirect_stderr(io.StringIO()) as err, \
                        self.assertRaises(SystemExit) as e:
                    stamp.parse_args(argv)
                self.assertEqual(e.exception.code, 2, argv)
                self.assertIn(said, err.getvalue(), argv)
            open(os.path.join(tmp, "libitm.so.1"), "w").close()
            with contextlib.redirect_stderr(io.StringIO()) as err, \
                    self.assertRaises(SystemExit):
                stamp.parse_args(["--itm-lib", "schedstm=" + tmp])
            self.assertIn("that name is taken", err.getvalue())
            args = stamp.parse_args(["--cms", "none", "--abi", "schedstm-itm,t-itm",
                                     "--itm-lib", "t=" + tmp])
            self.assertEqual((args.abi, args.itm_libs), (["schedstm-itm", "t-itm"], {"t": tmp}))
            # GCC's libitm would be replaced by the caller's LD_LIBRARY_PATH
            saved = os.environ.get("LD_LIBRARY_PATH")
            os.environ["LD_LIBRARY_PATH"] = "/nonexistent:" + tmp
            try:
                with contextlib.redirect_stderr(io.StringIO()) as err, \
                        self.assertRaises(SystemExit) as e:
                    stamp.parse_args(["--cms", "none", "--abi", "itm"])
                self.assertEqual(e.exception.code, 2)
                self.assertIn("LD_LIBRARY_PATH holds %s/libitm.so.1" % tmp, err.getvalue())
                # the other runtimes do not load GCC's
                stamp.parse_args(["--cms", "none", "--abi", "schedstm-itm"])
            finally:
                if saved is None:
                    del os.environ["LD_LIBRARY_PATH"]
                else:
                    os.environ["LD_LIBRARY_PATH"] = saved

    def test_tinystm_adapter_dump(self):
        s = stamp.parse_stats(TINY_DUMP)
        self.assertEqual((s["commits"], s["aborts"]), (8202, 7))
        self.assertEqual(s["aborts_by_reason"], {"wr-conflict": 5, "val-read": 1, "explicit": 1})

    def test_bad_options_are_refused(self):
        for argv in (["--apps", "nope"], ["--threads", "0"], ["--threads", "1,,2"],
                     ["--cms", "Bad Name"], ["--inputs", "huge"], ["--inputs", "sim,"],
                     ["--cms", "none"], ["--report", "x"]):
            with contextlib.redirect_stderr(io.StringIO()), self.assertRaises(SystemExit) as e:
                stamp.parse_args(argv)
            self.assertEqual(e.exception.code, 2, argv)

    def test_a_directory_that_is_not_a_tree_is_refused(self):
        """--stamp-dir and --tinystm-dir are checked even when nothing is to
        be built (a wrong one would otherwise pass unnoticed)."""
        with tempfile.TemporaryDirectory() as tmp:
            stamp_tree = fake_tree(os.path.join(tmp, "stamp"), STAMP_FILES)
            tiny = fake_tree(os.path.join(tmp, "tinystm"), TINYSTM_FILES)
            args = stamp.parse_args(["--stamp-dir", stamp_tree, "--tinystm-dir", tiny])
            self.assertEqual((args.stamp_dir, args.tinystm_dir), (stamp_tree, tiny))
            for argv, said in (
                    (["--stamp-dir", tiny], "--stamp-dir %s is not a STAMP 0.9.10 tree (no "
                     "lib/tm.h, common/Defines.common.mk)" % tiny),
                    (["--tinystm-dir", stamp_tree], "--tinystm-dir %s is not a TinySTM tree "
                     "(no include/stm.h, include/mod_mem.h, Makefile)" % stamp_tree)):
                with contextlib.redirect_stderr(io.StringIO()) as err, \
                        self.assertRaises(SystemExit) as e:
                    stamp.parse_args(argv)
                self.assertEqual(e.exception.code, 2, argv)
                self.assertIn("stamp: error: " + said, err.getvalue())

    def test_help_names_the_program_run(self):
        saved = sys.argv[0]
        try:
            for argv0, usage in (("bench/harness/stamp.py", "usage: stamp.py "),
                                 ("bench/harness/sweep.py", "usage: sweep.py --bench stamp ")):
                sys.argv[0] = argv0
                with contextlib.redirect_stdout(io.StringIO()) as out, \
                        self.assertRaises(SystemExit):
                    stamp.parse_args(["--help"])
                self.assertTrue(out.getvalue().startswith(usage), out.getvalue()[:60])
        finally:
            sys.argv[0] = saved

    def test_sweep_hands_over(self):
        self.assertTrue(stamp.selected(["--bench", "stamp"]))
        self.assertTrue(stamp.selected(["--threads", "1", "--bench=stamp"]))
        self.assertFalse(stamp.selected(["--bench", "intset", "--apps", "stamp"]))
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = sweep.main(["--bench", "stamp", "--dry-run", "--stamp-build", "/b", "--apps",
                             "genome", "--threads", "2", "--cms", "default,ser-block"])
        self.assertEqual(rc, 0)
        self.assertEqual(out.getvalue().splitlines(), [
            "/b/genome/genome-seq -g256 -s16 -n16384 -t1",
            "/b/genome/genome-stm -g256 -s16 -n16384 -t2",
            "SCHEDSTM_CM=ser-block /b/genome/genome-stm -g256 -s16 -n16384 -t2"])
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = stamp.main(["--dry-run", "--stamp-build", "/b", "--apps", "genome", "--threads",
                             "2", "--cms", "none", "--tinystm"])
        self.assertEqual(rc, 0)
        self.assertEqual(out.getvalue().splitlines(), [
            "/b/genome/genome-seq -g256 -s16 -n16384 -t1",
            "/b/genome/genome-tinystm -g256 -s16 -n16384 -t2"])


    def test_dry_run_leaves_out_a_standin_that_cannot_be_made(self):
        """yada's standard input is not in STAMP's tree, and its stand-in
        needs Triangle. With no interpreter that has it, --dry-run says yada
        would be skipped and lists none of its commands, as a run skips it
        (and, with nothing left, stops with status 2 as a run does); with
        one, it says the stand-in would be made first."""
        tmp = tempfile.mkdtemp()
        pythons = {}
        for name, status in (("without", 1), ("with", 0)):
            pythons[name] = os.path.join(tmp, "python-%s-triangle" % name)
            with open(pythons[name], "w") as f:
                f.write("#!/bin/sh\nexit %d\n" % status)
            os.chmod(pythons[name], 0o755)
        saved = stamp._standin_python
        argv = ["--dry-run", "--stamp-build", "/b", "--inputs", "standard", "--threads", "2",
                "--cms", "default"]
        try:
            for which in ("without", "with"):
                stamp._standin_python = lambda name, py=pythons[which]: py
                with contextlib.redirect_stdout(io.StringIO()) as out, \
                        contextlib.redirect_stderr(io.StringIO()) as err:
                    rc = stamp.main(argv + ["--apps", "yada,genome"])
                self.assertEqual(rc, 0, err.getvalue())
                self.assertIn("/b/genome/genome-stm", out.getvalue())
                if which == "without":
                    self.assertIn("yada (standard inputs) would be skipped", err.getvalue())
                    self.assertIn("triangle package", err.getvalue())
                    self.assertNotIn("yada-", out.getvalue())
                else:
                    self.assertIn("yada (standard inputs) would run on a generated stand-in for "
                                  "ttimeu1000000.2 (made first)", err.getvalue())
                    self.assertIn("/b/yada/yada-stm", out.getvalue())
            stamp._standin_python = lambda name: pythons["without"]
            with contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()) as err:
                rc = stamp.main(argv + ["--apps", "yada"])
            self.assertEqual(rc, 2)
            self.assertIn("no application left to run", err.getvalue())
        finally:
            stamp._standin_python = saved

# A fake genome: prints what the real one prints; the schedstm variant
# writes a statistics dump where SSTM_STAMP_STATS says and reports the
# policy it was given. FAKE_MODE=badcheck prints a failed verification,
# crash exits 3, badcheck8 fails the check only at 8 threads (-t8).
FAKE = """#!/bin/sh
echo "Time = 0.5"
for a in "$@"; do
  if [ "$FAKE_MODE" = badcheck8 ] && [ "$a" = -t8 ]; then echo "Sequence matches gene: no"; exit 0;
  fi
done
if [ "$FAKE_MODE" = crash ]; then echo boom >&2; exit 3; fi
if [ "$FAKE_MODE" = checktime ]; then echo "ssca2 check time: cpu=0.000000 wall=0.250000"; fi
if [ "$FAKE_MODE" = badcheck ]; then echo "Sequence matches gene: no"; else
  echo "Sequence matches gene: yes"; fi
echo "abi: method=${ITM_DEFAULT_METHOD:-unset} priv=${SCHEDSTM_ITM_PRIVATIZATION:-unset}"
echo "abi: ld=${LD_LIBRARY_PATH:-unset}"
if [ -n "$SSTM_STAMP_STATS" ]; then
  printf 'total          commits=10 (ro=0) aborts=4 (0.4/commit)\\n' > "$SSTM_STAMP_STATS"
  printf '                 aborts: read-locked=3 user-retry=1\\n' >> "$SSTM_STAMP_STATS"
  echo "cm=${SCHEDSTM_CM:-unset}"
fi
"""


class WholeRunTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.build = os.path.join(self.tmp.name, "build")
        os.makedirs(os.path.join(self.build, "genome"))
        for kind in ("seq", "stm", "tinystm", "itm", "schedstm-itm"):
            path = os.path.join(self.build, "genome", "genome-" + kind)
            with open(path, "w") as f:
                f.write(FAKE)
            os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        self.out = os.path.join(self.tmp.name, "out")

    def tearDown(self):
        os.environ.pop("FAKE_MODE", None)
        self.tmp.cleanup()

    def sweep(self, *extra):
        argv = ["--bench", "stamp", "--stamp-build", self.build, "--apps", "genome",
                "--threads", "1,2", "--cms", "default,adaptive", "--out", self.out] + list(extra)
        with contextlib.redirect_stdout(io.StringIO()) as out, \
                contextlib.redirect_stderr(io.StringIO()):
            rc = sweep.main(argv)
        with open(os.path.join(self.out, "results.jsonl")) as f:
            return rc, [json.loads(line) for line in f], out.getvalue()

    def test_records_times_stats_and_checks(self):
        rc, recs, text = self.sweep()
        self.assertEqual(rc, 0)
        self.assertEqual([(r["variant"], r["threads"]) for r in recs], [
            ("seq", 1), ("schedstm-default", 1), ("schedstm-adaptive", 1),
            ("schedstm-default", 2), ("schedstm-adaptive", 2)])
        for r in recs:
            self.assertEqual((r["status"], r["check"]), ("ok", "pass"))
            self.assertGreater(r["wall_s"], 0)
            self.assertGreaterEqual(r["cpu_s"], 0)
            self.assertEqual(r["app_time_s"], 0.5)
        self.assertIn("git_commit", recs[0])
        self.assertIn("date", recs[0])
        seq, dflt, adaptive = recs[0], recs[1], recs[2]
        self.assertNotIn("commits", seq)
        self.assertEqual((dflt["commits"], dflt["aborts"]), (10, 4))
        self.assertEqual(dflt["aborts_by_reason"], {"read-locked": 3, "user-retry": 1})
        self.assertIn("cm=unset", dflt["stdout"])
        self.assertIn("cm=adaptive", adaptive["stdout"])
        self.assertEqual(adaptive["env"]["SCHEDSTM_CM"], "adaptive")
        self.assertIn("| genome | 2 | schedstm-adaptive |", text)
        with open(os.path.join(self.out, "results.csv")) as f:
            self.assertEqual(f.readline().strip().split(","), list(stamp.FIELDS))

    def test_failed_check_and_crash_fail_the_sweep(self):
        os.environ["FAKE_MODE"] = "badcheck"
        rc, recs, text = self.sweep()
        self.assertEqual(rc, 1)
        self.assertTrue(all(r["check"] == "fail" for r in recs))
        self.assertIn("## Failures", text)
        os.environ["FAKE_MODE"] = "crash"
        rc, recs, text = self.sweep()
        self.assertEqual(rc, 1)
        self.assertTrue(all(r["status"] == "fail" for r in recs))
        self.assertIn("exit status 3: boom", recs[0]["error"])
        # the progress line of a failed run says why it failed
        with contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()) as err:
            stamp.main(["--stamp-build", self.build, "--apps", "genome", "--threads", "1",
                        "--cms", "adaptive", "--out", self.out])
        self.assertRegex(err.getvalue(), r"\[  2/2\] rep 1 genome .* schedstm-adaptive +fail "
                         r"wall [0-9.]+s cpu [0-9.]+s fail: exit status 3: boom \(")

    def test_paired_ratios_and_range(self):
        rc, recs, text = self.sweep("--reps", "2")
        self.assertEqual(rc, 0)
        with open(os.path.join(self.out, "results.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(len(rows), 10)
        for r in rows:
            seq = [x for x in rows if x["variant"] == "seq" and x["rep"] == r["rep"]][0]
            self.assertAlmostEqual(float(r["rel_wall"]),
                                   float(r["wall_s"]) / float(seq["wall_s"]), places=6)
        self.assertIn("x seq (CPU) range", text)

    def test_a_programs_own_check_time_is_not_its_time(self):
        os.environ["FAKE_MODE"] = "checktime"
        rc, recs, text = self.sweep()
        self.assertEqual(rc, 0)
        for r in recs:
            self.assertEqual((r["check_cpu_s"], r["check_wall_s"]), (0.0, 0.25))
        os.environ.pop("FAKE_MODE")
        rc, plain, text = self.sweep()
        self.assertNotIn("check_wall_s", plain[0])

    def test_verify_mode_report(self):
        argv = ["--stamp-build", self.build, "--apps", "genome", "--threads", "1,8",
                "--cms", "default,adaptive", "--out", self.out, "--verify"]
        with contextlib.redirect_stdout(io.StringIO()) as out, \
                contextlib.redirect_stderr(io.StringIO()):
            rc = stamp.main(argv)
        self.assertEqual(rc, 0)
        with open(os.path.join(self.out, "verify.json")) as f:
            report = json.load(f)
        self.assertTrue(report["ok"])
        self.assertEqual((report["runs"], report["passed"], report["failed"]), (4, 4, 0))
        self.assertEqual(sorted((r["threads"], r["cm"]) for r in report["results"]),
                         [(1, "adaptive"), (1, "default"), (8, "adaptive"), (8, "default")])
        self.assertIn("| genome | sim | 1/1 | 1/1 | 1/1 | 1/1 |", out.getvalue())
        self.assertTrue(os.path.exists(os.path.join(self.out, "summary.md")))
        os.environ["FAKE_MODE"] = "badcheck8"
        with contextlib.redirect_stdout(io.StringIO()) as out, \
                contextlib.redirect_stderr(io.StringIO()):
            rc = stamp.main(argv)
        self.assertEqual(rc, 1)
        with open(os.path.join(self.out, "verify.json")) as f:
            report = json.load(f)
        self.assertFalse(report["ok"])
        self.assertEqual((report["passed"], report["failed"]), (2, 2))
        self.assertIn("| genome | sim | 1/1 | 1/1 | 0/1 | 0/1 |", out.getvalue())
        self.assertIn("## Not passed", out.getvalue())

    def test_tinystm_variant(self):
        rc, recs, text = self.sweep("--tinystm")
        self.assertEqual(rc, 0)
        self.assertEqual([(r["variant"], r["threads"]) for r in recs], [
            ("seq", 1), ("schedstm-default", 1), ("schedstm-adaptive", 1), ("tinystm", 1),
            ("schedstm-default", 2), ("schedstm-adaptive", 2), ("tinystm", 2)])
        tiny = recs[3]
        self.assertTrue(tiny["cmd"].endswith("genome-tinystm -g256 -s16 -n16384 -t1"))
        self.assertNotIn("SCHEDSTM_CM", tiny["env"])
        self.assertIn("SSTM_STAMP_STATS", tiny["env"])
        self.assertEqual((tiny["commits"], tiny["aborts"]), (10, 4))
        # the tables with one column per variant, and the load average
        self.assertIn("| app | threads | schedstm-default | schedstm-adaptive | tinystm |", text)
        self.assertIn("| genome | 2 | 0.400 | 0.400 | 0.400 |", text)
        self.assertIn("| genome | 1 | read-locked 75 % | read-locked 75 % | read-locked 75 % |",
                      text)
        self.assertIn("Load average (1 min)", text)
        self.assertIsInstance(recs[0]["loadavg"], float)

    def test_abi_variants(self):
        lib = os.path.join(self.tmp.name, "tiny-abi")
        os.makedirs(lib)
        open(os.path.join(lib, "libitm.so.1"), "w").close()
        rc, recs, text = self.sweep("--cms", "none", "--verify", "--abi",
                                    "itm,schedstm-itm,schedstm-itm-nopriv,tinystm-itm",
                                    "--itm-lib", "tinystm=" + lib)
        self.assertEqual(rc, 0)
        self.assertEqual([(r["variant"], r["threads"], r["check"]) for r in recs], [
            ("seq", 1, "pass"), ("itm", 1, "pass"), ("schedstm-itm", 1, "pass"),
            ("schedstm-itm-nopriv", 1, "pass"), ("tinystm-itm", 1, "pass"),
            ("itm", 2, "pass"), ("schedstm-itm", 2, "pass"),
            ("schedstm-itm-nopriv", 2, "pass"), ("tinystm-itm", 2, "pass")])
        itm, sitm, nopriv, tiny = recs[5:9]
        self.assertTrue(itm["cmd"].endswith("genome-itm -g256 -s16 -n16384 -t2"))
        self.assertIn("abi: method=ml_wt priv=unset", itm["stdout"])
        self.assertTrue(sitm["cmd"].endswith("genome-schedstm-itm -g256 -s16 -n16384 -t2"))
        self.assertIn("abi: method=unset priv=1", sitm["stdout"])
        self.assertEqual((sitm["commits"], sitm["aborts"]), (10, 4))
        self.assertIn("cm=unset", sitm["stdout"])  # the library's default policy
        self.assertIn("abi: method=unset priv=0", nopriv["stdout"])
        self.assertTrue(tiny["cmd"].endswith("genome-itm -g256 -s16 -n16384 -t2"))
        self.assertIn("abi: ld=" + lib, tiny["stdout"])
        self.assertIn("abi: method=unset priv=unset", tiny["stdout"])
        with open(os.path.join(self.out, "summary.md")) as f:
            self.assertIn("| app | threads | itm | schedstm-itm | schedstm-itm-nopriv | "
                          "tinystm-itm |", f.read())
        self.assertIn("| genome | sim | 1/1 | 1/1 | 1/1 | 1/1 | 1/1 | 1/1 | 1/1 | 1/1 |", text)
        self.assertIn("| app | inputs | 1 itm | 1 schedstm-itm | 1 schedstm-itm-nopriv | "
                      "1 tinystm-itm | 2 itm |", text)

    def test_report_merges_runs_paired_within_each(self):
        first = self.out
        rc, recs1, _ = self.sweep("--cms", "adaptive")
        self.assertEqual(rc, 0)
        # a second run, TinySTM alone, whose sequential run is much slower:
        # its ratio must be over its own sequential run, not the first's
        self.out = os.path.join(self.tmp.name, "out2")
        seq = os.path.join(self.build, "genome", "genome-seq")
        with open(seq, "w") as f:
            f.write(FAKE.replace('echo "Time = 0.5"', 'echo "Time = 0.5"; sleep 0.3'))
        rc, recs2, _ = self.sweep("--cms", "none", "--tinystm")
        self.assertEqual(rc, 0)
        merged = os.path.join(self.tmp.name, "merged")
        with contextlib.redirect_stdout(io.StringIO()) as out, \
                contextlib.redirect_stderr(io.StringIO()):
            rc = stamp.main(["--report", "%s,%s" % (first, self.out), "--out", merged,
                             "--verify"])
        self.assertEqual(rc, 0)
        with open(os.path.join(merged, "results.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(len(rows), len(recs1) + len(recs2))
        tiny = [r for r in rows if r["variant"] == "tinystm"]
        seq2 = recs2[0]["wall_s"]
        for r in tiny:
            self.assertAlmostEqual(float(r["rel_wall"]), float(r["wall_s"]) / seq2, places=6)
        with open(os.path.join(merged, "verify.json")) as f:
            report = json.load(f)
        self.assertEqual(report["variants"], ["schedstm-adaptive", "tinystm"])
        self.assertIn("| genome | sim | 1/1 | 1/1 | 1/1 | 1/1 |", out.getvalue())
        self.assertTrue(os.path.exists(os.path.join(merged, "summary.md")))
        with contextlib.redirect_stderr(io.StringIO()) as err:
            rc = stamp.main(["--report", os.path.join(self.tmp.name, "nothing"), "--out",
                             merged])
        self.assertEqual(rc, 2)
        self.assertIn("cannot read", err.getvalue())

    def test_missing_programs(self):
        empty = os.path.join(self.tmp.name, "empty")
        with contextlib.redirect_stderr(io.StringIO()) as err:
            rc = stamp.main(["--stamp-build", empty, "--apps", "genome", "--skip-without-stamp"])
        self.assertEqual(rc, 77)
        self.assertIn("skipped: no STAMP tree", err.getvalue())
        with contextlib.redirect_stderr(io.StringIO()) as err:
            rc = stamp.main(["--stamp-build", empty, "--apps", "genome"])
        self.assertEqual(rc, 2)
        self.assertIn("give --stamp-dir", err.getvalue())

    def test_dry_run_says_what_a_run_would_build_or_why_it_would_stop(self):
        """--dry-run builds nothing, and says so: the build.sh command a
        run would start with when programs are missing and a STAMP tree is
        given, the reason a run would stop when none is; nothing when the
        programs are there."""
        empty = os.path.join(self.tmp.name, "empty")
        tree = fake_tree(os.path.join(self.tmp.name, "stamp-tree"), STAMP_FILES)
        tiny = fake_tree(os.path.join(self.tmp.name, "tinystm"), TINYSTM_FILES)
        cases = (
            (["--stamp-build", empty, "--stamp-dir", tree],
             "stamp: note: a run would first build the programs: %s --apps genome %s %s\n" % (
                 stamp.BUILD_SH, tree, empty)),
            (["--stamp-build", empty, "--stamp-dir", tree, "--tinystm-dir", tiny],
             "stamp: note: a run would first build the programs: %s --apps genome "
             "--tinystm-dir %s --variants 'seq stm tinystm' %s %s\n" % (stamp.BUILD_SH, tiny,
                                                                         tree, empty)),
            (["--stamp-build", empty],
             "stamp: warning: a run would stop here: no STAMP programs in %s (missing "
             "%s/genome/genome-seq); give --stamp-dir PATH" % (empty, empty)),
            (["--stamp-build", empty, "--stamp-dir", tree, "--abi", "schedstm-itm"],
             "stamp: note: a run would first build the programs: %s --apps genome "
             "--variants 'seq stm itm' %s %s\n" % (stamp.BUILD_SH, tree, empty)),
            (["--stamp-build", self.build, "--stamp-dir", tree], ""),
        )
        for extra, said in cases:
            with contextlib.redirect_stdout(io.StringIO()) as out, \
                    contextlib.redirect_stderr(io.StringIO()) as err:
                rc = stamp.main(["--dry-run", "--apps", "genome", "--threads", "2"] + extra)
            self.assertEqual(rc, 0, extra)
            # the sequential run and the two default policies' (and TinySTM's)
            self.assertEqual(len(out.getvalue().splitlines()),
                             4 if "--tinystm-dir" in extra or "--abi" in extra else 3, extra)
            if said:
                self.assertIn(said, err.getvalue())
            else:
                self.assertEqual(err.getvalue(), "")
        self.assertFalse(os.path.exists(empty))

    def test_no_matplotlib_says_how_to_get_the_plot(self):
        def no_matplotlib(records, path):
            raise ImportError("No module named 'matplotlib'")
        saved, stamp.plot = stamp.plot, no_matplotlib
        try:
            argv = ["--stamp-build", self.build, "--apps", "genome", "--threads", "1",
                    "--cms", "adaptive", "--plot", "--out", self.out]
            with contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()) as err:
                rc = stamp.main(argv)
        finally:
            stamp.plot = saved
        self.assertEqual(rc, 0)
        self.assertIn("stamp: warning: no plot: matplotlib is not installed", err.getvalue())
        self.assertIn("scripts/install-deps.sh --stamp installs it into build/venv; run the "
                      "harness with build/venv/bin/python (No module named 'matplotlib')",
                      err.getvalue())
        self.assertTrue(os.path.exists(os.path.join(self.out, "summary.md")))


class BuildShTest(unittest.TestCase):
    """bench/stamp/build.sh's command line: its help, a STAMP tree that
    lacks an application it is asked for, and when it rebuilds its copy of
    TinySTM (stand-in trees: nothing of STAMP or TinySTM is compiled)."""

    BUILD_SH = os.path.join(ROOT, "bench", "stamp", "build.sh")

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def build_sh(self, *argv):
        return subprocess.run([self.BUILD_SH] + list(argv), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True)

    def test_help_is_not_an_error(self):
        for flag in ("--help", "-h"):
            r = self.build_sh(flag)
            self.assertEqual((r.returncode, r.stderr), (0, ""), flag)
            self.assertIn("bench/stamp/build.sh [options] STAMP_DIR OUT_DIR", r.stdout)
        r = self.build_sh()
        self.assertEqual((r.returncode, r.stdout), (2, ""))
        self.assertIn("STAMP_DIR and OUT_DIR are required", r.stderr)

    def test_a_tree_without_an_application_is_refused_up_front(self):
        tree = fake_tree(os.path.join(self.tmp.name, "stamp"), STAMP_FILES)
        out = os.path.join(self.tmp.name, "out")
        # the applications separated by spaces, or by commas as the harness's
        for apps in ("genome yada kmeans", "genome,yada,kmeans"):
            r = self.build_sh("--apps", apps, tree, out)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("build.sh: '%s' has no yada kmeans (no <app>/Defines.common.mk "
                          "there); build the others with --apps" % tree, r.stderr)
            self.assertNotIn("make", r.stderr)
            self.assertFalse(os.path.exists(out))

    def test_a_failed_compilation_leaves_no_program(self):
        """A source that no longer compiles fails the build and leaves no
        program: neither the earlier build's object (the compiler leaves it
        in place) nor its program is taken for this build's."""
        tree = fake_tree(os.path.join(self.tmp.name, "stamp"), STAMP_FILES)
        sstm = fake_tree(os.path.join(self.tmp.name, "sstm"), ["src/libschedstm.so"])
        out = os.path.join(self.tmp.name, "out")
        with open(os.path.join(tree, "genome", "Defines.common.mk"), "w") as f:
            f.write("PROG := genome\nSRCS += genome.c\n")
        src = os.path.join(tree, "genome", "genome.c")
        prog = os.path.join(out, "genome", "genome-seq")
        with open(src, "w") as f:
            f.write("int main(void) { return 0; }\n")
        r = self.build_sh("--schedstm-build", sstm, "--variants", "seq", "--apps", "genome",
                          tree, out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(os.access(prog, os.X_OK))
        with open(src, "w") as f:
            f.write("int main(void) { return = ; }\n")
        r = self.build_sh("--schedstm-build", sstm, "--variants", "seq", "--apps", "genome",
                          tree, out)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("genome (seq) failed", r.stderr)
        self.assertFalse(os.path.exists(prog))

    def test_the_tinystm_copy_is_rebuilt_from_another_tree_or_a_changed_one(self):
        """The tinystm variant's TinySTM is a copy built in OUT_DIR: another
        --tinystm-dir, or a tree whose Makefile changed, is built again
        (stand-in trees whose make writes their name into libstm.a; the
        application's build after it fails, which does not matter here)."""
        tree = fake_tree(os.path.join(self.tmp.name, "stamp"), STAMP_FILES)
        sstm = fake_tree(os.path.join(self.tmp.name, "sstm"), ["src/libschedstm.so"])
        out = os.path.join(self.tmp.name, "out")

        def tinystm(name, config):
            t = fake_tree(os.path.join(self.tmp.name, name), TINYSTM_FILES)
            with open(os.path.join(t, "Makefile"), "w") as f:
                f.write("all:\n\tmkdir -p lib && echo %s >lib/libstm.a\nclean:\n\trm -rf lib\n"
                        % config)
            for f in TINYSTM_FILES:  # written an hour ago
                st = os.stat(os.path.join(t, f))
                os.utime(os.path.join(t, f), (st.st_atime - 3600, st.st_mtime - 3600))
            return t

        def build(t):
            self.build_sh("--schedstm-build", sstm, "--variants", "tinystm", "--apps", "genome",
                          "--tinystm-dir", t, tree, out)
            with open(os.path.join(out, "tinystm-lib", "lib", "libstm.a")) as f:
                return f.read().strip()

        a, b = tinystm("tiny-a", "a"), tinystm("tiny-b", "b")
        self.assertEqual(build(a), "a")
        self.assertEqual(build(b), "b")  # another tree, its headers no newer
        self.assertEqual(build(b), "b")
        with open(os.path.join(b, "Makefile"), "w") as f:  # the configuration changed
            f.write("all:\n\tmkdir -p lib && echo b-wt >lib/libstm.a\nclean:\n\trm -rf lib\n")
        self.assertEqual(build(b), "b-wt")


# SHA-256 of the two files of STAMP's kmeans generator (generate.py ROWS
# DIMS CENTRES) that STAMP 0.9.10 ships, decompressed: random-n2048-d16-c16
# and random-n16384-d24-c16. The stand-in of the third,
# random-n65536-d32-c16, comes from the same code.
KMEANS_SHIPPED = {
    (2048, 16, 16): "4c265df16d8d7a03f18aeb26f7359f1500625d07b8ae3edf62cc34d55ad29225",
    (16384, 24, 16): "70dd1bee5746d2625c294b3199c66f3ed481cf5e6398ed574cc8e969f7eaeadf",
}


def read(path):
    with open(path) as f:
        return f.read()


def orient(a, b, c):
    """Twice the signed area of abc: > 0 when counter-clockwise (exact on
    integer coordinates)."""
    return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])


def in_circle(a, b, c, d):
    """> 0 when d is strictly inside the circle through the
    counter-clockwise a, b, c (exact on integer coordinates)."""
    rows = [(p[0] - d[0], p[1] - d[1]) for p in (a, b, c)]
    rows = [(x, y, x * x + y * y) for x, y in rows]
    (a0, a1, a2), (b0, b1, b2), (c0, c1, c2) = rows
    return a0 * (b1 * c2 - b2 * c1) - a1 * (b0 * c2 - b2 * c0) + a2 * (b0 * c1 - b1 * c0)


def brute_delaunay(points):
    """The Delaunay triangulation of a few points in general position by
    brute force, in gen_inputs.triangulate()'s form (numbered from 0):
    every counter-clockwise triple whose circle holds no other point; the
    convex hull's edges (every other point strictly to their left); marker
    1 for a node on the hull."""
    tri = []
    for i, j, k in itertools.combinations(range(len(points)), 3):
        a, b, c = points[i], points[j], points[k]
        if orient(a, b, c) < 0:
            j, k, b, c = k, j, c, b
        if not any(in_circle(a, b, c, points[m]) > 0 for m in range(len(points))
                   if m not in (i, j, k)):
            tri.append([i, j, k])
    seg = [[i, j] for i, j in itertools.permutations(range(len(points)), 2)
           if all(orient(points[i], points[j], points[m]) > 0 for m in range(len(points))
                  if m not in (i, j))]
    on_hull = {i for edge in seg for i in edge}
    return tri, seg, [1 if i in on_hull else 0 for i in range(len(points))]


def read_mesh(case, prefix):
    """PREFIX.node, .ele, .poly read as yada's mesh_read reads them (a
    count and dimension first, then that many entries, '#' lines only
    after them), each checked against Triangle's formats. Returns (nodes
    {id: (x, y, marker)}, triangles [(a, b, c)], segments [(a, b)])."""
    def entries(ext, dim_at, dim, per_line):
        with open(prefix + ext) as f:
            lines = f.read().split("\n")
        case.assertEqual(lines[-1], "", "%s ends with a newline" % ext)
        head = lines[0].split()
        case.assertEqual(int(head[dim_at]), dim, "%s: dimension" % ext)
        body = lines[1:-1]
        if ext == ".poly":
            case.assertEqual(head, ["0", "2", "0", "1"], "nodes from the .node file")
            count, body = int(body[0].split()[0]), body[1:]
        else:
            count = int(head[0])
        rows = [line.split() for line in body[:count]]
        case.assertEqual(len(rows), count, "%s: %d entries" % (ext, count))
        for n, row in enumerate(rows, 1):
            case.assertEqual(len(row), per_line, "%s: %r" % (ext, row))
            case.assertEqual(int(row[0]), n, "%s: numbered from 1 in order" % ext)
            for field in row:  # sscanf's %li would read a leading 0 as octal
                case.assertRegex(field, r"^-?(0|[1-9][0-9]*)$")
        rest = body[count:]
        if ext == ".poly":
            case.assertEqual(rest[0].strip(), "0", "no holes")
            rest = rest[1:]
        case.assertTrue(all(line.startswith("#") for line in rest), rest)
        return [[int(x) for x in row[1:]] for row in rows]

    nodes = {i: tuple(row) for i, row in enumerate(entries(".node", 1, 2, 4), 1)}
    tris = [tuple(row) for row in entries(".ele", 1, 3, 4)]
    segs = [tuple(row[:2]) for row in entries(".poly", 1, 2, 4)]
    return nodes, tris, segs


def check_mesh(case, nodes, tris, segs):
    """What yada needs of its input, and what Triangle's "-c" output is:
    every index a node; every triangle counter-clockwise (not degenerate);
    an edge shared by at most two triangles, and the edges of one triangle
    only exactly the .poly's segments; the segments one closed convex
    polygon with every node inside it, on the nodes marked 1 and no others;
    as many triangles as a triangulation of n points with h on the hull has
    (2n - 2 - h)."""
    n = len(nodes)
    xy = {i: (x, y) for i, (x, y, _) in nodes.items()}
    edges = {}
    for t in tris:
        for i in t:
            case.assertIn(i, nodes, "triangle %r: node %d" % (t, i))
        case.assertGreater(orient(*(xy[i] for i in t)), 0, "triangle %r clockwise" % (t,))
        for a, b in ((t[0], t[1]), (t[1], t[2]), (t[2], t[0])):
            edges[frozenset((a, b))] = edges.get(frozenset((a, b)), 0) + 1
    case.assertLessEqual(max(edges.values()), 2)
    boundary = {e for e, k in edges.items() if k == 1}
    case.assertEqual(boundary, {frozenset(s) for s in segs}, "boundary edges = segments")
    hull = [i for s in segs for i in s]
    case.assertTrue(all(hull.count(i) == 2 for i in hull), "a closed polygon")
    case.assertEqual({i for i in nodes if nodes[i][2] == 1}, set(hull), "markers: the hull")
    for a, b in segs:  # oriented with the inside on the left
        third = next(i for t in tris if a in t and b in t for i in t if i not in (a, b))
        sign = 1 if orient(xy[a], xy[b], xy[third]) > 0 else -1
        for i in nodes:
            if i not in (a, b):
                case.assertGreater(sign * orient(xy[a], xy[b], xy[i]), 0,
                                   "node %d outside hull edge %d-%d" % (i, a, b))
    case.assertEqual(len(tris), 2 * n - 2 - len(segs))


class GenInputsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def test_kmeans_recipe_makes_the_files_stamp_ships(self):
        for (rows, dims, centres), digest in KMEANS_SHIPPED.items():
            h = hashlib.sha256()
            for line in gen_inputs.kmeans_lines(rows, dims, centres):
                h.update(line.encode())
            self.assertEqual(h.hexdigest(), digest, "generate.py %d %d %d" % (rows, dims, centres))

    def test_python2_float_printing(self):
        self.assertEqual([gen_inputs.py2_str(x) for x in (1.0, 0.1, 1e-05, -2.5, 0.352118266675119,
                                                           1e16)],
                         ["1.0", "0.1", "1e-05", "-2.5", "0.352118266675", "1e+16"])

    def test_kmeans_file_as_kmeans_reads_it(self):
        """kmeans reads lines "index a1 ... ad" (strtok on blanks and
        commas), the attribute count from the first line, each value with
        atof; the rows lie around the centres."""
        path = os.path.join(self.tmp.name, "k.txt")
        gen_inputs.write_kmeans(path, 100, 5, 4)
        text = read(path)
        lines = text.split("\n")
        self.assertEqual(lines[-1], "")
        self.assertEqual(len(lines) - 1, 100)
        reps = []
        for n, line in enumerate(lines[:-1], 1):
            fields = line.split(" ")
            self.assertEqual(fields[0], str(n))
            self.assertEqual(len(fields), 6, line)
            values = [float(x) for x in fields[1:]]
            # noise of sigma (1/4)^3 = 0.016 around 4 centres: rows of one
            # centre are within 0.2 of each other in every coordinate
            if not any(max(abs(a - b) for a, b in zip(r, values)) < 0.2 for r in reps):
                reps.append(values)
        self.assertEqual(len(reps), 4)
        self.assertEqual(text, "".join(gen_inputs.kmeans_lines(100, 5, 4)), "deterministic")

    def test_yada_files_of_a_delaunay_mesh(self):
        """The writer's formats and numbering, on the brute-force Delaunay
        triangulation of 14 of its points (no Triangle needed)."""
        prefix = os.path.join(self.tmp.name, "m")
        gen_inputs.write_yada(prefix, 14, triangulate=brute_delaunay)
        nodes, tris, segs = read_mesh(self, prefix)
        self.assertEqual(len(nodes), 14)
        self.assertEqual([(x, y) for x, y, _ in nodes.values()], gen_inputs.yada_points(14))
        for x, y, _ in nodes.values():
            self.assertLess(max(abs(x), abs(y)), 2 ** 53)
        check_mesh(self, nodes, tris, segs)
        self.assertFalse(any(os.path.exists(prefix + e + ".tmp") for e in (".node", ".ele",
                                                                             ".poly")))

    def test_mesh_checks_catch_a_broken_mesh(self):
        """Each rule of check_mesh fails on a mesh that breaks it."""
        pts = gen_inputs.yada_points(10)
        tri, seg, markers = brute_delaunay(pts)
        nodes = {i: (x, y, m) for i, ((x, y), m) in enumerate(zip(pts, markers), 1)}
        tris = [tuple(i + 1 for i in t) for t in tri]
        segs = [tuple(i + 1 for i in s) for s in seg]
        check_mesh(self, nodes, tris, segs)
        a, b, c = tris[0]
        inner = next(i for i in nodes if nodes[i][2] == 0)
        for broken in (
                (nodes, [(a, c, b)] + tris[1:], segs),                    # clockwise
                (nodes, tris[1:], segs),                                  # a hole
                (nodes, tris, segs[1:]),                                  # a segment less
                (nodes, [(a, b, len(nodes) + 1)] + tris[1:], segs),       # no such node
                ({**nodes, inner: nodes[inner][:2] + (1,)}, tris, segs)):  # marker off hull
            with self.assertRaises(AssertionError):
                check_mesh(self, *broken)

    @unittest.skipUnless(HAVE_TRIANGLE, "the Python package triangle is not installed "
                         "(bench/stamp/requirements.txt: scripts/install-deps.sh --stamp)")
    def test_yada_standin_is_triangles_delaunay_mesh(self):
        """With Triangle: 60 points written as the stand-in is; the mesh
        consistent, and its triangles those of the brute-force Delaunay
        triangulation; the same bytes a second time."""
        prefix = os.path.join(self.tmp.name, "t")
        gen_inputs.write_yada(prefix, 60)
        nodes, tris, segs = read_mesh(self, prefix)
        check_mesh(self, nodes, tris, segs)
        ref = brute_delaunay(gen_inputs.yada_points(60))[0]
        self.assertEqual({frozenset(t) for t in tris}, {frozenset(i + 1 for i in t) for t in ref})
        first = {e: read(prefix + e) for e in (".node", ".ele", ".poly")}
        gen_inputs.write_yada(prefix, 60)
        self.assertEqual(first, {e: read(prefix + e) for e in (".node", ".ele", ".poly")})


# A fake kmeans: exits 4 unless its -i file exists, prints two centres.
FAKE_KMEANS = """#!/bin/sh
while [ $# -gt 0 ]; do
  if [ "$1" = -i ] && [ ! -f "$2" ]; then echo "no $2" >&2; exit 4; fi
  shift
done
echo "Time: 0.5"
echo "0 0.25 0.75"
echo "1 0.5 0.125"
if [ -n "$SSTM_STAMP_STATS" ]; then
  printf 'total          commits=10 (ro=0) aborts=0 (0.0/commit)\\n' > "$SSTM_STAMP_STATS"
fi
"""


class StandinRunTest(unittest.TestCase):
    """The harness on the standard input of kmeans, with and without the
    tree's file, with a stand-in already made (a fake one: its making is
    gen_inputs.py's, above)."""

    NAME = "random-n65536-d32-c16.txt"

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.build = os.path.join(self.tmp.name, "build")
        self.inputs = os.path.join(self.build, "kmeans", "inputs")
        os.makedirs(os.path.join(self.inputs, "standin"))
        for kind in ("seq", "stm"):
            path = os.path.join(self.build, "kmeans", "kmeans-" + kind)
            with open(path, "w") as f:
                f.write(FAKE_KMEANS)
            os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        with open(os.path.join(self.inputs, "standin", self.NAME), "w") as f:
            f.write("1 0.5 0.5\n")
        with open(gen_inputs.manifest_path(self.build, self.NAME), "w") as f:
            json.dump({"standin_for": self.NAME, "description": "test stand-in",
                       "generator": "bench/stamp/gen_inputs.py", "sha256": {self.NAME: "ab"}}, f)
        self.out = os.path.join(self.tmp.name, "out")

    def tearDown(self):
        self.tmp.cleanup()

    def run_stamp(self, *extra):
        argv = ["--stamp-build", self.build, "--apps", "kmeans,kmeans-high", "--inputs",
                "standard", "--threads", "2", "--cms", "adaptive", "--verify",
                "--out", self.out] + list(extra)
        with contextlib.redirect_stdout(io.StringIO()) as out, \
                contextlib.redirect_stderr(io.StringIO()) as err:
            rc = stamp.main(argv)
        return rc, out.getvalue(), err.getvalue()

    def records(self):
        with open(os.path.join(self.out, "results.jsonl")) as f:
            return [json.loads(line) for line in f]

    def test_a_missing_standard_input_runs_on_the_standin_and_says_so(self):
        rc, out, err = self.run_stamp()
        self.assertEqual(rc, 0, err)
        recs = self.records()
        self.assertEqual(len(recs), 4)
        for r in recs:
            self.assertEqual((r["status"], r["input_origin"]), ("ok", "standin"))
            self.assertIn("/kmeans/inputs/standin/%s" % self.NAME, r["cmd"])
            self.assertEqual(r["standin"]["standin_for"], self.NAME)
            self.assertEqual(r["standin"]["sha256"], {self.NAME: "ab"})
        self.assertIn("kmeans (standard inputs) runs on a generated stand-in", err)
        self.assertIn("[stand-in input]", err)
        self.assertIn("Generated stand-in inputs, not STAMP's files", out)
        with open(os.path.join(self.out, "verify.json")) as f:
            report = json.load(f)
        self.assertTrue(report["ok"])
        self.assertEqual([(s["app"], s["standin_for"]) for s in report["standins"]],
                         [("kmeans", self.NAME), ("kmeans-high", self.NAME)])
        self.assertTrue(all(r["input_origin"] == "standin" for r in report["results"]))
        with open(os.path.join(self.out, "summary.md")) as f:
            self.assertIn("- kmeans-high (standard inputs): %s: test stand-in" % self.NAME,
                          f.read())
        with open(os.path.join(self.out, "results.csv")) as f:
            self.assertEqual({row["input_origin"] for row in csv.DictReader(f)}, {"standin"})

    def test_the_trees_own_file_wins(self):
        with open(os.path.join(self.inputs, self.NAME), "w") as f:
            f.write("1 0.5 0.5\n")
        rc, out, err = self.run_stamp()
        self.assertEqual(rc, 0, err)
        for r in self.records():
            self.assertEqual(r["input_origin"], "stamp")
            self.assertNotIn("standin", r)
            self.assertIn("/kmeans/inputs/%s" % self.NAME, r["cmd"])
        self.assertNotIn("stand-in", out + err)

    def test_no_standins_skips_as_before(self):
        rc, out, err = self.run_stamp("--no-standins")
        self.assertEqual(rc, 2)
        self.assertIn("kmeans (standard inputs) skipped: no input", err)
        self.assertIn("--no-standins", err)

    def test_dry_run_shows_the_standin_it_would_use(self):
        argv = ["--dry-run", "--stamp-build", self.build, "--apps", "kmeans-high",
                "--inputs", "sim,standard", "--threads", "2", "--cms", "default"]
        for extra, where, note in (([], "standin/", True), (["--no-standins"], "", False)):
            with contextlib.redirect_stdout(io.StringIO()) as out, \
                    contextlib.redirect_stderr(io.StringIO()) as err:
                rc = stamp.main(argv + extra)
            self.assertEqual(rc, 0)
            self.assertEqual(out.getvalue().splitlines()[2:], [
                "%s/kmeans/kmeans-seq -m15 -n15 -t0.00001 -i %s/%s%s -p1" % (
                    self.build, self.inputs, where, self.NAME),
                "%s/kmeans/kmeans-stm -m15 -n15 -t0.00001 -i %s/%s%s -p2" % (
                    self.build, self.inputs, where, self.NAME)], extra)
            self.assertIn("-i %s/random-n2048-d16-c16.txt" % self.inputs, out.getvalue())
            self.assertEqual("would run on a generated stand-in" in err.getvalue(), bool(note))
            self.assertNotIn("(made first)", err.getvalue())

    def test_a_standin_without_its_manifest_is_made_again(self):
        """The manifest is written last: without it the harness runs the
        generator (here a fake in place of gen_inputs.py) for the
        application, and runs on what it made; when the generator fails,
        the application is skipped with the generator's last line."""
        os.unlink(gen_inputs.manifest_path(self.build, self.NAME))
        fake = os.path.join(self.tmp.name, "fake_gen.py")
        with open(fake, "w") as f:
            f.write(FAKE_GEN)
        log = os.path.join(self.tmp.name, "gen.log")
        saved = stamp.GEN_INPUTS, os.environ.get("FAKE_GEN_LOG")
        stamp.GEN_INPUTS, os.environ["FAKE_GEN_LOG"] = fake, log
        try:
            rc, out, err = self.run_stamp()
            self.assertEqual(rc, 0, err)
            self.assertEqual(read(log).split(), ["--stamp-build", self.build, "kmeans"])
            self.assertIn("the STAMP tree has no %s; generating a stand-in" % self.NAME, err)
            self.assertEqual({r["standin"]["description"] for r in self.records()}, {"remade"})
            rc, out, err = self.run_stamp()  # made: not again
            self.assertEqual(len(read(log).split()), 3)
            os.unlink(gen_inputs.manifest_path(self.build, self.NAME))
            os.environ["FAKE_GEN_FAIL"] = "1"
            rc, out, err = self.run_stamp()
            self.assertEqual(rc, 2)
            self.assertIn("kmeans (standard inputs) skipped", err)
            self.assertIn("no stand-in: gen_inputs: error: it failed", err)
        finally:
            stamp.GEN_INPUTS = saved[0]
            os.environ.pop("FAKE_GEN_FAIL", None)
            os.environ.pop("FAKE_GEN_LOG", None)


# In place of gen_inputs.py: logs its arguments, then makes kmeans' stand-in
# (FAKE_GEN_FAIL unset) or fails as gen_inputs.py does.
FAKE_GEN = """import json, os, sys
sys.path.insert(0, %r)
import gen_inputs
with open(os.environ["FAKE_GEN_LOG"], "a") as f:
    f.write(" ".join(sys.argv[1:]) + "\\n")
if os.environ.get("FAKE_GEN_FAIL"):
    sys.stderr.write("gen_inputs: error: it failed\\n")
    sys.exit(1)
name = "random-n65536-d32-c16.txt"
with open(gen_inputs.manifest_path(sys.argv[2], name), "w") as f:
    json.dump({"standin_for": name, "description": "remade"}, f)
""" % os.path.dirname(gen_inputs.__file__)

if __name__ == "__main__":
    unittest.main()
