/* agefence memory budget: what a run will hold in host memory on one rank, from the scenario
 * alone, before anything is allocated; and what the process really holds (for the log). The
 * driver refuses a scenario whose ranks do not fit in their node's available memory before it
 * allocates anything (sim/driver/run.c), and logs the estimate beside the measured peaks so the two
 * can be compared (tests/memory.sh holds them within 20%). */
#ifndef AF_MEMORY_H
#define AF_MEMORY_H

#include <stdint.h>

#include "../../kernels/kernels.h"
#include "../io/config.h"

/* Bytes, by what holds them. */
typedef struct af_memory {
    double fleet;    /* tables of every unit and slot that every rank holds: placement, health,
                        throttling, plan buffers (the fleet-wide share) */
    double blocks;   /* tables of every block every rank holds: exchange vectors, move and
                        replica maps, transfer scratch */
    double shard;    /* this rank's slots (the compute backend's host memory) */
    double replicas; /* the replicas this rank keeps, and the transfer staging */
    double aging;    /* the aging model of this rank's own units and what it shares each step,
                        and the coordinator's fleet lists and straggler detector */
    double rank0;    /* rank 0 only: the log and metrics */
    double startup;  /* all of the above: what start-up allocates through af_alloc */
    double verdict;  /* at the end, besides: the gathered state, the serial reference and its
                        work array (rank 0), this rank's share of the gather */
    double peak;     /* startup + what the verdict takes beyond the replicas it frees */
} af_memory_t;

/* The budget of `rank` of `nranks` for cfg (devices resolved by af_config_devices), with the
 * compute backend kops (its host_bytes for the shard). */
void af_memory_estimate(const af_config_t *cfg, int nranks, int rank, const af_kernels_ops_t *kops,
                        af_memory_t *m);

/* This process's resident memory now (VmRSS) and its peak so far (VmHWM), in bytes; 0 when
 * /proc/self/status cannot be read. */
double af_memory_rss_now(void);
double af_memory_rss_peak(void);

/* Bytes of memory the node can still give (MemAvailable), 0 when unknown. */
double af_memory_node_available(void);

#endif
