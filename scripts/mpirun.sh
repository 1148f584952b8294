#!/usr/bin/env bash
# Runs mpirun with what this machine needs: Open MPI refuses root without its two opt-in
# variables, and more ranks than cores need oversubscription. Arguments go to mpirun unchanged.
# AGEFENCE_MPIRUN names another launcher (mpiexec.mpich for a build with MPICH: the launcher
# must be the MPI's agefence was built with); the Open MPI variables below do nothing to it.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
# Containers often forbid the cross-memory-attach syscalls that vader uses by default.
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
# Each mpirun gets a session-directory base of its own. Open MPI 4 puts the session directories
# of all of a user's mpiruns under one <tmp>/ompi.<host>.<uid>, and the last mpirun to leave
# removes it: one starting at that moment fails ("A call to mkdir was unable to create the
# desired directory ... No such file or directory") before any rank runs. The test suite starts
# many mpiruns at once. The base is named by this shell's pid, which exec hands to mpirun, inside
# the base already set (a test's, the user's) or the temporary directory; bases of mpiruns that
# have ended are removed here.
bases=${OMPI_MCA_orte_tmpdir_base:-${TMPDIR:-/tmp}}/agefence-mpirun.$(id -u)
if mkdir -p "$bases/$$" 2>/dev/null; then
  for d in "$bases"/*; do
    pid=${d##*/}
    case "$pid" in '' | *[!0-9]*) continue ;; esac
    [ "$pid" = $$ ] || kill -0 "$pid" 2>/dev/null || rm -rf "$d"
  done
  export OMPI_MCA_orte_tmpdir_base=$bases/$$
fi
exec "${AGEFENCE_MPIRUN:-mpirun}" "$@"
