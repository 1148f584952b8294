#!/usr/bin/env bash
# README command (b): install what is missing, build, and run the whole test suite.
#   scripts/test.sh                 the suite (unit, mpi, ... labels)
#   scripts/test.sh --sanitize      the unit and mpi suites under ASan + UBSan (build-asan/)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
mode=normal
for arg in "$@"; do
  case "$arg" in
    --sanitize) mode=sanitize ;;
    *) echo "test.sh: unknown option '$arg' (expected --sanitize)" >&2; exit 2 ;;
  esac
done
"$top/scripts/setup.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
jobs=$(nproc 2>/dev/null || echo 2)
if [ "$mode" = sanitize ]; then
  export AGEFENCE_BUILD_DIR=$top/build-asan
  "$top/scripts/build.sh" -DAGEFENCE_SANITIZE=ON -DAGEFENCE_WERROR=ON -DAGEFENCE_CUDA=OFF
  # Open MPI's own start-up allocations are not ours to fix: leaks inside it are suppressed
  # (tests/lsan.supp says which). Every error in agefence code fails the run.
  export LSAN_OPTIONS=suppressions=$top/tests/lsan.supp:print_suppressions=0
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  cd "$top/build-asan"
  ctest -L 'unit|mpi' --output-on-failure -j "$jobs"
else
  "$top/scripts/build.sh" -DAGEFENCE_WERROR=ON
  cd "$top/build"
  ctest --output-on-failure -j "$jobs"
fi
