#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every atomic access names its C11 memory order (CONTRIBUTING.md).

Looks through the C sources and headers of src/, include/, tests/, bench/
and tools/ for the <stdatomic.h> generic functions that take the implicit
memory_order_seq_cst (atomic_load, atomic_store, atomic_exchange,
atomic_fetch_<op>, atomic_compare_exchange_<strength>, atomic_flag_test_and_set,
atomic_flag_clear) and reports each call, outside comments and string
literals, by file and line. The _explicit forms name the order; where
sequential consistency is what a test needs, it says so with
memory_order_seq_cst.

usage: check_atomics.py SOURCE_DIR
Exit status 0 when no implicit-order call is found, 1 otherwise (each one
printed), 2 for a usage error or an unreadable tree.
"""
import os
import re
import sys

DIRS = ("src", "include", "tests", "bench", "tools")
IMPLICIT = re.compile(
    r"\batomic_(load|store|exchange|fetch_(?:add|sub|or|and|xor)|"
    r"compare_exchange_(?:strong|weak)|flag_test_and_set|flag_clear)\s*\(")


def blank_comments_and_strings(text):
    """The text with every comment and string or character literal replaced
    by spaces (newlines kept), so that offsets and line numbers still match."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif text[i] in "\"'":
            q, j = text[i], i + 1
            while j < n and text[j] != q and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
        else:
            i += 1
            continue
        for k in range(i, j):
            if out[k] != "\n":
                out[k] = " "
        i = j
    return "".join(out)


def implicit_calls(text):
    """(line, name) of each implicit-order call in C source text."""
    code = blank_comments_and_strings(text)
    return [(code.count("\n", 0, m.start()) + 1, "atomic_" + m.group(1))
            for m in IMPLICIT.finditer(code)]


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = argv[1]
    if not os.path.isdir(os.path.join(root, "src")):
        print(f"check_atomics: {root}: not a source tree (no src/)", file=sys.stderr)
        return 2
    found = []
    for top in DIRS:
        for d, subdirs, files in os.walk(os.path.join(root, top)):
            subdirs[:] = sorted(s for s in subdirs if not s.startswith(("build", ".")))
            for f in sorted(files):
                if not f.endswith((".c", ".h")):
                    continue
                path = os.path.join(d, f)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
                for line, name in implicit_calls(text):
                    found.append(f"{os.path.relpath(path, root)}:{line}: {name} without a "
                                 f"memory order: use {name}_explicit")
    for msg in found:
        print(msg)
    if found:
        print(f"check_atomics: {len(found)} atomic access(es) without an explicit memory order")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
