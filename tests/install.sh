#!/usr/bin/env bash
# The installed tree, moved away from where it was installed, works on its own.
#   install.sh BUILD_DIR SOURCE_DIR WORKDIR
# Installs BUILD_DIR (cmake --install) into a temporary prefix, moves the prefix elsewhere (mv),
# then checks that every file of the list below is there (the manual in share/doc/agefence/
# included), and, from an empty folder, with a bare environment (env -i: PATH is the moved bin/
# plus /usr/bin:/bin, no AGEFENCE_* variable):
#   1. nothing in the tree names the source tree, the build tree or the prefix it was installed
#      to: no such string in any file (binaries included, grep -a), no such RPATH/RUNPATH;
#   2. agefence --version is the build's; agefence config of the installed
#      configs/default.ini is the embedded default; the default scenario runs as a singleton
#      (no mpirun) to a log that passes --check, bitwise equal, its git_revision the build's;
#   3. agefence-report --plots writes the six PNGs with the installed plots.py, found from the
#      executable (/proc/self/exe): with it moved away, --plots says where it looked (the moved
#      tree) and writes nothing; through a symbolic link to the binary it is found again;
#      AGEFENCE_PLOTS_PY overrides, and naming a missing file is exit 2 with one line;
#   4. where strace is installed, neither program opens anything under the source or build
#      tree; where man is, `man` finds both pages in the moved tree's share/man.
# Plots need /usr/bin/python3 with h5py and matplotlib: without them part 3 is reported as
# skipped and the rest still runs.
set -uo pipefail
build=$(realpath "$1") src=$(realpath "$2") work=$3
rm -rf "$work" && mkdir -p "$work"
failed=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
tmp=$(mktemp -d) || { echo "FAIL: mktemp"; exit 1; }
trap 'rm -rf "$tmp"' EXIT

t0=$(date +%s.%N)
cmake --install "$build" --prefix "$tmp/prefix" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; echo "FAIL: cmake --install"; exit 1; }
mkdir -p "$tmp/elsewhere"
mv "$tmp/prefix" "$tmp/elsewhere/agefence-moved" || { echo "FAIL: mv"; exit 1; }
root=$tmp/elsewhere/agefence-moved
for f in bin/agefence bin/agefence-report share/agefence/plots.py \
  share/agefence/configs/default.ini share/agefence/configs/README.md \
  share/agefence/configs/slurm/agefence.sbatch \
  share/doc/agefence/README.md share/doc/agefence/CHANGELOG.md share/doc/agefence/docs/log.md \
  share/doc/agefence/docs/GPU.md share/doc/agefence/docs/workloads.md \
  share/doc/agefence/docs/img/report_step_latency.png \
  share/man/man1/agefence.1 share/man/man1/agefence-report.1; do
  [ -f "$root/$f" ] || fail "not installed: $f"
done

# 1. No path of the trees it came from. A path counts where it starts a string (not preceded by
# a name's character: /usr/src is not /src) and ends at a '/' or the string's end.
ere() { printf '%s' "$1" | sed 's/[][\.*^$+?(){}|]/\\&/g'; }
for p in "$src" "$build" "$tmp/prefix"; do
  hits=$(LC_ALL=C grep -rlaE "(^|[^[:alnum:]_.~/-])$(ere "$p")(/|[^[:alnum:]_.~-]|\$)" "$root")
  [ -z "$hits" ] || fail "the installed tree names $p in: $(echo "$hits" | tr '\n' ' ')"
done
for exe in "$root/bin/agefence" "$root/bin/agefence-report"; do
  rpath=$(readelf -d "$exe" | grep -E 'RPATH|RUNPATH' | sed 's/.*\[\(.*\)\]/\1/')
  IFS=: read -ra dirs <<<"$rpath"
  for d in "${dirs[@]}"; do
    case "$d" in
      "$src" | "$src"/* | "$build" | "$build"/* | "$tmp"/*) fail "$exe: RPATH entry $d" ;;
    esac
  done
done

# Runs a command in the moved tree's world: empty folder, bare environment (but for the test's
# own Open MPI session-directory base, tests/CMakeLists.txt says why).
mkdir -p "$tmp/cwd"
in_tree() {
  (cd "$tmp/cwd" && env -i HOME="$tmp/cwd" PATH="$root/bin:/usr/bin:/bin" LANG=C.UTF-8 \
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    ${OMPI_MCA_orte_tmpdir_base:+OMPI_MCA_orte_tmpdir_base="$OMPI_MCA_orte_tmpdir_base"} "$@")
}

# 2. agefence from the moved tree.
[ "$(in_tree sh -c 'command -v agefence')" = "$root/bin/agefence" ] ||
  fail "agefence on PATH is not the moved tree's"
want=$("$build/agefence" --version)
got=$(in_tree agefence --version) || fail "agefence --version: exit $?"
[ "$got" = "$want" ] || fail "installed --version '$got', the build's '$want'"
in_tree agefence config >"$work/embedded.ini" || fail "agefence config: exit $?"
in_tree agefence config -c "$root/share/agefence/configs/default.ini" >"$work/installed.ini" ||
  fail "agefence config -c <installed default.ini>: exit $?"
cmp -s "$work/embedded.ini" "$work/installed.ini" ||
  fail "the installed configs/default.ini resolves differently from the embedded default"
s0=$(date +%s.%N)
in_tree agefence run -o run.h5 >"$work/run.out" 2>"$work/run.err"
rc=$?
s1=$(date +%s.%N)
[ "$rc" = 0 ] || { cat "$work/run.err"; fail "agefence run (default scenario, singleton): exit $rc"; }
grep -q "BITWISE EQUAL" "$work/run.out" || fail "the run's summary does not say bitwise equal"
log=$tmp/cwd/run.h5
[ -f "$log" ] || fail "no log at run.h5"
in_tree agefence-report --check run.h5 >"$work/check.out" || fail "--check: exit $?"
rev=$(in_tree agefence-report --attr / git_revision run.h5) || fail "--attr / git_revision"
case "$want" in
  *"(git $rev)" | *"$rev") ;;
  *) fail "the log's git_revision '$rev' is not the build's ('$want')" ;;
esac

# 3. --plots with the installed script.
if /usr/bin/python3 -c "import h5py, matplotlib" >/dev/null 2>&1; then
  in_tree agefence-report --plots figs run.h5 >"$work/report.out" 2>"$work/plots.err"
  rc=$?
  [ "$rc" = 0 ] || fail "agefence-report --plots: exit $rc: $(cat "$work/plots.err")"
  grep -q "^RUN" "$work/report.out" || fail "--plots printed no report"
  grep -q "wrote 6 plots" "$work/plots.err" || fail "--plots: $(cat "$work/plots.err")"
  for png in step_latency latency_cdf unit_health containment latency_by_blackout goodput; do
    [ -s "$tmp/cwd/figs/$png.png" ] || fail "no figs/$png.png"
  done
  # Found from the executable, and from nowhere else: moved away, it is not found.
  mv "$root/share/agefence/plots.py" "$tmp/plots.py.away"
  in_tree agefence-report --plots figs2 run.h5 >/dev/null 2>"$work/noplots.err"
  rc=$?
  [ "$rc" = 0 ] || fail "--plots without plots.py: exit $rc"
  grep -qF "plots skipped: plots.py not found beside $root/bin/agefence-report nor at $root/bin/" \
    "$work/noplots.err" || fail "--plots without plots.py says: $(cat "$work/noplots.err")"
  ls "$tmp/cwd/figs2"/*.png >/dev/null 2>&1 && fail "--plots without plots.py wrote PNGs"
  in_tree env AGEFENCE_PLOTS_PY="$tmp/plots.py.away" agefence-report --plots figs3 run.h5 \
    >/dev/null 2>"$work/override.err" || fail "AGEFENCE_PLOTS_PY: exit $?: $(cat "$work/override.err")"
  [ -s "$tmp/cwd/figs3/containment.png" ] || fail "AGEFENCE_PLOTS_PY: no figures"
  mv "$tmp/plots.py.away" "$root/share/agefence/plots.py"
  in_tree env AGEFENCE_PLOTS_PY="$tmp/missing.py" agefence-report --plots figs4 run.h5 \
    >"$work/missing.out" 2>"$work/missing.err"
  rc=$?
  [ "$rc" = 2 ] && [ "$(wc -l <"$work/missing.err")" = 1 ] &&
    grep -qF "AGEFENCE_PLOTS_PY=$tmp/missing.py: No such file or directory" "$work/missing.err" ||
    fail "AGEFENCE_PLOTS_PY naming a missing file: exit $rc: $(cat "$work/missing.err")"
  mkdir -p "$tmp/links"
  ln -s "$root/bin/agefence-report" "$tmp/links/agefence-report"
  in_tree "$tmp/links/agefence-report" --plots figs5 run.h5 >/dev/null 2>"$work/link.err" ||
    fail "--plots through a symbolic link: exit $?"
  [ -s "$tmp/cwd/figs5/containment.png" ] || fail "--plots through a symbolic link: no figures"
else
  echo "note: /usr/bin/python3 lacks h5py or matplotlib: the --plots checks skipped"
fi

# 4. Nothing opened in the source or build tree (a run and a report with plots).
if command -v strace >/dev/null 2>&1 && strace -f -qq -e trace=none true 2>/dev/null; then
  in_tree strace -f -qq -e trace=%file -o "$tmp/trace" agefence run -q \
    --set scenario.steps=50 -o traced.h5 >/dev/null 2>&1 || fail "traced run: exit $?"
  in_tree strace -f -qq -e trace=%file -o "$tmp/trace2" agefence-report --plots tfigs traced.h5 \
    >/dev/null 2>&1 || fail "traced report: exit $?"
  for p in "$src" "$build"; do
    if grep -hF "\"$p/" "$tmp/trace" "$tmp/trace2" | grep -q .; then
      fail "opened under $p: $(grep -hF "\"$p/" "$tmp/trace" "$tmp/trace2" | head -3)"
    fi
  done
else
  echo "note: strace unavailable: the file accesses not traced"
fi
if command -v man >/dev/null 2>&1; then
  for page in agefence agefence-report; do
    where=$(in_tree env MANPATH="$root/share/man" man -w "$page" 2>/dev/null)
    [ "$where" = "$root/share/man/man1/$page.1" ] || fail "man -w $page: '$where'"
  done
fi

t1=$(date +%s.%N)
awk -v a="$t0" -v b="$t1" -v c="$s0" -v d="$s1" \
  'BEGIN { printf "install: %.1f s in all (the default run %.1f s)\n", b - a, d - c }'
[ "$failed" = 0 ] || { echo "install: $failed check(s) failed"; exit 1; }
echo "install: all checks passed"
