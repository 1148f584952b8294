#!/usr/bin/env bash
# The step graph (backend.graph) changes how a steady-state step is issued, never what it
# computes: the same scenario with the graph off and on gives identical /steps counters,
# /events, /units, /final/state and /final figures (timings aside), across seeds, rank counts,
# containment modes and rollbacks. The graph must also have run: graph_steps > 0 with it on
# (and fewer than the executed steps where DMR twins or rollbacks force the eager path),
# 0 with it off, and off under auto with straggler detection.
#   step_graph.sh AGEFENCE REPORT MPIEXEC WORKDIR SMALL_SCENARIO
set -uo pipefail
. "$(dirname "$0")/lib.sh"
agefence=$1 report=$2 mpiexec=$3 work=$4 small=$5
rm -rf "$work" && mkdir -p "$work"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# NAME NP SCENARIO SETTINGS...: one run with the graph off, one with it on.
pair() {
  local name=$1 np=$2 scen=$3
  shift 3
  local g rc
  local -a c=()
  [ "$scen" = default ] || c=(-c "$scen") # default: the embedded scenario
  for g in off on; do
    "$mpiexec" -n "$np" "$agefence" run -q "${c[@]}" \
      -o "$work/$name.$g.h5" --set backend.graph=$g "$@" >"$work/$name.$g.out" 2>&1
    rc=$?
    if [ "$rc" != 0 ] && [ "$rc" != 4 ]; then
      fail "$name graph=$g: exit $rc"
      cat "$work/$name.$g.out"
    fi
    "$report" --check "$work/$name.$g.h5" >"$work/$name.$g.check" 2>&1 ||
      fail "$name graph=$g: --check: $(cat "$work/$name.$g.check")"
    why=$(af_clean_run "$report" "$work/$name.$g.h5") || fail "$name graph=$g: $why"
  done
}

pair default_dmr_np1 1 default
pair default_dmr_np2_seed5 2 default --set scenario.seed=5
# Every corruption non-finite: finite containment fences them all, in the graph too.
pair default_finite_np3 3 default --set recovery.detect=finite --set scenario.devices=6 \
  --set corruption.nonfinite=1 --set corruption.single_bit=0 --set corruption.multi_mantissa=0 \
  --set corruption.multi_exponent=0
pair small_nodrain_np2 2 "$small" --set recovery.drain=off --set scenario.seed=11
pair small_dmr_np4_seed3 4 "$small" --set recovery.detect=dmr --set scenario.seed=3

# Under auto, straggler detection keeps the eager path (its per-device times join the
# exchange after the compute is timed), and so does the cpu backend.
"$mpiexec" -n 2 "$agefence" run -q -c "$small" -o "$work/strag.h5" \
  --set straggler.detect=on >"$work/strag.out" 2>&1
rc=$?
[ "$rc" = 0 ] || [ "$rc" = 4 ] || fail "straggler run: exit $rc: $(cat "$work/strag.out")"
"$mpiexec" -n 1 "$agefence" run -q -c "$small" -o "$work/auto.h5" >"$work/auto.out" 2>&1
rc=$?
[ "$rc" = 0 ] || [ "$rc" = 4 ] || fail "auto run: exit $rc: $(cat "$work/auto.out")"

# A rank whose preparation fails turns the graph off on every rank; with graph = on that is
# an error on every rank, named, before any step, and no log is left.
AGEFENCE_DEBUG=graphfail=1 "$mpiexec" -n 2 "$agefence" run -q -c "$small" \
  -o "$work/gfail.h5" --set backend.graph=on >"$work/gfail.out" 2>&1
rc=$?
if [ "$rc" = 0 ] || [ -e "$work/gfail.h5" ] ||
  ! grep -q "rank 0: backend.graph = on: the step graph cannot be prepared on another rank" \
    "$work/gfail.out" ||
  ! grep -q "rank 1: backend.graph = on: the step graph cannot be prepared: graph_prepare failed on purpose" \
    "$work/gfail.out"; then
  fail "a failed graph preparation with graph = on: exit $rc: $(cat "$work/gfail.out")"
else
  echo "ok   a failed graph preparation on rank 1 stops both ranks before any step (exit $rc)"
fi

/usr/bin/python3 - "$work" <<'PY' || fails=$((fails + 1))
import sys
import h5py

work = sys.argv[1]
names = ["default_dmr_np1", "default_dmr_np2_seed5", "default_finite_np3",
         "small_nodrain_np2", "small_dmr_np4_seed3"]
bad = 0

def same(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()

def fail(msg):
    global bad
    print("FAIL:", msg)
    bad += 1

mixed = 0
for n in names:
    off = h5py.File(f"{work}/{n}.off.h5", "r")
    on = h5py.File(f"{work}/{n}.on.h5", "r")
    for col in off["steps"]:
        if not same(off["steps"][col][()], on["steps"][col][()]):
            fail(f"{n}: /steps/{col} differs between graph off and on")
    if not same(off["events"][()], on["events"][()]):
        fail(f"{n}: /events differ")
    for col in off["units"]:
        if not same(off["units"][col][()], on["units"][col][()]):
            fail(f"{n}: /units/{col} differs")
    if not same(off["final/state"][()], on["final/state"][()]):
        fail(f"{n}: /final/state differs")
    for k, v in off["final"].attrs.items():
        if k in ("end_time", "graph_steps", "one_pass_steps") or k.startswith(("rss_", "log_writer_")):
            continue
        if on["final"].attrs.get(k) != v:
            fail(f"{n}: /final@{k}: {v} (off) vs {on['final'].attrs.get(k)} (on)")
    fo, fn = off["final"].attrs, on["final"].attrs
    done = int(fn["steps_completed"])
    gs = int(fn["graph_steps"])
    if int(fo["graph_steps"]) != 0:
        fail(f"{n}: graph off ran {fo['graph_steps']} graph steps")
    if not 0 < gs <= done:
        fail(f"{n}: graph on ran {gs} graph steps of {done}")
    mixed += gs < done
    if int(fn["graph_instantiations"]) != 0 or int(fo["graph_instantiations"]) != 0:
        fail(f"{n}: graph instantiations on the cpu backend")
    why_on = on.attrs["step_graph"]
    why_off = off.attrs["step_graph"]
    why_on = why_on.decode() if isinstance(why_on, bytes) else why_on
    why_off = why_off.decode() if isinstance(why_off, bytes) else why_off
    if not why_on.startswith("on (cpu backend") or why_off != "off (backend.graph = off)":
        fail(f"{n}: /@step_graph says '{why_on}' (on) and '{why_off}' (off)")
    print(f"ok   {n}: {done} steps, {gs} as the step graph, "
          f"fenced {int(fn['fenced_total'])}, rollbacks {int(fn['rollbacks_total'])}, "
          f"checksum {fn['state_checksum'].decode() if isinstance(fn['state_checksum'], bytes) else fn['state_checksum']}")
if mixed == 0:
    fail("no run mixed graph steps with eager ones (DMR twins, rollbacks)")
s = h5py.File(f"{work}/strag.h5", "r")
w = s.attrs["step_graph"]
w = w.decode() if isinstance(w, bytes) else w
if int(s["final"].attrs["graph_steps"]) != 0 or "straggler" not in w:
    fail(f"straggler run: {s['final'].attrs['graph_steps']} graph steps, /@step_graph '{w}'")
else:
    print(f"ok   straggler detection under auto: /@step_graph '{w}'")
a = h5py.File(f"{work}/auto.h5", "r")
w = a.attrs["step_graph"]
w = w.decode() if isinstance(w, bytes) else w
if int(a["final"].attrs["graph_steps"]) != 0 or w != "off (auto: the cpu backend launches nothing)":
    fail(f"cpu run under auto: {a['final'].attrs['graph_steps']} graph steps, /@step_graph '{w}'")
else:
    print(f"ok   cpu backend under auto: /@step_graph '{w}'")
sys.exit(1 if bad else 0)
PY
if [ "$fails" = 0 ]; then
  echo "step graph: identical with and without, all runs"
  exit 0
fi
echo "step graph: $fails failure(s)"
exit 1
