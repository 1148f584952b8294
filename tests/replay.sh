#!/usr/bin/env bash
# Recovery without global rollback, on a fleet where a unit dies suddenly about once a step
# (512 units, one sudden death per 512 unit-hours, one hour a step, no wear-out):
#   1. recovery.replay = local on 1, 2, 3 and 4 ranks: identical logs (agefence-report --same),
#      at least one sudden death per step on average, every restore from an older replica
#      replayed alone (replayed_blocks = the restores that were not current), no rollback, no
#      replayed step, as many executed steps as logical ones, bitwise equal to the reference;
#   2. recovery.replay = global on the same failure history: the deaths roll every block back
#      (rollbacks > 0, executed > logical steps) and the final state is the same.
# Every run also leaks no NaN/Inf and allocates nothing and creates no communicator after
# start-up (tests/lib.sh).
#   replay.sh AGEFENCE REPORT MPIEXEC WORKDIR
set -uo pipefail
here=$(dirname "$0")
. "$here/lib.sh"
agefence=$1 report=$2 mpiexec=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
# The restores' recount needs h5py (tests/lib.sh): without it the rest runs, and the script
# then fails saying so.
py=$(af_python)
no_h5py=$(af_h5py)
attr() { "$report" --attr /final "$1" "$2"; }
steps=120
fleet=(--set scenario.devices=32 --set scenario.units_per_device=16 --set scenario.blocks=64
       --set scenario.block_len=32 --set scenario.steps=$steps --set scenario.max_blackout=0.5
       --set aging.sim_hours_per_step=1 --set aging.sudden_rate_per_hour=2e-3
       --set aging.weibull_scale_hours=1e9 --set recovery.replica_interval=20
       --set event.1.step=60)
run() { # NAME NP SETTINGS...: one run that must pass
  local name=$1 np=$2 rc why
  shift 2
  "$mpiexec" -n "$np" "$agefence" run -q "${fleet[@]}" "$@" -o "$work/$name.h5" \
    >"$work/$name.out" 2>&1
  rc=$?
  [ "$rc" = 0 ] || { cat "$work/$name.out"; fail "$name: exit $rc"; }
  "$report" --check "$work/$name.h5" >/dev/null || fail "$name: the log breaks the schema"
  why=$(af_clean_run "$report" "$work/$name.h5") || fail "$name: $why"
  [ "$(attr bitwise_equal "$work/$name.h5")" = 1 ] || fail "$name: not bitwise equal"
}
for np in 1 2 3 4; do
  run local.n$np $np
done
for np in 2 3 4; do
  "$report" --same "$work/local.n$np.h5" "$work/local.n1.h5" ||
    fail "local: $np ranks computed another run than 1 rank"
done
log=$work/local.n1.h5
"$report" --json "$log" >"$work/local.json" || fail "agefence-report --json"
sudden=$(sed -n 's/.*"dead_sudden": *\([0-9]*\).*/\1/p' "$work/local.json")
[ -n "$sudden" ] || fail "no dead_sudden in the report's JSON"
[ "$sudden" -ge "$steps" ] || fail "$sudden sudden deaths in $steps steps: fewer than one a step"
[ "$(attr steps_completed "$log")" = "$steps" ] || fail "local: $(attr steps_completed "$log") executed steps"
[ "$(attr rollbacks_total "$log")" = 0 ] || fail "local: $(attr rollbacks_total "$log") rollbacks"
[ "$(attr replayed_steps_total "$log")" = 0 ] || fail "local: replayed steps"
restores=$(attr moves_restore_total "$log")
replayed=$(attr replayed_blocks_total "$log")
bsteps=$(attr replayed_block_steps_total "$log")
# The restores whose replica held the committed step (a death right after a refresh) need no
# replay: every other one was replayed. The events say which: a restore's detail is the step
# its replica held, and the row's state_step - 1 the step before it.
[ -z "$no_h5py" ] || { echo "$no_h5py"; exit 1; }
stale=$("$py" - "$log" <<'EOF'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r") as f:
    ev = f["/events"][...]
    state = f["/steps/state_step"][...]
kinds = np.array([k.decode() if isinstance(k, bytes) else k for k in ev["kind"]])
r = ev[kinds == "restore"]
# Executed step s starts from the committed state of step s - 1 (the row before).
before = np.array([state[s - 2] if s >= 2 else 0 for s in r["step"]])
print(int(np.sum(r["detail"] < before)))
EOF
) || fail "reading the restore events"
[ "$replayed" = "$stale" ] ||
  fail "local: $replayed blocks replayed, but $stale of the $restores restores came from older replicas"
[ "$replayed" -ge 10 ] || fail "local: only $replayed blocks replayed"
[ "$bsteps" -ge "$replayed" ] || fail "local: $bsteps block-steps for $replayed blocks"
echo "ok   local: $sudden sudden deaths in $steps steps on 1-4 ranks, identical logs; $restores" \
  "restores, $replayed replayed alone ($bsteps block-steps), 0 rollbacks"

run global 2 --set recovery.replay=global
g=$work/global.h5
[ "$(attr rollbacks_total "$g")" -ge 10 ] || fail "global: $(attr rollbacks_total "$g") rollbacks"
[ "$(attr steps_completed "$g")" -gt "$steps" ] || fail "global: no step executed twice"
[ "$(attr replayed_blocks_total "$g")" = 0 ] || fail "global: blocks replayed alone"
[ "$(attr state_checksum "$g")" = "$(attr state_checksum "$log")" ] ||
  fail "global and local end in different states"
echo "ok   global: $(attr rollbacks_total "$g") rollbacks, $(attr steps_completed "$g") executed" \
  "steps for $steps, the same final state ($(attr state_checksum "$g"))"
echo "PASS: sudden deaths every step are replayed block by block, never rolled back"
