#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every TEST() case of the suite is run by some ctest entry.

The test programs built on tests/common/runner.c list their cases with
`--list`; ctest runs one case per entry, named by the program's first
argument. A case added to a source file but not to the list in the
CMakeLists next to it would compile and never run. This check asks ctest
for the entries of the build it runs in (`ctest --show-only=json-v1`), and
for each runner program among their commands (it has TEST() cases: the
constructors `sstm_test_reg_<case>` are in its symbol table), compares `--list` with the first arguments of its
entries; an entry without arguments runs every case of its program.

usage: check_registered.py CTEST BUILD_DIR
Exit status 0 when every case is run, 1 otherwise (the cases are listed),
2 for a usage error.
"""
import json
import os
import subprocess
import sys


def runner_program(path):
    """True when the executable at path has TEST() cases (tests/common/runner.h)."""
    try:
        out = subprocess.run(["nm", "--defined-only", path], capture_output=True,
                             text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return False
    return any(line.split()[-1].startswith("sstm_test_reg_") for line in out.splitlines()
               if line.strip())


def main(argv):
    if len(argv) != 3:
        print("usage: check_registered.py CTEST BUILD_DIR", file=sys.stderr)
        return 2
    ctest, build = argv[1], argv[2]
    show = subprocess.run([ctest, "--show-only=json-v1"], cwd=build, capture_output=True,
                          text=True, check=True)
    runs = {}  # program path -> set of first arguments (None: no argument)
    for t in json.loads(show.stdout)["tests"]:
        cmd = t.get("command") or []
        if cmd:
            runs.setdefault(cmd[0], set()).add(cmd[1] if len(cmd) > 1 else None)
    missing, checked, cases = [], 0, 0
    for prog, firsts in sorted(runs.items()):
        if not os.path.isfile(prog) or not runner_program(prog):
            continue
        listed = subprocess.run([prog, "--list"], capture_output=True, text=True,
                                check=True).stdout.split()
        checked += 1
        cases += len(listed)
        if None not in firsts:
            missing += [f"{os.path.basename(prog)}:{c}" for c in listed if c not in firsts]
    for m in missing:
        print(f"{m}: defined but run by no ctest entry (add it to the CMakeLists that "
              f"registers its program)")
    print(f"{checked} programs with TEST() cases, {cases} cases, {len(missing)} run by no entry")
    return 1 if missing or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
