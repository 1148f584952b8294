#!/usr/bin/env bash
# agefence GPU check: run ON the GPU machine, from the repository root, with the prefix that
# scripts/gpu-prefix.sh made (.devprefix/root, carried along). It builds agefence with CUDA and
# NCCL against that prefix, runs the unit and GPU tests, the kernel benchmark, and the same
# scenario on the cpu and cuda backends, and writes what it saw into RESULTS as two files, so
# that the device tool (which brings back at most 8) brings all of it back: summary.txt (the
# verdicts and tables) and gpu-check.tar.gz (every log, CSV and benchmark file, made on any
# exit). docs/GPU.md explains the flow.
#
#   scripts/gpu-check.sh [RESULTS]      RESULTS defaults to $OUT, else ./gpu-results
#
# Environment knobs: AGEFENCE_PREFIX (default .devprefix/root), AGEFENCE_BUILD_DIR (default
# build-gpu), NCCL_HOME (else the pip package nvidia-nccl-cu13 is used), AGEFENCE_CHECK_STEPS
# (steps of the whole-run comparison; default: the embedded default scenario as it is),
# AGEFENCE_CHECK_MPI=1 (also the mpi tests).
# Exit status: 0 when every step passed or skipped for want of a GPU, 1 otherwise.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
res=${1:-${OUT:-$top/gpu-results}}
mkdir -p "$res"
P=${AGEFENCE_PREFIX:-$top/.devprefix/root}
arch=x86_64-linux-gnu
L=$P/usr/lib/$arch
build=${AGEFENCE_BUILD_DIR:-$top/build-gpu}
steps=()
[ -n "${AGEFENCE_CHECK_STEPS:-}" ] && steps=(--set "scenario.steps=$AGEFENCE_CHECK_STEPS")
# RESULTS holds two files: the summary, and one archive of everything else, which is written
# into $work (outside RESULTS) and packed on any exit.
summary=$res/summary.txt
archive=$res/gpu-check.tar.gz
work=$build/gpu-check
rm -rf "$work" "$archive"
mkdir -p "$work"
pack() { tar -czf "$archive" -C "$work" . 2>/dev/null; }
trap pack EXIT
envlog=$work/env.txt
: >"$summary"
: >"$envlog"
failed=0

say() { echo "gpu-check: $*" | tee -a "$summary"; }
# step NAME LOG CMD...: runs CMD with its output appended to LOG; records ok/FAIL/SKIP (77).
step() {
  local name=$1 log=$2
  shift 2
  local t0=$SECONDS
  echo "==== $name: $*" >>"$log"
  "$@" >>"$log" 2>&1
  local rc=$?
  local verdict=ok
  if [ $rc -eq 77 ]; then
    verdict=SKIP
  elif [ $rc -ne 0 ]; then
    verdict="FAIL (exit $rc, see $(basename "$log") in gpu-check.tar.gz)"
    failed=1
  fi
  say "$(printf '%-22s %-8s %4ds' "$name" "$verdict" $((SECONDS - t0)))"
  return $rc
}

if [ ! -d "$L" ]; then
  say "no prefix at $P: run scripts/gpu-prefix.sh on the build machine and carry .devprefix/root"
  exit 1
fi

# ---- NCCL: NCCL_HOME, else the pip package, else the system --------------------------------
nccl_lib=
nccl_inc=
if [ -n "${NCCL_HOME:-}" ]; then
  for f in "$NCCL_HOME"/lib/libnccl.so "$NCCL_HOME"/lib/libnccl.so.2 "$NCCL_HOME"/lib64/libnccl.so.2; do
    [ -f "$f" ] && { nccl_lib=$f; break; }
  done
  [ -f "$NCCL_HOME/include/nccl.h" ] && nccl_inc=$NCCL_HOME/include
fi
if [ -z "$nccl_lib" ]; then
  for py in python3 /opt/torch/.venv/bin/python3 /usr/bin/python3; do
    d=$("$py" -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null) || continue
    if [ -f "$d/lib/libnccl.so.2" ]; then
      nccl_lib=$d/lib/libnccl.so.2
      [ -f "$d/include/nccl.h" ] && nccl_inc=$d/include
      break
    fi
  done
fi
if [ -z "$nccl_lib" ]; then
  nccl_lib=$(ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 /{print $NF; exit}')
fi
if [ -z "$nccl_inc" ] && [ -f "$P/nccl/include/nccl.h" ]; then
  nccl_inc=$P/nccl/include # the header shipped in the prefix (from the build machine's CUDA)
fi
if [ -z "$nccl_lib" ] || [ -z "$nccl_inc" ]; then
  say "NCCL not found (library '${nccl_lib}', header '${nccl_inc}'): set NCCL_HOME"
  exit 1
fi

nvcc=$(command -v nvcc || true)
[ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
if [ -z "$nvcc" ]; then
  say "nvcc not found"
  exit 1
fi

# ---- the environment: the relocated Open MPI, HDF5, cmocka, inih, pkgconf ------------------
nvcc_dir=$(dirname "$nvcc")
nccl_dir=$(dirname "$nccl_lib")
export PATH=$P/usr/bin:$nvcc_dir:$PATH
export LD_LIBRARY_PATH=$L:$L/hdf5/openmpi:$L/pmix2/lib:$nccl_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PKG_CONFIG_PATH=$L/pkgconfig:$P/usr/share/pkgconfig
export PKG_CONFIG_LIBDIR=$PKG_CONFIG_PATH
export CPATH=$P/usr/include${CPATH:+:$CPATH}
# Open MPI finds its plugins, help texts and wrapper data below OPAL_PREFIX; PMIx likewise.
export OPAL_PREFIX=$P/usr
export PMIX_INSTALL_PREFIX=$L/pmix2
export PMIX_MCA_mca_base_component_path=$L/pmix2/lib/pmix
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
# No InfiniBand or other fabric on one node: keep Open MPI to shared memory and TCP.
export OMPI_MCA_btl=self,vader,tcp
export OMPI_MCA_pml=ob1

nccl_hdr_version=$(awk '/#define NCCL_(MAJOR|MINOR|PATCH)/{printf "%s%s", sep, $3; sep="."}' "$nccl_inc/nccl.h")
nccl_lib_version=$(python3 - "$nccl_lib" 2>/dev/null <<'EOF'
import ctypes, sys
v = ctypes.c_int(0)
ctypes.CDLL(sys.argv[1]).ncclGetVersion(ctypes.byref(v))
print(v.value)
EOF
)
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname) $(uname -srm)"
  [ -r /etc/os-release ] && (. /etc/os-release; echo "os: $PRETTY_NAME")
  echo "nvcc: $("$nvcc" --version | tail -1)"
  echo "cmake: $(cmake --version | head -1)"
  echo "cc: $(cc --version | head -1)"
  echo "nccl: $nccl_lib (library version code ${nccl_lib_version:-?}), header $nccl_inc/nccl.h ($nccl_hdr_version)"
  echo "prefix: $P ($(du -sm "$P" | cut -f1) MiB)"
  echo "mpirun: $(command -v mpirun) -> $(mpirun --version 2>&1 | head -1)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv 2>&1
  echo "---- prefix manifest"
  cat "$P/MANIFEST" 2>/dev/null
} >>"$envlog" 2>&1
say "NCCL $nccl_hdr_version header, library $nccl_lib"

# ---- configure and build ------------------------------------------------------------------
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
buildlog=$work/build.log
: >"$buildlog"
if ! step configure "$buildlog" cmake -S "$top" -B "$build" "${gen[@]}" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAGEFENCE_CUDA=ON -DAGEFENCE_WERROR=OFF \
    -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DNCCL_INCLUDE_DIR="$nccl_inc" -DNCCL_LIBRARY="$nccl_lib" \
    -DPKG_CONFIG_EXECUTABLE="$P/usr/bin/pkgconf" \
    -DMPI_C_COMPILER="$P/usr/bin/mpicc" -DMPIEXEC_EXECUTABLE="$P/usr/bin/mpiexec" \
    -DHDF5_ROOT="$L/hdf5/openmpi" -DHDF5_NO_FIND_PACKAGE_CONFIG_FILE=ON; then
  say "configure failed: see build.log in gpu-check.tar.gz"
  exit 1
fi
if ! step build "$buildlog" cmake --build "$build" -j "$(nproc)"; then
  exit 1
fi
{
  echo "---- ldd agefence"
  ldd "$build/agefence"
} >>"$envlog" 2>&1
if ldd "$build/agefence" | grep -q "not found"; then
  say "agefence has unresolved libraries: see env.txt in gpu-check.tar.gz"
  failed=1
fi

# ---- tests --------------------------------------------------------------------------------
labels='gpu|unit'
[ "${AGEFENCE_CHECK_MPI:-0}" = 1 ] && labels='gpu|unit|mpi'
testlog=$work/ctest.log
: >"$testlog"
(cd "$build" && step "ctest -L '$labels'" "$testlog" \
   ctest -L "$labels" --output-on-failure --timeout 600) || failed=1
grep -E "tests passed|Skipped|Failed|\*\*\*" "$testlog" | sed 's/^/  /' | tee -a "$summary"

# ---- the kernel benchmark -----------------------------------------------------------------
benchlog=$work/bench.txt
: >"$benchlog"
step bench_kernel_cuda "$benchlog" "$build/tests/bench_kernel_cuda" "$work/bench.csv"
sed -n '/^kernel /,/^samples/p' "$benchlog" | sed 's/^/  /' | tee -a "$summary"

# ---- whole runs: the same scenario on cpu and on cuda -------------------------------------
# Every comparison here fails the check when it does not hold: agefence-report --same requires
# identical /steps, /events, /units, /final/state and /final figures (the launch aside).
runlog=$work/runs.log
: >"$runlog"
report=$build/agefence-report
sum_of() { sed -n 's/.*final state .*checksum \([0-9a-f]*\),.*/\1/p' "$1" | head -1; }
# same WHAT OTHER.h5 RUN.h5: --same, its verdict in the summary, failed=1 when they differ.
same() {
  local what=$1 other=$2 run=$3
  if "$report" --same "$other" "$run" >"$work/same.txt" 2>&1; then
    say "$what: identical /steps, /events, /units and /final ($(basename "$other") vs $(basename "$run"))"
  else
    say "$what: DIFFER:"
    head -12 "$work/same.txt" | sed 's/^/  /' | tee -a "$summary"
    cat "$work/same.txt" >>"$runlog"
    failed=1
  fi
}
# The scenario on cpu and on cuda at NP ranks (logs check<TAG>-<backend>.h5, outputs
# run<TAG>-<backend>.txt), compared; EXTRA settings follow (both runs). CUDA_EXTRA (an array,
# empty unless set) goes to the cuda run alone.
cuda_extra=()
compare_backends() {
  local np=$1 tag=$2 backend c_cpu c_cuda used
  shift 2
  for backend in cpu cuda; do
    out=$build/check$tag-$backend.h5
    rm -f "$out"
    local more=()
    [ "$backend" = cuda ] && more=("${cuda_extra[@]}")
    step "run np=$np compute=$backend$tag" "$runlog" \
      mpirun -np "$np" "$build/agefence" run "${steps[@]}" --set backend.compute="$backend" \
      "$@" "${more[@]}" -o "$out"
    sed -n '/==== run np='"$np"' compute='"$backend$tag"':/,$p' "$runlog" >"$build/run$tag-$backend.txt"
  done
  c_cpu=$(sum_of "$build/run$tag-cpu.txt")
  c_cuda=$(sum_of "$build/run$tag-cuda.txt")
  used=$(sed -n 's/.*backends *compute=\([a-z]*\).*/\1/p' "$build/run$tag-cuda.txt" | head -1)
  if [ "$used" != cuda ]; then
    say "np=$np: the run asked for compute=cuda but reported compute=${used:-?}"
    failed=1
  fi
  if [ -n "$c_cpu" ] && [ "$c_cpu" = "$c_cuda" ]; then
    say "np=$np$tag final state checksums: cpu '$c_cpu', cuda '$c_cuda': equal"
  else
    say "np=$np$tag final state checksums: cpu '$c_cpu', cuda '$c_cuda': DIFFER or missing"
    failed=1
  fi
  same "np=$np$tag cpu vs cuda" "$build/check$tag-cuda.h5" "$build/check$tag-cpu.h5"
}
compare_backends 1 ""
# Silent units and exponent-reaching corruptions under abft and sampled twins: the injection on
# HEALTHY slots, the mass-balance kernel, twins on silent units and the quarantine, on cuda as
# on the cpu (every corruption is caught: the run passes).
compare_backends 1 "-sdc" --set recovery.detect=abft+sampled --set corruption.silent_fraction=0.03 \
  --set corruption.single_bit=0 --set corruption.multi_mantissa=0 --set corruption.multi_exponent=0.99
# The attention workload (docs/workloads.md): the default aging with attention blocks (32
# tokens x 16 features: the cpu's vector path) under DMR and ABFT, on one rank and, with the
# step graph, on one rank again: the warp-per-block kernel must give the cpu's bits.
compare_backends 1 "-attn" --set workload.kind=attention --set scenario.block_len=32 \
  --set workload.dim=16 --set recovery.detect=abft+dmr
compare_backends 1 "-attngraph" --set workload.kind=attention --set scenario.block_len=16 \
  --set workload.dim=8 --set backend.graph=on

# ---- the step graph -----------------------------------------------------------------------
# The default scenario (through an 85% blackout) on cuda with backend.graph off and on, twice,
# alternating: the graph must be instantiated exactly once, run most steps, allocate nothing
# after start-up and give the eager path's bits; the step latencies are compared from the logs.
for round in 1 2; do
  for g in off on; do
    out=$build/check-graph-$g$round.h5
    rm -f "$out"
    step "run cuda graph=$g round $round" "$runlog" \
      mpirun -np 1 "$build/agefence" run "${steps[@]}" --set backend.compute=cuda \
      --set backend.graph=$g -o "$out"
  done
done
section() { sed -n "/==== run cuda graph=$1 round 1/,/verdict/p" "$runlog"; }
section on | grep -E "step graph|blackout|allocations|final state" | sed 's/^/  /' |
  tee -a "$summary"
gline=$(section on | grep "step graph" | head -1)
case "$gline" in
  *"on (CUDA graph"*", 1 graph instantiation"*) say "step graph: on, 1 instantiation" ;;
  *)
    say "step graph: expected 'on (CUDA graph ...), 1 graph instantiation', got '${gline}'"
    failed=1
    ;;
esac
if "$build/agefence-report" --check "$build/check-graph-on1.h5" >>"$runlog" 2>&1; then
  say "step graph: agefence-report --check passes (graph_instantiations, graph_steps)"
else
  say "step graph: agefence-report --check fails: see runs.log in gpu-check.tar.gz"
  failed=1
fi
for round in 1 2; do
  same "step graph off vs on, round $round" "$build/check-graph-on$round.h5" \
    "$build/check-graph-off$round.h5"
done
gi=$("$report" --attr /final graph_instantiations "$build/check-graph-on1.h5" 2>/dev/null)
gs=$("$report" --attr /final graph_steps "$build/check-graph-on1.h5" 2>/dev/null)
sc=$("$report" --attr /final steps_completed "$build/check-graph-on1.h5" 2>/dev/null)
if [ "$gi" = 1 ] && [ -n "$gs" ] && [ "$gs" -gt 0 ]; then
  say "step graph: 1 instantiation, $gs of $sc steps as the graph"
else
  say "step graph: graph_instantiations '$gi', graph_steps '$gs' of '$sc': expected 1 and > 0"
  failed=1
fi
for round in 1 2; do
  # --compare OTHER RUN prints RUN, OTHER, OTHER/RUN: here off, on, on/off.
  "$report" --compare "$build/check-graph-on$round.h5" "$build/check-graph-off$round.h5" 2>&1 |
    grep -E "latency\.phases\.(step|kernel|halo)_us\.(p50|p99) " |
    sed "s/^/  round $round (off, on, on\/off): /" | tee -a "$summary"
done
# The same comparison as a benchmark: rounds of off and on interleaved, raw samples kept.
step "bench graph (cuda, 1 rank)" "$runlog" \
  timeout 300 mpirun -np 1 "$build/agefence" bench graph --samples 10 \
  --set backend.compute=cuda -o "$work/bench-graph.h5"
sed -n '/==== bench graph/,$p' "$runlog" | grep -E "step_us|kernel_halo|graph on / off|note:|result:" |
  sed 's/^/  /' | tee -a "$summary"

# ---- the CPU benchmarks on this (quieter, larger) machine ---------------------------------
# Stragglers and pacing on the device: the exchange's per-device time words travel through its
# device mirror; a slowed device must be declared and drained, and the result stay bitwise equal.
out=$build/check-strag.h5
rm -f "$out"
step "run cuda stragglers" "$runlog" \
  mpirun -np 1 "$build/agefence" run --set backend.compute=cuda --set scenario.steps=400 \
  --set straggler.detect=on --set pacing.mode=ewma --set event.9.step=1 \
  --set event.9.action=slow --set event.9.device=2 --set event.9.units=0-15 \
  --set event.9.factor=8 -o "$out"
if "$report" "$out" >"$build/report-strag.txt" 2>&1; then
  grep -E "exit  |final state|pacing  |throttling" "$build/report-strag.txt" | sed 's/^/  /' |
    tee -a "$summary"
else
  say "cuda stragglers: the report cannot read $out"
  failed=1
fi
# One device declared a straggler (device 2 was slowed 8x), and the result bitwise equal.
nstrag=$("$report" --json "$out" 2>/dev/null | tr -d ' \n' | grep -o '"events":{[^}]*}' |
  head -1 | sed -n 's/.*"straggler":\([0-9]*\).*/\1/p') # recovery.events, the run's own
if [ "$nstrag" = 1 ] && [ "$("$report" --attr /final bitwise_equal "$out")" = 1 ]; then
  say "cuda stragglers: one device declared, bitwise equal to the reference"
else
  say "cuda stragglers: ${nstrag:-?} devices declared (expected 1), bitwise_equal" \
    "$("$report" --attr /final bitwise_equal "$out" 2>&1)"
  failed=1
fi
for py in python3 /opt/torch/.venv/bin/python3; do
  "$py" -c 'import h5py' 2>/dev/null || continue
  "$py" - "$out" <<'EOF' 2>&1 | sed 's/^/  /' | tee -a "$summary"
import sys, h5py
with h5py.File(sys.argv[1], "r", swmr=True) as f:
    ev = f["events"][()]
    s = [(int(r["step"]), int(r["from_device"])) for r in ev if r["kind"] == b"straggler"]
    d = sum(1 for r in ev if r["kind"] == b"drain" and r["from_device"] == 2)
    print("cuda stragglers: declared (step, device):", s, "| drains off device 2:", d)
EOF
  break
done

# Two or more GPUs: cross-rank moves between device slots over NCCL (ncclSend/ncclRecv straight
# between committed buffers, sim/recovery/xfer.c) against the cpu backend at the same rank count. One
# GPU cannot run this: NCCL refuses two ranks on one device.
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [ "${ngpu:-0}" -ge 2 ]; then
  compare_backends 2 2
else
  say "one GPU: the 2-rank nccl move check needs two (NCCL refuses two ranks on one device)"
fi
# Ranks sharing one GPU (backend.share_gpu = on, fabric = mpi): cross-rank moves through MPI
# staging at 2 and 4 ranks, and the step graph with its host all-reduce at 3, each against the
# cpu backend at the same rank count.
cuda_extra=(--set backend.share_gpu=on --set backend.fabric=mpi)
compare_backends 2 -share2
compare_backends 4 -share4
cuda_extra=(--set backend.share_gpu=on --set backend.fabric=mpi --set backend.graph=on)
compare_backends 3 -share3graph
gs=$("$report" --attr /final graph_steps "$build/check-share3graph-cuda.h5" 2>/dev/null)
gi=$("$report" --attr /final graph_instantiations "$build/check-share3graph-cuda.h5" 2>/dev/null)
if [ "$gi" = 1 ] && [ -n "$gs" ] && [ "$gs" -gt 0 ]; then
  say "shared GPU, 3 ranks: the step graph instantiated once, $gs steps as the graph"
else
  say "shared GPU, 3 ranks: graph_instantiations '$gi', graph_steps '$gs': expected 1 and > 0"
  failed=1
fi
cuda_extra=()

cpulog=$work/bench-cpu.txt
: >"$cpulog"
if [ "${AGEFENCE_CHECK_CPU_BENCH:-1}" = 1 ]; then
  for b in "kernel --samples 30" "recovery --samples 25" "coord" "log" "remap --samples 20" "scale"; do
    # shellcheck disable=SC2086
    step "bench ${b%% *} (cpu, 4 ranks)" "$cpulog" \
      timeout 300 mpirun -np 4 "$build/agefence" bench $b -o "$build/bench-${b%% *}.h5"
  done
  step "bench kernel (cpu, 1 rank)" "$cpulog" \
    timeout 120 mpirun -np 1 "$build/agefence" bench kernel --samples 20 -o "$build/bench-k1.h5"
  grep -E "^agefence bench|MET|MISSED|result:|GB/s|_us " "$cpulog" | sed 's/^/  /' >>"$summary"
fi

if [ $failed -eq 0 ]; then
  say "verdict: PASS (results in $res: summary.txt, gpu-check.tar.gz)"
else
  say "verdict: FAIL (results in $res: summary.txt, gpu-check.tar.gz)"
fi
exit $failed
