/* agefence run driver. One step (DESIGN "One step"):
 *   coordinator -> moves -> halo (exact all-reduce of edges, diagnostics and flags) ->
 *   masked compute + containment + commit -> replica -> log (gather to rank 0, append).
 * Everything the loop touches is allocated in run_init(); af_alloc_seal() closes start-up and
 * every later allocation is counted and logged. */
#include "run.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../fabric/fabric.h"
#include "../kernels/kernels.h"
#include "af_alloc.h"
#include "af_time.h"
#include "config.h"
#include "log.h"
#include "placement.h"
#include "reference.h"
#include "version.h"

/* Counters each rank reports for each step; summed on rank 0. */
enum {
    CNT_INJECTED,
    CNT_DETECTED,
    CNT_FENCED,
    CNT_RETRIED,
    CNT_LEAKED,
    CNT_SDC,
    CNT_ALLOCS,
    CNT_COMMS,
    NCOUNTS
};

/* What each rank sends to rank 0 at the end of step s: the phases of step s, except step_us
 * and log_us, which are those of step s-1 (a step's own log phase ends after its gather). */
typedef struct payload {
    double phase[AF_NPHASES];
    int64_t count[NCOUNTS];
} payload_t;

typedef struct run {
    af_config_t cfg;
    af_world_t world;
    af_fabric_t *fab;
    af_kernels_t *k;
    af_placement_t pl;
    af_coeffs_t coeffs;
    int64_t T;
    int64_t B;
    int64_t D;
    int n_local;      /* local slots */
    uint64_t *xchg;   /* exchange vector, af_xchg_len(B) */
    double *cellbuf;  /* T doubles */
    payload_t mine;   /* this rank's payload for the current step */
    payload_t *all;   /* rank 0: nranks payloads */
    double *phases;   /* rank 0: AF_NPHASES x nranks for the row being completed */
    af_step_row_t row_prev; /* rank 0: the row waiting for its mass and step/log times */
    int have_prev;
    af_log_t *log;    /* rank 0 only */
    const char *out_path;
    int64_t steps_done;
    double sim_hours;
    double prev_step_us;
    double prev_log_us;
    int progress;
} run_t;

static volatile sig_atomic_t af_stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    af_stop_requested = 1;
}

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* Rank 0 reads and validates the scenario; every rank receives the resolved text and parses
 * it, so all hold the same configuration. Returns AF_ERR_USAGE on every rank when rank 0
 * found the input bad (rank 0 has printed the one line). */
static af_result_t distribute_config(run_t *r, const af_run_opts_t *o)
{
    int64_t hdr[2] = {0, 0}; /* status, text length */
    char *text = NULL;
    char err[700] = "";
    if (r->world.rank == 0) {
        af_result_t rc = af_config_load(&r->cfg, o->config_file, o->sets, o->nsets, err,
                                        sizeof err);
        if (rc == AF_OK) {
            rc = af_config_validate(&r->cfg, r->world.size, err, sizeof err);
        }
        if (rc != AF_OK) {
            fprintf(stderr, "agefence: %s\n", err);
            hdr[0] = 1;
        } else {
            size_t len = af_config_format(&r->cfg, NULL, 0);
            text = malloc(len + 1);
            if (text == NULL) {
                return AF_ERR_NOMEM;
            }
            af_config_format(&r->cfg, text, len + 1);
            hdr[1] = (int64_t)len;
        }
    }
    AF_CHECK(r->fab->ops->bcast(r->fab, hdr, sizeof hdr, 0));
    if (hdr[0] != 0) {
        return AF_ERR_USAGE;
    }
    if (r->world.rank != 0) {
        text = malloc((size_t)hdr[1] + 1);
        if (text == NULL) {
            return AF_ERR_NOMEM;
        }
    }
    af_result_t rc = r->fab->ops->bcast(r->fab, text, (size_t)hdr[1] + 1, 0);
    if (rc == AF_OK && r->world.rank != 0) {
        rc = af_config_parse_text(&r->cfg, text, "resolved scenario", err, sizeof err);
        if (rc != AF_OK) {
            af_error_set("rank %d could not parse the scenario sent by rank 0: %s",
                         r->world.rank, err);
            rc = AF_ERR_INTERNAL;
        }
    }
    free(text);
    return rc;
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
    AF_CHECK(af_log_attr_i64(log, "/", "capacity", r->pl.capacity));
    AF_CHECK(af_log_attr_i64(log, "/", "steps_planned", r->cfg.steps));
    AF_CHECK(af_log_attr_f64(log, "/", "max_blackout", r->cfg.max_blackout));
    AF_CHECK(af_log_attr_str(log, "/", "compute_backend", r->k->ops->name));
    AF_CHECK(af_log_attr_str(log, "/", "fabric_backend", r->fab->ops->name));
    iso_time(buf, sizeof buf);
    AF_CHECK(af_log_attr_str(log, "/", "start_time", buf));
    af_world_versions(buf, sizeof buf);
    AF_CHECK(af_log_attr_str(log, "/", "mpi_version", buf));
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
        int64_t g = r->pl.dev_lo * r->pl.units * r->pl.capacity + s;
        int32_t b = r->pl.slot_block[g];
        r->k->slot_block[s] = b;
        r->k->slot_mode[s] = AF_MODE_HEALTHY;
        r->k->slot_p[s] = 0.0;
        r->k->commit[s] = 0;
        if (b >= 0) {
            af_initial_cells(&r->cfg, (int64_t)b * r->T, r->T, r->cellbuf);
            AF_CHECK(r->k->ops->write_slot(r->k, s, r->cellbuf));
        }
    }
    return r->k->ops->upload_control(r->k);
}

static af_result_t run_init(run_t *r)
{
    r->T = r->cfg.block_len;
    r->B = r->cfg.blocks;
    r->D = af_config_devices(&r->cfg, r->world.size);
    r->coeffs = af_scheme_coeffs(&r->cfg);
    AF_CHECK(af_placement_init(&r->pl, r->D, r->cfg.units_per_device, r->B, r->cfg.max_blackout,
                               r->world.size, r->world.rank));
    r->n_local = (int)af_placement_local_slots(&r->pl);
    const af_kernels_ops_t *kops = &af_kernels_cpu;
    af_shard_desc_t desc = {
        .n_slots = r->n_local,
        .block_len = (int)r->T,
        .blocks = (int)r->B,
        .coeffs = r->coeffs,
        .seed = (uint64_t)r->cfg.seed,
        .cuda_device = -1,
    };
    AF_CHECK(kops->create(&desc, &r->k));
    r->xchg = af_alloc(sizeof(uint64_t) * af_xchg_len((int)r->B));
    r->cellbuf = af_alloc(sizeof(double) * (size_t)r->T);
    if (r->xchg == NULL || r->cellbuf == NULL) {
        af_error_set("cannot allocate the exchange vector for %lld blocks", (long long)r->B);
        return AF_ERR_NOMEM;
    }
    if (r->world.rank == 0) {
        r->all = af_alloc(sizeof(payload_t) * (size_t)r->world.size);
        r->phases = af_alloc(sizeof(double) * AF_NPHASES * (size_t)r->world.size);
        if (r->all == NULL || r->phases == NULL) {
            return AF_ERR_NOMEM;
        }
    }
    AF_CHECK(load_initial_state(r));
    return AF_OK;
}

/* Combines two per-step counters known on every rank into the row (rank 0). */
static void fill_health(run_t *r, af_step_row_t *row)
{
    int64_t units = r->D * r->cfg.units_per_device;
    row->healthy_units = units;
    row->fading_units = 0;
    row->dead_units = 0;
    row->blackout_frac = 0.0;
}

/* Sums the logical-order block diagnostics of the last exchange into mass and energy. */
static void diag_from_xchg(const run_t *r, double *mass, double *energy)
{
    double dx = af_config_dx(&r->cfg);
    double m = 0.0;
    double e = 0.0;
    for (int64_t b = 0; b < r->B; ++b) {
        m += af_double(r->xchg[2 * r->B + b]);
        e += af_double(r->xchg[3 * r->B + b]);
    }
    *mass = m * dx;
    *energy = e * dx;
}

/* The log phase of step `step` (rank 0 completes the previous row with what this step's
 * exchange and gather brought, appends it, and keeps this step's row pending). */
static af_result_t log_phase(run_t *r, int64_t step, int final)
{
    r->mine.phase[AF_PHASE_step_us] = r->prev_step_us;
    r->mine.phase[AF_PHASE_log_us] = r->prev_log_us;
    r->mine.count[CNT_ALLOCS] = af_alloc_after_seal();
    r->mine.count[CNT_COMMS] = r->fab->comms_created;
    AF_CHECK(r->fab->ops->gather(r->fab, &r->mine, sizeof r->mine, r->all, 0));
    if (r->world.rank != 0) {
        return AF_OK;
    }
    const int R = r->world.size;
    double mass = 0.0;
    double energy = 0.0;
    diag_from_xchg(r, &mass, &energy);
    if (r->have_prev) {
        /* The previous row gets: its state's diagnostics (this step's exchange packed them),
         * and every rank's step_us and log_us of that step. */
        r->row_prev.mass = mass;
        r->row_prev.energy = energy;
        for (int q = 0; q < R; ++q) {
            r->phases[AF_PHASE_step_us * R + q] = r->all[q].phase[AF_PHASE_step_us];
            r->phases[AF_PHASE_log_us * R + q] = r->all[q].phase[AF_PHASE_log_us];
        }
        AF_CHECK(af_log_append(r->log, &r->row_prev, r->phases));
        r->have_prev = 0;
    }
    if (final) {
        return AF_OK;
    }
    af_step_row_t *row = &r->row_prev;
    memset(row, 0, sizeof *row);
    row->step = step;
    row->sim_hours = r->sim_hours;
    fill_health(r, row);
    int64_t allocs = 0;
    int64_t comms = 0;
    for (int q = 0; q < R; ++q) {
        const payload_t *p = &r->all[q];
        row->corrupt_injected += p->count[CNT_INJECTED];
        row->corrupt_detected += p->count[CNT_DETECTED];
        row->fenced += p->count[CNT_FENCED];
        row->retried += p->count[CNT_RETRIED];
        row->nonfinite_leaked += p->count[CNT_LEAKED];
        row->sdc_undetected += p->count[CNT_SDC];
        allocs += p->count[CNT_ALLOCS];
        comms += p->count[CNT_COMMS];
        for (int ph = 0; ph < AF_NPHASES; ++ph) {
            if (ph != AF_PHASE_step_us && ph != AF_PHASE_log_us) {
                r->phases[ph * R + q] = p->phase[ph];
            }
        }
    }
    row->allocs_after_init = allocs;
    row->comms_after_init = comms;
    r->have_prev = 1;
    if (step % r->cfg.flush_interval == 0) {
        AF_CHECK(af_log_flush(r->log));
    }
    return AF_OK;
}

static void progress(run_t *r, int64_t step, double t_start)
{
    static double last;
    double now = af_now_us();
    if (!r->progress || (now - last < 2e5 && step != r->cfg.steps)) {
        return;
    }
    last = now;
    double el = (now - t_start) * 1e-6;
    fprintf(stderr, "\ragefence: step %lld/%lld  %.1f s  %.0f steps/s   ", (long long)step,
            (long long)r->cfg.steps, el, el > 0 ? (double)step / el : 0.0);
    fflush(stderr);
}

/* One step. Returns AF_OK, and sets *stop when any rank asked to stop after it. */
static af_result_t step_once(run_t *r, int64_t step, int *stop)
{
    double t0 = af_now_us();
    memset(&r->mine, 0, sizeof r->mine);

    /* Coordinator: the aging model and move planning live here (fault-free: nothing to do
     * but agree on the step). */
    double t1 = af_now_us();

    /* Halo: pack this rank's edges and diagnostics, add the stop flag, combine exactly. */
    AF_CHECK(r->k->ops->pack(r->k, r->xchg));
    r->xchg[4 * r->B + AF_XCHG_STOP] = af_stop_requested ? 1 : 0;
    AF_CHECK(r->fab->ops->allreduce_max_u64(r->fab, r->xchg, af_xchg_len((int)r->B)));
    double t2 = af_now_us();

    /* Masked compute over the full static grid, containment, commit. */
    AF_CHECK(r->k->ops->compute(r->k, (uint64_t)step, r->xchg, 0));
    AF_CHECK(r->k->ops->download_results(r->k));
    int64_t leaked = 0;
    for (int s = 0; s < r->n_local; ++s) {
        int live = r->k->slot_block[s] >= 0 && r->k->slot_mode[s] != AF_MODE_DEAD;
        int clean = r->k->nonfinite[s] == 0;
        r->k->commit[s] = (uint8_t)(live && clean);
        r->mine.count[CNT_FENCED] += live && !clean;
    }
    AF_CHECK(r->k->ops->upload_control(r->k));
    AF_CHECK(r->k->ops->commit(r->k));
    double t3 = af_now_us();
    r->mine.count[CNT_LEAKED] = leaked;
    if (r->mine.count[CNT_FENCED] != 0) {
        /* Fault-free run: a non-finite output means the scheme itself blew up. */
        af_error_set("step %lld: %lld blocks produced non-finite values with no fault injected "
                     "(is the scenario stable?)",
                     (long long)step, (long long)r->mine.count[CNT_FENCED]);
        return AF_ERR_INTERNAL;
    }

    r->sim_hours += r->cfg.sim_hours_per_step;
    r->mine.phase[AF_PHASE_coord_us] = t1 - t0;
    r->mine.phase[AF_PHASE_halo_us] = t2 - t1;
    r->mine.phase[AF_PHASE_kernel_us] = t3 - t2;
    r->mine.phase[AF_PHASE_moves_us] = 0.0;
    r->mine.phase[AF_PHASE_replica_us] = 0.0;

    double t4 = af_now_us();
    AF_CHECK(log_phase(r, step, 0));
    double t5 = af_now_us();
    r->prev_log_us = t5 - t4;
    *stop = r->xchg[4 * r->B + AF_XCHG_STOP] != 0;
    (void)t0;
    return AF_OK;
}

/* Gathers the committed state of every block to rank 0 in logical order. */
static af_result_t gather_state(run_t *r, double *global)
{
    const int R = r->world.size;
    const int64_t T = r->T;
    /* Each rank sends its blocks in increasing block order; rank 0 knows who owns what. */
    int64_t mine = 0;
    for (int64_t b = 0; b < r->B; ++b) {
        if (af_slot_is_local(&r->pl, r->pl.block_slot[b])) {
            mine++;
        }
    }
    double *send = malloc(sizeof(double) * (size_t)(mine > 0 ? mine : 1) * (size_t)T);
    size_t *counts = malloc(sizeof(size_t) * (size_t)R);
    double *recv = NULL;
    int64_t *cursor = NULL;
    af_result_t rc = AF_OK;
    AF_REQUIRE_GOTO(send && counts, AF_ERR_NOMEM, rc, out);
    int64_t at = 0;
    for (int64_t b = 0; b < r->B; ++b) {
        int32_t g = r->pl.block_slot[b];
        if (af_slot_is_local(&r->pl, g)) {
            AF_CHECK_GOTO(r->k->ops->read_slot(r->k, af_slot_local(&r->pl, g), send + at * T),
                          rc, out);
            at++;
        }
    }
    if (r->world.rank == 0) {
        recv = malloc(sizeof(double) * (size_t)(r->B * T));
        cursor = calloc((size_t)R + 1, sizeof(int64_t));
        AF_REQUIRE_GOTO(recv && cursor, AF_ERR_NOMEM, rc, out);
        for (int q = 0; q < R; ++q) {
            counts[q] = 0;
        }
        for (int64_t b = 0; b < r->B; ++b) {
            int q = af_device_rank(r->D, R, af_slot_device(&r->pl, r->pl.block_slot[b]));
            counts[q] += (size_t)T * sizeof(double);
        }
    }
    AF_CHECK_GOTO(r->fab->ops->gatherv(r->fab, send, (size_t)(mine * T) * sizeof(double), recv,
                                       counts, 0),
                  rc, out);
    if (r->world.rank == 0) {
        /* Rank q's blocks start at the sum of the earlier ranks' counts. */
        int64_t off = 0;
        for (int q = 0; q < R; ++q) {
            cursor[q] = off;
            off += (int64_t)(counts[q] / sizeof(double));
        }
        for (int64_t b = 0; b < r->B; ++b) {
            int q = af_device_rank(r->D, R, af_slot_device(&r->pl, r->pl.block_slot[b]));
            memcpy(global + b * T, recv + cursor[q], sizeof(double) * (size_t)T);
            cursor[q] += T;
        }
    }
out:
    free(send);
    free(counts);
    free(recv);
    free(cursor);
    return rc;
}

typedef struct verdict {
    const char *exit_reason;
    int exit_code;
    int bitwise_equal;
    uint64_t state_sum;
    uint64_t ref_sum;
    double mass0;
    double mass_final;
    double ref_seconds;
} verdict_t;

static af_result_t finish(run_t *r, verdict_t *v)
{
    /* The last row still needs its diagnostics and timings: one more exchange and gather. */
    AF_CHECK(r->k->ops->pack(r->k, r->xchg));
    AF_CHECK(r->fab->ops->allreduce_max_u64(r->fab, r->xchg, af_xchg_len((int)r->B)));
    memset(&r->mine, 0, sizeof r->mine);
    AF_CHECK(log_phase(r, r->steps_done + 1, 1));
    double mass_final = 0;
    double energy_final = 0;
    diag_from_xchg(r, &mass_final, &energy_final);
    v->mass_final = mass_final;

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
        rc = af_reference_run(&r->cfg, r->steps_done, ref);
        v->ref_seconds = (af_now_us() - t0) * 1e-6;
        if (rc == AF_OK) {
            v->bitwise_equal = memcmp(state, ref, sizeof(double) * (size_t)n) == 0;
            v->state_sum = af_checksum(state, n);
            v->ref_sum = af_checksum(ref, n);
            af_initial_cells(&r->cfg, 0, n, ref);
            double m0 = 0;
            double e0 = 0;
            /* Initial mass in the same fixed order as the run's diagnostics. */
            for (int64_t b = 0; b < r->B; ++b) {
                double mb = 0;
                double eb = 0;
                af_block_diag(ref + b * r->T, (int)r->T, &mb, &eb);
                m0 += mb;
                e0 += eb;
            }
            v->mass0 = m0 * af_config_dx(&r->cfg);
            rc = af_log_write_f64(r->log, "/final/state", state, (size_t)n);
        }
    }
    free(state);
    free(ref);
    return rc;
}

static af_result_t write_final(run_t *r, const verdict_t *v)
{
    af_log_t *log = r->log;
    char hex[32];
    AF_CHECK(af_log_attr_str(log, "/final", "exit_reason", v->exit_reason));
    AF_CHECK(af_log_attr_i64(log, "/final", "exit_code", v->exit_code));
    AF_CHECK(af_log_attr_i64(log, "/final", "steps_completed", r->steps_done));
    AF_CHECK(af_log_attr_i64(log, "/final", "bitwise_equal", v->bitwise_equal));
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)v->state_sum);
    AF_CHECK(af_log_attr_str(log, "/final", "state_checksum", hex));
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)v->ref_sum);
    AF_CHECK(af_log_attr_str(log, "/final", "reference_checksum", hex));
    AF_CHECK(af_log_attr_f64(log, "/final", "mass_initial", v->mass0));
    AF_CHECK(af_log_attr_f64(log, "/final", "mass_final", v->mass_final));
    AF_CHECK(af_log_attr_f64(log, "/final", "sim_hours", r->sim_hours));
    AF_CHECK(af_log_attr_f64(log, "/final", "max_blackout", 0.0));
    AF_CHECK(af_log_attr_i64(log, "/final", "nonfinite_leaked_total", 0));
    AF_CHECK(af_log_attr_i64(log, "/final", "sdc_undetected_total", 0));
    AF_CHECK(af_log_attr_i64(log, "/final", "allocs_after_init", af_alloc_after_seal()));
    char t[64];
    iso_time(t, sizeof t);
    AF_CHECK(af_log_attr_str(log, "/final", "end_time", t));
    return AF_OK;
}

static void print_summary(const run_t *r, const verdict_t *v, double wall_s)
{
    printf("agefence run: scenario '%s', %d ranks, %lld devices x %lld units, %lld blocks x %lld "
           "cells, capacity %lld slots/unit\n",
           r->cfg.name, r->world.size, (long long)r->D, (long long)r->cfg.units_per_device,
           (long long)r->B, (long long)r->T, (long long)r->pl.capacity);
    printf("  backends       compute=%s fabric=%s\n", r->k->ops->name, r->fab->ops->name);
    printf("  steps          %lld of %lld in %.2f s (%.0f steps/s), %.0f simulated hours\n",
           (long long)r->steps_done, (long long)r->cfg.steps, wall_s,
           wall_s > 0 ? (double)r->steps_done / wall_s : 0.0, r->sim_hours);
    printf("  exit reason    %s\n", v->exit_reason);
    printf("  final state    %s the serial fault-free reference (checksum %016llx, reference "
           "%016llx)\n",
           v->bitwise_equal ? "BITWISE EQUAL to" : "DIFFERS from",
           (unsigned long long)v->state_sum, (unsigned long long)v->ref_sum);
    printf("  mass           %.17g -> %.17g (drift %.3g)\n", v->mass0, v->mass_final,
           v->mass_final - v->mass0);
    printf("  allocations    %lld after start-up\n", (long long)af_alloc_after_seal());
    printf("  log            %s (%lld steps)\n", r->out_path, (long long)r->steps_done);
    printf("  verdict        %s\n", v->exit_code == 0 ? "PASS" : "FAIL");
}

int af_run(const af_run_opts_t *opts, int *argc, char ***argv)
{
    run_t run;
    memset(&run, 0, sizeof run);
    run_t *r = &run;
    int code = AF_EXIT_ERROR;
    af_result_t rc = af_world_init(argc, argv, &r->world);
    if (rc != AF_OK) {
        fprintf(stderr, "agefence: %s\n", af_error_message());
        return AF_EXIT_ERROR;
    }
    install_signals();
    AF_CHECK_GOTO(af_fabric_mpi_create(&r->fab), rc, fail);
    rc = distribute_config(r, opts);
    if (rc == AF_ERR_USAGE) {
        code = AF_EXIT_USAGE;
        goto out;
    }
    AF_CHECK_GOTO(rc, rc, fail);
    r->out_path = opts->output != NULL ? opts->output : r->cfg.log_path;

    /* The log first: an unwritable path stops the run before any work. */
    int bad = 0;
    if (r->world.rank == 0) {
        if (af_log_create(&r->log, r->out_path, r->world.size, r->cfg.flush_interval) != AF_OK) {
            fprintf(stderr, "agefence: %s\n", af_error_message());
            bad = AF_EXIT_USAGE;
        }
    }
    bad = agree(r, bad);
    if (bad) {
        code = bad;
        goto out;
    }
    rc = run_init(r);
    int init_bad = agree(r, rc == AF_OK ? 0 : (rc == AF_ERR_USAGE ? AF_EXIT_USAGE : 1));
    if (init_bad) {
        if (rc != AF_OK) {
            fprintf(stderr, "agefence: rank %d: %s\n", r->world.rank, af_error_message());
        }
        code = init_bad;
        if (r->log != NULL) {
            /* Nothing ran: leave no half-made log behind. */
            af_log_close(&r->log);
            remove(r->out_path);
        }
        goto out;
    }
    if (r->world.rank == 0) {
        AF_CHECK_GOTO(write_root_attrs(r), rc, fail);
    }
    AF_CHECK_GOTO(write_hostnames(r), rc, fail);
    AF_CHECK_GOTO(calibrate(r), rc, fail);
    if (r->world.rank == 0) {
        AF_CHECK_GOTO(af_log_flush(r->log), rc, fail);
        r->progress = isatty(STDERR_FILENO);
    }
    AF_CHECK_GOTO(r->fab->ops->barrier(r->fab), rc, fail);

    af_alloc_seal();
    double t_start = af_now_us();
    double t_step = t_start;
    int stop = 0;
    for (int64_t step = 1; step <= r->cfg.steps && !stop; ++step) {
        AF_CHECK_GOTO(step_once(r, step, &stop), rc, fail);
        r->steps_done = step;
        double now = af_now_us();
        r->prev_step_us = now - t_step;
        t_step = now;
        if (r->world.rank == 0) {
            progress(r, step, t_start);
        }
    }
    double wall_s = (af_now_us() - t_start) * 1e-6;
    if (r->progress) {
        fprintf(stderr, "\n");
    }

    verdict_t v = {"completed", AF_EXIT_OK, 0, 0, 0, 0, 0, 0};
    AF_CHECK_GOTO(finish(r, &v), rc, fail);
    if (r->world.rank == 0) {
        if (stop) {
            v.exit_reason = "signal";
            v.exit_code = AF_EXIT_SIGNAL;
        } else if (!v.bitwise_equal) {
            v.exit_reason = "mismatch";
            v.exit_code = AF_EXIT_MISMATCH;
        }
        AF_CHECK_GOTO(write_final(r, &v), rc, fail);
        AF_CHECK_GOTO(af_log_close(&r->log), rc, fail);
        if (!opts->quiet) {
            print_summary(r, &v, wall_s);
        }
        if (stop) {
            fprintf(stderr, "agefence: stopped by a signal after step %lld; the log is complete "
                            "up to it\n",
                    (long long)r->steps_done);
        }
    }
    code = agree(r, v.exit_code);
    goto out;

fail:
    fprintf(stderr, "agefence: rank %d: %s\n", r->world.rank,
            af_error_message()[0] ? af_error_message() : af_result_str(rc));
    af_error_trace(stderr);
    if (r->log != NULL) {
        af_log_attr_str(r->log, "/final", "exit_reason", "error");
        af_log_attr_i64(r->log, "/final", "steps_completed", r->steps_done);
        af_log_close(&r->log);
    }
    /* A failure on one rank leaves the others inside a collective: end the launch. */
    af_world_abort(AF_EXIT_ERROR);
    return AF_EXIT_ERROR;
out:
    if (r->log != NULL) {
        af_log_close(&r->log);
    }
    af_kernels_destroy(&r->k);
    af_placement_destroy(&r->pl);
    af_free(r->xchg);
    af_free(r->cellbuf);
    af_free(r->all);
    af_free(r->phases);
    af_fabric_destroy(&r->fab);
    af_world_finalize();
    return code;
}
