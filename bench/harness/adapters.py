# SPDX-License-Identifier: MIT
"""Back-end adapters for the benchmark harness.

A *variant* is one column of a comparison: a back-end plus, for schedstm,
a design and a contention manager. Each variant knows how to build the
command line of one run (`command`) and how to turn the run's output into
a result record (`parse`). Our own binaries print one JSON object; peers
(TinySTM) print text that is parsed with the regular expressions below.

Standard library only.
"""

import json
import os
import re
import signal

# tinystm-same: our structures and drivers built against TinySTM's API
# (bench/tm/tm.h, TM_BACKEND_TINYSTM), present in the build only when
# CMake was given -DSCHEDSTM_TINYSTM_DIR; it takes the same options and
# prints the same JSON as ours, so it is a native variant, not a peer.
# schedstm-itm: the itm binaries' compiled code (gcc -fgnu-tm) linked with
# libschedstm-itm instead of libitm; it takes the schedstm options.
NATIVE_BACKENDS = ("schedstm", "schedstm-inline", "schedstm-itm", "itm", "seq", "tinystm-same")
# "-aw": the structure with its search "as written" (bench/ds/intset.h);
# TinySTM runs its own program for the base structure, which is written
# that way (see TinySTMVariant.binary).
BASE_STRUCTURES = ("ll", "sl", "rb", "hs")
STRUCTURES = BASE_STRUCTURES + ("rb-aw", "sl-aw")
AS_WRITTEN_SUFFIX = "-aw"
SB7_MIXES = ("r", "rw", "w")  # read-dominated, read-write, write-dominated
PEER_KINDS = ("tinystm",)
DESIGNS = ("etl", "ctl")
# A contention manager's name as the library accepts it (sstm_cm_register).
CM_NAME = re.compile(r"^[a-z0-9+_-]{1,52}$")

# Fields every result record carries (CSV columns, in order).
RESULT_FIELDS = (
    "bench", "variant", "backend", "design", "cm", "structure", "update",
    "initial", "range", "accounts", "audit", "threads", "duration_ms", "rep",
    "seed", "status", "commits_per_s", "aborts_per_s", "abort_ratio",
    "commits", "aborts", "elapsed_s", "final_size", "expected_size", "error",
    "clock", "commits_per_s_inside",
    "date", "git_commit", "git_dirty", "compiler", "cpu_model", "cpus", "kernel",
)


class RunFailed(Exception):
    """A run exited non-zero or printed nothing we can parse."""


def describe_exit(returncode):
    """'exit 3', or 'killed by SIGSEGV (signal 11)' for a negative status
    (the process was killed by that signal)."""
    if returncode < 0:
        try:
            return "killed by %s (signal %d)" % (signal.Signals(-returncode).name, -returncode)
        except ValueError:
            return "killed by signal %d" % -returncode
    return "exit %d" % returncode


def _exit_message(returncode, output):
    tail = _tail(output)
    return describe_exit(returncode) + (": " + tail if tail else "")


def _tail(text, lines=3):
    """The last few non-empty lines of text, joined (for error messages)."""
    kept = [line for line in text.strip().splitlines() if line.strip()]
    return " | ".join(kept[-lines:])


class Variant:
    """Base class: a named column of the comparison."""

    kind = "native"

    def __init__(self, label, backend):
        self.label = label
        self.backend = backend
        self.design = None
        self.cm = None

    def supports(self, point):
        """True if this variant can run the given point."""
        return True

    def command(self, point):
        """(argv, env overrides) for one run of point."""
        raise NotImplementedError

    def program(self, point):
        """The program a run of point executes (for its provenance), or None."""
        return None

    def unusable_programs(self, points):
        """Programs this variant was told to run for points that it cannot
        run (missing, not executable), as messages naming them."""
        return []

    def parse(self, stdout, stderr, returncode):
        """Result fields parsed from a run's output; raises RunFailed."""
        raise NotImplementedError


class NativeVariant(Variant):
    """One of our binaries: intset-<backend> / bank-<backend> / sb7-<backend>."""

    def __init__(self, label, backend, bin_dir, design=None, cm=None,
                 itm_method=None, lib_dir=None):
        super().__init__(label, backend)
        self.bin_dir = bin_dir
        self.design = design
        self.cm = cm
        self.itm_method = itm_method
        # the itm binaries on another runtime of the -fgnu-tm ABI: the
        # directory of its libitm.so.1, put first on LD_LIBRARY_PATH
        self.lib_dir = lib_dir

    def binary(self, bench):
        return os.path.join(self.bin_dir, "%s-%s" % (bench, self.backend))

    def program(self, point):
        return self.binary(point["bench"])

    def supports(self, point):
        if self.backend == "seq" and point["threads"] != 1:
            return False  # single-threaded by construction
        return os.access(self.binary(point["bench"]), os.X_OK)

    def command(self, point):
        argv = [self.binary(point["bench"])]
        argv += _native_workload_args(point)
        argv += ["-n", str(point["threads"]), "-d", str(point["duration_ms"]),
                 "-s", str(point["seed"])]
        if self.design:
            argv += ["-D", self.design]
        if self.cm:
            argv += ["-C", self.cm]
        env = {}
        if self.backend == "itm" and self.itm_method:
            env["ITM_DEFAULT_METHOD"] = self.itm_method
        if self.lib_dir:
            env["LD_LIBRARY_PATH"] = self.lib_dir
        return argv, env

    def parse(self, stdout, stderr, returncode):
        record = _last_json_object(stdout)
        if returncode != 0:
            raise RunFailed(_exit_message(returncode, stderr))
        if record is None:
            raise RunFailed("no JSON result on stdout: %s" % _tail(stderr + stdout))
        return record


def _native_workload_args(point):
    """Options of our binaries that select the workload."""
    if point["bench"] == "bank":
        return ["-a", str(point["accounts"]), "-p", str(point["audit"])]
    if point["bench"] == "sb7":
        return ["-w", point["mix"], "-l", str(point["long"]), "-z", str(point["scale"])]
    args = ["-S", point["structure"], "-i", str(point["initial"]),
            "-r", str(point["range"]), "-u", str(point["update"])]
    if point.get("buckets"):
        args += ["-b", str(point["buckets"])]
    return args


def _last_json_object(stdout):
    """The last line of stdout that parses as a JSON object, or None."""
    for line in reversed(stdout.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


# ---- TinySTM ---------------------------------------------------------------
# Their summary lines (totals are the lines starting with '#', per-thread ones
# are indented):
#   "#txs          : 10980920 (5490460.000000 / s)"
#   "#aborts       : 603 (300.898204 / s)"
#   "  #val-r      : 303 (151.197605 / s)"      (abort breakdown)
#   "Set size      : 16384 (expected: 16384)"    (intset check)
#   "Bank total    : 0 (expected: 0)"            (bank check)
#   "Duration      : 2000 (ms)"
#   "STM flags    : ... -UTM_STATISTICS ..."     (abort counts are 0 then)

_TINY_TXS = re.compile(r"^#txs +: ([0-9]+) \(([0-9.]+) / s\)$", re.M)
_TINY_ABORTS = re.compile(r"^#aborts +: ([0-9]+) \(([0-9.]+) / s\)$", re.M)
_TINY_REASON = re.compile(r"^  #([a-z-]+) +: ([0-9]+) \([0-9.]+ / s\)$", re.M)
_TINY_CHECK = re.compile(
    r"^(?:Set size|Bank total) +: (-?[0-9]+) \(expected: (-?[0-9]+)\)$", re.M)
_TINY_DURATION = re.compile(r"^Duration +: ([0-9]+) \(ms\)$", re.M)
_TINY_FLAGS = re.compile(r"^STM flags +: (.*)$", re.M)


class TinySTMVariant(Variant):
    """TinySTM's test programs, given the directory of intset-{ll,sl,rb,hs}
    (its bank program is looked up at ../bank/bank)."""

    kind = "tinystm"

    def __init__(self, label, directory):
        super().__init__(label, "tinystm")
        self.directory = directory

    def binary(self, point):
        if point["bench"] == "bank":
            return os.path.join(self.directory, os.pardir, "bank", "bank")
        # TinySTM's own tree and skip list search the plain way (branch on
        # the key, one load per step, keys re-read): they are the peer of
        # both our port and its "-aw" form.
        structure = point["structure"]
        if structure.endswith(AS_WRITTEN_SUFFIX):
            structure = structure[:-len(AS_WRITTEN_SUFFIX)]
        return os.path.join(self.directory, "intset-%s" % structure)

    def supports(self, point):
        if point["bench"] not in ("intset", "bank"):
            return False
        return os.access(self.binary(point), os.X_OK)

    def program(self, point):
        return os.path.normpath(self.binary(point))

    def unusable_programs(self, points):
        out = []
        for point in points:
            if point["bench"] not in ("intset", "bank"):
                continue
            path = os.path.normpath(self.binary(point))
            if not os.path.exists(path):
                problem = "%s does not exist" % path
            elif os.path.isdir(path) or not os.access(path, os.X_OK):
                problem = "%s is not an executable file" % path
            else:
                continue
            if problem not in out:
                out.append(problem)
        return out

    def command(self, point):
        argv = [self.binary(point), "-n", str(point["threads"]),
                "-d", str(point["duration_ms"]), "-s", str(point["seed"])]
        if point["bench"] == "bank":
            argv += ["-a", str(point["accounts"]), "-r", str(point["audit"])]
        else:
            argv += ["-i", str(point["initial"]), "-r", str(point["range"]),
                     "-u", str(point["update"])]
        return argv, {}

    def parse(self, stdout, stderr, returncode):
        if returncode != 0:
            raise RunFailed(_exit_message(returncode, stderr + stdout))
        txs = _TINY_TXS.search(stdout)
        if txs is None:
            raise RunFailed("no '#txs' line in TinySTM output: %s" % _tail(stdout))
        record = {"commits": int(txs.group(1)),
                  "commits_per_s": float(txs.group(2)),
                  "config": self._config(stdout)}
        record.update(self._aborts(stdout, int(txs.group(1))))
        record.update(self._check(stdout))
        duration = _TINY_DURATION.search(stdout)
        if duration:
            record["elapsed_s"] = int(duration.group(1)) / 1000.0
        return record

    @staticmethod
    def _config(stdout):
        flags = _TINY_FLAGS.search(stdout)
        return "tinystm " + (flags.group(1).strip() if flags else "(flags unknown)")

    @staticmethod
    def _aborts(stdout, commits):
        """Abort fields; unknown (None) unless built with TM_STATISTICS."""
        flags = _TINY_FLAGS.search(stdout)
        counted = flags is not None and "-DTM_STATISTICS" in flags.group(1)
        aborts = _TINY_ABORTS.search(stdout)
        if not counted or aborts is None:
            return {"aborts": None, "aborts_per_s": None, "abort_ratio": None}
        total = int(aborts.group(1))
        summary = stdout[aborts.start():]  # the totals' breakdown follows
        reasons = {}
        for match in _TINY_REASON.finditer(summary):
            if match.group(1) in reasons:
                break
            reasons[match.group(1)] = int(match.group(2))
        attempts = commits + total
        return {"aborts": total, "aborts_per_s": float(aborts.group(2)),
                "abort_ratio": total / attempts if attempts else 0.0,
                "aborts_by_reason": reasons}

    @staticmethod
    def _check(stdout):
        check = _TINY_CHECK.search(stdout)
        if check is None:
            return {}
        final, expected = int(check.group(1)), int(check.group(2))
        if final != expected:
            raise RunFailed("TinySTM check failed: %d != expected %d" % (final, expected))
        return {"final_size": final, "expected_size": expected}


def list_cms(binary):
    """The contention managers a schedstm benchmark binary accepts for -C,
    from its --list-cms line ("suicide, backoff, ..., ext (and P+ext for
    ...)"): the names before the first that is not one. None when the
    binary cannot say (it fails, or prints no name)."""
    import subprocess
    try:
        proc = subprocess.run([binary, "--list-cms"], stdin=subprocess.DEVNULL,
                              capture_output=True, encoding="utf-8", errors="replace",
                              timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    names = []
    for item in proc.stdout.strip().split(","):
        item = item.strip()
        if not CM_NAME.match(item):
            break
        names.append(item)
    return names or None


def cm_accepted(name, known):
    """True if the library takes name: a registered policy, "ext", or "P+ext"
    for a registered P (see sstm_cm_find)."""
    if name in known or name == "ext":
        return True
    return name.endswith("+ext") and name[:-len("+ext")] in known


def make_peer(spec):
    """Variant for a --peer NAME=DIR argument (NAME starts with a known
    peer kind, e.g. tinystm or tinystm-cmdelay)."""
    if "=" not in spec:
        raise ValueError("--peer expects NAME=DIR, got %r" % spec)
    name, directory = spec.split("=", 1)
    kind = next((k for k in PEER_KINDS if name == k or name.startswith(k + "-")), None)
    if kind is None:
        raise ValueError("unknown peer %r (known kinds: %s)" % (name, ", ".join(PEER_KINDS)))
    if not os.path.isdir(directory):
        raise ValueError("peer %s: %s is not a directory" % (name, directory))
    return TinySTMVariant(name, directory)


def make_native_variants(backends, bin_dir, designs, cms, itm_method):
    """Variants of our own back-ends; schedstm is crossed with every design
    and contention manager (labels gain -design / -cm when several)."""
    variants = []
    for backend in backends:
        if backend not in NATIVE_BACKENDS:
            raise ValueError("unknown back-end %r (valid: %s, or a --peer)"
                             % (backend, ", ".join(NATIVE_BACKENDS)))
        if not backend.startswith("schedstm"):
            variants.append(NativeVariant(backend, backend, bin_dir,
                                          itm_method=itm_method))
            continue
        for design in designs or [None]:
            for cm in cms or [None]:
                label = backend
                if design and len(designs) > 1:
                    label += "-" + design
                if cm and len(cms) > 1:
                    label += "-" + cm
                variants.append(NativeVariant(label, backend, bin_dir, design, cm))
    return variants
