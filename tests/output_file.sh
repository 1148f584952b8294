#!/usr/bin/env bash
# What `agefence run -o FILE` may do to the files it finds (docs/log.md, "What `-o` replaces"; agefence(1)):
#   - a path it cannot take (empty, a folder, a path through a regular file), a file that is
#     not an agefence log (a text file, the -c scenario itself under its
#     name or another, a non-log at FILE.tmp): exit 2, one line from rank 0, and every file as
#     it was, nothing created (the folder listed, hidden files included, and every file's
#     checksum, before and after); --force changes none of it;
#   - the memory refusal (AGEFENCE_DEBUG=memavail) leaves the agefence log already at FILE as
#     it was: exit 2, no backup, no FILE.tmp;
#   - a missing folder is made with its parents (docs/running.md, "Where output goes"), and
#     removed again when the run is refused before its first step;
#   - a long name keeps the reason at the end of its line;
#   - a run into an agefence log keeps it as "FILE.~N~" (N = 1, 2, ...: one more than the
#     highest), says so in one line, and the new log is at FILE; AGEFENCE_BACKUPS=K keeps the
#     K newest backups (the line names the oldest removed), 0 keeps none, a bad value is
#     refused;
#   - --force replaces the agefence log at FILE and keeps no backup;
#   - `agefence bench -o` refuses the same paths and files before any work.
#   output_file.sh AGEFENCE REPORT MPIEXEC WORKDIR FIXTURES NP
set -uo pipefail
agefence=$1 report=$2 mpiexec=$3 work=$4 fixtures=$5 np=$6
rm -rf "$work" && mkdir -p "$work/d"
cd "$work/d" || exit 1
failed=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
# The folder's state: every name (hidden ones too) with its checksum.
state() { find . -mindepth 1 | LC_ALL=C sort | while read -r f; do
  if [ -f "$f" ]; then echo "$f $(md5sum <"$f" | cut -d' ' -f1)"; else echo "$f (not a file)"; fi
done; }
run() { "$mpiexec" -n "$np" "$agefence" run -q "$@" >../stdout 2>../stderr; }
steps=(--set scenario.steps=40) # small.ini's scripted kill comes at step 37

cp "$fixtures/small.ini" s.ini
echo "notes, not a log" >notes.txt
mkdir sub
ln s.ini s_hardlink.h5
ln -s s.ini s_symlink.h5
echo "not a log either" >x.h5.tmp

# refused NAME WORDS ARGS...: exit 2, one line (rank 0's) that holds WORDS, nothing changed.
refused() {
  local name=$1 words=$2
  shift 2
  local before after rc
  before=$(state)
  run "$@"
  rc=$?
  after=$(state)
  [ "$rc" = 2 ] || { fail "$name: exit $rc, expected 2: $(cat ../stderr)"; return; }
  # (mpiexec adds its own lines about the exit status.)
  [ "$(grep -c '^agefence' ../stderr)" = 1 ] ||
    { fail "$name: not one line (rank 0's) on stderr: $(cat ../stderr)"; return; }
  grep -q -- "$words" ../stderr || { fail "$name: the line lacks '$words': $(cat ../stderr)"; return; }
  [ "$before" = "$after" ] ||
    { fail "$name: the folder changed: $(diff <(echo "$before") <(echo "$after") | tr '\n' ' ')"; return; }
  echo "ok   $name: exit 2, $(grep '^agefence' ../stderr)"
}

refused "empty -o" "the log path is empty" -c s.ini -o '' "${steps[@]}"
refused "-o a folder with a slash" "sub/: names a folder, not a log file" -c s.ini -o sub/ "${steps[@]}"
refused "-o a folder" "sub: is a folder, not a log file" -c s.ini -o sub "${steps[@]}"
refused "-o through a regular file" "notes.txt/x.h5: cannot create the folder: notes.txt is not a folder" \
  -c s.ini -o notes.txt/x.h5 "${steps[@]}"
refused "-o through a regular file, deeper" \
  "notes.txt/a/x.h5: cannot create the folder: notes.txt is not a folder" \
  -c s.ini -o notes.txt/a/x.h5 "${steps[@]}"
long=$(printf 'n%.0s' $(seq 200))
cp notes.txt "$long"
refused "-o a long name through a file" "is not a folder$" \
  -c s.ini -o "$long/$(printf 'x%.0s' $(seq 253))" "${steps[@]}"
rm "$long"
AGEFENCE_BACKUPS=two refused "AGEFENCE_BACKUPS not a number" \
  "AGEFENCE_BACKUPS=two: not a whole number from 0 to 999" -c s.ini -o r.h5 "${steps[@]}"
refused "-o a text file" "notes.txt: the file exists and is not an agefence log" \
  -c s.ini -o notes.txt "${steps[@]}"
refused "-o a text file, --force" "notes.txt: the file exists and is not an agefence log" \
  -c s.ini -o notes.txt --force "${steps[@]}"
refused "-o the scenario" "s.ini: is the scenario file being read (-c s.ini)" \
  -c s.ini -o s.ini "${steps[@]}"
refused "-o the scenario, --force" "s.ini: is the scenario file being read" \
  -c s.ini -o s.ini --force "${steps[@]}"
refused "-o the scenario by a hard link" "s_hardlink.h5: is the scenario file being read" \
  -c s.ini -o s_hardlink.h5 "${steps[@]}"
refused "-o the scenario by a symbolic link" "s_symlink.h5: is the scenario file being read" \
  -c s.ini -o s_symlink.h5 "${steps[@]}"
refused "-o whose temporary name holds a text file" \
  "x.h5.tmp: the log's temporary file exists and is not an agefence log" -c s.ini -o x.h5 "${steps[@]}"
# agefence bench -o: the same rules, before any work (it wrote an empty file there and removed
# it, whatever the file was).
run() { "$mpiexec" -n "$np" "$agefence" bench coord --quick "$@" >../stdout 2>../stderr; }
refused "bench -o a text file" "notes.txt: the file exists and is not an agefence log" -o notes.txt
refused "bench -o a folder" "sub: is a folder, not a log file" -o sub
refused "bench -o the empty name" "the log path is empty" -o ''
run() { "$mpiexec" -n "$np" "$agefence" run -q "$@" >../stdout 2>../stderr; }

# A first log, then a node too small for the next run into it: refused, the log untouched.
run -c s.ini -o run.h5 "${steps[@]}" || fail "the first run: exit $?: $(cat ../stderr)"
"$report" --attr / schema_version run.h5 >/dev/null 2>&1 || fail "the first run left no log"
first=$(md5sum <run.h5)
was=$failed
before=$(state)
AGEFENCE_DEBUG=memavail=1000000 run -c s.ini -o run.h5 "${steps[@]}"
rc=$?
[ "$rc" = 2 ] || fail "memory refusal: exit $rc, expected 2: $(cat ../stderr)"
[ "$(grep -c '^agefence' ../stderr)" = 1 ] && grep -q "^agefence: the scenario needs" ../stderr ||
  fail "memory refusal: not its one line: $(cat ../stderr)"
[ "$(state)" = "$before" ] || fail "memory refusal: the folder changed: $(ls -a)"
[ "$failed" = "$was" ] && echo "ok   the memory refusal leaves the log at -o as it was"

# A missing folder is made with its parents; a run refused before its first step (the memory
# refusal) leaves none of them behind.
was=$failed
before=$(state)
AGEFENCE_DEBUG=memavail=1000000 run -c s.ini -o new/deep/x.h5 "${steps[@]}"
rc=$?
[ "$rc" = 2 ] || fail "memory refusal into new folders: exit $rc: $(cat ../stderr)"
[ "$(state)" = "$before" ] || fail "memory refusal left folders: $(ls -a)"
run -c s.ini -o new/deep/x.h5 "${steps[@]}" || fail "-o in missing folders: exit $?: $(cat ../stderr)"
[ "$("$report" --attr /final exit_reason new/deep/x.h5 2>&1)" = completed ] ||
  fail "-o in missing folders: no complete log at new/deep/x.h5"
rm -r new
[ "$failed" = "$was" ] && echo "ok   -o makes missing folders, and a refused run leaves none"

# Reruns into it: each keeps the one before as run.h5.~N~, N one more than the highest.
was=$failed
for n in 1 2; do
  prev=$(md5sum <run.h5)
  before=$(state)
  run -c s.ini -o run.h5 "${steps[@]}" || fail "rerun $n: exit $?: $(cat ../stderr)"
  [ "$(grep -c "^agefence: run.h5: the earlier log there is kept as run.h5.~$n~$" ../stderr)" = 1 ] ||
    fail "rerun $n: not one line saying the backup: $(cat ../stderr)"
  [ -f "run.h5.~$n~" ] && [ "$(md5sum <"run.h5.~$n~")" = "$prev" ] ||
    fail "rerun $n: run.h5.~$n~ is not the log that was at run.h5"
  [ "$("$report" --attr /final exit_reason run.h5 2>&1)" = completed ] ||
    fail "rerun $n: run.h5 is not the new run's complete log"
  added=$(comm -13 <(echo "$before" | cut -d' ' -f1) <(state | cut -d' ' -f1) | tr '\n' ' ')
  [ "$added" = "./run.h5.~$n~ " ] || fail "rerun $n: new names besides the backup: '$added'"
done
[ "$(md5sum <"run.h5.~1~")" = "$first" ] || fail "run.h5.~1~ is not the first log"
"$report" --attr / schema_version run.h5.~1~ >/dev/null 2>&1 || fail "run.h5.~1~ does not read"
[ "$failed" = "$was" ] && echo "ok   reruns into an agefence log keep it as run.h5.~1~, then run.h5.~2~"

# AGEFENCE_BACKUPS bounds them: with 2, the third backup removes the oldest (and says so); a
# file of a backup's name that is not an agefence log is neither counted nor removed; 0 keeps
# none.
was=$failed
echo "mine" >run.h5.~9~
AGEFENCE_BACKUPS=2 run -c s.ini -o run.h5 "${steps[@]}" || fail "AGEFENCE_BACKUPS=2: exit $?"
grep -q "^agefence: run.h5: the earlier log there is kept as run.h5.~3~ (the oldest, run.h5.~1~, removed: AGEFENCE_BACKUPS keeps 2)$" ../stderr ||
  fail "AGEFENCE_BACKUPS=2: $(cat ../stderr)"
[ ! -e run.h5.~1~ ] && [ -f run.h5.~2~ ] && [ -f run.h5.~3~ ] && [ "$(cat run.h5.~9~)" = mine ] ||
  fail "AGEFENCE_BACKUPS=2: left $(ls -a | tr '\n' ' ')"
rm run.h5.~9~
before=$(state | cut -d' ' -f1)
AGEFENCE_BACKUPS=0 run -c s.ini -o run.h5 "${steps[@]}" || fail "AGEFENCE_BACKUPS=0: exit $?"
grep -q "kept as" ../stderr && fail "AGEFENCE_BACKUPS=0: kept a backup: $(cat ../stderr)"
[ "$(state | cut -d' ' -f1)" = "$before" ] || fail "AGEFENCE_BACKUPS=0: names changed: $(ls -a)"
[ "$failed" = "$was" ] && echo "ok   AGEFENCE_BACKUPS keeps the newest backups, 0 none"

# --force: the log replaced, no backup, nothing else new.
prev=$(md5sum <run.h5)
was=$failed
before=$(state | cut -d' ' -f1)
run -c s.ini -o run.h5 --force "${steps[@]}" || fail "--force: exit $?: $(cat ../stderr)"
grep -q "kept as" ../stderr && fail "--force: kept a backup: $(cat ../stderr)"
[ "$(state | cut -d' ' -f1)" = "$before" ] || fail "--force: names changed: $(ls -a)"
[ "$(md5sum <run.h5)" != "$prev" ] &&
  [ "$("$report" --attr /final exit_reason run.h5 2>&1)" = completed ] ||
  fail "--force: run.h5 is not the new run's complete log"
[ "$failed" = "$was" ] && echo "ok   --force replaces the agefence log and keeps no backup"

[ "$failed" = 0 ] || { echo "FAIL: $failed case(s) on $np rank(s)"; exit 1; }
echo "PASS: -o refuses what is not a log and keeps earlier logs, on $np rank(s)"
