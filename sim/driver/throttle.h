/* agefence driver, throttling (throttle.c): the modelled slowdown of this rank's own units —
 * FADING degradation, scripted slow events, spikes — spent as a busy wait after the compute
 * pass, the per-device times straggler detection reads, and pacing. */
#ifndef AF_DRIVER_THROTTLE_H
#define AF_DRIVER_THROTTLE_H

#include <stdint.h>

#include "../../common/af_result.h"
#include "../fleet/straggler.h"
#include "../io/config.h"

struct af_run_state;

/* Throttling (sim/fleet/straggler.h) of this rank's own units, straggler detection (rank 0)
 * and pacing. */
typedef struct af_throttle {
    /* The own units a slow event names, known at start-up: nothing per own unit is kept (a
     * FADING unit's degradation comes from the aging model, af_aging_degradation). */
    int32_t *slow_list;  /* own units ever named by a slow event (global numbers), once each, in
                            the events' order */
    double *slow_base;   /* their slowdown, set by the slow events (1 before) */
    int32_t *slow_order; /* indices into slow_list by ascending unit (af_throttle_base) */
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
/* The base slowdown of own unit u: what the slow events set (1 when none names it). */
double af_throttle_base(const struct af_run_state *r, int64_t u);
/* Start-up: the own units the slow events name, once each, and their lookup (allocates). */
af_result_t af_throttle_slow_init(struct af_run_state *r);
/* The entries af_throttle_slow_init allocates for the own units [own_lo, own_hi): every own unit
 * a slow event names, a unit named twice counted twice. */
int64_t af_throttle_slow_bound(const af_config_t *cfg, int64_t own_lo, int64_t own_hi);

#endif
