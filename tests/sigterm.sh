#!/usr/bin/env bash
# SIGTERM mid-run: the ranks finish the current step, flush and close the log, and exit with
# status 5; the log is readable, passes the schema check, says exit_reason = signal, and holds
# exactly steps_completed rows. Then SIGINT (Ctrl-C) and SIGTERM to mpirun itself: the same
# clean stop, started by Open MPI's ending of the job. Then a SIGTERM to a one-rank run as soon
# as it catches the signal (MPI still starting): the same exit 5 with a valid log, never a death
# by the signal.
#   sigterm.sh AGEFENCE REPORT MPIEXEC WORKDIR
set -uo pipefail
. "$(dirname "$0")/lib.sh"
agefence=$1 report=$2 mpiexec=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
log=$work/run.h5
fail() { echo "FAIL: $*" >&2; exit 1; }
# Every per-step dataset holds exactly steps_completed rows: /steps/* and /ranks/* (steps x
# ranks), and the commit record agrees.
rows_match() { # rows_match LOG STEPS
  /usr/bin/python3 - "$1" "$2" <<'PY'
import sys
import h5py

path, done = sys.argv[1], int(sys.argv[2])
bad = []
with h5py.File(path, "r") as f:
    for group in ("steps", "ranks"):
        names = list(f[group])
        if not names:
            bad.append(f"/{group} is empty")
        for name in names:
            rows = f[group][name].shape[0]
            if rows != done:
                bad.append(f"/{group}/{name} has {rows} rows")
    committed = [int(x) for x in f["committed"][()]]
    if committed[0] != done:
        bad.append(f"/committed counts {committed[0]} rows")
for b in bad:
    print(f"FAIL: {b}, steps_completed = {done}")
print(f"{len(bad)} dataset(s) off")
sys.exit(1 if bad else 0)
PY
}
"$mpiexec" -n 2 "$agefence" run -q -o "$log" --set scenario.steps=100000000 \
  --set log.flush_interval=10 --set aging.sim_hours_per_step=0 >"$work/stdout" 2>"$work/stderr" &
launcher=$!
# Wait until the run is stepping (the log exists and the ranks are up), then signal rank 0.
for _ in $(seq 1 100); do
  pids=$(pgrep -f "$agefence run -q -o $log" | grep -v "^$launcher$" || true)
  [ -f "$log" ] && [ -n "$pids" ] && break
  sleep 0.1
done
sleep 1.5
pids=$(pgrep -P "$launcher" -f "$agefence" || true)
[ -n "$pids" ] || pids=$(pgrep -f "$agefence run -q -o $log" | grep -v "^$launcher$" || true)
[ -n "$pids" ] || fail "no agefence ranks found"
first=$(echo "$pids" | head -n 1)
kill -TERM "$first"
wait "$launcher"
rc=$?
cat "$work/stderr"
[ "$rc" = 5 ] || fail "exit status $rc, expected 5 (stopped by a signal)"
"$report" --check "$log" || fail "the log is not valid after SIGTERM"
reason=$("$report" --attr /final exit_reason "$log")
[ "$reason" = signal ] || fail "exit_reason = $reason, expected signal"
done_steps=$("$report" --attr /final steps_completed "$log")
[ "$done_steps" -gt 0 ] || fail "no step completed"
why=$(af_clean_run "$report" "$log") || fail "$why"
rows_match "$log" "$done_steps" || fail "the log's rows do not match steps_completed"
# A signal to a rank itself keeps the check against the serial reference.
[ "$("$report" --attr /final bitwise_equal "$log")" = 1 ] ||
  fail "SIGTERM to a rank: bitwise_equal is not 1 (the final state was not verified)"
echo "PASS: stopped after $done_steps steps, log valid, exit_reason=signal, every /steps and" \
  "/ranks dataset has $done_steps rows"
# A log read while its run writes it is live, not a killed run's: the report says so (the
# writer holds the file; it reads up to the last flush), with no "killed" and no notice that its
# tables disagree; --check names it. Then a SIGTERM to the rank, and the summary's verdict says
# STOPPED with the state reached verified.
live=$work/live.h5
"$mpiexec" -n 2 "$agefence" run -o "$live" --set scenario.steps=100000000 \
  --set log.flush_interval=10 --set aging.sim_hours_per_step=1 >"$work/live.out" 2>"$work/live.err" &
launcher=$!
for _ in $(seq 1 100); do
  [ -f "$live" ] && [ -n "$(pgrep -P "$launcher" -f "$agefence" || true)" ] && break
  sleep 0.1
done
sleep 2
"$report" "$live" >"$work/live.report" 2>&1 || fail "the report of a live log: exit $?"
"$report" --check "$live" >"$work/live.check" 2>&1
pids=$(pgrep -P "$launcher" -f "$agefence" || true)
[ -n "$pids" ] || fail "live: no agefence ranks found"
kill -TERM "$(echo "$pids" | head -n 1)"
wait "$launcher"
rc=$?
[ "$rc" = 5 ] || fail "live: exit status $rc, expected 5"
grep -q "^LIVE LOG: its run is still writing it" "$work/live.report" &&
  grep -q "^  exit         LIVE: the run is still writing this log (its writer holds it); read up to its last flush$" \
    "$work/live.report" || fail "the report of a live log does not say it is live: $(head -16 "$work/live.report")"
grep -qE "killed|INCOMPLETE|/interruptions:" "$work/live.report" &&
  fail "the report of a live log reads it as a killed run's: $(grep -E "killed|INCOMPLETE|/interruptions:" "$work/live.report")"
grep -q "^/final@exit_reason: missing: the run is still writing the log (its writer holds it)" \
  "$work/live.check" || fail "--check of a live log: $(cat "$work/live.check")"
grep -q "^  verdict        STOPPED after step [0-9]* of 100000000 on request, the state reached verified$" \
  "$work/live.out" || fail "SIGTERM to a rank: the summary's verdict: $(grep verdict "$work/live.out")"
"$report" "$live" >"$work/live.final" || fail "the report of the stopped run: exit $?"
grep -q "verdict STOPPED after step [0-9]* of 100000000 on request, the state reached verified$" "$work/live.final" ||
  fail "SIGTERM to a rank: the report's exit line does not say STOPPED"
echo "PASS: a live log reads as live; a stop the user asked for reads as STOPPED"
# Ctrl-C on mpirun (SIGINT), and SIGTERM to mpirun: Open MPI ends the job by sending every rank
# SIGCONT, then SIGTERM odls_base_sigkill_timeout seconds later (1 s, set here as the default
# is), then SIGKILL as long after that. The ranks take the SIGCONT as the stop request, so the
# clean stop starts at once and has both intervals. The serial reference, which recomputes
# every step, would not fit in them once a run is longer than a few seconds: the state is
# logged unverified (/final@bitwise_equal = -1, reference_checksum "unverified"). SIGINT stops a
# small grid after 1.5 s, SIGTERM the default scenario after 8 s (its reference alone takes
# longer than mpirun's 2 s). mpirun itself exits 1 after ending a job, whatever the ranks'
# status: the log's /final@exit_code holds agefence's 5.
small=$(dirname "$0")/fixtures/small.ini
for sig in INT TERM; do
  mlog=$work/mpirun-$sig.h5
  if [ "$sig" = INT ]; then scen=(-c "$small") after=1.5; else scen=() after=8; fi
  OMPI_MCA_odls_base_sigkill_timeout=1 "$mpiexec" -n 2 "$agefence" run \
    "${scen[@]}" -o "$mlog" --set scenario.steps=100000000 --set aging.sim_hours_per_step=0 \
    >"$work/mpirun-$sig.out" 2>"$work/mpirun-$sig.err" &
  launcher=$!
  for _ in $(seq 1 100); do
    [ -f "$mlog" ] && [ -n "$(pgrep -P "$launcher" -f "$agefence" || true)" ] && break
    sleep 0.1
  done
  sleep "$after"
  [ -n "$(pgrep -P "$launcher" -f "$agefence" || true)" ] || fail "SIG$sig: no agefence ranks found"
  kill -"$sig" "$launcher"
  wait "$launcher"
  rc=$?
  cat "$work/mpirun-$sig.err"
  [ "$rc" = 1 ] || fail "SIG$sig to mpirun: mpirun exited $rc, expected 1 (Open MPI ended the job)"
  grep -q "stopped by a signal (mpirun ending the job) after step" "$work/mpirun-$sig.err" ||
    fail "SIG$sig to mpirun: the ranks did not take mpirun's ending of the job as the stop request"
  grep -q "the log is complete up to it" "$work/mpirun-$sig.err" ||
    fail "SIG$sig to mpirun: the stop did not finish (killed before the log was closed?)"
  grep -q "^  exit reason    signal$" "$work/mpirun-$sig.out" ||
    fail "SIG$sig to mpirun: no summary on stdout (or not exit reason signal)"
  grep -q "^  verdict        STOPPED after step [0-9]* of 100000000 on request, not verified$" \
    "$work/mpirun-$sig.out" || fail "SIG$sig to mpirun: the summary's verdict is not STOPPED"
  "$report" --check "$mlog" || fail "SIG$sig to mpirun: the log is not valid"
  [ "$("$report" --attr /final exit_reason "$mlog")" = signal ] || fail "SIG$sig to mpirun: exit_reason is not signal"
  [ "$("$report" --attr /final exit_code "$mlog")" = 5 ] || fail "SIG$sig to mpirun: /final@exit_code is not 5"
  why=$(af_clean_run "$report" "$mlog") || fail "SIG$sig to mpirun: $why"
  mdone=$("$report" --attr /final steps_completed "$mlog")
  [ "$mdone" -gt 0 ] || fail "SIG$sig to mpirun: no step completed"
  rows_match "$mlog" "$mdone" || fail "SIG$sig to mpirun: the log's rows do not match steps_completed"
  "$report" "$mlog" >"$work/mpirun-$sig.report" || fail "SIG$sig to mpirun: agefence-report cannot read the log"
  grep -q "^  exit         signal (exit code 5): verdict STOPPED after step $mdone of 100000000 on request, not verified$" \
    "$work/mpirun-$sig.report" || fail "SIG$sig to mpirun: the report's exit line does not say STOPPED"
  [ "$("$report" --attr /final bitwise_equal "$mlog")" = -1 ] &&
    [ "$("$report" --attr /final reference_checksum "$mlog")" = unverified ] ||
    fail "SIG$sig to mpirun: /final does not say the state is not verified"
  grep -q "^  final state    NOT VERIFIED against the serial reference" "$work/mpirun-$sig.out" ||
    fail "SIG$sig to mpirun: the summary does not say the state is not verified"
  grep -q "^  final state  NOT VERIFIED against the serial reference" "$work/mpirun-$sig.report" ||
    fail "SIG$sig to mpirun: the report does not say the state is not verified"
  echo "PASS: SIG$sig to mpirun: stopped after $mdone steps with the summary, /final (exit_reason" \
    "signal, exit_code 5), a valid log; mpirun exit 1"
done
# A SIGTERM at start-up: the handler is installed before MPI starts, so a signal from then on
# stops the run at its first step boundary with its log (a batch job cancelled while MPI
# starts). The test waits until the process catches SIGTERM (its /proc status SigCgt mask; no
# program can catch a signal before its main runs, which a sanitizer's start-up delays), then
# signals at once (inside MPI's start-up) and, in a second run, 0.2 s later.
caught() { # caught PID: SIGTERM (15, bit 14 of SigCgt) has a handler in PID
  local m
  m=$(awk '/^SigCgt:/{print $2}' "/proc/$1/status" 2>/dev/null) || return 1
  [ -n "$m" ] && (((16#$m >> 14) & 1))
}
for delay in 0 0.2; do
  early=$work/early.h5
  rm -f "$early"
  "$agefence" run -q -o "$early" --set scenario.steps=100000000 >"$work/early.out" 2>&1 &
  pid=$!
  for _ in $(seq 1 20000); do
    caught "$pid" && break
    sleep 0.001
  done
  caught "$pid" || fail "the run never installed its SIGTERM handler"
  sleep "$delay"
  kill -TERM "$pid"
  wait "$pid"
  rc=$?
  [ "$rc" = 5 ] || { cat "$work/early.out"; fail "SIGTERM $delay s after the handler: exit $rc, expected 5"; }
  "$report" --check "$early" >/dev/null || fail "SIGTERM $delay s after the handler: the log breaks the schema"
  [ "$("$report" --attr /final exit_reason "$early")" = signal ] ||
    fail "SIGTERM $delay s after the handler: exit_reason is not signal"
done
echo "PASS: a SIGTERM as soon as the handler is installed (MPI starting) and 0.2 s later stops the run with a valid log (exit 5)"
