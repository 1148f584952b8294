#!/usr/bin/env python3
"""agefence-report --plots: PNG figures of one run's log (Python 3, h5py, matplotlib, numpy).

    plots.py RUN.h5 DIR

Writes into DIR (created if needed):
  step_latency.png        max over ranks of step_us per executed step, blackout on a 2nd axis
  latency_cdf.png         cumulative distribution of every phase (all steps x ranks)
  unit_health.png         healthy / fading / dead units over the steps (stacked)
  containment.png         cumulative corruptions injected / detected / fenced / retried /
                          NaN-Inf leaked / finite undetected
  latency_by_blackout.png box plot of step_us per blackout band
  pacing.png              rank 0's step period and pacing wait per step (pacing on only)
  goodput.png             the effective training time ratio of the three recovery policies
                          (remap, shrink_rebuild, checkpoint_restart) over the run's simulated
                          time, cumulative: drawn from DIR/goodput_over_time.csv, which
                          agefence-report --plots computes with the report's own goodput
                          replay (analysis/goodput.h) before it runs this script

    plots.py DIR/ensemble.csv DIR   (agefence-report --plots DIR ENSEMBLE_DIR writes it)

  ensemble_ettr.png       every member's ETTR per policy, the mean as a bar, per group
  ettr_by_fleet.png       the mean ETTR against fleet size, when the grid varies it

    plots.py JITTER.h5 DIR   (the results of `agefence bench jitter`)
    plots.py SDC.h5 DIR      (the results of `agefence bench sdc`)

  tradeoff.png            step-period sd reduction against mean-period cost, one point per
                          gamma and one per quantile (with the offline bound of a fixed
                          deadline at that quantile of pacing off's periods), off at the origin
A figure whose data the log lacks is skipped with one line on stderr; the others are written.
Exit status: 0 written, 1 the log cannot be read, 2 bad arguments.
"""
import os
import sys

import matplotlib

matplotlib.use("Agg")
import h5py  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

PHASES = ["step_us", "kernel_us", "throttle_us", "halo_us", "coord_us", "moves_us", "replica_us",
          "log_us", "sink_us"]
BAND_EDGES = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85]
BAND_LABELS = ["0-10%", "10-20%", "20-30%", "30-40%", "40-50%", "50-60%", "60-70%", "70-80%",
               "80-85%", "\u226585%"]
DPI = 90


def band_of(frac):
    """Band index of each blackout fraction, as analysis/summary.c computes it."""
    return np.searchsorted(np.array(BAND_EDGES), frac, side="right") - 1


def open_log(path):
    """Opens a log for reading, also one whose run was killed: its file stays marked as open
    for (SWMR) writing, which HDF5 lets only SWMR readers open."""
    try:
        return h5py.File(path, "r")
    except OSError:
        return h5py.File(path, "r", swmr=True)


def committed_rows(f):
    """Rows of /steps and /ranks that count: all of them for a finished run, the commit
    record's /committed[0] (/steps@committed[0] before schema 3) for one that did not finish
    (sim/io/log.h)."""
    finished = "final" in f and "exit_reason" in f["final"].attrs
    if not finished and "committed" in f:
        return int(f["committed"][0])
    if not finished and "steps" in f and "committed" in f["steps"].attrs:
        return int(f["steps"].attrs["committed"][0])
    return None


class Log:
    def __init__(self, path):
        self.f = open_log(path)
        self.rows = committed_rows(self.f)
        a = self.f.attrs
        self.name = a["scenario"] if "scenario" in a else os.path.basename(path)
        if isinstance(self.name, bytes):
            self.name = self.name.decode()
        self.ranks = int(a["ranks"]) if "ranks" in a else None

    def steps(self, col):
        try:
            return self.f["steps"][col][: self.rows]
        except KeyError:
            return None

    def phase(self, name):
        try:
            v = self.f["ranks"][name][: self.rows]
        except KeyError:
            return None
        return v if v.ndim == 2 and v.shape[0] > 0 else None

    def title(self, what):
        return f"{what} \u2014 scenario '{self.name}'"


def skip(name, why):
    print(f"plots.py: {name} skipped: {why}", file=sys.stderr)


def save(fig, out, name, written):
    path = os.path.join(out, name)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    written.append(path)


def step_latency(log, out, written):
    st = log.phase("step_us")
    step = log.steps("step")
    bf = log.steps("blackout_frac")
    if st is None or step is None or len(step) != st.shape[0]:
        return skip("step_latency.png", "/steps/step or /ranks/step_us missing")
    worst = st.max(axis=1)
    fig, ax = plt.subplots(figsize=(10, 4.8))
    ax.plot(step, worst, lw=0.6, color="tab:blue", label="step time, slowest rank")
    # A running median shows the trend under the noise of single steps.
    w = max(1, len(worst) // 50)
    if len(worst) >= 2 * w and w > 1:
        kernel = np.lib.stride_tricks.sliding_window_view(worst, w)
        ax.plot(step[w - 1:], np.median(kernel, axis=1), lw=1.6, color="navy",
                label=f"running median ({w} steps)")
    ax.set_yscale("log")
    ax.set_xlabel("executed step")
    ax.set_ylabel("step time, max over ranks (\u00b5s)")
    rb = log.steps("rollbacks")
    if rb is not None and len(rb) == len(step):
        for i, s in enumerate(step[rb > 0]):
            ax.axvline(s, color="tab:red", lw=0.8, ls=":",
                       label="rollback" if i == 0 else None)
    if bf is not None and len(bf) == len(step):
        ax2 = ax.twinx()
        ax2.plot(step, 100.0 * bf, color="tab:orange", lw=1.6, label="blackout")
        ax2.set_ylabel("blackout: units dead (%)", color="tab:orange")
        ax2.set_ylim(0, 100)
        ax2.tick_params(axis="y", colors="tab:orange")
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        ax.legend(h1 + h2, l1 + l2, loc="upper left", fontsize=8)
    else:
        ax.legend(loc="upper left", fontsize=8)
    ax.set_title(log.title("Step latency and blackout over the run"))
    ax.grid(True, which="major", alpha=0.3)
    save(fig, out, "step_latency.png", written)


def latency_cdf(log, out, written):
    fig, ax = plt.subplots(figsize=(8, 5))
    drawn = 0
    for name in PHASES:
        v = log.phase(name)
        if v is None:
            continue
        v = np.sort(v.ravel())
        # Zero (and, from a faulty timer, negative) times cannot go on a log axis: clip them to
        # 1 ns and say how many there were.
        low = int((v <= 0).sum())
        v = np.clip(v, 1e-3, None)
        y = np.arange(1, len(v) + 1) / len(v)
        label = name if low == 0 else f"{name} ({low} values \u2264 0 shown at 0.001)"
        ax.step(v, y, where="post", lw=1.3, label=label)
        drawn += 1
    if drawn == 0:
        plt.close(fig)
        return skip("latency_cdf.png", "/ranks missing")
    ax.set_xscale("log")
    ax.set_xlabel("time per step and rank (\u00b5s, log scale)")
    ax.set_ylabel("fraction of step \u00d7 rank samples \u2264 x")
    ax.set_ylim(0, 1.01)
    for p in (0.5, 0.9, 0.99):
        ax.axhline(p, color="grey", lw=0.5, ls="--")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="center left")
    ax.set_title(log.title("Latency distribution per phase"))
    save(fig, out, "latency_cdf.png", written)


def unit_health(log, out, written):
    step = log.steps("step")
    cols = [log.steps(c) for c in ("healthy_units", "fading_units", "dead_units")]
    if step is None or any(c is None or len(c) != len(step) for c in cols):
        return skip("unit_health.png", "/steps health columns missing")
    fig, ax = plt.subplots(figsize=(10, 4.8))
    ax.stackplot(step, *cols, labels=["healthy", "fading", "dead"],
                 colors=["tab:green", "tab:orange", "dimgrey"], alpha=0.85)
    total = int(cols[0][0] + cols[1][0] + cols[2][0]) if len(step) else 0
    ax.set_xlim(step[0] if len(step) else 0, step[-1] if len(step) else 1)
    ax.set_ylim(0, max(total, 1))
    ax.set_xlabel("executed step")
    ax.set_ylabel(f"compute units (of {total})")
    ax.legend(loc="center left", fontsize=9)
    ax.set_title(log.title("Unit health over the run"))
    ax.grid(True, alpha=0.3)
    save(fig, out, "unit_health.png", written)


def containment(log, out, written):
    step = log.steps("step")
    # Counters that agree draw on top of each other: the first of each pair is wide and pale,
    # the second narrow and dashed on top, so both stay visible.
    series = [("corrupt_injected", "injected", "tab:red", "-", 4.0, 0.45),
              ("corrupt_detected", "detected", "tab:red", "--", 1.4, 1.0),
              ("fenced", "fenced", "tab:blue", "-", 4.0, 0.45),
              ("retried", "retried", "tab:blue", "--", 1.4, 1.0),
              ("nonfinite_leaked", "NaN/Inf leaked", "black", "-", 1.6, 1.0),
              ("sdc_undetected", "finite undetected (SDC)", "tab:brown", "-.", 1.6, 1.0)]
    if step is None:
        return skip("containment.png", "/steps/step missing")
    fig, ax = plt.subplots(figsize=(10, 4.8))
    drawn = 0
    top = 0
    for col, label, color, ls, lw, alpha in series:
        v = log.steps(col)
        if v is None or len(v) != len(step):
            continue
        c = np.cumsum(v)
        total = int(c[-1]) if len(c) else 0
        ax.plot(step, c, color=color, ls=ls, lw=lw, alpha=alpha, label=f"{label} ({total})")
        top = max(top, total)
        drawn += 1
    if drawn == 0:
        plt.close(fig)
        return skip("containment.png", "/steps counters missing")
    ax.set_ylim(0, max(1.0, 1.05 * top))
    ax.set_xlabel("executed step")
    ax.set_ylabel("cumulative count")
    ax.legend(loc="upper left", fontsize=9, title="counter (run total)", title_fontsize=8)
    ax.set_title(log.title("Containment counters over the run"))
    ax.grid(True, alpha=0.3)
    save(fig, out, "containment.png", written)


def latency_by_blackout(log, out, written):
    st = log.phase("step_us")
    bf = log.steps("blackout_frac")
    if st is None or bf is None or len(bf) != st.shape[0]:
        return skip("latency_by_blackout.png", "/ranks/step_us or /steps/blackout_frac missing")
    band = band_of(bf)
    data, labels = [], []
    for b, label in enumerate(BAND_LABELS):
        v = st[band == b].ravel()
        if len(v):
            data.append(np.clip(v, 1e-3, None))
            labels.append(f"{label}\n{int((band == b).sum())} steps")
    fig, ax = plt.subplots(figsize=(10, 4.8))
    ax.boxplot(data, labels=labels, whis=(1, 99), showfliers=True,
               flierprops=dict(marker=".", markersize=2, alpha=0.4),
               medianprops=dict(color="tab:red", lw=1.5))
    ax.set_yscale("log")
    ax.set_xlabel("blackout band (fraction of units dead when the step ran)")
    ax.set_ylabel("step time per rank (\u00b5s, log scale)")
    ax.set_title(log.title("Step latency per blackout band (box: p25-p75, whiskers: p1-p99)"))
    ax.grid(True, axis="y", which="major", alpha=0.3)
    ax.tick_params(axis="x", labelsize=8)
    save(fig, out, "latency_by_blackout.png", written)


def pacing(log, out, written):
    st = log.phase("step_us")
    sk = log.phase("sink_us")
    if st is None or sk is None:
        skip("pacing.png", "/ranks/step_us or /ranks/sink_us missing")
        return
    if not (sk > 0).any():
        # A run without pacing (pacing.mode = off, the default) has no such figure to draw:
        # said by nothing, as every other figure that does not apply.
        return
    fig, ax = plt.subplots(figsize=(9, 4))
    x = np.arange(1, st.shape[0] + 1)
    ax.plot(x, st[:, 0], lw=0.6, color="C0", label="step period, rank 0 (step_us)")
    ax.plot(x, sk[:, 0], lw=0.6, color="C1", label="pacing wait (sink_us)")
    ax.plot(x, st[:, 0] - sk[:, 0], lw=0.6, color="C2", alpha=0.7, label="work (step - wait)")
    ax.set_yscale("log")
    ax.set_xlabel("executed step")
    ax.set_ylabel("\u00b5s")
    ax.legend(loc="upper right", fontsize=8)
    ax.set_title(log.title("pacing"))
    save(fig, out, "pacing.png", written)


def goodput(log, out, written):
    path = os.path.join(out, "goodput_over_time.csv")
    if not os.path.exists(path):
        skip("goodput.png", f"no {path} (agefence-report --plots writes it)")
        return
    data = np.genfromtxt(path, delimiter=",", names=True)
    data = np.atleast_1d(data)
    hours = data["sim_hours"]
    policies = [("remap", "remap (agefence: restore in place)"),
                ("shrink_rebuild", "shrink_rebuild"),
                ("checkpoint_restart", "checkpoint_restart")]
    if len(hours) == 0 or not any(np.isfinite(data[k]).any() for k, _ in policies):
        skip("goodput.png", "no simulated time (aging.sim_hours_per_step = 0): no ratio defined")
        return
    days = hours / 24.0
    fig, ax = plt.subplots(figsize=(10, 4.8))
    for key, label in policies:
        y = data[key]
        last = y[np.isfinite(y)][-1] if np.isfinite(y).any() else float("nan")
        ax.plot(days, y, lw=1.4, label=f"{label}: {last:.4f} at the end")
    ax.set_xlabel("simulated time (days)")
    ax.set_ylabel("effective training time ratio (cumulative)")
    ax.set_ylim(top=1.002)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower left")
    ax.set_title(log.title("goodput of recovery policies over the run"))
    save(fig, out, "goodput.png", written)


def jitter_rows(f):
    """(kind, parameter, period samples, sink samples) per setting: kind "off", "g" (EWMA,
    parameter gamma) or "q" (quantile); pacing off first, then gamma, then quantile."""
    rows = []
    for name in f["series"]:
        if not name.startswith("period_us."):
            continue
        tag = name[len("period_us."):]
        kind, param = ("off", -1.0) if tag == "off" else (tag[0], float(tag[1:]))
        rows.append((kind, param, f["series"][name][:], f["series"]["sink_us." + tag][:]))
    order = {"off": 0, "g": 1, "q": 2}
    return sorted(rows, key=lambda r: (order.get(r[0], 3), r[1]))


def tradeoff(path, out, written):
    f = open_log(path)
    rows = jitter_rows(f)
    if not rows or rows[0][0] != "off":
        skip("tradeoff.png", "no samples of pacing off")
        return
    off = rows[0][2]
    sd0, mean0 = off.std(), off.mean()
    fig, ax = plt.subplots(figsize=(7, 5))
    ax.axhspan(85, 95, color="C2", alpha=0.15, label="85-95% sd reduction")
    ax.annotate("off", (0, 0), textcoords="offset points", xytext=(5, -12), fontsize=8)
    for kind, color, label in (("g", "C0", "EWMA (\u03b3)"), ("q", "C1", "quantile (q)")):
        xs, ys = [0.0], [0.0]
        for k, param, p, _ in rows[1:]:
            if k != kind:
                continue
            x = 100 * (p.mean() / mean0 - 1)
            y = 100 * (1 - p.std() / sd0)
            xs.append(x)
            ys.append(y)
            name = f"\u03b3={param:g}" if kind == "g" else f"q={param:g}"
            ax.annotate(name, (x, y), textcoords="offset points", xytext=(5, 4), fontsize=8)
        if len(xs) > 1:
            ax.plot(xs, ys, "o-", color=color, label=label)
    # The offline bound: off's periods padded to a fixed deadline at each quantile setting.
    bx, by = [], []
    for k, param, _, _ in rows[1:]:
        if k != "q":
            continue
        deadline = np.sort(off)[max(0, int(np.ceil(param * len(off))) - 1)]
        padded = np.maximum(off, deadline)
        bx.append(100 * (padded.mean() / mean0 - 1))
        by.append(100 * (1 - padded.std() / sd0))
    if bx:
        ax.plot(bx, by, "s--", color="C3", mfc="none", label="offline bound (fixed deadline)")
    ax.axhline(0, color="grey", lw=0.5)
    ax.axvline(0, color="grey", lw=0.5)
    ax.set_xscale("symlog", linthresh=100)
    ax.set_xlabel("mean step period vs pacing off (%)")
    ax.set_ylabel("step-period sd reduction vs pacing off (%)")
    ax.set_title("agefence bench jitter: what pacing buys and costs")
    ax.legend(loc="lower right", fontsize=8)
    save(fig, out, "tradeoff.png", written)


def sdc_tradeoff(path, out, written):
    """Harmful corruptions contained against step overhead, one point per detector."""
    f = open_log(path)
    ratios = f["ratios"].attrs
    points = []
    for key in ratios:
        if key.endswith(": harmful contained"):
            name = key[:-len(": harmful contained")]
            over = ratios.get(name + ": step overhead vs finite")
            if over is not None:
                points.append((name, 100 * float(over), 100 * float(ratios[key])))
    if not points:
        skip("sdc_tradeoff.png", "no detector with both figures")
        return
    fig, ax = plt.subplots(figsize=(7, 5))
    ax.axhspan(99, 100.5, color="C2", alpha=0.15, label="abft target: >= 99% contained")
    ax.axvspan(-100, 5, color="C0", alpha=0.06, label="abft target: <= 5% overhead")
    for i, (name, x, y) in enumerate(points):
        ax.plot([x], [y], "o", color=f"C{i}")
        ax.annotate(name, (x, y), textcoords="offset points", xytext=(5, 4), fontsize=8)
    xs = [p[1] for p in points]
    ax.set_xlim(min(xs + [0]) - 5, max(xs + [10]) + 10)
    ax.set_ylim(-5, 105)
    ax.set_xlabel("step time overhead vs detect = finite (%)")
    ax.set_ylabel("harmful corruptions contained before commit (%)")
    ax.set_title("agefence bench sdc: what each detector catches and costs")
    ax.legend(loc="lower right", fontsize=8)
    save(fig, out, "sdc_tradeoff.png", written)


POLICIES = [("checkpoint_restart", "checkpoint_restart"), ("remap", "remap (agefence)"),
            ("shrink_rebuild", "shrink_rebuild")]


def ensemble(path, out):
    """agefence-report --plots DIR ENSEMBLE: the members' ETTR per policy (ensemble_ettr.png)
    and, when the grid varies the fleet, the mean ETTR against fleet size
    (ettr_by_fleet.png), from the ensemble.csv the report writes."""
    data = np.atleast_1d(np.genfromtxt(path, delimiter=",", names=True, dtype=None,
                                       encoding="utf-8"))
    os.makedirs(out, exist_ok=True)
    written = []
    groups = sorted(set(int(g) for g in data["group"]))
    fig, ax = plt.subplots(figsize=(10, 4.8))
    width = 0.8 / max(len(groups), 1)
    for gi, g in enumerate(groups):
        rows = data[data["group"] == g]
        label = f"{int(rows['devices'][0])} devices" if len(groups) > 1 else None
        for pi, (key, _) in enumerate(POLICIES):
            y = rows[key].astype(float)
            x = pi + (gi - (len(groups) - 1) / 2) * width
            ax.scatter(np.full(len(y), x), y, s=14, alpha=0.6, color=f"C{gi}",
                       label=label if pi == 0 else None)
            ax.hlines(y.mean(), x - width / 2.5, x + width / 2.5, color=f"C{gi}", lw=2)
    ax.set_xticks(range(len(POLICIES)))
    ax.set_xticklabels([lab for _, lab in POLICIES])
    ax.set_ylabel("effective training time ratio (ETTR)")
    ax.set_title(f"ETTR by replay of each member's history ({len(data)} members; bar: mean)")
    ax.grid(True, axis="y", alpha=0.3)
    if len(groups) > 1:
        ax.legend(fontsize=8)
    save(fig, out, "ensemble_ettr.png", written)
    devices = sorted(set(int(d) for d in data["devices"]))
    if len(devices) > 1:
        fig, ax = plt.subplots(figsize=(8, 4.8))
        for key, lab in POLICIES:
            means = [data[key][data["devices"] == d].astype(float).mean() for d in devices]
            ax.plot(devices, means, marker="o", label=lab)
        ax.set_xscale("log")
        ax.set_xlabel("fleet size (devices)")
        ax.set_ylabel("mean ETTR over the members")
        ax.set_title("goodput against fleet size")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        save(fig, out, "ettr_by_fleet.png", written)
    else:
        skip("ettr_by_fleet.png", "the members share one fleet size")
    print(f"agefence-report: wrote {len(written)} plot{'s' if len(written) != 1 else ''} to "
          f"{out}: {', '.join(os.path.basename(w) for w in written)}")
    return 0


def main(argv):
    if len(argv) != 3:
        print("usage: plots.py RUN.h5 DIR", file=sys.stderr)
        return 2
    path, out = argv[1], argv[2]
    if path.endswith("ensemble.csv"):
        return ensemble(path, out)
    try:
        with open_log(path) as f:
            kind = f.attrs.get("kind", b"")
            bench = f.attrs.get("benchmark", b"")
    except OSError as e:
        print(f"plots.py: {path}: cannot read the log: {e}", file=sys.stderr)
        return 1
    kind = kind.decode() if isinstance(kind, bytes) else str(kind)
    bench = bench.decode() if isinstance(bench, bytes) else str(bench)
    if kind == "agefence bench":
        if bench not in ("jitter", "sdc"):
            print(f"plots.py: {path}: agefence bench {bench} results: no plots", file=sys.stderr)
            return 1
        os.makedirs(out, exist_ok=True)
        written = []
        if bench == "jitter":
            tradeoff(path, out, written)
        else:
            sdc_tradeoff(path, out, written)
        print(f"agefence-report: wrote {len(written)} plot{'s' if len(written) != 1 else ''} "
              f"to {out}: {', '.join(os.path.basename(w) for w in written)}")
        return 0
    try:
        log = Log(path)
    except (OSError, KeyError) as e:
        print(f"plots.py: {path}: cannot read the log: {e}", file=sys.stderr)
        return 1
    os.makedirs(out, exist_ok=True)
    written = []
    for fn in (step_latency, latency_cdf, unit_health, containment, latency_by_blackout, pacing,
               goodput):
        fn(log, out, written)
    print(f"agefence-report: wrote {len(written)} plot{'s' if len(written) != 1 else ''} to "
          f"{out}: {', '.join(os.path.basename(w) for w in written)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
