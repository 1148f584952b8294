/* agefence-report: the text report (see textreport.h). */
#include "textreport.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A latency in µs for a table cell: more decimals for small values, "-" when unknown. */
static const char *us(char *buf, size_t n, double x)
{
    if (!isfinite(x)) {
        snprintf(buf, n, "-");
    } else if (fabs(x) < 10.0) {
        snprintf(buf, n, "%.2f", x);
    } else if (fabs(x) < 10000.0) {
        snprintf(buf, n, "%.1f", x);
    } else {
        snprintf(buf, n, "%.0f", x);
    }
    return buf;
}

/* x with prec decimals, "-" when unknown. */
static const char *numf(char *buf, size_t n, int prec, double x)
{
    if (isfinite(x)) {
        snprintf(buf, n, "%.*f", prec, x);
    } else {
        snprintf(buf, n, "-");
    }
    return buf;
}

/* x with 3 significant digits (and its sign when sign), "-" when unknown. */
static const char *numg(char *buf, size_t n, int sign, double x)
{
    if (!isfinite(x)) {
        snprintf(buf, n, "-");
    } else if (sign) {
        snprintf(buf, n, "%+.3g", x);
    } else {
        snprintf(buf, n, "%.3g", x);
    }
    return buf;
}

static const char *pct(char *buf, size_t n, double frac)
{
    if (isfinite(frac)) {
        snprintf(buf, n, "%.1f%%", 100.0 * frac);
    } else {
        snprintf(buf, n, "-");
    }
    return buf;
}

static const char *or_unknown(const char *s)
{
    return s[0] != '\0' ? s : "(unknown)";
}

static void stats_row(FILE *out, const char *label, int64_t steps, const af_stats_t *st)
{
    char a[7][32];
    char cv[32];
    if (steps >= 0) {
        fprintf(out, "  %-12s %6lld", label, (long long)steps);
    } else {
        fprintf(out, "  %-12s", label);
    }
    if (st->n == 0) {
        fprintf(out, "  %9s\n", "-");
        return;
    }
    fprintf(out, " %9s %9s %9s %9s %9s %9s %6s\n", us(a[0], 32, st->p50), us(a[1], 32, st->p90),
            us(a[2], 32, st->p99), us(a[3], 32, st->max), us(a[4], 32, st->mean),
            us(a[5], 32, st->sd), numf(cv, sizeof cv, 2, st->cv));
}

static void run_section(const af_summary_t *s, FILE *out)
{
    const af_run_t *r = s->run;
    char b1[64];
    char b2[64];
    fprintf(out, "RUN\n");
    /* A build from a source tree without git logs "<version> (no git)" as its revision. */
    int no_git = strstr(r->git_revision, "(no git)") != NULL;
    fprintf(out, "  scenario     %s, seed %s, agefence %s (%s%s)\n", or_unknown(r->scenario),
            r->seed.ok ? (snprintf(b1, sizeof b1, "%lld", (long long)r->seed.v), b1) : "?",
            or_unknown(r->agefence_version), no_git ? "" : "git ",
            no_git ? "no git" : or_unknown(r->git_revision));
    /* The host list, shortened to the distinct names. */
    char hosts[256] = "";
    size_t at = 0;
    const char *p = r->hostnames;
    while (*p != '\0' && at + 1 < sizeof hosts) {
        size_t len = strcspn(p, ",");
        int seen = 0;
        for (const char *q = hosts; *q != '\0' && !seen;) {
            size_t ql = strcspn(q, " ");
            seen = ql == len && strncmp(q, p, len) == 0;
            q += ql + (q[ql] == ' ');
        }
        if (!seen) {
            at += (size_t)snprintf(hosts + at, sizeof hosts - at, "%s%.*s", at ? " " : "", (int)len,
                                   p);
        }
        p += len + (p[len] == ',');
    }
    fprintf(out, "  launch       %s ranks on %lld host%s (%s)%s%s%s%s\n",
            r->ranks.ok ? (snprintf(b1, sizeof b1, "%lld", (long long)r->ranks.v), b1) : "?",
            (long long)s->hosts, s->hosts == 1 ? "" : "s", hosts[0] ? hosts : "unknown",
            r->launcher[0] ? " by " : "", r->launcher, r->slurm_job_id[0] ? ", Slurm job " : "",
            r->slurm_job_id);
    if (r->backend_choice[0] != '\0') {
        fprintf(out, "  backends     %s\n", r->backend_choice);
    } else {
        fprintf(out, "  backends     compute=%s fabric=%s\n", or_unknown(r->compute_backend),
                or_unknown(r->fabric_backend));
    }
    if (r->step_graph[0] != '\0') {
        fprintf(out, "  step graph   %s", r->step_graph);
        if (r->graph_steps.ok && r->steps_completed.ok) {
            fprintf(out, ": %lld of %lld steps, %lld instantiation%s", (long long)r->graph_steps.v,
                    (long long)r->steps_completed.v, (long long)r->graph_instantiations.v,
                    r->graph_instantiations.v == 1 ? "" : "s");
        }
        fputc('\n', out);
    }
    fprintf(out, "  fleet        %lld devices x %lld units = %lld units; %lld blocks x ",
            (long long)r->devices.v, (long long)r->units_per_device.v, (long long)s->units,
            (long long)r->blocks.v);
    if (r->workload_dim.ok && r->workload_dim.v > 1 && r->block_len.ok) {
        fprintf(out, "%lld tokens x %lld features", (long long)(r->block_len.v / r->workload_dim.v),
                (long long)r->workload_dim.v);
    } else {
        fprintf(out, "%lld cells", (long long)r->block_len.v);
    }
    if (r->workload[0] != '\0') {
        fprintf(out, " (%s)", r->workload);
    }
    fputc('\n', out);
    fprintf(out,
            "  capacity     %lld slots/unit = %lld slots for %lld blocks; state %s MiB = %sx "
            "fault-free",
            (long long)r->capacity.v, (long long)s->slots, (long long)r->blocks.v,
            numf(b1, sizeof b1, 1, r->state_bytes_static.v / 1048576.0),
            numf(b2, sizeof b2, 1, s->memory_overhead));
    if (r->state_bytes_held.ok) {
        fprintf(out, "; held %s MiB", numf(b1, sizeof b1, 1, r->state_bytes_held.v / 1048576.0));
    }
    fputc('\n', out);
    fprintf(out,
            "  steps        %lld executed = %lld logical of %lld planned + %lld replayed; "
            "%.0f simulated hours\n",
            (long long)s->steps_executed, (long long)s->steps_logical,
            (long long)r->steps_planned.v, (long long)s->tot[AF_COL_replayed_steps],
            isfinite(s->sim_hours) ? s->sim_hours : 0.0);
    fprintf(out, "  time         %s s in steps (%s steps/s), from %s to %s\n",
            numg(b1, sizeof b1, 0, s->steps_wall_s), numf(b2, sizeof b2, 0, s->steps_per_s),
            or_unknown(r->start_time), or_unknown(r->end_time));
    char lim[64];
    pct(lim, sizeof lim, r->max_blackout_limit.v);
    if (r->exit_reason[0] == '\0' && r->writing) {
        fprintf(out,
                "  exit         LIVE: the run is still writing this log (its writer holds it); "
                "read up to its last flush\n");
    } else if (r->exit_reason[0] == '\0') {
        fprintf(out,
                "  exit         UNKNOWN: the run did not finish (no /final@exit_reason: killed "
                "before its end?)\n");
    } else if (r->exit_code.ok && r->exit_code.v == AF_EXIT_SIGNAL) {
        /* A stop the user asked for is not a failure: its verdict says what was checked. */
        fprintf(out,
                "  exit         %s (exit code %lld): verdict %s after step %lld of %lld "
                "on request, %s\n",
                r->exit_reason, (long long)r->exit_code.v,
                r->bitwise_equal.ok && r->bitwise_equal.v == 0 ? "FAIL: stopped" : "STOPPED",
                (long long)s->steps_logical, (long long)r->steps_planned.v,
                !r->bitwise_equal.ok || r->bitwise_equal.v < 0 ? "not verified"
                : r->bitwise_equal.v == 1                      ? "the state reached verified"
                                          : "the state reached DIFFERS from the reference");
    } else {
        fprintf(out, "  exit         %s (exit code %lld)%s%s\n", r->exit_reason,
                (long long)r->exit_code.v, r->exhausted_why[0] ? ": " : "", r->exhausted_why);
    }
    fprintf(out, "  blackout     peak %s of the units dead (capacity sized for %s)\n",
            pct(b1, sizeof b1, s->max_blackout), lim);
}

static void correctness_section(const af_summary_t *s, FILE *out)
{
    const af_run_t *r = s->run;
    char b1[64];
    char b2[64];
    char b3[64];
    fprintf(out, "\nCORRECTNESS\n");
    if (!r->bitwise_equal.ok) {
        fprintf(out, "  final state  unknown (no /final@bitwise_equal)\n");
    } else if (r->bitwise_equal.v == -1) {
        fprintf(out, "  final state  NOT VERIFIED against the serial reference (mpirun ended the "
                     "job: no reference was computed)\n");
    } else {
        fprintf(out, "  final state  %s the serial fault-free reference\n",
                r->bitwise_equal.v == 1 ? "BITWISE EQUAL to" : "DIFFERS from");
    }
    fprintf(out, "  checksums    run %s, reference %s%s\n", or_unknown(r->state_checksum),
            or_unknown(r->reference_checksum),
            s->checksums_match == 1   ? " (equal)"
            : s->checksums_match == 0 ? " (DIFFERENT)"
                                      : "");
    if (r->mass_initial.ok && r->mass_final.ok) {
        fprintf(out, "  mass         %.17g -> %.17g: drift %s (relative %s)\n", r->mass_initial.v,
                r->mass_final.v, numg(b1, sizeof b1, 1, s->mass_drift),
                numg(b2, sizeof b2, 1, s->mass_drift_rel));
    } else if (r->mass_initial.ok) {
        fprintf(out, "  mass         %.17g -> %s: no drift to compute\n", r->mass_initial.v,
                strcmp(r->exit_reason, "capacity_exhausted") == 0
                    ? "not a number (the final state lost blocks when the capacity ran out)"
                    : "unknown (/final@mass_final absent or not finite)");
    } else {
        fprintf(out, "  mass         unknown (no /final@mass_initial)\n");
    }
    if (isfinite(s->mass_dev_max)) {
        fprintf(out, "               largest |mass - mass_initial| over the steps %s\n",
                numg(b3, sizeof b3, 0, s->mass_dev_max));
    }
}

static void containment_section(const af_summary_t *s, FILE *out)
{
    char b1[64];
    char b2[64];
    char b3[64];
    fprintf(out, "\nCONTAINMENT                  total  rate\n");
    if (!s->tot_ok[AF_COL_corrupt_injected]) {
        fprintf(out, "  (not available: /steps counters missing)\n");
        return;
    }
#define T(c) ((long long)s->tot[AF_COL_##c])
    fprintf(out,
            "  corruptions injected  %9lld  %s per step, %s per fading unit-step; in %lld "
            "steps (%s)\n",
            T(corrupt_injected), numg(b1, sizeof b1, 0, s->injected_per_step),
            numg(b2, sizeof b2, 0, s->injected_per_fading_unit_step),
            (long long)s->steps_with_corruption,
            pct(b3, sizeof b3,
                s->steps_executed ? (double)s->steps_with_corruption / (double)s->steps_executed
                                  : NAN));
    fprintf(out, "  detected              %9lld  %s of injected\n", T(corrupt_detected),
            pct(b1, sizeof b1, s->detected_per_injected));
    fprintf(out, "  fenced                %9lld  %s per injected corruption\n", T(fenced),
            numg(b1, sizeof b1, 0, s->fenced_per_injected));
    fprintf(out, "  retried               %9lld  %s of fenced\n", T(retried),
            pct(b1, sizeof b1, s->retried_per_fenced));
    fprintf(out, "  NaN/Inf leaked        %9lld  %s per step%s\n", T(nonfinite_leaked),
            numg(b1, sizeof b1, 0, s->leaked_per_step),
            s->tot[AF_COL_nonfinite_leaked] ? "  <-- LEAKED INTO COMMITTED STATE" : "");
    fprintf(out, "  finite undetected     %9lld  %s per step, %s of injected, %lld harmful%s\n",
            T(sdc_undetected), numg(b1, sizeof b1, 0, s->sdc_per_step),
            pct(b2, sizeof b2, s->undetected_per_injected), T(sdc_harmful),
            s->tot[AF_COL_sdc_undetected] ? "  <-- SILENT DATA CORRUPTION" : "");
    fprintf(out,
            "  unverified commits    %9lld  block results of FADING units committed without a "
            "DMR twin%s\n",
            T(unverified_commits),
            s->tot[AF_COL_unverified_commits] ? "  <-- NOT CHECKED BY DMR" : "");
#undef T
}

/* The goodput by replay (analysis/goodput.h, docs/goodput.md), a line per policy: the ETTR
 * at the whole-step intervals searched on this history; Young's and Daly's intervals as
 * computed, the whole steps they round to and the ETTR there (every interval of a line in one
 * unit), and where the window went, each total named, in hours; where lost capacity outweighs
 * the rest, the spares and what a spare for every device lost would keep. The timeline's make-up
 * and the [goodput] keys are in --json. */
static void goodput_text(const af_summary_t *s, FILE *out)
{
    if (!s->have_goodput) {
        fprintf(out, "  goodput      not replayed: %s\n", s->goodput_why);
        return;
    }
    const double W = s->goodput_window_s;
    static const af_replay_policy_t order[] = {AF_REPLAY_CHECKPOINT_RESTART, AF_REPLAY_REMAP,
                                               AF_REPLAY_SHRINK_REBUILD};
    if (s->run->goodput_set[0] != '\0') {
        fprintf(out,
                "  costs        %s (--set): the history replayed at these, not its scenario's\n",
                s->run->goodput_set);
    }
    for (size_t k = 0; k < sizeof order / sizeof order[0]; ++k) {
        const af_goodput_policy_t *g = &s->goodput.pol[order[k]];
        const af_replay_result_t *r = &g->at;
        const int remap = order[k] == AF_REPLAY_REMAP;
        const double xs[] = {g->interval_s,
                             g->young_s,
                             g->young_steps_s,
                             g->daly_s,
                             g->daly_steps_s,
                             remap ? g->replica_interval_s : NAN,
                             remap ? g->young_replica_s : NAN,
                             remap ? g->young_replica_steps_s : NAN,
                             remap ? g->daly_replica_s : NAN,
                             remap ? g->daly_replica_steps_s : NAN};
        const int hours = af_goodput_hours(xs, (int)(sizeof xs / sizeof xs[0]), W);
        char a[6][48];
        fprintf(out, "  %-12s %-18s %.4f ETTR by replay, checkpoints %s", k == 0 ? "goodput" : "",
                af_replay_policy_name(order[k]), g->ettr,
                af_goodput_interval_text(a[0], sizeof a[0], g->interval_s, W, hours));
        if (remap) {
            fprintf(out, ", replicas %s",
                    af_goodput_interval_text(a[1], sizeof a[1], g->replica_interval_s, W, hours));
        }
        for (int d = 0; d < 2; ++d) {
            const double x[2] = {d == 0 ? g->young_s : g->daly_s,
                                 d == 0 ? g->young_replica_s : g->daly_replica_s};
            const double xk[2] = {d == 0 ? g->young_steps_s : g->daly_steps_s,
                                  d == 0 ? g->young_replica_steps_s : g->daly_replica_steps_s};
            const int nx = remap ? 2 : 1;
            fprintf(out, "; %s", d == 0 ? "Young's" : "Daly's");
            int finite = 0;
            for (int c = 0; c < nx; ++c) {
                fprintf(out, "%s %s", c > 0 ? " and" : "",
                        af_goodput_duration_text(a[2], sizeof a[2], x[c], W, hours));
                finite |= isfinite(x[c]);
            }
            if (finite) {
                fprintf(out, " (whole steps:");
                for (int c = 0; c < nx; ++c) {
                    fprintf(out, "%s %s", c > 0 ? " and" : "",
                            isfinite(x[c])
                                ? af_goodput_duration_text(a[3], sizeof a[3], xk[c], W, hours)
                                : "none");
                }
            }
            fprintf(out, "%s ETTR %.4f", finite ? ")" : "", d == 0 ? g->young_ettr : g->daly_ettr);
        }
        fprintf(out,
                "; of the %.4g h window: useful %.4g h, work lost %.4g h, restarting and "
                "recovering %.4g h, writing %.4g h, capacity lost %.4g h",
                W / 3600.0, r->useful_s / 3600.0, r->lost_s / 3600.0,
                (r->restart_time_s + r->recover_time_s) / 3600.0,
                (r->checkpoint_time_s + r->replica_time_s) / 3600.0, r->capacity_loss_s / 3600.0);
        /* The capacity rule (devices lost beyond the spares stay out, for every policy alike):
         * say when it outweighs the rest, and what a spare for every loss would keep. */
        if (g->capacity_bound) {
            fprintf(out, ", more than the rest: spare_nodes = %lld",
                    (long long)s->goodput_params.spare_nodes);
            if (isfinite(g->spared_ettr)) {
                fprintf(out, ", with %lld (one for every device lost) %.4f at these intervals",
                        (long long)s->goodput.spares_for_all, g->spared_ettr);
            }
        }
        fprintf(out, "\n");
    }
}

static void recovery_section(const af_summary_t *s, FILE *out)
{
    char b1[64];
    fprintf(out, "\nRECOVERY\n");
#define T(c) ((long long)s->tot[AF_COL_##c])
    fprintf(out,
            "  moves        %lld drains + %lld restores + %lld retry moves = %lld, in %lld of "
            "%lld steps\n",
            T(moves_drain), T(moves_restore), T(moves_retry), (long long)s->moves_total,
            (long long)s->steps_with_moves, (long long)s->steps_executed);
    fprintf(out, "  rollbacks    %lld, replaying %lld steps of every block\n", T(rollbacks),
            T(replayed_steps));
    fprintf(out,
            "  replays      %lld blocks replayed alone from older replicas, %lld block-steps "
            "(lost work in all: %s of the executed block-steps)\n",
            T(replayed_blocks), T(replayed_block_steps), pct(b1, sizeof b1, s->lost_work_frac));
#undef T
    if (s->units_dead >= 0) {
        fprintf(out,
                "  units        %lld of %lld dead: %lld wear-out, %lld sudden, %lld scripted, %lld "
                "with their device, %lld with their node, %lld out with their device's link\n",
                (long long)s->units_dead, (long long)s->run->nunits, (long long)s->dead_by_cause[1],
                (long long)s->dead_by_cause[2], (long long)s->dead_by_cause[3],
                (long long)s->dead_by_cause[4], (long long)s->dead_by_cause[5],
                (long long)s->dead_by_cause[6]);
    } else {
        fprintf(out, "  units        unknown (no /units)\n");
    }
    if (s->interruptions >= 0) {
        /* What a synchronous job would have stopped for (/interruptions, or derived from
         * /events): each step's deaths, one per lost node, lost device, or device whose units
         * died otherwise, and each job-level interruption. */
        fprintf(out, "  interrupted  %lld times", (long long)s->interruptions);
        if (s->interruptions > 0) {
            fprintf(out, " (one per %.4g simulated hours):", s->mtbi_hours);
            for (int c = 0; c < AF_NINTR; ++c) {
                if (s->intr_by_cause[c] > 0) {
                    fprintf(out, " %lld %s (%.1f%%)", (long long)s->intr_by_cause[c],
                            af_intr_names[c],
                            100.0 * (double)s->intr_by_cause[c] / (double)s->interruptions);
                }
            }
        }
        fprintf(out, "\n");
    }
    goodput_text(s, out);
    if (s->events[0] >= 0) {
        fprintf(out, "  events      ");
        int any = 0;
        for (int k = 0; k < AF_NEVENT_KINDS; ++k) {
            if (s->events[k] > 0) {
                fprintf(out, "%s %lld %s", any ? "," : "", (long long)s->events[k],
                        af_event_kind_names[k]);
                any = 1;
            }
        }
        fprintf(out, "%s\n", any ? "" : " none");
    } else {
        fprintf(out, "  events       unknown (no /events)\n");
    }
    fprintf(out, "  after start  %lld allocations, %lld communicators (both must be 0)\n",
            (long long)s->allocs_after_init, (long long)s->comms_after_init);
    if (s->run->event_log_errors.ok && s->run->event_log_errors.v != 0) {
        fprintf(out, "  events lost  %lld events the writer could not log: /events is incomplete\n",
                (long long)s->run->event_log_errors.v);
    }
}

/* The run's interruptions beside the record the scenario is fitted to (analysis/record.h). */
static void record_section(const af_summary_t *s, FILE *out)
{
    if (s->record == NULL || isnan(s->record_scale)) {
        return;
    }
    const af_record_t *rec = s->record;
    fprintf(out, "\nTHE RECORD   %s: %s\n", rec->name, rec->title);
    const double *g = s->record_grain_scale;
    if (fabs(g[AF_GRAIN_JOB] - 1.0) > 1e-9 || fabs(g[AF_GRAIN_NODE] - 1.0) > 1e-9 ||
        fabs(g[AF_GRAIN_DEVICE] - 1.0) > 1e-9) {
        fprintf(out,
                "  scaled       to this run's %.6g simulated hours on %lld devices (the record: "
                "%.6g h on %lld GPUs): by grain, job x %.4g, node-hours x %.4g, GPU-hours "
                "x %.4g\n",
                s->sim_hours, (long long)s->run->devices.v, rec->hours, (long long)rec->gpus,
                g[AF_GRAIN_JOB], g[AF_GRAIN_NODE], g[AF_GRAIN_DEVICE]);
    }
    fprintf(out, "  cause             record  this run  95%% interval (Garwood)  record inside\n");
    for (int c = 0; c <= AF_NINTR; ++c) {
        if (!s->rec[c].have) {
            continue;
        }
        char interval[64];
        snprintf(interval, sizeof interval, "%.1f - %.1f", s->rec[c].lo, s->rec[c].hi);
        fprintf(out, "  %-15s %8.4g %9lld  %-22s  %s\n", c < AF_NINTR ? af_intr_names[c] : "all",
                s->rec[c].expected, (long long)s->rec[c].measured, interval,
                s->rec[c].inside ? "yes" : "NO");
    }
}

static void latency_section(const af_summary_t *s, FILE *out)
{
    const af_run_t *r = s->run;
    char b1[32];
    char b2[32];
    char b3[32];
    char b4[32];
    char b5[32];
    fprintf(out, "\nLATENCY  µs, over %lld steps x %lld ranks\n", (long long)s->steps_executed,
            (long long)r->nranks);
    if (!s->have_latency) {
        fprintf(out, "  (not available: /ranks missing or misshapen)\n");
        return;
    }
    const char *head = "        p50       p90       p99       max      mean        sd     cv\n";
    fprintf(out, "  %-12s%s", "phase", head);
    for (int p = 0; p < AF_NPHASES; ++p) {
        stats_row(out, af_phase_name(p), -1, &s->all.ph[p]);
    }
    fprintf(out,
            "  coordinator  coord_us p50 %s = %sx the 8-byte all-reduce floor (p50 %s); "
            "mean %s = %sx\n",
            us(b1, sizeof b1, s->all.ph[AF_PHASE_coord_us].p50),
            numf(b2, sizeof b2, 1, s->coord_p50_over_allreduce),
            us(b3, sizeof b3, r->allreduce8_p50.v),
            us(b4, sizeof b4, s->all.ph[AF_PHASE_coord_us].mean),
            numf(b5, sizeof b5, 1, s->coord_mean_over_allreduce));
    const af_stats_t *st = &s->all.ph[AF_PHASE_step_us];
    const af_stats_t *th = &s->all.ph[AF_PHASE_throttle_us];
    const af_stats_t *sk = &s->all.ph[AF_PHASE_sink_us];
    if (th->n > 0 && th->mean > 0) {
        fprintf(out,
                "  throttling   throttle_us mean %s = %s of step_us mean (the modelled delay, "
                "spent inside kernel_us)\n",
                us(b1, sizeof b1, th->mean), pct(b2, sizeof b2, th->mean / st->mean));
    }
    if (sk->n > 0 && sk->mean > 0) {
        fprintf(out,
                "  pacing       sink_us mean %s = %s of step_us mean, p99 %s (rank 0 waits; the "
                "others wait for its plan)\n",
                us(b1, sizeof b1, sk->mean), pct(b2, sizeof b2, sk->mean / st->mean),
                us(b3, sizeof b3, sk->p99));
    }

    fprintf(out, "\nSTEP LATENCY BY BLACKOUT  step_us in µs, all ranks of the steps in the band\n");
    fprintf(out, "  %-12s %6s %s", "blackout", "steps", head + 1);
    for (int b = 0; b < AF_NBANDS; ++b) {
        /* consecutive bands with no step share one line ("60-100%") */
        int e = b;
        while (s->band[b].steps == 0 && e + 1 < AF_NBANDS && s->band[e + 1].steps == 0) {
            e++;
        }
        if (e == b) {
            stats_row(out, af_band_labels[b], s->band[b].steps, &s->band[b].ph[AF_PHASE_step_us]);
            continue;
        }
        char label[32];
        const char *hi = af_band_labels[e];
        int lo = atoi(af_band_labels[b][0] == '>' ? af_band_labels[b] + 2 : af_band_labels[b]);
        int up = hi[0] == '>' ? 100 : atoi(strchr(hi, '-') + 1);
        snprintf(label, sizeof label, "%d-%d%%", lo, up);
        stats_row(out, label, 0, &s->band[b].ph[AF_PHASE_step_us]);
        b = e;
    }
    fprintf(out, "  %-12s %6s %s", "moves", "steps", head + 1);
    stats_row(out, "with", s->with_moves.steps, &s->with_moves.ph[AF_PHASE_step_us]);
    stats_row(out, "without", s->without_moves.steps, &s->without_moves.ph[AF_PHASE_step_us]);
}

static void worst_section(const af_summary_t *s, FILE *out)
{
    char b1[32];
    char b2[32];
    char b3[32];
    if (s->nworst == 0) {
        return;
    }
    fprintf(out, "\nWORST %d STEPS  by the slowest rank's step_us\n", s->nworst);
    for (int w = 0; w < s->nworst; ++w) {
        const af_worst_step_t *ws = &s->worst[w];
        fprintf(out, "  step %5lld (logical %5lld) %9s µs on rank %lld, %s %s µs; blackout %s\n",
                (long long)ws->step, (long long)ws->state_step, us(b1, sizeof b1, ws->step_us),
                (long long)ws->rank, ws->phase >= 0 ? af_phase_name(ws->phase) : "?",
                us(b2, sizeof b2, ws->phase_us), pct(b3, sizeof b3, ws->blackout_frac));
        /* What happened: the row's non-zero counters and the step's events. */
        static const int cols[] = {AF_COL_corrupt_injected,
                                   AF_COL_corrupt_detected,
                                   AF_COL_fenced,
                                   AF_COL_retried,
                                   AF_COL_nonfinite_leaked,
                                   AF_COL_sdc_undetected,
                                   AF_COL_unverified_commits,
                                   AF_COL_moves_drain,
                                   AF_COL_moves_restore,
                                   AF_COL_moves_retry,
                                   AF_COL_rollbacks,
                                   AF_COL_replayed_steps};
        char line[512];
        size_t at = 0;
        for (size_t k = 0; k < sizeof cols / sizeof cols[0]; ++k) {
            if (ws->counters[cols[k]] != 0 && at < sizeof line) {
                at += (size_t)snprintf(line + at, sizeof line - at, "%s%s %lld", at ? ", " : "",
                                       af_column_name(cols[k]), (long long)ws->counters[cols[k]]);
            }
        }
        fprintf(out, "        counters: %s", at ? line : "none");
        at = 0;
        for (int k = 0; k < AF_NEVENT_KINDS; ++k) {
            if (ws->events[k] != 0 && at < sizeof line) {
                at += (size_t)snprintf(line + at, sizeof line - at, "%s%lld %s", at ? ", " : "",
                                       (long long)ws->events[k], af_event_kind_names[k]);
            }
        }
        fprintf(out, "; events: %s\n", at ? line : "none");
    }
}

void af_report_text(const af_summary_t *s, FILE *out)
{
    const af_run_t *r = s->run;
    fprintf(out, "agefence run report: %s (log schema %lld)\n", r->path,
            (long long)r->schema_version);
    if (r->writing) {
        fprintf(out, "LIVE LOG: its run is still writing it (the writer holds the file); this "
                     "report reads it up to the writer's last flush\n");
    }
    if (r->nmissing > 0) {
        fprintf(out, "INCOMPLETE LOG (agefence-report --check says more):\n");
        for (int i = 0; i < r->nmissing; ++i) {
            fprintf(out, "  - %s\n", r->missing[i]);
        }
    }
    fputc('\n', out);
    run_section(s, out);
    correctness_section(s, out);
    containment_section(s, out);
    recovery_section(s, out);
    record_section(s, out);
    latency_section(s, out);
    worst_section(s, out);
}
