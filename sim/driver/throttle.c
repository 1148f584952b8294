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

/* One local unit's modelled extra time: its blocks at its slowdown (its base, and its
 * degradation when FADING, from the aging model at this step). */
static void add_unit_delay(af_run_state_t *r, int64_t u, double block_us)
{
    int64_t d = u / r->s.U;
    if (d < r->s.pl.dev_lo || d >= r->s.pl.dev_hi || r->s.unit_state[u] == AF_DEAD) {
        return;
    }
    double deg = af_aging_degradation(&r->health.aging, &r->s.cfg, u);
    double s = af_throttle_factor(af_throttle_base(r, u), r->s.cfg.throttle_slowdown,
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
        const int fading_slowed = r->s.cfg.throttle_slowdown > 0;
        if (fading_slowed) {
            for (int64_t i = 0; i < r->health.aging.fading; ++i) {
                add_unit_delay(r, r->health.aging.fading_list[i], block_us);
            }
        }
        /* A unit counts once: a FADING one was counted above when FADING units slow down. */
        for (int64_t i = 0; i < r->thr.n_slow; ++i) {
            int64_t u = r->thr.slow_list[i];
            if (!(fading_slowed && af_aging_state(&r->health.aging, u) == AF_FADING)) {
                add_unit_delay(r, u, block_us);
            }
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

/* The index in slow_list of own unit u, or -1 when no slow event names it: a binary search of
 * slow_order (a few units at most, known at start-up). */
static int64_t slow_index(const af_run_state_t *r, int64_t u)
{
    int64_t lo = 0;
    int64_t hi = r->thr.n_slow;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        int64_t v = r->thr.slow_list[r->thr.slow_order[mid]];
        if (v == u) {
            return r->thr.slow_order[mid];
        }
        if (v < u) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return -1;
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
            int64_t at = slow_index(r, u);
            if (at >= 0) {
                r->thr.slow_base[at] = e->factor;
            }
        }
    }
}

double af_throttle_base(const af_run_state_t *r, int64_t u)
{
    int64_t i = slow_index(r, u);
    return i >= 0 ? r->thr.slow_base[i] : 1.0;
}

int64_t af_throttle_slow_bound(const af_config_t *cfg, int64_t own_lo, int64_t own_hi)
{
    int64_t n = 0;
    for (int i = 0; i < cfg->n_events; ++i) {
        const af_event_cfg_t *e = &cfg->events[i];
        for (int64_t k = e->unit_lo; e->action == AF_EVENT_SLOW && k <= e->unit_hi; ++k) {
            int64_t u = e->device * cfg->units_per_device + k;
            n += u >= own_lo && u < own_hi;
        }
    }
    return n;
}

static int cmp_key(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a;
    int64_t y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

af_result_t af_throttle_slow_init(af_run_state_t *r)
{
    const int64_t lo = r->s.own_u0;
    const int64_t hi = r->s.own_u0 + r->s.own_units;
    const int64_t bound = af_throttle_slow_bound(&r->s.cfg, lo, hi);
    const size_t cap = (size_t)(bound > 0 ? bound : 1);
    r->thr.slow_list = af_alloc(sizeof(int32_t) * cap);
    r->thr.slow_base = af_alloc(sizeof(double) * cap);
    r->thr.slow_order = af_alloc(sizeof(int32_t) * cap);
    int64_t *key = af_alloc(sizeof(int64_t) * cap); /* start-up scratch, freed below */
    if (!r->thr.slow_list || !r->thr.slow_base || !r->thr.slow_order || !key) {
        af_free(key);
        af_error_set("cannot allocate the slow events' %lld units", (long long)bound);
        return AF_ERR_NOMEM;
    }
    /* Every own unit a slow event names, in the events' order, keyed (unit, position). */
    int64_t n = 0;
    for (int i = 0; i < r->s.cfg.n_events; ++i) {
        const af_event_cfg_t *e = &r->s.cfg.events[i];
        for (int64_t k = e->unit_lo; e->action == AF_EVENT_SLOW && k <= e->unit_hi; ++k) {
            int64_t u = e->device * r->s.U + k;
            if (u >= lo && u < hi) {
                r->thr.slow_list[n] = (int32_t)u;
                key[n] = (u - lo) << 32 | n;
                n++;
            }
        }
    }
    qsort(key, (size_t)n, sizeof key[0], cmp_key);
    /* Each unit's first position is kept (slow_order marks it for the moment), the list closed
     * up in its order, and the kept positions' new indices listed by ascending unit. */
    for (int64_t i = 0; i < n; ++i) {
        r->thr.slow_order[i] = 0;
    }
    for (int64_t j = 0; j < n; ++j) {
        if (j == 0 || key[j] >> 32 != key[j - 1] >> 32) {
            r->thr.slow_order[key[j] & 0xffffffff] = 1;
        }
    }
    int64_t m = 0;
    for (int64_t i = 0; i < n; ++i) {
        if (r->thr.slow_order[i]) {
            r->thr.slow_order[i] = (int32_t)m;
            r->thr.slow_list[m++] = r->thr.slow_list[i];
        } else {
            r->thr.slow_order[i] = -1;
        }
    }
    int64_t t = 0;
    for (int64_t j = 0; j < n; ++j) {
        int32_t at = r->thr.slow_order[key[j] & 0xffffffff]; /* kept: a unit's first */
        if (at >= 0) {
            key[t++] = at;
        }
    }
    for (int64_t i = 0; i < m; ++i) {
        r->thr.slow_order[i] = (int32_t)key[i];
        r->thr.slow_base[i] = 1.0;
    }
    r->thr.n_slow = m;
    af_free(key);
    return AF_OK;
}
