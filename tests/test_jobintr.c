/* Unit tests of sim/jobintr: job-level interruptions drawn from the seed as Poisson processes
 * at their grain (the job, a node, a device; a trailing node of fewer devices among them), the
 * scripted ones at their step, none on dead hardware, and the step's fixed buffer. */
#include "sim/fleet/jobintr.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "sim/fleet/aging.h"

static af_config_t cfg;
static char err[1024];
static af_jobintr_hit_t hits[AF_JOBINTR_MAX_STEP];

static void load(const char *const *sets, int n)
{
    af_result_t rc = af_config_load(&cfg, NULL, sets, n, err, sizeof err);
    if (rc != AF_OK) {
        print_error("%s\n", err);
    }
    assert_int_equal(rc, AF_OK);
}

/* The default scenario has none: every step is empty, however long the run. */
static void test_no_rate_and_no_event_makes_no_interruption(void **state)
{
    (void)state;
    load(NULL, 0);
    af_jobintr_t j;
    af_jobintr_init(&j, &cfg, 8);
    for (int64_t s = 1; s <= 100000; ++s) {
        assert_int_equal(af_jobintr_step(&j, &cfg, s, NULL, 0, hits, AF_JOBINTR_MAX_STEP), 0);
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
        int n = af_jobintr_step(&j, &cfg, s, NULL, 0, hits, AF_JOBINTR_MAX_STEP);
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

/* A fleet whose devices do not divide by devices_per_node: its last node, of fewer devices, is
 * a node all the same (ceil(devices / devices_per_node) of them). The node-grain rates are per
 * node-hour, so it is struck as often as a full node; the device-grain ones are per
 * device-hour, so each of its devices is struck as often as any other, and the node takes its
 * devices' share of them (2 of 10 here). Counts within 5 standard deviations of their means. */
static void test_a_trailing_partial_node_is_struck_like_a_full_one(void **state)
{
    (void)state;
    const char *sets[] = {
        "scenario.devices_per_node=4",          "aging.sim_hours_per_step=1",
        "interrupt.network_per_node_hour=0.01", "interrupt.nic_per_node_hour=0.005",
        "interrupt.sdc_per_device_hour=0.002",  "aging.hbm_rate_per_hour=0.002"};
    load(sets, 6);
    const int64_t D = 10; /* nodes 0 and 1 of 4 devices, node 2 of 2 */
    const int64_t steps = 200000;
    af_jobintr_t j;
    af_jobintr_init(&j, &cfg, D);
    int64_t count[AF_NINTR] = {0};
    int64_t per_node[AF_NINTR][3] = {{0}};
    int64_t per_device[AF_NINTR][10] = {{0}};
    for (int64_t s = 1; s <= steps; ++s) {
        int n = af_jobintr_step(&j, &cfg, s, NULL, 0, hits, AF_JOBINTR_MAX_STEP);
        for (int i = 0; i < n; ++i) {
            const af_jobintr_hit_t *x = &hits[i];
            assert_true(x->node >= 0 && x->node < 3);
            count[x->cause]++;
            per_node[x->cause][x->node]++;
            if (af_intr_grain[x->cause] == AF_GRAIN_NODE) {
                assert_int_equal(x->device, -1);
            } else {
                assert_true(x->device >= 0 && x->device < D);
                assert_int_equal(x->node, x->device / 4);
                per_device[x->cause][x->device]++;
            }
        }
    }
    const int node_causes[] = {AF_INTR_network, AF_INTR_nic};
    const double node_rates[] = {0.01, 0.005};
    for (int k = 0; k < 2; ++k) {
        int c = node_causes[k];
        double want = node_rates[k] * 3.0 * (double)steps;
        assert_true(fabs((double)count[c] - want) < 5.0 * sqrt(want));
        double share = (double)count[c] / 3.0;
        for (int node = 0; node < 3; ++node) {
            assert_true(fabs((double)per_node[c][node] - share) < 5.0 * sqrt(share));
        }
    }
    const int device_causes[] = {AF_INTR_sdc, AF_INTR_hbm};
    for (int k = 0; k < 2; ++k) {
        int c = device_causes[k];
        double want = 0.002 * (double)D * (double)steps;
        assert_true(fabs((double)count[c] - want) < 5.0 * sqrt(want));
        double share = (double)count[c] / (double)D;
        for (int d = 0; d < D; ++d) {
            assert_true(fabs((double)per_device[c][d] - share) < 5.0 * sqrt(share));
        }
        double last = (double)count[c] * 2.0 / (double)D;
        assert_true(fabs((double)per_node[c][2] - last) < 5.0 * sqrt(last));
    }
}

/* The dead members of the unit test below: device 5, node 2 (devices 8 to 11), and node 0
 * (devices 0 to 3) from step `half` + 1 on. Device 13 has a FADING unit left: it lives. */
static int dead_device(int64_t d, int64_t s, int64_t half)
{
    return d == 5 || (d >= 8 && d < 12) || (s > half && d < 4);
}

static int dead_member(const af_jobintr_hit_t *x, int64_t s, int64_t half)
{
    if (x->device >= 0) {
        return dead_device(x->device, s, half);
    }
    return x->node == 2 || (x->node == 0 && s > half);
}

/* Dead hardware interrupts nothing. With members dead from the start and a node dying half-way,
 * the draws that strike are exactly the health-blind draws (the same counters) less those on a
 * member dead at their step, in the same order: no interruption lands on a dead member, the
 * blind draw did strike some (so the test has something to drop), and the live members keep
 * their rate per member-hour (within 5 standard deviations). A scripted interrupt or
 * reset_device naming a dead member is dropped, one naming a live member (a node with a dead
 * device, a device with a live unit) is not. */
static void test_dead_members_are_never_struck_and_the_live_keep_their_rate(void **state)
{
    (void)state;
    const char *sets[] = {"scenario.devices=16",
                          "scenario.devices_per_node=4",
                          "aging.sim_hours_per_step=1",
                          "interrupt.software_per_hour=0.01",
                          "interrupt.network_per_node_hour=0.01",
                          "interrupt.nic_per_node_hour=0.005",
                          "interrupt.sdc_per_device_hour=0.002",
                          "aging.hbm_rate_per_hour=0.002",
                          "event.21.step=3",
                          "event.21.action=interrupt",
                          "event.21.cause=sdc",
                          "event.21.device=9",
                          "event.22.step=3",
                          "event.22.action=interrupt",
                          "event.22.cause=nic",
                          "event.22.node=2",
                          "event.23.step=3",
                          "event.23.action=reset_device",
                          "event.23.device=5",
                          "event.24.step=3",
                          "event.24.action=interrupt",
                          "event.24.cause=sdc",
                          "event.24.device=13",
                          "event.25.step=3",
                          "event.25.action=interrupt",
                          "event.25.cause=network",
                          "event.25.node=1"};
    load(sets, 27);
    assert_int_equal(af_config_validate(&cfg, 1, err, sizeof err), AF_OK);
    enum { D = 16, U = 4 };
    int8_t health[D * U];
    memset(health, AF_HEALTHY, sizeof health);
    for (int u = 0; u < U; ++u) {
        health[5 * U + u] = AF_DEAD;
        for (int d = 8; d < 12; ++d) {
            health[d * U + u] = AF_DEAD;
        }
        health[13 * U + u] = u == 2 ? AF_FADING : AF_DEAD;
    }
    const int64_t steps = 200000;
    const int64_t half = steps / 2;
    af_jobintr_t a;
    af_jobintr_t blind;
    af_jobintr_init(&a, &cfg, D);
    af_jobintr_init(&blind, &cfg, D);
    af_jobintr_hit_t all[AF_JOBINTR_MAX_STEP];
    int64_t count[AF_NINTR] = {0};
    int64_t dropped = 0;
    int64_t node0_before = 0;
    int64_t device13 = 0;
    for (int64_t s = 1; s <= steps; ++s) {
        if (s == half + 1) {
            memset(health, AF_DEAD, 4 * U); /* node 0 dies */
        }
        int n = af_jobintr_step(&a, &cfg, s, health, U, hits, AF_JOBINTR_MAX_STEP);
        int nb = af_jobintr_step(&blind, &cfg, s, NULL, 0, all, AF_JOBINTR_MAX_STEP);
        if (s == 3) {
            assert_true(n >= 2);
            assert_int_equal(hits[0].cause, AF_INTR_sdc);
            assert_int_equal(hits[0].device, 13);
            assert_int_equal(hits[1].cause, AF_INTR_network);
            assert_int_equal(hits[1].node, 1);
            assert_int_equal(hits[1].device, -1);
        }
        int i = 0;
        for (int b = 0; b < nb; ++b) {
            if (dead_member(&all[b], s, half)) {
                dropped++;
                continue;
            }
            assert_true(i < n);
            assert_int_equal(hits[i].cause, all[b].cause);
            assert_int_equal(hits[i].device, all[b].device);
            assert_int_equal(hits[i].node, all[b].node);
            i++;
        }
        assert_int_equal(i, n);
        for (i = 0; i < n; ++i) {
            assert_false(dead_member(&hits[i], s, half));
            count[hits[i].cause]++;
            node0_before += hits[i].node == 0;
            device13 += hits[i].device == 13;
        }
    }
    assert_true(dropped > 1000);
    assert_true(node0_before > 0);
    assert_true(device13 > 0);
    /* Live members: nodes 0, 1 and 3, then 1 and 3; devices 16 - 5 = 11, then 7. */
    const double h = (double)half;
    const int causes[] = {AF_INTR_software, AF_INTR_network, AF_INTR_nic, AF_INTR_sdc, AF_INTR_hbm};
    const double want[] = {0.01 * 2.0 * h, 0.01 * (3.0 + 2.0) * h, 0.005 * (3.0 + 2.0) * h,
                           0.002 * (11.0 + 7.0) * h, 0.002 * (11.0 + 7.0) * h};
    for (int k = 0; k < 5; ++k) {
        assert_true(fabs((double)count[causes[k]] - want[k]) < 5.0 * sqrt(want[k]));
    }
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
        int n = af_jobintr_step(&a, &cfg, s, NULL, 0, hits, AF_JOBINTR_MAX_STEP);
        af_jobintr_hit_t again[AF_JOBINTR_MAX_STEP];
        assert_int_equal(af_jobintr_step(&b, &cfg, s, NULL, 0, again, AF_JOBINTR_MAX_STEP), n);
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
            int n = af_jobintr_step(&a, &cfg, s, NULL, 0, hits, AF_JOBINTR_MAX_STEP);
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
        int n = af_jobintr_step(&a, &cfg, s, NULL, 0, hits, AF_JOBINTR_MAX_STEP);
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
        int n = af_jobintr_step(&j, &cfg, s, NULL, 0, hits, AF_JOBINTR_MAX_STEP);
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
        total_a += af_jobintr_step(&a, &cfg, s, NULL, 0, hits, AF_JOBINTR_MAX_STEP);
        int n = af_jobintr_step(&b, &cfg, s, NULL, 0, hits, 1);
        assert_true(n <= 1);
        total_b += n;
    }
    /* About 3 a step against 1: b is behind by what it deferred, and catches up when the
     * rate stops (a later run of steps with a cap larger than the backlog). */
    assert_true(total_a > 5000);
    assert_true(total_b == 2000);
    int64_t s = 2001;
    while (b.k[0] < a.k[0]) {
        total_b += af_jobintr_step(&b, &cfg, 2000, NULL, 0, hits, AF_JOBINTR_MAX_STEP);
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
        int n = af_jobintr_step(&j, &cfg, s, NULL, 0, hits, AF_JOBINTR_MAX_STEP);
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
        int n = af_jobintr_step(&j, &cfg, s, NULL, 0, hits, AF_JOBINTR_MAX_STEP);
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
        cmocka_unit_test(test_a_trailing_partial_node_is_struck_like_a_full_one),
        cmocka_unit_test(test_dead_members_are_never_struck_and_the_live_keep_their_rate),
        cmocka_unit_test(test_the_same_seed_gives_the_same_history_at_any_step_length),
        cmocka_unit_test(test_scripted_interruptions_come_first_at_their_step),
        cmocka_unit_test(test_a_full_step_defers_the_rest_to_the_next_steps),
        cmocka_unit_test(test_hbm_errors_follow_their_rate_per_device_and_scripted_resets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
