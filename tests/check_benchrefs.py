#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every benchmark section that the code and the docs cite by name exists.

Measured figures live in docs/benchmarks.md (the runs that decide each
target) and docs/benchmarks-history.md (everything else, dated), and code
comments and design notes cite them by section name: `docs/benchmarks.md,
"The gate's idle CPUs"`. When a section moves from one file to the other
or is renamed, such a citation points nowhere. This finds those.

A citation is a file name, benchmarks.md or benchmarks-history.md (with
any path and Markdown link around it), followed within a few characters
(`,`, `)`, `]`, backquotes, spaces, line breaks and comment stars) by a
quoted name. The name resolves when it starts the text of a heading of
that file, or of a paragraph that starts in bold (the dated paragraphs
inside a long section), compared with whitespace collapsed. Checked:
comments and text in src/, include/, bench/, tools/, tests/ and docs/,
and README.md; not CHANGELOG.md, whose entries describe the files as
they were, nor this checker and its test, whose citations are examples.

usage: check_benchrefs.py SOURCE_DIR
Exit status 0 when every citation resolves, 1 otherwise (each unresolved
citation is printed with its file and line), 2 for a usage error.
"""
import os
import re
import sys

FILES = ("docs/benchmarks.md", "docs/benchmarks-history.md")
CITE = re.compile(r"benchmarks(-history)?\.md[\]\)`,:;\s*(]{0,40}?\"([^\"]{4,300}?)\"")
SKIP_DIRS = {".git", "build", "node_modules", "__pycache__"}
# this checker and its test, whose citations are examples and plants
OWN = ("check_benchrefs.py", "test_check_benchrefs.py")
EXTS = (".c", ".h", ".S", ".md", ".py", ".sh", ".txt", ".cmake")


def norm(s):
    return " ".join(s.replace("**", "").split())


def names(path):
    """Normalized texts of the headings and bold-led paragraphs of a file."""
    out = []
    fence = False
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines):
        if line.startswith("```"):
            fence = not fence
        if fence:
            continue
        m = re.match(r"^#+ (.*)", line)
        if m:
            out.append(norm(m.group(1)))
        elif line.startswith("**"):
            para = []
            for l in lines[i : i + 6]:
                if not l.strip():
                    break
                para.append(l)
            out.append(norm(" ".join(para)))
    return out


def main(argv=None):
    argv = sys.argv if argv is None else argv
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = argv[1]
    known = {}
    for rel in FILES:
        path = os.path.join(root, rel)
        if not os.path.exists(path):
            print(f"{rel}: missing", file=sys.stderr)
            return 1
        known[rel] = names(path)
    errors = []
    cited = 0
    paths = [os.path.join(root, "README.md")]
    for top in ("src", "include", "bench", "tools", "tests", "docs"):
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = [x for x in dirs if x not in SKIP_DIRS]
            paths += [os.path.join(d, n) for n in sorted(files) if n.endswith(EXTS)]
    for path in paths:
        rel = os.path.relpath(path, root)
        if not os.path.exists(path) or os.path.basename(rel) in OWN:
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        flat, line_of = flatten(text)
        for m in CITE.finditer(flat):
            target = FILES[1] if m.group(1) else FILES[0]
            name = norm(m.group(2))
            if name.startswith("-") or " " not in name:
                continue  # an option or a value, not a section name
            cited += 1
            if not any(n.startswith(name) for n in known[target]):
                other = FILES[0] if m.group(1) else FILES[1]
                hint = f" (it is in {other})" if any(n.startswith(name) for n in known[other]) else ""
                errors.append(f'{rel}:{line_of[m.start()]}: "{name}": no such section in {target}{hint}')
    for e in errors:
        print(e)
    print(f"{cited} citations, {len(errors)} unresolved")
    return 1 if errors else 0


def flatten(text):
    """The text with each line break, and the indentation and comment star or
    hash after it, read as one space; and the line of each character."""
    out, line_of = [], []
    line = 1
    for m in re.finditer(r"([^\n]*)(\n[ \t]*(?:\*(?!\*)|#|//)?[ \t]*)?", text):
        out.append(m.group(1))
        line_of += [line] * len(m.group(1))
        if m.group(2):
            out.append(" ")
            line_of.append(line)
            line += 1
    return "".join(out), line_of


if __name__ == "__main__":
    sys.exit(main())
