/* agefence-report statistics (see stats.h). */
#include "stats.h"

#include "../common/percentile.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a;
    double y = *(const double *)b;
    if (isnan(x) || isnan(y)) {
        return isnan(x) - isnan(y);
    }
    return (x > y) - (x < y);
}

void af_stats_sort(double *v, size_t n)
{
    if (n > 1) {
        qsort(v, n, sizeof(double), cmp_double);
    }
}

double af_stats_percentile_sorted(const double *sorted, size_t n, double p)
{
    /* The log writer's definition (numpy's default, to the bit); NaN marks "no data" here. */
    return n == 0 ? NAN : af_percentile_sorted(sorted, n, p);
}

void af_stats_from_sorted(const double *sorted, size_t n, af_stats_t *out)
{
    memset(out, 0, sizeof *out);
    out->n = n;
    if (n == 0) {
        out->min = out->p50 = out->p90 = out->p99 = out->max = NAN;
        out->mean = out->sd = out->cv = NAN;
        return;
    }
    out->min = sorted[0];
    out->max = sorted[n - 1];
    out->p50 = af_stats_percentile_sorted(sorted, n, 50.0);
    out->p90 = af_stats_percentile_sorted(sorted, n, 90.0);
    out->p99 = af_stats_percentile_sorted(sorted, n, 99.0);
    double sum = 0.0;
    for (size_t i = 0; i < n; ++i) {
        sum += sorted[i];
    }
    double mean = sum / (double)n;
    double ss = 0.0;
    for (size_t i = 0; i < n; ++i) {
        double d = sorted[i] - mean;
        ss += d * d;
    }
    out->mean = mean;
    out->sd = sqrt(ss / (double)n);
    out->cv = mean != 0.0 ? out->sd / mean : NAN;
}

af_result_t af_stats_compute(const double *v, size_t n, af_stats_t *out)
{
    double *s = malloc(sizeof(double) * (n > 0 ? n : 1));
    if (s == NULL) {
        return AF_ERR_NOMEM;
    }
    if (n > 0) {
        memcpy(s, v, sizeof(double) * n);
    }
    af_stats_sort(s, n);
    af_stats_from_sorted(s, n, out);
    free(s);
    return AF_OK;
}
