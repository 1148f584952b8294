#!/usr/bin/env bash
# One benchmark in its --quick configuration on 2 ranks: it must exit 0 (its own result is
# valid), print its table, and leave a results file with /host and the raw samples. Options
# after NAME go to the benchmark (--set ..., --samples N).
#   bench_case.sh AGEFENCE MPIEXEC WORKDIR [--expect-not-measured] NAME [OPTION]...
# With --expect-not-measured (bench sdc on a fleet that injects nothing harmful) the bench must
# instead say that containment was not measured and fail its self-check (exit 3).
set -uo pipefail
agefence=$1 mpiexec=$2 work=$3
shift 3
expect_unmeasured=0
if [ "${1:-}" = --expect-not-measured ]; then
  expect_unmeasured=1
  shift
fi
name=$1
shift
rm -rf "$work" && mkdir -p "$work"
out=$work/$name.h5
# stdout and stderr apart: the launcher forwards them apart, so a progress line (stderr) may
# land inside a table or result line (stdout) in one file.
"$mpiexec" -n 2 "$agefence" bench "$name" --quick "$@" -o "$out" >"$work/stdout" 2>"$work/stderr"
rc=$?
cat "$work/stdout" "$work/stderr"
fail() { echo "FAIL: $*" >&2; exit 1; }
if [ "$expect_unmeasured" = 1 ]; then
  # Nothing harmful injected: no containment figure, no MET, a note that says "not measured"
  # for every detector, and the self-check's verdict with exit status 3 (result wrong).
  [ "$rc" = 3 ] || fail "exit status $rc with nothing harmful injected, expected 3"
  for d in finite abft sampled dmr abft+sampled; do
    grep -q "^  note: $d: harmful contained: not measured (no harmful corruption injected; " \
      "$work/stdout" || fail "no 'not measured' note for $d"
    if grep -q "^  $d: harmful contained " "$work/stdout"; then
      fail "a containment figure for $d with nothing harmful injected"
    fi
  done
  grep -q "^  result: WRONG - harmful contained not measured: no harmful corruption was injected" \
    "$work/stdout" || fail "the result does not say that containment was not measured"
  echo "PASS: bench $name: containment not measured, exit 3"
  exit 0
fi
[ "$rc" = 0 ] || fail "exit status $rc"
grep -q "result: valid" "$work/stdout" || fail "no valid result in the table"
[ -f "$out" ] || fail "no results file"
/usr/bin/python3 - "$out" <<'PY' || fail "the results file lacks what it should hold"
import sys
import h5py
with h5py.File(sys.argv[1], "r") as f:
    assert f.attrs["valid"] == 1
    assert "cores" in f["host"].attrs and "loadavg_1min_after" in f["host"].attrs
    series = list(f["series"])
    assert series, "no series"
    for s in series:
        d = f["series"][s]
        assert d.shape[0] > 0 and "p50" in d.attrs and "cv" in d.attrs, s
print("ok:", len(series), "series")
PY
if [ "$name" = scale ]; then
  # A line per phase at each size, the budget's terms at the largest, and the edge log at its
  # size: on 2 ranks every block's replica is on the other rank, so exactly 16 bytes a block a
  # step (its two edges; the block is implied by the position).
  for d in 500 2000 8000; do
    for p in kernel_us halo_us replica_us moves_us; do
      grep -qE "^  $d devices: $p p50 \(slowest rank\) +[0-9.e+]+$" "$work/stdout" ||
        fail "no $p line at $d devices"
    done
    grep -qE "^  $d devices: units the aging model visited in a quiet step \(rank 0\), (mean|max) +[0-9.e+]+$" \
      "$work/stdout" || fail "no quiet-step visit line at $d devices"
    grep -qE "^  $d devices: replica edge-log bytes per block per step +16$" "$work/stdout" ||
      fail "the edge log is not 16 bytes a block a step at $d devices"
  done
  for term in shard "aging model" "fleet tables" "block tables" replicas verdict peak; do
    grep -qE "^  8000 devices: rank 0's memory budget, $term \(bytes\) +[0-9.e+]+$" \
      "$work/stdout" || fail "no budget term '$term' at 8000 devices"
  done
  grep -qE "^  replica edge-log bytes per block per step at 8000 devices +16 +target <= 16 +MET$" \
    "$work/stdout" || fail "no MET line for the edge log's size"
  grep -qE "^  rollbacks at 8000 devices +0 +target <= 0 +MET$" "$work/stdout" ||
    fail "no rollback target line"
  # The coordinator's targets (per health change, quiet steps) with a verdict, the medians of
  # all steps without one, and the budget against the resident peak at the largest fleet (a
  # target only without --quick, where a miss makes the result invalid).
  grep -qE "^  coordinator \(plan_us\) per health change 8000 / 500 devices +[0-9.e+]+ +target <= 2 +(MET|MISSED)$" \
    "$work/stdout" || fail "no per-change coordinator target"
  grep -qE "^  coordinator \(plan_us\) p50 8000 / 500 devices +[0-9.e+]+$" "$work/stdout" ||
    fail "no untargeted coordinator median ratio"
  grep -qE "^  \|memory budget - resident peak\| / resident peak at 8000 devices +[0-9.e+-]+$" \
    "$work/stdout" || fail "no line of the memory budget against the resident peak"
fi
if [ "$name" = ensemble ]; then
  # The members' directory is an ensemble agefence-report gathers: a group per fleet size.
  report=$(dirname "$agefence")/agefence-report
  "$report" "$out.ensemble" >"$work/report.txt" 2>&1 || { cat "$work/report.txt"; fail "report: exit $?"; }
  [ "$(grep -c '^GROUP scenario.devices = ' "$work/report.txt")" = 2 ] ||
    { cat "$work/report.txt"; fail "the ensemble report has not a group per fleet size"; }
  grep -q "^  minutes for the sizes x 16 seeds" "$work/stdout" || fail "no projected minutes"
fi
if [ "$name" = jitter ]; then
  # agefence-report reads the results: the trade-off table, and its plot when Python can.
  report=$(dirname "$agefence")/agefence-report
  "$report" --plots "$work/plots" "$out" >"$work/report.txt" 2>&1 || fail "report: exit $?"
  cat "$work/report.txt"
  grep -q "PACING TRADE-OFF" "$work/report.txt" || fail "no trade-off table"
  [ "$(grep -c '^  gamma=' "$work/report.txt")" = 5 ] || fail "not five gamma rows"
  [ "$(grep -c '^  q=' "$work/report.txt")" = 4 ] || fail "not four quantile rows"
  for q in 0.5 0.9 0.99 0.999; do
    # Each quantile setting has its offline bound beside it, in the bench's table and the report.
    grep -q "^  note: q=$q .*, waits [0-9]*%; bound at [0-9]* us: sd .* less, mean " "$work/stdout" ||
      fail "no offline bound beside q=$q"
    grep -Eq "^  q=$q( .*%){4}$" "$work/report.txt" || fail "no offline bound in the report's q=$q row"
  done
  grep -q "^  note: offline, a fixed deadline on the unpaced periods: sd -85%" "$work/stdout" ||
    fail "no statement where a fixed deadline reaches the 85% reduction"
  grep -q "an 85% reduction of the period's sd: \(reached\|not reached\)" "$work/report.txt" ||
    fail "no plain statement about the 85% reduction"
  [ -s "$work/plots/tradeoff.png" ] || fail "no tradeoff.png"
fi
if [ "$name" = log ]; then
  # The target is on what the log costs the run: the step thread's part and the writer thread's
  # CPU time, each printed, and the verdict against 1%; the writer's CPU time kept raw.
  grep -Eq "^  log cost / step time: \(log_us \+ writer CPU\) / step_us \(sum\) +[0-9.e+-]+ +target <= 0.01 +(MET|MISSED)$" \
    "$work/stdout" || fail "no log cost against its target"
  grep -Eq "^    the writer's share: writer CPU / step_us +[0-9.e+-]+$" "$work/stdout" ||
    fail "no writer's share"
  /usr/bin/python3 - "$out" <<'PY' || fail "no writer CPU time among the raw samples"
import sys
import h5py
with h5py.File(sys.argv[1], "r") as f:
    cpu = f["series"]["writer_cpu_us"][:]
    assert cpu.shape == (1,) and cpu[0] > 0, cpu
PY
fi
if [ "$name" = sdc ]; then
  # Every detector measured; abft contains every harmful corruption of the quick fleet and
  # finite none of its finite ones; the report draws containment against overhead.
  for d in finite abft sampled dmr abft+sampled; do
    grep -q "^  $d: harmful contained " "$work/stdout" || fail "no containment figure for $d"
    grep -q "^  $d: step overhead vs finite " "$work/stdout" || fail "no overhead figure for $d"
  done
  if [[ " $* " == *" workload.kind=attention "* ]]; then
    # Attention: the runs are the attention workload's, and the whole-run pair's finite run is
    # checked as the detectors' runs are (its clamp turns infinite weights finite).
    grep -q "^  note: .*workload attention, " "$work/stdout" || fail "not the attention workload"
    grep -q "^  abft: step overhead vs finite, whole runs" "$work/stdout" ||
      fail "no whole-run abft overhead"
    # abft contains at least 0.99 of the harmful corruptions, with its verdict MET, and says
    # so from a count of harmful ones injected that is not zero.
    line=$(grep -E "^  abft: harmful contained +[0-9.e+-]+ +target >= 0.99 +(MET|MISSED)$" \
      "$work/stdout") || fail "no abft containment line with its target and verdict"
    awk -v l="$line" 'BEGIN { n = split(l, f, " "); v = f[4] + 0;
      exit !(v >= 0.99 && f[n] == "MET") }' || fail "abft containment below 0.99: $line"
    grep -Eq "^  note: abft: [0-9]+ runs, [0-9]+ corruptions injected \([1-9][0-9]* harmful\)" \
      "$work/stdout" || fail "abft: no harmful corruption injected to contain"
    grep -Eq "^  abft: step overhead vs finite +[0-9.e+-]+ +target <= 0.05 +(MET|MISSED)$" \
      "$work/stdout" || fail "no abft overhead line with its target and verdict"
  else
    grep -Eq "^  abft: harmful contained +1 " "$work/stdout" || fail "abft let a harmful one through"
    grep -Eq "^  finite: harmful contained +0( |$)" "$work/stdout" ||
      fail "finite contained a finite corruption it cannot see"
  fi
  report=$(dirname "$agefence")/agefence-report
  "$report" --plots "$work/plots" "$out" >"$work/report.txt" 2>&1 || fail "report: exit $?"
  [ -s "$work/plots/sdc_tradeoff.png" ] || fail "no sdc_tradeoff.png: $(cat "$work/report.txt")"
fi
if [ "$name" = kernel ] && [[ " $* " == *" workload.kind=attention "* ]]; then
  # The attention variant: both rates sampled, the ratio at p50 with its verdict (speed is not
  # asserted, only that the figure and its target are printed).
  grep -Eq "^  attention_masked +GFLOP/s " "$work/stdout" || fail "no attention series"
  grep -Eq "^  muladd_peak +GFLOP/s " "$work/stdout" || fail "no multiply-add peak series"
  grep -Eq "^  attention / multiply-add peak \(p50\) +[0-9.e+-]+ +target >= 0.5 +(MET|MISSED)$" \
    "$work/stdout" || fail "no attention / peak ratio line with MET or MISSED"
  grep -q "^  note: attention: 16 tokens x 8 features a block" "$work/stdout" ||
    fail "the shape of --set was not the one measured"
fi
if [ "$name" = recovery ] && [[ " $* " == *" workload.kind=attention "* ]]; then
  grep -q "^  note: workload attention, " "$work/stdout" || fail "not the attention workload"
fi
if [ "$name" = graph ]; then
  # Both settings sampled, and the graph really ran (the self-check fails the run otherwise).
  /usr/bin/python3 - "$out" <<'PY' || fail "the graph series are missing"
import sys
import h5py
with h5py.File(sys.argv[1], "r") as f:
    for s in ("step_us.off", "step_us.on", "kernel_halo_us.off", "kernel_halo_us.on"):
        assert f["series"][s].shape[0] > 100, s
PY
  grep -q "executed steps ran as the step graph" "$work/stdout" || fail "no graph step count"
  grep -q "step p50: graph on / off" "$work/stdout" || fail "no on/off ratio"
fi
echo "PASS: bench $name"
