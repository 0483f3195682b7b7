#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The SCHEDSTM_* variables are read in one place and documented alike.

src/core/config.c is the only file of the library that reads the
environment (issue: one place for configuration); the variables it reads
are exactly those listed in include/schedstm/config.h's file comment (the
executor's, SCHEDSTM_EXEC_*, in include/schedstm/exec.h's) and in
README.md's configuration tables, and each README row names a field of
sstm_config_t (sstm_exec_config_t for SCHEDSTM_EXEC_*) that exists.

usage: check_knobs.py SOURCE_DIR
Exit status 0 when all agree, 1 otherwise (the differences are printed),
2 for a usage error.
"""
import os
import re
import sys


def read(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read()


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = sys.argv[1]
    errors = []

    # 1. Only config.c calls getenv in the library.
    readers = []
    for d, _, files in os.walk(os.path.join(root, "src")):
        for f in files:
            if f.endswith((".c", ".h")):
                path = os.path.join(d, f)
                rel = os.path.relpath(path, root)
                with open(path, encoding="utf-8") as fh:
                    if re.search(r"\bgetenv\s*\(", fh.read()):
                        readers.append(rel)
    if readers != ["src/core/config.c"]:
        errors.append("files of src/ that call getenv: %s (only src/core/config.c may)"
                      % ", ".join(sorted(readers)))

    # 2. What config.c reads.
    read_vars = set(re.findall(r'getenv\("(SCHEDSTM_[A-Z0-9_]+)"\)',
                               read(root, "src/core/config.c")))
    if not read_vars:
        errors.append("src/core/config.c: no getenv(\"SCHEDSTM_...\") found")

    # 3. config.h's file comment (before the include guard).
    header = read(root, "include/schedstm/config.h")
    doc = header[: header.index("#ifndef SCHEDSTM_CONFIG_H")]
    header_vars = set(re.findall(r"\bSCHEDSTM_[A-Z0-9_]+", doc))
    header_vars.discard("SCHEDSTM_CONFIG_H")
    # The executor's variables are listed in its own header's file comment.
    exec_header = read(root, "include/schedstm/exec.h")
    exec_doc = exec_header[: exec_header.index("#ifndef SCHEDSTM_EXEC_H")]
    header_vars |= set(re.findall(r"\bSCHEDSTM_EXEC_[A-Z0-9_]+", exec_doc))

    # 4. README's tables: rows "| `SCHEDSTM_X` | `field` | ...".
    readme = read(root, "README.md")
    rows = re.findall(r"^\| `(SCHEDSTM_[A-Z0-9_]+)` \| `?([a-z_0-9-]+)`? \|", readme, re.M)
    readme_vars = {v for v, _ in rows}
    struct = header[header.index("typedef struct sstm_config {"):]
    struct = struct[: struct.index("} sstm_config_t;")]
    fields = set(re.findall(r"\b([a-z_0-9]+);", struct))
    exec_struct = exec_header[exec_header.index("typedef struct sstm_exec_config {"):]
    exec_struct = exec_struct[: exec_struct.index("} sstm_exec_config_t;")]
    exec_fields = set(re.findall(r"\b([a-z_0-9]+);", exec_struct))
    for var, field in rows:
        if var.startswith("SCHEDSTM_EXEC_"):
            if field not in exec_fields:
                errors.append("README.md: %s names field '%s', not a field of "
                              "sstm_exec_config_t" % (var, field))
        elif field not in fields:
            errors.append("README.md: %s names field '%s', not a field of sstm_config_t"
                          % (var, field))

    for name, found in (("include/schedstm/config.h", header_vars), ("README.md", readme_vars)):
        for v in sorted(read_vars - found):
            errors.append("%s: %s is read by src/core/config.c but not listed" % (name, v))
        for v in sorted(found - read_vars):
            errors.append("%s: %s is listed but src/core/config.c does not read it" % (name, v))

    for e in errors:
        print(e)
    if not errors:
        print("%d SCHEDSTM_* variables, read in src/core/config.c only, listed alike in "
              "config.h and README.md" % len(read_vars))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
