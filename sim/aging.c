#include "aging.h"

#include <math.h>
#include <string.h>

#include "../kernels/af_burgers.h"
#include "../common/af_alloc.h"

#define AF_BOLTZMANN_EV 8.617333262e-5 /* eV / K */

/* Streams of the counter-based RNG, so that draws for different purposes never collide. */
enum { RNG_LIFETIME = 1, RNG_SUDDEN = 2, RNG_HOT_DEVICE = 3, RNG_HOT_UNIT = 4 };

double af_arrhenius(double ea_ev, double t_ref_k, double t_k)
{
    return exp(ea_ev / AF_BOLTZMANN_EV * (1.0 / t_ref_k - 1.0 / t_k));
}

void af_aging_destroy(af_aging_t *a)
{
    af_free(a->lifetime_h);
    af_free(a->sudden_h);
    af_free(a->temp_off_k);
    af_free(a->age_h);
    af_free(a->temp_k);
    af_free(a->rate_h);
    af_free(a->rate_load);
    af_free(a->fading_list);
    af_free(a->state);
    af_free(a->cause);
    af_free(a->fade_step);
    af_free(a->death_step);
    a->lifetime_h = NULL;
    a->sudden_h = NULL;
    a->temp_off_k = NULL;
    a->age_h = NULL;
    a->temp_k = NULL;
    a->rate_h = NULL;
    a->rate_load = NULL;
    a->fading_list = NULL;
    a->state = NULL;
    a->cause = NULL;
    a->fade_step = NULL;
    a->death_step = NULL;
}

af_result_t af_aging_init(af_aging_t *a, const af_config_t *cfg, int64_t devices)
{
    a->per_device = cfg->units_per_device;
    a->units = devices * cfg->units_per_device;
    size_t n = (size_t)a->units;
    a->lifetime_h = af_alloc(n * sizeof(double));
    a->sudden_h = af_alloc(n * sizeof(double));
    a->temp_off_k = af_alloc(n * sizeof(double));
    a->age_h = af_alloc(n * sizeof(double));
    a->temp_k = af_alloc(n * sizeof(double));
    a->rate_h = af_alloc(n * sizeof(double));
    a->rate_load = af_alloc(n * sizeof(int32_t));
    a->fading_list = af_alloc(n * sizeof(int32_t));
    a->state = af_alloc(n);
    a->cause = af_alloc(n);
    a->fade_step = af_alloc(n * sizeof(int64_t));
    a->death_step = af_alloc(n * sizeof(int64_t));
    if (!a->lifetime_h || !a->sudden_h || !a->temp_off_k || !a->age_h || !a->temp_k || !a->rate_h ||
        !a->rate_load || !a->fading_list || !a->state || !a->cause || !a->fade_step ||
        !a->death_step) {
        af_aging_destroy(a);
        af_error_set("aging: cannot allocate the state of %lld units", (long long)a->units);
        return AF_ERR_NOMEM;
    }
    uint64_t seed = (uint64_t)cfg->seed;
    for (int64_t u = 0; u < a->units; ++u) {
        int64_t d = u / a->per_device;
        /* Inverse-CDF draws; 1 - U in (0, 1] keeps the logarithms finite. */
        double x = 1.0 - af_u01(af_hash4(seed, RNG_LIFETIME, (uint64_t)u, 0));
        a->lifetime_h[u] = cfg->weibull_scale_hours * pow(-log(x), 1.0 / cfg->weibull_shape);
        double y = 1.0 - af_u01(af_hash4(seed, RNG_SUDDEN, (uint64_t)u, 0));
        a->sudden_h[u] =
            cfg->sudden_rate_per_hour > 0 ? -log(y) / cfg->sudden_rate_per_hour : INFINITY;
        a->temp_off_k[u] =
            cfg->hotspot_device_k * af_u01(af_hash4(seed, RNG_HOT_DEVICE, (uint64_t)d, 0)) +
            cfg->hotspot_unit_k * af_u01(af_hash4(seed, RNG_HOT_UNIT, (uint64_t)u, 0));
        a->fade_step[u] = -1;
        a->death_step[u] = -1;
        a->temp_k[u] = cfg->t_ambient_k + a->temp_off_k[u];
        a->rate_load[u] = -1;
    }
    return AF_OK;
}

/* The sorted list of FADING units: insert / remove (few units fade at once). */
static int64_t fading_index(const af_aging_t *a, int64_t u)
{
    int64_t lo = 0;
    int64_t hi = a->fading;
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (a->fading_list[mid] < u) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

static void change(af_aging_t *a, int64_t u, int state, int cause, int64_t step,
                   af_health_change_t *out, int64_t *n)
{
    if (state == AF_FADING) {
        if (a->state[u] != AF_HEALTHY) {
            return;
        }
        int64_t at = fading_index(a, u);
        memmove(&a->fading_list[at + 1], &a->fading_list[at],
                sizeof(int32_t) * (size_t)(a->fading - at));
        a->fading_list[at] = (int32_t)u;
        a->fading++;
        a->fade_step[u] = step;
    } else {
        if (a->state[u] == AF_DEAD) {
            return;
        }
        if (a->state[u] == AF_FADING) {
            int64_t at = fading_index(a, u);
            memmove(&a->fading_list[at], &a->fading_list[at + 1],
                    sizeof(int32_t) * (size_t)(a->fading - at - 1));
            a->fading--;
        }
        a->dead++;
        a->death_step[u] = step;
        a->cause[u] = (int8_t)cause;
    }
    a->state[u] = (int8_t)state;
    out[*n].unit = (int32_t)u;
    out[*n].state = (int8_t)state;
    out[*n].cause = (int8_t)cause;
    (*n)++;
}

int64_t af_aging_step(af_aging_t *a, const af_config_t *cfg, int64_t step, const int32_t *unit_load,
                      int64_t capacity, af_health_change_t *changes)
{
    int64_t n = 0;
    const double dt_h = cfg->sim_hours_per_step;
    a->hours += dt_h;
    const double w = cfg->fade_window;
    for (int64_t u = 0; u < a->units; ++u) {
        if (a->state[u] == AF_DEAD) {
            continue;
        }
        /* The Arrhenius factor changes only with the unit's load: recompute it then. */
        if (unit_load[u] != a->rate_load[u]) {
            double load = (double)unit_load[u] / (double)capacity;
            double t = cfg->t_ambient_k + a->temp_off_k[u] + cfg->load_delta_k * load;
            a->temp_k[u] = t;
            a->rate_h[u] = dt_h * af_arrhenius(cfg->ea_ev, cfg->t_ref_k, t);
            a->rate_load[u] = unit_load[u];
        }
        a->age_h[u] += a->rate_h[u];
        if (a->hours >= a->sudden_h[u]) {
            change(a, u, AF_DEAD, AF_CAUSE_SUDDEN, step, changes, &n);
        } else if (a->age_h[u] >= a->lifetime_h[u]) {
            change(a, u, AF_DEAD, AF_CAUSE_WEAROUT, step, changes, &n);
        } else if (a->state[u] == AF_HEALTHY && a->age_h[u] >= (1.0 - w) * a->lifetime_h[u]) {
            change(a, u, AF_FADING, AF_CAUSE_WEAROUT, step, changes, &n);
        }
    }
    for (int i = 0; i < cfg->n_events; ++i) {
        const af_event_cfg_t *e = &cfg->events[i];
        if (e->step != step) {
            continue;
        }
        for (int64_t k = e->unit_lo; k <= e->unit_hi; ++k) {
            int64_t u = e->device * a->per_device + k;
            if (e->action == AF_EVENT_KILL) {
                change(a, u, AF_DEAD, AF_CAUSE_SCRIPTED, step, changes, &n);
            } else if (e->action == AF_EVENT_FADE && a->state[u] == AF_HEALTHY) {
                /* A scripted fade starts the precursor window now; death follows naturally. */
                a->age_h[u] = (1.0 - w) * a->lifetime_h[u];
                change(a, u, AF_FADING, AF_CAUSE_SCRIPTED, step, changes, &n);
            }
        }
    }
    return n;
}

double af_aging_degradation(const af_aging_t *a, const af_config_t *cfg, int64_t u)
{
    if (a->state[u] != AF_FADING) {
        return 0.0;
    }
    double w = cfg->fade_window * a->lifetime_h[u];
    double start = a->lifetime_h[u] - w;
    double frac = w > 0 ? (a->age_h[u] - start) / w : 1.0;
    return frac < 0 ? 0 : frac > 1 ? 1 : frac;
}

double af_aging_p_corrupt(const af_aging_t *a, const af_config_t *cfg, int64_t u)
{
    if (a->state[u] != AF_FADING) {
        return 0.0;
    }
    /* Never zero inside the window: a fading unit is already unreliable. */
    return cfg->p_max * (0.1 + 0.9 * af_aging_degradation(a, cfg, u));
}
