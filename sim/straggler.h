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
 * Pacing. After each step a rank waits until the bound m + gamma * v of the EWMA of its step's
 * work time (the host sink), so that step periods become regular at the price of the wait. */
#ifndef AF_STRAGGLER_H
#define AF_STRAGGLER_H

#include <stdint.h>

#include "../common/af_result.h"

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

typedef struct af_pacer {
    double gamma;
    double alpha;
    int64_t warmup;
    double mean; /* EWMA of the work time (us) */
    double dev;  /* EWMA of |work - mean| */
    int64_t n;   /* steps seen */
} af_pacer_t;

void af_pacer_init(af_pacer_t *p, double gamma, double alpha, int64_t warmup);
/* Given this step's work time, the time to wait before the next step (0 during the warm-up or
 * when the step already ran past the bound); then folds the work time into the EWMA. */
double af_pacer_sink(af_pacer_t *p, double work_us);

#endif
