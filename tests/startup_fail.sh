#!/usr/bin/env bash
# Every allocation of start-up can fail, and each failure ends the run cleanly: the N-th
# allocation through agefence's allocator fails (AGEFENCE_DEBUG=allocfail=N) for N = 1, 2, ...
# until a run gets all its memory and passes. Each failed run must exit 1 (an internal error,
# not bad input), say on one line which rank ran out of memory and for what, not crash, free
# everything it had allocated (the run's own leak check stays silent), and leave no log behind
# (neither at the path nor as PATH.tmp).
#   startup_fail.sh AGEFENCE MPIEXEC WORKDIR SCENARIO NP
set -uo pipefail
agefence=$1 mpiexec=$2 work=$3 scenario=$4 np=$5
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
failures=0
# One rank runs as a singleton (no launcher): a launcher takes a second or two to end a job
# whose process exited non-zero, which would make this walk slow.
launch=("$mpiexec" -n "$np")
[ "$np" = 1 ] && launch=()
for n in $(seq 1 400); do
  log=$work/run$n.h5
  # A hang (ranks stuck in a collective one of them never reached) is a failure too.
  AGEFENCE_DEBUG=allocfail=$n timeout 60 "${launch[@]}" "$agefence" run -q \
    -c "$scenario" -o "$log" >"$work/out$n" 2>&1
  rc=$?
  [ "$rc" = 124 ] && fail "allocation $n failing on $np rank(s): the run hung (killed after 60 s)"
  if [ "$rc" = 0 ]; then
    [ "$failures" -gt 10 ] || fail "only $failures allocations failed before a run passed"
    echo "PASS: $failures start-up allocations failed one at a time on $np rank(s), each cleanly;" \
      "allocation $n on was not needed before the first step"
    exit 0
  fi
  why=""
  [ "$rc" = 1 ] || why="exit $rc, expected 1"
  grep -q "^agefence: rank [0-9]*: .*\(out of memory\|cannot allocate\)" "$work/out$n" ||
    why="${why:+$why; }no line naming the rank and the memory it lacked"
  grep -q "agefence: [a-z ]*:* *$" "$work/out$n" && why="${why:+$why; }an empty message"
  grep -q "were not freed" "$work/out$n" && why="${why:+$why; }it leaked"
  grep -qi "segmentation\|core dumped\|signal [0-9]" "$work/out$n" && why="${why:+$why; }it crashed"
  [ -e "$log" ] || [ -e "$log.tmp" ] && why="${why:+$why; }a log was left behind"
  if [ -n "$why" ]; then
    sed 's/^/    /' "$work/out$n" | head -12
    fail "allocation $n failing on $np rank(s): $why"
  fi
  failures=$((failures + 1))
done
fail "no run passed within 400 allocations"
