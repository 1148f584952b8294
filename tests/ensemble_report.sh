#!/usr/bin/env bash
# agefence-report DIR, the ensemble of a directory of logs (analysis/ensemble.h):
#   - four members of tests/fixtures/small.ini (seeds 1-4) on 1 rank: the group's mean ETTR per
#     policy is the mean of the members' own reports, p50 their median, the mean inside its
#     95% interval, the chosen interval's mean in (0, 1];
#   - the same seeds on 2 ranks, and the 1-rank members under reversed names: the same groups
#     bit for bit (how the members were spread over ranks, and their order, change nothing);
#   - a grid over scenario.steps (40 and 60): two groups in numeric order, the 60-step one the
#     figures of the members above;
#   - --plots: ensemble.csv (a row per member) and ensemble_ettr.png;
#   - bad input, each one line naming the file and exit 2: an empty directory, a foreign file,
#     a truncated log, a member of another scenario, a bad DIR/grid, --check on a directory.
#   ensemble_report.sh AGEFENCE REPORT MPIEXEC WORKDIR SOURCE_DIR
set -uo pipefail
agefence=$1 report=$2 mpiexec=$3 work=$4 src=$5
rm -rf "$work" && mkdir -p "$work"
cd "$work" || exit 1
py=/usr/bin/python3
failed=0
fail() { echo "FAIL: $*" >&2; failed=1; }
member() { # member DIR NAME RANKS SEED [--set ...]
  local dir=$1 name=$2 np=$3 seed=$4
  shift 4
  mkdir -p "$dir"
  "$mpiexec" -n "$np" "$agefence" run -q -c "$src/tests/fixtures/small.ini" \
    --set scenario.steps=60 --set scenario.seed="$seed" "$@" -o "$dir/$name" >"$dir/$name.out" 2>&1
  local rc=$?
  [ "$rc" = 0 ] || [ "$rc" = 4 ] || { cat "$dir/$name.out" >&2; fail "$dir/$name: exit $rc"; }
  rm -f "$dir/$name.out"
}
for s in 1 2 3 4; do
  member n1 "member-000$s.h5" 1 "$s"
  member n2 "member-000$s.h5" 2 "$s"
  mkdir -p rev && cp "n1/member-000$s.h5" "rev/member-000$((5 - s)).h5"
done
mkdir -p grid && cp n1/member-000[12].h5 grid/ && echo scenario.steps >grid/grid
member grid member-0003.h5 1 1 --set scenario.steps=40
member grid member-0004.h5 1 2 --set scenario.steps=40

for d in n1 n2 rev grid; do
  "$report" --json "$d" >"$d.json" 2>"$d.err" || { cat "$d.err"; fail "$d: agefence-report exit $?"; }
done
for s in 1 2 3 4; do
  "$report" --json "n1/member-000$s.h5" >"m$s.json" || fail "member $s: --json"
done
"$py" - <<'PY' || fail "the ensemble's figures (above)"
import json, statistics
bad = []
e = json.load(open("n1.json"))
g = e["groups"][0]
if e["ensemble"]["members"] != 4 or len(e["groups"]) != 1 or g["members"] != 4:
    bad.append(f"members: {e['ensemble']['members']}, groups {len(e['groups'])}")
for pol in ("checkpoint_restart", "remap", "shrink_rebuild"):
    own = [json.load(open(f"m{s}.json"))["goodput"][pol]["ettr"] for s in (1, 2, 3, 4)]
    f = g["goodput"][pol]
    if abs(f["mean"] - sum(own) / 4) > 1e-12:
        bad.append(f"{pol}: mean {f['mean']}, the members' own {sum(own) / 4}")
    if abs(f["p50"] - statistics.median(own)) > 1e-12:
        bad.append(f"{pol}: p50 {f['p50']}, the members' median {statistics.median(own)}")
    if not (f["ci_low"] <= f["mean"] <= f["ci_high"]) or f["ci_high"] - f["ci_low"] <= 0:
        bad.append(f"{pol}: mean {f['mean']} outside its interval [{f['ci_low']}, {f['ci_high']}]")
    if not (0 < f["chosen"]["mean"] <= 1) or not f["chosen"]["interval_s"] > 0:
        bad.append(f"{pol}: chosen {f['chosen']}")
    if not (f["p5"] <= f["p50"] <= f["p95"]):
        bad.append(f"{pol}: p5 {f['p5']}, p50 {f['p50']}, p95 {f['p95']} out of order")
for other in ("n2", "rev"):
    o = json.load(open(f"{other}.json"))
    if o["groups"] != e["groups"]:
        bad.append(f"{other}: the groups differ from the 1-rank members' in name order")
gr = json.load(open("grid.json"))
vals = [x["values"][0] for x in gr["groups"]]
if vals != ["40", "60"]:
    bad.append(f"grid: groups {vals}, expected 40 then 60")
elif gr["groups"][1]["goodput"]["checkpoint_restart"]["mean"] != \
        statistics.mean([json.load(open(f"m{s}.json"))["goodput"]["checkpoint_restart"]["ettr"]
                         for s in (1, 2)]):
    bad.append("grid: the 60-step group is not its two members' mean")
for b in bad:
    print("     " + b)
raise SystemExit(1 if bad else 0)
PY
"$report" grid >grid.txt || fail "grid: text report"
grep -q "^GROUP scenario.steps = 40: 2 members" grid.txt || { cat grid.txt; fail "no group line"; }
grep -q "^MEAN ETTR ACROSS THE GRID" grid.txt || fail "no table across the grid"

"$report" --plots plots n1 >/dev/null 2>plots.err || { cat plots.err; fail "--plots: exit $?"; }
[ "$(($(wc -l <plots/ensemble.csv) - 1))" = 4 ] || fail "ensemble.csv: not a row per member"
[ -s plots/ensemble_ettr.png ] || { cat plots.err; fail "no ensemble_ettr.png"; }

# Bad input: one line naming the file, exit 2, nothing on stdout.
bad_case() { # bad_case NAME DIR WANT [agefence-report options]
  local name=$1 dir=$2 want=$3
  shift 3
  "$report" "$@" "$dir" >"$name.out" 2>"$name.err"
  local rc=$?
  if [ "$rc" != 2 ] || [ "$(wc -l <"$name.err")" != 1 ] || [ -s "$name.out" ] ||
    ! grep -qF -- "$want" "$name.err"; then
    fail "$name: exit $rc, stderr '$(cat "$name.err")' (wanted exit 2 and one line with '$want')"
  else
    echo "ok $name: $(cat "$name.err")"
  fi
}
mkdir -p empty
bad_case empty empty "empty: no agefence logs"
mkdir -p foreign && cp n1/member-0001.h5 foreign/ && echo "not a log" >foreign/member-0002.h5
bad_case foreign foreign "foreign/member-0002.h5"
mkdir -p cut && cp n1/member-0001.h5 cut/ && head -c 4000 n1/member-0002.h5 >cut/member-0002.h5
bad_case truncated cut "cut/member-0002.h5"
mkdir -p mixed && cp n1/member-0001.h5 mixed/ && cp grid/member-0003.h5 mixed/member-0002.h5
bad_case other_scenario mixed "mixed/member-0002.h5: another scenario"
mkdir -p badgrid && cp n1/member-0001.h5 badgrid/ && echo notakey >badgrid/grid
bad_case bad_grid badgrid "badgrid/grid:1"
bad_case check_dir n1 "n1: not a regular file" --check

[ "$failed" = 0 ] || exit 1
echo "PASS: ensembles of 1 and 2 ranks and of any order the same, figures of the members, a grid, bad input"
