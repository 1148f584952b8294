#!/usr/bin/env bash
# agefence on a real Slurm: a single-node cluster of this machine, started from nothing in a
# scratch folder, and jobs from configs/slurm/agefence.sbatch (docs/clusters.md).
#   slurm.sh AGEFENCE REPORT SRCDIR WORKDIR
#
# 1. scripts/setup.sh --slurm installs Slurm and munge when missing. A private munged (its own
#    key, socket and files), slurmctld and slurmd start with a slurm.conf for `hostname -s` on
#    free loopback ports (proctrack/linuxproc, task/none, select/cons_tres: no cgroups), all
#    state in /tmp/agefence-slurm.XXXXXX, so nothing can collide with a site's Slurm or munge.
#    An EXIT trap cancels the jobs, stops every daemon by its pid and removes the scratch folder
#    (the daemons' logs are kept in WORKDIR/daemons).
# 2. Jobs, each checked through its exit status, its %x-%j.out/.err files and its log:
#    srun-pass     srun --mpi=pmix, 3 tasks, tests/fixtures/small.ini, the default log path;
#    mpirun-pass   AGEFENCE_LAUNCHER=mpirun, 2 tasks, faultfree.ini;
#    ensemble      configs/slurm/agefence-ensemble.sbatch as a 2-task array (2 srun tasks each,
#                  small.ini for 40 steps): DIR/member-0000.h5 and member-0001.h5, valid, with
#                  the scenario's seed 7 and the next, 8, and no DIR/grid without a grid;
#    both: exit 0, `agefence-report --check`, bitwise_equal = 1, the rank count, nothing
#    allocated and no communicator created after start-up, and the log's launch record: the
#    root attributes slurm_job_id = the job id, slurm_ntasks = the task count, launcher = srun
#    or mpirun as the job used;
#    limit-srun, limit-mpirun: an endless fault-free run with --time=00:02:00
#    --signal=B:TERM@105: the batch shell gets SIGTERM before the limit (15-45 s in: Slurm
#    checks limits periodically) and forwards it; agefence takes some seconds to finish (its
#    final reference check), exits 5, and the log is valid with exit_reason = signal and as
#    many /steps rows as steps_completed; the job ends before its limit (not TIMEOUT).
# Wall time here: 45-80 s (sbatch --wait polls at growing intervals), plus the first install.
# 3. srun without PMIx must not run N copies: `srun --mpi=none -n 2` (Debian's Open MPI stops
#    in MPI_Init), and the same with SLURM_NODELIST hidden from the tasks, which makes Open MPI
#    start each task as a one-rank job, as an MPI without Slurm support does: agefence must
#    refuse with the task count line (exit 2) and leave no log (the launch check, sim/io/launch.c).
# Exit 0 pass, 1 fail, 77 skip (not root: the daemons need it).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
agefence=$1 report=$2 src=$3 work=$4
t0=$SECONDS
say() { echo "slurm.sh [$((SECONDS - t0)) s] $*"; }
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
if [ "$(id -u)" != 0 ]; then
  echo "SKIP: the single-node Slurm of this test needs root (munged, slurmctld, slurmd)"
  exit 77
fi

# This test's Slurm only: forget a Slurm job or configuration the test itself may run in.
for v in $(compgen -e | grep -E '^(SLURM_|SBATCH_|SRUN_|SALLOC_|SQUEUE_|SINFO_)' || true); do
  unset "$v"
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
# More ranks than cores here: srun's tasks do not know it, so make them yield while they wait.
export OMPI_MCA_mpi_yield_when_idle=1

"$src/scripts/setup.sh" --slurm || fail "scripts/setup.sh --slurm could not install Slurm and munge"
for c in munged mungekey munge unmunge slurmctld slurmd sbatch srun sinfo squeue scontrol \
  scancel h5dump; do
  command -v "$c" >/dev/null || fail "$c is not installed (scripts/setup.sh --slurm)"
done
say "$(slurmctld -V), $(munged -V 2>&1 | head -n 1)"

rm -rf "$work" && mkdir -p "$work" || fail "cannot create $work"
scratch=$(mktemp -d /tmp/agefence-slurm.XXXXXX) || fail "mktemp"
# munged wants every folder above its socket searchable by all.
chmod 755 "$scratch"
munge_pid="" ctld_pid="" slurmd_pid=""

stop_pid() { # stop_pid PID NAME: SIGTERM, then SIGKILL after 15 s
  local pid=$1 name=$2
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 150); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "slurm.sh: $name ($pid) did not stop on SIGTERM: SIGKILL" >&2
    kill -KILL "$pid" 2>/dev/null
  fi
  wait "$pid" 2>/dev/null
}
cleanup() {
  local rc=$?
  trap - EXIT
  if [ -n "$ctld_pid" ] && kill -0 "$ctld_pid" 2>/dev/null; then
    local jobs
    jobs=$(squeue -h -o %i 2>/dev/null)
    if [ -n "$jobs" ]; then
      # shellcheck disable=SC2086
      scancel $jobs 2>/dev/null
      for _ in $(seq 1 30); do
        [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
        sleep 1
      done
    fi
  fi
  stop_pid "$slurmd_pid" slurmd
  stop_pid "$ctld_pid" slurmctld
  stop_pid "$munge_pid" munged
  mkdir -p "$work/daemons"
  cp "$scratch"/*.log "$scratch"/*.conf "$scratch"/munge/*.log "$work/daemons/" 2>/dev/null
  if [ "$rc" != 0 ] && [ "$rc" != 77 ]; then
    for f in "$scratch"/slurmctld.log "$scratch"/slurmd.log; do
      [ -f "$f" ] && { echo "---- last lines of $(basename "$f")" >&2; tail -n 15 "$f" >&2; }
    done
  fi
  rm -rf "$scratch"
  say "daemons stopped, scratch removed (exit $rc)"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ---- the cluster ------------------------------------------------------------------------------
free_port() { # a TCP port nothing listens on, not in $1
  local p
  for _ in $(seq 1 100); do
    p=$((20000 + RANDOM % 40000))
    [ "$p" = "${1:-}" ] && continue
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  return 1
}
ctld_port=$(free_port) || fail "no free port"
slurmd_port=$(free_port "$ctld_port") || fail "no free port"
host=$(hostname -s)
cpus=$(nproc)
# Room for every job of this test at once (they oversubscribe the cores; Slurm is told so).
[ "$cpus" -ge 16 ] || cpus=16

# Every daemon runs under timeout(1): should this script be killed outright (CTest's timeout
# kills without a trap), the daemons still end within the test's own time limit. A SIGTERM to
# timeout is passed on to its daemon, so the pids kept are timeout's.
bounded="timeout -k 10 ${AGEFENCE_SLURM_DAEMON_LIFE:-900}"
mkdir -p "$scratch/munge" "$scratch/state" "$scratch/spool"
mungekey -c -k "$scratch/munge/munge.key" || fail "mungekey"
$bounded munged -F --socket="$scratch/munge/socket" --key-file="$scratch/munge/munge.key" \
  --pid-file="$scratch/munge/munged.pid" --log-file="$scratch/munge/munged.log" \
  --seed-file="$scratch/munge/munged.seed" >"$scratch/munge/stdout" 2>&1 &
munge_pid=$!
for _ in $(seq 1 100); do
  munge -n -S "$scratch/munge/socket" 2>/dev/null | unmunge -S "$scratch/munge/socket" \
    >/dev/null 2>&1 && break
  kill -0 "$munge_pid" 2>/dev/null || { cat "$scratch/munge/stdout" >&2; fail "munged died"; }
  sleep 0.1
done
munge -n -S "$scratch/munge/socket" | unmunge -S "$scratch/munge/socket" >/dev/null ||
  fail "munged does not answer on $scratch/munge/socket"

conf=$scratch/slurm.conf
cat >"$conf" <<EOF
# agefence tests/slurm.sh: a single-node cluster on loopback, no cgroups.
ClusterName=agefence$$
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$scratch/munge/socket
StateSaveLocation=$scratch/state
SlurmdSpoolDir=$scratch/spool
SlurmctldPidFile=$scratch/slurmctld.pid
SlurmdPidFile=$scratch/slurmd.pid
SlurmctldLogFile=$scratch/slurmctld.log
SlurmdLogFile=$scratch/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
KillWait=10
MinJobAge=600
SlurmdParameters=config_overrides
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=1000 State=UNKNOWN
PartitionName=agefence Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$conf
$bounded slurmctld -D -f "$conf" >"$scratch/slurmctld.stdout" 2>&1 &
ctld_pid=$!
$bounded slurmd -D -f "$conf" >"$scratch/slurmd.stdout" 2>&1 &
slurmd_pid=$!
state=""
for _ in $(seq 1 120); do
  state=$(sinfo -h -n "$host" -o %T 2>/dev/null)
  [ "$state" = idle ] && break
  kill -0 "$ctld_pid" 2>/dev/null || { cat "$scratch/slurmctld.stdout" >&2; fail "slurmctld died"; }
  kill -0 "$slurmd_pid" 2>/dev/null || { cat "$scratch/slurmd.stdout" >&2; fail "slurmd died"; }
  sleep 0.5
done
[ "$state" = idle ] || fail "node $host is '$state', not idle, after 60 s"
say "cluster up: node $host idle, slurmctld :$ctld_port, slurmd :$slurmd_port, $cpus CPUs"

# ---- helpers ---------------------------------------------------------------------------------
sbatch_script=$src/configs/slurm/agefence.sbatch
attr() { "$report" --attr "$1" "$2" "$3"; }

# submit NAME SBATCH-OPTIONS... -- EXPORTS: sbatch --wait from WORKDIR; prints the job id.
# The exit status is the job's (an array's: its tasks' highest); the id goes to WORKDIR/NAME.id
# as well. The script is agefence.sbatch, or $submit_script.
submit() {
  local name=$1
  shift
  local opts=()
  while [ "$1" != -- ]; do
    opts+=("$1")
    shift
  done
  shift
  sbatch --wait --parsable --chdir="$work" --job-name="$name" "${opts[@]}" \
    --export="ALL,AGEFENCE_BIN=$agefence${1:+,$1}" "${submit_script:-$sbatch_script}" >"$work/$name.id" \
    2>"$work/$name.sbatch.err"
}

# check_pass NAME RANKS LAUNCHER LOG: a job that must have passed.
check_pass() {
  local name=$1 ranks=$2 how=$3 log=$4 id why
  id=$(cut -d';' -f1 "$work/$name.id")
  local out=$work/$name-$id.out err=$work/$name-$id.err
  [ -f "$out" ] && [ -f "$err" ] || fail "$name: no $name-$id.out/.err (the script's --output/--error)"
  grep -q "BITWISE EQUAL" "$out" || { cat "$out" "$err" >&2; fail "$name: no bitwise-equal summary"; }
  grep -q "agefence exited with status 0" "$out" || fail "$name: the script did not report status 0"
  [ -f "$log" ] || fail "$name: no log at $log"
  "$report" --check "$log" >/dev/null || { "$report" --check "$log" >&2; fail "$name: invalid log"; }
  [ "$(attr /final bitwise_equal "$log")" = 1 ] || fail "$name: bitwise_equal is not 1"
  [ "$(attr /final exit_reason "$log")" = completed ] || fail "$name: exit_reason is not completed"
  [ "$(attr / ranks "$log")" = "$ranks" ] || fail "$name: ranks = $(attr / ranks "$log"), expected $ranks"
  why=$(af_clean_run "$report" "$log") || fail "$name: $why"
  check_launch "$name" "$id" "$ranks" "$how" "$log"
  say "$name: job $id passed: $ranks ranks, log valid and bitwise equal"
}
# check_launch NAME ID TASKS LAUNCHER LOG: the log says which job, how many tasks, which launcher.
check_launch() {
  local got want
  for want in "slurm_job_id=$2" "slurm_ntasks=$3" "launcher=$4"; do
    got=$(attr / "${want%%=*}" "$5") || fail "$1: the log has no /@${want%%=*}"
    [ "$got" = "${want#*=}" ] || fail "$1: /@${want%%=*} = '$got', expected '${want#*=}'"
  done
  got=$(attr / slurm_nodelist "$5") || fail "$1: the log has no /@slurm_nodelist"
  [ -n "$got" ] || fail "$1: /@slurm_nodelist is empty"
  say "$1: the log names job $2, $3 tasks, launcher $4, nodes $got"
}

# check_limit NAME LAUNCHER LOG: a job stopped by the SIGTERM before its time limit.
check_limit() {
  local name=$1 how=$2 log=$3 id why
  id=$(cut -d';' -f1 "$work/$name.id")
  local out=$work/$name-$id.out err=$work/$name-$id.err
  grep -q "SIGTERM received" "$err" || { cat "$out" "$err" >&2; fail "$name: the batch shell got no SIGTERM"; }
  grep -q "agefence exited with status 5" "$out" || { cat "$out" "$err" >&2; fail "$name: agefence did not exit 5"; }
  grep -q "stopped by a signal" "$err" || fail "$name: agefence did not say it was stopped by a signal"
  "$report" --check "$log" >/dev/null || { "$report" --check "$log" >&2; fail "$name: invalid log"; }
  [ "$(attr /final exit_reason "$log")" = signal ] || fail "$name: exit_reason = $(attr /final exit_reason "$log")"
  local done_steps rows
  done_steps=$(attr /final steps_completed "$log")
  rows=$(h5dump -H -d /steps/step "$log" | sed -n 's/.*DATASPACE *SIMPLE *{ *( *\([0-9]*\) *).*/\1/p')
  [ -n "$rows" ] && [ "$done_steps" -gt 0 ] && [ "$rows" = "$done_steps" ] ||
    fail "$name: /steps has '$rows' rows, steps_completed = $done_steps"
  why=$(af_clean_run "$report" "$log") || fail "$name: $why"
  check_launch "$name" "$id" 2 "$how" "$log"
  # Slurm's own verdict: the job ended with agefence's status, before its limit.
  local info
  info=$(scontrol show job -o "$id" 2>/dev/null)
  case "$info" in
    *JobState=TIMEOUT*) fail "$name: job $id reached its time limit: $info" ;;
  esac
  local run jstate
  run=$(sed -n 's/.*RunTime=\([0-9:]*\).*/\1/p' <<<"$info")
  jstate=$(sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' <<<"$info")
  # From the SIGTERM to the closed log: the time agefence took to finish.
  local t_term t_end tail_s="?"
  t_term=$(sed -n 's/.*SIGTERM received at \([0-9][0-9]:[0-9][0-9]:[0-9][0-9]\).*/\1/p' "$err" | head -n 1)
  t_end=$(attr /final end_time "$log" | sed -n 's/.*T\([0-9][0-9]:[0-9][0-9]:[0-9][0-9]\)Z.*/\1/p')
  if [ -n "$t_term" ] && [ -n "$t_end" ]; then
    tail_s=$((($(date -u -d "$t_end" +%s) - $(date -d "$t_term" +%s) + 86400) % 86400))
  fi
  say "$name: job $id stopped by SIGTERM before its limit (state $jstate, run time $run):" \
    "$done_steps steps, log valid, exit_reason = signal, closed $tail_s s after the SIGTERM"
}

# ---- jobs -------------------------------------------------------------------------------------
# All four at once, in the background: sbatch --wait polls at growing intervals (up to about
# half a minute apart), and the two time-limit jobs run 15-45 s before their SIGTERM (Slurm's
# smallest limit is a minute, and it checks limits every 30 s or so).
# The endless runs are fault-free and large enough (64 x 256 cells) that agefence needs
# seconds after the SIGTERM to finish: rank 0 recomputes the serial reference up to the last
# step, which costs a fraction of the time run so far. The forwarding must leave it that time
# (a SIGTERM to srun itself would not). The SIGTERM comes 15-45 s in (Slurm checks limits
# periodically: @105 of a 2-minute limit); the job then ends, well before its limit.
endless="AGEFENCE_SCENARIO=$src/tests/fixtures/faultfree.ini,AGEFENCE_SET=scenario.steps=1000000000 scenario.blocks=64 scenario.block_len=256 workload.dt=3e-8 log.flush_interval=10"
submit limit-srun --nodes=1 --ntasks-per-node=2 --time=00:02:00 --signal=B:TERM@105 -- \
  "AGEFENCE_OUT=$work/limit-srun.h5,$endless" &
limit_srun=$!
submit limit-mpirun --nodes=1 --ntasks-per-node=2 --time=00:02:00 --signal=B:TERM@105 -- \
  "AGEFENCE_OUT=$work/limit-mpirun.h5,AGEFENCE_LAUNCHER=mpirun,$endless" &
limit_mpirun=$!
# srun --mpi=pmix, 3 tasks, small.ini, the script's default log path (out/%x-%j.h5).
submit srun-pass --nodes=1 --ntasks-per-node=3 --time=00:05:00 -- \
  "AGEFENCE_SCENARIO=$src/tests/fixtures/small.ini" &
srun_pass=$!
submit mpirun-pass --nodes=1 --ntasks-per-node=2 --time=00:05:00 -- \
  "AGEFENCE_SCENARIO=$src/tests/fixtures/faultfree.ini,AGEFENCE_LAUNCHER=mpirun,AGEFENCE_OUT=$work/mpirun-pass.h5" &
mpirun_pass=$!
# An ensemble of two members: a 2-task array of agefence-ensemble.sbatch (srun, 2 tasks each),
# small.ini for 40 steps, the scenario's own seed for the first member.
submit_script=$src/configs/slurm/agefence-ensemble.sbatch submit ensemble --array=0-1 --nodes=1 \
  --ntasks-per-node=2 --time=00:05:00 -- \
  "AGEFENCE_SCENARIO=$src/tests/fixtures/small.ini,AGEFENCE_SET=scenario.steps=40,AGEFENCE_ENSEMBLE_DIR=$work/ensemble" &
ensemble=$!
say "submitted: srun-pass, mpirun-pass, limit-srun, limit-mpirun, ensemble (array 0-1)"

# ---- srun without PMIx --------------------------------------------------------------------------
say "srun --mpi=none -n 2: must not run two copies"
log=$work/mpi-none.h5
srun --mpi=none -n 2 --time=00:02:00 --job-name=mpi-none "$agefence" run -o "$log" \
  -c "$src/tests/fixtures/faultfree.ini" >"$work/mpi-none.out" 2>&1
rc=$?
[ "$rc" != 0 ] || { cat "$work/mpi-none.out" >&2; fail "srun --mpi=none: exit 0 (two copies ran)"; }
[ ! -e "$log" ] || fail "srun --mpi=none: a log was written"
if grep -q "srun started 2 tasks" "$work/mpi-none.out"; then
  say "srun --mpi=none: refused by agefence's launch check (exit $rc)"
else
  say "srun --mpi=none: refused by MPI_Init (exit $rc): $(grep -m 1 'direct launched' "$work/mpi-none.out")"
fi

say "srun --mpi=none -n 2, tasks started as one-rank MPI jobs: agefence must refuse"
log=$work/singletons.h5
srun --mpi=none -n 2 --time=00:02:00 --job-name=singletons env -u SLURM_NODELIST "$agefence" run \
  -o "$log" -c "$src/tests/fixtures/faultfree.ini" >"$work/singletons.out" 2>&1
rc=$?
[ "$rc" = 2 ] || { cat "$work/singletons.out" >&2; fail "singletons: exit $rc, expected 2"; }
grep -q "srun started 2 tasks but MPI sees 1 rank" "$work/singletons.out" ||
  { cat "$work/singletons.out" >&2; fail "singletons: no task count line"; }
[ ! -e "$log" ] || fail "singletons: a log was written"
say "singletons: refused: $(grep -m 1 'srun started' "$work/singletons.out")"

# ---- the jobs' results -------------------------------------------------------------------------
wait_job() { # NAME PID EXPECTED-STATUS
  wait "$2"
  local rc=$?
  [ "$rc" = "$3" ] || { cat "$work/$1".sbatch.err "$work/$1"-*.out "$work/$1"-*.err >&2; fail "$1: sbatch --wait exit $rc, expected $3"; }
}
wait_job srun-pass "$srun_pass" 0
id=$(cut -d';' -f1 "$work/srun-pass.id")
check_pass srun-pass 3 srun "$work/out/srun-pass-$id.h5"
wait_job mpirun-pass "$mpirun_pass" 0
check_pass mpirun-pass 2 mpirun "$work/mpirun-pass.h5"
wait_job ensemble "$ensemble" 0
id=$(cut -d';' -f1 "$work/ensemble.id")
for t in 0 1; do
  log=$work/ensemble/member-000$t.h5
  [ -f "$work/ensemble-${id}_$t.out" ] || fail "ensemble: no ensemble-${id}_$t.out (%x-%A_%a.out)"
  grep -q "agefence exited with status 0" "$work/ensemble-${id}_$t.out" ||
    { cat "$work/ensemble-${id}_$t.out" "$work/ensemble-${id}_$t.err" >&2; fail "ensemble: task $t did not pass"; }
  [ -f "$log" ] || fail "ensemble: task $t wrote no $log"
  "$report" --check "$log" >/dev/null || { "$report" --check "$log" >&2; fail "ensemble: $log invalid"; }
  [ "$(attr / seed "$log")" = $((7 + t)) ] || fail "ensemble: $log has seed $(attr / seed "$log"), expected $((7 + t))"
  [ "$(attr / ranks "$log")" = 2 ] || fail "ensemble: $log ran on $(attr / ranks "$log") ranks, expected 2"
done
[ ! -e "$work/ensemble/grid" ] || fail "ensemble: a grid file without AGEFENCE_GRID"
say "ensemble: array $id: member-0000.h5 and member-0001.h5, seeds 7 and 8, 2 ranks each"
say "waiting for the time-limit jobs"
wait_job limit-srun "$limit_srun" 5
check_limit limit-srun srun "$work/limit-srun.h5"
wait_job limit-mpirun "$limit_mpirun" 5
check_limit limit-mpirun mpirun "$work/limit-mpirun.h5"

say "PASS: Slurm jobs (srun, mpirun, an ensemble array, time limit with SIGTERM forwarding) and srun refusals"
