#include "percentile.h"

#include <math.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a;
    double y = *(const double *)b;
    return (x > y) - (x < y);
}

void af_sort_doubles(double *v, size_t n)
{
    qsort(v, n, sizeof(double), cmp_double);
}

double af_percentile_sorted(const double *s, size_t n, double p)
{
    if (n == 0) {
        return 0.0;
    }
    /* numpy: virtual index (n - 1) * q with q = p / 100, its floor and the fraction gamma, and
     * _lerp(a, b, gamma), which interpolates from the nearer end for gamma >= 0.5 so that
     * gamma = 1 gives b exactly. Reproduced step by step so the results agree to the bit. */
    double pos = (p / 100.0) * (double)(n - 1);
    if (!(pos > 0.0)) {
        return s[0];
    }
    if (pos >= (double)(n - 1)) {
        return s[n - 1];
    }
    double lo_f = floor(pos);
    size_t lo = (size_t)lo_f;
    double gamma = pos - lo_f;
    double diff = s[lo + 1] - s[lo];
    return gamma >= 0.5 ? s[lo + 1] - diff * (1.0 - gamma) : s[lo] + diff * gamma;
}
