#!/usr/bin/env bash
# The same scenario and seed (the same fleet) on 1, 2, 3 and 4 ranks: identical /steps,
# /events, /units and /final, checksum included (agefence-report --same; timings aside), whatever
# the run's end. Two scenarios: SCENARIO on 12 devices, and the embedded default on 6 devices,
# which runs out of capacity (exit 4) after retries that re-home blocks into slots other
# blocks of the same batch have just left: an exhausted run is compared like any other, and
# at least one run here must end that way. Every run also leaks no NaN/Inf and allocates
# nothing and creates no communicator after start-up (tests/lib.sh).
#   determinism.sh AGEFENCE REPORT MPIEXEC WORKDIR SCENARIO
set -uo pipefail
here=$(dirname "$0")
. "$here/lib.sh"
agefence=$1 report=$2 mpiexec=$3 work=$4 scenario=$5
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
exhausted=0
# NAME SETTINGS...: the scenario on 1-4 ranks, then the comparison.
across_ranks() {
  local name=$1 np rc why
  shift
  for np in 1 2 3 4; do
    "$mpiexec" -n "$np" "$agefence" run -q "$@" -o "$work/$name.n$np.h5" \
      >"$work/$name.out$np" 2>&1
    rc=$?
    if [ "$rc" = 3 ]; then
      why=$(af_sdc_mismatch "$report" "$work/$name.n$np.h5") || fail "$name np=$np: $why"
      # A mismatch that then ran out of capacity compares the exhausted path too.
      "$report" --attr /final exhausted_why "$work/$name.n$np.h5" >/dev/null 2>&1 &&
        [ "$np" = 1 ] && exhausted=$((exhausted + 1))
    elif [ "$rc" != 0 ] && [ "$rc" != 4 ]; then
      cat "$work/$name.out$np"
      fail "$name np=$np: exit $rc"
    fi
    "$report" --check "$work/$name.n$np.h5" >/dev/null || fail "$name np=$np: the log breaks the schema"
    why=$(af_clean_run "$report" "$work/$name.n$np.h5") || fail "$name np=$np: $why"
    if [ "$rc" = 4 ]; then
      [ "$("$report" --attr /final exit_reason "$work/$name.n$np.h5")" = capacity_exhausted ] ||
        fail "$name np=$np: exit 4 without exit_reason = capacity_exhausted"
      [ "$np" = 1 ] && exhausted=$((exhausted + 1))
    fi
  done
  for np in 2 3 4; do
    "$report" --same "$work/$name.n$np.h5" "$work/$name.n1.h5" ||
      fail "$name: $np ranks computed another run than 1 rank"
  done
  echo "ok   $name: exit $rc on 1-4 ranks, $("$report" --attr /final steps_completed \
    "$work/$name.n1.h5") steps, identical logs"
}
across_ranks small -c "$scenario" --set scenario.devices=12
across_ranks default_dev6 --set scenario.devices=6 --set scenario.seed=1
# Every rank ages its own devices' units and the ranks merge their scripted changes in the
# events' order, not the ranks': four events of one step, on the last device, the first (a
# fade, then a kill of the same unit) and one in the middle.
across_ranks scripted_order -c "$scenario" --set scenario.devices=12 \
  --set event.1.step=40 --set event.1.device=11 \
  --set event.2.step=40 --set event.2.action=fade --set event.2.device=0 --set event.2.units=2 \
  --set event.3.step=40 --set event.3.action=kill --set event.3.device=0 --set event.3.units=1-2 \
  --set event.4.step=40 --set event.4.action=kill --set event.4.device=6 --set event.4.units=3
# The order itself, on 4 ranks (devices 0-2, 3-5, 6-8, 9-11): the events' order.
order=$(/usr/bin/python3 -c '
import sys, h5py
e = h5py.File(sys.argv[1], "r")["events"][()]
e = e[e["step"] == 40][:6]
print(" ".join("%s:%d.%d" % (r["kind"].decode(), r["from_device"], r["from_unit"]) for r in e))
' "$work/scripted_order.n4.h5") || fail "scripted_order: cannot read the events"
want="death:11.0 death:11.1 fade:0.2 death:0.1 death:0.2 death:6.3"
[ "$order" = "$want" ] || fail "scripted_order: step 40 logged '$order', the events' order is '$want'"
echo "ok   scripted_order: the changes of step 40 in the events' order on 4 ranks: $order"
[ "$exhausted" -ge 1 ] || fail "no scenario ran out of capacity: the exhausted path was not compared"
echo "PASS: identical runs on 1-4 ranks ($exhausted scenario(s) ending with capacity exhausted)"
