#!/usr/bin/env bash
# README command (a): install what is missing, build, run the embedded default scenario on
# 4 ranks, and print the summary. Extra arguments go to `agefence run` (e.g. --set ...).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/setup.sh"
"$top/scripts/build.sh"
out=${AGEFENCE_OUT:-$top/out}
mkdir -p "$out"
"$top/scripts/mpirun.sh" -np "${AGEFENCE_RANKS:-4}" "$top/build/agefence" run -o "$out/default.h5" "$@"
echo
"$top/build/agefence-report" --check "$out/default.h5"
