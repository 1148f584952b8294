#include "goodput.h"

#include "../common/goodput_keys.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* The [goodput] keys (common/goodput_keys.h): name, where, bounds and default. */
typedef struct gp_key {
    const char *name;
    size_t off;
    int is_int;
    double lo, hi;
    const char *def;
    const char *unit;
} gp_key_t;

#define GP_ROW(key, field, is_int, lo, hi, def, unit, help)                                        \
    {#key, offsetof(af_goodput_params_t, field), is_int, lo, hi, def, unit},
static const gp_key_t GP_KEYS[] = {AF_GOODPUT_KEYS(GP_ROW)};
#undef GP_ROW
enum { GP_NKEYS = sizeof GP_KEYS / sizeof GP_KEYS[0] };

static void gp_store(af_goodput_params_t *p, const gp_key_t *k, double v)
{
    char *at = (char *)p + k->off;
    if (k->is_int) {
        int64_t i = (int64_t)v;
        memcpy(at, &i, sizeof i);
    } else {
        memcpy(at, &v, sizeof v);
    }
}

void af_goodput_defaults(af_goodput_params_t *p)
{
    memset(p, 0, sizeof *p);
    for (int k = 0; k < GP_NKEYS; ++k) {
        gp_store(p, &GP_KEYS[k], strtod(GP_KEYS[k].def, NULL));
    }
}

/* The key named name (NULL: none such). */
static const gp_key_t *gp_find(const char *name, size_t len)
{
    for (int k = 0; k < GP_NKEYS; ++k) {
        if (strlen(GP_KEYS[k].name) == len && strncmp(GP_KEYS[k].name, name, len) == 0) {
            return &GP_KEYS[k];
        }
    }
    return NULL;
}

/* v parsed as the key's value: a finite number in its bounds (an integer for an integer key),
 * the whole text consumed. */
static int gp_value(const gp_key_t *k, const char *text, double *v)
{
    char *end = NULL;
    errno = 0;
    double x = strtod(text, &end);
    if (end == text || *end != '\0' || errno != 0 || !isfinite(x) || x < k->lo || x > k->hi ||
        (k->is_int && x != floor(x))) {
        return 0;
    }
    *v = x;
    return 1;
}

void af_goodput_parse(af_goodput_params_t *p, const char *text)
{
    const char *at = text != NULL ? strstr(text, "\n[goodput]\n") : NULL;
    if (at == NULL) {
        return;
    }
    at += strlen("\n[goodput]\n");
    /* key = value lines up to the next section; the config checked them when it ran */
    while (*at != '\0' && *at != '[') {
        const char *end = strchr(at, '\n');
        size_t len = end != NULL ? (size_t)(end - at) : strlen(at);
        char line[256];
        if (len < sizeof line) {
            memcpy(line, at, len);
            line[len] = '\0';
            char *eq = strstr(line, " = ");
            const gp_key_t *k = eq != NULL ? gp_find(line, (size_t)(eq - line)) : NULL;
            double v = 0;
            if (k != NULL && gp_value(k, eq + 3, &v)) {
                gp_store(p, k, v);
            }
        }
        if (end == NULL) {
            break;
        }
        at = end + 1;
    }
}

af_result_t af_goodput_set(af_goodput_params_t *p, const char *assignment)
{
    const char *eq = strchr(assignment, '=');
    const char *name = strncmp(assignment, "goodput.", 8) == 0 ? assignment + 8 : NULL;
    if (eq == NULL || name == NULL || eq < name) {
        af_error_set("'%s': expected goodput.KEY=VALUE (the [goodput] keys: agefence config "
                     "--keys)",
                     assignment);
        return AF_ERR_USAGE;
    }
    const gp_key_t *k = gp_find(name, (size_t)(eq - name));
    if (k == NULL) {
        af_error_set("'%s': goodput has no key '%.*s' (step_seconds, checkpoint_seconds, "
                     "restart_seconds, shrink_seconds, repartition_seconds, replica_seconds, "
                     "detect_seconds, remap_seconds, spare_nodes or replace_seconds)",
                     assignment, (int)(eq - name), name);
        return AF_ERR_USAGE;
    }
    double v = 0;
    if (!gp_value(k, eq + 1, &v)) {
        af_error_set("'%s': expected %s in [%g, %g] (%s)", assignment,
                     k->is_int ? "an integer" : "a number", k->lo, k->hi, k->unit);
        return AF_ERR_USAGE;
    }
    gp_store(p, k, v);
    return AF_OK;
}

void af_goodput_replay_params(const af_goodput_params_t *g, int64_t devices_per_node,
                              af_replay_params_t *p)
{
    af_replay_defaults(p);
    p->checkpoint_s = g->checkpoint_s;
    p->restart_s = g->restart_s;
    p->replica_s = g->replica_s;
    p->detect_s = g->detect_s;
    p->remap_s = g->remap_s;
    p->shrink_s = g->shrink_s;
    p->repartition_s = g->repartition_s;
    p->step_s = g->step_s;
    p->spare_nodes = g->spare_nodes;
    p->replace_s = g->replace_s;
    p->devices_per_node = devices_per_node >= 1 ? devices_per_node : 1;
}

af_result_t af_goodput_at(const af_replay_timeline_t *tl, const af_replay_params_t *p,
                          af_replay_policy_t policy, double tau_s, double rho_s,
                          af_replay_result_t *out)
{
    af_replay_params_t q = *p;
    q.tau_s = tau_s;
    q.rho_s = policy == AF_REPLAY_REMAP ? rho_s : INFINITY;
    return af_replay_run(tl, &q, policy, out);
}

typedef struct one_history {
    const af_replay_timeline_t *tl;
    af_replay_params_t p;
    af_replay_policy_t policy;
} one_history_t;

static af_result_t history_ettr(void *ctx, double tau_s, double rho_s, double *ettr)
{
    one_history_t *h = ctx;
    af_replay_result_t r;
    AF_CHECK(af_goodput_at(h->tl, &h->p, h->policy, tau_s, rho_s, &r));
    *ettr = r.ettr;
    return AF_OK;
}

int af_goodput_candidates(double young_s, double young_rho_s, double daly_s, double daly_rho_s,
                          double W, double cand[AF_GOODPUT_NCAND][2])
{
    /* Daly's pair first (the reference on a tie), Young's, the two mixed, each interval alone
     * with the other level writing nothing in the window, and no write at all. */
    const double t[AF_GOODPUT_NCAND] = {daly_s, young_s, daly_s, young_s, daly_s, young_s, W, W, W};
    const double r[AF_GOODPUT_NCAND] = {daly_rho_s, young_rho_s, young_rho_s, daly_rho_s, W,
                                        W,          daly_rho_s,  young_rho_s, W};
    for (int c = 0; c < AF_GOODPUT_NCAND; ++c) {
        cand[c][0] = t[c];
        cand[c][1] = isnan(r[c]) ? INFINITY : r[c];
    }
    return AF_GOODPUT_NCAND;
}

int af_goodput_capacity_bound(const af_replay_result_t *r)
{
    return r->capacity_loss_s > r->lost_s + r->checkpoint_time_s + r->replica_time_s +
                                    r->restart_time_s + r->recover_time_s;
}

af_result_t af_goodput_replay(const af_replay_timeline_t *tl, const af_replay_params_t *p,
                              af_goodput_t *out)
{
    const double W = tl->window_s;
    const double step = p->step_s;
    out->spares_for_all = 0; /* the caller's, who can rebuild the timeline with spares */
    for (int k = 0; k < AF_REPLAY_NPOLICY; ++k) {
        af_replay_policy_t pol = (af_replay_policy_t)k;
        af_goodput_policy_t *g = &out->pol[k];
        const int remap = pol == AF_REPLAY_REMAP;
        g->mtbi_s = af_replay_mtbi(tl, pol, 0);
        g->replica_mtbi_s = remap ? af_replay_mtbi(tl, pol, 1) : NAN;
        g->young_s = af_replay_young(p->checkpoint_s, g->mtbi_s);
        g->daly_s = af_replay_daly(p->checkpoint_s, g->mtbi_s);
        g->young_replica_s = remap ? af_replay_young(p->replica_s, g->replica_mtbi_s) : NAN;
        g->daly_replica_s = remap ? af_replay_daly(p->replica_s, g->replica_mtbi_s) : NAN;
        /* What a user can set: the whole steps each rounds to. */
        g->young_steps_s = af_replay_whole_steps(g->young_s, step, W);
        g->daly_steps_s = af_replay_whole_steps(g->daly_s, step, W);
        g->young_replica_steps_s = remap ? af_replay_whole_steps(g->young_replica_s, step, W) : NAN;
        g->daly_replica_steps_s = remap ? af_replay_whole_steps(g->daly_replica_s, step, W) : NAN;
        af_replay_result_t r;
        AF_CHECK(af_goodput_at(tl, p, pol, g->young_steps_s, g->young_replica_steps_s, &r));
        g->young_ettr = r.ettr;
        AF_CHECK(af_goodput_at(tl, p, pol, g->daly_steps_s, g->daly_replica_steps_s, &r));
        g->daly_ettr = r.ettr;

        double cand[AF_GOODPUT_NCAND][2];
        int n = af_goodput_candidates(g->young_s, g->young_replica_s, g->daly_s, g->daly_replica_s,
                                      W, cand);
        one_history_t h = {.tl = tl, .p = *p, .policy = pol};
        af_replay_space_t sp = {.step_s = step,
                                .window_s = W,
                                .bound_window_s = W,
                                .checkpoint_s = p->checkpoint_s,
                                .replica_s = p->replica_s,
                                .knobs = remap ? AF_REPLAY_KNOB_TAU | AF_REPLAY_KNOB_RHO
                                               : AF_REPLAY_KNOB_TAU};
        double tau = 0;
        double rho = 0;
        double e = 0;
        AF_CHECK(
            af_replay_optimise(&sp, history_ettr, &h, (const double(*)[2])cand, n, &tau, &rho, &e));
        AF_CHECK(af_goodput_at(tl, p, pol, tau, rho, &r));
        g->at = r;
        g->ettr = r.ettr;
        g->interval_s = tau;
        g->replica_interval_s = remap ? rho : NAN;
        g->capacity_bound = af_goodput_capacity_bound(&r);
        g->spared_ettr = NAN;
    }
    return AF_OK;
}

int af_goodput_hours(const double *x, int n, double W)
{
    int any = 0;
    for (int i = 0; i < n; ++i) {
        if (isfinite(x[i]) && x[i] < W) {
            if (x[i] < 36000.0) {
                return 0;
            }
            any = 1;
        }
    }
    return any;
}

const char *af_goodput_duration_text(char *buf, size_t n, double x, double W, int hours)
{
    if (!isfinite(x)) {
        snprintf(buf, n, "none needed");
    } else if (x >= W) {
        snprintf(buf, n, "none in the window");
    } else if (hours) {
        snprintf(buf, n, "%.4g h", x / 3600.0);
    } else {
        snprintf(buf, n, "%.0f s", x);
    }
    return buf;
}

const char *af_goodput_interval_text(char *buf, size_t n, double x, double W, int hours)
{
    char d[48];
    af_goodput_duration_text(d, sizeof d, x, W, hours);
    snprintf(buf, n, "%s%s", isfinite(x) && x < W ? "every " : "", d);
    return buf;
}
