#include "jobintr.h"

#include <math.h>
#include <string.h>

#include "../../kernels/af_burgers.h"
#include "aging.h"

/* The counter stream of cause c: far from the aging model's streams (1-7) and from the steps
 * that key the corruption draws, so no draw of another purpose shares its counters. */
static uint64_t stream(int c)
{
    return (UINT64_C(0x6a6f62) << 32) | (uint64_t)c; /* "job" */
}

static double rate_of(const af_jobintr_t *j, const af_config_t *cfg, int i)
{
    int c = AF_INTR_FIRST_JOB + i;
    double per = c == AF_INTR_hbm ? cfg->hbm_rate_per_hour : cfg->intr_per_hour[i];
    return per * (double)j->members[i];
}

/* The time of interruption k of cause index i after the one at t. */
static double next_time(const af_jobintr_t *j, const af_config_t *cfg, int i, double t)
{
    double rate = rate_of(j, cfg, i);
    if (!(rate > 0)) {
        return INFINITY;
    }
    int c = AF_INTR_FIRST_JOB + i;
    double y = 1.0 - af_u01(af_hash4(j->seed, stream(c), j->k[i], 0)); /* in (0, 1] */
    return t - log(y) / rate;
}

/* Whether device d has a unit that is not DEAD. */
static int device_lives(const int8_t *unit_state, int64_t U, int64_t d)
{
    for (int64_t u = d * U; u < (d + 1) * U; ++u) {
        if (unit_state[u] != AF_DEAD) {
            return 1;
        }
    }
    return 0;
}

/* Whether an interruption on `device`, else on `node`, else on the job (-1 each) strikes live
 * hardware: the job lives while the run does; a node lives while one of its devices (the last
 * node may have fewer) does. */
static int member_lives(const af_jobintr_t *j, const int8_t *unit_state, int64_t U, int64_t device,
                        int64_t node)
{
    if (unit_state == NULL || U <= 0) {
        return 1;
    }
    if (device >= 0) {
        return device < j->devices && device_lives(unit_state, U, device);
    }
    if (node >= 0) {
        int64_t hi = (node + 1) * j->devices_per_node;
        hi = hi < j->devices ? hi : j->devices;
        for (int64_t d = node * j->devices_per_node; d < hi; ++d) {
            if (device_lives(unit_state, U, d)) {
                return 1;
            }
        }
        return 0;
    }
    return 1;
}

void af_jobintr_init(af_jobintr_t *j, const af_config_t *cfg, int64_t devices)
{
    memset(j, 0, sizeof *j);
    j->seed = (uint64_t)cfg->seed;
    j->devices = devices;
    j->devices_per_node = cfg->devices_per_node > 0 ? cfg->devices_per_node : 1;
    /* Nodes: the last one may hold fewer devices (ceil). */
    const int64_t nodes = (devices + j->devices_per_node - 1) / j->devices_per_node;
    for (int i = 0; i < AF_JOBINTR_NDRAWN; ++i) {
        int g = af_intr_grain[AF_INTR_FIRST_JOB + i];
        j->members[i] = g == AF_GRAIN_DEVICE ? devices : g == AF_GRAIN_NODE ? nodes : 1;
        j->next_h[i] = next_time(j, cfg, i, 0.0);
        j->any |= isfinite(j->next_h[i]);
    }
    for (int e = 0; e < cfg->n_events; ++e) {
        j->any |= cfg->events[e].action == AF_EVENT_INTERRUPT ||
                  cfg->events[e].action == AF_EVENT_RESET_DEVICE;
    }
}

double af_jobintr_due_h(const af_jobintr_t *j)
{
    double due = INFINITY;
    for (int i = 0; j->any && i < AF_JOBINTR_NDRAWN; ++i) {
        due = j->next_h[i] < due ? j->next_h[i] : due;
    }
    return due;
}

int af_jobintr_step(af_jobintr_t *j, const af_config_t *cfg, int64_t step, const int8_t *unit_state,
                    int64_t units_per_device, af_jobintr_hit_t *out, int max)
{
    if (!j->any) {
        return 0;
    }
    int n = 0;
    const double hours = (double)step * cfg->sim_hours_per_step;
    for (int e = 0; e < cfg->n_events && n < max; ++e) {
        const af_event_cfg_t *ev = &cfg->events[e];
        int reset = ev->action == AF_EVENT_RESET_DEVICE;
        if ((ev->action != AF_EVENT_INTERRUPT && !reset) || ev->step != step) {
            continue;
        }
        out[n].cause = reset ? AF_INTR_hbm : ev->cause;
        out[n].device = ev->device;
        out[n].node = ev->device >= 0 ? ev->device / j->devices_per_node : ev->node;
        out[n].time_h = hours;
        n += member_lives(j, unit_state, units_per_device, out[n].device, out[n].node);
    }
    for (int i = 0; i < AF_JOBINTR_NDRAWN; ++i) {
        int c = AF_INTR_FIRST_JOB + i;
        while (n < max && j->next_h[i] <= hours) {
            int64_t m = j->members[i];
            int64_t who = (int64_t)(af_u01(af_hash4(j->seed, stream(c), j->k[i], 1)) * (double)m);
            who = who < m ? who : m - 1; /* u01 < 1, but a product may round up to m */
            int g = af_intr_grain[c];
            out[n].cause = c;
            out[n].device = g == AF_GRAIN_DEVICE ? who : -1;
            out[n].node = g == AF_GRAIN_NODE     ? who
                          : g == AF_GRAIN_DEVICE ? who / j->devices_per_node
                                                 : -1;
            out[n].time_h = j->next_h[i];
            /* A dead member's is dropped (thinning: the draw over the live members). */
            n += member_lives(j, unit_state, units_per_device, out[n].device, out[n].node);
            j->k[i]++;
            j->next_h[i] = next_time(j, cfg, i, j->next_h[i]);
        }
    }
    return n;
}
