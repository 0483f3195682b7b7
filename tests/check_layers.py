#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The policies (src/cm), the executor (src/exec) and thread mapping (src/map)
reach the engine through its interfaces only, and the transactional stdio
(src/libc) through the public API only.

src/cm is compiled without src/core on its include path (src/CMakeLists.txt,
schedstm_cm), so `#include "core/..."` does not build. This check covers
what the include path cannot:
  - an include that climbs out of the view ("../core/engine.h") or names a
    directory other than cm/, iface/ and os/;
  - a name of the engine's (one that src/core uses) which src/cm uses
    without it being part of an interface: include/, src/iface/, the OS
    layer's headers (src/os/*.h) or the policies' own headers (src/cm/*.h).
    That is a policy declaring an engine function itself to call it
    directly.

usage: check_layers.py SOURCE_DIR
Exit status 0 when src/cm keeps to its interfaces, 1 otherwise (each
violation is listed), 2 for a usage error.
"""
import glob
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
NAME = re.compile(r"\bsstm__?\w+")
ALLOWED_DIRS = ("cm/", "iface/", "os/")


def names(paths):
    found = set()
    for p in paths:
        with open(p, encoding="utf-8") as f:
            found |= set(NAME.findall(strip_comments(f.read())))
    return found


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def check_libc(root, src, bad):
    """The transactional stdio (src/libc) is built on the public API: it
    includes only its own headers (libc/) and the OS layer's (os/), and uses
    no engine name that include/, src/os/*.h or its own headers do not
    declare. Returns the number of files checked."""
    files = sorted(glob.glob(os.path.join(src, "libc", "*.[ch]")))
    for p in files:
        with open(p, encoding="utf-8") as f:
            text = f.read()
        for inc in INCLUDE.findall(text):
            if ".." in inc.split("/") or not inc.startswith(("libc/", "os/")):
                bad.append(f"{os.path.relpath(p, root)}: includes \"{inc}\" "
                           f"(the stdio includes only libc/ and os/ headers)")
    interface = glob.glob(os.path.join(root, "include", "**", "*.h"), recursive=True)
    interface += glob.glob(os.path.join(src, "os", "*.h"))
    interface += glob.glob(os.path.join(src, "libc", "*.h"))
    allowed = names(interface)
    engine = names(glob.glob(os.path.join(src, "core", "*.[ch]")))
    for p in files:
        for n in sorted(names([p]) & engine - allowed):
            bad.append(f"{os.path.relpath(p, root)}: uses the engine's {n}, which no "
                       f"public or os/ header declares")
    return len(files)


def check_exec(root, src, bad):
    """The executor (src/exec) reaches the engine through src/iface/ only,
    like the policies: it includes exec/, iface/, os/ and arch/ headers
    (the view it is compiled with) and uses no engine name that include/,
    src/iface/, the lower layers' headers (src/os, src/arch) or its own
    headers do not declare. Returns the number of files checked."""
    files = sorted(glob.glob(os.path.join(src, "exec", "*.[ch]")))
    dirs = ("exec/", "iface/", "os/", "arch/")
    for p in files:
        with open(p, encoding="utf-8") as f:
            text = f.read()
        for inc in INCLUDE.findall(text):
            if ".." in inc.split("/") or not inc.startswith(dirs):
                bad.append(f"{os.path.relpath(p, root)}: includes \"{inc}\" "
                           f"(the executor includes only exec/, iface/, os/ and arch/ headers)")
    interface = glob.glob(os.path.join(root, "include", "**", "*.h"), recursive=True)
    for d in ("iface", "os", "arch", "exec"):
        interface += glob.glob(os.path.join(src, d, "*.h"))
    allowed = names(interface)
    engine = names(glob.glob(os.path.join(src, "core", "*.[ch]")))
    for p in files:
        if p.endswith(".h"):
            continue
        for n in sorted(names([p]) & engine - allowed):
            bad.append(f"{os.path.relpath(p, root)}: uses the engine's {n}, which no "
                       f"interface header declares (src/iface/exec_services.h is the way)")
    return len(files)


def check_map(root, src, bad):
    """Thread mapping (src/map) is compiled with a view of map/, iface/ and
    os/ (src/CMakeLists.txt, schedstm_map): it includes only those headers
    (a bare name, "mapping.h", is one of its own directory) and uses no
    engine name that include/, src/iface/, src/os/*.h or its own headers do
    not declare (src/iface/map_services.h is the way). Returns the number of
    files checked."""
    files = sorted(glob.glob(os.path.join(src, "map", "*.[ch]")))
    for p in files:
        with open(p, encoding="utf-8") as f:
            text = f.read()
        for inc in INCLUDE.findall(text):
            if ".." in inc.split("/") or ("/" in inc and
                                          not inc.startswith(("map/", "iface/", "os/"))):
                bad.append(f"{os.path.relpath(p, root)}: includes \"{inc}\" "
                           f"(src/map includes only map/, iface/ and os/ headers)")
    interface = glob.glob(os.path.join(root, "include", "**", "*.h"), recursive=True)
    for d in ("iface", "os", "map"):
        interface += glob.glob(os.path.join(src, d, "*.h"))
    allowed = names(interface)
    engine = names(glob.glob(os.path.join(src, "core", "*.[ch]")))
    for p in files:
        if p.endswith(".h"):
            continue
        for n in sorted(names([p]) & engine - allowed):
            bad.append(f"{os.path.relpath(p, root)}: uses the engine's {n}, which no "
                       f"interface header declares (src/iface/map_services.h is the way)")
    return len(files)


def main(argv):
    if len(argv) != 2:
        print("usage: check_layers.py SOURCE_DIR", file=sys.stderr)
        return 2
    root = argv[1]
    src = os.path.join(root, "src")
    cm_files = sorted(glob.glob(os.path.join(src, "cm", "*.[ch]")))
    if not cm_files:
        print(f"check_layers: no policy sources under {src}/cm", file=sys.stderr)
        return 2
    bad = []
    for p in cm_files:
        with open(p, encoding="utf-8") as f:
            text = f.read()
        for inc in INCLUDE.findall(text):
            if ".." in inc.split("/") or not inc.startswith(ALLOWED_DIRS):
                bad.append(f"{os.path.relpath(p, root)}: includes \"{inc}\" "
                           f"(a policy includes only cm/, iface/ and os/ headers)")
    interface = glob.glob(os.path.join(root, "include", "**", "*.h"), recursive=True)
    interface += glob.glob(os.path.join(src, "iface", "*.h"))
    interface += glob.glob(os.path.join(src, "os", "*.h"))
    interface += glob.glob(os.path.join(src, "cm", "*.h"))
    allowed = names(interface)
    engine = names(glob.glob(os.path.join(src, "core", "*.[ch]")))
    for p in cm_files:
        if p.endswith(".h"):
            continue
        for n in sorted(names([p]) & engine - allowed):
            bad.append(f"{os.path.relpath(p, root)}: uses the engine's {n}, which no "
                       f"interface header declares (src/iface/cm_services.h is the way)")
    libc_files = check_libc(root, src, bad)
    exec_files = check_exec(root, src, bad)
    map_files = check_map(root, src, bad)
    for line in bad:
        print(line)
    if bad:
        return 1
    print(f"check_layers: {len(cm_files)} policy files use the engine through its interfaces only")
    print(f"check_layers: {libc_files} stdio files use the public API, libc/ and os/ only")
    print(f"check_layers: {exec_files} executor files use the engine through its interfaces only")
    print(f"check_layers: {map_files} thread-mapping files use the engine through its "
          f"interfaces only")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
