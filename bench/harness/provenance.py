# SPDX-License-Identifier: MIT
"""Where a benchmark ran: the fields every result record of the harness
carries (git commit and dirty flag, CPU model and count, kernel release,
compiler of the program, UTC date). Shared by sweep.py and stamp.py."""

import datetime
import os
import platform
import subprocess

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))


def _command_output(argv):
    """stdout of a short command, stripped, or None if it cannot run or fails."""
    try:
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                              encoding="utf-8", errors="replace", timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def cpu_model():
    """The first "model name" of /proc/cpuinfo (x86), or the machine type."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model", "cpu model"):
                    return " ".join(value.split())
    except OSError:
        pass
    return platform.machine() or None


def usable_cpus():
    """The CPUs this process may run on (its affinity), as the runs see them."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count()


def host_provenance(repo=None):
    """The fields of every record that say where the sweep ran: the git
    commit of the harness's tree and whether it had uncommitted changes to
    tracked files, the CPU model and count, the kernel release."""
    repo = repo or REPO
    commit = _command_output(["git", "-C", repo, "rev-parse", "HEAD"])
    status = _command_output(["git", "-C", repo, "status", "--porcelain",
                              "--untracked-files=no"]) if commit else None
    return {"git_commit": commit, "git_dirty": None if status is None else bool(status),
            "cpu_model": cpu_model(), "cpus": usable_cpus(), "kernel": platform.release()}


_COMPILERS = {}


def compiler_of(program):
    """The compiler(s) named in a program's ELF .comment section (e.g.
    "GCC: (Debian 12.2.0-14) 12.2.0"), "; "-joined; None when the program
    is not an ELF file or readelf is missing. Cached per path."""
    if program is None:
        return None
    if program not in _COMPILERS:
        text = _command_output(["readelf", "-p", ".comment", program])
        names = []
        for line in (text or "").splitlines():
            line = line.strip()
            if line.startswith("[") and "]" in line:
                name = line.split("]", 1)[1].strip()
                if name and name not in names:
                    names.append(name)
        _COMPILERS[program] = "; ".join(names) or None
    return _COMPILERS[program]


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
