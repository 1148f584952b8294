/* agefence run driver. One step (DESIGN "One step"):
 *   coordinator -> moves -> halo (exact all-reduce of edges, diagnostics and flags) ->
 *   masked compute + containment + commit -> replica -> log (gather to rank 0, append).
 * Everything the loop touches is allocated in run_init(); af_alloc_seal() closes start-up and
 * every later allocation is counted and logged. */
#include "run.h"

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
#include "verdict.h"
#include "../io/stop.h"
#include "../io/version.h"

typedef af_run_state_t run_t;

/* Rank 0 reads and validates the scenario; every rank receives the resolved configuration
 * itself (a plain struct), so all hold exactly the same values. Returns AF_ERR_USAGE on every
 * rank when rank 0 found the input bad (rank 0 has printed the one line). */
static af_result_t distribute_config(run_t *r, const af_run_opts_t *o)
{
    int64_t status = 0;
    char err[700] = "";
    if (r->s.world.rank == 0 && o->usage_error[0] != '\0') {
        fprintf(stderr, "agefence: %s\n", o->usage_error);
        status = 1;
    } else if (r->s.world.rank == 0) {
        af_result_t rc =
            af_config_load(&r->s.cfg, o->config_file, o->sets, o->nsets, err, sizeof err);
        if (rc == AF_OK) {
            rc = af_config_validate(&r->s.cfg, r->s.world.size, err, sizeof err);
        }
        if (rc != AF_OK) {
            fprintf(stderr, "agefence: %s\n", err);
            status = 1;
        } else if (!o->quiet) {
            af_config_print_notes(&r->s.cfg, stderr);
        }
    }
    AF_CHECK(r->s.fab->ops->bcast(r->s.fab, &status, sizeof status, 0));
    if (status != 0) {
        return AF_ERR_USAGE;
    }
    return r->s.fab->ops->bcast(r->s.fab, &r->s.cfg, sizeof r->s.cfg, 0);
}

/* Agrees on a status across ranks: returns the worst (largest) code any rank holds. */
static int agree(run_t *r, int code)
{
    int64_t v = code;
    /* A sum of non-negative codes is zero only when all are zero; the max is what we report. */
    uint64_t m = (uint64_t)code;
    if (r->s.fab->ops->allreduce_max_u64(r->s.fab, &m, 1) != AF_OK) {
        return AF_EXIT_ERROR;
    }
    (void)v;
    return (int)m;
}

/* The timer floor (smallest non-zero difference of two clock reads) and the 8-byte all-reduce
 * floor of this fabric, with raw samples kept in /calibration. */
static af_result_t calibrate(run_t *r)
{
    enum { WARM = 20, N = 200 };
    double timer[N];
    double ar[N];
    for (int i = 0; i < N; ++i) {
        double a = af_now_us();
        double b = af_now_us();
        while (b == a) {
            b = af_now_us();
        }
        timer[i] = b - a;
    }
    uint64_t v = 0;
    for (int i = 0; i < WARM + N; ++i) {
        v = (uint64_t)r->s.world.rank;
        double t0 = af_now_us();
        AF_CHECK(r->s.fab->ops->allreduce_max_u64(r->s.fab, &v, 1));
        double t1 = af_now_us();
        if (i >= WARM) {
            ar[i - WARM] = t1 - t0;
        }
    }
    if (v != (uint64_t)(r->s.world.size - 1)) {
        af_error_set("calibration: the all-reduce returned %llu, expected %d",
                     (unsigned long long)v, r->s.world.size - 1);
        return AF_ERR_FABRIC;
    }
    if (r->slog.log != NULL) {
        AF_CHECK(af_log_calibration(r->slog.log, "timer_floor_us", timer, N));
        AF_CHECK(af_log_calibration(r->slog.log, "allreduce8_us", ar, N));
        AF_CHECK(af_log_attr_i64(r->slog.log, "/calibration", "warmup_iterations", WARM));
    }
    return AF_OK;
}

static af_result_t all_ok(run_t *r, af_result_t rc);

/* This rank's slots, written from the scenario's initial cells (no collective). */
static af_result_t write_initial_slots(run_t *r)
{
    for (int s = 0; s < r->s.n_local; ++s) {
        int32_t b = r->s.pl.slot_block[r->s.slot0 + s];
        af_slot_control(&r->rc, r->s.slot0 + s);
        r->s.k->commit[s] = (uint8_t)(b >= 0);
        if (b >= 0) {
            af_initial_cells(&r->s.cfg, (int64_t)b * r->s.T, r->s.T, r->s.cellbuf);
            AF_CHECK(r->s.k->ops->write_slot(r->s.k, s, r->s.cellbuf));
        }
    }
    return r->s.k->ops->upload_control(r->s.k);
}

/* Collective: the initial state, then its exchange and first replicas, each part agreed so
 * that a rank that fails in one enters no collective of the next alone. */
static af_result_t load_initial_state(run_t *r)
{
    AF_CHECK(all_ok(r, write_initial_slots(r)));
    /* The exchange of the initial state, which the first step's compute reads, and the first
     * replicas (logical step 0). */
    af_result_t rc = af_exchange(&r->halo);
    if (rc == AF_OK) {
        rc = af_exchange_swap(&r->halo);
    }
    AF_CHECK(all_ok(r, rc));
    AF_CHECK(all_ok(r, af_replicas_refresh(&r->rc)));
    AF_CHECK(all_ok(r, af_replicas_log_edges(&r->rc)));
    return AF_OK;
}

/* Backend selection (sim/io/backend.c) on every rank, then an agreement: every rank must run the
 * same pair. A bad request is reported once, by rank 0, as bad input. */
static af_result_t select_backends(run_t *r, const af_kernels_ops_t **kops, int *use_nccl,
                                   int *cuda_device)
{
    char why[200] = "";
    af_result_t rc = af_backend_select(r->s.cfg.compute, r->s.cfg.fabric, r->s.cfg.share_gpu,
                                       r->s.world.local_rank, r->s.world.local_size, kops, use_nccl,
                                       cuda_device, why, sizeof why);
    int pair = rc == AF_OK ? (*kops == &af_kernels_cpu ? 0 : 2) + *use_nccl : 0;
    uint64_t v[3] = {rc != AF_OK, (uint64_t)pair, (uint64_t)(3 - pair)};
    AF_CHECK(r->s.fab->ops->allreduce_max_u64(r->s.fab, v, 3));
    if (v[0] != 0) {
        af_error_set("%s", rc != AF_OK ? why : "backend selection failed on another rank");
        return AF_ERR_USAGE;
    }
    if ((int)v[1] != 3 - (int)v[2]) {
        af_error_set("ranks chose different backends (backend.compute = auto on nodes with and "
                     "without GPUs): set backend.compute and backend.fabric explicitly");
        return AF_ERR_USAGE;
    }
    snprintf(r->graph.backend_why, sizeof r->graph.backend_why, "%s", why);
    return AF_OK;
}

/* What start-up and the verdict will allocate on each rank (sim/driver/memory.c), summed over the
 * ranks of each node and set against the node's available memory: refused up front on every
 * rank when any node lacks it, rather than failing (or swapping) half-way through start-up.
 * Collective. */
static af_result_t check_memory(run_t *r, const af_kernels_ops_t *kops)
{
    af_memory_estimate(&r->s.cfg, r->s.world.size, r->s.world.rank, kops, &r->mem.budget);
    r->mem.rss_baseline = af_memory_rss_now();
    double node = r->mem.budget.peak;
    AF_CHECK(af_world_node_sum_f64(&node, 1));
    double have = af_memory_node_available();
    const char *dbg = getenv("AGEFENCE_DEBUG");
    const char *fake = dbg != NULL ? strstr(dbg, "memavail=") : NULL;
    if (fake != NULL) {
        have = atof(fake + strlen("memavail=")); /* tests: a node of that size */
    }
    int lacks = have > 0 && node > have;
    /* Non-negative doubles order like their bit patterns: the exact max all-reduce carries the
     * largest shortfall's figures to every rank. */
    double v[3] = {lacks ? 1.0 : 0.0, lacks ? node : 0.0, lacks ? have : 0.0};
    uint64_t w[3];
    memcpy(w, v, sizeof w);
    AF_CHECK(r->s.fab->ops->allreduce_max_u64(r->s.fab, w, 3));
    memcpy(v, w, sizeof v);
    if (v[0] == 0) {
        return AF_OK;
    }
    const af_memory_t *m = &r->mem.budget;
    af_error_set("the scenario needs %.3g bytes on a node (its ranks together), but the node has "
                 "%.3g bytes available; rank %d alone needs %.3g (slots %.3g, fleet tables %.3g, "
                 "block tables %.3g, replicas and staging %.3g, its units' aging model %.3g, "
                 "rank 0's log %.3g, the final verdict %.3g): lower "
                 "scenario.blocks, block_len, devices or max_blackout, or use more nodes",
                 v[1], v[2], r->s.world.rank, m->peak, m->shard, m->fleet, m->blocks, m->replicas,
                 m->aging, m->rank0, m->verdict);
    return AF_ERR_USAGE;
}

/* A collective point of start-up: every rank learns whether any rank failed before it, so
 * that none enters a collective the others will never reach. Returns rc on a rank that failed
 * and AF_ERR_ELSEWHERE on the others (the failing rank says why). */
static af_result_t all_ok(run_t *r, af_result_t rc)
{
    uint64_t any = rc != AF_OK;
    AF_CHECK(r->s.fab->ops->allreduce_max_u64(r->s.fab, &any, 1));
    return rc != AF_OK ? rc : any ? AF_ERR_ELSEWHERE : AF_OK;
}

/* The rank's own buffers of the step loop and the log (no collective). */
static af_result_t local_buffers(run_t *r, const af_kernels_ops_t *kops)
{
    AF_CHECK(af_step_init(r));
    if (kops != &af_kernels_cpu) {
        size_t bytes = sizeof(uint64_t) * r->halo.xlen;
        AF_CHECK(af_buf_alloc(AF_MEM_DEVICE, bytes, (void **)&r->halo.dxchg_prev));
        AF_CHECK(af_buf_alloc(AF_MEM_DEVICE, bytes, (void **)&r->halo.dxchg_cur));
    }
    size_t cap = (size_t)r->s.cfg.flush_interval + 1;
    r->slog.batch = af_alloc(sizeof(af_payload_t) * cap);
    if (r->slog.batch == NULL) {
        af_error_set("cannot allocate the log batch of %zu steps", cap);
        return AF_ERR_NOMEM;
    }
    if (r->s.world.rank == 0) {
        r->slog.all = af_alloc(sizeof(af_payload_t) * cap * (size_t)r->s.world.size);
        r->slog.rows = af_alloc(sizeof(af_step_row_t) * cap);
        r->slog.phases = af_alloc(sizeof(double) * AF_NPHASES * (size_t)r->s.world.size);
        if (r->slog.all == NULL || r->slog.rows == NULL || r->slog.phases == NULL) {
            af_error_set("cannot allocate the log buffers of %zu steps x %d ranks", cap,
                         r->s.world.size);
            return AF_ERR_NOMEM;
        }
    }
    return AF_OK;
}

static af_result_t run_init(run_t *r)
{
    r->s.T = af_config_cells(&r->s.cfg);
    r->s.B = r->s.cfg.blocks;
    r->s.D = af_config_devices(&r->s.cfg, r->s.world.size);
    r->s.U = r->s.cfg.units_per_device;
    r->s.units = r->s.D * r->s.U;
    r->s.wl = af_config_wl(&r->s.cfg);
    {
        af_wl_config_t wc = af_config_workload(&r->s.cfg);
        r->s.wlp = r->s.wl->params(&wc);
    }
    const af_kernels_ops_t *kops = NULL;
    int use_nccl = 0;
    int cuda_device = -1;
    AF_CHECK(select_backends(r, &kops, &use_nccl, &cuda_device));
    AF_CHECK(check_memory(r, kops));
    AF_CHECK(all_ok(r, af_placement_init(&r->s.pl, r->s.D, r->s.U, r->s.B, r->s.cfg.max_blackout,
                                         r->s.world.size, r->s.world.rank)));
    r->s.pl.devices_per_node = r->s.cfg.devices_per_node;
    r->s.C = r->s.pl.capacity;
    r->s.n_local = (int)af_placement_local_slots(&r->s.pl);
    r->s.slot0 = r->s.pl.dev_lo * r->s.U * r->s.C;
    af_shard_desc_t desc = {
        .n_slots = r->s.n_local,
        .block_len = (int)r->s.T,
        .blocks = (int)r->s.B,
        .workload = r->s.wl->kind,
        .coeffs = r->s.wlp.coeffs,
        .attn = r->s.wlp.attn,
        .seed = (uint64_t)r->s.cfg.seed,
        .mix = af_corrupt_mix(&r->s.cfg),
        .abft = (af_detect_flags(r->s.cfg.detect) & AF_DET_ABFT) != 0,
        .cuda_device = cuda_device,
        .cpu_kernel = r->s.cfg.cpu_kernel,
        .pool_slots = af_shard_pool_slots(r->s.n_local, r->s.B),
    };
    AF_CHECK(all_ok(r, kops->create(&desc, &r->s.k)));
    if (use_nccl) {
        AF_CHECK(all_ok(r, af_fabric_nccl_create(&r->s.nccl, cuda_device)));
    }
    AF_CHECK(all_ok(r, local_buffers(r, kops)));
    AF_CHECK(load_initial_state(r));
    AF_CHECK(all_ok(r, af_step_graph_init(r)));
    if (r->s.world.rank == 0 && r->s.cfg.metrics_textfile[0] != '\0') {
        AF_CHECK(af_metrics_open(
            &r->slog.metrics, r->s.cfg.metrics_textfile, r->s.cfg.name, r->s.k->ops->name,
            r->s.nccl != NULL ? r->s.nccl->ops->name : r->s.fab->ops->name, r->s.world.size));
        r->slog.metrics_on = 1;
    }
    return AF_OK;
}

/* Rank 0: the metrics file's view of the run now. */
static void metrics_write(run_t *r, int finished, int exit_code)
{
    af_metrics_view_t v;
    memset(&v, 0, sizeof v);
    v.step = r->s.tick;
    v.state_step = r->s.state_step;
    v.steps_planned = r->s.cfg.steps;
    v.dead = r->health.plan.dead;
    v.fading = r->health.plan.fading;
    v.straggler = r->thr.straggler_healthy;
    v.healthy = r->s.units - v.dead - v.fading - v.straggler;
    v.slow = r->thr.slow_units;
    v.blackout = (double)r->health.plan.dead / (double)r->s.units;
    v.max_blackout = r->tally.max_blackout;
    v.injected = r->slog.totals.corrupt_injected;
    v.detected = r->slog.totals.corrupt_detected;
    v.fenced = r->slog.totals.fenced;
    v.retried = r->slog.totals.retried;
    v.sdc = r->tally.sdc_total;
    v.counters_step = r->slog.flushed_step;
    v.leaked = r->tally.leaked_total;
    v.drains = r->tally.run_drains;
    v.restores = r->tally.run_restores;
    v.retry_moves = r->tally.run_retry_moves;
    v.rollbacks = r->tally.run_rollbacks;
    v.replayed = r->tally.run_replayed;
    v.finished = finished;
    v.exit_code = exit_code;
    af_metrics_write(&r->slog.metrics, &v);
}

/* Seconds as "0.4 s", "42 s", "3.5 min" or "2.1 h". */
static void fmt_secs(char *out, size_t n, double s)
{
    if (!(s >= 0) || s > 1e9) {
        snprintf(out, n, "?");
    } else if (s < 10) {
        snprintf(out, n, "%.1f s", s);
    } else if (s < 120) {
        snprintf(out, n, "%.0f s", s);
    } else if (s < 7200) {
        snprintf(out, n, "%.1f min", s / 60);
    } else {
        snprintf(out, n, "%.1f h", s / 3600);
    }
}

/* Rank 0, before the first step unless -q: the size of the work, so that a long run says what
 * it is about to do before it does it. */
static void start_notice(const run_t *r)
{
    char shape[96];
    af_wl_config_t wc = af_config_workload(&r->s.cfg);
    r->s.wl->shape(&wc, shape, sizeof shape);
    fprintf(stderr,
            "agefence: %lld steps x %lld blocks x %s (%s) on %d rank%s, %.3g cell-steps; the "
            "time it takes follows its first steps\n",
            (long long)r->s.cfg.steps, (long long)r->s.B, shape, r->s.wl->name, r->s.world.size,
            r->s.world.size == 1 ? "" : "s",
            (double)r->s.cfg.steps * (double)r->s.B * (double)r->s.T);
    fflush(stderr);
}

/* Rank 0 after every step (step: the state's step). Once the first steps are done (10 of them,
 * or 1 s), unless -q: the estimated time of the rest. And the progress line: repainted every
 * 0.2 s on a terminal, or a plain line then, every AF_PROGRESS_LINE_S seconds and at the last
 * step. */
static void progress(run_t *r, int64_t step, double t_start)
{
    double now = af_now_us();
    double el = (now - t_start) * 1e-6;
    int last = step >= r->s.cfg.steps;
    int warm = step >= 10 || el >= 1.0;
    double rate = el > 0 ? (double)step / el : 0.0;
    /* The steps left at the recent pace (a moving average of the last steps' time): steps
     * grow dearer as units fade (DMR twins, drains, replays), which the run's average is slow
     * to show. Unsure while the recent pace and the average differ by more than a quarter. */
    double dt = r->prog.prev_us > 0 ? now - r->prog.prev_us : now - t_start;
    r->prog.prev_us = now;
    /* The mean of the first 20 steps, then a moving average of weight 1/20. */
    r->prog.timed++;
    double w = r->prog.timed < 20 ? 1.0 / (double)r->prog.timed : 0.05;
    r->prog.step_us = (1.0 - w) * r->prog.step_us + w * dt;
    double avg_us = step > 0 ? el * 1e6 / (double)step : 0.0;
    double ratio = avg_us > 0 ? r->prog.step_us / avg_us : 1.0;
    int unsure = ratio > 1.25 || ratio < 0.8;
    double eta_steps = (double)(r->s.cfg.steps - step) * r->prog.step_us * 1e-6;
    double eta = eta_steps + (r->prog.ref_s > 0 ? r->prog.ref_s : 0.0);
    char t_eta[32];
    fmt_secs(t_eta, sizeof t_eta, eta);
    if (!r->prog.quiet && !r->prog.estimated && warm && !last) {
        r->prog.estimated = 1;
        char t_el[32];
        char t_st[32];
        char t_ref[32];
        fmt_secs(t_el, sizeof t_el, el);
        fmt_secs(t_st, sizeof t_st, eta_steps);
        fmt_secs(t_ref, sizeof t_ref, r->prog.ref_s);
        fprintf(stderr,
                "agefence: %lld steps in %s: about %s more for the other %lld, then %s for the "
                "check against the serial reference%s\n",
                (long long)step, t_el, t_st, (long long)(r->s.cfg.steps - step), t_ref,
                r->s.cfg.sim_hours_per_step > 0
                    ? " (a first estimate: steps cost more as units fade; the progress line "
                      "follows them)"
                    : "");
        fflush(stderr);
    }
    if (r->prog.mode == AF_PROGRESS_OFF) {
        return;
    }
    double every_us = r->prog.mode == AF_PROGRESS_REPAINT ? 2e5 : AF_PROGRESS_LINE_S * 1e6;
    if (!last && (r->prog.shown ? now - r->prog.last_us < every_us : !warm)) {
        return;
    }
    r->prog.shown = 1;
    r->prog.last_us = now;
    double pct = r->s.cfg.steps > 0 ? 100.0 * (double)step / (double)r->s.cfg.steps : 100.0;
    /* A slow run's rate keeps its digits: "0.35 steps/s", not "0 steps/s". */
    char t_ref[32];
    char why[96] = "";
    fmt_secs(t_ref, sizeof t_ref, r->prog.ref_s);
    if (unsure) {
        snprintf(why, sizeof why, ", unsure: a step takes %.1fx the average now", ratio);
    }
    fprintf(stderr,
            "%sagefence: step %lld/%lld (%.1f%%)  %.1f s  %.*f steps/s  ETA %s%s (%s of it the "
            "reference check%s)%s",
            r->prog.mode == AF_PROGRESS_REPAINT ? "\r" : "", (long long)step,
            (long long)r->s.cfg.steps, pct, el, rate >= 10 ? 0 : 2, rate, unsure ? "~" : "", t_eta,
            t_ref, why, r->prog.mode == AF_PROGRESS_REPAINT ? "   " : "\n");
    fflush(stderr);
}

/* Says at once (before the final check, which a launcher's SIGKILL may cut short) what stopped
 * the run and what comes next. Under Open MPI's ending of the job, says how long it waits
 * before its SIGKILL: the clean stop has to end within it. */
static void stop_notice(const run_t *r)
{
    int sig = af_stop_signal();
    const char *what = sig == SIGINT    ? "SIGINT"
                       : sig == SIGTERM ? "SIGTERM"
                       : sig == SIGCONT ? "mpirun ending the job"
                                        : "a signal to another rank";
    fprintf(stderr,
            "agefence: stopped by a signal (%s) after step %lld; %s, then closing the log\n", what,
            (long long)r->s.tick,
            sig == SIGCONT ? "logging the state unverified (mpirun kills the ranks before a "
                             "serial reference could be computed; a signal to the ranks "
                             "themselves keeps the check)"
                           : "checking the state against the serial reference");
    if (sig == SIGCONT) {
        /* Open MPI passes its MCA settings on to the ranks' environment; 1 s is its default. */
        const char *t = getenv("OMPI_MCA_odls_base_sigkill_timeout");
        long grace = t != NULL && t[0] != '\0' ? strtol(t, NULL, 10) : 1;
        fprintf(stderr,
                "agefence: mpirun sends SIGKILL %ld s after its SIGCONT (2 x "
                "odls_base_sigkill_timeout): a larger state's gather and log writes are cut "
                "short (mpirun --mca odls_base_sigkill_timeout SECONDS gives them more)\n",
                2 * grace);
    }
    fflush(stderr);
}

int af_run(const af_run_opts_t *opts, int *argc, char ***argv)
{
    af_world_t world;
    /* SIGINT/SIGTERM are taken from the start: one that comes while MPI starts (a batch job
     * cancelled then) stops the run at its first step, with a log, instead of killing it. */
    af_stop_install();
    if (af_world_init(argc, argv, &world) != AF_OK) {
        fprintf(stderr, "agefence: %s\n", af_error_text(AF_ERR_FABRIC));
        return AF_EXIT_ERROR;
    }
    int code = af_run_in_world(opts, &world);
    af_world_finalize();
    return code;
}

int af_run_in_world(const af_run_opts_t *opts, const af_world_t *world)
{
    /* The run state holds cache-line-aligned parts (the aging model's first line, what a step
     * without events reads: sim/fleet/aging.h), so it starts on a line too. */
    void *mem = NULL;
    run_t *r = posix_memalign(&mem, _Alignof(run_t), sizeof *r) == 0 ? mem : NULL;
    if (r != NULL) {
        memset(r, 0, sizeof *r);
    }
    if (r == NULL) {
        /* The other ranks are on their way into the fabric's creation (a collective): end the
         * launch rather than leave them there. */
        fprintf(stderr, "agefence: rank %d: out of memory\n", world->rank);
        af_world_abort(AF_EXIT_ERROR);
        return AF_EXIT_ERROR;
    }
    r->s.world = *world;
    r->prog.quiet = opts->quiet;
    int code = AF_EXIT_ERROR;
    af_result_t rc = AF_OK;
    af_alloc_reset();
    /* AGEFENCE_DEBUG=allocfail=N: the N-th allocation of this run fails (tests/startup_fail.sh
     * walks every start-up allocation through its failure path). */
    const char *dbg = getenv("AGEFENCE_DEBUG");
    const char *af = dbg != NULL ? strstr(dbg, "allocfail=") : NULL;
    if (af != NULL) {
        af_alloc_fail_at(atoll(af + strlen("allocfail=")));
    }
    /* A benchmark may hold allocations of its own: only this run's must be gone at its end. */
    int64_t live_at_start = af_alloc_bytes_live();
    af_stop_install();
    AF_CHECK_GOTO(af_fabric_mpi_create(&r->s.fab), rc, fail);
    /* The fabric's own allocations, which it frees last (after the leak check below agrees). */
    const int64_t fabric_bytes = af_alloc_bytes_live() - live_at_start;
    rc = distribute_config(r, opts);
    if (rc == AF_ERR_USAGE) {
        code = AF_EXIT_USAGE;
        goto out;
    }
    AF_CHECK_GOTO(rc, rc, fail);
    r->slog.out_path = opts->output != NULL ? opts->output : r->s.cfg.log_path;

    /* Is the launch what the user meant (the launcher's and MPI's sizes, Slurm's task count,
     * GPUs per node)? */
    {
        char lerr[600] = "";
        char mpi[128] = "";
        af_world_library(mpi, sizeof mpi);
        int cuda = r->s.cfg.compute == AF_BACKEND_CUDA;
        af_result_t lrc = af_launch_check_launcher(r->s.world.size, mpi, lerr, sizeof lerr);
        if (lrc == AF_OK) {
            lrc = af_launch_check(r->s.world.size, r->s.world.local_size,
                                  cuda ? af_cuda_visible_devices() : -1, cuda, r->s.cfg.share_gpu,
                                  lerr, sizeof lerr);
        }
        /* Bad input is one line: every rank may meet the same problem (no GPU on any node),
         * so the lowest rank that met it speaks for all (rank 0 without a "rank N:" prefix).
         * The maximum of size - rank over the ranks that met it names that rank. */
        uint64_t first = lrc != AF_OK ? (uint64_t)(r->s.world.size - r->s.world.rank) : 0;
        AF_CHECK_GOTO(r->s.fab->ops->allreduce_max_u64(r->s.fab, &first, 1), rc, fail);
        if (first != 0) {
            int speaker = r->s.world.size - (int)first;
            if (r->s.world.rank == speaker && speaker == 0) {
                fprintf(stderr, "agefence: %s\n", lerr);
            } else if (r->s.world.rank == speaker) {
                fprintf(stderr, "agefence: rank %d: %s\n", r->s.world.rank, lerr);
            }
            code = AF_EXIT_USAGE;
            goto out;
        }
    }

    /* The log first: an unwritable path stops the run before any work. */
    int bad = 0;
    if (r->s.world.rank == 0) {
        /* Nothing is created before the path is known to be one a log may take. */
        af_result_t lrc = af_log_check_path(r->slog.out_path, opts->config_file);
        if (lrc == AF_OK) {
            lrc = af_log_create(&r->slog.log, r->slog.out_path, r->s.world.size,
                                r->s.cfg.flush_interval);
        }
        if (lrc == AF_ERR_USAGE || lrc == AF_ERR_IO) {
            /* The path: bad input. */
            fprintf(stderr, "agefence: %s\n", af_error_text(lrc));
            bad = AF_EXIT_USAGE;
        } else if (lrc != AF_OK) {
            fprintf(stderr, "agefence: rank 0: %s\n", af_error_text(lrc));
            bad = AF_EXIT_ERROR;
        } else if (r->s.cfg.metrics_textfile[0] != '\0' &&
                   af_metrics_check_path(r->s.cfg.metrics_textfile) != AF_OK) {
            fprintf(stderr, "agefence: %s\n", af_error_message());
            af_log_discard(&r->slog.log);
            bad = AF_EXIT_USAGE;
        }
    }
    bad = agree(r, bad);
    if (bad) {
        code = bad;
        goto out;
    }
    rc = run_init(r);
    int init_bad = agree(r, rc == AF_OK || rc == AF_ERR_ELSEWHERE ? 0
                            : rc == AF_ERR_USAGE                  ? AF_EXIT_USAGE
                                                                  : AF_EXIT_ERROR);
    if (init_bad) {
        /* Bad input is said once, by rank 0; any other failure by the rank that met it. */
        if (rc == AF_ERR_USAGE && r->s.world.rank == 0) {
            fprintf(stderr, "agefence: %s\n", af_error_text(rc));
        } else if (rc != AF_OK && rc != AF_ERR_USAGE && rc != AF_ERR_ELSEWHERE) {
            fprintf(stderr, "agefence: rank %d: %s\n", r->s.world.rank, af_error_text(rc));
        }
        code = init_bad;
        if (r->slog.log != NULL) {
            /* Nothing ran: leave no half-made log behind (and the file at the path as it was). */
            af_log_discard(&r->slog.log);
        }
        goto out;
    }
    /* The run is accepted: only now is the file at the log's path moved aside (or, with
     * --force, removed), before anything can land there. */
    bad = 0;
    if (r->s.world.rank == 0) {
        char kept[4200];
        af_result_t crc = af_log_claim(r->slog.log, opts->force, kept, sizeof kept);
        if (crc != AF_OK) {
            fprintf(stderr, "agefence: %s\n", af_error_text(crc));
            af_log_discard(&r->slog.log);
            bad = AF_EXIT_USAGE;
        } else if (kept[0] != '\0') {
            /* Said even with -q: a file the user had at -o has moved. */
            fprintf(stderr, "agefence: %s: the earlier log there is kept as %s\n", r->slog.out_path,
                    kept);
        }
    }
    bad = agree(r, bad);
    if (bad) {
        code = bad;
        goto out;
    }
    if (r->s.world.rank == 0 && !opts->quiet) {
        /* Said once start-up has passed: bad input stays one line, and -q prints nothing but
         * errors. */
        fprintf(stderr, "agefence: backends: %s\n", r->graph.backend_why);
    }
    if (r->s.world.rank == 0) {
        AF_CHECK_GOTO(af_steplog_root_attrs(r), rc, fail);
    }
    AF_CHECK_GOTO(af_steplog_hostnames(r), rc, fail);
    AF_CHECK_GOTO(calibrate(r), rc, fail);
    if (r->s.world.rank == 0) {
        /* From here on a SIGKILL at any moment leaves a readable log at the path. */
        AF_CHECK_GOTO(af_log_begin(r->slog.log), rc, fail);
        /* On a terminal (the launcher's included) the line is repainted; --progress elsewhere
         * writes plain lines. */
        r->prog.mode = af_launch_stderr_terminal() ? AF_PROGRESS_REPAINT
                       : opts->progress            ? AF_PROGRESS_LINES
                                                   : AF_PROGRESS_OFF;
        r->prog.ref_s = -1.0;
        if (!opts->quiet || r->prog.mode != AF_PROGRESS_OFF) {
            r->prog.ref_s = af_verdict_estimate_s(r);
        }
        if (!opts->quiet) {
            start_notice(r);
        }
    }
    AF_CHECK_GOTO(r->s.fab->ops->barrier(r->s.fab), rc, fail);

    af_alloc_seal();
    double t_start = af_now_us();
    double t_step = t_start;
    int stop = 0;
    /* Replays after rollbacks add executed steps; the bound only stops a runaway (the fleet
     * model is never asked about a later step: it keeps steps in 32 bits). */
    int64_t max_ticks = af_config_last_tick(&r->s.cfg);
    /* The watchdog: every wait of a step and of its log gives up at the step's deadline on the
     * mpi fabric (fabric/fabric.h), and the run ends as hung (end_hung). */
    const double step_timeout_us = r->s.cfg.step_timeout_s * 1e6;
    while (!stop && r->s.tick < max_ticks) {
        r->s.fab->deadline_us = step_timeout_us > 0 ? af_now_us() + step_timeout_us : 0.0;
        AF_CHECK_GOTO(af_step(r, &stop), rc, fail);
        if (opts->hook != NULL) {
            AF_CHECK_GOTO(opts->hook(r, af_now_us() - t_step, opts->hook_ctx), rc, fail);
        }
        double t_log = af_now_us();
        AF_CHECK_GOTO(af_step_log(r, 0), rc, fail);
        double now = af_now_us();
        r->slog.prev_log_us = now - t_log;
        r->thr.prev_sink_us = 0.0;
        if (r->s.cfg.pacing_mode != AF_PACING_OFF && !stop && r->s.world.rank == 0) {
            /* The host sink: rank 0 holds the next step's start until the pacer's deadline on
             * its step's work time (the EWMA bound or the quantile); the other ranks wait for it in
             * the step's first collective (the all-gather of the health changes). One rank decides:
             * were every rank to pace on its own work time, each would count the others' waits as
             * work, and the bounds would feed on each other. */
            double sink = af_pacer_sink(&r->thr.pacer, now - t_step);
            if (sink > 0) {
                af_wait_us(sink);
                double after = af_now_us();
                r->thr.prev_sink_us = after - now;
                now = after;
            }
        }
        r->slog.prev_step_us = now - t_step;
        t_step = now;
        if (r->slog.metrics_on) {
            r->tally.run_drains += r->tally.n_drain;
            r->tally.run_restores += r->tally.n_restore;
            r->tally.run_retry_moves += r->tally.n_retry_moves;
            r->tally.run_rollbacks += r->rc.rep.n_rollbacks;
            r->tally.run_replayed += r->rc.rep.n_replayed;
            af_metrics_step(&r->slog.metrics, r->slog.prev_step_us, r->thr.prev_sink_us,
                            r->s.mine.phase[AF_PHASE_throttle_us]);
            if (r->s.tick % r->s.cfg.metrics_interval == 0) {
                metrics_write(r, 0, -1);
            }
        }
        if (r->s.world.rank == 0) {
            progress(r, r->s.state_step, t_start);
        }
    }
    r->s.fab->deadline_us = 0.0;
    double wall_s = (af_now_us() - t_start) * 1e-6;
    if (r->prog.mode == AF_PROGRESS_REPAINT && r->prog.shown) {
        fprintf(stderr, "\n");
    }
    if (r->prog.stop_signal && r->s.world.rank == 0) {
        stop_notice(r);
    }

    verdict_t v = {"completed", AF_EXIT_OK, 0, 0, 0, 0, 0, 0};
    /* A stop that mpirun started (Ctrl-C or SIGTERM to it) has two seconds by default before
     * its SIGKILL: the state is gathered and logged, the serial reference skipped (a signal to
     * the ranks themselves, as Slurm's scancel sends, keeps the check). */
    int verify = !(r->prog.stop_signal && af_stop_signal() == SIGCONT);
    af_step_release(r); /* what no step reads again: the verdict's room */
    AF_CHECK_GOTO(af_verdict_finish(r, &v, verify), rc, fail);
    AF_CHECK_GOTO(af_memory_measures(r), rc, fail);
    /* /units' temperature column, which the model does not keep while it runs: after the last
     * step, in memory it no longer needs. */
    af_aging_columns(&r->health.aging, &r->s.cfg);
    AF_CHECK_GOTO(af_write_units(r), rc, fail);
    if (r->s.world.rank == 0) {
        /* A run that stopped for want of capacity after it had committed a corruption ends
         * as a mismatch: the wrong state is what it has to say first. (Blocks lost when the
         * capacity ran out leave NaN in the state: that alone is capacity_exhausted.) */
        if (r->prog.exhausted && (v.bitwise_equal != 0 || r->tally.sdc_total == 0)) {
            v.exit_reason = "capacity_exhausted";
            v.exit_code = AF_EXIT_CAPACITY;
        } else if (r->prog.stop_signal) {
            v.exit_reason = "signal";
            v.exit_code = AF_EXIT_SIGNAL;
        } else if (!r->prog.exhausted && r->s.state_step < r->s.cfg.steps) {
            /* The loop ran out of executed steps: deaths came faster than replica refreshes,
             * and every rollback replayed the same steps again. */
            v.exit_reason = "no_progress";
            v.exit_code = AF_EXIT_NO_PROGRESS;
        } else if (r->tally.leaked_total > 0) {
            v.exit_reason = "leaked";
            v.exit_code = AF_EXIT_CONTAINMENT;
        } else if (v.bitwise_equal == 0) {
            v.exit_reason = "mismatch";
            v.exit_code = AF_EXIT_MISMATCH;
        }
        AF_CHECK_GOTO(af_write_final(r, &v), rc, fail);
        AF_CHECK_GOTO(af_log_close(&r->slog.log), rc, fail);
        if (r->slog.metrics_on) {
            metrics_write(r, 1, v.exit_code);
        }
        if (!opts->quiet) {
            af_print_summary(r, &v, wall_s);
        }
        if (r->prog.stop_signal) {
            fprintf(stderr,
                    "agefence: stopped by a signal after step %lld; the log is complete "
                    "up to it\n",
                    (long long)r->s.tick);
        } else if (r->prog.exhausted) {
            fprintf(stderr,
                    "agefence: capacity exhausted at step %lld (%lld of %lld units dead): "
                    "%s\n",
                    (long long)r->s.tick, (long long)r->health.plan.dead, (long long)r->s.units,
                    r->prog.exhausted_why);
        }
    }
    code = agree(r, v.exit_code);
    goto out;

fail:
    if (r->s.fab != NULL && r->s.fab->timed_out) {
        af_run_end_hung(r); /* whatever the error became on its way up, a wait timed out first */
    }
    fprintf(stderr, "agefence: rank %d: %s\n", r->s.world.rank, af_error_text(rc));
    af_error_trace(stderr);
    if (r->slog.log != NULL) {
        af_log_attr_str(r->slog.log, "/final", "exit_reason", "error");
        af_log_attr_i64(r->slog.log, "/final", "steps_completed", r->s.tick);
        af_log_close(&r->slog.log);
    }
    /* A failure on one rank leaves the others inside a collective: end the launch. */
    af_world_abort(AF_EXIT_ERROR);
    return AF_EXIT_ERROR;
out:
    if (r->slog.log != NULL) {
        af_log_close(&r->slog.log);
    }
    if (r->slog.metrics_on) {
        af_metrics_close(&r->slog.metrics);
        r->slog.metrics_on = 0;
    }
    af_step_destroy(r);
    af_kernels_destroy(&r->s.k);
    af_fabric_destroy(&r->s.nccl);
    af_placement_destroy(&r->s.pl);
    af_free(r->slog.all);
    af_free(r->slog.rows);
    af_free(r->slog.batch);
    af_free(r->slog.phases);
    /* Everything agefence allocated through af_alloc but the fabric is freed by now: a leak is a
     * bug. Every rank ends with the same status (a benchmark's loop of runs reads it), so the
     * check is agreed over the fabric, which goes last. */
    int64_t leaked = af_alloc_bytes_live() - live_at_start - fabric_bytes;
    if (leaked != 0) {
        fprintf(stderr,
                "agefence: rank %d: %lld bytes of agefence's own allocations were not "
                "freed\n",
                r->s.world.rank, (long long)leaked);
        code = code == AF_EXIT_OK ? AF_EXIT_ERROR : code;
    }
    code = agree(r, code);
    af_fabric_destroy(&r->s.fab);
    free(r);
    return code;
}
