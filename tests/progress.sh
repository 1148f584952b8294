#!/usr/bin/env bash
# What a run says while it runs, on rank 0's stderr under mpirun (whose ranks' stderr is always
# a pipe to mpirun):
#   - unless -q, the size of the work before the first step and, after the first steps, the
#     estimated time of the rest of the steps and of the final check against the serial
#     reference; before that check, a line saying it starts and how long it takes;
#   - --progress with stderr to a file: plain progress lines (no \r), each with the step, the
#     steps planned, the percentage, the elapsed time, the rate and an ETA that includes the
#     reference check (its share said; "~" and why when the recent pace differs from the
#     average), the last one at the last step with the check still to come, then the line
#     saying the check starts (with -q too);
#   - without --progress, stderr to a file: no progress line;
#   - on a terminal (a pty from `script`, around mpirun): progress repainted with \r, though
#     the rank's own stderr is a pipe; with mpirun's stderr sent to a file from that terminal,
#     none.
#   progress.sh AGEFENCE MPIEXEC WORKDIR
set -uo pipefail
agefence=$1 mpiexec=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
cd "$work" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }
steps=400
t="[0-9.]+ (s|min|h)"
line_re="^agefence: step [0-9]+/$steps \([0-9.]+%\)  [0-9.]+ s  [0-9.]+ steps/s  ETA ~?$t \($t of it the reference check(, unsure: a step takes [0-9.]+x the average now)?\)\$"
run() { # run NAME ARGS...: two ranks of the default scenario, $steps steps
  local name=$1
  shift
  "$mpiexec" -n 2 "$agefence" run -o "$name.h5" --set scenario.steps=$steps "$@" \
    >"$name.out" 2>"$name.err"
  local rc=$?
  [ "$rc" = 0 ] || { cat "$name.err"; fail "$name: exit $rc"; }
}

# --progress, stderr to a file: plain lines.
run lines -q --progress
grep -q $'\r' lines.err && fail "--progress to a file repaints with \\r"
grep -E "^agefence: step " lines.err >lines.progress
[ "$(wc -l <lines.progress)" -ge 2 ] || { cat lines.err; fail "--progress: fewer than 2 progress lines"; }
bad=$(grep -Evc "$line_re" lines.progress)
[ "$bad" = 0 ] || { cat lines.progress; fail "--progress: $bad line(s) not of the form step/planned (%) s steps/s ETA"; }
tail -n 1 lines.progress | grep -Eq "^agefence: step $steps/$steps \(100.0%\) .* ETA ~?($t) \(\1 of it the reference check" ||
  fail "--progress: the last line is not the last step with the check to come: $(tail -n 1 lines.progress)"
grep -Eq "^agefence: checking the final state against the serial reference \($steps steps on one core, about $t\)$" lines.err ||
  { cat lines.err; fail "--progress: no line before the reference check"; }
sed -E 's|^agefence: step ([0-9]+)/.*|\1|' lines.progress | sort -nc ||
  fail "--progress: the step counts go backwards"
grep -q "cell-steps\|steps in" lines.err && fail "-q still printed the size of the work or the estimate"
echo "PASS: --progress under mpirun, stderr to a file: $(wc -l <lines.progress) plain lines, the last at step $steps"

# No --progress, stderr to a file: no progress line; the size of the work and the estimate.
run plain
grep -q "^agefence: step \|"$'\r' plain.err && { cat plain.err; fail "progress lines without --progress on a file"; }
# The default scenario's blocks and cells, as `agefence config` prints them.
"$agefence" config >plain.ini || fail "agefence config"
blocks=$(sed -n 's/^blocks = //p' plain.ini)
cells=$(sed -n 's/^block_len = //p' plain.ini)
size=$(printf '%.3g' "$((steps * blocks * cells))")
grep -q "^agefence: $steps steps x $blocks blocks x $cells cells (burgers) on 2 ranks, $size cell-steps" plain.err ||
  { cat plain.err; fail "no line giving the size of the work"; }
grep -Eq "^agefence: [0-9]+ steps in $t: about $t more for the other [0-9]+, then $t for the check against the serial reference \(a first estimate: steps cost more as units fade; the progress line follows them\)$" plain.err ||
  { cat plain.err; fail "no estimate of the time after the first steps"; }
echo "PASS: without --progress, stderr to a file: no progress; the size of the work and an estimate"

# A terminal around mpirun: the progress is repainted on it.
if ! command -v script >/dev/null 2>&1; then
  echo "script (util-linux) not found: the terminal detection is not checked"
  exit 0
fi
cmd="$(printf '%q ' "$mpiexec" -n 2 "$agefence" run -q -o tty.h5 --set scenario.steps=$steps)"
script -qec "$cmd" /dev/null >tty.out </dev/null || { cat tty.out; fail "the run on a terminal failed"; }
grep -q $'\ragefence: step ' tty.out || { cat -v tty.out; fail "no progress repainted on mpirun's terminal"; }
tr '\r' '\n' <tty.out | grep -q "^agefence: step $steps/$steps (100.0%)" ||
  { cat -v tty.out; fail "the terminal's progress does not reach step $steps"; }
script -qec "$cmd 2>tty-file.err" /dev/null >tty-file.out </dev/null ||
  { cat tty-file.err; fail "the run from a terminal, stderr to a file, failed"; }
grep -q "^agefence: step \|"$'\r' tty-file.err && { cat -v tty-file.err; fail "progress written to mpirun's stderr file"; }
echo "PASS: on a terminal around mpirun the progress is repainted; with mpirun's stderr to a file, none"
