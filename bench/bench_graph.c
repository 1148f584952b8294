/* agefence bench graph: what the step graph (backend.graph) saves per step. The same scenario
 * (the default unless -c/--set) runs with the graph off and on, alternating within each round
 * and swapping the order every round, so the machine's drift falls on both. For each setting
 * it keeps the per-step maximum over ranks of /ranks/step_us and of each rank's kernel_us +
 * halo_us (the phases the graph replaces) past a warm-up, and reports on / off of their p50 and
 * p99. On the cuda backend "on" is a CUDA graph; on the cpu backend it is the same work issued in
 * sequence, so the ratio there measures only the cost of deciding containment in the backend. Every
 * "on" run must have run graph steps, at most one instantiation, and the same final checksum
 * as its "off" partner. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/logfile.h"
#include "bench.h"
#include "bench_common.h"

enum { OFF = 0, ON = 1 };
static const char *const NAMES[2] = {"off", "on"};

/* Rank 0: /final@graph_steps, graph_instantiations, steps_completed and state_checksum of a
 * run log. */
static af_result_t graph_figures(const char *log, int64_t *steps, int64_t *inst, int64_t *done,
                                 char *sum, size_t sumlen)
{
    af_logfile_t lf;
    char err[600];
    if (af_logfile_open(&lf, log, err, sizeof err) != AF_OK) {
        af_error_set("%s", err);
        return AF_ERR_IO;
    }
    af_result_t rc = af_logfile_attr_i64(&lf, "/final", "graph_steps", steps);
    if (rc == AF_OK) {
        rc = af_logfile_attr_i64(&lf, "/final", "graph_instantiations", inst);
    }
    if (rc == AF_OK) {
        rc = af_logfile_attr_i64(&lf, "/final", "steps_completed", done);
    }
    if (rc == AF_OK) {
        rc = af_logfile_attr_str(&lf, "/final", "state_checksum", sum, sumlen);
    }
    af_logfile_close(&lf);
    if (rc != AF_OK) {
        af_error_set("%s: cannot read the step graph figures of /final", log);
    }
    return rc;
}

/* Rank 0: appends rows [skip, n) of the rank maximum of step_us and of kernel_us + halo_us
 * (summed per rank, then the maximum). */
static af_result_t collect(const char *log, int ranks, int64_t skip, double *step, double *work,
                           int *n, int cap)
{
    double *s = NULL;
    int64_t ns = 0;
    af_result_t rc = af_bench_phase_max(log, "step_us", &s, &ns);
    double *w = rc == AF_OK ? calloc((size_t)ns + 1, sizeof(double)) : NULL;
    if (rc == AF_OK && w == NULL) {
        rc = AF_ERR_NOMEM;
    }
    for (int q = 0; rc == AF_OK && q < ranks; ++q) {
        double *k = NULL;
        double *h = NULL;
        int64_t nk = 0;
        int64_t nh = 0;
        rc = af_bench_phase_rank(log, "kernel_us", q, &k, &nk);
        if (rc == AF_OK) {
            rc = af_bench_phase_rank(log, "halo_us", q, &h, &nh);
        }
        for (int64_t i = 0; rc == AF_OK && i < ns && i < nk && i < nh; ++i) {
            w[i] = k[i] + h[i] > w[i] ? k[i] + h[i] : w[i];
        }
        free(k);
        free(h);
    }
    for (int64_t i = skip; rc == AF_OK && i < ns && *n < cap; ++i) {
        step[*n] = s[i];
        work[*n] = w[i];
        (*n)++;
    }
    free(s);
    free(w);
    return rc;
}

static af_result_t bench_graph(af_bench_ctx_t *b)
{
    const int steps = b->quick ? 300 : 1000; /* the default scenario has an event at 300 */
    const int skip = b->quick ? 30 : 50;
    const int rounds = b->quick ? 1 : (b->samples + 1) / 2;
    const int cap = rounds * steps;
    double *step[2] = {NULL, NULL};
    double *work[2] = {NULL, NULL};
    int n[2] = {0, 0};
    int64_t graph_steps = 0;
    int64_t executed = 0;
    int64_t inst = 0;
    af_result_t rc = AF_OK;
    for (int g = 0; g < 2; ++g) {
        step[g] = malloc(sizeof(double) * (size_t)cap);
        work[g] = malloc(sizeof(double) * (size_t)cap);
        rc = step[g] && work[g] ? rc : AF_ERR_NOMEM;
    }
    /* Before the runs (collective): a rank that could not allocate stops every rank. */
    AF_CHECK_GOTO(af_bench_agree(b, rc), rc, out);
    char steps_set[64];
    snprintf(steps_set, sizeof steps_set, "scenario.steps=%d", steps);
    char log[2][600];
    af_bench_log_path(b, "graph-off", log[OFF], sizeof log[OFF]);
    af_bench_log_path(b, "graph-on", log[ON], sizeof log[ON]);
    for (int round = 0; round < rounds && !b->invalid; ++round) {
        char sums[2][32] = {"", ""};
        for (int j = 0; j < 2 && !b->invalid; ++j) {
            const int g = (round + j) % 2; /* off first in even rounds, on first in odd ones */
            const char *extra[] = {steps_set, g == ON ? "backend.graph=on" : "backend.graph=off"};
            char where[64];
            snprintf(where, sizeof where, "graph %s, round %d/%d", NAMES[g], round + 1, rounds);
            af_bench_progress(b, where, round * 2 + j, rounds * 2);
            AF_CHECK_GOTO(af_bench_run_scenario(b, extra, 2, log[g], NULL, NULL, NULL), rc, out);
            if (b->world.rank == 0 && !b->invalid) {
                rc = collect(log[g], b->world.size, skip, step[g], work[g], &n[g], cap);
                int64_t gs = 0;
                int64_t gi = 0;
                int64_t done = 0;
                if (rc == AF_OK) {
                    rc = graph_figures(log[g], &gs, &gi, &done, sums[g], sizeof sums[g]);
                }
                if (rc == AF_OK && g == ON) {
                    if (gs <= 0 || gi > 1) {
                        af_bench_fail(b,
                                      "the graph run ran %lld graph steps with %lld "
                                      "instantiations (expected > 0 and at most 1)",
                                      (long long)gs, (long long)gi);
                    }
                    graph_steps += gs;
                    executed += done;
                    inst = gi;
                } else if (rc == AF_OK && gs != 0) {
                    af_bench_fail(b, "the run with backend.graph = off ran %lld graph steps",
                                  (long long)gs);
                }
            }
            /* Rank 0 alone read the log and judged the run: every rank goes on with it. */
            AF_CHECK_GOTO(af_bench_agree(b, rc), rc, out);
        }
        if (b->world.rank == 0 && !b->invalid && strcmp(sums[OFF], sums[ON]) != 0) {
            af_bench_fail(b, "round %d: final checksum %s with the graph off, %s with it on", round,
                          sums[OFF], sums[ON]);
        }
        AF_CHECK_GOTO(af_bench_agree(b, AF_OK), rc, out);
    }
    af_bench_progress(b, "graph runs", rounds * 2, rounds * 2);
    if (b->world.rank != 0 || b->invalid) {
        goto out;
    }
    af_stats_t st[2];
    af_stats_t wk[2];
    for (int g = 0; g < 2; ++g) {
        char name[64];
        snprintf(name, sizeof name, "step_us.%s", NAMES[g]);
        AF_CHECK_GOTO(af_bench_add(b, name, "us", step[g], n[g]), rc, out);
        snprintf(name, sizeof name, "kernel_halo_us.%s", NAMES[g]);
        AF_CHECK_GOTO(af_bench_add(b, name, "us", work[g], n[g]), rc, out);
        if (n[g] == 0) {
            af_bench_fail(b, "the graph %s runs logged no step past the warm-up", NAMES[g]);
            goto out;
        }
        st[g] = af_stats_of(step[g], n[g]);
        wk[g] = af_stats_of(work[g], n[g]);
    }
    af_bench_ratio(b, "step p50: graph on / off", st[OFF].p50 > 0 ? st[ON].p50 / st[OFF].p50 : 0, 0,
                   0, 0);
    af_bench_ratio(b, "step p99: graph on / off", st[OFF].p99 > 0 ? st[ON].p99 / st[OFF].p99 : 0, 0,
                   0, 0);
    af_bench_ratio(b, "kernel+halo p50: graph on / off",
                   wk[OFF].p50 > 0 ? wk[ON].p50 / wk[OFF].p50 : 0, 0, 0, 0);
    for (int g = 0; g < 2; ++g) {
        af_bench_note(b, "graph %-3s step p50 %.1f us, p99 %.1f; kernel+halo p50 %.1f us, p99 %.1f",
                      NAMES[g], st[g].p50, st[g].p99, wk[g].p50, wk[g].p99);
    }
    af_bench_note(b,
                  "%lld of %lld executed steps ran as the step graph (%lld instantiation%s "
                  "per run); the rest had DMR twins or a rollback",
                  (long long)graph_steps, (long long)executed, (long long)inst,
                  inst == 1 ? "" : "s");
    af_bench_note(b,
                  "%d rounds x {off, on} (order swapped each round), %d steps each (first %d "
                  "skipped), rank maximum per step; last run logs %s, %s",
                  rounds, steps, skip, log[OFF], log[ON]);
out:
    for (int g = 0; g < 2; ++g) {
        free(step[g]);
        free(work[g]);
    }
    return rc;
}

const af_bench_def_t af_bench_graph = {
    "graph", "the step graph (backend.graph) off vs on: step latency it saves", bench_graph};
