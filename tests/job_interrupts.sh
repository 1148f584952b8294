#!/usr/bin/env bash
# Job-level interruptions (sim/fleet/jobintr.h) through whole runs:
#   job_interrupts.sh AGEFENCE REPORT MPIEXEC WORKDIR FIXTURE
# A fleet that does not age by itself, with job-level rates of every grain and scripted
# interrupts, run on 1 and 3 ranks: the same history (--same), a valid log, no unit killed and
# no block moved by them, the scripted ones at their step, cause and place, and the report's
# counts by cause equal to a recount of /events (tests/report_verify.py; without h5py the script
# fails, after the rest).
# Then a node and a device killed under high node and device rates: no interruption on them
# after their death, the same on 1 and 3 ranks.
# A bad rate is one line naming its key, exit 2 (run as a singleton, so that only agefence
# speaks).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
agefence=$1 report=$2 mpiexec=$3 work=$4 fixture=$5
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
args=(-c "$fixture" --set scenario.steps=80 --set scenario.devices_per_node=2
      --set aging.sim_hours_per_step=10
      --set interrupt.software_per_hour=0.01 --set interrupt.network_per_node_hour=0.002
      --set interrupt.nic_per_node_hour=0.001 --set interrupt.nccl_watchdog_per_hour=0.005
      --set interrupt.sdc_per_device_hour=0.001 --set interrupt.dependency_per_hour=0.002
      --set event.1.step=5 --set event.1.action=interrupt --set event.1.cause=nic
      --set event.1.node=1 --set event.2.step=5 --set event.2.action=interrupt
      --set event.2.cause=dependency --set event.3.step=30 --set event.3.action=interrupt
      --set event.3.cause=sdc --set event.3.device=7)
for np in 1 3; do
  "$mpiexec" -n "$np" "$agefence" run -q -o "$work/np$np.h5" "${args[@]}" \
    >"$work/np$np.out" 2>&1 || { cat "$work/np$np.out" >&2; fail "np=$np: exit status $?"; }
  "$report" --check "$work/np$np.h5" >/dev/null || fail "np=$np: the log breaks the schema"
  why=$(af_clean_run "$report" "$work/np$np.h5") || fail "$why"
done
"$report" --same "$work/np1.h5" "$work/np3.h5" || fail "1 and 3 ranks differ"
log=$work/np3.h5
# The fleet does not age: no unit died, no block moved, however many interruptions.
for a in moves_drain_total moves_restore_total rollbacks_total; do
  [ "$("$report" --attr /final "$a" "$log")" = 0 ] || fail "/final@$a is not 0"
done
"$report" --json "$log" >"$work/report.json" || fail "--json"
"$report" "$log" >"$work/report.txt" || fail "the report"
grep -q "interrupted .* nic" "$work/report.txt" || fail "the report's interruptions lack nic"
# The recounts need h5py: without it the rest runs, and the script then fails saying so.
py=$(af_python)
no_h5py=$(af_h5py)
if [ -z "$no_h5py" ]; then
  "$py" - "$log" "$work/report.json" <<'PY' || fail "the scripted interrupts or the counts"
import json, sys
import h5py
f = h5py.File(sys.argv[1], "r")
rep = json.load(open(sys.argv[2]))
ev = f["events"][:]
rows = [r for r in ev if r["kind"].decode() == "interrupt"]
assert len(rows) == len(ev), "only interrupt events in a fleet that does not age"
names = ["wearout", "sudden", "scripted", "device", "node", "software", "network", "nic",
         "nccl_watchdog", "sdc", "dependency"]
at = lambda s: [(names[int(r["detail"])], int(r["from_device"])) for r in rows if r["step"] == s]
# Scripted first at their step, in the events' order: nic at node 1 (devices 2, 3), dependency
# for the job; sdc at device 7.
assert at(5)[:2] == [("nic", 2), ("dependency", -1)], at(5)
assert at(30)[0] == ("sdc", 7), at(30)
for r in rows:
    assert r["block"] == -1 and r["from_unit"] == -1 and r["to_device"] == -1
    assert 5 <= int(r["detail"]) <= 10
by = rep["interruptions"]["by_cause"]
assert rep["interruptions"]["total"] == len(rows)
for i, n in enumerate(names):
    assert by[n] == sum(1 for r in rows if int(r["detail"]) == i), n
# Drawn ones too, beyond the 3 scripted: rates x 800 h expect about 22.
assert len(rows) > 8, len(rows)
# /interruptions has each one's time as drawn (hours), inside the step that took it (10 hours a
# step): the scripted ones at their step's end, exactly; the drawn ones strictly inside theirs.
it = f["interruptions"][:]
assert len(it) == len(rows), (len(it), len(rows))
inside = 0
for r in it:
    s, t = int(r["step"]), float(r["time_h"])
    assert 10.0 * (s - 1) < t <= 10.0 * s, (s, t)
    inside += t < 10.0 * s
for s, k in ((5, 0), (5, 1), (30, 0)):
    r = [x for x in it if int(x["step"]) == s][k]
    assert float(r["time_h"]) == 10.0 * s, (s, k, float(r["time_h"]))
assert inside >= len(it) - 3, (inside, len(it))
PY
  "$py" "$here/report_verify.py" "$report" "$log" || fail "figures differ from numpy"
  # A log written before /interruptions had time_h (the same table less that field) still
  # checks and reports, its interruptions counted alike, and the report says once that their
  # times are their steps' hours.
  cp "$log" "$work/notime.h5"
  "$py" - "$work/notime.h5" <<'PY' || fail "could not write the log without time_h"
import sys
import h5py
import numpy as np
f = h5py.File(sys.argv[1], "r+")
rows = f["interruptions"][:]
attrs = dict(f["interruptions"].attrs)
names = [n for n in rows.dtype.names if n != "time_h"]
old = np.dtype([(n, rows.dtype[n]) for n in names])
del f["interruptions"]
d = f.create_dataset("interruptions", data=rows[names].astype(old), maxshape=(None,), chunks=(256,))
for k, v in attrs.items():
    d.attrs[k] = v
PY
  "$report" --check "$work/notime.h5" >/dev/null || fail "a log without time_h breaks the schema"
  "$report" --json "$work/notime.h5" >"$work/notime.json" || fail "--json on a log without time_h"
  "$py" - "$work/notime.json" "$work/report.json" <<'PY' || fail "the report of a log without time_h"
import json, sys
old, new = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
said = [m for m in old["missing"] if "no time_h" in m]
assert len(said) == 1, old["missing"]
assert not any("no time_h" in m for m in new["missing"]), new["missing"]
assert old["interruptions"] == new["interruptions"], (old["interruptions"], new["interruptions"])
PY
fi
# Dead hardware interrupts nothing (sim/fleet/jobintr.h): node 1 (devices 2 and 3) killed at step 10
# and device 6 at step 20, then every node- and device-grain cause at rates that strike the
# dead ones often (a third of the draws), and scripted interrupts at step 30 on dead device 6
# and dead node 1 (dropped) and on live device 7 (kept); on 1 and 3 ranks: the same log, and in
# /interruptions (read with h5dump, no h5py needed) the kills' rows, no job-level or hbm row on
# a dead member from its death on, some on live ones after it, and the report's count equal to
# the table's.
dead=(-c "$fixture" --set scenario.steps=80 --set scenario.devices_per_node=2
      --set aging.sim_hours_per_step=10 --set interrupt.software_per_hour=0.01
      --set interrupt.network_per_node_hour=0.01 --set interrupt.nic_per_node_hour=0.01
      --set interrupt.sdc_per_device_hour=0.005 --set aging.hbm_rate_per_hour=0.002
      --set event.1.step=10 --set event.1.action=kill_node --set event.1.node=1
      --set event.2.step=20 --set event.2.action=kill_device --set event.2.device=6
      --set event.3.step=30 --set event.3.action=interrupt --set event.3.cause=sdc
      --set event.3.device=6 --set event.4.step=30 --set event.4.action=interrupt
      --set event.4.cause=nic --set event.4.node=1 --set event.5.step=30
      --set event.5.action=interrupt --set event.5.cause=sdc --set event.5.device=7)
command -v h5dump >/dev/null || fail "h5dump (hdf5-tools, scripts/setup.sh) is not on PATH"
for np in 1 3; do
  "$mpiexec" -n "$np" "$agefence" run -q -o "$work/dead_np$np.h5" "${dead[@]}" \
    >"$work/dead_np$np.out" 2>&1 || { cat "$work/dead_np$np.out" >&2; fail "dead, np=$np: exit $?"; }
  "$report" --check "$work/dead_np$np.h5" >/dev/null || fail "dead, np=$np: the log breaks the schema"
  why=$(af_clean_run "$report" "$work/dead_np$np.h5") || fail "$why"
  [ "$("$report" --attr /final bitwise_equal "$work/dead_np$np.h5")" = 1 ] ||
    fail "dead, np=$np: not bitwise equal to the reference"
done
"$report" --same "$work/dead_np1.h5" "$work/dead_np3.h5" || fail "dead: 1 and 3 ranks differ"
# /interruptions, a row a line: step sim_hours cause device node time_h (h5dump -o writes
# the data alone).
h5dump -d /interruptions -y -w 0 -o "$work/dead_rows.txt" "$work/dead_np3.h5" >/dev/null ||
  fail "h5dump cannot read /interruptions"
grep -oE -- '-?[0-9][0-9.eE+-]*' "$work/dead_rows.txt" | paste - - - - - - >"$work/dead_rows.tsv"
nrows=$(wc -l <"$work/dead_rows.tsv")
# The kills' own rows (cause 2, scripted: one per device), and the scripted sdc on device 7.
for want in "10 2 2 1" "10 2 3 1" "20 2 6 3" "30 9 7 3"; do
  awk -v w="$want" '$1 " " $3 " " $4 " " $5 == w { n++ } END { exit n != 1 }' \
    "$work/dead_rows.tsv" || fail "dead: not one /interruptions row (step cause device node) $want"
done
on_dead=$(awk '$3 >= 5 && $3 <= 11 && (($5 == 1 && $1 >= 10) || ($4 == 6 && $1 >= 20))' \
  "$work/dead_rows.tsv")
[ -z "$on_dead" ] || fail "interruptions on dead hardware (step sim_hours cause device node): $on_dead"
on_live=$(awk '$3 >= 5 && $3 <= 11 && $1 > 30 && ($4 >= 0 || $5 >= 0)' "$work/dead_rows.tsv" |
  wc -l)
[ "$on_live" -ge 10 ] || fail "dead: $on_live node- or device-grain interruptions after step 30"
"$report" "$work/dead_np3.h5" >"$work/dead_report.txt" || fail "dead: the report"
grep -q "^  interrupted  $nrows times" "$work/dead_report.txt" ||
  fail "dead: the report does not count the table's $nrows interruptions"
# The preset names its record: the report sets the first 3 days beside it, scaled (72 of
# 1,296 hours), and numpy (and scipy's chi-square, when there) recount it; --record overrides.
"$mpiexec" -n 2 "$agefence" run -q -o "$work/preset.h5" \
  -c "$here/../configs/presets/llama3-54d.ini" --set scenario.steps=72 >"$work/preset.out" 2>&1 ||
  { cat "$work/preset.out" >&2; fail "the preset's 3 days"; }
"$report" "$work/preset.h5" >"$work/preset.txt" || fail "the preset's report"
grep -q "^THE RECORD   llama3-405b: " "$work/preset.txt" || fail "no record beside the preset"
grep -q "scaled       to this run's 72 simulated hours" "$work/preset.txt" ||
  fail "the record is not scaled to the run's hours"
grep -Eq "^  all +23.28 " "$work/preset.txt" || fail "the record's 419 x 72 / 1296 = 23.28"
# (Into files, not into grep -q: grep leaving early would end the report with SIGPIPE, which
# pipefail reports as the pipeline's failure.)
"$report" --record none "$work/preset.h5" >"$work/none.txt" || fail "--record none: exit $?"
grep -q "THE RECORD" "$work/none.txt" && fail "--record none"
"$report" --record llama3-405b "$log" >"$work/other.txt" || fail "--record on another run: exit $?"
grep -q "^THE RECORD" "$work/other.txt" || fail "--record on another run"
"$report" --record llama3 "$log" >/dev/null 2>"$work/record.err"
[ $? = 2 ] && grep -q "expected none or one of llama3-405b" "$work/record.err" ||
  fail "an unknown --record"
if [ -z "$no_h5py" ]; then
  "$py" "$here/report_verify.py" "$report" "$work/preset.h5" || fail "the preset's figures"
  "$py" "$here/report_verify.py" "$report" "$log" --record llama3-405b || fail "--record figures"
fi
# Bad input: a rate out of range, a rate too high for the step, an unknown key.
for bad in interrupt.software_per_hour=-1 interrupt.sdc_per_device_hour=0.9 interrupt.nope=1; do
  "$agefence" run -q -o "$work/bad.h5" -c "$fixture" --set aging.sim_hours_per_step=10 \
    --set "$bad" >"$work/bad.out" 2>&1
  rc=$?
  [ "$rc" = 2 ] || fail "--set $bad: exit $rc, expected 2"
  key=${bad%%=*}
  grep -q "${key#interrupt.}" "$work/bad.out" || fail "--set $bad: the error does not name $key"
  [ "$(grep -c . "$work/bad.out")" = 1 ] || { cat "$work/bad.out"; fail "--set $bad: not one line"; }
done
[ -z "$no_h5py" ] || { echo "$no_h5py" >&2; exit 1; }
echo "PASS: job-level interruptions on 1 and 3 ranks"
