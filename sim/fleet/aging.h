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
 * whose state or rate changes, not the fleet.
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

typedef struct af_aging {
    int64_t units;      /* D * U, the fleet */
    int64_t per_device; /* U */
    int64_t u_lo;       /* the units held here: [u_lo, u_hi) */
    int64_t u_hi;
    double *lifetime_h;   /* Weibull draw at T_ref */
    double *sudden_h;     /* the first of the unit's, its device's, its node's and its device's link
                             times (exponential; the others Weibull of aging.device_shape,
                             node_shape, link_shape)
                             draws (+inf when every rate is 0) */
    int8_t *sudden_cause; /* which of them: AF_CAUSE_SUDDEN, _DEVICE, _NODE or _LINK */
    double *temp_off_k;   /* device + unit hotspot offsets */
    double *base_age_h;   /* age at base_step, where the current linear segment starts */
    int64_t *base_step;   /* see the arithmetic above */
    double *rate_h;       /* accelerated hours per step at the unit's current load */
    double *temp_k;       /* temperature at the unit's last load (its last one alive) */
    int32_t *rate_load;   /* the load rate_h was computed for (-1: not yet) */
    int8_t *state;        /* AF_HEALTHY / AF_FADING / AF_DEAD */
    int8_t *cause;        /* of death */
    int64_t *fade_step;   /* -1 until it happens */
    int64_t *death_step;  /* -1 until it happens */
    int32_t *fading_list; /* the FADING units, ascending (a->fading of them) */
    int64_t dead;
    int64_t fading;
    af_evq_t queue;  /* each live unit with a predicted change, keyed by (its step, unit) */
    int64_t step;    /* the step the model stands at: the last one af_aging_step ran (0 before) */
    double hours;    /* hours(step) */
    int primed;      /* 0 until af_aging_start has given every unit its rate */
    int64_t touched; /* units the last step looked at: listed with a new load, due, or scripted */
} af_aging_t;

/* Draws the parameters of every unit of the fleet of `devices` devices and holds them all.
 * Allocates (every table is checked; on failure nothing stays allocated and AF_ERR_NOMEM is
 * returned with a message); call before the allocation seal. */
af_result_t af_aging_init(af_aging_t *a, const af_config_t *cfg, int64_t devices);
/* The same for the units [u_lo, u_hi) of that fleet only: what each of them does is what it
 * does in the whole-fleet model (the draws depend on the seed and the unit alone). */
af_result_t af_aging_init_range(af_aging_t *a, const af_config_t *cfg, int64_t devices,
                                int64_t u_lo, int64_t u_hi);
void af_aging_destroy(af_aging_t *a);

/* Gives every unit held its rate for the loads in unit_load and its first prediction, for a
 * first step `first_step`: the one visit of every unit the model makes, at start-up. When it
 * is not called, the first af_aging_step does it (with that step's loads). The loads that
 * change after this call must be listed to the next af_aging_step. */
void af_aging_start(af_aging_t *a, const af_config_t *cfg, int64_t first_step,
                    const int32_t *unit_load, int64_t capacity);

/* Advances to `step`, which is the previous call's step + 1 (any step for the first call).
 * unit_load holds every unit's occupied slots (indexed by global unit; a unit's load is
 * load / capacity); changed lists the units whose unit_load may differ from what it was at the
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

/* A unit's age in hours at the model's step, or at its death step once it is dead. */
double af_aging_age_h(const af_aging_t *a, int64_t unit);
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
