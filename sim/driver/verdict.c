/* agefence driver: the run's verdict and its last writes — the final state gathered to rank 0
 * and compared bit for bit with the serial fault-free reference, the /units columns, the
 * memory figures, /final, and the summary rank 0 prints. Called by run.c once the loop ends. */
#include "verdict.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../fabric/fabric.h"
#include "../../kernels/kernels.h"
#include "../../common/af_alloc.h"
#include "../../common/af_time.h"
#include "../io/backend.h"
#include "../io/config.h"
#include "../io/launch.h"
#include "../io/log.h"
#include "memory.h"
#include "../plan/placement.h"
#include "../oracle/reference.h"
#include "run_internal.h"
#include "../io/stop.h"
#include "../io/version.h"

typedef af_run_state_t run_t;

/* Cells rank 0 receives in one round of the final gather, at most. */
#define AF_GATHER_CELLS ((int64_t)1 << 20)

/* Gathers the committed state of every block to rank 0 in logical order. Each rank sends its
 * blocks in increasing block order, in rounds of at most K blocks (R K T <= AF_GATHER_CELLS),
 * and rank 0 places each round where it belongs: the verdict holds a round's staging beside the
 * state, not a second copy of it. Collective; a rank that cannot allocate its buffers makes
 * every rank return the error before any round. */
static af_result_t gather_state(run_t *r, double *global)
{
    const int R = r->s.world.size;
    const int64_t T = r->s.T;
    int64_t mine = 0;
    for (int64_t b = 0; b < r->s.B; ++b) {
        mine += af_slot_is_local(&r->s.pl, r->s.pl.block_slot[b]);
    }
    int64_t K = AF_GATHER_CELLS / ((int64_t)R * T);
    K = K > 0 ? K : 1;
    double *send = malloc(sizeof(double) * (size_t)(K * T));
    size_t *counts = malloc(sizeof(size_t) * (size_t)R);
    double *recv = NULL;
    int32_t *order = NULL; /* rank 0: the blocks grouped by rank, in block order */
    int64_t *start = NULL; /* rank 0: rank q's blocks are order[start[q], start[q + 1]) */
    int64_t *fill = NULL;  /* rank 0: scratch of the grouping */
    int failed = send == NULL || counts == NULL;
    if (r->s.world.rank == 0) {
        recv = malloc(sizeof(double) * (size_t)(R * K * T));
        order = malloc(sizeof(int32_t) * (size_t)(r->s.B > 0 ? r->s.B : 1));
        start = calloc((size_t)R + 1, sizeof(int64_t));
        fill = calloc((size_t)R, sizeof(int64_t));
        failed |= recv == NULL || order == NULL || start == NULL || fill == NULL;
    }
    uint64_t w[2] = {(uint64_t)mine, (uint64_t)failed};
    af_result_t rc = r->s.fab->ops->allreduce_max_u64(r->s.fab, w, 2);
    if (rc == AF_OK && w[1] != 0) {
        af_error_set("cannot allocate the buffers of the final gather (%lld blocks a round)",
                     (long long)K);
        rc = AF_ERR_NOMEM;
    }
    if (rc == AF_OK && r->s.world.rank == 0) {
        for (int64_t b = 0; b < r->s.B; ++b) {
            start[af_device_rank(r->s.D, R, af_slot_device(&r->s.pl, r->s.pl.block_slot[b])) + 1]++;
        }
        for (int q = 0; q < R; ++q) {
            start[q + 1] += start[q];
        }
        for (int64_t b = 0; b < r->s.B; ++b) {
            int q = af_device_rank(r->s.D, R, af_slot_device(&r->s.pl, r->s.pl.block_slot[b]));
            order[start[q] + fill[q]++] = (int32_t)b;
        }
    }
    const int64_t rounds = rc == AF_OK ? ((int64_t)w[0] + K - 1) / K : 0;
    int64_t next = 0; /* this rank's next block to look at */
    for (int64_t round = 0; round < rounds && rc == AF_OK; ++round) {
        int64_t n = 0;
        for (; n < K && next < r->s.B; ++next) {
            int32_t g = r->s.pl.block_slot[next];
            if (af_slot_is_local(&r->s.pl, g)) {
                rc = r->s.k->ops->read_slot(r->s.k, af_slot_local(&r->s.pl, g), send + n * T);
                n++;
            }
        }
        /* A failed read still takes part in the round (its data is then not used). */
        if (r->s.world.rank == 0) {
            for (int q = 0; q < R; ++q) {
                int64_t left = start[q + 1] - start[q] - round * K;
                left = left < 0 ? 0 : left > K ? K : left;
                counts[q] = (size_t)(left * T) * sizeof(double);
            }
        }
        af_result_t grc = r->s.fab->ops->gatherv(r->s.fab, send, (size_t)(n * T) * sizeof(double),
                                                 recv, counts, 0);
        rc = rc != AF_OK ? rc : grc;
        if (rc == AF_OK && r->s.world.rank == 0) {
            int64_t at = 0;
            for (int q = 0; q < R; ++q) {
                int64_t nq = (int64_t)(counts[q] / sizeof(double)) / T;
                for (int64_t j = 0; j < nq; ++j) {
                    int64_t b = order[start[q] + round * K + j];
                    memcpy(global + b * T, recv + (at + j) * T, sizeof(double) * (size_t)T);
                }
                at += nq;
            }
        }
    }
    free(send);
    free(counts);
    free(recv);
    free(order);
    free(start);
    free(fill);
    return rc;
}

/* Gathers the final state to rank 0 and, when `verify`, compares it with the serial reference.
 * Without `verify` (a stop that Open MPI's launcher started: it kills the ranks two
 * odls_base_sigkill_timeout intervals after its SIGCONT, 2 s by default, and the reference
 * recomputes every step serially) the state, its checksum and mass are still written and
 * bitwise_equal is -1: not verified. */
/* Rank 0, before the first step: the seconds the final check will take, the serial reference
 * over every step of the whole grid. Timed on the grid itself when it takes at most 64 MiB,
 * else on a slice of whole blocks of about that size, scaled to the grid: k and 2k steps from
 * the initial state (k doubled until 2k steps take 20 ms), so that the initial state's cost
 * drops out; -1 when it cannot be timed. The buffer is taken and freed before the allocator's
 * seal. */
double af_verdict_estimate_s(const run_t *r)
{
    af_config_t c = r->s.cfg;
    int64_t fit = r->s.T < (1 << 23) ? (1 << 23) / r->s.T : 1;
    int64_t nb = r->s.B < fit ? r->s.B : fit;
    c.blocks = nb;
    double *u = malloc(sizeof(double) * (size_t)(nb * r->s.T));
    if (u == NULL) {
        return -1.0;
    }
    double per = -1.0;
    for (int64_t k = 1; k <= (1 << 20); k *= 2) {
        double t0 = af_now_us();
        if (af_reference_run(&c, k, u) != AF_OK) {
            break;
        }
        double t1 = af_now_us();
        if (af_reference_run(&c, 2 * k, u) != AF_OK) {
            break;
        }
        double t2 = af_now_us();
        if (t2 - t1 >= 2e4 || 2 * k >= r->s.cfg.steps) {
            double d = (t2 - t1) - (t1 - t0);
            per = (d > 0 ? d : t2 - t1) * 1e-6 / ((double)(d > 0 ? k : 2 * k) * (double)nb);
            break;
        }
    }
    free(u);
    return per < 0 ? -1.0 : per * (double)r->s.B * (double)r->s.cfg.steps;
}

af_result_t af_verdict_finish(run_t *r, verdict_t *v, int verify)
{
    if (verify && r->s.world.rank == 0 && !r->prog.stop_signal &&
        (!r->prog.quiet || r->prog.mode != AF_PROGRESS_OFF)) {
        /* The check is serial and may outlast the steps: said before it starts. */
        double s = r->prog.ref_s;
        char about[48] = "";
        if (s >= 0) {
            snprintf(about, sizeof about, ", about %.1f %s", s < 120 ? s : s / 60,
                     s < 120 ? "s" : "min");
        }
        fprintf(stderr,
                "agefence: checking the final state against the serial reference (%lld steps on "
                "one core%s)\n",
                (long long)r->s.state_step, about);
        fflush(stderr);
    }
    /* The rows still in the batch (the last one was waiting for its step and log times). */
    AF_CHECK(af_step_log(r, 1));
    int64_t n = r->s.B * r->s.T;
    double *state = NULL;
    double *ref = NULL;
    if (r->s.world.rank == 0) {
        state = malloc(sizeof(double) * (size_t)n);
        ref = malloc(sizeof(double) * (size_t)n);
        if (state == NULL || ref == NULL) {
            free(state);
            free(ref);
            af_error_set("cannot allocate %lld cells to verify the final state", (long long)n);
            return AF_ERR_NOMEM;
        }
    }
    af_result_t rc = gather_state(r, state);
    if (rc == AF_OK && r->s.world.rank == 0) {
        double t0 = af_now_us();
        if (verify) {
            rc = af_reference_run(&r->s.cfg, r->s.state_step, ref);
        }
        v->ref_seconds = (af_now_us() - t0) * 1e-6;
        if (rc == AF_OK) {
            v->bitwise_equal = verify ? memcmp(state, ref, sizeof(double) * (size_t)n) == 0 : -1;
            v->state_sum = af_checksum(state, n);
            v->ref_sum = verify ? af_checksum(ref, n) : 0;
            /* Mass before and after, in the same fixed order as the run's diagnostics. */
            double m1 = 0;
            double m0 = 0;
            double e = 0;
            for (int64_t b = 0; b < r->s.B; ++b) {
                double mb = 0;
                af_block_diag(state + b * r->s.T, (int)r->s.T, &mb, &e);
                m1 += mb;
            }
            af_initial_cells(&r->s.cfg, 0, n, ref);
            for (int64_t b = 0; b < r->s.B; ++b) {
                double mb = 0;
                af_block_diag(ref + b * r->s.T, (int)r->s.T, &mb, &e);
                m0 += mb;
            }
            v->mass0 = m0 * af_config_dx(&r->s.cfg);
            v->mass_final = m1 * af_config_dx(&r->s.cfg);
            rc = af_log_write_f64(r->slog.log, "/final/state", state, (size_t)n);
        }
    }
    free(state);
    free(ref);
    return rc;
}

/* One 8-byte column of /units: every rank's own units (fill writes them into `mine`),
 * gathered to rank 0 in ascending unit order (the ranks' ranges are in rank order) and written
 * there. Collective; a write that fails on rank 0 leaves *rc set and the gathers going. */
typedef void (*unit_column_fn)(const run_t *r, int64_t k, void *v);

static void col_lifetime(const run_t *r, int64_t k, void *v)
{
    const af_aging_t *a = &r->health.aging;
    *(double *)v = a->lifetime_h[k];
}
static void col_age(const run_t *r, int64_t k, void *v)
{
    const af_aging_t *a = &r->health.aging;
    /* The model keeps each unit's linear segment, not its age: the age at the last step (at
     * the death step for the dead) comes from the segment. */
    *(double *)v = af_aging_age_h(a, a->u_lo + k);
}
static void col_temp(const run_t *r, int64_t k, void *v)
{
    const af_aging_t *a = &r->health.aging;
    *(double *)v = a->temp_k[k];
}
static void col_fade(const run_t *r, int64_t k, void *v)
{
    const af_aging_t *a = &r->health.aging;
    *(int64_t *)v = a->fade_step[k];
}
static void col_death(const run_t *r, int64_t k, void *v)
{
    const af_aging_t *a = &r->health.aging;
    *(int64_t *)v = af_aging_death_step(a, a->u_lo + k);
}
static void col_cause(const run_t *r, int64_t k, void *v)
{
    const af_aging_t *a = &r->health.aging;
    *(int64_t *)v = a->cause[k];
}

static void col_first_corrupt(const run_t *r, int64_t k, void *v)
{
    *(int64_t *)v = r->rc.det.unit_first_corrupt[k];
}

static af_result_t unit_column(run_t *r, const char *path, int is_f64, unit_column_fn fill,
                               int64_t *mine, int64_t *all, const size_t *counts, af_result_t *rc)
{
    const af_aging_t *a = &r->health.aging;
    for (int64_t k = 0; k < a->u_hi - a->u_lo; ++k) {
        fill(r, k, mine + k);
    }
    AF_CHECK(r->s.fab->ops->gatherv(r->s.fab, mine, sizeof(int64_t) * (size_t)(a->u_hi - a->u_lo),
                                    all, counts, 0));
    if (r->s.world.rank == 0 && *rc == AF_OK) {
        *rc = is_f64 ? af_log_write_f64(r->slog.log, path, (const double *)all, (size_t)r->s.units)
                     : af_log_write_i64(r->slog.log, path, all, (size_t)r->s.units);
    }
    return AF_OK;
}

/* /units: what the aging model did to every unit. Collective: each rank's model holds its own
 * devices' units, and rank 0 writes the columns one at a time. */
af_result_t af_write_units(run_t *r)
{
    const int R = r->s.world.size;
    const size_t n = (size_t)r->s.units;
    const size_t own = (size_t)(r->health.aging.u_hi - r->health.aging.u_lo);
    int64_t *mine = malloc(sizeof(int64_t) * (own > 0 ? own : 1));
    int64_t *all = r->s.world.rank == 0 ? malloc(sizeof(int64_t) * (n > 0 ? n : 1)) : NULL;
    size_t *counts = malloc(sizeof(size_t) * (size_t)R);
    /* Every rank learns whether every rank has its buffers before any gather starts. */
    uint64_t missing = (mine == NULL || counts == NULL || (r->s.world.rank == 0 && all == NULL));
    af_result_t rc = r->s.fab->ops->allreduce_max_u64(r->s.fab, &missing, 1);
    if (rc == AF_OK && missing != 0) {
        af_error_set("cannot allocate the /units columns of %zu units", n);
        rc = AF_ERR_NOMEM;
    }
    if (rc == AF_OK) {
        for (int q = 0; q < R; ++q) {
            int64_t lo = 0;
            int64_t hi = 0;
            af_rank_devices(r->s.D, R, q, &lo, &hi);
            counts[q] = sizeof(int64_t) * (size_t)((hi - lo) * r->s.U);
        }
        af_result_t wrc = AF_OK;
        static const struct {
            const char *path;
            int is_f64;
            unit_column_fn fill;
        } cols[] = {{"/units/lifetime_hours", 1, col_lifetime},
                    {"/units/age_hours", 1, col_age},
                    {"/units/temperature_K", 1, col_temp},
                    {"/units/fade_step", 0, col_fade},
                    {"/units/death_step", 0, col_death},
                    {"/units/cause", 0, col_cause},
                    {"/units/first_corrupt_step", 0, col_first_corrupt}};
        for (size_t c = 0; rc == AF_OK && c < sizeof cols / sizeof cols[0]; ++c) {
            rc =
                unit_column(r, cols[c].path, cols[c].is_f64, cols[c].fill, mine, all, counts, &wrc);
        }
        if (rc == AF_OK && r->s.world.rank == 0) {
            rc = wrc;
            for (size_t u = 0; rc == AF_OK && u < n; ++u) {
                all[u] = (int64_t)u / r->s.U;
            }
            if (rc == AF_OK) {
                rc = af_log_write_i64(r->slog.log, "/units/device", all, n);
            }
            for (size_t u = 0; rc == AF_OK && u < n; ++u) {
                all[u] = (int64_t)u % r->s.U;
            }
            if (rc == AF_OK) {
                rc = af_log_write_i64(r->slog.log, "/units/unit", all, n);
            }
            /* The simulator's truth about the silent units, for the analysis: no detector
             * read it during the run. */
            for (size_t u = 0; rc == AF_OK && u < n; ++u) {
                all[u] = af_aging_silent(&r->s.cfg, (int64_t)u);
            }
            if (rc == AF_OK) {
                rc = af_log_write_i64(r->slog.log, "/units/silent", all, n);
            }
            /* The fate the quarantine gave a unit: the step it was declared suspect, -1. */
            for (size_t u = 0; rc == AF_OK && u < n; ++u) {
                all[u] = af_quarantined_step(&r->rc.det, (int64_t)u);
            }
            if (rc == AF_OK) {
                rc = af_log_write_i64(r->slog.log, "/units/quarantined_step", all, n);
            }
            if (rc == AF_OK) {
                rc = af_log_attr_str(r->slog.log, "/units", "cause_codes",
                                     "0 alive, 1 wear-out, 2 sudden, 3 scripted, 4 device, "
                                     "5 node, 8 link, 9 link_down (scripted)");
            }
        }
    }
    free(mine);
    free(all);
    free(counts);
    return rc;
}

/* The memory the ranks held against what the budget said (the largest over the ranks of
 * each figure), for /final. Collective. */
af_result_t af_memory_measures(run_t *r)
{
    double v[AF_NMEM] = {r->mem.budget.startup, r->mem.budget.peak, r->mem.rss_baseline,
                         (double)af_alloc_bytes_peak(), af_memory_rss_peak()};
    uint64_t w[AF_NMEM];
    memcpy(w, v, sizeof w);
    AF_CHECK(r->s.fab->ops->allreduce_max_u64(r->s.fab, w, AF_NMEM));
    memcpy(r->mem.max, w, sizeof w);
    return AF_OK;
}

af_result_t af_write_final(run_t *r, const verdict_t *v)
{
    af_log_t *log = r->slog.log;
    char hex[32];
    AF_CHECK(af_log_attr_str(log, "/final", "exit_reason", v->exit_reason));
    if (r->prog.exhausted) {
        AF_CHECK(af_log_attr_str(log, "/final", "exhausted_why", r->prog.exhausted_why));
    }
    AF_CHECK(af_log_attr_i64(log, "/final", "exit_code", v->exit_code));
    AF_CHECK(af_log_attr_i64(log, "/final", "steps_completed", r->s.tick));
    AF_CHECK(af_log_attr_i64(log, "/final", "state_step", r->s.state_step));
    AF_CHECK(af_log_attr_i64(log, "/final", "bitwise_equal", v->bitwise_equal));
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)v->state_sum);
    AF_CHECK(af_log_attr_str(log, "/final", "state_checksum", hex));
    /* Not verified: no reference was computed, so there is no reference checksum to name. */
    snprintf(hex, sizeof hex, v->bitwise_equal < 0 ? "unverified" : "%016llx",
             (unsigned long long)v->ref_sum);
    AF_CHECK(af_log_attr_str(log, "/final", "reference_checksum", hex));
    AF_CHECK(af_log_attr_f64(log, "/final", "mass_initial", v->mass0));
    AF_CHECK(af_log_attr_f64(log, "/final", "mass_final", v->mass_final));
    AF_CHECK(af_log_attr_f64(log, "/final", "sim_hours", r->prog.sim_hours));
    AF_CHECK(af_log_attr_f64(log, "/final", "max_blackout", r->tally.max_blackout));
    AF_CHECK(af_log_attr_i64(log, "/final", "nonfinite_leaked_total", r->tally.leaked_total));
    AF_CHECK(af_log_attr_i64(log, "/final", "sdc_undetected_total", r->tally.sdc_total));
    AF_CHECK(af_log_attr_i64(log, "/final", "sdc_harmful_total", r->slog.totals.sdc_harmful));
    AF_CHECK(af_log_attr_i64(log, "/final", "event_log_errors", r->slog.event_log_errors));
    /* The log's writer thread (rank 0): its own time, off the steps' path and so not in log_us,
     * and the step thread's waits for it, which are. The first /final write stopped it. */
    {
        double busy_us = 0;
        double wait_us = 0;
        int64_t batches = 0;
        af_log_writer_stats(log, &busy_us, &wait_us, &batches);
        AF_CHECK(af_log_attr_f64(log, "/final", "log_writer_busy_us", busy_us));
        AF_CHECK(af_log_attr_f64(log, "/final", "log_writer_wait_us", wait_us));
        AF_CHECK(af_log_attr_i64(log, "/final", "log_writer_batches", batches));
        AF_CHECK(af_log_attr_f64(log, "/final", "log_writer_cpu_us", af_log_writer_cpu_us(log)));
    }
    /* Over every rank (each row carries the ranks' cumulative counts, summed). */
    AF_CHECK(af_log_attr_i64(log, "/final", "allocs_after_init", r->slog.totals.allocs_after_init));
    AF_CHECK(af_log_attr_i64(log, "/final", "comms_after_init", r->slog.totals.comms_after_init));
    /* Memory, the largest over the ranks: the budget of start-up and of the whole run (start-up
     * and the verdict, beyond what the process held before), what the process held before
     * start-up, what agefence's allocator held at most, and the peak resident memory. */
    static const char *const mem_names[AF_NMEM] = {
        "memory_budget_startup_bytes", "memory_budget_peak_bytes", "rss_before_startup_bytes",
        "alloc_peak_bytes", "rss_peak_bytes"};
    for (int i = 0; i < AF_NMEM; ++i) {
        AF_CHECK(af_log_attr_f64(log, "/final", mem_names[i], r->mem.max[i]));
    }
    /* Rank 0's (every rank prepares and runs the same step graph). */
    AF_CHECK(af_log_attr_i64(log, "/final", "graph_instantiations", r->s.k->graph_instantiations));
    AF_CHECK(af_log_attr_i64(log, "/final", "graph_steps", r->s.k->graph_launches));
    AF_CHECK(af_log_attr_i64(log, "/final", "one_pass_steps", r->tally.run_one_pass));
    double load[3] = {0, 0, 0};
    if (getloadavg(load, 3) > 0) {
        AF_CHECK(af_log_attr_f64(log, "/host", "loadavg_1min_after", load[0]));
    }
    /* Totals over the run, so scripts need not sum /steps. */
    const af_step_row_t *tot = &r->slog.totals;
    AF_CHECK(af_log_attr_i64(log, "/final", "corrupt_injected_total", tot->corrupt_injected));
    AF_CHECK(af_log_attr_i64(log, "/final", "corrupt_detected_total", tot->corrupt_detected));
    AF_CHECK(af_log_attr_i64(log, "/final", "fenced_total", tot->fenced));
    AF_CHECK(af_log_attr_i64(log, "/final", "retried_total", tot->retried));
    AF_CHECK(af_log_attr_i64(log, "/final", "unverified_commits_total", tot->unverified_commits));
    AF_CHECK(af_log_attr_i64(log, "/final", "corrupt_harmful_total", tot->corrupt_harmful));
    AF_CHECK(af_log_attr_i64(log, "/final", "detected_finite_total", tot->detected_finite));
    AF_CHECK(af_log_attr_i64(log, "/final", "detected_abft_total", tot->detected_abft));
    AF_CHECK(af_log_attr_i64(log, "/final", "detected_twin_total", tot->detected_twin));
    AF_CHECK(af_log_attr_i64(log, "/final", "abft_false_alarms_total", tot->abft_false_alarms));
    AF_CHECK(af_log_attr_i64(log, "/final", "quarantined_units_total", tot->quarantined_units));
    AF_CHECK(af_log_attr_i64(log, "/final", "twins_total", tot->twins));
    AF_CHECK(af_log_attr_i64(log, "/final", "moves_drain_total", tot->moves_drain));
    AF_CHECK(af_log_attr_i64(log, "/final", "moves_restore_total", tot->moves_restore));
    AF_CHECK(af_log_attr_i64(log, "/final", "moves_retry_total", tot->moves_retry));
    AF_CHECK(af_log_attr_i64(log, "/final", "rollbacks_total", tot->rollbacks));
    AF_CHECK(af_log_attr_i64(log, "/final", "replayed_steps_total", tot->replayed_steps));
    AF_CHECK(af_log_attr_i64(log, "/final", "replayed_blocks_total", tot->replayed_blocks));
    AF_CHECK(
        af_log_attr_i64(log, "/final", "replayed_block_steps_total", tot->replayed_block_steps));
    char t[64];
    af_iso_time(t, sizeof t);
    AF_CHECK(af_log_attr_str(log, "/final", "end_time", t));
    return AF_OK;
}

void af_print_summary(const run_t *r, const verdict_t *v, double wall_s)
{
    const af_step_row_t *t = &r->slog.totals;
    char shape[96];
    af_wl_config_t wc = af_config_workload(&r->s.cfg);
    r->s.wl->shape(&wc, shape, sizeof shape);
    printf("agefence run: scenario '%s', %d ranks, %lld devices x %lld units, %lld blocks x %s "
           "(%s), capacity %lld slots/unit\n",
           r->s.cfg.name, r->s.world.size, (long long)r->s.D, (long long)r->s.U, (long long)r->s.B,
           shape, r->s.wl->name, (long long)r->s.C);
    printf("  backends       compute=%s fabric=%s; kernel %s\n", r->s.k->ops->name,
           r->s.nccl != NULL ? r->s.nccl->ops->name : r->s.fab->ops->name,
           r->s.k->path != NULL ? r->s.k->path : "?");
    printf("  step graph     %s: %lld of %lld steps, %lld graph instantiation%s\n", r->graph.why,
           (long long)r->s.k->graph_launches, (long long)r->s.tick,
           (long long)r->s.k->graph_instantiations, r->s.k->graph_instantiations == 1 ? "" : "s");
    printf("  one pass       %lld of %lld steps: each block computed, contained, committed and "
           "packed at once (the others had DMR twins or a rollback)\n",
           (long long)r->tally.run_one_pass, (long long)r->s.tick);
    printf("  steps          %lld executed (%lld replayed) for %lld of %lld in %.2f s "
           "(%.0f steps/s), %.0f simulated hours\n",
           (long long)r->s.tick, (long long)t->replayed_steps, (long long)r->s.state_step,
           (long long)r->s.cfg.steps, wall_s, wall_s > 0 ? (double)r->s.tick / wall_s : 0.0,
           r->prog.sim_hours);
    printf("  blackout       max %.1f%% of %lld units dead (detect=%s, drain=%s)\n",
           100.0 * r->tally.max_blackout, (long long)r->s.units, af_detect_name(r->s.cfg.detect),
           r->s.cfg.drain ? "on" : "off");
    printf("  containment    %lld corruptions injected, %lld detected, %lld fenced, %lld "
           "retried; %lld NaN/Inf leaked, %lld finite undetected (%lld harmful, %lld benign)\n",
           (long long)t->corrupt_injected, (long long)t->corrupt_detected, (long long)t->fenced,
           (long long)t->retried, (long long)r->tally.leaked_total, (long long)r->tally.sdc_total,
           (long long)t->sdc_harmful, (long long)(r->tally.sdc_total - t->sdc_harmful));
    if (r->s.cfg.silent_fraction > 0.0) {
        int64_t silent = 0;
        for (int64_t u = 0; u < r->s.units; ++u) {
            silent += af_aging_silent(&r->s.cfg, u);
        }
        printf("  silent units   %lld of %lld units corrupt with no precursor (p = %g per element; "
               "corruption.silent_fraction = %g)\n",
               (long long)silent, (long long)r->s.units, r->s.cfg.silent_p,
               r->s.cfg.silent_fraction);
    }
    if (t->corrupt_detected > 0 || t->abft_false_alarms > 0 || t->quarantined_units > 0) {
        printf("  detectors      of %lld detected: %lld non-finite, %lld abft, %lld by a twin; "
               "%lld abft false alarms; %lld units quarantined\n",
               (long long)t->corrupt_detected, (long long)t->detected_finite,
               (long long)t->detected_abft, (long long)t->detected_twin,
               (long long)t->abft_false_alarms, (long long)t->quarantined_units);
    }
    if (af_detect_flags(r->s.cfg.detect) & AF_DET_DMR) {
        printf("  unverified     %lld block results of FADING units committed without a DMR "
               "twin (no room for one)%s\n",
               (long long)t->unverified_commits,
               t->unverified_commits > 0 ? ": DMR did not check them" : "");
    }
    printf("  recovery       %lld drains, %lld restores (%lld replayed alone, %lld block-steps), "
           "%lld retry moves, %lld rollbacks (replay=%s)\n",
           (long long)t->moves_drain, (long long)t->moves_restore, (long long)t->replayed_blocks,
           (long long)t->replayed_block_steps, (long long)t->moves_retry, (long long)t->rollbacks,
           r->s.cfg.replay == AF_REPLAY_LOCAL ? "local" : "global");
    printf("  exit reason    %s\n", v->exit_reason);
    if (v->bitwise_equal < 0) {
        printf("  final state    NOT VERIFIED against the serial reference (checksum %016llx): "
               "mpirun ended the job, and kills it before a reference could be computed\n",
               (unsigned long long)v->state_sum);
    } else {
        printf("  final state    %s the serial fault-free reference (checksum %016llx, "
               "reference %016llx)\n",
               v->bitwise_equal ? "BITWISE EQUAL to" : "DIFFERS from",
               (unsigned long long)v->state_sum, (unsigned long long)v->ref_sum);
    }
    printf("  mass           %.17g -> %.17g (drift %.3g)\n", v->mass0, v->mass_final,
           v->mass_final - v->mass0);
    printf("  allocations    %lld after start-up, %lld communicators created (all ranks)\n",
           (long long)r->slog.totals.allocs_after_init, (long long)r->slog.totals.comms_after_init);
    if (r->slog.event_log_errors > 0) {
        printf("  log            %s (%lld steps; %lld events LOST, see stderr)\n", r->slog.out_path,
               (long long)r->s.tick, (long long)r->slog.event_log_errors);
    } else {
        printf("  log            %s (%lld steps)\n", r->slog.out_path, (long long)r->s.tick);
    }
    if (v->exit_code == AF_EXIT_SIGNAL && v->bitwise_equal != 0) {
        /* A stop the user asked for is not a failure: what was checked is said with it. */
        printf("  verdict        STOPPED after step %lld of %lld on request, %s\n",
               (long long)r->s.state_step, (long long)r->s.cfg.steps,
               v->bitwise_equal < 0 ? "not verified" : "the state reached verified");
    } else {
        printf("  verdict        %s\n", v->exit_code == 0 ? "PASS" : "FAIL");
    }
}
