#!/usr/bin/env bash
# The log's writer thread (docs/log.md, "The writer thread"; sim/io/log.c): rank 0 hands each batch of rows to a
# thread that writes and commits it off the step's path.
#   1. a write error in the writer (AGEFENCE_DEBUG=logfail=2: the second commit fails between
#      its two flushes): the run says so in one line, ends through the error path (exit 1),
#      and the log at its path holds exactly the steps of the commit before (--check: "the run
#      did not finish", and nothing else);
#   2. SIGTERM while the writer is busy (AGEFENCE_DEBUG=logslow=MS: each batch takes MS ms
#      more): the writer drains and is joined, the run stops cleanly (exit 5, a valid log with
#      every step, /committed = steps_completed, nothing allocated after start-up), and the
#      step thread's waits for the busy writer are in rank 0's log_us.
#   logwriter.sh AGEFENCE REPORT MPIEXEC WORKDIR
set -uo pipefail
. "$(dirname "$0")/lib.sh"
agefence=$1 report=$2 mpiexec=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
FI=10

# 1. The writer fails its second commit (the rows of steps 11-20 written, the record not).
log=$work/fail.h5
AGEFENCE_DEBUG=logfail=2 AGEFENCE_LOG_TRACE="$work/fail.trace" "$mpiexec" -n 2 \
  -x AGEFENCE_DEBUG -x AGEFENCE_LOG_TRACE "$agefence" run -q -o "$log" \
  --set scenario.steps=100 --set "log.flush_interval=$FI" >"$work/fail.out" 2>&1
rc=$?
[ "$rc" = 1 ] || fail "a failed commit in the writer: exit $rc, expected 1: $(cat "$work/fail.out")"
lines=$(grep '^agefence: ' "$work/fail.out" | grep -v -e '^agefence: trace: ' -e '^agefence: backends: ' -e '^agefence: note: ')
[ "$(echo "$lines" | wc -l)" = 1 ] &&
  echo "$lines" | grep -q "^agefence: rank 0: .*could not commit 20 steps (AGEFENCE_DEBUG=logfail)$" ||
  fail "expected one line naming the failed commit, got: $lines"
[ "$(awk '$1 == "commit" { r = $2 } END { print r + 0 }' "$work/fail.trace")" = "$FI" ] ||
  fail "the trace's last commit is not step $FI: $(cat "$work/fail.trace")"
"$report" --check "$log" >"$work/fail.check" 2>&1
rc=$?
[ "$rc" = 1 ] && [ "$(wc -l <"$work/fail.check")" = 2 ] &&
  grep -q "^/final@exit_reason: missing: the run did not finish.*holds the $FI steps" \
    "$work/fail.check" || fail "--check of the failed run's log (exit $rc): $(cat "$work/fail.check")"
echo "ok   a failed commit in the writer: exit 1, one line ($lines), the log holds its $FI committed steps"

# 2. SIGTERM while a slow writer is busy.
log=$work/term.h5
AGEFENCE_DEBUG=logslow=150 "$mpiexec" -n 2 -x AGEFENCE_DEBUG "$agefence" run -q \
  -o "$log" --set scenario.steps=100000000 --set "log.flush_interval=$FI" \
  --set aging.sim_hours_per_step=0 >"$work/term.out" 2>&1 &
launcher=$!
for _ in $(seq 1 100); do
  [ -f "$log" ] && break
  sleep 0.1
done
sleep 1.5
target=""
for pid in $(pgrep -P "$launcher"); do
  if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=0"; then
    target=$pid
  fi
done
[ -n "$target" ] || { kill "$launcher"; fail "no rank 0 found"; }
kill -TERM "$target"
wait "$launcher"
rc=$?
[ "$rc" = 5 ] || fail "SIGTERM with a busy writer: exit $rc, expected 5: $(cat "$work/term.out")"
"$report" --check "$log" >"$work/term.check" 2>&1 || fail "--check: $(cat "$work/term.check")"
[ "$("$report" --attr /final exit_reason "$log")" = signal ] || fail "exit_reason is not signal"
why=$(af_clean_run "$report" "$log") || fail "$why"
/usr/bin/python3 - "$log" <<'PY' || fail "the log after SIGTERM with a busy writer"
import sys
import h5py

with h5py.File(sys.argv[1], "r") as f:
    done = int(f["final"].attrs["steps_completed"])
    committed = [int(x) for x in f["committed"][()]]
    rows = f["steps/step"].shape[0]
    assert done > 0 and rows == done and committed[0] == done, (done, rows, committed)
    wait_us = float(f["final"].attrs["log_writer_wait_us"])
    log0 = f["ranks/log_us"][:, 0]
    # The writer takes 150 ms more per batch and a batch is handed over every 10 steps: the
    # step thread waits for it, and that wait is in rank 0's log_us.
    assert wait_us > 100e3, wait_us
    assert log0.max() > 100e3, log0.max()
    print(f"{done} steps, the step thread waited {wait_us / 1e3:.0f} ms for the writer, "
          f"rank 0's log_us up to {log0.max() / 1e3:.0f} ms")
PY
echo "ok   SIGTERM with a busy writer: exit 5, a valid log with every step, nothing allocated after start-up"
echo "PASS"
