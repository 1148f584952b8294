#!/usr/bin/env bash
# The same scenario and seed (the same fleet) on 1, 2, 3 and 4 ranks: identical /steps
# counters, /events, /units and /final (timings aside).
#   determinism.sh AGEFENCE MPIEXEC WORKDIR SCENARIO
set -uo pipefail
agefence=$1 mpiexec=$2 work=$3 scenario=$4
rm -rf "$work" && mkdir -p "$work"
for np in 1 2 3 4; do
  "$mpiexec" -n "$np" --oversubscribe "$agefence" run -q -c "$scenario" -o "$work/n$np.h5" \
    --set scenario.devices=12 >"$work/out$np" 2>&1
  rc=$?
  if [ "$rc" != 0 ] && [ "$rc" != 4 ]; then
    echo "FAIL: np=$np exit $rc"; cat "$work/out$np"; exit 1
  fi
done
/usr/bin/python3 - "$work" <<'PY'
import sys
import h5py
import numpy as np

work = sys.argv[1]
files = [h5py.File(f"{work}/n{n}.h5", "r") for n in (1, 2, 3, 4)]
ref = files[0]
bad = 0
def same(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()
for f in files[1:]:
    name = f.filename
    for col in ref["steps"]:
        if not same(ref["steps"][col][()], f["steps"][col][()]):
            print(f"DIFF {name}: /steps/{col}"); bad += 1
    if not same(ref["events"][()], f["events"][()]):
        print(f"DIFF {name}: /events"); bad += 1
    for col in ref["units"]:
        if not same(ref["units"][col][()], f["units"][col][()]):
            print(f"DIFF {name}: /units/{col}"); bad += 1
    if not same(ref["final/state"][()], f["final/state"][()]):
        print(f"DIFF {name}: /final/state"); bad += 1
    for k, v in ref["final"].attrs.items():
        if k in ("end_time",):
            continue
        if f["final"].attrs.get(k) != v:
            print(f"DIFF {name}: /final@{k}: {v} vs {f['final'].attrs.get(k)}"); bad += 1
print(f"steps={len(ref['steps/step'])} events={len(ref['events'])} "
      f"rollbacks={ref['final'].attrs['rollbacks_total']} "
      f"max_blackout={ref['final'].attrs['max_blackout']:.3f}")
print(f"{3 - min(bad, 3)} passed, {min(bad, 3)} failed" if bad else "3 passed, 0 failed")
sys.exit(1 if bad else 0)
PY
