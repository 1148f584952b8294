/* agefence-report: a run's log read into memory, tolerating partial files. Every part of the
 * log is optional here: what is absent or malformed is left empty and named in `missing`, so
 * the summary can say what it could not compute instead of failing (agefence-report --check
 * says why). Only the schema version is required (af_logfile_open checks it). */
#ifndef AF_RUNDATA_H
#define AF_RUNDATA_H

#include <stddef.h>
#include <stdint.h>

#include "goodput.h"
#include "../common/af_result.h"
#include "../common/log_schema.h"
#include "logread.h"

#define AF_RUN_MAX_MISSING 24

/* The event kinds the writer logs (common/log_schema.h), and one slot for anything else. */
#define AF_EVENT_KINDS(X)                                                                          \
    X(fade)                                                                                        \
    X(death)                                                                                       \
    X(sudden)                                                                                      \
    X(drain)                                                                                       \
    X(restore)                                                                                     \
    X(retry)                                                                                       \
    X(rollback)                                                                                    \
    X(replica)                                                                                     \
    X(capacity)                                                                                    \
    X(slow)                                                                                        \
    X(straggler)                                                                                   \
    X(replica_lost)                                                                                \
    X(interrupt)                                                                                   \
    X(suspect)
enum {
#define AF_X(name) AF_EV_##name,
    AF_EVENT_KINDS(AF_X)
#undef AF_X
        AF_EV_other,
    AF_NEVENT_KINDS
};
/* "fade", ..., "capacity", "other". */
extern const char *const af_event_kind_names[AF_NEVENT_KINDS];
/* The index of kind in af_event_kind_names (AF_EV_other when unknown). */
int af_event_kind_index(const char *kind);

typedef struct af_opt_i64 {
    int ok; /* 1 when the attribute was there and numeric */
    int64_t v;
} af_opt_i64_t;

typedef struct af_opt_f64 {
    int ok;
    double v;
} af_opt_f64_t;

typedef struct af_run {
    char path[512];
    int64_t schema_version;
    int writing; /* unfinished, and its run still writes it (common/logfile.h, af_logfile_held) */

    /* Root attributes ("" or ok = 0 when absent). */
    char scenario[128];
    char agefence_version[64];
    char git_revision[64];
    char compute_backend[32];
    char workload[32]; /* /@workload: burgers or attention ("" in older logs) */
    char fabric_backend[32];
    char hostnames[4096];
    char start_time[64];
    char mpi_version[256];
    char backend_choice[256]; /* how the backends were chosen ("" in older logs) */
    char step_graph[256];     /* backend.graph: on or off, and why ("" in older logs) */
    char kernel_path[160];    /* the compute backend's hot loop ("avx2 one pass, ..."; "" before) */
    char launcher[64];        /* mpirun, srun, ... */
    char slurm_job_id[64];    /* "" outside Slurm */
    char slurm_nodelist[1024];
    af_opt_i64_t seed, ranks, devices, units_per_device, blocks, block_len, capacity, steps_planned;
    af_opt_i64_t workload_dim;   /* /@workload_dim: features per token (1 for burgers) */
    int64_t devices_per_node;    /* scenario.devices_per_node of /@config (1 when it has none) */
    char record[32];             /* scenario.record of /@config ("none" when it has none) */
    af_goodput_params_t goodput; /* [goodput] of /@config (the defaults where it has none) */
    char goodput_set[512];       /* the costs agefence-report --set gave instead ("": none) */
    af_opt_f64_t max_blackout_limit, state_bytes_static, state_bytes_fault_free;
    af_opt_f64_t state_bytes_held; /* absent from the logs of earlier versions */

    /* /final attributes. */
    char exit_reason[64];
    char exhausted_why[256];
    char end_time[64];
    char state_checksum[64];
    char reference_checksum[64];
    af_opt_i64_t exit_code, steps_completed, state_step, bitwise_equal, nonfinite_leaked_total,
        sdc_undetected_total, allocs_after_init, graph_instantiations, graph_steps,
        event_log_errors;
    af_opt_f64_t mass_initial, mass_final, sim_hours, max_blackout;

    /* /calibration (p50 etc. attributes of the raw sample datasets). */
    af_opt_f64_t allreduce8_p10, allreduce8_p50, allreduce8_p90, timer_floor_p50;

    /* /steps: nrows rows; col[c] NULL when the column is absent or of another length. Every
     * column is held as double, integer columns also exactly as icol[c]. */
    int64_t nrows;
    double *col[AF_NCOLUMNS];
    int64_t *icol[AF_NCOLUMNS];

    /* /ranks: phase[p] is nrows x nranks (row-major), NULL when absent or misshapen. */
    int64_t nranks;
    double *phase[AF_NPHASES];

    /* /events: NULL when absent or unreadable (have_events = 0). */
    int have_events;
    int64_t nevents;
    af_event_row_t *events;

    /* The interruptions of a synchronous job: /interruptions when the log has it in order
     * (intr_from_table), else derived from /events (analysis/interrupts.h); NULL (have_intr = 0)
     * with neither. */
    int have_intr;
    int intr_from_table;
    int intr_timed; /* the rows' time_h as the run drew them; else each row's step's hours */
    int64_t nintr;
    af_intr_row_t *intr;

    /* /units/cause, per unit (NULL when absent). */
    int64_t nunits;
    int64_t *unit_cause;

    /* What could not be read, one short phrase each ("/ranks/halo_us: missing"). */
    int nmissing;
    char missing[AF_RUN_MAX_MISSING][160];
} af_run_t;

/* Reads everything the report needs from an open log. Never fails on a malformed file (see
 * above); AF_ERR_NOMEM only. af_run_free releases what af_run_load allocated, also after it
 * failed. */
af_result_t af_run_load(af_run_t *run, const af_logfile_t *lf);
void af_run_free(af_run_t *run);

/* The value of /steps/<column c> in row i as a double, or NAN when the column is absent. */
double af_run_value(const af_run_t *run, int c, int64_t row);

#endif
