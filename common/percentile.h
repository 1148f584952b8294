/* agefence: order statistics shared by the run's calibration, the benchmarks, the live metrics
 * and the offline report, so every percentile agefence prints is computed one way. */
#ifndef AF_PERCENTILE_H
#define AF_PERCENTILE_H

#include <stddef.h>

/* Sorts v in place, ascending (NaN-free input). */
void af_sort_doubles(double *v, size_t n);

/* The percentile p (0..100) of n sorted values, by linear interpolation between closest ranks
 * (the definition numpy uses by default, to the bit); 0 when n is 0. */
double af_percentile_sorted(const double *sorted, size_t n, double p);

#endif
