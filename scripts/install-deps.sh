#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install what building, testing and (with --demo) the demonstration need.
#
#   scripts/install-deps.sh          build tools
#   scripts/install-deps.sh --tests  also what only the test suite needs (clang, clang-format,
#                                    doxygen, ccache, Scotch's libscotch-dev)
#   scripts/install-deps.sh --demo   also the Python packages of bench/requirements.txt
#   scripts/install-deps.sh --coverage  also gcovr (scripts/coverage-requirements.txt)
#   scripts/install-deps.sh --stamp  also matplotlib, triangle and numpy
#                                    (bench/stamp/requirements.txt: the STAMP harness's
#                                    --plot and its stand-in for yada's standard input)
#
# Idempotent: every tool is checked first, and nothing is installed (no
# network, no apt-get update) when everything is already there. Missing tools
# are installed with apt-get (Debian/Ubuntu; needs root or sudo) and, with
# --demo, --coverage or --stamp, missing Python packages with pip into a virtual
# environment, $SCHEDSTM_VENV (default build/venv), never into the system's
# Python. Where nothing can be installed (not root and no sudo, or no
# apt-get), it names everything that is missing, and the apt-get command that
# installs it, in one message, and exits with status 1.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
demo=0
tests=0
coverage=0
stamp=0
for arg in "$@"; do
  case "$arg" in
    --demo) demo=1 ;;
    --coverage) coverage=1 ;;
    --stamp) stamp=1 ;;
    --tests) tests=1 ;;
    -h | --help)
      sed -n '3,22s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
      exit 0
      ;;
    *)
      echo "install-deps: unknown argument '$arg' (try --help)" >&2
      exit 2
      ;;
  esac
done

say() { echo "install-deps: $*"; }
have() { command -v "$1" >/dev/null 2>&1; }

# ---- apt --------------------------------------------------------------------
sudo=
if [ "$(id -u)" -ne 0 ]; then
  sudo=sudo
fi
# Without apt-get, or neither root nor sudo, nothing can be installed here:
# every check still runs, and what is missing is collected in unmet and
# named at the end in one message, with the command that installs it all.
can_apt=1
if ! have apt-get || { [ -n "$sudo" ] && ! have sudo; }; then
  can_apt=0
fi
unmet=()
apt_updated=0
apt_install() {
  if [ "$can_apt" = 0 ]; then
    unmet+=("$@")
    return 0
  fi
  export DEBIAN_FRONTEND=noninteractive
  if [ "$apt_updated" = 0 ]; then
    say "apt-get update"
    $sudo apt-get update -q >/dev/null
    apt_updated=1
  fi
  say "apt-get install $*"
  $sudo apt-get install -y -q --no-install-recommends "$@" >/dev/null
}
# give_up_if_unmet: the message for what could not be installed, and exit 1.
give_up_if_unmet() {
  [ ${#unmet[@]} -gt 0 ] || return 0
  if have apt-get; then
    say "missing: ${unmet[*]} -- not root and no sudo: as root, run" >&2
    say "  apt-get install --no-install-recommends ${unmet[*]}" >&2
    say "then this script again" >&2
  else
    say "missing: ${unmet[*]} (Debian's package names) -- no apt-get here, install them by hand" >&2
  fi
  exit 1
}

# tool -> Debian package; only the missing ones are installed, in one call.
missing=()
need() { # need COMMAND PACKAGE
  have "$1" || missing+=("$2")
}
need cmake cmake
need gcc gcc
need g++ g++
if [ "$tests" = 1 ]; then
  need clang clang               # the test suite's clang build (tests/run_all.sh)
  need clang-format clang-format # scripts/check-format.sh
  need doxygen doxygen           # the API reference and its test (unit.meta.apidoc)
  need ccache ccache             # tests/run_all.sh compiles through it when present
fi
need make make
need pkg-config pkg-config
need python3 python3
need readelf binutils
if [ ${#missing[@]} -gt 0 ]; then
  apt_install "${missing[@]}"
  missing=()
fi

# The C library's development files (headers, crt*.o): a Recommends of gcc,
# so not pulled in by --no-install-recommends. (Without gcc, which could not
# be installed here, they are named with it.)
if ! have gcc || [ "$(gcc -print-file-name=Scrt1.o)" = Scrt1.o ] ||
  [ ! -e /usr/include/stdio.h ]; then
  missing+=(libc6-dev)
fi

# GCC's runtime libraries: the sanitizers (ASan, UBSan, TSan test builds) and
# libitm (the -fgnu-tm baseline of the benchmarks). Debian ships the link-time
# .so files in libgcc-N-dev, a dependency of gcc-N (so installed with gcc).
if have gcc; then
  gcc_major=$(gcc -dumpversion | cut -d. -f1)
  for lib in libasan.so libubsan.so libtsan.so libitm.so; do
    if [ "$(gcc -print-file-name="$lib")" = "$lib" ]; then
      missing+=("libgcc-${gcc_major}-dev")
      break
    fi
  done
fi

# Libraries the library and its programs build against, found by their
# headers: hwloc (the machine's topology, for thread mapping), libuv (the
# request server's I/O threads) and, with --tests, Scotch (the static mapper
# of the evaluation tool tools/sstm-mapeval and its test, which the build
# leaves out without it: on Debian its package brings Open MPI and gfortran,
# which nothing else needs).
libs="hwloc.h:libhwloc-dev uv.h:libuv1-dev"
if [ "$tests" = 1 ]; then libs+=" scotch/scotch.h:libscotch-dev"; fi
for pair in $libs; do
  if [ ! -e "/usr/include/${pair%%:*}" ]; then
    missing+=("${pair#*:}")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  apt_install "${missing[@]}"
fi
# The virtual environment needs python3 -m venv, which Debian ships in
# python3-venv: without python3 here, name it too.
if [ "$can_apt" = 0 ] && [ $((demo + coverage + stamp)) -gt 0 ] && ! have python3; then
  unmet+=(python3-venv)
fi
give_up_if_unmet

# ---- Python packages (the demonstration, the coverage report) ---------------
# They go into a virtual environment of the project's own, never into the
# system's Python (Debian's is "externally managed", PEP 668, and a pip
# install there could break the system's own Python programs): $SCHEDSTM_VENV,
# by default build/venv (git-ignored, like the rest of build/), made with
# `python3 -m venv` (python3-venv is installed first if that cannot work).
# scripts/demo.sh and scripts/coverage.sh run their Python with its
# interpreter, $SCHEDSTM_VENV/bin/python.
venv=${SCHEDSTM_VENV:-$root/build/venv}
venv_python="$venv/bin/python"

# make_venv: create the environment unless a working one is there.
make_venv() {
  if [ -x "$venv_python" ] && "$venv_python" -m pip --version >/dev/null 2>&1; then
    return 0
  fi
  if [ -e "$venv" ]; then
    # Left half made by an earlier attempt (no pip in it): start again, but
    # never remove a directory that is not a virtual environment.
    if [ ! -f "$venv/pyvenv.cfg" ]; then
      say "$venv exists and is not a virtual environment: set SCHEDSTM_VENV to another directory" >&2
      exit 1
    fi
    rm -rf "$venv"
  fi
  say "python3 -m venv ${venv#"$root"/}"
  if ! python3 -m venv "$venv" >/dev/null 2>&1; then
    # Debian and Ubuntu ship venv's pip bootstrap (ensurepip) separately.
    rm -rf "$venv"
    apt_install python3-venv
    give_up_if_unmet
    python3 -m venv "$venv"
  fi
  "$venv_python" -m pip --version >/dev/null 2>&1 || {
    say "the virtual environment $venv has no pip" >&2
    exit 1
  }
}

# venv_requirements FILE: install into the environment the requirements of
# FILE that it does not have yet.
venv_requirements() {
  local req=$1 absent
  make_venv
  # Which requirements are not installed at all (versions are left to pip).
  absent=$("$venv_python" - "$req" <<'PY'
import re, sys
from importlib import metadata
for line in open(sys.argv[1]):
    line = line.split("#", 1)[0].strip()
    if not line or line.startswith("-"):
        continue
    name = re.match(r"[A-Za-z0-9._-]+", line).group(0)
    try:
        metadata.version(name)
    except metadata.PackageNotFoundError:
        print(name)
PY
)
  [ -n "$absent" ] || return 0
  say "pip install -r ${req#"$root"/} into ${venv#"$root"/} (missing: $(echo $absent))"
  "$venv_python" -m pip install --disable-pip-version-check -q -r "$req"
}

if [ "$demo" = 1 ]; then
  req="$root/bench/requirements.txt"
  if [ ! -f "$req" ]; then
    echo matplotlib >"$req"
    say "created bench/requirements.txt (matplotlib)"
  fi
  venv_requirements "$req"
fi
if [ "$coverage" = 1 ]; then
  venv_requirements "$root/scripts/coverage-requirements.txt"
fi
if [ "$stamp" = 1 ]; then
  venv_requirements "$root/bench/stamp/requirements.txt"
fi

say "ok"
