/* agefence: the counting allocator. Everything the step loop touches is allocated through
 * af_alloc before af_alloc_seal(); any allocation after the seal is counted, logged per step
 * as allocs_after_init, and asserted to be zero by the tests. The fabrics report every
 * communicator they create the same way (comms_after_init). What MPI, HDF5 or NCCL allocate
 * inside themselves is not seen: only agefence's own requests are. */
#ifndef AF_ALLOC_H
#define AF_ALLOC_H

#include <stddef.h>
#include <stdint.h>

/* Zeroed, 64-byte aligned memory; NULL on failure. Free with af_free. */
void *af_alloc(size_t bytes);
void af_free(void *p);

/* Tests of failure paths: the n-th af_alloc from now fails (returns NULL; n = 1: the next
 * one), once; 0 turns it off. */
void af_alloc_fail_at(int64_t n);

/* Starts a new start-up window (a benchmark running several scenarios in one process). */
void af_alloc_reset(void);

/* Marks the end of start-up. */
void af_alloc_seal(void);
int af_alloc_sealed(void);

/* Allocations made through af_alloc since the seal, and bytes held now. */
int64_t af_alloc_after_seal(void);
int64_t af_alloc_bytes_live(void);
/* The most bytes held at once since the last af_alloc_reset(). */
int64_t af_alloc_bytes_peak(void);
int64_t af_alloc_count_total(void);
/* Called by backends that allocate outside af_alloc (cudaMalloc), so the same counter sees them. */
void af_alloc_note_external(size_t bytes);
/* ... and the release of such an allocation. */
void af_alloc_note_external_free(size_t bytes);

/* Called by the fabrics for every communicator they create (MPI_Comm_dup, MPI_Comm_split,
 * ncclCommInitRank); those created since the seal are counted. */
void af_alloc_note_comm(void);
int64_t af_alloc_comms_after_seal(void);

#endif
