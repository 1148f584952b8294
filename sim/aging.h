/* agefence aging model (DESIGN "Aging model"): synthetic wear-out of every unit of the fleet.
 *
 * Each unit u draws, from counters keyed by (seed, unit) alone, a Weibull lifetime L_u (hours of
 * service at the reference temperature), an exponential time to sudden failure S_u (hours of
 * wall service), and fixed temperature offsets of its device and itself. Every step it ages by
 *   age += sim_hours_per_step * AF,  AF = exp(Ea/kB * (1/T_ref - 1/T)),
 *   T = T_ambient + hotspot(device) + hotspot(unit) + load_delta * load,
 * where load is the unit's occupied-slot fraction: survivors that absorb moved work run hotter
 * and age faster. A unit is FADING once age >= (1 - w) L (its outputs may be corrupted, with a
 * probability per element rising linearly to p_max at death) and DEAD once age >= L, or at
 * S_u, or when a scripted event kills it. Nothing here depends on the number of ranks. */
#ifndef AF_AGING_H
#define AF_AGING_H

#include <stdint.h>

#include "../common/af_result.h"
#include "config.h"

enum { AF_HEALTHY = 0, AF_FADING = 1, AF_DEAD = 2 };
enum {
    AF_CAUSE_NONE = 0,
    AF_CAUSE_WEAROUT = 1,
    AF_CAUSE_SUDDEN = 2,
    AF_CAUSE_SCRIPTED = 3,
    AF_CAUSE_STRAGGLER = 4 /* declared a straggler: drained like a FADING unit */
};

/* A change of one unit's state in one step. */
typedef struct af_health_change {
    int32_t unit; /* global unit index device * U + unit */
    int8_t state; /* AF_FADING or AF_DEAD */
    int8_t cause; /* AF_CAUSE_* */
} af_health_change_t;

typedef struct af_aging {
    int64_t units;      /* D * U */
    int64_t per_device; /* U */
    double *lifetime_h; /* Weibull draw at T_ref */
    double *sudden_h;   /* exponential draw; +inf when the rate is 0 */
    double *temp_off_k; /* device + unit hotspot offsets */
    double *age_h;      /* accumulated, temperature-accelerated age */
    double *temp_k;     /* temperature in the last step */
    double *rate_h;     /* accelerated hours per step at the unit's current load */
    int32_t *rate_load; /* the load rate_h was computed for (-1: not yet) */
    int8_t *state;      /* AF_HEALTHY / AF_FADING / AF_DEAD */
    int8_t *cause;      /* of death */
    int64_t *fade_step; /* -1 until it happens */
    int64_t *death_step;
    int32_t *fading_list; /* the FADING units, ascending (a->fading of them) */
    int64_t dead;
    int64_t fading;
    double hours; /* simulated service hours so far */
} af_aging_t;

/* Draws every unit's parameters. Allocates; call before the allocation seal. */
af_result_t af_aging_init(af_aging_t *a, const af_config_t *cfg, int64_t devices);
void af_aging_destroy(af_aging_t *a);

/* Advances one step: ages every live unit with its load (occupied slots / capacity, from
 * unit_load), applies the scripted events of `step`, and writes the units that changed state
 * into changes (at most a->units). Returns the number of changes. */
int64_t af_aging_step(af_aging_t *a, const af_config_t *cfg, int64_t step, const int32_t *unit_load,
                      int64_t capacity, af_health_change_t *changes);

/* How far a FADING unit is through its precursor window: 0 at the fade, 1 at death (0 unless
 * FADING). Drives the throttling slowdown. */
double af_aging_degradation(const af_aging_t *a, const af_config_t *cfg, int64_t unit);
/* Corruption probability per output element of a unit now (0 unless FADING). */
double af_aging_p_corrupt(const af_aging_t *a, const af_config_t *cfg, int64_t unit);

/* Arrhenius acceleration factor at temperature t_k. */
double af_arrhenius(double ea_ev, double t_ref_k, double t_k);

#endif
