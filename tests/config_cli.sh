#!/usr/bin/env bash
# The scenario as `agefence config` and `agefence run` resolve it.
#   config_cli.sh MODE AGEFENCE REPORT MPIEXEC WORKDIR SOURCE_DIR
# MODE:
#   default_shortened  the embedded default scenario with --set scenario.steps=100: its event at
#                      step 300 is skipped with one note line on stderr (naming event.1, step 300
#                      and steps = 100); `agefence config` exits 0 without printing the event, and
#                      a run exits 0, bitwise equal, with no scripted death in its log and the
#                      same results as the printed scenario run from a file
#   empty_equals_default  an empty scenario file resolves to exactly what the embedded default
#                      resolves to, key for key, except workload.dt (auto vs the default's 2e-9)
#                      and the [event.N] sections
#   dt_auto            workload.dt = auto (or absent) on a 16,384-device fleet: accepted, the
#                      printed dt is 0.8 x the stability limit min(0.5*dx^2/nu, 2*nu/umax^2) and
#                      within it, the printed scenario reads back to the same one, a 2-step run
#                      uses that dt; an explicit dt above the limit still fails with the limit
#   keys_readme        the key table of configs/README.md is `agefence config --keys`, verbatim
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

  "$mpiexec" -n 2 "$agefence" run -q --set scenario.steps=100 -o short.h5 \
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
  : >empty.ini
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
  ! grep -q '^\[event\.' empty.out || fail "an empty file has an event"
  # dt: the embedded default keeps its explicit value; the empty file's is auto's.
  grep -q '^dt = 2.0000000000000001e-09$' default.out || fail "the embedded default's dt changed"
  grep -q '^# dt = auto: ' empty.out || fail "the empty file's dt does not say auto"
  ok "$(wc -l <empty.keys) keys of an empty file equal the embedded default's"
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
*) fail "unknown mode $mode" ;;
esac
