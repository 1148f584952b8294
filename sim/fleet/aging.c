#include "aging.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "../../kernels/af_burgers.h"
#include "../../common/af_alloc.h"
#include "../../common/percentile.h"

#define AF_BOLTZMANN_EV 8.617333262e-5 /* eV / K */

/* What a step without events reads of the model (af_aging_step) is on its first line. */
_Static_assert(offsetof(af_aging_t, queue) + offsetof(af_evq_t, top) + sizeof(uint64_t) <= 64 &&
                   offsetof(af_aging_t, next_event) < 64 && offsetof(af_aging_t, dt_h) < 64,
               "the fields of a quiet step are on the model's first cache line");

/* Streams of the counter-based RNG, so that draws for different purposes never collide. */
enum {
    RNG_LIFETIME = 1,
    RNG_SUDDEN = 2,
    RNG_HOT_DEVICE = 3,
    RNG_HOT_UNIT = 4,
    RNG_DEVICE_LOSS = 6,
    RNG_NODE_LOSS = 7,
    RNG_LINK_LOSS = 8,
    RNG_SILENT = 0x511e
};

/* An exponential time (hours) from a counter draw: +inf when the rate is 0. */
static double exp_hours(uint64_t seed, int stream, uint64_t id, double rate)
{
    double y = 1.0 - af_u01(af_hash4(seed, (uint64_t)stream, id, 0));
    return rate > 0 ? -log(y) / rate : INFINITY;
}

/* A Weibull time (hours) of shape k and scale 1/rate from the same counter draw: F(t) = 1 -
 * exp(-(rate t)^k), by the inverse CDF (-log(1 - U))^(1/k) / rate. Shape 1 is exp_hours bit for
 * bit (no pow), so a scenario that leaves the shapes at 1 draws what it drew before them. */
static double weibull_hours(uint64_t seed, int stream, uint64_t id, double rate, double k)
{
    if (k == 1.0 || !(rate > 0)) {
        return exp_hours(seed, stream, id, rate);
    }
    double y = 1.0 - af_u01(af_hash4(seed, (uint64_t)stream, id, 0));
    return pow(-log(y), 1.0 / k) / rate;
}

/* No step: a threshold the closed form never reaches (a rate of zero, or NaN). */
#define NEVER INT64_MAX

double af_arrhenius(double ea_ev, double t_ref_k, double t_k)
{
    return exp(ea_ev / AF_BOLTZMANN_EV * (1.0 / t_ref_k - 1.0 / t_k));
}

/* A linear segment v(s) = a + b * (double)(s - off), the shape of both clocks of the model:
 * a unit's age (base_age_h, rate_h, base_step) and the simulated hours (0, dt, 0), since
 * 0 + dt * (double)s is (double)s * dt bit for bit. */
typedef struct segment {
    double a;
    double b;
    int64_t off;
} segment_t;

static double seg_at(segment_t g, int64_t s)
{
    return g.a + g.b * (double)(s - g.off);
}

static int reached(segment_t g, double thr, int64_t s)
{
    return seg_at(g, s) >= thr;
}

/* The first step s >= from with v(s) >= thr, exactly as evaluating v at every step would find
 * it: NEVER when no step does, `limit` (> from) when none does before it: a crossing after the
 * run's last step is not looked for.
 * v is non-decreasing in s for b >= 0 (conversion, product and sum round monotonically), so the
 * division only gives a first guess, which a galloping search and a bisection on the exact
 * expression correct (two evaluations when the guess is right, as it nearly always is). */
static int64_t first_step(segment_t g, double thr, int64_t from, int64_t limit)
{
    if (reached(g, thr, from)) {
        return from;
    }
    if (!(g.b > 0.0) || !(g.b < INFINITY) || isnan(thr) || isnan(g.a)) {
        return NEVER; /* v stays where it is (or is NaN): not reached at from, never reached */
    }
    double est = (double)g.off + ceil((thr - g.a) / g.b);
    int64_t guess = limit;
    if (est < (double)limit) {
        guess = est > (double)from ? (int64_t)est : from + 1;
    }
    int64_t lo = from; /* not reached at lo */
    int64_t hi;        /* reached at hi */
    if (reached(g, thr, guess)) {
        hi = guess;
        for (int64_t d = 1; hi - d > lo; d *= 2) {
            if (!reached(g, thr, hi - d)) {
                lo = hi - d;
                break;
            }
            hi -= d;
        }
    } else {
        if (guess == limit) {
            return limit;
        }
        lo = guess;
        for (int64_t d = 1;; d *= 2) {
            if (lo + d >= limit) {
                if (!reached(g, thr, limit)) {
                    return limit;
                }
                hi = limit;
                break;
            }
            if (reached(g, thr, lo + d)) {
                hi = lo + d;
                break;
            }
            lo += d;
        }
    }
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (reached(g, thr, mid)) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    return hi;
}

static segment_t age_segment(const af_aging_t *a, int64_t k)
{
    segment_t g = {a->seg[k].base_age_h, a->seg[k].rate_h, a->seg[k].base_step};
    return g;
}

static segment_t hours_segment(const af_config_t *cfg)
{
    segment_t g = {0.0, cfg->sim_hours_per_step, 0};
    return g;
}

static double fade_threshold(const af_aging_t *a, const af_config_t *cfg, int64_t k)
{
    return (1.0 - cfg->fade_window) * a->lifetime_h[k];
}

/* Unit u's draw of its time to sudden failure and its cause (af_aging_sudden_h). */
static double draw_sudden(const af_aging_t *a, const af_config_t *cfg, int64_t u, int *cause)
{
    /* A unit dies suddenly at the first of its own exponential time, its device's and its
     * node's: every unit of a device (a node) draws the same device (node) time, so they die
     * in the same step. Ties go to the larger domain. */
    uint64_t seed = (uint64_t)cfg->seed;
    int64_t d = u / a->per_device;
    int64_t node = d / cfg->devices_per_node;
    double su = exp_hours(seed, RNG_SUDDEN, (uint64_t)u, cfg->sudden_rate_per_hour);
    double sd = weibull_hours(seed, RNG_DEVICE_LOSS, (uint64_t)d, cfg->device_rate_per_hour,
                              cfg->device_shape);
    double sn = weibull_hours(seed, RNG_NODE_LOSS, (uint64_t)node, cfg->node_rate_per_hour,
                              cfg->node_shape);
    /* The link's loss comes after the others in a tie: a device or node lost loses its link
     * with it. */
    double sl =
        weibull_hours(seed, RNG_LINK_LOSS, (uint64_t)d, cfg->link_rate_per_hour, cfg->link_shape);
    double h = su;
    int c = AF_CAUSE_SUDDEN;
    if (sl < h) {
        h = sl;
        c = AF_CAUSE_LINK;
    }
    if (sd <= h) {
        h = sd;
        c = AF_CAUSE_DEVICE;
    }
    if (sn <= h) {
        h = sn;
        c = AF_CAUSE_NODE;
    }
    *cause = c;
    return h;
}

double af_aging_sudden_h(const af_aging_t *a, int64_t u, int *cause)
{
    *cause = a->sudden_cause[u - a->u_lo];
    return a->seg[u - a->u_lo].sudden_h;
}

/* Unit u's temperature under `load` blocks of `capacity` slots: what its rate follows
 * (new_load) and what /units reports (af_aging_temp_k). */
static double load_temp_k(const af_aging_t *a, const af_config_t *cfg, int64_t u, int32_t load,
                          int64_t capacity)
{
    double frac = (double)load / (double)capacity;
    return cfg->t_ambient_k + af_aging_temp_off_k(a, cfg, u) + cfg->load_delta_k * frac;
}

double af_aging_temp_k(const af_aging_t *a, const af_config_t *cfg, int64_t u)
{
    const af_aging_seg_t *g = &a->seg[u - a->u_lo];
    if (g->rate_load < 0) {
        return cfg->t_ambient_k + af_aging_temp_off_k(a, cfg, u);
    }
    return load_temp_k(a, cfg, u, g->rate_load, a->capacity);
}

void af_aging_columns(af_aging_t *a, const af_config_t *cfg)
{
    /* The heap holds a key of 8 bytes for every unit of the range: as many doubles. The queue
     * is emptied, so that nothing reads its keys again. */
    double *t = (double *)(void *)a->queue.heap;
    for (int64_t k = 0; k < a->u_hi - a->u_lo; ++k) {
        t[k] = af_aging_temp_k(a, cfg, a->u_lo + k);
    }
    a->queue.n = 0;
    a->queue.top = AF_EVQ_NONE;
    a->temp_k = t;
}

double af_aging_temp_off_k(const af_aging_t *a, const af_config_t *cfg, int64_t u)
{
    uint64_t seed = (uint64_t)cfg->seed;
    int64_t d = u / a->per_device;
    return cfg->hotspot_device_k * af_u01(af_hash4(seed, RNG_HOT_DEVICE, (uint64_t)d, 0)) +
           cfg->hotspot_unit_k * af_u01(af_hash4(seed, RNG_HOT_UNIT, (uint64_t)u, 0));
}

/* The first step >= from at which the check of a live unit (index k) changes its state, NEVER,
 * or a step after the last one. Only the unit's own segment and draws enter, so the prediction
 * stays valid until its rate changes or an event moves its age. */
static int64_t predict(const af_aging_t *a, const af_config_t *cfg, int64_t k, int64_t from)
{
    if (from > a->last_step) {
        return NEVER;
    }
    const int64_t limit = a->last_step + 1;
    segment_t g = age_segment(a, k);
    int64_t next = first_step(hours_segment(cfg), a->seg[k].sudden_h, from, limit);
    int64_t die = first_step(g, a->lifetime_h[k], from, limit);
    next = die < next ? die : next;
    if (a->state[k] == AF_HEALTHY) {
        int64_t fade = first_step(g, fade_threshold(a, cfg, k), from, limit);
        next = fade < next ? fade : next;
    }
    return next;
}

/* Queues the unit at index k at its next change from `from`, or takes it out of the queue when
 * it has none up to the last step. */
static void requeue(af_aging_t *a, const af_config_t *cfg, int64_t k, int64_t from)
{
    int64_t s = predict(a, cfg, k, from);
    if (s > a->last_step) {
        af_evq_remove(&a->queue, a->u_lo + k);
    } else {
        af_evq_set(&a->queue, a->u_lo + k, s);
    }
}

void af_aging_destroy(af_aging_t *a)
{
    af_free(a->seg);
    af_free(a->lifetime_h);
    af_free(a->sudden_cause);
    af_free(a->state);
    af_free(a->cause);
    af_free(a->fade_step);
    af_free(a->fading_list);
    af_evq_destroy(&a->queue);
    a->seg = NULL;
    a->lifetime_h = NULL;
    a->sudden_cause = NULL;
    a->temp_k = NULL; /* the queue's memory (af_aging_columns), freed with it */
    a->state = NULL;
    a->cause = NULL;
    a->fade_step = NULL;
    a->fading_list = NULL;
}

int64_t af_aging_bytes(int64_t n)
{
    return n * (int64_t)(sizeof(af_aging_seg_t) + sizeof(double) + 3 + 2 * sizeof(int32_t)) +
           af_evq_bytes(n);
}

af_result_t af_aging_init(af_aging_t *a, const af_config_t *cfg, int64_t devices)
{
    return af_aging_init_range(a, cfg, devices, 0, devices * cfg->units_per_device);
}

af_result_t af_aging_init_range(af_aging_t *a, const af_config_t *cfg, int64_t devices,
                                int64_t u_lo, int64_t u_hi)
{
    memset(a, 0, sizeof *a);
    a->per_device = cfg->units_per_device;
    a->units = devices * cfg->units_per_device;
    a->u_lo = u_lo;
    a->u_hi = u_hi;
    a->last_step = af_config_last_tick(cfg);
    a->dt_h = cfg->sim_hours_per_step;
    a->next_event = INT64_MIN; /* no step is quiet before the first rates (af_aging_start) */
    a->queue.top = AF_EVQ_NONE;
    if (u_lo < 0 || u_hi < u_lo || u_hi > a->units) {
        af_error_set("aging: the units [%lld, %lld) are not a range of the %lld units",
                     (long long)u_lo, (long long)u_hi, (long long)a->units);
        return AF_ERR_USAGE;
    }
    if (a->last_step > AF_EVQ_STEP_MAX) {
        af_error_set("aging: a run of %lld steps is longer than the model's %lld",
                     (long long)a->last_step, (long long)AF_EVQ_STEP_MAX);
        return AF_ERR_USAGE;
    }
    size_t n = (size_t)(u_hi - u_lo);
    a->seg = af_alloc(n * sizeof(af_aging_seg_t));
    a->lifetime_h = af_alloc(n * sizeof(double));
    a->sudden_cause = af_alloc(n);
    a->state = af_alloc(n);
    a->cause = af_alloc(n);
    a->fade_step = af_alloc(n * sizeof(int32_t));
    a->fading_list = af_alloc(n * sizeof(int32_t));
    if (!a->seg || !a->lifetime_h || !a->sudden_cause || !a->state || !a->cause || !a->fade_step ||
        !a->fading_list) {
        af_aging_destroy(a);
        af_error_set("aging: cannot allocate the state of %lld units", (long long)n);
        return AF_ERR_NOMEM;
    }
    af_result_t rc = af_evq_init(&a->queue, u_lo, u_hi);
    if (rc != AF_OK) {
        af_aging_destroy(a);
        return rc;
    }
    uint64_t seed = (uint64_t)cfg->seed;
    for (int64_t u = u_lo; u < u_hi; ++u) {
        int64_t k = u - u_lo;
        /* Inverse-CDF draws; 1 - U in (0, 1] keeps the logarithms finite. */
        double x = 1.0 - af_u01(af_hash4(seed, RNG_LIFETIME, (uint64_t)u, 0));
        a->lifetime_h[k] = cfg->weibull_scale_hours * pow(-log(x), 1.0 / cfg->weibull_shape);
        int cause = 0;
        a->seg[k].sudden_h = draw_sudden(a, cfg, u, &cause);
        a->sudden_cause[k] = (int8_t)cause;
        a->fade_step[k] = -1;
        a->seg[k].rate_load = -1;
    }
    return AF_OK;
}

static void change(af_aging_t *a, int64_t u, int state, int cause, int64_t step, double time_h,
                   af_health_change_t *out, int64_t *n)
{
    int64_t k = u - a->u_lo;
    if (state == AF_FADING) {
        if (a->state[k] != AF_HEALTHY) {
            return;
        }
        int64_t at = af_lower_bound_i32(a->fading_list, a->fading, u);
        memmove(&a->fading_list[at + 1], &a->fading_list[at],
                sizeof(int32_t) * (size_t)(a->fading - at));
        a->fading_list[at] = (int32_t)u;
        a->fading++;
        a->fade_step[k] = (int32_t)step;
    } else {
        if (a->state[k] == AF_DEAD) {
            return;
        }
        if (a->state[k] == AF_FADING) {
            int64_t at = af_lower_bound_i32(a->fading_list, a->fading, u);
            memmove(&a->fading_list[at], &a->fading_list[at + 1],
                    sizeof(int32_t) * (size_t)(a->fading - at - 1));
            a->fading--;
        }
        a->dead++;
        a->cause[k] = (int8_t)cause;
        /* The dead neither age nor change: out of the queue for good, their death step kept in
         * their index word there (af_aging_death_step). */
        af_evq_park(&a->queue, u, (int32_t)step);
    }
    a->state[k] = (int8_t)state;
    out[*n].unit = (int32_t)u;
    out[*n].state = (int8_t)state;
    out[*n].cause = (int8_t)cause;
    out[*n].time_h = time_h;
    (*n)++;
}

/* A new load for the live unit at index k, seen at `step`: the segment so far ends at the age
 * of step - 1, and the new one runs at the Arrhenius rate of the new temperature. */
static void new_load(af_aging_t *a, const af_config_t *cfg, int64_t k, int32_t load,
                     int64_t capacity, int64_t step)
{
    af_aging_seg_t *g = &a->seg[k];
    if (g->base_step != step - 1) {
        g->base_age_h = seg_at(age_segment(a, k), step - 1);
        g->base_step = (int32_t)(step - 1);
    }
    double t = load_temp_k(a, cfg, a->u_lo + k, load, capacity);
    g->rate_h = cfg->sim_hours_per_step * af_arrhenius(cfg->ea_ev, cfg->t_ref_k, t);
    g->rate_load = load;
}

/* The hour in step `step` at which the age of the unit at index k reached thr: the age is linear
 * in the step's hours between the ends of the step (the step's segment), so the crossing is
 * interpolated there; clamped to the step (a unit whose age was past thr before is due now). */
static double crossing_h(segment_t g, const af_config_t *cfg, int64_t step, double thr)
{
    double a0 = seg_at(g, step - 1);
    double a1 = seg_at(g, step);
    double h0 = seg_at(hours_segment(cfg), step - 1);
    double h1 = seg_at(hours_segment(cfg), step);
    double f = a1 > a0 ? (thr - a0) / (a1 - a0) : 1.0;
    f = f < 0.0 ? 0.0 : f > 1.0 ? 1.0 : f;
    return h0 + f * (h1 - h0);
}

/* The check of a live unit that is due at `step`: the first condition that holds decides, as
 * in the description of the model; a unit that stays alive gets its next prediction. */
static void check_unit(af_aging_t *a, const af_config_t *cfg, int64_t u, int64_t step,
                       af_health_change_t *out, int64_t *n)
{
    int64_t k = u - a->u_lo;
    segment_t g = age_segment(a, k);
    double age = seg_at(g, step);
    if (a->hours >= a->seg[k].sudden_h) {
        change(a, u, AF_DEAD, a->sudden_cause[k], step, a->seg[k].sudden_h, out, n);
        return;
    }
    if (age >= a->lifetime_h[k]) {
        change(a, u, AF_DEAD, AF_CAUSE_WEAROUT, step, crossing_h(g, cfg, step, a->lifetime_h[k]),
               out, n);
        return;
    }
    if (a->state[k] == AF_HEALTHY && age >= fade_threshold(a, cfg, k)) {
        change(a, u, AF_FADING, AF_CAUSE_WEAROUT, step,
               crossing_h(g, cfg, step, fade_threshold(a, cfg, k)), out, n);
    }
    requeue(a, cfg, k, step + 1);
}

void af_aging_start(af_aging_t *a, const af_config_t *cfg, int64_t first_step,
                    const int32_t *unit_load, int64_t capacity)
{
    a->capacity = capacity;
    for (int64_t k = 0; k < a->u_hi - a->u_lo; ++k) {
        if (a->state[k] != AF_DEAD) {
            new_load(a, cfg, k, unit_load[a->u_lo + k], capacity, first_step);
            requeue(a, cfg, k, first_step);
        }
    }
    a->primed = 1;
    a->next_event = af_config_next_event(cfg, first_step - 1, 1);
}

/* The scripted events of `step` that change the health of units held. */
static void scripted_events(af_aging_t *a, const af_config_t *cfg, int64_t step,
                            af_health_change_t *changes, int64_t *n)
{
    const double w = cfg->fade_window;
    for (int i = 0; i < cfg->n_events; ++i) {
        const af_event_cfg_t *e = &cfg->events[i];
        if (e->step != step || e->action == AF_EVENT_INTERRUPT ||
            e->action == AF_EVENT_RESET_DEVICE) {
            continue; /* an interruption, or a memory reset, changes no unit's health */
        }
        for (int64_t j = 0; j < af_event_devices(e) * (e->unit_hi - e->unit_lo + 1); ++j) {
            /* Devices [device, dev_hi], units [unit_lo, unit_hi] of each, in that order. */
            int64_t span = e->unit_hi - e->unit_lo + 1;
            int64_t u = (e->device + j / span) * a->per_device + e->unit_lo + j % span;
            if (u < a->u_lo || u >= a->u_hi) {
                continue;
            }
            int64_t k = u - a->u_lo;
            a->touched++;
            if (e->action == AF_EVENT_KILL || e->action == AF_EVENT_KILL_DEVICE ||
                e->action == AF_EVENT_KILL_NODE) {
                change(a, u, AF_DEAD, AF_CAUSE_SCRIPTED, step, a->hours, changes, n);
            } else if (e->action == AF_EVENT_LINK_DOWN) {
                change(a, u, AF_DEAD, AF_CAUSE_LINK_DOWN, step, a->hours, changes, n);
            } else if (e->action == AF_EVENT_FADE && a->state[k] == AF_HEALTHY) {
                /* A scripted fade starts the precursor window now, on a segment that starts
                 * there; death follows naturally. */
                a->seg[k].base_age_h = (1.0 - w) * a->lifetime_h[k];
                a->seg[k].base_step = (int32_t)step;
                change(a, u, AF_FADING, AF_CAUSE_SCRIPTED, step, a->hours, changes, n);
                requeue(a, cfg, k, step + 1);
            }
        }
    }
}

/* A step with something to do: new loads, units due, scripted events. */
static int64_t step_busy(af_aging_t *a, const af_config_t *cfg, int64_t step,
                         const int32_t *unit_load, const int32_t *changed, int64_t n_changed,
                         int64_t capacity, af_health_change_t *changes)
{
    int64_t n = 0;
    /* New rates first, so that the units due now are checked on the segment of this step. */
    if (!a->primed) {
        af_aging_start(a, cfg, step, unit_load, capacity);
        a->touched += a->u_hi - a->u_lo;
    } else {
        for (int64_t i = 0; i < n_changed; ++i) {
            int64_t u = changed[i];
            if (u < a->u_lo || u >= a->u_hi) {
                continue;
            }
            int64_t k = u - a->u_lo;
            a->touched++;
            if (a->state[k] == AF_DEAD || unit_load[u] == a->seg[k].rate_load) {
                continue;
            }
            new_load(a, cfg, k, unit_load[u], capacity, step);
            requeue(a, cfg, k, step);
        }
    }
    /* Every unit due now, in ascending unit order (the queue breaks ties by unit). A unit
     * checked here is queued again after this step at the earliest, so the loop ends. */
    int64_t due = 0;
    int64_t u = 0;
    while (af_evq_peek(&a->queue, &due, &u) && due <= step) {
        (void)af_evq_pop(&a->queue, &due, &u);
        a->touched++;
        check_unit(a, cfg, u, step, changes, &n);
    }
    if (step >= a->next_event) {
        scripted_events(a, cfg, step, changes, &n);
        a->next_event = af_config_next_event(cfg, step, 1);
    }
    return n;
}

int64_t af_aging_step(af_aging_t *a, const af_config_t *cfg, int64_t step, const int32_t *unit_load,
                      const int32_t *changed, int64_t n_changed, int64_t capacity,
                      af_health_change_t *changes)
{
    /* Nothing listed, nothing due, no scripted event (and the rates given: next_event is
     * INT64_MIN before af_aging_start): the step reads the model's first line and nothing else. */
    if (af_aging_step_quiet(a, step, n_changed)) {
        return 0;
    }
    a->step = step;
    a->hours = seg_at(hours_segment(cfg), step);
    a->touched = 0;
    return step_busy(a, cfg, step, unit_load, changed, n_changed, capacity, changes);
}

double af_aging_age_h(const af_aging_t *a, int64_t u)
{
    int64_t k = u - a->u_lo;
    return seg_at(age_segment(a, k), a->state[k] == AF_DEAD ? af_aging_death_step(a, u) : a->step);
}

double af_aging_degradation(const af_aging_t *a, const af_config_t *cfg, int64_t u)
{
    int64_t k = u - a->u_lo;
    if (a->state[k] != AF_FADING) {
        return 0.0;
    }
    double w = cfg->fade_window * a->lifetime_h[k];
    double start = a->lifetime_h[k] - w;
    double frac = w > 0 ? (seg_at(age_segment(a, k), a->step) - start) / w : 1.0;
    return frac < 0 ? 0 : frac > 1 ? 1 : frac;
}

int af_aging_silent(const af_config_t *cfg, int64_t unit)
{
    return cfg->silent_fraction > 0.0 && af_u01(af_hash4((uint64_t)cfg->seed, RNG_SILENT,
                                                         (uint64_t)unit, 0)) < cfg->silent_fraction;
}

af_corrupt_mix_t af_corrupt_mix(const af_config_t *cfg)
{
    af_corrupt_mix_t m;
    m.nonfinite = cfg->corrupt_nonfinite;
    m.single = m.nonfinite + cfg->corrupt_single_bit;
    m.mantissa = m.single + cfg->corrupt_multi_mantissa;
    m.harm_rel = cfg->corrupt_harm_rel;
    return m;
}

double af_aging_p_corrupt(const af_aging_t *a, const af_config_t *cfg, int64_t u)
{
    if (a->state[u - a->u_lo] != AF_FADING) {
        return 0.0;
    }
    /* Never zero inside the window: a fading unit is already unreliable. */
    return cfg->p_max * (0.1 + 0.9 * af_aging_degradation(a, cfg, u));
}

int64_t af_aging_stale_loads(const af_aging_t *a, const int32_t *unit_load)
{
    int64_t n = 0;
    for (int64_t k = 0; k < a->u_hi - a->u_lo; ++k) {
        n += a->state[k] != AF_DEAD && a->seg[k].rate_load != unit_load[a->u_lo + k];
    }
    return n;
}
