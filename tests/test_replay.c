/* Unit tests of analysis/replay: the goodput replay engine. Daly's closed form at three ratios of
 * the mean time between interruptions to the restart, scripted histories worked by hand for each
 * policy, the interval search against Young's and Daly's intervals, the limits (no interruption,
 * more interruptions) and bad input. Histories are drawn from a seeded splitmix64 stream, so every
 * run sees the same numbers. `build/tests/test_replay` prints the Daly numbers that
 * docs/goodput.md quotes. */
#include "analysis/goodput.h"
#include "analysis/replay.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { MAX_INTR = 8192 };
static af_replay_intr_t hist[MAX_INTR];
static af_replay_intr_t hist2[MAX_INTR];

static uint64_t sm_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in (0, 1): never 0, so the logarithm below is finite. */
static double sm_unit(uint64_t *s)
{
    return ((double)(sm_next(s) >> 11) + 0.5) * 0x1p-53;
}

/* Poisson arrivals over [0, until): job-level ones of mean time between them m_job, hardware
 * losses of `lost` devices of mean m_hw (INFINITY: none of that kind). Returns the count. */
static int64_t draw(uint64_t seed, double until, double m_job, double m_hw, int64_t lost,
                    af_replay_intr_t *out)
{
    uint64_t s = seed;
    double rate = (isfinite(m_job) ? 1.0 / m_job : 0.0) + (isfinite(m_hw) ? 1.0 / m_hw : 0.0);
    double p_job = isfinite(m_job) ? (1.0 / m_job) / rate : 0.0;
    int64_t n = 0;
    double t = 0.0;
    for (;;) {
        t += -log(sm_unit(&s)) / rate;
        if (t >= until) {
            break;
        }
        assert_true(n < MAX_INTR);
        int job = sm_unit(&s) < p_job;
        out[n].t_s = t;
        out[n].kind = job ? AF_REPLAY_JOB : AF_REPLAY_HARDWARE;
        out[n].devices_lost = job ? 0 : lost;
        out[n].node = -1;
        n++;
    }
    return n;
}

static af_replay_timeline_t timeline(double W, int64_t devices, const af_replay_intr_t *x,
                                     int64_t n)
{
    af_replay_timeline_t tl = {.window_s = W, .devices = devices, .intr = x, .n_intr = n};
    return tl;
}

/* The wall-clock parts add up to the window: nothing is counted twice or lost. */
static void assert_balanced(const af_replay_result_t *r, double W)
{
    double sum = r->useful_s + r->lost_s + r->capacity_loss_s + r->checkpoint_time_s +
                 r->replica_time_s + r->restart_time_s + r->recover_time_s;
    assert_true(fabs(sum - W) <= 1e-9 * W);
    assert_true(r->useful_s >= r->checkpointed_s);
    assert_true(r->ettr >= 0.0 && r->ettr <= 1.0);
}

static af_replay_result_t run(const af_replay_timeline_t *tl, const af_replay_params_t *p,
                              af_replay_policy_t policy)
{
    af_replay_result_t r;
    assert_int_equal(af_replay_run(tl, p, policy, &r), AF_OK);
    assert_balanced(&r, tl->window_s);
    return r;
}

#define EQ(a, b) assert_true(fabs((a) - (b)) <= 1e-9)

/* Daly's expected wall time for tau of work, a checkpoint delta and a restart R under
 * exponential interruptions of mean M is M e^{R/M} (e^{(tau+delta)/M} - 1): ETTR is tau over it.
 * The replay of checkpoint_restart is that model exactly (an interruption during a write loses
 * the segment, one during a restart starts it again), so an ensemble's mean ETTR must hold
 * Daly's value inside its 95% interval. The window's ends bias ETTR = useful / W by O(tau / W)
 * (the run starts at a segment's start and is cut at W); the estimate below removes that bias:
 * each member is replayed on [0, W] and on [0, 2W] of the same history, and (useful(2W) -
 * useful(W)) / W has expectation tau / E[segment] up to terms that vanish exponentially in W
 * (the renewal process forgets its start). The whole-window mean is printed beside it. */
static void daly_check(double ratio)
{
    const double R = 60.0;
    const double delta = R;
    const double M = ratio * R;
    const double W = 500.0 * M;
    const int members = 1000;
    const double tau = af_replay_daly(delta, M);
    af_replay_params_t p;
    af_replay_defaults(&p);
    p.checkpoint_s = delta;
    p.restart_s = R;
    p.tau_s = tau;
    double sum = 0;
    double sum2 = 0;
    double whole = 0;
    for (int m = 0; m < members; ++m) {
        int64_t n = draw(1000u * (uint64_t)ratio + (uint64_t)m, 2.0 * W, M, INFINITY, 0, hist);
        af_replay_timeline_t tl1 = timeline(W, 8, hist, n);
        af_replay_timeline_t tl2 = timeline(2.0 * W, 8, hist, n);
        af_replay_result_t r1 = run(&tl1, &p, AF_REPLAY_CHECKPOINT_RESTART);
        af_replay_result_t r2 = run(&tl2, &p, AF_REPLAY_CHECKPOINT_RESTART);
        double x = (r2.useful_s - r1.useful_s) / W;
        sum += x;
        sum2 += x * x;
        whole += r1.ettr;
    }
    double mean = sum / members;
    double sd = sqrt((sum2 - members * mean * mean) / (members - 1));
    double ci = 1.96 * sd / sqrt((double)members);
    double formula = tau / (M * exp(R / M) * (exp((tau + delta) / M) - 1.0));
    printf("daly M/R = %g: M = %g s, R = delta = %g s, tau = %.2f s (Daly's), W = %g s, %d "
           "members: mean ETTR %.5f +- %.5f (95%%), formula %.5f, whole-window mean %.5f\n",
           ratio, M, R, tau, W, members, mean, ci, formula, whole / members);
    assert_true(fabs(mean - formula) <= ci);
    /* The interval is narrow enough to mean something: a wrong model misses it. */
    assert_true(ci < 0.01 * formula);
}

static void test_daly_ratio_100(void **state)
{
    (void)state;
    daly_check(100.0);
}

static void test_daly_ratio_10(void **state)
{
    (void)state;
    daly_check(10.0);
}

static void test_daly_ratio_2(void **state)
{
    (void)state;
    daly_check(2.0);
}

/* No interruption: with no write in the window (tau = rho = W, or infinite) every policy keeps
 * all of it, exactly 1; checkpoint_restart at a fixed tau still pays its checkpoints: tau = 90,
 * delta = 10 over 1000 s is ten cycles of 100 s, 900 s of work: 0.9 exactly. The search finds
 * the whole window. */
static void test_no_interruption(void **state)
{
    (void)state;
    const double W = 1000.0;
    af_replay_timeline_t tl = timeline(W, 4, NULL, 0);
    af_replay_params_t p;
    af_replay_defaults(&p);
    p.checkpoint_s = 10.0;
    for (int pol = 0; pol < AF_REPLAY_NPOLICY; ++pol) {
        p.tau_s = W;
        p.rho_s = W;
        af_replay_result_t r = run(&tl, &p, (af_replay_policy_t)pol);
        assert_true(r.ettr == 1.0);
        assert_int_equal(r.checkpoints, 0);
        p.tau_s = INFINITY;
        p.rho_s = INFINITY;
        r = run(&tl, &p, (af_replay_policy_t)pol);
        assert_true(r.ettr == 1.0);
        double best = 0;
        assert_int_equal(
            af_replay_search(&tl, &p, (af_replay_policy_t)pol, AF_REPLAY_TAU, &best, &r), AF_OK);
        assert_true(r.ettr == 1.0);
        assert_true(best == W);
    }
    p.tau_s = 90.0;
    af_replay_result_t r = run(&tl, &p, AF_REPLAY_CHECKPOINT_RESTART);
    assert_true(r.ettr == 0.9);
    assert_int_equal(r.checkpoints, 10);
    EQ(r.checkpoint_time_s, 100.0);
}

/* checkpoint_restart, tau = 100, delta = 10, R = 50, W = 1000. A job-level interruption at 105
 * falls in the first write (100-110): the segment's 100 s of work are lost and a restart runs
 * from 105; a second one at 130 falls in that restart, which starts again from scratch: it ends
 * at 180, not 155. From 180, cycles of 110 s: seven by 950 (checkpoint at 700 s of work), then
 * 50 s of work by 1000: useful 750. Writes: 5 s (interrupted) + 7 x 10; restarts: 25 + 50. */
static void test_interrupted_write_and_restart(void **state)
{
    (void)state;
    af_replay_intr_t x[2] = {{105.0, AF_REPLAY_JOB, 0, -1}, {130.0, AF_REPLAY_JOB, 0, -1}};
    af_replay_timeline_t tl = timeline(1000.0, 4, x, 2);
    af_replay_params_t p;
    af_replay_defaults(&p);
    p.checkpoint_s = 10.0;
    p.restart_s = 50.0;
    p.tau_s = 100.0;
    af_replay_result_t r = run(&tl, &p, AF_REPLAY_CHECKPOINT_RESTART);
    EQ(r.useful_s, 750.0);
    EQ(r.ettr, 0.75);
    EQ(r.checkpointed_s, 700.0);
    EQ(r.lost_s, 100.0);
    EQ(r.checkpoint_time_s, 75.0);
    EQ(r.restart_time_s, 75.0);
    assert_int_equal(r.checkpoints, 7);
    assert_int_equal(r.interruptions, 2);
    /* One just after the write completes (at 111) loses 1 s of work only: the checkpoint holds.
     * Then a restart to 161, cycles of 110 from 161 (P = 100 + 100 k): by 931 seven more (the
     * checkpoint at 800), 69 s of work by 1000. */
    x[0].t_s = 111.0;
    tl.n_intr = 1;
    r = run(&tl, &p, AF_REPLAY_CHECKPOINT_RESTART);
    EQ(r.lost_s, 1.0);
    EQ(r.useful_s, 869.0);
    EQ(r.checkpointed_s, 800.0);
}

/* remap and shrink_rebuild, a job-level interruption at 100 and a hardware loss at 120, in the
 * restart (100-150, R = 50): the restart starts again and ends at 170, not 150; no replica, no
 * checkpoint, 4 devices, no spare. Work 0-100 lost; from 170 at 3/4 to 300: 97.5 (capacity
 * 32.5); restarts 20 + 50; 97.5 + 100 + 32.5 + 70 = 300. */
static void test_hardware_loss_during_a_restart_restarts_it(void **state)
{
    (void)state;
    af_replay_intr_t x[2] = {{100.0, AF_REPLAY_JOB, 0, -1}, {120.0, AF_REPLAY_HARDWARE, 1, 0}};
    af_replay_timeline_t tl = timeline(300.0, 4, x, 2);
    af_replay_params_t p;
    af_replay_defaults(&p);
    p.restart_s = 50.0;
    p.tau_s = INFINITY;
    p.rho_s = INFINITY;
    for (int pol = AF_REPLAY_REMAP; pol <= AF_REPLAY_SHRINK_REBUILD; ++pol) {
        af_replay_result_t r = run(&tl, &p, (af_replay_policy_t)pol);
        EQ(r.useful_s, 97.5);
        EQ(r.lost_s, 100.0);
        EQ(r.restart_time_s, 70.0);
        EQ(r.capacity_loss_s, 32.5);
        EQ(r.recover_time_s, 0.0);
    }
}

/* A fault of the hardware that loses no device (a device memory error, recovered in place):
 * W = 1000, one such fault at 100, no writes, default durations (restart 600, detect 1 + remap
 * 10, shrink 2 + repartition 30, step 10). checkpoint_restart loses the 100 s done and restarts
 * until 700: 300 left. remap rolls back to its start (no replica) and recovers until 111: 889.
 * shrink_rebuild loses the step in flight (10 s) and recovers until 132: 90 + 868 = 958. No
 * policy loses capacity. */
static void test_fault_in_place_by_hand(void **state)
{
    (void)state;
    af_replay_intr_t x[1] = {{100.0, AF_REPLAY_HARDWARE, 0, 0}};
    af_replay_timeline_t tl = timeline(1000.0, 4, x, 1);
    af_replay_params_t p;
    af_replay_defaults(&p);
    const double want[AF_REPLAY_NPOLICY] = {300.0, 889.0, 958.0};
    for (int pol = 0; pol < AF_REPLAY_NPOLICY; ++pol) {
        af_replay_result_t r = run(&tl, &p, (af_replay_policy_t)pol);
        EQ(r.useful_s, want[pol]);
        EQ(r.capacity_loss_s, 0.0);
        assert_int_equal(r.interruptions, 1);
    }
}

/* One history, the three policies worked by hand. W = 1000, 4 devices, 2 a node, one spare node
 * (2 devices) that takes a lost device's place after 100 s. delta = 10, R = 50, tau = 200;
 * replicas of 5 s every 50 s of work (remap); detect 2 + remap 8; shrink 4 + repartition 16;
 * steps of 6 s. A hardware loss of one device at 230 (a spare brings it back at 330: throughput
 * 3/4 in between), a job-level interruption at 700. */
static void test_scripted_history_by_hand(void **state)
{
    (void)state;
    af_replay_intr_t x[2] = {{230.0, AF_REPLAY_HARDWARE, 1, 0}, {700.0, AF_REPLAY_JOB, 0, -1}};
    af_replay_timeline_t tl = timeline(1000.0, 4, x, 2);
    af_replay_params_t p;
    af_replay_defaults(&p);
    p.checkpoint_s = 10.0;
    p.restart_s = 50.0;
    p.tau_s = 200.0;
    p.replica_s = 5.0;
    p.rho_s = 50.0;
    p.detect_s = 2.0;
    p.remap_s = 8.0;
    p.shrink_s = 4.0;
    p.repartition_s = 16.0;
    p.step_s = 6.0;
    p.spare_nodes = 1;
    p.devices_per_node = 2;
    p.replace_s = 100.0;

    /* checkpoint_restart: work 0-200, write 200-210 (checkpoint 200); at 230 P = 220: 20 lost,
     * restart 230-280. Work from 280 at 3/4 to 330: 37.5 (12.5 of capacity), then at 1 the
     * remaining 162.5 by 492.5 (P = 400), write to 502.5 (checkpoint 400). At 700 P = 597.5:
     * 197.5 lost, restart 700-750, work to 950 (P = 600), write to 960, work 40: useful 640.
     * Lost 217.5; writes 30; restarts 100; 12.5 + 217.5 + 640 + 30 + 100 = 1000. */
    af_replay_result_t r = run(&tl, &p, AF_REPLAY_CHECKPOINT_RESTART);
    EQ(r.useful_s, 640.0);
    EQ(r.ettr, 0.64);
    EQ(r.checkpointed_s, 600.0);
    EQ(r.lost_s, 217.5);
    EQ(r.capacity_loss_s, 12.5);
    EQ(r.checkpoint_time_s, 30.0);
    EQ(r.restart_time_s, 100.0);
    EQ(r.recover_time_s, 0.0);
    EQ(r.replica_time_s, 0.0);
    assert_int_equal(r.checkpoints, 3);
    assert_int_equal(r.interruptions, 2);

    /* remap: replicas at 50, 100, 150 of work (written 50-55, 105-110, 160-165); at 215 P = 200
     * and the checkpoint, due with the replica, wins: 215-225. At 230 P = 205: back to the
     * replica (5 lost), detect + remap 230-240. At 3/4: 50 s of work take 66.667 s (replica at
     * 306.667-311.667, P = 250), 18.333 s to 330 give 13.75; at 1 the remaining 36.25 by 366.25
     * (replica 300 to 371.25), 421.25 (350, to 426.25), 476.25: the checkpoint of 400, to
     * 486.25. Replicas 450, 500, 550 end at 541.25, 596.25, 651.25; at 700 P = 598.75: a
     * job-level loss back to the checkpoint (198.75 lost), restart 700-750, replicas 450, 500,
     * 550 end at 805, 860, 915, work to 965 (P = 600), checkpoint to 975, 25 s of work: useful
     * 625. Capacity: 85 working seconds at 3/4 = 21.25. Replicas 12 x 5; writes 3 x 10; lost
     * 203.75; 625 + 203.75 + 21.25 + 30 + 60 + 50 + 10 = 1000. */
    r = run(&tl, &p, AF_REPLAY_REMAP);
    EQ(r.useful_s, 625.0);
    EQ(r.ettr, 0.625);
    EQ(r.checkpointed_s, 600.0);
    EQ(r.lost_s, 203.75);
    EQ(r.capacity_loss_s, 21.25);
    EQ(r.checkpoint_time_s, 30.0);
    EQ(r.replica_time_s, 60.0);
    EQ(r.restart_time_s, 50.0);
    EQ(r.recover_time_s, 10.0);
    assert_int_equal(r.replicas, 12);
    assert_int_equal(r.checkpoints, 3);

    /* shrink_rebuild: work 0-200, write to 210; at 230 P = 220: the step in flight (6) lost,
     * P = 214, shrink + repartition 230-250. At 3/4 to 330: 60 (capacity 20), P = 274; at 1 the
     * 126 to the checkpoint by 456, write to 466 (checkpoint 400), 200 more by 666, write to 676
     * (checkpoint 600); at 700 P = 624: 24 lost, restart to 750, work to 950 (P = 800), write to
     * 960, 40 s: useful 840. Lost 30; 840 + 30 + 20 + 40 + 50 + 20 = 1000. */
    r = run(&tl, &p, AF_REPLAY_SHRINK_REBUILD);
    EQ(r.useful_s, 840.0);
    EQ(r.ettr, 0.84);
    EQ(r.checkpointed_s, 800.0);
    EQ(r.lost_s, 30.0);
    EQ(r.capacity_loss_s, 20.0);
    EQ(r.checkpoint_time_s, 40.0);
    EQ(r.restart_time_s, 50.0);
    EQ(r.recover_time_s, 20.0);
    EQ(r.replica_time_s, 0.0);
    assert_int_equal(r.checkpoints, 4);
}

/* Capacity: remap follows the run's pace series while no spare has come back; shrink keeps the
 * devices-left ratio; a spare that comes back restores throughput 1; spares run out. W = 300, 4
 * devices, a loss of one at 120; replicas of 0 s every 50 s of work, no checkpoint; the pace falls
 * to 1/2 at 120. remap, no spare: at 120 back to the replica of 100 (20 lost), recover 10 to 130;
 * at 1/2 the 50 s of work to the next replica take 100 s (230), 70 s more give 35: useful 185.
 *   shrink, no spare: 6 lost (P = 114), recover 20 to 140, 160 s at 3/4 give 120: useful 234.
 *   remap, a spare after 50 s (back at 170): 40 s at 1/2 give 20 (P = 120), then at 1 the 30
 *     to the replica by 200 and 100 more: useful 250. */
static void test_capacity_pace_and_spares(void **state)
{
    (void)state;
    af_replay_intr_t x[1] = {{120.0, AF_REPLAY_HARDWARE, 1, 0}};
    af_replay_pace_t pace[2] = {{0.0, 1.0}, {120.0, 0.5}};
    af_replay_timeline_t tl = timeline(300.0, 4, x, 1);
    tl.pace = pace;
    tl.n_pace = 2;
    af_replay_params_t p;
    af_replay_defaults(&p);
    p.tau_s = INFINITY;
    p.replica_s = 0.0;
    p.rho_s = 50.0;
    p.detect_s = 2.0;
    p.remap_s = 8.0;
    p.shrink_s = 4.0;
    p.repartition_s = 16.0;
    p.step_s = 6.0;
    p.spare_nodes = 0;
    af_replay_result_t r = run(&tl, &p, AF_REPLAY_REMAP);
    EQ(r.useful_s, 185.0);
    EQ(r.lost_s, 20.0);
    EQ(r.capacity_loss_s, 85.0);
    r = run(&tl, &p, AF_REPLAY_SHRINK_REBUILD);
    EQ(r.useful_s, 234.0);
    EQ(r.capacity_loss_s, 40.0);
    p.spare_nodes = 1;
    p.devices_per_node = 1;
    p.replace_s = 50.0;
    r = run(&tl, &p, AF_REPLAY_REMAP);
    EQ(r.useful_s, 250.0);
    EQ(r.capacity_loss_s, 20.0);

    /* Spares run out: one spare, losses of one device at 120 and 200, W = 400, shrink. At 120
     * the step in flight (6) is lost, P = 114, recover to 140; at 3/4 to 170 (the spare is
     * back): 22.5; at 1 to 200: 30, P = 166.5; at 200 6 lost, recover to 220, and no spare is
     * left: 180 s at 3/4 give 135: useful 295.5, capacity 7.5 + 45. */
    af_replay_intr_t y[2] = {{120.0, AF_REPLAY_HARDWARE, 1, 0}, {200.0, AF_REPLAY_HARDWARE, 1, 1}};
    af_replay_timeline_t tl2 = timeline(400.0, 4, y, 2);
    r = run(&tl2, &p, AF_REPLAY_SHRINK_REBUILD);
    EQ(r.useful_s, 295.5);
    EQ(r.lost_s, 12.0);
    EQ(r.capacity_loss_s, 52.5);
    EQ(r.recover_time_s, 40.0);
}

/* The searched interval is never worse than Young's or Daly's on the same history, for the
 * checkpoint interval of every policy and remap's replica interval. */
static void test_search_beats_young_and_daly(void **state)
{
    (void)state;
    const double W = 200000.0;
    for (uint64_t seed = 1; seed <= 12; ++seed) {
        int64_t n = draw(seed, W, 6000.0 + 1000.0 * (double)seed, 3000.0, 1, hist);
        af_replay_timeline_t tl = timeline(W, 16, hist, n);
        af_replay_params_t p;
        af_replay_defaults(&p);
        p.checkpoint_s = 30.0 * (double)seed;
        p.restart_s = 300.0;
        p.replica_s = 2.0;
        p.rho_s = 120.0;
        p.spare_nodes = 1;
        p.devices_per_node = 4;
        p.replace_s = 7200.0;
        for (int pol = 0; pol < AF_REPLAY_NPOLICY; ++pol) {
            for (int knob = 0; knob < 2; ++knob) {
                if (knob == AF_REPLAY_RHO && pol != AF_REPLAY_REMAP) {
                    continue;
                }
                p.tau_s = 3000.0;
                double write = knob == AF_REPLAY_RHO ? p.replica_s : p.checkpoint_s;
                double M = af_replay_mtbi(&tl, (af_replay_policy_t)pol, knob);
                double best = 0;
                af_replay_result_t s;
                assert_int_equal(af_replay_search(&tl, &p, (af_replay_policy_t)pol,
                                                  (af_replay_knob_t)knob, &best, &s),
                                 AF_OK);
                assert_balanced(&s, W);
                af_replay_params_t q = p;
                /* at the whole steps they round to: what a user can set */
                double young = af_replay_whole_steps(af_replay_young(write, M), p.step_s, W);
                double daly = af_replay_whole_steps(af_replay_daly(write, M), p.step_s, W);
                *(knob == AF_REPLAY_RHO ? &q.rho_s : &q.tau_s) = young;
                af_replay_result_t ry = run(&tl, &q, (af_replay_policy_t)pol);
                *(knob == AF_REPLAY_RHO ? &q.rho_s : &q.tau_s) = daly;
                af_replay_result_t rd = run(&tl, &q, (af_replay_policy_t)pol);
                assert_true(s.ettr >= ry.ettr);
                assert_true(s.ettr >= rd.ettr);
                /* The reported interval is whole steps and gives the reported ETTR. */
                assert_true(best == W || best == p.step_s * floor(best / p.step_s + 0.5));
                *(knob == AF_REPLAY_RHO ? &q.rho_s : &q.tau_s) = best;
                af_replay_result_t rb = run(&tl, &q, (af_replay_policy_t)pol);
                assert_true(rb.ettr == s.ettr);
            }
        }
    }
}

/* Item: an interruption at exactly the window's end is outside [0, W). checkpoint_restart,
 * job-level interruptions at 1000 s and 3600 s, W = 3600 s, no checkpoint (tau = W), R = 600:
 * the first rolls the 1000 s of work back and restarts until 1600; from there 2000 s of work
 * reach W: useful 2000, ETTR 2000 / 3600 = 0.5556, one interruption met, as af_replay_mtbi
 * counts (M = W / 1). Counting the one at W would roll everything back: ETTR 0. */
static void test_interruption_at_the_window_end_is_outside(void **state)
{
    (void)state;
    af_replay_intr_t x[2] = {{1000.0, AF_REPLAY_JOB, 0, -1}, {3600.0, AF_REPLAY_JOB, 0, -1}};
    af_replay_timeline_t tl = timeline(3600.0, 4, x, 2);
    af_replay_params_t p;
    af_replay_defaults(&p);
    p.restart_s = 600.0;
    p.tau_s = 3600.0;
    for (int pol = 0; pol < AF_REPLAY_NPOLICY; ++pol) {
        af_replay_result_t r = run(&tl, &p, (af_replay_policy_t)pol);
        EQ(r.useful_s, 2000.0);
        EQ(r.restart_time_s, 600.0);
        assert_int_equal(r.interruptions, 1);
    }
    EQ(af_replay_mtbi(&tl, AF_REPLAY_CHECKPOINT_RESTART, 0), 3600.0);
}

/* Item: shrink_rebuild loses the step in flight, which began when the job last came back to
 * work. step_s = 6, shrink 2 + repartition 18 = 20 s, no checkpoint, W = 100, hardware faults
 * recovered in place (0 devices: the capacity stays whole). At 50: 50 s of work, the step's 6
 * lost (P = 44), recovery until 70. At 71: 1 s of work since the recovery ended, so 1 s lost
 * (P = 44), recovery until 91, then 9 s of work: useful 53, lost 7, recovering 40. Capping the
 * second loss by the work since the last checkpoint (45 s) would lose 6 and keep 48. */
static void test_shrink_loses_no_more_than_the_work_since_the_recovery(void **state)
{
    (void)state;
    af_replay_intr_t x[2] = {{50.0, AF_REPLAY_HARDWARE, 0, 0}, {71.0, AF_REPLAY_HARDWARE, 0, 0}};
    af_replay_timeline_t tl = timeline(100.0, 4, x, 2);
    af_replay_params_t p;
    af_replay_defaults(&p);
    p.step_s = 6.0;
    p.shrink_s = 2.0;
    p.repartition_s = 18.0;
    af_replay_result_t r = run(&tl, &p, AF_REPLAY_SHRINK_REBUILD);
    EQ(r.useful_s, 53.0);
    EQ(r.lost_s, 7.0);
    EQ(r.recover_time_s, 40.0);
}

/* Item: free writes (checkpoint_seconds = 0, replica_seconds = 0, which the config accepts) are
 * a checkpoint or a replica at every step, not an error. step 10 s, R = 100, W = 2000, one
 * job-level interruption at 1005 s: checkpoints every step hold 1000 s of work at 1000 s, 5 s
 * are lost, the restart ends at 1105 and 895 s of work follow: 1895 / 2000 = 0.9475. Daly's
 * interval for delta = 0 is 0 s, which rounds up to one step. No whole-step interval loses less
 * than the 5 s (1005 is no multiple of 10), so the search keeps one step. remap with a free
 * replica on a hardware loss at 1005 s (0 devices, detect 1 + remap 10): 5 s lost, 11 s
 * recovering: 1984 / 2000. */
static void test_free_writes_are_one_step(void **state)
{
    (void)state;
    af_replay_intr_t x[1] = {{1005.0, AF_REPLAY_JOB, 0, -1}};
    af_replay_timeline_t tl = timeline(2000.0, 4, x, 1);
    af_replay_params_t p;
    af_replay_defaults(&p);
    p.checkpoint_s = 0.0;
    p.replica_s = 0.0;
    p.restart_s = 100.0;
    p.step_s = 10.0;
    af_goodput_t g;
    assert_int_equal(af_goodput_replay(&tl, &p, &g), AF_OK);
    const af_goodput_policy_t *c = &g.pol[AF_REPLAY_CHECKPOINT_RESTART];
    EQ(c->daly_s, 0.0);
    EQ(c->daly_steps_s, 10.0);
    EQ(c->daly_ettr, 0.9475);
    EQ(c->ettr, 0.9475);
    EQ(c->interval_s, 10.0);
    x[0].kind = AF_REPLAY_HARDWARE;
    assert_int_equal(af_goodput_replay(&tl, &p, &g), AF_OK);
    const af_goodput_policy_t *m = &g.pol[AF_REPLAY_REMAP];
    EQ(m->replica_interval_s, 10.0);
    EQ(m->ettr, 1984.0 / 2000.0);
}

/* A search that cannot lose: on 200 random histories (job-level and hardware interruptions at
 * rates and costs drawn for each, spares or none), the searched ETTR of every policy is at least
 * its ETTR at Young's and at Daly's intervals (at the whole steps they round to), the searched
 * intervals are whole steps, and they give the searched ETTR when replayed. */
static void test_search_never_loses_to_young_or_daly(void **state)
{
    (void)state;
    uint64_t rs = 42;
    for (int h = 0; h < 200; ++h) {
        const double W = 20000.0 + 80000.0 * sm_unit(&rs);
        double m_job = 2000.0 + 20000.0 * sm_unit(&rs);
        double m_hw = sm_unit(&rs) < 0.2 ? INFINITY : 1000.0 + 10000.0 * sm_unit(&rs);
        int64_t n =
            draw(1000u + (uint64_t)h, W, m_job, m_hw, 1 + (int64_t)(3 * sm_unit(&rs)), hist);
        af_replay_timeline_t tl = timeline(W, 16, hist, n);
        af_replay_params_t p;
        af_replay_defaults(&p);
        p.step_s = 1.0 + 20.0 * sm_unit(&rs);
        p.checkpoint_s = 5.0 + 200.0 * sm_unit(&rs);
        p.restart_s = 30.0 + 600.0 * sm_unit(&rs);
        p.replica_s = 0.5 + 10.0 * sm_unit(&rs);
        p.spare_nodes = (int64_t)(3 * sm_unit(&rs));
        p.devices_per_node = 4;
        p.replace_s = 600.0 + 7200.0 * sm_unit(&rs);
        af_goodput_t g;
        assert_int_equal(af_goodput_replay(&tl, &p, &g), AF_OK);
        for (int k = 0; k < AF_REPLAY_NPOLICY; ++k) {
            const af_goodput_policy_t *x = &g.pol[k];
            if (!(x->ettr >= x->young_ettr && x->ettr >= x->daly_ettr)) {
                printf("history %d, %s: searched %.6f, Young's %.6f, Daly's %.6f\n", h,
                       af_replay_policy_name((af_replay_policy_t)k), x->ettr, x->young_ettr,
                       x->daly_ettr);
            }
            assert_true(x->ettr >= x->young_ettr && x->ettr >= x->daly_ettr);
            assert_true(x->interval_s == W ||
                        x->interval_s == p.step_s * floor(x->interval_s / p.step_s + 0.5));
            af_replay_result_t r;
            assert_int_equal(af_goodput_at(&tl, &p, (af_replay_policy_t)k, x->interval_s,
                                           x->replica_interval_s, &r),
                             AF_OK);
            assert_true(r.ettr == x->ettr);
        }
    }
}

/* On a one-year window (W = 3.1536e7 s, job-level interruptions of mean 6600 s: about 4800,
 * delta = 60 s, R = 600 s, a step of 10 s; Daly's interval about 890 s), the searched
 * checkpoint interval lies within 5% of the best of a brute-force scan of every whole step from
 * 1 to 400 (10 s to 4000 s), and its ETTR is no lower than that scan's best. remap's replica
 * interval the same way, its checkpoint interval held at the searched one (hardware losses of
 * mean 3000 s, replica 2 s: Daly's about 110 s; scan 1 to 100 steps). A floor that follows the
 * window (W / 1e4 = 3154 s) would shut the optimum out. */
static void test_search_on_a_year_finds_the_brute_force_best(void **state)
{
    (void)state;
    const double W = 365.0 * 86400.0;
    int64_t n = draw(7, W, 6600.0, INFINITY, 0, hist);
    af_replay_timeline_t tl = timeline(W, 16, hist, n);
    af_replay_params_t p;
    af_replay_defaults(&p);
    p.checkpoint_s = 60.0;
    p.restart_s = 600.0;
    p.step_s = 10.0;
    double best = 0;
    af_replay_result_t s;
    assert_int_equal(
        af_replay_search(&tl, &p, AF_REPLAY_CHECKPOINT_RESTART, AF_REPLAY_TAU, &best, &s), AF_OK);
    double bf_x = 0;
    double bf_e = -1;
    for (int k = 1; k <= 400; ++k) {
        p.tau_s = 10.0 * k;
        af_replay_result_t r = run(&tl, &p, AF_REPLAY_CHECKPOINT_RESTART);
        if (r.ettr > bf_e) {
            bf_e = r.ettr;
            bf_x = p.tau_s;
        }
    }
    printf("a year, checkpoint_restart: searched %.0f s (ETTR %.6f), brute force %.0f s (%.6f), "
           "Daly's %.0f s\n",
           best, s.ettr, bf_x, bf_e,
           af_replay_daly(60.0, af_replay_mtbi(&tl, AF_REPLAY_CHECKPOINT_RESTART, 0)));
    assert_true(fabs(best - bf_x) <= 0.05 * bf_x);
    assert_true(s.ettr >= bf_e);

    n = draw(8, W / 4, INFINITY, 3000.0, 0, hist);
    tl = timeline(W / 4, 16, hist, n);
    p.replica_s = 2.0;
    p.tau_s = 3600.0;
    p.rho_s = INFINITY;
    assert_int_equal(af_replay_search(&tl, &p, AF_REPLAY_REMAP, AF_REPLAY_RHO, &best, &s), AF_OK);
    bf_e = -1;
    for (int k = 1; k <= 100; ++k) {
        p.rho_s = 10.0 * k;
        af_replay_result_t r = run(&tl, &p, AF_REPLAY_REMAP);
        if (r.ettr > bf_e) {
            bf_e = r.ettr;
            bf_x = p.rho_s;
        }
    }
    printf("a quarter, remap's replicas: searched %.0f s (ETTR %.6f), brute force %.0f s (%.6f)\n",
           best, s.ettr, bf_x, bf_e);
    assert_true(fabs(best - bf_x) <= 0.05 * bf_x);
    assert_true(s.ettr >= bf_e);

    /* A week with few interruptions (about 50 job-level ones): the ETTR jumps from one step to
     * the next, and its top may be a single step wide; the search still finds the brute-force
     * best of every step from 1 to 2000 (10 s to 20,000 s). */
    n = draw(9, 604800.0, 12000.0, INFINITY, 0, hist);
    tl = timeline(604800.0, 16, hist, n);
    p.tau_s = INFINITY;
    assert_int_equal(
        af_replay_search(&tl, &p, AF_REPLAY_CHECKPOINT_RESTART, AF_REPLAY_TAU, &best, &s), AF_OK);
    bf_e = -1;
    for (int k = 1; k <= 2000; ++k) {
        p.tau_s = 10.0 * k;
        af_replay_result_t r = run(&tl, &p, AF_REPLAY_CHECKPOINT_RESTART);
        if (r.ettr > bf_e) {
            bf_e = r.ettr;
            bf_x = p.tau_s;
        }
    }
    printf("a week, %lld interruptions: searched %.0f s (ETTR %.6f), brute force %.0f s (%.6f)\n",
           (long long)n, best, s.ettr, bf_x, bf_e);
    assert_true(s.ettr >= bf_e);
}

/* Merges a and b (each sorted) into out. */
static int64_t merge(const af_replay_intr_t *a, int64_t na, const af_replay_intr_t *b, int64_t nb,
                     af_replay_intr_t *out)
{
    int64_t i = 0;
    int64_t j = 0;
    int64_t k = 0;
    while (i < na || j < nb) {
        assert_true(k < MAX_INTR);
        out[k++] = (j >= nb || (i < na && a[i].t_s <= b[j].t_s)) ? a[i++] : b[j++];
    }
    return k;
}

static af_replay_intr_t extra[MAX_INTR];

/* A higher rate never raises ETTR: over many seeds, a history with interruptions added (the
 * same history, merged with a second draw) never gives a higher ETTR at the same parameters,
 * for every policy; and the ensemble mean of the searched ETTR falls as the rate rises. */
static void test_more_interruptions_never_help(void **state)
{
    (void)state;
    const double W = 100000.0;
    af_replay_params_t p;
    af_replay_defaults(&p);
    p.checkpoint_s = 60.0;
    p.restart_s = 300.0;
    p.tau_s = 2000.0;
    p.replica_s = 2.0;
    p.rho_s = 200.0;
    p.spare_nodes = 2;
    p.devices_per_node = 2;
    p.replace_s = 3600.0;
    for (uint64_t seed = 1; seed <= 200; ++seed) {
        int64_t na = draw(seed, W, 8000.0, 4000.0, 1, hist);
        int64_t nb = draw(seed + 100000u, W, 20000.0, 10000.0, 2, extra);
        int64_t n = merge(hist, na, extra, nb, hist2);
        af_replay_timeline_t a = timeline(W, 16, hist, na);
        af_replay_timeline_t b = timeline(W, 16, hist2, n);
        for (int pol = 0; pol < AF_REPLAY_NPOLICY; ++pol) {
            af_replay_result_t ra = run(&a, &p, (af_replay_policy_t)pol);
            af_replay_result_t rb = run(&b, &p, (af_replay_policy_t)pol);
            if (!(rb.ettr <= ra.ettr)) {
                printf("seed %llu policy %s: %.9f with %lld interruptions, %.9f with %lld\n",
                       (unsigned long long)seed, af_replay_policy_name((af_replay_policy_t)pol),
                       ra.ettr, (long long)na, rb.ettr, (long long)n);
            }
            assert_true(rb.ettr <= ra.ettr);
        }
    }
    /* Independent histories at twice the rate: the mean of the searched checkpoint_restart
     * ETTR over 20 seeds is lower. */
    double mean[2] = {0, 0};
    for (int level = 0; level < 2; ++level) {
        for (uint64_t seed = 1; seed <= 20; ++seed) {
            double m = level == 0 ? 8000.0 : 4000.0;
            int64_t n = draw(7000u + seed + 100u * (uint64_t)level, W, m, INFINITY, 0, hist);
            af_replay_timeline_t tl = timeline(W, 16, hist, n);
            double best = 0;
            af_replay_result_t r;
            assert_int_equal(
                af_replay_search(&tl, &p, AF_REPLAY_CHECKPOINT_RESTART, AF_REPLAY_TAU, &best, &r),
                AF_OK);
            mean[level] += r.ettr / 20.0;
        }
    }
    printf("searched checkpoint_restart ETTR, mean of 20 seeds: %.4f at M = 8000 s, %.4f at "
           "M = 4000 s\n",
           mean[0], mean[1]);
    assert_true(mean[1] < mean[0]);
}

/* Bad input: one message naming the field, AF_ERR_USAGE, nothing replayed. */
static void test_bad_input(void **state)
{
    (void)state;
    af_replay_intr_t x[2] = {{10.0, AF_REPLAY_JOB, 0, -1}, {20.0, AF_REPLAY_HARDWARE, 1, 0}};
    af_replay_params_t good;
    af_replay_defaults(&good);
    good.tau_s = 100.0;
    af_replay_result_t r;
    struct {
        const char *field;
        double *where;
        double v;
    } cases[] = {
        {"checkpoint_s", &good.checkpoint_s, -1.0},
        {"restart_s", &good.restart_s, NAN},
        {"tau_s", &good.tau_s, 0.0},
        {"tau_s", &good.tau_s, NAN},
        {"rho_s", &good.rho_s, -5.0},
        {"detect_s", &good.detect_s, INFINITY},
        {"step_s", &good.step_s, -0.5},
        {"replace_s", &good.replace_s, NAN},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        af_replay_timeline_t tl = timeline(1000.0, 4, x, 2);
        af_replay_params_t saved = good;
        *cases[k].where = cases[k].v;
        af_replay_params_t bad = good;
        good = saved;
        af_error_clear();
        assert_int_equal(af_replay_run(&tl, &bad, AF_REPLAY_REMAP, &r), AF_ERR_USAGE);
        assert_non_null(strstr(af_error_message(), cases[k].field));
    }
    af_replay_timeline_t tl = timeline(0.0, 4, x, 2);
    af_error_clear();
    assert_int_equal(af_replay_run(&tl, &good, AF_REPLAY_REMAP, &r), AF_ERR_USAGE);
    assert_non_null(strstr(af_error_message(), "window_s"));
    tl = timeline(NAN, 4, x, 2);
    assert_int_equal(af_replay_run(&tl, &good, AF_REPLAY_REMAP, &r), AF_ERR_USAGE);
    tl = timeline(1000.0, 0, x, 2);
    af_error_clear();
    assert_int_equal(af_replay_run(&tl, &good, AF_REPLAY_REMAP, &r), AF_ERR_USAGE);
    assert_non_null(strstr(af_error_message(), "devices"));
    /* Unsorted times name the interruption. */
    x[1].t_s = 5.0;
    tl = timeline(1000.0, 4, x, 2);
    af_error_clear();
    assert_int_equal(af_replay_run(&tl, &good, AF_REPLAY_CHECKPOINT_RESTART, &r), AF_ERR_USAGE);
    assert_non_null(strstr(af_error_message(), "interruption 1"));
    assert_non_null(strstr(af_error_message(), "out of order"));
    x[1].t_s = NAN;
    af_error_clear();
    assert_int_equal(af_replay_run(&tl, &good, AF_REPLAY_CHECKPOINT_RESTART, &r), AF_ERR_USAGE);
    assert_non_null(strstr(af_error_message(), "interruption 1"));
    /* A hardware loss of a negative count of devices; a pace outside [0, 1]. */
    x[1].t_s = 20.0;
    x[1].devices_lost = -1;
    af_error_clear();
    assert_int_equal(af_replay_run(&tl, &good, AF_REPLAY_SHRINK_REBUILD, &r), AF_ERR_USAGE);
    assert_non_null(strstr(af_error_message(), "loses -1 devices"));
    x[1].devices_lost = 1;
    af_replay_pace_t pace[1] = {{0.0, 1.5}};
    tl.pace = pace;
    tl.n_pace = 1;
    af_error_clear();
    assert_int_equal(af_replay_run(&tl, &good, AF_REPLAY_REMAP, &r), AF_ERR_USAGE);
    assert_non_null(strstr(af_error_message(), "pace point 0"));
    /* The search refuses the same input. */
    double best = 0;
    assert_int_equal(af_replay_search(&tl, &good, AF_REPLAY_REMAP, AF_REPLAY_TAU, &best, &r),
                     AF_ERR_USAGE);
}

/* Young's and Daly's intervals: the formulas, and Daly's M beyond delta >= 2M. */
static void test_young_and_daly_intervals(void **state)
{
    (void)state;
    EQ(af_replay_young(50.0, 10000.0), 1000.0);
    /* delta / 2M = 1/400: 1000 (1 + 1/60 + 1/3600) - 50 */
    EQ(af_replay_daly(50.0, 10000.0), 1000.0 * (1.0 + 1.0 / 60.0 + 1.0 / 3600.0) - 50.0);
    EQ(af_replay_daly(300.0, 100.0), 100.0);
    assert_true(isinf(af_replay_young(50.0, INFINITY)));
    assert_true(isinf(af_replay_daly(50.0, 0.0)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_daly_ratio_100),
        cmocka_unit_test(test_daly_ratio_10),
        cmocka_unit_test(test_daly_ratio_2),
        cmocka_unit_test(test_no_interruption),
        cmocka_unit_test(test_interrupted_write_and_restart),
        cmocka_unit_test(test_hardware_loss_during_a_restart_restarts_it),
        cmocka_unit_test(test_scripted_history_by_hand),
        cmocka_unit_test(test_fault_in_place_by_hand),
        cmocka_unit_test(test_capacity_pace_and_spares),
        cmocka_unit_test(test_search_beats_young_and_daly),
        cmocka_unit_test(test_interruption_at_the_window_end_is_outside),
        cmocka_unit_test(test_shrink_loses_no_more_than_the_work_since_the_recovery),
        cmocka_unit_test(test_free_writes_are_one_step),
        cmocka_unit_test(test_search_never_loses_to_young_or_daly),
        cmocka_unit_test(test_search_on_a_year_finds_the_brute_force_best),
        cmocka_unit_test(test_more_interruptions_never_help),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_young_and_daly_intervals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
