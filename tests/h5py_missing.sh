#!/usr/bin/env bash
# A whole-run test without h5py (tests/lib.sh, af_h5py): it must run what needs no Python, then
# fail (exit 1, not 77, not 0) with the one line naming the Python that lacks h5py and
# scripts/setup.sh, and call that Python for nothing but the check.
#   h5py_missing.sh WORKDIR MARKER SCRIPT ARGS...
# MARKER: a line SCRIPT prints only after its last part that needs no Python ran.
set -uo pipefail
work=$1 marker=$2 script=$3
shift 3
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
# A Python without h5py: every call is recorded and fails as an import of h5py would.
stub=$work/python3
cat >"$stub" <<STUB
#!/bin/sh
echo "\$*" >>"$work/python3.calls"
echo "ModuleNotFoundError: No module named 'h5py'" >&2
exit 1
STUB
chmod +x "$stub"
AGEFENCE_PYTHON=$stub bash "$script" "$@" >"$work/out.txt" 2>&1
rc=$?
[ "$rc" = 1 ] || { tail -5 "$work/out.txt"; fail "$(basename "$script") without h5py: exit $rc, expected 1"; }
want="FAIL: h5py (or numpy) is missing for $stub: scripts/setup.sh installs it (AGEFENCE_PYTHON names another Python)"
[ "$(tail -1 "$work/out.txt")" = "$want" ] ||
  { tail -5 "$work/out.txt"; fail "the last line is not the one naming the missing h5py"; }
[ "$(grep -c "h5py" "$work/out.txt")" = 1 ] || fail "h5py named more than once: $(grep h5py "$work/out.txt")"
grep -qF -- "$marker" "$work/out.txt" || fail "the parts that need no Python did not run: no '$marker'"
[ "$(cat "$work/python3.calls")" = "-c import h5py, numpy" ] ||
  fail "the Python was called for more than the check: $(cat "$work/python3.calls")"
echo "PASS: $(basename "$script") without h5py ran what needs no Python, then: $want"
