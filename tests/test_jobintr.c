/* Unit tests of sim/jobintr: job-level interruptions drawn from the seed as Poisson processes
 * at their grain (the job, a node, a device), the scripted ones at their step, and the step's
 * fixed buffer. */
#include "sim/jobintr.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

static af_config_t cfg;
static char err[1024];
static af_jobintr_hit_t hits[AF_JOBINTR_MAX_STEP];

static void load(const char *const *sets, int n)
{
    assert_int_equal(af_config_load(&cfg, NULL, sets, n, err, sizeof err), AF_OK);
}

/* The default scenario has none: every step is empty, however long the run. */
static void test_no_rate_and_no_event_makes_no_interruption(void **state)
{
    (void)state;
    load(NULL, 0);
    af_jobintr_t j;
    af_jobintr_init(&j, &cfg, 8);
    for (int64_t s = 1; s <= 100000; ++s) {
        assert_int_equal(af_jobintr_step(&j, &cfg, s, hits, AF_JOBINTR_MAX_STEP), 0);
    }
}

/* Counts over a long run match the Poisson means within 5 standard deviations, for each grain,
 * and the members struck are spread evenly (each within 5 deviations of its share). */
static void test_counts_follow_the_rates_and_spread_over_the_grain(void **state)
{
    (void)state;
    const char *sets[] = {"scenario.devices_per_node=4", "aging.sim_hours_per_step=1",
                          "interrupt.software_per_hour=0.02", "interrupt.nic_per_node_hour=0.005",
                          "interrupt.sdc_per_device_hour=0.001"};
    load(sets, 5);
    const int64_t D = 16; /* 4 nodes */
    const int64_t steps = 200000;
    af_jobintr_t j;
    af_jobintr_init(&j, &cfg, D);
    int64_t count[AF_NINTR] = {0};
    int64_t per_node[4] = {0};
    int64_t per_device[16] = {0};
    for (int64_t s = 1; s <= steps; ++s) {
        int n = af_jobintr_step(&j, &cfg, s, hits, AF_JOBINTR_MAX_STEP);
        for (int i = 0; i < n; ++i) {
            count[hits[i].cause]++;
            if (hits[i].cause == AF_INTR_software) {
                assert_int_equal(hits[i].device, -1);
                assert_int_equal(hits[i].node, -1);
            } else if (hits[i].cause == AF_INTR_nic) {
                assert_int_equal(hits[i].device, -1);
                assert_true(hits[i].node >= 0 && hits[i].node < 4);
                per_node[hits[i].node]++;
            } else {
                assert_int_equal(hits[i].cause, AF_INTR_sdc);
                assert_true(hits[i].device >= 0 && hits[i].device < D);
                assert_int_equal(hits[i].node, hits[i].device / 4);
                per_device[hits[i].device]++;
            }
        }
    }
    const double want[] = {0.02 * steps, 0.005 * 4 * steps, 0.001 * 16 * steps};
    const int causes[] = {AF_INTR_software, AF_INTR_nic, AF_INTR_sdc};
    for (int k = 0; k < 3; ++k) {
        double got = (double)count[causes[k]];
        assert_true(fabs(got - want[k]) < 5.0 * sqrt(want[k]));
    }
    for (int k = 0; k < 4; ++k) {
        double share = (double)count[AF_INTR_nic] / 4.0;
        assert_true(fabs((double)per_node[k] - share) < 5.0 * sqrt(share));
    }
    for (int k = 0; k < 16; ++k) {
        double share = (double)count[AF_INTR_sdc] / 16.0;
        assert_true(fabs((double)per_device[k] - share) < 5.0 * sqrt(share));
    }
    assert_int_equal(count[AF_INTR_network] + count[AF_INTR_nccl_watchdog] +
                         count[AF_INTR_dependency] + count[AF_INTR_hbm],
                     0);
}

/* The history is the seed's alone: a second model gives the same interruptions, and the
 * number of hours a step only regroups them (a step of 10 h takes what ten steps of 1 h do). */
static void test_the_same_seed_gives_the_same_history_at_any_step_length(void **state)
{
    (void)state;
    const char *one[] = {"scenario.devices_per_node=2", "aging.sim_hours_per_step=1",
                         "interrupt.network_per_node_hour=0.01",
                         "interrupt.dependency_per_hour=0.05"};
    load(one, 4);
    af_jobintr_t a;
    af_jobintr_t b;
    af_jobintr_init(&a, &cfg, 8);
    af_jobintr_init(&b, &cfg, 8);
    static af_jobintr_hit_t fine[20000];
    int nf = 0;
    for (int64_t s = 1; s <= 10000; ++s) {
        int n = af_jobintr_step(&a, &cfg, s, hits, AF_JOBINTR_MAX_STEP);
        af_jobintr_hit_t again[AF_JOBINTR_MAX_STEP];
        assert_int_equal(af_jobintr_step(&b, &cfg, s, again, AF_JOBINTR_MAX_STEP), n);
        /* Field by field: the struct's padding holds whatever the stack held. */
        for (int i = 0; i < n; ++i) {
            assert_int_equal(hits[i].cause, again[i].cause);
            assert_int_equal(hits[i].device, again[i].device);
            assert_int_equal(hits[i].node, again[i].node);
            assert_true(hits[i].time_h == again[i].time_h);
            /* Its drawn time, inside the step that takes it (one hour a step here). */
            assert_true(hits[i].time_h > (double)(s - 1) && hits[i].time_h <= (double)s);
        }
        for (int i = 0; i < n && nf < 20000; ++i) {
            fine[nf++] = hits[i];
        }
    }
    assert_true(nf > 100);
    const char *ten[] = {"scenario.devices_per_node=2", "aging.sim_hours_per_step=10",
                         "interrupt.network_per_node_hour=0.01",
                         "interrupt.dependency_per_hour=0.05"};
    load(ten, 4);
    af_jobintr_init(&a, &cfg, 8);
    /* Within a step the causes come in their order, so compare cause by cause. */
    for (int c = AF_INTR_FIRST_JOB; c <= AF_INTR_hbm; ++c) {
        af_jobintr_init(&a, &cfg, 8);
        int k = 0;
        for (int64_t s = 1; s <= 1000; ++s) {
            int n = af_jobintr_step(&a, &cfg, s, hits, AF_JOBINTR_MAX_STEP);
            for (int i = 0; i < n; ++i) {
                if (hits[i].cause != c) {
                    continue;
                }
                while (k < nf && fine[k].cause != c) {
                    k++;
                }
                assert_true(k < nf);
                assert_int_equal(fine[k].node, hits[i].node);
                /* The same instant, bit for bit, whatever the step's length: the log's time
                 * of an interruption is the draw's, not its step's. */
                assert_true(fine[k].time_h == hits[i].time_h);
                assert_true(hits[i].time_h > (double)(s - 1) * 10.0 &&
                            hits[i].time_h <= (double)s * 10.0);
                k++;
            }
        }
    }
    /* Another seed, another history. */
    const char *seed[] = {"scenario.seed=7", "aging.sim_hours_per_step=1",
                          "scenario.devices_per_node=2", "interrupt.network_per_node_hour=0.01",
                          "interrupt.dependency_per_hour=0.05"};
    load(seed, 5);
    af_jobintr_init(&a, &cfg, 8);
    int differ = 0;
    int k = 0;
    for (int64_t s = 1; s <= 10000 && !differ; ++s) {
        int n = af_jobintr_step(&a, &cfg, s, hits, AF_JOBINTR_MAX_STEP);
        for (int i = 0; i < n && k < nf; ++i, ++k) {
            differ |= hits[i].cause != fine[k].cause || hits[i].node != fine[k].node;
        }
    }
    assert_true(differ);
}

/* Scripted interruptions come at their step, first, in the events' order, where they say. */
static void test_scripted_interruptions_come_first_at_their_step(void **state)
{
    (void)state;
    const char *sets[] = {"scenario.devices_per_node=2",
                          "aging.sim_hours_per_step=1",
                          "interrupt.software_per_hour=1",
                          "event.11.step=5",
                          "event.11.action=interrupt",
                          "event.11.cause=sdc",
                          "event.11.device=3",
                          "event.12.step=5",
                          "event.12.action=interrupt",
                          "event.12.cause=nccl_watchdog",
                          "event.13.step=9",
                          "event.13.action=interrupt",
                          "event.13.cause=network",
                          "event.13.node=2"};
    load(sets, 14);
    assert_int_equal(af_config_validate(&cfg, 1, err, sizeof err), AF_OK);
    af_jobintr_t j;
    af_jobintr_init(&j, &cfg, 8);
    for (int64_t s = 1; s <= 10; ++s) {
        int n = af_jobintr_step(&j, &cfg, s, hits, AF_JOBINTR_MAX_STEP);
        int first = 0;
        if (s == 5) {
            assert_true(n >= 2);
            assert_int_equal(hits[0].cause, AF_INTR_sdc);
            assert_int_equal(hits[0].device, 3);
            assert_int_equal(hits[0].node, 1);
            assert_int_equal(hits[1].cause, AF_INTR_nccl_watchdog);
            assert_int_equal(hits[1].device, -1);
            assert_int_equal(hits[1].node, -1);
            /* A scripted one's time is its step's hours. */
            assert_true(hits[0].time_h == 5.0 && hits[1].time_h == 5.0);
            first = 2;
        } else if (s == 9) {
            assert_true(n >= 1);
            assert_int_equal(hits[0].cause, AF_INTR_network);
            assert_int_equal(hits[0].node, 2);
            assert_int_equal(hits[0].device, -1);
            assert_true(hits[0].time_h == 9.0);
            first = 1;
        }
        for (int i = first; i < n; ++i) {
            assert_int_equal(hits[i].cause, AF_INTR_software);
        }
    }
}

/* A full buffer defers what is due to the next steps: nothing is lost and the order holds. */
static void test_a_full_step_defers_the_rest_to_the_next_steps(void **state)
{
    (void)state;
    const char *sets[] = {"aging.sim_hours_per_step=100", "interrupt.software_per_hour=0.03"};
    load(sets, 2);
    af_jobintr_t a;
    af_jobintr_t b;
    af_jobintr_init(&a, &cfg, 8);
    af_jobintr_init(&b, &cfg, 8);
    int64_t total_a = 0;
    int64_t total_b = 0;
    for (int64_t s = 1; s <= 2000; ++s) {
        total_a += af_jobintr_step(&a, &cfg, s, hits, AF_JOBINTR_MAX_STEP);
        int n = af_jobintr_step(&b, &cfg, s, hits, 1);
        assert_true(n <= 1);
        total_b += n;
    }
    /* About 3 a step against 1: b is behind by what it deferred, and catches up when the
     * rate stops (a later run of steps with a cap larger than the backlog). */
    assert_true(total_a > 5000);
    assert_true(total_b == 2000);
    int64_t s = 2001;
    while (b.k[0] < a.k[0]) {
        total_b += af_jobintr_step(&b, &cfg, 2000, hits, AF_JOBINTR_MAX_STEP);
        s++;
    }
    assert_int_equal(total_b, total_a);
    assert_true(b.next_h[0] == a.next_h[0]);
}

/* Device memory (HBM) errors, cause hbm: at a fixed seed, aging.hbm_rate_per_hour per
 * device-hour over a long run gives the Poisson mean within 5 standard deviations, spread
 * evenly over the devices; the job-level rates draw none, a zero hbm rate none; and a scripted
 * reset_device strikes its device first at its step. */
static void test_hbm_errors_follow_their_rate_per_device_and_scripted_resets(void **state)
{
    (void)state;
    const char *sets[] = {"scenario.seed=405",
                          "scenario.devices=16",
                          "scenario.devices_per_node=4",
                          "aging.sim_hours_per_step=1",
                          "aging.hbm_rate_per_hour=0.001",
                          "interrupt.sdc_per_device_hour=0.001",
                          "event.31.step=7",
                          "event.31.action=reset_device",
                          "event.31.device=13"};
    load(sets, 9);
    assert_int_equal(af_config_validate(&cfg, 1, err, sizeof err), AF_OK);
    const int64_t D = 16;
    const int64_t steps = 200000;
    af_jobintr_t j;
    af_jobintr_init(&j, &cfg, D);
    int64_t count[AF_NINTR] = {0};
    int64_t per_device[16] = {0};
    for (int64_t s = 1; s <= steps; ++s) {
        int n = af_jobintr_step(&j, &cfg, s, hits, AF_JOBINTR_MAX_STEP);
        if (s == 7) {
            assert_true(n >= 1);
            assert_int_equal(hits[0].cause, AF_INTR_hbm);
            assert_int_equal(hits[0].device, 13);
            assert_int_equal(hits[0].node, 3);
            count[AF_INTR_hbm]--; /* the scripted one is not drawn */
            per_device[13]--;
        }
        for (int i = 0; i < n; ++i) {
            count[hits[i].cause]++;
            if (hits[i].cause == AF_INTR_hbm) {
                assert_true(hits[i].device >= 0 && hits[i].device < D);
                assert_int_equal(hits[i].node, hits[i].device / 4);
                per_device[hits[i].device]++;
            }
        }
    }
    const double want = 0.001 * 16 * (double)steps;
    assert_true(fabs((double)count[AF_INTR_hbm] - want) < 5.0 * sqrt(want));
    assert_true(fabs((double)count[AF_INTR_sdc] - want) < 5.0 * sqrt(want));
    /* Their own streams: the same rate at the same seed draws another history. */
    assert_true(count[AF_INTR_hbm] != count[AF_INTR_sdc]);
    for (int k = 0; k < 16; ++k) {
        double share = (double)count[AF_INTR_hbm] / 16.0;
        assert_true(fabs((double)per_device[k] - share) < 5.0 * sqrt(share));
    }
    /* Without the hbm rate (and the event), the job-level rates draw no memory error. */
    const char *none[] = {"scenario.seed=405", "aging.sim_hours_per_step=1",
                          "interrupt.sdc_per_device_hour=0.01", "interrupt.software_per_hour=0.01"};
    load(none, 4);
    af_jobintr_init(&j, &cfg, D);
    for (int64_t s = 1; s <= 20000; ++s) {
        int n = af_jobintr_step(&j, &cfg, s, hits, AF_JOBINTR_MAX_STEP);
        for (int i = 0; i < n; ++i) {
            assert_int_not_equal(hits[i].cause, AF_INTR_hbm);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_rate_and_no_event_makes_no_interruption),
        cmocka_unit_test(test_counts_follow_the_rates_and_spread_over_the_grain),
        cmocka_unit_test(test_the_same_seed_gives_the_same_history_at_any_step_length),
        cmocka_unit_test(test_scripted_interruptions_come_first_at_their_step),
        cmocka_unit_test(test_a_full_step_defers_the_rest_to_the_next_steps),
        cmocka_unit_test(test_hbm_errors_follow_their_rate_per_device_and_scripted_resets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
