#!/usr/bin/env bash
# README command (b): install what is missing, build, and run the whole test suite.
#   scripts/test.sh                 the suite (unit, mpi, ... labels)
#   scripts/test.sh --sanitize      the unit, fuzz-regress and mpi suites under ASan + UBSan
#                                   (build-asan/)
#   scripts/test.sh --mpich         the MPICH build (build-mpich/: mpicc.mpich, h5pcc.mpich and
#                                   Hydra's mpiexec.mpich), its unit tests and the mpich subset
#                                   (fabric, default and attention on 1 and 2 ranks, bad input),
#                                   then the default and attention runs compared bit for bit
#                                   with the Open MPI build's (build/, built when missing)
#   scripts/test.sh --clang         the clang build with -Werror (build-clang/), its unit tests
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
mode=normal
for arg in "$@"; do
  case "$arg" in
    --sanitize) mode=sanitize ;;
    --mpich) mode=mpich ;;
    --clang) mode=clang ;;
    *) echo "test.sh: unknown option '$arg' (expected --sanitize, --mpich or --clang)" >&2; exit 2 ;;
  esac
done
"$top/scripts/setup.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
jobs=$(nproc 2>/dev/null || echo 2)
if [ "$mode" = mpich ]; then
  # Hydra's ranks poll while they wait: one test at a time where two ranks fill the cores.
  AGEFENCE_BUILD_DIR=$top/build-mpich CC=mpicc.mpich "$top/scripts/build.sh" -DAGEFENCE_WERROR=ON \
    -DAGEFENCE_CUDA=OFF -DMPI_C_COMPILER=mpicc.mpich \
    -DHDF5_C_COMPILER_EXECUTABLE="$(command -v h5pcc.mpich)"
  (cd "$top/build-mpich" && ctest -L 'unit|mpich' --output-on-failure -j "$(((jobs + 1) / 2))")
  # Bit for bit with the Open MPI build: the default (Burgers) and the attention workload through
  # the default's aging, on 2 ranks each, compared whole (agefence-report --same).
  [ -x "$top/build/agefence" ] || "$top/scripts/build.sh" -DAGEFENCE_WERROR=ON
  same=$top/build-mpich/same-mpi
  rm -rf "$same" && mkdir -p "$same"
  for scen in default attention; do
    args=()
    [ "$scen" = attention ] &&
      args=(--set workload.kind=attention --set scenario.block_len=16 --set workload.dim=8)
    for b in build build-mpich; do
      HYDRA_LAUNCHER=fork "$top/$b/tests/af-mpiexec" -n 2 "$top/$b/agefence" run -q \
        -o "$same/$scen.$b.h5" "${args[@]}" >"$same/$scen.$b.out" 2>&1 ||
        { cat "$same/$scen.$b.out" >&2; echo "test.sh: $scen with $b failed" >&2; exit 1; }
      echo "$scen, $b: checksum $("$top/build/agefence-report" --attr /final state_checksum \
        "$same/$scen.$b.h5")"
    done
    "$top/build/agefence-report" --same "$same/$scen.build.h5" "$same/$scen.build-mpich.h5" ||
      { echo "test.sh: $scen differs between Open MPI and MPICH" >&2; exit 1; }
  done
  exit 0
fi
if [ "$mode" = clang ]; then
  AGEFENCE_BUILD_DIR=$top/build-clang CC=clang "$top/scripts/build.sh" -DAGEFENCE_WERROR=ON \
    -DAGEFENCE_CUDA=OFF
  (cd "$top/build-clang" && ctest -L unit --output-on-failure -j "$jobs")
  exit 0
fi
if [ "$mode" = sanitize ]; then
  export AGEFENCE_BUILD_DIR=$top/build-asan
  "$top/scripts/build.sh" -DAGEFENCE_SANITIZE=ON -DAGEFENCE_WERROR=ON -DAGEFENCE_CUDA=OFF
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  cd "$top/build-asan"
  # Unit tests and the fuzz corpus and regressions replayed (fuzz/): every ASan, UBSan and
  # LeakSanitizer finding fails them.
  ASAN_OPTIONS=detect_leaks=1 ctest -L 'unit|fuzz-regress' --output-on-failure -j "$jobs"
  # MPI tests: ASan and UBSan stay on; LeakSanitizer is off, because Open MPI's plugins leak at
  # exit from libraries they have already unloaded, so those reports cannot be attributed or
  # suppressed. agefence's own allocations are still checked: every run ends by asserting that
  # af_alloc holds no live bytes (sim/driver/run.c).
  ASAN_OPTIONS=detect_leaks=0 ctest -L mpi --output-on-failure -j "$jobs"
else
  "$top/scripts/build.sh" -DAGEFENCE_WERROR=ON
  cd "$top/build"
  ctest --output-on-failure -j "$jobs"
fi
