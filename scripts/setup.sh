#!/usr/bin/env bash
# agefence setup: installs the Debian packages agefence needs, when any is missing.
# Idempotent and silent when everything is present; needs root (or sudo) only to install.
# prometheus: its promtool validates the live metrics file in the tests (the server is not run).
#   scripts/setup.sh            build, run and test dependencies
#   scripts/setup.sh --slurm    also Slurm and munge (for the slurm tests)
set -euo pipefail

# clang, libclang-rt-14-dev (libFuzzer and the sanitizer runtimes) and llvm (llvm-symbolizer, for
# their stack traces): scripts/fuzz.sh. dpkg-dev (dpkg-shlibdeps) and file: the Debian package's
# library dependencies (cpack -G DEB, scripts/deb-check.sh). mpich, libmpich-dev and
# libhdf5-mpich-dev: the MPICH build of CI (.ci/run; build-mpich/, mpicc.mpich, h5pcc.mpich,
# mpiexec.mpich). Open MPI stays the default mpicc, mpirun and h5pcc: Debian's alternatives are
# in auto mode, where Open MPI's priority (50) beats MPICH's (40) whatever the install order.
pkgs=(cmake make gcc pkg-config libopenmpi-dev openmpi-bin libhdf5-openmpi-dev hdf5-tools
      libcmocka-dev libinih-dev python3 python3-h5py python3-matplotlib python3-numpy
      clang-format valgrind prometheus clang libclang-rt-14-dev llvm dpkg-dev file
      mpich libmpich-dev libhdf5-mpich-dev)
for arg in "$@"; do
  case "$arg" in
    # slurm-wlm pulls in slurmctld, slurmd, the client commands and slurm-wlm-basic-plugins,
    # whose mpi_pmix plugin (`srun --mpi=pmix`) dlopens libpmix.so from pmix2/lib: that link
    # is in libpmix-dev, not in the libpmix2 library package. procps: pkill in the batch
    # script (configs/slurm/agefence.sbatch).
    --slurm) pkgs+=(slurm-wlm munge libpmix-dev procps) ;;
    *) echo "setup.sh: unknown option '$arg' (expected --slurm)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO=sudo
  else
    echo "setup.sh: missing Debian packages: ${missing[*]}" >&2
    echo "setup.sh: run as root (or: sudo apt-get install ${missing[*]})" >&2
    exit 1
  fi
else
  SUDO=
fi
echo "setup.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >&2
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
