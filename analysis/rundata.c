/* agefence-report: reading a log into memory (see rundata.h). */
#include "rundata.h"

#include "interrupts.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const af_event_kind_names[AF_NEVENT_KINDS] = {
#define AF_X(name) #name,
    AF_EVENT_KINDS(AF_X)
#undef AF_X
        "other"};

int af_event_kind_index(const char *kind)
{
    for (int k = 0; k < AF_EV_other; ++k) {
        if (strcmp(kind, af_event_kind_names[k]) == 0) {
            return k;
        }
    }
    return AF_EV_other;
}

static void note(af_run_t *run, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note(af_run_t *run, const char *fmt, ...)
{
    if (run->nmissing >= AF_RUN_MAX_MISSING) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(run->missing[run->nmissing], sizeof run->missing[0], fmt, ap);
    va_end(ap);
    run->nmissing++;
}

static void get_str(const af_logfile_t *lf, const char *obj, const char *name, char *out, size_t n)
{
    if (af_logfile_attr_str(lf, obj, name, out, n) != AF_OK) {
        out[0] = '\0';
    }
}

static void get_i64(const af_logfile_t *lf, const char *obj, const char *name, af_opt_i64_t *o)
{
    o->ok = af_logfile_attr_i64(lf, obj, name, &o->v) == AF_OK;
    if (!o->ok) {
        o->v = 0;
    }
}

static void get_f64(const af_logfile_t *lf, const char *obj, const char *name, af_opt_f64_t *o)
{
    o->ok = af_logfile_attr_f64(lf, obj, name, &o->v) == AF_OK && isfinite(o->v);
    if (!o->ok) {
        o->v = NAN;
    }
}

static void load_attrs(af_run_t *run, const af_logfile_t *lf)
{
    get_str(lf, "/", "scenario", run->scenario, sizeof run->scenario);
    get_str(lf, "/", "agefence_version", run->agefence_version, sizeof run->agefence_version);
    get_str(lf, "/", "git_revision", run->git_revision, sizeof run->git_revision);
    get_str(lf, "/", "compute_backend", run->compute_backend, sizeof run->compute_backend);
    get_str(lf, "/", "fabric_backend", run->fabric_backend, sizeof run->fabric_backend);
    get_str(lf, "/", "hostnames", run->hostnames, sizeof run->hostnames);
    get_str(lf, "/", "start_time", run->start_time, sizeof run->start_time);
    get_str(lf, "/", "mpi_version", run->mpi_version, sizeof run->mpi_version);
    get_str(lf, "/", "backend_choice", run->backend_choice, sizeof run->backend_choice);
    get_str(lf, "/", "step_graph", run->step_graph, sizeof run->step_graph);
    get_str(lf, "/", "kernel_path", run->kernel_path, sizeof run->kernel_path);
    get_str(lf, "/", "workload", run->workload, sizeof run->workload);
    get_i64(lf, "/", "workload_dim", &run->workload_dim);
    get_str(lf, "/", "launcher", run->launcher, sizeof run->launcher);
    get_str(lf, "/", "slurm_job_id", run->slurm_job_id, sizeof run->slurm_job_id);
    get_str(lf, "/", "slurm_nodelist", run->slurm_nodelist, sizeof run->slurm_nodelist);
    get_i64(lf, "/", "seed", &run->seed);
    get_i64(lf, "/", "ranks", &run->ranks);
    get_i64(lf, "/", "devices", &run->devices);
    get_i64(lf, "/", "units_per_device", &run->units_per_device);
    get_i64(lf, "/", "blocks", &run->blocks);
    get_i64(lf, "/", "block_len", &run->block_len);
    get_i64(lf, "/", "capacity", &run->capacity);
    get_i64(lf, "/", "steps_planned", &run->steps_planned);
    /* The node of a device: scenario.devices_per_node in the resolved scenario the log
     * carries (logs written before failure domains have none: a node per device). */
    run->devices_per_node = 1;
    snprintf(run->record, sizeof run->record, "none");
    af_goodput_defaults(&run->goodput);
    {
        char *config = malloc(65536);
        if (config != NULL && af_logfile_attr_str(lf, "/", "config", config, 65536) == AF_OK) {
            af_goodput_parse(&run->goodput, config);
            const char *at = strstr(config, "\ndevices_per_node = ");
            long long v = 0;
            if (at != NULL && sscanf(at, "\ndevices_per_node = %lld", &v) == 1 && v >= 1) {
                run->devices_per_node = (int64_t)v;
            }
            /* The record the scenario is fitted to (analysis/record.h). */
            at = strstr(config, "\nrecord = ");
            char name[32];
            if (at != NULL && sscanf(at, "\nrecord = %31[A-Za-z0-9_.-]", name) == 1) {
                snprintf(run->record, sizeof run->record, "%s", name);
            }
        }
        free(config);
    }
    get_f64(lf, "/", "max_blackout", &run->max_blackout_limit);
    get_f64(lf, "/", "state_bytes_static", &run->state_bytes_static);
    get_f64(lf, "/", "state_bytes_fault_free", &run->state_bytes_fault_free);
    get_f64(lf, "/", "state_bytes_held", &run->state_bytes_held);

    get_str(lf, "/final", "exit_reason", run->exit_reason, sizeof run->exit_reason);
    get_str(lf, "/final", "exhausted_why", run->exhausted_why, sizeof run->exhausted_why);
    get_str(lf, "/final", "end_time", run->end_time, sizeof run->end_time);
    get_str(lf, "/final", "state_checksum", run->state_checksum, sizeof run->state_checksum);
    get_str(lf, "/final", "reference_checksum", run->reference_checksum,
            sizeof run->reference_checksum);
    get_i64(lf, "/final", "exit_code", &run->exit_code);
    get_i64(lf, "/final", "steps_completed", &run->steps_completed);
    get_i64(lf, "/final", "state_step", &run->state_step);
    get_i64(lf, "/final", "bitwise_equal", &run->bitwise_equal);
    get_i64(lf, "/final", "nonfinite_leaked_total", &run->nonfinite_leaked_total);
    get_i64(lf, "/final", "sdc_undetected_total", &run->sdc_undetected_total);
    get_i64(lf, "/final", "allocs_after_init", &run->allocs_after_init);
    get_i64(lf, "/final", "event_log_errors", &run->event_log_errors);
    get_i64(lf, "/final", "graph_instantiations", &run->graph_instantiations);
    get_i64(lf, "/final", "graph_steps", &run->graph_steps);
    get_f64(lf, "/final", "mass_initial", &run->mass_initial);
    get_f64(lf, "/final", "mass_final", &run->mass_final);
    get_f64(lf, "/final", "sim_hours", &run->sim_hours);
    get_f64(lf, "/final", "max_blackout", &run->max_blackout);
    if (run->exit_reason[0] == '\0' && !run->writing) {
        note(run, "/final@exit_reason: missing (the run did not finish)");
    }

    get_f64(lf, "/calibration/allreduce8_us", "p10", &run->allreduce8_p10);
    get_f64(lf, "/calibration/allreduce8_us", "p50", &run->allreduce8_p50);
    get_f64(lf, "/calibration/allreduce8_us", "p90", &run->allreduce8_p90);
    get_f64(lf, "/calibration/timer_floor_us", "p50", &run->timer_floor_p50);
    if (!run->allreduce8_p50.ok) {
        note(run, "/calibration/allreduce8_us@p50: missing");
    }
}

/* Length of a 1-D dataset, or -1 when it is absent or not 1-D. */
static int64_t length_1d(const af_logfile_t *lf, const char *path)
{
    int rank = 0;
    int64_t dims[2] = {0, 0};
    if (af_logfile_shape(lf, path, &rank, dims) != AF_OK || rank != 1) {
        return -1;
    }
    return dims[0];
}

static af_result_t load_steps(af_run_t *run, const af_logfile_t *lf)
{
    char path[128];
    int64_t len[AF_NCOLUMNS];
    run->nrows = -1;
    for (int c = 0; c < AF_NCOLUMNS; ++c) {
        snprintf(path, sizeof path, "/steps/%s", af_step_column_names[c]);
        len[c] = length_1d(lf, path);
        if (run->nrows < 0 && len[c] >= 0) {
            run->nrows = len[c]; /* /steps/step when present, else the first column there */
        }
    }
    if (run->nrows < 0) {
        run->nrows = 0;
        note(run, "/steps: missing (no per-step figures)");
        return AF_OK;
    }
    size_t n = (size_t)run->nrows;
    for (int c = 0; c < AF_NCOLUMNS; ++c) {
        snprintf(path, sizeof path, "/steps/%s", af_step_column_names[c]);
        if (len[c] != run->nrows) {
            note(run, "%s: %s", path, len[c] < 0 ? "missing" : "length differs from /steps/step");
            continue;
        }
        run->col[c] = malloc(sizeof(double) * (n ? n : 1));
        if (run->col[c] == NULL) {
            return AF_ERR_NOMEM;
        }
        if (af_step_column_is_int[c]) {
            run->icol[c] = malloc(sizeof(int64_t) * (n ? n : 1));
            if (run->icol[c] == NULL) {
                return AF_ERR_NOMEM;
            }
            if (af_logfile_read_i64(lf, path, run->icol[c], n) != AF_OK) {
                note(run, "%s: unreadable", path);
                free(run->icol[c]);
                free(run->col[c]);
                run->icol[c] = NULL;
                run->col[c] = NULL;
                continue;
            }
            for (size_t i = 0; i < n; ++i) {
                run->col[c][i] = (double)run->icol[c][i];
            }
        } else if (af_logfile_read_f64(lf, path, run->col[c], n) != AF_OK) {
            note(run, "%s: unreadable", path);
            free(run->col[c]);
            run->col[c] = NULL;
        }
    }
    return AF_OK;
}

static af_result_t load_ranks(af_run_t *run, const af_logfile_t *lf)
{
    char path[128];
    run->nranks = run->ranks.ok && run->ranks.v > 0 ? run->ranks.v : 0;
    int absent = 0;
    for (int p = 0; p < AF_NPHASES; ++p) {
        snprintf(path, sizeof path, "/ranks/%s", af_phase_names[p]);
        int rank = 0;
        int64_t dims[2] = {0, 0};
        if (af_logfile_shape(lf, path, &rank, dims) != AF_OK) {
            absent++;
            continue;
        }
        if (run->nranks == 0 && rank == 2) {
            run->nranks = dims[1];
        }
        if (rank != 2 || dims[0] != run->nrows || dims[1] != run->nranks || run->nranks <= 0) {
            note(run, "%s: not steps x ranks (%lld x %lld)", path, (long long)run->nrows,
                 (long long)run->nranks);
            continue;
        }
        size_t n = (size_t)run->nrows * (size_t)run->nranks;
        run->phase[p] = malloc(sizeof(double) * (n ? n : 1));
        if (run->phase[p] == NULL) {
            return AF_ERR_NOMEM;
        }
        if (af_logfile_read_f64(lf, path, run->phase[p], n) != AF_OK) {
            note(run, "%s: unreadable", path);
            free(run->phase[p]);
            run->phase[p] = NULL;
        }
    }
    if (absent == AF_NPHASES) {
        note(run, "/ranks: missing (no latency figures)");
    } else {
        for (int p = 0; p < AF_NPHASES; ++p) {
            snprintf(path, sizeof path, "/ranks/%s", af_phase_names[p]);
            if (af_logfile_shape(lf, path, &(int){0}, (int64_t[2]){0, 0}) != AF_OK) {
                note(run, "%s: missing", path);
            }
        }
    }
    return AF_OK;
}

static af_result_t load_events(af_run_t *run, const af_logfile_t *lf)
{
    int64_t n = 0;
    af_result_t rc = af_logfile_events_count(lf, &n);
    if (rc != AF_OK) {
        note(run, "/events: missing or not the event table");
        return AF_OK;
    }
    run->events = malloc(sizeof(af_event_row_t) * (size_t)(n > 0 ? n : 1));
    if (run->events == NULL) {
        return AF_ERR_NOMEM;
    }
    if (af_logfile_read_events(lf, run->events, (size_t)n) != AF_OK) {
        note(run, "/events: unreadable");
        free(run->events);
        run->events = NULL;
        return AF_OK;
    }
    run->nevents = n;
    run->have_events = 1;
    return AF_OK;
}

static af_result_t load_units(af_run_t *run, const af_logfile_t *lf)
{
    int64_t n = length_1d(lf, "/units/cause");
    if (n < 0) {
        if (run->exit_reason[0] != '\0') { /* a killed run has no /units: said once above */
            note(run, "/units/cause: missing");
        }
        return AF_OK;
    }
    run->unit_cause = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    if (run->unit_cause == NULL) {
        return AF_ERR_NOMEM;
    }
    if (af_logfile_read_i64(lf, "/units/cause", run->unit_cause, (size_t)n) != AF_OK) {
        note(run, "/units/cause: unreadable");
        free(run->unit_cause);
        run->unit_cause = NULL;
        return AF_OK;
    }
    run->nunits = n;
    return AF_OK;
}

/* The log's own /interruptions (schema 5), its rows of the committed steps; NULL (and a note
 * from schema 5 on) when it is absent or damaged: a row of an unknown cause, steps out of
 * order or outside the log. */
static af_result_t load_intr_table(af_run_t *run, const af_logfile_t *lf)
{
    int64_t n = 0;
    if (af_logfile_intr_count(lf, &n) != AF_OK) {
        if (run->schema_version >= 5) {
            note(run, "/interruptions: missing or not the interruption table (derived from "
                      "/events)");
        }
        return AF_OK;
    }
    af_intr_row_t *rows = malloc(sizeof(af_intr_row_t) * (size_t)(n > 0 ? n : 1));
    if (rows == NULL) {
        return AF_ERR_NOMEM;
    }
    if (af_logfile_read_intr(lf, rows, (size_t)n) != AF_OK) {
        note(run, "/interruptions: unreadable (derived from /events)");
        free(rows);
        return AF_OK;
    }
    /* A killed run's table may hold rows of the flush under way: its steps are after the
     * commit record's. */
    int64_t keep = n;
    for (int64_t i = 0; i < n && lf->rows_limit >= 0; ++i) {
        if (rows[i].step > lf->rows_limit) {
            keep = i;
            break;
        }
    }
    for (int64_t i = 0; i < keep; ++i) {
        const af_intr_row_t *r = &rows[i];
        const char *bad = r->cause < 0 || r->cause >= AF_NINTR  ? "an unknown cause"
                          : r->step < 1                         ? "a step before the first"
                          : i > 0 && r->step < rows[i - 1].step ? "steps out of order"
                          : r->device < -1 || r->node < -1      ? "a device or node below -1"
                                                                : NULL;
        if (bad != NULL) {
            note(run, "/interruptions[%lld]: %s (derived from /events)", (long long)i, bad);
            free(rows);
            return AF_OK;
        }
    }
    run->intr = rows;
    run->nintr = keep;
    run->intr_from_table = 1;
    run->intr_timed = af_logfile_intr_timed(lf);
    if (!run->intr_timed) {
        note(run, "/interruptions: no time_h (a log older than the field): each interruption "
                  "is taken at its step's hours");
    }
    return AF_OK;
}

/* The interruptions: the log's table, else derived from /events (analysis/interrupts.h), with
 * each row's hours from /steps. */
static af_result_t load_interruptions(af_run_t *run, const af_logfile_t *lf)
{
    AF_CHECK(load_intr_table(run, lf));
    if (run->intr != NULL && run->have_events) {
        /* A table that /events does not give (a damaged or cut log) is used, and said. */
        af_intr_row_t *want =
            malloc(sizeof(af_intr_row_t) * (size_t)(run->nevents > 0 ? run->nevents : 1));
        if (want == NULL) {
            return AF_ERR_NOMEM;
        }
        int64_t nw = af_intr_derive(run->events, run->nevents, run->devices_per_node, want);
        int64_t i = 0;
        while (i < nw && i < run->nintr && want[i].step == run->intr[i].step &&
               want[i].cause == run->intr[i].cause && want[i].device == run->intr[i].device &&
               want[i].node == run->intr[i].node) {
            i++;
        }
        /* A log that is not finished (still written, or cut by a kill) ends its tables at
         * different steps: only a difference within both is one. */
        int cut = run->exit_reason[0] == '\0' && (i == nw || i == run->nintr);
        if (!cut && (i < nw || i < run->nintr)) {
            note(run,
                 "/interruptions: %lld rows, /events gives %lld, the first difference at row "
                 "%lld (the table is used)",
                 (long long)run->nintr, (long long)nw, (long long)i);
        }
        free(want);
    }
    if (run->intr == NULL && run->have_events) {
        run->intr = malloc(sizeof(af_intr_row_t) * (size_t)(run->nevents > 0 ? run->nevents : 1));
        if (run->intr == NULL) {
            return AF_ERR_NOMEM;
        }
        run->nintr = af_intr_derive(run->events, run->nevents, run->devices_per_node, run->intr);
        const double *h = run->col[AF_COL_sim_hours];
        for (int64_t i = 0; i < run->nintr; ++i) {
            int64_t row = run->intr[i].step - 1;
            run->intr[i].sim_hours = h != NULL && row >= 0 && row < run->nrows ? h[row] : NAN;
            run->intr[i].time_h = run->intr[i].sim_hours;
        }
    }
    run->have_intr = run->intr != NULL;
    return AF_OK;
}

af_result_t af_run_load(af_run_t *run, const af_logfile_t *lf)
{
    memset(run, 0, sizeof *run);
    snprintf(run->path, sizeof run->path, "%s", lf->path);
    run->schema_version = lf->schema_version;
    run->writing = lf->writing;
    load_attrs(run, lf);
    AF_CHECK(load_steps(run, lf));
    AF_CHECK(load_ranks(run, lf));
    AF_CHECK(load_events(run, lf));
    AF_CHECK(load_units(run, lf));
    AF_CHECK(load_interruptions(run, lf));
    return AF_OK;
}

void af_run_free(af_run_t *run)
{
    for (int c = 0; c < AF_NCOLUMNS; ++c) {
        free(run->col[c]);
        free(run->icol[c]);
        run->col[c] = NULL;
        run->icol[c] = NULL;
    }
    for (int p = 0; p < AF_NPHASES; ++p) {
        free(run->phase[p]);
        run->phase[p] = NULL;
    }
    free(run->events);
    free(run->unit_cause);
    free(run->intr);
    run->intr = NULL;
    run->events = NULL;
    run->unit_cause = NULL;
}

double af_run_value(const af_run_t *run, int c, int64_t row)
{
    if (c < 0 || c >= AF_NCOLUMNS || run->col[c] == NULL || row < 0 || row >= run->nrows) {
        return NAN;
    }
    return run->col[c][row];
}
