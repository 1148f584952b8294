#!/usr/bin/env bash
# The masked-attention workload through whole runs (docs/workloads.md):
#   attention.sh AGEFENCE REPORT MPIEXEC WORKDIR FAULTFREE_FIXTURE
#   - the embedded default scenario's aging (units fading, corrupting and dying to ~87%
#     blackout, a scripted kill, DMR, drains, restores replayed alone) with the attention
#     workload (16 tokens x 8 features a block) on 1, 2, 3 and 4 ranks: each run bitwise equal
#     to the serial reference, the four logs the same (`agefence-report --same`), corruptions
#     injected and every harmful one caught by a twin, nothing leaked, restores replayed alone;
#   - a shape the cpu backend's vector path takes (32 tokens x 16 features) on 2 ranks, and the
#     same with the global rollback (recovery.replay = global): bitwise equal;
#   - ABFT on the new kernel: with twins (abft+dmr) bitwise equal; alone, the softmax-row,
#     range and output-checksum checks credited with detections, no false alarm and no harmful
#     corruption committed (exit 0, or 3 when a benign one below the checks' reach was, as
#     the log explains); on the fault-free fixture (the vector path's 32 x 32 and the rows'
#     12 x 5) abft fences nothing;
#   - the attention step against NumPy's (tests/attention_numpy.py).
# Every run: a valid log, nothing allocated after start-up, no NaN/Inf leaked.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
agefence=$1 report=$2 mpiexec=$3 work=$4 faultfree=$5
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
small=(--set workload.kind=attention --set scenario.block_len=16 --set workload.dim=8)
wide=(--set workload.kind=attention --set scenario.block_len=32 --set workload.dim=16
      --set scenario.steps=400)
run() { # NAME NP ARGS...
  local name=$1 np=$2
  shift 2
  "$mpiexec" -n "$np" "$agefence" run -o "$work/$name.h5" "$@" \
    >"$work/$name.out" 2>&1 || { cat "$work/$name.out" >&2; fail "$name: exit status $?"; }
  "$report" --check "$work/$name.h5" >/dev/null || fail "$name: the log breaks the schema"
  why=$(af_clean_run "$report" "$work/$name.h5") || fail "$why"
  [ "$(attr bitwise_equal "$name")" = 1 ] || fail "$name: not bitwise equal to the reference"
  [ "$("$report" --attr / workload "$work/$name.h5")" = attention ] ||
    fail "$name: /@workload is not attention"
}
attr() { "$report" --attr /final "$1" "$work/$2.h5"; }
for np in 1 2 3 4; do
  run default_np$np "$np" "${small[@]}"
done
for np in 2 3 4; do
  "$report" --same "$work/default_np1.h5" "$work/default_np$np.h5" >/dev/null ||
    fail "default: 1 and $np ranks differ"
done
inj=$(attr corrupt_injected_total default_np2)
twin=$(attr detected_twin_total default_np2)
[ "$inj" -gt 0 ] || fail "default: no corruption injected"
[ "$twin" -gt 0 ] || fail "default: no corruption caught by a DMR twin"
[ "$(attr sdc_harmful_total default_np2)" = 0 ] || fail "default: a harmful corruption went unseen"
[ "$(attr replayed_blocks_total default_np2)" -gt 0 ] || fail "default: no restore replayed alone"
[ "$(attr rollbacks_total default_np2)" = 0 ] || fail "default: a rollback"
grep -q "16 tokens x 8 features (attention)" "$work/default_np2.out" ||
  fail "default: the summary does not name the workload's shape"
run wide_np2 2 "${wide[@]}"
grep -q "kernel attention .* rows of 8" "$work/wide_np2.out" ||
  fail "wide: the cpu backend did not take the vector path for 32 tokens"
run wide_global_np2 2 "${wide[@]}" --set recovery.replay=global
[ "$(attr rollbacks_total wide_global_np2)" -gt 0 ] || fail "wide global: no rollback to check"
[ "$(attr state_checksum wide_np2)" = "$(attr state_checksum wide_global_np2)" ] ||
  fail "wide: local and global replay end in different states"
# ABFT with twins: the twins see first (and are credited with) what both see, and catch the
# output corruptions that stay in [-1, 1]: bitwise equal.
run abft_dmr_np2 2 "${small[@]}" --set recovery.detect=abft+dmr
[ "$(attr abft_false_alarms_total abft_dmr_np2)" = 0 ] || fail "abft+dmr: false alarms"
# ABFT alone: it fences the corrupted softmax weights, the outputs pushed out of [-1, 1] and
# the output corruptions that stay inside (the row checksum), with no false alarm: nothing
# harmful is committed. A benign change lost in the checksum's rounding may be, and then the
# run ends in the honest exit 3 (tests/lib.sh af_sdc_mismatch).
"$mpiexec" -n 2 "$agefence" run -o "$work/abft_np2.h5" "${small[@]}" \
  --set recovery.detect=abft >"$work/abft_np2.out" 2>&1
rc=$?
if [ "$rc" = 3 ]; then
  why=$(af_sdc_mismatch "$report" "$work/abft_np2.h5") || fail "abft: $why"
elif [ "$rc" != 0 ]; then
  cat "$work/abft_np2.out" >&2
  fail "abft: exit $rc, expected 0 or 3"
fi
why=$(af_clean_run "$report" "$work/abft_np2.h5") || fail "abft: $why"
[ "$(attr detected_abft_total abft_np2)" -gt 0 ] || fail "abft: no detection credited to ABFT"
[ "$(attr abft_false_alarms_total abft_np2)" = 0 ] || fail "abft: false alarms"
[ "$(attr corrupt_harmful_total abft_np2)" -gt 0 ] || fail "abft: no harmful corruption injected"
[ "$(attr sdc_harmful_total abft_np2)" = 0 ] ||
  fail "abft: $(attr sdc_harmful_total abft_np2) harmful corruptions committed"
# ABFT on a fault-free fleet fences nothing: the checks raise no false alarm on the vector
# path (32 tokens) or on the rows (12 tokens, not a multiple of 8).
for shape in 32:32 12:5; do
  name=abft_faultfree_${shape/:/x}
  run "$name" 2 -c "$faultfree" --set workload.kind=attention \
    --set scenario.block_len=${shape%:*} --set workload.dim=${shape#*:} --set recovery.detect=abft
  [ "$(attr corrupt_injected_total "$name")" = 0 ] || fail "$name: corruptions injected"
  [ "$(attr fenced_total "$name")" = 0 ] || fail "$name: abft fenced a fault-free run"
  [ "$(attr abft_false_alarms_total "$name")" = 0 ] || fail "$name: abft false alarms"
done
py=
for p in /usr/bin/python3 python3; do
  if "$p" -c "import h5py, numpy" 2>/dev/null; then py=$p; break; fi
done
[ -n "$py" ] || fail "no python3 with h5py and numpy (scripts/setup.sh installs them)"
"$py" "$here/attention_numpy.py" "$agefence" "$mpiexec" "$work/numpy" "$faultfree" ||
  fail "the attention step differs from numpy's"
echo "PASS: attention on 1-4 ranks (aging, DMR, replay alone, global rollback, ABFT), against numpy"
