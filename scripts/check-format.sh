#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Check that every C source and header of the tree follows .clang-format.
#
#   scripts/check-format.sh          check (clang-format --dry-run), one check per file
#   scripts/check-format.sh --fix    reformat the files in place first
#   scripts/check-format.sh --help   this text
#
# The tree's layout is that of clang-format 14 (Debian 12, what
# scripts/install-deps.sh --tests installs); other major versions lay out a
# few constructs differently, so with no clang-format 14 the check is
# skipped, not failed. CLANG_FORMAT names the binary to use.
# Prints each file that is not formatted with clang-format's first
# complaints, and a last line "N passed, M failed (K skipped)". Exit status
# 0 when nothing failed, 1 otherwise, 2 on a bad argument.
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
fix=0
if [ $# -gt 1 ]; then
  echo "check-format: one argument at most (--fix, --help or nothing)" >&2
  exit 2
fi
case "${1:-}" in
  "") ;;
  --fix) fix=1 ;;
  -h | --help)
    sed -n '3,/^[^#]/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"
    exit 0
    ;;
  *)
    echo "check-format: unknown argument '$1' (--fix, --help or nothing)" >&2
    exit 2
    ;;
esac
cd "$root" || exit 1

want=14
cf=""
candidates=(clang-format-$want clang-format)
if [ -n "${CLANG_FORMAT:-}" ]; then candidates=("$CLANG_FORMAT"); fi
for c in "${candidates[@]}"; do
  if command -v "$c" >/dev/null 2>&1; then
    v=$("$c" --version | sed -nE 's/.*version ([0-9]+).*/\1/p' | head -1)
    if [ "$v" = "$want" ]; then
      cf=$c
      break
    fi
    echo "check-format: $c is version ${v:-unknown}, not $want"
  fi
done
if [ -z "$cf" ]; then
  echo "check-format: no clang-format $want (scripts/install-deps.sh --tests installs it): not checked"
  echo "0 passed, 0 failed (1 skipped)"
  exit 0
fi

# The files of this checkout, tracked or new (not ignored: build trees are);
# in a copy that is not its own git work tree (an unpacked tarball, a copy
# inside another repository), every C file under the source directories.
if [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$root" ]; then
  mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.c' '*.h')
else
  mapfile -t files < <(find src include tests bench tools examples -name '*.[ch]' | sort)
fi

pass=0
fail=0
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  if [ "$fix" = 1 ]; then "$cf" -i "$f"; fi
  if out=$("$cf" --dry-run --Werror "$f" 2>&1) && [ -z "$out" ]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "$f: not formatted (fix: $cf -i $f)"
    echo "$out" | head -6
  fi
done
echo "$pass passed, $fail failed (0 skipped)"
[ "$fail" -eq 0 ]
