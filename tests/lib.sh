# Checks shared by the whole-run tests (sourced by them; not run on its own).

# af_clean_run REPORT LOG: what every finished run promises, whatever its exit status: nothing
# allocated through agefence's allocator and no communicator created after start-up (summed
# over all ranks), no NaN/Inf committed and no event lost by the log. Prints every broken promise on one line and
# returns 1, or prints nothing. (The allocation counter sees af_alloc and the CUDA allocations
# the backends report, not what MPI, HDF5 or NCCL allocate inside themselves: docs/recovery.md,
# "One step, phase by phase".)
af_clean_run() {
  local report=$1 log=$2 name got broken=""
  for name in allocs_after_init comms_after_init nonfinite_leaked_total event_log_errors; do
    if ! got=$("$report" --attr /final "$name" "$log" 2>/dev/null); then
      broken+="${broken:+; }no /final@$name"
    elif [ "$got" != 0 ]; then
      broken+="${broken:+; }/final@$name = $got, expected 0"
    fi
  done
  [ -z "$broken" ] && return 0
  echo "$log: $broken"
  return 1
}

# af_sdc_mismatch REPORT LOG: exit 3 is the honest outcome of a run that committed a finite
# corruption its detectors did not see (the default [corruption] mix is ~99% finite): returns 0
# when the log says exactly that (exit_reason mismatch, bitwise_equal 0 and
# sdc_undetected_total > 0), else prints what it says instead and returns 1.
af_sdc_mismatch() {
  local report=$1 log=$2 reason eq sdc
  reason=$("$report" --attr /final exit_reason "$log" 2>/dev/null)
  eq=$("$report" --attr /final bitwise_equal "$log" 2>/dev/null)
  sdc=$("$report" --attr /final sdc_undetected_total "$log" 2>/dev/null)
  if [ "$reason" = mismatch ] && [ "$eq" = 0 ] && [ "${sdc:-0}" -gt 0 ]; then
    return 0
  fi
  echo "exit 3 with exit_reason '$reason', bitwise_equal '$eq', sdc_undetected_total '$sdc'"
  return 1
}

# af_python: the Python of the whole-run tests' recounts: $AGEFENCE_PYTHON, /usr/bin/python3
# unless set (scripts/setup.sh installs h5py and numpy for it).
# af_h5py: returns 0 when that Python imports h5py and numpy; else prints the one line that
# says which Python lacks them and what installs them, and returns 1. A missing h5py is a
# broken environment, not a reason to skip (exit 77) or to pass: a script runs what needs no
# Python in any case and ends with that line and exit 1,
#   py=$(af_python); no_h5py=$(af_h5py)
#   ... [ -z "$no_h5py" ] && "$py" ... (the recounts)
#   [ -z "$no_h5py" ] || { echo "$no_h5py"; exit 1; }
af_python() {
  echo "${AGEFENCE_PYTHON:-/usr/bin/python3}"
}
af_h5py() {
  local py
  py=$(af_python)
  "$py" -c "import h5py, numpy" >/dev/null 2>&1 && return 0
  echo "FAIL: h5py (or numpy) is missing for $py: scripts/setup.sh installs it" \
    "(AGEFENCE_PYTHON names another Python)"
  return 1
}
