#!/usr/bin/env bash
# agefence: prepares .devprefix/root, the small relocatable set of Debian 12 libraries that the
# GPU check machine lacks (Open MPI, parallel HDF5, cmocka, inih, pkgconf) so that
# scripts/gpu-check.sh can build and run agefence there with no network. Run HERE, on a Debian 12
# build machine, as root (apt-get download needs no installs). docs/GPU.md explains the flow.
#
#   scripts/gpu-prefix.sh            download (cached in .devprefix/debs), unpack, prune
#   scripts/gpu-prefix.sh --list     only print the packages it would take
#
# What goes in: the runtime libraries' dependency closure, minus what every Linux image with a
# compiler has (glibc, libstdc++, the package tools, ...) and minus the network transports
# Open MPI can do without on one node (libfabric, verbs, UCX, PSM: their plugins are removed
# too, so Open MPI does not complain about them); the -dev packages without their own
# dependencies (headers, .so links, .pc files only). Then docs, man pages, static and Fortran
# libraries are pruned. The .pc files are rewritten to be relative to their own place
# (${pcfiledir}), and NCCL's header from this machine's CUDA is added in case the GPU machine's
# pip NCCL has none. The prefix must stay well under the 64 MiB that the device tool carries.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dev=$top/.devprefix
root=$dev/root
debs=$dev/debs
arch=x86_64-linux-gnu

runtime=(libopenmpi3 openmpi-bin openmpi-common libhdf5-openmpi-103-1 libcmocka0 libinih1
         libpkgconf3 pkgconf-bin pkgconf)
devel=(libopenmpi-dev libhdf5-openmpi-dev libcmocka-dev libinih-dev)
# Packages of the closure not taken: the base system and toolchain every image has, X11 and
# hwloc's optional plugins, and the transports of multi-node fabrics (and what pulls them in).
exclude='^(libc6|libc-bin|libgcc-s1|gcc-[0-9]+-base|libstdc\+\+6|dpkg|tar|passwd|adduser|debconf|cdebconf|libdebian-installer4|libnewt0\.52|libslang2|libtextwrap1|libpam.*|libaudit.*|libselinux1|libsemanage.*|libsepol2|libcap-ng0|libacl1|libcrypt1|libdb5\.3|libbz2-1\.0|liblzma5|libpcre2-8-0|libtinfo6|libreadline8|readline-common|install-info|libmd0|libbsd0|libuuid1|zlib1g|openssh-client|libedit2|libfido2-1|libcbor0\.8|libhwloc-plugins|libxml2|libicu72|libx11-.*|libxcb1|libxau6|libxdmcp6|libxext6|libxnvctrl0|ocl-icd-libopencl1|libpciaccess0|libfabric1|libibverbs1|librdmacm1|ibverbs-providers|libnl-.*|libpsm2-2|libpsm-infinipath1|libucx0|libnuma1|libefa1|libgfortran5|libquadmath0|libatomic1|libsasl2-modules-db|libgcc1)$'

mode=run
for arg in "$@"; do
  case "$arg" in
    --list) mode=list ;;
    *) echo "gpu-prefix.sh: unknown option '$arg' (expected --list)" >&2; exit 2 ;;
  esac
done

if ! command -v apt-get >/dev/null || ! command -v dpkg >/dev/null; then
  echo "gpu-prefix.sh: needs a Debian 12 machine (apt-get, dpkg)" >&2
  exit 1
fi
if ! apt-cache show libopenmpi3 >/dev/null 2>&1; then
  apt-get update -qq >&2
fi

closure=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
            --no-replaces --no-enhances "${runtime[@]}" 2>/dev/null |
          grep -v '^ ' | grep -v '^<' | sort -u | grep -Ev "$exclude" || true)
# A virtual package has no candidate of its own: keep only real ones.
pkgs=()
for p in $closure "${devel[@]}"; do
  if apt-cache show --no-all-versions "$p" >/dev/null 2>&1; then
    pkgs+=("$p")
  fi
done
mapfile -t pkgs < <(printf '%s\n' "${pkgs[@]}" | sort -u)
if [ "$mode" = list ]; then
  printf '%s\n' "${pkgs[@]}"
  exit 0
fi

mkdir -p "$debs"
(cd "$debs" && apt-get download -q "${pkgs[@]}" >/dev/null)
rm -rf "$root"
mkdir -p "$root"
for p in "${pkgs[@]}"; do
  f=$(ls "$debs"/"${p}"_*.deb 2>/dev/null | sort | tail -1)
  if [ -z "$f" ]; then
    echo "gpu-prefix.sh: no .deb downloaded for $p" >&2
    exit 1
  fi
  dpkg -x "$f" "$root"
done

# ---- prune ----------------------------------------------------------------------------------
u=$root/usr
lib=$u/lib/$arch
rm -rf "$u/share/doc" "$u/share/man" "$u/share/info" "$u/share/locale" "$u/share/lintian" \
       "$u/share/bug" "$u/share/bash-completion" "$u/share/java" "$u/share/gtk-doc" \
       "$u/share/vala" "$root/etc/openmpi/openmpi-totalview.tcl" "$root/usr/lib/debug"
find "$root" -name '*.a' -delete
find "$root" -name '*.la' -delete
# Fortran, Java and C++ bindings, OpenSHMEM, HDF5's Fortran/C++ wrappers: agefence is C.
find "$root" \( -name 'libmpi_mpifh*' -o -name 'libmpi_usempi*' -o -name 'libmpi_java*' \
                -o -name 'libmpi_cxx*' -o -name 'liboshmem*' -o -name '*.mod' \
                -o -name 'mpi.jar' -o -name 'libompitrace*' -o -name 'h5pfc*' \
                -o -name 'h5c++*' -o -name 'mpif*' -o -name 'oshmem*' -o -name 'shmem*' \
                -o -name 'mpic++*' -o -name 'mpiCC*' -o -name 'mpicxx*' -o -name 'mpijava*' \
                -o -name 'ortecc*' -o -name 'osh*' -o -name 'h5pcc*' \) -exec rm -rf {} +
# (h5pcc goes too: a shell script with /usr paths in it, which would mislead CMake's FindHDF5;
# scripts/gpu-check.sh points HDF5_ROOT at the library instead.)
rm -rf "$lib/openmpi/include/openmpi/mpp" "$lib/openmpi/lib/openmpi3/mca_sshmem_"* \
       "$lib/openmpi/lib/openmpi3/mca_spml_"* "$lib/openmpi/lib/openmpi3/mca_scoll_"* \
       "$lib/openmpi/lib/openmpi3/mca_atomic_"* "$lib/openmpi/lib/openmpi3/mca_memheap_"*
# Open MPI's internal headers (mpi.h for C needs only mpiext), OpenSHMEM's, Fortran modules.
inc=$lib/openmpi/include
rm -rf "$inc/openshmem" "$inc/pshmem.h" "$inc/pshmemx.h" "$inc/shmem.h" "$inc/shmemx.h" \
       "$inc/openmpi/opal" "$inc/openmpi/orte" "$inc/openmpi/ompi" "$inc"/openmpi/*.h \
       "$lib/fortran"
# OpenSSL's engines and providers are not used by HDF5's (unused) network file driver.
rm -rf "$lib/engines-3" "$lib/ossl-modules"

# Plugins (and common libraries) that need a library left out: Open MPI and PMIx load plugins
# with dlopen, so a missing one is simply not there, instead of a warning at every start.
have_lib() {
  case "$1" in
    libc.so.*|libm.so.*|libdl.so.*|librt.so.*|libpthread.so.*|libutil.so.*|ld-linux*|\
    libgcc_s.so.*|libstdc++.so.*|libz.so.*|libresolv.so.*|libcrypt.so.*|libbz2.so.*|\
    liblzma.so.*|libzstd.so.*|libtinfo.so.*|libpcre2-8.so.*|libselinux.so.*|libudev.so.*)
      return 0 ;;
  esac
  [ -n "$(find "$root" -name "$1" -print -quit)" ]
}
removed=()
missing=()
for pass in 1 2 3; do
  while IFS= read -r so; do
    for need in $(readelf -d "$so" 2>/dev/null | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p'); do
      if ! have_lib "$need"; then
        case "$so" in
          */openmpi3/*|*/pmix2/lib/pmix/*|*/libmca_common_*)
            removed+=("${so#"$root"/} (needs $need)")
            rm -f "$so" ;;
          *) [ "$pass" = 3 ] && missing+=("${so#"$root"/} needs $need") ;;
        esac
        break
      fi
    done
  done < <(find "$lib" -name '*.so*' -type f)
done
for m in "${missing[@]}"; do
  echo "gpu-prefix.sh: warning: $m, which is not in the prefix (the GPU machine must have it)" >&2
done

# ---- relocate -------------------------------------------------------------------------------
# .pc files name /usr; make them relative to where they lie ($root/usr/lib/$arch/pkgconfig).
while IFS= read -r pc; do
  rel=$(realpath --relative-to="$(dirname "$pc")" "$u")
  sed -i -e "s|^prefix=/usr\$|prefix=\${pcfiledir}/$rel|" \
         -e "s|=/usr/|=\${pcfiledir}/$rel/|g" -e "s|-I/usr/|-I\${pcfiledir}/$rel/|g" \
         -e "s|-L/usr/|-L\${pcfiledir}/$rel/|g" "$pc"
done < <(find "$root" -name '*.pc')
# Dangling absolute symlinks (Debian's alternatives point into /etc/alternatives): make the
# ones agefence uses point inside the prefix.
ln -sf mpirun.openmpi "$u/bin/mpirun" 2>/dev/null || true
ln -sf mpirun.openmpi "$u/bin/mpiexec" 2>/dev/null || true
ln -sf mpicc.openmpi "$u/bin/mpicc" 2>/dev/null || true
if [ -e "$lib/openmpi/include" ] && [ ! -e "$u/include/$arch/mpi" ]; then
  mkdir -p "$u/include/$arch"
  ln -sfn ../../lib/$arch/openmpi/include "$u/include/$arch/mpi"
fi
find "$root" -xtype l -delete

# NCCL's header, in case the GPU machine's pip NCCL ships the library alone.
if [ -f /usr/local/cuda/include/nccl.h ]; then
  mkdir -p "$root/nccl/include"
  cp /usr/local/cuda/include/nccl.h "$root/nccl/include/"
fi

# What is inside, for the check's log.
{
  echo "# agefence device prefix, made $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release; echo "$PRETTY_NAME")"
  for p in "${pkgs[@]}"; do
    dpkg-deb -f "$(ls "$debs"/"${p}"_*.deb | sort | tail -1)" Package Version | paste -sd' '
  done
  for r in "${removed[@]}"; do echo "# pruned: $r"; done
} >"$root/MANIFEST"

size=$(du -sm "$root" | cut -f1)
echo "gpu-prefix.sh: $root: ${#pkgs[@]} packages, ${size} MiB (${#removed[@]} plugins pruned)"
if [ "$size" -gt 40 ]; then
  echo "gpu-prefix.sh: warning: over 40 MiB; the device tool carries 64 MiB with the tree" >&2
fi
