"""The attention workload against an independent NumPy computation of the same formulas.

    attention_numpy.py AGEFENCE MPIEXEC WORKDIR FIXTURE

Runs agefence (fault-free fixture, 16 blocks of 16 tokens x 8 features, 2 ranks) for 1 and
for 6 steps and recomputes both from the initial state in NumPy, the formulas of
docs/workloads.md written with NumPy's own operations: matrix products (a different order
of summation), numpy.exp (the C library's, not agefence's polynomial), a softmax over the
unmasked entries, the global mean as a plain mean. So the two agree to rounding, not to the
bit: the test allows 1e-13 absolute after one step and 1e-12 after six (the values lie in
[-1, 1]; the update's gain of up to 1.5 per step and the attention amplify the rounding).
The initial state is rebuilt in Python from the counter-based hash (kernels/af_burgers.h
af_hash4, af_u01): any difference there fails at once. Run with /usr/bin/python3 (h5py).
"""
import math
import os
import subprocess
import sys

import h5py
import numpy as np

M64 = (1 << 64) - 1


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def hash4(seed, a, b, c):
    h = mix64((seed + 0x9E3779B97F4A7C15) & M64)
    h = mix64(h ^ ((a + 0x632BE59BD9B4E019) & M64))
    h = mix64(h ^ ((b + 0x8CB92BA72F3D8DD7) & M64))
    return mix64(h ^ ((c + 0x5851F42D4C957F2D) & M64))


def u01(h):
    return (h >> 11) * (1.0 / 9007199254740992.0)


def initial(seed, n, offset, amplitude):
    return np.array([offset + amplitude * (2.0 * u01(hash4(seed, 0x61747465, i, 0)) - 1.0)
                     for i in range(n)])


def step(state, blocks, tokens, dim):
    """One step of every block: feature-major blocks (dim x tokens)."""
    c_attn, c_mean = 0.5, 0.125
    c_self = 1.0 - c_attn - c_mean
    g = state.mean()
    out = np.empty_like(state)
    mask = np.triu(np.ones((tokens, tokens), dtype=bool), k=1)  # j > i: masked
    for b in range(blocks):
        x = state[b * tokens * dim:(b + 1) * tokens * dim].reshape(dim, tokens).T  # (T, d)
        s = (x @ x.T) / math.sqrt(dim)
        s = np.where(mask, -np.inf, s)
        s = s - s.max(axis=1, keepdims=True)
        w = np.exp(s)
        w = w / w.sum(axis=1, keepdims=True)
        y = w @ x  # (T, d)
        ys = np.concatenate([y[:, 1:], -y[:, :1]], axis=1)  # feature k reads k + 1; last: -0
        v = c_self * x + c_attn * ys + c_mean * g
        v = np.clip(v, -1.0, 1.0)
        new = v * (1.5 - 0.5 * v * v)
        out[b * tokens * dim:(b + 1) * tokens * dim] = new.T.reshape(-1)
    return out


def main():
    agefence, mpiexec, work, fixture = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    blocks, tokens, dim, seed = 16, 16, 8, 4242
    offset, amplitude = 0.1, 0.9
    x0 = initial(seed, blocks * tokens * dim, offset, amplitude)
    assert np.all(np.abs(x0) <= 1.0)
    for steps, tol in ((1, 1e-13), (6, 1e-12)):
        log = os.path.join(work, "attention_%d.h5" % steps)
        cmd = [mpiexec, "-n", "2", agefence, "run", "-q", "-c", fixture,
               "-o", log, "--set", "workload.kind=attention", "--set", "workload.dim=%d" % dim,
               "--set", "scenario.block_len=%d" % tokens, "--set", "scenario.blocks=%d" % blocks,
               "--set", "scenario.steps=%d" % steps, "--set", "scenario.seed=%d" % seed,
               "--set", "workload.offset=%r" % offset, "--set", "workload.amplitude=%r" % amplitude]
        res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if res.returncode != 0:
            print(res.stdout)
            sys.exit("FAIL: agefence exited %d" % res.returncode)
        with h5py.File(log, "r") as f:
            got = f["/final/state"][:]
            equal = int(f["/final"].attrs["bitwise_equal"])
        if equal != 1:
            sys.exit("FAIL: %d steps: not bitwise equal to agefence's own reference" % steps)
        want = x0
        for _ in range(steps):
            want = step(want, blocks, tokens, dim)
        err = float(np.max(np.abs(got - want)))
        moved = float(np.max(np.abs(got - x0)))
        print("%d step(s): max |agefence - numpy| = %.3g (tolerance %.0e); state moved %.3g"
              % (steps, err, tol, moved))
        if not err <= tol:
            sys.exit("FAIL: %d steps: agefence and numpy differ by %.3g > %.0e" % (steps, err, tol))
        if moved < 1e-3:
            sys.exit("FAIL: the state hardly moved (%.3g): the test would see nothing" % moved)
    print("PASS")


if __name__ == "__main__":
    main()
