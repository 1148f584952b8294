/* Unit tests of sim/aging: the Weibull and exponential draws, the Arrhenius factor, the effect
 * of load on temperature and wear, the HEALTHY -> FADING -> DEAD state machine, scripted events
 * and determinism given the seed. */
#include "common/af_alloc.h"
#include "sim/aging.h"
#include "sim/config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BOLTZMANN_EV 8.617333262e-5

/* af_config_t is large: one static instance, reloaded by each test. */
static af_config_t cfg;

static void load_default(void)
{
    char err[256];
    assert_int_equal(af_config_load(&cfg, NULL, NULL, 0, err, sizeof err), AF_OK);
    cfg.n_events = 0;
}

static void init_aging(af_aging_t *a, int64_t devices)
{
    memset(a, 0, sizeof *a);
    assert_int_equal(af_aging_init(a, &cfg, devices), AF_OK);
    assert_int_equal(a->units, devices * cfg.units_per_device);
    assert_int_equal(a->per_device, cfg.units_per_device);
}

/* Every allocation of af_aging_init can fail: each failure is reported as AF_ERR_NOMEM with a
 * message, and leaves nothing allocated behind; the first attempt that gets all its memory
 * succeeds with every table there. */
static void test_init_reports_every_failed_allocation(void **state)
{
    (void)state;
    load_default();
    int64_t live = af_alloc_bytes_live();
    int failures = 0;
    for (int64_t n = 1;; ++n) {
        af_aging_t a;
        memset(&a, 0, sizeof a);
        af_alloc_fail_at(n);
        af_result_t rc = af_aging_init(&a, &cfg, 3);
        af_alloc_fail_at(0);
        if (rc == AF_OK) {
            assert_non_null(a.lifetime_h);
            assert_non_null(a.rate_h);
            assert_non_null(a.rate_load);
            assert_non_null(a.fading_list);
            assert_non_null(a.death_step);
            af_aging_destroy(&a);
            break;
        }
        assert_int_equal(rc, AF_ERR_NOMEM);
        assert_int_equal(af_alloc_bytes_live(), live);
        failures++;
    }
    /* One failure per table the model holds. */
    assert_int_equal(failures, 12);
    assert_int_equal(af_alloc_bytes_live(), live);
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x;
    double b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Sorted copy of n doubles (caller frees). */
static double *sorted_copy(const double *v, int64_t n)
{
    double *s = malloc(sizeof(double) * (size_t)n);
    assert_non_null(s);
    memcpy(s, v, sizeof(double) * (size_t)n);
    qsort(s, (size_t)n, sizeof(double), cmp_double);
    return s;
}

/* Empirical quantile of sorted data, linear interpolation between order statistics. */
static double quantile(const double *s, int64_t n, double q)
{
    double h = q * (double)(n - 1);
    int64_t i = (int64_t)floor(h);
    if (i >= n - 1) {
        return s[n - 1];
    }
    return s[i] + (h - (double)i) * (s[i + 1] - s[i]);
}

/* ---- Weibull lifetimes ----------------------------------------------------------------------- */

/* 100,000 units. Relative standard error of the empirical q-quantile of a Weibull sample is
 * sqrt(q / ((1-q) n)) / (k * -ln(1-q)); the worst case here (q = 0.1, k = 1.5) is 0.67% for
 * n = 100,000 (it would be 1.5% at n = 20,000, too close to the bound), the others are below
 * 0.45%. The 3% bound is thus >= 4.5 standard errors. The mean's relative standard error is
 * CV / sqrt(n) <= 0.22% (CV = 0.68 at k = 1.5), so 2% is > 9 standard errors. The KS statistic
 * is compared with the 1% critical value 1.63 / sqrt(n). */
static void check_weibull(double shape)
{
    load_default();
    cfg.seed = 987654321;
    cfg.units_per_device = 16;
    cfg.weibull_shape = shape;
    cfg.weibull_scale_hours = 43800.0;
    const int64_t devices = 6250;
    af_aging_t a;
    init_aging(&a, devices);
    const int64_t n = a.units;
    assert_int_equal(n, 100000);
    const double eta = cfg.weibull_scale_hours;

    double sum = 0.0;
    for (int64_t u = 0; u < n; ++u) {
        assert_true(isfinite(a.lifetime_h[u]) && a.lifetime_h[u] >= 0.0);
        sum += a.lifetime_h[u];
    }
    double mean = sum / (double)n;
    double mean_want = eta * tgamma(1.0 + 1.0 / shape);
    assert_true(fabs(mean - mean_want) <= 0.02 * mean_want);

    double *s = sorted_copy(a.lifetime_h, n);
    const double qs[] = {0.1, 0.25, 0.5, 0.75, 0.9};
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; ++i) {
        double want = eta * pow(-log(1.0 - qs[i]), 1.0 / shape);
        double got = quantile(s, n, qs[i]);
        if (fabs(got - want) > 0.03 * want) {
            fail_msg("k=%g q=%g: empirical quantile %g, Weibull %g", shape, qs[i], got, want);
        }
    }

    /* One-sample Kolmogorov-Smirnov against F(x) = 1 - exp(-(x/eta)^k). */
    double dmax = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        double f = 1.0 - exp(-pow(s[i] / eta, shape));
        double hi = (double)(i + 1) / (double)n - f;
        double lo = f - (double)i / (double)n;
        dmax = fmax(dmax, fmax(hi, lo));
    }
    double crit = 1.63 / sqrt((double)n);
    if (dmax >= crit) {
        fail_msg("k=%g: KS D=%g >= %g", shape, dmax, crit);
    }
    free(s);
    af_aging_destroy(&a);
}

static void test_lifetimes_follow_weibull_shape_1_5(void **state)
{
    (void)state;
    check_weibull(1.5);
}

static void test_lifetimes_follow_weibull_shape_3(void **state)
{
    (void)state;
    check_weibull(3.0);
}

/* ---- sudden failures ------------------------------------------------------------------------- */

/* 20,000 exponential draws: relative standard error of the mean 1/sqrt(n) = 0.71%, the 3%
 * bound is > 4 standard errors. */
static void test_sudden_failure_times_are_exponential(void **state)
{
    (void)state;
    load_default();
    cfg.seed = 42;
    cfg.units_per_device = 16;
    cfg.sudden_rate_per_hour = 1e-5;
    af_aging_t a;
    init_aging(&a, 1250);
    const int64_t n = a.units;
    assert_int_equal(n, 20000);
    double sum = 0.0;
    for (int64_t u = 0; u < n; ++u) {
        assert_true(isfinite(a.sudden_h[u]) && a.sudden_h[u] >= 0.0);
        sum += a.sudden_h[u];
    }
    double want = 1.0 / cfg.sudden_rate_per_hour;
    assert_true(fabs(sum / (double)n - want) <= 0.03 * want);
    /* The median of an exponential is ln 2 / lambda (relative standard error 1.0%). */
    double *s = sorted_copy(a.sudden_h, n);
    double med = quantile(s, n, 0.5);
    assert_true(fabs(med - log(2.0) * want) <= 0.04 * log(2.0) * want);
    free(s);
    af_aging_destroy(&a);

    cfg.sudden_rate_per_hour = 0.0;
    init_aging(&a, 1250);
    for (int64_t u = 0; u < a.units; ++u) {
        assert_true(isinf(a.sudden_h[u]) && a.sudden_h[u] > 0);
    }
    /* And no sudden deaths ever happen: a few steps with no wear-out possible. */
    int32_t *load = calloc((size_t)a.units, sizeof(int32_t));
    af_health_change_t *ch = calloc((size_t)a.units, sizeof *ch);
    assert_non_null(load);
    assert_non_null(ch);
    cfg.weibull_scale_hours = 1e12;
    af_aging_destroy(&a);
    init_aging(&a, 1250);
    for (int64_t step = 0; step < 5; ++step) {
        assert_int_equal(af_aging_step(&a, &cfg, step, load, 16, ch), 0);
    }
    assert_int_equal(a.dead, 0);
    free(load);
    free(ch);
    af_aging_destroy(&a);
}

/* ---- Arrhenius ------------------------------------------------------------------------------- */

static void test_arrhenius_is_one_at_reference_and_increasing(void **state)
{
    (void)state;
    const double trefs[] = {300.0, 343.15, 373.15};
    for (size_t i = 0; i < sizeof trefs / sizeof trefs[0]; ++i) {
        assert_true(fabs(af_arrhenius(0.7, trefs[i], trefs[i]) - 1.0) <= 1e-15);
        assert_true(fabs(af_arrhenius(1.1, trefs[i], trefs[i]) - 1.0) <= 1e-15);
    }
    double prev = af_arrhenius(0.7, 343.15, 250.0);
    assert_true(prev > 0.0 && prev < 1.0);
    for (double t = 250.5; t <= 450.0; t += 0.5) {
        double f = af_arrhenius(0.7, 343.15, t);
        assert_true(f > prev);
        prev = f;
    }
    assert_true(af_arrhenius(0.7, 343.15, 353.15) > 1.0);
    double want = exp(0.7 / BOLTZMANN_EV * (1.0 / 343.15 - 1.0 / 353.15));
    assert_true(fabs(af_arrhenius(0.7, 343.15, 353.15) - want) <= 1e-12 * want);
    want = exp(0.7 / BOLTZMANN_EV * (1.0 / 343.15 - 1.0 / 318.15));
    assert_true(fabs(af_arrhenius(0.7, 343.15, 318.15) - want) <= 1e-12 * want);
    /* Zero activation energy: no acceleration at any temperature. */
    assert_true(fabs(af_arrhenius(0.0, 343.15, 400.0) - 1.0) <= 1e-15);
}

/* ---- load, temperature, hotspots ------------------------------------------------------------- */

static void test_load_raises_temperature_and_aging(void **state)
{
    (void)state;
    load_default();
    cfg.seed = 7;
    cfg.units_per_device = 16;
    cfg.sudden_rate_per_hour = 0.0;
    const int64_t devices = 8;
    const int64_t capacity = 16;
    af_aging_t idle;
    af_aging_t busy;
    init_aging(&idle, devices);
    init_aging(&busy, devices);
    const int64_t n = idle.units;
    int32_t *zero = calloc((size_t)n, sizeof(int32_t));
    int32_t *full = calloc((size_t)n, sizeof(int32_t));
    af_health_change_t *ch = calloc((size_t)n, sizeof *ch);
    assert_non_null(zero);
    assert_non_null(full);
    assert_non_null(ch);
    for (int64_t u = 0; u < n; ++u) {
        full[u] = (int32_t)capacity;
    }
    assert_int_equal(af_aging_step(&idle, &cfg, 0, zero, capacity, ch), 0);
    assert_int_equal(af_aging_step(&busy, &cfg, 0, full, capacity, ch), 0);
    const double hot_max = cfg.hotspot_device_k + cfg.hotspot_unit_k;
    for (int64_t u = 0; u < n; ++u) {
        assert_true(fabs(busy.temp_k[u] - idle.temp_k[u] - cfg.load_delta_k) <= 1e-9);
        assert_true(fabs(idle.temp_k[u] - (cfg.t_ambient_k + idle.temp_off_k[u])) <= 1e-9);
        assert_true(busy.age_h[u] > idle.age_h[u]);
        assert_true(idle.age_h[u] > 0.0);
        /* One step at the idle temperature: age = dt * AF(T). */
        double want = cfg.sim_hours_per_step *
                      af_arrhenius(cfg.ea_ev, cfg.t_ref_k, cfg.t_ambient_k + idle.temp_off_k[u]);
        assert_true(fabs(idle.age_h[u] - want) <= 1e-12 * want);
        assert_true(idle.temp_off_k[u] >= 0.0 && idle.temp_off_k[u] <= hot_max);
    }
    /* The device part of the offset is shared by the device's units: within one device offsets
     * differ by at most the unit hotspot. */
    for (int64_t d = 0; d < devices; ++d) {
        double lo = INFINITY;
        double hi = -INFINITY;
        for (int64_t k = 0; k < idle.per_device; ++k) {
            double o = idle.temp_off_k[d * idle.per_device + k];
            lo = fmin(lo, o);
            hi = fmax(hi, o);
        }
        assert_true(hi - lo <= cfg.hotspot_unit_k);
    }
    /* Half load: half the temperature rise. */
    af_aging_t half;
    init_aging(&half, devices);
    for (int64_t u = 0; u < n; ++u) {
        full[u] = (int32_t)(capacity / 2);
    }
    assert_int_equal(af_aging_step(&half, &cfg, 0, full, capacity, ch), 0);
    for (int64_t u = 0; u < n; ++u) {
        assert_true(fabs(half.temp_k[u] - idle.temp_k[u] - 0.5 * cfg.load_delta_k) <= 1e-9);
        assert_true(half.age_h[u] > idle.age_h[u] && half.age_h[u] < busy.age_h[u]);
    }
    free(zero);
    free(full);
    free(ch);
    af_aging_destroy(&idle);
    af_aging_destroy(&busy);
    af_aging_destroy(&half);
}

static void test_hotspot_offsets_lie_in_range(void **state)
{
    (void)state;
    load_default();
    const int64_t seeds[] = {1, 2, 20261129};
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; ++i) {
        cfg.seed = seeds[i];
        cfg.hotspot_device_k = 6.0 + (double)i;
        cfg.hotspot_unit_k = 4.0 - (double)i;
        af_aging_t a;
        init_aging(&a, 64);
        double hot_max = cfg.hotspot_device_k + cfg.hotspot_unit_k;
        double lo = INFINITY;
        double hi = -INFINITY;
        for (int64_t u = 0; u < a.units; ++u) {
            assert_true(a.temp_off_k[u] >= 0.0 && a.temp_off_k[u] <= hot_max);
            lo = fmin(lo, a.temp_off_k[u]);
            hi = fmax(hi, a.temp_off_k[u]);
        }
        /* Not degenerate: the offsets spread over most of the range. */
        assert_true(hi - lo > 0.5 * hot_max);
        af_aging_destroy(&a);
    }
}

/* ---- state machine --------------------------------------------------------------------------- */

static int64_t count_state(const af_aging_t *a, int s)
{
    int64_t n = 0;
    for (int64_t u = 0; u < a->units; ++u) {
        n += a->state[u] == s;
    }
    return n;
}

static void test_state_machine_transitions_and_corruption_probability(void **state)
{
    (void)state;
    load_default();
    cfg.seed = 314159;
    cfg.units_per_device = 8;
    cfg.fade_window = 0.1;
    cfg.sudden_rate_per_hour = 2e-6; /* some units die suddenly, HEALTHY or FADING */
    const int64_t devices = 6;
    const int64_t capacity = 8;
    af_aging_t a;
    init_aging(&a, devices);
    const int64_t n = a.units;
    const double w = cfg.fade_window;
    int32_t *load = calloc((size_t)n, sizeof(int32_t));
    int8_t *shadow = calloc((size_t)n, 1);
    int8_t *prev = calloc((size_t)n, 1);
    double *prev_p = calloc((size_t)n, sizeof(double));
    double *prev_age = calloc((size_t)n, sizeof(double));
    af_health_change_t *ch = calloc((size_t)n, sizeof *ch);
    assert_non_null(load);
    assert_non_null(shadow);
    assert_non_null(prev);
    assert_non_null(prev_p);
    assert_non_null(prev_age);
    assert_non_null(ch);
    for (int64_t u = 0; u < n; ++u) {
        load[u] = (int32_t)(u % (capacity + 1)); /* constant loads, different temperatures */
        assert_int_equal(a.state[u], AF_HEALTHY);
        assert_int_equal(a.fade_step[u], -1);
        assert_int_equal(a.death_step[u], -1);
    }
    int64_t seen_fade = 0;
    int64_t seen_wearout = 0;
    int64_t seen_sudden = 0;
    int64_t step = 0;
    for (; step < 20000 && a.dead < n; ++step) {
        memcpy(prev, a.state, (size_t)n);
        memcpy(prev_age, a.age_h, sizeof(double) * (size_t)n);
        int64_t nc = af_aging_step(&a, &cfg, step, load, capacity, ch);
        assert_true(nc >= 0 && nc <= n);
        for (int64_t i = 0; i < nc; ++i) {
            int64_t u = ch[i].unit;
            assert_true(u >= 0 && u < n);
            if (ch[i].state == AF_FADING) {
                assert_int_equal(shadow[u], AF_HEALTHY);
                assert_int_equal(ch[i].cause, AF_CAUSE_WEAROUT);
                assert_true(a.age_h[u] >= (1.0 - w) * a.lifetime_h[u]);
                assert_true(a.age_h[u] < a.lifetime_h[u]);
                assert_int_equal(a.fade_step[u], step);
                seen_fade++;
            } else {
                assert_int_equal(ch[i].state, AF_DEAD);
                assert_int_not_equal(shadow[u], AF_DEAD);
                assert_int_equal(a.death_step[u], step);
                assert_int_equal(a.cause[u], ch[i].cause);
                if (ch[i].cause == AF_CAUSE_SUDDEN) {
                    assert_true(a.hours >= a.sudden_h[u]);
                    seen_sudden++;
                } else {
                    assert_int_equal(ch[i].cause, AF_CAUSE_WEAROUT);
                    assert_true(a.age_h[u] >= a.lifetime_h[u]);
                    assert_true(a.hours < a.sudden_h[u]);
                    seen_wearout++;
                }
            }
            shadow[u] = ch[i].state;
        }
        /* The changes account for every difference of state. */
        assert_memory_equal(shadow, a.state, (size_t)n);
        assert_int_equal(a.fading, count_state(&a, AF_FADING));
        assert_int_equal(a.dead, count_state(&a, AF_DEAD));
        assert_true(fabs(a.hours - (double)(step + 1) * cfg.sim_hours_per_step) <= 1e-6);
        for (int64_t u = 0; u < n; ++u) {
            int s = a.state[u];
            double p = af_aging_p_corrupt(&a, &cfg, u);
            if (s == AF_HEALTHY) {
                /* No missed transition. */
                assert_true(a.age_h[u] < (1.0 - w) * a.lifetime_h[u]);
                assert_true(a.hours < a.sudden_h[u]);
                assert_true(a.age_h[u] > prev_age[u]);
                assert_true(p == 0.0);
            } else if (s == AF_FADING) {
                assert_true(a.age_h[u] < a.lifetime_h[u]);
                assert_true(a.hours < a.sudden_h[u]);
                assert_true(p > 0.0 && p <= cfg.p_max);
                if (prev[u] == AF_FADING) {
                    assert_true(p >= prev_p[u]);
                }
            } else {
                assert_true(p == 0.0);
                assert_true(a.death_step[u] >= 0 && a.death_step[u] <= step);
                if (prev[u] == AF_DEAD) {
                    /* The dead do not age. */
                    assert_true(a.age_h[u] == prev_age[u]);
                }
            }
            if (a.fade_step[u] >= 0 && a.death_step[u] >= 0) {
                assert_true(a.fade_step[u] <= a.death_step[u]);
            }
            prev_p[u] = p;
        }
    }
    /* Every unit dies eventually, and every path was taken. */
    assert_int_equal(a.dead, n);
    assert_int_equal(a.fading, 0);
    assert_true(seen_fade > 0);
    assert_true(seen_wearout > 0);
    assert_true(seen_sudden > 0);
    free(load);
    free(shadow);
    free(prev);
    free(prev_p);
    free(prev_age);
    free(ch);
    af_aging_destroy(&a);
}

/* ---- scripted events ------------------------------------------------------------------------- */

static void set_event(int i, int64_t step, int action, int64_t device, int64_t lo, int64_t hi)
{
    af_event_cfg_t *e = &cfg.events[i];
    memset(e, 0, sizeof *e);
    e->step = step;
    e->action = action;
    e->device = device;
    e->unit_lo = lo;
    e->unit_hi = hi;
    e->set_mask = 15;
    e->index = i + 1;
}

static void expect_changes(const af_health_change_t *ch, int64_t nc, const int32_t *units,
                           int8_t state, int64_t want)
{
    assert_int_equal(nc, want);
    for (int64_t i = 0; i < want; ++i) {
        assert_int_equal(ch[i].unit, units[i]);
        assert_int_equal(ch[i].state, state);
        assert_int_equal(ch[i].cause, AF_CAUSE_SCRIPTED);
    }
}

static void test_scripted_events_kill_and_fade(void **state)
{
    (void)state;
    load_default();
    cfg.seed = 11;
    cfg.units_per_device = 4;
    cfg.sudden_rate_per_hour = 0.0;
    const int64_t U = cfg.units_per_device;
    cfg.n_events = 6;
    set_event(0, 5, AF_EVENT_KILL, 1, 2, 3);
    set_event(1, 7, AF_EVENT_FADE, 2, 0, 1);
    set_event(2, 9, AF_EVENT_KILL, 1, 1, 3);  /* 2 and 3 are already dead */
    set_event(3, 9, AF_EVENT_FADE, 2, 0, 2);  /* 0 and 1 are already fading */
    set_event(4, 11, AF_EVENT_KILL, 2, 0, 0); /* a FADING unit dies */
    set_event(5, 11, AF_EVENT_FADE, 1, 1, 2); /* dead units do not fade */
    af_aging_t a;
    init_aging(&a, 4);
    const int64_t n = a.units;
    int32_t *load = calloc((size_t)n, sizeof(int32_t));
    af_health_change_t *ch = calloc((size_t)n, sizeof *ch);
    assert_non_null(load);
    assert_non_null(ch);
    for (int64_t step = 0; step < 13; ++step) {
        int64_t nc = af_aging_step(&a, &cfg, step, load, 8, ch);
        if (step == 5) {
            const int32_t want[] = {(int32_t)(U + 2), (int32_t)(U + 3)};
            expect_changes(ch, nc, want, AF_DEAD, 2);
            assert_int_equal(a.dead, 2);
            assert_int_equal(a.death_step[U + 2], 5);
            assert_int_equal(a.cause[U + 3], AF_CAUSE_SCRIPTED);
        } else if (step == 7) {
            const int32_t want[] = {(int32_t)(2 * U), (int32_t)(2 * U + 1)};
            expect_changes(ch, nc, want, AF_FADING, 2);
            assert_int_equal(a.fading, 2);
            for (int64_t k = 0; k < 2; ++k) {
                int64_t u = 2 * U + k;
                assert_int_equal(a.state[u], AF_FADING);
                assert_int_equal(a.fade_step[u], 7);
                /* The precursor window starts now. */
                assert_true(fabs(a.age_h[u] - (1.0 - cfg.fade_window) * a.lifetime_h[u]) <=
                            1e-9 * a.lifetime_h[u]);
                double p = af_aging_p_corrupt(&a, &cfg, u);
                assert_true(p > 0.0 && p <= cfg.p_max);
            }
        } else if (step == 9) {
            /* Kills come before fades in the events' order. */
            assert_int_equal(nc, 2);
            assert_int_equal(ch[0].unit, U + 1);
            assert_int_equal(ch[0].state, AF_DEAD);
            assert_int_equal(ch[0].cause, AF_CAUSE_SCRIPTED);
            assert_int_equal(ch[1].unit, 2 * U + 2);
            assert_int_equal(ch[1].state, AF_FADING);
            assert_int_equal(ch[1].cause, AF_CAUSE_SCRIPTED);
            assert_int_equal(a.dead, 3);
            assert_int_equal(a.fading, 3);
            assert_int_equal(a.fade_step[2 * U], 7); /* not restarted */
        } else if (step == 11) {
            const int32_t want[] = {(int32_t)(2 * U)};
            expect_changes(ch, nc, want, AF_DEAD, 1);
            assert_int_equal(a.dead, 4);
            assert_int_equal(a.fading, 2);
            assert_int_equal(a.fade_step[2 * U], 7);
            assert_int_equal(a.death_step[2 * U], 11);
            assert_true(af_aging_p_corrupt(&a, &cfg, 2 * U) == 0.0);
        } else {
            /* Nothing else happens in so few steps of so long lifetimes. */
            assert_int_equal(nc, 0);
        }
        assert_int_equal(a.dead, count_state(&a, AF_DEAD));
        assert_int_equal(a.fading, count_state(&a, AF_FADING));
    }
    /* A scripted fade is a normal precursor: the unit dies of wear-out at the end of it. */
    int64_t u = 2 * U + 1;
    for (int64_t step = 13; step < 100000 && a.state[u] != AF_DEAD; ++step) {
        (void)af_aging_step(&a, &cfg, step, load, 8, ch);
    }
    assert_int_equal(a.state[u], AF_DEAD);
    assert_int_equal(a.cause[u], AF_CAUSE_WEAROUT);
    assert_true(a.death_step[u] > 11);
    free(load);
    free(ch);
    af_aging_destroy(&a);
}

/* An event is keyed by its step alone: a kill of a healthy unit at step 0 and one at a step that
 * never runs. */
static void test_scripted_kill_only_fires_at_its_step(void **state)
{
    (void)state;
    load_default();
    cfg.seed = 5;
    cfg.units_per_device = 2;
    cfg.sudden_rate_per_hour = 0.0;
    cfg.n_events = 2;
    set_event(0, 0, AF_EVENT_KILL, 0, 0, 1);
    set_event(1, 1000000, AF_EVENT_KILL, 1, 0, 1);
    af_aging_t a;
    init_aging(&a, 2);
    int32_t load[4] = {0, 0, 0, 0};
    af_health_change_t ch[4];
    int64_t nc = af_aging_step(&a, &cfg, 0, load, 4, ch);
    const int32_t want[] = {0, 1};
    expect_changes(ch, nc, want, AF_DEAD, 2);
    for (int64_t step = 1; step < 20; ++step) {
        assert_int_equal(af_aging_step(&a, &cfg, step, load, 4, ch), 0);
    }
    /* Re-running step 0's event kills nobody: they are dead already. */
    assert_int_equal(af_aging_step(&a, &cfg, 0, load, 4, ch), 0);
    assert_int_equal(a.dead, 2);
    af_aging_destroy(&a);
}

/* ---- determinism ----------------------------------------------------------------------------- */

static int64_t run_steps(af_aging_t *a, int64_t steps, int64_t capacity, int32_t *load,
                         af_health_change_t *log, int64_t *log_step, int64_t log_cap)
{
    int64_t total = 0;
    af_health_change_t *ch = calloc((size_t)a->units, sizeof *ch);
    assert_non_null(ch);
    for (int64_t s = 0; s < steps; ++s) {
        for (int64_t u = 0; u < a->units; ++u) {
            load[u] = (int32_t)((u * 7 + s * 3) % (capacity + 1)); /* varies, but reproducible */
        }
        int64_t nc = af_aging_step(a, &cfg, s, load, capacity, ch);
        for (int64_t i = 0; i < nc; ++i) {
            assert_true(total < log_cap);
            log[total] = ch[i];
            log_step[total] = s;
            total++;
        }
    }
    free(ch);
    return total;
}

static void test_same_seed_is_bitwise_reproducible(void **state)
{
    (void)state;
    load_default();
    cfg.seed = 123456789;
    cfg.units_per_device = 8;
    cfg.weibull_scale_hours = 4000.0; /* short lives: many changes within 200 steps */
    cfg.sudden_rate_per_hour = 1e-4;
    cfg.n_events = 1;
    set_event(0, 50, AF_EVENT_FADE, 3, 0, 7);
    const int64_t devices = 8;
    const int64_t steps = 200;
    af_aging_t a;
    af_aging_t b;
    init_aging(&a, devices);
    init_aging(&b, devices);
    const int64_t n = a.units;
    size_t bytes = sizeof(double) * (size_t)n;
    assert_memory_equal(a.lifetime_h, b.lifetime_h, bytes);
    assert_memory_equal(a.sudden_h, b.sudden_h, bytes);
    assert_memory_equal(a.temp_off_k, b.temp_off_k, bytes);

    const int64_t cap = 2 * n;
    af_health_change_t *la = calloc((size_t)cap, sizeof *la);
    af_health_change_t *lb = calloc((size_t)cap, sizeof *lb);
    int64_t *sa = calloc((size_t)cap, sizeof(int64_t));
    int64_t *sb = calloc((size_t)cap, sizeof(int64_t));
    int32_t *load = calloc((size_t)n, sizeof(int32_t));
    assert_non_null(la);
    assert_non_null(lb);
    assert_non_null(sa);
    assert_non_null(sb);
    assert_non_null(load);
    int64_t na = run_steps(&a, steps, 16, load, la, sa, cap);
    int64_t nb = run_steps(&b, steps, 16, load, lb, sb, cap);
    assert_true(na > 10); /* the comparison is not vacuous */
    assert_int_equal(na, nb);
    for (int64_t i = 0; i < na; ++i) {
        assert_int_equal(sa[i], sb[i]);
        assert_int_equal(la[i].unit, lb[i].unit);
        assert_int_equal(la[i].state, lb[i].state);
        assert_int_equal(la[i].cause, lb[i].cause);
    }
    assert_memory_equal(a.age_h, b.age_h, bytes);
    assert_memory_equal(a.temp_k, b.temp_k, bytes);
    assert_memory_equal(a.state, b.state, (size_t)n);
    assert_memory_equal(a.cause, b.cause, (size_t)n);
    assert_memory_equal(a.fade_step, b.fade_step, sizeof(int64_t) * (size_t)n);
    assert_memory_equal(a.death_step, b.death_step, sizeof(int64_t) * (size_t)n);
    af_aging_destroy(&b);

    /* Another seed: other lifetimes (all of them, up to a freak coincidence). */
    cfg.seed = 123456790;
    init_aging(&b, devices);
    int64_t same = 0;
    for (int64_t u = 0; u < n; ++u) {
        same += a.lifetime_h[u] == b.lifetime_h[u];
    }
    assert_int_equal(same, 0);
    assert_memory_not_equal(a.sudden_h, b.sudden_h, bytes);
    free(la);
    free(lb);
    free(sa);
    free(sb);
    free(load);
    af_aging_destroy(&a);
    af_aging_destroy(&b);
}

/* The draws are keyed by (seed, unit) alone: a bigger fleet starts with the same units. */
static void test_draws_do_not_depend_on_fleet_size(void **state)
{
    (void)state;
    load_default();
    cfg.seed = 99;
    cfg.units_per_device = 4;
    af_aging_t small;
    af_aging_t big;
    init_aging(&small, 3);
    init_aging(&big, 9);
    size_t bytes = sizeof(double) * (size_t)small.units;
    assert_memory_equal(small.lifetime_h, big.lifetime_h, bytes);
    assert_memory_equal(small.sudden_h, big.sudden_h, bytes);
    assert_memory_equal(small.temp_off_k, big.temp_off_k, bytes);
    af_aging_destroy(&small);
    af_aging_destroy(&big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lifetimes_follow_weibull_shape_1_5),
        cmocka_unit_test(test_lifetimes_follow_weibull_shape_3),
        cmocka_unit_test(test_sudden_failure_times_are_exponential),
        cmocka_unit_test(test_init_reports_every_failed_allocation),
        cmocka_unit_test(test_arrhenius_is_one_at_reference_and_increasing),
        cmocka_unit_test(test_load_raises_temperature_and_aging),
        cmocka_unit_test(test_hotspot_offsets_lie_in_range),
        cmocka_unit_test(test_state_machine_transitions_and_corruption_probability),
        cmocka_unit_test(test_scripted_events_kill_and_fade),
        cmocka_unit_test(test_scripted_kill_only_fires_at_its_step),
        cmocka_unit_test(test_same_seed_is_bitwise_reproducible),
        cmocka_unit_test(test_draws_do_not_depend_on_fleet_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
