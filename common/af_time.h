/* agefence: a monotonic clock in microseconds, the unit of every latency in the log. */
#ifndef AF_TIME_H
#define AF_TIME_H

#include <time.h>

static inline double af_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

#endif
