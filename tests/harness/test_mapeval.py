# SPDX-License-Identifier: MIT
"""Tests of bench/harness/mapeval.py (thread-mapping evaluation): the
matrix reader against the format the library writes, the results' keys
(application and thread count from the file name), the tables, the record
step against a fake benchmark program that writes its matrix where
SCHEDSTM_MAP_DUMP says, and the figures when matplotlib is there."""

import contextlib
import importlib.util
import io
import json
import os
import stat
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
sys.path.insert(0, os.path.join(ROOT, "bench", "harness"))

import mapeval  # noqa: E402

MATRIX = "# c\nschedstm-comm-matrix 1\nthreads 3\n0 5 1\n5 0 0\n\n1 0 0\n"
HEADER = "topology,matrix,threads,strategy,cost,rel_none,ms,max_load\n"


def eval_csv(d):
    rows = [HEADER]
    for topo in ("xeon", "opteron"):
        for app, n in (("intset-hs-32.mat", 33), ("ring", 16)):
            for i, s in enumerate(mapeval.STRATEGIES):
                rel = 1.0 - 0.1 * i
                rows.append("%s,%s,%d,%s,%.1f,%.4f,0.5,1\n" % (topo, app, n, s, 100 * rel, rel))
    with open(os.path.join(d, "eval.csv"), "w") as f:
        f.writelines(rows)


class MapevalTest(unittest.TestCase):
    def test_read_matrix(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "a-3.mat")
            with open(p, "w") as f:
                f.write(MATRIX)
            self.assertEqual(mapeval.read_matrix(p), (3, [[0, 5, 1], [5, 0, 0], [1, 0, 0]]))
            with open(p, "w") as f:
                f.write("schedstm-comm-matrix 1\nthreads 2\n0 1\n1\n")
            with self.assertRaisesRegex(ValueError, r"a-3.mat:4: 1 numbers, expected 2"):
                mapeval.read_matrix(p)
            with open(p, "w") as f:
                f.write("something else\n")
            with self.assertRaisesRegex(ValueError, "not a schedstm-comm-matrix 1 file"):
                mapeval.read_matrix(p)

    def test_keys_and_table(self):
        with tempfile.TemporaryDirectory() as d:
            eval_csv(d)
            data = mapeval.load_eval(os.path.join(d, "eval.csv"))
            self.assertEqual(sorted(data), ["opteron", "xeon"])
            # The file's thread count, not the matrix order (33: main thread too).
            self.assertEqual(sorted(data["xeon"]), [("intset-hs", 32), ("ring", 16)])
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(mapeval.main(["table", "--matrices", d]), 0)
            text = out.getvalue()
            self.assertIn("| intset-hs | 32 | 0.900 | 0.800 | 0.700 | 0.600 | 0.500 | 0.400 |",
                          text)
            self.assertIn("| mean | | 0.900 | 0.800 | 0.700 | 0.600 | 0.500 | 0.400 |", text)

    def test_record_with_a_fake_program(self):
        with tempfile.TemporaryDirectory() as d:
            bench = os.path.join(d, "build", "bench")
            os.makedirs(bench)
            prog = os.path.join(bench, "intset-schedstm")
            with open(prog, "w") as f:
                f.write("#!/bin/sh\n[ \"$SCHEDSTM_MAP_STRATEGY\" = detect ] || exit 3\n"
                        "case \"$*\" in *'-S rb'*) exit 0;; esac\n"
                        "printf '%s' \"$MATRIX\" > \"$SCHEDSTM_MAP_DUMP\"\n")
            os.chmod(prog, stat.S_IRWXU)
            out = os.path.join(d, "rec")
            os.environ["MATRIX"] = MATRIX
            try:
                with contextlib.redirect_stderr(io.StringIO()) as err:
                    rc = mapeval.main(["record", "--out", out, "--schedstm-build",
                                       os.path.join(d, "build"), "--threads", "2,4",
                                       "--intset", "hs,rb"])
            finally:
                del os.environ["MATRIX"]
            # rb writes no matrix: a failure, reported and logged.
            self.assertEqual(rc, 1)
            self.assertIn("intset-rb 2 threads: FAILED", err.getvalue())
            self.assertEqual(sorted(os.listdir(out)),
                             ["intset-hs-2.mat", "intset-hs-4.mat", "record.jsonl"])
            with open(os.path.join(out, "record.jsonl")) as f:
                recs = [json.loads(line) for line in f]
            self.assertEqual([(r["name"], r["threads"], r["matrix"] is not None) for r in recs],
                             [("intset-hs", 2, True), ("intset-hs", 4, True),
                              ("intset-rb", 2, False), ("intset-rb", 4, False)])

    def test_evaluate_skips_matrices_with_fewer_rows_than_threads(self):
        with tempfile.TemporaryDirectory() as d:
            for name in ("few-4.mat", "whole-2.mat"):
                with open(os.path.join(d, name), "w") as f:
                    f.write(MATRIX)
            tool = os.path.join(d, "fake-mapeval")
            with open(tool, "w") as f:  # one line per --matrix argument
                f.write("#!/bin/sh\necho '%s'\nwhile [ $# -gt 0 ]; do\n"
                        "  [ \"$1\" = --matrix ] && echo \"xeon,$(basename $2),3,stmap,1,1,0,1\"\n"
                        "  shift\ndone\n" % HEADER.strip())
            os.chmod(tool, stat.S_IRWXU)
            with contextlib.redirect_stderr(io.StringIO()) as err:
                rc = mapeval.main(["evaluate", "--matrices", d, "--mapeval", tool,
                                   "--topos", "xeon"])
            self.assertEqual(rc, 0, err.getvalue())
            self.assertIn("skipped few-4.mat: 3 rows for 4 threads", err.getvalue())
            with open(os.path.join(d, "eval.csv")) as f:
                self.assertEqual([line.split(",")[1] for line in f][1:], ["whole-2.mat"])

    @unittest.skipIf(importlib.util.find_spec("matplotlib") is None, "matplotlib missing")
    def test_plot(self):
        with tempfile.TemporaryDirectory() as d:
            eval_csv(d)
            with open(os.path.join(d, "intset-hs-32.mat"), "w") as f:
                f.write(MATRIX)
            img = os.path.join(d, "img")
            with contextlib.redirect_stderr(io.StringIO()):
                self.assertEqual(mapeval.main(["plot", "--matrices", d, "--img-dir", img]), 0)
            self.assertEqual(sorted(os.listdir(img)), ["mapping-matrices.png",
                                                       "mapping-opteron.png", "mapping-xeon.png"])


if __name__ == "__main__":
    unittest.main()
