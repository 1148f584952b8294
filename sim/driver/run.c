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
    if (r->world.rank == 0 && o->usage_error[0] != '\0') {
        fprintf(stderr, "agefence: %s\n", o->usage_error);
        status = 1;
    } else if (r->world.rank == 0) {
        af_result_t rc =
            af_config_load(&r->cfg, o->config_file, o->sets, o->nsets, err, sizeof err);
        if (rc == AF_OK) {
            rc = af_config_validate(&r->cfg, r->world.size, err, sizeof err);
        }
        if (rc != AF_OK) {
            fprintf(stderr, "agefence: %s\n", err);
            status = 1;
        } else if (!o->quiet) {
            af_config_print_notes(&r->cfg, stderr);
        }
    }
    AF_CHECK(r->fab->ops->bcast(r->fab, &status, sizeof status, 0));
    if (status != 0) {
        return AF_ERR_USAGE;
    }
    return r->fab->ops->bcast(r->fab, &r->cfg, sizeof r->cfg, 0);
}

/* Agrees on a status across ranks: returns the worst (largest) code any rank holds. */
static int agree(run_t *r, int code)
{
    int64_t v = code;
    /* A sum of non-negative codes is zero only when all are zero; the max is what we report. */
    uint64_t m = (uint64_t)code;
    if (r->fab->ops->allreduce_max_u64(r->fab, &m, 1) != AF_OK) {
        return AF_EXIT_ERROR;
    }
    (void)v;
    return (int)m;
}

static void iso_time(char *out, size_t n)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
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
        v = (uint64_t)r->world.rank;
        double t0 = af_now_us();
        AF_CHECK(r->fab->ops->allreduce_max_u64(r->fab, &v, 1));
        double t1 = af_now_us();
        if (i >= WARM) {
            ar[i - WARM] = t1 - t0;
        }
    }
    if (v != (uint64_t)(r->world.size - 1)) {
        af_error_set("calibration: the all-reduce returned %llu, expected %d",
                     (unsigned long long)v, r->world.size - 1);
        return AF_ERR_FABRIC;
    }
    if (r->log != NULL) {
        AF_CHECK(af_log_calibration(r->log, "timer_floor_us", timer, N));
        AF_CHECK(af_log_calibration(r->log, "allreduce8_us", ar, N));
        AF_CHECK(af_log_attr_i64(r->log, "/calibration", "warmup_iterations", WARM));
    }
    return AF_OK;
}

static af_result_t write_root_attrs(run_t *r)
{
    af_log_t *log = r->log;
    char buf[256];
    size_t len = af_config_format(&r->cfg, NULL, 0);
    char *text = malloc(len + 1);
    if (text == NULL) {
        return AF_ERR_NOMEM;
    }
    af_config_format(&r->cfg, text, len + 1);
    af_result_t rc = af_log_attr_str(log, "/", "config", text);
    free(text);
    AF_CHECK(rc);
    AF_CHECK(af_log_attr_i64(log, "/", "schema_version", AF_SCHEMA_VERSION));
    AF_CHECK(af_log_attr_str(log, "/", "agefence_version", af_version));
    AF_CHECK(af_log_attr_str(log, "/", "git_revision", af_git_revision));
    AF_CHECK(af_log_attr_str(log, "/", "scenario", r->cfg.name));
    AF_CHECK(af_log_attr_i64(log, "/", "seed", r->cfg.seed));
    AF_CHECK(af_log_attr_i64(log, "/", "ranks", r->world.size));
    AF_CHECK(af_log_attr_i64(log, "/", "devices", r->D));
    AF_CHECK(af_log_attr_i64(log, "/", "units_per_device", r->cfg.units_per_device));
    AF_CHECK(af_log_attr_i64(log, "/", "blocks", r->B));
    AF_CHECK(af_log_attr_i64(log, "/", "block_len", r->T));
    AF_CHECK(af_log_attr_str(log, "/", "workload", r->wl->name));
    {
        af_wl_config_t wc = af_config_workload(&r->cfg);
        AF_CHECK(af_log_attr_i64(log, "/", "workload_dim", r->wl->features(&wc)));
    }
    AF_CHECK(af_log_attr_i64(log, "/", "capacity", r->pl.capacity));
    AF_CHECK(af_log_attr_i64(log, "/", "steps_planned", r->cfg.steps));
    AF_CHECK(af_log_attr_f64(log, "/", "max_blackout", r->cfg.max_blackout));
    AF_CHECK(af_log_attr_str(log, "/", "compute_backend", r->k->ops->name));
    AF_CHECK(af_log_attr_str(log, "/", "fabric_backend",
                             r->nccl != NULL ? r->nccl->ops->name : r->fab->ops->name));
    AF_CHECK(af_log_attr_str(log, "/", "backend_choice", r->backend_why));
    AF_CHECK(af_log_attr_str(log, "/", "step_graph", r->graph_why));
    AF_CHECK(af_log_attr_str(log, "/", "kernel_path", r->k->path != NULL ? r->k->path : "?"));
    af_launch_info_t li;
    af_launch_info(&li);
    AF_CHECK(af_log_attr_str(log, "/", "launcher", li.launcher));
    AF_CHECK(af_log_attr_str(log, "/", "slurm_job_id", li.job_id));
    AF_CHECK(af_log_attr_str(log, "/", "slurm_job_name", li.job_name));
    AF_CHECK(af_log_attr_str(log, "/", "slurm_nodelist", li.nodelist));
    AF_CHECK(af_log_attr_str(log, "/", "slurm_tasks_per_node", li.tasks_per_node));
    AF_CHECK(af_log_attr_i64(log, "/", "slurm_ntasks", li.ntasks));
    AF_CHECK(af_log_attr_i64(log, "/", "slurm_nnodes", li.nnodes));
    AF_CHECK(af_log_attr_str(log, "/", "device_versions", af_device_versions()));
    iso_time(buf, sizeof buf);
    AF_CHECK(af_log_attr_str(log, "/", "start_time", buf));
    af_world_versions(buf, sizeof buf);
    AF_CHECK(af_log_attr_str(log, "/", "mpi_version", buf));
    /* The machine rank 0 ran on, for judging its timings. */
    AF_CHECK(af_log_attr_i64(log, "/host", "cores", sysconf(_SC_NPROCESSORS_ONLN)));
    AF_CHECK(af_log_attr_str(log, "/host", "mpi_version", buf));
    AF_CHECK(af_log_attr_str(log, "/host", "device_versions", af_device_versions()));
    double load[3] = {0, 0, 0};
    if (getloadavg(load, 3) > 0) {
        AF_CHECK(af_log_attr_f64(log, "/host", "loadavg_1min_before", load[0]));
        /* Rewritten in place at the end (sim/io/log.h): NaN in the log of a run that did not
         * finish. */
        AF_CHECK(af_log_attr_f64(log, "/host", "loadavg_1min_after", NAN));
    }
    /* Memory of the static layout vs a fault-free one (two buffers per block, no spare slots). */
    double slots = (double)r->D * (double)r->cfg.units_per_device * (double)r->pl.capacity;
    AF_CHECK(af_log_attr_f64(log, "/", "state_bytes_static",
                             slots * 2.0 * (double)r->T * sizeof(double)));
    AF_CHECK(af_log_attr_f64(log, "/", "state_bytes_fault_free",
                             (double)r->B * 2.0 * (double)r->T * sizeof(double)));
    return AF_OK;
}

static af_result_t write_hostnames(run_t *r)
{
    char *names = NULL;
    if (r->world.rank == 0) {
        names = malloc((size_t)r->world.size * 64);
        if (names == NULL) {
            return AF_ERR_NOMEM;
        }
    }
    af_result_t rc = af_world_hostnames(&r->world, names);
    if (rc == AF_OK && r->world.rank == 0) {
        size_t cap = (size_t)r->world.size * 65 + 1;
        char *joined = malloc(cap);
        if (joined == NULL) {
            free(names);
            return AF_ERR_NOMEM;
        }
        joined[0] = '\0';
        size_t at = 0;
        for (int i = 0; i < r->world.size; ++i) {
            at += (size_t)snprintf(joined + at, cap - at, "%s%.*s", i ? "," : "", 63,
                                   names + (size_t)i * 64);
        }
        rc = af_log_attr_str(r->log, "/", "hostnames", joined);
        free(joined);
    }
    free(names);
    return rc;
}

static af_result_t load_initial_state(run_t *r)
{
    for (int s = 0; s < r->n_local; ++s) {
        int32_t b = r->pl.slot_block[r->slot0 + s];
        af_slot_control(r, r->slot0 + s);
        r->k->commit[s] = (uint8_t)(b >= 0);
        if (b >= 0) {
            af_initial_cells(&r->cfg, (int64_t)b * r->T, r->T, r->cellbuf);
            AF_CHECK(r->k->ops->write_slot(r->k, s, r->cellbuf));
        }
    }
    AF_CHECK(r->k->ops->upload_control(r->k));
    /* The exchange of the initial state, which the first step's compute reads, and the first
     * replicas (logical step 0). */
    AF_CHECK(af_exchange(r));
    AF_CHECK(af_exchange_swap(r));
    AF_CHECK(af_replicas_refresh(r));
    AF_CHECK(af_replicas_log_edges(r));
    return AF_OK;
}

/* Backend selection (sim/io/backend.c) on every rank, then an agreement: every rank must run the
 * same pair. A bad request is reported once, by rank 0, as bad input. */
static af_result_t select_backends(run_t *r, const af_kernels_ops_t **kops, int *use_nccl,
                                   int *cuda_device)
{
    char why[200] = "";
    af_result_t rc =
        af_backend_select(r->cfg.compute, r->cfg.fabric, r->cfg.share_gpu, r->world.local_rank,
                          r->world.local_size, kops, use_nccl, cuda_device, why, sizeof why);
    int pair = rc == AF_OK ? (*kops == &af_kernels_cpu ? 0 : 2) + *use_nccl : 0;
    uint64_t v[3] = {rc != AF_OK, (uint64_t)pair, (uint64_t)(3 - pair)};
    AF_CHECK(r->fab->ops->allreduce_max_u64(r->fab, v, 3));
    if (v[0] != 0) {
        af_error_set("%s", rc != AF_OK ? why : "backend selection failed on another rank");
        return AF_ERR_USAGE;
    }
    if ((int)v[1] != 3 - (int)v[2]) {
        af_error_set("ranks chose different backends (backend.compute = auto on nodes with and "
                     "without GPUs): set backend.compute and backend.fabric explicitly");
        return AF_ERR_USAGE;
    }
    snprintf(r->backend_why, sizeof r->backend_why, "%s", why);
    return AF_OK;
}

/* What start-up and the verdict will allocate on each rank (sim/driver/memory.c), summed over the
 * ranks of each node and set against the node's available memory: refused up front on every
 * rank when any node lacks it, rather than failing (or swapping) half-way through start-up.
 * Collective. */
static af_result_t check_memory(run_t *r, const af_kernels_ops_t *kops)
{
    af_memory_estimate(&r->cfg, r->world.size, r->world.rank, kops, &r->mem);
    r->rss_baseline = af_memory_rss_now();
    double node = r->mem.peak;
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
    AF_CHECK(r->fab->ops->allreduce_max_u64(r->fab, w, 3));
    memcpy(v, w, sizeof v);
    if (v[0] == 0) {
        return AF_OK;
    }
    const af_memory_t *m = &r->mem;
    af_error_set("the scenario needs %.3g bytes on a node (its ranks together), but the node has "
                 "%.3g bytes available; rank %d alone needs %.3g (slots %.3g, fleet tables %.3g, "
                 "block tables %.3g, replicas and staging %.3g, its units' aging model %.3g, "
                 "rank 0's log %.3g, the final verdict %.3g): lower "
                 "scenario.blocks, block_len, devices or max_blackout, or use more nodes",
                 v[1], v[2], r->world.rank, m->peak, m->shard, m->fleet, m->blocks, m->replicas,
                 m->aging, m->rank0, m->verdict);
    return AF_ERR_USAGE;
}

/* A collective point of start-up: every rank learns whether any rank failed before it, so
 * that none enters a collective the others will never reach. Returns rc on a rank that failed
 * and AF_ERR_ELSEWHERE on the others (the failing rank says why). */
static af_result_t all_ok(run_t *r, af_result_t rc)
{
    uint64_t any = rc != AF_OK;
    AF_CHECK(r->fab->ops->allreduce_max_u64(r->fab, &any, 1));
    return rc != AF_OK ? rc : any ? AF_ERR_ELSEWHERE : AF_OK;
}

/* The rank's own buffers of the step loop and the log (no collective). */
static af_result_t local_buffers(run_t *r, const af_kernels_ops_t *kops)
{
    AF_CHECK(af_step_init(r));
    if (kops != &af_kernels_cpu) {
        size_t bytes = sizeof(uint64_t) * r->xlen;
        AF_CHECK(af_buf_alloc(AF_MEM_DEVICE, bytes, (void **)&r->dxchg_prev));
        AF_CHECK(af_buf_alloc(AF_MEM_DEVICE, bytes, (void **)&r->dxchg_cur));
    }
    size_t cap = (size_t)r->cfg.flush_interval + 1;
    r->batch = af_alloc(sizeof(af_payload_t) * cap);
    if (r->batch == NULL) {
        af_error_set("cannot allocate the log batch of %zu steps", cap);
        return AF_ERR_NOMEM;
    }
    if (r->world.rank == 0) {
        r->all = af_alloc(sizeof(af_payload_t) * cap * (size_t)r->world.size);
        r->rows = af_alloc(sizeof(af_step_row_t) * cap);
        r->phases = af_alloc(sizeof(double) * AF_NPHASES * (size_t)r->world.size);
        if (r->all == NULL || r->rows == NULL || r->phases == NULL) {
            af_error_set("cannot allocate the log buffers of %zu steps x %d ranks", cap,
                         r->world.size);
            return AF_ERR_NOMEM;
        }
    }
    return AF_OK;
}

static af_result_t run_init(run_t *r)
{
    r->T = af_config_cells(&r->cfg);
    r->B = r->cfg.blocks;
    r->D = af_config_devices(&r->cfg, r->world.size);
    r->U = r->cfg.units_per_device;
    r->units = r->D * r->U;
    r->wl = af_config_wl(&r->cfg);
    {
        af_wl_config_t wc = af_config_workload(&r->cfg);
        r->wlp = r->wl->params(&wc);
    }
    const af_kernels_ops_t *kops = NULL;
    int use_nccl = 0;
    int cuda_device = -1;
    AF_CHECK(select_backends(r, &kops, &use_nccl, &cuda_device));
    AF_CHECK(check_memory(r, kops));
    AF_CHECK(all_ok(r, af_placement_init(&r->pl, r->D, r->U, r->B, r->cfg.max_blackout,
                                         r->world.size, r->world.rank)));
    r->pl.devices_per_node = r->cfg.devices_per_node;
    r->C = r->pl.capacity;
    r->n_local = (int)af_placement_local_slots(&r->pl);
    r->slot0 = r->pl.dev_lo * r->U * r->C;
    af_shard_desc_t desc = {
        .n_slots = r->n_local,
        .block_len = (int)r->T,
        .blocks = (int)r->B,
        .workload = r->wl->kind,
        .coeffs = r->wlp.coeffs,
        .attn = r->wlp.attn,
        .seed = (uint64_t)r->cfg.seed,
        .mix = af_corrupt_mix(&r->cfg),
        .abft = (af_detect_flags(r->cfg.detect) & AF_DET_ABFT) != 0,
        .cuda_device = cuda_device,
        .cpu_kernel = r->cfg.cpu_kernel,
    };
    AF_CHECK(all_ok(r, kops->create(&desc, &r->k)));
    if (use_nccl) {
        AF_CHECK(all_ok(r, af_fabric_nccl_create(&r->nccl, cuda_device)));
    }
    AF_CHECK(all_ok(r, local_buffers(r, kops)));
    AF_CHECK(load_initial_state(r));
    AF_CHECK(af_step_graph_init(r));
    if (r->world.rank == 0 && r->cfg.metrics_textfile[0] != '\0') {
        AF_CHECK(af_metrics_open(&r->metrics, r->cfg.metrics_textfile, r->cfg.name, r->k->ops->name,
                                 r->nccl != NULL ? r->nccl->ops->name : r->fab->ops->name,
                                 r->world.size));
        r->metrics_on = 1;
    }
    return AF_OK;
}

/* Rank 0: the metrics file's view of the run now. */
static void metrics_write(run_t *r, int finished, int exit_code)
{
    af_metrics_view_t v;
    memset(&v, 0, sizeof v);
    v.step = r->tick;
    v.state_step = r->state_step;
    v.steps_planned = r->cfg.steps;
    v.dead = r->plan.dead;
    v.fading = r->plan.fading;
    v.straggler = r->straggler_healthy;
    v.healthy = r->units - v.dead - v.fading - v.straggler;
    v.slow = r->slow_units;
    v.blackout = (double)r->plan.dead / (double)r->units;
    v.max_blackout = r->max_blackout;
    v.injected = r->totals.corrupt_injected;
    v.detected = r->totals.corrupt_detected;
    v.fenced = r->totals.fenced;
    v.retried = r->totals.retried;
    v.sdc = r->sdc_total;
    v.counters_step = r->flushed_step;
    v.leaked = r->leaked_total;
    v.drains = r->run_drains;
    v.restores = r->run_restores;
    v.retry_moves = r->run_retry_moves;
    v.rollbacks = r->run_rollbacks;
    v.replayed = r->run_replayed;
    v.finished = finished;
    v.exit_code = exit_code;
    af_metrics_write(&r->metrics, &v);
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
    af_wl_config_t wc = af_config_workload(&r->cfg);
    r->wl->shape(&wc, shape, sizeof shape);
    fprintf(stderr,
            "agefence: %lld steps x %lld blocks x %s (%s) on %d rank%s, %.3g cell-steps; the "
            "time it takes follows its first steps\n",
            (long long)r->cfg.steps, (long long)r->B, shape, r->wl->name, r->world.size,
            r->world.size == 1 ? "" : "s", (double)r->cfg.steps * (double)r->B * (double)r->T);
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
    int last = step >= r->cfg.steps;
    int warm = step >= 10 || el >= 1.0;
    double rate = el > 0 ? (double)step / el : 0.0;
    double eta = rate > 0 ? (double)(r->cfg.steps - step) / rate : -1.0;
    char t_eta[32];
    fmt_secs(t_eta, sizeof t_eta, eta);
    if (!r->quiet && !r->progress_estimated && warm && !last) {
        r->progress_estimated = 1;
        char t_el[32];
        fmt_secs(t_el, sizeof t_el, el);
        fprintf(stderr, "agefence: %lld steps in %s: about %s more for the other %lld\n",
                (long long)step, t_el, t_eta, (long long)(r->cfg.steps - step));
        fflush(stderr);
    }
    if (r->progress == AF_PROGRESS_OFF) {
        return;
    }
    double every_us = r->progress == AF_PROGRESS_REPAINT ? 2e5 : AF_PROGRESS_LINE_S * 1e6;
    if (!last && (r->progress_shown ? now - r->progress_last_us < every_us : !warm)) {
        return;
    }
    r->progress_shown = 1;
    r->progress_last_us = now;
    double pct = r->cfg.steps > 0 ? 100.0 * (double)step / (double)r->cfg.steps : 100.0;
    /* A slow run's rate keeps its digits: "0.35 steps/s", not "0 steps/s". */
    fprintf(stderr, "%sagefence: step %lld/%lld (%.1f%%)  %.1f s  %.*f steps/s  ETA %s%s",
            r->progress == AF_PROGRESS_REPAINT ? "\r" : "", (long long)step,
            (long long)r->cfg.steps, pct, el, rate >= 10 ? 0 : 2, rate, t_eta,
            r->progress == AF_PROGRESS_REPAINT ? "   " : "\n");
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
            (long long)r->tick,
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

/* Cells rank 0 receives in one round of the final gather, at most. */
#define AF_GATHER_CELLS ((int64_t)1 << 20)

/* Gathers the committed state of every block to rank 0 in logical order. Each rank sends its
 * blocks in increasing block order, in rounds of at most K blocks (R K T <= AF_GATHER_CELLS),
 * and rank 0 places each round where it belongs: the verdict holds a round's staging beside the
 * state, not a second copy of it. Collective; a rank that cannot allocate its buffers makes
 * every rank return the error before any round. */
static af_result_t gather_state(run_t *r, double *global)
{
    const int R = r->world.size;
    const int64_t T = r->T;
    int64_t mine = 0;
    for (int64_t b = 0; b < r->B; ++b) {
        mine += af_slot_is_local(&r->pl, r->pl.block_slot[b]);
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
    if (r->world.rank == 0) {
        recv = malloc(sizeof(double) * (size_t)(R * K * T));
        order = malloc(sizeof(int32_t) * (size_t)(r->B > 0 ? r->B : 1));
        start = calloc((size_t)R + 1, sizeof(int64_t));
        fill = calloc((size_t)R, sizeof(int64_t));
        failed |= recv == NULL || order == NULL || start == NULL || fill == NULL;
    }
    uint64_t w[2] = {(uint64_t)mine, (uint64_t)failed};
    af_result_t rc = r->fab->ops->allreduce_max_u64(r->fab, w, 2);
    if (rc == AF_OK && w[1] != 0) {
        af_error_set("cannot allocate the buffers of the final gather (%lld blocks a round)",
                     (long long)K);
        rc = AF_ERR_NOMEM;
    }
    if (rc == AF_OK && r->world.rank == 0) {
        for (int64_t b = 0; b < r->B; ++b) {
            start[af_device_rank(r->D, R, af_slot_device(&r->pl, r->pl.block_slot[b])) + 1]++;
        }
        for (int q = 0; q < R; ++q) {
            start[q + 1] += start[q];
        }
        for (int64_t b = 0; b < r->B; ++b) {
            int q = af_device_rank(r->D, R, af_slot_device(&r->pl, r->pl.block_slot[b]));
            order[start[q] + fill[q]++] = (int32_t)b;
        }
    }
    const int64_t rounds = rc == AF_OK ? ((int64_t)w[0] + K - 1) / K : 0;
    int64_t next = 0; /* this rank's next block to look at */
    for (int64_t round = 0; round < rounds && rc == AF_OK; ++round) {
        int64_t n = 0;
        for (; n < K && next < r->B; ++next) {
            int32_t g = r->pl.block_slot[next];
            if (af_slot_is_local(&r->pl, g)) {
                rc = r->k->ops->read_slot(r->k, af_slot_local(&r->pl, g), send + n * T);
                n++;
            }
        }
        /* A failed read still takes part in the round (its data is then not used). */
        if (r->world.rank == 0) {
            for (int q = 0; q < R; ++q) {
                int64_t left = start[q + 1] - start[q] - round * K;
                left = left < 0 ? 0 : left > K ? K : left;
                counts[q] = (size_t)(left * T) * sizeof(double);
            }
        }
        af_result_t grc =
            r->fab->ops->gatherv(r->fab, send, (size_t)(n * T) * sizeof(double), recv, counts, 0);
        rc = rc != AF_OK ? rc : grc;
        if (rc == AF_OK && r->world.rank == 0) {
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

typedef struct verdict {
    const char *exit_reason;
    int exit_code;
    int bitwise_equal; /* 1, 0, or -1: not verified (the launcher's ending of the job) */
    uint64_t state_sum;
    uint64_t ref_sum;
    double mass0;
    double mass_final;
    double ref_seconds;
} verdict_t;

/* Gathers the final state to rank 0 and, when `verify`, compares it with the serial reference.
 * Without `verify` (a stop that Open MPI's launcher started: it kills the ranks two
 * odls_base_sigkill_timeout intervals after its SIGCONT, 2 s by default, and the reference
 * recomputes every step serially) the state, its checksum and mass are still written and
 * bitwise_equal is -1: not verified. */
static af_result_t finish(run_t *r, verdict_t *v, int verify)
{
    /* The rows still in the batch (the last one was waiting for its step and log times). */
    AF_CHECK(af_step_log(r, 1));
    int64_t n = r->B * r->T;
    double *state = NULL;
    double *ref = NULL;
    if (r->world.rank == 0) {
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
    if (rc == AF_OK && r->world.rank == 0) {
        double t0 = af_now_us();
        if (verify) {
            rc = af_reference_run(&r->cfg, r->state_step, ref);
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
            for (int64_t b = 0; b < r->B; ++b) {
                double mb = 0;
                af_block_diag(state + b * r->T, (int)r->T, &mb, &e);
                m1 += mb;
            }
            af_initial_cells(&r->cfg, 0, n, ref);
            for (int64_t b = 0; b < r->B; ++b) {
                double mb = 0;
                af_block_diag(ref + b * r->T, (int)r->T, &mb, &e);
                m0 += mb;
            }
            v->mass0 = m0 * af_config_dx(&r->cfg);
            v->mass_final = m1 * af_config_dx(&r->cfg);
            rc = af_log_write_f64(r->log, "/final/state", state, (size_t)n);
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
    const af_aging_t *a = &r->aging;
    *(double *)v = a->lifetime_h[k];
}
static void col_age(const run_t *r, int64_t k, void *v)
{
    const af_aging_t *a = &r->aging;
    /* The model keeps each unit's linear segment, not its age: the age at the last step (at
     * the death step for the dead) comes from the segment. */
    *(double *)v = af_aging_age_h(a, a->u_lo + k);
}
static void col_temp(const run_t *r, int64_t k, void *v)
{
    const af_aging_t *a = &r->aging;
    *(double *)v = a->temp_k[k];
}
static void col_fade(const run_t *r, int64_t k, void *v)
{
    const af_aging_t *a = &r->aging;
    *(int64_t *)v = a->fade_step[k];
}
static void col_death(const run_t *r, int64_t k, void *v)
{
    const af_aging_t *a = &r->aging;
    *(int64_t *)v = a->death_step[k];
}
static void col_cause(const run_t *r, int64_t k, void *v)
{
    const af_aging_t *a = &r->aging;
    *(int64_t *)v = a->cause[k];
}

static void col_first_corrupt(const run_t *r, int64_t k, void *v)
{
    *(int64_t *)v = r->unit_first_corrupt[k];
}

static af_result_t unit_column(run_t *r, const char *path, int is_f64, unit_column_fn fill,
                               int64_t *mine, int64_t *all, const size_t *counts, af_result_t *rc)
{
    const af_aging_t *a = &r->aging;
    for (int64_t k = 0; k < a->u_hi - a->u_lo; ++k) {
        fill(r, k, mine + k);
    }
    AF_CHECK(r->fab->ops->gatherv(r->fab, mine, sizeof(int64_t) * (size_t)(a->u_hi - a->u_lo), all,
                                  counts, 0));
    if (r->world.rank == 0 && *rc == AF_OK) {
        *rc = is_f64 ? af_log_write_f64(r->log, path, (const double *)all, (size_t)r->units)
                     : af_log_write_i64(r->log, path, all, (size_t)r->units);
    }
    return AF_OK;
}

/* /units: what the aging model did to every unit. Collective: each rank's model holds its own
 * devices' units, and rank 0 writes the columns one at a time. */
static af_result_t write_units(run_t *r)
{
    const int R = r->world.size;
    const size_t n = (size_t)r->units;
    const size_t own = (size_t)(r->aging.u_hi - r->aging.u_lo);
    int64_t *mine = malloc(sizeof(int64_t) * (own > 0 ? own : 1));
    int64_t *all = r->world.rank == 0 ? malloc(sizeof(int64_t) * (n > 0 ? n : 1)) : NULL;
    size_t *counts = malloc(sizeof(size_t) * (size_t)R);
    /* Every rank learns whether every rank has its buffers before any gather starts. */
    uint64_t missing = (mine == NULL || counts == NULL || (r->world.rank == 0 && all == NULL));
    af_result_t rc = r->fab->ops->allreduce_max_u64(r->fab, &missing, 1);
    if (rc == AF_OK && missing != 0) {
        af_error_set("cannot allocate the /units columns of %zu units", n);
        rc = AF_ERR_NOMEM;
    }
    if (rc == AF_OK) {
        for (int q = 0; q < R; ++q) {
            int64_t lo = 0;
            int64_t hi = 0;
            af_rank_devices(r->D, R, q, &lo, &hi);
            counts[q] = sizeof(int64_t) * (size_t)((hi - lo) * r->U);
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
        if (rc == AF_OK && r->world.rank == 0) {
            rc = wrc;
            for (size_t u = 0; rc == AF_OK && u < n; ++u) {
                all[u] = (int64_t)u / r->U;
            }
            if (rc == AF_OK) {
                rc = af_log_write_i64(r->log, "/units/device", all, n);
            }
            for (size_t u = 0; rc == AF_OK && u < n; ++u) {
                all[u] = (int64_t)u % r->U;
            }
            if (rc == AF_OK) {
                rc = af_log_write_i64(r->log, "/units/unit", all, n);
            }
            /* The simulator's truth about the silent units, for the analysis: no detector
             * read it during the run. */
            for (size_t u = 0; rc == AF_OK && u < n; ++u) {
                all[u] = af_aging_silent(&r->cfg, (int64_t)u);
            }
            if (rc == AF_OK) {
                rc = af_log_write_i64(r->log, "/units/silent", all, n);
            }
            /* The fate the quarantine gave a unit: the step it was declared suspect, -1. */
            for (size_t u = 0; rc == AF_OK && u < n; ++u) {
                all[u] = r->quarantined_step != NULL ? r->quarantined_step[u] : -1;
            }
            if (rc == AF_OK) {
                rc = af_log_write_i64(r->log, "/units/quarantined_step", all, n);
            }
            if (rc == AF_OK) {
                rc = af_log_attr_str(r->log, "/units", "cause_codes",
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
static af_result_t memory_measures(run_t *r)
{
    double v[AF_NMEM] = {r->mem.startup, r->mem.peak, r->rss_baseline,
                         (double)af_alloc_bytes_peak(), af_memory_rss_peak()};
    uint64_t w[AF_NMEM];
    memcpy(w, v, sizeof w);
    AF_CHECK(r->fab->ops->allreduce_max_u64(r->fab, w, AF_NMEM));
    memcpy(r->mem_max, w, sizeof w);
    return AF_OK;
}

static af_result_t write_final(run_t *r, const verdict_t *v)
{
    af_log_t *log = r->log;
    char hex[32];
    AF_CHECK(af_log_attr_str(log, "/final", "exit_reason", v->exit_reason));
    if (r->exhausted) {
        AF_CHECK(af_log_attr_str(log, "/final", "exhausted_why", r->exhausted_why));
    }
    AF_CHECK(af_log_attr_i64(log, "/final", "exit_code", v->exit_code));
    AF_CHECK(af_log_attr_i64(log, "/final", "steps_completed", r->tick));
    AF_CHECK(af_log_attr_i64(log, "/final", "state_step", r->state_step));
    AF_CHECK(af_log_attr_i64(log, "/final", "bitwise_equal", v->bitwise_equal));
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)v->state_sum);
    AF_CHECK(af_log_attr_str(log, "/final", "state_checksum", hex));
    /* Not verified: no reference was computed, so there is no reference checksum to name. */
    snprintf(hex, sizeof hex, v->bitwise_equal < 0 ? "unverified" : "%016llx",
             (unsigned long long)v->ref_sum);
    AF_CHECK(af_log_attr_str(log, "/final", "reference_checksum", hex));
    AF_CHECK(af_log_attr_f64(log, "/final", "mass_initial", v->mass0));
    AF_CHECK(af_log_attr_f64(log, "/final", "mass_final", v->mass_final));
    AF_CHECK(af_log_attr_f64(log, "/final", "sim_hours", r->sim_hours));
    AF_CHECK(af_log_attr_f64(log, "/final", "max_blackout", r->max_blackout));
    AF_CHECK(af_log_attr_i64(log, "/final", "nonfinite_leaked_total", r->leaked_total));
    AF_CHECK(af_log_attr_i64(log, "/final", "sdc_undetected_total", r->sdc_total));
    AF_CHECK(af_log_attr_i64(log, "/final", "sdc_harmful_total", r->totals.sdc_harmful));
    AF_CHECK(af_log_attr_i64(log, "/final", "event_log_errors", r->event_log_errors));
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
    AF_CHECK(af_log_attr_i64(log, "/final", "allocs_after_init", r->totals.allocs_after_init));
    AF_CHECK(af_log_attr_i64(log, "/final", "comms_after_init", r->totals.comms_after_init));
    /* Memory, the largest over the ranks: the budget of start-up and of the whole run (start-up
     * and the verdict, beyond what the process held before), what the process held before
     * start-up, what agefence's allocator held at most, and the peak resident memory. */
    static const char *const mem_names[AF_NMEM] = {
        "memory_budget_startup_bytes", "memory_budget_peak_bytes", "rss_before_startup_bytes",
        "alloc_peak_bytes", "rss_peak_bytes"};
    for (int i = 0; i < AF_NMEM; ++i) {
        AF_CHECK(af_log_attr_f64(log, "/final", mem_names[i], r->mem_max[i]));
    }
    /* Rank 0's (every rank prepares and runs the same step graph). */
    AF_CHECK(af_log_attr_i64(log, "/final", "graph_instantiations", r->k->graph_instantiations));
    AF_CHECK(af_log_attr_i64(log, "/final", "graph_steps", r->k->graph_launches));
    double load[3] = {0, 0, 0};
    if (getloadavg(load, 3) > 0) {
        AF_CHECK(af_log_attr_f64(log, "/host", "loadavg_1min_after", load[0]));
    }
    /* Totals over the run, so scripts need not sum /steps. */
    const af_step_row_t *tot = &r->totals;
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
    iso_time(t, sizeof t);
    AF_CHECK(af_log_attr_str(log, "/final", "end_time", t));
    return AF_OK;
}

static void print_summary(const run_t *r, const verdict_t *v, double wall_s)
{
    const af_step_row_t *t = &r->totals;
    char shape[96];
    af_wl_config_t wc = af_config_workload(&r->cfg);
    r->wl->shape(&wc, shape, sizeof shape);
    printf("agefence run: scenario '%s', %d ranks, %lld devices x %lld units, %lld blocks x %s "
           "(%s), capacity %lld slots/unit\n",
           r->cfg.name, r->world.size, (long long)r->D, (long long)r->U, (long long)r->B, shape,
           r->wl->name, (long long)r->C);
    printf("  backends       compute=%s fabric=%s; kernel %s\n", r->k->ops->name,
           r->nccl != NULL ? r->nccl->ops->name : r->fab->ops->name,
           r->k->path != NULL ? r->k->path : "?");
    printf("  step graph     %s: %lld of %lld steps, %lld graph instantiation%s\n", r->graph_why,
           (long long)r->k->graph_launches, (long long)r->tick,
           (long long)r->k->graph_instantiations, r->k->graph_instantiations == 1 ? "" : "s");
    printf("  steps          %lld executed (%lld replayed) for %lld of %lld in %.2f s "
           "(%.0f steps/s), %.0f simulated hours\n",
           (long long)r->tick, (long long)t->replayed_steps, (long long)r->state_step,
           (long long)r->cfg.steps, wall_s, wall_s > 0 ? (double)r->tick / wall_s : 0.0,
           r->sim_hours);
    printf("  blackout       max %.1f%% of %lld units dead (detect=%s, drain=%s)\n",
           100.0 * r->max_blackout, (long long)r->units, af_detect_name(r->cfg.detect),
           r->cfg.drain ? "on" : "off");
    printf("  containment    %lld corruptions injected, %lld detected, %lld fenced, %lld "
           "retried; %lld NaN/Inf leaked, %lld finite undetected (%lld harmful, %lld benign)\n",
           (long long)t->corrupt_injected, (long long)t->corrupt_detected, (long long)t->fenced,
           (long long)t->retried, (long long)r->leaked_total, (long long)r->sdc_total,
           (long long)t->sdc_harmful, (long long)(r->sdc_total - t->sdc_harmful));
    if (r->cfg.silent_fraction > 0.0) {
        int64_t silent = 0;
        for (int64_t u = 0; u < r->units; ++u) {
            silent += af_aging_silent(&r->cfg, u);
        }
        printf("  silent units   %lld of %lld units corrupt with no precursor (p = %g per element; "
               "corruption.silent_fraction = %g)\n",
               (long long)silent, (long long)r->units, r->cfg.silent_p, r->cfg.silent_fraction);
    }
    if (t->corrupt_detected > 0 || t->abft_false_alarms > 0 || t->quarantined_units > 0) {
        printf("  detectors      of %lld detected: %lld non-finite, %lld abft, %lld by a twin; "
               "%lld abft false alarms; %lld units quarantined\n",
               (long long)t->corrupt_detected, (long long)t->detected_finite,
               (long long)t->detected_abft, (long long)t->detected_twin,
               (long long)t->abft_false_alarms, (long long)t->quarantined_units);
    }
    if (af_detect_flags(r->cfg.detect) & AF_DET_DMR) {
        printf("  unverified     %lld block results of FADING units committed without a DMR "
               "twin (no room for one)%s\n",
               (long long)t->unverified_commits,
               t->unverified_commits > 0 ? ": DMR did not check them" : "");
    }
    printf("  recovery       %lld drains, %lld restores (%lld replayed alone, %lld block-steps), "
           "%lld retry moves, %lld rollbacks (replay=%s)\n",
           (long long)t->moves_drain, (long long)t->moves_restore, (long long)t->replayed_blocks,
           (long long)t->replayed_block_steps, (long long)t->moves_retry, (long long)t->rollbacks,
           r->cfg.replay == AF_REPLAY_LOCAL ? "local" : "global");
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
           (long long)r->totals.allocs_after_init, (long long)r->totals.comms_after_init);
    if (r->event_log_errors > 0) {
        printf("  log            %s (%lld steps; %lld events LOST, see stderr)\n", r->out_path,
               (long long)r->tick, (long long)r->event_log_errors);
    } else {
        printf("  log            %s (%lld steps)\n", r->out_path, (long long)r->tick);
    }
    printf("  verdict        %s\n", v->exit_code == 0 ? "PASS" : "FAIL");
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
    run_t *r = calloc(1, sizeof *r);
    if (r == NULL) {
        fprintf(stderr, "agefence: rank %d: out of memory\n", world->rank);
        return AF_EXIT_ERROR;
    }
    r->world = *world;
    r->quiet = opts->quiet;
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
    AF_CHECK_GOTO(af_fabric_mpi_create(&r->fab), rc, fail);
    rc = distribute_config(r, opts);
    if (rc == AF_ERR_USAGE) {
        code = AF_EXIT_USAGE;
        goto out;
    }
    AF_CHECK_GOTO(rc, rc, fail);
    r->out_path = opts->output != NULL ? opts->output : r->cfg.log_path;

    /* Is the launch what the user meant (the launcher's and MPI's sizes, Slurm's task count,
     * GPUs per node)? */
    {
        char lerr[600] = "";
        char mpi[128] = "";
        af_world_library(mpi, sizeof mpi);
        int cuda = r->cfg.compute == AF_BACKEND_CUDA;
        af_result_t lrc = af_launch_check_launcher(r->world.size, mpi, lerr, sizeof lerr);
        if (lrc == AF_OK) {
            lrc = af_launch_check(r->world.size, r->world.local_size,
                                  cuda ? af_cuda_visible_devices() : -1, cuda, lerr, sizeof lerr);
        }
        /* Bad input is one line: every rank may meet the same problem (no GPU on any node),
         * so the lowest rank that met it speaks for all (rank 0 without a "rank N:" prefix).
         * The maximum of size - rank over the ranks that met it names that rank. */
        uint64_t first = lrc != AF_OK ? (uint64_t)(r->world.size - r->world.rank) : 0;
        AF_CHECK_GOTO(r->fab->ops->allreduce_max_u64(r->fab, &first, 1), rc, fail);
        if (first != 0) {
            int speaker = r->world.size - (int)first;
            if (r->world.rank == speaker && speaker == 0) {
                fprintf(stderr, "agefence: %s\n", lerr);
            } else if (r->world.rank == speaker) {
                fprintf(stderr, "agefence: rank %d: %s\n", r->world.rank, lerr);
            }
            code = AF_EXIT_USAGE;
            goto out;
        }
    }

    /* The log first: an unwritable path stops the run before any work. */
    int bad = 0;
    if (r->world.rank == 0) {
        /* Nothing is created before the path is known to be one a log may take. */
        af_result_t lrc = af_log_check_path(r->out_path, opts->config_file);
        if (lrc == AF_OK) {
            lrc = af_log_create(&r->log, r->out_path, r->world.size, r->cfg.flush_interval);
        }
        if (lrc == AF_ERR_USAGE || lrc == AF_ERR_IO) {
            /* The path: bad input. */
            fprintf(stderr, "agefence: %s\n", af_error_text(lrc));
            bad = AF_EXIT_USAGE;
        } else if (lrc != AF_OK) {
            fprintf(stderr, "agefence: rank 0: %s\n", af_error_text(lrc));
            bad = AF_EXIT_ERROR;
        } else if (r->cfg.metrics_textfile[0] != '\0' &&
                   af_metrics_check_path(r->cfg.metrics_textfile) != AF_OK) {
            fprintf(stderr, "agefence: %s\n", af_error_message());
            af_log_discard(&r->log);
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
        if (rc == AF_ERR_USAGE && r->world.rank == 0) {
            fprintf(stderr, "agefence: %s\n", af_error_text(rc));
        } else if (rc != AF_OK && rc != AF_ERR_USAGE && rc != AF_ERR_ELSEWHERE) {
            fprintf(stderr, "agefence: rank %d: %s\n", r->world.rank, af_error_text(rc));
        }
        code = init_bad;
        if (r->log != NULL) {
            /* Nothing ran: leave no half-made log behind (and the file at the path as it was). */
            af_log_discard(&r->log);
        }
        goto out;
    }
    /* The run is accepted: only now is the file at the log's path moved aside (or, with
     * --force, removed), before anything can land there. */
    bad = 0;
    if (r->world.rank == 0) {
        char kept[4200];
        af_result_t crc = af_log_claim(r->log, opts->force, kept, sizeof kept);
        if (crc != AF_OK) {
            fprintf(stderr, "agefence: %s\n", af_error_text(crc));
            af_log_discard(&r->log);
            bad = AF_EXIT_USAGE;
        } else if (kept[0] != '\0') {
            /* Said even with -q: a file the user had at -o has moved. */
            fprintf(stderr, "agefence: %s: the earlier log there is kept as %s\n", r->out_path,
                    kept);
        }
    }
    bad = agree(r, bad);
    if (bad) {
        code = bad;
        goto out;
    }
    if (r->world.rank == 0 && !opts->quiet) {
        /* Said once start-up has passed: bad input stays one line, and -q prints nothing but
         * errors. */
        fprintf(stderr, "agefence: backends: %s\n", r->backend_why);
    }
    if (r->world.rank == 0) {
        AF_CHECK_GOTO(write_root_attrs(r), rc, fail);
    }
    AF_CHECK_GOTO(write_hostnames(r), rc, fail);
    AF_CHECK_GOTO(calibrate(r), rc, fail);
    if (r->world.rank == 0) {
        /* From here on a SIGKILL at any moment leaves a readable log at the path. */
        AF_CHECK_GOTO(af_log_begin(r->log), rc, fail);
        /* On a terminal (the launcher's included) the line is repainted; --progress elsewhere
         * writes plain lines. */
        r->progress = af_launch_stderr_terminal() ? AF_PROGRESS_REPAINT
                      : opts->progress            ? AF_PROGRESS_LINES
                                                  : AF_PROGRESS_OFF;
        if (!opts->quiet) {
            start_notice(r);
        }
    }
    AF_CHECK_GOTO(r->fab->ops->barrier(r->fab), rc, fail);

    af_alloc_seal();
    double t_start = af_now_us();
    double t_step = t_start;
    int stop = 0;
    /* Replays after rollbacks add executed steps; the bound only stops a runaway. */
    int64_t max_ticks = r->cfg.steps * 100 + 1000;
    while (!stop && r->tick < max_ticks) {
        AF_CHECK_GOTO(af_step(r, &stop), rc, fail);
        if (opts->hook != NULL) {
            AF_CHECK_GOTO(opts->hook(r, af_now_us() - t_step, opts->hook_ctx), rc, fail);
        }
        double t_log = af_now_us();
        AF_CHECK_GOTO(af_step_log(r, 0), rc, fail);
        double now = af_now_us();
        r->prev_log_us = now - t_log;
        r->prev_sink_us = 0.0;
        if (r->cfg.pacing_mode != AF_PACING_OFF && !stop && r->world.rank == 0) {
            /* The host sink: rank 0 holds the next step's start until the pacer's deadline on
             * its step's work time (the EWMA bound or the quantile); the other ranks wait for it in
             * the step's first collective (the all-gather of the health changes). One rank decides:
             * were every rank to pace on its own work time, each would count the others' waits as
             * work, and the bounds would feed on each other. */
            double sink = af_pacer_sink(&r->pacer, now - t_step);
            if (sink > 0) {
                af_wait_us(sink);
                double after = af_now_us();
                r->prev_sink_us = after - now;
                now = after;
            }
        }
        r->prev_step_us = now - t_step;
        t_step = now;
        if (r->metrics_on) {
            r->run_drains += r->n_drain;
            r->run_restores += r->n_restore;
            r->run_retry_moves += r->n_retry_moves;
            r->run_rollbacks += r->n_rollbacks;
            r->run_replayed += r->n_replayed;
            af_metrics_step(&r->metrics, r->prev_step_us, r->prev_sink_us,
                            r->mine.phase[AF_PHASE_throttle_us]);
            if (r->tick % r->cfg.metrics_interval == 0) {
                metrics_write(r, 0, -1);
            }
        }
        if (r->world.rank == 0) {
            progress(r, r->state_step, t_start);
        }
    }
    double wall_s = (af_now_us() - t_start) * 1e-6;
    if (r->progress == AF_PROGRESS_REPAINT && r->progress_shown) {
        fprintf(stderr, "\n");
    }
    if (r->stop_signal && r->world.rank == 0) {
        stop_notice(r);
    }

    verdict_t v = {"completed", AF_EXIT_OK, 0, 0, 0, 0, 0, 0};
    /* A stop that mpirun started (Ctrl-C or SIGTERM to it) has two seconds by default before
     * its SIGKILL: the state is gathered and logged, the serial reference skipped (a signal to
     * the ranks themselves, as Slurm's scancel sends, keeps the check). */
    int verify = !(r->stop_signal && af_stop_signal() == SIGCONT);
    AF_CHECK_GOTO(finish(r, &v, verify), rc, fail);
    AF_CHECK_GOTO(memory_measures(r), rc, fail);
    AF_CHECK_GOTO(write_units(r), rc, fail);
    if (r->world.rank == 0) {
        /* A run that stopped for want of capacity after it had committed a corruption ends
         * as a mismatch: the wrong state is what it has to say first. (Blocks lost when the
         * capacity ran out leave NaN in the state: that alone is capacity_exhausted.) */
        if (r->exhausted && (v.bitwise_equal != 0 || r->sdc_total == 0)) {
            v.exit_reason = "capacity_exhausted";
            v.exit_code = AF_EXIT_CAPACITY;
        } else if (r->stop_signal) {
            v.exit_reason = "signal";
            v.exit_code = AF_EXIT_SIGNAL;
        } else if (!r->exhausted && r->state_step < r->cfg.steps) {
            /* The loop ran out of executed steps: deaths came faster than replica refreshes,
             * and every rollback replayed the same steps again. */
            v.exit_reason = "no_progress";
            v.exit_code = AF_EXIT_NO_PROGRESS;
        } else if (r->leaked_total > 0) {
            v.exit_reason = "leaked";
            v.exit_code = AF_EXIT_CONTAINMENT;
        } else if (v.bitwise_equal == 0) {
            v.exit_reason = "mismatch";
            v.exit_code = AF_EXIT_MISMATCH;
        }
        AF_CHECK_GOTO(write_final(r, &v), rc, fail);
        AF_CHECK_GOTO(af_log_close(&r->log), rc, fail);
        if (r->metrics_on) {
            metrics_write(r, 1, v.exit_code);
        }
        if (!opts->quiet) {
            print_summary(r, &v, wall_s);
        }
        if (r->stop_signal) {
            fprintf(stderr,
                    "agefence: stopped by a signal after step %lld; the log is complete "
                    "up to it\n",
                    (long long)r->tick);
        } else if (r->exhausted) {
            fprintf(stderr,
                    "agefence: capacity exhausted at step %lld (%lld of %lld units dead): "
                    "%s\n",
                    (long long)r->tick, (long long)r->plan.dead, (long long)r->units,
                    r->exhausted_why);
        }
    }
    code = agree(r, v.exit_code);
    goto out;

fail:
    fprintf(stderr, "agefence: rank %d: %s\n", r->world.rank, af_error_text(rc));
    af_error_trace(stderr);
    if (r->log != NULL) {
        af_log_attr_str(r->log, "/final", "exit_reason", "error");
        af_log_attr_i64(r->log, "/final", "steps_completed", r->tick);
        af_log_close(&r->log);
    }
    /* A failure on one rank leaves the others inside a collective: end the launch. */
    af_world_abort(AF_EXIT_ERROR);
    return AF_EXIT_ERROR;
out:
    if (r->log != NULL) {
        af_log_close(&r->log);
    }
    if (r->metrics_on) {
        af_metrics_close(&r->metrics);
        r->metrics_on = 0;
    }
    af_step_destroy(r);
    af_kernels_destroy(&r->k);
    af_fabric_destroy(&r->nccl);
    af_placement_destroy(&r->pl);
    af_free(r->all);
    af_free(r->rows);
    af_free(r->batch);
    af_free(r->phases);
    af_fabric_destroy(&r->fab);
    /* Everything agefence allocated through af_alloc is freed by now: a leak is a bug. */
    if (af_alloc_bytes_live() != live_at_start) {
        fprintf(stderr,
                "agefence: rank %d: %lld bytes of agefence's own allocations were not "
                "freed\n",
                r->world.rank, (long long)(af_alloc_bytes_live() - live_at_start));
        code = code == AF_EXIT_OK ? AF_EXIT_ERROR : code;
    }
    free(r);
    return code;
}
