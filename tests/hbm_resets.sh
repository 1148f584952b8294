#!/usr/bin/env bash
# Device memory (HBM) errors through whole runs (cause hbm, sim/fleet/jobintr.h, sim/plan/coord.h):
#   hbm_resets.sh AGEFENCE REPORT MPIEXEC WORKDIR FIXTURE
# A fleet that does not age by itself, first with scripted reset_device events (one on a device
# whose units are FADING and drained in the same step), then with aging.hbm_rate_per_hour, each
# on 1 and 3 ranks: the same history (--same), a valid log, nothing allocated after start-up,
# bitwise equal to the reference (the reset slots are poisoned, so a restore that did not happen
# shows), no unit killed, every block of a reset device restored in place from its replica and
# replayed alone, one /interruptions row of cause hbm per reset, and the report's figures equal
# to numpy's recount (tests/report_verify.py; without h5py the script fails, after the rest). Then a reset whose replicas
# were lost in the same step (a restart from step 0, 1 and 3 ranks) and one under
# recovery.replay = global (a rollback), and --check on the cause names of older logs.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
agefence=$1 report=$2 mpiexec=$3 work=$4 fixture=$5
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
base=(-c "$fixture" --set scenario.steps=80 --set recovery.replica_interval=7
      --set scenario.devices_per_node=2)
scripted=("${base[@]}" --set event.1.step=12 --set event.1.action=reset_device
          --set event.1.device=6 --set event.2.step=32 --set event.2.action=fade
          --set event.2.device=1 --set event.2.units=0-3 --set event.3.step=33
          --set event.3.action=reset_device --set event.3.device=1
          --set recovery.max_moves_per_step=2)
rate=("${base[@]}" --set aging.sim_hours_per_step=1 --set aging.sudden_rate_per_hour=0
      --set aging.weibull_scale_hours=1e9 --set aging.hbm_rate_per_hour=0.01)
run() { # NAME NP ARGS...
  local name=$1 np=$2
  shift 2
  "$mpiexec" -n "$np" "$agefence" run -q -o "$work/$name.h5" "$@" \
    >"$work/$name.out" 2>&1 || { cat "$work/$name.out" >&2; fail "$name: exit status $?"; }
  "$report" --check "$work/$name.h5" >/dev/null || fail "$name: the log breaks the schema"
  why=$(af_clean_run "$report" "$work/$name.h5") || fail "$why"
  [ "$("$report" --attr /final bitwise_equal "$work/$name.h5")" = 1 ] ||
    fail "$name: not bitwise equal to the reference"
  [ "$("$report" --attr /final rollbacks_total "$work/$name.h5")" = 0 ] ||
    fail "$name: a rollback (the blocks should replay alone)"
}
for np in 1 3; do
  run scripted_np$np "$np" "${scripted[@]}"
  run rate_np$np "$np" "${rate[@]}"
done
# A reset in the step its device's replicas are lost leaves nothing to restore from: every block
# restarts from step 0 (one rollback), on 1 and 3 ranks alike; with replay = global a reset
# rolls every block back to the replicas. Both bitwise equal, nothing allocated.
lost=("${base[@]}" --set event.1.step=20 --set event.1.action=lose_replicas --set event.1.device=6
      --set event.1.units=0-3 --set event.2.step=20 --set event.2.action=reset_device
      --set event.2.device=6)
for name in lost_np1 lost_np3 global_np2; do
  np=${name##*_np}
  args=("${lost[@]}")
  [ "$name" = global_np2 ] && args=("${scripted[@]}" --set recovery.replay=global)
  "$mpiexec" -n "$np" "$agefence" run -q -o "$work/$name.h5" "${args[@]}" \
    >"$work/$name.out" 2>&1 || { cat "$work/$name.out" >&2; fail "$name: exit status $?"; }
  why=$(af_clean_run "$report" "$work/$name.h5") || fail "$why"
  [ "$("$report" --attr /final bitwise_equal "$work/$name.h5")" = 1 ] || fail "$name: not bitwise equal"
  [ "$("$report" --attr /final rollbacks_total "$work/$name.h5")" -ge 1 ] || fail "$name: no rollback"
done
[ "$("$report" --attr /final replayed_steps_total "$work/lost_np3.h5")" = 19 ] ||
  fail "lost: the restart did not replay the 19 committed steps"
"$report" --same "$work/lost_np1.h5" "$work/lost_np3.h5" || fail "lost: 1 and 3 ranks"
"$report" --same "$work/scripted_np1.h5" "$work/scripted_np3.h5" || fail "scripted: 1 and 3 ranks"
"$report" --same "$work/rate_np1.h5" "$work/rate_np3.h5" || fail "rate: 1 and 3 ranks"
# 6 blocks a device (48 blocks on 8 devices): the reset of device 6 restores its 6 blocks; device
# 1's units fade a step before its reset, and drain 2 blocks a step (max_moves_per_step): its
# reset restores the 4 left, and 2 of them are drained in the same step.
[ "$("$report" --attr /final moves_restore_total "$work/scripted_np3.h5")" = 10 ] ||
  fail "scripted: /final@moves_restore_total is not 10"
"$report" "$work/scripted_np3.h5" >"$work/scripted.txt" || fail "scripted: the report"
grep -q "interrupted  2 times .*2 hbm" "$work/scripted.txt" ||
  fail "scripted: the report does not count 2 hbm interruptions"
# The recounts need h5py (everything above does not): without it, one line saying so, exit 1.
py=$(af_python)
no_h5py=$(af_h5py) || { echo "$no_h5py" >&2; exit 1; }
"$py" - "$work/scripted_np3.h5" "$work/rate_np3.h5" <<'PY' || fail "the resets' events"
import sys
import h5py
HBM = 11  # common/log_schema.h: appended after dependency
for path, scripted in ((sys.argv[1], True), (sys.argv[2], False)):
    f = h5py.File(path, "r")
    ev = f["events"][:]
    intr = f["interruptions"][:]
    assert (f["units/cause"][:] == 0).all(), "a memory reset killed a unit"
    resets = [(int(r["step"]), int(r["device"]), int(r["node"])) for r in intr]
    assert all(int(r["cause"]) == HBM for r in intr), intr
    if scripted:
        assert resets == [(12, 6, 3), (33, 1, 0)], resets
    else:
        assert len(resets) > 3, resets
    replayed = int(f["steps/replayed_blocks"][:].sum())
    restores = [r for r in ev if r["kind"].decode() == "restore"]
    # Replayed alone: every restore whose replica is older than the committed step (step - 1).
    stale = sum(1 for r in restores if int(r["detail"]) < int(r["step"]) - 1)
    assert replayed == stale and stale > 0, (replayed, stale, len(restores))
    for step, dev, _ in resets:
        # Every restore of the step is in place on the reset device (the fleet loses no unit),
        # from the replica's step, and the step's `interrupt` row follows them.
        at = [r for r in ev if int(r["step"]) == step]
        rs = [r for r in at if r["kind"].decode() == "restore"]
        devs = {d for s, d, _ in resets if s == step}
        assert rs, (step, "no restore")
        for r in rs:
            assert int(r["from_device"]) in devs and int(r["from_slot"]) == int(r["to_slot"])
            assert int(r["from_device"]) == int(r["to_device"])
            assert int(r["from_unit"]) == int(r["to_unit"])
            assert 0 <= int(r["detail"]) < step
        kinds = [r["kind"].decode() for r in at]
        assert "interrupt" in kinds and kinds.index("interrupt") > kinds.index("restore"), kinds
    if scripted:
        # Device 1's FADING units are drained after their blocks were restored in place.
        at33 = [r["kind"].decode() for r in ev if int(r["step"]) == 33]
        assert at33.count("restore") == 4 and at33.count("drain") == 2, at33
        assert at33.index("drain") > max(i for i, k in enumerate(at33) if k == "restore"), at33
PY
for name in scripted_np3 rate_np3; do
  "$py" "$here/report_verify.py" "$report" "$work/$name.h5" || fail "$name: figures differ from numpy"
done
# Causes are append only: a log written before hbm (its cause_names the first eleven) still
# passes --check; names that are not a prefix of today's do not.
for names in "0 wearout, 1 sudden, 2 scripted, 3 device, 4 node, 5 software, 6 network, 7 nic, 8 nccl_watchdog, 9 sdc, 10 dependency:0" \
             "0 wearout, 1 sudden, 2 scripted, 3 device, 4 node, 5 software, 6 network, 7 nic, 8 nccl_watchdog, 9 sdc, 10 depend:1" \
             "0 wearout, 1 sudden, 2 scripted, 3 device, 4 node, 5 software, 6 network, 7 nic, 8 nccl_watchdog, 9 sdc, 10 dependency, 11 hbm, 12 x:1"; do
  cp "$work/rate_np1.h5" "$work/names.h5"
  "$py" -c "import sys, h5py; h5py.File(sys.argv[1], 'r+')['interruptions'].attrs['cause_names'] = sys.argv[2]" \
    "$work/names.h5" "${names%:*}" || fail "cannot rewrite cause_names"
  "$report" --check "$work/names.h5" >/dev/null 2>&1
  got=$?
  [ "$got" != 0 ] && got=1
  [ "$got" = "${names##*:}" ] || fail "--check of cause_names '${names%:*}': exit $got"
done
echo "PASS: memory resets on 1 and 3 ranks"
