#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The layers of src/ (docs/architecture.md) keep to their places:
  - the plain facilities below the engine, src/os and src/arch, include
    only their own and each other's headers (arch/ may use os/, os/ only
    itself) and the public ones, and use no name of the engine's;
  - the subsystems above the engine reach it through its interfaces only:
    the policies (src/cm), the executor (src/exec) and thread mapping
    (src/map) through src/iface/, the transactional stdio (src/libc)
    through the public API and src/iface/libc_services.h.

Each directory is compiled with a narrow include path (src/CMakeLists.txt),
so an include of "core/..." does not build. This check covers what the
include path cannot, in C files, headers and assembly (.S) alike:
  - an include that climbs out of the view ("../core/engine.h") or names a
    directory outside it;
  - a name of the engine's (one that src/core uses) which the directory
    uses without it being declared by an interface: include/, the headers
    of the directories in its view, or its own headers. That is a
    subsystem declaring an engine function itself to call it directly, or
    a facility that knows the engine's internals.

usage: check_layers.py SOURCE_DIR
Exit status 0 when every directory keeps to its layer, 1 otherwise (each
violation is listed), 2 for a usage error.
"""
import glob
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
NAME = re.compile(r"\bsstm__?\w+")


class Subsystem:
    """One directory of src/ and the view it is compiled with."""

    # the files read: C sources, headers and preprocessed assembly
    FILES = "*.[chS]"

    def __init__(self, name, what, view, the_way, bare_includes=False, check_headers=False,
                 below=False):
        self.name = name  # its directory under src/
        self.what = what  # how its files are called in the summary
        self.view = view  # directories of src/ whose headers it may include
        self.the_way = the_way  # what to use instead of an engine name
        self.bare_includes = bare_includes  # "x.h" (its own directory) allowed
        self.check_headers = check_headers  # its headers are checked for names too
        self.below = below  # a facility below the engine, not a subsystem above it


SUBSYSTEMS = (
    Subsystem("os", "OS-facility", ("os",), "src/os is below the engine", bare_includes=True,
              check_headers=True, below=True),
    Subsystem("arch", "machine-facility", ("arch", "os"), "src/arch is below the engine",
              check_headers=True, below=True),
    Subsystem("cm", "policy", ("cm", "iface", "os"), "src/iface/cm_services.h is the way"),
    Subsystem("libc", "stdio", ("libc", "iface", "os"),
              "the public API, src/iface/libc_services.h and os/ are", check_headers=True),
    Subsystem("exec", "executor", ("exec", "iface", "os", "arch"),
              "src/iface/exec_services.h is the way"),
    Subsystem("map", "thread-mapping", ("map", "iface", "os"),
              "src/iface/map_services.h is the way", bare_includes=True),
    Subsystem("abi", "compiler-ABI", ("abi", "arch"),
              "the public API is the way (arch/ckpt.h gives the checkpoint's layout)",
              check_headers=True),
)


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def names(paths):
    found = set()
    for p in paths:
        with open(p, encoding="utf-8") as f:
            found |= set(NAME.findall(strip_comments(f.read())))
    return found


def check(root, src, sub, engine, bad):
    """Check one subsystem; returns the number of its files."""
    files = sorted(glob.glob(os.path.join(src, sub.name, Subsystem.FILES)))
    prefixes = tuple(d + "/" for d in sub.view)
    for p in files:
        with open(p, encoding="utf-8") as f:
            text = f.read()
        for inc in INCLUDE.findall(text):
            own = sub.bare_includes and "/" not in inc
            if ".." in inc.split("/") or not (own or inc.startswith(prefixes)):
                bad.append(f"{os.path.relpath(p, root)}: includes \"{inc}\" (src/{sub.name} "
                           f"includes only {', '.join(prefixes)} headers)")
    interface = glob.glob(os.path.join(root, "include", "**", "*.h"), recursive=True)
    for d in sub.view:
        interface += glob.glob(os.path.join(src, d, "*.h"))
    allowed = names(interface)
    for p in files:
        if p.endswith(".h") and not sub.check_headers:
            continue
        for n in sorted(names([p]) & engine - allowed):
            bad.append(f"{os.path.relpath(p, root)}: uses the engine's {n}, which no "
                       f"interface header declares ({sub.the_way})")
    return len(files)


def main(argv):
    if len(argv) != 2:
        print("usage: check_layers.py SOURCE_DIR", file=sys.stderr)
        return 2
    root = argv[1]
    src = os.path.join(root, "src")
    if not glob.glob(os.path.join(src, "cm", "*.[ch]")):
        print(f"check_layers: no policy sources under {src}/cm", file=sys.stderr)
        return 2
    engine = names(glob.glob(os.path.join(src, "core", Subsystem.FILES)))
    bad = []
    counts = [(sub, check(root, src, sub, engine, bad)) for sub in SUBSYSTEMS]
    for line in bad:
        print(line)
    if bad:
        return 1
    for sub, n in counts:
        if sub.below:
            print(f"check_layers: {n} {sub.what} files use no engine header or name")
        else:
            print(f"check_layers: {n} {sub.what} files use the engine through "
                  f"{'the public API and its interface' if sub.name == 'libc' else 'its interfaces'} only")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
