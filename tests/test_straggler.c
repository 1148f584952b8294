/* Unit tests of sim/straggler: the slowdown curve, the spike draws (deterministic, at their
 * rate, log-normal around their median), the calibrated busy wait, the straggler detector
 * (declares a persistently slow device after `patience` steps and never a healthy one, with the
 * median over the measured devices), the EWMA pacer (no wait in the warm-up, then exactly up to
 * the EWMA bound, never a negative wait) and the quantile pacer (its deadline within its stated
 * error of a known distribution's quantile, monotone in the quantile, no wait in the warm-up). */
#include "sim/fleet/straggler.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/af_alloc.h"
#include "common/af_time.h"

static void test_throttle_factor_follows_the_curve(void **state)
{
    (void)state;
    assert_true(af_throttle_factor(1.0, 3.0, 1.0, 0.0) == 1.0);
    assert_true(af_throttle_factor(1.0, 3.0, 1.0, 1.0) == 4.0);
    assert_true(af_throttle_factor(1.0, 3.0, 1.0, 0.5) == 2.5);
    assert_true(fabs(af_throttle_factor(1.0, 3.0, 2.0, 0.5) - 1.75) < 1e-15);
    /* Degradation outside [0, 1] is clamped; the base multiplies. */
    assert_true(af_throttle_factor(2.0, 3.0, 1.0, 7.0) == 8.0);
    assert_true(af_throttle_factor(2.0, 3.0, 1.0, -1.0) == 2.0);
    /* slowdown 0: only the base. */
    assert_true(af_throttle_factor(1.5, 0.0, 1.0, 1.0) == 1.5);
}

static void test_spikes_are_deterministic_at_their_rate_and_median(void **state)
{
    (void)state;
    const int64_t N = 200000;
    int64_t hits = 0;
    double *v = malloc(sizeof(double) * (size_t)N);
    assert_non_null(v);
    int64_t n = 0;
    for (int64_t s = 1; s <= N; ++s) {
        double a = af_spike_us(42, s, 7, 0.05, 300.0, 0.5);
        double b = af_spike_us(42, s, 7, 0.05, 300.0, 0.5);
        assert_true(a == b);
        assert_true(a >= 0);
        if (a > 0) {
            hits++;
            v[n++] = log(a / 300.0);
        }
    }
    /* Rate 5% within 5 standard errors. */
    double rate = (double)hits / (double)N;
    assert_true(fabs(rate - 0.05) < 5 * sqrt(0.05 * 0.95 / (double)N));
    /* log(spike / median) is normal(0, sigma): mean ~ 0, sd ~ 0.5. */
    double m = 0;
    double q = 0;
    for (int64_t i = 0; i < n; ++i) {
        m += v[i];
    }
    m /= (double)n;
    for (int64_t i = 0; i < n; ++i) {
        q += (v[i] - m) * (v[i] - m);
    }
    double sd = sqrt(q / (double)n);
    assert_true(fabs(m) < 0.03);
    assert_true(fabs(sd - 0.5) < 0.02);
    free(v);
    /* Another seed or device draws differently; rate 0 never spikes; sigma 0 is the median. */
    int differ = 0;
    for (int64_t s = 1; s <= 1000; ++s) {
        differ += af_spike_us(42, s, 7, 0.5, 300, 0.5) != af_spike_us(43, s, 7, 0.5, 300, 0.5);
        assert_true(af_spike_us(42, s, 7, 0.0, 300, 0.5) == 0.0);
        double x = af_spike_us(42, s, 7, 1.0, 300, 0.0);
        assert_true(x == 300.0);
    }
    assert_true(differ > 100);
}

static void test_spin_waits_at_least_the_time_asked(void **state)
{
    (void)state;
    double t0 = af_now_us();
    double spent = af_spin_us(300.0);
    double wall = af_now_us() - t0;
    assert_true(spent >= 300.0);
    assert_true(wall >= 300.0);
    assert_true(af_spin_us(0.0) == 0.0);
    t0 = af_now_us();
    spent = af_wait_us(1500.0);
    assert_true(spent >= 1500.0);
    assert_true(af_now_us() - t0 >= 1500.0);
}

/* Per-block times: every device t, except `slow` (factor x) from step `from` on. */
static void feed(double *x, int64_t D, int64_t slow, double factor, int64_t step, int64_t from)
{
    for (int64_t d = 0; d < D; ++d) {
        /* A little deterministic noise, +-10%. */
        double noise = 1.0 + 0.1 * sin((double)(d * 131 + step * 17));
        x[d] = 10.0 * noise * (d == slow && step >= from ? factor : 1.0);
    }
}

static void test_detector_declares_the_slow_device_after_patience(void **state)
{
    (void)state;
    const int64_t D = 9;
    af_straggler_t s;
    assert_int_equal(af_straggler_init(&s, D, 0.2, 2.0, 10), AF_OK);
    double x[9];
    int64_t out[9];
    int64_t declared_at = -1;
    for (int64_t step = 1; step <= 200; ++step) {
        feed(x, D, 4, 5.0, step, 50);
        int64_t n = af_straggler_update(&s, x, out);
        if (n > 0) {
            assert_int_equal(n, 1);
            assert_int_equal(out[0], 4);
            assert_int_equal(declared_at, -1); /* declared once */
            declared_at = step;
        }
    }
    /* Not before the slowdown plus the patience; not long after either. */
    assert_true(declared_at >= 50 + 10 - 1);
    assert_true(declared_at <= 50 + 40);
    assert_true(s.flagged[4] == 1);
    for (int64_t d = 0; d < D; ++d) {
        if (d != 4) {
            assert_true(s.flagged[d] == 0);
        }
    }
    /* The median is over the healthy devices: about 10. */
    assert_true(s.median > 8.0 && s.median < 12.0);
    af_straggler_destroy(&s);
}

static void test_detector_ignores_transient_spikes_and_idle_devices(void **state)
{
    (void)state;
    const int64_t D = 6;
    af_straggler_t s;
    assert_int_equal(af_straggler_init(&s, D, 0.1, 2.0, 20), AF_OK);
    double x[6];
    int64_t out[6];
    for (int64_t step = 1; step <= 500; ++step) {
        feed(x, D, -1, 1.0, step, 0);
        /* Every 25th step one device is 50x slow for a single step. */
        if (step % 25 == 0) {
            x[step / 25 % D] *= 50.0;
        }
        /* Device 5 has no blocks after step 100: no sample, never declared. */
        if (step > 100) {
            x[5] = 0.0;
        }
        assert_int_equal(af_straggler_update(&s, x, out), 0);
    }
    for (int64_t d = 0; d < D; ++d) {
        assert_true(s.flagged[d] == 0);
    }
    af_straggler_destroy(&s);
}

static void test_detector_needs_patience_consecutive_steps(void **state)
{
    (void)state;
    const int64_t D = 4;
    af_straggler_t s;
    assert_int_equal(af_straggler_init(&s, D, 1.0, 2.0, 5), AF_OK); /* alpha 1: no memory */
    double x[4] = {10, 10, 10, 10};
    int64_t out[4];
    /* Slow for 4 steps, normal for one, slow for 4: never 5 in a row. */
    for (int round = 0; round < 6; ++round) {
        for (int k = 0; k < 5; ++k) {
            x[2] = k < 4 ? 50 : 10;
            assert_int_equal(af_straggler_update(&s, x, out), 0);
        }
    }
    /* Slow from now on. With alpha 1 the first slow step also sets the deviation to the jump,
     * so the lower band rises above the bound from the second: declared on the sixth. */
    x[2] = 50;
    for (int k = 0; k < 5; ++k) {
        assert_int_equal(af_straggler_update(&s, x, out), 0);
    }
    assert_int_equal(af_straggler_update(&s, x, out), 1);
    assert_int_equal(out[0], 2);
    af_straggler_destroy(&s);
}

static void test_pacer_waits_up_to_the_bound_after_warmup(void **state)
{
    (void)state;
    af_pacer_t p;
    af_pacer_init(&p, 2.0, 0.5, 3);
    /* Warm-up: no wait. */
    assert_true(af_pacer_sink(&p, 100) == 0.0);
    assert_true(af_pacer_sink(&p, 100) == 0.0);
    assert_true(af_pacer_sink(&p, 200) == 0.0);
    /* mean: 100 -> 100 -> 150; dev: 0 -> 0 -> 50. Bound 150 + 2 * 50 = 250. */
    assert_true(fabs(p.mean - 150.0) < 1e-12 && fabs(p.dev - 50.0) < 1e-12);
    double w = af_pacer_sink(&p, 120);
    assert_true(fabs(w - 130.0) < 1e-12);
    /* A step past the bound waits nothing. */
    double bound = p.mean + 2.0 * p.dev;
    assert_true(af_pacer_sink(&p, bound + 1000) == 0.0);
    /* Over many steps the wait is never negative and work + wait is at least the bound. */
    for (int i = 0; i < 1000; ++i) {
        double work = 100 + 50 * sin(i * 0.7);
        double b = p.mean + p.gamma * p.dev;
        double s = af_pacer_sink(&p, work);
        assert_true(s >= 0);
        assert_true(work + s >= b - 1e-9);
    }
}

/* Work times with a known distribution: 50 us plus an exponential of mean 200 us, drawn by the
 * inverse of its CDF at a low-discrepancy sequence (so the sample quantiles sit close to the
 * distribution's, and the test does not depend on a random stream). */
static double exp_work(int64_t i)
{
    double u = fmod((double)(i + 1) * 0.6180339887498949, 1.0);
    return 50.0 - 200.0 * log1p(-u);
}

static double exp_quantile(double q)
{
    return 50.0 - 200.0 * log1p(-q);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a;
    double y = *(const double *)b;
    return (x > y) - (x < y);
}

static const double QS[] = {0.5, 0.9, 0.99, 0.999};
#define NQ ((int)(sizeof QS / sizeof QS[0]))

static void test_quantile_pacer_estimates_a_known_distribution(void **state)
{
    (void)state;
    const int64_t n = 20000; /* below the halving window: the stated bin error holds exactly */
    double *v = malloc(sizeof(double) * (size_t)n);
    assert_non_null(v);
    af_pacer_t p[NQ];
    for (int j = 0; j < NQ; ++j) {
        af_pacer_init_quantile(&p[j], QS[j], 20);
    }
    for (int64_t i = 0; i < n; ++i) {
        v[i] = exp_work(i);
        for (int j = 0; j < NQ; ++j) {
            (void)af_pacer_sink(&p[j], v[i]);
        }
    }
    qsort(v, (size_t)n, sizeof v[0], cmp_double);
    const double bin = exp2(1.0 / AF_PACER_BINS_PER_OCTAVE); /* 1.044 */
    for (int j = 0; j < NQ; ++j) {
        double est = af_pacer_deadline(&p[j]);
        /* The exact sample quantile: the ceil(q n)-th smallest. Same bin: within a factor. */
        double exact = v[(int64_t)ceil(QS[j] * (double)n) - 1];
        assert_true(est <= exact * bin && est >= exact / bin);
        /* And within 5% of the distribution's quantile. */
        assert_true(fabs(est / exp_quantile(QS[j]) - 1.0) < 0.05);
    }
    free(v);
    /* Past several halvings of the counts the estimate still holds to 5%. */
    for (int j = 0; j < NQ; ++j) {
        af_pacer_init_quantile(&p[j], QS[j], 0);
    }
    for (int64_t i = 0; i < 5 * AF_PACER_WINDOW; ++i) {
        for (int j = 0; j < NQ; ++j) {
            (void)af_pacer_sink(&p[j], exp_work(i));
        }
    }
    for (int j = 0; j < NQ; ++j) {
        assert_true(p[j].counted < AF_PACER_WINDOW);
        assert_true(fabs(af_pacer_deadline(&p[j]) / exp_quantile(QS[j]) - 1.0) < 0.05);
    }
}

static void test_quantile_pacer_is_monotone_in_the_quantile(void **state)
{
    (void)state;
    /* A heavy-tailed stream: a base of 70-80 us and 5% spikes of median 400 us (log-normal),
     * long enough to cross the halving of the counts twice. */
    static const double qs[] = {0.5, 0.6, 0.9, 0.95, 0.99, 0.995, 0.999};
    enum { N = (int)(sizeof qs / sizeof qs[0]) };
    af_pacer_t p[N];
    for (int j = 0; j < N; ++j) {
        af_pacer_init_quantile(&p[j], qs[j], 5);
    }
    for (int64_t i = 0; i < 3 * AF_PACER_WINDOW; ++i) {
        double work = 70.0 + 10.0 * fmod((double)i * 0.7548776662466927, 1.0) +
                      af_spike_us(42, i, 0, 0.05, 400.0, 0.8);
        double prev_deadline = 0;
        double prev_sink = 0;
        for (int j = 0; j < N; ++j) {
            double d = af_pacer_deadline(&p[j]);
            double s = af_pacer_sink(&p[j], work);
            assert_true(s >= 0);
            if (j > 0) {
                assert_true(d >= prev_deadline);
                /* Once every pacer waits (0.999 counts 1,000 steps first), so do the waits. */
                assert_true(s >= prev_sink || i < 1000);
            }
            prev_deadline = d;
            prev_sink = s;
        }
    }
}

static void test_quantile_pacer_waits_nothing_in_the_warmup(void **state)
{
    (void)state;
    af_pacer_t p;
    af_pacer_init_quantile(&p, 0.9, 10);
    /* Warm-up: no wait, even for steps far shorter than those before. */
    for (int i = 0; i < 10; ++i) {
        assert_true(af_pacer_sink(&p, i % 2 ? 1000.0 : 10.0) == 0.0);
    }
    assert_int_equal(p.n, 10);
    assert_int_equal(p.counted, 10);
    /* Then exactly up to the deadline taken before the step counts, and nothing past it. */
    for (int i = 0; i < 200; ++i) {
        double work = 100.0 + (i % 7) * 40.0;
        double d = af_pacer_deadline(&p);
        double s = af_pacer_sink(&p, work);
        assert_true(s == (d > work ? d - work : 0.0));
    }
    double d = af_pacer_deadline(&p);
    assert_true(d > 0);
    assert_true(af_pacer_sink(&p, d + 1.0) == 0.0);
    /* Without a warm-up, the first step still waits nothing (no deadline yet). */
    af_pacer_init_quantile(&p, 0.5, 0);
    assert_true(af_pacer_deadline(&p) == 0.0);
    assert_true(af_pacer_sink(&p, 100.0) == 0.0);
    assert_true(af_pacer_sink(&p, 10.0) == 0.0); /* 0.5 needs 2 steps counted */
    assert_true(af_pacer_sink(&p, 10.0) > 0.0);
    /* A high quantile waits nothing until it has counted 1/(1 - q) steps, past the warm-up:
     * before, one slow step (here the first) would be its deadline. */
    af_pacer_init_quantile(&p, 0.99, 10);
    assert_true(af_pacer_sink(&p, 20000.0) == 0.0);
    for (int i = 1; i < 100; ++i) {
        assert_true(af_pacer_sink(&p, 100.0 + i % 3) == 0.0);
    }
    d = af_pacer_deadline(&p);
    assert_true(d >= 100.0 && d < 103.0 * exp2(1.0 / AF_PACER_BINS_PER_OCTAVE));
    assert_true(fabs(af_pacer_sink(&p, 50.0) - (d - 50.0)) < 1e-9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_throttle_factor_follows_the_curve),
        cmocka_unit_test(test_spikes_are_deterministic_at_their_rate_and_median),
        cmocka_unit_test(test_spin_waits_at_least_the_time_asked),
        cmocka_unit_test(test_detector_declares_the_slow_device_after_patience),
        cmocka_unit_test(test_detector_ignores_transient_spikes_and_idle_devices),
        cmocka_unit_test(test_detector_needs_patience_consecutive_steps),
        cmocka_unit_test(test_pacer_waits_up_to_the_bound_after_warmup),
        cmocka_unit_test(test_quantile_pacer_estimates_a_known_distribution),
        cmocka_unit_test(test_quantile_pacer_is_monotone_in_the_quantile),
        cmocka_unit_test(test_quantile_pacer_waits_nothing_in_the_warmup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
