/* Unit tests of sim/aging: the Weibull and exponential draws, the Arrhenius factor, the effect
 * of load on temperature and wear, the HEALTHY -> FADING -> DEAD state machine, scripted events,
 * determinism given the seed, and the event-driven model against a dense reference of the same
 * closed-form arithmetic (every unit every step), with loads changed through the placement's
 * list of changed units. */
#include "common/af_alloc.h"
#include "sim/fleet/aging.h"
#include "sim/io/config.h"
#include "sim/plan/placement.h"

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

/* Unit u's sudden-failure time and its cause, as the model drew them. */
static double sudden_h(const af_aging_t *a, int64_t u)
{
    int cause = 0;
    return af_aging_sudden_h(a, u, &cause);
}
static int sudden_cause(const af_aging_t *a, int64_t u)
{
    int cause = 0;
    (void)af_aging_sudden_h(a, u, &cause);
    return cause;
}
/* Bit for bit. */
static int same_double(double x, double y)
{
    return memcmp(&x, &y, sizeof x) == 0;
}

/* Unit u's temperature at its last load, under cfg. */
static double temp_k(const af_aging_t *a, int64_t u)
{
    return af_aging_temp_k(a, &cfg, u);
}
/* Every unit's sudden-failure time under cfg, in a new array. */
static double *sudden_all(const af_aging_t *a)
{
    double *t = malloc(sizeof(double) * (size_t)(a->units > 0 ? a->units : 1));
    assert_non_null(t);
    for (int64_t u = 0; u < a->units; ++u) {
        t[u] = sudden_h(a, u);
    }
    return t;
}
static double temp_off(const af_aging_t *a, int64_t u)
{
    return af_aging_temp_off_k(a, &cfg, u);
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
            assert_non_null(a.seg);
            assert_non_null(a.sudden_cause);
            assert_non_null(a.fading_list);
            assert_non_null(a.queue.heap);
            assert_non_null(a.queue.pos);
            af_aging_destroy(&a);
            break;
        }
        assert_int_equal(rc, AF_ERR_NOMEM);
        assert_int_equal(af_alloc_bytes_live(), live);
        failures++;
    }
    /* One failure per table the model holds: seven per-unit tables (segment, lifetime, sudden
     * cause, state, cause, fade step, fading list) and the event queue's two (heap and position
     * index, which holds the dead units' death steps). */
    assert_int_equal(failures, 9);
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
        assert_true(isfinite(sudden_h(&a, u)) && sudden_h(&a, u) >= 0.0);
        sum += sudden_h(&a, u);
    }
    double want = 1.0 / cfg.sudden_rate_per_hour;
    assert_true(fabs(sum / (double)n - want) <= 0.03 * want);
    /* The median of an exponential is ln 2 / lambda (relative standard error 1.0%). */
    double *all = sudden_all(&a);
    double *s = sorted_copy(all, n);
    free(all);
    double med = quantile(s, n, 0.5);
    assert_true(fabs(med - log(2.0) * want) <= 0.04 * log(2.0) * want);
    free(s);
    af_aging_destroy(&a);

    cfg.sudden_rate_per_hour = 0.0;
    init_aging(&a, 1250);
    for (int64_t u = 0; u < a.units; ++u) {
        assert_true(isinf(sudden_h(&a, u)) && sudden_h(&a, u) > 0);
    }
    /* And no sudden deaths ever happen: a few steps with no wear-out possible. */
    int32_t *load = calloc((size_t)a.units, sizeof(int32_t));
    af_health_change_t *ch = calloc((size_t)a.units, sizeof *ch);
    assert_non_null(load);
    assert_non_null(ch);
    cfg.weibull_scale_hours = 1e12;
    af_aging_destroy(&a);
    init_aging(&a, 1250);
    for (int64_t step = 1; step <= 5; ++step) {
        assert_int_equal(af_aging_step(&a, &cfg, step, load, NULL, 0, 16, ch), 0);
    }
    assert_int_equal(a.dead, 0);
    free(load);
    free(ch);
    af_aging_destroy(&a);
}

/* Whole-device and whole-node losses: over T hours each device (node) is lost with probability
 * 1 - exp(-rate T), every unit of it in the same step with the domain's cause; the counts at a
 * fixed seed lie within 4 standard deviations of the binomial mean. With both domains on, a
 * unit goes with whichever comes first, and a node takes all its devices. */
static void test_device_and_node_losses_follow_their_rates(void **state)
{
    (void)state;
    load_default();
    cfg.seed = 7;
    cfg.units_per_device = 4;
    cfg.devices_per_node = 4;
    cfg.sudden_rate_per_hour = 0.0;
    cfg.weibull_scale_hours = 1e12; /* no wear-out */
    cfg.sim_hours_per_step = 10.0;
    const int64_t D = 2000;
    const int64_t steps = 300; /* T = 3000 hours */
    const double T = 3000.0;
    for (int pass = 0; pass < 4; ++pass) {
        /* 0 devices, 1 nodes, 2 both, 3 links (a device's link: the device leaves the job). */
        cfg.device_rate_per_hour = pass == 0 || pass == 2 ? 1e-4 : 0.0;
        cfg.node_rate_per_hour = pass == 1 || pass == 2 ? 5e-5 : 0.0;
        cfg.link_rate_per_hour = pass == 3 ? 1e-4 : 0.0;
        af_aging_t a;
        init_aging(&a, D);
        int32_t *load = calloc((size_t)a.units, sizeof(int32_t));
        af_health_change_t *ch = calloc((size_t)(2 * a.units), sizeof *ch);
        assert_non_null(load);
        assert_non_null(ch);
        for (int64_t st = 1; st <= steps; ++st) {
            int64_t nc = af_aging_step(&a, &cfg, st, load, NULL, 0, 16, ch);
            for (int64_t i = 0; i < nc; ++i) {
                assert_int_equal(ch[i].state, AF_DEAD);
                assert_true(ch[i].cause == (pass == 3 ? AF_CAUSE_LINK : AF_CAUSE_DEVICE) ||
                            (pass != 3 && ch[i].cause == AF_CAUSE_NODE));
                /* At the loss's drawn time (its device's, node's or link's: the unit's first
                 * loss time), inside the step. */
                assert_true(ch[i].time_h == sudden_h(&a, ch[i].unit));
                assert_true(ch[i].time_h > (double)(st - 1) * cfg.sim_hours_per_step &&
                            ch[i].time_h <= (double)st * cfg.sim_hours_per_step);
            }
        }
        /* Per device: all its units dead in one step with one cause, or none. */
        int64_t lost_dev = 0;
        int64_t lost_node_devs = 0;
        int64_t lost_links = 0;
        for (int64_t d = 0; d < D; ++d) {
            int64_t u0 = d * cfg.units_per_device;
            for (int64_t j = 1; j < cfg.units_per_device; ++j) {
                assert_int_equal(af_aging_death_step(&a, u0 + j), af_aging_death_step(&a, u0));
                assert_int_equal(a.cause[u0 + j], a.cause[u0]);
            }
            lost_dev += a.cause[u0] == AF_CAUSE_DEVICE;
            lost_node_devs += a.cause[u0] == AF_CAUSE_NODE;
            lost_links += a.cause[u0] == AF_CAUSE_LINK;
        }
        /* A node's loss takes every device of it still alive, in one step; a device lost by
         * itself before that keeps its own cause and an earlier step. */
        int64_t lost_nodes = 0;
        for (int64_t n0 = 0; n0 < D; n0 += cfg.devices_per_node) {
            int64_t at = -1;
            for (int64_t d = n0; d < n0 + cfg.devices_per_node; ++d) {
                int64_t u0 = d * cfg.units_per_device;
                if (a.cause[u0] == AF_CAUSE_NODE) {
                    assert_true(at < 0 || af_aging_death_step(&a, u0) == at);
                    at = af_aging_death_step(&a, u0);
                }
            }
            lost_nodes += at >= 0;
            for (int64_t d = n0; at >= 0 && d < n0 + cfg.devices_per_node; ++d) {
                int64_t u0 = d * cfg.units_per_device;
                assert_true(a.cause[u0] == AF_CAUSE_NODE ||
                            (a.cause[u0] == AF_CAUSE_DEVICE && af_aging_death_step(&a, u0) <= at));
            }
        }
        const double nodes = (double)(D / cfg.devices_per_node);
        const double pd = 1.0 - exp(-cfg.device_rate_per_hour * T);
        const double pn = 1.0 - exp(-cfg.node_rate_per_hour * T);
        if (pass == 0) {
            /* Devices alone: a binomial of D. */
            assert_int_equal(lost_node_devs, 0);
            double sd = sqrt((double)D * pd * (1.0 - pd));
            assert_true(lost_dev > 0 && fabs((double)lost_dev - (double)D * pd) <= 4.0 * sd);
        } else if (pass == 1) {
            /* Nodes alone: a binomial of the nodes, each taking all its devices. */
            assert_int_equal(lost_dev, 0);
            assert_int_equal(lost_node_devs, lost_nodes * cfg.devices_per_node);
            double sn = sqrt(nodes * pn * (1.0 - pn));
            assert_true(lost_nodes > 0 && fabs((double)lost_nodes - nodes * pn) <= 4.0 * sn);
        } else if (pass == 3) {
            /* Links alone: a binomial of D, like the devices' own losses. */
            assert_int_equal(lost_dev + lost_node_devs, 0);
            const double pl = 1.0 - exp(-cfg.link_rate_per_hour * T);
            double sd = sqrt((double)D * pl * (1.0 - pl));
            assert_true(lost_links > 0 && fabs((double)lost_links - (double)D * pl) <= 4.0 * sd);
        } else {
            /* Both: a device is gone by T with probability 1 - exp(-(device + node rate) T);
             * the node's share makes the devices of a node move together, so the bound takes
             * the nodes' variance (devices_per_node times the devices'). */
            double lt = (cfg.device_rate_per_hour + cfg.node_rate_per_hour) * T;
            double pg = 1.0 - exp(-lt);
            double sg = sqrt((double)D * pg * (1.0 - pg) * (double)cfg.devices_per_node);
            double gone = (double)(lost_dev + lost_node_devs);
            assert_true(lost_dev > 0 && lost_nodes > 0);
            assert_true(fabs(gone - (double)D * pg) <= 4.0 * sg);
        }
        free(load);
        free(ch);
        af_aging_destroy(&a);
    }
}

/* Whole-device and whole-node loss times of Weibull shape k and scale 1/rate: every domain's
 * time (read from its first unit, which no other cause takes first) against F(t) = 1 -
 * exp(-(rate t)^k) by a one-sample Kolmogorov-Smirnov test at the 1% level, and the mean
 * against Gamma(1 + 1/k) / rate within 4 standard errors. A shape the draw ignored would fail
 * both (the exponential's D against a shape of 0.6 or 2.5 is near 0.1 here). */
static void check_domain_shape(int node, double k)
{
    load_default();
    cfg.seed = 11;
    cfg.units_per_device = 1;
    cfg.devices_per_node = node ? 2 : 1;
    cfg.sudden_rate_per_hour = 0.0;
    cfg.weibull_scale_hours = 1e9;
    const double rate = 1e-4;
    if (node) {
        cfg.node_rate_per_hour = rate;
        cfg.node_shape = k;
    } else {
        cfg.device_rate_per_hour = rate;
        cfg.device_shape = k;
    }
    const int64_t D = 20000;
    af_aging_t a;
    init_aging(&a, D);
    const int64_t per = cfg.devices_per_node;
    const int64_t n = D / per;
    double *t = malloc(sizeof(double) * (size_t)n);
    assert_non_null(t);
    double sum = 0.0;
    double sum2 = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        t[i] = sudden_h(&a, i * per);
        assert_int_equal(sudden_cause(&a, i * per), node ? AF_CAUSE_NODE : AF_CAUSE_DEVICE);
        for (int64_t j = 1; j < per; ++j) {
            assert_true(sudden_h(&a, i * per + j) == t[i]); /* one time for the whole node */
        }
        sum += t[i];
        sum2 += t[i] * t[i];
    }
    double mean = sum / (double)n;
    double want = tgamma(1.0 + 1.0 / k) / rate;
    double sd = sqrt(sum2 / (double)n - mean * mean);
    if (fabs(mean - want) > 4.0 * sd / sqrt((double)n)) {
        fail_msg("%s shape %g: mean %g, Weibull %g", node ? "node" : "device", k, mean, want);
    }
    double *s = sorted_copy(t, n);
    double dmax = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        double f = 1.0 - exp(-pow(rate * s[i], k));
        dmax = fmax(dmax, fmax((double)(i + 1) / (double)n - f, f - (double)i / (double)n));
    }
    if (dmax >= 1.63 / sqrt((double)n)) {
        fail_msg("%s shape %g: KS D=%g >= %g", node ? "node" : "device", k, dmax,
                 1.63 / sqrt((double)n));
    }
    free(s);
    free(t);
    af_aging_destroy(&a);
}

static void test_device_and_node_loss_times_follow_their_weibull_shapes(void **state)
{
    (void)state;
    check_domain_shape(0, 0.6); /* infant mortality */
    check_domain_shape(0, 2.5); /* wear-out */
    check_domain_shape(1, 0.6);
    check_domain_shape(1, 2.5);
    check_domain_shape(0, 1.0); /* the exponential of the default */
}

/* Shape 1 is the exponential draw itself, bit for bit: the default scenario's failure history
 * does not move when the shape keys exist; another shape moves every time but keeps its
 * rank (the same uniform draw, a monotone map). */
static void test_shape_one_draws_the_exponential_bit_for_bit(void **state)
{
    (void)state;
    load_default();
    cfg.units_per_device = 1;
    cfg.sudden_rate_per_hour = 0.0;
    cfg.device_rate_per_hour = 1e-4;
    af_aging_t a;
    af_aging_t b;
    init_aging(&a, 500);
    double *ta = sudden_all(&a);
    cfg.device_shape = 2.0;
    init_aging(&b, 500);
    double *tb = sudden_all(&b);
    for (int64_t u = 0; u < 500; ++u) {
        /* exponential E = rate x t; Weibull of shape 2: sqrt(E) / rate */
        double e = ta[u] * 1e-4;
        assert_true(fabs(tb[u] - sqrt(e) / 1e-4) <= 1e-9 * tb[u]);
    }
    af_aging_destroy(&b);
    free(tb);
    cfg.device_shape = 1.0;
    init_aging(&b, 500);
    tb = sudden_all(&b);
    assert_memory_equal(ta, tb, sizeof(double) * 500);
    free(ta);
    free(tb);
    af_aging_destroy(&a);
    af_aging_destroy(&b);
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
    assert_int_equal(af_aging_step(&idle, &cfg, 1, zero, NULL, 0, capacity, ch), 0);
    assert_int_equal(af_aging_step(&busy, &cfg, 1, full, NULL, 0, capacity, ch), 0);
    const double hot_max = cfg.hotspot_device_k + cfg.hotspot_unit_k;
    for (int64_t u = 0; u < n; ++u) {
        assert_true(fabs(temp_k(&busy, u) - temp_k(&idle, u) - cfg.load_delta_k) <= 1e-9);
        assert_true(fabs(temp_k(&idle, u) - (cfg.t_ambient_k + temp_off(&idle, u))) <= 1e-9);
        assert_true(af_aging_age_h(&busy, u) > af_aging_age_h(&idle, u));
        assert_true(af_aging_age_h(&idle, u) > 0.0);
        /* One step at the idle temperature: age = dt * AF(T). */
        double want = cfg.sim_hours_per_step *
                      af_arrhenius(cfg.ea_ev, cfg.t_ref_k, cfg.t_ambient_k + temp_off(&idle, u));
        assert_true(fabs(af_aging_age_h(&idle, u) - want) <= 1e-12 * want);
        assert_true(temp_off(&idle, u) >= 0.0 && temp_off(&idle, u) <= hot_max);
    }
    /* The device part of the offset is shared by the device's units: within one device offsets
     * differ by at most the unit hotspot. */
    for (int64_t d = 0; d < devices; ++d) {
        double lo = INFINITY;
        double hi = -INFINITY;
        for (int64_t k = 0; k < idle.per_device; ++k) {
            double o = temp_off(&idle, d * idle.per_device + k);
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
    assert_int_equal(af_aging_step(&half, &cfg, 1, full, NULL, 0, capacity, ch), 0);
    for (int64_t u = 0; u < n; ++u) {
        assert_true(fabs(temp_k(&half, u) - temp_k(&idle, u) - 0.5 * cfg.load_delta_k) <= 1e-9);
        assert_true(af_aging_age_h(&half, u) > af_aging_age_h(&idle, u) &&
                    af_aging_age_h(&half, u) < af_aging_age_h(&busy, u));
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
            assert_true(temp_off(&a, u) >= 0.0 && temp_off(&a, u) <= hot_max);
            lo = fmin(lo, temp_off(&a, u));
            hi = fmax(hi, temp_off(&a, u));
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
        assert_int_equal(af_aging_death_step(&a, u), -1);
    }
    int64_t seen_fade = 0;
    int64_t seen_wearout = 0;
    int64_t seen_sudden = 0;
    int64_t step = 1;
    for (; step <= 20000 && a.dead < n; ++step) {
        memcpy(prev, a.state, (size_t)n);
        for (int64_t u = 0; u < n; ++u) {
            prev_age[u] = af_aging_age_h(&a, u);
        }
        int64_t nc = af_aging_step(&a, &cfg, step, load, NULL, 0, capacity, ch);
        assert_true(nc >= 0 && nc <= n);
        const double h0 = (double)(step - 1) * cfg.sim_hours_per_step;
        const double h1 = (double)step * cfg.sim_hours_per_step;
        for (int64_t i = 0; i < nc; ++i) {
            int64_t u = ch[i].unit;
            assert_true(u >= 0 && u < n);
            /* Its time: inside the step; a sudden death's is its drawn time, bit for bit; a
             * wear-out fade's or death's, where the unit's age, linear over the step (a
             * constant load), reaches the threshold. */
            assert_true(ch[i].time_h > h0 && ch[i].time_h <= h1);
            if (ch[i].cause == AF_CAUSE_SUDDEN) {
                assert_true(ch[i].time_h == sudden_h(&a, u));
            } else {
                double thr =
                    ch[i].state == AF_FADING ? (1.0 - w) * a.lifetime_h[u] : a.lifetime_h[u];
                double want =
                    h0 + (thr - prev_age[u]) / (af_aging_age_h(&a, u) - prev_age[u]) * (h1 - h0);
                assert_true(fabs(ch[i].time_h - want) <= 1e-9 * h1);
            }
            if (ch[i].state == AF_FADING) {
                assert_int_equal(shadow[u], AF_HEALTHY);
                assert_int_equal(ch[i].cause, AF_CAUSE_WEAROUT);
                assert_true(af_aging_age_h(&a, u) >= (1.0 - w) * a.lifetime_h[u]);
                assert_true(af_aging_age_h(&a, u) < a.lifetime_h[u]);
                assert_int_equal(a.fade_step[u], step);
                seen_fade++;
            } else {
                assert_int_equal(ch[i].state, AF_DEAD);
                assert_int_not_equal(shadow[u], AF_DEAD);
                assert_int_equal(af_aging_death_step(&a, u), step);
                assert_int_equal(a.cause[u], ch[i].cause);
                if (ch[i].cause == AF_CAUSE_SUDDEN) {
                    assert_true(a.hours >= sudden_h(&a, u));
                    seen_sudden++;
                } else {
                    assert_int_equal(ch[i].cause, AF_CAUSE_WEAROUT);
                    assert_true(af_aging_age_h(&a, u) >= a.lifetime_h[u]);
                    assert_true(a.hours < sudden_h(&a, u));
                    seen_wearout++;
                }
            }
            shadow[u] = ch[i].state;
        }
        /* The changes account for every difference of state. */
        assert_memory_equal(shadow, a.state, (size_t)n);
        assert_int_equal(a.fading, count_state(&a, AF_FADING));
        assert_int_equal(a.dead, count_state(&a, AF_DEAD));
        /* The simulated hours of step s are s steps' worth, exactly. */
        assert_true(a.hours == (double)step * cfg.sim_hours_per_step);
        for (int64_t u = 0; u < n; ++u) {
            int s = a.state[u];
            double p = af_aging_p_corrupt(&a, &cfg, u);
            double age = af_aging_age_h(&a, u);
            if (s == AF_HEALTHY) {
                /* No missed transition. */
                assert_true(age < (1.0 - w) * a.lifetime_h[u]);
                assert_true(a.hours < sudden_h(&a, u));
                assert_true(age > prev_age[u]);
                assert_true(p == 0.0);
            } else if (s == AF_FADING) {
                assert_true(age < a.lifetime_h[u]);
                assert_true(a.hours < sudden_h(&a, u));
                assert_true(p > 0.0 && p <= cfg.p_max);
                if (prev[u] == AF_FADING) {
                    assert_true(p >= prev_p[u]);
                }
            } else {
                assert_true(p == 0.0);
                assert_true(af_aging_death_step(&a, u) >= 0 && af_aging_death_step(&a, u) <= step);
                if (prev[u] == AF_DEAD) {
                    /* The dead do not age. */
                    assert_true(age == prev_age[u]);
                }
            }
            if (a.fade_step[u] >= 0 && af_aging_death_step(&a, u) >= 0) {
                assert_true(a.fade_step[u] <= af_aging_death_step(&a, u));
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
        int64_t nc = af_aging_step(&a, &cfg, step, load, NULL, 0, 8, ch);
        if (step == 5) {
            const int32_t want[] = {(int32_t)(U + 2), (int32_t)(U + 3)};
            expect_changes(ch, nc, want, AF_DEAD, 2);
            assert_int_equal(a.dead, 2);
            assert_int_equal(af_aging_death_step(&a, U + 2), 5);
            assert_int_equal(a.cause[U + 3], AF_CAUSE_SCRIPTED);
        } else if (step == 7) {
            const int32_t want[] = {(int32_t)(2 * U), (int32_t)(2 * U + 1)};
            expect_changes(ch, nc, want, AF_FADING, 2);
            assert_int_equal(a.fading, 2);
            for (int64_t k = 0; k < 2; ++k) {
                int64_t u = 2 * U + k;
                assert_int_equal(a.state[u], AF_FADING);
                assert_int_equal(a.fade_step[u], 7);
                /* The precursor window starts now, exactly there. */
                assert_true(af_aging_age_h(&a, u) == (1.0 - cfg.fade_window) * a.lifetime_h[u]);
                assert_true(af_aging_degradation(&a, &cfg, u) <= 1e-9);
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
            assert_int_equal(af_aging_death_step(&a, 2 * U), 11);
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
        (void)af_aging_step(&a, &cfg, step, load, NULL, 0, 8, ch);
    }
    assert_int_equal(a.state[u], AF_DEAD);
    assert_int_equal(a.cause[u], AF_CAUSE_WEAROUT);
    assert_true(af_aging_death_step(&a, u) > 11);
    free(load);
    free(ch);
    af_aging_destroy(&a);
}

/* An event is keyed by its step alone: a kill of a healthy unit at step 0, one at a step that
 * never runs, and a later one of the same units, which are dead already. */
static void test_scripted_kill_only_fires_at_its_step(void **state)
{
    (void)state;
    load_default();
    cfg.seed = 5;
    cfg.units_per_device = 2;
    cfg.sudden_rate_per_hour = 0.0;
    cfg.n_events = 3;
    set_event(0, 0, AF_EVENT_KILL, 0, 0, 1);
    set_event(1, 1000000, AF_EVENT_KILL, 1, 0, 1);
    set_event(2, 10, AF_EVENT_KILL, 0, 0, 1);
    af_aging_t a;
    init_aging(&a, 2);
    int32_t load[4] = {0, 0, 0, 0};
    af_health_change_t ch[4];
    int64_t nc = af_aging_step(&a, &cfg, 0, load, NULL, 0, 4, ch);
    const int32_t want[] = {0, 1};
    expect_changes(ch, nc, want, AF_DEAD, 2);
    for (int64_t step = 1; step < 20; ++step) {
        /* Step 10 kills nobody: its units are dead already. */
        assert_int_equal(af_aging_step(&a, &cfg, step, load, NULL, 0, 4, ch), 0);
    }
    assert_int_equal(a.dead, 2);
    assert_int_equal(af_aging_death_step(&a, 0), 0);
    af_aging_destroy(&a);
}

/* ---- determinism ----------------------------------------------------------------------------- */

static int64_t run_steps(af_aging_t *a, int64_t steps, int64_t capacity, int32_t *load,
                         af_health_change_t *log, int64_t *log_step, int64_t log_cap)
{
    int64_t total = 0;
    af_health_change_t *ch = calloc((size_t)(2 * a->units), sizeof *ch);
    int32_t *changed = calloc((size_t)a->units, sizeof(int32_t));
    assert_non_null(ch);
    assert_non_null(changed);
    for (int64_t s = 1; s <= steps; ++s) {
        int64_t n_changed = 0;
        for (int64_t u = 0; u < a->units; ++u) {
            int32_t l = (int32_t)((u * 7 + s * 3) % (capacity + 1)); /* varies, but reproducible */
            if (l != load[u]) {
                changed[n_changed++] = (int32_t)u;
            }
            load[u] = l;
        }
        int64_t nc = af_aging_step(a, &cfg, s, load, changed, n_changed, capacity, ch);
        for (int64_t i = 0; i < nc; ++i) {
            assert_true(total < log_cap);
            log[total] = ch[i];
            log_step[total] = s;
            total++;
        }
    }
    free(ch);
    free(changed);
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
    assert_memory_equal(a.sudden_cause, b.sudden_cause, (size_t)n);
    double *ta = sudden_all(&a);
    double *tb = sudden_all(&b);
    assert_memory_equal(ta, tb, bytes);
    free(tb);

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
    memset(load, 0, sizeof(int32_t) * (size_t)n);
    int64_t nb = run_steps(&b, steps, 16, load, lb, sb, cap);
    assert_true(na > 10); /* the comparison is not vacuous */
    assert_int_equal(na, nb);
    for (int64_t i = 0; i < na; ++i) {
        assert_int_equal(sa[i], sb[i]);
        assert_int_equal(la[i].unit, lb[i].unit);
        assert_int_equal(la[i].state, lb[i].state);
        assert_int_equal(la[i].cause, lb[i].cause);
    }
    assert_memory_equal(a.seg, b.seg, sizeof(af_aging_seg_t) * (size_t)n);
    /* The run's end: the temperatures, /units' column, in the queue's memory, are the ones the
     * units' rates were computed at. */
    af_aging_columns(&a, &cfg);
    af_aging_columns(&b, &cfg);
    assert_non_null(a.temp_k);
    assert_memory_equal(a.temp_k, b.temp_k, bytes);
    for (int64_t u = 0; u < n; ++u) {
        assert_true(same_double(a.temp_k[u], temp_k(&a, u)));
        if (a.seg[u].rate_load >= 0) {
            assert_true(same_double(a.seg[u].rate_h,
                                    cfg.sim_hours_per_step *
                                        af_arrhenius(cfg.ea_ev, cfg.t_ref_k, a.temp_k[u])));
        }
    }
    assert_memory_equal(a.state, b.state, (size_t)n);
    assert_memory_equal(a.cause, b.cause, (size_t)n);
    assert_memory_equal(a.fade_step, b.fade_step, sizeof(int32_t) * (size_t)n);
    for (int64_t u = 0; u < n; ++u) {
        assert_int_equal(af_aging_death_step(&a, u), af_aging_death_step(&b, u));
    }
    af_aging_destroy(&b);

    /* Another seed: other lifetimes (all of them, up to a freak coincidence). */
    cfg.seed = 123456790;
    init_aging(&b, devices);
    int64_t same = 0;
    for (int64_t u = 0; u < n; ++u) {
        same += a.lifetime_h[u] == b.lifetime_h[u];
    }
    assert_int_equal(same, 0);
    tb = sudden_all(&b);
    assert_memory_not_equal(ta, tb, bytes);
    free(ta);
    free(tb);
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
    assert_memory_equal(small.sudden_cause, big.sudden_cause, (size_t)small.units);
    for (int64_t u = 0; u < small.units; ++u) {
        assert_true(same_double(temp_k(&small, u), temp_k(&big, u)));
    }
    double *ts = sudden_all(&small);
    double *tb = sudden_all(&big);
    assert_memory_equal(ts, tb, bytes);
    free(ts);
    free(tb);
    af_aging_destroy(&small);
    af_aging_destroy(&big);
}

static uint64_t next_random(uint64_t *s)
{
    /* splitmix64: reproducible, independent of the C library. */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* ---- the event-driven model against a dense reference ------------------------------------- */

/* The reference: the arithmetic of the model as sim/fleet/aging.h defines it, evaluated the plain
 * way, every live unit every step, reading every unit's load. It takes the draws (lifetime,
 * sudden time, offsets) from a model's tables, which the tests above check, and keeps its own
 * segments, states and counts. */
typedef struct dense {
    int64_t n;
    double *base;
    double *rate;
    double *temp;
    int64_t *bstep;
    int64_t *fade;
    int64_t *death;
    int32_t *rload;
    int8_t *state;
    int8_t *cause;
    int64_t dead;
    int64_t fading;
} dense_t;

static void dense_init(dense_t *d, const af_aging_t *a)
{
    memset(d, 0, sizeof *d);
    d->n = a->units;
    size_t n = (size_t)d->n;
    d->base = calloc(n, sizeof(double));
    d->rate = calloc(n, sizeof(double));
    d->temp = calloc(n, sizeof(double));
    d->bstep = calloc(n, sizeof(int64_t));
    d->fade = calloc(n, sizeof(int64_t));
    d->death = calloc(n, sizeof(int64_t));
    d->rload = calloc(n, sizeof(int32_t));
    d->state = calloc(n, 1);
    d->cause = calloc(n, 1);
    assert_true(d->base && d->rate && d->temp && d->bstep && d->fade && d->death && d->rload &&
                d->state && d->cause);
    for (int64_t u = 0; u < d->n; ++u) {
        d->fade[u] = -1;
        d->death[u] = -1;
        d->rload[u] = -1;
        d->temp[u] = cfg.t_ambient_k + temp_off(a, u);
    }
}

static void dense_destroy(dense_t *d)
{
    free(d->base);
    free(d->rate);
    free(d->temp);
    free(d->bstep);
    free(d->fade);
    free(d->death);
    free(d->rload);
    free(d->state);
    free(d->cause);
}

static double dense_age(const dense_t *d, int64_t u, int64_t s)
{
    return d->base[u] + d->rate[u] * (double)(s - d->bstep[u]);
}

static void dense_change(dense_t *d, int64_t u, int state, int cause, int64_t step,
                         af_health_change_t *out, int64_t *n)
{
    if (state == AF_FADING) {
        if (d->state[u] != AF_HEALTHY) {
            return;
        }
        d->fade[u] = step;
        d->fading++;
    } else {
        if (d->state[u] == AF_DEAD) {
            return;
        }
        d->fading -= d->state[u] == AF_FADING;
        d->dead++;
        d->death[u] = step;
        d->cause[u] = (int8_t)cause;
    }
    d->state[u] = (int8_t)state;
    out[*n] = (af_health_change_t){(int32_t)u, (int8_t)state, (int8_t)cause, 0.0};
    (*n)++;
}

static int64_t dense_step(dense_t *d, const af_aging_t *draws, int64_t step, const int32_t *load,
                          int64_t capacity, af_health_change_t *out)
{
    int64_t n = 0;
    const double w = cfg.fade_window;
    const double hours = (double)step * cfg.sim_hours_per_step;
    for (int64_t u = 0; u < d->n; ++u) {
        if (d->state[u] == AF_DEAD) {
            continue;
        }
        if (load[u] != d->rload[u]) {
            d->base[u] = dense_age(d, u, step - 1);
            d->bstep[u] = step - 1;
            double frac = (double)load[u] / (double)capacity;
            d->temp[u] = cfg.t_ambient_k + temp_off(draws, u) + cfg.load_delta_k * frac;
            d->rate[u] = cfg.sim_hours_per_step * af_arrhenius(cfg.ea_ev, cfg.t_ref_k, d->temp[u]);
            d->rload[u] = load[u];
        }
        double age = dense_age(d, u, step);
        if (hours >= sudden_h(draws, u)) {
            dense_change(d, u, AF_DEAD, AF_CAUSE_SUDDEN, step, out, &n);
        } else if (age >= draws->lifetime_h[u]) {
            dense_change(d, u, AF_DEAD, AF_CAUSE_WEAROUT, step, out, &n);
        } else if (d->state[u] == AF_HEALTHY && age >= (1.0 - w) * draws->lifetime_h[u]) {
            dense_change(d, u, AF_FADING, AF_CAUSE_WEAROUT, step, out, &n);
        }
    }
    for (int i = 0; i < cfg.n_events; ++i) {
        const af_event_cfg_t *e = &cfg.events[i];
        for (int64_t k = e->unit_lo; e->step == step && k <= e->unit_hi; ++k) {
            int64_t u = e->device * cfg.units_per_device + k;
            if (e->action == AF_EVENT_KILL) {
                dense_change(d, u, AF_DEAD, AF_CAUSE_SCRIPTED, step, out, &n);
            } else if (e->action == AF_EVENT_FADE && d->state[u] == AF_HEALTHY) {
                d->base[u] = (1.0 - w) * draws->lifetime_h[u];
                d->bstep[u] = step;
                dense_change(d, u, AF_FADING, AF_CAUSE_SCRIPTED, step, out, &n);
            }
        }
    }
    return n;
}

static double dense_degradation(const dense_t *d, const af_aging_t *draws, int64_t u, int64_t step)
{
    if (d->state[u] != AF_FADING) {
        return 0.0;
    }
    double w = cfg.fade_window * draws->lifetime_h[u];
    double start = draws->lifetime_h[u] - w;
    double frac = w > 0 ? (dense_age(d, u, step) - start) / w : 1.0;
    return frac < 0 ? 0 : frac > 1 ? 1 : frac;
}

/* Everything the rest of agefence reads from the model, unit by unit, against the reference at
 * `step`. */
static void expect_same_state(const af_aging_t *a, const dense_t *d, int64_t step)
{
    assert_int_equal(a->dead, d->dead);
    assert_int_equal(a->fading, d->fading);
    int64_t k = 0;
    for (int64_t u = 0; u < d->n; ++u) {
        if (a->state[u] != d->state[u] || a->cause[u] != d->cause[u] ||
            a->fade_step[u] != d->fade[u] || af_aging_death_step(a, u) != d->death[u]) {
            fail_msg("step %lld unit %lld: state %d/%d cause %d/%d fade %lld/%lld death "
                     "%lld/%lld (model/reference)",
                     (long long)step, (long long)u, a->state[u], d->state[u], a->cause[u],
                     d->cause[u], (long long)a->fade_step[u], (long long)d->fade[u],
                     (long long)af_aging_death_step(a, u), (long long)d->death[u]);
        }
        double want_age = dense_age(d, u, d->state[u] == AF_DEAD ? d->death[u] : step);
        if (!same_double(af_aging_age_h(a, u), want_age)) {
            fail_msg("step %lld unit %lld: age %.17g, reference %.17g", (long long)step,
                     (long long)u, af_aging_age_h(a, u), want_age);
        }
        assert_true(same_double(temp_k(a, u), d->temp[u]));
        double deg = dense_degradation(d, a, u, step);
        assert_true(same_double(af_aging_degradation(a, &cfg, u), deg));
        double p = d->state[u] == AF_FADING ? cfg.p_max * (0.1 + 0.9 * deg) : 0.0;
        assert_true(same_double(af_aging_p_corrupt(a, &cfg, u), p));
        if (d->state[u] == AF_FADING) {
            assert_true(k < a->fading);
            assert_int_equal(a->fading_list[k], u); /* ascending, every FADING unit */
            k++;
        }
    }
    assert_int_equal(k, a->fading);
}

typedef struct scenario {
    const char *name;
    uint64_t seed;
    int64_t devices;
    int64_t units_per_device;
    int64_t blocks;
    int64_t steps;
    double hours_per_step;
    double scale_hours;
    double sudden_rate;
    double fade_window;
    double load_delta_k;
    int64_t moves_per_step; /* random moves between two steps, at most */
    int64_t move_every;     /* steps between rounds of moves */
    int scripted; /* 1: kill, fade and slow events, some on the first step; 2: every unit fades
                   * on the first step */
} scenario_t;

/* Counts over a scenario, so that a comparison is known not to be vacuous. */
typedef struct seen {
    int64_t fades;
    int64_t wearouts;
    int64_t suddens;
    int64_t scripted;
    int64_t moves;
    int64_t touched;
} seen_t;

static void scripted_events(const scenario_t *sc)
{
    int64_t U = sc->units_per_device;
    if (sc->scripted == 2) {
        cfg.n_events = (int)sc->devices;
        for (int64_t dv = 0; dv < sc->devices; ++dv) {
            set_event((int)dv, 1, AF_EVENT_FADE, dv, 0, U - 1);
        }
        return;
    }
    cfg.n_events = 7;
    set_event(0, 1, AF_EVENT_KILL, 0, 0, U / 2); /* on the first step */
    set_event(1, 1, AF_EVENT_FADE, 1, 0, U - 1); /* a fade on the first step */
    set_event(2, 5, AF_EVENT_FADE, 2, 0, U - 1);
    set_event(3, 5, AF_EVENT_KILL, 2, 1, 1);      /* fades and dies in one step */
    set_event(4, 9, AF_EVENT_KILL, 1, 0, U - 1);  /* FADING units killed */
    set_event(5, 12, AF_EVENT_SLOW, 3, 0, U - 1); /* not the model's business */
    cfg.events[5].factor = 3.0;
    set_event(6, sc->steps / 2, AF_EVENT_FADE, 3, 0, U - 1);
}

/* Runs a scenario through the event-driven model and the reference side by side, the loads
 * changing by random moves through a placement between steps (some moved back at once, so a
 * listed unit can end with the load it had, and DMR-style reservations raised and released
 * without being listed); every step must give the same changes, in the same order, and the
 * same state of every unit. */
static void compare_with_dense(const scenario_t *sc, seen_t *seen)
{
    load_default();
    cfg.seed = (int64_t)sc->seed;
    cfg.units_per_device = sc->units_per_device;
    cfg.sim_hours_per_step = sc->hours_per_step;
    cfg.weibull_scale_hours = sc->scale_hours;
    cfg.sudden_rate_per_hour = sc->sudden_rate;
    cfg.fade_window = sc->fade_window;
    cfg.load_delta_k = sc->load_delta_k;
    cfg.n_events = 0;
    if (sc->scripted) {
        scripted_events(sc);
    }
    af_placement_t p;
    memset(&p, 0, sizeof p);
    assert_int_equal(
        af_placement_init(&p, sc->devices, sc->units_per_device, sc->blocks, 0.5, 1, 0), AF_OK);
    af_aging_t a;
    init_aging(&a, sc->devices);
    dense_t d;
    dense_init(&d, &a);
    const int64_t n = a.units;
    af_health_change_t *ca = calloc((size_t)(2 * n), sizeof *ca);
    af_health_change_t *cd = calloc((size_t)(2 * n), sizeof *cd);
    assert_non_null(ca);
    assert_non_null(cd);
    uint64_t rng = sc->seed * 0x9e3779b97f4a7c15ULL + 1;
    memset(seen, 0, sizeof *seen);
    for (int64_t step = 1; step <= sc->steps; ++step) {
        if (step > 1 && step % sc->move_every == 0) {
            int64_t m = (int64_t)(next_random(&rng) % (uint64_t)(sc->moves_per_step + 1));
            /* A twin's reservation: raised before the moves, released after them. */
            int64_t ru = (int64_t)(next_random(&rng) % (uint64_t)n);
            int32_t rs = af_placement_free_slot(&p, ru);
            if (rs >= 0) {
                p.slot_block[rs] = AF_SLOT_RESERVED;
                p.unit_load[ru]++;
            }
            for (int64_t i = 0; i < m; ++i) {
                int32_t b = (int32_t)(next_random(&rng) % (uint64_t)p.blocks);
                int64_t unit = (int64_t)(next_random(&rng) % (uint64_t)n);
                int32_t from = p.block_slot[b];
                int32_t to = af_placement_free_slot(&p, unit);
                if (to < 0) {
                    continue;
                }
                af_placement_move(&p, b, to);
                seen->moves++;
                if (next_random(&rng) % 4 == 0) {
                    af_placement_move(&p, b, from); /* undone: listed, but no new load */
                }
            }
            if (rs >= 0) {
                p.slot_block[rs] = AF_SLOT_FREE;
                p.unit_load[ru]--;
            }
        }
        int64_t na =
            af_aging_step(&a, &cfg, step, p.unit_load, p.changed, p.n_changed, p.capacity, ca);
        af_placement_changed_clear(&p);
        seen->touched += a.touched;
        int64_t nd = dense_step(&d, &a, step, p.unit_load, p.capacity, cd);
        if (na != nd) {
            fail_msg("%s seed %llu step %lld: %lld changes, the reference %lld", sc->name,
                     (unsigned long long)sc->seed, (long long)step, (long long)na, (long long)nd);
        }
        for (int64_t i = 0; i < na; ++i) {
            if (ca[i].unit != cd[i].unit || ca[i].state != cd[i].state ||
                ca[i].cause != cd[i].cause) {
                fail_msg("%s seed %llu step %lld change %lld: unit %d state %d cause %d, the "
                         "reference unit %d state %d cause %d",
                         sc->name, (unsigned long long)sc->seed, (long long)step, (long long)i,
                         ca[i].unit, ca[i].state, ca[i].cause, cd[i].unit, cd[i].state,
                         cd[i].cause);
            }
            seen->fades += ca[i].state == AF_FADING && ca[i].cause == AF_CAUSE_WEAROUT;
            seen->wearouts += ca[i].state == AF_DEAD && ca[i].cause == AF_CAUSE_WEAROUT;
            seen->suddens += ca[i].cause == AF_CAUSE_SUDDEN;
            seen->scripted += ca[i].cause == AF_CAUSE_SCRIPTED;
        }
        expect_same_state(&a, &d, step);
        assert_int_equal(af_aging_stale_loads(&a, p.unit_load), 0);
        if (step % 16 == 0) {
            assert_int_equal(af_evq_check(&a.queue), AF_OK);
        }
    }
    free(ca);
    free(cd);
    dense_destroy(&d);
    af_aging_destroy(&a);
    af_placement_destroy(&p);
}

/* Several seeds on fleets that age fast enough for every path: many units, sudden deaths,
 * scripted kills and fades (some on the first step), and loads moved every step. */
static void test_event_driven_model_matches_the_dense_reference(void **state)
{
    (void)state;
    const scenario_t base[] = {
        /* Fast wear-out with sudden deaths and scripted events, loads moved every step. */
        {"fast", 0, 24, 8, 600, 300, 100.0, 4000.0, 1e-4, 0.1, 40.0, 12, 1, 1},
        /* Many units, half of them wearing out within the run. */
        {"many", 0, 1500, 8, 24000, 120, 100.0, 9000.0, 2e-5, 0.05, 30.0, 200, 1, 1},
        /* Many units at the default lifetimes: most predictions lie far beyond the run. */
        {"slow", 0, 2000, 8, 32000, 150, 100.0, 43800.0, 1e-6, 0.05, 30.0, 300, 1, 1},
        /* No precursor window: wear-out is death at once (its check comes first). */
        {"nowindow", 0, 16, 4, 100, 250, 200.0, 5000.0, 5e-5, 0.0, 30.0, 6, 3, 0},
        /* Aging off: only the scripted events change anything, and nothing is ever due. */
        {"off", 0, 8, 4, 40, 60, 0.0, 43800.0, 1e-3, 0.05, 30.0, 4, 1, 1},
    };
    const uint64_t seeds[] = {1, 5, 20261129};
    for (size_t i = 0; i < sizeof base / sizeof base[0]; ++i) {
        seen_t total;
        memset(&total, 0, sizeof total);
        for (size_t j = 0; j < sizeof seeds / sizeof seeds[0]; ++j) {
            scenario_t sc = base[i];
            sc.seed = seeds[j];
            seen_t seen;
            compare_with_dense(&sc, &seen);
            total.fades += seen.fades;
            total.wearouts += seen.wearouts;
            total.suddens += seen.suddens;
            total.scripted += seen.scripted;
            total.moves += seen.moves;
        }
        /* Not vacuous: every path the scenario is meant to take was taken. */
        if (base[i].hours_per_step > 0) {
            assert_true(total.wearouts > 0);
            assert_true(total.suddens > 0);
            assert_true(total.moves > 100);
            if (base[i].fade_window > 0) {
                assert_true(total.fades > 0);
            } else {
                assert_int_equal(total.fades, 0);
            }
        } else {
            assert_int_equal(total.wearouts + total.suddens + total.fades, 0);
        }
        if (base[i].scripted) {
            assert_true(total.scripted > 0);
        }
    }
}

/* A rate so small against the age that the first crossing of the death threshold is set by the
 * rounding of age = base + rate * k, long after a scripted fade: the window is w L ~ 4e-9 hours
 * (some 600 ulps of an age near 4e4), the rate 1.5e-14 to 2e-13 per step, so the age moves by
 * one ulp every 30 to 500 steps and the division's estimate is off by tens of steps; the exact
 * correction must find the step the dense evaluation finds. Loads move now and then,
 * re-basing units mid-window. */
static void test_predictions_are_exact_where_rounding_decides(void **state)
{
    (void)state;
    scenario_t sc = {"rounding", 3, 2, 2, 6, 0, 1e-13, 43800.0, 0.0, 1e-13, 30.0, 2, 20000, 2};
    /* Enough steps for the slowest unit (idle, no hotspot) to cross. */
    load_default();
    cfg.seed = (int64_t)sc.seed;
    cfg.units_per_device = sc.units_per_device;
    af_aging_t a;
    init_aging(&a, sc.devices);
    double slowest = sc.hours_per_step * af_arrhenius(cfg.ea_ev, cfg.t_ref_k, cfg.t_ambient_k);
    for (int64_t u = 0; u < a.units; ++u) {
        int64_t k = (int64_t)(sc.fade_window * a.lifetime_h[u] / slowest);
        sc.steps = k + 1000 > sc.steps ? k + 1000 : sc.steps;
    }
    af_aging_destroy(&a);
    assert_true(sc.steps > 100000 && sc.steps < 5000000);
    seen_t seen;
    compare_with_dense(&sc, &seen);
    assert_int_equal(seen.scripted, 4);
    assert_int_equal(seen.wearouts, 4);
    assert_true(seen.moves > 0);
}

/* The cost of a step follows what happens: on 100,000 units whose loads do not change, a step
 * looks at the units that change state and at the units of its scripted events, nothing else
 * (a visit of every unit would be 100,000 a step); a load change costs the units listed. */
static void test_step_cost_follows_the_events_not_the_fleet(void **state)
{
    (void)state;
    load_default();
    cfg.seed = 77;
    cfg.units_per_device = 8;
    cfg.sudden_rate_per_hour = 1e-6;
    cfg.n_events = 1;
    set_event(0, 50, AF_EVENT_KILL, 7, 0, 7);
    const int64_t capacity = 16;
    af_aging_t a;
    init_aging(&a, 12500);
    const int64_t n = a.units;
    assert_int_equal(n, 100000);
    int32_t *load = calloc((size_t)n, sizeof(int32_t));
    int32_t *listed = calloc((size_t)n, sizeof(int32_t));
    af_health_change_t *ch = calloc((size_t)(2 * n), sizeof *ch);
    assert_non_null(load);
    assert_non_null(listed);
    assert_non_null(ch);
    for (int64_t u = 0; u < n; ++u) {
        load[u] = (int32_t)(u % 9);
    }
    af_aging_start(&a, &cfg, 1, load, capacity);
    int64_t changes = 0;
    for (int64_t step = 1; step <= 300; ++step) {
        int64_t n_listed = 0;
        if (step % 100 == 0) {
            /* 1000 units get another load, listed as the placement would list them. */
            for (int64_t i = 0; i < 1000; ++i) {
                int64_t u = (i * 97) % n;
                load[u] = (load[u] + 1) % 9;
                listed[n_listed++] = (int32_t)u;
            }
        }
        int64_t nc = af_aging_step(&a, &cfg, step, load, listed, n_listed, capacity, ch);
        int64_t scripted = step == 50 ? 8 : 0;
        /* Each unit looked at is listed, scripted, or changes state now. */
        assert_true(a.touched <= n_listed + scripted + nc);
        assert_true(a.touched >= nc - scripted);
        if (n_listed == 0 && scripted == 0) {
            assert_int_equal(a.touched, nc);
        }
        changes += nc;
    }
    assert_true(changes > 100); /* the comparison is not vacuous */
    assert_int_equal(af_aging_stale_loads(&a, load), 0);
    /* A load changed and not listed is not seen: the debug check counts it. */
    int64_t u = 0;
    while (a.state[u] == AF_DEAD) {
        u++;
    }
    load[u] = (load[u] + 1) % 9;
    assert_int_equal(af_aging_stale_loads(&a, load), 1);
    listed[0] = (int32_t)u;
    (void)af_aging_step(&a, &cfg, 301, load, listed, 1, capacity, ch);
    assert_int_equal(af_aging_stale_loads(&a, load), 0);
    free(load);
    free(listed);
    free(ch);
    af_aging_destroy(&a);
}

/* A model of a range of units (what a rank could hold) does for each of them what the
 * whole-fleet model does: same states, steps, causes and ages, and together the ranges report
 * the whole fleet's changes. */
static void test_a_range_of_units_behaves_as_in_the_whole_fleet(void **state)
{
    (void)state;
    load_default();
    cfg.seed = 4242;
    cfg.units_per_device = 8;
    cfg.weibull_scale_hours = 4000.0;
    cfg.sudden_rate_per_hour = 1e-4;
    scenario_t sc = {"ranges", 4242, 24, 8, 600, 200, 100.0, 4000.0, 1e-4, 0.1, 40.0, 10, 1, 1};
    scripted_events(&sc);
    const int64_t devices = sc.devices;
    af_placement_t p;
    memset(&p, 0, sizeof p);
    assert_int_equal(af_placement_init(&p, devices, 8, sc.blocks, 0.5, 1, 0), AF_OK);
    af_aging_t whole;
    af_aging_t part[2];
    init_aging(&whole, devices);
    const int64_t n = whole.units;
    const int64_t cut = n / 3 + 1; /* not on a device boundary */
    assert_int_equal(af_aging_init_range(&part[0], &cfg, devices, 0, cut), AF_OK);
    assert_int_equal(af_aging_init_range(&part[1], &cfg, devices, cut, n), AF_OK);
    af_aging_t bad;
    assert_int_equal(af_aging_init_range(&bad, &cfg, devices, cut, n + 1), AF_ERR_USAGE);
    af_health_change_t *cw = calloc((size_t)(2 * n), sizeof *cw);
    af_health_change_t *cp = calloc((size_t)(2 * n), sizeof *cp);
    uint8_t *hit = calloc((size_t)n, 1);
    assert_non_null(cw);
    assert_non_null(cp);
    assert_non_null(hit);
    uint64_t rng = 99;
    int64_t total = 0;
    for (int64_t step = 1; step <= sc.steps; ++step) {
        for (int64_t i = 0; step > 1 && i < sc.moves_per_step; ++i) {
            int32_t b = (int32_t)(next_random(&rng) % (uint64_t)p.blocks);
            int32_t to = af_placement_free_slot(&p, (int64_t)(next_random(&rng) % (uint64_t)n));
            if (to >= 0) {
                af_placement_move(&p, b, to);
            }
        }
        int64_t nw =
            af_aging_step(&whole, &cfg, step, p.unit_load, p.changed, p.n_changed, p.capacity, cw);
        int64_t np = 0;
        for (int k = 0; k < 2; ++k) {
            np += af_aging_step(&part[k], &cfg, step, p.unit_load, p.changed, p.n_changed,
                                p.capacity, cp + np);
        }
        af_placement_changed_clear(&p);
        assert_int_equal(np, nw);
        total += nw;
        /* The same changes: the ranges list theirs range by range. */
        memset(hit, 0, (size_t)n);
        for (int64_t i = 0; i < nw; ++i) {
            hit[cw[i].unit] += (uint8_t)(1 + cw[i].state);
        }
        for (int64_t i = 0; i < np; ++i) {
            hit[cp[i].unit] -= (uint8_t)(1 + cp[i].state);
        }
        for (int64_t u = 0; u < n; ++u) {
            assert_int_equal(hit[u], 0);
            const af_aging_t *r = u < cut ? &part[0] : &part[1];
            int64_t k = u - r->u_lo;
            assert_int_equal(r->state[k], whole.state[u]);
            assert_int_equal(r->cause[k], whole.cause[u]);
            assert_int_equal(r->fade_step[k], whole.fade_step[u]);
            assert_int_equal(af_aging_death_step(r, u), af_aging_death_step(&whole, u));
            assert_true(same_double(af_aging_age_h(r, u), af_aging_age_h(&whole, u)));
            assert_true(
                same_double(af_aging_p_corrupt(r, &cfg, u), af_aging_p_corrupt(&whole, &cfg, u)));
        }
        assert_int_equal(part[0].dead + part[1].dead, whole.dead);
        assert_int_equal(part[0].fading + part[1].fading, whole.fading);
        for (int64_t i = 0; i < part[1].fading; ++i) {
            assert_true(part[1].fading_list[i] >= cut); /* global unit numbers */
        }
    }
    assert_true(total > 50);
    free(cw);
    free(cp);
    free(hit);
    af_aging_destroy(&whole);
    af_aging_destroy(&part[0]);
    af_aging_destroy(&part[1]);
    af_placement_destroy(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lifetimes_follow_weibull_shape_1_5),
        cmocka_unit_test(test_lifetimes_follow_weibull_shape_3),
        cmocka_unit_test(test_sudden_failure_times_are_exponential),
        cmocka_unit_test(test_device_and_node_losses_follow_their_rates),
        cmocka_unit_test(test_device_and_node_loss_times_follow_their_weibull_shapes),
        cmocka_unit_test(test_shape_one_draws_the_exponential_bit_for_bit),
        cmocka_unit_test(test_init_reports_every_failed_allocation),
        cmocka_unit_test(test_arrhenius_is_one_at_reference_and_increasing),
        cmocka_unit_test(test_load_raises_temperature_and_aging),
        cmocka_unit_test(test_hotspot_offsets_lie_in_range),
        cmocka_unit_test(test_state_machine_transitions_and_corruption_probability),
        cmocka_unit_test(test_scripted_events_kill_and_fade),
        cmocka_unit_test(test_scripted_kill_only_fires_at_its_step),
        cmocka_unit_test(test_same_seed_is_bitwise_reproducible),
        cmocka_unit_test(test_draws_do_not_depend_on_fleet_size),
        cmocka_unit_test(test_event_driven_model_matches_the_dense_reference),
        cmocka_unit_test(test_predictions_are_exact_where_rounding_decides),
        cmocka_unit_test(test_step_cost_follows_the_events_not_the_fleet),
        cmocka_unit_test(test_a_range_of_units_behaves_as_in_the_whole_fleet),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
