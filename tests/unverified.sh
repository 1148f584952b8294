#!/usr/bin/env bash
# DMR with no room left for twins (docs/recovery.md, "Kernel"; docs/corruption.md): a 7-device fleet of the default
# scenario on 3 ranks runs out of healthy units in its last steps. Blocks of FADING units are
# then committed without a twin; the run must count them (/steps/unverified_commits,
# /final@unverified_commits_total, the summary line), every finite corruption that got through
# must lie in a step with unverified commits (DMR lets nothing else through), and --check must
# pass (the total is the column's sum). The same fleet with room to spare (8 devices, the
# default) commits nothing unverified.
#   unverified.sh AGEFENCE REPORT MPIEXEC WORKDIR
set -uo pipefail
here=$(dirname "$0")
. "$here/lib.sh"
agefence=$1 report=$2 mpiexec=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
# The recount of the steps needs h5py (tests/lib.sh): without it the rest runs, and the script
# then fails saying so.
py=$(af_python)
no_h5py=$(af_h5py)

"$mpiexec" -n 3 "$agefence" run --set scenario.devices=7 -o "$work/d7.h5" \
  >"$work/d7.out" 2>&1
rc=$?
# The unchecked commits carry finite corruptions (the default mix is ~99% finite), and the run
# then runs out of capacity: it ends as a mismatch (exit 3) that says both.
[ "$rc" = 3 ] || fail "7 devices: exit $rc, expected 3 (finite corruption committed): $(tail -3 "$work/d7.out")"
why=$(af_sdc_mismatch "$report" "$work/d7.h5") || fail "7 devices: $why"
"$report" --attr /final exhausted_why "$work/d7.h5" >/dev/null ||
  fail "7 devices: no /final@exhausted_why: the run did not run out of capacity"
"$report" --check "$work/d7.h5" >"$work/d7.check" 2>&1 || fail "--check: $(cat "$work/d7.check")"
af_clean_run "$report" "$work/d7.h5" || fail "7 devices: a promise broken"
total=$("$report" --attr /final unverified_commits_total "$work/d7.h5")
[ "${total:-0}" -gt 0 ] || fail "7 devices: unverified_commits_total = '$total', expected > 0"
grep -q "^  unverified     $total block results" "$work/d7.out" ||
  fail "the summary does not say $total unverified commits: $(grep unverified "$work/d7.out")"
[ -n "$no_h5py" ] ||
  "$py" - "$work/d7.h5" <<'PY' || fail "7 devices: finite corruptions outside unverified steps"
import sys
import h5py
s = h5py.File(sys.argv[1], "r")["steps"]
u, d = s["unverified_commits"][:], s["sdc_undetected"][:]
bad = ((d > 0) & (u == 0)).nonzero()[0]
print(f"     {int(u.sum())} unverified commits in {int((u > 0).sum())} steps; "
      f"{int(d.sum())} finite corruptions in {int((d > 0).sum())} steps, "
      f"{len(bad)} of them in steps without an unverified commit")
sys.exit(1 if len(bad) else 0)
PY
"$mpiexec" -n 2 "$agefence" run -o "$work/d8.h5" >"$work/d8.out" 2>&1 ||
  fail "8 devices: exit $?"
[ "$("$report" --attr /final unverified_commits_total "$work/d8.h5")" = 0 ] ||
  fail "8 devices: unverified commits with room for twins"
[ -z "$no_h5py" ] || { echo "$no_h5py"; exit 1; }
echo "ok   7 devices: $total unverified commits counted, every finite corruption among them;" \
  "8 devices: none"
