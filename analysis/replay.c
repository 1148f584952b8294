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

/* How many of the cycles of wall time `cycle` that fit in `room` to skip: all but the last,
 * which the state machine replays itself, so that whatever happens at the stretch's end
 * (a change of capacity, an interruption, the window's end) is met exactly as without a skip. */
static double skippable(double room, double cycle)
{
    if (!(cycle > 0) || !isfinite(cycle)) {
        return 0.0;
    }
    double n = floor(room / cycle);
    return n >= 2.0 ? n - 1.0 : 0.0;
}

/* Skips whole cycles of work and write inside a stretch of `room` seconds at a constant rate r
 * with no interruption: each replays the same way, so n of them at once give what n turns of the
 * state machine give (to rounding), at O(1) cost whatever the interval. Called at a write's point
 * (P = rep): a checkpoint cycle (tau of work, a checkpoint, and remap's replicas inside it: one
 * for each whole rho of work short of tau), or, inside a checkpoint cycle, remap's replica
 * cycles (rho of work, a replica) short of the checkpoint. Returns 1 when it skipped any. */
static int fast_forward(const af_replay_params_t *p, double r, double room, int remap, double *P,
                        double *ck, double *rep, double *t, af_replay_result_t *out)
{
    const double tau = p->tau_s;
    const double rho = remap ? p->rho_s : INFINITY;
    if (*P == *ck) {
        /* replicas in one checkpoint cycle: at rho, 2 rho, ... below tau */
        double m = isfinite(rho) && rho < tau ? ceil(tau / rho) - 1.0 : 0.0;
        double cycle = tau / r + m * p->replica_s + p->checkpoint_s;
        double n = skippable(room, cycle);
        if (n > 0) {
            *P += n * tau;
            *ck = *rep = *P;
            *t += n * cycle;
            out->checkpoints += (int64_t)n;
            out->replicas += (int64_t)(n * m);
            out->checkpoint_time_s += n * p->checkpoint_s;
            out->replica_time_s += n * m * p->replica_s;
            out->capacity_loss_s += n * (1.0 - r) * tau / r;
            return 1;
        }
    }
    if (isfinite(rho) && *rep + rho < *ck + tau) {
        /* replica cycles before the checkpoint is due, the last of them left to the machine */
        double left = ceil((*ck + tau - *rep) / rho) - 1.0;
        double cycle = rho / r + p->replica_s;
        double n = skippable(room, cycle);
        n = n < left - 1.0 ? n : left - 1.0;
        if (n > 0) {
            *P += n * rho;
            *rep = *P;
            *t += n * cycle;
            out->replicas += (int64_t)n;
            out->replica_time_s += n * p->replica_s;
            out->capacity_loss_s += n * (1.0 - r) * rho / r;
            return 1;
        }
    }
    return 0;
}

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

    double t = 0.0;     /* wall clock */
    double P = 0.0;     /* work done and not rolled back */
    double ck = 0.0;    /* work in the last completed checkpoint */
    double rep = 0.0;   /* work in the last completed replica or checkpoint (>= ck) */
    double end = 0.0;   /* when the current write or recovery ends */
    double fresh = 0.0; /* the work when the job last came back to work: the step in flight
                           began no earlier (shrink_rebuild) */
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
                fresh = P;
                cap_advance(&cap, t);
                continue;
            }
            /* [0, W): an interruption at W itself falls outside the window */
            hit = t == t_int && t_int < W;
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
            if (r > 0 && P == rep &&
                fast_forward(p, r, seg_end - t, remap, &P, &ck, &rep, &t, out)) {
                continue;
            }
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
            hit = t == t_int && t_int < W;
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
            /* shrink_rebuild: the step in flight, if one was (not while writing or recovering);
             * it began when the job last came back to work (a checkpoint or a recovery ended),
             * so it holds at most the work done since */
            if (st == S_WORK) {
                double l = P - fresh < p->step_s ? P - fresh : p->step_s;
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

double af_replay_whole_steps(double x_s, double step_s, double window_s)
{
    if (isnan(x_s)) {
        return NAN;
    }
    if (!isfinite(x_s) || x_s >= window_s || !(step_s > 0)) {
        return window_s;
    }
    double k = floor(x_s / step_s + 0.5);
    k = k >= 1.0 ? k : 1.0;
    return k * step_s < window_s ? k * step_s : window_s;
}

/* ---- the search over whole steps ----------------------------------------------------------- */

typedef struct opt {
    const af_replay_space_t *sp;
    af_replay_objective_t f;
    void *ctx;
    double kmax; /* the multiple of step_s that reaches W: ceil(W / step_s) */
    double tau, rho, best;
    int have;
} opt_t;

/* The interval of k steps (k >= kmax: W, no write in the window). */
static double interval_of(const opt_t *o, double k)
{
    return k >= o->kmax ? o->sp->window_s : k * o->sp->step_s;
}

static double steps_of(const opt_t *o, double x)
{
    return !isfinite(x) || x >= o->sp->window_s
               ? o->kmax
               : af_replay_whole_steps(x, o->sp->step_s, o->sp->window_s) / o->sp->step_s;
}

/* An upper bound of the ETTR at (tau, rho) whatever the history: every tau of work in the last
 * checkpoint took a write of checkpoint_s, so n checkpoints need n (tau + checkpoint_s) <= W and
 * useful <= (n + 1) tau: ETTR <= tau / (tau + checkpoint_s) + tau / W; remap's replicas bound it
 * the same way with the cheaper of its two writes. A point whose bound does not beat the best so
 * far is not replayed: the search skips the costly short intervals that cannot win. */
static double upper_bound(const opt_t *o, double tau, double rho)
{
    const af_replay_space_t *sp = o->sp;
    const double W = sp->bound_window_s;
    double b = tau / (tau + sp->checkpoint_s) + tau / W;
    if (sp->knobs & AF_REPLAY_KNOB_RHO) {
        double w = sp->replica_s < sp->checkpoint_s ? sp->replica_s : sp->checkpoint_s;
        double br = rho / (rho + w) + rho / W;
        b = br < b ? br : b;
    }
    return b;
}

/* Evaluates (tau, rho); keeps it when it beats the best so far (ties keep the earlier). */
static af_result_t visit(opt_t *o, double tau, double rho, double *ettr)
{
    if (o->have && upper_bound(o, tau, rho) <= o->best) {
        *ettr = -1.0;
        return AF_OK;
    }
    double e = 0;
    AF_CHECK(o->f(o->ctx, tau, rho, &e));
    if (!o->have || e > o->best) {
        o->best = e;
        o->tau = tau;
        o->rho = rho;
        o->have = 1;
    }
    *ettr = e;
    return AF_OK;
}

static af_result_t visit_k(opt_t *o, int rho_axis, double k, double *ettr)
{
    double x = interval_of(o, k);
    return visit(o, rho_axis ? o->tau : x, rho_axis ? x : o->rho, ettr);
}

/* The k of a log-spaced scan's point j of n over [1, kmax] (j = n - 1: kmax). */
static double scan_k(const opt_t *o, int j, int n)
{
    return j >= n - 1 ? o->kmax : floor(exp(log(o->kmax) * j / (n - 1)) + 0.5);
}

/* One coordinate (tau, or rho), the other fixed at the best so far: a log-spaced scan of the
 * whole-step multiples, then every whole step around the best point (below). The ETTR of a
 * fixed history is piecewise smooth in an interval, not unimodal: the scan finds the piece, the
 * steps around it its top. */
static af_result_t line(opt_t *o, int rho_axis)
{
    enum { SCAN = 40, FINE = 256 };
    double e = 0;
    for (int j = 0; j < SCAN; ++j) {
        double k = scan_k(o, j, SCAN);
        if (j > 0 && k == scan_k(o, j - 1, SCAN)) {
            continue;
        }
        AF_CHECK(visit_k(o, rho_axis, k, &e));
    }
    /* Between the log scan's neighbours of the best point, every whole step where they are at
     * most FINE apart; else FINE evenly spaced steps, then the same between the neighbours of
     * their best, down to every step. The ETTR of a history with few interruptions jumps from
     * one step to the next (a checkpoint just before or just after an interruption), so its
     * top can be one step wide: no point skipped near the best finds it. */
    double kb = steps_of(o, rho_axis ? o->rho : o->tau);
    double ratio = exp(log(o->kmax) / (SCAN - 1));
    double a = floor(kb / ratio);
    double b = ceil(kb * ratio);
    for (;;) {
        a = a >= 1.0 ? a : 1.0;
        b = b <= o->kmax ? b : o->kmax;
        if (b - a <= FINE) {
            for (double k = a; k <= b; k += 1.0) {
                AF_CHECK(visit_k(o, rho_axis, k, &e));
            }
            return AF_OK;
        }
        double h = (b - a) / FINE;
        for (int j = 0; j <= FINE; ++j) {
            AF_CHECK(visit_k(o, rho_axis, floor(a + j * h + 0.5), &e));
        }
        kb = steps_of(o, rho_axis ? o->rho : o->tau);
        a = floor(kb - h);
        b = ceil(kb + h);
    }
}

af_result_t af_replay_optimise(const af_replay_space_t *sp, af_replay_objective_t f, void *ctx,
                               const double (*cand)[2], int ncand, double *tau_s, double *rho_s,
                               double *ettr)
{
    if (sp == NULL || f == NULL || !(sp->step_s > 0) || !isfinite(sp->step_s) ||
        !(sp->window_s > 0) || !isfinite(sp->window_s) || ncand < 1 || cand == NULL ||
        (sp->knobs & ~(AF_REPLAY_KNOB_TAU | AF_REPLAY_KNOB_RHO)) != 0 || sp->knobs == 0) {
        af_error_set("goodput search: no objective, a step or window <= 0, or no candidate");
        return AF_ERR_USAGE;
    }
    opt_t o = {.sp = sp, .f = f, .ctx = ctx, .kmax = ceil(sp->window_s / sp->step_s)};
    o.kmax = o.kmax >= 1.0 ? o.kmax : 1.0;
    const int two = sp->knobs == (AF_REPLAY_KNOB_TAU | AF_REPLAY_KNOB_RHO);
    double e = 0;
    /* The candidates, rounded to whole steps, in the order given: on a tie the first stays. A
     * coordinate the search does not move keeps the first candidate's value as it is. */
    const double fixed_tau = cand[0][0];
    const double fixed_rho = cand[0][1];
    for (int c = 0; c < ncand; ++c) {
        double tau = sp->knobs & AF_REPLAY_KNOB_TAU
                         ? af_replay_whole_steps(cand[c][0], sp->step_s, sp->window_s)
                         : fixed_tau;
        double rho = sp->knobs & AF_REPLAY_KNOB_RHO
                         ? af_replay_whole_steps(cand[c][1], sp->step_s, sp->window_s)
                         : fixed_rho;
        AF_CHECK(visit(&o, tau, rho, &e));
    }
    if (two) {
        /* A coarse scan of the plane first, so that the refinement one coordinate at a time
         * starts on the right hill, not on the one its first candidate stood on. */
        enum { COARSE = 12 };
        for (int i = 0; i < COARSE; ++i) {
            double kt = scan_k(&o, i, COARSE);
            for (int j = 0; j < COARSE; ++j) {
                double kr = scan_k(&o, j, COARSE);
                AF_CHECK(visit(&o, interval_of(&o, kt), interval_of(&o, kr), &e));
            }
        }
        AF_CHECK(line(&o, 1));
        AF_CHECK(line(&o, 0));
        AF_CHECK(line(&o, 1));
    } else {
        AF_CHECK(line(&o, (sp->knobs & AF_REPLAY_KNOB_RHO) != 0));
    }
    *tau_s = o.tau;
    *rho_s = o.rho;
    *ettr = o.best;
    return AF_OK;
}

typedef struct search {
    const af_replay_timeline_t *tl;
    af_replay_params_t p;
    af_replay_policy_t policy;
    af_replay_result_t last;
} search_t;

static af_result_t search_ettr(void *ctx, double tau_s, double rho_s, double *ettr)
{
    search_t *s = ctx;
    s->p.tau_s = tau_s;
    s->p.rho_s = rho_s;
    AF_CHECK(af_replay_run(s->tl, &s->p, s->policy, &s->last));
    *ettr = s->last.ettr;
    return AF_OK;
}

af_result_t af_replay_search(const af_replay_timeline_t *tl, const af_replay_params_t *p,
                             af_replay_policy_t policy, af_replay_knob_t knob, double *best_s,
                             af_replay_result_t *out)
{
    AF_CHECK(validate(tl, p, policy));
    search_t s = {.tl = tl, .p = *p, .policy = policy};
    const double W = tl->window_s;
    const int replica = knob == AF_REPLAY_RHO;
    const double write = replica ? p->replica_s : p->checkpoint_s;
    const double M = af_replay_mtbi(tl, policy, replica);
    /* W first: one interval over the whole window is no write at all; then Young's and Daly's,
     * so that the search never does worse than either at the whole steps they round to. */
    const double xs[3] = {W, af_replay_young(write, M), af_replay_daly(write, M)};
    double cand[3][2];
    for (int c = 0; c < 3; ++c) {
        cand[c][0] = replica ? p->tau_s : xs[c];
        cand[c][1] = replica ? xs[c] : p->rho_s;
    }
    af_replay_space_t sp = {.step_s = p->step_s,
                            .window_s = W,
                            .bound_window_s = W,
                            .checkpoint_s = p->checkpoint_s,
                            .replica_s = p->replica_s,
                            .knobs = replica ? AF_REPLAY_KNOB_RHO : AF_REPLAY_KNOB_TAU};
    double tau = 0;
    double rho = 0;
    double e = 0;
    AF_CHECK(af_replay_optimise(&sp, search_ettr, &s, (const double(*)[2])cand, 3, &tau, &rho, &e));
    *best_s = replica ? rho : tau;
    /* the best point's own replay, for its parts */
    AF_CHECK(search_ettr(&s, tau, rho, &e));
    *out = s.last;
    return AF_OK;
}
