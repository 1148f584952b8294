/* agefence stragglers (README "Stragglers and pacing"): units that age slow down before they
 * fail, and a synchronous step waits for its slowest device.
 *
 * Throttling. A unit's work takes s_u times its nominal time,
 *   s_u = base_u * (1 + slowdown * d_u^exponent),
 * where d_u in [0, 1] is how far a FADING unit is through its precursor window (0 otherwise)
 * and base_u is set by scripted slow events (1 unless slowed). On top, a device holding work
 * suffers in a step, with probability spike_rate, a transient spike: a log-normal delay of
 * median spike_us and shape spike_sigma, drawn from (seed, step, device) alone. A rank spends
 * its devices' modelled delays as a calibrated busy wait inside its kernel phase:
 *   delay = sum over its units u of blocks(u) * block_us * (s_u - 1) + its devices' spikes,
 * block_us being the rank's own measured compute time per block in that step unless fixed.
 *
 * Detection. The coordinator keeps, per device, an EWMA m_d and mean absolute deviation v_d
 * of its compute time per block; a device whose lower band m_d - v_d stays above threshold x
 * the median of the devices' m for `patience` consecutive steps is declared a straggler, once.
 *
 * Pacing. After each step a rank waits until a deadline on its step's work time (the host
 * sink), so that step periods become regular at the price of the wait: the bound m + gamma * v
 * of the work time's EWMA (mode ewma), or a streaming estimate of a quantile of the work time
 * (mode quantile), which does not wander with each slow step the way the EWMA bound does. */
#ifndef AF_STRAGGLER_H
#define AF_STRAGGLER_H

#include <stdint.h>

#include "../../common/af_result.h"

/* The slowdown factor of a unit (>= 1). */
double af_throttle_factor(double base, double slowdown, double exponent, double degradation);

/* The spike delay in microseconds of `device` in executed step `step` (0 when none). */
double af_spike_us(uint64_t seed, int64_t step, int64_t device, double rate, double median_us,
                   double sigma);

/* Busy-waits for us microseconds of the monotonic clock; returns the time actually spent. */
double af_spin_us(double us);
/* Waits for us microseconds, sleeping through all but the last stretch (which it spins), so a
 * wait does not take a core from another rank; returns the time actually spent. */
double af_wait_us(double us);

typedef struct af_straggler {
    int64_t devices;
    double alpha;
    double threshold;
    int64_t patience;
    double *mean;     /* per device: EWMA of compute time per block (us) */
    double *dev;      /* per device: EWMA of |x - mean| */
    int64_t *samples; /* per device: measurements taken */
    int64_t *over;    /* per device: consecutive steps over the bound */
    uint8_t *flagged; /* per device: declared a straggler */
    double *scratch;  /* devices: for the median */
    double median;    /* of the last update */
} af_straggler_t;

/* Allocates (before the seal). */
af_result_t af_straggler_init(af_straggler_t *s, int64_t devices, double alpha, double threshold,
                              int64_t patience);
void af_straggler_destroy(af_straggler_t *s);

/* One step's measurements: per_block_us[d] > 0 for every device that computed blocks (0: no
 * sample this step). Writes the devices newly declared stragglers to out (ascending) and
 * returns how many. A device needs `patience` samples before it can be declared. */
int64_t af_straggler_update(af_straggler_t *s, const double *per_block_us, int64_t *out);

/* The quantile pacer's histogram: AF_PACER_BINS_PER_OCTAVE bins per doubling of the work time
 * from AF_PACER_LO_US (work below it falls in the first bin, above the top in the last: the
 * top is 2^(AF_PACER_BINS / AF_PACER_BINS_PER_OCTAVE) = 2^32 us, over an hour). */
#define AF_PACER_BINS            512
#define AF_PACER_BINS_PER_OCTAVE 16
#define AF_PACER_LO_US           1.0
/* Once this many steps are counted, every count is halved (rounding down), so the histogram
 * weighs the steps of the last tens of thousands most in a run whose work time drifts. */
#define AF_PACER_WINDOW 65536

enum { AF_PACER_EWMA = 0, AF_PACER_QUANTILE = 1 };

typedef struct af_pacer {
    int mode; /* AF_PACER_EWMA or AF_PACER_QUANTILE */
    double gamma;
    double alpha;
    double quantile; /* quantile mode: the deadline's quantile in [0.5, 0.999] */
    int64_t warmup;
    int64_t min_counted; /* quantile mode: steps counted before the first wait, ceil(1/(1-q)) */
    double mean;         /* EWMA of the work time (us) */
    double dev;          /* EWMA of |work - mean| */
    int64_t n;           /* steps seen */
    /* Quantile mode: counts of the work times per log-scale bin, and their sum (<= window). */
    uint32_t hist[AF_PACER_BINS];
    uint32_t counted;
} af_pacer_t;

/* EWMA pacing: the deadline is mean + gamma * deviation of an EWMA (weight alpha). */
void af_pacer_init(af_pacer_t *p, double gamma, double alpha, int64_t warmup);
/* Quantile pacing: the deadline is a streaming estimate of the `quantile` of the work time.
 * Besides the warm-up, the pacer waits nothing until it has counted ceil(1 / (1 - quantile))
 * steps (2 at 0.5, 100 at 0.99, 1,000 at 0.999): before that the quantile cannot lie below
 * the largest work time seen, and one slow start-up step would set the deadline for the run.
 * The estimator is a fixed log-scale histogram inside the struct (no allocation; deterministic
 * given the work times): the deadline lies in the same bin as the exact quantile of the counted
 * steps (the ceil(quantile * n)-th smallest), so within a factor 2^(1/16) (4.4%) of it, until the
 * first halving; after it, of the halved counts' weighted quantile. A higher quantile never gives
 * a lower deadline on the same work times. */
void af_pacer_init_quantile(af_pacer_t *p, double quantile, int64_t warmup);
/* The deadline (us) the next step's work would be padded to: the EWMA bound or the quantile
 * estimate; 0 before any step. Does not check the warm-up. */
double af_pacer_deadline(const af_pacer_t *p);
/* Given this step's work time, the time to wait before the next step (0 during the warm-up or
 * when the step already ran past the deadline), the deadline taken before this step counts;
 * then folds the work time into the EWMA or the histogram. */
double af_pacer_sink(af_pacer_t *p, double work_us);

#endif
