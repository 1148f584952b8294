#!/usr/bin/env bash
# Runs every test labelled `unit` (serial: no MPI launch) under valgrind's memcheck: any invalid
# access, use of uninitialised memory or definite leak fails the run. CI runs it after the
# suites; it needs a build in build/ (scripts/build.sh).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${AGEFENCE_BUILD_DIR:-$top/build}
command -v valgrind >/dev/null || { echo "valgrind.sh: valgrind is not installed (scripts/setup.sh installs it)" >&2; exit 1; }
mapfile -t tests < <(cd "$build" && ctest -N -L unit | sed -n 's/^ *Test *#[0-9]*: //p')
[ ${#tests[@]} -gt 0 ] || { echo "valgrind.sh: no unit tests found in $build" >&2; exit 1; }
failed=0
for t in "${tests[@]}"; do
  exe=$build/tests/$t
  [ -x "$exe" ] || { echo "FAIL $t: no executable at $exe"; failed=$((failed + 1)); continue; }
  log=$build/tests/$t.valgrind.log
  if valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
      --track-origins=yes -q "$exe" >"$log" 2>&1; then
    echo "ok   $t"
  else
    rc=$?
    # 77 is a test's own SKIP; anything else under valgrind is a failure.
    if [ "$rc" = 77 ]; then echo "skip $t"; continue; fi
    echo "FAIL $t (exit $rc): see $log"
    grep -E "==[0-9]+== (Invalid|Conditional|Use of|.*definitely lost)" "$log" | head -5
    failed=$((failed + 1))
  fi
done
echo "valgrind: $(( ${#tests[@]} - failed )) passed, $failed failed"
[ "$failed" = 0 ]
