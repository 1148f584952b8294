#!/usr/bin/env bash
# Node-aware replicas and link losses through whole runs (docs/recovery.md, "Replica"; docs/failure-model.md, "Failure domains", "Link losses"):
#   failure_domains.sh AGEFENCE REPORT MPIEXEC WORKDIR FIXTURE
# A fleet of 8 devices, 2 a node (4 nodes), that does not age by itself; 6 blocks a device.
# Block b's replica is kept on the device of the same index in the node half the fleet away
# (device d's blocks on d + 4 mod 8), so:
#   nodes: node 2 (devices 4, 5) dies at step 15, a step after a refresh: its 12 blocks are
#     restored from current replicas on node 0, and the 12 replicas node 2 kept (node 0's
#     blocks') are lost with it. With replay = local they are taken again at the end of the
#     step, on another live node, so when node 0 dies at step 17 its blocks are restored from
#     those and replayed alone: no rollback, on 1 and 3 ranks alike. With replay = global the
#     lost replicas wait for the next refresh, so node 0's death at 17 takes blocks whose
#     replicas are gone: every block restarts from step 0 (one rollback), still bitwise equal.
#   link: device 3's link goes down at step 12 (scripted) and links fail at a rate: the device's
#     units leave the job (/units cause 9 scripted, 8 drawn), its blocks are restored elsewhere
#     from their replicas, the replicas it kept are lost and taken again, one /interruptions row
#     of cause link per device, counted by the report as numpy recounts them.
# Every run: a valid log, nothing allocated after start-up, no NaN/Inf leaked, bitwise equal to
# the reference.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
agefence=$1 report=$2 mpiexec=$3 work=$4 fixture=$5
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
base=(-c "$fixture" --set scenario.steps=80 --set recovery.replica_interval=7
      --set scenario.devices_per_node=2)
nodes=("${base[@]}" --set event.1.step=15 --set event.1.action=kill_node --set event.1.node=2
       --set event.2.step=17 --set event.2.action=kill_node --set event.2.node=0)
link=("${base[@]}" --set event.1.step=12 --set event.1.action=link_down --set event.1.device=3)
rate=("${base[@]}" --set aging.sim_hours_per_step=1 --set aging.sudden_rate_per_hour=0
      --set aging.weibull_scale_hours=1e9 --set aging.link_rate_per_hour=2e-3)
run() { # NAME NP ARGS...
  local name=$1 np=$2
  shift 2
  "$mpiexec" -n "$np" "$agefence" run -q -o "$work/$name.h5" "$@" \
    >"$work/$name.out" 2>&1 || { cat "$work/$name.out" >&2; fail "$name: exit status $?"; }
  "$report" --check "$work/$name.h5" >/dev/null || fail "$name: the log breaks the schema"
  why=$(af_clean_run "$report" "$work/$name.h5") || fail "$why"
  [ "$("$report" --attr /final bitwise_equal "$work/$name.h5")" = 1 ] ||
    fail "$name: not bitwise equal to the reference"
}
attr() { "$report" --attr /final "$1" "$work/$2.h5"; }
for np in 1 3; do
  run nodes_np$np "$np" "${nodes[@]}"
  run link_np$np "$np" "${link[@]}"
  run rate_np$np "$np" "${rate[@]}"
done
run nodes_global_np2 2 "${nodes[@]}" --set recovery.replay=global
for name in nodes link rate; do
  "$report" --same "$work/${name}_np1.h5" "$work/${name}_np3.h5" || fail "$name: 1 and 3 ranks"
done
# Two nodes lost, never a block with its replica: node 2's 12 blocks restored at step 15 (4 of
# them onto node 0), then node 0's 16 at step 17, replayed alone from the replicas taken again
# at step 15 (or taken with the restore): 28 restores, 16 replayed alone, no rollback.
[ "$(attr rollbacks_total nodes_np3)" = 0 ] || fail "nodes: a rollback (a block lost with its replica)"
[ "$(attr moves_restore_total nodes_np3)" = 28 ] || fail "nodes: /final@moves_restore_total is not 28"
[ "$(attr replayed_blocks_total nodes_np3)" = 16 ] || fail "nodes: /final@replayed_blocks_total is not 16"
# Global replay: node 0's blocks lost with their replicas at step 17: a restart from step 0.
[ "$(attr rollbacks_total nodes_global_np2)" = 1 ] || fail "nodes global: no restart"
[ "$(attr replayed_steps_total nodes_global_np2)" = 16 ] ||
  fail "nodes global: the restart did not replay the 16 committed steps"
[ "$(attr rollbacks_total link_np3)" = 0 ] || fail "link: a rollback"
[ "$(attr moves_restore_total link_np3)" = 6 ] || fail "link: /final@moves_restore_total is not 6"
"$report" "$work/link_np3.h5" >"$work/link.txt" || fail "link: the report"
grep -q "interrupted  1 times .*1 link" "$work/link.txt" ||
  fail "link: the report does not count 1 link interruption"
grep -q "4 out with their device's link" "$work/link.txt" ||
  fail "link: the report does not count the 4 units out with their link"
# The recounts need h5py (everything above does not): without it, one line saying so, exit 1.
py=$(af_python)
no_h5py=$(af_h5py) || { echo "$no_h5py" >&2; exit 1; }
"$py" - "$work" <<'PY' || fail "the replicas' and links' events"
import sys
import h5py
import numpy as np
work = sys.argv[1]
LINK = 12  # common/log_schema.h: appended after hbm
def rows(f, kind, step=None):
    ev = f["events"][:]
    return [r for r in ev if r["kind"].decode() == kind and (step is None or int(r["step"]) == step)]
for name, global_ in (("nodes_np3", False), ("nodes_global_np2", True)):
    f = h5py.File(f"{work}/{name}.h5", "r")
    per = 2
    # Step 15: the 12 replicas node 2 kept are those of node 0's blocks (devices 0 and 1), and
    # the event names the device that kept each (to_device).
    lost15 = rows(f, "replica_lost", 15)
    assert len(lost15) == 12, (name, len(lost15))
    assert {int(r["from_device"]) // per for r in lost15} == {0}, lost15
    assert all(int(r["to_device"]) == int(r["from_device"]) + 4 for r in lost15), lost15
    # Every replica taken or moved lives on another node than its block (to_device: where).
    for r in rows(f, "replica"):
        assert int(r["to_device"]) // per != int(r["from_device"]) // per, r
    # No restore ever reads a replica on the node that died with its block: every restore names
    # a replica step (detail >= 0), or the restart's 0 with a rollback in the same step.
    for r in rows(f, "restore"):
        assert int(r["detail"]) >= 0, r
    lost17 = rows(f, "replica_lost", 17)
    if global_:
        # Not taken again before step 17: node 0's blocks meet their lost replicas.
        assert not rows(f, "replica", 15) or all(int(r["block"]) not in
                                                  {int(x["block"]) for x in lost15}
                                                  for r in rows(f, "replica", 15))
        assert len(rows(f, "rollback", 17)) == 1
    else:
        # Taken again at the end of step 15, on a live node (not node 2).
        again = {int(r["block"]) for r in rows(f, "replica", 15)}
        assert {int(r["block"]) for r in lost15} <= again, (lost15, again)
        assert all(int(r["to_device"]) // per != 2 for r in rows(f, "replica", 15))
        assert not rows(f, "rollback")
    units = f["units/cause"][:]
    assert (units.reshape(8, -1)[[0, 1, 4, 5]] == 3).all() and (units.reshape(8, -1)[[2, 3, 6, 7]] == 0).all()
for name in ("link_np3", "rate_np3"):
    f = h5py.File(f"{work}/{name}.h5", "r")
    cause = f["units/cause"][:].reshape(8, -1)
    intr = f["interruptions"][:]
    linked = sorted(int(d) for d in np.nonzero((cause == 9).all(1) | (cause == 8).all(1))[0])
    # Every device whose units left with its link: one link row, at the step they died.
    got = sorted(int(r["device"]) for r in intr if int(r["cause"]) == LINK)
    assert got == linked and linked, (name, got, linked)
    assert ((cause == 0) | (cause == 8) | (cause == 9)).all(), cause
    if name == "link_np3":
        assert linked == [3] and (cause[3] == 9).all()
        assert [(int(r["step"]), int(r["device"]), int(r["node"])) for r in intr] == [(12, 3, 1)]
        # Device 3 kept device 7's blocks' replicas: lost at 12, taken again at its end.
        lost = rows(f, "replica_lost", 12)
        assert len(lost) == 6 and {int(r["from_device"]) for r in lost} == {7}, lost
        # Its blocks restored off device 3.
        rs = rows(f, "restore", 12)
        assert len(rs) == 6 and all(int(r["from_device"]) == 3 != int(r["to_device"]) for r in rs)
    else:
        assert 1 <= len(linked) <= 6, linked
PY
for name in link_np3 rate_np3 nodes_np3; do
  "$py" "$here/report_verify.py" "$report" "$work/$name.h5" || fail "$name: figures differ from numpy"
done
echo "PASS: node-aware replicas (two nodes lost, no rollback; global replay restarts) and links, 1 and 3 ranks"
