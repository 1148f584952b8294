#!/usr/bin/env bash
# agefence under `mpirun --hostfile`, the multi-node launch without a scheduler (docs/clusters.md),
# on a hostfile of this machine alone ("localhost slots=N"):
#   1. `mpirun --hostfile F -np N`: a run checked through its log by run_case.sh (exit 0, schema,
#      bitwise equal, no allocation after start-up, nothing leaked), with N ranks logged;
#   2. `mpirun --hostfile F` without -np: Open MPI starts one rank per slot, N again;
#   3. `-np N+1` without oversubscription: Open MPI refuses (not enough slots), which shows that
#      the hostfile, not the number of cores, decided the layout; no log is left.
#   hostfile.sh AGEFENCE REPORT MPIEXEC WORKDIR RUN_CASE SCENARIO [SLOTS]
set -uo pipefail
. "$(dirname "$0")/lib.sh"
# The hostfile may claim more slots than this machine has cores: ranks that spin while they wait
# would then starve each other, so they yield (Open MPI does that itself when oversubscribed).
export OMPI_MCA_mpi_yield_when_idle=1
agefence=$1 report=$2 mpiexec=$3 work=$4 run_case=$5 scenario=$6 slots=${7:-3}
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$work" && mkdir -p "$work"
hostfile=$work/hostfile
echo "localhost slots=$slots" >"$hostfile"

# run_case.sh calls `MPIEXEC -n N --oversubscribe ...`: this wrapper adds the hostfile and drops
# the oversubscription (and the CTest environment's), so the slots of the hostfile are the limit.
wrapper=$work/mpiexec-hostfile
cat >"$wrapper" <<EOF
#!/usr/bin/env bash
args=()
for a in "\$@"; do
  [ "\$a" = --oversubscribe ] || args+=("\$a")
done
exec env -u OMPI_MCA_rmaps_base_oversubscribe "$mpiexec" --hostfile "$hostfile" "\${args[@]}"
EOF
chmod +x "$wrapper"

echo "== 1. mpirun --hostfile ($(cat "$hostfile")) -np $slots"
bash "$run_case" "$agefence" "$report" "$wrapper" "$work/np" "np=$slots" \
  "check=/@ranks=$slots" -- -c "$scenario" || fail "the run under mpirun --hostfile"

echo "== 2. mpirun --hostfile without -np: one rank per slot"
log=$work/slots.h5
env -u OMPI_MCA_rmaps_base_oversubscribe "$mpiexec" --hostfile "$hostfile" "$agefence" run -q \
  -o "$log" -c "$scenario" >"$work/slots.out" 2>&1
rc=$?
[ "$rc" = 0 ] || { cat "$work/slots.out" >&2; fail "exit status $rc, expected 0"; }
"$report" --check "$log" >/dev/null || fail "$log breaks the schema"
ranks=$("$report" --attr / ranks "$log") || fail "no ranks attribute"
[ "$ranks" = "$slots" ] || fail "ranks = $ranks, expected one per slot ($slots)"
[ "$("$report" --attr /final bitwise_equal "$log")" = 1 ] || fail "not bitwise equal"
why=$(af_clean_run "$report" "$log") || fail "$why"
echo "PASS: $ranks ranks from the hostfile's slots"

echo "== 3. -np $((slots + 1)) on $slots slots without oversubscription: refused"
log=$work/over.h5
env -u OMPI_MCA_rmaps_base_oversubscribe "$mpiexec" --hostfile "$hostfile" -np $((slots + 1)) \
  "$agefence" run -q -o "$log" -c "$scenario" >"$work/over.out" 2>&1
rc=$?
[ "$rc" != 0 ] || fail "mpirun started $((slots + 1)) ranks on $slots slots"
grep -q "not enough slots" "$work/over.out" ||
  { cat "$work/over.out" >&2; fail "mpirun failed, but not for want of slots"; }
[ ! -e "$log" ] || fail "a log was left behind by a launch that never started"
echo "PASS: mpirun refused $((slots + 1)) ranks on $slots slots (exit $rc)"
