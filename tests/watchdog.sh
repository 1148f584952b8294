#!/usr/bin/env bash
# The step watchdog (run.step_timeout): one of NP ranks is stopped (SIGSTOP) mid-run; every
# other rank must end within the timeout plus a few seconds, with exit status 8 (hung). With the
# stopped rank not rank 0, the log says so: /final@exit_reason = hung, exit_code 8, hung_ranks
# naming the stopped rank, hung_step, and agefence-report --check finds the log valid. With
# rank 0 stopped (the log's writer), the first rank left says that no /final could be written.
# The stopped rank is continued and killed at the end: nothing is left running.
#   watchdog.sh AGEFENCE MPIEXEC WORKDIR NP STOP_RANK
set -uo pipefail
agefence=$1 mpiexec=$2 work=$3 np=$4 stop_rank=$5
report=$(dirname "$agefence")/agefence-report
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }
timeout_s=2
bound_s=10 # the timeout, the census's grace (up to the timeout) and a few seconds for the end
# No aging (sim_hours_per_step = 0): the run would go on for ever.
"$mpiexec" -n "$np" "$agefence" run -q -o "$work/w.h5" --set scenario.steps=100000000 \
  --set aging.sim_hours_per_step=0 --set "run.step_timeout=$timeout_s" >w.out 2>&1 &
launcher=$!
target=""
cleanup() {
  if [ -n "$target" ]; then
    kill -CONT "$target" 2>/dev/null
    kill -9 "$target" 2>/dev/null
  fi
  kill -9 "$launcher" 2>/dev/null
}
trap cleanup EXIT
# The rank's process (Open MPI or MPICH's rank variable), once the run has started its steps:
# its log exists.
for ((polls = 0; polls < 600; polls++)); do
  if [ -z "$target" ]; then
    # The launcher's children (Open MPI) or grandchildren (MPICH's proxy): by the log's path.
    for pid in $(pgrep -f -- "$work/w.h5"); do
      [ "$(basename "$(readlink "/proc/$pid/exe" 2>/dev/null)")" = agefence ] || continue
      if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null |
        grep -Eqx "(OMPI_COMM_WORLD_RANK|PMI_RANK)=$stop_rank"; then
        target=$pid
      fi
    done
  fi
  [ -n "$target" ] && [ -f "$work/w.h5" ] && break
  kill -0 "$launcher" 2>/dev/null || fail "the run ended before its rank was stopped: $(head -c 400 w.out)"
  sleep 0.05
done
[ -n "$target" ] || fail "no rank $stop_rank found"
sleep 1 # well into the steps
kill -STOP "$target" || fail "cannot stop rank $stop_rank"
t0=$(date +%s%N)
for ((waited = 0; waited < 10 * (bound_s + 20); waited++)); do
  kill -0 "$launcher" 2>/dev/null || break
  sleep 0.1
done
elapsed_ms=$((($(date +%s%N) - t0) / 1000000))
if kill -0 "$launcher" 2>/dev/null; then
  fail "the launch is still running $((elapsed_ms / 1000)) s after rank $stop_rank stopped: $(tail -c 400 w.out)"
fi
wait "$launcher"
rc=$?
cat w.out
echo "rank $stop_rank of $np stopped: the launch ended after $elapsed_ms ms with exit status $rc"
[ "$elapsed_ms" -le $((bound_s * 1000)) ] || fail "the launch took $elapsed_ms ms, more than ${bound_s} s"
[ "$rc" = 8 ] || fail "exit status $rc, expected 8 (hung)"
if [ "$stop_rank" = 0 ]; then
  grep -q "^agefence: rank [0-9]*: hung: step [0-9]* did not complete within run.step_timeout = $timeout_s s; ranks that did not arrive: 0\. Rank 0 writes the log and is among them, so no /final could be written" w.out ||
    fail "no rank said that rank 0 stopped and no /final could be written"
else
  grep -q "^agefence: hung: step [0-9]* did not complete within run.step_timeout = $timeout_s s; ranks that did not arrive: $stop_rank; " w.out ||
    fail "rank 0 did not name the stopped rank on stderr"
  attr() { "$report" --attr /final "$1" "$work/w.h5" 2>/dev/null; }
  [ "$(attr exit_reason)" = hung ] || fail "/final@exit_reason = '$(attr exit_reason)', expected hung"
  [ "$(attr exit_code)" = 8 ] || fail "/final@exit_code = '$(attr exit_code)', expected 8"
  [ "$(attr hung_ranks)" = "$stop_rank" ] || fail "/final@hung_ranks = '$(attr hung_ranks)'"
  [ "$(attr hung_step)" -gt 0 ] || fail "/final@hung_step = '$(attr hung_step)'"
  "$report" --check "$work/w.h5" >check.out 2>&1 || { cat check.out; fail "--check: the log is not valid"; }
fi
echo "PASS: the watchdog ended $np ranks with rank $stop_rank stopped"
