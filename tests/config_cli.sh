#!/usr/bin/env bash
# The scenario as `agefence config` and `agefence run` resolve it.
#   config_cli.sh MODE AGEFENCE REPORT MPIEXEC WORKDIR SOURCE_DIR
# MODE:
#   default_shortened  the embedded default scenario with --set scenario.steps=100: its event at
#                      step 300 is skipped with one note line on stderr (naming event.1, step 300
#                      and steps = 100); `agefence config` exits 0 without printing the event, and
#                      a run exits 0, bitwise equal, with no scripted death in its log and the
#                      same results as the printed scenario run from a file
#   empty_equals_default  a scenario file that sets nothing (a bare [scenario]) resolves to
#                      exactly what the embedded default resolves to, key for key, except
#                      workload.dt (auto vs the default's 2e-9) and the [event.N] sections
#   quiet              `run -q` prints nothing at all on a passing run (no backends line, no
#                      note) on 2 ranks, where the same run without -q prints both
#   duplicates         a key twice in a file, in the file and by --set, twice by --set, an event
#                      key twice: the later value wins, and one note line each names both places;
#                      --set over the embedded default is no note; -q silences the notes
#   seed_range         seeds up to 2^63 - 1 (the log's signed 64-bit seed) are taken and logged
#                      as given; 2^63 is refused with that range
#   default_blocks     the embedded default with --set scenario.blocks=100000: refused with one
#                      line naming where dt came from, the limit and workload.dt = auto; with
#                      --set workload.dt=auto it resolves to a dt within the limit
#   quarantine_300     recovery.quarantine_after = 300 (above the old one-byte count's 255) on a
#                      fleet whose silent unit has 400 results fenced: that unit, and only it,
#                      is quarantined, its suspect event counting 300 to 400 fences; at 401 none
#   goodput_units      agefence-report replays the run's interruptions with the run's
#                      [goodput] keys (step in flight, restart, spares)
#   dt_auto            workload.dt = auto (or absent) on a 16,384-device fleet: accepted, the
#                      printed dt is 0.8 x the stability limit min(0.5*dx^2/nu, 2*nu/umax^2) and
#                      within it, the printed scenario reads back to the same one, a 2-step run
#                      uses that dt; an explicit dt above the limit still fails with the limit
#   keys_readme        the key table of configs/README.md is `agefence config --keys`, verbatim
#   names              UTF-8 text in a scenario's name is taken and printed back as it is;
#                      control characters and bytes that are not UTF-8 are refused, each in one
#                      line; an inline '#' comment is taken as ';' is; hexadecimal values are
#                      refused as such, -0 is printed 0; -c of a folder says it is a folder;
#                      `config -o` is refused
set -uo pipefail
. "$(dirname "$0")/lib.sh"
mode=$1 agefence=$2 report=$3 mpiexec=$4 work=$5 src=$6
rm -rf "$work" && mkdir -p "$work"
cd "$work" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok   $*"; }
# keys FILE: the key = value lines of a printed scenario up to its first [event.N] section,
# each prefixed with its section ("workload.dt = ..."), without comments.
keys() {
  awk '/^\[event\./ { exit } /^\[/ { s = substr($0, 2, length($0) - 2); next }
       /^[a-z_]+ = / { print s "." $0 }' "$1"
}

case "$mode" in
default_shortened)
  "$agefence" config --set scenario.steps=100 >resolved.ini 2>config.err
  rc=$?
  [ "$rc" = 0 ] || { cat config.err; fail "agefence config --set scenario.steps=100: exit $rc"; }
  grep -q '^steps = 100$' resolved.ini || fail "the printed scenario lacks steps = 100"
  ! grep -q '^\[event\.' resolved.ini || fail "the printed scenario still holds the event"
  [ "$(grep -c 'note:' config.err)" = 1 ] || { cat config.err; fail "not one note line"; }
  note=$(grep 'note:' config.err)
  for frag in "event.1 " "step 300" "scenario.steps = 100" "embedded" "skipped"; do
    [[ "$note" == *"$frag"* ]] || fail "the note lacks '$frag': $note"
  done
  [ "$(wc -l <config.err)" = 1 ] || { cat config.err; fail "more than the note on stderr"; }
  ok "config: exit 0, no event printed; $note"

  "$mpiexec" -n 2 "$agefence" run --set scenario.steps=100 -o short.h5 \
    >short.out 2>short.err
  rc=$?
  [ "$rc" = 0 ] || { cat short.err; fail "agefence run --set scenario.steps=100: exit $rc"; }
  [ "$(grep -c 'note:' short.err)" = 1 ] || { cat short.err; fail "run: not one note line"; }
  grep 'note:' short.err | grep -q 'event.1 (step 300)' || fail "run: the note does not name event.1"
  why=$(af_clean_run "$report" short.h5) || fail "$why"
  [ "$("$report" --attr /final bitwise_equal short.h5)" = 1 ] || fail "run: not bitwise equal"
  [ "$("$report" --attr /final steps_completed short.h5)" -ge 100 ] || fail "run: too few steps"
  "$report" --attr / config short.h5 >logged.ini || fail "no /@config"
  ! grep -q '^\[event\.' logged.ini || fail "the logged scenario holds the skipped event"
  "$report" --json short.h5 >short.json || fail "agefence-report --json"
  grep -Eq '"dead_scripted": *0[,}]' short.json || fail "the log has a scripted death"
  # The run is the printed scenario (no event) run from a file: the same steps, events, units
  # and final state.
  "$mpiexec" -n 2 "$agefence" run -q -c resolved.ini -o file.h5 >file.out 2>&1 ||
    { cat file.out; fail "the printed scenario does not run"; }
  "$report" --same file.h5 short.h5 >same.out 2>&1 || { cat same.out; fail "runs differ"; }
  ok "run: exit 0, one note, no scripted death, the same as the printed scenario without the event"
  ;;
empty_equals_default)
  # A file that sets nothing (an empty one is refused: tests/bad_input.sh).
  printf '[scenario]\n' >empty.ini
  "$agefence" config -c empty.ini >empty.out 2>empty.err || { cat empty.err; fail "empty.ini"; }
  "$agefence" config >default.out 2>default.err || { cat default.err; fail "embedded default"; }
  keys empty.out | grep -v '^workload\.dt = ' >empty.keys
  keys default.out | grep -v '^workload\.dt = ' >default.keys
  nkeys=$("$agefence" config --keys | grep -c '^  [a-z_]* .* default ')
  [ "$(wc -l <empty.keys)" = $((nkeys - 1)) ] ||
    fail "$(wc -l <empty.keys) keys compared, expected $((nkeys - 1)) (every key but workload.dt)"
  diff default.keys empty.keys >keys.diff ||
    { cat keys.diff; fail "built-in defaults (>) differ from the embedded default scenario (<)"; }
  grep -q '^\[event\.' default.out || fail "the embedded default lost its event"
  ! grep -q '^\[event\.' empty.out || fail "a file that sets nothing has an event"
  # dt: the embedded default keeps its explicit value; the file's is auto's.
  grep -q '^dt = 2.0000000000000001e-09$' default.out || fail "the embedded default's dt changed"
  grep -q '^# dt = auto: ' empty.out || fail "the file's dt does not say auto"
  ok "$(wc -l <empty.keys) keys of a file that sets nothing equal the embedded default's"
  ;;
quiet)
  "$mpiexec" -n 2 "$agefence" run --set scenario.steps=100 -o loud.h5 \
    >loud.out 2>loud.err
  rc=$?
  [ "$rc" = 0 ] || { cat loud.err; fail "the run without -q: exit $rc"; }
  grep -q '^agefence: backends: ' loud.err || { cat loud.err; fail "no backends line without -q"; }
  grep -q '^agefence: note: .*event.1 (step 300)' loud.err || fail "no note without -q"
  grep -q '^  verdict        PASS$' loud.out || fail "no summary without -q"
  "$mpiexec" -n 2 "$agefence" run -q --set scenario.steps=100 -o quiet.h5 \
    >quiet.out 2>quiet.err
  rc=$?
  [ "$rc" = 0 ] || { cat quiet.err; fail "run -q: exit $rc"; }
  [ ! -s quiet.out ] || { cat quiet.out; fail "run -q wrote to stdout"; }
  [ ! -s quiet.err ] || { cat quiet.err; fail "run -q wrote to stderr"; }
  [ "$("$report" --attr /final bitwise_equal quiet.h5)" = 1 ] || fail "run -q: not bitwise equal"
  "$agefence" config -q --set scenario.steps=100 >quiet.ini 2>quietc.err ||
    fail "config -q: exit $?"
  [ ! -s quietc.err ] || { cat quietc.err; fail "config -q wrote to stderr"; }
  grep -q '^steps = 100$' quiet.ini || fail "config -q did not print the scenario"
  ok "run -q: exit 0, nothing on stdout or stderr; without -q: $(wc -l <loud.err) stderr lines"
  ;;
duplicates)
  printf '[scenario]\nsteps = 10\nseed = 5\nsteps = 12\n\n[event.1]\nstep = 2\naction = kill\ndevice = 0\nunits = 0\nstep = 3\n' >dup.ini
  "$agefence" config -c dup.ini >dup.out 2>dup.err || { cat dup.err; fail "dup.ini refused"; }
  [ "$(wc -l <dup.err)" = 2 ] || { cat dup.err; fail "not two note lines for two duplicates"; }
  grep -qx "agefence: note: scenario.steps is set at dup.ini:2 and again at dup.ini:4: the later value, '12', wins" dup.err ||
    { cat dup.err; fail "no note for steps twice in the file"; }
  grep -qx "agefence: note: event.1.step is set at dup.ini:7 and again at dup.ini:11: the later value, '3', wins" dup.err ||
    { cat dup.err; fail "no note for event.1.step twice in the file"; }
  grep -qx 'steps = 12' dup.out || fail "the later steps did not win"
  grep -A1 '^\[event.1\]' dup.out | grep -qx 'step = 3' || fail "the later event.1.step did not win"
  # The file, then --set twice: one note for each later value.
  "$agefence" config -c dup.ini --set scenario.seed=7 --set scenario.seed=8 >set.out 2>set.err ||
    { cat set.err; fail "dup.ini with --set refused"; }
  grep -qx "agefence: note: scenario.seed is set at dup.ini:3 and again at --set: the later value, '7', wins" set.err ||
    { cat set.err; fail "no note for --set over the file"; }
  grep -qx "agefence: note: scenario.seed is set at --set and again at --set: the later value, '8', wins" set.err ||
    { cat set.err; fail "no note for --set twice"; }
  [ "$(wc -l <set.err)" = 4 ] || { cat set.err; fail "not four note lines"; }
  grep -qx 'seed = 8' set.out || fail "the last --set did not win"
  # The same through a run on 2 ranks: the notes once (rank 0), and -q silences them.
  "$mpiexec" -n 2 "$agefence" run -c dup.ini --set scenario.seed=7 -o dup.h5 \
    >run.out 2>run.err || { cat run.err; fail "the run of dup.ini"; }
  [ "$(grep -c '^agefence: note: ' run.err)" = 3 ] || { cat run.err; fail "run: not three notes"; }
  "$mpiexec" -n 2 "$agefence" run -q -c dup.ini -o dupq.h5 >runq.out 2>runq.err ||
    { cat runq.err; fail "the quiet run of dup.ini"; }
  [ ! -s runq.err ] || { cat runq.err; fail "run -q printed the notes"; }
  # --set over the embedded default is what --set is for: no note.
  "$agefence" config --set scenario.seed=9 >emb.out 2>emb.err || fail "embedded --set refused"
  [ ! -s emb.err ] || { cat emb.err; fail "a note for --set over the embedded default"; }
  grep -qx 'seed = 9' emb.out || fail "--set over the embedded default did not win"
  ok "$(cat dup.err set.err | wc -l) notes, the later values used; none for --set over the embedded default"
  ;;
seed_range)
  for seed in 9000000000000001 9223372036854775807; do
    "$agefence" config --set scenario.seed=$seed >seed.out 2>seed.err ||
      { cat seed.err; fail "seed $seed refused"; }
    grep -qx "seed = $seed" seed.out || fail "seed $seed not printed back"
  done
  "$mpiexec" -n 1 "$agefence" run -q --set scenario.seed=9223372036854775807 \
    --set scenario.steps=2 -o seed.h5 >seedrun.out 2>&1 || { cat seedrun.out; fail "the run"; }
  [ "$("$report" --attr / seed seed.h5)" = 9223372036854775807 ] || fail "the log's seed differs"
  "$agefence" config --set scenario.seed=9223372036854775808 >big.out 2>big.err
  rc=$?
  [ "$rc" = 2 ] || fail "seed 2^63: exit $rc, expected 2"
  [ "$(wc -l <big.err)" = 1 ] || { cat big.err; fail "seed 2^63: not one line"; }
  grep -qx "agefence: --set: scenario.seed = '9223372036854775808' is invalid: expected an integer in \[0, 9223372036854775807\]" big.err ||
    { cat big.err; fail "seed 2^63: not the range message"; }
  ok "seeds up to 2^63 - 1 taken and logged; $(cat big.err)"
  ;;
default_blocks)
  "$agefence" config --set scenario.blocks=100000 >big.out 2>big.err
  rc=$?
  [ "$rc" = 2 ] || fail "blocks=100000: exit $rc, expected 2"
  [ "$(wc -l <big.err)" = 1 ] || { cat big.err; fail "not one line"; }
  for frag in "default.ini (embedded):21: " "workload.dt = 2e-09 " "expected dt <= 1.52588e-14" \
    "--set workload.dt=auto"; do
    grep -qF -- "$frag" big.err || { cat big.err; fail "the message lacks '$frag'"; }
  done
  "$agefence" config --set scenario.blocks=100000 --set workload.dt=auto >auto.out 2>auto.err ||
    { cat auto.err; fail "blocks=100000 with workload.dt=auto refused"; }
  dt=$(sed -n 's/^dt = //p' auto.out)
  awk -v d="$dt" 'BEGIN { l = 0.5 / (25600000.0 ^ 2) / 0.05; exit !(d > 0 && d <= l) }' ||
    fail "dt = $dt is not within the limit"
  ok "$(cat big.err); with workload.dt=auto: dt = $dt"
  ;;
quarantine_300)
  # 4 devices of 1 unit, 400 blocks each; seed 1 makes device 3's unit silent, and at
  # silent_p = 0.2 most of its 8-cell blocks are corrupted and fenced by abft.
  set_=(--set recovery.detect=abft --set scenario.devices=4 --set scenario.units_per_device=1
    --set scenario.blocks=1600 --set scenario.block_len=8 --set workload.dt=auto
    --set corruption.silent_fraction=0.25 --set corruption.silent_p=0.2
    --set scenario.steps=20 --set scenario.seed=1)
  for q in 300 401; do
    "$mpiexec" -n 2 "$agefence" run -q -c "$src/tests/fixtures/faultfree.ini" \
      "${set_[@]}" --set recovery.quarantine_after=$q -o q$q.h5 >q$q.out 2>&1
    rc=$?
    # Exit 3: abft lets a few small (benign) corruptions through before the quarantine.
    [ "$rc" = 0 ] || [ "$rc" = 3 ] || { cat q$q.out; fail "quarantine_after=$q: exit $rc"; }
    "$report" --check q$q.h5 >q$q.check 2>&1 || { cat q$q.check; fail "q$q.h5: --check"; }
  done
  py=/usr/bin/python3
  "$py" -c "import h5py" 2>/dev/null || py=python3
  "$py" - q300.h5 q401.h5 <<'PY' || fail "see above"
import sys
import h5py
def look(path):
    f = h5py.File(path, "r")
    u = f["units"]
    silent, qstep = list(u["silent"][:]), list(u["quarantined_step"][:])
    sus = [(int(e["from_device"]), int(e["detail"])) for e in f["events"][:]
           if e["kind"] == b"suspect"]
    fenced = int(f["final"].attrs["fenced_total"])
    return silent, qstep, sus, fenced
silent, qstep, sus, fenced = look(sys.argv[1])
bad = 0
if silent != [0, 0, 0, 1]:
    print(f"     silent units {silent}: expected device 3's alone"); bad = 1
if fenced < 300:
    print(f"     {fenced} results fenced: the scenario no longer reaches 300"); bad = 1
if [q >= 0 for q in qstep] != [False, False, False, True]:
    print(f"     quarantined_step {qstep}: expected device 3's unit alone"); bad = 1
# Declared at the plan after the count reached 300: the suspect event's detail is the count
# then, which the rest of that step's fences may have raised.
if len(sus) != 1 or sus[0][0] != 3 or not 300 <= sus[0][1] <= 400:
    print(f"     suspect events (device, fences) {sus}: expected one, device 3, 300..400 fences"); bad = 1
at = sus[0][1] if len(sus) == 1 else None
# Above what the unit is fenced (400 blocks, each fenced once): never reached, no quarantine.
silent, qstep, sus, fenced = look(sys.argv[2])
if sus or any(q >= 0 for q in qstep) or fenced > 400:
    print(f"     quarantine_after = 401: {sus} suspects, {fenced} fenced: expected none"); bad = 1
print(f"     quarantine_after = 300: device 3 suspect with {at} fences counted")
sys.exit(bad)
PY
  ok "quarantine_after = 300 quarantines the silent unit; 401 never"
  ;;
goodput_units)
  # One device's units killed at step 20 (10 simulated hours a step): one hardware loss.
  "$mpiexec" -n 2 "$agefence" run -q -c "$src/tests/fixtures/faultfree.ini" \
    --set aging.sim_hours_per_step=10 --set goodput.step_seconds=4 --set event.1.step=20 \
    --set goodput.restart_seconds=300 --set goodput.spare_nodes=2 \
    --set event.1.action=kill --set event.1.device=2 --set event.1.units=0-1 -o g.h5 >g.out 2>&1 ||
    { cat g.out; fail "the run"; }
  "$report" g.h5 >g.txt 2>&1 || { cat g.txt; fail "agefence-report"; }
  "$report" --json g.h5 >g.json 2>&1 || { cat g.json; fail "agefence-report --json"; }
  grep -q '^  goodput      checkpoint_restart [01]\.[0-9]* ETTR by replay' g.txt ||
    { cat g.txt; fail "no goodput line"; }
  py=/usr/bin/python3
  "$py" - g.json <<'PY' || fail "see above"
import json, sys
g = json.load(open(sys.argv[1]))["goodput"]
bad = []
p = g["params"]
if (p["step_seconds"], p["restart_seconds"], p["spare_nodes"]) != (4, 300, 2):
    bad.append(f"the [goodput] keys of the run are not the replay's: {p}")
t = g["timeline"]
if (t["hardware_losses"], t["devices_lost"], t["job_level"]) != (1, 1, 0):
    bad.append(f"one hardware loss of one device expected: {t}")
s = g["shrink_rebuild"]
# shrink_rebuild loses at most the step in flight, goodput.step_seconds = 4 s
if not 0 <= s["lost_work_s"] <= 4:
    bad.append(f"shrink_rebuild lost {s['lost_work_s']} s, more than the 4 s step in flight")
c = g["checkpoint_restart"]
# checkpoint_restart pays one restart of 300 s at least
if c["restart_s"] < 300:
    bad.append(f"checkpoint_restart restarted for {c['restart_s']} s, under the 300 s restart")
for k in ("checkpoint_restart", "remap", "shrink_rebuild"):
    e = g[k]
    if not (0 < e["ettr"] < 1 and e["ettr"] >= e["young"]["ettr"] and e["ettr"] >= e["daly"]["ettr"]):
        bad.append(f"{k}: ETTR {e['ettr']} not in (0, 1) or below Young's or Daly's")
for b in bad:
    print("     " + b)
sys.exit(1 if bad else 0)
PY
  ok "the report replays the run's loss with its [goodput] keys"
  ;;
dt_auto)
  # 16,384 devices x 16 units, one 64-cell block per device: dx = 1/1048576, nu = 0.05, so the
  # limit is the diffusion one, 0.5*dx^2/nu = 9.09e-12.
  fleet='[scenario]\nname = fleet16k\ndevices = 16384\nblocks = 16384\nblock_len = 64\n'
  printf "$fleet" >absent.ini
  printf "$fleet"'[workload]\ndt = auto\n' >auto.ini
  want=$(awk 'BEGIN { dx = 1 / (16384 * 64); l = 0.5 * dx * dx / 0.05; a = 2 * 0.05 / 1.5^2;
                      if (a < l) l = a; printf "%.17g %.17g", l, 0.8 * l }')
  limit=${want% *} dt=${want#* }
  for f in absent auto; do
    "$agefence" config -c $f.ini >$f.out 2>$f.err || { cat $f.err; fail "$f.ini refused"; }
    got=$(sed -n 's/^dt = //p' $f.out)
    [ -n "$got" ] || fail "$f.ini: no dt printed"
    [ "$got" = "$dt" ] || fail "$f.ini: dt = $got, expected 0.8 x $limit = $dt"
    awk -v g="$got" -v l="$limit" 'BEGIN { exit !(g > 0 && g <= l) }' ||
      fail "$f.ini: dt = $got is above the limit $limit"
    grep -q "^# dt = auto: 0.8 x the stability limit " $f.out || fail "$f.ini: no auto comment"
    # The printed scenario runs as is and is the same scenario.
    "$agefence" config -c $f.out >$f.back 2>&1 || { cat $f.back; fail "$f.ini: printed not re-read"; }
    diff <(grep -v '^#' $f.out) <(grep -v '^#' $f.back) >/dev/null ||
      fail "$f.ini: the printed scenario reads back to another one"
    ok "$f.ini: dt = $got = 0.8 x $limit"
  done
  # The run uses the resolved value (2 steps on one rank: start-up and validation, quickly).
  "$mpiexec" -n 1 "$agefence" run -q -c absent.ini --set scenario.steps=2 -o fleet.h5 \
    >fleet.out 2>&1 || { cat fleet.out; fail "the 16,384-device run"; }
  "$report" --attr / config fleet.h5 | grep -qx "dt = $got" || fail "the run did not log dt = $got"
  [ "$("$report" --attr /final bitwise_equal fleet.h5)" = 1 ] || fail "the run is not bitwise equal"
  ok "a 2-step run on 16384 devices logs dt = $got and passes"
  # An explicit dt above the limit keeps its error, with the limit.
  printf "$fleet"'[workload]\ndt = 1e-11\n' >high.ini
  "$agefence" config -c high.ini >high.out 2>high.err
  rc=$?
  [ "$rc" = 2 ] || fail "dt = 1e-11 on 16384 devices: exit $rc, expected 2"
  [ "$(wc -l <high.err)" = 1 ] || { cat high.err; fail "not one line"; }
  grep -q "^agefence: high.ini:7: workload.dt = 1e-11 violates the diffusion stability limit: .*expected dt <= 9.09495e-12 for 1048576 cells" high.err ||
    { cat high.err; fail "dt = 1e-11: not the stability message"; }
  ok "dt = 1e-11: $(cat high.err)"
  ;;
keys_readme)
  "$agefence" config --keys >keys.txt || fail "agefence config --keys"
  awk '/^## Keys/ { k = 1 } k && /^```/ { if (in_) exit; in_ = 1; next } in_ { print }' \
    "$src/configs/README.md" >readme.txt
  [ -s readme.txt ] || fail "no key table in configs/README.md"
  diff readme.txt keys.txt >keys.diff ||
    { cat keys.diff; fail "configs/README.md's key table (<) is not agefence config --keys (>)"; }
  ok "configs/README.md's key table is agefence config --keys ($(wc -l <keys.txt) lines)"
  ;;
names)
  printf '[scenario]\nname = flotte-fiabilité-日本  # the fleet\nsteps = 40 ; short\n' >u.ini
  "$agefence" config -c u.ini >u.out 2>u.err || fail "a UTF-8 name: exit $?: $(cat u.err)"
  grep -qx "name = flotte-fiabilité-日本" u.out && grep -qx "steps = 40" u.out ||
    fail "a UTF-8 name with '#' and ';' comments: $(grep -E '^(name|steps)' u.out)"
  "$agefence" config -c u.out >u2.out 2>&1 && [ "$(keys u.out)" = "$(keys u2.out)" ] ||
    fail "the printed UTF-8 scenario does not read back to itself"
  ok "a UTF-8 name and inline '#' and ';' comments"
  # refused WHAT FRAGMENT ARGS...: exit 2 and one line holding FRAGMENT
  refused() {
    local what=$1 frag=$2
    shift 2
    "$agefence" config "$@" >r.out 2>r.err
    local rc=$?
    [ "$rc" = 2 ] && [ "$(wc -l <r.err)" = 1 ] && grep -qF -- "$frag" r.err ||
      fail "$what: exit $rc: $(cat r.err)"
    ok "$what: $(cat r.err)"
  }
  printf '[scenario]\nname = a\tb\n' >tab.ini
  refused "a tab in a name" "tab.ini:2: scenario.name holds a control character" -c tab.ini
  printf '[scenario]\nname = a\033[31m\n' >esc.ini
  refused "an escape in a name" "esc.ini:2: scenario.name holds a control character" -c esc.ini
  printf '[scenario]\nname = caf\xe9\n' >latin1.ini
  refused "a Latin-1 name" "latin1.ini:2: scenario.name is not UTF-8 text" -c latin1.ini
  refused "a hexadecimal real" "aging.p_max = '0x1p-4' is invalid: expected a number in [0, 1] (decimal: hexadecimal is not taken)" \
    --set aging.p_max=0x1p-4
  refused "a hexadecimal integer" "scenario.steps = '0x10' is invalid: expected an integer in [1, 1000000000] (decimal: hexadecimal is not taken)" \
    --set scenario.steps=0x10
  refused "-c a folder" "$src/configs: is a folder, not a scenario file" -c "$src/configs"
  refused "config -o" "config: -o x.h5: config writes no log" -o x.h5
  [ ! -e x.h5 ] || fail "config -o made x.h5"
  "$agefence" config --set aging.p_max=-0 >z.out 2>&1 || fail "-0: exit $?"
  grep -qx "p_max = 0" z.out || fail "-0 printed as $(grep p_max z.out)"
  ok "-0 is printed as 0"
  ;;
*) fail "unknown mode $mode" ;;
esac
