/* agefence-report: a published record of a real fleet's interruptions, beside a run's counts.
 *
 * A scenario fitted to a record names it (scenario.record; agefence-report --record NAME or
 * none overrides). The report then prints, for each of the run's interruption causes that the
 * record counts, the record's count scaled to the run by the cause's grain (common/log_schema.h):
 * a device-grain cause by GPU-hours, a node-grain one by node-hours, a job-grain one by hours
 * (a fleet twice the record's size sees twice its GPU failures in the same hours, and as many
 * software bugs), the run's count, the exact (Garwood) 95% Poisson interval of the run's mean,
 * and whether the record's count lies inside it: the question a fitted preset must answer,
 * "is what the record saw a likely outcome of this model?".
 *
 * Garwood's interval for a Poisson count n at confidence 1 - alpha is
 *   [chi2(alpha/2; 2n) / 2, chi2(1 - alpha/2; 2n + 2) / 2]   (the lower end 0 for n = 0),
 * chi2(p; k) the p-quantile of the chi-square distribution with k degrees of freedom, here the
 * inverse of the regularized lower incomplete gamma function P(k/2, x/2), computed in C. */
#ifndef AF_RECORD_H
#define AF_RECORD_H

#include <stdint.h>

#include "../common/log_schema.h"

typedef struct af_record {
    const char *name;  /* the scenario.record value */
    const char *title; /* one line: whose record, where published */
    double hours;      /* the hours it covers */
    int64_t gpus;      /* the fleet it covers */
    int64_t gpus_per_node;
    /* Interruptions by AF_INTR_* cause; -1 where the record has no such cause. */
    int64_t counts[AF_NINTR];
    int64_t total; /* all of them (the causes above and any the record has besides) */
} af_record_t;

/* The record of that name, or NULL ("none" and unknown names). */
const af_record_t *af_record_find(const char *name);
/* The names af_record_find knows, "a|b|...". */
const char *af_record_names(void);

/* The regularized lower incomplete gamma function P(a, x) = gamma(a, x) / Gamma(a), for a > 0
 * and x >= 0 (NAN otherwise): a series below a + 1, a continued fraction above. */
double af_gamma_p(double a, double x);
/* The p-quantile (0 < p < 1) of the chi-square distribution with k > 0 degrees of freedom:
 * the x with P(k/2, x/2) = p, by bisection to the last bit. NAN outside the domain. */
double af_chi2_quantile(double p, double k);
/* Garwood's exact interval of the mean of a Poisson count n >= 0 at confidence conf (0.95). */
void af_poisson_interval(int64_t n, double conf, double *lo, double *hi);

#endif
