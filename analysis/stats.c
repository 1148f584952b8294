/* agefence-report statistics (see stats.h). */
#include "stats.h"

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
    if (n == 0) {
        return NAN;
    }
    /* numpy: virtual index (n - 1) * q with q = p / 100, its floor and the fraction gamma, and
     * _lerp(a, b, gamma), which interpolates from the nearer end for gamma >= 0.5 so that
     * gamma = 1 gives b exactly. Reproduced step by step so the results agree to the bit. */
    double q = p / 100.0;
    double pos = q * (double)(n - 1);
    if (!(pos > 0.0)) {
        return sorted[0];
    }
    if (pos >= (double)(n - 1)) {
        return sorted[n - 1];
    }
    double lo_f = floor(pos);
    size_t lo = (size_t)lo_f;
    double gamma = pos - lo_f;
    double a = sorted[lo];
    double b = sorted[lo + 1];
    double diff = b - a;
    return gamma >= 0.5 ? b - diff * (1.0 - gamma) : a + diff * gamma;
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
