/* agefence: a monotonic clock in microseconds, the unit of every latency in the log, and the
 * wall-clock time the log's start and end attributes give. */
#ifndef AF_TIME_H
#define AF_TIME_H

#include <stddef.h>
#include <time.h>

static inline double af_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* Now in UTC, ISO 8601 ("2026-12-04T09:56:46Z"), into out (n bytes, at least 21). */
static inline void af_iso_time(char *out, size_t n)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

#endif
