/* agefence-report: the figures of a run, computed once from its log (rundata.h) and shared by
 * the text report, --json and --compare. af_summary_compute fills af_summary_t;
 * af_summary_figures lists every figure under a stable dotted key (README.md, "Analysing a run",
 * documents them), from which --json and --compare are printed. A figure that the log cannot give
 * (a part is missing, a rate with a zero denominator) is NAN (real) or has its *_ok flag cleared,
 * and is null in JSON. */
#ifndef AF_SUMMARY_H
#define AF_SUMMARY_H

#include <stdint.h>
#include <stdio.h>

#include "figures.h"
#include "record.h"
#include "rundata.h"
#include "stats.h"

/* The "format" of --json: bumped when a key changes meaning or goes away (new keys may be
 * added without a bump). */
#define AF_REPORT_FORMAT "agefence-report/1"

/* Blackout bands of the latency breakdown: [0, 10%), [10, 20%), ..., [70, 80%), [80, 85%),
 * [85%, 100%]. A step falls in the band of its own /steps/blackout_frac. */
/* Causes of interruptions: AF_INTR_* and af_intr_names of common/log_schema.h. */

#define AF_NBANDS 10
extern const char *const af_band_labels[AF_NBANDS]; /* "0-10%", ..., "80-85%", ">=85%" */
/* The band of a blackout fraction (0 for NAN or negative values). */
int af_band_of(double blackout_frac);

#define AF_WORST_STEPS 5

/* Latency of every phase over a set of steps (all their ranks). */
typedef struct af_phase_set {
    int64_t steps; /* rows in the set */
    af_stats_t ph[AF_NPHASES];
} af_phase_set_t;

/* One of the slowest steps and what happened in it. */
typedef struct af_worst_step {
    int64_t row;        /* 0-based row of /steps */
    int64_t step;       /* executed step */
    int64_t state_step; /* logical step */
    double step_us;     /* max over ranks of step_us */
    int64_t rank;       /* the rank with that time */
    int phase;          /* its largest phase other than step_us (AF_PHASE_*) */
    double phase_us;    /* and its time on that rank */
    double blackout_frac;
    int64_t counters[AF_NCOLUMNS];   /* the row's integer columns (0 for float columns) */
    int64_t events[AF_NEVENT_KINDS]; /* events logged in that step, by kind */
} af_worst_step_t;

typedef struct af_summary {
    const af_run_t *run;

    /* run */
    int64_t units;          /* devices x units_per_device (0 when unknown) */
    int64_t slots;          /* units x capacity */
    int64_t hosts;          /* distinct host names */
    int64_t steps_executed; /* rows of /steps */
    int64_t steps_logical;  /* /final@state_step, else the last row's state_step, else 0 */
    double steps_wall_s;    /* sum over steps of max over ranks of step_us (NAN w/o /ranks) */
    double steps_per_s;
    double memory_overhead; /* state_bytes_static / state_bytes_fault_free */
    double max_blackout;    /* peak of /steps/blackout_frac (NAN when absent) */
    double sim_hours;       /* last row's sim_hours */

    /* correctness */
    double mass_drift;     /* mass_final - mass_initial */
    double mass_drift_rel; /* mass_drift / |mass_initial| */
    double mass_dev_max;   /* max over steps of |mass - mass_initial| */
    int checksums_match;   /* -1 unknown */

    /* totals of /steps (tot_ok[c]: the column was there) */
    int64_t tot[AF_NCOLUMNS];
    int tot_ok[AF_NCOLUMNS];
    int64_t allocs_after_init; /* last row (a running total), -1 unknown */
    int64_t comms_after_init;

    /* containment rates (NAN where the denominator is 0 or unknown) */
    double detected_per_injected;
    double undetected_per_injected; /* sdc_undetected / injected */
    double fenced_per_injected;
    double retried_per_fenced;
    double injected_per_step;
    double leaked_per_step;
    double sdc_per_step;
    double injected_per_fading_unit_step; /* injected / sum of fading_units over the rows */
    int64_t steps_with_corruption;        /* rows with corrupt_injected > 0 (-1 unknown) */

    /* recovery */
    int64_t moves_total;      /* drains + restores + retry moves (-1: beyond 64 bits) */
    int64_t steps_with_moves; /* rows with any of the moves or rollbacks > 0 (-1 unknown) */
    /* The block-steps computed again, (replayed_steps x blocks + replayed_block_steps), over
     * the executed ones, steps executed x blocks. */
    double lost_work_frac;
    int64_t units_dead;              /* by /units/cause (-1 unknown) */
    int64_t dead_by_cause[7];        /* 0 alive, 1 wear-out, 2 sudden, 3 scripted, 4 device,
                                        5 node, 6 link (/units codes 8 and 9: out of the job
                                        with their device's link, the device alive) */
    int64_t events[AF_NEVENT_KINDS]; /* /events by kind (all -1 when /events is absent) */
    /* Interruptions of a synchronous job (-1 unknown, when /events is absent): the deaths of a
     * step grouped by what failed, one per lost node, one per lost device, one per device whose
     * units died by wear-out, sudden failure or a script in that step, and one per `interrupt`
     * event (job-level causes); by AF_INTR_*. */
    int64_t interruptions;
    int64_t intr_by_cause[AF_NINTR];
    int64_t intr_job;  /* of which job-level (AF_INTR_IS_JOB: no hardware lost, nothing to remap) */
    double mtbi_hours; /* simulated hours per interruption (NaN with none) */
    /* The goodput of recovery policies on this history, by replay (analysis/goodput.h,
     * docs/goodput.md): have_goodput 1 when it was replayed, else goodput_why says why. The
     * timeline: W = the run's simulated hours, its interruptions at their drawn times, of which
     * goodput_hw lost hardware (goodput_hw_devices devices taken out in all: a device struck
     * while out adds none), goodput_inplace were
     * hardware faults recovered in place (a device memory error) and goodput_job job-level;
     * goodput_pace_points the changes of remap's pace taken from the run's healthy units. */
    int have_goodput;
    char goodput_why[160];
    double goodput_window_s;
    int64_t goodput_hw, goodput_hw_devices, goodput_inplace, goodput_job, goodput_pace_points;
    af_replay_params_t goodput_params; /* the [goodput] keys as the replay took them */
    af_goodput_t goodput;

    /* The record the run is set beside (analysis/record.h; NULL: none): per AF_INTR_* cause it
     * counts, and at [AF_NINTR] all of them, the record's count scaled to the run's hours, the
     * run's count, its 95% Garwood interval and whether the record lies inside it. */
    const af_record_t *record;
    double record_scale; /* the run's simulated hours over the record's (a job-grain cause's) */
    /* A cause's scale by its grain (AF_GRAIN_*): hours, node-hours and GPU-hours of the run over
     * the record's; [AF_GRAIN_JOB] is record_scale. */
    double record_grain_scale[3];
    struct {
        int have;        /* the record counts this cause (and the run has interruptions) */
        double expected; /* the record's count x the scale of the cause's grain */
        int64_t measured;
        double lo, hi;
        int inside;
    } rec[AF_NINTR + 1];

    /* latency (have_latency: /ranks was there in full) */
    int have_latency;
    af_phase_set_t all;
    af_phase_set_t band[AF_NBANDS];
    af_phase_set_t with_moves;
    af_phase_set_t without_moves;
    double coord_p50_over_allreduce;  /* coord_us p50 / allreduce8 p50 */
    double coord_mean_over_allreduce; /* coord_us mean / allreduce8 p50 */

    int nworst;
    af_worst_step_t worst[AF_WORST_STEPS];
} af_summary_t;

/* Computes every figure of run. AF_ERR_NOMEM only. */
af_result_t af_summary_compute(af_summary_t *s, const af_run_t *run);

/* Appends every figure of s to figs under its key (README.md, "--json"). */
af_result_t af_summary_figures(const af_summary_t *s, af_figs_t *figs);

/* The timeline s's goodput was replayed on (analysis/replay.h), for a caller that replays it
 * again (the ensemble's common intervals): tl->intr and tl->pace are the caller's to free.
 * AF_ERR_USAGE with s->goodput_why when s has no goodput; AF_ERR_NOMEM. */
af_result_t af_summary_goodput_timeline(const af_summary_t *s, af_replay_timeline_t *tl);

/* The goodput over time (agefence-report --plots): after a header line
 * "step,sim_hours,remap,shrink_rebuild,checkpoint_restart", one CSV row per /steps row with the
 * three policies' effective training time ratios over the run up to that step: each policy
 * replayed on the window cut at the step's simulated hours, at the intervals the report chose
 * for the whole run (s->goodput), so that the last row is the report's goodput exactly.
 * AF_ERR_USAGE with a message when the log lacks /steps/sim_hours or s has no goodput; AF_ERR_IO
 * when out failed. */
af_result_t af_summary_goodput_csv(const af_summary_t *s, FILE *out);

/* Name of phase p ("step_us", ...). */
const char *af_phase_name(int p);
/* Name of /steps column c ("step", ...). */
const char *af_column_name(int c);

#endif
