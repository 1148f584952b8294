/* agefence driver, throttling (throttle.c): the modelled slowdown of this rank's own units —
 * FADING degradation, scripted slow events, spikes — spent as a busy wait after the compute
 * pass, the per-device times straggler detection reads, and pacing. */
#ifndef AF_DRIVER_THROTTLE_H
#define AF_DRIVER_THROTTLE_H

#include <stdint.h>

#include "../fleet/straggler.h"

struct af_run_state;

/* Throttling (sim/fleet/straggler.h) of this rank's own units, straggler detection (rank 0)
 * and pacing. */
typedef struct af_throttle {
    double *unit_base;   /* own units: slowdown set by scripted slow events (1 nominal) */
    double *unit_deg;    /* own units: degradation of a FADING unit, from its model */
    int64_t *unit_stamp; /* own units: scratch, the tick a unit's delay was counted in */
    int32_t *slow_list;  /* own units ever named by a slow event (global numbers) */
    int64_t n_slow;
    double *dev_delay;     /* local devices: modelled delay of this step (us) */
    int throttle_possible; /* slowdown, spikes or slow events can make any delay at all */
    int64_t slow_units;    /* live units with a slowdown above 1 */
    af_straggler_t strag;
    double *strag_in;     /* devices: the per-block times of the last exchange */
    int64_t *strag_new;   /* devices: newly declared stragglers */
    int32_t *strag_units; /* units of the declared stragglers and suspects, ascending */
    int64_t n_strag_units;
    int64_t straggler_healthy; /* declared units the aging model still calls HEALTHY */
    af_pacer_t pacer;
    double prev_sink_us;
} af_throttle_t;

/* Every rank, after its compute pass (compute_us): spends its devices' modelled throttling
 * delay and, with straggler detection on, writes each local device's compute time per block for
 * the exchange. Returns the modelled delay. */
double af_throttle(struct af_run_state *r, double compute_us);
/* Every rank: the slow events of this executed step set their units' base slowdown. */
void af_slow_events(struct af_run_state *r);

#endif
