#include "straggler.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "../../kernels/af_burgers.h"
#include "../../common/af_alloc.h"
#include "../../common/af_time.h"

/* The RNG stream of the spikes (sim/fleet/aging.c's streams are 1-4, 6 and 7). */
#define RNG_SPIKE 0x5b1e

double af_throttle_factor(double base, double slowdown, double exponent, double degradation)
{
    double d = degradation <= 0 ? 0 : degradation >= 1 ? 1 : degradation;
    double curve = d > 0 ? pow(d, exponent) : 0.0;
    return base * (1.0 + slowdown * curve);
}

double af_spike_us(uint64_t seed, int64_t step, int64_t device, double rate, double median_us,
                   double sigma)
{
    if (rate <= 0 || median_us <= 0) {
        return 0.0;
    }
    uint64_t h = af_hash4(seed, RNG_SPIKE, (uint64_t)step, (uint64_t)device);
    if (af_u01(h) >= rate) {
        return 0.0;
    }
    if (sigma <= 0) {
        return median_us;
    }
    /* Box-Muller from two further draws; u1 in (0, 1]. */
    double u1 = 1.0 - af_u01(af_mix64(h ^ 0x1ULL));
    double u2 = af_u01(af_mix64(h ^ 0x2ULL));
    double z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
    return median_us * exp(sigma * z);
}

double af_spin_us(double us)
{
    double t0 = af_now_us();
    if (us <= 0) {
        return 0.0;
    }
    double t = t0;
    while (t - t0 < us) {
        t = af_now_us();
    }
    return t - t0;
}

double af_wait_us(double us)
{
    double t0 = af_now_us();
    const double spin_tail = 150.0; /* sleeps overshoot by tens of microseconds */
    if (us > 2 * spin_tail) {
        double sl = us - spin_tail;
        struct timespec ts = {(time_t)(sl / 1e6), (long)(fmod(sl, 1e6) * 1e3)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
    }
    double left = us - (af_now_us() - t0);
    af_spin_us(left);
    return af_now_us() - t0;
}

af_result_t af_straggler_init(af_straggler_t *s, int64_t devices, double alpha, double threshold,
                              int64_t patience)
{
    memset(s, 0, sizeof *s);
    s->devices = devices;
    s->alpha = alpha;
    s->threshold = threshold;
    s->patience = patience;
    size_t n = (size_t)devices;
    s->mean = af_alloc(n * sizeof(double));
    s->dev = af_alloc(n * sizeof(double));
    s->samples = af_alloc(n * sizeof(int64_t));
    s->over = af_alloc(n * sizeof(int64_t));
    s->flagged = af_alloc(n);
    s->scratch = af_alloc(n * sizeof(double));
    if (!s->mean || !s->dev || !s->samples || !s->over || !s->flagged || !s->scratch) {
        af_straggler_destroy(s);
        af_error_set("cannot allocate the straggler detector for %lld devices", (long long)devices);
        return AF_ERR_NOMEM;
    }
    return AF_OK;
}

void af_straggler_destroy(af_straggler_t *s)
{
    af_free(s->mean);
    af_free(s->dev);
    af_free(s->samples);
    af_free(s->over);
    af_free(s->flagged);
    af_free(s->scratch);
    memset(s, 0, sizeof *s);
}

/* The k-th smallest of v[0..n) (Hoare's selection; reorders v). */
static double select_kth(double *v, int64_t n, int64_t k)
{
    int64_t lo = 0;
    int64_t hi = n - 1;
    while (lo < hi) {
        double pivot = v[lo + (hi - lo) / 2];
        int64_t i = lo;
        int64_t j = hi;
        while (i <= j) {
            while (v[i] < pivot) {
                i++;
            }
            while (v[j] > pivot) {
                j--;
            }
            if (i <= j) {
                double t = v[i];
                v[i] = v[j];
                v[j] = t;
                i++;
                j--;
            }
        }
        if (k <= j) {
            hi = j;
        } else if (k >= i) {
            lo = i;
        } else {
            return v[k];
        }
    }
    return v[k];
}

int64_t af_straggler_update(af_straggler_t *s, const double *per_block_us, int64_t *out)
{
    int64_t m = 0;
    for (int64_t d = 0; d < s->devices; ++d) {
        double x = per_block_us[d];
        if (x > 0 && isfinite(x)) {
            if (s->samples[d] == 0) {
                s->mean[d] = x;
                s->dev[d] = 0;
            } else {
                double e = x - s->mean[d];
                s->mean[d] += s->alpha * e;
                s->dev[d] += s->alpha * (fabs(e) - s->dev[d]);
            }
            s->samples[d]++;
        }
        /* The fleet's median is over the devices still measured, stragglers excluded. */
        if (s->samples[d] > 0 && !s->flagged[d] && x > 0) {
            s->scratch[m++] = s->mean[d];
        }
    }
    if (m == 0) {
        return 0;
    }
    double med = select_kth(s->scratch, m, m / 2);
    if (m % 2 == 0) {
        double lower = select_kth(s->scratch, m, m / 2 - 1);
        med = 0.5 * (med + lower);
    }
    s->median = med;
    int64_t n = 0;
    for (int64_t d = 0; d < s->devices; ++d) {
        if (s->flagged[d] || s->samples[d] == 0) {
            continue;
        }
        if (per_block_us[d] > 0 && s->mean[d] - s->dev[d] > s->threshold * med) {
            s->over[d]++;
        } else if (per_block_us[d] > 0) {
            s->over[d] = 0;
        }
        if (s->over[d] >= s->patience && s->samples[d] >= s->patience) {
            s->flagged[d] = 1;
            out[n++] = d;
        }
    }
    return n;
}

void af_pacer_init(af_pacer_t *p, double gamma, double alpha, int64_t warmup)
{
    memset(p, 0, sizeof *p);
    p->mode = AF_PACER_EWMA;
    p->gamma = gamma;
    p->alpha = alpha;
    p->warmup = warmup;
}

void af_pacer_init_quantile(af_pacer_t *p, double quantile, int64_t warmup)
{
    memset(p, 0, sizeof *p);
    p->mode = AF_PACER_QUANTILE;
    p->quantile = quantile;
    p->warmup = warmup;
    p->min_counted = (int64_t)ceil(1.0 / (1.0 - quantile) - 1e-9);
}

/* The quantile estimator. A streaming quantile needs either a sketch of the distribution or a
 * few markers moved by each sample (P-squared, Jain & Chlamtac 1985). P-squared keeps five
 * markers per quantile, so two pacers at different quantiles hold unrelated estimates that
 * may cross, and its extreme markers (0.999) converge slowly on a heavy tail. A histogram on a
 * log scale answers every quantile from one set of counts: its error is relative (a bin spans
 * 2^(1/16), 4.4%, of the work time at every scale, from microseconds to seconds), reading a
 * higher quantile can only move up the same cumulative counts (monotone), and it is a fixed
 * array (no allocation) updated by integer counts (deterministic). The work time's range is
 * unknown in advance, which rules out a linear scale. */
static int pacer_bin(double work_us)
{
    if (!(work_us > AF_PACER_LO_US)) {
        return 0;
    }
    double b = AF_PACER_BINS_PER_OCTAVE * log2(work_us / AF_PACER_LO_US);
    return b >= AF_PACER_BINS - 1 ? AF_PACER_BINS - 1 : (int)b;
}

/* The quantile of the counted work times: the bin where the cumulative count reaches
 * quantile * counted, and within it a geometric interpolation by the share of the bin's count
 * below the target (so the estimate rises continuously with the quantile). */
static double pacer_quantile(const af_pacer_t *p)
{
    if (p->counted == 0) {
        return 0.0;
    }
    double target = p->quantile * (double)p->counted;
    uint64_t cum = 0;
    int k = 0;
    for (; k < AF_PACER_BINS - 1; ++k) {
        if ((double)(cum + p->hist[k]) >= target && p->hist[k] > 0) {
            break;
        }
        cum += p->hist[k];
    }
    double frac = p->hist[k] > 0 ? (target - (double)cum) / (double)p->hist[k] : 1.0;
    frac = frac < 0 ? 0 : frac > 1 ? 1 : frac;
    return AF_PACER_LO_US * exp2((k + frac) / AF_PACER_BINS_PER_OCTAVE);
}

double af_pacer_deadline(const af_pacer_t *p)
{
    if (p->n == 0) {
        return 0.0;
    }
    return p->mode == AF_PACER_QUANTILE ? pacer_quantile(p) : p->mean + p->gamma * p->dev;
}

double af_pacer_sink(af_pacer_t *p, double work_us)
{
    double sink = 0.0;
    int estimable = p->mode != AF_PACER_QUANTILE || p->n >= p->min_counted;
    if (p->n >= p->warmup && p->n > 0 && estimable) {
        double deadline = af_pacer_deadline(p);
        sink = deadline > work_us ? deadline - work_us : 0.0;
    }
    if (p->mode == AF_PACER_QUANTILE) {
        p->hist[pacer_bin(work_us)]++;
        if (++p->counted >= AF_PACER_WINDOW) {
            /* Forget slowly: halve every count (rounding down) and recount. */
            p->counted = 0;
            for (int k = 0; k < AF_PACER_BINS; ++k) {
                p->hist[k] >>= 1;
                p->counted += p->hist[k];
            }
        }
    } else if (p->n == 0) {
        p->mean = work_us;
        p->dev = 0;
    } else {
        double e = work_us - p->mean;
        p->mean += p->alpha * e;
        p->dev += p->alpha * (fabs(e) - p->dev);
    }
    p->n++;
    return sink;
}
