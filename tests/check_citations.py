#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every design step that the code cites exists in its design document.

The correctness arguments are written once, in docs/design/, in numbered
steps that the code cites by label (CONTRIBUTING.md): "(8.3)" is item 3 of
section (8) of docs/design/core.md, "(A2)" a section of admission.md,
"(I3.2)" item 2 of (I3) in itm.md, "(S10)" a step of tm-libc.md. When a
document's steps are renumbered or a section is cut, a citation left in a
comment points at another step or at none; this finds the second kind.

A section is defined by a heading "## (X) ..." or by a paragraph that
starts with "**(X)"; its items are the top-level numbered list items
("3. ...") from there to the next section. A citation is "(X)" or "(X.m)"
in a comment of src/ or include/ (C, headers, assembly), not preceded by a
name (so that "f(0)" is not one). A bare number in parentheses is as often
a value ("(default 32)" reads "(32)") as a section of core.md, so of the
numeric labels only the dotted form "(8.3)" is checked. Labels of other
letters are local to the file that defines them (the executor's K1-K5)
and are not checked here.

usage: check_citations.py SOURCE_DIR
Exit status 0 when every citation resolves, 1 otherwise (each unresolved
citation is printed with its file and line), 2 for a usage error.
"""
import os
import re
import sys

# label prefix -> the document that defines those labels
DOCS = {
    "": "docs/design/core.md",
    "A": "docs/design/admission.md",
    "I": "docs/design/itm.md",
    "S": "docs/design/tm-libc.md",
}

SECTION = re.compile(r"^(?:## |\*\*)\(([A-Z]?\d+)\)")
ITEM = re.compile(r"^(\d+)\. ")
LABEL = r"[AIS]?\d+(?:\.\d+)?"
# "(8.3)", "(8.1-8.3)", "(1.1, 3.3)", "(I3.2 and I3.3)"
CITE = re.compile(r"(?<![\w)\]])\((" + LABEL + r"(?:(?:-|\u2013|, | and )" + LABEL + r")*)\)")
ONE = re.compile(r"([AIS]?\d+)(?:\.(\d+))?")
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')


def sections(path):
    """{label: set of item numbers} of one design document."""
    out = {}
    cur = None
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = SECTION.match(line)
            if m:
                cur = m.group(1)
                out.setdefault(cur, set())
                continue
            if line.startswith("## "):
                cur = None  # an unlabelled section ends the labelled one
                continue
            m = ITEM.match(line)
            if m and cur is not None:
                out[cur].add(int(m.group(1)))
    return out


def comments(text):
    """(offset, comment) of each comment, string literals left out."""
    blanked = STRING.sub(lambda m: '"' + " " * (len(m.group(0)) - 2) + '"', text)
    for m in COMMENT.finditer(blanked):
        yield m.start(), text[m.start() : m.end()]


def main(argv=None):
    argv = sys.argv if argv is None else argv
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = argv[1]
    defined = {}
    for prefix, rel in DOCS.items():
        path = os.path.join(root, rel)
        if not os.path.exists(path):
            print(f"{rel}: missing", file=sys.stderr)
            return 1
        secs = sections(path)
        for label, items in secs.items():
            if (label[0].isalpha() and label[0] == prefix) or (not prefix and label.isdigit()):
                defined[label] = items
    for prefix, rel in DOCS.items():
        if not any(l.isdigit() if not prefix else l.startswith(prefix) for l in defined):
            print(f"{rel}: no labelled section found (has the format changed?)", file=sys.stderr)
            return 1

    errors = []
    cited = 0
    for top in ("src", "include"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith((".c", ".h", ".S")):
                    continue
                path = os.path.join(d, name)
                rel = os.path.relpath(path, root)
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                for start, body in comments(text):
                    for m in CITE.finditer(body):
                        line = text.count("\n", 0, start + m.start()) + 1
                        for one in ONE.finditer(m.group(1)):
                            label, item = one.group(1), one.group(2)
                            if label.isdigit() and item is None:
                                continue  # "(32)": a value as often as a section
                            cited += 1
                            doc = DOCS["" if label.isdigit() else label[0]]
                            if label not in defined:
                                errors.append(f"{rel}:{line}: {m.group(0)}: no section ({label}) in {doc}")
                            elif item is not None and int(item) not in defined[label]:
                                errors.append(f"{rel}:{line}: {m.group(0)}: section ({label}) of {doc} has no item {item}")
    for e in errors:
        print(e)
    print(f"{cited} citations, {len(errors)} unresolved")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
