/* agefence driver, the verdict (verdict.c): the final state against the reference, and the
 * log's and the summary's last words. */
#ifndef AF_DRIVER_VERDICT_H
#define AF_DRIVER_VERDICT_H

#include <stddef.h>
#include <stdint.h>

#include "run_internal.h"

/* What the run ends with: its exit (reason, code), the bitwise verdict, the checksums of the
 * state and of the reference, the mass at the start and the end, the reference's time. */
typedef struct verdict {
    const char *exit_reason;
    int exit_code;
    int bitwise_equal; /* 1, 0, or -1: not verified (the launcher's ending of the job) */
    uint64_t state_sum;
    uint64_t ref_sum;
    double mass0;
    double mass_final;
    double ref_seconds;
} verdict_t;

/* Gathers the final state to rank 0 and, when `verify`, compares it with the serial reference
 * (bitwise_equal -1 without: not verified). Collective. */
af_result_t af_verdict_finish(af_run_state_t *r, verdict_t *v, int verify);

/* Rank 0, before the first step (before the allocator's seal: it takes and frees a buffer of
 * at most 64 MiB): the seconds af_verdict_finish's serial reference over every step will take,
 * timed on the grid or a slice of it and scaled; -1 when it cannot be timed. */
double af_verdict_estimate_s(const af_run_state_t *r);
/* The /units columns (rank 0 writes what every rank's own units give). Collective. */
af_result_t af_write_units(af_run_state_t *r);
/* The memory figures of /final, the largest over the ranks. Collective. */
af_result_t af_memory_measures(af_run_state_t *r);
/* Rank 0: /final. */
af_result_t af_write_final(af_run_state_t *r, const verdict_t *v);
/* Rank 0: the summary on stdout. */
void af_print_summary(const af_run_state_t *r, const verdict_t *v, double wall_s);

#endif
