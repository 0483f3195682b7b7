#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install what building, testing and (with --demo) the demonstration need.
#
#   scripts/install-deps.sh          build tools
#   scripts/install-deps.sh --tests  also what only the test suite needs (clang, clang-format,
#                                    doxygen)
#   scripts/install-deps.sh --demo   also the Python packages of bench/requirements.txt
#   scripts/install-deps.sh --coverage  also gcovr (scripts/coverage-requirements.txt)
#
# Idempotent: every tool is checked first, and nothing is installed (no
# network, no apt-get update) when everything is already there. Missing tools
# are installed with apt-get (Debian/Ubuntu; needs root or sudo) and, with
# --demo or --coverage, missing Python packages with pip (python3-pip first
# if need be).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
demo=0
tests=0
coverage=0
for arg in "$@"; do
  case "$arg" in
    --demo) demo=1 ;;
    --coverage) coverage=1 ;;
    --tests) tests=1 ;;
    -h | --help)
      sed -n '3,15s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
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
apt_updated=0
apt_install() {
  if ! have apt-get; then
    say "missing: $* -- no apt-get here, install them by hand" >&2
    exit 1
  fi
  if [ -n "$sudo" ] && ! have sudo; then
    say "missing: $* -- run as root (or install sudo)" >&2
    exit 1
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
# so not pulled in by --no-install-recommends.
if [ "$(gcc -print-file-name=Scrt1.o)" = Scrt1.o ] || [ ! -e /usr/include/stdio.h ]; then
  missing+=(libc6-dev)
fi

# GCC's runtime libraries: the sanitizers (ASan, UBSan, TSan test builds) and
# libitm (the -fgnu-tm baseline of the benchmarks). Debian ships the link-time
# .so files in libgcc-N-dev, normally installed with gcc.
gcc_major=$(gcc -dumpversion | cut -d. -f1)
for lib in libasan.so libubsan.so libtsan.so libitm.so; do
  if [ "$(gcc -print-file-name="$lib")" = "$lib" ]; then
    missing+=("libgcc-${gcc_major}-dev")
    break
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  apt_install "${missing[@]}"
fi

# ---- Python packages (the demonstration, the coverage report) ---------------
# pip_requirements FILE: install the requirements of FILE that are missing.
pip_requirements() {
  local req=$1 absent
  # Which requirements are not installed at all (versions are left to pip).
  absent=$(python3 - "$req" <<'PY'
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
  # pip, as a module of the python3 found above (needed only here).
  if ! python3 -m pip --version >/dev/null 2>&1; then
    apt_install python3-pip
  fi
  say "pip install -r ${req#"$root"/} (missing: $(echo $absent))"
  local pip_args=(-m pip install --disable-pip-version-check -q -r "$req")
  # Debian's own python3 is "externally managed" (PEP 668): pip refuses to
  # install into it unless told to.
  if python3 -c 'import sys, sysconfig, os; sys.exit(not os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))'; then
    pip_args+=(--break-system-packages)
  fi
  if [ "$(id -u)" -ne 0 ] && ! python3 -c 'import sys; sys.exit(sys.prefix == sys.base_prefix)'; then
    pip_args+=(--user) # not root and not in a virtualenv
  fi
  PIP_ROOT_USER_ACTION=ignore python3 "${pip_args[@]}"
}

if [ "$demo" = 1 ]; then
  req="$root/bench/requirements.txt"
  if [ ! -f "$req" ]; then
    echo matplotlib >"$req"
    say "created bench/requirements.txt (matplotlib)"
  fi
  pip_requirements "$req"
fi
if [ "$coverage" = 1 ]; then
  pip_requirements "$root/scripts/coverage-requirements.txt"
fi

say "ok"
