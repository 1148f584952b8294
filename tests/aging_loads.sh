#!/usr/bin/env bash
# The aging model reads only the loads the placement lists as changed: under
# AGEFENCE_DEBUG=agingloads every step compares, for every live unit, the load its rate was
# computed for with the placement's, so a load change the list missed (a move path that does
# not go through af_placement_move, or a DMR reservation not released within the step) is
# reported. Under AGEFENCE_DEBUG=coorddir every target search beyond a block's own device that
# the placement's free-capacity directory answers is answered by a scan of every unit too, so a
# load or state change the directory missed is reported. Two scenarios with drains, restores,
# rollbacks, retries and DMR twins: SCENARIO, and the embedded default with sudden deaths, which
# ends with capacity exhausted (exit 4) after many searches beyond the own device.
#   aging_loads.sh AGEFENCE REPORT MPIEXEC WORKDIR SCENARIO
set -uo pipefail
agefence=$1 report=$2 mpiexec=$3 work=$4 scenario=$5
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
# NAME SETTINGS...: one run on 2 ranks, its stderr searched for the check's report.
checked() {
  local name=$1 rc moves
  shift
  AGEFENCE_DEBUG=agingloads,coorddir "$mpiexec" -n 2 "$agefence" run -q "$@" \
    -o "$work/$name.h5" >"$work/$name.out" 2>&1
  rc=$?
  if [ "$rc" != 0 ] && [ "$rc" != 4 ]; then
    tail -5 "$work/$name.out"
    fail "$name: exit $rc"
  fi
  if grep -q "agingloads:" "$work/$name.out"; then
    grep "agingloads:" "$work/$name.out" | head -5
    fail "$name: the aging model aged units at a load the placement no longer held"
  fi
  if grep -q "coorddir:" "$work/$name.out"; then
    grep "coorddir:" "$work/$name.out" | head -5
    fail "$name: the free-capacity directory and the scan chose different units"
  fi
  moves=$(("$("$report" --attr /final moves_drain_total "$work/$name.h5")" +
           "$("$report" --attr /final moves_restore_total "$work/$name.h5")"))
  [ "$moves" -gt 0 ] || fail "$name: no moves, so no load changed: the check saw nothing"
  # Moves to another device came from searches beyond the own device: the directory answered.
  away=$(/usr/bin/python3 -c '
import sys, h5py
e = h5py.File(sys.argv[1], "r")["events"][()]
m = e[(e["to_device"] >= 0) & (e["to_device"] != e["from_device"])]
print(len(m))
' "$work/$name.h5") || fail "$name: cannot read the events"
  [ "$away" -gt 0 ] || fail "$name: no move left its device: the directory was never asked"
  echo "ok   $name: exit $rc, $moves drains and restores, every load the model used was current;" \
    "$away moves to another device, every directory answer the scan's"
}
checked small -c "$scenario"
checked default_sudden --set aging.sudden_rate_per_hour=1e-5
