/* agefence: order statistics shared by the run's calibration, the benchmarks, the live metrics
 * and the offline report, so every percentile agefence prints is computed one way; and the
 * sorts and the search of sorted lists the step loop uses, which allocate nothing. */
#ifndef AF_PERCENTILE_H
#define AF_PERCENTILE_H

#include <stddef.h>
#include <stdint.h>

/* Sort v in place, ascending (NaN-free input), allocating nothing: the step loop may call
 * them. */
void af_sort_doubles(double *v, size_t n);
void af_sort_i64(int64_t *v, size_t n);
void af_sort_i32(int32_t *v, size_t n);
/* The first index of the n ascending values v whose value is not below x (n when none is):
 * where x is, or where it would go. */
int64_t af_lower_bound_i32(const int32_t *v, int64_t n, int64_t x);

/* The percentile p (0..100) of n sorted values, by linear interpolation between closest ranks
 * (the definition numpy uses by default, to the bit); 0 when n is 0. */
double af_percentile_sorted(const double *sorted, size_t n, double p);

#endif
