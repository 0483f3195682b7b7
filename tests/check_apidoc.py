#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check the API reference: every public item of include/schedstm documented.

    check_apidoc.py DOXYFILE WORKDIR [HEADER_DIR]

Runs Doxygen with DOXYFILE (the one docs/CMakeLists.txt configures from
docs/Doxyfile.in), writing XML and a warning log under WORKDIR, and fails
when:
  - Doxygen printed any warning: an undocumented function, type, struct
    field or macro (WARN_IF_UNDOCUMENTED), a parameter or return value not
    described (WARN_NO_PARAMDOC), or a malformed comment (WARN_IF_DOC_ERROR);
  - an enumerator has no description (Doxygen does not warn about those);
  - a header has no file comment (Doxygen checks nothing in a header whose
    file is undocumented, so a new header without `@file` would escape).
The library's internal names (sstm__*, SSTM__*) are excluded by the
Doxyfile (EXCLUDE_SYMBOLS) and are not checked.

It checks itself in the same Doxygen run: the headers are copied, with
probe headers added that hold one defect of each kind, and every defect
must be named, so that a check that has gone blind (a changed Doxyfile,
another Doxygen) fails instead of passing; a problem anywhere else is the
headers' own. One run, not a second one for the probes: under a loaded
host's starvation, Doxygen's start-up and HTML pass were most of the time.

Exits 0 when clean, 1 on any problem (each printed as file:line: text), 77
(ctest: skipped) with "skipped: doxygen missing" when Doxygen is not
installed (scripts/install-deps.sh --tests installs it).
"""

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

SKIP = 77


def text_of(elem):
    return "" if elem is None else "".join(elem.itertext()).strip()


def described(elem):
    return bool(text_of(elem.find("briefdescription")) or text_of(elem.find("detaileddescription")))


def run_doxygen(doxygen, doxyfile, workdir, header_dir):
    """Run Doxygen with doxyfile's settings plus overrides; return
    (problems, header paths as Doxygen saw them)."""
    if os.path.isdir(workdir):
        shutil.rmtree(workdir)
    os.makedirs(workdir)
    log = os.path.join(workdir, "warnings.log")
    with open(doxyfile) as f:
        cfg = f.read()
    # Later assignments win: the same configuration, other outputs.
    cfg += "\nOUTPUT_DIRECTORY = %s\nWARN_LOGFILE = %s\n" % (workdir, log)
    # HTML too: Doxygen 1.9.4 run for XML alone warns that documented
    # parameters and return values are not (the HTML pass parses them first).
    cfg += "GENERATE_XML = YES\nXML_PROGRAMLISTING = NO\n"
    mainpage = [l for l in cfg.splitlines() if l.startswith("USE_MDFILE_AS_MAINPAGE")]
    main = mainpage[-1].split("=", 1)[1].strip() if mainpage else ""
    cfg += 'INPUT = %s "%s"\n' % (main, header_dir)
    cfg += 'STRIP_FROM_PATH = "%s"\n' % os.path.dirname(header_dir)
    r = subprocess.run([doxygen, "-"], input=cfg, text=True, cwd=workdir,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    problems = []
    if r.returncode != 0:
        problems.append("doxygen exited with status %d:\n%s" % (r.returncode, r.stdout))
    if os.path.exists(log):
        with open(log) as f:
            # A warning may continue on indented lines (the parameters it names).
            for line in f.read().splitlines():
                if line.startswith((" ", "\t")) and problems:
                    problems[-1] += "\n" + line
                elif line.strip():
                    problems.append(line)
    problems += check_xml(os.path.join(workdir, "xml"), header_dir)
    return problems


def check_xml(xmldir, header_dir):
    """What Doxygen does not warn about: enumerators without a description,
    headers without a file comment."""
    problems = []
    documented = set()
    index = os.path.join(xmldir, "index.xml")
    if not os.path.exists(index):
        return ["no XML output (%s)" % index]
    for comp in ET.parse(index).getroot().findall("compound"):
        if comp.get("kind") != "file":
            continue
        tree = ET.parse(os.path.join(xmldir, comp.get("refid") + ".xml")).getroot()
        cdef = tree.find("compounddef")
        loc = cdef.find("location")
        path = loc.get("file") if loc is not None else comp.findtext("name")
        if described(cdef):
            documented.add(os.path.basename(path))
        for enum in cdef.iter("memberdef"):
            if enum.get("kind") != "enum":
                continue
            for ev in enum.findall("enumvalue"):
                if not described(ev):
                    eloc = enum.find("location")
                    problems.append("%s:%s: enumerator %s of %s has no description" % (
                        path, eloc.get("line") if eloc is not None else "?",
                        ev.findtext("name"), enum.findtext("name")))
    for h in sorted(os.listdir(header_dir)):
        if h.endswith(".h") and h not in documented:
            problems.append("%s:1: no file comment (/** @file ... */): Doxygen checks "
                            "nothing in this header" % os.path.join(header_dir, h))
    return problems


# One defect of each kind the check must find, in a header added to a copy of
# the headers, with a name the report must contain.
PROBES = [
    ("undocumented function", "sstm_apidoc_probe_fn",
     "int sstm_apidoc_probe_fn(int x);\n"),
    ("undocumented macro", "SSTM_APIDOC_PROBE_MACRO",
     "#define SSTM_APIDOC_PROBE_MACRO 1\n"),
    ("undocumented struct field", "probe_field",
     "/** A probe. */\ntypedef struct sstm_apidoc_probe_s {\n  int probe_field;\n} "
     "sstm_apidoc_probe_s_t;\n"),
    ("undocumented enumerator", "SSTM_APIDOC_PROBE_B",
     "/** A probe. */\ntypedef enum sstm_apidoc_probe_e {\n  SSTM_APIDOC_PROBE_A, /**< a */\n"
     "  SSTM_APIDOC_PROBE_B,\n} sstm_apidoc_probe_e_t;\n"),
    ("parameter not described", "sstm_apidoc_probe_param",
     "/** A probe.\n * @param x the x\n * @return 0 */\n"
     "int sstm_apidoc_probe_param(int x, int y);\n"),
    ("malformed comment", "probe_nosuchparam",
     "/** A probe.\n * @param probe_nosuchparam not a parameter */\n"
     "void sstm_apidoc_probe_doc(void);\n"),
]
# The probe headers, added to a copy of the headers: one with a defect of
# each kind above, one without a file comment.
PROBE_HEADER = "apidoc_probe.h"
BARE_HEADER = "apidoc_bare.h"


def probed_copy(workdir, header_dir):
    """A copy of the headers with the probe headers added; returns its path."""
    copy = os.path.join(workdir, "include", "schedstm")
    if os.path.isdir(os.path.join(workdir, "include")):
        shutil.rmtree(os.path.join(workdir, "include"))
    shutil.copytree(header_dir, copy)
    with open(os.path.join(copy, PROBE_HEADER), "w") as f:
        f.write("/** @file\n * Defects the check must find. */\n" +
                "\n".join(p[2] for p in PROBES))
    with open(os.path.join(copy, BARE_HEADER), "w") as f:
        f.write("/* A header without a file comment. */\n"
                "/** Documented, but in an undocumented file. */\n"
                "int sstm_apidoc_probe_in_bare_header(void);\n")
    return copy


def split_probes(problems):
    """(the problems the probe headers caused, the others)."""
    probed = [p for p in problems if PROBE_HEADER in p or BARE_HEADER in p]
    return probed, [p for p in problems if PROBE_HEADER not in p and BARE_HEADER not in p]


def self_test(probed):
    """The check must report each probe; returns the problems of the check."""
    report = "\n".join(probed)
    missed = ["%s (%s)" % (what, name) for what, name, _ in PROBES if name not in report]
    if BARE_HEADER not in report:
        missed.append("header without a file comment (%s)" % BARE_HEADER)
    if missed:
        return ["self-test: the check did not report: " + "; ".join(missed) +
                "\n--- its report on the probe headers:\n" + report]
    return []


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    doxyfile, workdir = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    here = os.path.dirname(os.path.abspath(__file__))
    header_dir = os.path.abspath(sys.argv[3]) if len(sys.argv) == 4 else \
        os.path.join(os.path.dirname(here), "include", "schedstm")
    doxygen = os.environ.get("DOXYGEN") or shutil.which("doxygen")
    if not doxygen:
        print("skipped: doxygen missing (scripts/install-deps.sh --tests installs it)")
        return SKIP
    if not os.path.exists(doxyfile):
        print("check_apidoc: no %s (configure the build first)" % doxyfile, file=sys.stderr)
        return 2
    version = subprocess.run([doxygen, "--version"], text=True,
                             stdout=subprocess.PIPE).stdout.strip()
    print("doxygen %s, headers of %s" % (version, header_dir))

    # One Doxygen run over the headers and the probes: a problem in a probe
    # header is the self-test's, any other one is the headers' own.
    copy = probed_copy(workdir, header_dir)
    probed, problems = split_probes(
        run_doxygen(doxygen, doxyfile, os.path.join(workdir, "out"), copy))
    selftest = self_test(probed)
    if selftest:
        print("\n".join(selftest))
        return 1
    print("self-test: each of the %d probe defects was reported" % (len(PROBES) + 1))
    if problems:
        # name the headers themselves, not their copy
        print("\n".join(p.replace(copy, header_dir) for p in problems))
        print("%d problem(s) in the API reference of %s" % (len(problems), header_dir))
        return 1
    headers = sorted(f for f in os.listdir(header_dir) if f.endswith(".h"))
    print("ok: %d headers, no undocumented public item, no doxygen warning" % len(headers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
