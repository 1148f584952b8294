#include "jobintr.h"

#include <math.h>
#include <string.h>

#include "../kernels/af_burgers.h"

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

void af_jobintr_init(af_jobintr_t *j, const af_config_t *cfg, int64_t devices)
{
    memset(j, 0, sizeof *j);
    j->seed = (uint64_t)cfg->seed;
    j->devices_per_node = cfg->devices_per_node > 0 ? cfg->devices_per_node : 1;
    for (int i = 0; i < AF_JOBINTR_NDRAWN; ++i) {
        int g = af_intr_grain[AF_INTR_FIRST_JOB + i];
        j->members[i] = g == AF_GRAIN_DEVICE ? devices
                        : g == AF_GRAIN_NODE ? devices / j->devices_per_node
                                             : 1;
        j->next_h[i] = next_time(j, cfg, i, 0.0);
        j->any |= isfinite(j->next_h[i]);
    }
    for (int e = 0; e < cfg->n_events; ++e) {
        j->any |= cfg->events[e].action == AF_EVENT_INTERRUPT ||
                  cfg->events[e].action == AF_EVENT_RESET_DEVICE;
    }
}

int af_jobintr_step(af_jobintr_t *j, const af_config_t *cfg, int64_t step, af_jobintr_hit_t *out,
                    int max)
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
        n++;
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
            n++;
            j->k[i]++;
            j->next_h[i] = next_time(j, cfg, i, j->next_h[i]);
        }
    }
    return n;
}
