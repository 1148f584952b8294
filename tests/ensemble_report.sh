#!/usr/bin/env bash
# agefence-report DIR, the ensemble of a directory of logs (analysis/ensemble.h):
#   - four members of tests/fixtures/small.ini (seeds 1-4) on 1 rank: the group's mean ETTR per
#     policy is the mean of the members' own reports, p50 their median, the 95% interval of the
#     mean Student's (mean -+ t(3) sd / 2 with t(3) = 3.182, cut to [0, 1]), the chosen
#     interval's mean in (0, 1];
#   - one member: no interval ("- (1 member)", null), and its chosen intervals and ETTR are its
#     own report's searched ones;
#   - members that did not finish (stopped by a signal; killed, without /final): left out,
#     listed one line each with their exit and step, counted; --with-unfinished takes them in;
#   - the same seeds on 2 ranks, and the 1-rank members under reversed names: the same groups
#     bit for bit (how the members were spread over ranks, and their order, change nothing);
#   - a grid over scenario.steps (40 and 60): two groups in numeric order, the 60-step one the
#     figures of the members above;
#   - --plots: ensemble.csv (a row per member) and ensemble_ettr.png;
#   - costs asked offline: --set goodput.restart_seconds=60 on a member gives the goodput of the
#     same seed simulated with that key; --grid goodput.restart_seconds=60,600 over the members
#     one group a value, the 600 s one the ensemble's own, the 60 s one's member that goodput;
#   - bad input, each one line naming the file and exit 2: an empty directory, a foreign file,
#     a truncated log, a member of another scenario (the odd one named, even as member-0000),
#     a copied member (both named), a bad DIR/grid, --check on a directory, a cost grid with a
#     value twice, an unknown [goodput] key, a cost out of range, a cost grid on one log.
#   ensemble_report.sh AGEFENCE REPORT MPIEXEC WORKDIR SOURCE_DIR REPORT_MUTATE
set -uo pipefail
agefence=$1 report=$2 mpiexec=$3 work=$4 src=$5 mutate=$6
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
mkdir -p one && cp n1/member-0001.h5 one/
# Members that did not finish: seed 5 stopped by a signal (its /final says so), seed 6 killed
# (no /final), beside two whole members.
mkdir -p part && cp n1/member-000[12].h5 part/
member part member-0005.h5 1 5
member part member-0006.h5 1 6
"$mutate" part/member-0005.h5 set-str /final exit_reason signal &&
  "$mutate" part/member-0005.h5 set-i64 /final exit_code 5 &&
  "$mutate" part/member-0006.h5 killed || fail "cannot make the unfinished members"

# Costs asked offline: member 1 simulated again with restart_seconds = 60 (the history is the
# same: [goodput] keys change no simulation), to compare with --set and --grid on the original.
member cost member-0001.h5 1 1 --set goodput.restart_seconds=60
"$report" --json cost/member-0001.h5 >cost_sim.json || fail "cost: --json"
"$report" --json --set goodput.restart_seconds=60 n1/member-0001.h5 >cost_set.json ||
  fail "--set: exit $?"
"$report" --json --grid goodput.restart_seconds=60,600 n1 >cost_grid.json || fail "--grid: exit $?"
# Through a file, not a pipe: under pipefail, grep -q leaving at its match ends the report with
# SIGPIPE when its last writes come after it.
"$report" --set goodput.restart_seconds=60 n1/member-0001.h5 >cost_set.txt || fail "--set: text"
grep -q "^  costs        goodput.restart_seconds=60 (--set)" cost_set.txt ||
  fail "--set: the report does not say the costs are given"

for d in n1 n2 rev grid one part; do
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
    sd = statistics.stdev(own)
    half = 3.182 * sd / 2  # Student's t(0.975, 3 degrees of freedom), n = 4
    want = (max(0.0, sum(own) / 4 - half), min(1.0, sum(own) / 4 + half))
    if abs(f["sd"] - sd) > 1e-12 or abs(f["ci_low"] - want[0]) > 1e-12 or \
            abs(f["ci_high"] - want[1]) > 1e-12:
        bad.append(f"{pol}: interval [{f['ci_low']}, {f['ci_high']}] sd {f['sd']}, Student's "
                   f"[{want[0]}, {want[1]}] sd {sd}")
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
if vals != [40, 60]:  # numbers, as the scenario's values are
    bad.append(f"grid: groups {vals}, expected 40 then 60")
elif gr["groups"][1]["goodput"]["checkpoint_restart"]["mean"] != \
        statistics.mean([json.load(open(f"m{s}.json"))["goodput"]["checkpoint_restart"]["ettr"]
                         for s in (1, 2)]):
    bad.append("grid: the 60-step group is not its two members' mean")
if e["groups"][0]["values"] != []:
    bad.append(f"no grid: values {e['groups'][0]['values']}, expected []")
one = json.load(open("one.json"))
m1 = json.load(open("m1.json"))["goodput"]
for pol in ("checkpoint_restart", "remap", "shrink_rebuild"):
    f = one["groups"][0]["goodput"][pol]
    if f["ci_low"] is not None or f["ci_high"] is not None:
        bad.append(f"one member, {pol}: interval [{f['ci_low']}, {f['ci_high']}], expected null")
    # one member: the group's one setting is the member's own search, to the bit
    if f["chosen"]["mean"] != m1[pol]["ettr"] or \
            f["chosen"]["interval_s"] != m1[pol]["interval_s"]:
        bad.append(f"one member, {pol}: chosen {f['chosen']}, its own {m1[pol]['ettr']} at "
                   f"{m1[pol]['interval_s']}")
# --set replays the log at the cost the simulation would have been given: the same goodput
sim = json.load(open("cost_sim.json"))["goodput"]
st = json.load(open("cost_set.json"))["goodput"]
for pol in ("checkpoint_restart", "remap", "shrink_rebuild"):
    if sim[pol] != st[pol]:
        bad.append(f"--set, {pol}: {st[pol]['ettr']}, simulated with the cost {sim[pol]['ettr']}")
if st["params"]["restart_seconds"] != 60 or st["params"]["set"] != "goodput.restart_seconds=60":
    bad.append(f"--set: params {st['params']}")
# --grid: one group a value; the 600 s group is the ensemble of n1 (its scenario's own cost)
cg = json.load(open("cost_grid.json"))
if [x["values"] for x in cg["groups"]] != [[60], [600]] or cg["ensemble"]["members"] != 4 or \
        cg["ensemble"]["cost_grid"] != "goodput.restart_seconds":
    bad.append(f"--grid: groups {[x['values'] for x in cg['groups']]}, {cg['ensemble']}")
elif cg["groups"][1]["goodput"] != e["groups"][0]["goodput"]:
    bad.append("--grid: the 600 s group is not the ensemble at the scenario's own cost")
else:
    g60 = [m for m in cg["members"] if m["group"] == 0 and m["seed"] == 1]
    if len(g60) != 1 or g60[0]["ettr"]["checkpoint_restart"] != sim["checkpoint_restart"]["ettr"]:
        bad.append(f"--grid: seed 1 at 60 s {g60}, simulated {sim['checkpoint_restart']['ettr']}")
part = json.load(open("part.json"))
left = [(x["file"], x["exit_reason"]) for x in part["left_out"]]
if part["ensemble"]["members"] != 2 or part["ensemble"]["left_out"] != 2 or \
        left != [("member-0005.h5", "signal"), ("member-0006.h5", None)]:
    bad.append(f"unfinished: {part['ensemble']}, left out {left}")
for b in bad:
    print("     " + b)
raise SystemExit(1 if bad else 0)
PY
"$report" one >one.txt || fail "one member: text report"
[ "$(grep -c -- '- (1 member)' one.txt)" = 3 ] || { cat one.txt; fail "one member: no '- (1 member)'"; }
"$report" part >part.txt || fail "unfinished members: text report"
grep -q "^  left out     2 members that did not finish their window" part.txt &&
  grep -q "^    part/member-0005.h5: signal at step 60 of 60" part.txt &&
  grep -q "^    part/member-0006.h5: no /final" part.txt &&
  grep -q "^GROUP 2 members" part.txt || { cat part.txt; fail "unfinished members: not listed"; }
"$report" --with-unfinished --json part >partw.json || fail "--with-unfinished: exit $?"
"$py" -c 'import json, sys; e = json.load(open("partw.json"))["ensemble"]
sys.exit(0 if (e["members"], e["left_out"], e["unfinished_taken_in"]) == (4, 0, 2) else 1)' ||
  fail "--with-unfinished: $(head -c 300 partw.json)"
"$report" --with-unfinished part >partw.txt || fail "--with-unfinished: text"
grep -q "^  unfinished   2 members taken in by --with-unfinished" partw.txt ||
  fail "--with-unfinished: the members taken in are not named"

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
# The odd member is named even when it sorts first.
mkdir -p mixed0 && cp n1/member-000[123].h5 mixed0/ && cp grid/member-0003.h5 mixed0/member-0000.h5
bad_case odd_first mixed0 "mixed0/member-0000.h5: another scenario than mixed0/member-0001.h5"
# A copied member is the same history: refused, both files named.
mkdir -p dup && cp n1/member-0001.h5 dup/ && cp n1/member-0001.h5 dup/member-0009.h5
bad_case copy dup "dup/member-0009.h5: the same history as dup/member-0001.h5"
mkdir -p badgrid && cp n1/member-0001.h5 badgrid/ && echo notakey >badgrid/grid
bad_case bad_grid badgrid "badgrid/grid:1"
bad_case check_dir n1 "n1: not a regular file" --check
bad_case cost_twice n1 "the value '60' is given twice" --grid goodput.restart_seconds=60,60
bad_case cost_key n1 "goodput has no key 'restart'" --set goodput.restart=60
bad_case cost_range n1 "expected a number in [0, 1e+06]" --set goodput.restart_seconds=-1
bad_case cost_grid_log n1/member-0001.h5 "needs an ensemble directory" --grid goodput.restart_seconds=60

[ "$failed" = 0 ] || exit 1
echo "PASS: ensembles of 1 and 2 ranks and of any order the same, figures of the members, a grid, bad input"
