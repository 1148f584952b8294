/* agefence bench jitter: what the pacing knob buys. The same scenario (the default unless
 * -c/--set) runs with pacing off and with pacing.mode=ewma at a sweep of gamma values, the
 * settings interleaved within each round so that the machine's drift falls on all of them.
 * For each setting it keeps rank 0's step periods (start to start, /ranks/step_us) and the
 * pacing waits (/ranks/sink_us) of every run past a warm-up, and derives against pacing off:
 * the reduction of the period's standard deviation and the cost in mean period. Environment
 * spikes (throttle.spike_rate, spike_us) are on by default here so there is jitter to pace;
 * --set overrides them like any other key. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_common.h"

#define NSET 6
static const double GAMMAS[NSET] = {-1, 0, 0.5, 1, 2, 4}; /* -1: pacing off */

static void setting_name(int i, char *out, size_t n)
{
    if (GAMMAS[i] < 0) {
        snprintf(out, n, "off");
    } else {
        snprintf(out, n, "g%g", GAMMAS[i]);
    }
}

/* Rank 0's column of a /ranks phase, rows [skip, n), appended to v (capacity checked). */
static af_result_t rank0_column(const char *log, const char *phase, int64_t skip, double *v,
                                int *nv, int cap)
{
    double *col = NULL;
    int64_t n = 0;
    AF_CHECK(af_bench_phase_rank(log, phase, 0, &col, &n));
    for (int64_t s = skip; s < n && *nv < cap; ++s) {
        v[(*nv)++] = col[s];
    }
    free(col);
    return AF_OK;
}

static af_result_t bench_jitter(af_bench_ctx_t *b)
{
    const int steps = b->quick ? 300 : 1000; /* the default scenario has an event at 300 */
    const int skip = b->quick ? 30 : 100;    /* pacing warm-up (20 steps) and EWMA settling */
    const int rounds = b->quick ? 1 : (b->samples + NSET - 1) / NSET;
    const int cap = rounds * steps;
    double *period[NSET] = {NULL};
    double *sink[NSET] = {NULL};
    int np[NSET] = {0};
    int ns[NSET] = {0};
    af_result_t rc = AF_OK;
    for (int i = 0; i < NSET; ++i) {
        period[i] = malloc(sizeof(double) * (size_t)cap);
        sink[i] = malloc(sizeof(double) * (size_t)cap);
        AF_REQUIRE_GOTO(period[i] && sink[i], AF_ERR_NOMEM, rc, out);
    }
    char steps_set[64];
    snprintf(steps_set, sizeof steps_set, "scenario.steps=%d", steps);
    char log[600];
    af_bench_log_path(b, "jitter", log, sizeof log);
    for (int round = 0; round < rounds && !b->invalid; ++round) {
        for (int i = 0; i < NSET && !b->invalid; ++i) {
            char gamma[64];
            snprintf(gamma, sizeof gamma, "pacing.gamma=%g", GAMMAS[i] < 0 ? 0 : GAMMAS[i]);
            const char *extra[] = {steps_set, "throttle.spike_rate=0.02", "throttle.spike_us=400",
                                   GAMMAS[i] < 0 ? "pacing.mode=off" : "pacing.mode=ewma", gamma};
            AF_CHECK_GOTO(af_bench_run_scenario(b, extra, 5, log, NULL, NULL, NULL), rc, out);
            if (b->world.rank == 0 && !b->invalid) {
                AF_CHECK_GOTO(rank0_column(log, "step_us", skip, period[i], &np[i], cap), rc, out);
                AF_CHECK_GOTO(rank0_column(log, "sink_us", skip, sink[i], &ns[i], cap), rc, out);
            }
            af_bench_progress(b, "jitter runs", round * NSET + i + 1, rounds * NSET);
        }
    }
    if (b->world.rank != 0 || b->invalid) {
        goto out;
    }
    af_stats_t off = af_stats_of(period[0], np[0]);
    int best = -1;
    double best_cost = 0;
    for (int i = 0; i < NSET; ++i) {
        char name[64];
        char sname[32];
        setting_name(i, sname, sizeof sname);
        snprintf(name, sizeof name, "period_us.%s", sname);
        AF_CHECK_GOTO(af_bench_add(b, name, "us", period[i], np[i]), rc, out);
        snprintf(name, sizeof name, "sink_us.%s", sname);
        AF_CHECK_GOTO(af_bench_add(b, name, "us", sink[i], ns[i]), rc, out);
        if (np[i] == 0) {
            af_bench_fail(b, "setting %s logged no step past the warm-up", sname);
            goto out;
        }
        af_stats_t st = af_stats_of(period[i], np[i]);
        if (i == 0) {
            continue;
        }
        double red = off.sd > 0 ? 1.0 - st.sd / off.sd : 0.0;
        double cost = off.mean > 0 ? st.mean / off.mean - 1.0 : 0.0;
        char rname[96];
        snprintf(rname, sizeof rname, "gamma=%g: period sd reduction vs off", GAMMAS[i]);
        af_bench_ratio(b, rname, red, 1, 0.85, 1);
        snprintf(rname, sizeof rname, "gamma=%g: mean period cost vs off", GAMMAS[i]);
        af_bench_ratio(b, rname, cost, 0, 0, 0);
        snprintf(rname, sizeof rname, "gamma=%g: p99 period / off p99", GAMMAS[i]);
        af_bench_ratio(b, rname, off.p99 > 0 ? st.p99 / off.p99 : 0, 0, 0, 0);
        af_bench_note(b,
                      "gamma=%-4g mean %.1f us (%+.1f%%), p50 %.1f, p99 %.1f, sd %.1f us "
                      "(%.1f%% less than off)",
                      GAMMAS[i], st.mean, 100 * cost, st.p50, st.p99, st.sd, 100 * red);
        if (red >= 0.85 && (best < 0 || cost < best_cost)) {
            best = i;
            best_cost = cost;
        }
    }
    af_bench_note(b, "off        mean %.1f us, p50 %.1f, p99 %.1f, sd %.1f us", off.mean, off.p50,
                  off.p99, off.sd);
    if (best >= 0) {
        af_bench_note(b, "an 85%% sd reduction is reached; cheapest at gamma=%g (%+.1f%% mean)",
                      GAMMAS[best], 100 * best_cost);
    } else {
        af_bench_note(b, "no setting reaches an 85%% reduction of the period's sd");
    }
    af_bench_note(b,
                  "%d interleaved rounds x %d settings, %d steps each (first %d skipped); "
                  "spikes 2%%/device/step, median 400 us unless --set; last run log %s",
                  rounds, NSET, steps, skip, log);
out:
    for (int i = 0; i < NSET; ++i) {
        free(period[i]);
        free(sink[i]);
    }
    return rc;
}

const af_bench_def_t af_bench_jitter = {
    "jitter", "pacing off vs EWMA pacing at a sweep of gamma: step-period spread against its cost",
    bench_jitter};
