#!/usr/bin/env python3
"""Two logs of the same scenario must describe the same run, bit for bit, whatever the launch:

    same_run.py REFERENCE.h5 OTHER.h5...

Compares every /steps column, /events, every /units column, /final/state and every /final
attribute (end_time aside: it is wall-clock time), byte for byte; /ranks holds timings and
is not compared. Prints one line per log ("same as REFERENCE" or the first differences,
with the rows where a column differs) and exits 1 when any log differs. Needs h5py
(/usr/bin/python3 on Debian).
"""
import sys

import h5py
import numpy as np

WALL_CLOCK = {"end_time"}


def same(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def rows_differing(a, b):
    if a.shape != b.shape:
        return f"{len(a)} rows vs {len(b)}"
    rows = np.nonzero(a != b)[0] if a.dtype.names is None else np.nonzero(
        [x.tobytes() != y.tobytes() for x, y in zip(a, b)])[0]
    shown = ", ".join(str(r) for r in rows[:5])
    return f"rows {shown}{' ...' if len(rows) > 5 else ''} of {len(a)}"


def compare(ref, other):
    diffs = []
    for group in ("steps", "units"):
        names = sorted(set(ref[group]) | set(other[group]))
        for name in names:
            if name not in ref[group] or name not in other[group]:
                diffs.append(f"/{group}/{name} missing on one side")
                continue
            a, b = ref[group][name][()], other[group][name][()]
            if not same(a, b):
                diffs.append(f"/{group}/{name}: {rows_differing(a, b)}")
    a, b = ref["events"][()], other["events"][()]
    if not same(a, b):
        diffs.append(f"/events: {rows_differing(a, b)}")
    fa, fb = ref["final"], other["final"]
    if ("state" in fa) != ("state" in fb):
        diffs.append("/final/state missing on one side")
    elif "state" in fa and not same(fa["state"][()], fb["state"][()]):
        diffs.append("/final/state differs")
    for key in sorted(set(fa.attrs) | set(fb.attrs)):
        if key in WALL_CLOCK:
            continue
        va, vb = fa.attrs.get(key), fb.attrs.get(key)
        if va is None or vb is None or np.asarray(va).tobytes() != np.asarray(vb).tobytes():
            diffs.append(f"/final@{key}: {va!r} vs {vb!r}")
    return diffs


def main():
    if len(sys.argv) < 3:
        print("usage: same_run.py REFERENCE.h5 OTHER.h5...", file=sys.stderr)
        return 2
    bad = 0
    with h5py.File(sys.argv[1], "r") as ref:
        for path in sys.argv[2:]:
            with h5py.File(path, "r") as other:
                diffs = compare(ref, other)
            if diffs:
                bad += 1
                print(f"DIFF {path} vs {sys.argv[1]}: " + "; ".join(diffs[:6]) +
                      (f"; and {len(diffs) - 6} more" if len(diffs) > 6 else ""))
            else:
                print(f"same {path} as {sys.argv[1]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
