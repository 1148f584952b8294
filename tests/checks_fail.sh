#!/usr/bin/env bash
# The suite's own checks can fail: each promise is broken on purpose and the check that guards
# it must say so (a check that cannot fail is a defect).
#   1. one allocation after start-up (AGEFENCE_DEBUG=allocafter=N): the log counts it
#      (/final@allocs_after_init = ranks) and run_case.sh fails naming it;
#   2. one communicator created after start-up (commafter=N): /final@comms_after_init = ranks,
#      and tests/lib.sh's af_clean_run, which every whole-run test calls, fails;
#   3. two different runs: agefence-report --same (the determinism and property tests'
#      comparison) exits 1 and names what differs, the final state among it;
#   4. an event the log cannot take (eventfail=N): the run says so on stderr and in its summary,
#      counts it in /final@event_log_errors, /events holds one event fewer than the same run's,
#      and both af_clean_run and --check fail naming it.
#   checks_fail.sh AGEFENCE REPORT MPIEXEC WORKDIR FIXTURES
set -uo pipefail
here=$(dirname "$0")
. "$here/lib.sh"
agefence=$1 report=$2 mpiexec=$3 work=$4 fix=$5
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
scen=(-c "$fix/faultfree.ini" --set scenario.steps=20)

AGEFENCE_DEBUG=allocafter=5 bash "$here/run_case.sh" "$agefence" "$report" "$mpiexec" \
  "$work/alloc" np=2 -- "${scen[@]}" >"$work/alloc.out" 2>&1 &&
  fail "run_case.sh passed a run that allocated after start-up"
grep -q "allocs_after_init = 2, expected 0" "$work/alloc.out" ||
  fail "run_case.sh failed, but not on allocs_after_init: $(tail -3 "$work/alloc.out")"
echo "ok   an allocation after start-up: $(grep -m 1 FAIL "$work/alloc.out")"

log=$work/comm.h5
AGEFENCE_DEBUG=commafter=5 "$mpiexec" -n 2 "$agefence" run -q "${scen[@]}" \
  -o "$log" >"$work/comm.out" 2>&1 || fail "the run with a communicator after start-up: exit $?"
[ "$("$report" --attr /final comms_after_init "$log")" = 2 ] ||
  fail "/final@comms_after_init = $("$report" --attr /final comms_after_init "$log"), expected 2"
why=$(af_clean_run "$report" "$log") && fail "af_clean_run passed a run that made a communicator"
case "$why" in *"comms_after_init = 2, expected 0"*) ;; *) fail "af_clean_run said: $why" ;; esac
echo "ok   a communicator after start-up: $why"

"$mpiexec" -n 1 "$agefence" run -q "${scen[@]}" -o "$work/a.h5" >/dev/null 2>&1 || fail "run a"
"$mpiexec" -n 1 "$agefence" run -q "${scen[@]}" -o "$work/b.h5" --set scenario.seed=8 \
  --set workload.amplitude=0.9 >/dev/null 2>&1 || fail "run b"
"$report" --same "$work/b.h5" "$work/a.h5" >"$work/same.out" 2>&1
rc=$?
[ "$rc" = 1 ] || fail "--same exit $rc for two different runs, expected 1: $(cat "$work/same.out")"
grep -q "^  /final/state: [0-9]* of [0-9]* rows differ" "$work/same.out" ||
  fail "--same failed without naming the state: $(cat "$work/same.out")"
"$report" --same "$work/a.h5" "$work/a.h5" >/dev/null || fail "--same: a run differs from itself"
echo "ok   two different runs: --same exit 1, $(grep -c '^  ' "$work/same.out") differences"
ev=(-c "$fix/small.ini" --set scenario.steps=60)
"$mpiexec" -n 2 "$agefence" run -q "${ev[@]}" -o "$work/ev_ok.h5" \
  >/dev/null 2>&1 || fail "the run without a lost event: exit $?"
AGEFENCE_DEBUG=eventfail=2 "$mpiexec" -n 2 "$agefence" run "${ev[@]}" \
  -o "$work/ev.h5" >"$work/ev.out" 2>&1 || fail "the run that lost an event: exit $?"
grep -q "the log lost an event" "$work/ev.out" || fail "no stderr line for the lost event"
grep -q "1 events LOST" "$work/ev.out" || fail "the summary does not count the lost event"
[ "$("$report" --attr /final event_log_errors "$work/ev.h5")" = 1 ] ||
  fail "/final@event_log_errors = $("$report" --attr /final event_log_errors "$work/ev.h5")"
n_ok=$("$report" --json "$work/ev_ok.h5" | sed -n 's/.*"events_logged": *\([0-9]*\).*/\1/p')
n_ev=$("$report" --json "$work/ev.h5" | sed -n 's/.*"events_logged": *\([0-9]*\).*/\1/p')
"$report" "$work/ev.h5" >"$work/ev.report" 2>&1
grep -q "events lost  1 events" "$work/ev.report" ||
  fail "the report does not say an event was lost"
[ -n "$n_ok" ] && [ "$n_ev" = $((n_ok - 1)) ] ||
  fail "/events: ${n_ev:-?} rows with a lost event, ${n_ok:-?} without"
why=$(af_clean_run "$report" "$work/ev.h5") && fail "af_clean_run passed a run that lost an event"
case "$why" in *"event_log_errors = 1, expected 0"*) ;; *) fail "af_clean_run said: $why" ;; esac
"$report" --check "$work/ev.h5" >"$work/ev.check" 2>&1 && fail "--check passed a lost event"
grep -q "^/final@event_log_errors: 1, expected 0" "$work/ev.check" ||
  fail "--check failed without naming the lost event: $(cat "$work/ev.check")"
echo "ok   a lost event: counted ($n_ev of $n_ok events logged), af_clean_run and --check fail"
echo "PASS: every broken promise was caught"
