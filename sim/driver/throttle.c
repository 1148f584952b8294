/* agefence driver: throttling — the modelled slowdown of this rank's own units (a FADING
 * unit's degradation, scripted slow events, spikes) spent as a busy wait after the compute
 * pass, and the per-device compute times that straggler detection reads from the exchange. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/af_alloc.h"
#include "../../common/af_time.h"
#include "../io/backend.h"
#include "run_internal.h"
#include "../io/stop.h"

/* One local unit's modelled extra time: its blocks at its slowdown. */
static void add_unit_delay(af_run_state_t *r, int64_t u, double deg, double block_us)
{
    int64_t d = u / r->s.U;
    if (d < r->s.pl.dev_lo || d >= r->s.pl.dev_hi || r->s.unit_state[u] == AF_DEAD ||
        r->thr.unit_stamp[af_own_unit(&r->s, u)] == r->s.tick) {
        return;
    }
    int64_t k = af_own_unit(&r->s, u);
    r->thr.unit_stamp[k] = r->s.tick;
    double s = af_throttle_factor(r->thr.unit_base[k], r->s.cfg.throttle_slowdown,
                                  r->s.cfg.throttle_exponent, deg);
    r->thr.dev_delay[d - r->s.pl.dev_lo] += (double)r->s.pl.unit_load[u] * block_us * (s - 1.0);
}

/* Blocks on device d's units. */
static int64_t device_load(const af_run_state_t *r, int64_t d)
{
    int64_t load = 0;
    for (int64_t u = d * r->s.U; u < (d + 1) * r->s.U; ++u) {
        load += r->s.pl.unit_load[u];
    }
    return load;
}

/* Every rank, after its compute pass (compute_us): spends its devices' modelled throttling
 * delay as a busy wait and, with straggler detection on, writes each local device's compute
 * time per block for the exchange. Returns the modelled delay. */
double af_throttle(af_run_state_t *r, double compute_us)
{
    const int64_t nd = r->s.pl.dev_hi - r->s.pl.dev_lo;
    const int strag = r->s.cfg.straggler_detect;
    if (!r->thr.throttle_possible && !strag) {
        return 0.0;
    }
    /* No own unit FADING (with a slowdown) or slowed and no spikes: no delay to spend, and
     * without straggler detection nothing to measure. The passes below visit every local
     * device: a step with nothing slowed does not pay for them. */
    const int slowed = (r->s.cfg.throttle_slowdown > 0 && r->health.aging.fading > 0) ||
                       r->thr.n_slow > 0 || r->s.cfg.spike_rate > 0;
    if (!strag && !slowed) {
        return 0.0;
    }
    int64_t occupied = 0;
    for (int64_t d = r->s.pl.dev_lo; d < r->s.pl.dev_hi; ++d) {
        occupied += device_load(r, d);
    }
    double block_us = r->s.cfg.throttle_block_us > 0 ? r->s.cfg.throttle_block_us
                      : occupied > 0                 ? compute_us / (double)occupied
                                                     : 0.0;
    double total = 0.0;
    for (int64_t i = 0; i < nd; ++i) {
        r->thr.dev_delay[i] = 0.0;
    }
    if (r->thr.throttle_possible) {
        if (r->s.cfg.throttle_slowdown > 0) {
            for (int64_t i = 0; i < r->health.aging.fading; ++i) {
                int64_t u = r->health.aging.fading_list[i];
                add_unit_delay(r, u, r->thr.unit_deg[af_own_unit(&r->s, u)], block_us);
            }
        }
        for (int64_t i = 0; i < r->thr.n_slow; ++i) {
            int64_t u = r->thr.slow_list[i];
            add_unit_delay(r, u, r->thr.unit_deg[af_own_unit(&r->s, u)], block_us);
        }
        for (int64_t i = 0; i < nd; ++i) {
            int64_t d = r->s.pl.dev_lo + i;
            if (r->s.cfg.spike_rate > 0 && device_load(r, d) > 0) {
                r->thr.dev_delay[i] +=
                    af_spike_us((uint64_t)r->s.cfg.seed, r->s.tick, d, r->s.cfg.spike_rate,
                                r->s.cfg.spike_us, r->s.cfg.spike_sigma);
            }
            total += r->thr.dev_delay[i];
        }
    }
    double spent = af_spin_us(total);
    if (strag) {
        /* A device's time: its share of the compute pass, by blocks, plus its own delay as the
         * wait actually spent it. */
        double scale = total > 0 ? spent / total : 0.0;
        for (int64_t i = 0; i < nd; ++i) {
            int64_t d = r->s.pl.dev_lo + i;
            int64_t load = device_load(r, d);
            double x = load > 0 && occupied > 0 ? compute_us / (double)occupied +
                                                      r->thr.dev_delay[i] * scale / (double)load
                                                : 0.0;
            memcpy(&r->halo.dev_words[d], &x, sizeof x);
        }
    }
    return total;
}

/* Every rank: the slow events of this executed step set their units' base slowdown. */
void af_slow_events(af_run_state_t *r)
{
    for (int i = 0; i < r->s.cfg.n_events; ++i) {
        const af_event_cfg_t *e = &r->s.cfg.events[i];
        if (e->action != AF_EVENT_SLOW || e->step != r->s.tick) {
            continue;
        }
        for (int64_t k = e->unit_lo; k <= e->unit_hi; ++k) {
            int64_t u = e->device * r->s.U + k;
            if (u >= r->s.own_u0 && u < r->s.own_u0 + r->s.own_units) {
                r->thr.unit_base[af_own_unit(&r->s, u)] = e->factor;
            }
        }
    }
}
