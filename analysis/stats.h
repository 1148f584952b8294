/* agefence-report statistics: percentiles by linear interpolation between closest ranks (numpy's
 * default, "linear", method 7 of Hyndman and Fan) and the moments the report prints. Pure
 * functions of their arguments; no allocation except af_stats_compute's sorted copy. */
#ifndef AF_STATS_H
#define AF_STATS_H

#include <stddef.h>

#include "../common/af_result.h"

/* Sorts v ascending in place. NaNs, if any, sort last. */
void af_stats_sort(double *v, size_t n);

/* The p-th percentile (0 <= p <= 100) of n ascending values: the value at the fractional rank
 * (n - 1) * p / 100, interpolated linearly between the two neighbouring values exactly as
 * numpy.percentile(v, p) computes it. NAN when n == 0. */
double af_stats_percentile_sorted(const double *sorted, size_t n, double p);

/* Summary of a sample of latencies (or of any values). */
typedef struct af_stats {
    size_t n;   /* values in the sample */
    double min; /* NAN for every field but n when n == 0 */
    double p50; /* percentiles as af_stats_percentile_sorted */
    double p90;
    double p99;
    double max;
    double mean; /* arithmetic mean, two-pass */
    double sd;   /* population standard deviation (ddof = 0, numpy.std's default) */
    double cv;   /* sd / mean: NAN when mean == 0 */
} af_stats_t;

/* Computes the summary of v[0..n) (v is not modified). AF_ERR_NOMEM when the sorted copy cannot
 * be allocated. */
af_result_t af_stats_compute(const double *v, size_t n, af_stats_t *out);

/* The same on a sample already sorted ascending (no allocation). */
void af_stats_from_sorted(const double *sorted, size_t n, af_stats_t *out);

#endif
