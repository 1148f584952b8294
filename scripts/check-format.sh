#!/usr/bin/env bash
# Fails when a C/CUDA source differs from what .clang-format makes of it.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
mapfile -t files < <(git ls-files '*.c' '*.h' '*.cu')
bad=0
for f in "${files[@]}"; do
  if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
    echo "format: $f differs from .clang-format (run: clang-format -i $f)" >&2
    bad=1
  fi
done
exit $bad
