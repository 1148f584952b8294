/* agefence-report on the results of `agefence bench jitter`: the pacing trade-off table (step
 * period mean, p50, p99 and standard deviation per setting, its reduction and its cost against
 * pacing off) from the raw samples the benchmark kept (/series/period_us.<setting> and
 * /series/sink_us.<setting>, setting "off", "g<gamma>" or "q<quantile>"). Beside a quantile
 * setting it derives the offline bound from pacing off's own samples: each unpaced period
 * padded to that quantile of them, period' = max(period, deadline). */
#ifndef AF_JITTER_H
#define AF_JITTER_H

#include <stdio.h>

#include "logread.h"
#include "stats.h"

#define AF_JITTER_MAX 32

typedef struct af_jitter_row {
    char name[32];   /* "off", "g<gamma>" or "q<quantile>" */
    double gamma;    /* -1 for off and quantile settings */
    double quantile; /* -1 for off and gamma settings */
    af_stats_t period;
    af_stats_t sink;
    double sd_reduction; /* 1 - sd / sd(off) */
    double mean_cost;    /* mean / mean(off) - 1 */
    double p99_ratio;    /* p99 / p99(off) */
    /* Quantile settings (NAN otherwise): the offline bound of a fixed deadline at the quantile
     * of pacing off's periods. */
    double bound_sd_reduction;
    double bound_mean_cost;
} af_jitter_row_t;

typedef struct af_jitter {
    af_jitter_row_t row[AF_JITTER_MAX]; /* off first, then gamma, then quantile, ascending */
    int n;
} af_jitter_t;

/* 1 when the file holds `agefence bench` results (root attribute kind), with its benchmark's
 * name in bench. */
int af_jitter_is_bench(const af_logfile_t *lf, char *bench, size_t n);
/* Loads and derives the table; AF_ERR_USAGE with err set when the file is not jitter results
 * or lacks pacing off. */
af_result_t af_jitter_load(af_jitter_t *j, const af_logfile_t *lf, const char *path, char *err,
                           size_t errlen);
void af_jitter_text(const af_jitter_t *j, const char *path, FILE *out);

#endif
