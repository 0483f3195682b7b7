#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every TEST() case of the suite is run by some ctest entry.

The test programs built on tests/common/runner.c list their cases with
`--list`; ctest runs one case per entry, named by the program's first
argument. A case added to a source file but not to the list in the
CMakeLists next to it would compile and never run. This check asks ctest
for the entries of the build it runs in (`ctest --show-only=json-v1`), and
for each runner program among their commands (it has TEST() cases: the
constructors `sstm_test_reg_<case>` are defined in its ELF symbol table), compares `--list` with the first arguments of its
entries; an entry without arguments runs every case of its program.

usage: check_registered.py CTEST BUILD_DIR
Exit status 0 when every case is run, 1 otherwise (the cases are listed),
2 for a usage error.
"""
import json
import os
import struct
import subprocess
import sys


def runner_program(path):
    """True when the executable at path has TEST() cases (tests/common/runner.h):
    its symbol table defines a constructor sstm_test_reg_<case>.

    The ELF symbol table is read here rather than through nm: one nm process
    per program (some 90 of them, most not runners) was most of this check's
    CPU time, and under a loaded host's starvation each process start costs
    far more than its CPU."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return False
    # ELF64, little-endian (the x86_64 builds this suite runs on)
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return False
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    if shoff == 0 or shentsize < 64 or shoff + shnum * shentsize > len(data):
        return False
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
                for i in range(shnum)]
    for _name, sh_type, _flags, _addr, off, size, link, _info, _align, entsize in sections:
        if sh_type != 2 or entsize < 24 or link >= shnum:  # SHT_SYMTAB
            continue
        stroff, strsize = sections[link][4], sections[link][5]
        for k in range(off, off + size - entsize + 1, entsize):
            st_name, = struct.unpack_from("<I", data, k)
            st_shndx, = struct.unpack_from("<H", data, k + 6)
            if st_shndx == 0 or st_name >= strsize:  # undefined, or no name
                continue
            start = stroff + st_name
            if data.startswith(b"sstm_test_reg_", start):
                return True
    return False


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
