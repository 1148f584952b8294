#!/usr/bin/env bash
# One agefence run under mpirun, checked through its log.
#   run_case.sh AGEFENCE REPORT MPIEXEC WORKDIR [np=N] [expect=CODE] [check=OBJ@NAME=VALUE]...
#               [min=OBJ@NAME=VALUE]... [max=OBJ@NAME=VALUE]... -- [agefence run arguments]
# Asserts: the exit status is CODE (default 0); the log passes `agefence-report --check`; each
# check= attribute has its value, each min= attribute is at least, each max= at most its value.
# Every run must leave no allocation and no communicator created after start-up and no leaked
# NaN/Inf (tests/lib.sh); a run expected to pass must also be bitwise equal to the reference.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
agefence=$1 report=$2 mpiexec=$3 work=$4
shift 4
np=1 expect=0
checks=()
mins=()
maxs=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case "$1" in
    np=*) np=${1#np=} ;;
    expect=*) expect=${1#expect=} ;;
    check=*) checks+=("${1#check=}") ;;
    min=*) mins+=("${1#min=}") ;;
    max=*) maxs+=("${1#max=}") ;;
    *) echo "run_case.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[ "${1:-}" = "--" ] && shift
rm -rf "$work" && mkdir -p "$work"
log=$work/run.h5
fail() { echo "FAIL: $*" >&2; exit 1; }

"$mpiexec" -n "$np" "$agefence" run -o "$log" "$@" >"$work/stdout" 2>"$work/stderr"
rc=$?
cat "$work/stdout"
[ "$rc" = "$expect" ] || { cat "$work/stderr" >&2; fail "exit status $rc, expected $expect"; }
[ -f "$log" ] || fail "no log at $log"
"$report" --check "$log" || fail "the log breaks the schema"

attr() { "$report" --attr "$1" "$2" "$log"; }
# The launch had the ranks asked for (another MPI's launcher makes N one-rank runs).
[ "$(attr / ranks)" = "$np" ] || fail "the log says $(attr / ranks) ranks, the launch asked for $np"
why=$(af_clean_run "$report" "$log") || fail "$why"
if [ "$expect" = 0 ]; then
  checks+=("/final@bitwise_equal=1" "/final@exit_reason=completed")
  grep -q "BITWISE EQUAL" "$work/stdout" || fail "the summary does not say bitwise equal"
fi
for c in "${checks[@]}"; do
  objname=${c%%=*} want=${c#*=}
  obj=${objname%%@*} name=${objname#*@}
  got=$(attr "$obj" "$name") || fail "no attribute $obj@$name"
  [ "$got" = "$want" ] || fail "$obj@$name = $got, expected $want"
done
compare() { # compare OP SPEC: numeric comparison of an attribute with a bound
  local op=$1 spec=$2
  local objname=${spec%%=*} bound=${spec#*=}
  local obj=${objname%%@*} name=${objname#*@}
  local got
  got=$(attr "$obj" "$name") || fail "no attribute $obj@$name"
  awk -v g="$got" -v b="$bound" -v op="$op" 'BEGIN { exit !((op == "min") ? (g >= b) : (g <= b)) }' ||
    fail "$obj@$name = $got, expected $op $bound"
}
for c in "${mins[@]}"; do compare min "$c"; done
for c in "${maxs[@]}"; do compare max "$c"; done
echo "PASS: np=$np exit=$rc checks=$((3 + ${#checks[@]} + ${#mins[@]} + ${#maxs[@]}))"
