#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Stand-ins for the two standard STAMP 0.9.10 inputs that copies of STAMP
lack, generated deterministically (fixed seeds) into a build directory,
never into a STAMP tree:

  kmeans  random-n65536-d32-c16.txt (kmeans' and kmeans-high's standard
          input): made as STAMP's own kmeans/inputs/generate.py makes its
          files ("generate.py 65536 32 16": seed 0, 16 centres drawn
          uniformly in [0,1)^32, each row a centre chosen at random plus
          Gaussian noise of sigma (1/16)^3, "index v1 ... v32" per line).
          That generator is Python 2; Python 3's random draws the same
          numbers from the same seed, but its random.choice and its float
          printing differ, so both are written out here as Python 2 had
          them (choice: index int(random() * len); str(): 12 significant
          digits, ".0" added to a whole number). The files of this recipe
          that STAMP ships (n2048-d16-c16, n16384-d24-c16) come out byte for
          byte (tests/harness/test_stamp.py checks their SHA-256); the
          n65536 file could not be compared with STAMP's, which this
          project never had.
  yada    ttimeu1000000.2.{node,ele,poly} (yada's standard input): STAMP
          ships only the .poly, whose node numbers refer to a .node file it
          lacks. yada/README says its inputs are Triangle's output
          ("triangle a; triangle -c a.1"), and ttimeu100000.2 shows their
          shape: a million points with integer coordinates drawn uniformly
          in (-2^53, 2^53) (exact in a double), their Delaunay
          triangulation (Triangle, through the PyPI package "triangle",
          bench/stamp/requirements.txt), counter-clockwise triangles, and
          the convex hull's edges as the .poly's segments, whose nodes
          carry boundary marker 1. The points are ours (Python's random,
          seed 0), so this mesh is not STAMP's: same size and kind.

Each stand-in is written into DIR/<app>/inputs/standin/ (DIR: --stamp-build,
default build/stamp), next to the inputs bench/stamp/build.sh decompresses
from the tree, so that it never takes the name of a file STAMP provides;
the harness (bench/harness/stamp.py) runs an application on it only when
the tree lacks the file, and says so in its output and its records. A
stand-in's files are written under temporary names and renamed into place,
then MANIFEST (what, how, seed, SHA-256 of each file) last: a set with a
MANIFEST is complete.

  gen_inputs.py [--stamp-build DIR] [--force] [kmeans] [yada]
  gen_inputs.py --kmeans-file PATH ROWS DIMS CENTRES   (any size)
  gen_inputs.py --yada-prefix PREFIX POINTS            (any size)

Exit status 0 when every requested stand-in is there, 1 when one could not
be made (yada without the "triangle" package: the message says how to
install it), 2 on a bad command line.
"""

import argparse
import hashlib
import json
import os
import random
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
ERROR = "gen_inputs: error: "
STANDIN_DIR = "standin"  # under <build>/<app>/inputs
REQUIREMENTS = os.path.join("bench", "stamp", "requirements.txt")

KMEANS_SEED = 0  # STAMP's generate.py: random.seed(0)
YADA_SEED = 0
YADA_RANGE = 2 ** 53  # coordinates in (-2^53, 2^53), as ttimeu100000.2's

# name -> (application directory, files, description): the stand-ins the
# harness knows, by the name the standard input has in STAMP.
STANDINS = {
    "random-n65536-d32-c16.txt": ("kmeans", ["random-n65536-d32-c16.txt"],
                                  "STAMP's kmeans generate.py recipe (65536 rows, 32 "
                                  "dimensions, 16 centres, seed 0) reimplemented; not "
                                  "compared with STAMP's file"),
    "ttimeu1000000.2": ("yada", ["ttimeu1000000.2.node", "ttimeu1000000.2.ele",
                                 "ttimeu1000000.2.poly"],
                        "1000000 uniform random points (seed 0), their Delaunay "
                        "triangulation by Triangle, convex hull as the boundary; not "
                        "STAMP's mesh"),
}


def py2_str(x):
    """A float as Python 2's str() (and print) wrote it: 12 significant
    digits, and ".0" after a number that would look whole."""
    s = "%.12g" % x
    if not any(c in s for c in ".ein"):
        s += ".0"
    return s


def kmeans_lines(rows, dims, centres, seed=KMEANS_SEED):
    """The lines STAMP's generate.py prints for ROWS DIMS CENTRES (its
    clustered branch), each with its newline."""
    rng = random.Random(seed)
    centre = [[rng.random() for _ in range(dims)] for _ in range(centres)]
    sigma = (1.0 / centres) ** 3
    for row in range(1, rows + 1):
        # Python 2's random.choice: seq[int(random() * len(seq))]
        c = centre[int(rng.random() * len(centre))]
        yield " ".join([str(row)] + [py2_str(c[d] + rng.gauss(0, sigma))
                                     for d in range(dims)]) + "\n"


def write_kmeans(path, rows, dims, centres, seed=KMEANS_SEED):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.writelines(kmeans_lines(rows, dims, centres, seed))
    os.replace(tmp, path)


def yada_points(n, seed=YADA_SEED):
    """n distinct points with integer coordinates in (-2^53, 2^53)."""
    rng = random.Random(seed)
    seen, pts = set(), []
    while len(pts) < n:
        p = (rng.randrange(1 - YADA_RANGE, YADA_RANGE), rng.randrange(1 - YADA_RANGE, YADA_RANGE))
        if p not in seen:
            seen.add(p)
            pts.append(p)
    return pts


def triangulate(points):
    """(triangles, segments, hull markers) of the points' Delaunay
    triangulation by Triangle, as numpy arrays numbered from 0: triangles
    counter-clockwise, segments the convex hull's edges, markers 1 for a
    node on the hull. Raises ImportError without the "triangle" package."""
    import numpy
    import triangle
    # "c": the convex hull as segments; "Q": quiet. No "q"/"a": no point is
    # added, so the output's vertices are the input's, in order.
    out = triangle.triangulate({"vertices": numpy.array(points, dtype=float)}, "cQ")
    if len(out["vertices"]) != len(points):
        raise ValueError("Triangle returned %d vertices for %d points" % (
            len(out["vertices"]), len(points)))
    return out["triangles"], out["segments"], out["vertex_markers"].ravel()


def write_yada(prefix, n, seed=YADA_SEED, triangulate=triangulate):
    """PREFIX.node, .ele, .poly in Triangle's formats, as yada's mesh_read
    reads them: a count and dimension on the first line, then one entry a
    line numbered from 1 (nodes: x y boundary-marker; elements: three
    nodes, counter-clockwise; segments: two nodes and marker 1), then '#'
    lines. triangulate: a function of the points as triangulate() above
    (its results numpy arrays or lists)."""
    pts = yada_points(n, seed)
    tri, seg, markers = triangulate(pts)
    tag = "# Generated by bench/stamp/gen_inputs.py (schedstm): %d uniform random points, " \
        "seed %d, Delaunay triangulation by Triangle\n" % (n, seed)

    def write(ext, head, lines, tail):
        tmp = prefix + ext + ".tmp"
        with open(tmp, "w") as f:
            f.writelines(head)
            f.writelines(lines)
            f.writelines(tail)
        return tmp

    # Streamed (generators, not lists): the million-point set's lines would
    # take about a gigabyte as Python strings.
    done = [
        write(".node", ["%d  2  0  1\n" % n],
              ("%4d    %d  %d    %d\n" % (i, x, y, m)
               for i, ((x, y), m) in enumerate(zip(pts, _rows(markers)), 1)), [tag]),
        write(".ele", ["%d  3  0\n" % len(tri)],
              ("%4d    %4d  %4d  %4d\n" % (i, a + 1, b + 1, c + 1)
               for i, (a, b, c) in enumerate(_rows(tri), 1)), [tag]),
        write(".poly", ["0  2  0  1\n", "%d  1\n" % len(seg)],
              ("%4d    %d  %d    1\n" % (i, a + 1, b + 1)
               for i, (a, b) in enumerate(_rows(seg), 1)), ["0\n", tag]),
    ]
    for tmp in done:
        os.replace(tmp, tmp[:-len(".tmp")])


def _rows(a):
    """A numpy array as lists (plain ints), or a list as it is."""
    return a.tolist() if hasattr(a, "tolist") else a


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def standin_dir(build, name):
    return os.path.join(build, STANDINS[name][0], "inputs", STANDIN_DIR)


def manifest_path(build, name):
    return os.path.join(standin_dir(build, name), name + ".MANIFEST")


def read_manifest(build, name):
    """The stand-in's manifest (a dict), or None when it was not (fully)
    made."""
    try:
        with open(manifest_path(build, name)) as f:
            m = json.load(f)
    except (OSError, ValueError):
        return None
    d = standin_dir(build, name)
    if not all(os.path.exists(os.path.join(d, x)) for x in STANDINS[name][1]):
        return None
    return m


def make(build, name, force=False):
    """Make the stand-in NAME (a key of STANDINS) under BUILD unless a
    complete one is there. Returns its manifest; raises ImportError (yada
    without Triangle) or OSError."""
    if not force:
        m = read_manifest(build, name)
        if m:
            return m
    d = standin_dir(build, name)
    os.makedirs(d, exist_ok=True)
    try:
        os.unlink(manifest_path(build, name))
    except FileNotFoundError:
        pass
    app, files, what = STANDINS[name]
    m = {"standin_for": name, "app": app, "generator": "bench/stamp/gen_inputs.py",
         "description": what}
    if app == "kmeans":
        m.update(rows=65536, dims=32, centres=16, seed=KMEANS_SEED)
        write_kmeans(os.path.join(d, files[0]), 65536, 32, 16)
    else:
        import triangle  # noqa: F401 (fail before the long part)
        m.update(points=1000000, seed=YADA_SEED, coordinate_range=[1 - YADA_RANGE, YADA_RANGE - 1],
                 triangle_version=_version("triangle"))
        write_yada(os.path.join(d, name), 1000000)
    m["sha256"] = {f: sha256(os.path.join(d, f)) for f in files}
    tmp = manifest_path(build, name) + ".tmp"
    with open(tmp, "w") as f:
        json.dump(m, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, manifest_path(build, name))
    return m


def _version(dist):
    try:
        from importlib.metadata import version
        return version(dist)
    except Exception:  # metadata missing: the version is only informative
        return None


def missing_package_message():
    return ("yada's stand-in needs the Python package \"triangle\" (and numpy): install %s "
            "into the project's virtual environment (scripts/install-deps.sh --stamp, or "
            "build/venv/bin/pip install -r %s)" % (REQUIREMENTS, REQUIREMENTS))


def main(argv=None):
    p = argparse.ArgumentParser(prog="gen_inputs.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("apps", nargs="*", help="kmeans and/or yada (default: both)")
    p.add_argument("--stamp-build", default=os.path.join(REPO, "build", "stamp"))
    p.add_argument("--force", action="store_true", help="make them again even if complete")
    p.add_argument("--kmeans-file", nargs=4, metavar=("PATH", "ROWS", "DIMS", "CENTRES"))
    p.add_argument("--yada-prefix", nargs=2, metavar=("PREFIX", "POINTS"))
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        if args.kmeans_file:
            path, *nums = args.kmeans_file
            write_kmeans(path, *(int(x) for x in nums))
            return 0
        if args.yada_prefix:
            write_yada(args.yada_prefix[0], int(args.yada_prefix[1]))
            return 0
    except ImportError:
        sys.stderr.write(ERROR + missing_package_message() + "\n")
        return 1
    except ValueError as e:
        sys.stderr.write(ERROR + "%s\n" % e)
        return 2
    by_app = {v[0]: k for k, v in STANDINS.items()}
    bad = [a for a in args.apps if a not in by_app]
    if bad:
        sys.stderr.write(ERROR + "unknown application(s) %s (kmeans, yada)\n" % ",".join(bad))
        return 2
    rc = 0
    for app in args.apps or sorted(by_app):
        name = by_app[app]
        try:
            m = make(os.path.abspath(args.stamp_build), name, args.force)
        except ImportError:
            sys.stderr.write(ERROR + missing_package_message() + "\n")
            rc = 1
            continue
        except (OSError, ValueError) as e:
            sys.stderr.write(ERROR + "%s: %s\n" % (name, e))
            rc = 1
            continue
        print("gen_inputs: %s: stand-in in %s (%s)" % (
            name, standin_dir(os.path.abspath(args.stamp_build), name), m["description"]))
    return rc


if __name__ == "__main__":
    sys.exit(main())
