#include "percentile.h"

#include <math.h>
#include <stdlib.h>

/* An in-place heapsort, ascending: O(n log n) in the worst case and no memory of its own
 * (the C library's qsort may allocate a scratch buffer, and these sorts run in the step
 * loop, which allocates nothing after start-up). */
#define AF_HEAPSORT(name, type)                                                                    \
    static void name##_sift(type *v, size_t root, size_t n)                                        \
    {                                                                                              \
        for (;;) {                                                                                 \
            size_t child = 2 * root + 1;                                                           \
            if (child >= n) {                                                                      \
                return;                                                                            \
            }                                                                                      \
            if (child + 1 < n && v[child] < v[child + 1]) {                                        \
                child++;                                                                           \
            }                                                                                      \
            if (!(v[root] < v[child])) {                                                           \
                return;                                                                            \
            }                                                                                      \
            type t = v[root];                                                                      \
            v[root] = v[child];                                                                    \
            v[child] = t;                                                                          \
            root = child;                                                                          \
        }                                                                                          \
    }                                                                                              \
    void name(type *v, size_t n)                                                                   \
    {                                                                                              \
        if (n < 2) {                                                                               \
            return;                                                                                \
        }                                                                                          \
        for (size_t i = n / 2; i-- > 0;) {                                                         \
            name##_sift(v, i, n);                                                                  \
        }                                                                                          \
        for (size_t end = n - 1; end > 0; --end) {                                                 \
            type t = v[0];                                                                         \
            v[0] = v[end];                                                                         \
            v[end] = t;                                                                            \
            name##_sift(v, 0, end);                                                                \
        }                                                                                          \
    }

AF_HEAPSORT(af_sort_doubles, double)
AF_HEAPSORT(af_sort_i64, int64_t)
AF_HEAPSORT(af_sort_i32, int32_t)

int64_t af_lower_bound_i32(const int32_t *v, int64_t n, int64_t x)
{
    int64_t lo = 0;
    int64_t hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (v[mid] < x) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
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
