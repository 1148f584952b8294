/* agefence driver: start-up of the step's state (af_step_init, af_step_destroy). Every array a
 * step touches — the shard's, the halo's, recovery's, the health tables, throttling, the
 * detectors' rotation and the log's batch — is allocated here, before the first step, so that
 * no step allocates (DESIGN "Memory"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/af_alloc.h"
#include "../../common/af_time.h"
#include "../io/backend.h"
#include "run_internal.h"
#include "../io/stop.h"

/* The detectors' tables, at start-up (every rank the same): with detect = sampled the blocks
 * grouped by their turn, so a step finds its sample without visiting every block; with
 * quarantine the fence counts of every unit and the declared suspects' list. */
static af_result_t detectors_init(af_run_state_t *r, size_t units)
{
    if (af_detect_flags(r->s.cfg.detect) & AF_DET_SAMPLED) {
        int64_t n = (int64_t)ceil(1.0 / r->s.cfg.sample_fraction);
        r->rc.det.sample_period = n;
        r->rc.det.sample_order = af_alloc(sizeof(int32_t) * (size_t)r->s.B);
        r->rc.det.sample_start = af_alloc(sizeof(int64_t) * (size_t)(n + 1));
        if (r->rc.det.sample_order == NULL || r->rc.det.sample_start == NULL) {
            af_error_set("cannot allocate the sampled detector's %lld groups of %lld blocks",
                         (long long)n, (long long)r->s.B);
            return AF_ERR_NOMEM;
        }
        /* A counting sort of the blocks by turn: ascending block order within a turn. */
        memset(r->rc.det.sample_start, 0, sizeof(int64_t) * (size_t)(n + 1));
        for (int64_t b = 0; b < r->s.B; ++b) {
            r->rc.det.sample_start[af_sample_turn(&r->rc.det, r->s.cfg.seed, b) + 1]++;
        }
        for (int64_t t = 0; t < n; ++t) {
            r->rc.det.sample_start[t + 1] += r->rc.det.sample_start[t];
        }
        for (int64_t b = 0; b < r->s.B; ++b) {
            int64_t t = af_sample_turn(&r->rc.det, r->s.cfg.seed, b);
            r->rc.det.sample_order[r->rc.det.sample_start[t]++] = (int32_t)b;
        }
        for (int64_t t = n; t > 0; --t) {
            r->rc.det.sample_start[t] = r->rc.det.sample_start[t - 1];
        }
        r->rc.det.sample_start[0] = 0;
    }
    if (r->s.cfg.quarantine_after > 0) {
        r->rc.det.quarantine = af_alloc(sizeof(int32_t) * (units > 0 ? units : 1));
        /* A unit reaches the count once; a step's fences (each retry round's, and the check
         * before the last) name at most AF_MAX_RETRY_ROUNDS + 1 units per block. */
        size_t most = (size_t)(AF_MAX_RETRY_ROUNDS + 1) * (size_t)r->s.B;
        r->rc.det.suspect_cap = (int64_t)(most < units ? most : units);
        r->rc.det.suspect_new = af_alloc(
            sizeof(int32_t) * (size_t)(r->rc.det.suspect_cap > 0 ? r->rc.det.suspect_cap : 1));
        if (r->thr.strag_units == NULL) {
            r->thr.strag_units = af_alloc(sizeof(int32_t) * (units > 0 ? units : 1));
        }
        if (!r->rc.det.quarantine || !r->rc.det.suspect_new || !r->thr.strag_units) {
            af_error_set("cannot allocate the quarantine tables of %zu units", units);
            return AF_ERR_NOMEM;
        }
        memset(r->rc.det.quarantine, 0, sizeof(int32_t) * units);
    }
    return AF_OK;
}

/* The fused step's outputs (backend.step_pass, sim/driver/step.c): its published and fenced
 * lists are the halo's own, its commit marks committed_now; the notable slots have a list of
 * their own, as long as the halo's. Nothing when the backend has no fused step or the
 * scenario asks for separate passes. */
static af_result_t fused_init(af_run_state_t *r)
{
    memset(&r->fused, 0, sizeof r->fused);
    if (r->s.k->ops->step == NULL) {
        if (r->s.cfg.step_pass == AF_STEP_PASS_ONE) {
            af_error_set("backend.step_pass = one: the %s backend has no fused step (expected "
                         "auto or separate)",
                         r->s.k->ops->name);
            return AF_ERR_USAGE;
        }
        return AF_OK;
    }
    if (r->s.cfg.step_pass == AF_STEP_PASS_SEPARATE) {
        return AF_OK;
    }
    r->fused.notable = af_alloc(sizeof(int32_t) * (size_t)r->halo.blocks);
    if (r->fused.notable == NULL) {
        af_error_set("cannot allocate the fused step's list of %lld slots",
                     (long long)r->halo.blocks);
        return AF_ERR_NOMEM;
    }
    r->fused.pub = r->halo.pub_blocks;
    r->fused.pub_cap = r->halo.blocks;
    r->fused.fenced = r->halo.fenced_mine;
    r->fused.committed = r->rc.tw.committed_now;
    return AF_OK;
}

af_result_t af_step_init(af_run_state_t *r)
{
    size_t B = (size_t)r->s.B;
    size_t units = (size_t)r->s.units;
    size_t T = (size_t)r->s.T;
    size_t D = (size_t)r->s.D;
    r->halo.xlen = af_xchg_len((int)r->s.B) + (r->s.cfg.straggler_detect ? D : 0);
    r->halo.xchg_prev = af_alloc(sizeof(uint64_t) * r->halo.xlen);
    r->halo.xchg_cur = af_alloc(sizeof(uint64_t) * r->halo.xlen);
    r->s.cellbuf = af_alloc(sizeof(double) * T);
    r->rc.tw.twin_buf = af_alloc(sizeof(double) * T);
    r->s.unit_state = af_alloc(units);
    r->s.own_u0 = r->s.pl.dev_lo * r->s.U;
    r->s.own_units = (r->s.pl.dev_hi - r->s.pl.dev_lo) * r->s.U;
    size_t own = (size_t)(r->s.own_units > 0 ? r->s.own_units : 1);
    r->rc.det.unit_first_corrupt = af_alloc(sizeof(int32_t) * own);
    /* Changes: the model's, then those of declared stragglers and suspects. The model changes a
     * unit at most once a step, but a unit the scripted events name can change once more for
     * each (event, unit) pair; a declaration takes a unit HEALTHY after the model's changes, at
     * most once. So a step makes at most units + the scripted events' units changes, and a
     * declaration that finds the list full is an error (declared_change), never dropped. */
    r->health.changes_cap = (int64_t)units + af_config_scripted_units(&r->s.cfg) + 1;
    r->health.changes = af_alloc(sizeof(af_health_change_t) * (size_t)r->health.changes_cap);
    /* A block moves at most once a step (a restore or a drain), but with memory resets a
     * block restored in place may also be drained: twice. */
    int resets = r->s.cfg.hbm_rate_per_hour > 0;
    for (int i = 0; i < r->s.cfg.n_events; ++i) {
        resets |= r->s.cfg.events[i].action == AF_EVENT_RESET_DEVICE;
    }
    r->health.moves = af_alloc(sizeof(af_move_t) * B * (resets ? 2 : 1));
    r->rc.rep.rank = af_alloc(sizeof(int32_t) * B);
    r->rc.rep.off = af_alloc(sizeof(int64_t) * B);
    size_t chunk = B < AF_XFER_CHUNK ? B : AF_XFER_CHUNK;
    r->rc.xfer.stage_send = af_alloc(sizeof(double) * chunk * T);
    r->rc.xfer.stage_recv = af_alloc(sizeof(double) * chunk * T);
    r->rc.xfer.p2p = af_alloc(sizeof(af_p2p_t) * 2 * AF_XFER_CHUNK);
    r->rc.xfer.set = af_alloc(sizeof(int64_t) * AF_XFER_SET);
    r->rc.xfer.used = af_alloc(sizeof(int32_t) * 2 * AF_XFER_CHUNK);
    r->rc.xfer.peer = af_alloc(sizeof(int64_t) * 4 * (size_t)r->s.world.size);
    r->rc.xfer.route = af_alloc(sizeof(int32_t) * 3 * AF_XFER_CHUNK);
    for (size_t i = 0; r->rc.xfer.set != NULL && i < AF_XFER_SET; ++i) {
        r->rc.xfer.set[i] = -1;
    }
    /* The twin candidates before they are sorted and deduplicated: the blocks of the FADING
     * units and the declared stragglers (a unit in both counted once, af_dmr_begin), at most
     * the blocks, then the sampled turn's, at most the blocks again. */
    r->rc.xfer.items = af_alloc(sizeof(int32_t) * 2 * B);
    r->rc.tw.twin = af_alloc(sizeof(int32_t) * B);
    r->rc.tw.dmr_mark = af_alloc((size_t)(r->s.n_local > 0 ? r->s.n_local : 1));
    r->rc.tw.committed_now = af_alloc((size_t)(r->s.n_local > 0 ? r->s.n_local : 1));
    size_t ldev = (size_t)(r->s.pl.dev_hi - r->s.pl.dev_lo);
    r->thr.dev_delay = af_alloc(sizeof(double) * (ldev > 0 ? ldev : 1));
    r->halo.dev_words = af_alloc(sizeof(uint64_t) * D);
    if (!r->thr.dev_delay || !r->halo.dev_words || !r->rc.det.unit_first_corrupt) {
        af_error_set("cannot allocate the throttling tables for %lld units", (long long)r->s.units);
        return AF_ERR_NOMEM;
    }
    const size_t nodes = D / (size_t)r->s.cfg.devices_per_node;
    r->health.intr_dev_memo = af_alloc(sizeof(uint64_t) * D); /* 0: never counted */
    r->health.intr_node_tick = af_alloc(sizeof(int64_t) * (nodes > 0 ? nodes : 1));
    if (!r->health.intr_dev_memo || !r->health.intr_node_tick) {
        af_error_set("cannot allocate the interruption marks of %lld devices", (long long)D);
        return AF_ERR_NOMEM;
    }
    for (size_t n = 0; n < nodes; ++n) {
        r->health.intr_node_tick[n] = -1;
    }
    for (int64_t k = 0; k < r->s.own_units; ++k) {
        r->rc.det.unit_first_corrupt[k] = -1;
    }
    /* The own units any slow event names, once each. */
    AF_CHECK(af_throttle_slow_init(r));
    int any_slow = 0;
    for (int i = 0; i < r->s.cfg.n_events; ++i) {
        any_slow |= r->s.cfg.events[i].action == AF_EVENT_SLOW;
    }
    /* The same on every rank: what the scenario allows, not what this rank's units see. */
    r->thr.throttle_possible =
        r->s.cfg.throttle_slowdown > 0 || r->s.cfg.spike_rate > 0 || any_slow;
    if (r->s.cfg.straggler_detect) {
        /* Every rank runs the detector (its input, the exchange's per-device words, is the
         * same on every rank) and lists the declared stragglers' units. */
        r->thr.strag_units = af_alloc(sizeof(int32_t) * units);
        AF_CHECK(af_straggler_init(&r->thr.strag, r->s.D, r->s.cfg.straggler_alpha,
                                   r->s.cfg.straggler_threshold, r->s.cfg.straggler_patience));
        r->thr.strag_in = af_alloc(sizeof(double) * D);
        r->thr.strag_new = af_alloc(sizeof(int64_t) * D);
        if (!r->thr.strag_units || !r->thr.strag_in || !r->thr.strag_new) {
            af_error_set("cannot allocate the straggler tables for %lld devices",
                         (long long)r->s.D);
            return AF_ERR_NOMEM;
        }
    }
    AF_CHECK(detectors_init(r, units));
    if (r->s.cfg.pacing_mode == AF_PACING_QUANTILE) {
        af_pacer_init_quantile(&r->thr.pacer, r->s.cfg.pacing_quantile, r->s.cfg.pacing_warmup);
    } else {
        af_pacer_init(&r->thr.pacer, r->s.cfg.pacing_gamma, r->s.cfg.pacing_alpha,
                      r->s.cfg.pacing_warmup);
    }
    if (!r->halo.xchg_prev || !r->halo.xchg_cur || !r->s.cellbuf || !r->rc.tw.twin_buf ||
        !r->s.unit_state || !r->health.changes || !r->health.moves || !r->rc.rep.rank ||
        !r->rc.rep.off || !r->rc.xfer.stage_send || !r->rc.xfer.stage_recv || !r->rc.xfer.p2p ||
        !r->rc.xfer.set || !r->rc.xfer.used || !r->rc.xfer.peer || !r->rc.xfer.route ||
        !r->rc.xfer.items || !r->rc.tw.twin || !r->rc.tw.dmr_mark || !r->rc.tw.committed_now) {
        af_error_set("cannot allocate the step buffers for %lld blocks and %lld units",
                     (long long)r->s.B, (long long)r->s.units);
        return AF_ERR_NOMEM;
    }
    /* Every rank ages its own devices' units (the model draws each unit from the seed and
     * the unit alone, so the shards together are the one model of the fleet). */
    const int64_t own_lo = r->s.pl.dev_lo * r->s.U;
    const int64_t own_hi = r->s.pl.dev_hi * r->s.U;
    AF_CHECK(af_aging_init_range(&r->health.aging, &r->s.cfg, r->s.D, own_lo, own_hi));
    r->s.aging = &r->health.aging;
    /* Every unit's first rate and prediction, from the initial placement, here rather than
     * in the first step: the loop's first tick is tick + 1 (af_step counts it before it
     * plans), and what moves before then is on the placement's list of changed units. */
    af_aging_start(&r->health.aging, &r->s.cfg, r->s.tick + 1, r->s.pl.unit_load, r->s.C);
    af_jobintr_init(&r->health.jobintr, &r->s.cfg, r->s.D);
    /* What decides a quiet step (sim/driver/health.h): the next scripted event, the first
     * interruption due, and what gives the plan work in every step. */
    r->health.next_event = af_config_next_event(&r->s.cfg, r->s.tick, 0);
    r->health.intr_due_h = af_jobintr_due_h(&r->health.jobintr);
    r->health.standing = r->s.cfg.straggler_detect ? AF_STANDING_STRAGGLERS : 0;
    r->health.own_slow = r->thr.n_slow > 0;
    const char *debug = getenv("AGEFENCE_DEBUG");
    r->health.debug_loads = debug != NULL && strstr(debug, "agingloads") != NULL;
    int64_t scripted = af_config_scripted_units(&r->s.cfg);
    /* The model's own changes go in the tail of the plan's list, which the gather fills in place
     * (the fabric's allgatherv_i32): room for every own unit and scripted change, within the
     * room for every unit's. */
    const int64_t own_cap = (own_hi - own_lo) + scripted + 1;
    if (own_cap > r->health.changes_cap) {
        af_error_set("the health lists: %lld own changes in room for %lld", (long long)own_cap,
                     (long long)r->health.changes_cap);
        return AF_ERR_INTERNAL;
    }
    r->health.my_changes = r->health.changes + (r->health.changes_cap - own_cap);
    r->health.scripted = af_alloc(sizeof(af_health_change_t) * (size_t)(scripted + 1));
    r->health.scripted_cap = scripted + 1;
    /* The coordinator's targets beyond a block's own device come from the placement's
     * directory of free capacity, which follows unit_state (all HEALTHY now). */
    AF_CHECK(af_placement_dir_attach(&r->s.pl, r->s.unit_state));
    r->health.fade_units = af_alloc(sizeof(int32_t) * units);
    if (!r->health.my_changes || !r->health.scripted || !r->health.fade_units) {
        af_error_set("cannot allocate the health lists for %lld units", (long long)r->s.units);
        return AF_ERR_NOMEM;
    }
    AF_CHECK(af_halo_init(&r->halo, &r->s));
    AF_CHECK(fused_init(r));
    af_recovery_bind(&r->rc, &r->s, &r->halo, r->health.moves);
    AF_CHECK(af_replicas_init(&r->rc));
    return AF_OK;
}

void af_step_release(af_run_state_t *r)
{
    af_replicas_release(&r->rc);
    af_free(r->health.changes);
    r->health.changes = NULL;
    r->health.my_changes = NULL;
}

void af_step_destroy(af_run_state_t *r)
{
    af_free(r->fused.notable);
    r->fused.notable = NULL;
    af_halo_destroy(&r->halo);
    af_free(r->halo.xchg_prev);
    af_free(r->halo.xchg_cur);
    if (r->halo.dxchg_prev != NULL) {
        af_buf_free(AF_MEM_DEVICE, r->halo.dxchg_prev);
        af_buf_free(AF_MEM_DEVICE, r->halo.dxchg_cur);
        r->halo.dxchg_prev = r->halo.dxchg_cur = NULL;
    }
    af_free(r->s.cellbuf);
    af_free(r->rc.tw.twin_buf);
    af_free(r->s.unit_state);
    af_free(r->rc.det.unit_first_corrupt);
    r->rc.det.unit_first_corrupt = NULL;
    af_free(r->health.changes);
    af_free(r->health.moves);
    af_free(r->rc.rep.rank);
    af_free(r->rc.rep.off);
    af_free(r->rc.rep.store);
    af_free(r->rc.rep.step);
    af_free(r->rc.rep.dev);
    af_free(r->rc.rep.dev_gone);
    af_free(r->rc.rep.dev_lost_now);
    af_free(r->rc.rep.dev_lost_list);
    r->rc.rep.dev = NULL;
    r->rc.rep.dev_gone = NULL;
    r->rc.rep.dev_lost_now = NULL;
    r->rc.rep.dev_lost_list = NULL;
    af_free(r->rc.rep.log);
    af_free(r->rc.rep.blocks);
    af_free(r->rc.rep.replay_buf);
    af_free(r->rc.rep.edges_in);
    af_free(r->rc.rep.pub_bits);
    af_free(r->rc.rep.carry_send);
    af_free(r->rc.rep.carry_recv);
    r->rc.rep.pub_bits = NULL;
    r->rc.rep.edges_in = r->rc.rep.carry_send = r->rc.rep.carry_recv = NULL;
    r->rc.rep.store = r->rc.rep.replay_buf = NULL;
    r->rc.rep.step = NULL;
    r->rc.rep.log = NULL;
    r->rc.rep.blocks = NULL;
    af_free(r->rc.xfer.stage_send);
    af_free(r->rc.xfer.stage_recv);
    af_free(r->rc.xfer.p2p);
    af_free(r->rc.xfer.set);
    af_free(r->rc.xfer.used);
    af_free(r->rc.xfer.peer);
    af_free(r->rc.xfer.route);
    r->rc.xfer.peer = NULL;
    r->rc.xfer.route = NULL;
    af_free(r->rc.xfer.items);
    af_free(r->rc.tw.twin);
    af_free(r->rc.tw.dmr_mark);
    af_free(r->rc.tw.committed_now);
    r->rc.tw.committed_now = NULL;
    af_free(r->thr.slow_list);
    af_free(r->thr.slow_base);
    af_free(r->thr.slow_order);
    af_free(r->health.intr_dev_memo);
    af_free(r->health.intr_node_tick);
    r->health.intr_node_tick = NULL;
    r->health.intr_dev_memo = NULL;
    af_free(r->thr.dev_delay);
    af_free(r->halo.dev_words);
    af_free(r->thr.strag_in);
    af_free(r->thr.strag_new);
    af_free(r->thr.strag_units);
    af_free(r->rc.det.sample_order);
    af_free(r->rc.det.sample_start);
    af_free(r->rc.det.quarantine);
    af_free(r->rc.det.suspect_new);
    r->rc.det.sample_order = r->rc.det.suspect_new = NULL;
    r->rc.det.sample_start = NULL;
    r->rc.det.quarantine = NULL;
    af_free(r->health.scripted); /* my_changes is the change list's tail */
    af_free(r->health.fade_units);
    r->health.my_changes = r->health.scripted = NULL;
    r->health.fade_units = NULL;
    r->thr.slow_base = NULL;
    r->thr.slow_list = r->thr.slow_order = NULL;
    r->thr.dev_delay = r->thr.strag_in = NULL;
    r->halo.dev_words = NULL;
    r->thr.strag_new = NULL;
    r->thr.strag_units = NULL;
    if (r->thr.strag.mean != NULL) {
        af_straggler_destroy(&r->thr.strag);
    }
    af_aging_destroy(&r->health.aging);
}
