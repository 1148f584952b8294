/* agefence bench sdc: the detectors of recovery.detect side by side on one failure history. The
 * default fleet (wear-out to the blackout, the default corruption mix) with silent units added
 * runs once per detector in each sample, the detectors interleaved, through the real driver.
 * From each run's own log: the harmful corruptions injected and committed (the simulator's
 * truth, which no detector reads), the step time, the abft false alarms, and, per silent unit,
 * the steps from its first corrupted result to its quarantine. Beside them, in each sample, one
 * run each of finite, abft and dmr with every corruption non-finite gives the detectors' step
 * overhead over whole runs (whole_runs). Each run checks itself: no NaN/Inf committed, and an
 * exit status that says what the run committed (0 or 4 with nothing undetected, 3 with a
 * committed corruption). A detector's containment is a share of the harmful corruptions
 * injected: with none injected it is "not measured", and the bench's result is invalid. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/logfile.h"
#include "bench.h"
#include "bench_common.h"

static const char *const DETECTORS[] = {"finite", "abft", "sampled", "dmr", "abft+sampled"};
enum { ND = sizeof DETECTORS / sizeof DETECTORS[0], MAX_SAMPLES = 64 };

/* What one detector's runs add up to (rank 0). */
typedef struct sdc_acc {
    int64_t injected, harmful, detected, committed, harmful_committed, false_alarms;
    double step_p50[MAX_SAMPLES]; /* each run's median step time (slowest rank) over the steps
                                     every detector's run of its sample executed, us */
    double overhead[MAX_SAMPLES]; /* that median over finite's, minus 1 */
    int runs;
    double *latency; /* steps from a silent unit's first corruption to its quarantine */
    int n_latency, cap_latency;
    int64_t silent_corrupting, silent_quarantined;
    int erased_runs; /* runs that committed corruptions and still ended equal to the reference */
} sdc_acc_t;

static af_result_t add_latency(sdc_acc_t *a, double v)
{
    if (a->n_latency == a->cap_latency) {
        int cap = a->cap_latency > 0 ? 2 * a->cap_latency : 64;
        double *p = realloc(a->latency, sizeof(double) * (size_t)cap);
        if (p == NULL) {
            return AF_ERR_NOMEM;
        }
        a->latency = p;
        a->cap_latency = cap;
    }
    a->latency[a->n_latency++] = v;
    return AF_OK;
}

/* Reads one run's figures into a (rank 0) and checks that its exit status says what it
 * committed. */
static af_result_t read_run(af_bench_ctx_t *b, const char *log, int code, sdc_acc_t *a)
{
    af_logfile_t lf;
    char err[600];
    if (af_logfile_open(&lf, log, err, sizeof err) != AF_OK) {
        af_error_set("%s", err);
        return AF_ERR_IO;
    }
    int64_t v[7] = {0, 0, 0, 0, 0, 0, 0};
    static const char *const names[7] = {"corrupt_injected_total", "corrupt_harmful_total",
                                         "corrupt_detected_total", "sdc_undetected_total",
                                         "sdc_harmful_total",      "abft_false_alarms_total",
                                         "nonfinite_leaked_total"};
    af_result_t rc = AF_OK;
    for (int i = 0; i < 7 && rc == AF_OK; ++i) {
        rc = af_logfile_attr_i64(&lf, "/final", names[i], &v[i]);
    }
    char reason[64] = "";
    if (rc == AF_OK) {
        rc = af_logfile_attr_str(&lf, "/final", "exit_reason", reason, sizeof reason);
    }
    int64_t equal = 0;
    if (rc == AF_OK) {
        rc = af_logfile_attr_i64(&lf, "/final", "bitwise_equal", &equal);
    }
    int rank = 0;
    int64_t dims[2] = {0, 0};
    if (rc == AF_OK) {
        rc = af_logfile_shape(&lf, "/units/silent", &rank, dims);
    }
    int64_t units = dims[0];
    int64_t *col = malloc(sizeof(int64_t) * 3 * (size_t)(units > 0 ? units : 1));
    if (rc == AF_OK && col == NULL) {
        rc = AF_ERR_NOMEM;
    }
    if (rc == AF_OK) {
        rc = af_logfile_read_i64(&lf, "/units/silent", col, (size_t)units);
    }
    if (rc == AF_OK) {
        rc = af_logfile_read_i64(&lf, "/units/first_corrupt_step", col + units, (size_t)units);
    }
    if (rc == AF_OK) {
        rc = af_logfile_read_i64(&lf, "/units/quarantined_step", col + 2 * units, (size_t)units);
    }
    af_logfile_close(&lf);
    if (rc != AF_OK) {
        free(col);
        af_error_set("%s: cannot read the /final totals or the /units columns of bench sdc", log);
        return rc;
    }
    a->injected += v[0];
    a->harmful += v[1];
    a->detected += v[2];
    a->committed += v[3];
    a->harmful_committed += v[4];
    a->false_alarms += v[5];
    for (int64_t u = 0; u < units && rc == AF_OK; ++u) {
        if (col[u] != 1 || col[units + u] < 0) {
            continue; /* not silent, or it never corrupted a result */
        }
        a->silent_corrupting++;
        if (col[2 * units + u] >= 0) {
            a->silent_quarantined++;
            rc = add_latency(a, (double)(col[2 * units + u] - col[units + u]));
        }
    }
    free(col);
    AF_CHECK(rc);
    /* The run's self-check: nothing non-finite committed, and an exit status that says what
     * was committed. A committed corruption ends in a mismatch (exit 3) unless the workload
     * erased it: the attention update clamps to [-1, 1] and has super-attracting fixed points
     * at -1 and 1, so a small change there rounds away within a few steps (or at once, in a
     * clamped value) and the final state can equal the reference bit for bit (exit 0, or 4
     * when the capacity ran out). The verdict compares that state, so it is the truth; the
     * count of committed corruptions stays what the detectors let through. A mismatch with
     * nothing committed is an accounting gap. */
    if (v[6] != 0) {
        af_bench_fail(b, "%s: %lld NaN/Inf committed", log, (long long)v[6]);
    } else if (v[3] > 0 && equal != 1 &&
               (code != AF_EXIT_MISMATCH || strcmp(reason, "mismatch") != 0)) {
        af_bench_fail(b,
                      "%s: %lld corruptions committed and a final state unlike the "
                      "reference's, but exit %d (%s)",
                      log, (long long)v[3], code, reason);
    } else if (v[3] > 0 && equal == 1 && code != AF_EXIT_OK && code != AF_EXIT_CAPACITY) {
        af_bench_fail(b,
                      "%s: %lld corruptions committed and erased (the final state equals "
                      "the reference's), but exit %d (%s)",
                      log, (long long)v[3], code, reason);
    } else if (v[3] == 0 && code != AF_EXIT_OK && code != AF_EXIT_CAPACITY) {
        af_bench_fail(b, "%s: nothing committed undetected, but exit %d (%s)", log, code, reason);
    }
    if (v[3] > 0 && equal == 1) {
        a->erased_runs++;
    }
    return AF_OK;
}

static double median_of(const double *v, int n)
{
    return n > 0 ? af_stats_of(v, n).p50 : 0.0;
}

/* The detectors compared over whole runs: one run each of finite, abft and dmr on the bench's
 * fleet with every corruption non-finite (finite contains them all, so no run stops early),
 * in an order that rotates between samples. over[0] gets abft's median step time over
 * finite's, minus 1, and over[1] dmr's, over the steps all three executed (rank 0).
 * The same holds for the attention workload: a non-finite softmax weight or output ends
 * non-finite (af_attn_update leaves NaN and Inf alone). */
enum { NW = 3 };
static af_result_t whole_runs(af_bench_ctx_t *b, int sample, double over[2])
{
    static const char *const name[NW] = {"finite", "abft", "dmr"};
    double p50[NW] = {0, 0, 0};
    double *st[NW] = {NULL, NULL, NULL};
    int64_t rows[NW] = {0, 0, 0};
    af_result_t rc = AF_OK;
    for (int j = 0; j < NW && rc == AF_OK; ++j) {
        const int i = (j + sample) % NW; /* no detector always runs first */
        char log[600];
        char what[48];
        char detect[48];
        snprintf(what, sizeof what, "sdc.whole.%s", name[i]);
        snprintf(detect, sizeof detect, "recovery.detect=%s", name[i]);
        af_bench_log_path(b, what, log, sizeof log);
        const char *extra[] = {detect,
                               "corruption.silent_fraction=0.03",
                               "corruption.nonfinite=1",
                               "corruption.single_bit=0",
                               "corruption.multi_mantissa=0",
                               "corruption.multi_exponent=0",
                               b->quick ? "scenario.steps=200" : "scenario.steps=1850"};
        int code = AF_EXIT_OK;
        rc = af_bench_run_scenario_code(b, extra, 7, log, NULL, NULL, NULL, &code);
        if (rc == AF_OK && code != AF_EXIT_OK && code != AF_EXIT_CAPACITY) {
            af_bench_fail(b, "%s: exit %d with every corruption non-finite", log, code);
        }
        if (rc == AF_OK && b->world.rank == 0) {
            rc = af_bench_phase_max(log, "step_us", &st[i], &rows[i]);
        }
        rc = af_bench_agree(b, rc); /* rank 0 alone read the log */
    }
    if (rc == AF_OK && b->world.rank == 0) {
        int64_t n = rows[0];
        for (int i = 1; i < NW; ++i) {
            n = rows[i] < n ? rows[i] : n;
        }
        for (int i = 0; i < NW; ++i) {
            p50[i] = median_of(st[i], (int)n);
        }
        over[0] = p50[0] > 0 ? p50[1] / p50[0] - 1.0 : 0.0;
        over[1] = p50[0] > 0 ? p50[2] / p50[0] - 1.0 : 0.0;
    }
    for (int i = 0; i < NW; ++i) {
        free(st[i]);
    }
    return rc;
}

static af_result_t bench_sdc(af_bench_ctx_t *b)
{
    /* The scenario's workload (the runs load it again, the same way). */
    static af_config_t cfg;
    char err[512];
    af_result_t lrc =
        af_config_load(&cfg, b->run.config_file, b->run.sets, b->run.nsets, err, sizeof err);
    if (lrc != AF_OK && b->world.rank == 0) {
        fprintf(stderr, "agefence: %s\n", err);
    }
    /* Each rank loads the file itself: one that cannot (a file on one node only) stops all. */
    AF_CHECK(af_bench_agree(b, lrc != AF_OK ? AF_ERR_USAGE : AF_OK));
    sdc_acc_t acc[ND];
    memset(acc, 0, sizeof acc);
    const int samples = b->samples < MAX_SAMPLES ? b->samples : MAX_SAMPLES;
    af_result_t rc = AF_OK;
    int64_t common_min = INT64_MAX;
    double whole[MAX_SAMPLES];
    double whole_dmr[MAX_SAMPLES];
    int n_whole = 0;
    for (int s = 0; s < samples && rc == AF_OK && !b->invalid; ++s) {
        /* Interleaved: one run of each detector per sample, so a noisy stretch of the
         * machine falls on all of them. A run that commits a harmful corruption may stop
         * early (its state turns non-finite): the step times are compared over the steps
         * every run of the sample executed, the same stretch of the same history. */
        double *st[ND] = {NULL};
        int64_t rows[ND] = {0};
        for (int d = 0; d < ND && rc == AF_OK && !b->invalid; ++d) {
            char where[96];
            snprintf(where, sizeof where, "sdc: %s, sample %d/%d", DETECTORS[d], s + 1, samples);
            af_bench_progress(b, where, s * (ND + 1) + d, samples * (ND + 1));
            char log[600];
            char what[48];
            char detect[48];
            snprintf(what, sizeof what, "sdc.%s", DETECTORS[d]);
            af_bench_log_path(b, what, log, sizeof log);
            snprintf(detect, sizeof detect, "recovery.detect=%s", DETECTORS[d]);
            const char *extra[] = {detect, "corruption.silent_fraction=0.03",
                                   b->quick ? "scenario.steps=200" : "scenario.steps=1850"};
            int code = AF_EXIT_OK;
            rc = af_bench_run_scenario_code(b, extra, 3, log, NULL, NULL, NULL, &code);
            if (rc == AF_OK && b->world.rank == 0) {
                rc = read_run(b, log, code, &acc[d]);
                if (rc == AF_OK) {
                    rc = af_bench_phase_max(log, "step_us", &st[d], &rows[d]);
                }
            }
            /* Rank 0 alone read the log and judged the run: every rank leaves the loop with
             * it, or none does. */
            rc = af_bench_agree(b, rc);
        }
        if (rc == AF_OK && b->world.rank == 0 && !b->invalid) {
            int64_t n = INT64_MAX;
            for (int d = 0; d < ND; ++d) {
                n = rows[d] < n ? rows[d] : n;
            }
            common_min = n < common_min ? n : common_min;
            double base = median_of(st[0], (int)n);
            for (int d = 0; d < ND; ++d) {
                double p = median_of(st[d], (int)n);
                acc[d].step_p50[acc[d].runs] = p;
                acc[d].overhead[acc[d].runs++] = base > 0 ? p / base - 1.0 : 0.0;
            }
        }
        for (int d = 0; d < ND; ++d) {
            free(st[d]);
        }
        /* The checks' cost over a whole run: the same fleet with every corruption non-finite,
         * which finite contains too, so every run executes every step of the history. */
        if (rc == AF_OK && !b->invalid) {
            double over[2] = {0, 0};
            char where[96];
            snprintf(where, sizeof where, "sdc: whole runs, sample %d/%d", s + 1, samples);
            af_bench_progress(b, where, s * (ND + 1) + ND, samples * (ND + 1));
            rc = whole_runs(b, s, over);
            whole[n_whole] = over[0];
            whole_dmr[n_whole] = over[1];
            n_whole += rc == AF_OK && b->world.rank == 0;
        }
    }
    if (rc == AF_OK && !b->invalid) {
        af_bench_progress(b, "sdc", samples * (ND + 1), samples * (ND + 1));
    }
    if (rc == AF_OK && b->world.rank == 0 && !b->invalid && n_whole > 0) {
        rc = af_bench_add(b, "abft_overhead.whole_runs", "ratio", whole, n_whole);
        if (rc == AF_OK) {
            rc = af_bench_add(b, "dmr_overhead.whole_runs", "ratio", whole_dmr, n_whole);
        }
        af_bench_ratio(b, "abft: step overhead vs finite, whole runs, every corruption non-finite",
                       median_of(whole, n_whole), 0, 0, 0);
        af_bench_ratio(b, "dmr: step overhead vs finite, whole runs, every corruption non-finite",
                       median_of(whole_dmr, n_whole), 0, 0, 0);
    }
    if (rc == AF_OK && b->world.rank == 0 && !b->invalid) {
        af_bench_note(b,
                      "step times compared over the first %lld steps of each sample (those every "
                      "detector's run executed); workload %s, %lld doubles a block",
                      (long long)common_min, af_config_wl(&cfg)->name,
                      (long long)af_config_cells(&cfg));
        for (int d = 0; d < ND && rc == AF_OK; ++d) {
            const sdc_acc_t *a = &acc[d];
            char name[96];
            snprintf(name, sizeof name, "step_us_p50.%s", DETECTORS[d]);
            rc = af_bench_add(b, name, "us", a->step_p50, a->runs);
            if (rc == AF_OK && a->n_latency > 0) {
                snprintf(name, sizeof name, "quarantine_steps.%s", DETECTORS[d]);
                rc = af_bench_add(b, name, "steps", a->latency, a->n_latency);
            }
            int is_abft = strcmp(DETECTORS[d], "abft") == 0;
            if (a->harmful > 0) {
                double contained = 1.0 - (double)a->harmful_committed / (double)a->harmful;
                snprintf(name, sizeof name, "%s: harmful contained", DETECTORS[d]);
                af_bench_ratio(b, name, contained, is_abft, 0.99, 1);
            } else {
                /* Nothing harmful injected: no containment to report, and no verdict on it
                 * (a 1.0 here once read as MET). The bench's subject is missing: invalid. */
                af_bench_note(b,
                              "%s: harmful contained: not measured (no harmful corruption "
                              "injected; %d runs)",
                              DETECTORS[d], a->runs);
                af_bench_fail(b,
                              "harmful contained not measured: no harmful corruption was "
                              "injected (%s; %d runs)",
                              DETECTORS[d], a->runs);
            }
            snprintf(name, sizeof name, "%s: harmful committed per run", DETECTORS[d]);
            af_bench_ratio(b, name, (double)a->harmful_committed / (double)a->runs, 0, 0, 0);
            snprintf(name, sizeof name, "%s: benign committed per run", DETECTORS[d]);
            af_bench_ratio(b, name, (double)(a->committed - a->harmful_committed) / (double)a->runs,
                           0, 0, 0);
            snprintf(name, sizeof name, "%s: step overhead vs finite", DETECTORS[d]);
            af_bench_ratio(b, name, median_of(a->overhead, a->runs), is_abft, 0.05, 0);
            snprintf(name, sizeof name, "%s: silent units quarantined", DETECTORS[d]);
            af_bench_ratio(b, name,
                           a->silent_corrupting > 0
                               ? (double)a->silent_quarantined / (double)a->silent_corrupting
                               : 0.0,
                           0, 0, 0);
            if (a->n_latency > 0) {
                snprintf(name, sizeof name, "%s: steps from first corruption to quarantine p50",
                         DETECTORS[d]);
                af_bench_ratio(b, name, median_of(a->latency, a->n_latency), 0, 0, 0);
            }
            if (strstr(DETECTORS[d], "abft") != NULL) {
                snprintf(name, sizeof name, "%s: abft false alarms per run", DETECTORS[d]);
                af_bench_ratio(b, name, (double)a->false_alarms / (double)a->runs, 0, 0, 0);
            }
            af_bench_note(b,
                          "%s: %d runs, %lld corruptions injected (%lld harmful), %lld "
                          "detected, %lld committed (%lld harmful); %lld of %lld corrupting "
                          "silent units quarantined",
                          DETECTORS[d], a->runs, (long long)a->injected, (long long)a->harmful,
                          (long long)a->detected, (long long)a->committed,
                          (long long)a->harmful_committed, (long long)a->silent_quarantined,
                          (long long)a->silent_corrupting);
            if (a->erased_runs > 0) {
                af_bench_note(b,
                              "%s: %d of %d runs committed corruptions the workload then erased "
                              "(a final state equal to the reference's)",
                              DETECTORS[d], a->erased_runs, a->runs);
            }
        }
    }
    for (int d = 0; d < ND; ++d) {
        free(acc[d].latency);
    }
    return rc;
}

const af_bench_def_t af_bench_sdc = {
    "sdc",
    "the detectors (finite, abft, sampled, dmr, abft+sampled) on the default fleet with silent "
    "units: harmful corruptions contained, step overhead, time to quarantine",
    bench_sdc};
