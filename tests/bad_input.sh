#!/usr/bin/env bash
# Bad input to `agefence run` under mpirun: each case must exit 2, print exactly one line
# (from rank 0 only) naming the problem and where, and leave no log behind.
#   bad_input.sh AGEFENCE MPIEXEC WORKDIR FIXTURES
set -uo pipefail
agefence=$1 mpiexec=$2 work=$3 fixtures=$4
rm -rf "$work" && mkdir -p "$work"
cd "$work"
failed=0
n=0
# case NAME EXPECTED_FRAGMENT [agefence run args...]
case_() {
  local name=$1 want=$2
  shift 2
  n=$((n + 1))
  rm -f out.h5
  "$mpiexec" -n 3 "$agefence" run -q -o out.h5 "$@" >stdout 2>stderr
  local rc=$?
  local lines
  lines=$(grep -c '^agefence' stderr)
  if [ "$rc" != 2 ]; then
    echo "FAIL $name: exit $rc, expected 2"; cat stderr; failed=$((failed + 1)); return
  fi
  if [ "$lines" != 1 ]; then
    echo "FAIL $name: $lines agefence lines on stderr, expected 1 (rank 0 only)"; cat stderr
    failed=$((failed + 1)); return
  fi
  if ! grep -q -- "$want" stderr; then
    echo "FAIL $name: message lacks '$want':"; cat stderr; failed=$((failed + 1)); return
  fi
  if [ -e out.h5 ]; then
    echo "FAIL $name: a log was left behind"; failed=$((failed + 1)); return
  fi
  echo "ok   $name: $(grep '^agefence' stderr)"
}
cat >unknown_key.ini <<'INI'
[scenario]
steps = 10
colour = blue
INI
cat >unknown_section.ini <<'INI'
[scenario]
steps = 10

[fleet]
devices = 4
INI
cat >wrong_type.ini <<'INI'
[scenario]
steps = ten
INI
printf '[scenario]\nsteps = 10\nmax_blackout = 0.97\n' >range.ini
printf '[scenario]\nsteps = 10\nblock_len = 2\n' >block_len.ini
printf '[scenario]\nsteps = 10\n[workload]\ndt = 1e-3\n' >unstable.ini
printf '[scenario]\nsteps = 10\ndevices = 2\n' >devices.ini
printf '[scenario]\nsteps = 10\ndevices = 8\nblocks = 4\n' >blocks.ini
printf '[scenario]\nsteps = 10\n[event.1]\nstep = 3\naction = kill\ndevice = 99\nunits = 0-1\n' >event.ini
printf '[scenario]\nsteps = 100\n[event.1]\nstep = 300\naction = kill\ndevice = 3\nunits = 0-3\n' >event_after_end.ini
printf 'this is not ini\n' >garbage.ini
: >empty.ini
printf '# a comment, and nothing else\n\n' >comments.ini
printf '[scenario\nsteps = 10\n' >unterminated.ini
chmod 000 garbage.ini 2>/dev/null
printf '[scenario]\nsteps = 10\n' >unreadable.ini
chmod 000 unreadable.ini

case_ unknown_key "unknown_key.ini:3: unknown key 'colour'" -c unknown_key.ini
case_ unknown_section "unknown_section.ini:4: unknown section \[fleet\]" -c unknown_section.ini
case_ wrong_type "wrong_type.ini:2: scenario.steps = 'ten' is invalid: expected an integer" -c wrong_type.ini
case_ out_of_range "range.ini:3: scenario.max_blackout = '0.97' is invalid: expected a number in \[0, 0.95\]" -c range.ini
case_ negative_blackout "--set: scenario.max_blackout = '-0.1' is invalid" --set scenario.max_blackout=-0.1
case_ block_len "block_len.ini:3: scenario.block_len = '2' is invalid: expected an integer in \[3," -c block_len.ini
case_ unstable "unstable.ini:4: workload.dt = 0.001 violates the diffusion stability limit" -c unstable.ini
case_ devices_lt_ranks "devices.ini:3: scenario.devices = 2 is smaller than the 3 ranks" -c devices.ini
case_ blocks_lt_devices "blocks.ini:4: scenario.blocks = 4 is smaller than the fleet of 8 devices" -c blocks.ini
case_ event_device "event.ini:6: event.1.device = 99 is outside the fleet" -c event.ini
# An event after the last step: an error in a user's file, even a copy of the default scenario,
# and through --set (only the embedded default scenario's own events are skipped instead).
case_ event_after_end "event_after_end.ini:4: event.1.step = 300 is after the last step: expected 1..100" \
  -c event_after_end.ini
case_ default_copy_after_end "default.ini:71: event.1.step = 300 is after the last step: expected 1..100" \
  -c "$fixtures/../../configs/default.ini" --set scenario.steps=100
case_ set_event_after_end "--set: event.2.step = 200 is after the last step: expected 1..100" \
  --set scenario.steps=100 --set event.2.step=200 --set event.2.action=kill \
  --set event.2.device=0 --set event.2.units=0
case_ corruption_shares "--set: corruption.nonfinite + single_bit + multi_mantissa + multi_exponent = 1.4" \
  --set corruption.single_bit=0.87
case_ corruption_share_range "--set: corruption.nonfinite = '1.5' is invalid" \
  --set corruption.nonfinite=1.5
case_ silent_p_range "--set: corruption.silent_p = '-1' is invalid" --set corruption.silent_p=-1
case_ missing_file "nosuch.ini: cannot open the scenario file" -c nosuch.ini
# A file that sets nothing is a mistake, not a run of the defaults; a section header without its
# ']' is said on its own line.
case_ empty_file "empty.ini: the scenario file is empty (no \[section\], no key)" -c empty.ini
case_ comments_only_file "comments.ini: the scenario file is empty" -c comments.ini
case_ unterminated_section "unterminated.ini:1: unterminated section header '\[scenario'" \
  -c unterminated.ini
case_ seed_range "--set: scenario.seed = '18446744073709551615' is invalid: expected an integer in \[0, 9223372036854775807\]" \
  --set scenario.seed=18446744073709551615
case_ quarantine_range "--set: recovery.quarantine_after = '65536' is invalid: expected an integer in \[0, 65535\]" \
  --set recovery.quarantine_after=65536
case_ default_many_blocks "default.ini (embedded):21: workload.dt = 2e-09 violates the diffusion stability limit: .*; workload.dt = auto (--set workload.dt=auto) picks 0.8 x the limit" \
  --set scenario.blocks=100000
if [ "$(id -u)" != 0 ]; then
  case_ unreadable_file "unreadable.ini: cannot open the scenario file" -c unreadable.ini
fi
case_ bad_set "--set 'steps=3': expected section.key=value" --set steps=3
case_ unknown_set_key "--set: unknown key 'nope' in \[scenario\]" --set scenario.nope=1
case_ unknown_option "unknown option '--frobnicate'" --frobnicate
case_ slow_without_factor "--set: \[event.9\] is a slow event without 'factor'" \
  --set event.9.step=3 --set event.9.action=slow --set event.9.device=0 --set event.9.units=0
case_ factor_on_a_kill "--set: event.9.factor is set, but only a slow event has one" \
  --set event.9.step=3 --set event.9.action=kill --set event.9.device=0 --set event.9.units=0 \
  --set event.9.factor=2
case_ devices_per_node "--set: scenario.devices_per_node = 3 does not divide the fleet of 8 devices" \
  --set scenario.devices_per_node=3
case_ node_rate "--set: aging.node_rate_per_hour = '2' is invalid: expected a number in \[0, 1\]" \
  --set aging.node_rate_per_hour=2
case_ event_node "--set: event.9.node = 4 is outside the fleet: expected 0..3 (8 devices, 2 per node)" \
  --set scenario.devices_per_node=2 --set event.9.step=3 --set event.9.action=kill_node \
  --set event.9.node=4
case_ kill_node_without_node "--set: \[event.9\] lacks 'node' (a kill_node event needs step, action and node)" \
  --set event.9.step=3 --set event.9.action=kill_node
case_ units_on_kill_device "--set: event.9.units is set, but a kill_device event has none" \
  --set event.9.step=3 --set event.9.action=kill_device --set event.9.device=1 --set event.9.units=0
# Device memory (HBM) errors: the rate's range, a reset_device outside the fleet, with units
# (it resets the whole device), without a device, and a rate too high for the step.
case_ hbm_rate "--set: aging.hbm_rate_per_hour = '2' is invalid: expected a number in \[0, 1\]" \
  --set aging.hbm_rate_per_hour=2
case_ hbm_rate_per_step "aging.hbm_rate_per_hour = 0.9 makes 7.2 memory errors a step" \
  --set aging.sim_hours_per_step=1 --set aging.hbm_rate_per_hour=0.9
case_ reset_device_outside "--set: event.9.device = 8 is outside the fleet: expected 0..7" \
  --set event.9.step=3 --set event.9.action=reset_device --set event.9.device=8
case_ units_on_reset_device "--set: event.9.units is set, but a reset_device event has none" \
  --set event.9.step=3 --set event.9.action=reset_device --set event.9.device=1 \
  --set event.9.units=0
case_ reset_device_without_device "--set: \[event.9\] lacks 'device' (a reset_device event needs step, action and device)" \
  --set event.9.step=3 --set event.9.action=reset_device
# Ranks sharing a GPU need compute = cuda and fabric = mpi, both set.
case_ share_gpu_without_cuda "backend.share_gpu = on needs backend.compute = cuda and backend.fabric = mpi" \
  --set backend.share_gpu=on
# Link losses: the rate's and shape's ranges, a link_down outside the fleet, with units (it takes
# the whole device's link), without a device.
case_ link_rate "--set: aging.link_rate_per_hour = '-1' is invalid: expected a number in \[0, 1\]" \
  --set aging.link_rate_per_hour=-1
case_ link_shape "--set: aging.link_shape = '0' is invalid: expected a number in \[0.1, 20\]" \
  --set aging.link_shape=0
case_ link_down_outside "--set: event.9.device = 8 is outside the fleet: expected 0..7" \
  --set event.9.step=3 --set event.9.action=link_down --set event.9.device=8
case_ units_on_link_down "--set: event.9.units is set, but a link_down event has none" \
  --set event.9.step=3 --set event.9.action=link_down --set event.9.device=1 \
  --set event.9.units=0
case_ link_down_without_device "--set: \[event.9\] lacks 'device' (a link_down event needs step, action and device)" \
  --set event.9.step=3 --set event.9.action=link_down
case_ pacing_mode "--set: pacing.mode = 'always' is invalid: expected one of off|ewma|quantile" \
  --set pacing.mode=always
case_ pacing_quantile "--set: pacing.quantile = '2' is invalid: expected a number in \[0.5, 0.999\]" \
  --set pacing.quantile=2
case_ straggler_threshold "--set: straggler.threshold = '1' is invalid: expected a number in" \
  --set straggler.threshold=1
case_ graph_with_straggler "--set: backend.graph = on cannot run with straggler.detect = on" \
  --set backend.graph=on --set straggler.detect=on
case_ graph_mode "--set: backend.graph = 'always' is invalid: expected one of auto|on|off" \
  --set backend.graph=always
# An unwritable metrics file is refused before the run starts (and leaves no log).
case_ metrics_unwritable "metrics.textfile = '/nonexistent-dir/m.prom': cannot write it" \
  --set metrics.textfile=/nonexistent-dir/m.prom
# A static capacity that cannot fit in this node's memory is refused up front, with numbers.
case_ too_big_for_memory "bytes on a node" --set scenario.blocks=900000 \
  --set scenario.block_len=4096 --set scenario.devices=64 --set workload.dt=1e-20
# The attention workload: a dim out of range, more tokens than a block holds, and a block too
# large for the node's memory (4 million blocks of 256 tokens x 1024 features).
case_ attention_dim "--set: workload.dim = '0' is invalid: expected an integer in .1, 1024." \
  --set workload.kind=attention --set workload.dim=0
case_ attention_dim_high "workload.dim = '1025' is invalid" --set workload.kind=attention \
  --set workload.dim=1025
case_ attention_tokens "scenario.block_len = 300 tokens: the attention workload takes at most 256" \
  --set workload.kind=attention --set scenario.block_len=300
case_ attention_kind "workload.kind = 'transformer' is invalid: expected one of burgers|attention" \
  --set workload.kind=transformer
case_ attention_too_big_for_memory "bytes on a node" --set workload.kind=attention \
  --set scenario.blocks=4000 --set scenario.block_len=256 --set workload.dim=1024 \
  --set scenario.devices=64
# An unwritable output path is refused before the run starts.
n=$((n + 1))
echo "not a folder" >afile
"$mpiexec" -n 2 "$agefence" run -q -o afile/sub/x.h5 >stdout 2>stderr
rc=$?
if [ "$rc" = 2 ] && grep -q "afile/sub/x.h5: cannot create the folder: afile is not a folder" stderr &&
   [ "$(grep -c '^agefence' stderr)" = 1 ]; then
  echo "ok   unwritable_output: $(grep '^agefence' stderr)"
else
  echo "FAIL unwritable_output: exit $rc"; cat stderr; failed=$((failed + 1))
fi
# backend.compute = cuda where no GPU is visible: every rank meets it, one line says it.
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  echo "skip cuda_without_gpu: a GPU is visible"
else
  n=$((n + 1))
  "$mpiexec" -n 2 "$agefence" run -q -o out.h5 --set backend.compute=cuda \
    >stdout 2>stderr
  rc=$?
  if [ "$rc" = 2 ] && [ "$(grep -c '^agefence' stderr)" = 1 ] &&
     grep -q '^agefence: backend.compute = cuda, but no GPU is visible' stderr && [ ! -e out.h5 ]; then
    echo "ok   cuda_without_gpu: $(grep '^agefence' stderr)"
  else
    echo "FAIL cuda_without_gpu: exit $rc, expected 2 and one line from rank 0"; cat stderr
    failed=$((failed + 1))
  fi
fi
chmod 644 garbage.ini unreadable.ini 2>/dev/null
echo "$((n - failed)) passed, $failed failed"
[ "$failed" = 0 ]
