/* agefence driver: the health phase of a step (DESIGN "One step", 1), the fleet model's side —
 * every rank ages its own devices' units (af_age_own_units), the ranks share the health
 * changes and the FADING units (af_gather_health), and every rank makes the same plan from them
 * (af_plan: drains, restores, quarantined suspects, declared stragglers), proves it is the same
 * (af_check_plan) and applies it (af_apply_plan). Calls go down: to steplog.c for the events,
 * to the plan (sim/plan) and to recovery for the replicas a plan loses. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/af_alloc.h"
#include "../../common/percentile.h"
#include "../../common/af_time.h"
#include "../io/backend.h"
#include "run_internal.h"
#include "../io/stop.h"

/* AGEFENCE_DEBUG=agingloads: after each step of the aging model, report the live units whose
 * rate was computed for another load than the placement holds, which would mean a load change
 * that the list of changed units missed (0 when the model saw the loads a visit of every unit
 * would have seen). O(units) per step: a check, not a mode to run at scale. */
static void debug_aging_loads(af_run_state_t *r)
{
    if (!r->health.debug_loads) {
        return;
    }
    int64_t stale = af_aging_stale_loads(&r->health.aging, r->s.pl.unit_load);
    if (stale != 0) {
        fprintf(stderr, "agefence: agingloads: tick %lld: %lld live units age at a stale load\n",
                (long long)r->s.tick, (long long)stale);
    }
}

/* The declared stragglers' units, ascending: the plan drains them, and the DMR pass twins
 * their blocks as it does the FADING units'. Insertion: declarations are rare. */
static void strag_insert(af_run_state_t *r, int64_t u)
{
    r->health.standing |= AF_STANDING_DECLARED;
    int64_t j = r->thr.n_strag_units++;
    while (j > 0 && r->thr.strag_units[j - 1] > u) {
        r->thr.strag_units[j] = r->thr.strag_units[j - 1];
        j--;
    }
    r->thr.strag_units[j] = (int32_t)u;
}

/* Appends a declared unit's change (FADING, by `cause`) to the plan's nc changes. The list holds
 * every change a step can make (sim/driver/step_init.c: the model changes each unit at most once
 * a step besides the scripted events' units, and a declaration takes a unit that is HEALTHY after
 * them), so a full list means that bound is broken: af_apply_plan reports it, no change is
 * dropped in silence. Returns the new count. */
static int64_t declared_change(af_run_state_t *r, int64_t nc, int64_t u, int cause)
{
    if (nc >= r->health.changes_cap) {
        if (!r->health.overflow) {
            af_error_set("step %lld: the plan's %lld health changes are full (unit %lld declared)",
                         (long long)r->s.tick, (long long)r->health.changes_cap, (long long)u);
        }
        r->health.overflow = 1;
        return nc;
    }
    r->health.changes[nc].unit = (int32_t)u;
    r->health.changes[nc].state = AF_FADING;
    r->health.changes[nc].cause = (int8_t)cause;
    return nc + 1;
}

/* Every rank: the per-block compute times of the last step (the tail of the exchange, the
 * same on every rank) go into the straggler detector; every device it declares has its HEALTHY
 * units changed to FADING (cause straggler), so the plan drains them and nothing chooses them
 * as a target, and an event names the device with its EWMA over the fleet median in
 * thousandths. Returns the new change count. */
static int64_t stragglers(af_run_state_t *r, int64_t nc)
{
    const uint64_t *w = r->halo.xchg_prev + af_xchg_len((int)r->s.B);
    for (int64_t d = 0; d < r->s.D; ++d) {
        memcpy(&r->thr.strag_in[d], &w[d], sizeof(double));
    }
    int64_t n = af_straggler_update(&r->thr.strag, r->thr.strag_in, r->thr.strag_new);
    for (int64_t i = 0; i < n; ++i) {
        int64_t d = r->thr.strag_new[i];
        double ratio = r->thr.strag.median > 0 ? r->thr.strag.mean[d] / r->thr.strag.median : 0;
        af_step_event(r, "straggler", -1, d * r->s.U * r->s.C, -1,
                      (int64_t)llround(ratio * 1000.0));
        for (int64_t k = 0; k < r->s.U; ++k) {
            int64_t u = d * r->s.U + k;
            if (r->s.unit_state[u] != AF_HEALTHY) {
                continue;
            }
            nc = declared_change(r, nc, u, AF_CAUSE_STRAGGLER);
            r->s.unit_state[u] = AF_FADING;
            af_placement_dir_unit(&r->s.pl, u);
            strag_insert(r, u);
        }
    }
    return nc;
}

/* Every rank, at each round of a step's retries: the units the fenced blocks ran on (still
 * their placement: the retry moves come after) count a fence while the coordinator calls them
 * HEALTHY (a FADING unit is already draining); a unit that reaches recovery.quarantine_after
 * is declared suspect at the next plan. The fenced list and the placement are the same on
 * every rank, so the counts are too. */
void af_count_fences(af_run_state_t *r)
{
    if (r->rc.det.quarantine == NULL) {
        return;
    }
    for (int64_t i = 0; i < r->halo.n_fenced; ++i) {
        int64_t u = af_slot_unit(&r->s.pl, r->s.pl.block_slot[r->halo.fenced[i]]);
        if (r->s.unit_state[u] != AF_HEALTHY || r->rc.det.quarantine[u] < 0 ||
            r->rc.det.quarantine[u] == AF_QUARANTINE_MAX) {
            continue;
        }
        if (++r->rc.det.quarantine[u] == r->s.cfg.quarantine_after &&
            r->rc.det.n_suspect_new < r->rc.det.suspect_cap) {
            r->rc.det.suspect_new[r->rc.det.n_suspect_new++] = (int32_t)u;
            r->health.standing |= AF_STANDING_SUSPECTS;
        }
    }
}

/* Every rank, in the plan: the suspects of the last step become FADING to the coordinator
 * (cause suspect), so the plan drains them with the stragglers' budget and nothing chooses
 * them as a target; an event names each. Returns the new change count. */
static int64_t declare_suspects(af_run_state_t *r, int64_t nc)
{
    for (int64_t i = 0; i < r->rc.det.n_suspect_new; ++i) {
        int64_t u = r->rc.det.suspect_new[i];
        if (r->s.unit_state[u] != AF_HEALTHY) {
            continue; /* it failed or faded on its own since */
        }
        af_step_event(r, "suspect", -1, u * r->s.C, -1, r->rc.det.quarantine[u]);
        nc = declared_change(r, nc, u, AF_CAUSE_SUSPECT);
        r->s.unit_state[u] = AF_FADING;
        af_placement_dir_unit(&r->s.pl, u);
        strag_insert(r, u);
        r->rc.det.quarantine[u] = (int32_t)(-1 - r->s.tick);
        r->rc.det.n_quarantined++;
    }
    r->rc.det.n_suspect_new = 0;
    r->health.standing &= ~AF_STANDING_SUSPECTS;
    return nc;
}

/* Whether unit u is one of the fleet's FADING units to the model (fade_units, ascending). */
static int model_fading(const af_run_state_t *r, int64_t u)
{
    int64_t at = af_lower_bound_i32(r->health.fade_units, r->health.n_fade, u);
    return at < r->health.n_fade && r->health.fade_units[at] == u;
}

/* The log's straggler_units of this step (rank 0): the declared units the model still calls
 * HEALTHY, neither DEAD (unit_state is DEAD exactly when the model says so) nor among the
 * model's FADING units of the step (fade_units). */
static void count_stragglers(af_run_state_t *r)
{
    r->thr.straggler_healthy = 0;
    for (int64_t i = 0; i < r->thr.n_strag_units; ++i) {
        int64_t u = r->thr.strag_units[i];
        r->thr.straggler_healthy += r->s.unit_state[u] != AF_DEAD && !model_fading(r, u);
    }
}

/* af_age_own_units past the model's step, when there is something to update: its changes, its
 * FADING units or the slowed units. */
static int64_t own_units_after(af_run_state_t *r, int64_t n)
{
    af_placement_changed_clear(&r->s.pl);
    debug_aging_loads(r);
    int64_t slow = 0;
    for (int64_t i = 0; i < r->health.aging.fading; ++i) {
        int64_t u = r->health.aging.fading_list[i];
        slow += af_throttle_factor(af_throttle_base(r, u), r->s.cfg.throttle_slowdown,
                                   r->s.cfg.throttle_exponent,
                                   af_aging_degradation(&r->health.aging, &r->s.cfg, u)) > 1.0;
    }
    for (int64_t i = 0; i < r->thr.n_slow; ++i) {
        slow += af_aging_state(&r->health.aging, r->thr.slow_list[i]) == AF_HEALTHY &&
                r->thr.slow_base[i] > 1.0;
    }
    r->health.slow_mine = slow;
    return n;
}

/* The step of the aging model and what follows it, in a step with something to do. Kept out of
 * line (noinline), as plan_busy is: the quiet paths of af_age_own_units and af_plan below are
 * then a few instructions each, next to each other, so that a quiet step brings back two or three
 * lines of code, not the whole of the busy paths' (sim/driver/health.h). */
__attribute__((noinline)) static int64_t own_units_busy(af_run_state_t *r)
{
    af_placement_t *pl = &r->s.pl;
    int64_t n = af_aging_step(&r->health.aging, &r->s.cfg, r->s.tick, pl->unit_load, pl->changed,
                              pl->n_changed, r->s.C, r->health.my_changes);
    return own_units_after(r, n);
}

__attribute__((noinline)) static void plan_busy(af_run_state_t *r, int64_t n_model);

/* Every rank: the step of the aging model for its own units. The model re-reads the loads of
 * the units the placement listed since the last step (moves of the last plan, retries,
 * restores, undone plans), and no other; every rank's placement lists the same. Returns the
 * changes, in my_changes. slow_mine counts the own live units that run slower than nominal:
 * the FADING ones whose throttling factor exceeds 1, and those a slow event named that the
 * model calls HEALTHY. (A FADING unit's corruption probability and degradation are the
 * model's, read where they are used: af_aging_p_corrupt, af_aging_degradation.) */
int64_t af_age_own_units(af_run_state_t *r)
{
    af_health_t *h = &r->health;
    /* Nothing for the model to do, nothing FADING, no slowed unit, nothing listed to clear:
     * slow_mine is 0 and nothing else changes. The health lines, the model's first line and the
     * placement's count are all this reads (sim/driver/health.h). */
    if (!h->own_slow && !h->debug_loads && h->aging.fading == 0 &&
        af_aging_step_quiet(&h->aging, r->s.tick, r->s.pl.n_changed)) {
        h->slow_mine = 0;
        return 0;
    }
    return own_units_busy(r);
}

void af_health_warm(const af_run_state_t *r)
{
    const char *h = (const char *)&r->health;
    __builtin_prefetch(h, 1);
    __builtin_prefetch(h + 64, 1);
    __builtin_prefetch(&r->health.aging, 1);
    __builtin_prefetch(&r->s.pl.n_changed, 0);
    /* And the quiet paths' code, into the caches the instruction fetch refills from. */
    __builtin_prefetch((const void *)(uintptr_t)af_age_own_units, 0);
    __builtin_prefetch((const void *)(uintptr_t)af_plan, 0);
}

/* Every rank: the plan. A step with no health change, nothing FADING, nothing standing (straggler
 * detection, declared units to drain, suspects to declare), no scripted event and no
 * interruption due has the empty plan on every rank: its header is all the step writes, from the
 * health lines alone (sim/driver/health.h), what plan_busy would have found at the cost of
 * reading the fleet's tables. */
void af_plan(af_run_state_t *r, int64_t n_model)
{
    af_health_t *hl = &r->health;
    const int64_t tick = r->s.tick;
    /* hours(tick) as af_jobintr_step computes it: an interruption is due once it is reached. */
    if (n_model == 0 && hl->n_fade == 0 && hl->standing == 0 && tick < hl->next_event &&
        (double)tick * hl->aging.dt_h < hl->intr_due_h) {
        memset(&hl->plan, 0, sizeof hl->plan);
        hl->plan.step = tick;
        hl->plan.rollback_to = -1;
        hl->plan.dead = hl->dead_units;
        hl->n_hits = 0;
        hl->reset_moves = 0;
        return;
    }
    plan_busy(r, n_model);
}

/* Every rank: the step's health changes and FADING units of the whole fleet, from every
 * rank's own, in the order one model of the whole fleet gives them: the ageing's changes by
 * ascending unit (the ranks' units are ascending ranges, in rank order), then the scripted
 * events' in the events' order (each rank lists its own in that order; they are merged here),
 * and the FADING units ascending (their ids only: their probabilities and degradations stay
 * with their own rank, the only one that uses them). Into changes (the number in *n_model)
 * and fade_units (n_fade); slow_units gets the fleet's slowed units. */
af_result_t af_gather_health(af_run_state_t *r, int64_t n_mine, int64_t *n_model)
{
    af_fabric_t *f = r->s.fab;
    const size_t cw = sizeof(af_health_change_t) / sizeof(int32_t);
    /* How many there are, fleet-wide, and the slowed units: in a quiet step (no change,
     * nothing FADING) this one three-word all-reduce is the coordinator's only collective. */
    int64_t counts[3] = {n_mine, r->health.aging.fading, r->health.slow_mine};
    AF_CHECK(f->ops->allreduce_sum_i64(f, counts, 3));
    r->thr.slow_units = counts[2];
    size_t total = 0;
    int64_t nc = 0;
    r->health.n_fade = 0;
    if (counts[0] > 0) {
        AF_CHECK(f->ops->allgatherv_i32(f, (const int32_t *)r->health.my_changes,
                                        (size_t)n_mine * cw, (int32_t *)r->health.changes,
                                        (size_t)r->health.changes_cap * cw, &total));
        nc = (int64_t)(total / cw);
    }
    if (counts[1] > 0) {
        AF_CHECK(f->ops->allgatherv_i32(f, r->health.aging.fading_list,
                                        (size_t)r->health.aging.fading, r->health.fade_units,
                                        (size_t)r->s.units, &total));
        r->health.n_fade = (int64_t)total;
    }
    if (nc != counts[0] || r->health.n_fade != counts[1]) {
        af_error_set("step %lld: %lld health changes and %lld FADING units gathered, %lld and "
                     "%lld counted",
                     (long long)r->s.tick, (long long)nc, (long long)r->health.n_fade,
                     (long long)counts[0], (long long)counts[1]);
        return AF_ERR_INTERNAL;
    }
    /* The scripted changes aside (every rank's, in rank order), the others closed up. */
    int64_t ns = 0;
    int64_t kept = 0;
    for (int64_t i = 0; i < nc; ++i) {
        if (r->health.changes[i].cause == AF_CAUSE_SCRIPTED ||
            r->health.changes[i].cause == AF_CAUSE_LINK_DOWN) {
            if (ns == r->health.scripted_cap) {
                af_error_set("step %lld: more scripted health changes than the events name (%lld)",
                             (long long)r->s.tick, (long long)r->health.scripted_cap - 1);
                return AF_ERR_INTERNAL;
            }
            r->health.scripted[ns++] = r->health.changes[i];
        } else {
            r->health.changes[kept++] = r->health.changes[i];
        }
    }
    /* Then in the events' order: each (event, unit) takes that unit's first change of the
     * event's kind not taken yet. A rank lists a unit's scripted changes in the events' order,
     * so the one a pair takes is the one it made. */
    for (int i = 0; i < r->s.cfg.n_events && ns > 0; ++i) {
        const af_event_cfg_t *e = &r->s.cfg.events[i];
        if (e->step != r->s.tick || e->action == AF_EVENT_SLOW ||
            e->action == AF_EVENT_LOSE_REPLICAS || e->action == AF_EVENT_INTERRUPT ||
            e->action == AF_EVENT_RESET_DEVICE) {
            continue;
        }
        int8_t st = e->action == AF_EVENT_FADE ? AF_FADING : AF_DEAD;
        int64_t span = e->unit_hi - e->unit_lo + 1;
        for (int64_t j = 0; j < af_event_devices(e) * span; ++j) {
            /* The model's order: devices [device, dev_hi], units [unit_lo, unit_hi] of each. */
            int32_t u = (int32_t)((e->device + j / span) * r->s.U + e->unit_lo + j % span);
            for (int64_t k = 0; k < ns; ++k) {
                if (r->health.scripted[k].unit == u && r->health.scripted[k].state == st) {
                    r->health.changes[kept++] = r->health.scripted[k];
                    r->health.scripted[k].unit = -1;
                    break;
                }
            }
        }
    }
    if (kept != nc) {
        af_error_set("step %lld: %lld scripted health changes match no event of the step",
                     (long long)r->s.tick, (long long)(nc - kept));
        return AF_ERR_INTERNAL;
    }
    *n_model = nc;
    return AF_OK;
}

/* The slot a replica or replica_lost event names as its `to`: the first of the device whose
 * memory keeps (kept) block b's replica, so the log says where each replica lives. */
int64_t af_replica_slot(const af_run_state_t *r, int64_t b)
{
    return (int64_t)r->rc.rep.dev[b] * r->s.U * r->s.C;
}

/* Rank 0: the replica_lost event of block b, whose replica held logical step `held` (the
 * block's slot now as from_slot, its replica's device as to_device). */
static void log_replica_lost(void *ctx, int64_t b, int64_t held)
{
    af_run_state_t *r = ctx;
    af_step_event(r, "replica_lost", b, r->s.pl.block_slot[b], af_replica_slot(r, b), held);
}

/* Every rank: the plan, from the step's health changes (the n_model of the model first) and
 * the fleet's FADING units, which every rank has (gather_health), and the same placement and
 * tables: every rank plans the same moves, and applies them to its placement here. */
__attribute__((noinline)) static void plan_busy(af_run_state_t *r, int64_t n_model)
{
    af_plan_header_t *h = &r->health.plan;
    memset(h, 0, sizeof *h);
    h->step = r->s.tick;
    h->rollback_to = -1;
    if (r->s.tick >= r->health.next_event) {
        r->health.next_event = af_config_next_event(&r->s.cfg, r->s.tick, 0);
    }
    int64_t nc = n_model;
    for (int64_t i = 0; i < nc; ++i) {
        const af_health_change_t *c = &r->health.changes[i];
        r->s.unit_state[c->unit] = c->state;
        af_placement_dir_unit(&r->s.pl, c->unit);
        r->health.dead_units += c->state == AF_DEAD;
    }
    if (r->s.cfg.straggler_detect) {
        nc = stragglers(r, nc);
    }
    nc = declare_suspects(r, nc);
    /* The step's interruptions, drawn alike on every rank, over the members that live after
     * the step's changes (unit_state is the fleet's, the same on every rank): dead hardware
     * interrupts nothing. A memory reset (cause hbm) restores every block of its device in
     * place, first in the plan, so that a drain of such a block later in the list reads its
     * restored state, and a block a restore or drain brings to the device this step keeps what
     * it brings. A device reset twice in a step is restored once. */
    r->health.n_hits = af_jobintr_step(&r->health.jobintr, &r->s.cfg, r->s.tick, r->s.unit_state,
                                       r->s.U, r->health.jobintr_hits, AF_JOBINTR_MAX_STEP);
    r->health.intr_due_h = af_jobintr_due_h(&r->health.jobintr);
    int64_t nr = 0;
    for (int i = 0; i < r->health.n_hits; ++i) {
        const af_jobintr_hit_t *x = &r->health.jobintr_hits[i];
        int again = 0;
        for (int j = 0; j < i && x->cause == AF_INTR_hbm; ++j) {
            again |= r->health.jobintr_hits[j].cause == AF_INTR_hbm &&
                     r->health.jobintr_hits[j].device == x->device;
        }
        if (x->cause == AF_INTR_hbm && !again) {
            nr += af_coord_plan_reset(&r->s.pl, r->s.unit_state, x->device, r->health.moves + nr);
        }
    }
    r->health.reset_moves = (int32_t)nr;
    /* The replicas kept in the memory of the devices that left the job whole in this step, or
     * whose memory was reset, are lost with it, before the restores look at them: a block whose
     * replica went with it restarts the run (below). */
    int64_t resets[AF_JOBINTR_MAX_STEP];
    int64_t n_resets = 0;
    for (int i = 0; i < r->health.n_hits; ++i) {
        if (r->health.jobintr_hits[i].cause == AF_INTR_hbm) {
            resets[n_resets++] = r->health.jobintr_hits[i].device;
        }
    }
    af_replicas_lose_devices(&r->rc, r->health.changes, n_model, resets, n_resets, log_replica_lost,
                             r);
    int64_t exhausted = 0;
    int64_t nm =
        nr + af_coord_plan_listed(&r->s.pl, r->s.unit_state, r->health.changes, nc,
                                  r->health.fade_units, r->health.n_fade, r->s.cfg.drain,
                                  r->s.cfg.max_moves_per_step, r->health.moves + nr, &exhausted);
    /* Declared stragglers drain like FADING units, with the budget the fading ones left. */
    int64_t drains = 0;
    for (int64_t i = 0; i < nm; ++i) {
        drains += r->health.moves[i].kind == AF_MOVE_DRAIN;
    }
    if (r->thr.n_strag_units > 0 && !exhausted && drains < r->s.cfg.max_moves_per_step) {
        nm += af_coord_plan_listed(
            &r->s.pl, r->s.unit_state, NULL, 0, r->thr.strag_units, r->thr.n_strag_units,
            r->s.cfg.drain, r->s.cfg.max_moves_per_step - drains, r->health.moves + nm, &exhausted);
    }
    /* A restore from a replica older than the committed state would mix steps. With
     * recovery.replay = local the block alone is replayed from its replica and the edges logged
     * beside it (sim/recovery/replicas.c); with global every block rolls back to the replica step.
     * A block whose replica was lost with it leaves only the initial state: every block restarts
     * from step 0 (so does a global rollback while some live block's replica is lost, since that
     * block would have nothing to roll back to). */
    int any_stale = 0;
    int any_lost = 0;
    for (int64_t i = 0; i < nm; ++i) {
        if (r->health.moves[i].kind == AF_MOVE_RESTORE) {
            int64_t rs = r->rc.rep.step[r->health.moves[i].block];
            any_lost |= rs < 0;
            any_stale |= rs >= 0 && rs != r->s.state_step;
        }
    }
    int global = r->s.cfg.replay == AF_REPLAY_GLOBAL;
    if (!exhausted && (any_lost || (global && any_stale && r->rc.rep.n_lost > 0))) {
        h->rollback_to = 0;
        h->restart = 1;
    } else if (!exhausted && global && any_stale) {
        h->rollback_to = r->rc.rep.replica_step;
    }
    if (r->slog.log != NULL) {
        count_stragglers(r); /* for the log's row, on the rank that writes it */
    }
    h->n_changes = nc;
    h->n_moves = nm;
    h->exhausted = exhausted;
    h->fading = r->health.n_fade;
    h->dead = r->health.dead_units;
    /* Events of the model and the plan. */
    for (int i = 0; i < r->s.cfg.n_events; ++i) {
        const af_event_cfg_t *e = &r->s.cfg.events[i];
        for (int64_t k = e->unit_lo;
             e->action == AF_EVENT_SLOW && e->step == r->s.tick && k <= e->unit_hi; ++k) {
            int64_t g = (e->device * r->s.U + k) * r->s.C;
            af_step_event(r, "slow", -1, g, -1, (int64_t)llround(e->factor * 1000.0));
        }
    }
    for (int64_t i = 0; i < n_model; ++i) {
        const af_health_change_t *c = &r->health.changes[i];
        /* Sudden: the unit's own exponential time, or its device's, node's or link's loss (the
         * detail says which). */
        int sudden = c->cause == AF_CAUSE_SUDDEN || c->cause == AF_CAUSE_DEVICE ||
                     c->cause == AF_CAUSE_NODE || c->cause == AF_CAUSE_LINK ||
                     c->cause == AF_CAUSE_LINK_DOWN;
        const char *kind = c->state == AF_FADING ? "fade" : sudden ? "sudden" : "death";
        int64_t g = (int64_t)c->unit * r->s.C;
        af_step_event(r, kind, -1, g, -1, c->cause);
        if (c->state != AF_FADING && r->slog.log != NULL) {
            af_log_death_interruption(r, r->health.changes, i, n_model);
        }
    }
    for (int64_t i = 0; i < nm; ++i) {
        /* A drain's detail is -1; a restore's the logical step its data comes from: its
         * replica's, or the rollback's (0 when every block restarts, a replica being lost). */
        const af_move_t *m = &r->health.moves[i];
        int restore = m->kind == AF_MOVE_RESTORE;
        af_step_event(r, restore ? "restore" : "drain", m->block, m->from_slot, m->to_slot,
                      !restore              ? -1
                      : h->rollback_to >= 0 ? h->rollback_to
                                            : r->rc.rep.step[m->block]);
    }
    if (h->rollback_to >= 0) {
        /* The detail: the logical steps lost (a restart loses them all). */
        af_step_event(r, "rollback", -1, -1, -1, r->s.state_step - h->rollback_to);
    }
    if (exhausted) {
        af_step_event(r, "capacity", -1, -1, -1, r->health.dead_units);
    }
    /* Job-level interruptions touch no unit and no block; memory resets were planned above.
     * The log has an `interrupt` event each (from_device: the device, or the node's first
     * device, it struck; detail: the cause), after the restores of the step. */
    for (int i = 0; i < r->health.n_hits; ++i) {
        af_log_interrupt(r, &r->health.jobintr_hits[i]);
    }
}

/* Every rank planned from the same facts; a digest of each rank's plan (its header and its
 * moves), combined with an exact max all-reduce of the digest and its complement, proves that
 * they all planned the same before any rank moves data (a rank that did not would pair its
 * transfers with nobody). Every rank fails alike when they differ. */
af_result_t af_check_plan(af_run_state_t *r)
{
    const af_plan_header_t *h = &r->health.plan;
    uint64_t d = 1469598103934665603ULL; /* FNV-1a over the plan's words */
    const int64_t head[] = {h->step,    h->n_changes, h->n_moves, h->rollback_to,
                            h->restart, h->exhausted, h->fading,  h->dead};
    for (size_t i = 0; i < sizeof head / sizeof head[0]; ++i) {
        d = (d ^ (uint64_t)head[i]) * 1099511628211ULL;
    }
    for (int64_t i = 0; i < h->n_moves; ++i) {
        const af_move_t *m = &r->health.moves[i];
        d = (d ^ (uint64_t)m->block) * 1099511628211ULL;
        d = (d ^ (uint64_t)m->to_slot) * 1099511628211ULL;
        d = (d ^ (uint64_t)m->kind) * 1099511628211ULL;
    }
    if (r->s.world.size == 1) {
        return AF_OK;
    }
    uint64_t w[2] = {d, ~d};
    AF_CHECK(r->s.fab->ops->allreduce_max_u64(r->s.fab, w, 2));
    if (w[0] != d || w[1] != ~d) {
        af_error_set("step %lld: the ranks planned different moves (rank %d: %lld moves, "
                     "%lld health changes)",
                     (long long)r->s.tick, r->s.world.rank, (long long)h->n_moves,
                     (long long)h->n_changes);
        return AF_ERR_INTERNAL;
    }
    return AF_OK;
}

/* Every rank: the health changes and the moves of the plan, in the tables and slots. */
af_result_t af_apply_plan(af_run_state_t *r)
{
    const af_plan_header_t *h = &r->health.plan;
    if (r->health.overflow) {
        return AF_ERR_INTERNAL; /* the message is declared_change's */
    }
    for (int64_t i = 0; i < h->n_changes; ++i) {
        const af_health_change_t *c = &r->health.changes[i];
        /* unit_state (and the placement's directory) took the change in the plan; the own
         * units' probabilities and degradations are the model's. */
        if (c->state == AF_DEAD) {
            /* A dead unit's memory is lost: poison its local slots so any read is caught. */
            for (int64_t k = 0; k < r->s.C; ++k) {
                int64_t g = (int64_t)c->unit * r->s.C + k;
                if (af_slot_is_local(&r->s.pl, g)) {
                    AF_CHECK(r->s.k->ops->poison_slot(r->s.k, (int)(g - r->s.slot0)));
                }
            }
        }
    }
    /* A memory reset's blocks (restored in place, planned first) lost their state: poison
     * their local slots, as a dead unit's, so that a restore that did not happen is caught. */
    for (int64_t i = 0; i < r->health.reset_moves; ++i) {
        int64_t g = r->health.moves[i].to_slot;
        if (af_slot_is_local(&r->s.pl, g)) {
            AF_CHECK(r->s.k->ops->poison_slot(r->s.k, (int)(g - r->s.slot0)));
        }
    }
    /* Slot control of every slot whose unit changed, and of the own FADING units (p rises;
     * slot control touches local slots only). */
    for (int64_t i = 0; i < h->n_changes; ++i) {
        for (int64_t k = 0; k < r->s.C; ++k) {
            af_slot_control(&r->rc, (int64_t)r->health.changes[i].unit * r->s.C + k);
        }
    }
    for (int64_t i = 0; i < r->health.aging.fading; ++i) {
        for (int64_t k = 0; k < r->s.C; ++k) {
            af_slot_control(&r->rc, (int64_t)r->health.aging.fading_list[i] * r->s.C + k);
        }
    }
    return AF_OK;
}

/* Every rank, at the start of an executed step: the lose_replicas events of the step. The
 * replicas of the blocks the named units hold now are lost (rep_step = -1), on every rank's
 * copy of the tables alike, before the coordinator plans; rank 0 logs a replica_lost event per
 * block (detail: the logical step the replica held). */
void af_lose_replicas(af_run_state_t *r)
{
    for (int i = 0; i < r->s.cfg.n_events; ++i) {
        const af_event_cfg_t *e = &r->s.cfg.events[i];
        if (e->action != AF_EVENT_LOSE_REPLICAS || e->step != r->s.tick) {
            continue;
        }
        for (int64_t k = e->unit_lo; k <= e->unit_hi; ++k) {
            for (int64_t c = 0; c < r->s.C; ++c) {
                int64_t g = (e->device * r->s.U + k) * r->s.C + c;
                int32_t b = r->s.pl.slot_block[g];
                if (b < 0 || r->rc.rep.step[b] < 0) {
                    continue;
                }
                af_step_event(r, "replica_lost", b, g, af_replica_slot(r, b), r->rc.rep.step[b]);
                r->rc.rep.step[b] = -1;
                r->rc.rep.n_lost++;
                r->rc.rep.n_replicas_lost++;
            }
        }
    }
}
