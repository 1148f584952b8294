#!/usr/bin/env bash
# One scenario on 1 and on 2 ranks: each run exits 0, bitwise equal to the reference, with a
# valid log of the ranks asked for, nothing leaked or allocated after start-up (tests/lib.sh);
# the two logs the same (`agefence-report --same`, checksum included), and so their goodput by
# replay. At most 2 ranks: the
# subset the MPICH build runs (.ci/run), where ranks beyond the cores spin.
#   same_ranks.sh AGEFENCE REPORT MPIEXEC WORKDIR [agefence run arguments]
set -uo pipefail
here=$(dirname "$0")
. "$here/lib.sh"
agefence=$1 report=$2 mpiexec=$3 work=$4
shift 4
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
for np in 1 2; do
  log=$work/n$np.h5
  "$mpiexec" -n "$np" "$agefence" run -q -o "$log" "$@" >"$work/out$np" 2>&1 ||
    { cat "$work/out$np" >&2; fail "np=$np: exit status $?"; }
  "$report" --check "$log" >/dev/null || fail "np=$np: the log breaks the schema"
  why=$(af_clean_run "$report" "$log") || fail "np=$np: $why"
  [ "$("$report" --attr / ranks "$log")" = "$np" ] || fail "np=$np: the log says another count"
  [ "$("$report" --attr /final bitwise_equal "$log")" = 1 ] ||
    fail "np=$np: not bitwise equal to the reference"
  echo "np=$np: checksum $("$report" --attr /final state_checksum "$log")"
done
"$report" --same "$work/n1.h5" "$work/n2.h5" || fail "1 and 2 ranks differ"
# The goodput by replay, a function of the log and the scenario: the same bit for bit (the
# JSON prints every real so that it reads back exactly).
for np in 1 2; do
  "$report" --json "$work/n$np.h5" | /usr/bin/python3 -c '
import json, sys
g = json.load(sys.stdin)["goodput"]
assert g["checkpoint_restart"]["ettr"] is not None, g["why"]
print(json.dumps(g, sort_keys=True))' >"$work/goodput$np.json" || fail "np=$np: no goodput"
done
cmp -s "$work/goodput1.json" "$work/goodput2.json" || fail "1 and 2 ranks give another goodput"
echo "PASS: 1 and 2 ranks bitwise equal to the reference and the same, goodput included"
