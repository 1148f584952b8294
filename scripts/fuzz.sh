#!/usr/bin/env bash
# Fuzzes agefence's input parsers with libFuzzer (fuzz/README.md): installs what is missing
# (scripts/setup.sh), builds the harnesses with clang, ASan and UBSan in build-fuzz/ (or
# $AGEFENCE_FUZZ_BUILD_DIR), and runs each for a bounded time on a copy of its committed corpus
# (the committed corpus never grows here).
#   scripts/fuzz.sh [SECONDS [HARNESS...]]   SECONDS per harness (default 60); harnesses
#                                             config, log, log_raw (default all)
# Each harness runs in libFuzzer's fork mode, which goes on after a finding, and every crash,
# leak, timeout and out-of-memory is replayed and sorted by scripts/fuzz-triage.py: the run fails
# (exit 1) when any is in agefence's code; HDF5's own crashes on damaged files (log_raw) are
# listed, not failed. Findings stay in BUILD/fuzz-run/HARNESS/artifacts/.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-60}
shift || true
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(config log log_raw)
case "$secs" in '' | *[!0-9]*) echo "fuzz.sh: SECONDS must be a number, not '$secs'" >&2; exit 2 ;; esac
for h in "${harnesses[@]}"; do
  case "$h" in config | log | log_raw) ;; *) echo "fuzz.sh: unknown harness '$h'" >&2; exit 2 ;; esac
done

"$top/scripts/setup.sh"
dir=${AGEFENCE_FUZZ_BUILD_DIR:-$top/build-fuzz}
mkdir -p "$dir"
CC=clang cmake -S "$top" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAGEFENCE_FUZZ=ON \
  -DAGEFENCE_CUDA=OFF -DBUILD_TESTING=OFF >"$dir/configure.log" 2>&1 || {
  cat "$dir/configure.log" >&2; exit 1; }
targets=()
for h in "${harnesses[@]}"; do targets+=(--target "fuzz_$h"); done
cmake --build "$dir" -j "$(nproc 2>/dev/null || echo 2)" "${targets[@]}" >"$dir/build.log" 2>&1 || {
  tail -30 "$dir/build.log" >&2; exit 1; }

export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
failed=0
nfailed=0
for h in "${harnesses[@]}"; do
  failed_before=$failed
  work=$dir/fuzz-run/$h
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/artifacts" "$work/tmp"
  cp "$top/fuzz/corpus/$h"/* "$top/fuzz/regressions/$h"/* "$work/corpus/" 2>/dev/null || true
  rm -f "$work/corpus/README.md"
  # Limits of memory: the config and log harnesses handle small inputs and small files, so one
  # allocation over 256 MB is a finding (a size taken from a damaged count, not from data). A
  # damaged file can declare a dataset of any size, which agefence reads whole: for log_raw an
  # allocation over 1 GB fails (returns NULL), as a huge one does outside the sanitizers, and
  # agefence's out-of-memory paths are fuzzed with it.
  asan=detect_leaks=1
  limits=(-rss_limit_mb=2048 -malloc_limit_mb=256)
  case "$h" in
    config) extra=(-dict="$top/fuzz/config.dict" -max_len=4096) ;;
    # Every byte is a decision of the log builder: the whole length from the start.
    log) extra=(-max_len=2048 -len_control=0) ;;
    log_raw)
      extra=(-max_len=200000) # the seeds are whole logs written by agefence
      asan=detect_leaks=1:allocator_may_return_null=1:max_allocation_size_mb=1024
      limits=(-rss_limit_mb=3072 -malloc_limit_mb=2048) ;;
  esac
  opts=(-max_total_time="$secs" -timeout=10 "${limits[@]}" -fork=1 -ignore_crashes=1
        -ignore_timeouts=1 -ignore_ooms=1 -artifact_prefix="$work/artifacts/" "${extra[@]}")
  echo "fuzz: $h for ${secs} s"
  # The harnesses' scratch files go to a folder of the run (TMPDIR), removed with it.
  TMPDIR=$work/tmp ASAN_OPTIONS=$asan "$dir/fuzz_$h" "${opts[@]}" "$work/corpus" \
    >"$work/fuzz.log" 2>&1 || true
  execs=$(grep -oE '^#[0-9]+' "$work/fuzz.log" | tail -1 | tr -d '#')
  stats=$(grep -E '^#[0-9]+:' "$work/fuzz.log" | tail -1 || true)
  echo "fuzz: $h: ${execs:-0} executions (${stats:-no libFuzzer stats line})"
  mapfile -t found < <(find "$work/artifacts" -maxdepth 1 -type f \
    \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) \
    ! -name '*.report.txt' | sort)
  if ! grep -q 'INFO: exiting\|INFO: fuzzed for\|Done [0-9]* runs' "$work/fuzz.log"; then
    echo "FAIL fuzz $h: libFuzzer did not finish normally (see $work/fuzz.log):" >&2
    tail -20 "$work/fuzz.log" >&2
    failed=1
  fi
  if [ ${#found[@]} -gt 0 ]; then
    echo "fuzz: $h: ${#found[@]} finding(s), replayed to sort them:"
    if ! TMPDIR=$work/tmp ASAN_OPTIONS=$asan python3 "$top/scripts/fuzz-triage.py" \
      "$dir/fuzz_$h" "${limits[@]}" "${found[@]}"; then
      echo "FAIL fuzz $h: a finding in agefence's code (report beside each artifact)" >&2
      failed=1
    fi
  fi
  rm -rf "$work/tmp"
  [ "$failed" = "$failed_before" ] || nfailed=$((nfailed + 1))
done
[ "$failed" = 0 ] && echo "fuzz: no finding in agefence's code"
echo "fuzz: $(( ${#harnesses[@]} - nfailed )) passed, $nfailed failed"
exit "$failed"
