/* agefence live metrics: with metrics.textfile set, rank 0 rewrites a Prometheus text-exposition
 * file every metrics.interval steps and at the end, in node exporter's textfile-collector
 * convention (no timestamps; write a temporary file beside it, then rename, so a reader never
 * sees half a file). Everything is preallocated at start-up: a rewrite formats into a fixed
 * buffer and makes no allocation. */
#ifndef AF_METRICS_H
#define AF_METRICS_H

#include <stdint.h>

#include "../../common/af_result.h"

#define AF_METRICS_WINDOW 1024 /* steps behind the step-period quantiles */

/* What a rewrite reports; rank 0 fills it from the run. */
typedef struct af_metrics_view {
    int64_t step, state_step, steps_planned;
    int64_t healthy, fading, dead, straggler, slow;
    double blackout, max_blackout;
    int64_t injected, detected, fenced, retried, sdc; /* summed over ranks, as of counters_step */
    int64_t counters_step;
    int64_t leaked, drains, restores, retry_moves, rollbacks, replayed;
    int finished;
    int exit_code;
} af_metrics_view_t;

typedef struct af_metrics {
    char path[600];
    char tmp[640];
    char labels[400]; /* job="...",scenario="..." */
    char info[300];   /* the extra labels of agefence_info */
    double window[AF_METRICS_WINDOW];
    double sorted[AF_METRICS_WINDOW];
    int64_t n;         /* periods seen */
    double period_sum; /* seconds */
    double sink_s, throttle_s;
    char *buf;
    size_t cap;
    int warned;
} af_metrics_t;

/* Checks, before anything runs, that path can be written (AF_ERR_USAGE naming it). */
af_result_t af_metrics_check_path(const char *path);
/* Rank 0, before the seal: checks that the file can be written (bad path: AF_ERR_USAGE naming
 * it) and writes a first one. */
af_result_t af_metrics_open(af_metrics_t *m, const char *path, const char *scenario,
                            const char *compute, const char *fabric, int ranks);
/* One step: rank 0's step period, its pacing wait and its modelled throttling, in us. */
void af_metrics_step(af_metrics_t *m, double period_us, double sink_us, double throttle_us);
/* Rewrites the file. A failed rewrite is reported once on stderr and the run goes on. */
void af_metrics_write(af_metrics_t *m, const af_metrics_view_t *v);
void af_metrics_close(af_metrics_t *m);

/* Formats the exposition text into out (tests); returns its length, like snprintf. */
size_t af_metrics_format(af_metrics_t *m, const af_metrics_view_t *v, char *out, size_t size);

#endif
