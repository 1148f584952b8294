#!/usr/bin/env bash
# scripts/gpu-check.sh leaves RESULTS as two files, whatever happens: the device tool brings back
# at most 8 files from the GPU machine, so everything else goes into one archive.
#   gpu_check_files.sh SOURCE_DIR WORKDIR
# Checks, without a GPU: (1) every path the script writes under RESULTS is summary.txt or
# gpu-check.tar.gz; (2) a check stopped at its first step (no prefix) still leaves exactly those
# two, the summary naming the cause and the archive a valid one holding the environment log.
set -uo pipefail
src=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
script=$src/scripts/gpu-check.sh

names=$(grep -o '\$res/[A-Za-z0-9_.${}-]*' "$script" | sort -u | tr '\n' ' ')
[ "$names" = '$res/gpu-check.tar.gz $res/summary.txt ' ] ||
  fail "gpu-check.sh writes under RESULTS more than summary.txt and gpu-check.tar.gz: $names"

res=$work/results
AGEFENCE_PREFIX=$work/no-prefix AGEFENCE_BUILD_DIR=$work/build bash "$script" "$res" \
  >"$work/out.txt" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "gpu-check.sh without a prefix: exit $rc, expected 1"
got=$(cd "$res" && ls -A | sort | tr '\n' ' ')
[ "$got" = "gpu-check.tar.gz summary.txt " ] || fail "RESULTS holds '$got'"
grep -q "no prefix at $work/no-prefix" "$res/summary.txt" ||
  fail "the summary does not name the missing prefix: $(cat "$res/summary.txt")"
listing=$(tar -tzf "$res/gpu-check.tar.gz") || fail "the archive is not a valid tar.gz"
grep -qx './env.txt' <<<"$listing" || fail "the archive lacks env.txt: $listing"
echo "ok: RESULTS holds summary.txt and gpu-check.tar.gz"
