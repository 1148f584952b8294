#!/usr/bin/env bash
# Ranks agree before they branch: every benchmark in its --quick configuration on NP ranks, on
# one workload, each under a timeout. A benchmark whose ranks took different branches (rank 0
# leaving a loop of runs while the others start the next run) hangs until the timeout; one that
# agrees ends with exit 0 and a valid result. Then the cases rank 0 alone once judged: bench
# graph whose "on" run has no graph step (every step twinned) and bench ensemble whose members'
# directory cannot be made must end with exit 3 (result WRONG), on every rank, in time.
#   bench_ranks.sh AGEFENCE MPIEXEC WORKDIR NP burgers|attention|disagree
# (disagree: Burgers, the two cases alone: bench_<name> runs every benchmark on 2 ranks.)
set -uo pipefail
agefence=$1 mpiexec=$2 work=$3 np=$4 workload=$5
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
set_wl=()
if [ "$workload" = attention ]; then
  set_wl=(--set workload.kind=attention --set scenario.block_len=16 --set workload.dim=8)
fi
limit=${BENCH_RANKS_LIMIT:-400} # seconds a benchmark may take: --quick ones take seconds, minutes on a loaded machine
bench() { # bench EXPECTED_EXIT NAME OPTION... (--quick unless full=1)
  local want=$1 name=$2 out rc quick=--quick
  shift 2
  [ "${full:-0}" = 1 ] && quick=
  out=$work/$name.$np.h5
  timeout -k 5 "$limit" "$mpiexec" -n "$np" "$agefence" bench "$name" $quick "${set_wl[@]}" \
    "$@" -o "$out" >"$work/$name.stdout" 2>"$work/$name.stderr"
  rc=$?
  # Two files: the launcher forwards the ranks' stdout and stderr apart, so a progress line
  # (stderr) may land inside a result line (stdout) in one file.
  [ "$rc" = 124 ] || [ "$rc" = 137 ] &&
    { tail -5 "$work/$name.stdout" "$work/$name.stderr"; fail "bench $name on $np ranks ($workload): no end within ${limit} s"; }
  [ "$rc" = "$want" ] ||
    { tail -20 "$work/$name.stdout" "$work/$name.stderr"; fail "bench $name on $np ranks ($workload): exit $rc, expected $want"; }
  echo "ok: bench $name $* on $np ranks ($workload): exit $rc"
}
if [ "$workload" != disagree ]; then
  for name in kernel remap recovery coord log scale jitter graph sdc ensemble; do
    bench 0 "$name"
    grep -q "^  result: valid" "$work/$name.stdout" || fail "bench $name: no valid result"
  done
fi
# Rank 0 finds the result wrong while reading a run's log: every rank stops with it (two rounds,
# so that a next run follows the one rank 0 rejects: --quick has one).
full=1 bench 3 graph --samples 3 --set scenario.steps=60 --set recovery.detect=sampled --set recovery.sample_fraction=1
grep -q "^  result: WRONG - the graph run ran 0 graph steps" "$work/graph.stdout" ||
  fail "bench graph: not the reason expected: $(grep result: "$work/graph.stdout")"
# Rank 0 cannot make the members' directory (a file is in its place): no member runs.
rm -rf "$work/ensemble.$np.h5.ensemble" # the valid run's members, if it ran
echo x >"$work/ensemble.$np.h5.ensemble"
bench 3 ensemble
grep -Eq "^  result: WRONG - cannot (make the ensemble directory|write .*/grid)" "$work/ensemble.stdout" ||
  fail "bench ensemble: not the reason expected: $(grep result: "$work/ensemble.stdout")"
echo "PASS: every benchmark on $np ranks ($workload) ends, its ranks agreed"
