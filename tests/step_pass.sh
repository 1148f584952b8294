#!/usr/bin/env bash
# The fused step (backend.step_pass = one: compute, containment, commit and the exchange's pack
# and sums of each block before the next) changes how a step walks the shard, never what it
# computes: each scenario run with step_pass = one and = separate gives the same log
# (`agefence-report --same`: /steps, /events, /units, /final with the checksums), bitwise equal
# to the reference, with nothing leaked or allocated after start-up. The fused step must also
# have run where it can: one_pass_steps = every step in a fleet with no FADING unit and no
# rollback or DMR twin (abft alone included), some but not all in the default scenario (DMR
# twins take the separate passes), and 0 with separate. Scenarios: the default (twins, drains, restores, replays), a fleet of
# sudden deaths only at the scale benchmark's shape (blocks moving between ranks every few
# steps), and silent units with abft (injection, fences and retries inside the fused step).
#   step_pass.sh AGEFENCE REPORT MPIEXEC WORKDIR
set -uo pipefail
. "$(dirname "$0")/lib.sh"
agefence=$1 report=$2 mpiexec=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# NAME NP WANT SETTINGS...: the scenario with each step_pass; WANT is all, some or none of the
# steps in one pass (with step_pass = one).
pair() {
  local name=$1 np=$2 want=$3
  shift 3
  local p rc before=$fails
  for p in one separate; do
    "$mpiexec" -n "$np" "$agefence" run -q -o "$work/$name.$p.h5" --set backend.step_pass=$p \
      "$@" >"$work/$name.$p.out" 2>&1
    rc=$?
    [ "$rc" = 0 ] || { fail "$name step_pass=$p: exit $rc"; cat "$work/$name.$p.out"; return; }
    "$report" --check "$work/$name.$p.h5" >/dev/null 2>&1 || fail "$name step_pass=$p: --check"
    why=$(af_clean_run "$report" "$work/$name.$p.h5") || fail "$name step_pass=$p: $why"
    [ "$("$report" --attr /final bitwise_equal "$work/$name.$p.h5")" = 1 ] ||
      fail "$name step_pass=$p: not bitwise equal to the reference"
  done
  "$report" --same "$work/$name.one.h5" "$work/$name.separate.h5" >"$work/$name.same" 2>&1 ||
    fail "$name: one and separate differ: $(head -5 "$work/$name.same")"
  local n1 n0 done
  n1=$("$report" --attr /final one_pass_steps "$work/$name.one.h5")
  n0=$("$report" --attr /final one_pass_steps "$work/$name.separate.h5")
  done=$("$report" --attr /final steps_completed "$work/$name.one.h5")
  [ "$n0" = 0 ] || fail "$name: step_pass = separate ran $n0 steps in one pass"
  case $want in
    all) [ "$n1" = "$done" ] || fail "$name: $n1 of $done steps in one pass, expected all" ;;
    some) { [ "$n1" -gt 0 ] && [ "$n1" -lt "$done" ]; } ||
      fail "$name: $n1 of $done steps in one pass, expected some but not all" ;;
  esac
  [ "$fails" = "$before" ] &&
    echo "ok   $name on $np ranks: $n1 of $done steps in one pass, the same log with separate passes"
}

pair default_np1 1 some
pair default_np3 3 some --set scenario.seed=5
scale=(--set scenario.devices=3000 --set scenario.blocks=3000 --set scenario.units_per_device=8
       --set scenario.block_len=16 --set workload.dt=auto --set aging.sim_hours_per_step=1
       --set aging.sudden_rate_per_hour=1e-5 --set aging.weibull_scale_hours=1e9
       --set recovery.replica_interval=20 --set scenario.steps=120 --set event.1.step=60)
pair sudden_np2 2 all "${scale[@]}"
pair sudden_np4 4 all "${scale[@]}" --set scenario.seed=3
pair silent_abft_np2 2 all --set recovery.detect=abft --set corruption.silent_fraction=0.02 \
  --set corruption.nonfinite=1 --set corruption.single_bit=0 --set corruption.multi_mantissa=0 \
  --set corruption.multi_exponent=0

# The silent units' corruptions were fenced and retried inside steps that ran in one pass.
fenced=$("$report" --attr /final fenced_total "$work/silent_abft_np2.one.h5")
[ "${fenced:-0}" -gt 0 ] || fail "silent_abft_np2: nothing fenced ($fenced): the test saw no containment"

if [ "$fails" = 0 ]; then
  echo "step_pass: one and separate give the same logs, all runs"
  exit 0
fi
echo "step_pass: $fails failure(s)"
exit 1
