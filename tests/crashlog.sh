#!/usr/bin/env bash
# Crash consistency of the log (docs/log.md, "What survives a crash"): a SIGKILL at any moment leaves either no
# file at the log's path (killed before the first step) or a readable log that holds exactly
# the steps of its last completed flush, which `agefence-report --check` reports as one
# violation, "the run did not finish", and nothing else.
#   crashlog.sh MODE AGEFENCE REPORT MPIEXEC SHIM WORKDIR [TRIALS]
# TRIALS: kills to make (writes: 32, or "all": before every write in turn; rank0: 6; rank1: 4).
# MODE:
#   writes  rank 0 (the writer) is killed just before its Nth write to the log (SHIM, a
#           preloaded library, counts the writes). A file changes only when it is written, so
#           killing before each write in turn reaches every state a SIGKILL can leave: the
#           trials take writes around going live and around commits, writes of the end (while
#           the steps' file is closed and /units and /final are built in its copy) and random
#           ones. The steps held must be exactly those of the last commit the writer reported
#           (AGEFENCE_LOG_TRACE) before it died.
#   rank0   rank 0 is killed with SIGKILL at a random moment of a run with frequent flushes.
#   rank1   rank 1 is killed the same way: the job aborts (Open MPI then ends rank 0 too).
# For rank0 and rank1 the steps held lie between the last commit reported and the next one.
# Every fourth readable file is also read through h5py (analysis/plots.py's reader) when
# Python 3 with h5py is there. "A && B || fail" below means "fail unless both hold", as intended.
# shellcheck disable=SC2015
set -uo pipefail
mode=$1 agefence=$2 report=$3 mpiexec=$4 shim=$5 work=$6
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
cd "$work" || exit 1
failed=0
trials=0
readable=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }

py=""
for p in /usr/bin/python3 python3; do
  if command -v "$p" >/dev/null 2>&1 && "$p" -c "import h5py, numpy" >/dev/null 2>&1; then
    py=$p
    break
  fi
done

# A run that flushes the log every few steps, with failures, moves and a rollback early on.
FI=5
SHORT=(--set scenario.steps=60 --set aging.sim_hours_per_step=900 --set event.1.step=30
  --set "log.flush_interval=$FI")
# One that runs until it is killed, flushing every FI steps and aging slowly.
ENDLESS=(--set scenario.steps=100000000 --set aging.sim_hours_per_step=5
  --set "log.flush_interval=$FI")

# last_commit TRACE: rows of the last "commit ROWS EVENTS" line, 0 without one.
last_commit() {
  awk '$1 == "commit" { r = $2 } END { print r + 0 }' "$1"
}

# verify NAME LOG TRACE MIN MAX: the state a kill left. No "begin" in the trace: no file at
# the path. "final" in the trace: a complete, valid log. Otherwise: readable, exactly the one
# violation, and between MIN and MAX steps.
verify() {
  local name=$1 log=$2 tr=$3 min=$4 max=$5
  trials=$((trials + 1))
  if ! grep -q '^begin ' "$tr" 2>/dev/null; then
    [ ! -e "$log" ] && { echo "ok   $name: killed during start-up, no file at the path"; return; }
    fail "$name: killed before the log went live, yet $log exists"
    return
  fi
  [ -f "$log" ] || { fail "$name: the log went live, yet there is no $log"; return; }
  "$report" --check "$log" >check.txt 2>&1
  local rc=$?
  # The end is written into a copy that one rename moves to the path (the commit point): a
  # kill between the rename and the "final" line leaves a finished run.
  if grep -q '^final$' "$tr" || { grep -q '^steps closed$' "$tr" && [ "$rc" = 0 ]; }; then
    [ "$rc" = 0 ] && echo "ok   $name: killed after /final was committed: a valid log" ||
      fail "$name: /final was committed, yet --check says (exit $rc): $(cat check.txt)"
    return
  fi
  local want="^/final@exit_reason: missing: the run did not finish"
  if [ "$rc" != 1 ] || [ "$(wc -l <check.txt)" != 2 ] || ! grep -q "$want" check.txt ||
    ! grep -q ": 1 schema violation$" check.txt; then
    fail "$name: --check exit $rc, expected exactly 'the run did not finish':"
    sed 's/^/       /' check.txt
    return
  fi
  local k
  k=$(sed -n 's/.*\/steps holds the \([0-9]*\) steps.*/\1/p' check.txt)
  if [ -z "$k" ] || [ "$k" -lt "$min" ] || [ "$k" -gt "$max" ]; then
    fail "$name: the log holds ${k:-?} steps, expected $min..$max (the last flushes reported)"
    return
  fi
  if [ "$min" -gt 0 ] && [ "$k" = 0 ]; then
    fail "$name: a flush was completed, yet the log holds no step"
  fi
  "$report" "$log" >summary.txt 2>&1 && grep -q "UNKNOWN: the run did not finish" summary.txt ||
    { fail "$name: the report does not say the run did not finish"; return; }
  # h5py on every fourth readable file (a Python start costs as much as a trial).
  readable=$((readable + 1))
  if [ -n "$py" ] && [ $((readable % 4)) = 1 ] &&
    ! "$py" - "$here/../analysis" "$log" "$k" <<'PY' >py.txt 2>&1; then
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np
from plots import Log
log, k = Log(sys.argv[2]), int(sys.argv[3])
step = log.steps("step")
assert len(step) == k, (len(step), k)
assert np.array_equal(step, np.arange(1, k + 1)), "steps not contiguous from 1"
assert log.phase("step_us") is None or log.phase("step_us").shape[0] == k
PY
    fail "$name: h5py does not read the $k steps: $(tail -n 3 py.txt)"
    return
  fi
  echo "ok   $name: $k steps (expected $min..$max), --check says exactly that it did not finish"
}

mode_writes() {
  local n=${1:-30}
  # The shim comes before the sanitizer's runtime in a sanitized build's library list.
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
  # The reference: every write of a whole run, with the commits in between.
  rm -f ref.h5 ref.trace
  AF_CRASH_MATCH="$work/ref.h5" AF_CRASH_LOG="$work/ref.trace" AGEFENCE_LOG_TRACE="$work/ref.trace" \
    "$mpiexec" -n 2 -x LD_PRELOAD="$shim" -x AF_CRASH_MATCH -x AF_CRASH_LOG \
    -x AGEFENCE_LOG_TRACE "$agefence" run -q -o "$work/ref.h5" "${SHORT[@]}" >ref.out 2>&1 ||
    { cat ref.out; fail "the reference run failed"; return; }
  "$report" --check ref.h5 >/dev/null || fail "the reference run's log is not valid"
  local writes
  writes=$(grep -c '^write ' ref.trace)
  [ "$writes" -gt 20 ] || { fail "the shim counted only $writes writes"; return; }
  # Write indices: the last one before each marker line.
  local begin_w final_w
  begin_w=$(awk '$1 == "write" { w = $2 } $1 == "begin" { print w + 0; exit }' ref.trace)
  final_w=$(awk '$1 == "write" { w = $2 } $1 == "final" { print w + 0; exit }' ref.trace)
  # Open MPI waits a second before it SIGKILLs the ranks left after one died; rank 0 is the
  # one killed here, so the others need no grace.
  export OMPI_MCA_odls_base_sigkill_timeout=0
  local -a commit_w
  mapfile -t commit_w < <(awk '$1 == "write" { w = $2 } $1 == "commit" { print w }' ref.trace)
  echo "reference: $writes writes, live after write $begin_w, ${#commit_w[@]} commits," \
    "/final committed by write $final_w"
  # Kill points: around going live; around two commits; the end: every third write while
  # the last rows are written (up to their commit), and every write from there on (closing the
  # steps' file, /units and /final in its copy, its close); random ones up to n.
  local -a at=($((begin_w)) $((begin_w + 1)) $((begin_w + 2)))
  local last=$((${#commit_w[@]} - 1)) c w
  for c in 1 $((last / 2)); do
    at+=("${commit_w[$c]}" $((commit_w[c] + 1)))
  done
  for ((w = commit_w[last - 1]; w < commit_w[last]; w += 3)); do
    at+=("$w")
  done
  for ((w = commit_w[last]; w <= writes; w++)); do
    at+=("$w")
  done
  if [ "$n" = all ]; then
    mapfile -t at < <(seq 1 "$writes")
  fi
  while [ "$n" != all ] && [ "${#at[@]}" -lt "$n" ]; do
    at+=($((RANDOM % writes + 1)))
  done
  for w in "${at[@]}"; do
    rm -f k.h5 k.h5.tmp k.trace
    AF_CRASH_AT=$w AF_CRASH_MATCH="$work/k.h5" AGEFENCE_LOG_TRACE="$work/k.trace" \
      "$mpiexec" -n 2 -x LD_PRELOAD="$shim" -x AF_CRASH_AT -x AF_CRASH_MATCH \
      -x AGEFENCE_LOG_TRACE "$agefence" run -q -o "$work/k.h5" "${SHORT[@]}" >k.out 2>&1
    local rc=$?
    touch k.trace
    [ "$rc" != 0 ] || { fail "killed before write $w, yet the run exited 0"; continue; }
    local k0
    k0=$(last_commit k.trace)
    verify "write $w/$writes" "$work/k.h5" k.trace "$k0" "$k0"
  done
}

# kill_rank RANK TRIALS: SIGKILL to one rank at a random moment of an endless run.
kill_rank() {
  local rank=$1 n=$2 i
  if [ "$rank" = 0 ]; then
    # Open MPI waits a second before it SIGKILLs the ranks left after one died; here the one
    # that died is the writer, so the others need no grace. Rank 1's death keeps the default:
    # rank 0 gets SIGTERM, then SIGKILL a second later, as in any aborted job.
    export OMPI_MCA_odls_base_sigkill_timeout=0
  fi
  for ((i = 1; i <= n; i++)); do
    rm -f k.h5 k.h5.tmp k.trace
    AGEFENCE_LOG_TRACE="$work/k.trace" "$mpiexec" -n 2 -x AGEFENCE_LOG_TRACE \
      "$agefence" run -q -o "$work/k.h5" "${ENDLESS[@]}" >k.out 2>&1 &
    local launcher=$!
    # From start-up (before the log exists) to well into the steps.
    local t0_ms delay_ms
    t0_ms=$(($(date +%s%N) / 1000000))
    delay_ms=$((200 + RANDOM % 1400))
    sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
    # A launch slowed down (a sanitizer build on a loaded machine) may not have started the
    # rank yet: the moment moves on until it has, for up to 20 s.
    local pid target="" polls=0
    while :; do
      for pid in $(pgrep -P "$launcher"); do
        if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null |
          grep -qx "OMPI_COMM_WORLD_RANK=$rank"; then
          target=$pid
        fi
      done
      [ -z "$target" ] && [ "$polls" -lt 400 ] && kill -0 "$launcher" 2>/dev/null || break
      sleep 0.05
      polls=$((polls + 1))
    done
    delay_ms=$(($(date +%s%N) / 1000000 - t0_ms))
    if [ -z "$target" ]; then
      kill -9 "$launcher" 2>/dev/null
      wait "$launcher" 2>/dev/null
      fail "trial $i: no rank $rank found after $delay_ms ms (the launcher's output: $(head -c 300 k.out))"
      continue
    fi
    kill -9 "$target"
    # The launcher ends the job; it gets a bounded time to do so.
    local waited=0
    while kill -0 "$launcher" 2>/dev/null && [ "$waited" -lt 150 ]; do
      sleep 0.1
      waited=$((waited + 1))
    done
    if kill -0 "$launcher" 2>/dev/null; then
      for pid in $(pgrep -P "$launcher"); do
        kill -9 "$pid" 2>/dev/null
      done
      kill -9 "$launcher" 2>/dev/null
      fail "trial $i: the job did not end within 15 s of rank $rank's death"
    fi
    wait "$launcher" 2>/dev/null
    touch k.trace
    local k0
    k0=$(last_commit k.trace)
    verify "rank $rank killed after $delay_ms ms" "$work/k.h5" k.trace "$k0" $((k0 + FI))
  done
}

case "$mode" in
  writes) mode_writes "${7:-32}" ;;
  rank0) kill_rank 0 "${7:-6}" ;;
  rank1) kill_rank 1 "${7:-4}" ;;
  *) echo "crashlog.sh: unknown mode $mode"; exit 2 ;;
esac
echo "$trials trials, $failed failed"
[ "$failed" = 0 ] && [ "$trials" -gt 0 ]
