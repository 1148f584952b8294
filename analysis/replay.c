/* agefence-report: goodput by replay (see replay.h and docs/goodput.md). */
#include "replay.h"

#include <math.h>
#include <string.h>

void af_replay_defaults(af_replay_params_t *p)
{
    memset(p, 0, sizeof *p);
    p->checkpoint_s = 60.0;
    p->restart_s = 600.0;
    p->tau_s = INFINITY;
    p->replica_s = 1.0;
    p->rho_s = INFINITY;
    p->detect_s = 1.0;
    p->remap_s = 10.0;
    p->shrink_s = 2.0;
    p->repartition_s = 30.0;
    p->step_s = 10.0;
    p->spare_nodes = 0;
    p->replace_s = 3600.0;
    p->devices_per_node = 1;
}

const char *af_replay_policy_name(af_replay_policy_t policy)
{
    switch (policy) {
    case AF_REPLAY_CHECKPOINT_RESTART:
        return "checkpoint_restart";
    case AF_REPLAY_REMAP:
        return "remap";
    case AF_REPLAY_SHRINK_REBUILD:
        return "shrink_rebuild";
    default:
        return "unknown";
    }
}

/* One message, naming the field, for the first bad value found. */
static af_result_t bad(const char *what, double v)
{
    af_error_set("goodput replay: %s = %g is out of range", what, v);
    return AF_ERR_USAGE;
}

static af_result_t validate(const af_replay_timeline_t *tl, const af_replay_params_t *p,
                            af_replay_policy_t policy)
{
    if (tl == NULL || p == NULL) {
        af_error_set("goodput replay: no timeline or no parameters");
        return AF_ERR_USAGE;
    }
    if ((int)policy < 0 || policy >= AF_REPLAY_NPOLICY) {
        af_error_set("goodput replay: unknown policy %d", (int)policy);
        return AF_ERR_USAGE;
    }
    if (!(tl->window_s > 0) || !isfinite(tl->window_s)) {
        return bad("window_s (W)", tl->window_s);
    }
    if (tl->devices < 1) {
        return bad("devices", (double)tl->devices);
    }
    const struct {
        const char *name;
        double v;
    } dur[] = {{"checkpoint_s", p->checkpoint_s},
               {"restart_s", p->restart_s},
               {"replica_s", p->replica_s},
               {"detect_s", p->detect_s},
               {"remap_s", p->remap_s},
               {"shrink_s", p->shrink_s},
               {"repartition_s", p->repartition_s},
               {"step_s", p->step_s}};
    for (size_t k = 0; k < sizeof dur / sizeof dur[0]; ++k) {
        if (!(dur[k].v >= 0) || !isfinite(dur[k].v)) {
            return bad(dur[k].name, dur[k].v);
        }
    }
    /* Intervals may be infinite (no write), never <= 0 or NaN. replace_s may be infinite (a
     * spare that never arrives). */
    if (!(p->tau_s > 0)) {
        return bad("tau_s", p->tau_s);
    }
    if (!(p->rho_s > 0)) {
        return bad("rho_s", p->rho_s);
    }
    if (!(p->replace_s >= 0)) {
        return bad("replace_s", p->replace_s);
    }
    if (p->spare_nodes < 0) {
        return bad("spare_nodes", (double)p->spare_nodes);
    }
    if (p->devices_per_node < 1) {
        return bad("devices_per_node", (double)p->devices_per_node);
    }
    if (tl->n_intr < 0 || (tl->n_intr > 0 && tl->intr == NULL)) {
        return bad("n_intr", (double)tl->n_intr);
    }
    for (int64_t i = 0; i < tl->n_intr; ++i) {
        const af_replay_intr_t *x = &tl->intr[i];
        if (!(x->t_s >= 0) || !isfinite(x->t_s) || (i > 0 && x->t_s < tl->intr[i - 1].t_s)) {
            af_error_set("goodput replay: interruption %lld at t = %g s is %s", (long long)i,
                         x->t_s, isfinite(x->t_s) && x->t_s >= 0 ? "out of order" : "not a time");
            return AF_ERR_USAGE;
        }
        if (x->kind != AF_REPLAY_HARDWARE && x->kind != AF_REPLAY_JOB) {
            af_error_set("goodput replay: interruption %lld has unknown kind %d", (long long)i,
                         (int)x->kind);
            return AF_ERR_USAGE;
        }
        if (x->kind == AF_REPLAY_HARDWARE && x->devices_lost < 0) {
            af_error_set("goodput replay: hardware interruption %lld loses %lld devices",
                         (long long)i, (long long)x->devices_lost);
            return AF_ERR_USAGE;
        }
    }
    if (tl->n_pace < 0 || (tl->n_pace > 0 && tl->pace == NULL)) {
        return bad("n_pace", (double)tl->n_pace);
    }
    for (int64_t i = 0; i < tl->n_pace; ++i) {
        const af_replay_pace_t *x = &tl->pace[i];
        if (!(x->t_s >= 0) || !isfinite(x->t_s) || (i > 0 && x->t_s < tl->pace[i - 1].t_s) ||
            !(x->pace >= 0 && x->pace <= 1)) {
            af_error_set("goodput replay: pace point %lld (t = %g s, pace %g) is out of order "
                         "or outside [0, 1]",
                         (long long)i, x->t_s, x->pace);
            return AF_ERR_USAGE;
        }
    }
    return AF_OK;
}

/* The capacity of the fleet over time, the same for every policy: two cursors over the hardware
 * losses (one takes each loss's devices out at its time; one gives back, replace_s later, the
 * spares that loss drew: the losses draw in their order, so that cursor counts the draws itself)
 * and one over the pace series. It only moves forward; each change costs O(1) amortised. */
typedef struct cap {
    const af_replay_timeline_t *tl;
    double replace_s;
    int64_t i_loss; /* the next interruption the loss cursor looks at */
    int64_t i_back; /* the next interruption the return cursor looks at */
    int64_t spares; /* spare devices not drawn yet by the losses the return cursor passed */
    int64_t out;    /* devices out of service now */
    int returned;   /* a spare has come back: the run's placement no longer applies */
    int64_t i_pace; /* the next pace point */
    double pace;
} cap_t;

static void cap_init(cap_t *c, const af_replay_timeline_t *tl, const af_replay_params_t *p)
{
    memset(c, 0, sizeof *c);
    c->tl = tl;
    c->replace_s = p->replace_s;
    if (__builtin_mul_overflow(p->spare_nodes, p->devices_per_node, &c->spares)) {
        c->spares = INT64_MAX;
    }
    c->pace = 1.0;
}

static int64_t spare_draw(int64_t lost, int64_t spares)
{
    return lost < spares ? lost : spares;
}

/* Applies every change at or before t: losses first, then returns (a replace_s of 0 gives the
 * device back at the instant it was lost), then the pace. */
static void cap_advance(cap_t *c, double t)
{
    const af_replay_timeline_t *tl = c->tl;
    while (c->i_loss < tl->n_intr) {
        const af_replay_intr_t *x = &tl->intr[c->i_loss];
        if (x->kind == AF_REPLAY_HARDWARE) {
            if (x->t_s > t) {
                break;
            }
            /* saturating: a damaged log's counts must not overflow the sum */
            c->out = x->devices_lost > INT64_MAX - c->out ? INT64_MAX : c->out + x->devices_lost;
        }
        c->i_loss++;
    }
    while (c->i_back < c->i_loss) {
        const af_replay_intr_t *x = &tl->intr[c->i_back];
        if (x->kind == AF_REPLAY_HARDWARE) {
            int64_t s = spare_draw(x->devices_lost, c->spares);
            if (s > 0 && x->t_s + c->replace_s > t) {
                break;
            }
            c->spares -= s;
            c->out -= s;
            c->returned |= s > 0;
        }
        c->i_back++;
    }
    while (c->i_pace < tl->n_pace && tl->pace[c->i_pace].t_s <= t) {
        c->pace = tl->pace[c->i_pace].pace;
        c->i_pace++;
    }
}

/* The time of the next change after the last cap_advance (INFINITY: none). */
static double cap_next(const cap_t *c)
{
    const af_replay_timeline_t *tl = c->tl;
    /* cap_advance leaves the loss cursor on the next hardware loss (it steps over job-level
     * interruptions), so this is O(1). */
    double next = c->i_loss < tl->n_intr ? tl->intr[c->i_loss].t_s : INFINITY;
    /* The return cursor waits at a loss with a spare (cap_advance stops only there); losses it
     * has not reached yet come later. */
    if (c->i_back < c->i_loss) {
        double back = tl->intr[c->i_back].t_s + c->replace_s;
        next = back < next ? back : next;
    }
    if (c->i_pace < tl->n_pace && tl->pace[c->i_pace].t_s < next) {
        next = tl->pace[c->i_pace].t_s;
    }
    return next;
}

static double cap_rate(const cap_t *c, af_replay_policy_t policy)
{
    if (policy == AF_REPLAY_REMAP && c->tl->n_pace > 0 && !c->returned) {
        return c->pace;
    }
    int64_t d = c->tl->devices;
    return c->out >= d ? 0.0 : (double)(d - c->out) / (double)d;
}

typedef enum state { S_WORK, S_CKPT, S_REPLICA, S_RESTART, S_RECOVER } state_t;

af_result_t af_replay_run(const af_replay_timeline_t *tl, const af_replay_params_t *p,
                          af_replay_policy_t policy, af_replay_result_t *out)
{
    af_result_t rc = validate(tl, p, policy);
    if (rc != AF_OK) {
        return rc;
    }
    memset(out, 0, sizeof *out);
    const double W = tl->window_s;
    const int remap = policy == AF_REPLAY_REMAP;
    cap_t cap;
    cap_init(&cap, tl, p);
    cap_advance(&cap, 0.0);

    double t = 0.0;   /* wall clock */
    double P = 0.0;   /* work done and not rolled back */
    double ck = 0.0;  /* work in the last completed checkpoint */
    double rep = 0.0; /* work in the last completed replica or checkpoint (>= ck) */
    double end = 0.0; /* when the current write or recovery ends */
    state_t st = S_WORK;
    int64_t i = 0; /* the next interruption */

    while (t < W) {
        double t_int = i < tl->n_intr ? tl->intr[i].t_s : INFINITY;
        double horizon = t_int < W ? t_int : W;
        int hit = 0;
        if (st != S_WORK) {
            double until = end <= horizon ? end : horizon;
            double dt = until - t;
            double *acc = st == S_CKPT      ? &out->checkpoint_time_s
                          : st == S_REPLICA ? &out->replica_time_s
                          : st == S_RESTART ? &out->restart_time_s
                                            : &out->recover_time_s;
            *acc += dt;
            t = until;
            if (end <= horizon) {
                /* It completes before an interruption at the same instant. */
                if (st == S_CKPT) {
                    ck = rep = P;
                    out->checkpoints++;
                } else if (st == S_REPLICA) {
                    rep = P;
                    out->replicas++;
                }
                st = S_WORK;
                cap_advance(&cap, t);
                continue;
            }
            hit = t == t_int;
            cap_advance(&cap, t);
        } else {
            double to_ck = ck + p->tau_s - P;
            double to_rep = remap ? rep + p->rho_s - P : INFINITY;
            if (to_ck <= 0) {
                st = S_CKPT;
                end = t + p->checkpoint_s;
                continue;
            }
            if (to_rep <= 0) {
                st = S_REPLICA;
                end = t + p->replica_s;
                continue;
            }
            double need = to_ck <= to_rep ? to_ck : to_rep;
            double next = cap_next(&cap);
            double seg_end = next < horizon ? next : horizon;
            double r = cap_rate(&cap, policy);
            if (r > 0 && t + need / r <= seg_end) {
                double dt = need / r;
                out->capacity_loss_s += (1.0 - r) * dt;
                /* Exactly at the write's point, so no rounding drifts the schedule. */
                P = to_ck <= to_rep ? ck + p->tau_s : rep + p->rho_s;
                t += dt;
                cap_advance(&cap, t);
                continue;
            }
            double dt = seg_end - t;
            P += r * dt;
            out->capacity_loss_s += (1.0 - r) * dt;
            t = seg_end;
            cap_advance(&cap, t);
            hit = t == t_int;
        }
        if (!hit) {
            continue;
        }
        /* The interruption at t: the capacity already counts what it took away. */
        const af_replay_intr_t *x = &tl->intr[i++];
        out->interruptions++;
        if (x->kind == AF_REPLAY_JOB || policy == AF_REPLAY_CHECKPOINT_RESTART) {
            out->lost_s += P - ck;
            P = rep = ck;
            st = S_RESTART;
            end = t + p->restart_s;
        } else if (st == S_RESTART) {
            end = t + p->restart_s; /* the restart starts again */
        } else if (remap) {
            out->lost_s += P - rep;
            P = rep;
            st = S_RECOVER;
            end = t + p->detect_s + p->remap_s;
        } else {
            /* shrink_rebuild: the step in flight, if one was (not while writing or recovering) */
            if (st == S_WORK) {
                double l = P - ck < p->step_s ? P - ck : p->step_s;
                out->lost_s += l;
                P -= l;
            }
            st = S_RECOVER;
            end = t + p->shrink_s + p->repartition_s;
        }
    }
    out->useful_s = P;
    out->checkpointed_s = ck;
    out->ettr = P / W;
    return AF_OK;
}

double af_replay_young(double delta_s, double mtbi_s)
{
    if (!(mtbi_s > 0) || !isfinite(mtbi_s)) {
        return INFINITY;
    }
    return sqrt(2.0 * delta_s * mtbi_s);
}

double af_replay_daly(double delta_s, double mtbi_s)
{
    if (!(mtbi_s > 0) || !isfinite(mtbi_s)) {
        return INFINITY;
    }
    if (delta_s >= 2.0 * mtbi_s) {
        return mtbi_s;
    }
    double x = delta_s / (2.0 * mtbi_s);
    return sqrt(2.0 * delta_s * mtbi_s) * (1.0 + sqrt(x) / 3.0 + x / 9.0) - delta_s;
}

double af_replay_mtbi(const af_replay_timeline_t *tl, af_replay_policy_t policy, int replica)
{
    int64_t n = 0;
    for (int64_t i = 0; i < tl->n_intr; ++i) {
        const af_replay_intr_t *x = &tl->intr[i];
        if (!(x->t_s < tl->window_s)) {
            break;
        }
        if (replica ? x->kind == AF_REPLAY_HARDWARE
                    : policy == AF_REPLAY_CHECKPOINT_RESTART || x->kind == AF_REPLAY_JOB) {
            n++;
        }
    }
    return n > 0 ? tl->window_s / (double)n : INFINITY;
}

typedef struct search {
    const af_replay_timeline_t *tl;
    af_replay_params_t p;
    af_replay_policy_t policy;
    af_replay_knob_t knob;
    double best_x;
    af_replay_result_t best;
    int have;
} search_t;

/* Replays at interval x; keeps it when it beats the best so far (ties keep the earlier). */
static af_result_t probe(search_t *s, double x, double *ettr)
{
    af_replay_result_t r;
    if (s->knob == AF_REPLAY_TAU) {
        s->p.tau_s = x;
    } else {
        s->p.rho_s = x;
    }
    AF_CHECK(af_replay_run(s->tl, &s->p, s->policy, &r));
    if (!s->have || r.ettr > s->best.ettr) {
        s->best = r;
        s->best_x = x;
        s->have = 1;
    }
    *ettr = r.ettr;
    return AF_OK;
}

af_result_t af_replay_search(const af_replay_timeline_t *tl, const af_replay_params_t *p,
                             af_replay_policy_t policy, af_replay_knob_t knob, double *best_s,
                             af_replay_result_t *out)
{
    AF_CHECK(validate(tl, p, policy));
    search_t s = {.tl = tl, .p = *p, .policy = policy, .knob = knob};
    const double W = tl->window_s;
    const int replica = knob == AF_REPLAY_RHO;
    const double write = replica ? p->replica_s : p->checkpoint_s;
    const double M = af_replay_mtbi(tl, policy, replica);
    double e = 0;
    /* W first: one interval over the whole window is no write at all. Young's and Daly's are
     * candidates, so the search never does worse than either. */
    AF_CHECK(probe(&s, W, &e));
    double young = af_replay_young(write, M);
    double daly = af_replay_daly(write, M);
    AF_CHECK(probe(&s, young < W ? young : W, &e));
    AF_CHECK(probe(&s, daly < W ? daly : W, &e));

    enum { SCAN = 48, GOLDEN = 40 };
    double lo = write > W * 1e-4 ? write : W * 1e-4;
    if (lo > W) {
        lo = W;
    }
    double ratio = pow(W / lo, 1.0 / (SCAN - 1));
    double grid_best = -1.0;
    int j_best = 0;
    for (int j = 0; j < SCAN; ++j) {
        double x = j == SCAN - 1 ? W : lo * pow(ratio, j);
        AF_CHECK(probe(&s, x, &e));
        if (e > grid_best) {
            grid_best = e;
            j_best = j;
        }
    }
    /* The ETTR of a fixed history is piecewise smooth in the interval, not unimodal: refine
     * between the scan's neighbours of its best point only. */
    double a = lo * pow(ratio, j_best > 0 ? j_best - 1 : 0);
    double b = j_best < SCAN - 1 ? lo * pow(ratio, j_best + 1) : W;
    b = b < W ? b : W;
    const double g = 0.5 * (sqrt(5.0) - 1.0);
    double x1 = b - g * (b - a);
    double x2 = a + g * (b - a);
    double f1 = 0;
    double f2 = 0;
    AF_CHECK(probe(&s, x1, &f1));
    AF_CHECK(probe(&s, x2, &f2));
    for (int k = 0; k < GOLDEN; ++k) {
        if (f1 >= f2) {
            b = x2;
            x2 = x1;
            f2 = f1;
            x1 = b - g * (b - a);
            AF_CHECK(probe(&s, x1, &f1));
        } else {
            a = x1;
            x1 = x2;
            f1 = f2;
            x2 = a + g * (b - a);
            AF_CHECK(probe(&s, x2, &f2));
        }
    }
    *best_s = s.best_x;
    *out = s.best;
    return AF_OK;
}
