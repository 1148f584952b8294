/* agefence bench jitter: what the pacing knob buys. The same scenario (the default unless
 * -c/--set) runs with pacing off, with pacing.mode=ewma at a sweep of gamma values and with
 * pacing.mode=quantile at a sweep of quantiles, the settings interleaved within each round so
 * that the machine's drift falls on all of them. For each setting it keeps rank 0's step
 * periods (start to start, /ranks/step_us) and the pacing waits (/ranks/sink_us) of every run
 * past a warm-up, and derives against pacing off: the reduction of the period's standard
 * deviation and the cost in mean period.
 *
 * Beside each measured setting it prints an offline bound computed from the same bench's own
 * unpaced samples (pacing off: work = period): every step padded to one fixed deadline D, so
 * period' = max(work, D). For a quantile setting D is that quantile of the unpaced periods (what
 * a perfect, clairvoyant quantile pacer on an undisturbed machine would give); for an EWMA
 * setting D is the fixed deadline of the same mean cost as measured (what a fixed deadline buys
 * for that price). It also states which fixed deadline reaches an 85% and a 95% reduction of
 * the sd, at what mean cost. Environment spikes (throttle.spike_rate, spike_us) are on by
 * default here so there is jitter to pace; --set overrides them like any other key. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_common.h"

typedef struct setting {
    const char *mode; /* pacing.mode */
    double param;     /* gamma (ewma) or quantile (quantile) */
} setting_t;

/* Pacing off first: the reference of every ratio and the source of the offline bounds. */
static const setting_t SETTINGS[] = {
    {"off", 0},  {"ewma", 0},       {"ewma", 0.5},     {"ewma", 1},        {"ewma", 2},
    {"ewma", 4}, {"quantile", 0.5}, {"quantile", 0.9}, {"quantile", 0.99}, {"quantile", 0.999},
};
#define NSET ((int)(sizeof SETTINGS / sizeof SETTINGS[0]))

static int is_off(int i)
{
    return strcmp(SETTINGS[i].mode, "off") == 0;
}

static int is_quantile(int i)
{
    return strcmp(SETTINGS[i].mode, "quantile") == 0;
}

/* The series' tag ("off", "g<gamma>", "q<quantile>", as agefence-report reads them) and the
 * label of the printed lines ("gamma=1", "q=0.99"). */
static void setting_name(int i, char *tag, size_t ntag, char *label, size_t nlabel)
{
    if (is_off(i)) {
        snprintf(tag, ntag, "off");
        snprintf(label, nlabel, "off");
    } else if (is_quantile(i)) {
        snprintf(tag, ntag, "q%g", SETTINGS[i].param);
        snprintf(label, nlabel, "q=%g", SETTINGS[i].param);
    } else {
        snprintf(tag, ntag, "g%g", SETTINGS[i].param);
        snprintf(label, nlabel, "gamma=%g", SETTINGS[i].param);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a;
    double y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The unpaced periods padded to a fixed deadline: mean and sd of max(work, deadline). */
static void padded(const double *work, int n, double deadline, double *mean, double *sd)
{
    double s = 0;
    for (int k = 0; k < n; ++k) {
        s += work[k] > deadline ? work[k] : deadline;
    }
    double m = s / n;
    double ss = 0;
    for (int k = 0; k < n; ++k) {
        double d = (work[k] > deadline ? work[k] : deadline) - m;
        ss += d * d;
    }
    *mean = m;
    *sd = n > 1 ? sqrt(ss / (n - 1)) : 0.0;
}

/* The offline bound of one fixed deadline against the unpaced samples `off` (sorted). */
typedef struct bound {
    double deadline; /* us */
    double at;       /* the share of unpaced periods below the deadline */
    double sd_reduction;
    double mean_cost;
} bound_t;

static bound_t bound_at(const double *off, int n, double deadline, af_stats_t st)
{
    bound_t b = {deadline, 0, 0, 0};
    int below = 0;
    while (below < n && off[below] < deadline) {
        below++;
    }
    b.at = (double)below / n;
    double mean = 0;
    double sd = 0;
    padded(off, n, deadline, &mean, &sd);
    b.sd_reduction = st.sd > 0 ? 1.0 - sd / st.sd : 0.0;
    b.mean_cost = st.mean > 0 ? mean / st.mean - 1.0 : 0.0;
    return b;
}

/* The deadline at quantile q of the sorted unpaced samples: the ceil(q n)-th smallest. */
static bound_t bound_quantile(const double *off, int n, double q, af_stats_t st)
{
    int k = (int)ceil(q * n) - 1;
    k = k < 0 ? 0 : k >= n ? n - 1 : k;
    return bound_at(off, n, off[k], st);
}

/* The fixed deadline whose padded mean is `mean` (the padded mean rises with the deadline). */
static bound_t bound_of_mean(const double *off, int n, double mean, af_stats_t st)
{
    double lo = off[0];
    double hi = mean > off[n - 1] ? mean : off[n - 1];
    for (int it = 0; it < 100; ++it) {
        double mid = 0.5 * (lo + hi);
        double m = 0;
        double sd = 0;
        padded(off, n, mid, &m, &sd);
        if (m < mean) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return bound_at(off, n, 0.5 * (lo + hi), st);
}

/* The smallest of the unpaced samples that, as a fixed deadline, cuts the sd by `reduction`
 * (the padded sd falls as the deadline rises past the bulk), or -1 when none does. */
static int bound_reaching(const double *off, int n, double reduction, af_stats_t st)
{
    for (int k = 0; k < n; ++k) {
        if (k > 0 && off[k] == off[k - 1]) {
            continue;
        }
        if (bound_at(off, n, off[k], st).sd_reduction >= reduction) {
            return k;
        }
    }
    return -1;
}

/* Rank 0's column of a /ranks phase, rows [skip, n), appended to v (capacity checked). */
static af_result_t rank0_column(const char *log, const char *phase, int64_t skip, double *v,
                                int *nv, int cap)
{
    double *col = NULL;
    int64_t n = 0;
    AF_CHECK(af_bench_phase_rank(log, phase, 0, &col, &n));
    for (int64_t s = skip; s < n && *nv < cap; ++s) {
        v[(*nv)++] = col[s];
    }
    free(col);
    return AF_OK;
}

static af_result_t bench_jitter(af_bench_ctx_t *b)
{
    const int steps = b->quick ? 300 : 1000; /* the default scenario has an event at 300 */
    const int skip = b->quick ? 30 : 100;    /* pacing warm-up (20 steps) and EWMA settling */
    const int rounds = b->quick ? 1 : (b->samples + NSET - 1) / NSET;
    const int cap = rounds * steps;
    double *period[NSET] = {NULL};
    double *sink[NSET] = {NULL};
    double *sorted_off = NULL;
    int np[NSET] = {0};
    int ns[NSET] = {0};
    af_result_t rc = AF_OK;
    for (int i = 0; i < NSET; ++i) {
        period[i] = malloc(sizeof(double) * (size_t)cap);
        sink[i] = malloc(sizeof(double) * (size_t)cap);
        rc = period[i] && sink[i] ? rc : AF_ERR_NOMEM;
    }
    /* Before the runs (collective): a rank that could not allocate stops every rank. */
    AF_CHECK_GOTO(af_bench_agree(b, rc), rc, out);
    char log[600];
    af_bench_log_path(b, "jitter", log, sizeof log);
    for (int round = 0; round < rounds && !b->invalid; ++round) {
        for (int i = 0; i < NSET && !b->invalid; ++i) {
            char steps_set[64];
            char mode[64];
            char param[64];
            snprintf(steps_set, sizeof steps_set, "scenario.steps=%d", steps);
            snprintf(mode, sizeof mode, "pacing.mode=%s", SETTINGS[i].mode);
            if (is_quantile(i)) {
                snprintf(param, sizeof param, "pacing.quantile=%g", SETTINGS[i].param);
            } else {
                snprintf(param, sizeof param, "pacing.gamma=%g", SETTINGS[i].param);
            }
            const char *extra[] = {steps_set, "throttle.spike_rate=0.02", "throttle.spike_us=400",
                                   mode, param};
            char where[96];
            snprintf(where, sizeof where, "jitter: pacing %s %g, round %d/%d", SETTINGS[i].mode,
                     SETTINGS[i].param, round + 1, rounds);
            af_bench_progress(b, where, round * NSET + i, rounds * NSET);
            AF_CHECK_GOTO(af_bench_run_scenario(b, extra, 5, log, NULL, NULL, NULL), rc, out);
            if (b->world.rank == 0 && !b->invalid) {
                rc = rank0_column(log, "step_us", skip, period[i], &np[i], cap);
                if (rc == AF_OK) {
                    rc = rank0_column(log, "sink_us", skip, sink[i], &ns[i], cap);
                }
            }
            /* Rank 0 alone read the log: every rank goes on with it, or none does. */
            AF_CHECK_GOTO(af_bench_agree(b, rc), rc, out);
        }
    }
    af_bench_progress(b, "jitter runs", rounds * NSET, rounds * NSET);
    if (b->world.rank != 0 || b->invalid) {
        goto out;
    }
    if (np[0] == 0) {
        af_bench_fail(b, "pacing off logged no step past the warm-up");
        goto out;
    }
    af_stats_t off = af_stats_of(period[0], np[0]);
    const int n_off = np[0];
    sorted_off = malloc(sizeof(double) * (size_t)n_off);
    AF_REQUIRE_GOTO(sorted_off, AF_ERR_NOMEM, rc, out);
    memcpy(sorted_off, period[0], sizeof(double) * (size_t)n_off);
    qsort(sorted_off, (size_t)n_off, sizeof sorted_off[0], cmp_double);
    int best = -1;
    double best_cost = 0;
    for (int i = 0; i < NSET; ++i) {
        char name[64];
        char tag[32];
        char label[32];
        setting_name(i, tag, sizeof tag, label, sizeof label);
        snprintf(name, sizeof name, "period_us.%s", tag);
        AF_CHECK_GOTO(af_bench_add(b, name, "us", period[i], np[i]), rc, out);
        snprintf(name, sizeof name, "sink_us.%s", tag);
        AF_CHECK_GOTO(af_bench_add(b, name, "us", sink[i], ns[i]), rc, out);
        if (np[i] == 0) {
            af_bench_fail(b, "setting %s logged no step past the warm-up", label);
            goto out;
        }
        af_stats_t st = af_stats_of(period[i], np[i]);
        if (is_off(i)) {
            continue;
        }
        double red = off.sd > 0 ? 1.0 - st.sd / off.sd : 0.0;
        double cost = off.mean > 0 ? st.mean / off.mean - 1.0 : 0.0;
        bound_t bd = is_quantile(i) ? bound_quantile(sorted_off, n_off, SETTINGS[i].param, off)
                                    : bound_of_mean(sorted_off, n_off, st.mean, off);
        char rname[96];
        snprintf(rname, sizeof rname, "%s: period sd reduction vs off", label);
        af_bench_ratio(b, rname, red, 1, 0.85, 1);
        snprintf(rname, sizeof rname, "%s: mean period cost vs off", label);
        af_bench_ratio(b, rname, cost, 0, 0, 0);
        snprintf(rname, sizeof rname, "%s: p99 period / off p99", label);
        af_bench_ratio(b, rname, off.p99 > 0 ? st.p99 / off.p99 : 0, 0, 0, 0);
        snprintf(rname, sizeof rname, "%s: offline bound sd reduction", label);
        af_bench_ratio(b, rname, bd.sd_reduction, 0, 0, 0);
        snprintf(rname, sizeof rname, "%s: offline bound mean cost", label);
        af_bench_ratio(b, rname, bd.mean_cost, 0, 0, 0);
        /* The share of measured steps that waited: a quantile pacer waits nothing before it
         * has counted 1/(1 - q) steps, so q = 0.999 does not pace inside a 1,000-step run. */
        int waited = 0;
        for (int k = 0; k < ns[i]; ++k) {
            waited += sink[i][k] > 0;
        }
        af_bench_note(b,
                      "%-9s mean %.1f us (%+.1f%%), p50 %.1f, p99 %.1f, sd %.1f (%.1f%% less), "
                      "waits %.0f%%; bound %s %.0f us: sd %.1f%% less, mean %+.1f%%",
                      label, st.mean, 100 * cost, st.p50, st.p99, st.sd, 100 * red,
                      ns[i] > 0 ? 100.0 * waited / ns[i] : 0.0,
                      is_quantile(i) ? "at" : "same mean,", bd.deadline, 100 * bd.sd_reduction,
                      100 * bd.mean_cost);
        if (red >= 0.85 && (best < 0 || cost < best_cost)) {
            best = i;
            best_cost = cost;
        }
    }
    af_bench_note(b, "off       mean %.1f us, p50 %.1f, p99 %.1f, sd %.1f us", off.mean, off.p50,
                  off.p99, off.sd);
    if (best >= 0) {
        char tag[32];
        char label[32];
        setting_name(best, tag, sizeof tag, label, sizeof label);
        af_bench_note(b, "an 85%% sd reduction is reached; cheapest at %s (%+.1f%% mean)", label,
                      100 * best_cost);
    } else {
        af_bench_note(b, "no setting reaches an 85%% reduction of the period's sd");
    }
    /* Where the 85-95% target lies for a fixed deadline on these unpaced samples. */
    char reach[2][96];
    const double want[2] = {0.85, 0.95};
    for (int w = 0; w < 2; ++w) {
        int k = bound_reaching(sorted_off, n_off, want[w], off);
        if (k < 0) {
            snprintf(reach[w], sizeof reach[w], "%.0f%%: none", 100 * want[w]);
        } else {
            bound_t bd = bound_at(sorted_off, n_off, sorted_off[k], off);
            snprintf(reach[w], sizeof reach[w], "%.0f%% at q=%.4f (%.0f us), mean %+.1f%%",
                     100 * want[w], bd.at, bd.deadline, 100 * bd.mean_cost);
        }
    }
    af_bench_note(b, "offline, a fixed deadline on the unpaced periods: sd -%s; -%s", reach[0],
                  reach[1]);
    af_bench_note(b,
                  "%d interleaved rounds x %d settings, %d steps each (first %d skipped); "
                  "spikes 2%%/device/step, median 400 us unless --set; last run log %s",
                  rounds, NSET, steps, skip, log);
out:
    for (int i = 0; i < NSET; ++i) {
        free(period[i]);
        free(sink[i]);
    }
    free(sorted_off);
    return rc;
}

const af_bench_def_t af_bench_jitter = {
    "jitter",
    "pacing off vs EWMA pacing at a sweep of gamma and quantile pacing at a sweep of quantiles: "
    "step-period spread against its cost, beside the offline bound of a fixed deadline",
    bench_jitter};
