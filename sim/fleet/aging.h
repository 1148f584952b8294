/* agefence aging model (DESIGN "Aging model"): synthetic wear-out of every unit of the fleet.
 *
 * Each unit u draws, from counters keyed by (seed, unit) alone, a Weibull lifetime L_u (hours of
 * service at the reference temperature), an exponential time to sudden failure S_u (hours of
 * wall service), and fixed temperature offsets of its device and itself. Every step it ages by
 *   rate = sim_hours_per_step * AF,  AF = exp(Ea/kB * (1/T_ref - 1/T)),
 *   T = T_ambient + hotspot(device) + hotspot(unit) + load_delta * load,
 * where load is the unit's occupied-slot fraction: survivors that absorb moved work run hotter
 * and age faster. A unit is FADING once age >= (1 - w) L (its outputs may be corrupted, with a
 * probability per element rising linearly to p_max at death) and DEAD once age >= L, or once the
 * simulated hours reach S_u, or when a scripted event kills it. Nothing here depends on the
 * number of ranks.
 *
 * The arithmetic, which defines the model bit for bit: between two changes of its rate a unit
 * ages along a linear segment (base_age_h, base_step, rate_h), and at step s
 *   age(s)   = base_age_h + rate_h * (double)(s - base_step)
 *   hours(s) = (double)s * sim_hours_per_step.
 * A load change seen at step s starts a new segment at age(s - 1) (before that step's ageing);
 * a scripted fade at step s starts one at (1 - w) L with base_step = s. Step s checks, for every
 * live unit, sudden death (hours(s) >= S), then wear-out death (age(s) >= L), then, for a
 * HEALTHY unit, the fade (age(s) >= (1 - w) L), and then applies the scripted events of s.
 *
 * The model is event-driven: it never visits every unit in a step. It keeps, for each live
 * unit, the first step at which that check would change its state (computed exactly from the
 * closed form, so it is the step a visit of every unit every step would find), in a priority
 * queue (sim/fleet/evq.h); a step re-predicts the units whose load changed (the caller passes their
 * list), pops the units due at it, and applies the scripted events. Its cost follows the units
 * whose state or rate changes, not the fleet. A change predicted after the last step a run can
 * reach (af_config_last_tick) is not queued: the queue holds what can happen in this run, and
 * a unit leaves it or joins it again when its load changes.
 *
 * The model holds the units [u_lo, u_hi); its per-unit tables are indexed by u - u_lo (the
 * whole fleet on rank 0 today: u_lo = 0, so a->state[u] is unit u's state), while unit numbers
 * in lists (changes, fading_list, the changed-units list) are global. */
#ifndef AF_AGING_H
#define AF_AGING_H

#include <stdint.h>

#include "../../common/af_result.h"
#include "../../kernels/af_burgers.h"
#include "../io/config.h"
#include "evq.h"

enum { AF_HEALTHY = 0, AF_FADING = 1, AF_DEAD = 2 };
enum {
    AF_CAUSE_NONE = 0,
    AF_CAUSE_WEAROUT = 1,
    AF_CAUSE_SUDDEN = 2,
    AF_CAUSE_SCRIPTED = 3,
    AF_CAUSE_DEVICE = 4,    /* its whole device was lost (aging.device_rate_per_hour) */
    AF_CAUSE_NODE = 5,      /* its whole node was lost (aging.node_rate_per_hour) */
    AF_CAUSE_STRAGGLER = 6, /* declared a straggler: drained like a FADING unit (never in /units) */
    AF_CAUSE_SUSPECT = 7,   /* quarantined: fenced recovery.quarantine_after times while HEALTHY,
                               drained like a FADING unit (/units/quarantined_step) */
    AF_CAUSE_LINK = 8,      /* its device's fabric link was lost (aging.link_rate_per_hour): the
                               device lives on, out of the job */
    AF_CAUSE_LINK_DOWN = 9  /* the same by a scripted link_down event */
};

/* A change of one unit's state in one step. time_h is when it happened, in simulated hours, in
 * (hours(step - 1), hours(step)]: a sudden death's (or its device's, node's or link's loss's)
 * drawn time; a wear-out death's or fade's, the hour the unit's age reached its lifetime or
 * fade threshold on the step's linear segment; a scripted change's, the step's hours. The run
 * logs it in /interruptions (common/log_schema.h); nothing in the run's state depends on it. */
typedef struct af_health_change {
    int32_t unit; /* global unit index device * U + unit */
    int8_t state; /* AF_FADING or AF_DEAD */
    int8_t cause; /* AF_CAUSE_* */
    double time_h;
} af_health_change_t;

/* What a prediction or a check of a unit reads but its lifetime and state: its current linear
 * segment of age (see the arithmetic above), the load its rate is for, and its time to sudden
 * failure. 32 bytes, one line: a check of a unit whose table entries the step's other phases have
 * evicted brings back its segment, its lifetime and its state. */
typedef struct af_aging_seg {
    double base_age_h; /* age at base_step */
    double rate_h;     /* accelerated hours per step at the unit's load (0 before its first) */
    double sudden_h;   /* af_aging_sudden_h: drawn at start-up, kept so that checks and
                          predictions draw nothing */
    int32_t base_step;
    int32_t rate_load; /* the load the rate is for (-1: none yet) */
} af_aging_seg_t;

/* The model of the units [u_lo, u_hi). A step that finds nothing to do (no load listed, nothing
 * due, no scripted event) reads and writes only the first 64 bytes, which the struct's alignment
 * keeps on one cache line: its other phases having streamed the shard, that line and the code are
 * all the step brings back from memory, at any fleet size. */
typedef struct af_aging {
    _Alignas(64) int64_t step; /* the step the model stands at: the last one af_aging_step ran (0
                                  before) */
    double hours;              /* hours(step) */
    int64_t touched; /* units the last step looked at: listed with a new load, due, or scripted */
    int64_t next_event; /* the first step after `step` with a scripted event that changes a unit's
                           health (INT64_MAX: none; INT64_MIN until af_aging_start) */
    int64_t fading;     /* FADING units held */
    double dt_h;        /* sim_hours_per_step (the clock) */
    af_evq_t queue;     /* each live unit with a predicted change up to last_step, keyed by (its
                           step, unit); queue.top, its least key, is the line's seventh word */
    int64_t primed;     /* 0 until af_aging_start has given every unit its rate */
    int64_t dead;
    int64_t units;      /* D * U, the fleet */
    int64_t per_device; /* U */
    int64_t u_lo;       /* the units held here: [u_lo, u_hi) */
    int64_t u_hi;
    int64_t last_step; /* af_config_last_tick: no step after it is asked about, so a change
                          predicted later is not queued */
    int64_t capacity;  /* slots per unit, for the loads' fractions (af_aging_start's) */
    /* Per unit held, indexed by u - u_lo. The temperature offsets, a function of (seed, unit)
     * needed only when a unit's load changes, are drawn again there, not kept. */
    af_aging_seg_t *seg;
    double *lifetime_h;   /* Weibull draw at T_ref (kept: every check compares with it) */
    int8_t *sudden_cause; /* which draw sudden_h is: AF_CAUSE_SUDDEN, _DEVICE, _NODE or _LINK */
    double *temp_k;       /* NULL while the model runs (af_aging_temp_k says a unit's
                             temperature); af_aging_columns fills it for /units at the end */
    int8_t *state;        /* AF_HEALTHY / AF_FADING / AF_DEAD */
    int8_t *cause;        /* of death */
    int32_t *fade_step;   /* -1 until it happens (steps fit in 32 bits: AF_TICK_MAX) */
    int32_t *fading_list; /* the FADING units, ascending (a->fading of them) */
} af_aging_t;

/* Draws the parameters of every unit of the fleet of `devices` devices and holds them all.
 * Allocates (every table is checked; on failure nothing stays allocated and AF_ERR_NOMEM is
 * returned with a message); call before the allocation seal. The model answers steps up to
 * af_config_last_tick(cfg). */
af_result_t af_aging_init(af_aging_t *a, const af_config_t *cfg, int64_t devices);
/* The same for the units [u_lo, u_hi) of that fleet only: what each of them does is what it
 * does in the whole-fleet model (the draws depend on the seed and the unit alone). */
af_result_t af_aging_init_range(af_aging_t *a, const af_config_t *cfg, int64_t devices,
                                int64_t u_lo, int64_t u_hi);
void af_aging_destroy(af_aging_t *a);
/* The bytes af_aging_init_range allocates for n units. */
int64_t af_aging_bytes(int64_t n);

/* Gives every unit held its rate for the loads in unit_load and its first prediction, for a
 * first step `first_step`: the one visit of every unit the model makes, at start-up. When it
 * is not called, the first af_aging_step does it (with that step's loads). The loads that
 * change after this call must be listed to the next af_aging_step. */
void af_aging_start(af_aging_t *a, const af_config_t *cfg, int64_t first_step,
                    const int32_t *unit_load, int64_t capacity);

/* Advances to `step`, which is the previous call's step + 1 (any step for the first call), and
 * at most af_config_last_tick(cfg). unit_load holds every unit's occupied slots (indexed by
 * global unit; a unit's load is load / capacity, capacity the same at every call and at
 * af_aging_start); changed lists the units whose unit_load may differ from what it was at the
 * previous call, or since af_aging_start (n_changed of them, global indices, duplicates and
 * units outside the range allowed): the model reads unit_load only for those (and for all its
 * units when it has to start itself). A unit not listed must have the load it had then. Ages the
 * live units, applies the scripted events of `step` (to the units held), and writes the units that
 * changed state into changes (at most u_hi - u_lo plus the scripted events' units), those of the
 * ageing in ascending unit order first, then those of the events in the events' order. Returns the
 * number of changes. */
int64_t af_aging_step(af_aging_t *a, const af_config_t *cfg, int64_t step, const int32_t *unit_load,
                      const int32_t *changed, int64_t n_changed, int64_t capacity,
                      af_health_change_t *changes);

/* af_aging_step's first part, for the caller that has other work to skip as well: a step with
 * nothing to do (nothing listed, n_changed = 0; nothing due; no scripted event; the rates
 * given) advances the model to `step` and returns 1 (af_aging_step would return 0 changes); else
 * it returns 0 and the caller calls af_aging_step. Reads and writes the model's first line only. */
static inline int af_aging_step_quiet(af_aging_t *a, int64_t step, int64_t n_changed)
{
    if (n_changed != 0 || af_evq_key_step(a->queue.top) <= step || step >= a->next_event) {
        return 0;
    }
    /* hours(step) = 0 + dt * step, the clock's segment (sim/fleet/aging.c), bit for bit. */
    a->step = step;
    a->hours = 0.0 + a->dt_h * (double)step;
    a->touched = 0;
    return 1;
}

/* A unit's age in hours at the model's step, or at its death step once it is dead. */
double af_aging_age_h(const af_aging_t *a, int64_t unit);
/* A unit's state (AF_HEALTHY, AF_FADING or AF_DEAD). */
static inline int af_aging_state(const af_aging_t *a, int64_t unit)
{
    return a->state[unit - a->u_lo];
}
/* The step a unit of the model's range died at, -1 while it lives: kept in the event queue's
 * index word of the unit, which the dead leave for good (af_evq_park), not in a table of its own.
 */
static inline int64_t af_aging_death_step(const af_aging_t *a, int64_t unit)
{
    return af_evq_parked(&a->queue, unit);
}
/* A unit's time to sudden failure in hours of wall service: the first of its own exponential
 * time and its device's, node's and link's loss times (drawn from the seed and the unit alone,
 * +inf when every rate is 0), and which of them it is (*cause: AF_CAUSE_SUDDEN, _DEVICE, _NODE
 * or _LINK). */
double af_aging_sudden_h(const af_aging_t *a, int64_t unit, int *cause);
/* A unit's fixed temperature offset in kelvin: its device's hotspot and its own. */
double af_aging_temp_off_k(const af_aging_t *a, const af_config_t *cfg, int64_t unit);
/* A unit's temperature at its last load (its last one alive; T_ambient + its offset before any):
 * what new_load computed its rate at, computed again, so the same bits. */
double af_aging_temp_k(const af_aging_t *a, const af_config_t *cfg, int64_t unit);
/* The end of the run, after its last step: fills temp_k, one temperature per unit held (the
 * /units column sim/driver/verdict.c writes), in the event queue's memory, which the model no
 * longer needs: no step may follow. No allocation. */
void af_aging_columns(af_aging_t *a, const af_config_t *cfg);
/* How far a FADING unit is through its precursor window: 0 at the fade, 1 at death (0 unless
 * FADING). Drives the throttling slowdown. */
double af_aging_degradation(const af_aging_t *a, const af_config_t *cfg, int64_t unit);
/* Corruption probability per output element of a unit now (0 unless FADING). */
double af_aging_p_corrupt(const af_aging_t *a, const af_config_t *cfg, int64_t unit);

/* 1 when unit u is one of the fleet's silent (mercurial) units: drawn from (seed, unit) alone
 * with probability corruption.silent_fraction. A silent unit corrupts its outputs with
 * probability corruption.silent_p per element while it lives, with no FADING precursor and no
 * slowdown; the detectors never read this. */
int af_aging_silent(const af_config_t *cfg, int64_t unit);

/* The kernels' corruption mix of [corruption]: cumulative shares and the harm threshold. */
af_corrupt_mix_t af_corrupt_mix(const af_config_t *cfg);

/* The live units held whose rate was computed for another load than unit_load holds now: 0
 * after every step when the caller listed every changed load (a debug check, O(units)). */
int64_t af_aging_stale_loads(const af_aging_t *a, const int32_t *unit_load);

/* Arrhenius acceleration factor at temperature t_k. */
double af_arrhenius(double ea_ev, double t_ref_k, double t_k);

#endif
