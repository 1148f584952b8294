/* agefence shard: what every part of a run is handed — the scenario, the world and its fabrics,
 * the kernels and the slots they own, the placement, the workload, the shape, every unit's
 * state as every rank knows it, the step counters, and this step's payload (its phases and the
 * counters each part adds to). The driver owns it (sim/driver/run_internal.h); the exchange and
 * recovery hold a pointer to it. */
#ifndef AF_SHARD_H
#define AF_SHARD_H

#include <stdint.h>

#include "../../common/log_schema.h"
#include "../../fabric/fabric.h"
#include "../../kernels/kernels.h"
#include "../fleet/aging.h"
#include "../io/config.h"
#include "placement.h"

/* Counters each rank reports for each step; summed on rank 0. */
enum {
    CNT_INJECTED,
    CNT_DETECTED,
    CNT_FENCED,
    CNT_RETRIED,
    CNT_SDC,
    CNT_SDC_HARMFUL, /* of CNT_SDC, relative error above corruption.harm_rel_error */
    CNT_HARMFUL,     /* of CNT_INJECTED, relative error above corruption.harm_rel_error */
    CNT_DET_FINITE,  /* of CNT_DETECTED, by the non-finite test */
    CNT_DET_ABFT,    /* of CNT_DETECTED, by the mass balance */
    CNT_DET_TWIN,    /* of CNT_DETECTED, by a twin's disagreement */
    CNT_ABFT_FALSE,  /* slots abft fenced with nothing injected */
    CNT_TWINS,       /* twins computed (rank 0 counts; every rank plans the same) */
    CNT_UNVERIFIED,
    CNT_ALLOCS,
    CNT_COMMS,
    CNT_HALO_BYTES, /* bytes this rank sent in the step's halos (edges, figures, fenced lists) */
    CNT_LOG_BYTES,  /* bytes this rank sent to the edge logs beside the replicas */
    NCOUNTS
};

/* What each rank sends to rank 0 at the end of a step: the phases of this step, except step_us
 * and log_us, which are those of the previous step (a step's own log phase ends after its
 * gather). */
typedef struct af_payload {
    double phase[AF_NPHASES];
    int64_t count[NCOUNTS];
} af_payload_t;

typedef struct af_shard {
    af_config_t cfg;
    af_world_t world;
    af_fabric_t *fab;
    af_fabric_t *nccl; /* the device fabric for the halo (nccl), or NULL */
    af_kernels_t *k;
    af_placement_t pl;
    const af_workload_t *wl; /* the scenario's workload (workload.kind) */
    af_wl_params_t wlp;      /* its parameters, the bits every backend gets */
    int64_t T, B, D, U, C;
    int n_local;     /* local slots */
    int64_t slot0;   /* global index of local slot 0 */
    int64_t units;   /* D * U */
    double *cellbuf; /* T doubles: scratch for one block */

    /* Health: every unit's state as every rank knows it; what only the units' own rank needs
     * (a FADING unit's corruption probability, af_aging_p_corrupt) from the aging model of its
     * own units, which alone knows it: nothing per unit is copied out of it. */
    int8_t *unit_state;      /* units */
    int64_t own_u0;          /* the first unit of this rank's devices */
    int64_t own_units;       /* how many */
    const af_aging_t *aging; /* the model of the own units (the driver's) */

    int64_t tick;       /* executed steps */
    int64_t state_step; /* logical step of the committed state */
    af_payload_t mine;  /* this step's payload */
} af_shard_t;

/* The injection counter of a compute pass: executed step x 8 + retry round, so a retry (or a
 * replay after a rollback) draws fresh corruption, whatever unit it runs on. */
static inline uint64_t af_inject_key(const af_shard_t *s, int round)
{
    return (uint64_t)s->tick * 8U + (uint64_t)round;
}

/* The index of unit u (one of this rank's own) in the tables of own units. */
static inline int64_t af_own_unit(const af_shard_t *s, int64_t u)
{
    return u - s->own_u0;
}

#endif
