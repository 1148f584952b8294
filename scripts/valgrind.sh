#!/usr/bin/env bash
# Runs every test labelled `unit` (serial: no MPI launch) under valgrind's memcheck: any invalid
# access, use of uninitialised memory or definite leak fails the run. CI runs it after the
# suites; it needs a build in build/ (scripts/build.sh).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${AGEFENCE_BUILD_DIR:-$top/build}
command -v valgrind >/dev/null || { echo "valgrind.sh: valgrind is not installed (scripts/setup.sh installs it)" >&2; exit 1; }
# Each unit test's own command line, from CTest: "NAME<TAB>shell-quoted command".
mapfile -t tests < <(cd "$build" && ctest --show-only=json-v1 -L unit | /usr/bin/python3 -c '
import json, shlex, sys
for t in json.load(sys.stdin)["tests"]:
    print(t["name"] + "\t" + " ".join(shlex.quote(w) for w in t.get("command", [])))')
[ ${#tests[@]} -gt 0 ] || { echo "valgrind.sh: no unit tests found in $build" >&2; exit 1; }
failed=0
ran=0
skipped=0
for line in "${tests[@]}"; do
  t=${line%%$'\t'*}
  eval "cmd=(${line#*$'\t'})"
  exe=${cmd[0]:-}
  # Compiled tests (ELF executables) run under memcheck; a test whose command is an interpreter
  # (tests/layers.py, a check of the sources and objects) runs no agefence code of its own.
  if [ -z "$exe" ] || [ ! -x "$exe" ]; then
    echo "FAIL $t: no executable at '${exe}'"; failed=$((failed + 1)); continue
  fi
  if [ "$(head -c 4 "$exe" | od -An -c | tr -d ' ')" != '177ELF' ]; then
    echo "skip $t: not compiled code (${cmd[*]})"; skipped=$((skipped + 1)); continue
  fi
  case "$exe" in "$build"/*) ;; *)
    echo "skip $t: ${exe} is not a program of this build"; skipped=$((skipped + 1)); continue ;;
  esac
  log=$build/tests/$t.valgrind.log
  if valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
      --track-origins=yes -q "${cmd[@]}" >"$log" 2>&1; then
    echo "ok   $t"
    ran=$((ran + 1))
  else
    rc=$?
    # 77 is a test's own SKIP; anything else under valgrind is a failure.
    if [ "$rc" = 77 ]; then echo "skip $t"; skipped=$((skipped + 1)); continue; fi
    echo "FAIL $t (exit $rc): see $log"
    grep -E "==[0-9]+== (Invalid|Conditional|Use of|.*definitely lost)" "$log" | head -5
    failed=$((failed + 1))
  fi
done
[ "$ran" -gt 0 ] || { echo "valgrind.sh: no compiled unit test ran"; failed=$((failed + 1)); }
echo "valgrind: $ran passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
