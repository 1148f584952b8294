#!/usr/bin/env bash
# Runs an ensemble on this machine: N members of one scenario that differ in scenario.seed, at
# every point of an optional grid over one or two keys, each member its own MPI launch and its
# own log in one directory, which `agefence-report DIR` aggregates (docs/clusters.md, "Ensembles").
#   scripts/ensemble.sh -o DIR -n MEMBERS [-j PARALLEL] [-r RANKS]
#                       [--grid section.key=v1,v2,...]... [--seed0 S] [--force]
#                       [-c FILE] [--set section.key=value]...
# Member k (0 <= k < MEMBERS) of grid point g runs with --set scenario.seed=S+k and the grid
# point's --set key=value, after the -c and --set given here; S is --seed0, or the scenario's own
# seed as `agefence config` prints it. Grid points run over the first key's values outermost;
# member index = g * MEMBERS + k, its log DIR/member-<index, 4 digits>.h5. Up to PARALLEL
# members (default: cores / RANKS, at least 1) run at once, each as `LAUNCHER -n RANKS agefence
# run -q -o LOG ...` (RANKS default 1).
# Writes DIR/grid (the grid's keys, one a line; only with --grid) and DIR/members.txt (one line a
# member: file, seed=, the grid's key=value, exit=STATUS; exit=none while it has not ended), and
# DIR/member-<index>.err where a member printed anything (with -q: errors only).
# A DIR that exists and is not empty is refused unless --force, which removes only this script's
# files there (member-*.h5, member-*.err, grid, members.txt).
# Environment: AGEFENCE_BIN the agefence binary [build/agefence of this repository];
# AGEFENCE_MPIEXEC the launcher, called as LAUNCHER -n RANKS PROGRAM ARGS [scripts/mpirun.sh].
# Exit status: 0 every member exited 0, 3 or 4 (a final state that differs from the reference
# through an undetected corruption, or capacity exhausted: results, whose logs are whole; the
# members that exited 3 are named on stderr), 1 some member exited otherwise (named on stderr)
# or the ensemble was interrupted, 2 bad options.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
me=ensemble.sh
usage="usage: scripts/ensemble.sh -o DIR -n MEMBERS [-j PARALLEL] [-r RANKS]"
usage+=" [--grid section.key=v1,v2,...]... [--seed0 S] [--force] [-c FILE] [--set k=v]..."
bad() {
  echo "$me: $*" >&2
  exit 2
}
# count NAME VALUE: VALUE as a positive integer of at most 6 digits, or exit 2.
count() {
  if [[ ! "$2" =~ ^[0-9]{1,6}$ ]] || [ $((10#$2)) -lt 1 ]; then
    bad "$1 '$2': expected a whole number from 1 to 999999"
  fi
  echo $((10#$2))
}

dir="" members="" parallel="" ranks=1 seed0="" force=0
grid_keys=() grid_vals=() pass=()
while [ $# -gt 0 ]; do
  case "$1" in
    -o | -n | -j | -r | --grid | --seed0 | -c | --set)
      [ $# -ge 2 ] || bad "$1 without a value ($usage)"
      ;;
  esac
  case "$1" in
    -o) dir=$2 ;;
    -n) members=$(count -n "$2") || exit 2 ;;
    -j) parallel=$(count -j "$2") || exit 2 ;;
    -r) ranks=$(count -r "$2") || exit 2 ;;
    --seed0) seed0=$2 ;;
    --grid)
      spec=$2
      key=${spec%%=*}
      [[ "$spec" == *=* ]] || bad "--grid '$spec': expected section.key=v1,v2,..."
      [[ "$key" =~ ^[a-z_]+(\.[0-9]+)?\.[a-z_0-9]+$ ]] ||
        bad "--grid '$spec': '$key' is not a section.key"
      vals=${spec#*=}
      [ -n "$vals" ] || bad "--grid '$spec': no values"
      IFS=, read -r -a list <<<"$vals,"
      declare -A given=()
      for v in "${list[@]}"; do
        [ -n "$v" ] || bad "--grid '$spec': an empty value"
        # the same value twice would run (and count) each seed's history twice
        [ -z "${given[$v]:-}" ] || bad "--grid '$spec': the value '$v' is given twice"
        given[$v]=1
      done
      unset given
      # [goodput] keys change no simulated history: the report re-costs the members offline
      [[ "$key" != goodput.* ]] ||
        bad "--grid $key: a [goodput] key changes no simulated history, only its cost: run the members once, then agefence-report --grid $key=$vals DIR"
      [ "$key" != scenario.seed ] || bad "--grid scenario.seed: the seed is the ensemble's (-n, --seed0)"
      for k in "${grid_keys[@]}"; do
        [ "$k" != "$key" ] || bad "--grid $key given twice"
      done
      grid_keys+=("$key")
      grid_vals+=("$vals")
      [ "${#grid_keys[@]}" -le 2 ] || bad "--grid: at most two keys (got ${grid_keys[*]})"
      shift 2
      continue
      ;;
    -c) pass+=(-c "$2") ;;
    --set) pass+=(--set "$2") ;;
    --force)
      force=1
      shift
      continue
      ;;
    *) bad "unknown option '$1' ($usage)" ;;
  esac
  shift 2
done
[ -n "$dir" ] || bad "no -o DIR ($usage)"
[ -n "$members" ] || bad "no -n MEMBERS ($usage)"
if [ -z "$parallel" ]; then
  parallel=$(($(nproc 2>/dev/null || echo 1) / ranks))
  [ "$parallel" -ge 1 ] || parallel=1
fi
# A --set of a grid key would be overridden by every grid point: one or the other.
for ((i = 1; i < ${#pass[@]}; i += 2)); do
  [ "${pass[i - 1]}" = --set ] || continue
  for k in "${grid_keys[@]}"; do
    [ "${pass[i]%%=*}" != "$k" ] || bad "--set ${pass[i]} and --grid $k: give the key one way"
  done
done

# Each member's status and output, until they are counted.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/agefence-ensemble.XXXXXX") || bad "mktemp failed"
sessions=${OMPI_MCA_orte_tmpdir_base:-${TMPDIR:-/tmp}}/agefence-ensemble.$$
trap 'rm -rf "$tmp" "$sessions"' EXIT
bin=${AGEFENCE_BIN:-$top/build/agefence}
[ -x "$bin" ] || bad "no agefence binary at $bin (scripts/build.sh builds it; AGEFENCE_BIN names another)"
launcher=${AGEFENCE_MPIEXEC:-$top/scripts/mpirun.sh}
report=$(dirname "$bin")/agefence-report
[ -x "$report" ] || report=agefence-report

# The grid's points: every combination of the keys' values, the first key outermost. point_sets[g]
# holds the point's "--set" arguments separated by newlines, point_text[g] its "key=value"s.
point_sets=("") point_text=("")
for ((i = 0; i < ${#grid_keys[@]}; i++)); do
  IFS=, read -r -a list <<<"${grid_vals[i]}"
  new_sets=() new_text=()
  for ((g = 0; g < ${#point_sets[@]}; g++)); do
    for v in "${list[@]}"; do
      new_sets+=("${point_sets[g]}--set"$'\n'"${grid_keys[i]}=$v"$'\n')
      new_text+=("${point_text[g]}${point_text[g]:+ }${grid_keys[i]}=$v")
    done
  done
  point_sets=("${new_sets[@]}") point_text=("${new_text[@]}")
done
points=${#point_sets[@]}
total=$((points * members))
[ "$total" -le 10000 ] ||
  bad "$members members x $points grid points = $total: more than 10000 (member-NNNN.h5)"

# agefence_config [ARGS...]: `agefence config` of the scenario with ARGS; the scenario on stdout,
# or its error line (not its notes) on stderr and status 2.
agefence_config() {
  local out
  if ! out=$("$bin" config "${pass[@]}" "$@" 2>"$tmp/config.err"); then
    grep -v ': note: ' "$tmp/config.err" | tail -n 1 >&2
    return 2
  fi
  printf '%s\n' "$out"
}
# The scenario, and every grid point's values, must resolve before anything is run.
scenario=$(agefence_config 2>"$tmp/why") || bad "$(cat "$tmp/why")"
for ((g = 0; g < points; g++)); do
  mapfile -t sets < <(printf '%s' "${point_sets[g]}")
  msg=$(agefence_config "${sets[@]}" 2>&1 >/dev/null) || bad "grid point ${point_text[g]}: $msg"
done
max_seed=9223372036854775807
if [ -z "$seed0" ]; then
  seed0=$(awk '/^\[/ { s = $0; next } s == "[scenario]" && $1 == "seed" && $2 == "=" { print $3; exit }' \
    <<<"$scenario")
  [[ "$seed0" =~ ^[0-9]+$ ]] || bad "no seed under [scenario] in the output of agefence config"
fi
# 19 digits compare as text (bash's arithmetic would wrap past the largest seed).
# shellcheck disable=SC2071
if [[ ! "$seed0" =~ ^[0-9]{1,19}$ ]] || { [ ${#seed0} = 19 ] && [[ "$seed0" > "$max_seed" ]]; }; then
  bad "--seed0 '$seed0': expected an integer in [0, $max_seed]"
fi
seed0=$((10#$seed0))
[ "$seed0" -le $((max_seed - (members - 1))) ] ||
  bad "--seed0 $seed0 + $((members - 1)): past the largest seed, $max_seed"

# The directory: new, empty, or (--force) cleared of this script's files only.
if [ -e "$dir" ] && [ ! -d "$dir" ]; then
  bad "-o $dir: not a directory"
fi
ours() { # the files of an ensemble in DIR
  find "$dir" -maxdepth 1 \( -name 'member-*.h5' -o -name 'member-*.err' -o -name grid \
    -o -name members.txt \) -type f
}
if [ -d "$dir" ] && [ -n "$(ls -A "$dir")" ]; then
  [ "$force" = 1 ] || bad "-o $dir: exists and is not empty (--force replaces an ensemble's files there)"
  # agefence-report DIR reads every *.h5 there: another one would join the ensemble.
  other=$(find "$dir" -maxdepth 1 -name '*.h5' ! -name 'member-*.h5' | head -n 1)
  [ -z "$other" ] || bad "-o $dir: holds $other, which agefence-report $dir would read as a member; move it away"
  ours | while IFS= read -r f; do rm -f "$f"; done
fi
mkdir -p "$dir" || bad "-o $dir: cannot create it"
if [ ${#grid_keys[@]} -gt 0 ]; then
  printf '%s\n' "${grid_keys[@]}" >"$dir/grid" || bad "cannot write $dir/grid"
fi

# Member i: grid point i / members, seed seed0 + i % members.
name() { printf 'member-%04d.h5' "$1"; }
seed_of() { echo $((seed0 + $1 % members)); }
status=() # exit status of each member that has ended
write_members() {
  local i line
  for ((i = 0; i < total; i++)); do
    line="$(name "$i") seed=$(seed_of "$i")"
    [ -z "${point_text[i / members]}" ] || line+=" ${point_text[i / members]}"
    echo "$line exit=${status[i]:-none}"
  done >"$dir/members.txt.tmp" && mv "$dir/members.txt.tmp" "$dir/members.txt"
}
write_members

now() { echo "${EPOCHREALTIME:-$(date +%s.%N)}"; }
t0=$(now)
since() { awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
running=() # member indices launched and not yet counted
began=()   # when each member was launched (seconds since t0)
took_sum=0 # the seconds the members counted took, in all
next=0 done_count=0 stopping=""

start() { # start I: launch member I in the background; its status goes to tmp/I.rc
  local i=$1 sets
  began[i]=$(since)
  mapfile -t sets < <(printf '%s' "${point_sets[i / members]}")
  (
    # A session-directory base of each member's own, inside the one already set: Open MPI 4's
    # shared one is removed by the last mpirun to leave, and a member starting at that moment
    # would fail before any rank runs (scripts/mpirun.sh nests its own inside it).
    mkdir -p "$sessions/$i" && export OMPI_MCA_orte_tmpdir_base=$sessions/$i
    "$launcher" -n "$ranks" "$bin" run -q -o "$dir/$(name "$i")" "${pass[@]}" \
      --set "scenario.seed=$(seed_of "$i")" "${sets[@]}" >"$tmp/$i.out" 2>&1 &
    echo $! >"$tmp/$i.pid"
    wait $!
    echo $? >"$tmp/$i.rc.tmp" && mv "$tmp/$i.rc.tmp" "$tmp/$i.rc"
  ) &
  running+=("$i")
}
collect() { # counts the members whose status file exists
  local i rc left=() el eta
  for i in "${running[@]}"; do
    if [ ! -f "$tmp/$i.rc" ]; then
      left+=("$i")
      continue
    fi
    rc=$(cat "$tmp/$i.rc")
    status[i]=$rc
    done_count=$((done_count + 1))
    [ ! -s "$tmp/$i.out" ] || cp "$tmp/$i.out" "$dir/$(printf 'member-%04d.err' "$i")"
    el=$(since)
    took_sum=$(awk -v s="$took_sum" -v a="${began[i]}" -v b="$el" 'BEGIN { printf "%.3f", s + b - a }')
    # The members left, at the mean time a member took, run -j at a time.
    eta=$(awk -v s="$took_sum" -v d="$done_count" -v t="$total" -v j="$parallel" \
      'BEGIN { n = t - d; w = n < j ? n : j; printf "%.0f", (w > 0 ? s / d * n / w : 0) }')
    echo "ensemble: $done_count/$total done ($(name "$i"), seed $(seed_of "$i")${point_text[i / members]:+, ${point_text[i / members]}}, exit $rc), $el s elapsed, ETA $eta s" >&2
  done
  running=("${left[@]}")
  write_members
}
# shellcheck disable=SC2317 # (called by the traps below)
stop() { # SIGINT/SIGTERM: start nothing more, ask the running launches to stop
  local i
  stopping=$1
  echo "ensemble: SIG$1: stopping the ${#running[@]} running members" >&2
  for i in "${running[@]}"; do
    [ -f "$tmp/$i.pid" ] && kill -TERM "$(cat "$tmp/$i.pid")" 2>/dev/null
  done
}
trap 'stop INT' INT
trap 'stop TERM' TERM

while [ -z "$stopping" ] && [ "$next" -lt "$total" ]; do
  if [ "${#running[@]}" -lt "$parallel" ]; then
    start "$next"
    next=$((next + 1))
    continue
  fi
  wait -n
  collect
done
while [ "${#running[@]}" -gt 0 ]; do
  wait -n
  collect
done

el=$(since)
failed=()
differ=()
for ((i = 0; i < total; i++)); do
  case "${status[i]:-none}" in
    0 | 4) ;;
    3) differ+=("$(name "$i")") ;;
    *) failed+=("$(name "$i") (exit ${status[i]:-none})") ;;
  esac
done
if [ "${#differ[@]}" -gt 0 ]; then
  # exit 3: a corruption no detector saw reached the final state. The log is whole and its
  # interruptions are what they are: a result for the ensemble, said here and in members.txt.
  echo "ensemble: ${#differ[@]} members ended with a final state that differs from the" \
    "reference (exit 3: a corruption no detector saw; agefence-report says which):" \
    "${differ[*]}" >&2
fi
rate=$(awk -v n="$done_count" -v e="$el" 'BEGIN { printf "%.2f", (e > 0 ? n / e : 0) }')
echo "ensemble: $done_count members in $el s ($rate members/s), logs in $dir"
if [ -n "$stopping" ]; then
  echo "ensemble: stopped by SIG$stopping: $((total - next)) of $total members not started" >&2
  exit 1
fi
if [ "${#failed[@]}" -gt 0 ]; then
  echo "ensemble: ${#failed[@]} of $total members failed: ${failed[*]}" >&2
  exit 1
fi
echo "ensemble: aggregate with: $(printf '%q ' "$report" "$dir" | sed 's/ $//')"
exit 0
