/* agefence-report DIR: the ensemble of a directory of logs (see ensemble.h). */
#include "ensemble.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"
#include "rundata.h"
#include "stats.h"
#include "summary.h"

enum { CONFIG_MAX = 65536 };

double af_student_t975(int df)
{
    static const double t[31] = {NAN,   12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365,
                                 2.306, 2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
                                 2.120, 2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069,
                                 2.064, 2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
    if (df < 1) {
        return NAN;
    }
    if (df <= 30) {
        return t[df];
    }
    /* Cornish-Fisher in 1/df about the normal quantile z = 1.959964 */
    const double z = 1.959964;
    double d = (double)df;
    return z + (z * z * z + z) / (4.0 * d) +
           (5 * pow(z, 5) + 16 * pow(z, 3) + 3 * z) / (96.0 * d * d);
}

/* ---- reading the members ------------------------------------------------------------------ */

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The *.h5 names of dir, sorted. */
static af_result_t list_logs(const char *dir, char ***names, int *n)
{
    *names = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (d == NULL) {
        af_error_set("%s: not a readable directory", dir);
        return AF_ERR_USAGE;
    }
    int cap = 0;
    struct dirent *de;
    af_result_t rc = AF_OK;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len < 4 || strcmp(de->d_name + len - 3, ".h5") != 0 || de->d_name[0] == '#') {
            continue;
        }
        if (*n == cap) {
            cap = cap > 0 ? 2 * cap : 64;
            char **grown = realloc(*names, sizeof *grown * (size_t)cap);
            if (grown == NULL) {
                rc = AF_ERR_NOMEM;
                break;
            }
            *names = grown;
        }
        (*names)[*n] = strdup(de->d_name);
        if ((*names)[*n] == NULL) {
            rc = AF_ERR_NOMEM;
            break;
        }
        (*n)++;
    }
    closedir(d);
    if (rc == AF_OK && *n == 0) {
        af_error_set("%s: no agefence logs (*.h5) in it", dir);
        rc = AF_ERR_USAGE;
    }
    if (rc == AF_OK) {
        qsort(*names, (size_t)*n, sizeof **names, by_name);
    } else if (rc == AF_ERR_NOMEM) {
        af_error_set("out of memory");
    }
    return rc;
}

/* DIR/grid: one section.key a line (blank lines and # comments skipped), at most two. */
static af_result_t read_grid(af_ensemble_t *e)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/grid", e->dir);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return AF_OK; /* no grid: the members differ in their seed alone */
    }
    char line[256];
    int ln = 0;
    af_result_t rc = AF_OK;
    while (rc == AF_OK && fgets(line, sizeof line, f) != NULL) {
        ln++;
        char *s = line;
        while (*s == ' ' || *s == '\t') {
            s++;
        }
        size_t len = strcspn(s, " \t\r\n#");
        if (len == 0) {
            continue;
        }
        s[len] = '\0';
        const char *dot = strchr(s, '.');
        if (dot == NULL || dot == s || dot[1] == '\0' || strchr(dot + 1, '.') != NULL ||
            len >= sizeof e->grid[0]) {
            af_error_set("%s:%d: '%s' is not a section.key", path, ln, s);
            rc = AF_ERR_USAGE;
        } else if (strcmp(s, "scenario.seed") == 0) {
            af_error_set("%s:%d: scenario.seed is every member's own, not a grid key", path, ln);
            rc = AF_ERR_USAGE;
        } else if (e->ngrid == AF_ENSEMBLE_MAX_GRID) {
            af_error_set("%s:%d: at most %d grid keys", path, ln, AF_ENSEMBLE_MAX_GRID);
            rc = AF_ERR_USAGE;
        } else {
            memcpy(e->grid[e->ngrid], s, len + 1); /* len < sizeof e->grid[0] (above) */
            e->ngrid++;
        }
    }
    fclose(f);
    return rc;
}

/* The value of section.key in a resolved scenario's text ("" when absent). */
static void config_value(const char *cfg, const char *key, char *out, size_t n)
{
    out[0] = '\0';
    const char *dot = strchr(key, '.');
    char head[112];
    snprintf(head, sizeof head, "[%.*s]\n", (int)(dot - key), key);
    const char *sec = strstr(cfg, head);
    if (sec == NULL) {
        return;
    }
    const char *p = sec + strlen(head);
    size_t kl = strlen(dot + 1);
    while (*p != '\0' && *p != '[') {
        const char *end = strchr(p, '\n');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        if (len > kl + 3 && strncmp(p, dot + 1, kl) == 0 && strncmp(p + kl, " = ", 3) == 0) {
            snprintf(out, n, "%.*s", (int)(len - kl - 3), p + kl + 3);
            return;
        }
        if (end == NULL) {
            break;
        }
        p = end + 1;
    }
}

/* The scenario's text without scenario.seed, the grid keys and comments, a key resolved from
 * "auto" (a "# KEY = auto: ..." comment before it: its value follows from others, the grid's
 * among them) as "KEY = auto": what every member must share. out gets at most CONFIG_MAX
 * bytes. */
static void config_core(const af_ensemble_t *e, const char *cfg, char *out)
{
    char sec[96] = "";
    char autokey[96] = "";
    size_t o = 0;
    const char *p = cfg;
    while (*p != '\0') {
        const char *end = strchr(p, '\n');
        size_t len = end != NULL ? (size_t)(end - p) + 1 : strlen(p);
        const char *text = p;
        size_t tlen = len;
        char line[200];
        int keep = 1;
        if (p[0] == '#') {
            size_t kl = strcspn(p + 2, " =\n");
            if (p[1] == ' ' && strncmp(p + 2 + kl, " = auto", 7) == 0 && kl < sizeof autokey) {
                snprintf(autokey, sizeof autokey, "%.*s", (int)kl, p + 2);
            }
            keep = 0;
        } else if (p[0] == '[') {
            snprintf(sec, sizeof sec, "%.*s", (int)strcspn(p + 1, "]"), p + 1);
            autokey[0] = '\0';
        } else {
            size_t kl = strcspn(p, " =\n");
            char key[200];
            snprintf(key, sizeof key, "%s.%.*s", sec, (int)kl, p);
            keep = strcmp(key, "scenario.seed") != 0;
            for (int g = 0; g < e->ngrid && keep; ++g) {
                keep = strcmp(key, e->grid[g]) != 0;
            }
            if (autokey[0] != '\0' && kl == strlen(autokey) && strncmp(p, autokey, kl) == 0) {
                tlen = (size_t)snprintf(line, sizeof line, "%s = auto\n", autokey);
                text = line;
            }
            autokey[0] = '\0';
        }
        if (keep && o + tlen < CONFIG_MAX) {
            memcpy(out + o, text, tlen);
            o += tlen;
        }
        p += len;
    }
    out[o] = '\0';
}

/* The first line where two scenario texts differ, for the message. */
static void first_difference(const char *a, const char *b, char *out, size_t n)
{
    while (*a != '\0' && *a == *b) {
        const char *ea = strchr(a, '\n');
        const char *eb = strchr(b, '\n');
        size_t la = ea != NULL ? (size_t)(ea - a) : strlen(a);
        size_t lb = eb != NULL ? (size_t)(eb - b) : strlen(b);
        if (la != lb || strncmp(a, b, la) != 0) {
            break;
        }
        a += la + (ea != NULL);
        b += lb + (eb != NULL);
    }
    snprintf(out, n, "'%.*s' against '%.*s'", (int)strcspn(b, "\n"), b, (int)strcspn(a, "\n"), a);
}

/* A run that ran its whole window: its history is all there (see af_ensemble_load). */
static int whole_run(const char *exit_reason)
{
    static const char *const whole[] = {"completed", "mismatch", "leaked", "capacity_exhausted"};
    for (size_t k = 0; k < sizeof whole / sizeof whole[0]; ++k) {
        if (strcmp(exit_reason, whole[k]) == 0) {
            return 1;
        }
    }
    return 0;
}

/* FNV-1a over a string, continuing from h. */
static uint64_t fnv(uint64_t h, const char *s)
{
    for (; *s != '\0'; ++s) {
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    }
    return (h ^ 0xff) * 0x100000001b3ull; /* a separator: "ab" + "c" is not "a" + "bc" */
}

/* Reads one member: its scenario text into cfg, its exit, the hash of its history (the scenario
 * with its seed, and the build) into *history; its figures and timeline when it joins (*joins:
 * a whole run, or any with opt->take_unfinished), at the costs of opt->set and cost (one
 * "goodput.KEY=VALUE" of the cost grid, or NULL). */
static af_result_t read_member(af_ensemble_member_t *m, const af_ensemble_opts_t *opt,
                               const char *cost, char *cfg, uint64_t *history, int *joins)
{
    const char *record = opt->record;
    char err[700];
    af_logfile_t lf;
    if (af_logfile_open(&lf, m->path, err, sizeof err) != AF_OK) {
        af_error_set("%s", err);
        return AF_ERR_USAGE;
    }
    cfg[0] = '\0';
    af_result_t rc = af_logfile_attr_str(&lf, "/", "config", cfg, CONFIG_MAX);
    if (rc != AF_OK) {
        af_logfile_close(&lf);
        af_error_set("%s: no /@config: not a member of an ensemble", m->path);
        return AF_ERR_USAGE;
    }
    static af_run_t run;
    static af_summary_t sum;
    rc = af_run_load(&run, &lf);
    *joins = 0;
    if (rc == AF_OK) {
        snprintf(m->exit_reason, sizeof m->exit_reason, "%s", run.exit_reason);
        m->step = run.state_step.ok ? run.state_step.v : run.nrows > 0 ? run.nrows : -1;
        m->steps_planned = run.steps_planned.ok ? run.steps_planned.v : -1;
        m->unfinished = !whole_run(run.exit_reason);
        *history =
            fnv(fnv(fnv(0xcbf29ce484222325ull, cfg), run.agefence_version), run.git_revision);
        *joins = !m->unfinished || opt->take_unfinished;
    }
    if (rc == AF_OK && !*joins) {
        af_run_free(&run);
        af_logfile_close(&lf);
        return AF_OK;
    }
    if (rc == AF_OK && record != NULL) {
        snprintf(run.record, sizeof run.record, "%s", record);
    }
    /* the costs asked offline: checked before (agefence-report), so no error here */
    for (int k = 0; rc == AF_OK && k < opt->nset; ++k) {
        rc = af_goodput_set(&run.goodput, opt->set[k]);
    }
    if (rc == AF_OK && cost != NULL) {
        rc = af_goodput_set(&run.goodput, cost);
    }
    if (rc == AF_OK) {
        rc = af_summary_compute(&sum, &run);
    }
    if (rc == AF_OK && !sum.have_goodput) {
        af_error_set("%s: no goodput to gather: %s", m->path, sum.goodput_why);
        rc = AF_ERR_USAGE;
    }
    if (rc == AF_OK) {
        rc = af_summary_goodput_timeline(&sum, &m->tl);
    }
    if (rc == AF_OK) {
        m->seed = run.seed.ok ? run.seed.v : -1;
        m->params = sum.goodput_params;
        for (int k = 0; k < AF_REPLAY_NPOLICY; ++k) {
            const af_goodput_policy_t *g = &sum.goodput.pol[k];
            m->ettr[k] = g->ettr;
            m->young_ettr[k] = g->young_ettr;
            m->daly_ettr[k] = g->daly_ettr;
            m->daly_s[k] = g->daly_s;
            m->young_s[k] = g->young_s;
            m->interval_s[k] = g->interval_s;
        }
        m->daly_replica_s = sum.goodput.pol[AF_REPLAY_REMAP].daly_replica_s;
        m->young_replica_s = sum.goodput.pol[AF_REPLAY_REMAP].young_replica_s;
        m->replica_interval_s = sum.goodput.pol[AF_REPLAY_REMAP].replica_interval_s;
        m->interruptions = sum.interruptions;
        for (int c = 0; c < AF_NINTR; ++c) {
            m->by_cause[c] = sum.intr_by_cause[c];
        }
        for (int c = 0; c <= AF_NINTR; ++c) {
            m->expected[c] = sum.record != NULL && sum.rec[c].have ? sum.rec[c].expected : NAN;
        }
        m->gpu_hours = (run.devices.ok ? (double)run.devices.v : NAN) * sum.sim_hours;
    } else if (rc == AF_ERR_NOMEM) {
        af_error_set("%s: out of memory", m->path);
    }
    af_run_free(&run);
    af_logfile_close(&lf);
    return rc;
}

/* ---- the figures -------------------------------------------------------------------------- */

static double member_ettr(const af_ensemble_member_t *m, af_replay_policy_t pol, double tau,
                          double rho)
{
    const double W = m->tl.window_s;
    af_replay_result_t r;
    if (af_goodput_at(&m->tl, &m->params, pol, tau < W ? tau : W, rho < W ? rho : W, &r) != AF_OK) {
        return NAN;
    }
    return r.ettr;
}

static double group_mean(const af_ensemble_t *e, int g, af_replay_policy_t pol, double tau,
                         double rho)
{
    double sum = 0.0;
    int n = 0;
    for (int i = 0; i < e->nmembers; ++i) {
        if (e->members[i].group == g) {
            sum += member_ettr(&e->members[i], pol, tau, rho);
            n++;
        }
    }
    return n > 0 ? sum / n : NAN;
}

typedef struct group_ctx {
    const af_ensemble_t *e;
    int g;
    af_replay_policy_t pol;
} group_ctx_t;

/* The objective of the group's one setting: its mean ETTR (af_replay_optimise). */
static af_result_t group_objective(void *ctx, double tau_s, double rho_s, double *ettr)
{
    const group_ctx_t *c = ctx;
    *ettr = group_mean(c->e, c->g, c->pol, tau_s, rho_s);
    return AF_OK;
}

/* The median of the finite values of v (INFINITY when none is); sorts v. */
static double finite_median(double *v, int n)
{
    int k = 0;
    for (int i = 0; i < n; ++i) {
        if (isfinite(v[i])) {
            v[k++] = v[i];
        }
    }
    if (k == 0) {
        return INFINITY;
    }
    af_stats_sort(v, (size_t)k);
    return af_stats_percentile_sorted(v, (size_t)k, 50.0);
}

/* The mean of the finite values of v (INFINITY when none is: nothing to guard against). */
static double finite_mean(const double *v, int n)
{
    double s = 0.0;
    int k = 0;
    for (int i = 0; i < n; ++i) {
        if (isfinite(v[i])) {
            s += v[i];
            k++;
        }
    }
    return k > 0 ? s / k : INFINITY;
}

static af_result_t group_figures(af_ensemble_t *e, int g)
{
    af_ensemble_group_t *G = &e->groups[g];
    double *v = malloc(sizeof(double) * (size_t)G->n * 7);
    if (v == NULL) {
        af_error_set("out of memory");
        return AF_ERR_NOMEM;
    }
    double *young = v + G->n;
    double *youngr = v + 2 * G->n;
    double *daly = v + 3 * G->n;
    double *dalyr = v + 4 * G->n;
    double *own = v + 5 * G->n;
    double *ownr = v + 6 * G->n;
    double Wmin = INFINITY;
    double Wmax = 0.0;
    for (int k = 0; k < AF_REPLAY_NPOLICY; ++k) {
        af_replay_policy_t pol = (af_replay_policy_t)k;
        int n = 0;
        double ysum = 0.0;
        double dsum = 0.0;
        for (int i = 0; i < e->nmembers; ++i) {
            const af_ensemble_member_t *m = &e->members[i];
            if (m->group != g) {
                continue;
            }
            v[n] = m->ettr[k];
            young[n] = m->young_s[k];
            youngr[n] = m->young_replica_s;
            daly[n] = m->daly_s[k];
            dalyr[n] = m->daly_replica_s;
            own[n] = m->interval_s[k];
            ownr[n] = m->replica_interval_s;
            ysum += m->young_ettr[k];
            dsum += m->daly_ettr[k];
            Wmin = m->tl.window_s < Wmin ? m->tl.window_s : Wmin;
            Wmax = m->tl.window_s > Wmax ? m->tl.window_s : Wmax;
            n++;
        }
        af_ensemble_policy_t *P = &G->pol[k];
        double mean = 0.0;
        for (int i = 0; i < n; ++i) {
            mean += v[i];
        }
        mean /= n;
        double ss = 0.0;
        for (int i = 0; i < n; ++i) {
            ss += (v[i] - mean) * (v[i] - mean);
        }
        P->mean = mean;
        P->sd = n > 1 ? sqrt(ss / (n - 1)) : NAN;
        double half = n > 1 ? af_student_t975(n - 1) * P->sd / sqrt((double)n) : NAN;
        /* An ETTR lies in [0, 1]: so does the interval of its mean. One member has no interval
         * (NaN, printed "- (1 member)", null in --json): the clamp must not turn it into [0, 1]. */
        P->ci_lo = isnan(half) ? NAN : mean - half > 0.0 ? mean - half : 0.0;
        P->ci_hi = isnan(half) ? NAN : mean + half < 1.0 ? mean + half : 1.0;
        af_stats_sort(v, (size_t)n);
        P->p5 = af_stats_percentile_sorted(v, (size_t)n, 5.0);
        P->p50 = af_stats_percentile_sorted(v, (size_t)n, 50.0);
        P->p95 = af_stats_percentile_sorted(v, (size_t)n, 95.0);
        P->young_mean = ysum / n;
        P->daly_mean = dsum / n;

        /* One setting for the whole group: the search a member's own history gets
         * (af_goodput_replay), on the group's mean ETTR, from the members' mean Young's and
         * Daly's intervals, and the median of the intervals searched on each member's own
         * history. One member is searched exactly as its own report searches it. */
        const af_replay_params_t *p = NULL;
        for (int i = 0; i < e->nmembers && p == NULL; ++i) {
            p = e->members[i].group == g ? &e->members[i].params : NULL;
        }
        const int remap = pol == AF_REPLAY_REMAP;
        double cand[AF_GOODPUT_NCAND + 1][2];
        int nc = af_goodput_candidates(finite_mean(young, n), remap ? finite_mean(youngr, n) : NAN,
                                       finite_mean(daly, n), remap ? finite_mean(dalyr, n) : NAN,
                                       Wmax, cand);
        if (n > 1) {
            cand[nc][0] = finite_median(own, n);
            cand[nc][1] = remap ? finite_median(ownr, n) : INFINITY;
            nc++;
        }
        af_replay_space_t sp = {.step_s = p->step_s,
                                .window_s = Wmax,
                                .bound_window_s = Wmin,
                                .checkpoint_s = p->checkpoint_s,
                                .replica_s = p->replica_s,
                                .knobs = remap ? AF_REPLAY_KNOB_TAU | AF_REPLAY_KNOB_RHO
                                               : AF_REPLAY_KNOB_TAU};
        group_ctx_t ctx = {.e = e, .g = g, .pol = pol};
        double tau = 0;
        double rho = 0;
        double best = 0;
        AF_CHECK(af_replay_optimise(&sp, group_objective, &ctx, (const double(*)[2])cand, nc, &tau,
                                    &rho, &best));
        P->best_tau_s = tau;
        P->best_rho_s = pol == AF_REPLAY_REMAP ? rho : NAN;
        P->best_mean = best;
    }
    /* Interruptions per member by cause, Garwood's interval of the group's total over n. */
    for (int c = 0; c <= AF_NINTR; ++c) {
        int64_t total = 0;
        double rec = 0.0;
        int have_rec = 1;
        for (int i = 0; i < e->nmembers; ++i) {
            const af_ensemble_member_t *m = &e->members[i];
            if (m->group != g) {
                continue;
            }
            total += c < AF_NINTR ? m->by_cause[c] : m->interruptions;
            rec += m->expected[c];
            have_rec &= isfinite(m->expected[c]);
        }
        double lo = 0;
        double hi = 0;
        af_poisson_interval(total, 0.95, &lo, &hi);
        G->intr_mean[c] = (double)total / G->n;
        G->intr_lo[c] = lo / G->n;
        G->intr_hi[c] = hi / G->n;
        G->record[c] = have_rec ? rec / G->n : NAN;
    }
    free(v);
    return AF_OK;
}

static int group_cmp_values(const af_ensemble_t *e, char a[][64], char b[][64])
{
    for (int k = 0; k < e->ngrid; ++k) {
        char *ea = NULL;
        char *eb = NULL;
        double x = strtod(a[k], &ea);
        double y = strtod(b[k], &eb);
        if (*ea == '\0' && *eb == '\0' && ea != a[k] && eb != b[k]) {
            if (x != y) {
                return x < y ? -1 : 1;
            }
        } else {
            int c = strcmp(a[k], b[k]);
            if (c != 0) {
                return c;
            }
        }
    }
    return 0;
}

/* Members in the order of their seeds (their paths for equal seeds): the figures' sums run in
 * that order, whatever the files are called. */
static int by_seed(const void *pa, const void *pb)
{
    const af_ensemble_member_t *a = pa;
    const af_ensemble_member_t *b = pb;
    if (a->seed != b->seed) {
        return a->seed < b->seed ? -1 : 1;
    }
    return strcmp(a->path, b->path);
}

/* The scenario text of a log, without what members may differ in (config_core), into core. */
static void core_of(const af_ensemble_t *e, const char *path, char *cfg, char *core)
{
    char err[700];
    af_logfile_t lf;
    cfg[0] = core[0] = '\0';
    if (af_logfile_open(&lf, path, err, sizeof err) == AF_OK) {
        if (af_logfile_attr_str(&lf, "/", "config", cfg, CONFIG_MAX) == AF_OK) {
            config_core(e, cfg, core);
        }
        af_logfile_close(&lf);
    }
}

/* What every file read says of itself, for the checks across members. */
typedef struct seen {
    uint64_t core;    /* the scenario but for the seed and the grid's keys */
    uint64_t history; /* the scenario with its seed, and the build */
    int member;       /* its index in e->members, or -1: left out */
    char path[1024];
} seen_t;

/* Members of different scenarios: the odd one is the file whose scenario fewer members share
 * (the first such in name order), named beside one of the majority's. */
static af_result_t check_one_scenario(af_ensemble_t *e, const seen_t *seen, int n, char *cfg,
                                      char *core, char *other)
{
    int best = 0;
    int best_count = 0;
    for (int i = 0; i < n; ++i) {
        int c = 0;
        for (int j = 0; j < n; ++j) {
            c += seen[j].core == seen[i].core;
        }
        if (c > best_count) {
            best = i;
            best_count = c;
        }
    }
    for (int i = 0; i < n; ++i) {
        if (seen[i].core == seen[best].core) {
            continue;
        }
        core_of(e, seen[best].path, cfg, other);
        core_of(e, seen[i].path, cfg, core);
        char diff[400];
        first_difference(other, core, diff, sizeof diff);
        af_error_set("%s: another scenario than %s%s (%s; members differ in scenario.seed and "
                     "the keys of %s/grid only)",
                     seen[i].path, seen[best].path,
                     best_count > 1 ? " and the members that share its scenario" : "", diff,
                     e->dir);
        return AF_ERR_USAGE;
    }
    return AF_OK;
}

af_result_t af_ensemble_load(af_ensemble_t *e, const char *dir, const af_ensemble_opts_t *opt)
{
    static const af_ensemble_opts_t defaults = {0};
    opt = opt != NULL ? opt : &defaults;
    memset(e, 0, sizeof *e);
    snprintf(e->dir, sizeof e->dir, "%s", dir);
    size_t dl = strlen(e->dir);
    while (dl > 1 && e->dir[dl - 1] == '/') {
        e->dir[--dl] = '\0';
    }
    AF_CHECK(read_grid(e));
    e->cost_grid = -1;
    for (int k = 0; k < opt->nset; ++k) {
        size_t l = strlen(e->set);
        snprintf(e->set + l, sizeof e->set - l, "%s%s", k > 0 ? ", " : "", opt->set[k]);
    }
    if (opt->cost_key != NULL) {
        for (int k = 0; k < e->ngrid; ++k) {
            if (strcmp(e->grid[k], opt->cost_key) == 0) {
                af_error_set("--grid %s: %s/grid names it already", opt->cost_key, e->dir);
                return AF_ERR_USAGE;
            }
        }
        if (e->ngrid == AF_ENSEMBLE_MAX_GRID || strlen(opt->cost_key) >= sizeof e->grid[0]) {
            af_error_set("--grid %s: at most %d grid keys in all (%s/grid names %d)", opt->cost_key,
                         AF_ENSEMBLE_MAX_GRID, e->dir, e->ngrid);
            return AF_ERR_USAGE;
        }
        snprintf(e->grid[e->ngrid], sizeof e->grid[0], "%s", opt->cost_key);
        e->cost_grid = e->ngrid++;
    }
    /* each member once a cost of the --grid goodput key */
    const int V = opt->cost_key != NULL && opt->ncost > 0 ? opt->ncost : 1;
    e->ncosts = V;
    char **names = NULL;
    int n = 0;
    AF_CHECK(list_logs(e->dir, &names, &n));
    e->members = calloc((size_t)n * (size_t)V, sizeof *e->members);
    e->groups = calloc((size_t)n * (size_t)V, sizeof *e->groups);
    e->left = calloc((size_t)n, sizeof *e->left);
    seen_t *seen = calloc((size_t)n, sizeof *seen);
    char *cfg = malloc(CONFIG_MAX);
    char *core = malloc(CONFIG_MAX);
    char *first = malloc(CONFIG_MAX);
    af_result_t rc = e->members != NULL && e->groups != NULL && e->left != NULL && seen != NULL &&
                             cfg != NULL && core != NULL && first != NULL
                         ? AF_OK
                         : AF_ERR_NOMEM;
    if (rc == AF_ERR_NOMEM) {
        af_error_set("out of memory");
    }
    int nseen = 0;
    for (int iv = 0; iv < n * V && rc == AF_OK; ++iv) {
        const int i = iv / V;
        const int v = iv % V;
        af_ensemble_member_t *m = &e->members[e->nmembers];
        memset(m, 0, sizeof *m);
        snprintf(m->path, sizeof m->path, "%s/%s", e->dir, names[i]);
        char cost[160];
        if (opt->cost_key != NULL) {
            snprintf(cost, sizeof cost, "%s=%s", opt->cost_key, opt->cost_values[v]);
        }
        uint64_t history = 0;
        int joins = 0;
        rc = read_member(m, opt, opt->cost_key != NULL ? cost : NULL, cfg, &history, &joins);
        if (rc != AF_OK) {
            break;
        }
        /* A file is checked once, at the first cost; left out there, it is at every one. */
        if (v > 0 && !joins) {
            continue;
        }
        if (v == 0) {
            config_core(e, cfg, core);
            seen_t *sn = &seen[nseen++];
            sn->core = fnv(0xcbf29ce484222325ull, core);
            sn->history = history;
            sn->member = joins ? e->nmembers : -1;
            snprintf(sn->path, sizeof sn->path, "%s", m->path);
            /* One history counts once: a copied member would narrow the interval for nothing. */
            for (int j = 0; j < nseen - 1 && rc == AF_OK; ++j) {
                if (seen[j].history == history) {
                    af_error_set("%s: the same history as %s (the same scenario, seed and build): "
                                 "a copy? keep one of them",
                                 m->path, seen[j].path);
                    rc = AF_ERR_USAGE;
                }
            }
            if (rc != AF_OK) {
                break;
            }
            if (!joins) {
                af_ensemble_left_t *l = &e->left[e->nleft++];
                snprintf(l->path, sizeof l->path, "%s", m->path);
                snprintf(l->exit_reason, sizeof l->exit_reason, "%s", m->exit_reason);
                l->step = m->step;
                l->steps_planned = m->steps_planned;
                continue;
            }
        }
        e->nmembers++;
        e->nunfinished += m->unfinished && v == 0;
        char values[AF_ENSEMBLE_MAX_GRID][64] = {{0}};
        for (int k = 0; k < e->ngrid; ++k) {
            if (k == e->cost_grid) {
                snprintf(values[k], sizeof values[k], "%s", opt->cost_values[v]);
                continue;
            }
            config_value(cfg, e->grid[k], values[k], sizeof values[k]);
            if (values[k][0] == '\0') {
                af_error_set("%s: its scenario has no %s (%s/grid names it)", m->path, e->grid[k],
                             e->dir);
                rc = AF_ERR_USAGE;
            }
        }
        if (rc != AF_OK) {
            break;
        }
        if (e->nmembers == 1) {
            config_value(cfg, "scenario.name", e->scenario, sizeof e->scenario);
            config_value(cfg, "scenario.record", e->record, sizeof e->record);
        }
        int g = 0;
        while (g < e->ngroups && group_cmp_values(e, e->groups[g].values, values) != 0) {
            g++;
        }
        if (g == e->ngroups) {
            memcpy(e->groups[g].values, values, sizeof values);
            e->ngroups++;
        }
        e->groups[g].n++;
        m->group = g;
    }
    if (rc == AF_OK) {
        rc = check_one_scenario(e, seen, nseen, cfg, core, first);
    }
    if (rc == AF_OK && e->nmembers == 0) {
        af_error_set("%s: no member finished its window (%d left out; --with-unfinished takes "
                     "them in)",
                     e->dir, e->nleft);
        rc = AF_ERR_USAGE;
    }
    for (int i = 0; i < n; ++i) {
        free(names[i]);
    }
    free(names);
    free(seen);
    free(cfg);
    free(core);
    free(first);
    if (rc != AF_OK) {
        return rc;
    }
    qsort(e->members, (size_t)e->nmembers, sizeof *e->members, by_seed);
    /* Groups in the order of their values (numeric where they are numbers). */
    for (int a = 1; a < e->ngroups; ++a) {
        for (int b = a;
             b > 0 && group_cmp_values(e, e->groups[b - 1].values, e->groups[b].values) > 0; --b) {
            af_ensemble_group_t t = e->groups[b];
            e->groups[b] = e->groups[b - 1];
            e->groups[b - 1] = t;
            for (int i = 0; i < e->nmembers; ++i) {
                int *mg = &e->members[i].group;
                *mg = *mg == b ? b - 1 : *mg == b - 1 ? b : *mg;
            }
        }
    }
    for (int g = 0; g < e->ngroups; ++g) {
        for (int i = 0; i < e->nmembers; ++i) {
            if (e->members[i].group == g) {
                e->groups[g].devices = e->members[i].tl.devices;
                e->groups[g].sim_hours = e->members[i].tl.window_s / 3600.0;
                break;
            }
        }
        AF_CHECK(group_figures(e, g));
    }
    return AF_OK;
}

void af_ensemble_free(af_ensemble_t *e)
{
    for (int i = 0; e->members != NULL && i < e->nmembers; ++i) {
        free((void *)e->members[i].tl.intr);
        free((void *)e->members[i].tl.pace);
    }
    free(e->members);
    free(e->groups);
    free(e->left);
    memset(e, 0, sizeof *e);
}
