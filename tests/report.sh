#!/usr/bin/env bash
# agefence-report on real logs made by the suite (tests/report.cmake).
#   report.sh MODE REPORT MUTATE LOG WORKDIR [FIXTURES]
# MODE:
#   text             summary, --check and --compare with itself (every ratio exactly 1 or —)
#   json             --json and --compare --json parsed by Python (fails without python3)
#   verify           every figure recomputed from the log with numpy (fails without h5py)
#   plots            --plots: five valid, non-trivial PNGs and goodput.png when the run has
#                    simulated time, its goodput_over_time.csv the report's goodput step by step
#                    (fails without h5py/matplotlib)
#   plots_no_python  --plots without a usable Python: one line, the report, exit 0; with
#                    AGEFENCE_PLOTS_PY naming no file, or a --plots DIR that is a file, is
#                    empty or runs through a file: one line naming it, exit 2, no report; a
#                    missing DIR is made with its missing parents
#   bad_input        bad files: exit 2 and one line naming the file; partial logs: the report
#                    says what is missing, --check names it; a killed run reported as such
#   killed           a run killed with SIGKILL mid-run (LOG is written; FIXTURES is then
#                    "AGEFENCE MPIEXEC"): --check reports exactly the missing exit reason;
#                    --plots draws its figures
# "A && B || fail" below means "fail unless both hold", as intended.
# shellcheck disable=SC2015
set -uo pipefail
mode=$1 report=$2 mutate=$3 log=$4 work=$5 fixtures=${6:-}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
cd "$work" || exit 1
failed=0
checks=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
ok() { checks=$((checks + 1)); }
[ "$mode" = killed ] || [ -f "$log" ] ||
  { echo "FAIL: no log at $log (did the fixture run fail?)"; exit 1; }

# A Python 3 that imports the given modules, or nothing.
find_python() {
  for py in /usr/bin/python3 python3; do
    if command -v "$py" >/dev/null 2>&1 && "$py" -c "import $1" >/dev/null 2>&1; then
      echo "$py"; return 0
    fi
  done
  return 1
}

sections=(RUN CORRECTNESS CONTAINMENT RECOVERY LATENCY "STEP LATENCY BY BLACKOUT" "WORST 5 STEPS")

mode_text() {
  "$report" "$log" >summary.txt 2>summary.err
  local rc=$?
  [ "$rc" = 0 ] || fail "summary: exit $rc"
  [ -s summary.err ] && fail "summary wrote to stderr: $(cat summary.err)"
  for s in "${sections[@]}"; do
    grep -q "^$s" summary.txt || fail "summary lacks the section '$s'"
  done
  grep -q "INCOMPLETE" summary.txt && fail "summary of a complete log says it is incomplete"
  grep -q "BITWISE EQUAL" summary.txt || fail "summary does not say BITWISE EQUAL"
  local lines
  lines=$(wc -l <summary.txt)
  [ "$lines" -le 80 ] || fail "summary is $lines lines, more than a screen (80)"
  ok
  "$report" --check "$log" >check.txt 2>&1 || fail "--check: exit $?: $(cat check.txt)"
  grep -q "valid agefence log" check.txt || fail "--check does not say valid"
  ok
  "$report" --compare "$log" "$log" >compare.txt 2>compare.err || fail "--compare: exit $?"
  # Rows are "key RUN OTHER RATIO": with itself every ratio is exactly 1, or — (undefined).
  local ones bad
  ones=$(awk 'NR > 4 && NF >= 2 && $1 != "figure" && $NF == "1"' compare.txt | wc -l)
  bad=$(awk 'NR > 4 && NF >= 2 && $1 != "figure" && $NF != "1" && $NF != "\xe2\x80\x94"' \
    compare.txt)
  [ -z "$bad" ] || fail "--compare with itself: ratios other than 1 or —: $bad"
  [ "$ones" -ge 100 ] || fail "--compare with itself: only $ones ratios of 1"
  ok
  [ "$("$report" --attr /final exit_reason "$log")" = completed ] || fail "--attr"
  ok
}

mode_json() {
  local py
  py=$(find_python json) || { fail "no python3 (scripts/setup.sh installs it)"; return; }
  "$report" --json "$log" >run.json || fail "--json: exit $?"
  "$py" -m json.tool run.json >/dev/null || fail "--json is not valid JSON"
  ok
  "$report" --compare "$log" --json "$log" >compare.json || fail "--compare --json: exit $?"
  "$py" - run.json compare.json <<'PY' || fail "JSON contents"
import json, sys

def strict(pairs):
    keys = [k for k, _ in pairs]
    dup = {k for k in keys if keys.count(k) > 1}
    if dup:
        raise SystemExit(f"duplicate keys {dup}")
    return dict(pairs)

def no_nan(name):
    raise SystemExit(f"non-JSON number {name}")

load = lambda p: json.load(open(p), object_pairs_hook=strict, parse_constant=no_nan)
run, cmp = load(sys.argv[1]), load(sys.argv[2])
for key in ("run", "correctness", "containment", "recovery", "latency", "worst_steps", "missing"):
    assert key in run, f"no top-level key {key}"
assert run["format"] == "agefence-report/1", run["format"]
assert run["missing"] == [], run["missing"]
assert run["correctness"]["bitwise_equal"] is True
phases = ["step_us", "kernel_us", "halo_us", "coord_us", "moves_us", "replica_us", "log_us"]
for p in phases:
    s = run["latency"]["phases"][p]
    assert set(s) >= {"n", "p50", "p90", "p99", "max", "mean", "sd", "cv"}, s
    assert s["p50"] <= s["p90"] <= s["p99"] <= s["max"], (p, s)
bands = run["latency"]["by_blackout"]
assert list(bands) == ["0-10%", "10-20%", "20-30%", "30-40%", "40-50%", "50-60%", "60-70%",
                       "70-80%", "80-85%", ">=85%"], list(bands)
assert sum(b["steps"] for b in bands.values()) == run["run"]["steps_executed"]
assert cmp["run"] == run and cmp["other"] == run

def leaves(node, path=""):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from leaves(v, f"{path}.{k}" if path else k)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from leaves(v, f"{path}.#{i}")
    else:
        yield path, node

ratios = dict(leaves(cmp["ratio"]))
wrong = {k: v for k, v in ratios.items() if v is not None and v != 1}
assert not wrong, f"ratios other than 1: {wrong}"
ones = sum(1 for v in ratios.values() if v == 1)
assert ones >= 100, f"only {ones} ratios of 1"
print(f"JSON: {len(ratios)} figures, {ones} ratios exactly 1, the rest undefined")
PY
  ok
}

mode_verify() {
  local py
  py=$(find_python "h5py, numpy") ||
    { fail "no python3 with h5py and numpy (scripts/setup.sh installs them)"; return; }
  "$py" "$here/report_verify.py" "$report" "$log" || fail "figures differ from numpy"
  ok
}

# check_pngs PY DIR NAME...: each DIR/NAME.png is a PNG of at least 500 x 300 pixels, over 10 KiB,
# with more than 8 colours (a figure, not a blank canvas).
check_pngs() {
  local py=$1 dir=$2 png
  shift 2
  for png in "$@"; do
    local f=$dir/$png.png
    [ -f "$f" ] || { fail "no $png.png"; continue; }
    [ "$(head -c 8 "$f" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] ||
      fail "$png.png is not a PNG"
    local size
    size=$(stat -c %s "$f")
    [ "$size" -gt 10240 ] || fail "$png.png is only $size bytes"
    "$py" - "$f" <<'PY' || fail "$png.png is blank"
import sys
import matplotlib.image as mpimg
import numpy as np
img = mpimg.imread(sys.argv[1])
colours = np.unique(img.reshape(-1, img.shape[-1]), axis=0)
assert img.shape[0] >= 300 and img.shape[1] >= 500, img.shape
assert len(colours) > 8, f"{len(colours)} distinct colours"
PY
    ok
  done
}

mode_plots() {
  local py
  py=$(find_python "h5py, matplotlib, numpy") ||
    { fail "no python3 with h5py, matplotlib and numpy (scripts/setup.sh installs them)"; return; }
  "$report" --plots "$work/plots" "$log" >plots.txt 2>plots.err
  local rc=$?
  cat plots.err
  [ "$rc" = 0 ] || fail "--plots: exit $rc"
  grep -q "^RUN" plots.txt || fail "--plots did not print the report"
  # The goodput over time: one row per step, the report's own goodput in the last; its figure
  # when the run has simulated time (a run without has no ratio, and says so).
  "$report" --json "$log" >plots.json || fail "--json"
  "$py" - "$work/plots/goodput_over_time.csv" plots.json "$log" <<'PY' >goodput.kind ||
import json, math, sys
import h5py
import numpy as np
rows = np.atleast_1d(np.genfromtxt(sys.argv[1], delimiter=",", names=True))
gp = json.load(open(sys.argv[2]))["goodput"]
steps = h5py.File(sys.argv[3], "r")["steps"]["step"][:]
assert len(rows) == len(steps) and (rows["step"] == steps).all(), (len(rows), len(steps))
for key in ("remap", "shrink_rebuild", "checkpoint_restart"):
    want = gp[key]["ettr"]
    got = float(rows[key][-1])
    if want is None:
        assert math.isnan(got), (key, got)
    else:
        assert abs(got - want) <= 1e-12 * abs(want), (key, got, want)
    finite = rows[key][np.isfinite(rows[key])]
    assert ((finite > 0) & (finite <= 1)).all(), key
print("none" if gp["remap"]["ettr"] is None else "ratios")
PY
    fail "goodput_over_time.csv is not the report's goodput step by step"
  local pngs="step_latency latency_cdf unit_health containment latency_by_blackout" want=5
  if [ "$(cat goodput.kind)" = ratios ]; then
    pngs="$pngs goodput" want=6
  else
    grep -q "goodput.png skipped: no simulated time" plots.err || fail "goodput.png: no reason given"
  fi
  grep -q "wrote $want plots" plots.err || fail "--plots did not write $want plots"
  # A figure that does not apply to the run (pacing.png without pacing) is not announced.
  grep -q "pacing.png" plots.err && fail "--plots speaks of pacing.png: $(cat plots.err)"
  # shellcheck disable=SC2086
  check_pngs "$py" "$work/plots" $pngs
}

mode_plots_no_python() {
  AGEFENCE_PYTHON=/nonexistent/python3 "$report" --plots "$work/plots" "$log" >out.txt 2>err.txt
  local rc=$?
  [ "$rc" = 0 ] || fail "--plots without Python: exit $rc, expected 0"
  [ "$(wc -l <err.txt)" = 1 ] || fail "--plots without Python: $(wc -l <err.txt) lines on stderr"
  grep -q "plots skipped: no Python 3 with h5py and matplotlib" err.txt ||
    fail "--plots without Python says: $(cat err.txt)"
  grep -q "^RUN" out.txt || fail "--plots without Python: no report"
  ls "$work/plots"/*.png >/dev/null 2>&1 && fail "--plots without Python wrote PNGs"
  ok
  # A script named by AGEFENCE_PLOTS_PY that is not there is bad input: exit 2, one line naming
  # the variable and the path, before any report.
  AGEFENCE_PLOTS_PY=/nonexistent/plots.py "$report" --plots "$work/plots" "$log" >out.txt \
    2>err.txt
  rc=$?
  [ "$rc" = 2 ] && [ "$(wc -l <err.txt)" = 1 ] &&
    grep -q "AGEFENCE_PLOTS_PY=/nonexistent/plots.py: No such file" err.txt && [ ! -s out.txt ] ||
    fail "--plots with a missing AGEFENCE_PLOTS_PY: exit $rc: $(cat err.txt)"
  # A --plots folder that cannot be one is bad input too, said before any report (checked
  # here, where no Python is needed): a file in its place, a file as parent, the empty name.
  # A missing folder is made with its missing parents (docs/running.md, "Where output goes").
  : >"$work/afile"
  for dir in "$work/afile" "$work/afile/plots" ""; do
    "$report" --plots "$dir" "$log" >out.txt 2>err.txt
    rc=$?
    [ "$rc" = 2 ] && [ "$(wc -l <err.txt)" = 1 ] && grep -q "^agefence-report: --plots $dir" err.txt &&
      [ ! -s out.txt ] || fail "--plots '$dir': exit $rc, $(wc -c <out.txt) bytes of report: $(cat err.txt)"
  done
  grep -q "^agefence-report: --plots '': the folder name is empty" err.txt ||
    fail "--plots '': not said to be empty: $(cat err.txt)"
  AGEFENCE_PYTHON=/nonexistent/python3 "$report" --plots "$work/newplots" "$log" >out.txt 2>err.txt
  rc=$?
  [ "$rc" = 0 ] && [ -d "$work/newplots" ] || fail "--plots did not make a new folder: exit $rc"
  AGEFENCE_PYTHON=/nonexistent/python3 "$report" --plots "$work/nothere/a/plots" "$log" \
    >out.txt 2>err.txt
  rc=$?
  [ "$rc" = 0 ] && [ -d "$work/nothere/a/plots" ] ||
    fail "--plots did not make a folder with its missing parents: exit $rc: $(cat err.txt)"
  ok
  ok
  AGEFENCE_PLOTS_PY=$work "$report" --plots "$work/plots" "$log" >out.txt 2>err.txt
  rc=$?
  [ "$rc" = 2 ] && [ "$(wc -l <err.txt)" = 1 ] &&
    grep -q "AGEFENCE_PLOTS_PY=$work: not a regular file" err.txt ||
    fail "--plots with AGEFENCE_PLOTS_PY a folder: exit $rc: $(cat err.txt)"
  ok
}

# refuse NAME FILE FRAGMENT: every mode refuses FILE with exit 2 and one line naming it.
refuse() {
  local name=$1 file=$2 want=$3
  local -a modes=("" "--json" "--check" "--plots $work/p" "--compare $log" "--compare FILE")
  for m in "${modes[@]}"; do
    local -a args
    if [ "$m" = "--compare FILE" ]; then
      args=(--compare "$file" "$log")
    else
      # shellcheck disable=SC2206
      args=($m "$file")
    fi
    "$report" "${args[@]}" >out.txt 2>err.txt
    local rc=$?
    local what="$name (${args[*]})"
    if [ "$rc" != 2 ]; then fail "$what: exit $rc, expected 2"; cat err.txt; continue; fi
    [ "$(wc -l <err.txt)" = 1 ] || { fail "$what: $(wc -l <err.txt) lines on stderr"; continue; }
    [ -s out.txt ] && fail "$what: wrote to stdout"
    grep -qF "agefence-report: $file: " err.txt || fail "$what: the line does not name $file"
    grep -qE "$want" err.txt || fail "$what: '$(cat err.txt)' lacks '$want'"
    ok
  done
  echo "ok   $name: $(cat err.txt)"
}

mode_bad_input() {
  local size
  size=$(stat -c %s "$log")
  head -c 100 "$log" >trunc100.h5
  head -c $((size / 2)) "$log" >trunchalf.h5
  "$mutate" foreign.h5 foreign || fail "cannot make foreign.h5"
  cp "$log" schema99.h5 && "$mutate" schema99.h5 set-i64 / schema_version 99 ||
    fail "cannot make schema99.h5"
  mkdir -p adir.h5
  refuse missing "$work/nosuch.h5" "cannot open: No such file"
  # a directory is an ensemble (agefence-report DIR): this one holds no log; with --check or
  # --compare it is refused as such, and as OTHER of --compare it is not a regular file
  refuse directory "$work/adir.h5" "not a regular file|no agefence logs|a directory, read as an ensemble"
  refuse text "$fixtures/not_hdf5.h5" "not an HDF5 file"
  refuse empty "$fixtures/empty.h5" "not an HDF5 file"
  refuse truncated_100_bytes "$work/trunc100.h5" "not an HDF5 file|HDF5 cannot open it"
  refuse truncated_half "$work/trunchalf.h5" "not an HDF5 file|HDF5 cannot open it"
  refuse foreign_hdf5 "$work/foreign.h5" "not an agefence log"
  refuse schema_99 "$work/schema99.h5" "schema version 99.*newer agefence-report"

  # Partial logs: readable, so the report says what is missing and --check names it.
  partial() { # NAME WANT_IN_SUMMARY WANT_IN_CHECK MUTATION...
    local name=$1 want_s=$2 want_c=$3
    shift 3
    cp "$log" "$name.h5" && "$mutate" "$name.h5" "$@" || { fail "cannot make $name.h5"; return; }
    "$report" "$name.h5" >s.txt 2>s.err
    local rc=$?
    [ "$rc" = 0 ] || { fail "$name: summary exit $rc"; cat s.err; }
    grep -qF -- "$want_s" s.txt || fail "$name: the summary does not say '$want_s'"
    grep -q "^RUN" s.txt || fail "$name: no report"
    "$report" --json "$name.h5" >j.txt 2>&1 || fail "$name: --json exit $?"
    "$report" --compare "$log" "$name.h5" >c.txt 2>&1 || fail "$name: --compare exit $?"
    "$report" --check "$name.h5" >k.txt 2>&1
    rc=$?
    [ "$rc" = 1 ] || fail "$name: --check exit $rc, expected 1"
    grep -qF -- "$want_c" k.txt || fail "$name: --check does not say '$want_c': $(cat k.txt)"
    ok
    echo "ok   $name: $(head -n 1 k.txt)"
  }
  partial no_ranks "/ranks: missing" "/ranks: missing group" del /ranks
  partial no_halo "/ranks/halo_us: missing" "/ranks/halo_us: missing dataset" del /ranks/halo_us
  partial no_blackout "/steps/blackout_frac: missing" "/steps/blackout_frac: missing dataset" \
    del /steps/blackout_frac
  partial no_events "/events: missing" "/events: missing dataset" del /events
  partial no_capacity "capacity" "/@capacity: missing" del-attr / capacity
  partial killed "UNKNOWN: the run did not finish" \
    "/final@exit_reason: missing: the run did not finish" killed
  partial killed_empty "UNKNOWN: the run did not finish" \
    "/final@exit_reason: missing: the run did not finish" killed-empty
  # A killed run: exactly that one violation, nothing else.
  for k in killed killed_empty; do
    "$report" --check $k.h5 >k.txt 2>&1
    [ "$(wc -l <k.txt)" = 2 ] && grep -q ": 1 schema violation$" k.txt ||
      fail "$k run: --check says more than the missing exit reason: $(cat k.txt)"
    ok
  done

  # Step graph figures that cannot be (small.h5 ran on the cpu backend): --check names them.
  seeded() { # NAME WANT_IN_CHECK MUTATION...
    local name=$1 want=$2
    shift 2
    cp "$log" "$name.h5" && "$mutate" "$name.h5" "$@" || { fail "cannot make $name.h5"; return; }
    "$report" --check "$name.h5" >k.txt 2>&1
    local rc=$?
    [ "$rc" = 1 ] || fail "$name: --check exit $rc, expected 1"
    grep -qF -- "$want" k.txt || fail "$name: --check does not say '$want': $(cat k.txt)"
    ok
    echo "ok   $name: $(sed -n 2p k.txt)"
  }
  seeded graph_twice "/final@graph_instantiations: 2, expected 0 or 1" \
    set-i64 /final graph_instantiations 2
  seeded graph_on_cpu "/final@graph_instantiations: 1, expected 0 with the cpu backend" \
    set-i64 /final graph_instantiations 1
  seeded graph_steps "/final@graph_steps: 999999999, expected 0..steps_completed" \
    set-i64 /final graph_steps 999999999

  # Bad command lines.
  local -a bad
  for bad in "" "--frobnicate $log" "--compare" "--plots" "--check --json $log" \
    "--attr /final $log" "$log $log"; do
    # shellcheck disable=SC2086
    "$report" $bad >out.txt 2>err.txt
    local rc=$?
    [ "$rc" = 2 ] && [ "$(wc -l <err.txt)" = 1 ] || fail "arguments '$bad': exit $rc"
    ok
  done
}

mode_killed() {
  local agefence mpiexec
  read -r agefence mpiexec <<<"$fixtures"
  rm -f "$log"
  "$mpiexec" -n 2 "$agefence" run -q -o "$log" --set scenario.steps=100000000 \
    --set log.flush_interval=10 --set aging.sim_hours_per_step=0 >run.out 2>&1 &
  local launcher=$!
  # Wait for the log (the writer keeps it locked: poll its existence), let it flush a few
  # times, then SIGKILL the ranks.
  for _ in $(seq 1 100); do
    [ -f "$log" ] && break
    sleep 0.1
  done
  sleep 1.5
  local pids
  pids=$(pgrep -P "$launcher" -f "$agefence" || true)
  [ -n "$pids" ] || { kill -9 "$launcher" 2>/dev/null; fail "no agefence ranks found"; return; }
  # shellcheck disable=SC2086
  kill -9 $pids
  wait "$launcher" 2>/dev/null
  # The log is crash-consistent (sim/io/log.h): whatever the SIGKILL interrupted, it is readable
  # and holds the steps of its last flush. tests/crashlog.sh kills at many more moments.
  "$report" --check "$log" >check.txt 2>check.err
  local rc=$?
  cat check.txt check.err
  [ "$rc" = 1 ] || fail "--check of a killed run: exit $rc, expected 1"
  [ "$(wc -l <check.txt)" = 2 ] || fail "--check of a killed run says more than one thing"
  grep -q "^/final@exit_reason: missing: the run did not finish" check.txt ||
    fail "--check does not say the run did not finish"
  "$report" "$log" >summary.txt || fail "summary of a killed run: exit $?"
  grep -q "UNKNOWN: the run did not finish" summary.txt || fail "summary does not say killed"
  ok
  # --plots reads the killed run's log as the text report does (its file is still marked open
  # for writing: a SWMR reader), and draws the figures of the steps it holds.
  local py
  py=$(find_python "h5py, matplotlib, numpy") || { echo "no python3 with h5py and matplotlib:" \
    "--plots of the killed run not checked"; return; }
  "$report" --plots "$work/plots" "$log" >plots.txt 2>plots.err
  rc=$?
  cat plots.err
  [ "$rc" = 0 ] || fail "--plots of a killed run: exit $rc"
  grep -q "UNKNOWN: the run did not finish" plots.txt || fail "--plots of a killed run: no report"
  grep -q "wrote 5 plots" plots.err || fail "--plots of a killed run did not write 5 plots"
  check_pngs "$py" "$work/plots" step_latency latency_cdf unit_health containment \
    latency_by_blackout
}

case "$mode" in
  text | json | verify | plots | plots_no_python | bad_input | killed) "mode_$mode" ;;
  *) echo "report.sh: unknown mode $mode"; exit 2 ;;
esac
echo "$checks checks passed, $failed failed"
[ "$failed" = 0 ]
