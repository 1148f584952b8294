#include "record.h"

#include <math.h>
#include <string.h>

/* Llama 3 405B pre-training (Meta, "The Llama 3 Herd of Models", 2024, table 5): 419
 * unexpected interruptions in a 54-day snapshot on 16,384 H100 GPUs, by root cause; summed here
 * by the agefence cause that models each (configs/presets/llama3-54d.ini derives the rates):
 * device = faulty GPU 148 + GPU system processor 17 + GPU thermal interface and sensor 6; hbm
 * (a device's memory lost, the device kept) = GPU HBM3 memory 72; node = host maintenance 32 + SSD
 * 3 + power supply 3 + server chassis 2 + IO expansion board 2 + CPU 2 + system memory 2; sudden (a
 * unit) = GPU SRAM 19; link (a GPU's fabric link lost, the GPU kept: one NIC per GPU on the
 * record's hosts) = NIC 7; and the other job-level causes under their own names. Wear-out,
 * scripted kills and job-level NIC interruptions are not in the record. */
static const af_record_t RECORDS[] = {
    {"llama3-405b",
     "Llama 3 405B pre-training: 419 unexpected interruptions in 54 days on 16,384 H100 GPUs",
     54.0 * 24.0,
     16384,
     8, /* Grand Teton hosts of 8 H100s: 2,048 nodes */
     {[AF_INTR_wearout] = -1,
      [AF_INTR_sudden] = 19,
      [AF_INTR_scripted] = -1,
      [AF_INTR_device] = 171,
      [AF_INTR_node] = 46,
      [AF_INTR_software] = 54,
      [AF_INTR_network] = 35,
      [AF_INTR_nic] = -1,
      [AF_INTR_nccl_watchdog] = 7,
      [AF_INTR_sdc] = 6,
      [AF_INTR_dependency] = 2,
      [AF_INTR_hbm] = 72,
      [AF_INTR_link] = 7},
     419},
};

const af_record_t *af_record_find(const char *name)
{
    for (size_t i = 0; name != NULL && i < sizeof RECORDS / sizeof RECORDS[0]; ++i) {
        if (strcmp(name, RECORDS[i].name) == 0) {
            return &RECORDS[i];
        }
    }
    return NULL;
}

const char *af_record_names(void)
{
    return "llama3-405b";
}

/* P(a, x) by its series, for x < a + 1. */
static double gamma_p_series(double a, double x)
{
    double term = 1.0 / a;
    double sum = term;
    for (int n = 1; n < 100000; ++n) {
        term *= x / (a + n);
        sum += term;
        if (fabs(term) < fabs(sum) * 1e-17) {
            break;
        }
    }
    return sum * exp(-x + a * log(x) - lgamma(a));
}

/* Q(a, x) = 1 - P(a, x) by its continued fraction (modified Lentz), for x >= a + 1. */
static double gamma_q_fraction(double a, double x)
{
    const double tiny = 1e-300;
    double b = x + 1.0 - a;
    double c = 1.0 / tiny;
    double d = 1.0 / b;
    double h = d;
    for (int i = 1; i < 100000; ++i) {
        double an = -i * (i - a);
        b += 2.0;
        d = an * d + b;
        d = fabs(d) < tiny ? tiny : d;
        c = b + an / c;
        c = fabs(c) < tiny ? tiny : c;
        d = 1.0 / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1.0) < 1e-17) {
            break;
        }
    }
    return exp(-x + a * log(x) - lgamma(a)) * h;
}

double af_gamma_p(double a, double x)
{
    if (!(a > 0) || !(x >= 0) || isinf(a)) {
        return NAN;
    }
    if (x == 0) {
        return 0.0;
    }
    if (isinf(x)) {
        return 1.0;
    }
    return x < a + 1.0 ? gamma_p_series(a, x) : 1.0 - gamma_q_fraction(a, x);
}

double af_chi2_quantile(double p, double k)
{
    if (!(p > 0 && p < 1) || !(k > 0) || isinf(k)) {
        return NAN;
    }
    /* P(k/2, x/2) rises from 0 to 1: bracket the root, then halve the bracket until the
     * midpoint is one of its ends (the last bit). */
    double lo = 0.0;
    double hi = k + 10.0 * sqrt(2.0 * k) + 10.0;
    while (af_gamma_p(0.5 * k, 0.5 * hi) < p) {
        lo = hi;
        hi *= 2.0;
    }
    for (int i = 0; i < 2000; ++i) {
        double mid = lo + 0.5 * (hi - lo);
        if (mid <= lo || mid >= hi) {
            break;
        }
        if (af_gamma_p(0.5 * k, 0.5 * mid) < p) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo + 0.5 * (hi - lo);
}

void af_poisson_interval(int64_t n, double conf, double *lo, double *hi)
{
    if (n < 0 || !(conf > 0 && conf < 1)) {
        *lo = *hi = NAN;
        return;
    }
    double alpha = 1.0 - conf;
    *lo = n == 0 ? 0.0 : 0.5 * af_chi2_quantile(0.5 * alpha, 2.0 * (double)n);
    *hi = 0.5 * af_chi2_quantile(1.0 - 0.5 * alpha, 2.0 * (double)n + 2.0);
}
