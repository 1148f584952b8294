#!/usr/bin/env python3
"""Checks the figures of `agefence-report --json LOG` against recounts of the raw log with h5py
and numpy (events counted by kind from /events, counters summed from /steps, interruptions
counted from /interruptions, statistics by numpy's own percentiles) and fails on any
difference. Where a figure comes from a model (the goodput), the model's formulas are checked
on hand-computed cases in tests/test_report.c, and here only what the raw log says without them.
Exit 77 (SKIP) when h5py or numpy is missing.
    report_verify.py REPORT LOG [REPORT OPTIONS...]"""
import json
import math
import re
import subprocess
import sys

try:
    import h5py
    import numpy as np
except ImportError as e:  # pragma: no cover
    print(f"SKIP: {e}")
    sys.exit(77)

report, log = sys.argv[1], sys.argv[2]
out = subprocess.run([report, "--json", *sys.argv[3:], log], check=True, capture_output=True,
                     text=True).stdout
fig = json.loads(out)
f = h5py.File(log, "r")
steps = {k: f["steps"][k][:] for k in f["steps"]}
ranks = {k: f["ranks"][k][:] for k in f["ranks"]}
root = dict(f.attrs)
final = dict(f["final"].attrs)
n = len(steps["step"])
failures = []


def same(key, got, want, rtol=1e-9):
    if want is None or (isinstance(want, float) and not math.isfinite(want)):
        ok = got is None
    elif isinstance(want, (bool, np.bool_)):
        ok = got is bool(want)
    elif isinstance(want, str):
        ok = got == want
    else:
        ok = got is not None and abs(got - want) <= rtol * max(abs(want), 1e-300)
    if not ok:
        failures.append(f"{key}: report {got!r}, numpy {want!r}")


def get(key):
    node = fig
    for part in key.split("."):
        node = node[int(part[1:])] if part.startswith("#") else node[part]
    return node


def ratio(a, b):
    return a / b if b != 0 else None


def check_stats(prefix, values):
    values = np.asarray(values, dtype=float).ravel()
    same(prefix + ".n", get(prefix + ".n"), len(values))
    if len(values) == 0:
        for s in ("p50", "p90", "p99", "max", "mean", "sd", "cv"):
            same(prefix + "." + s, get(prefix + "." + s), None)
        return
    for p in (50, 90, 99):
        same(f"{prefix}.p{p}", get(f"{prefix}.p{p}"), float(np.percentile(values, p)), 1e-12)
    same(prefix + ".max", get(prefix + ".max"), float(values.max()), 0)
    mean = float(values.mean())
    sd = float(values.std())
    same(prefix + ".mean", get(prefix + ".mean"), mean)
    same(prefix + ".sd", get(prefix + ".sd"), sd, 1e-7)
    same(prefix + ".cv", get(prefix + ".cv"), sd / mean if mean != 0 else None, 1e-7)


# run
for key in ("scenario", "git_revision", "compute_backend", "fabric_backend", "hostnames"):
    same("run." + key, get("run." + key), str(root[key]))
for key in ("ranks", "devices", "units_per_device", "blocks", "block_len", "capacity", "seed"):
    same("run." + key, get("run." + key), int(root[key]))
units = int(root["devices"] * root["units_per_device"])
same("run.units", get("run.units"), units)
same("run.slots", get("run.slots"), units * int(root["capacity"]))
same("run.hosts", get("run.hosts"), len(set(str(root["hostnames"]).split(","))))
same("run.steps_executed", get("run.steps_executed"), n)
same("run.steps_logical", get("run.steps_logical"), int(final["state_step"]))
same("run.steps_replayed", get("run.steps_replayed"), int(steps["replayed_steps"].sum()))
same("run.exit_reason", get("run.exit_reason"), str(final["exit_reason"]))
same("run.max_blackout", get("run.max_blackout"), float(steps["blackout_frac"].max()))
rowmax = ranks["step_us"].max(axis=1)
same("run.steps_wall_s", get("run.steps_wall_s"), float(rowmax.sum()) * 1e-6)
same("run.memory_overhead", get("run.memory_overhead"),
     float(root["state_bytes_static"] / root["state_bytes_fault_free"]))
if "state_bytes_held" in root:
    same("run.state_bytes_held", get("run.state_bytes_held"), float(root["state_bytes_held"]))

# correctness
same("correctness.bitwise_equal", get("correctness.bitwise_equal"), bool(final["bitwise_equal"]))
drift = float(final["mass_final"] - final["mass_initial"])
same("correctness.mass_drift", get("correctness.mass_drift"), drift, 1e-12)
same("correctness.mass_dev_max", get("correctness.mass_dev_max"),
     float(np.abs(steps["mass"] - final["mass_initial"]).max()), 1e-12)

# containment and recovery
tot = {k: int(v.sum()) for k, v in steps.items() if v.dtype.kind == "i"}
for key, col in (("injected", "corrupt_injected"), ("detected", "corrupt_detected"),
                 ("fenced", "fenced"), ("retried", "retried"), ("leaked", "nonfinite_leaked"),
                 ("sdc_undetected", "sdc_undetected"), ("sdc_harmful", "sdc_harmful"),
                 ("unverified_commits", "unverified_commits")):
    same("containment." + key, get("containment." + key), tot[col])
    same(f"/final@{col}_total", tot[col], int(final.get(col + "_total", tot[col])))
inj = tot["corrupt_injected"]
same("containment.detected_per_injected", get("containment.detected_per_injected"),
     ratio(tot["corrupt_detected"], inj))
same("containment.retried_per_fenced", get("containment.retried_per_fenced"),
     ratio(tot["retried"], tot["fenced"]))
same("containment.leaked_per_step", get("containment.leaked_per_step"),
     tot["nonfinite_leaked"] / n)
same("containment.injected_per_fading_unit_step",
     get("containment.injected_per_fading_unit_step"), ratio(inj, tot["fading_units"]))
same("containment.steps_with_corruption", get("containment.steps_with_corruption"),
     int((steps["corrupt_injected"] > 0).sum()))
for key, col in (("drains", "moves_drain"), ("restores", "moves_restore"),
                 ("retry_moves", "moves_retry"), ("rollbacks", "rollbacks"),
                 ("replayed_steps", "replayed_steps")):
    same("recovery." + key, get("recovery." + key), tot[col])
moved = ((steps["moves_drain"] > 0) | (steps["moves_restore"] > 0) | (steps["moves_retry"] > 0)
         | (steps["rollbacks"] > 0))
same("recovery.steps_with_moves", get("recovery.steps_with_moves"), int(moved.sum()))
same("recovery.allocs_after_init", get("recovery.allocs_after_init"),
     int(steps["allocs_after_init"][-1]))
cause = f["units/cause"][:]
same("recovery.units_dead", get("recovery.units_dead"), int((cause != 0).sum()))
for codes, key in (((0,), "units_alive"), ((1,), "dead_wearout"), ((2,), "dead_sudden"),
                   ((3,), "dead_scripted"), ((4,), "dead_device"), ((5,), "dead_node"),
                   ((8, 9), "dead_link")):
    same("recovery." + key, get("recovery." + key), int(sum((cause == c).sum() for c in codes)))
kinds = [k.decode() for k in f["events"]["kind"][:]]
for kind in ("fade", "death", "sudden", "drain", "restore", "retry", "rollback", "capacity", "slow",
             "straggler", "interrupt"):
    same("recovery.events." + kind, get("recovery.events." + kind), kinds.count(kind))
same("recovery.events_logged", get("recovery.events_logged"), len(kinds))
# Interruptions: each step's deaths, one per lost node (devices_per_node of /@config), lost
# device, or device whose units died by wear-out, sudden failure or a script; and one per
# `interrupt` event, a job-level cause (its detail: common/log_schema.h's order).
config = root["config"].decode() if isinstance(root["config"], bytes) else str(root["config"])
per_node = 1
for line in config.splitlines():
    if line.startswith("devices_per_node = "):
        per_node = int(line.split("=")[1])
CAUSES = ("wearout", "sudden", "scripted", "device", "node", "software", "network", "nic",
          "nccl_watchdog", "sdc", "dependency", "hbm", "link")
# The job-level causes (no hardware lost, nothing to remap): software to dependency. hbm, after
# them, loses a device's memory, which agefence restores like a lost device's blocks.
JOB = CAUSES[CAUSES.index("software"):CAUSES.index("dependency") + 1]
GRAIN = {"software": "job", "network": "node", "nic": "node", "nccl_watchdog": "job",
         "sdc": "device", "dependency": "job", "hbm": "device"}
ev = f["events"][:]
# The rows in the order the run writes /interruptions: (step, cause, device, node), each step's
# groups in the order its events first name them.
derived = []
seen = set()
for row in ev:
    kind = row["kind"].decode()
    step = int(row["step"])
    dev = int(row["from_device"])
    if kind == "interrupt":
        cause = CAUSES[int(row["detail"])]
        grain = GRAIN[cause]
        derived.append((step, cause, dev if grain == "device" and dev >= 0 else -1,
                        dev // per_node if grain != "job" and dev >= 0 else -1))
        continue
    if kind not in ("death", "sudden"):
        continue
    d = int(row["detail"])
    cause = {4: "device", 5: "node", 3: "scripted", 8: "link", 9: "link"}.get(
        d, "sudden" if kind == "sudden" else "wearout")
    key = (step, cause, -1 if cause == "node" else dev, dev // per_node)
    if key not in seen:
        seen.add(key)
        derived.append(key)
groups = derived
# The run's own table (schema 5) is the same, with each row's hours those of its step: a check
# of the table against /events. The report's counts are then recounted from the table itself.
if "interruptions" in f:
    table = f["interruptions"][:]
    names = f["interruptions"].attrs["cause_names"]
    names = names.decode() if isinstance(names, bytes) else str(names)
    assert names == ", ".join(f"{i} {c}" for i, c in enumerate(CAUSES)), names
    rows = [(int(r["step"]), CAUSES[int(r["cause"])], int(r["device"]), int(r["node"]))
            for r in table]
    if rows != derived:
        first = next((i for i, (a, b) in enumerate(zip(rows, derived)) if a != b),
                     min(len(rows), len(derived)))
        failures.append(f"/interruptions: {len(rows)} rows, /events gives {len(derived)}; "
                        f"first difference at row {first}")
    for r in table:
        if float(r["sim_hours"]) != float(steps["sim_hours"][int(r["step"]) - 1]):
            failures.append(f"/interruptions: step {int(r['step'])} sim_hours {r['sim_hours']}")
            break
    same("interruptions.source", get("interruptions.source"), "table")
    groups = rows
same("interruptions.total", get("interruptions.total"), len(groups))
for cause in CAUSES:
    same("interruptions.by_cause." + cause, get("interruptions.by_cause." + cause),
         sum(1 for g in groups if g[1] == cause))
hours = float(steps["sim_hours"][-1]) if n else float("nan")
same("interruptions.mtbi_hours", get("interruptions.mtbi_hours"),
     hours / len(groups) if groups else None)
# Goodput by replay (analysis/goodput.h, docs/goodput.md). The replay's arithmetic is checked
# on histories worked by hand in tests/test_replay.c, and its wiring on the synthetic log of
# tests/test_report.c; here what the raw log says without the engine: the parameters are the
# [goodput] keys of /@config, the timeline's make-up follows from the recounted interruptions
# (a job-level cause loses no hardware, hbm is recovered in place, a node takes its devices,
# a trailing partial node its own, any other cause one device), the mean times between the
# interruptions each interval guards against and Young's and Daly's intervals follow from those
# counts, and each searched ETTR lies in (0, 1] and is no lower than at Young's or Daly's.
section = None
gp = {}
for line in config.splitlines():
    if line.startswith("["):
        section = line.strip("[]")
    elif section == "goodput" and " = " in line:
        k, v = line.split(" = ")
        gp[k] = float(v)
for k, v in gp.items():
    same("goodput.params." + k, get("goodput.params." + k), v)
njob = sum(1 for g in groups if g[1] in JOB)
ninplace = sum(1 for g in groups if g[1] == "hbm")
nhw = len(groups) - njob - ninplace
ndev = int(root["devices"]) if "devices" in root else 0
# Devices taken out: a position struck while out adds none; with no spare (spare_nodes 0) none
# comes back, so the count is the positions ever struck (a node's: its devices).
positions, untracked = set(), 0
for g in groups:
    if g[1] in JOB or g[1] == "hbm":
        continue
    if g[1] == "node":
        if g[3] >= 0 and g[3] * per_node < ndev:
            positions.update(range(g[3] * per_node, min(ndev, (g[3] + 1) * per_node)))
        else:
            untracked += 1
    elif 0 <= g[2] < ndev:
        positions.add(g[2])
    else:
        untracked += 1
lost_devices = len(positions) + untracked if gp.get("spare_nodes", 0) == 0 else None
W = hours * 3600.0
if hours > 0:
    same("goodput.window_s", get("goodput.window_s"), W)
    same("goodput.timeline.hardware_losses", get("goodput.timeline.hardware_losses"), nhw, 0)
    same("goodput.timeline.in_place", get("goodput.timeline.in_place"), ninplace, 0)
    same("goodput.timeline.job_level", get("goodput.timeline.job_level"), njob, 0)
    if lost_devices is not None:
        same("goodput.timeline.devices_lost", get("goodput.timeline.devices_lost"), lost_devices,
             0)
    delta, rep = gp.get("checkpoint_seconds", 60.0), gp.get("replica_seconds", 1.0)
    def young(d, n):
        return math.sqrt(2.0 * d * W / n) if n else None
    def daly(d, n):
        if not n:
            return None
        m = W / n
        if d >= 2 * m:
            return m
        x = d / (2 * m)
        return math.sqrt(2 * d * m) * (1 + math.sqrt(x) / 3 + x / 9) - d
    for pol, guarded in (("checkpoint_restart", len(groups)), ("remap", njob),
                         ("shrink_rebuild", njob)):
        same(f"goodput.{pol}.mtbi_s", get(f"goodput.{pol}.mtbi_s"),
             W / guarded if guarded else None)
        same(f"goodput.{pol}.young.interval_s", get(f"goodput.{pol}.young.interval_s"),
             young(delta, guarded))
        same(f"goodput.{pol}.daly.interval_s", get(f"goodput.{pol}.daly.interval_s"),
             daly(delta, guarded))
    same("goodput.remap.young.replica_interval_s", get("goodput.remap.young.replica_interval_s"),
         young(rep, nhw + ninplace))
for pol in ("remap", "shrink_rebuild", "checkpoint_restart"):
    e = get(f"goodput.{pol}.ettr")
    if not hours > 0:
        same(f"goodput.{pol}.ettr (no service time)", e, None)  # aging off: no ratio is defined
        continue
    if e is None or not 0 < e <= 1:
        failures.append(f"goodput.{pol}.ettr: {e!r}, not in (0, 1]")
        continue
    for at in ("young", "daly"):
        o = get(f"goodput.{pol}.{at}.ettr")
        if o is None or o > e:
            failures.append(f"goodput.{pol}.ettr {e!r} below its ETTR at {at}'s interval {o!r}")
    if not groups and e != 1.0:
        failures.append(f"goodput.{pol}.ettr: {e!r} with no interruption (1 expected)")
# The record beside the run (analysis/record.h): its counts scaled to the run by each cause's
# grain (a GPU's causes by GPU-hours, a node's by node-hours, the job's by hours; the Llama 3
# record: 1,296 hours on 16,384 GPUs, 8 a node), the run's counts and their exact Garwood 95%
# intervals (scipy's chi-square quantiles, when scipy is here).
RECORDS = {"llama3-405b": (1296.0, 16384, 8,
                           {"sudden": 19, "device": 171, "node": 46, "software": 54,
                            "network": 35, "link": 7, "nccl_watchdog": 7, "sdc": 6,
                            "dependency": 2, "hbm": 72})}
GRAIN = {"sudden": "device", "device": "device", "node": "node", "software": "job",
         "network": "node", "link": "device", "nccl_watchdog": "job", "sdc": "device",
         "dependency": "job", "hbm": "device"}
rec = fig.get("record", {})
if rec.get("name") is not None:
    rhours, rgpus, rper_node, rcounts = RECORDS[rec["name"]]
    m = re.search(r"^devices_per_node = (\d+)$", config, re.M)
    per_node = int(m.group(1)) if m else 1
    devices = int(root["devices"])
    by_grain = {"job": hours / rhours,
                "node": hours / rhours * (-(-devices // per_node)) / (rgpus / rper_node),
                "device": hours / rhours * devices / rgpus}
    same("record.scale", rec["scale"], by_grain["job"])
    counts = {c: n * by_grain[GRAIN[c]] for c, n in rcounts.items()}
    counts["all"] = sum(counts.values())
    scale = 1.0
    try:
        from scipy.stats import chi2
    except ImportError:
        chi2 = None
    for cause, count in counts.items():
        got = rec["causes"][cause]
        measured = len(groups) if cause == "all" else sum(1 for g in groups if g[1] == cause)
        same(f"record.causes.{cause}.record", got["record"], count * scale)
        same(f"record.causes.{cause}.measured", got["measured"], measured)
        same(f"record.causes.{cause}.inside", got["inside"],
             got["ci_low"] <= count * scale <= got["ci_high"])
        if chi2 is not None:
            lo = chi2.ppf(0.025, 2 * measured) / 2 if measured > 0 else 0.0
            same(f"record.causes.{cause}.ci_low", got["ci_low"], lo, rtol=1e-9)
            same(f"record.causes.{cause}.ci_high", got["ci_high"],
                 chi2.ppf(0.975, 2 * measured + 2) / 2, rtol=1e-9)
same("recovery.event_log_errors", get("recovery.event_log_errors"),
     int(final["event_log_errors"]))

# latency
for phase, v in ranks.items():
    check_stats(f"latency.phases.{phase}", v)
edges = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85]
labels = ["0-10%", "10-20%", "20-30%", "30-40%", "40-50%", "50-60%", "60-70%", "70-80%",
          "80-85%", ">=85%"]
band = np.searchsorted(np.array(edges), steps["blackout_frac"], side="right") - 1
for b, label in enumerate(labels):
    same(f"latency.by_blackout.{label}.steps", get(f"latency.by_blackout.{label}.steps"),
         int((band == b).sum()))
    for phase, v in ranks.items():
        check_stats(f"latency.by_blackout.{label}.{phase}", v[band == b])
for name, mask in (("with_moves", moved), ("without_moves", ~moved)):
    same(f"latency.{name}.steps", get(f"latency.{name}.steps"), int(mask.sum()))
    for phase, v in ranks.items():
        check_stats(f"latency.{name}.{phase}", v[mask])
ar = float(f["calibration/allreduce8_us"].attrs["p50"])
same("latency.coordinator.allreduce8_us_p50", get("latency.coordinator.allreduce8_us_p50"), ar)
same("latency.coordinator.p50_over_allreduce8", get("latency.coordinator.p50_over_allreduce8"),
     float(np.percentile(ranks["coord_us"], 50)) / ar, 1e-12)
same("latency.coordinator.mean_over_allreduce8", get("latency.coordinator.mean_over_allreduce8"),
     float(ranks["coord_us"].mean()) / ar)

# worst steps: the five largest row maxima, earliest first among equals
order = sorted(range(n), key=lambda i: (-rowmax[i], i))[:5]
same("worst_steps length", len(get("worst_steps")), len(order))
for w, i in enumerate(order):
    ws = get(f"worst_steps.#{w}")
    same(f"worst_steps.#{w}.step", ws["step"], int(steps["step"][i]))
    same(f"worst_steps.#{w}.step_us", ws["step_us"], float(rowmax[i]), 0)
    same(f"worst_steps.#{w}.rank", ws["rank"], int(ranks["step_us"][i].argmax()))
    step_kinds = [k for k, s in zip(kinds, f["events"]["step"][:]) if s == steps["step"][i]]
    for kind in set(step_kinds):
        same(f"worst_steps.#{w}.events.{kind}", ws["events"][kind], step_kinds.count(kind))

if failures:
    print(f"FAIL: {len(failures)} figure(s) differ from numpy:")
    for line in failures[:40]:
        print("  " + line)
    sys.exit(1)
print(f"PASS: every checked figure of {log} agrees with numpy")
