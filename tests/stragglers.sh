#!/usr/bin/env bash
# Stragglers and pacing, through whole runs checked in their logs.
#   stragglers.sh MODE AGEFENCE REPORT MPIEXEC WORKDIR SCENARIO (a file, or default)
# MODE:
#   throttle   a device slowed 3x by a slow event: the modelled delay (/ranks/throttle_us) is
#              exactly 4.8 ms per step on its rank and spent inside every step's kernel_us;
#              rank-max step_us's 10th percentile rises over the same run without the event
#              by 0.95-1.25x the modelled delay (wall-clock: up to three pairs of runs)
#   straggler  straggler detection declares the slowed device, and only it, drains exactly its
#              blocks, and the result stays bitwise equal; without the slow event it declares
#              nothing
#   pacing     pacing.mode=ewma and pacing.mode=quantile: rank 0 waits (sink_us > 0), no step's
#              period is shorter than its own phases plus its wait, and the result stays bitwise
#              equal to the reference
#   metrics    metrics.textfile rewritten every step while a poller reads it: every read is a
#              whole file, promtool accepts a mid-run copy and the final one, and the final
#              figures match the log's /final
set -uo pipefail
. "$(dirname "$0")/lib.sh"
mode=$1 agefence=$2 report=$3 mpiexec=$4 work=$5 scenario=$6
rm -rf "$work" && mkdir -p "$work"
cd "$work" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
run() { # run NP OUT.h5 ARGS...: a run that must pass, and keep start-up's promises
  local np=$1 out=$2 why
  shift 2
  "$mpiexec" -n "$np" "$agefence" run -q "${scen[@]}" -o "$out" "$@" \
    >"$out.txt" 2>&1 || { cat "$out.txt"; fail "run $out exited $?"; }
  why=$(af_clean_run "$report" "$out") || fail "$why"
}
SLOW=(--set event.9.step=1 --set event.9.action=slow --set event.9.device=1
      --set event.9.units=0-3 --set event.9.factor=3)
scen=(-c "$scenario")
[ "$scenario" = default ] && scen=()

case "$mode" in
throttle)
  # 6 blocks on device 1 x 400 us x (3 - 1) = 4.8 ms of modelled delay per step on its rank.
  common=(--set scenario.steps=120 --set throttle.block_us=400)
  # Two checks (docs/stragglers.md, "Throttling"). Exact, on any machine: the model asks for
  # 4.8 ms per step on rank 0 (device 1 is among its devices) and none without the event, and
  # the slowed rank spends at least that inside its kernel phase in every step (a busy wait
  # never ends early). Wall-clock, so only on a machine not loaded by other work: the step
  # latency's 10th percentile rises by 0.95-1.25x the modelled delay (1.000 when this test
  # runs alone on the 2-core build machine). Up to three fresh pairs of runs, pass on the first
  # in the band: a wrong delay (none, or counted twice) misses every time, a burst of load from
  # elsewhere rarely spans three pairs.
  ok=0
  for attempt in 1 2 3; do
    run 2 base.h5 "${common[@]}"
    run 2 slow.h5 "${common[@]}" "${SLOW[@]}"
    /usr/bin/python3 - "$attempt" <<'PY'
import sys
import h5py, numpy as np
def load(p):
    f = h5py.File(p, "r")
    return (f["ranks/step_us"][()].max(axis=1), f["ranks/throttle_us"][()],
            f["ranks/kernel_us"][()])
st0, th0, _ = load("base.h5")
st1, th1, k1 = load("slow.h5")
skip = 5
bad = []
if th0.max() != 0:
    bad.append(f"the run without the event modelled a delay: {th0.max()} us")
if not np.all(np.abs(th1[skip:, 0] - 4800) < 1e-6 * 4800) or th1[skip:, 1].max() != 0:
    bad.append(f"modelled delay per step {np.unique(th1[skip:, 0])[:3]} us on rank 0 and "
               f"{th1[skip:, 1].max()} on rank 1, expected 4800 and 0")
short = np.nonzero(k1[skip:, 0] < th1[skip:, 0])[0]
if len(short):
    bad.append(f"{len(short)} steps spent less than the modelled delay in their kernel phase "
               f"(first: step {short[0] + skip + 1}, {k1[short[0] + skip, 0]:.0f} us)")
for b in bad:
    print("FAIL:", b)
if bad:
    sys.exit(2)  # a wrong model or wait: no retry can mend it
# The 10th percentile: on a loaded machine a rank is preempted during some of its waits, which
# stretches them; the lower quantiles show the delay itself.
modelled = 4800.0
measured = np.percentile(st1[skip:], 10) - np.percentile(st0[skip:], 10)
ratio = measured / modelled
print(f"attempt {sys.argv[1]}: every slowed step spent >= {modelled:.0f} us; p10 step latency "
      f"rose {measured:.0f} us for a modelled {modelled:.0f} us: ratio {ratio:.3f}")
sys.exit(0 if 0.95 <= ratio <= 1.25 else 1)
PY
    rc=$?
    [ "$rc" = 2 ] && fail "the modelled delay is wrong or was not spent"
    if [ "$rc" = 0 ]; then
      ok=1
      break
    fi
  done
  [ "$ok" = 1 ] || fail "the step latency's p10 missed [0.95, 1.25] x the modelled delay three times"
  ;;
straggler)
  common=(--set scenario.steps=160 --set straggler.detect=on)
  run 2 strag.h5 "${common[@]}" "${SLOW[@]}" --set event.9.factor=8
  run 2 clean.h5 "${common[@]}"
  for f in strag.h5 clean.h5; do
    [ "$("$report" --attr /final bitwise_equal "$f")" = 1 ] || fail "$f: not bitwise equal"
    "$report" --check "$f" >"$f.check" || { cat "$f.check"; fail "$f: --check"; }
  done
  /usr/bin/python3 - <<'PY' || exit 1
import h5py, numpy as np
f = h5py.File("strag.h5", "r")
ev = f["events"][()]
kind = ev["kind"].astype(str)
s = ev[kind == "straggler"]
assert len(s) == 1, f"{len(s)} straggler events, expected 1: {s}"
assert s["from_device"][0] == 1, f"straggler device {s['from_device'][0]}, expected 1"
assert s["detail"][0] > 2000, f"EWMA/median {s['detail'][0]/1000} not above the threshold 2"
d = ev[kind == "drain"]
assert len(d) > 0, "no drain"
assert (d["from_device"] == 1).all(), f"drains from devices {set(d['from_device'])}"
assert (d["to_device"] != 1).all(), "a drain onto the straggler"
assert (d["step"] >= s["step"][0]).all()
# Every block of device 1 left it: the final placement holds none there.
assert len(d) == 6, f"{len(d)} drains, expected the 6 blocks of device 1"
su = f["steps/straggler_units"][()]
assert su[-1] == 4 and su[: s["step"][0] - 1].max() == 0, "straggler_units"
c = h5py.File("clean.h5", "r")["events"][()]
assert not (c["kind"].astype(str) == "straggler").any(), "a healthy fleet had a straggler"
print(f"device 1 declared at step {s['step'][0]} ({s['detail'][0]/1000:.2f}x the median), "
      f"{len(d)} drains")
PY
  ;;
pacing)
  # Both pacers: the EWMA bound and the quantile deadline.
  for how in "ewma --set pacing.gamma=1" "quantile --set pacing.quantile=0.9"; do
    name=paced_${how%% *}
    # shellcheck disable=SC2086 # $how holds the mode and its own --set option
    run 2 "$name.h5" --set scenario.steps=200 --set pacing.mode=$how
    [ "$("$report" --attr /final bitwise_equal "$name.h5")" = 1 ] || fail "$name: not bitwise equal"
    "$report" --check "$name.h5" >"$name.check.txt" || { cat "$name.check.txt"; fail "$name: --check"; }
    "$report" "$name.h5" >"$name.report.txt" || fail "$name: report: exit $?"
    grep -q "pacing       sink_us mean" "$name.report.txt" || fail "$name: the report has no pacing line"
    /usr/bin/python3 - "$name.h5" <<'PY' || exit 1
import sys
import h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
r = f["ranks"]
sink = r["sink_us"][()]
assert sink[:, 0].max() > 0, "rank 0 never waited"
assert (sink[:, 1:] == 0).all(), "a rank other than 0 waited"
assert (sink[:20, 0] == 0).all(), "a wait inside the warm-up"
work = sum(r[p][()] for p in ("coord_us", "moves_us", "kernel_us", "halo_us", "replica_us",
                              "log_us"))
# A step's period holds its phases and its wait: the next step never started early.
short = r["step_us"][()] + 1.0 - (work + sink)
assert (short[:-1] >= 0).all(), f"steps shorter than their phases: {np.argwhere(short[:-1] < 0)[:5]}"
print(f"{sys.argv[1]}: rank 0 waited in {np.count_nonzero(sink[:, 0])} of {len(sink)} steps")
PY
  done
  ;;
metrics)
  command -v promtool >/dev/null || fail "promtool missing (scripts/setup.sh installs prometheus)"
  cat >poll.py <<'PY'
# Reads m.prom as fast as it can while the run rewrites it: every read must be a whole file.
import os, re, shutil, sys, time
line = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? \S+$')
reads = whole = 0
mid = False
t0 = time.time()
while time.time() - t0 < 120:
    try:
        with open("m.prom") as f:
            text = f.read()
    except FileNotFoundError:
        continue
    reads += 1
    assert text.endswith("\n"), f"read {reads}: no final newline"
    for l in text.splitlines():
        assert l.startswith("# ") or line.match(l), f"read {reads}: bad line {l!r}"
    assert "agefence_throttle_seconds_total{" in text, f"read {reads}: cut short"
    whole += 1
    m = re.search(r'^agefence_step\{[^}]*\} (\d+)', text, re.M)
    if not mid and m and 20 <= int(m.group(1)) < 150:
        with open("mid.prom", "w") as f:
            f.write(text)
        mid = True
    if re.search(r'^agefence_running\{[^}]*\} 0$', text, re.M):
        break
print(f"{reads} reads, {whole} whole, mid-run copy: {mid}")
assert mid, "no mid-run copy"
assert re.search(r'^agefence_running\{[^}]*\} 0$', text, re.M), "the run never finished"
PY
  /usr/bin/python3 poll.py >poll.txt 2>&1 &
  poller=$!
  run 2 m.h5 --set scenario.steps=400 --set metrics.textfile=m.prom --set metrics.interval=1 \
    "${SLOW[@]}" --set event.9.step=100
  wait "$poller" || { cat poll.txt; fail "the poller saw a broken file"; }
  cat poll.txt
  for f in mid.prom m.prom; do
    promtool check metrics <"$f" >"$f.lint" 2>&1 || { cat "$f.lint"; fail "promtool: $f"; }
  done
  /usr/bin/python3 - <<'PY' || exit 1
import re, h5py
text = open("m.prom").read()
def val(name, labels=""):
    m = re.search(r'^' + re.escape(name) + r'\{[^}]*' + re.escape(labels) + r'[^}]*\} (\S+)$',
                  text, re.M)
    assert m, f"{name}{{{labels}}} missing"
    return float(m.group(1))
f = h5py.File("m.h5", "r")
fin = f["final"].attrs
steps = f["steps"]
checks = {
    ("agefence_step", ""): len(steps["step"]),
    ("agefence_exit_code", ""): fin["exit_code"],
    ("agefence_moves_total", 'kind="drain"'): fin["moves_drain_total"],
    ("agefence_moves_total", 'kind="retry"'): fin["moves_retry_total"],
    ("agefence_fenced_total", ""): fin["fenced_total"],
    ("agefence_corruptions_injected_total", ""): fin["corrupt_injected_total"],
    ("agefence_units", 'state="dead"'): steps["dead_units"][-1],
    ("agefence_slow_units", ""): steps["slow_units"][-1],
    ("agefence_step_period_seconds_count", ""): len(steps["step"]),
}
for (name, lab), want in checks.items():
    got = val(name, lab)
    assert got == want, f"{name}{{{lab}}} = {got}, the log says {want}"
assert val("agefence_running") == 0
print("final metrics match the log")
PY
  ;;
*) fail "unknown mode $mode" ;;
esac
exit 0
