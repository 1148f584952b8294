#!/usr/bin/env bash
# Builds agefence's Debian package with CPack and checks it the way a user gets it: installed
# with apt-get from the file alone (no download: every dependency must already be installed, as
# scripts/setup.sh leaves them), run from /usr/bin, then removed.
#   scripts/deb-check.sh [WORKDIR]     (default: build-deb/ of the source tree)
# Needs root (it installs and removes a package): otherwise, or without dpkg and apt-get, or
# when an agefence package is installed already (not ours to replace), it says why and exits
# 77 (SKIP).
#   1. The source: a `git archive` of the checkout (HEAD with the uncommitted changes of tracked
#      files), so the package is built the way a source archive is; outside a git checkout, the
#      tree itself.
#   2. A build of its own with the CPU backend alone (-DAGEFENCE_CUDA=OFF: CUDA and NCCL are not
#      Debian packages) and no tests; cpack -G DEB.
#   3. The package's fields: Depends names the package of every library the binaries link
#      (dpkg -S on ldd's list, as dpkg-shlibdeps found them) and openmpi-bin; Recommends
#      python3-h5py and python3-matplotlib; its files are the installed tree under /usr.
#   4. apt-get install ./agefence_*.deb; from /usr/bin: --version says "(no git)" (a build from
#      an archive), the default scenario runs as a singleton and passes, agefence-report --check
#      and --plots (with /usr/share/agefence/plots.py), man finds both pages.
#   5. apt-get remove: nothing left in /usr/bin or /usr/share/agefence (also on failure: trap).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$top/build-deb}
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "deb-check.sh installs a package: run it as root"
command -v dpkg >/dev/null && command -v apt-get >/dev/null && command -v cpack >/dev/null ||
  skip "needs dpkg, apt-get and cpack (a Debian machine)"
dpkg-query -W -f='${Status}' agefence 2>/dev/null | grep -q "install ok installed" &&
  skip "an agefence package is installed already: deb-check.sh does not replace it (apt-get remove agefence, then run it again)"
failed=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
die() { echo "FAIL: $*"; exit 1; }
t0=$(date +%s)
rm -rf "$work" && mkdir -p "$work/src" || die "cannot make $work"

# 1. The source.
if top_git=$(git -C "$top" rev-parse --show-toplevel 2>/dev/null) &&
  [ "$(realpath "$top_git")" = "$(realpath "$top")" ]; then
  rev=$(git -C "$top" stash create 2>/dev/null)
  git -C "$top" archive --format=tar "${rev:-HEAD}" | tar -x -C "$work/src" ||
    die "git archive of $top"
  src=$work/src
else
  src=$top
fi

# 2. The build and the package.
jobs=$(nproc 2>/dev/null || echo 2)
[ "$jobs" -gt 2 ] && jobs=2
cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAGEFENCE_CUDA=OFF \
  -DBUILD_TESTING=OFF -DCMAKE_INSTALL_RPATH_USE_LINK_PATH=OFF >"$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; die "configure"; }
cmake --build "$work/build" -j "$jobs" >"$work/build.log" 2>&1 ||
  { tail -30 "$work/build.log"; die "build"; }
t1=$(date +%s)
(cd "$work/build" && cpack -G DEB) >"$work/cpack.log" 2>&1 || { cat "$work/cpack.log"; die "cpack -G DEB"; }
debs=("$work/build"/agefence_*.deb)
[ -f "${debs[0]}" ] && [ ${#debs[@]} = 1 ] || die "cpack made no single agefence_*.deb: ${debs[*]}"
deb=${debs[0]}
echo "deb: $(basename "$deb"), $(stat -c %s "$deb") bytes"

# 3. Its fields and files.
field() { dpkg-deb -f "$deb" "$1"; }
depends=$(field Depends)
echo "Depends: $depends"
echo "Recommends: $(field Recommends)"
deps_of() { echo "$1" | tr ',' '\n' | sed 's/^ *//; s/ .*//'; }
# The package that owns a library: by the path ldd gives, its target, or either with /usr/lib
# and /lib swapped (on a merged /usr, dpkg knows each file by the path its package ships).
owner_of() {
  local p q o
  for p in "$1" "$(realpath "$1")"; do
    for q in "$p" "${p/#\/usr\/lib\//\/lib\/}" "${p/#\/lib\//\/usr\/lib\/}"; do
      o=$(dpkg -S "$q" 2>/dev/null | sed -n '1s/:.*//p')
      [ -n "$o" ] && { echo "$o"; return 0; }
    done
  done
  return 1
}
# Every library a binary names (NEEDED; the libraries' own come with their packages).
for exe in agefence agefence-report; do
  libs=$(ldd "$work/build/$exe")
  for so in $(readelf -d "$work/build/$exe" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    lib=$(echo "$libs" | awk -v so="$so" '$1 == so && $2 == "=>" { print $3 }')
    [ -n "$lib" ] || { fail "$exe needs $so, which ldd does not find"; continue; }
    owner=$(owner_of "$lib") || { fail "$exe needs $lib, which no Debian package owns"; continue; }
    deps_of "$depends" | grep -qx "$owner" || fail "$exe needs $so of $owner, which Depends lacks"
  done
done
for p in openmpi-bin libopenmpi3 libinih1; do
  deps_of "$depends" | grep -qx "$p" || fail "Depends lacks $p"
done
deps_of "$depends" | grep -q '^libhdf5-openmpi-' || fail "Depends lacks the parallel HDF5"
for p in python3-h5py python3-matplotlib; do
  deps_of "$(field Recommends)" | grep -qx "$p" || fail "Recommends lacks $p"
done
dpkg-deb -c "$deb" | awk '{ print $6 }' >"$work/contents"
for f in ./usr/bin/agefence ./usr/bin/agefence-report ./usr/share/agefence/plots.py \
  ./usr/share/agefence/configs/default.ini ./usr/share/agefence/configs/slurm/agefence.sbatch \
  ./usr/share/doc/agefence/README.md ./usr/share/doc/agefence/docs/log.md \
  ./usr/share/man/man1/agefence.1 ./usr/share/man/man1/agefence-report.1; do
  grep -qx "$f" "$work/contents" || fail "the package lacks $f"
done

# 4. Installed, from the file alone.
cleanup() {
  if dpkg-query -W -f='${Status}' agefence 2>/dev/null | grep -q "install ok installed"; then
    DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq agefence >"$work/remove.log" 2>&1 ||
      dpkg -r agefence >>"$work/remove.log" 2>&1 || echo "FAIL: could not remove agefence"
  fi
}
trap cleanup EXIT
# Offline: apt-get must find every dependency installed and install agefence alone.
new=$(apt-get install -s "$deb" 2>&1 | awk '/^Inst / { print $2 }' | tr '\n' ' ')
[ "$new" = "agefence " ] ||
  die "apt-get would install '$new', not agefence alone: run scripts/setup.sh first"
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$deb" >"$work/apt-install.log" 2>&1 ||
  { cat "$work/apt-install.log"; die "apt-get install $deb"; }
run=$work/run
mkdir -p "$run"
# A bare environment, but for the caller's Open MPI session-directory base (the test suite gives
# each test one: tests/CMakeLists.txt says why).
in_sys() {
  (cd "$run" && env -i HOME="$run" PATH=/usr/bin:/bin LANG=C.UTF-8 OMPI_ALLOW_RUN_AS_ROOT=1 \
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    ${OMPI_MCA_orte_tmpdir_base:+OMPI_MCA_orte_tmpdir_base="$OMPI_MCA_orte_tmpdir_base"} "$@")
}
version=$(sed -n 's/^project(agefence VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
got=$(in_sys /usr/bin/agefence --version) || fail "/usr/bin/agefence --version: exit $?"
[ "$got" = "agefence $version (no git)" ] ||
  fail "--version of the package: '$got', expected 'agefence $version (no git)'"
in_sys agefence run -o run.h5 >"$work/run.out" 2>"$work/run.err" ||
  { cat "$work/run.err"; fail "agefence run (the default scenario, singleton): exit $?"; }
grep -q "BITWISE EQUAL" "$work/run.out" || fail "the run's summary does not say bitwise equal"
in_sys agefence-report --check run.h5 >/dev/null || fail "agefence-report --check: exit $?"
got=$(in_sys agefence-report --attr / git_revision run.h5)
[ "$got" = "$version (no git)" ] || fail "the log's git_revision: '$got'"
if /usr/bin/python3 -c "import h5py, matplotlib" >/dev/null 2>&1; then
  in_sys agefence-report --plots figs run.h5 >"$work/report.out" 2>"$work/plots.err" ||
    fail "agefence-report --plots: exit $?: $(cat "$work/plots.err")"
  grep -q "wrote 6 plots" "$work/plots.err" || fail "--plots: $(cat "$work/plots.err")"
  [ -s "$run/figs/latency_by_blackout.png" ] || fail "--plots wrote no latency_by_blackout.png"
  [ -s "$run/figs/goodput.png" ] || fail "--plots wrote no goodput.png"
else
  echo "note: /usr/bin/python3 lacks h5py or matplotlib: --plots not checked"
fi
if command -v man >/dev/null 2>&1; then
  for page in agefence agefence-report; do
    in_sys man -w "$page" | grep -q "^/usr/share/man/man1/$page\.1" || fail "man -w $page"
  done
fi

# 5. Removed.
DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq agefence >"$work/remove.log" 2>&1 ||
  { cat "$work/remove.log"; fail "apt-get remove agefence"; }
for f in /usr/bin/agefence /usr/bin/agefence-report /usr/share/agefence /usr/share/doc/agefence; do
  [ ! -e "$f" ] || fail "$f is still there after apt-get remove"
done
t2=$(date +%s)
echo "deb-check: build $((t1 - t0)) s, package, install, checks and removal $((t2 - t1)) s"
[ "$failed" = 0 ] || { echo "deb-check: $failed check(s) failed"; exit 1; }
echo "deb-check: all checks passed"
