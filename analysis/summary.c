/* agefence-report: the figures of a run (see summary.h) — latency by phase, interruptions,
 * goodput by replay, the record's comparison — and their flat list for the text, JSON and CSV
 * outputs (af_summary_figures).
 *
 * Longer than ~900 lines, on purpose: af_summary_figures names every figure of the report in one
 * place (the order of the JSON and of `--figure`), beside the code that computes them. */
#include "summary.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const af_band_labels[AF_NBANDS] = {"0-10%",  "10-20%", "20-30%", "30-40%", "40-50%",
                                               "50-60%", "60-70%", "70-80%", "80-85%", ">=85%"};
/* Lower edges of the bands 1.., as literals: i * 0.1 would put 0.3 in the wrong band. */
static const double BAND_LO[AF_NBANDS] = {0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85};

const char *af_phase_name(int p)
{
    return p >= 0 && p < AF_NPHASES ? af_phase_names[p] : "?";
}

const char *af_column_name(int c)
{
    return c >= 0 && c < AF_NCOLUMNS ? af_step_column_names[c] : "?";
}

/* Interruptions by cause: the log's /interruptions, or the same table derived from /events
 * (rundata.h). */
static void count_interruptions(af_summary_t *s, const af_run_t *run)
{
    s->interruptions = run->have_intr ? 0 : -1;
    s->intr_job = run->have_intr ? 0 : -1;
    for (int c = 0; c < AF_NINTR; ++c) {
        s->intr_by_cause[c] = run->have_intr ? 0 : -1;
    }
    s->mtbi_hours = NAN;
    if (!run->have_intr) {
        return;
    }
    for (int64_t i = 0; i < run->nintr; ++i) {
        int64_t c = run->intr[i].cause; /* in range: rundata checked the table */
        s->interruptions++;
        s->intr_by_cause[c]++;
        s->intr_job += AF_INTR_IS_JOB(c);
    }
    if (s->interruptions > 0 && isfinite(s->sim_hours)) {
        s->mtbi_hours = s->sim_hours / (double)s->interruptions;
    }
}

/* The run's counts beside the record it names (analysis/record.h), the record's counts scaled
 * to the run by each cause's grain: a device-grain cause by GPU-hours, a node-grain one by
 * node-hours (nodes of scenario.devices_per_node devices, a trailing partial one counted), a
 * job-grain one by hours. "all" is the sum of the scaled causes, plus any of the record's total
 * that no cause holds, scaled by hours. */
static void set_record(af_summary_t *s, const af_run_t *run)
{
    s->record = af_record_find(run->record);
    s->record_scale = NAN;
    if (s->record == NULL || s->interruptions < 0 || !(s->sim_hours > 0) || !run->devices.ok ||
        run->devices.v < 1) {
        return;
    }
    const af_record_t *rec = s->record;
    int64_t dpn = run->devices_per_node >= 1 ? run->devices_per_node : 1;
    double nodes = (double)((run->devices.v + dpn - 1) / dpn);
    double rec_nodes = (double)rec->gpus / (double)rec->gpus_per_node;
    s->record_scale = s->sim_hours / rec->hours;
    s->record_grain_scale[AF_GRAIN_JOB] = s->record_scale;
    s->record_grain_scale[AF_GRAIN_NODE] = s->record_scale * nodes / rec_nodes;
    s->record_grain_scale[AF_GRAIN_DEVICE] =
        s->record_scale * (double)run->devices.v / (double)rec->gpus;
    double all = 0;
    int64_t held = 0;
    for (int c = 0; c < AF_NINTR; ++c) {
        if (rec->counts[c] >= 0) {
            all += (double)rec->counts[c] * s->record_grain_scale[af_intr_grain[c]];
            held += rec->counts[c];
        }
    }
    all += (double)(rec->total - held) * s->record_scale;
    for (int c = 0; c <= AF_NINTR; ++c) {
        int64_t count = c < AF_NINTR ? rec->counts[c] : rec->total;
        if (count < 0) {
            continue;
        }
        s->rec[c].have = 1;
        s->rec[c].expected =
            c < AF_NINTR ? (double)count * s->record_grain_scale[af_intr_grain[c]] : all;
        s->rec[c].measured = c < AF_NINTR ? s->intr_by_cause[c] : s->interruptions;
        af_poisson_interval(s->rec[c].measured, 0.95, &s->rec[c].lo, &s->rec[c].hi);
        s->rec[c].inside = s->rec[c].lo <= s->rec[c].expected && s->rec[c].expected <= s->rec[c].hi;
    }
}

/* The replay's timeline of a run (analysis/goodput.h): its interruptions at their drawn times
 * (time_h; logs written before it have the step's hours), sorted by time (the table is in step
 * order, not in time order within a step; ties keep the table's order), each of a kind by its
 * cause: job-level causes (AF_INTR_IS_JOB) lose no hardware; a device memory error (hbm) is a
 * fault of the hardware recovered in place (no device lost); a node's loss takes the node's
 * devices out (a trailing partial node its own); every other cause, its device. A device
 * already out of service is not taken out again: its position is out from its loss until a
 * spare takes it, p->replace_s later while p's spares last (drawn in the order of the losses,
 * as the replay draws them), or for good; struck while out, the interruption loses no device.
 * *intr gets run->nintr entries (malloc; NULL with none). */
static af_result_t goodput_intr(const af_run_t *run, int64_t devices, const af_replay_params_t *p,
                                af_replay_intr_t **intr)
{
    *intr = NULL;
    const int64_t n = run->nintr;
    if (n == 0) {
        return AF_OK;
    }
    af_replay_intr_t *x = malloc(sizeof *x * (size_t)n);
    int64_t *order = malloc(sizeof *order * (size_t)n);
    /* when each position is back in service (0: in service; a fleet too large to track is not
     * deduplicated) */
    double *back = devices <= ((int64_t)1 << 26) ? calloc((size_t)devices, sizeof *back) : NULL;
    if (x == NULL || order == NULL || (back == NULL && devices <= ((int64_t)1 << 26))) {
        free(x);
        free(order);
        free(back);
        return AF_ERR_NOMEM;
    }
    const int64_t dpn = run->devices_per_node >= 1 ? run->devices_per_node : 1;
    for (int64_t k = 0; k < n; ++k) {
        const af_intr_row_t *row = &run->intr[k];
        double h = run->intr_timed && isfinite(row->time_h) ? row->time_h : row->sim_hours;
        x[k].t_s = h * 3600.0;
        /* insertion into the sorted prefix: the rows are in step order, so this moves a row
         * past the few of its own step drawn later than it */
        int64_t j = k;
        while (j > 0 && x[order[j - 1]].t_s > x[k].t_s) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = k;
    }
    int64_t spares = 0;
    if (__builtin_mul_overflow(p->spare_nodes, p->devices_per_node, &spares)) {
        spares = INT64_MAX;
    }
    af_replay_intr_t *sorted = malloc(sizeof *sorted * (size_t)n);
    if (sorted == NULL) {
        free(x);
        free(order);
        free(back);
        return AF_ERR_NOMEM;
    }
    for (int64_t j = 0; j < n; ++j) {
        const af_intr_row_t *row = &run->intr[order[j]];
        const double t = x[order[j]].t_s;
        af_replay_intr_t e = {
            .t_s = t, .kind = AF_REPLAY_HARDWARE, .devices_lost = 0, .node = row->node};
        int64_t first = -1;
        int64_t count = 0;
        if (row->cause >= 0 && row->cause < AF_NINTR && AF_INTR_IS_JOB(row->cause)) {
            e.kind = AF_REPLAY_JOB;
        } else if (row->cause == AF_INTR_hbm) {
            /* in place: no device lost */
        } else if (row->cause == AF_INTR_node) {
            /* the node's devices; a node number past the fleet (a damaged log) one device */
            if (row->node >= 0 && !__builtin_mul_overflow(row->node, dpn, &first) &&
                first < devices) {
                count = devices - first < dpn ? devices - first : dpn;
            } else {
                first = -1;
                count = 1;
            }
        } else {
            first = row->device >= 0 && row->device < devices ? row->device : -1;
            count = 1;
        }
        if (first < 0 || back == NULL) {
            e.devices_lost = count < devices ? count : devices; /* not tracked */
        } else {
            for (int64_t d = first; d < first + count; ++d) {
                if (back[d] > t) {
                    continue; /* already out */
                }
                e.devices_lost++;
                if (spares > 0) {
                    spares--;
                    back[d] = t + p->replace_s;
                } else {
                    back[d] = INFINITY;
                }
            }
        }
        sorted[j] = e;
    }
    free(x);
    free(order);
    free(back);
    *intr = sorted;
    return AF_OK;
}

/* remap's pace from the run's placement (analysis/replay.h): a synchronous job moves at the
 * pace of its most loaded unit. The log keeps the healthy units of every step, not each unit's
 * load; agefence's placement puts a moved block on the least-loaded healthy unit, so the most
 * loaded one holds ceil(blocks / healthy) blocks, against ceil(blocks / units) at the start:
 * pace = the second over the first, from the step's end on. A point at 0 (pace 1), then one
 * per change. *pace gets at most nrows + 1 entries (malloc; NULL, *n 0 when the log lacks the
 * columns or the sizes). */
static af_result_t goodput_pace(const af_run_t *run, int64_t units, af_replay_pace_t **pace,
                                int64_t *n)
{
    *pace = NULL;
    *n = 0;
    const double *hours = run->col[AF_COL_sim_hours];
    const int64_t *healthy = run->icol[AF_COL_healthy_units];
    const int64_t B = run->blocks.ok ? run->blocks.v : 0;
    if (hours == NULL || healthy == NULL || B < 1 || units < 1 || run->nrows == 0) {
        return AF_OK;
    }
    af_replay_pace_t *p = malloc(sizeof *p * (size_t)(run->nrows + 1));
    if (p == NULL) {
        return AF_ERR_NOMEM;
    }
    /* ceilings without the overflow of B + h - 1 (a damaged log's counts can be anything) */
    const double start = (double)(B / units + (B % units != 0));
    double last = 1.0;
    double last_t = 0.0;
    p[(*n)++] = (af_replay_pace_t){0.0, 1.0}; /* a series, even a flat one, is remap's pace */
    for (int64_t i = 0; i < run->nrows; ++i) {
        double t = hours[i] * 3600.0;
        if (!(t >= last_t) || !isfinite(t)) {
            continue; /* a damaged row: the series stays in order */
        }
        int64_t h = healthy[i];
        double v = h >= 1 ? start / (double)(B / h + (B % h != 0)) : 0.0;
        v = v < 1.0 ? v : 1.0;
        if (v != last) {
            p[(*n)++] = (af_replay_pace_t){t, v};
            last = v;
        }
        last_t = t;
    }
    *pace = p;
    return AF_OK;
}

/* The run's timeline for the replay over window_s: its interruptions and remap's pace
 * (goodput_intr, goodput_pace); the caller frees tl->intr and tl->pace. AF_ERR_NOMEM only. */
static af_result_t goodput_timeline(const af_summary_t *s, double window_s,
                                    af_replay_timeline_t *tl)
{
    const af_run_t *run = s->run;
    af_replay_intr_t *intr = NULL;
    af_replay_pace_t *pace = NULL;
    int64_t npace = 0;
    const int64_t devices = run->devices.ok && run->devices.v >= 1 ? run->devices.v : 1;
    af_result_t rc = goodput_intr(run, devices, &s->goodput_params, &intr);
    if (rc == AF_OK) {
        rc = goodput_pace(run, s->units, &pace, &npace);
    }
    if (rc != AF_OK) {
        free(intr);
        return rc;
    }
    *tl = (af_replay_timeline_t){.window_s = window_s,
                                 .devices = devices,
                                 .intr = intr,
                                 .n_intr = run->nintr,
                                 .pace = pace,
                                 .n_pace = npace};
    return AF_OK;
}

/* What a spare for every device lost would keep, at the intervals searched: the devices lost
 * in the window when spares never run out (a device back in service can be lost again, so the
 * timeline is rebuilt with them), in whole nodes, and each policy's ETTR on that timeline with
 * that many spare nodes. AF_ERR_NOMEM only. */
static af_result_t goodput_spared(af_summary_t *s, const af_run_t *run,
                                  const af_replay_timeline_t *tl)
{
    af_replay_params_t p = s->goodput_params;
    p.spare_nodes = 1000000000; /* the most the config allows: spares never run out */
    af_replay_intr_t *intr = NULL;
    AF_CHECK(goodput_intr(run, tl->devices, &p, &intr));
    int64_t lost = 0;
    for (int64_t k = 0; k < tl->n_intr && intr[k].t_s < tl->window_s; ++k) {
        if (intr[k].kind == AF_REPLAY_HARDWARE && intr[k].devices_lost > 0) {
            lost =
                intr[k].devices_lost > INT64_MAX - lost ? INT64_MAX : lost + intr[k].devices_lost;
        }
    }
    const int64_t dpn = p.devices_per_node >= 1 ? p.devices_per_node : 1;
    s->goodput.spares_for_all = lost / dpn + (lost % dpn != 0);
    af_result_t rc = AF_OK;
    if (s->goodput.spares_for_all > s->goodput_params.spare_nodes) {
        p.spare_nodes = s->goodput.spares_for_all;
        af_replay_timeline_t u = *tl;
        u.intr = intr;
        for (int k = 0; k < AF_REPLAY_NPOLICY && rc == AF_OK; ++k) {
            af_goodput_policy_t *g = &s->goodput.pol[k];
            af_replay_result_t r;
            rc = af_goodput_at(&u, &p, (af_replay_policy_t)k, g->interval_s, g->replica_interval_s,
                               &r);
            g->spared_ettr = rc == AF_OK ? r.ettr : NAN;
        }
    }
    free(intr);
    return rc == AF_ERR_NOMEM ? rc : AF_OK;
}

/* Fills s's goodput (have_goodput, or goodput_why). AF_ERR_NOMEM only. */
static af_result_t goodput_compute(af_summary_t *s, const af_run_t *run)
{
    s->have_goodput = 0;
    s->goodput_window_s = isfinite(s->sim_hours) ? s->sim_hours * 3600.0 : NAN;
    s->goodput_hw = s->goodput_hw_devices = s->goodput_inplace = s->goodput_job = 0;
    s->goodput_pace_points = 0;
    af_goodput_replay_params(&run->goodput, run->devices_per_node, &s->goodput_params);
    if (!run->have_intr) {
        snprintf(s->goodput_why, sizeof s->goodput_why, "the log has no interruptions");
        return AF_OK;
    }
    if (!(s->goodput_window_s > 0)) {
        snprintf(s->goodput_why, sizeof s->goodput_why,
                 "no simulated time (aging.sim_hours_per_step = 0 or no /steps/sim_hours)");
        return AF_OK;
    }
    af_replay_timeline_t tl;
    AF_CHECK(goodput_timeline(s, s->goodput_window_s, &tl));
    const af_replay_intr_t *intr = tl.intr;
    for (int64_t k = 0; k < run->nintr; ++k) {
        const int64_t c = run->intr[k].cause;
        s->goodput_job += c >= 0 && c < AF_NINTR && AF_INTR_IS_JOB(c);
        s->goodput_inplace += c == AF_INTR_hbm;
    }
    s->goodput_hw = run->nintr - s->goodput_job - s->goodput_inplace;
    for (int64_t k = 0; k < run->nintr; ++k) {
        if (__builtin_add_overflow(s->goodput_hw_devices, intr[k].devices_lost,
                                   &s->goodput_hw_devices)) {
            s->goodput_hw_devices = INT64_MAX;
        }
    }
    s->goodput_pace_points = tl.n_pace;
    af_result_t rc = af_goodput_replay(&tl, &s->goodput_params, &s->goodput);
    if (rc == AF_OK) {
        rc = goodput_spared(s, run, &tl);
    }
    if (rc == AF_OK) {
        s->have_goodput = 1;
    } else {
        snprintf(s->goodput_why, sizeof s->goodput_why, "%s", af_error_message());
    }
    free((void *)tl.intr);
    free((void *)tl.pace);
    return rc == AF_ERR_NOMEM ? rc : AF_OK;
}

int af_band_of(double f)
{
    int b = 0;
    while (b + 1 < AF_NBANDS && f >= BAND_LO[b + 1]) {
        b++;
    }
    return b;
}

static double ratio(double num, double den)
{
    return den != 0.0 && isfinite(num) && isfinite(den) ? num / den : NAN;
}

static int64_t count_hosts(const char *list)
{
    if (list[0] == '\0') {
        return 0;
    }
    int64_t n = 0;
    const char *p = list;
    while (*p != '\0') {
        size_t len = strcspn(p, ",");
        /* Count this name unless an earlier entry is the same. */
        int seen = 0;
        for (const char *q = list; q < p && !seen;) {
            size_t ql = strcspn(q, ",");
            seen = ql == len && strncmp(q, p, len) == 0;
            q += ql + (q[ql] == ',');
        }
        n += !seen;
        p += len + (p[len] == ',');
    }
    return n;
}

/* Latency of every phase over the rows where mask[i] (NULL: all rows). buf holds nrows x nranks
 * values. */
static void phase_set(const af_run_t *run, const unsigned char *mask, double *buf,
                      af_phase_set_t *set)
{
    memset(set, 0, sizeof *set);
    for (int64_t i = 0; i < run->nrows; ++i) {
        set->steps += mask == NULL || mask[i];
    }
    for (int p = 0; p < AF_NPHASES; ++p) {
        size_t n = 0;
        if (run->phase[p] != NULL) {
            for (int64_t i = 0; i < run->nrows; ++i) {
                if (mask == NULL || mask[i]) {
                    memcpy(buf + n, run->phase[p] + (size_t)i * (size_t)run->nranks,
                           sizeof(double) * (size_t)run->nranks);
                    n += (size_t)run->nranks;
                }
            }
        }
        af_stats_sort(buf, n);
        af_stats_from_sorted(buf, n, &set->ph[p]);
    }
}

static void worst_steps(af_summary_t *s, const af_run_t *run, double *rowmax, int64_t *argmax)
{
    const double *st = run->phase[AF_PHASE_step_us];
    int64_t R = run->nranks;
    for (int64_t i = 0; i < run->nrows; ++i) {
        rowmax[i] = st[i * R];
        argmax[i] = 0;
        for (int64_t q = 1; q < R; ++q) {
            if (st[i * R + q] > rowmax[i]) {
                rowmax[i] = st[i * R + q];
                argmax[i] = q;
            }
        }
    }
    /* Selection of the AF_WORST_STEPS largest, earliest first among equals. */
    s->nworst = 0;
    for (int w = 0; w < AF_WORST_STEPS && w < run->nrows; ++w) {
        int64_t best = -1;
        for (int64_t i = 0; i < run->nrows; ++i) {
            int taken = 0;
            for (int k = 0; k < w && !taken; ++k) {
                taken = s->worst[k].row == i;
            }
            if (!taken && !isnan(rowmax[i]) && (best < 0 || rowmax[i] > rowmax[best])) {
                best = i;
            }
        }
        if (best < 0) {
            break;
        }
        af_worst_step_t *ws = &s->worst[w];
        memset(ws, 0, sizeof *ws);
        ws->row = best;
        ws->step = run->icol[AF_COL_step] ? run->icol[AF_COL_step][best] : best + 1;
        ws->state_step = run->icol[AF_COL_state_step] ? run->icol[AF_COL_state_step][best] : -1;
        ws->step_us = rowmax[best];
        ws->rank = argmax[best];
        ws->blackout_frac = af_run_value(run, AF_COL_blackout_frac, best);
        ws->phase = -1;
        ws->phase_us = NAN;
        for (int p = 0; p < AF_NPHASES; ++p) {
            if (p == AF_PHASE_step_us || run->phase[p] == NULL) {
                continue;
            }
            double v = run->phase[p][best * R + ws->rank];
            if (ws->phase < 0 || v > ws->phase_us) {
                ws->phase = p;
                ws->phase_us = v;
            }
        }
        for (int c = 0; c < AF_NCOLUMNS; ++c) {
            ws->counters[c] = run->icol[c] ? run->icol[c][best] : 0;
        }
        for (int64_t e = 0; e < run->nevents; ++e) {
            if (run->events[e].step == ws->step) {
                ws->events[af_event_kind_index(run->events[e].kind)]++;
            }
        }
        s->nworst = w + 1;
    }
}

af_result_t af_summary_compute(af_summary_t *s, const af_run_t *run)
{
    memset(s, 0, sizeof *s);
    s->run = run;
    int64_t n = run->nrows;
    const int64_t last = n - 1;

    /* run (a product that does not fit in 64 bits, from a damaged log, is unknown: 0) */
    if (run->devices.ok && run->units_per_device.ok &&
        __builtin_mul_overflow(run->devices.v, run->units_per_device.v, &s->units)) {
        s->units = 0;
    }
    if (!run->capacity.ok || __builtin_mul_overflow(s->units, run->capacity.v, &s->slots)) {
        s->slots = 0;
    }
    s->hosts = count_hosts(run->hostnames);
    s->steps_executed = n;
    if (run->state_step.ok) {
        s->steps_logical = run->state_step.v;
    } else if (n > 0 && run->icol[AF_COL_state_step] != NULL) {
        s->steps_logical = run->icol[AF_COL_state_step][last];
    }
    s->memory_overhead = ratio(run->state_bytes_static.v, run->state_bytes_fault_free.v);
    s->max_blackout = NAN;
    if (run->col[AF_COL_blackout_frac] != NULL && n > 0) {
        s->max_blackout = 0.0;
        for (int64_t i = 0; i < n; ++i) {
            double f = run->col[AF_COL_blackout_frac][i];
            s->max_blackout = f > s->max_blackout ? f : s->max_blackout;
        }
    } else if (run->max_blackout.ok) {
        s->max_blackout = run->max_blackout.v;
    }
    s->sim_hours = n > 0 && run->col[AF_COL_sim_hours] != NULL ? run->col[AF_COL_sim_hours][last]
                                                               : run->sim_hours.v;

    /* correctness */
    s->mass_drift = run->mass_final.v - run->mass_initial.v;
    s->mass_drift_rel = ratio(s->mass_drift, fabs(run->mass_initial.v));
    s->mass_dev_max = NAN;
    if (run->col[AF_COL_mass] != NULL && run->mass_initial.ok && n > 0) {
        s->mass_dev_max = 0.0;
        for (int64_t i = 0; i < n; ++i) {
            double d = fabs(run->col[AF_COL_mass][i] - run->mass_initial.v);
            s->mass_dev_max = d > s->mass_dev_max || isnan(d) ? d : s->mass_dev_max;
        }
    }
    /* Unknown (-1) without both checksums, and for a run not verified (bitwise_equal -1: its
     * reference checksum says "unverified"). */
    s->checksums_match = run->state_checksum[0] && run->reference_checksum[0] &&
                                 !(run->bitwise_equal.ok && run->bitwise_equal.v == -1)
                             ? strcmp(run->state_checksum, run->reference_checksum) == 0
                             : -1;

    /* totals */
    for (int c = 0; c < AF_NCOLUMNS; ++c) {
        if (run->icol[c] != NULL) {
            s->tot_ok[c] = 1;
            for (int64_t i = 0; i < n && s->tot_ok[c]; ++i) {
                /* a total beyond 64 bits (a damaged log) is unknown, like a missing column */
                if (__builtin_add_overflow(s->tot[c], run->icol[c][i], &s->tot[c])) {
                    s->tot[c] = 0;
                    s->tot_ok[c] = 0;
                }
            }
        }
    }
    s->allocs_after_init = run->icol[AF_COL_allocs_after_init] && n > 0
                               ? run->icol[AF_COL_allocs_after_init][last]
                               : -1;
    s->comms_after_init =
        run->icol[AF_COL_comms_after_init] && n > 0 ? run->icol[AF_COL_comms_after_init][last] : -1;
#define TOT(c) (s->tot_ok[AF_COL_##c] ? (double)s->tot[AF_COL_##c] : NAN)
    s->detected_per_injected = ratio(TOT(corrupt_detected), TOT(corrupt_injected));
    s->undetected_per_injected = ratio(TOT(sdc_undetected), TOT(corrupt_injected));
    s->fenced_per_injected = ratio(TOT(fenced), TOT(corrupt_injected));
    s->retried_per_fenced = ratio(TOT(retried), TOT(fenced));
    s->injected_per_step = ratio(TOT(corrupt_injected), (double)n);
    s->leaked_per_step = ratio(TOT(nonfinite_leaked), (double)n);
    s->sdc_per_step = ratio(TOT(sdc_undetected), (double)n);
    s->injected_per_fading_unit_step = ratio(TOT(corrupt_injected), TOT(fading_units));
    s->steps_with_corruption = -1;
    if (run->icol[AF_COL_corrupt_injected] != NULL) {
        s->steps_with_corruption = 0;
        for (int64_t i = 0; i < n; ++i) {
            s->steps_with_corruption += run->icol[AF_COL_corrupt_injected][i] > 0;
        }
    }

    /* recovery */
    /* -1: beyond 64 bits */
    if (__builtin_add_overflow(s->tot[AF_COL_moves_drain], s->tot[AF_COL_moves_restore],
                               &s->moves_total) ||
        __builtin_add_overflow(s->moves_total, s->tot[AF_COL_moves_retry], &s->moves_total)) {
        s->moves_total = -1;
    }
    const int move_cols[] = {AF_COL_moves_drain, AF_COL_moves_restore, AF_COL_moves_retry,
                             AF_COL_rollbacks};
    int have_moves = 1;
    for (int k = 0; k < 4; ++k) {
        have_moves &= run->icol[move_cols[k]] != NULL;
    }
    /* Lost work in block-steps: a rollback recomputes every block for each replayed step, a
     * local replay one block for each of its steps. Without the block count (an old or damaged
     * log), the steps alone. */
    if (run->blocks.ok && run->blocks.v > 0) {
        double B = (double)run->blocks.v;
        s->lost_work_frac = ratio(
            (double)TOT(replayed_steps) * B + (double)TOT(replayed_block_steps), (double)n * B);
    } else {
        s->lost_work_frac = ratio(TOT(replayed_steps), (double)n);
    }
#undef TOT
    s->units_dead = -1;
    if (run->unit_cause != NULL) {
        s->units_dead = 0;
        for (int64_t u = 0; u < run->nunits; ++u) {
            int64_t c = run->unit_cause[u];
            if (c >= 0 && c < 6) {
                s->dead_by_cause[c]++;
            } else if (c == 8 || c == 9) {
                s->dead_by_cause[6]++;
            }
            s->units_dead += c != 0;
        }
    }
    for (int k = 0; k < AF_NEVENT_KINDS; ++k) {
        s->events[k] = run->have_events ? 0 : -1;
    }
    for (int64_t e = 0; e < run->nevents; ++e) {
        s->events[af_event_kind_index(run->events[e].kind)]++;
    }
    count_interruptions(s, run);
    AF_CHECK(goodput_compute(s, run));

    set_record(s, run);

    /* latency: buf holds one phase's rows x ranks, when a phase was read (nranks alone may come
     * from a damaged /@ranks) */
    int have_phase = 0;
    for (int p = 0; p < AF_NPHASES; ++p) {
        have_phase |= run->phase[p] != NULL;
    }
    size_t cells = have_phase ? (size_t)n * (size_t)run->nranks : 0;
    double *buf = malloc(sizeof(double) * (cells ? cells : 1));
    unsigned char *mask = malloc((size_t)(n > 0 ? n : 1));
    double *rowmax = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    int64_t *argmax = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    if (buf == NULL || mask == NULL || rowmax == NULL || argmax == NULL) {
        free(buf);
        free(mask);
        free(rowmax);
        free(argmax);
        return AF_ERR_NOMEM;
    }
    s->have_latency = run->phase[AF_PHASE_step_us] != NULL && n > 0;
    phase_set(run, NULL, buf, &s->all);
    for (int b = 0; b < AF_NBANDS; ++b) {
        for (int64_t i = 0; i < n; ++i) {
            mask[i] = run->col[AF_COL_blackout_frac] != NULL &&
                      af_band_of(run->col[AF_COL_blackout_frac][i]) == b;
        }
        phase_set(run, mask, buf, &s->band[b]);
    }
    s->steps_with_moves = -1;
    for (int with = 0; with < 2; ++with) {
        int64_t count = 0;
        for (int64_t i = 0; i < n; ++i) {
            int moved = 0;
            for (int k = 0; k < 4 && have_moves; ++k) {
                moved |= run->icol[move_cols[k]][i] > 0;
            }
            mask[i] = have_moves && moved == with;
            count += mask[i];
        }
        phase_set(run, mask, buf, with ? &s->with_moves : &s->without_moves);
        if (with && have_moves) {
            s->steps_with_moves = count;
        }
    }
    double ar = run->allreduce8_p50.ok ? run->allreduce8_p50.v : NAN;
    s->coord_p50_over_allreduce = ratio(s->all.ph[AF_PHASE_coord_us].p50, ar);
    s->coord_mean_over_allreduce = ratio(s->all.ph[AF_PHASE_coord_us].mean, ar);
    s->steps_wall_s = NAN;
    if (s->have_latency) {
        worst_steps(s, run, rowmax, argmax);
        double sum = 0.0;
        for (int64_t i = 0; i < n; ++i) {
            sum += rowmax[i];
        }
        s->steps_wall_s = sum * 1e-6;
    }
    s->steps_per_s = ratio((double)n, s->steps_wall_s);
    free(buf);
    free(mask);
    free(rowmax);
    free(argmax);
    return AF_OK;
}

/* ---- figures ---- */

static void str_or_null(af_figs_t *f, unsigned flags, const char *v, const char *key)
{
    if (v[0] != '\0') {
        af_figs_str(f, flags, v, "%s", key);
    } else {
        af_figs_null(f, flags, "%s", key);
    }
}

static void i64_or_null(af_figs_t *f, unsigned flags, af_opt_i64_t v, const char *key)
{
    if (v.ok) {
        af_figs_int(f, flags, v.v, "%s", key);
    } else {
        af_figs_null(f, flags, "%s", key);
    }
}

static void count_or_null(af_figs_t *f, unsigned flags, int ok, int64_t v, const char *key)
{
    if (ok) {
        af_figs_int(f, flags, v, "%s", key);
    } else {
        af_figs_null(f, flags, "%s", key);
    }
}

static void stats_figs(af_figs_t *f, unsigned flags, const af_stats_t *st, const char *prefix)
{
    af_figs_int(f, flags, (int64_t)st->n, "%s.n", prefix);
    af_figs_real(f, flags, st->p50, "%s.p50", prefix);
    af_figs_real(f, flags, st->p90, "%s.p90", prefix);
    af_figs_real(f, flags, st->p99, "%s.p99", prefix);
    af_figs_real(f, flags, st->max, "%s.max", prefix);
    af_figs_real(f, flags, st->mean, "%s.mean", prefix);
    af_figs_real(f, flags, st->sd, "%s.sd", prefix);
    af_figs_real(f, flags, st->cv, "%s.cv", prefix);
    af_figs_real(f, flags | AF_FIG_DETAIL, st->min, "%s.min", prefix);
}

/* A phase set: its step count, step_us in the comparison table and the others in JSON only. */
static void set_figs(af_figs_t *f, const af_phase_set_t *set, const char *prefix)
{
    char key[160];
    af_figs_int(f, 0, set->steps, "%s.steps", prefix);
    for (int p = 0; p < AF_NPHASES; ++p) {
        int n = snprintf(key, sizeof key, "%s.%s", prefix, af_phase_names[p]);
        if (n < 0 || (size_t)n >= sizeof key) {
            continue; /* the prefixes are this file's short names: never cut */
        }
        stats_figs(f, p == AF_PHASE_step_us ? 0 : AF_FIG_DETAIL, &set->ph[p], key);
    }
}

/* The goodput's figures (README, "--json"): per policy the ETTR at the searched intervals and
 * what the replay did there, and Young's and Daly's intervals with their ETTR; null where the
 * replay did not run (goodput.why says why). An interval with nothing to guard against is null
 * (no write needed); one of the whole window means no write in it. */
static void goodput_figs(const af_summary_t *s, af_figs_t *f)
{
    const int ok = s->have_goodput;
    const unsigned D = AF_FIG_DETAIL;
    char key[128];
#define GP_REAL(flags, v, ...)                                                                     \
    (snprintf(key, sizeof key, __VA_ARGS__), af_figs_real(f, flags, ok ? (v) : NAN, "%s", key))
#define GP_INT(flags, v, ...)                                                                      \
    (snprintf(key, sizeof key, __VA_ARGS__), count_or_null(f, flags, ok, v, key))
    if (ok) {
        af_figs_null(f, D, "goodput.why");
    } else {
        af_figs_str(f, D, s->goodput_why, "goodput.why");
    }
    GP_REAL(0, s->goodput_window_s, "goodput.window_s");
    GP_INT(D, s->goodput_hw, "goodput.timeline.hardware_losses");
    GP_INT(D, s->goodput_hw_devices, "goodput.timeline.devices_lost");
    GP_INT(D, s->goodput_inplace, "goodput.timeline.in_place");
    GP_INT(D, s->goodput_job, "goodput.timeline.job_level");
    GP_INT(D, s->goodput_pace_points, "goodput.timeline.pace_points");
    GP_INT(D, s->goodput.spares_for_all, "goodput.with_spares.spare_nodes");
    for (int k = 0; k < AF_REPLAY_NPOLICY; ++k) {
        const af_goodput_policy_t *g = &s->goodput.pol[k];
        const af_replay_result_t *r = &g->at;
        const char *n = af_replay_policy_name((af_replay_policy_t)k);
        const int remap = k == AF_REPLAY_REMAP;
        GP_REAL(0, g->ettr, "goodput.%s.ettr", n);
        GP_REAL(0, g->interval_s, "goodput.%s.interval_s", n);
        if (remap) {
            GP_REAL(0, g->replica_interval_s, "goodput.%s.replica_interval_s", n);
        }
        GP_REAL(D, r->useful_s, "goodput.%s.useful_s", n);
        GP_REAL(D, r->lost_s, "goodput.%s.lost_work_s", n);
        GP_REAL(D, r->restart_time_s, "goodput.%s.restart_s", n);
        GP_REAL(D, r->recover_time_s, "goodput.%s.recover_s", n);
        GP_REAL(D, r->checkpoint_time_s, "goodput.%s.checkpoint_overhead_s", n);
        if (remap) {
            GP_REAL(D, r->replica_time_s, "goodput.%s.replica_overhead_s", n);
        }
        GP_REAL(D, r->capacity_loss_s, "goodput.%s.capacity_loss_s", n);
        GP_INT(D, r->checkpoints, "goodput.%s.checkpoints", n);
        if (remap) {
            GP_INT(D, r->replicas, "goodput.%s.replicas", n);
        }
        GP_REAL(D, g->mtbi_s, "goodput.%s.mtbi_s", n);
        if (remap) {
            GP_REAL(D, g->replica_mtbi_s, "goodput.%s.replica_mtbi_s", n);
        }
        GP_REAL(D, g->young_s, "goodput.%s.young.interval_s", n);
        if (remap) {
            GP_REAL(D, g->young_replica_s, "goodput.%s.young.replica_interval_s", n);
        }
        GP_REAL(D, g->young_steps_s, "goodput.%s.young.whole_steps_s", n);
        if (remap) {
            GP_REAL(D, g->young_replica_steps_s, "goodput.%s.young.replica_whole_steps_s", n);
        }
        GP_REAL(0, g->young_ettr, "goodput.%s.young.ettr", n);
        GP_REAL(D, g->daly_s, "goodput.%s.daly.interval_s", n);
        if (remap) {
            GP_REAL(D, g->daly_replica_s, "goodput.%s.daly.replica_interval_s", n);
        }
        GP_REAL(D, g->daly_steps_s, "goodput.%s.daly.whole_steps_s", n);
        if (remap) {
            GP_REAL(D, g->daly_replica_steps_s, "goodput.%s.daly.replica_whole_steps_s", n);
        }
        GP_REAL(0, g->daly_ettr, "goodput.%s.daly.ettr", n);
        GP_INT(D, g->capacity_bound, "goodput.%s.capacity_bound", n);
        GP_REAL(D, g->spared_ettr, "goodput.%s.with_spares.ettr", n);
    }
#undef GP_REAL
#undef GP_INT
}

af_result_t af_summary_figures(const af_summary_t *s, af_figs_t *f)
{
    const af_run_t *r = s->run;
    const unsigned ID = AF_FIG_NORATIO;
    int64_t n = s->steps_executed;

    af_figs_str(f, ID, AF_REPORT_FORMAT, "format");
    af_figs_str(f, ID, r->path, "run.file");
    af_figs_int(f, ID, r->schema_version, "run.schema_version");
    str_or_null(f, 0, r->scenario, "run.scenario");
    str_or_null(f, 0, r->agefence_version, "run.agefence_version");
    str_or_null(f, 0, r->git_revision, "run.git_revision");
    i64_or_null(f, ID, r->seed, "run.seed");
    i64_or_null(f, 0, r->ranks, "run.ranks");
    i64_or_null(f, 0, r->devices, "run.devices");
    i64_or_null(f, 0, r->units_per_device, "run.units_per_device");
    count_or_null(f, 0, s->units > 0, s->units, "run.units");
    i64_or_null(f, 0, r->blocks, "run.blocks");
    i64_or_null(f, 0, r->block_len, "run.block_len");
    str_or_null(f, 0, r->workload, "run.workload");
    i64_or_null(f, 0, r->workload_dim, "run.workload_dim");
    i64_or_null(f, 0, r->capacity, "run.capacity");
    count_or_null(f, 0, s->slots > 0, s->slots, "run.slots");
    str_or_null(f, 0, r->compute_backend, "run.compute_backend");
    str_or_null(f, 0, r->fabric_backend, "run.fabric_backend");
    str_or_null(f, 0, r->hostnames, "run.hostnames");
    count_or_null(f, 0, s->hosts > 0, s->hosts, "run.hosts");
    str_or_null(f, AF_FIG_DETAIL, r->mpi_version, "run.mpi_version");
    str_or_null(f, AF_FIG_DETAIL, r->backend_choice, "run.backend_choice");
    str_or_null(f, AF_FIG_DETAIL, r->step_graph, "run.step_graph");
    str_or_null(f, AF_FIG_DETAIL, r->kernel_path, "run.kernel_path");
    i64_or_null(f, 0, r->graph_instantiations, "run.graph_instantiations");
    i64_or_null(f, 0, r->graph_steps, "run.graph_steps");
    str_or_null(f, AF_FIG_DETAIL, r->launcher, "run.launcher");
    str_or_null(f, AF_FIG_DETAIL | ID, r->slurm_job_id, "run.slurm_job_id");
    str_or_null(f, AF_FIG_DETAIL, r->slurm_nodelist, "run.slurm_nodelist");
    str_or_null(f, ID, r->start_time, "run.start_time");
    str_or_null(f, ID, r->end_time, "run.end_time");
    i64_or_null(f, 0, r->steps_planned, "run.steps_planned");
    af_figs_int(f, 0, n, "run.steps_executed");
    af_figs_int(f, 0, s->steps_logical, "run.steps_logical");
    count_or_null(f, 0, s->tot_ok[AF_COL_replayed_steps], s->tot[AF_COL_replayed_steps],
                  "run.steps_replayed");
    af_figs_real(f, 0, s->sim_hours, "run.sim_hours");
    af_figs_real(f, 0, s->steps_wall_s, "run.steps_wall_s");
    af_figs_real(f, 0, s->steps_per_s, "run.steps_per_s");
    str_or_null(f, 0, r->exit_reason, "run.exit_reason");
    i64_or_null(f, 0, r->exit_code, "run.exit_code");
    str_or_null(f, 0, r->exhausted_why, "run.exhausted_why");
    af_figs_real(f, 0, s->max_blackout, "run.max_blackout");
    af_figs_real(f, 0, r->max_blackout_limit.v, "run.max_blackout_limit");
    af_figs_real(f, 0, r->state_bytes_static.v, "run.state_bytes_static");
    af_figs_real(f, 0, r->state_bytes_fault_free.v, "run.state_bytes_fault_free");
    if (r->state_bytes_held.ok) {
        af_figs_real(f, 0, r->state_bytes_held.v, "run.state_bytes_held");
    }
    af_figs_real(f, 0, s->memory_overhead, "run.memory_overhead");

    if (r->bitwise_equal.ok && r->bitwise_equal.v >= 0) {
        af_figs_bool(f, 0, r->bitwise_equal.v == 1, "correctness.bitwise_equal");
    } else {
        af_figs_null(f, 0, "correctness.bitwise_equal");
    }
    str_or_null(f, ID, r->state_checksum, "correctness.state_checksum");
    str_or_null(f, ID, r->reference_checksum, "correctness.reference_checksum");
    if (s->checksums_match >= 0) {
        af_figs_bool(f, 0, s->checksums_match, "correctness.checksums_match");
    } else {
        af_figs_null(f, 0, "correctness.checksums_match");
    }
    af_figs_real(f, 0, r->mass_initial.v, "correctness.mass_initial");
    af_figs_real(f, 0, r->mass_final.v, "correctness.mass_final");
    af_figs_real(f, 0, s->mass_drift, "correctness.mass_drift");
    af_figs_real(f, 0, s->mass_drift_rel, "correctness.mass_drift_rel");
    af_figs_real(f, 0, s->mass_dev_max, "correctness.mass_dev_max");

    const struct {
        const char *key;
        int col;
    } cont[] = {{"injected", AF_COL_corrupt_injected},
                {"detected", AF_COL_corrupt_detected},
                {"fenced", AF_COL_fenced},
                {"retried", AF_COL_retried},
                {"leaked", AF_COL_nonfinite_leaked},
                {"sdc_undetected", AF_COL_sdc_undetected},
                {"sdc_harmful", AF_COL_sdc_harmful},
                {"unverified_commits", AF_COL_unverified_commits}};
    char key[160];
    for (size_t k = 0; k < sizeof cont / sizeof cont[0]; ++k) {
        snprintf(key, sizeof key, "containment.%s", cont[k].key);
        count_or_null(f, 0, s->tot_ok[cont[k].col], s->tot[cont[k].col], key);
    }
    af_figs_real(f, 0, s->detected_per_injected, "containment.detected_per_injected");
    af_figs_real(f, 0, s->undetected_per_injected, "containment.undetected_per_injected");
    af_figs_real(f, 0, s->fenced_per_injected, "containment.fenced_per_injected");
    af_figs_real(f, 0, s->retried_per_fenced, "containment.retried_per_fenced");
    af_figs_real(f, 0, s->injected_per_step, "containment.injected_per_step");
    af_figs_real(f, 0, s->leaked_per_step, "containment.leaked_per_step");
    af_figs_real(f, 0, s->sdc_per_step, "containment.sdc_per_step");
    af_figs_real(f, 0, s->injected_per_fading_unit_step,
                 "containment.injected_per_fading_unit_step");
    count_or_null(f, 0, s->steps_with_corruption >= 0, s->steps_with_corruption,
                  "containment.steps_with_corruption");

    const struct {
        const char *key;
        int col;
    } rec[] = {{"drains", AF_COL_moves_drain},
               {"restores", AF_COL_moves_restore},
               {"retry_moves", AF_COL_moves_retry},
               {"rollbacks", AF_COL_rollbacks},
               {"replayed_steps", AF_COL_replayed_steps},
               {"replayed_blocks", AF_COL_replayed_blocks},
               {"replayed_block_steps", AF_COL_replayed_block_steps}};
    for (size_t k = 0; k < sizeof rec / sizeof rec[0]; ++k) {
        snprintf(key, sizeof key, "recovery.%s", rec[k].key);
        count_or_null(f, 0, s->tot_ok[rec[k].col], s->tot[rec[k].col], key);
    }
    int have_moves = s->tot_ok[AF_COL_moves_drain] && s->tot_ok[AF_COL_moves_restore] &&
                     s->tot_ok[AF_COL_moves_retry];
    count_or_null(f, 0, have_moves && s->moves_total >= 0, s->moves_total, "recovery.moves_total");
    count_or_null(f, 0, s->steps_with_moves >= 0, s->steps_with_moves, "recovery.steps_with_moves");
    af_figs_real(f, 0, s->lost_work_frac, "recovery.lost_work_frac");
    count_or_null(f, 0, s->allocs_after_init >= 0, s->allocs_after_init,
                  "recovery.allocs_after_init");
    count_or_null(f, 0, s->comms_after_init >= 0, s->comms_after_init, "recovery.comms_after_init");
    count_or_null(f, 0, r->have_events, r->nevents, "recovery.events_logged");
    count_or_null(f, 0, r->event_log_errors.ok, r->event_log_errors.v, "recovery.event_log_errors");
    count_or_null(f, 0, s->units_dead >= 0, s->units_dead, "recovery.units_dead");
    const char *causes[] = {"units_alive", "dead_wearout", "dead_sudden", "dead_scripted",
                            "dead_device", "dead_node",    "dead_link"};
    for (int c = 0; c < 7; ++c) {
        snprintf(key, sizeof key, "recovery.%s", causes[c]);
        count_or_null(f, 0, s->units_dead >= 0, s->dead_by_cause[c], key);
    }
    for (int k = 0; k < AF_NEVENT_KINDS; ++k) {
        snprintf(key, sizeof key, "recovery.events.%s", af_event_kind_names[k]);
        count_or_null(f, 0, s->events[k] >= 0, s->events[k], key);
    }
    count_or_null(f, 0, s->interruptions >= 0, s->interruptions, "interruptions.total");
    for (int c = 0; c < AF_NINTR; ++c) {
        snprintf(key, sizeof key, "interruptions.by_cause.%s", af_intr_names[c]);
        count_or_null(f, 0, s->intr_by_cause[c] >= 0, s->intr_by_cause[c], key);
    }
    af_figs_real(f, 0, s->mtbi_hours, "interruptions.mtbi_hours");
    if (s->interruptions >= 0) {
        af_figs_str(f, ID, r->intr_from_table ? "table" : "events", "interruptions.source");
    } else {
        af_figs_null(f, ID, "interruptions.source");
    }
    if (s->record != NULL && !isnan(s->record_scale)) {
        af_figs_str(f, ID, s->record->name, "record.name");
        af_figs_real(f, ID, s->record->hours, "record.hours");
        af_figs_real(f, 0, s->record_scale, "record.scale");
        af_figs_int(f, 0, s->record->gpus, "record.gpus");
        af_figs_real(f, 0, s->record_grain_scale[AF_GRAIN_NODE], "record.scale_node_hours");
        af_figs_real(f, 0, s->record_grain_scale[AF_GRAIN_DEVICE], "record.scale_gpu_hours");
        for (int c = 0; c <= AF_NINTR; ++c) {
            if (!s->rec[c].have) {
                continue;
            }
            const char *cn = c < AF_NINTR ? af_intr_names[c] : "all";
            af_figs_real(f, 0, s->rec[c].expected, "record.causes.%s.record", cn);
            af_figs_int(f, 0, s->rec[c].measured, "record.causes.%s.measured", cn);
            af_figs_real(f, 0, s->rec[c].lo, "record.causes.%s.ci_low", cn);
            af_figs_real(f, 0, s->rec[c].hi, "record.causes.%s.ci_high", cn);
            af_figs_bool(f, 0, s->rec[c].inside, "record.causes.%s.inside", cn);
        }
    } else {
        af_figs_null(f, ID, "record.name");
    }
    goodput_figs(s, f);
    if (r->goodput_set[0] != '\0') {
        af_figs_str(f, 0, r->goodput_set, "goodput.params.set");
    } else {
        af_figs_null(f, 0, "goodput.params.set");
    }
    af_figs_real(f, 0, r->goodput.step_s, "goodput.params.step_seconds");
    af_figs_real(f, 0, r->goodput.checkpoint_s, "goodput.params.checkpoint_seconds");
    af_figs_real(f, 0, r->goodput.restart_s, "goodput.params.restart_seconds");
    af_figs_real(f, 0, r->goodput.shrink_s, "goodput.params.shrink_seconds");
    af_figs_real(f, 0, r->goodput.repartition_s, "goodput.params.repartition_seconds");
    af_figs_real(f, 0, r->goodput.replica_s, "goodput.params.replica_seconds");
    af_figs_real(f, 0, r->goodput.detect_s, "goodput.params.detect_seconds");
    af_figs_real(f, 0, r->goodput.remap_s, "goodput.params.remap_seconds");
    af_figs_int(f, 0, r->goodput.spare_nodes, "goodput.params.spare_nodes");
    af_figs_real(f, 0, r->goodput.replace_s, "goodput.params.replace_seconds");

    for (int p = 0; p < AF_NPHASES; ++p) {
        snprintf(key, sizeof key, "latency.phases.%s", af_phase_names[p]);
        stats_figs(f, 0, &s->all.ph[p], key);
    }
    for (int b = 0; b < AF_NBANDS; ++b) {
        snprintf(key, sizeof key, "latency.by_blackout.%s", af_band_labels[b]);
        set_figs(f, &s->band[b], key);
    }
    set_figs(f, &s->with_moves, "latency.with_moves");
    set_figs(f, &s->without_moves, "latency.without_moves");
    af_figs_real(f, 0, s->all.ph[AF_PHASE_coord_us].p50, "latency.coordinator.coord_us_p50");
    af_figs_real(f, 0, s->all.ph[AF_PHASE_coord_us].mean, "latency.coordinator.coord_us_mean");
    af_figs_real(f, 0, r->allreduce8_p10.v, "latency.coordinator.allreduce8_us_p10");
    af_figs_real(f, 0, r->allreduce8_p50.v, "latency.coordinator.allreduce8_us_p50");
    af_figs_real(f, 0, r->allreduce8_p90.v, "latency.coordinator.allreduce8_us_p90");
    af_figs_real(f, 0, r->timer_floor_p50.v, "latency.coordinator.timer_floor_us_p50");
    af_figs_real(f, 0, s->coord_p50_over_allreduce, "latency.coordinator.p50_over_allreduce8");
    af_figs_real(f, 0, s->coord_mean_over_allreduce, "latency.coordinator.mean_over_allreduce8");

    const unsigned D = AF_FIG_DETAIL;
    for (int w = 0; w < s->nworst; ++w) {
        const af_worst_step_t *ws = &s->worst[w];
        af_figs_int(f, D | ID, ws->step, "worst_steps.#%d.step", w);
        af_figs_int(f, D | ID, ws->state_step, "worst_steps.#%d.state_step", w);
        af_figs_real(f, D, ws->step_us, "worst_steps.#%d.step_us", w);
        af_figs_int(f, D | ID, ws->rank, "worst_steps.#%d.rank", w);
        if (ws->phase >= 0) {
            af_figs_str(f, D, af_phase_names[ws->phase], "worst_steps.#%d.top_phase", w);
        } else {
            af_figs_null(f, D, "worst_steps.#%d.top_phase", w);
        }
        af_figs_real(f, D, ws->phase_us, "worst_steps.#%d.top_phase_us", w);
        af_figs_real(f, D, ws->blackout_frac, "worst_steps.#%d.blackout_frac", w);
        for (int c = 0; c < AF_NCOLUMNS; ++c) {
            if (c == AF_COL_step || c == AF_COL_state_step || r->icol[c] == NULL) {
                continue;
            }
            af_figs_int(f, D, ws->counters[c], "worst_steps.#%d.counters.%s", w,
                        af_step_column_names[c]);
        }
        for (int k = 0; k < AF_NEVENT_KINDS; ++k) {
            af_figs_int(f, D, ws->events[k], "worst_steps.#%d.events.%s", w,
                        af_event_kind_names[k]);
        }
    }
    for (int i = 0; i < r->nmissing; ++i) {
        af_figs_str(f, D | ID, r->missing[i], "missing.#%d", i);
    }
    if (r->nmissing == 0) {
        af_figs_empty_array(f, D | ID, "missing");
    }
    return f->oom ? AF_ERR_NOMEM : AF_OK;
}

af_result_t af_summary_goodput_timeline(const af_summary_t *s, af_replay_timeline_t *tl)
{
    if (!s->have_goodput) {
        af_error_set("%s", s->goodput_why);
        return AF_ERR_USAGE;
    }
    af_result_t rc = goodput_timeline(s, s->goodput_window_s, tl);
    if (rc != AF_OK) {
        af_error_set("out of memory");
    }
    return rc;
}

af_result_t af_summary_goodput_csv(const af_summary_t *s, FILE *out)
{
    const af_run_t *run = s->run;
    const int64_t n = run->nrows;
    const double *hours = run->col[AF_COL_sim_hours];
    const int64_t *step = run->icol[AF_COL_step];
    if (n == 0 || hours == NULL || step == NULL) {
        af_error_set("the log has no steps with sim_hours");
        return AF_ERR_USAGE;
    }
    af_replay_timeline_t whole;
    af_result_t rc = goodput_timeline(s, NAN, &whole);
    if (rc != AF_OK) {
        af_error_set("out of memory");
        return rc;
    }
    fprintf(out, "step,sim_hours,remap,shrink_rebuild,checkpoint_restart\n");
    /* Each policy replayed on the window cut at the step (the replay meets only what comes
     * before the window's end), at the whole run's intervals: the last row is the report's. */
    for (int64_t i = 0; i < n && rc == AF_OK; ++i) {
        double e[AF_REPLAY_NPOLICY] = {NAN, NAN, NAN};
        af_replay_timeline_t tl = whole;
        tl.window_s = hours[i] * 3600.0;
        if (s->have_goodput && tl.window_s > 0 && isfinite(tl.window_s)) {
            for (int k = 0; k < AF_REPLAY_NPOLICY && rc == AF_OK; ++k) {
                const af_goodput_policy_t *g = &s->goodput.pol[k];
                af_replay_result_t r;
                rc = af_goodput_at(&tl, &s->goodput_params, (af_replay_policy_t)k, g->interval_s,
                                   k == AF_REPLAY_REMAP ? g->replica_interval_s : INFINITY, &r);
                e[k] = r.ettr;
            }
        }
        fprintf(out, "%lld,%.17g,%.17g,%.17g,%.17g\n", (long long)step[i], hours[i],
                e[AF_REPLAY_REMAP], e[AF_REPLAY_SHRINK_REBUILD], e[AF_REPLAY_CHECKPOINT_RESTART]);
    }
    free((void *)whole.intr);
    free((void *)whole.pace);
    if (rc != AF_OK) {
        return rc;
    }
    return ferror(out) ? AF_ERR_IO : AF_OK;
}
