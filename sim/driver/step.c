/* agefence: one step of a run (DESIGN "One step").
 *   1. coordinator  every rank ages its own devices' units and the ranks share the health
 *                   changes; rank 0 plans restores and drains and broadcasts the moves
 *   2. moves        every rank applies them: slot copies, cross-rank transfers, a rollback
 *   3. kernel       DMR twins, masked compute with fault injection, containment, commit
 *   4. halo         neighbour edges owner to owner, exact sums of the figures, fenced ids;
 *                   fenced blocks are re-homed and recomputed within the step (retries)
 *   5. replica      every replica_interval logical steps, and each step's read-sets beside
 *                   the replicas
 *   6. log          gather to rank 0, one row
 * Every array touched here was allocated in af_step_init(). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/af_alloc.h"
#include "../../common/af_time.h"
#include "../io/backend.h"
#include "run_internal.h"
#include "../io/stop.h"

/* Retry rounds within one step before giving up (a retry runs on a healthy unit, without
 * injection: a second round means something is wrong). */
#define AF_MAX_RETRY_ROUNDS 6

/* AGEFENCE_DEBUG=allocafter=N or commafter=N: at executed step N every rank makes one
 * allocation through af_alloc, or creates one communicator, and frees it at once. The run
 * breaks a promise of start-up on purpose, so that tests/checks_fail.sh can show the counters
 * (allocs_after_init, comms_after_init) and the tests' checks on them catch it. */
static af_result_t debug_break_promise(af_run_state_t *r)
{
    static int64_t alloc_at = -2;
    static int64_t comm_at = -1;
    if (alloc_at == -2) {
        const char *d = getenv("AGEFENCE_DEBUG");
        const char *a = d != NULL ? strstr(d, "allocafter=") : NULL;
        const char *c = d != NULL ? strstr(d, "commafter=") : NULL;
        alloc_at = a != NULL ? atoll(a + strlen("allocafter=")) : -1;
        comm_at = c != NULL ? atoll(c + strlen("commafter=")) : -1;
    }
    if (r->tick == alloc_at) {
        void *p = af_alloc(64);
        if (p == NULL) {
            return AF_ERR_NOMEM;
        }
        af_free(p);
    }
    if (r->tick == comm_at) {
        af_fabric_t *f = NULL;
        AF_CHECK(af_fabric_mpi_split(r->fab, 0, r->world.rank, &f));
        af_fabric_destroy(&f);
    }
    return AF_OK;
}

/* AGEFENCE_DEBUG=scan: after each phase, report every live local slot whose committed buffer
 * holds a non-finite value (finds where a containment hole opens). */
static void debug_scan(af_run_state_t *r, const char *phase)
{
    static int on = -1;
    if (on < 0) {
        const char *d = getenv("AGEFENCE_DEBUG");
        on = d != NULL && strstr(d, "scan") != NULL;
    }
    if (!on) {
        return;
    }
    for (int s = 0; s < r->n_local; ++s) {
        if (r->k->slot_block[s] < 0 || r->k->slot_mode[s] == AF_MODE_DEAD ||
            r->k->slot_mode[s] == AF_MODE_SHADOW) {
            continue;
        }
        if (r->k->ops->read_slot(r->k, s, r->cellbuf) != AF_OK) {
            return;
        }
        int nf = 0;
        for (int64_t i = 0; i < r->T; ++i) {
            nf += af_nonfinite(r->cellbuf[i]);
        }
        if (nf) {
            fprintf(stderr,
                    "agefence: scan: tick %lld after %s: rank %d slot %lld block %d mode %d "
                    "holds %d non-finite values\n",
                    (long long)r->tick, phase, r->world.rank, (long long)(r->slot0 + s),
                    r->k->slot_block[s], r->k->slot_mode[s], nf);
        }
    }
}

/* AGEFENCE_DEBUG=agingloads: after each step of the aging model, report the live units whose
 * rate was computed for another load than the placement holds, which would mean a load change
 * that the list of changed units missed (0 when the model saw the loads a visit of every unit
 * would have seen). O(units) per step: a check, not a mode to run at scale. */
static void debug_aging_loads(af_run_state_t *r)
{
    static int on = -1;
    if (on < 0) {
        const char *d = getenv("AGEFENCE_DEBUG");
        on = d != NULL && strstr(d, "agingloads") != NULL;
    }
    if (!on) {
        return;
    }
    int64_t stale = af_aging_stale_loads(&r->aging, r->pl.unit_load);
    if (stale != 0) {
        fprintf(stderr, "agefence: agingloads: tick %lld: %lld live units age at a stale load\n",
                (long long)r->tick, (long long)stale);
    }
}

/* Rank 0: appends one event row of this step. */
static void log_row(af_run_state_t *r, af_event_row_t *e, const char *kind)
{
    e->step = r->tick;
    snprintf(e->kind, sizeof e->kind, "%s", kind);
    if (af_log_event(r->log, e) != AF_OK) {
        /* The run goes on (the steps are still logged); the loss is counted into /final and the
         * summary, and said once here. */
        if (r->event_log_errors++ == 0) {
            fprintf(stderr,
                    "agefence: rank 0: the log lost an event (step %lld, %s): %s; further losses "
                    "are counted in /final@event_log_errors\n",
                    (long long)r->tick, kind, af_error_message());
        }
    }
}

/* The detectors' tables, at start-up (every rank the same): with detect = sampled the blocks
 * grouped by their turn, so a step finds its sample without visiting every block; with
 * quarantine the fence counts of every unit and the declared suspects' list. */
static af_result_t detectors_init(af_run_state_t *r, size_t units)
{
    if (af_detect_flags(r->cfg.detect) & AF_DET_SAMPLED) {
        int64_t n = (int64_t)ceil(1.0 / r->cfg.sample_fraction);
        r->sample_period = n;
        r->sample_order = af_alloc(sizeof(int32_t) * (size_t)r->B);
        r->sample_start = af_alloc(sizeof(int64_t) * (size_t)(n + 1));
        if (r->sample_order == NULL || r->sample_start == NULL) {
            af_error_set("cannot allocate the sampled detector's %lld groups of %lld blocks",
                         (long long)n, (long long)r->B);
            return AF_ERR_NOMEM;
        }
        /* A counting sort of the blocks by turn: ascending block order within a turn. */
        memset(r->sample_start, 0, sizeof(int64_t) * (size_t)(n + 1));
        for (int64_t b = 0; b < r->B; ++b) {
            r->sample_start[af_sample_turn(r, b) + 1]++;
        }
        for (int64_t t = 0; t < n; ++t) {
            r->sample_start[t + 1] += r->sample_start[t];
        }
        for (int64_t b = 0; b < r->B; ++b) {
            int64_t t = af_sample_turn(r, b);
            r->sample_order[r->sample_start[t]++] = (int32_t)b;
        }
        for (int64_t t = n; t > 0; --t) {
            r->sample_start[t] = r->sample_start[t - 1];
        }
        r->sample_start[0] = 0;
    }
    if (r->cfg.quarantine_after > 0) {
        r->fence_count = af_alloc(sizeof(uint16_t) * (units > 0 ? units : 1));
        /* A unit reaches the count once; a step's fences (each retry round's, and the check
         * before the last) name at most AF_MAX_RETRY_ROUNDS + 1 units per block. */
        size_t most = (size_t)(AF_MAX_RETRY_ROUNDS + 1) * (size_t)r->B;
        r->suspect_cap = (int64_t)(most < units ? most : units);
        r->suspect_new =
            af_alloc(sizeof(int32_t) * (size_t)(r->suspect_cap > 0 ? r->suspect_cap : 1));
        r->quarantined_step = af_alloc(sizeof(int32_t) * (units > 0 ? units : 1));
        if (r->strag_units == NULL) {
            r->strag_units = af_alloc(sizeof(int32_t) * (units > 0 ? units : 1));
        }
        if (!r->fence_count || !r->suspect_new || !r->quarantined_step || !r->strag_units) {
            af_error_set("cannot allocate the quarantine tables of %zu units", units);
            return AF_ERR_NOMEM;
        }
        memset(r->fence_count, 0, sizeof(uint16_t) * units);
        for (size_t u = 0; u < units; ++u) {
            r->quarantined_step[u] = -1;
        }
    }
    return AF_OK;
}

static void log_event(af_run_state_t *r, const char *kind, int64_t block, int64_t from_slot,
                      int64_t to_slot, int64_t detail)
{
    if (r->log == NULL) {
        return;
    }
    af_event_row_t e;
    memset(&e, 0, sizeof e);
    e.block = block;
    const af_placement_t *p = &r->pl;
    e.from_device = from_slot >= 0 ? af_slot_device(p, from_slot) : -1;
    e.from_unit = from_slot >= 0 ? af_slot_unit(p, from_slot) % p->units : -1;
    e.from_slot = from_slot >= 0 ? from_slot % p->capacity : -1;
    e.to_device = to_slot >= 0 ? af_slot_device(p, to_slot) : -1;
    e.to_unit = to_slot >= 0 ? af_slot_unit(p, to_slot) % p->units : -1;
    e.to_slot = to_slot >= 0 ? to_slot % p->capacity : -1;
    e.detail = detail;
    log_row(r, &e, kind);
}

/* Rank 0: one row of /interruptions in this step (its hours: those the step ends at, as its
 * /steps row says; a step whose plan found the capacity exhausted stops before it serves its
 * hours, so its row keeps the previous step's), at time_h as the model drew it. Called from
 * plan(), after plan.exhausted. */
static void log_intr_row(af_run_state_t *r, int cause, int64_t device, int64_t node, double time_h)
{
    double hours = r->sim_hours + (r->plan.exhausted ? 0.0 : r->cfg.sim_hours_per_step);
    af_intr_row_t row = {r->tick, hours, cause, device, node, time_h};
    if (af_log_interruption(r->log, &row) != AF_OK && r->event_log_errors++ == 0) {
        fprintf(stderr,
                "agefence: rank 0: the log lost an interruption (step %lld): %s; further losses "
                "are counted in /final@event_log_errors\n",
                (long long)r->tick, af_error_message());
    }
}

/* The interruption cause (AF_INTR_*) of a death. */
static int death_intr_cause(const af_health_change_t *c)
{
    int link = c->cause == AF_CAUSE_LINK || c->cause == AF_CAUSE_LINK_DOWN;
    return c->cause == AF_CAUSE_DEVICE     ? AF_INTR_device
           : c->cause == AF_CAUSE_NODE     ? AF_INTR_node
           : link                          ? AF_INTR_link
           : c->cause == AF_CAUSE_SCRIPTED ? AF_INTR_scripted
           : c->cause == AF_CAUSE_SUDDEN   ? AF_INTR_sudden
                                           : AF_INTR_wearout;
}

/* Rank 0: the interruption the death ch[i] makes, unless the step counted it already: one per
 * node lost, per device lost, and per device whose units died of one other cause (the grouping
 * agefence-report applies to /events, analysis/interrupts.h). Its time is the earliest of the
 * deaths it counts: the model's changes are by ascending unit, so those of one device follow
 * ch[i] (those of a node's units all carry the node's loss time). */
static void log_death_interruption(af_run_state_t *r, const af_health_change_t *ch, int64_t i,
                                   int64_t n)
{
    const int64_t dpn = r->cfg.devices_per_node;
    const af_health_change_t *c = &ch[i];
    const int64_t dev = c->unit / r->U;
    int cause = death_intr_cause(c);
    if (cause == AF_INTR_node) {
        if (r->intr_node_tick[dev / dpn] == r->tick) {
            return;
        }
        r->intr_node_tick[dev / dpn] = r->tick;
    } else {
        if (r->intr_dev_tick[dev] != r->tick) {
            r->intr_dev_tick[dev] = r->tick;
            r->intr_dev_mask[dev] = 0;
        }
        if (r->intr_dev_mask[dev] & (1u << cause)) {
            return;
        }
        r->intr_dev_mask[dev] |= (uint16_t)(1u << cause);
    }
    double time_h = c->time_h;
    for (int64_t j = i + 1; j < n && ch[j].unit / r->U == dev; ++j) {
        if (ch[j].state != AF_FADING && death_intr_cause(&ch[j]) == cause &&
            ch[j].time_h < time_h) {
            time_h = ch[j].time_h;
        }
    }
    log_intr_row(r, cause, cause == AF_INTR_node ? -1 : dev, dev / dpn, time_h);
}

/* Rank 0: a job-level interruption's event: from_device is the device it struck, or the first
 * device of the node it struck, or -1 (the job); detail is its cause (AF_INTR_*). */
static void log_interrupt(af_run_state_t *r, const af_jobintr_hit_t *x)
{
    if (r->log == NULL) {
        return;
    }
    af_event_row_t e;
    memset(&e, 0, sizeof e);
    e.block = -1;
    e.from_device = x->device >= 0 ? x->device
                    : x->node >= 0 ? x->node * r->cfg.devices_per_node
                                   : -1;
    e.from_unit = e.from_slot = e.to_device = e.to_unit = e.to_slot = -1;
    e.detail = x->cause;
    log_row(r, &e, "interrupt");
    log_intr_row(r, x->cause, x->device, x->node, x->time_h);
}

af_result_t af_step_init(af_run_state_t *r)
{
    size_t B = (size_t)r->B;
    size_t units = (size_t)r->units;
    size_t T = (size_t)r->T;
    size_t D = (size_t)r->D;
    r->xlen = af_xchg_len((int)r->B) + (r->cfg.straggler_detect ? D : 0);
    r->xchg_prev = af_alloc(sizeof(uint64_t) * r->xlen);
    r->xchg_cur = af_alloc(sizeof(uint64_t) * r->xlen);
    r->cellbuf = af_alloc(sizeof(double) * T);
    r->twin_buf = af_alloc(sizeof(double) * T);
    r->unit_state = af_alloc(units);
    r->own_u0 = r->pl.dev_lo * r->U;
    r->own_units = (r->pl.dev_hi - r->pl.dev_lo) * r->U;
    size_t own = (size_t)(r->own_units > 0 ? r->own_units : 1);
    r->unit_p = af_alloc(sizeof(double) * own);
    r->unit_first_corrupt = af_alloc(sizeof(int32_t) * own);
    /* Changes: the model's, then those of declared stragglers (units the model left HEALTHY). */
    r->changes = af_alloc(sizeof(af_health_change_t) * 2 * units);
    /* A block moves at most once a step (a restore or a drain), but with memory resets a
     * block restored in place may also be drained: twice. */
    int resets = r->cfg.hbm_rate_per_hour > 0;
    for (int i = 0; i < r->cfg.n_events; ++i) {
        resets |= r->cfg.events[i].action == AF_EVENT_RESET_DEVICE;
    }
    r->moves = af_alloc(sizeof(af_move_t) * B * (resets ? 2 : 1));
    r->rep_rank = af_alloc(sizeof(int32_t) * B);
    r->rep_off = af_alloc(sizeof(int64_t) * B);
    size_t chunk = B < AF_XFER_CHUNK ? B : AF_XFER_CHUNK;
    r->stage_send = af_alloc(sizeof(double) * chunk * T);
    r->stage_recv = af_alloc(sizeof(double) * chunk * T);
    r->p2p = af_alloc(sizeof(af_p2p_t) * 2 * AF_XFER_CHUNK);
    r->xfer_set = af_alloc(sizeof(int64_t) * AF_XFER_SET);
    r->xfer_used = af_alloc(sizeof(int32_t) * 2 * AF_XFER_CHUNK);
    for (size_t i = 0; r->xfer_set != NULL && i < AF_XFER_SET; ++i) {
        r->xfer_set[i] = -1;
    }
    /* The twin candidates (FADING units' and stragglers' blocks, a unit possibly both, and the
     * sampled ones) before they are sorted and deduplicated: at most twice the blocks. */
    r->items = af_alloc(sizeof(int64_t) * 2 * B);
    r->twin = af_alloc(sizeof(int32_t) * B);
    r->dmr_mark = af_alloc((size_t)(r->n_local > 0 ? r->n_local : 1));
    r->committed_now = af_alloc((size_t)(r->n_local > 0 ? r->n_local : 1));
    size_t ldev = (size_t)(r->pl.dev_hi - r->pl.dev_lo);
    r->unit_base = af_alloc(sizeof(double) * own);
    r->unit_deg = af_alloc(sizeof(double) * own);
    r->unit_stamp = af_alloc(sizeof(int64_t) * own);
    r->slow_list = af_alloc(sizeof(int32_t) * own);
    r->dev_delay = af_alloc(sizeof(double) * (ldev > 0 ? ldev : 1));
    r->dev_words = af_alloc(sizeof(uint64_t) * D);
    if (!r->unit_base || !r->unit_deg || !r->unit_stamp || !r->slow_list || !r->dev_delay ||
        !r->dev_words || !r->unit_first_corrupt) {
        af_error_set("cannot allocate the throttling tables for %lld units", (long long)r->units);
        return AF_ERR_NOMEM;
    }
    const size_t nodes = D / (size_t)r->cfg.devices_per_node;
    r->intr_dev_tick = af_alloc(sizeof(int64_t) * D);
    r->intr_dev_mask = af_alloc(sizeof(uint16_t) * D);
    r->intr_node_tick = af_alloc(sizeof(int64_t) * (nodes > 0 ? nodes : 1));
    if (!r->intr_dev_tick || !r->intr_dev_mask || !r->intr_node_tick) {
        af_error_set("cannot allocate the interruption marks of %lld devices", (long long)D);
        return AF_ERR_NOMEM;
    }
    for (size_t d = 0; d < D; ++d) {
        r->intr_dev_tick[d] = -1;
    }
    for (size_t n = 0; n < nodes; ++n) {
        r->intr_node_tick[n] = -1;
    }
    for (int64_t k = 0; k < r->own_units; ++k) {
        r->unit_base[k] = 1.0;
        r->unit_stamp[k] = -1;
        r->unit_first_corrupt[k] = -1;
    }
    /* The own units any slow event names, once each (unit_stamp marks them for the moment). */
    r->n_slow = 0;
    int any_slow = 0;
    for (int i = 0; i < r->cfg.n_events; ++i) {
        const af_event_cfg_t *e = &r->cfg.events[i];
        any_slow |= e->action == AF_EVENT_SLOW;
        for (int64_t k = e->unit_lo; e->action == AF_EVENT_SLOW && k <= e->unit_hi; ++k) {
            int64_t u = e->device * r->U + k;
            if (u >= r->own_u0 && u < r->own_u0 + r->own_units &&
                r->unit_stamp[af_own_unit(r, u)] != -2) {
                r->unit_stamp[af_own_unit(r, u)] = -2;
                r->slow_list[r->n_slow++] = (int32_t)u;
            }
        }
    }
    for (int64_t i = 0; i < r->n_slow; ++i) {
        r->unit_stamp[af_own_unit(r, r->slow_list[i])] = -1;
    }
    /* The same on every rank: what the scenario allows, not what this rank's units see. */
    r->throttle_possible = r->cfg.throttle_slowdown > 0 || r->cfg.spike_rate > 0 || any_slow;
    if (r->cfg.straggler_detect) {
        /* Every rank runs the detector (its input, the exchange's per-device words, is the
         * same on every rank) and lists the declared stragglers' units. */
        r->strag_units = af_alloc(sizeof(int32_t) * units);
        AF_CHECK(af_straggler_init(&r->strag, r->D, r->cfg.straggler_alpha,
                                   r->cfg.straggler_threshold, r->cfg.straggler_patience));
        r->strag_in = af_alloc(sizeof(double) * D);
        r->strag_new = af_alloc(sizeof(int64_t) * D);
        if (!r->strag_units || !r->strag_in || !r->strag_new) {
            af_error_set("cannot allocate the straggler tables for %lld devices", (long long)r->D);
            return AF_ERR_NOMEM;
        }
    }
    AF_CHECK(detectors_init(r, units));
    if (r->cfg.pacing_mode == AF_PACING_QUANTILE) {
        af_pacer_init_quantile(&r->pacer, r->cfg.pacing_quantile, r->cfg.pacing_warmup);
    } else {
        af_pacer_init(&r->pacer, r->cfg.pacing_gamma, r->cfg.pacing_alpha, r->cfg.pacing_warmup);
    }
    if (!r->xchg_prev || !r->xchg_cur || !r->cellbuf || !r->twin_buf || !r->unit_state ||
        !r->unit_p || !r->changes || !r->moves || !r->rep_rank || !r->rep_off || !r->stage_send ||
        !r->stage_recv || !r->p2p || !r->xfer_set || !r->xfer_used || !r->items || !r->twin ||
        !r->dmr_mark || !r->committed_now) {
        af_error_set("cannot allocate the step buffers for %lld blocks and %lld units",
                     (long long)r->B, (long long)r->units);
        return AF_ERR_NOMEM;
    }
    /* Every rank ages its own devices' units (the model draws each unit from the seed and
     * the unit alone, so the shards together are the one model of the fleet). */
    const int64_t own_lo = r->pl.dev_lo * r->U;
    const int64_t own_hi = r->pl.dev_hi * r->U;
    AF_CHECK(af_aging_init_range(&r->aging, &r->cfg, r->D, own_lo, own_hi));
    /* Every unit's first rate and prediction, from the initial placement, here rather than
     * in the first step: the loop's first tick is tick + 1 (af_step counts it before it
     * plans), and what moves before then is on the placement's list of changed units. */
    af_aging_start(&r->aging, &r->cfg, r->tick + 1, r->pl.unit_load, r->C);
    af_jobintr_init(&r->jobintr, &r->cfg, r->D);
    int64_t scripted = af_config_scripted_units(&r->cfg);
    r->my_changes =
        af_alloc(sizeof(af_health_change_t) * ((size_t)(own_hi - own_lo) + (size_t)scripted + 1));
    r->scripted = af_alloc(sizeof(af_health_change_t) * (size_t)(scripted + 1));
    r->scripted_cap = scripted + 1;
    /* The coordinator's targets beyond a block's own device come from the placement's
     * directory of free capacity, which follows unit_state (all HEALTHY now). */
    AF_CHECK(af_placement_dir_attach(&r->pl, r->unit_state));
    r->fade_units = af_alloc(sizeof(int32_t) * units);
    r->model_state = af_alloc(units);
    if (!r->my_changes || !r->scripted || !r->fade_units || !r->model_state) {
        af_error_set("cannot allocate the health lists for %lld units", (long long)r->units);
        return AF_ERR_NOMEM;
    }
    AF_CHECK(af_halo_init(r));
    AF_CHECK(af_replicas_init(r));
    return AF_OK;
}

void af_step_destroy(af_run_state_t *r)
{
    af_halo_destroy(r);
    af_free(r->xchg_prev);
    af_free(r->xchg_cur);
    if (r->dxchg_prev != NULL) {
        af_buf_free(AF_MEM_DEVICE, r->dxchg_prev);
        af_buf_free(AF_MEM_DEVICE, r->dxchg_cur);
        r->dxchg_prev = r->dxchg_cur = NULL;
    }
    af_free(r->cellbuf);
    af_free(r->twin_buf);
    af_free(r->unit_state);
    af_free(r->unit_p);
    af_free(r->unit_first_corrupt);
    r->unit_first_corrupt = NULL;
    af_free(r->changes);
    af_free(r->moves);
    af_free(r->rep_rank);
    af_free(r->rep_off);
    af_free(r->rep_store);
    af_free(r->rep_step);
    af_free(r->rep_dev);
    af_free(r->dev_gone);
    af_free(r->dev_lost_now);
    af_free(r->dev_lost_list);
    r->rep_dev = NULL;
    r->dev_gone = NULL;
    r->dev_lost_now = NULL;
    r->dev_lost_list = NULL;
    af_free(r->rep_log);
    af_free(r->rep_blocks);
    af_free(r->replay_buf);
    af_free(r->rep_edges_in);
    af_free(r->carry_send);
    af_free(r->carry_recv);
    r->rep_edges_in = r->carry_send = r->carry_recv = NULL;
    r->rep_store = r->replay_buf = NULL;
    r->rep_step = NULL;
    r->rep_log = NULL;
    r->rep_blocks = NULL;
    af_free(r->stage_send);
    af_free(r->stage_recv);
    af_free(r->p2p);
    af_free(r->xfer_set);
    af_free(r->xfer_used);
    af_free(r->items);
    af_free(r->twin);
    af_free(r->dmr_mark);
    af_free(r->committed_now);
    r->committed_now = NULL;
    af_free(r->unit_base);
    af_free(r->unit_deg);
    af_free(r->unit_stamp);
    af_free(r->slow_list);
    af_free(r->intr_dev_tick);
    af_free(r->intr_dev_mask);
    af_free(r->intr_node_tick);
    r->intr_dev_tick = r->intr_node_tick = NULL;
    r->intr_dev_mask = NULL;
    af_free(r->dev_delay);
    af_free(r->dev_words);
    af_free(r->strag_in);
    af_free(r->strag_new);
    af_free(r->strag_units);
    af_free(r->sample_order);
    af_free(r->sample_start);
    af_free(r->fence_count);
    af_free(r->suspect_new);
    af_free(r->quarantined_step);
    r->sample_order = r->suspect_new = NULL;
    r->sample_start = NULL;
    r->quarantined_step = NULL;
    r->fence_count = NULL;
    af_free(r->my_changes);
    af_free(r->scripted);
    af_free(r->fade_units);
    af_free(r->model_state);
    r->my_changes = r->scripted = NULL;
    r->fade_units = NULL;
    r->model_state = NULL;
    r->unit_base = r->unit_deg = NULL;
    r->unit_stamp = NULL;
    r->slow_list = NULL;
    r->dev_delay = r->strag_in = NULL;
    r->dev_words = NULL;
    r->strag_new = NULL;
    r->strag_units = NULL;
    if (r->strag.mean != NULL) {
        af_straggler_destroy(&r->strag);
    }
    af_aging_destroy(&r->aging);
}

/* The declared stragglers' units, ascending: the plan drains them, and the DMR pass twins
 * their blocks as it does the FADING units'. Insertion: declarations are rare. */
static void strag_insert(af_run_state_t *r, int64_t u)
{
    int64_t j = r->n_strag_units++;
    while (j > 0 && r->strag_units[j - 1] > u) {
        r->strag_units[j] = r->strag_units[j - 1];
        j--;
    }
    r->strag_units[j] = (int32_t)u;
}

/* Every rank: the per-block compute times of the last step (the tail of the exchange, the
 * same on every rank) go into the straggler detector; every device it declares has its HEALTHY
 * units changed to FADING (cause straggler), so the plan drains them and nothing chooses them
 * as a target, and an event names the device with its EWMA over the fleet median in
 * thousandths. Returns the new change count. */
static int64_t stragglers(af_run_state_t *r, int64_t nc)
{
    const uint64_t *w = r->xchg_prev + af_xchg_len((int)r->B);
    for (int64_t d = 0; d < r->D; ++d) {
        memcpy(&r->strag_in[d], &w[d], sizeof(double));
    }
    int64_t n = af_straggler_update(&r->strag, r->strag_in, r->strag_new);
    for (int64_t i = 0; i < n; ++i) {
        int64_t d = r->strag_new[i];
        double ratio = r->strag.median > 0 ? r->strag.mean[d] / r->strag.median : 0;
        log_event(r, "straggler", -1, d * r->U * r->C, -1, (int64_t)llround(ratio * 1000.0));
        for (int64_t k = 0; k < r->U; ++k) {
            int64_t u = d * r->U + k;
            if (r->unit_state[u] != AF_HEALTHY) {
                continue;
            }
            r->changes[nc].unit = (int32_t)u;
            r->changes[nc].state = AF_FADING;
            r->changes[nc].cause = AF_CAUSE_STRAGGLER;
            nc++;
            r->unit_state[u] = AF_FADING;
            af_placement_dir_unit(&r->pl, u);
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
static void count_fences(af_run_state_t *r)
{
    if (r->fence_count == NULL) {
        return;
    }
    for (int64_t i = 0; i < r->n_fenced; ++i) {
        int64_t u = af_slot_unit(&r->pl, r->pl.block_slot[r->fenced[i]]);
        if (r->unit_state[u] != AF_HEALTHY || r->fence_count[u] == AF_QUARANTINE_MAX) {
            continue;
        }
        if (++r->fence_count[u] == (uint64_t)r->cfg.quarantine_after &&
            r->n_suspect_new < r->suspect_cap) {
            r->suspect_new[r->n_suspect_new++] = (int32_t)u;
        }
    }
}

/* Every rank, in the plan: the suspects of the last step become FADING to the coordinator
 * (cause suspect), so the plan drains them with the stragglers' budget and nothing chooses
 * them as a target; an event names each. Returns the new change count. */
static int64_t declare_suspects(af_run_state_t *r, int64_t nc)
{
    for (int64_t i = 0; i < r->n_suspect_new; ++i) {
        int64_t u = r->suspect_new[i];
        if (r->unit_state[u] != AF_HEALTHY) {
            continue; /* it failed or faded on its own since */
        }
        log_event(r, "suspect", -1, u * r->C, -1, r->fence_count[u]);
        r->changes[nc].unit = (int32_t)u;
        r->changes[nc].state = AF_FADING;
        r->changes[nc].cause = AF_CAUSE_SUSPECT;
        nc++;
        r->unit_state[u] = AF_FADING;
        af_placement_dir_unit(&r->pl, u);
        strag_insert(r, u);
        r->quarantined_step[u] = (int32_t)r->tick;
        r->n_quarantined++;
    }
    r->n_suspect_new = 0;
    return nc;
}

/* The log's straggler_units of this step (rank 0, from the fleet's model states). */
static void count_stragglers(af_run_state_t *r)
{
    r->straggler_healthy = 0;
    for (int64_t i = 0; i < r->n_strag_units; ++i) {
        r->straggler_healthy += r->model_state[r->strag_units[i]] == AF_HEALTHY;
    }
}

/* Every rank: the step of the aging model for its own units. The model re-reads the loads of
 * the units the placement listed since the last step (moves of the last plan, retries,
 * restores, undone plans), and no other; every rank's placement lists the same. Returns the
 * changes, in my_changes. The own units' corruption probability and degradation follow
 * (dead: 0; FADING: from the model), and slow_mine counts the own live units that run slower
 * than nominal: the FADING ones whose throttling factor exceeds 1, and those a slow event
 * named that the model calls HEALTHY. */
static int64_t age_own_units(af_run_state_t *r)
{
    int64_t n = af_aging_step(&r->aging, &r->cfg, r->tick, r->pl.unit_load, r->pl.changed,
                              r->pl.n_changed, r->C, r->my_changes);
    af_placement_changed_clear(&r->pl);
    debug_aging_loads(r);
    for (int64_t i = 0; i < n; ++i) {
        if (r->my_changes[i].state == AF_DEAD) {
            int64_t k = af_own_unit(r, r->my_changes[i].unit);
            r->unit_p[k] = 0.0;
            r->unit_deg[k] = 0.0;
        }
    }
    int64_t slow = 0;
    for (int64_t i = 0; i < r->aging.fading; ++i) {
        int64_t u = r->aging.fading_list[i];
        int64_t k = af_own_unit(r, u);
        r->unit_p[k] = af_aging_p_corrupt(&r->aging, &r->cfg, u);
        r->unit_deg[k] = af_aging_degradation(&r->aging, &r->cfg, u);
        slow += af_throttle_factor(r->unit_base[k], r->cfg.throttle_slowdown,
                                   r->cfg.throttle_exponent, r->unit_deg[k]) > 1.0;
    }
    for (int64_t i = 0; i < r->n_slow; ++i) {
        int64_t k = af_own_unit(r, r->slow_list[i]);
        slow += r->aging.state[k] == AF_HEALTHY && r->unit_base[k] > 1.0;
    }
    r->slow_mine = slow;
    return n;
}

/* Every rank: the step's health changes and FADING units of the whole fleet, from every
 * rank's own, in the order one model of the whole fleet gives them: the ageing's changes by
 * ascending unit (the ranks' units are ascending ranges, in rank order), then the scripted
 * events' in the events' order (each rank lists its own in that order; they are merged here),
 * and the FADING units ascending (their ids only: their probabilities and degradations stay
 * with their own rank, the only one that uses them). Into changes (the number in *n_model)
 * and fade_units (n_fade); slow_units gets the fleet's slowed units. */
static af_result_t gather_health(af_run_state_t *r, int64_t n_mine, int64_t *n_model)
{
    af_fabric_t *f = r->fab;
    const size_t cw = sizeof(af_health_change_t) / sizeof(int32_t);
    /* How many there are, fleet-wide, and the slowed units: in a quiet step (no change,
     * nothing FADING) this one three-word all-reduce is the coordinator's only collective. */
    int64_t counts[3] = {n_mine, r->aging.fading, r->slow_mine};
    AF_CHECK(f->ops->allreduce_sum_i64(f, counts, 3));
    r->slow_units = counts[2];
    size_t total = 0;
    int64_t nc = 0;
    r->n_fade = 0;
    if (counts[0] > 0) {
        AF_CHECK(f->ops->allgatherv_i32(f, (const int32_t *)r->my_changes, (size_t)n_mine * cw,
                                        (int32_t *)r->changes, 2 * (size_t)r->units * cw, &total));
        nc = (int64_t)(total / cw);
    }
    if (counts[1] > 0) {
        AF_CHECK(f->ops->allgatherv_i32(f, r->aging.fading_list, (size_t)r->aging.fading,
                                        r->fade_units, (size_t)r->units, &total));
        r->n_fade = (int64_t)total;
    }
    if (nc != counts[0] || r->n_fade != counts[1]) {
        af_error_set("step %lld: %lld health changes and %lld FADING units gathered, %lld and "
                     "%lld counted",
                     (long long)r->tick, (long long)nc, (long long)r->n_fade, (long long)counts[0],
                     (long long)counts[1]);
        return AF_ERR_INTERNAL;
    }
    /* The scripted changes aside (every rank's, in rank order), the others closed up. */
    int64_t ns = 0;
    int64_t kept = 0;
    for (int64_t i = 0; i < nc; ++i) {
        if (r->changes[i].cause == AF_CAUSE_SCRIPTED || r->changes[i].cause == AF_CAUSE_LINK_DOWN) {
            if (ns == r->scripted_cap) {
                af_error_set("step %lld: more scripted health changes than the events name (%lld)",
                             (long long)r->tick, (long long)r->scripted_cap - 1);
                return AF_ERR_INTERNAL;
            }
            r->scripted[ns++] = r->changes[i];
        } else {
            r->changes[kept++] = r->changes[i];
        }
    }
    /* Then in the events' order: each (event, unit) takes that unit's first change of the
     * event's kind not taken yet. A rank lists a unit's scripted changes in the events' order,
     * so the one a pair takes is the one it made. */
    for (int i = 0; i < r->cfg.n_events && ns > 0; ++i) {
        const af_event_cfg_t *e = &r->cfg.events[i];
        if (e->step != r->tick || e->action == AF_EVENT_SLOW ||
            e->action == AF_EVENT_LOSE_REPLICAS || e->action == AF_EVENT_INTERRUPT ||
            e->action == AF_EVENT_RESET_DEVICE) {
            continue;
        }
        int8_t st = e->action == AF_EVENT_FADE ? AF_FADING : AF_DEAD;
        int64_t span = e->unit_hi - e->unit_lo + 1;
        for (int64_t j = 0; j < af_event_devices(e) * span; ++j) {
            /* The model's order: devices [device, dev_hi], units [unit_lo, unit_hi] of each. */
            int32_t u = (int32_t)((e->device + j / span) * r->U + e->unit_lo + j % span);
            for (int64_t k = 0; k < ns; ++k) {
                if (r->scripted[k].unit == u && r->scripted[k].state == st) {
                    r->changes[kept++] = r->scripted[k];
                    r->scripted[k].unit = -1;
                    break;
                }
            }
        }
    }
    if (kept != nc) {
        af_error_set("step %lld: %lld scripted health changes match no event of the step",
                     (long long)r->tick, (long long)(nc - kept));
        return AF_ERR_INTERNAL;
    }
    *n_model = nc;
    return AF_OK;
}

/* The slot a replica or replica_lost event names as its `to`: the first of the device whose
 * memory keeps (kept) block b's replica, so the log says where each replica lives. */
static int64_t replica_slot(const af_run_state_t *r, int64_t b)
{
    return (int64_t)r->rep_dev[b] * r->U * r->C;
}

/* Rank 0: the replica_lost event of block b, whose replica held logical step `held` (the
 * block's slot now as from_slot, its replica's device as to_device). */
static void log_replica_lost(af_run_state_t *r, int64_t b, int64_t held)
{
    log_event(r, "replica_lost", b, r->pl.block_slot[b], replica_slot(r, b), held);
}

/* Every rank: the plan, from the step's health changes (the n_model of the model first) and
 * the fleet's FADING units, which every rank has (gather_health), and the same placement and
 * tables: every rank plans the same moves, and applies them to its placement here. */
static void plan(af_run_state_t *r, int64_t n_model)
{
    af_plan_header_t *h = &r->plan;
    memset(h, 0, sizeof *h);
    h->step = r->tick;
    h->rollback_to = -1;
    int64_t nc = n_model;
    for (int64_t i = 0; i < nc; ++i) {
        const af_health_change_t *c = &r->changes[i];
        r->unit_state[c->unit] = c->state;
        af_placement_dir_unit(&r->pl, c->unit);
        r->model_state[c->unit] = c->state;
        r->dead_units += c->state == AF_DEAD;
    }
    if (r->cfg.straggler_detect) {
        nc = stragglers(r, nc);
    }
    nc = declare_suspects(r, nc);
    /* The step's interruptions, drawn alike on every rank, over the members that live after
     * the step's changes (unit_state is the fleet's, the same on every rank): dead hardware
     * interrupts nothing. A memory reset (cause hbm) restores every block of its device in
     * place, first in the plan, so that a drain of such a block later in the list reads its
     * restored state, and a block a restore or drain brings to the device this step keeps what
     * it brings. A device reset twice in a step is restored once. */
    r->n_hits = af_jobintr_step(&r->jobintr, &r->cfg, r->tick, r->unit_state, r->U, r->jobintr_hits,
                                AF_JOBINTR_MAX_STEP);
    int64_t nr = 0;
    for (int i = 0; i < r->n_hits; ++i) {
        const af_jobintr_hit_t *x = &r->jobintr_hits[i];
        int again = 0;
        for (int j = 0; j < i && x->cause == AF_INTR_hbm; ++j) {
            again |=
                r->jobintr_hits[j].cause == AF_INTR_hbm && r->jobintr_hits[j].device == x->device;
        }
        if (x->cause == AF_INTR_hbm && !again) {
            nr += af_coord_plan_reset(&r->pl, r->unit_state, x->device, r->moves + nr);
        }
    }
    r->reset_moves = nr;
    /* The replicas kept in the memory of the devices that left the job whole in this step, or
     * whose memory was reset, are lost with it, before the restores look at them: a block whose
     * replica went with it restarts the run (below). */
    int64_t resets[AF_JOBINTR_MAX_STEP];
    int64_t n_resets = 0;
    for (int i = 0; i < r->n_hits; ++i) {
        if (r->jobintr_hits[i].cause == AF_INTR_hbm) {
            resets[n_resets++] = r->jobintr_hits[i].device;
        }
    }
    af_replicas_lose_devices(r, r->changes, n_model, resets, n_resets, log_replica_lost);
    int64_t exhausted = 0;
    int64_t nm = nr + af_coord_plan_listed(&r->pl, r->unit_state, r->changes, nc, r->fade_units,
                                           r->n_fade, r->cfg.drain, r->cfg.max_moves_per_step,
                                           r->moves + nr, &exhausted);
    /* Declared stragglers drain like FADING units, with the budget the fading ones left. */
    int64_t drains = 0;
    for (int64_t i = 0; i < nm; ++i) {
        drains += r->moves[i].kind == AF_MOVE_DRAIN;
    }
    if (r->n_strag_units > 0 && !exhausted && drains < r->cfg.max_moves_per_step) {
        nm += af_coord_plan_listed(&r->pl, r->unit_state, NULL, 0, r->strag_units, r->n_strag_units,
                                   r->cfg.drain, r->cfg.max_moves_per_step - drains, r->moves + nm,
                                   &exhausted);
    }
    /* A restore from a replica older than the committed state would mix steps. With
     * recovery.replay = local the block alone is replayed from its replica and the edges logged
     * beside it (sim/recovery/recover.c); with global every block rolls back to the replica step. A
     * block whose replica was lost with it leaves only the initial state: every block
     * restarts from step 0 (so does a global rollback while some live block's replica is
     * lost, since that block would have nothing to roll back to). */
    int any_stale = 0;
    int any_lost = 0;
    for (int64_t i = 0; i < nm; ++i) {
        if (r->moves[i].kind == AF_MOVE_RESTORE) {
            int64_t rs = r->rep_step[r->moves[i].block];
            any_lost |= rs < 0;
            any_stale |= rs >= 0 && rs != r->state_step;
        }
    }
    int global = r->cfg.replay == AF_REPLAY_GLOBAL;
    if (!exhausted && (any_lost || (global && any_stale && r->n_lost > 0))) {
        h->rollback_to = 0;
        h->restart = 1;
    } else if (!exhausted && global && any_stale) {
        h->rollback_to = r->replica_step;
    }
    if (r->log != NULL) {
        count_stragglers(r); /* for the log's row, on the rank that writes it */
    }
    h->n_changes = nc;
    h->n_moves = nm;
    h->exhausted = exhausted;
    h->fading = r->n_fade;
    h->dead = r->dead_units;
    /* Events of the model and the plan. */
    for (int i = 0; i < r->cfg.n_events; ++i) {
        const af_event_cfg_t *e = &r->cfg.events[i];
        for (int64_t k = e->unit_lo;
             e->action == AF_EVENT_SLOW && e->step == r->tick && k <= e->unit_hi; ++k) {
            int64_t g = (e->device * r->U + k) * r->C;
            log_event(r, "slow", -1, g, -1, (int64_t)llround(e->factor * 1000.0));
        }
    }
    for (int64_t i = 0; i < n_model; ++i) {
        const af_health_change_t *c = &r->changes[i];
        /* Sudden: the unit's own exponential time, or its device's, node's or link's loss (the
         * detail says which). */
        int sudden = c->cause == AF_CAUSE_SUDDEN || c->cause == AF_CAUSE_DEVICE ||
                     c->cause == AF_CAUSE_NODE || c->cause == AF_CAUSE_LINK ||
                     c->cause == AF_CAUSE_LINK_DOWN;
        const char *kind = c->state == AF_FADING ? "fade" : sudden ? "sudden" : "death";
        int64_t g = (int64_t)c->unit * r->C;
        log_event(r, kind, -1, g, -1, c->cause);
        if (c->state != AF_FADING && r->log != NULL) {
            log_death_interruption(r, r->changes, i, n_model);
        }
    }
    for (int64_t i = 0; i < nm; ++i) {
        /* A drain's detail is -1; a restore's the logical step its data comes from: its
         * replica's, or the rollback's (0 when every block restarts, a replica being lost). */
        const af_move_t *m = &r->moves[i];
        int restore = m->kind == AF_MOVE_RESTORE;
        log_event(r, restore ? "restore" : "drain", m->block, m->from_slot, m->to_slot,
                  !restore              ? -1
                  : h->rollback_to >= 0 ? h->rollback_to
                                        : r->rep_step[m->block]);
    }
    if (h->rollback_to >= 0) {
        /* The detail: the logical steps lost (a restart loses them all). */
        log_event(r, "rollback", -1, -1, -1, r->state_step - h->rollback_to);
    }
    if (exhausted) {
        log_event(r, "capacity", -1, -1, -1, r->dead_units);
    }
    /* Job-level interruptions touch no unit and no block; memory resets were planned above.
     * The log has an `interrupt` event each (from_device: the device, or the node's first
     * device, it struck; detail: the cause), after the restores of the step. */
    for (int i = 0; i < r->n_hits; ++i) {
        log_interrupt(r, &r->jobintr_hits[i]);
    }
}

/* Every rank planned from the same facts; a digest of each rank's plan (its header and its
 * moves), combined with an exact max all-reduce of the digest and its complement, proves that
 * they all planned the same before any rank moves data (a rank that did not would pair its
 * transfers with nobody). Every rank fails alike when they differ. */
static af_result_t check_plan(af_run_state_t *r)
{
    const af_plan_header_t *h = &r->plan;
    uint64_t d = 1469598103934665603ULL; /* FNV-1a over the plan's words */
    const int64_t head[] = {h->step,    h->n_changes, h->n_moves, h->rollback_to,
                            h->restart, h->exhausted, h->fading,  h->dead};
    for (size_t i = 0; i < sizeof head / sizeof head[0]; ++i) {
        d = (d ^ (uint64_t)head[i]) * 1099511628211ULL;
    }
    for (int64_t i = 0; i < h->n_moves; ++i) {
        const af_move_t *m = &r->moves[i];
        d = (d ^ (uint64_t)m->block) * 1099511628211ULL;
        d = (d ^ (uint64_t)m->to_slot) * 1099511628211ULL;
        d = (d ^ (uint64_t)m->kind) * 1099511628211ULL;
    }
    if (r->world.size == 1) {
        return AF_OK;
    }
    uint64_t w[2] = {d, ~d};
    AF_CHECK(r->fab->ops->allreduce_max_u64(r->fab, w, 2));
    if (w[0] != d || w[1] != ~d) {
        af_error_set("step %lld: the ranks planned different moves (rank %d: %lld moves, "
                     "%lld health changes)",
                     (long long)r->tick, r->world.rank, (long long)h->n_moves,
                     (long long)h->n_changes);
        return AF_ERR_INTERNAL;
    }
    return AF_OK;
}

/* Every rank: the health changes and the moves of the plan, in the tables and slots. */
static af_result_t apply_plan(af_run_state_t *r)
{
    const af_plan_header_t *h = &r->plan;
    for (int64_t i = 0; i < h->n_changes; ++i) {
        const af_health_change_t *c = &r->changes[i];
        /* unit_state (and the placement's directory) took the change in the plan, the own
         * units' probabilities and degradations in age_own_units. */
        if (c->state == AF_DEAD) {
            /* A dead unit's memory is lost: poison its local slots so any read is caught. */
            for (int64_t k = 0; k < r->C; ++k) {
                int64_t g = (int64_t)c->unit * r->C + k;
                if (af_slot_is_local(&r->pl, g)) {
                    AF_CHECK(r->k->ops->poison_slot(r->k, (int)(g - r->slot0)));
                }
            }
        }
    }
    /* A memory reset's blocks (restored in place, planned first) lost their state: poison
     * their local slots, as a dead unit's, so that a restore that did not happen is caught. */
    for (int64_t i = 0; i < r->reset_moves; ++i) {
        int64_t g = r->moves[i].to_slot;
        if (af_slot_is_local(&r->pl, g)) {
            AF_CHECK(r->k->ops->poison_slot(r->k, (int)(g - r->slot0)));
        }
    }
    /* Slot control of every slot whose unit changed, and of the own FADING units (p rises;
     * slot control touches local slots only). */
    for (int64_t i = 0; i < h->n_changes; ++i) {
        for (int64_t k = 0; k < r->C; ++k) {
            af_slot_control(r, (int64_t)r->changes[i].unit * r->C + k);
        }
    }
    for (int64_t i = 0; i < r->aging.fading; ++i) {
        for (int64_t k = 0; k < r->C; ++k) {
            af_slot_control(r, (int64_t)r->aging.fading_list[i] * r->C + k);
        }
    }
    return AF_OK;
}

af_result_t af_step_graph_init(af_run_state_t *r)
{
    r->graph_on = 0;
    if (r->cfg.graph == AF_GRAPH_OFF) {
        snprintf(r->graph_why, sizeof r->graph_why, "off (backend.graph = off)");
        return AF_OK;
    }
    if (r->cfg.straggler_detect) {
        /* config.c refuses graph = on with straggler detection: this is auto. */
        snprintf(r->graph_why, sizeof r->graph_why, "off (auto: straggler detection is on)");
        return AF_OK;
    }
    if (r->cfg.graph == AF_GRAPH_AUTO && r->dxchg_prev == NULL) {
        /* No launches to save on a CPU; backend.graph = on runs the same path there (tests). */
        snprintf(r->graph_why, sizeof r->graph_why, "off (auto: the %s backend launches nothing)",
                 r->k->ops->name);
        return AF_OK;
    }
    memset(&r->gio, 0, sizeof r->gio);
    r->gio.xchg_in = r->dxchg_prev != NULL ? r->dxchg_prev : r->xchg_prev;
    r->gio.xchg_out = r->dxchg_cur != NULL ? r->dxchg_cur : r->xchg_cur;
    r->gio.xlen = r->xlen;
    r->gio.reduce = af_graph_reduce_init(&r->greduce, r->nccl);
    r->gio.host_out = r->xchg_cur;
    af_result_t rc = r->k->ops->graph_prepare(r->k, &r->gio);
    /* AGEFENCE_DEBUG=graphfail=R: rank R's preparation fails (tests the agreement below). */
    const char *dbg = getenv("AGEFENCE_DEBUG");
    const char *gf = dbg != NULL ? strstr(dbg, "graphfail=") : NULL;
    if (rc == AF_OK && gf != NULL && atoi(gf + strlen("graphfail=")) == r->world.rank) {
        af_error_set("graph_prepare failed on purpose (AGEFENCE_DEBUG=graphfail)");
        rc = AF_ERR_DEVICE;
    }
    /* Every rank runs the same path: one rank's failure turns the graph off everywhere. */
    uint64_t failed = rc != AF_OK;
    char why[200];
    snprintf(why, sizeof why, "%s", rc != AF_OK ? af_error_message() : "");
    AF_CHECK(r->fab->ops->allreduce_max_u64(r->fab, &failed, 1));
    if (failed) {
        af_error_clear(); /* said again below, with what it means for the run */
        if (r->cfg.graph == AF_GRAPH_ON) {
            af_error_set("backend.graph = on: the step graph cannot be prepared%s%s",
                         rc != AF_OK ? ": " : " on another rank", why);
            return rc != AF_OK ? rc : AF_ERR_INTERNAL;
        }
        snprintf(r->graph_why, sizeof r->graph_why, "off (auto: preparing it failed%s%.80s)",
                 rc != AF_OK ? ": " : " on another rank", why);
        if (r->world.rank == 0 || rc != AF_OK) {
            fprintf(stderr, "agefence: rank %d: step graph %s; the eager path runs instead\n",
                    r->world.rank, r->graph_why);
        }
        return AF_OK;
    }
    r->graph_on = 1;
    if (r->k->graph_instantiations > 0) {
        snprintf(r->graph_why, sizeof r->graph_why, "on (CUDA graph%s)",
                 r->nccl != NULL ? " with the nccl all-reduce inside" : ", mpi all-reduce after");
    } else {
        snprintf(r->graph_why, sizeof r->graph_why, "on (%s backend: the same work in sequence)",
                 r->k->ops->name);
    }
    return AF_OK;
}

/* The exchange the kernels read: device memory with the cuda backend. */
static const uint64_t *kernel_xchg(const af_run_state_t *r)
{
    return r->dxchg_prev != NULL ? r->dxchg_prev : r->xchg_prev;
}

/* Containment after a compute pass over `flags`' slots: commit what is clean, count the rest.
 * After a step graph (verify), the backend has decided and committed already: the decisions
 * in commit[] must be the ones made here, or the step fails. */
static af_result_t contain(af_run_state_t *r, int flags, int verify)
{
    af_kernels_t *k = r->k;
    int selected = (flags & AF_COMPUTE_SELECTED) != 0;
    int64_t disagree = 0;
    int first = -1;
    /* The occupied slots; after a step graph every slot, since the backend decided for the
     * whole static grid and an empty slot's decision must be 0 too. */
    const int n = verify ? r->n_local : k->n_occ;
    for (int i = 0; i < n; ++i) {
        int s = verify ? i : k->occ[i];
        int live = k->slot_block[s] >= 0 &&
                   (k->slot_mode[s] == AF_MODE_HEALTHY || k->slot_mode[s] == AF_MODE_FADING);
        uint8_t backend = k->commit[s];
        if (selected && !k->select[s]) {
            k->commit[s] = 0; /* committed in the main pass already (committed_now says) */
            continue;
        }
        if (!live) {
            k->commit[s] = 0;
            r->committed_now[s] = 0;
            if (verify && backend != 0) {
                disagree++;
                first = first < 0 ? s : first;
            }
            continue;
        }
        r->mine.count[CNT_INJECTED] += k->injected[s];
        r->mine.count[CNT_HARMFUL] += k->harmful[s];
        if (k->injected[s] > 0) {
            /* The unit's record: the first step it corrupted a result (the simulator's truth,
             * for the time to quarantine; no detector reads it). */
            int32_t *seen =
                &r->unit_first_corrupt[af_own_unit(r, af_slot_unit(&r->pl, r->slot0 + s))];
            *seen = *seen < 0 ? (int32_t)r->tick : *seen;
        }
        int abft_fail = k->desc.abft && k->abft[s] != 0;
        if (r->dmr_mark[s] == AF_DMR_ADOPTED) {
            /* The healthy twin's result replaced ours: a recompute within the step. */
            k->commit[s] = 1;
            r->mine.count[CNT_FENCED]++;
            r->mine.count[CNT_RETRIED]++;
            r->mine.count[CNT_DETECTED] += k->injected[s];
            r->mine.count[CNT_DET_TWIN] += k->injected[s];
        } else if (r->dmr_mark[s] == AF_DMR_FENCED || k->nonfinite[s] != 0 || abft_fail) {
            k->commit[s] = 0;
            r->mine.count[CNT_FENCED]++;
            r->mine.count[CNT_DETECTED] += k->injected[s];
            /* Credited to the cheapest detector that fired: the non-finite test, then the mass
             * balance, then the twin. */
            r->mine.count[k->nonfinite[s] != 0 ? CNT_DET_FINITE
                          : abft_fail          ? CNT_DET_ABFT
                                               : CNT_DET_TWIN] += k->injected[s];
            /* The simulator's truth, for the false-alarm count: nothing was injected. */
            r->mine.count[CNT_ABFT_FALSE] += abft_fail && k->injected[s] == 0;
        } else {
            k->commit[s] = 1;
            r->mine.count[CNT_SDC] += k->injected[s]; /* finite corruption got through */
            r->mine.count[CNT_SDC_HARMFUL] += k->harmful[s];
            /* DMR promises a twin for every block of a FADING unit; with no room left for one
             * (af_dmr_begin) the block is committed unchecked: counted, never hidden. */
            if ((af_detect_flags(r->cfg.detect) & AF_DET_DMR) &&
                k->slot_mode[s] == AF_MODE_FADING && r->twin[k->slot_block[s]] < 0) {
                r->mine.count[CNT_UNVERIFIED]++;
            }
        }
        r->committed_now[s] = k->commit[s];
        if (verify && backend != k->commit[s]) {
            disagree++;
            first = first < 0 ? s : first;
        }
    }
    if (disagree > 0) {
        af_error_set("step %lld: the %s backend's step graph committed %lld slot(s) against the "
                     "containment rule (first: local slot %d, block %d, mode %d, %d non-finite)",
                     (long long)r->tick, k->ops->name, (long long)disagree, first,
                     k->slot_block[first], k->slot_mode[first], k->nonfinite[first]);
        return AF_ERR_INTERNAL;
    }
    return AF_OK;
}

static double throttle(af_run_state_t *r, double compute_us);

/* The kernel and halo phases of a steady-state step as the backend's step graph: compute,
 * containment, commit, pack and (nccl) the all-reduce in one launch; the driver then checks
 * and counts the containment, spends the throttling delay, and (mpi) reduces the exchange on
 * the host. *t_kernel gets the end of the kernel phase. */
static af_result_t graph_step(af_run_state_t *r, double *t_kernel)
{
    af_kernels_t *k = r->k;
    uint64_t flags[AF_XCHG_FLAGS] = {0};
    flags[AF_XCHG_STOP] = af_stop_flag() ? 1 : 0;
    r->gio.xchg_in = kernel_xchg(r);
    r->gio.xchg_out = r->dxchg_cur != NULL ? r->dxchg_cur : r->xchg_cur;
    r->gio.host_out = r->xchg_cur;
    double tc = af_now_us();
    AF_CHECK(k->ops->graph_run(k, &r->gio, af_inject_key(r, 0), flags));
    r->mine.phase[AF_PHASE_throttle_us] = throttle(r, af_now_us() - tc);
    AF_CHECK(contain(r, 0, 1));
    *t_kernel = af_now_us();
    return af_halo_after_graph(r, flags[AF_XCHG_STOP]);
}

/* Every rank: the slow events of this executed step set their units' base slowdown. */
static void slow_events(af_run_state_t *r)
{
    for (int i = 0; i < r->cfg.n_events; ++i) {
        const af_event_cfg_t *e = &r->cfg.events[i];
        if (e->action != AF_EVENT_SLOW || e->step != r->tick) {
            continue;
        }
        for (int64_t k = e->unit_lo; k <= e->unit_hi; ++k) {
            int64_t u = e->device * r->U + k;
            if (u >= r->own_u0 && u < r->own_u0 + r->own_units) {
                r->unit_base[af_own_unit(r, u)] = e->factor;
            }
        }
    }
}

/* Every rank, at the start of an executed step: the lose_replicas events of the step. The
 * replicas of the blocks the named units hold now are lost (rep_step = -1), on every rank's
 * copy of the tables alike, before the coordinator plans; rank 0 logs a replica_lost event per
 * block (detail: the logical step the replica held). */
static void lose_replicas(af_run_state_t *r)
{
    for (int i = 0; i < r->cfg.n_events; ++i) {
        const af_event_cfg_t *e = &r->cfg.events[i];
        if (e->action != AF_EVENT_LOSE_REPLICAS || e->step != r->tick) {
            continue;
        }
        for (int64_t k = e->unit_lo; k <= e->unit_hi; ++k) {
            for (int64_t c = 0; c < r->C; ++c) {
                int64_t g = (e->device * r->U + k) * r->C + c;
                int32_t b = r->pl.slot_block[g];
                if (b < 0 || r->rep_step[b] < 0) {
                    continue;
                }
                log_event(r, "replica_lost", b, g, replica_slot(r, b), r->rep_step[b]);
                r->rep_step[b] = -1;
                r->n_lost++;
                r->n_replicas_lost++;
            }
        }
    }
}

/* One local unit's modelled extra time: its blocks at its slowdown. */
static void add_unit_delay(af_run_state_t *r, int64_t u, double deg, double block_us)
{
    int64_t d = u / r->U;
    if (d < r->pl.dev_lo || d >= r->pl.dev_hi || r->unit_state[u] == AF_DEAD ||
        r->unit_stamp[af_own_unit(r, u)] == r->tick) {
        return;
    }
    int64_t k = af_own_unit(r, u);
    r->unit_stamp[k] = r->tick;
    double s = af_throttle_factor(r->unit_base[k], r->cfg.throttle_slowdown,
                                  r->cfg.throttle_exponent, deg);
    r->dev_delay[d - r->pl.dev_lo] += (double)r->pl.unit_load[u] * block_us * (s - 1.0);
}

/* Blocks on device d's units. */
static int64_t device_load(const af_run_state_t *r, int64_t d)
{
    int64_t load = 0;
    for (int64_t u = d * r->U; u < (d + 1) * r->U; ++u) {
        load += r->pl.unit_load[u];
    }
    return load;
}

/* Every rank, after its compute pass (compute_us): spends its devices' modelled throttling
 * delay as a busy wait and, with straggler detection on, writes each local device's compute
 * time per block for the exchange. Returns the modelled delay. */
static double throttle(af_run_state_t *r, double compute_us)
{
    const int64_t nd = r->pl.dev_hi - r->pl.dev_lo;
    const int strag = r->cfg.straggler_detect;
    if (!r->throttle_possible && !strag) {
        return 0.0;
    }
    int64_t occupied = 0;
    for (int64_t d = r->pl.dev_lo; d < r->pl.dev_hi; ++d) {
        occupied += device_load(r, d);
    }
    double block_us = r->cfg.throttle_block_us > 0 ? r->cfg.throttle_block_us
                      : occupied > 0               ? compute_us / (double)occupied
                                                   : 0.0;
    double total = 0.0;
    for (int64_t i = 0; i < nd; ++i) {
        r->dev_delay[i] = 0.0;
    }
    if (r->throttle_possible) {
        if (r->cfg.throttle_slowdown > 0) {
            for (int64_t i = 0; i < r->aging.fading; ++i) {
                int64_t u = r->aging.fading_list[i];
                add_unit_delay(r, u, r->unit_deg[af_own_unit(r, u)], block_us);
            }
        }
        for (int64_t i = 0; i < r->n_slow; ++i) {
            int64_t u = r->slow_list[i];
            add_unit_delay(r, u, r->unit_deg[af_own_unit(r, u)], block_us);
        }
        for (int64_t i = 0; i < nd; ++i) {
            int64_t d = r->pl.dev_lo + i;
            if (r->cfg.spike_rate > 0 && device_load(r, d) > 0) {
                r->dev_delay[i] += af_spike_us((uint64_t)r->cfg.seed, r->tick, d, r->cfg.spike_rate,
                                               r->cfg.spike_us, r->cfg.spike_sigma);
            }
            total += r->dev_delay[i];
        }
    }
    double spent = af_spin_us(total);
    if (strag) {
        /* A device's time: its share of the compute pass, by blocks, plus its own delay as the
         * wait actually spent it. */
        double scale = total > 0 ? spent / total : 0.0;
        for (int64_t i = 0; i < nd; ++i) {
            int64_t d = r->pl.dev_lo + i;
            int64_t load = device_load(r, d);
            double x = load > 0 && occupied > 0
                           ? compute_us / (double)occupied + r->dev_delay[i] * scale / (double)load
                           : 0.0;
            memcpy(&r->dev_words[d], &x, sizeof x);
        }
    }
    return total;
}

/* The run stops inside a step whose fenced blocks found no slot to be retried on: those
 * blocks hold the step before, so every block the step committed goes back to it too (its
 * other buffer, which nothing has written since the commit), and the state the run ends with
 * is the last step every block completed, the one the verdict compares with the reference. */
static af_result_t undo_step_commits(af_run_state_t *r)
{
    af_kernels_t *k = r->k;
    for (int i = 0; i < k->n_occ; ++i) {
        int s = k->occ[i];
        if (r->committed_now[s]) {
            AF_CHECK(k->ops->read_next(k, s, r->cellbuf));
            AF_CHECK(k->ops->write_slot(k, s, r->cellbuf));
            r->committed_now[s] = 0;
        }
    }
    return AF_OK;
}

af_result_t af_step(af_run_state_t *r, int *stop)
{
    af_kernels_t *k = r->k;
    memset(&r->mine, 0, sizeof r->mine);
    r->n_drain = r->n_restore = r->n_retry_moves = r->n_rollbacks = r->n_replayed = 0;
    r->n_quarantined = 0;
    r->n_replayed_blocks = r->n_replayed_block_steps = 0;
    r->n_replicas_lost = r->n_replicas_retaken = r->n_replicas_moved = 0;
    r->tick++;
    AF_CHECK(debug_break_promise(r));
    double t0 = af_now_us();
    slow_events(r);
    lose_replicas(r);

    /* 1. Coordinator. Every rank ages its own units, which consumes the placement's list of
     * changed units; the ranks share the step's health changes, and every rank plans the same
     * moves from them. plan_us is the rank's own work: its ageing and its plan. */
    double tp = af_now_us();
    int64_t n_mine = age_own_units(r);
    double t_age = af_now_us() - tp;
    int64_t n_model = 0;
    AF_CHECK(gather_health(r, n_mine, &n_model));
    tp = af_now_us();
    plan(r, n_model);
    r->mine.phase[AF_PHASE_plan_us] = t_age + (af_now_us() - tp);
    /* A step with no health change, no FADING unit, no memory reset and no straggler detection
     * has an empty plan on every rank by construction (restores follow deaths and resets,
     * drains FADING units): there is nothing to prove. */
    if (n_model > 0 || r->n_fade > 0 || r->cfg.straggler_detect || r->reset_moves > 0) {
        AF_CHECK(check_plan(r));
    }
    AF_CHECK(apply_plan(r));
    for (int64_t i = 0; i < r->plan.n_moves; ++i) {
        const af_move_t *m = &r->moves[i];
        r->n_drain += m->kind == AF_MOVE_DRAIN;
        r->n_restore += m->kind == AF_MOVE_RESTORE;
        /* Restores from older replicas that no rollback covers: replayed alone. */
        int64_t rs = m->kind == AF_MOVE_RESTORE ? r->rep_step[m->block] : -1;
        if (r->plan.rollback_to < 0 && rs >= 0 && rs < r->state_step) {
            r->n_replayed_blocks++;
            r->n_replayed_block_steps += r->state_step - rs;
        }
    }
    debug_scan(r, "plan");
    double t1 = af_now_us();
    double blackout = (double)r->plan.dead / (double)r->units;
    if (blackout > r->max_blackout) {
        r->max_blackout = blackout;
    }
    if (r->plan.exhausted) {
        r->exhausted = 1;
        r->exhausted_why = "the live slots cannot hold every block";
        *stop = 1;
        r->mine.phase[AF_PHASE_coord_us] = t1 - t0;
        return AF_OK;
    }

    /* 2. Moves, and a rollback when a restore found its replica stale. */
    int rollback = r->plan.rollback_to >= 0;
    AF_CHECK(af_apply_moves(r, r->moves, r->plan.n_moves, !rollback));
    double t_halo = 0.0;
    double t_halo_rollback = 0.0;
    if (rollback) {
        AF_CHECK(r->plan.restart ? af_restart(r) : af_rollback(r));
        double th = af_now_us();
        for (int i = 0; i < k->n_occ; ++i) {
            k->commit[k->occ[i]] = 1;
        }
        AF_CHECK(k->ops->upload_control(k));
        AF_CHECK(af_exchange(r));
        AF_CHECK(af_exchange_swap(r));
        t_halo_rollback = af_now_us() - th;
        t_halo += t_halo_rollback;
        if (r->plan.restart) {
            /* Every replica (the lost ones too) holds step 0 again, with its edges. */
            AF_CHECK(af_replicas_refresh(r));
            AF_CHECK(af_replicas_log_edges(r));
        }
    }
    debug_scan(r, "moves");
    double t2 = af_now_us();

    /* 3. Kernel: DMR twins, the masked compute, containment, commit. Empty slots keep
     * select[] 0 (af_kernels_set_block) and their dmr_mark[] is never read. */
    for (int i = 0; i < k->n_occ; ++i) {
        k->select[k->occ[i]] = 0;
        r->dmr_mark[k->occ[i]] = AF_DMR_NONE;
    }
    int64_t twins = 0;
    if (af_detect_flags(r->cfg.detect) & (AF_DET_DMR | AF_DET_SAMPLED)) {
        AF_CHECK(af_dmr_begin(r, NULL, 0, &twins));
    }
    /* Every rank plans the same twins: rank 0 alone counts them. */
    r->mine.count[CNT_TWINS] += r->world.rank == 0 ? twins : 0;
    double t3 = 0.0;
    if (r->graph_on && twins == 0 && !rollback) {
        /* Steps 3 and 4 but the retries, as one prepared unit of work. */
        AF_CHECK(graph_step(r, &t3));
        debug_scan(r, "commit");
    } else {
        double tc = af_now_us();
        r->compute_key = af_inject_key(r, 0);
        AF_CHECK(k->ops->compute(k, r->compute_key, kernel_xchg(r), 0));
        AF_CHECK(k->ops->download_results(k));
        r->mine.phase[AF_PHASE_throttle_us] = throttle(r, af_now_us() - tc);
        if (twins > 0) {
            AF_CHECK(af_dmr_end(r, twins));
        }
        AF_CHECK(contain(r, 0, 0));
        AF_CHECK(k->ops->upload_control(k));
        AF_CHECK(k->ops->commit(k));
        debug_scan(r, "commit");
        t3 = af_now_us();
        /* 4. Halo of the new state. */
        AF_CHECK(af_exchange(r));
    }
    /* Fenced blocks are retried within the step. */
    double t4 = af_now_us();
    double t_retry = 0.0;
    for (int round = 0; r->n_fenced > 0; ++round) {
        count_fences(r);
        if (round == AF_MAX_RETRY_ROUNDS) {
            /* Only FADING units were left to retry on, and they kept failing; or the fenced
             * blocks' own committed state turns non-finite wherever they run (a finite
             * corruption committed earlier: a huge value squared). Which of the two, the
             * simulator knows (slots that failed with nothing injected in the last round); it
             * only names the cause. */
            uint64_t poisoned = 0;
            for (int i = 0; i < k->n_occ; ++i) {
                int s = k->occ[i];
                poisoned |= k->select[s] && k->nonfinite[s] > 0 && k->injected[s] == 0;
            }
            AF_CHECK(r->fab->ops->allreduce_max_u64(r->fab, &poisoned, 1));
            r->exhausted = 1;
            r->exhausted_why =
                poisoned ? "fenced blocks kept failing: their committed state turns non-finite "
                           "wherever they run (a finite corruption committed earlier)"
                         : "fenced blocks kept failing on the FADING units left to retry on";
            *stop = 1;
            AF_CHECK(undo_step_commits(r));
            break;
        }
        double tr = af_now_us();
        int64_t n = 0;
        AF_CHECK(af_retry_fenced(r, &n));
        for (int64_t i = 0; i < n; ++i) {
            log_event(r, "retry", r->moves[i].block, r->moves[i].from_slot, r->moves[i].to_slot,
                      round);
        }
        r->n_retry_moves += n;
        if (r->exhausted) {
            *stop = 1;
            AF_CHECK(undo_step_commits(r));
            break;
        }
        /* Retries that had to land on FADING units are checked by twins too. */
        int64_t rtwins = 0;
        for (int i = 0; i < k->n_occ; ++i) {
            r->dmr_mark[k->occ[i]] = AF_DMR_NONE;
        }
        if (af_detect_flags(r->cfg.detect) & AF_DET_DMR) {
            AF_CHECK(af_dmr_begin(r, r->moves, n, &rtwins));
            r->mine.count[CNT_TWINS] += r->world.rank == 0 ? rtwins : 0;
            for (int64_t i = 0; i < rtwins; ++i) {
                int64_t tw = r->twin[r->items[i]];
                if (af_slot_is_local(&r->pl, tw)) {
                    k->select[tw - r->slot0] = 1;
                }
            }
            AF_CHECK(k->ops->upload_control(k));
        }
        r->compute_key = af_inject_key(r, round + 1);
        AF_CHECK(k->ops->compute(k, r->compute_key, kernel_xchg(r), AF_COMPUTE_SELECTED));
        AF_CHECK(k->ops->download_results(k));
        if (rtwins > 0) {
            AF_CHECK(af_dmr_end(r, rtwins));
        }
        AF_CHECK(contain(r, AF_COMPUTE_SELECTED, 0));
        AF_CHECK(k->ops->upload_control(k));
        AF_CHECK(k->ops->commit(k));
        /* Every live slot is committed now unless a retry failed again. */
        for (int i = 0; i < k->n_occ; ++i) {
            int s = k->occ[i];
            k->commit[s] = (uint8_t)(k->select[s] ? k->commit[s] : 1);
        }
        AF_CHECK(k->ops->upload_control(k)); /* pack reads commit[] for the status words */
        debug_scan(r, "retry");
        double th = af_now_us();
        AF_CHECK(af_exchange(r));
        t_halo += af_now_us() - th;
        t_retry += th - tr;
    }
    /* An independent containment check: the owners count the NaN/Inf values of every committed
     * buffer when it is written, whatever the commit decision was. */
    r->n_leaked = r->leaked_now;
    r->leaked_total += r->n_leaked;
    if (r->stop_now) {
        *stop = 1;
        r->stop_signal = 1;
    }
    AF_CHECK(af_exchange_swap(r));
    if (!r->exhausted) {
        r->state_step++;
    }
    double t5 = af_now_us();

    /* 5. Replicas: the periodic refresh, lost replicas taken again (replay = local), and the
     * neighbour edges of the committed state beside each replica. */
    if (!r->exhausted) {
        if (r->state_step % r->cfg.replica_interval == 0) {
            AF_CHECK(af_replicas_refresh(r));
        } else {
            AF_CHECK(af_replicas_retake(r, &r->n_replicas_retaken));
            for (int64_t i = 0; i < r->n_replicas_retaken; ++i) {
                int64_t b = r->items[i];
                log_event(r, "replica", b, r->pl.block_slot[b], replica_slot(r, b), r->state_step);
            }
        }
        /* Blocks moved onto their replica's node have it copied to a buddy (detail: the
         * logical step it holds, older than the committed one unless just taken). */
        af_replicas_follow(r, &r->n_replicas_moved);
        for (int64_t i = 0; i < r->n_replicas_moved; ++i) {
            int64_t b = r->items[i];
            log_event(r, "replica", b, r->pl.block_slot[b], replica_slot(r, b), r->rep_step[b]);
        }
        AF_CHECK(af_replicas_log_edges(r));
    }
    double t6 = af_now_us();

    r->sim_hours += r->cfg.sim_hours_per_step;
    r->mine.phase[AF_PHASE_coord_us] = t1 - t0;
    r->mine.phase[AF_PHASE_moves_us] = t2 - t1 - t_halo_rollback;
    r->mine.phase[AF_PHASE_kernel_us] = (t3 - t2) + t_retry;
    r->mine.phase[AF_PHASE_halo_us] = (t4 - t3) + t_halo;
    r->mine.phase[AF_PHASE_replica_us] = t6 - t5;
    (void)t5;
    if (r->state_step >= r->cfg.steps) {
        *stop = 1;
    }
    return AF_OK;
}

/* Rank 0: the rows of `n` buffered steps get every rank's counters and phase times (gathered
 * into r->all, rank-major) and go to the log, which then writes and commits them. */
static af_result_t write_rows(af_run_state_t *r, int64_t n)
{
    const int R = r->world.size;
    const int64_t cap = r->cfg.flush_interval + 1;
    for (int64_t k = 0; k < n; ++k) {
        af_step_row_t *row = &r->rows[k];
        for (int q = 0; q < R; ++q) {
            const af_payload_t *p = &r->all[(size_t)q * (size_t)cap + (size_t)k];
            row->corrupt_injected += p->count[CNT_INJECTED];
            row->corrupt_detected += p->count[CNT_DETECTED];
            row->fenced += p->count[CNT_FENCED];
            row->retried += p->count[CNT_RETRIED];
            row->sdc_undetected += p->count[CNT_SDC];
            row->sdc_harmful += p->count[CNT_SDC_HARMFUL];
            row->corrupt_harmful += p->count[CNT_HARMFUL];
            row->detected_finite += p->count[CNT_DET_FINITE];
            row->detected_abft += p->count[CNT_DET_ABFT];
            row->detected_twin += p->count[CNT_DET_TWIN];
            row->abft_false_alarms += p->count[CNT_ABFT_FALSE];
            row->twins += p->count[CNT_TWINS];
            row->unverified_commits += p->count[CNT_UNVERIFIED];
            row->allocs_after_init += p->count[CNT_ALLOCS];
            row->halo_bytes += p->count[CNT_HALO_BYTES];
            row->replica_log_bytes += p->count[CNT_LOG_BYTES];
            row->comms_after_init += p->count[CNT_COMMS];
            for (int ph = 0; ph < AF_NPHASES; ++ph) {
                r->phases[ph * R + q] = p->phase[ph];
            }
        }
        r->sdc_total += row->sdc_undetected;
        r->totals.corrupt_injected += row->corrupt_injected;
        r->totals.corrupt_detected += row->corrupt_detected;
        r->totals.fenced += row->fenced;
        r->totals.retried += row->retried;
        r->totals.unverified_commits += row->unverified_commits;
        r->totals.sdc_harmful += row->sdc_harmful;
        r->totals.corrupt_harmful += row->corrupt_harmful;
        r->totals.detected_finite += row->detected_finite;
        r->totals.detected_abft += row->detected_abft;
        r->totals.detected_twin += row->detected_twin;
        r->totals.abft_false_alarms += row->abft_false_alarms;
        r->totals.quarantined_units += row->quarantined_units;
        r->totals.twins += row->twins;
        r->totals.moves_drain += row->moves_drain;
        r->totals.moves_restore += row->moves_restore;
        r->totals.moves_retry += row->moves_retry;
        r->totals.rollbacks += row->rollbacks;
        r->totals.replayed_steps += row->replayed_steps;
        r->totals.replayed_blocks += row->replayed_blocks;
        r->totals.replayed_block_steps += row->replayed_block_steps;
        /* Cumulative per rank, summed over the ranks: the last row holds the run's totals. */
        r->totals.allocs_after_init = row->allocs_after_init;
        r->totals.comms_after_init = row->comms_after_init;
        AF_CHECK(af_log_append(r->log, row, r->phases));
        r->flushed_step = row->step;
    }
    /* The log's writer thread writes and commits them; the step goes on (it waits only for
     * the writer's previous batch, inside log_us). */
    return af_log_submit(r->log);
}

/* The log phase. Every rank keeps its per-step payloads in a batch; rank 0 keeps the rows it
 * can fill alone (health, moves, diagnostics). Every flush_interval steps (and at the end) one
 * gather brings the batch to rank 0, which completes the rows and writes them, so a step costs
 * the log a few stores, not a collective. A step's own step_us and log_us are known only at
 * the next step: the newest entry waits for them. */
af_result_t af_step_log(af_run_state_t *r, int final)
{
    const int64_t cap = r->cfg.flush_interval + 1;
    if (r->n_batch > 0) {
        af_payload_t *last = &r->batch[r->n_batch - 1];
        last->phase[AF_PHASE_step_us] = r->prev_step_us;
        last->phase[AF_PHASE_log_us] = r->prev_log_us;
        last->phase[AF_PHASE_sink_us] = r->prev_sink_us;
    }
    if (!final) {
        r->mine.count[CNT_ALLOCS] = af_alloc_after_seal();
        r->mine.count[CNT_COMMS] = af_alloc_comms_after_seal();
        r->batch[r->n_batch] = r->mine;
        if (r->world.rank == 0) {
            af_step_row_t *row = &r->rows[r->n_batch];
            memset(row, 0, sizeof *row);
            row->step = r->tick;
            row->state_step = r->state_step;
            row->sim_hours = r->sim_hours;
            row->mass = r->mass_now;
            row->energy = r->energy_now;
            row->dead_units = r->plan.dead;
            row->fading_units = r->plan.fading;
            row->straggler_units = r->straggler_healthy;
            row->slow_units = r->slow_units;
            row->healthy_units = r->units - r->plan.dead - r->plan.fading - r->straggler_healthy;
            row->blackout_frac = (double)r->plan.dead / (double)r->units;
            row->moves_drain = r->n_drain;
            row->moves_restore = r->n_restore;
            row->moves_retry = r->n_retry_moves;
            row->retried = r->n_retry_moves;
            row->rollbacks = r->n_rollbacks;
            row->replayed_steps = r->n_replayed;
            row->replayed_blocks = r->n_replayed_blocks;
            row->replayed_block_steps = r->n_replayed_block_steps;
            row->nonfinite_leaked = r->n_leaked;
            row->quarantined_units = r->n_quarantined;
        }
        r->n_batch++;
    }
    /* Complete entries: all but the newest, or all of them at the end. */
    int64_t complete = final ? r->n_batch : r->n_batch - 1;
    if (complete == 0 || (!final && complete < r->cfg.flush_interval)) {
        return AF_OK;
    }
    AF_CHECK(r->fab->ops->gather(r->fab, r->batch, sizeof(af_payload_t) * (size_t)cap, r->all, 0));
    if (r->world.rank == 0) {
        AF_CHECK(write_rows(r, complete));
        if (!final) {
            r->rows[0] = r->rows[complete];
        }
    }
    if (!final) {
        r->batch[0] = r->batch[complete];
    }
    r->n_batch -= complete;
    return AF_OK;
}
