#!/usr/bin/env bash
# One MPI for everything (cmake/mpi.cmake), on a machine with Debian's Open MPI and MPICH both
# installed (SKIP, 77, where either is missing): configures only, in scratch folders.
#   1. MPICH's compiler with Open MPI's parallel HDF5: configure fails with one line that names
#      both MPI libraries and the HDF5 compiler to pass;
#   2. MPICH's compiler and HDF5 without MPIEXEC_EXECUTABLE: configure passes and the launcher
#      it derives is MPICH's Hydra, not the `mpiexec` on the path;
#   3. the same with Open MPI's mpiexec given: configure fails with one line naming it.
#   mpi_match.sh SOURCE_DIR WORKDIR
set -uo pipefail
src=$1 work=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
for exe in mpicc.mpich h5pcc.mpich mpiexec.mpich mpicc.openmpi h5pcc.openmpi mpiexec.openmpi; do
  command -v "$exe" >/dev/null || { echo "SKIP: no $exe (Debian's MPICH and Open MPI)"; exit 77; }
done
rm -rf "$work" && mkdir -p "$work"
configure() { # NAME CMAKE-ARGS...: the exit status; the output in WORK/NAME.out
  local name=$1
  shift
  CC=mpicc.mpich cmake -S "$src" -B "$work/$name" -DAGEFENCE_CUDA=OFF -DBUILD_TESTING=OFF \
    -DMPI_C_COMPILER="$(command -v mpicc.mpich)" "$@" >"$work/$name.out" 2>&1
}
one_line() { # NAME PART...: one line of the output holds every part
  local name=$1
  shift
  local line
  line=$(grep -F -- "$1" "$work/$name.out") || return 1
  [ "$(printf '%s\n' "$line" | wc -l)" = 1 ] || return 1
  for part in "$@"; do
    case "$line" in *"$part"*) ;; *) return 1 ;; esac
  done
}

echo "== 1. MPICH with Open MPI's HDF5"
configure mixed -DHDF5_C_COMPILER_EXECUTABLE="$(command -v h5pcc.openmpi)" &&
  fail "configure accepted MPICH with Open MPI's HDF5"
one_line mixed "agefence: the parallel HDF5" "is built on libmpi.so" "is libmpich.so" \
  "-DHDF5_C_COMPILER_EXECUTABLE=$(command -v h5pcc.mpich)" ||
  { cat "$work/mixed.out" >&2; fail "no one-line message naming both MPIs and the fix"; }

echo "== 2. MPICH with its HDF5: the launcher follows"
configure mpich -DHDF5_C_COMPILER_EXECUTABLE="$(command -v h5pcc.mpich)" ||
  { cat "$work/mpich.out" >&2; fail "configure refused MPICH with its own HDF5"; }
launcher=$(sed -n 's/^MPIEXEC_EXECUTABLE:FILEPATH=//p' "$work/mpich/CMakeCache.txt")
# The version text read whole first: with pipefail, grep -q leaving at its first match can end
# the launcher on SIGPIPE, and the pipe then fails though the text says HYDRA.
version=$("$launcher" --version 2>&1) || true
grep -q HYDRA <<<"$version" || fail "MPIEXEC_EXECUTABLE=$launcher is not Hydra"
grep -q "launcher $launcher (hydra)" "$work/mpich.out" || fail "configure did not say the launcher"

echo "== 3. MPICH with Open MPI's mpiexec given"
configure given -DHDF5_C_COMPILER_EXECUTABLE="$(command -v h5pcc.mpich)" \
  -DMPIEXEC_EXECUTABLE="$(command -v mpiexec.openmpi)" &&
  fail "configure accepted Open MPI's mpiexec for an MPICH build"
one_line given "agefence: MPIEXEC_EXECUTABLE=$(command -v mpiexec.openmpi) is a launcher of openmpi" \
  "built with mpich's MPI" || { cat "$work/given.out" >&2; fail "no one-line message"; }
echo "PASS: mismatched HDF5 and launcher refused in one line; the launcher follows the MPI"
