#include "goodput.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void af_goodput_defaults(af_goodput_params_t *p)
{
    p->step_s = 10.0;
    p->checkpoint_s = 60.0;
    p->restart_s = 600.0;
    p->shrink_s = 2.0;
    p->repartition_s = 30.0;
    p->replica_s = 1.0;
    p->detect_s = 1.0;
    p->remap_s = 10.0;
    p->replace_s = 3600.0;
    p->spare_nodes = 0;
}

void af_goodput_parse(af_goodput_params_t *p, const char *text)
{
    const char *at = text != NULL ? strstr(text, "\n[goodput]\n") : NULL;
    if (at == NULL) {
        return;
    }
    at += strlen("\n[goodput]\n");
    static const char *const keys[] = {"step_seconds",   "checkpoint_seconds",  "restart_seconds",
                                       "shrink_seconds", "repartition_seconds", "replica_seconds",
                                       "detect_seconds", "remap_seconds",       "replace_seconds",
                                       "spare_nodes"};
    enum { NKEY = sizeof keys / sizeof keys[0] };
    double spare = (double)p->spare_nodes;
    double *dst[NKEY] = {
        &p->step_s,    &p->checkpoint_s, &p->restart_s, &p->shrink_s,  &p->repartition_s,
        &p->replica_s, &p->detect_s,     &p->remap_s,   &p->replace_s, &spare};
    /* key = value lines up to the next section */
    while (*at != '\0' && *at != '[') {
        const char *end = strchr(at, '\n');
        size_t len = end != NULL ? (size_t)(end - at) : strlen(at);
        char line[256];
        if (len < sizeof line) {
            memcpy(line, at, len);
            line[len] = '\0';
            for (size_t k = 0; k < NKEY; ++k) {
                size_t kl = strlen(keys[k]);
                double v = 0;
                if (strncmp(line, keys[k], kl) == 0 && sscanf(line + kl, " = %lf", &v) == 1 &&
                    isfinite(v) && v >= 0) {
                    *dst[k] = v;
                }
            }
        }
        if (end == NULL) {
            break;
        }
        at = end + 1;
    }
    /* sim/io/config.c allows at most 1e9 spare nodes: an integer, exactly a double */
    p->spare_nodes = spare <= 1e9 ? (int64_t)spare : (int64_t)1e9;
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
    /* The spares that would take back every device lost in the window, in whole nodes. */
    int64_t lost = 0;
    for (int64_t i = 0; i < tl->n_intr && tl->intr[i].t_s < W; ++i) {
        const af_replay_intr_t *x = &tl->intr[i];
        if (x->kind == AF_REPLAY_HARDWARE && x->devices_lost > 0) {
            lost = x->devices_lost > INT64_MAX - lost ? INT64_MAX : lost + x->devices_lost;
        }
    }
    const int64_t dpn = p->devices_per_node >= 1 ? p->devices_per_node : 1;
    out->spares_for_all = lost / dpn + (lost % dpn != 0);
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
        if (out->spares_for_all > p->spare_nodes) {
            af_replay_params_t q = *p;
            q.spare_nodes = out->spares_for_all;
            AF_CHECK(af_goodput_at(tl, &q, pol, tau, rho, &r));
            g->spared_ettr = r.ettr;
        }
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
