#!/usr/bin/env bash
# agefence build: configures and builds into build/ (or $AGEFENCE_BUILD_DIR).
#   scripts/build.sh [extra cmake -D options]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${AGEFENCE_BUILD_DIR:-$top/build}
jobs=$(nproc 2>/dev/null || echo 2)
mkdir -p "$dir"
cmake -S "$top" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >"$dir/configure.log" 2>&1 || {
  cat "$dir/configure.log" >&2; exit 1; }
cmake --build "$dir" -j "$jobs" 2>&1 | grep -vE '^\[ *[0-9]+%\]|^Consolidate|^-- ' >&2 || true
cmake --build "$dir" -j "$jobs" >/dev/null 2>&1 || { cmake --build "$dir" 2>&1 | tail -30 >&2; exit 1; }
