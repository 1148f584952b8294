#!/usr/bin/env bash
# Runs mpirun with what this machine needs: Open MPI refuses root without its two opt-in
# variables, and more ranks than cores need oversubscription. Arguments go to mpirun unchanged.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
# Containers often forbid the cross-memory-attach syscalls that vader uses by default.
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
exec mpirun "$@"
