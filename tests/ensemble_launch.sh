#!/usr/bin/env bash
# scripts/ensemble.sh: an ensemble of a small scenario on this machine, checked through its files.
#   ensemble_launch.sh AGEFENCE REPORT MPIEXEC WORKDIR SRCDIR
# 1. -n 3 -j 2 -r 2 over --grid aging.sim_hours_per_step=50,100 of tests/fixtures/small.ini
#    (40 steps), launched through the suite's MPIEXEC: exit 0; exactly DIR/member-0000..0005.h5,
#    DIR/grid and DIR/members.txt; grid holds the key; members.txt one line a member with its
#    seed (the scenario's own 7, 8, 9 at each grid point), grid value and exit=0; every log's
#    /@config and /@seed the member's, its /@ranks 2, its /final@sim_hours 40 x the grid value;
#    six progress lines (the ETA counting -j) and the aggregate line.
# 2. Bad input, each exit 2 with one line on stderr, nothing on stdout and the directory as it
#    was: an unknown option, -n 0, a non-empty DIR without --force, a --grid without values,
#    with a value twice, or of a [goodput] key (the report's: agefence-report --grid).
# 3. --force over the ensemble with --seed0 100 and one grid key of two values: the old
#    members gone (a stray member-0009.h5 among them), a file not the script's kept, the new
#    seeds 100-102 in members.txt and the logs, no grid line left of another key.
# 4. A member that fails (a launcher that exits 1 for seed 101): exit 1, the member named on
#    stderr and exit=1 in members.txt, the other members run; one that exits 3 (a final state
#    that differs from the reference) is a result: exit 0, named on stderr, exit=3 listed.
# 5. configs/slurm/agefence-ensemble.sbatch's tasks 0-5 run by hand (no Slurm) with the grid and
#    scenario of 1: the same member names, seeds and grid values, DIR/grid; a task past the
#    ensemble refused with one line, exit 2. (tests/slurm.sh submits a real 2-task array.)
set -uo pipefail
agefence=$1 report=$2 mpiexec=$3 work=$4 src=$5
script=$src/scripts/ensemble.sh
fixture=$src/tests/fixtures/small.ini
rm -rf "$work" && mkdir -p "$work" || exit 1
cd "$work" || exit 1
fail() {
  echo "FAIL: $*"
  exit 1
}
ok() { echo "ok   $*"; }
export AGEFENCE_BIN=$agefence AGEFENCE_MPIEXEC=$mpiexec
ens() { "$script" "$@"; }

# ---- 1. the ensemble ----------------------------------------------------------------------------
key=aging.sim_hours_per_step ranks=2
ens -o ens -n 3 -j 2 -r "$ranks" -c "$fixture" --set scenario.steps=40 --grid "$key=50,100" \
  >run.out 2>run.err
rc=$?
[ "$rc" = 0 ] || { cat run.out run.err; fail "the ensemble: exit $rc"; }
want=$(printf '%s\n' grid member-0000.h5 member-0001.h5 member-0002.h5 member-0003.h5 \
  member-0004.h5 member-0005.h5 members.txt)
[ "$(ls ens)" = "$want" ] || fail "ens/ holds: $(ls ens | tr '\n' ' ')"
[ "$(cat ens/grid)" = "$key" ] || fail "ens/grid: '$(cat ens/grid)', expected '$key'"
# check_member FILE I SEED VALUE: members.txt's line I and the log's own record.
check_member() {
  local f=$1 i=$2 seed=$3 val=$4 line want cfg
  line=$(sed -n "$((i + 1))p" "$f/members.txt")
  want="$(printf 'member-%04d.h5' "$i") seed=$seed${val:+ $key=$val} exit=0"
  [ "$line" = "$want" ] || fail "$f/members.txt line $((i + 1)): '$line', expected '$want'"
  local log
  log=$f/$(printf 'member-%04d.h5' "$i")
  cfg=$("$report" --attr / config "$log") || fail "$log: no /@config"
  grep -qx "seed = $seed" <<<"$cfg" || fail "$log: /@config has $(grep '^seed' <<<"$cfg"), expected $seed"
  grep -qx "sim_hours_per_step = ${val:-400}" <<<"$cfg" ||
    fail "$log: /@config has $(grep '^sim_hours_per_step' <<<"$cfg"), expected ${val:-400}"
  grep -qx "steps = 40" <<<"$cfg" || fail "$log: the --set scenario.steps=40 did not pass through"
  [ "$("$report" --attr / seed "$log")" = "$seed" ] || fail "$log: /@seed is not $seed"
  # The grid's value reached the run: 40 steps of it.
  [ "$("$report" --attr /final sim_hours "$log")" = $((40 * ${val:-400})) ] ||
    fail "$log: /final@sim_hours = $("$report" --attr /final sim_hours "$log"), expected $((40 * ${val:-400}))"
  [ "$("$report" --attr / ranks "$log")" = "$ranks" ] || fail "$log: /@ranks is not $ranks"
}
[ "$(wc -l <ens/members.txt)" = 6 ] || fail "ens/members.txt: $(wc -l <ens/members.txt) lines"
for i in 0 1 2 3 4 5; do
  check_member ens "$i" $((7 + i % 3)) $((50 * (1 + i / 3)))
done
[ "$(grep -c '^ensemble: [1-6]/6 done (member-000[0-5].h5, seed [789], '"$key"'=[0-9]*, exit 0), [0-9.]* s elapsed, ETA [0-9]* s$' run.err)" = 6 ] ||
  { cat run.err; fail "not six progress lines"; }
grep -q '^ensemble: 6 members in [0-9.]* s ([0-9.]* members/s)' run.out || { cat run.out; fail "no rate line"; }
grep -q "aggregate with: .*agefence-report ens$" run.out || { cat run.out; fail "no aggregate line"; }
# The ETA counts -j: after the first member (launched at once with a second one) took X s, the
# five left, two at a time, need about 5 / 2 X more, not 5 X.
awk '/^ensemble: 1\/6 done/ { x = $(NF - 5); y = $(NF - 1); exit !(y <= 3 * x + 1) }' run.err ||
  { grep '^ensemble: 1/6' run.err; fail "the first ETA does not count -j 2"; }
cp ens/members.txt ens1.members.txt
ok "6 members (3 seeds x 2 values of $key, 2 at once, 2 ranks each): logs, grid, members.txt, /@config"

# ---- 2. bad input -------------------------------------------------------------------------------
before=$(ls -l --time-style=+%s.%N ens)
# refused WHAT ARGS...: exit 2, one line on stderr naming it, nothing else, ens/ as it was.
refused() {
  local what=$1 rc
  shift
  ens "$@" >bad.out 2>bad.err
  rc=$?
  [ "$rc" = 2 ] || { cat bad.out bad.err; fail "$what: exit $rc, expected 2"; }
  [ "$(wc -l <bad.err)" = 1 ] || { cat bad.err; fail "$what: not one line on stderr"; }
  [ ! -s bad.out ] || { cat bad.out; fail "$what: output on stdout"; }
  [ "$(ls -l --time-style=+%s.%N ens)" = "$before" ] || fail "$what: ens/ changed"
  ok "$what: exit 2: $(cat bad.err)"
}
refused "unknown option" -o ens2 -n 2 --bogus
[ ! -e ens2 ] || fail "unknown option: ens2 created"
refused "-n 0" -o ens2 -n 0
refused "non-empty DIR without --force" -o ens -n 2 -c "$fixture"
grep -q 'not empty' bad.err || fail "the non-empty refusal does not say so"
refused "--grid without values" -o ens2 -n 2 --grid "$key"
refused "--grid with an empty value list" -o ens2 -n 2 --grid "$key="
refused "--grid with a value twice" -o ens2 -n 2 --grid "$key=50,100,50"
grep -q "the value '50' is given twice" bad.err || fail "the repeated value is not named"
refused "--grid of a [goodput] key" -o ens2 -n 2 --grid goodput.restart_seconds=60,600
grep -q "agefence-report --grid goodput.restart_seconds=60,600" bad.err ||
  fail "a [goodput] grid key does not send to the report"
[ ! -e ens2 ] || fail "bad input: ens2 created"

# ---- 3. --force --------------------------------------------------------------------------------
cp ens/member-0005.h5 ens/member-0009.h5
echo "kept" >ens/notes.txt
ens -o ens -n 3 -j 2 --seed0 100 --force -c "$fixture" --set scenario.steps=40 \
  >force.out 2>force.err || { cat force.out force.err; fail "--force: exit $?"; }
want=$(printf '%s\n' member-0000.h5 member-0001.h5 member-0002.h5 members.txt notes.txt)
[ "$(ls ens)" = "$want" ] || fail "after --force ens/ holds: $(ls ens | tr '\n' ' ')"
[ "$(cat ens/notes.txt)" = kept ] || fail "--force changed notes.txt"
[ "$(wc -l <ens/members.txt)" = 3 ] || fail "after --force members.txt: $(wc -l <ens/members.txt) lines"
ranks=1
for i in 0 1 2; do
  check_member ens "$i" $((100 + i)) ""
done
ok "--force: the old members and grid removed, notes.txt kept, seeds 100-102 from --seed0"

# ---- 4. a failing member ------------------------------------------------------------------------
cat >failing-launcher <<EOF
#!/usr/bin/env bash
case " \$* " in *" scenario.seed=101 "*) echo "injected failure" >&2; exit 1 ;; esac
exec "$mpiexec" "\$@"
EOF
chmod +x failing-launcher
AGEFENCE_MPIEXEC=$work/failing-launcher ens -o fails -n 3 -j 2 --seed0 100 -c "$fixture" \
  --set scenario.steps=40 >fails.out 2>fails.err
rc=$?
[ "$rc" = 1 ] || { cat fails.out fails.err; fail "a failing member: exit $rc, expected 1"; }
grep -q 'failed: member-0001.h5 (exit 1)' fails.err || { cat fails.err; fail "the failed member is not named"; }
grep -qx 'member-0001.h5 seed=101 exit=1' fails/members.txt || fail "members.txt: no exit=1 for member-0001"
[ "$(grep -c 'exit=0$' fails/members.txt)" = 2 ] || fail "the other members did not pass"
grep -q 'injected failure' fails/member-0001.err || fail "no member-0001.err with the member's output"
ok "a failing member: exit 1, named, exit=1 in members.txt, its output in member-0001.err"
# A member whose final state differs from the reference (exit 3) is a result: exit 0, named.
cat >differing-launcher <<EOF
#!/usr/bin/env bash
"$mpiexec" "\$@"; rc=\$?
case " \$* " in *" scenario.seed=101 "*) exit 3 ;; esac
exit \$rc
EOF
chmod +x differing-launcher
AGEFENCE_MPIEXEC=$work/differing-launcher ens -o differs -n 3 -j 2 --seed0 100 -c "$fixture" \
  --set scenario.steps=40 >differs.out 2>differs.err
rc=$?
[ "$rc" = 0 ] || { cat differs.out differs.err; fail "a member of exit 3: exit $rc, expected 0"; }
grep -q 'differs from the reference .*member-0001.h5' differs.err ||
  { cat differs.err; fail "the member of exit 3 is not named"; }
grep -qx 'member-0001.h5 seed=101 exit=3' differs/members.txt || fail "members.txt: no exit=3"
ok "a member of exit 3 (an undetected corruption) counts as a result, named"

# ---- 5. the Slurm array script's members, without Slurm -------------------------------------------
# configs/slurm/agefence-ensemble.sbatch run by hand as tasks 0-5 of an array, through
# agefence.sbatch's mpirun launcher (the suite's af-mpiexec): the same files, seeds and grid values
# as scripts/ensemble.sh's ensemble of section 1, member for member; task 6 is past the ensemble.
array=$src/configs/slurm/agefence-ensemble.sbatch
task() {
  SLURM_ARRAY_TASK_ID=$1 SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_MAX=5 SLURM_NTASKS=$ranks \
    AGEFENCE_LAUNCHER=mpirun AGEFENCE_MPIRUN=$mpiexec AGEFENCE_ENSEMBLE_DIR=array \
    AGEFENCE_SCENARIO=$fixture AGEFENCE_SET="scenario.steps=40" AGEFENCE_GRID="$key=50,100" \
    bash "$array" >"array.$1.out" 2>&1
}
ranks=2
for i in 0 1 2 3 4 5; do
  task "$i" || { cat "array.$i.out"; fail "array task $i: exit $?"; }
done
[ "$(cat array/grid)" = "$key" ] || fail "array/grid: '$(cat array/grid)'"
want=$(printf '%s\n' grid member-0000.h5 member-0001.h5 member-0002.h5 member-0003.h5 \
  member-0004.h5 member-0005.h5)
[ "$(ls array)" = "$want" ] || fail "array/ holds: $(ls array | tr '\n' ' ')"
# members.txt is scripts/ensemble.sh's: section 1's says what each member must be.
cp ens1.members.txt array/members.txt
for i in 0 1 2 3 4 5; do
  check_member array "$i" $((7 + i % 3)) $((50 * (1 + i / 3)))
done
task 6
rc=$?
[ "$rc" = 2 ] || { cat array.6.out; fail "array task 6 of 6 members: exit $rc, expected 2"; }
[ "$(wc -l <array.6.out)" = 1 ] || { cat array.6.out; fail "array task 6: not one line"; }
[ ! -e array/member-0006.h5 ] || fail "array task 6 wrote a log"
ok "the array script's tasks 0-5: the same members as scripts/ensemble.sh's; task 6: $(cat array.6.out)"

# ---- 6. two grid keys: the first outermost, in both scripts ----------------------------------------
key2=recovery.replica_interval
ens -o ens2 -n 1 -j 2 -c "$fixture" --set scenario.steps=40 --grid "$key=50,100" \
  --grid "$key2=5,10" >ens2.out 2>&1 || { cat ens2.out; fail "two grid keys: exit $?"; }
[ "$(cat ens2/grid)" = "$key"$'\n'"$key2" ] || fail "ens2/grid: $(cat ens2/grid)"
for i in 0 1 2 3; do
  h=$((50 * (1 + i / 2))) r=$((5 * (1 + i % 2)))
  line=$(sed -n "$((i + 1))p" ens2/members.txt)
  [ "$line" = "member-000$i.h5 seed=7 $key=$h $key2=$r exit=0" ] || fail "ens2/members.txt: '$line'"
  SLURM_ARRAY_TASK_ID=$i SLURM_ARRAY_TASK_MAX=3 SLURM_NTASKS=1 AGEFENCE_SEEDS=1 \
    AGEFENCE_LAUNCHER=mpirun AGEFENCE_MPIRUN=$mpiexec AGEFENCE_ENSEMBLE_DIR=array2 \
    AGEFENCE_SCENARIO=$fixture AGEFENCE_SET="scenario.steps=40" \
    AGEFENCE_GRID="$key=50,100 $key2=5,10" bash "$array" >"array2.$i.out" 2>&1 ||
    { cat "array2.$i.out"; fail "two grid keys: array task $i: exit $?"; }
  for f in ens2 array2; do
    cfg=$("$report" --attr / config "$f/member-000$i.h5") || fail "$f/member-000$i.h5: no /@config"
    grep -qx "sim_hours_per_step = $h" <<<"$cfg" && grep -qx "replica_interval = $r" <<<"$cfg" ||
      fail "$f/member-000$i.h5: not $key=$h $key2=$r"
  done
done
[ "$(cat array2/grid)" = "$(cat ens2/grid)" ] || fail "array2/grid: $(cat array2/grid)"
ok "two grid keys: 2 x 2 points, $key outermost, in both scripts"
echo "PASS"
