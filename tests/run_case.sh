#!/usr/bin/env bash
# One agefence run under mpirun, checked through its log.
#   run_case.sh AGEFENCE REPORT MPIEXEC WORKDIR [np=N] [expect=CODE] [check=OBJ@NAME=VALUE]...
#               -- [agefence run arguments]
# Asserts: the exit status is CODE (default 0); the log passes `agefence-report --check`; and
# each check= attribute has its value. A run expected to pass must also be bitwise equal to
# the reference with no allocation after start-up and no leaked NaN/Inf.
set -uo pipefail
agefence=$1 report=$2 mpiexec=$3 work=$4
shift 4
np=1 expect=0
checks=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case "$1" in
    np=*) np=${1#np=} ;;
    expect=*) expect=${1#expect=} ;;
    check=*) checks+=("${1#check=}") ;;
    *) echo "run_case.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[ "${1:-}" = "--" ] && shift
rm -rf "$work" && mkdir -p "$work"
log=$work/run.h5
fail() { echo "FAIL: $*" >&2; exit 1; }

"$mpiexec" -n "$np" --oversubscribe "$agefence" run -o "$log" "$@" >"$work/stdout" 2>"$work/stderr"
rc=$?
cat "$work/stdout"
[ "$rc" = "$expect" ] || { cat "$work/stderr" >&2; fail "exit status $rc, expected $expect"; }
[ -f "$log" ] || fail "no log at $log"
"$report" --check "$log" || fail "the log breaks the schema"

attr() { "$report" --attr "$1" "$2" "$log"; }
if [ "$expect" = 0 ]; then
  checks+=("/final@bitwise_equal=1" "/final@exit_reason=completed" "/final@allocs_after_init=0"
           "/final@nonfinite_leaked_total=0")
  grep -q "BITWISE EQUAL" "$work/stdout" || fail "the summary does not say bitwise equal"
fi
for c in "${checks[@]}"; do
  objname=${c%%=*} want=${c#*=}
  obj=${objname%%@*} name=${objname#*@}
  got=$(attr "$obj" "$name") || fail "no attribute $obj@$name"
  [ "$got" = "$want" ] || fail "$obj@$name = $got, expected $want"
done
echo "PASS: np=$np exit=$rc checks=${#checks[@]}"
