#!/usr/bin/env bash
# The detectors of recovery.detect (docs/corruption.md) on whole runs:
# - sampled: in any sample_period consecutive steps every block is twinned exactly once (the
#   /steps/twins of a fault-free fleet, on 1 and 3 ranks), and nothing is fenced;
# - abft: a fault-free run fences nothing; on the default scenario, for several seeds, it
#   raises no false alarm (no result fenced with nothing injected into it) and lets no harmful
#   corruption through (the exit status then says whether a benign one was committed);
# - quarantine: on a fleet with silent units under abft, units are declared suspect, each of
#   them is a silent unit (abft fences only corrupted results), each has one suspect event,
#   no move targets it afterwards, and blocks are drained off quarantined units (a unit whose
#   last block a retry already moved away has nothing left to drain).
# The twins' and the quarantine's recounts need h5py (tests/lib.sh, af_h5py): without it the
# rest runs, and the script then fails with one line saying so.
#   detectors.sh AGEFENCE REPORT MPIEXEC WORKDIR FAULTFREE_SCENARIO
set -uo pipefail
here=$(dirname "$0")
. "$here/lib.sh"
agefence=$1 report=$2 mpiexec=$3 work=$4 faultfree=$5
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
# The recounts need h5py: without it everything else runs, and the script then fails saying so.
py=$(af_python)
no_h5py=$(af_h5py)
attr() { "$report" --attr /final "$1" "$2"; }

# NAME NP SETTINGS...: one run; its exit status in $rc, its log $work/NAME.h5, checked.
run() {
  local name=$1 np=$2
  shift 2
  "$mpiexec" -n "$np" "$agefence" run "$@" -o "$work/$name.h5" \
    >"$work/$name.out" 2>&1
  rc=$?
  "$report" --check "$work/$name.h5" >"$work/$name.check" 2>&1 ||
    fail "$name: --check: $(head -3 "$work/$name.check")"
  why=$(af_clean_run "$report" "$work/$name.h5") || fail "$name: $why"
}

for np in 1 3; do
  run sampled_np$np $np -c "$faultfree" --set recovery.detect=sampled \
    --set recovery.sample_fraction=0.25
  [ "$rc" = 0 ] || fail "sampled np=$np: exit $rc: $(tail -3 "$work/sampled_np$np.out")"
  [ "$(attr fenced_total "$work/sampled_np$np.h5")" = 0 ] || fail "sampled np=$np: fenced a clean run"
  [ -n "$no_h5py" ] && continue
  "$py" - "$work/sampled_np$np.h5" <<'PY' || fail "sampled np=$np: a block missed its turn"
import sys
import h5py
f = h5py.File(sys.argv[1], "r")
twins = f["steps"]["twins"][:]
blocks = int(f.attrs["blocks"])
period = 4  # ceil(1 / 0.25)
sums = [int(twins[i:i + period].sum()) for i in range(len(twins) - period + 1)]
bad = [i for i, s in enumerate(sums) if s != blocks]
print(f"     {len(twins)} steps, {int(twins.sum())} twins: every {period} steps twin "
      f"{sorted(set(sums))} of {blocks} blocks")
sys.exit(1 if bad or not sums else 0)
PY
done

run abft_faultfree 2 -c "$faultfree" --set recovery.detect=abft
[ "$rc" = 0 ] || fail "abft fault-free: exit $rc"
[ "$(attr fenced_total "$work/abft_faultfree.h5")" = 0 ] || fail "abft fenced a fault-free run"

for seed in 1 2 3; do
  name=abft_default_seed$seed
  run $name 2 --set recovery.detect=abft --set scenario.seed=$seed
  log=$work/$name.h5
  [ "$(attr abft_false_alarms_total "$log")" = 0 ] ||
    fail "$name: $(attr abft_false_alarms_total "$log") abft false alarms"
  [ "$(attr sdc_harmful_total "$log")" = 0 ] ||
    fail "$name: $(attr sdc_harmful_total "$log") harmful corruptions committed"
  [ "$(attr detected_abft_total "$log")" -gt 0 ] || fail "$name: abft detected nothing"
  if [ "$rc" = 3 ]; then
    why=$(af_sdc_mismatch "$report" "$log") || fail "$name: $why"
  elif [ "$rc" != 0 ]; then
    fail "$name: exit $rc"
  fi
  echo "ok   $name: exit $rc, $(attr detected_abft_total "$log") caught by abft," \
    "$(attr sdc_undetected_total "$log") benign committed, 0 harmful, 0 false alarms"
done

# Exponent-reaching corruptions (values up to 1e300, energies near DBL_MAX) with silent units
# under abft and sampled twins: every one is caught, nothing is committed, no false alarm, and
# the run is bitwise equal (a bound that overflowed once passed a value of 1e154).
run exponent 2 --set recovery.detect=abft+sampled --set corruption.silent_fraction=0.03 \
  --set corruption.single_bit=0 --set corruption.multi_mantissa=0 \
  --set corruption.multi_exponent=0.99
log=$work/exponent.h5
[ "$rc" = 0 ] || fail "exponent: exit $rc: $(tail -3 "$work/exponent.out")"
[ "$(attr sdc_undetected_total "$log")" = 0 ] || fail "exponent: a corruption got through"
[ "$(attr abft_false_alarms_total "$log")" = 0 ] || fail "exponent: abft false alarms"
[ "$(attr detected_abft_total "$log")" -gt 100 ] || fail "exponent: abft caught too few"
echo "ok   exponent: $(attr corrupt_injected_total "$log") injected, all caught" \
  "($(attr detected_abft_total "$log") by abft), bitwise equal"

# Silent units under finite alone: committed, and the summary, the exit status and --check say so.
run silent_finite 2 -c "$faultfree" --set corruption.silent_fraction=0.15 \
  --set corruption.silent_p=2e-3
log=$work/silent_finite.h5
[ "$rc" = 3 ] || fail "silent_finite: exit $rc, expected 3"
why=$(af_sdc_mismatch "$report" "$log") || fail "silent_finite: $why"
sdc=$(attr sdc_undetected_total "$log")
harm=$(attr sdc_harmful_total "$log")
grep -q "finite undetected ($harm harmful, $((sdc - harm)) benign)" "$work/silent_finite.out" ||
  fail "silent_finite: the summary does not say $sdc undetected, $harm harmful"
grep -q "the run committed $sdc corruptions no detector saw ($harm harmful)" \
  "$work/silent_finite.check" || fail "silent_finite: --check does not say what was committed"
echo "ok   silent_finite: exit 3, $sdc committed ($harm harmful), as the summary and --check say"

run quarantine 2 -c "$faultfree" --set recovery.detect=abft \
  --set corruption.silent_fraction=0.15 --set corruption.silent_p=2e-3
log=$work/quarantine.h5
[ "$(attr quarantined_units_total "$log")" -gt 0 ] || fail "quarantine: no unit declared suspect"
[ -z "$no_h5py" ] || { echo "$no_h5py"; exit 1; }
"$py" - "$log" <<'PY' || fail "quarantine: see above"
import sys
import h5py
f = h5py.File(sys.argv[1], "r")
u = f["units"]
silent, qstep = u["silent"][:], u["quarantined_step"][:]
first = u["first_corrupt_step"][:]
upd = int(f.attrs["units_per_device"])
ev = f["events"][:]
kinds = [k.decode() for k in ev["kind"]]
bad = 0
drained = 0
quarantined = [int(i) for i in (qstep >= 0).nonzero()[0]]
for unit in quarantined:
    dev, k = unit // upd, unit % upd
    if not silent[unit]:
        print(f"     unit {unit}: quarantined at step {qstep[unit]} but not silent")
        bad += 1
    if first[unit] < 0 or first[unit] > qstep[unit]:
        print(f"     unit {unit}: quarantined at {qstep[unit]}, first corruption {first[unit]}")
        bad += 1
    sus = [i for i, kind in enumerate(kinds) if kind == "suspect"
           and ev["from_device"][i] == dev and ev["from_unit"][i] == k]
    drained += sum(1 for i, kind in enumerate(kinds) if kind == "drain"
                   and ev["from_device"][i] == dev and ev["from_unit"][i] == k
                   and ev["step"][i] >= qstep[unit])
    into = [i for i in range(len(kinds)) if ev["to_device"][i] == dev and ev["to_unit"][i] == k
            and ev["step"][i] > qstep[unit]]
    if len(sus) != 1 or into:
        print(f"     unit {unit}: {len(sus)} suspect events, {len(into)} moves into it after")
        bad += 1
print(f"     {len(quarantined)} of {int(silent.sum())} silent units quarantined, each with its "
      f"suspect event and no move into it afterwards; {drained} blocks drained off them")
sys.exit(1 if bad or drained == 0 else 0)
PY
echo "ok   detectors: sampled coverage, abft without false alarms, quarantine of silent units"
