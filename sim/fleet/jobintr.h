/* agefence job-level interruptions (README "The failure model"): what stops a synchronous job
 * without losing hardware: a software bug, a network switch or cable, a NIC, an NCCL watchdog
 * timeout, a silent data corruption found, an external dependency (the Llama 3 405B record's
 * causes; common/log_schema.h lists them from AF_INTR_FIRST_JOB). They kill no unit and move no
 * block: the run logs them, and the report counts them and charges them in its goodput.
 *
 * Each cause c strikes at its grain (the job, each node, or each device) at the rate
 * interrupt.<key> per hour of that grain: a Poisson process. The superposition over the grain's
 * N members is one Poisson process of rate N x rate whose every event strikes a member chosen
 * uniformly, so the k-th interruption of cause c (k = 0, 1, ...) comes at
 *   t_k = t_{k-1} + E_k / (N rate),  E_k = -log(1 - U(seed, c, k, 0)),  t_{-1} = 0,
 * on member floor(U(seed, c, k, 1) N), from counters keyed by the seed, the cause and k alone:
 * the same on any number of ranks, at a cost that follows the interruptions, not the fleet.
 * Step s takes every interruption with t_k <= hours(s) = s x sim_hours_per_step (the clock of
 * the aging model) not taken before, after the scripted interrupt events of s in their order.
 *
 * The members are the job (1), the nodes, ceil(devices / devices_per_node) of them (a trailing
 * node of fewer devices is a node all the same: the rates are per node-hour, so it is struck as
 * often as a full one), or the devices. Dead hardware interrupts nothing: a device is dead once
 * every unit of it is DEAD (lost, or out of the job with its link), a node once each of its
 * devices is. The step draws over the live members by thinning: an interruption whose member is
 * dead at its step (after the step's health changes) is dropped, neither returned nor charged.
 * Thinning the process of rate N x rate, members uniform, leaves one of rate N_live x rate,
 * members uniform over the live ones, from the same counters; and since every rank holds the
 * fleet's health alike (the unit states the plan reads), every rank drops the same draws
 * without a word to the others. A scripted interrupt or reset_device that names a dead member
 * is dropped the same way.
 *
 * Device memory (HBM) errors, cause hbm (aging.hbm_rate_per_hour per device-hour, and the
 * scripted reset_device events), are drawn here the same way, after the job-level causes: an
 * HBM error recurs on a device that lives on, so it is a Poisson process like them, not a
 * loss time like a device's. Unlike them it moves blocks: the run restores every block of the
 * device from its replica (sim/driver/health.c). */
#ifndef AF_JOBINTR_H
#define AF_JOBINTR_H

#include <stdint.h>

#include "../io/config.h"

/* One interruption. */
typedef struct af_jobintr_hit {
    int cause;      /* AF_INTR_*, a job-level one */
    int64_t device; /* the device it struck (device grain), else -1 */
    int64_t node;   /* the node it struck (node grain, or the node of that device), else -1 */
    double time_h;  /* when: a drawn one's t_k, a scripted one's step's hours */
} af_jobintr_hit_t;

/* The causes drawn here: the job-level ones and hbm (AF_INTR_FIRST_JOB + i, i below this); link,
 * after hbm, is a loss time of the aging model (sim/fleet/aging.h). */
#define AF_JOBINTR_NDRAWN (AF_INTR_hbm + 1 - AF_INTR_FIRST_JOB)

typedef struct af_jobintr {
    double next_h[AF_JOBINTR_NDRAWN]; /* the time of each cause's next interruption (+inf: none) */
    uint64_t k[AF_JOBINTR_NDRAWN];    /* its index in the cause's sequence */
    int64_t members[AF_JOBINTR_NDRAWN];
    int64_t devices; /* the fleet's */
    int64_t devices_per_node;
    uint64_t seed;
    int any; /* a rate or a scripted interrupt: 0 skips every step at once */
} af_jobintr_t;

/* Draws every cause's first interruption for the fleet of `devices` devices. No allocation. */
void af_jobintr_init(af_jobintr_t *j, const af_config_t *cfg, int64_t devices);

/* The interruptions of step `step` (each call's step after the previous one's), at most `max`
 * (AF_JOBINTR_MAX_STEP, more than the AF_MAX_EVENTS scripted ones): the scripted ones (interrupt
 * and reset_device) in the events' order, then the drawn ones by cause, in time order within a
 * cause; none on a dead member. unit_state is the fleet's health after the step's changes
 * (AF_HEALTHY / AF_FADING / AF_DEAD of each of devices x units_per_device units, the same on
 * every rank); NULL: every member lives. A drawn interruption beyond `max` stays due and is
 * taken by the next step (its member's health is read then). Returns their number. */
/* When the next drawn interruption is due, in simulated hours: a step whose hours are below it
 * has none drawn (+inf when no cause has a rate, or the model interrupts nothing). Scripted
 * interrupt and reset_device events come besides, at their steps. */
double af_jobintr_due_h(const af_jobintr_t *j);

int af_jobintr_step(af_jobintr_t *j, const af_config_t *cfg, int64_t step, const int8_t *unit_state,
                    int64_t units_per_device, af_jobintr_hit_t *out, int max);

#endif
