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
 * This file runs the phases in order (af_step) and the kernel phase itself (containment, the
 * step graph, retries); the health phase is health.c, throttling throttle.c, the log
 * steplog.c, the moves and replicas sim/recovery, the halo sim/exchange. Every array touched
 * here was allocated in af_step_init() (step_init.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/af_alloc.h"
#include "../../common/af_time.h"
#include "../io/backend.h"
#include "run_internal.h"
#include "../io/stop.h"

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
    if (r->s.tick == alloc_at) {
        void *p = af_alloc(64);
        if (p == NULL) {
            return AF_ERR_NOMEM;
        }
        af_free(p);
    }
    if (r->s.tick == comm_at) {
        af_fabric_t *f = NULL;
        AF_CHECK(af_fabric_mpi_split(r->s.fab, 0, r->s.world.rank, &f));
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
    for (int s = 0; s < r->s.n_local; ++s) {
        if (r->s.k->slot_block[s] < 0 || r->s.k->slot_mode[s] == AF_MODE_DEAD ||
            r->s.k->slot_mode[s] == AF_MODE_SHADOW) {
            continue;
        }
        if (r->s.k->ops->read_slot(r->s.k, s, r->s.cellbuf) != AF_OK) {
            return;
        }
        int nf = 0;
        for (int64_t i = 0; i < r->s.T; ++i) {
            nf += af_nonfinite(r->s.cellbuf[i]);
        }
        if (nf) {
            fprintf(stderr,
                    "agefence: scan: tick %lld after %s: rank %d slot %lld block %d mode %d "
                    "holds %d non-finite values\n",
                    (long long)r->s.tick, phase, r->s.world.rank, (long long)(r->s.slot0 + s),
                    r->s.k->slot_block[s], r->s.k->slot_mode[s], nf);
        }
    }
}

af_result_t af_step_graph_init(af_run_state_t *r)
{
    r->graph.on = 0;
    r->halo.pinned = 0;
    if (r->s.cfg.graph == AF_GRAPH_OFF) {
        snprintf(r->graph.why, sizeof r->graph.why, "off (backend.graph = off)");
        return AF_OK;
    }
    if (r->s.cfg.straggler_detect) {
        /* config.c refuses graph = on with straggler detection: this is auto. */
        snprintf(r->graph.why, sizeof r->graph.why, "off (auto: straggler detection is on)");
        return AF_OK;
    }
    if (r->s.cfg.graph == AF_GRAPH_AUTO && r->halo.dxchg_prev == NULL) {
        /* No launches to save on a CPU; backend.graph = on runs the same path there (tests). */
        snprintf(r->graph.why, sizeof r->graph.why, "off (auto: the %s backend launches nothing)",
                 r->s.k->ops->name);
        return AF_OK;
    }
    memset(&r->graph.gio, 0, sizeof r->graph.gio);
    r->graph.gio.xchg_in = r->halo.dxchg_prev != NULL ? r->halo.dxchg_prev : r->halo.xchg_prev;
    r->graph.gio.xchg_out = r->halo.dxchg_cur != NULL ? r->halo.dxchg_cur : r->halo.xchg_cur;
    r->graph.gio.xlen = r->halo.xlen;
    r->graph.gio.reduce = af_graph_reduce_init(&r->graph.greduce, r->s.nccl);
    r->graph.gio.host_out = r->halo.xchg_cur;
    af_result_t rc = r->s.k->ops->graph_prepare(r->s.k, &r->graph.gio);
    /* AGEFENCE_DEBUG=graphfail=R: rank R's preparation fails (tests the agreement below). */
    const char *dbg = getenv("AGEFENCE_DEBUG");
    const char *gf = dbg != NULL ? strstr(dbg, "graphfail=") : NULL;
    if (rc == AF_OK && gf != NULL && atoi(gf + strlen("graphfail=")) == r->s.world.rank) {
        af_error_set("graph_prepare failed on purpose (AGEFENCE_DEBUG=graphfail)");
        rc = AF_ERR_DEVICE;
    }
    /* Every rank runs the same path: one rank's failure turns the graph off everywhere. */
    uint64_t failed = rc != AF_OK;
    char why[200];
    snprintf(why, sizeof why, "%s", rc != AF_OK ? af_error_message() : "");
    AF_CHECK(r->s.fab->ops->allreduce_max_u64(r->s.fab, &failed, 1));
    if (failed) {
        af_error_clear(); /* said again below, with what it means for the run */
        if (r->s.cfg.graph == AF_GRAPH_ON) {
            af_error_set("backend.graph = on: the step graph cannot be prepared%s%s",
                         rc != AF_OK ? ": " : " on another rank", why);
            return rc != AF_OK ? rc : AF_ERR_INTERNAL;
        }
        snprintf(r->graph.why, sizeof r->graph.why, "off (auto: preparing it failed%s%.80s)",
                 rc != AF_OK ? ": " : " on another rank", why);
        if (r->s.world.rank == 0 || rc != AF_OK) {
            fprintf(stderr, "agefence: rank %d: step graph %s; the eager path runs instead\n",
                    r->s.world.rank, r->graph.why);
        }
        return AF_OK;
    }
    r->graph.on = 1;
    r->halo.pinned = 1;
    if (r->s.k->graph_instantiations > 0) {
        snprintf(r->graph.why, sizeof r->graph.why, "on (CUDA graph%s)",
                 r->s.nccl != NULL ? " with the nccl all-reduce inside" : ", mpi all-reduce after");
    } else {
        snprintf(r->graph.why, sizeof r->graph.why, "on (%s backend: the same work in sequence)",
                 r->s.k->ops->name);
    }
    return AF_OK;
}

/* The exchange the kernels read: device memory with the cuda backend. */
static const uint64_t *kernel_xchg(const af_run_state_t *r)
{
    return r->halo.dxchg_prev != NULL ? r->halo.dxchg_prev : r->halo.xchg_prev;
}

/* Containment of occupied slot s after a compute pass: commit it when clean, count the rest;
 * mark is its DMR outcome (AF_DMR_NONE in a step without twins). Returns 1 when `backend`,
 * the decision the backend made itself (a step graph, the fused step), is not the one made
 * here. */
static int contain_slot(af_run_state_t *r, int s, uint8_t mark, uint8_t backend)
{
    af_kernels_t *k = r->s.k;
    int live = k->slot_block[s] >= 0 &&
               (k->slot_mode[s] == AF_MODE_HEALTHY || k->slot_mode[s] == AF_MODE_FADING);
    if (!live) {
        k->commit[s] = 0;
        r->rc.tw.committed_now[s] = 0;
        return backend != 0;
    }
    r->s.mine.count[CNT_INJECTED] += k->injected[s];
    r->s.mine.count[CNT_HARMFUL] += k->harmful[s];
    if (k->injected[s] > 0) {
        /* The unit's record: the first step it corrupted a result (the simulator's truth, for
         * the time to quarantine; no detector reads it). */
        int32_t *seen =
            &r->rc.det
                 .unit_first_corrupt[af_own_unit(&r->s, af_slot_unit(&r->s.pl, r->s.slot0 + s))];
        *seen = *seen < 0 ? (int32_t)r->s.tick : *seen;
    }
    int abft_fail = k->desc.abft && k->abft[s] != 0;
    if (mark == AF_DMR_ADOPTED) {
        /* The healthy twin's result replaced ours: a recompute within the step. */
        k->commit[s] = 1;
        r->s.mine.count[CNT_FENCED]++;
        r->s.mine.count[CNT_RETRIED]++;
        r->s.mine.count[CNT_DETECTED] += k->injected[s];
        r->s.mine.count[CNT_DET_TWIN] += k->injected[s];
    } else if (mark == AF_DMR_FENCED || k->nonfinite[s] != 0 || abft_fail) {
        k->commit[s] = 0;
        r->s.mine.count[CNT_FENCED]++;
        r->s.mine.count[CNT_DETECTED] += k->injected[s];
        /* Credited to the cheapest detector that fired: the non-finite test, then the mass
         * balance, then the twin. */
        r->s.mine.count[k->nonfinite[s] != 0 ? CNT_DET_FINITE
                        : abft_fail          ? CNT_DET_ABFT
                                             : CNT_DET_TWIN] += k->injected[s];
        /* The simulator's truth, for the false-alarm count: nothing was injected. */
        r->s.mine.count[CNT_ABFT_FALSE] += abft_fail && k->injected[s] == 0;
    } else {
        k->commit[s] = 1;
        r->s.mine.count[CNT_SDC] += k->injected[s]; /* finite corruption got through */
        r->s.mine.count[CNT_SDC_HARMFUL] += k->harmful[s];
        /* DMR promises a twin for every block of a FADING unit; with no room left for one
         * (af_dmr_begin) the block is committed unchecked: counted, never hidden. */
        if ((af_detect_flags(r->s.cfg.detect) & AF_DET_DMR) && k->slot_mode[s] == AF_MODE_FADING &&
            r->rc.tw.twin[k->slot_block[s]] < 0) {
            r->s.mine.count[CNT_UNVERIFIED]++;
        }
    }
    r->rc.tw.committed_now[s] = k->commit[s];
    return backend != k->commit[s];
}

/* The error of a backend whose own containment decisions (n of them, the first on local slot
 * `first`) broke the driver's rule. */
static af_result_t contain_disagrees(const af_run_state_t *r, const char *what, int64_t n,
                                     int first)
{
    const af_kernels_t *k = r->s.k;
    af_error_set("step %lld: the %s backend's %s committed %lld slot(s) against the containment "
                 "rule (first: local slot %d, block %d, mode %d, %d non-finite)",
                 (long long)r->s.tick, k->ops->name, what, (long long)n, first,
                 k->slot_block[first], k->slot_mode[first], k->nonfinite[first]);
    return AF_ERR_INTERNAL;
}

/* Containment after a compute pass over `flags`' slots: commit what is clean, count the rest.
 * After a step graph (verify), the backend has decided and committed already: the decisions
 * in commit[] must be the ones made here, or the step fails. */
static af_result_t contain(af_run_state_t *r, int flags, int verify)
{
    af_kernels_t *k = r->s.k;
    int selected = (flags & AF_COMPUTE_SELECTED) != 0;
    int64_t disagree = 0;
    int first = -1;
    /* The occupied slots; after a step graph every slot, since the backend decided for the
     * whole static grid and an empty slot's decision must be 0 too. */
    const int n = verify ? r->s.n_local : k->n_occ;
    for (int i = 0; i < n; ++i) {
        int s = verify ? i : k->occ[i];
        uint8_t backend = k->commit[s];
        if (selected && !k->select[s]) {
            k->commit[s] = 0; /* committed in the main pass already (committed_now says) */
            continue;
        }
        if (contain_slot(r, s, r->rc.tw.dmr_mark[s], backend) && verify) {
            disagree++;
            first = first < 0 ? s : first;
        }
    }
    return disagree > 0 ? contain_disagrees(r, "step graph", disagree, first) : AF_OK;
}

/* Containment after the backend's fused step, which decided, committed and packed every
 * occupied slot by the rule already: the slots it names (o->notable) are counted here and
 * their decisions checked; every other slot was live, clean and committed, which counts
 * nothing. A step without twins has no DMR outcome. */
static af_result_t contain_fused(af_run_state_t *r, const af_step_out_t *o)
{
    int64_t disagree = 0;
    int first = -1;
    for (int64_t i = 0; i < o->n_notable; ++i) {
        int s = o->notable[i];
        if (contain_slot(r, s, AF_DMR_NONE, r->s.k->commit[s])) {
            disagree++;
            first = first < 0 ? s : first;
        }
    }
    return disagree > 0 ? contain_disagrees(r, "fused step", disagree, first) : AF_OK;
}

/* Whether this step's kernel and halo phases run as the backend's fused step: one pass over
 * each block (backend.step_pass), in a step without DMR twins and without a rollback, on a
 * host exchange. */
static int fused_step(const af_run_state_t *r, int64_t twins, int rollback)
{
    return r->s.cfg.step_pass != AF_STEP_PASS_SEPARATE && r->s.k->ops->step != NULL &&
           r->halo.dxchg_cur == NULL && twins == 0 && !rollback;
}

/* The kernel and halo phases of a steady-state step as the backend's step graph: compute,
 * containment, commit, pack and (nccl) the all-reduce in one launch; the driver then checks
 * and counts the containment, spends the throttling delay, and (mpi) reduces the exchange on
 * the host. *t_kernel gets the end of the kernel phase. */
static af_result_t graph_step(af_run_state_t *r, double *t_kernel)
{
    af_kernels_t *k = r->s.k;
    uint64_t flags[AF_XCHG_FLAGS] = {0};
    flags[AF_XCHG_STOP] = af_stop_flag() ? 1 : 0;
    r->graph.gio.xchg_in = kernel_xchg(r);
    r->graph.gio.xchg_out = r->halo.dxchg_cur != NULL ? r->halo.dxchg_cur : r->halo.xchg_cur;
    r->graph.gio.host_out = r->halo.xchg_cur;
    double tc = af_now_us();
    AF_CHECK(k->ops->graph_run(k, &r->graph.gio, af_inject_key(&r->s, 0), flags));
    r->s.mine.phase[AF_PHASE_throttle_us] = af_throttle(r, af_now_us() - tc);
    AF_CHECK(contain(r, 0, 1));
    *t_kernel = af_now_us();
    return af_halo_after_graph(&r->halo, flags[AF_XCHG_STOP], r->graph.gio.reduce != NULL);
}

/* The run stops inside a step whose fenced blocks found no slot to be retried on: those
 * blocks hold the step before, so every block the step committed goes back to it too (its
 * other buffer, which nothing has written since the commit), and the state the run ends with
 * is the last step every block completed, the one the verdict compares with the reference. */
static af_result_t undo_step_commits(af_run_state_t *r)
{
    af_kernels_t *k = r->s.k;
    for (int i = 0; i < k->n_occ; ++i) {
        int s = k->occ[i];
        if (r->rc.tw.committed_now[s]) {
            AF_CHECK(k->ops->read_next(k, s, r->s.cellbuf));
            AF_CHECK(k->ops->write_slot(k, s, r->s.cellbuf));
            r->rc.tw.committed_now[s] = 0;
        }
    }
    return AF_OK;
}

af_result_t af_step(af_run_state_t *r, int *stop)
{
    af_kernels_t *k = r->s.k;
    memset(&r->s.mine, 0, sizeof r->s.mine);
    r->tally.n_drain = r->tally.n_restore = r->tally.n_retry_moves = r->rc.rep.n_rollbacks =
        r->rc.rep.n_replayed = 0;
    r->rc.det.n_quarantined = 0;
    r->tally.n_replayed_blocks = r->tally.n_replayed_block_steps = 0;
    r->rc.rep.n_replicas_lost = r->tally.n_replicas_retaken = r->tally.n_replicas_moved = 0;
    r->s.tick++;
    AF_CHECK(debug_break_promise(r));
    double t0 = af_now_us();
    af_slow_events(r);
    af_lose_replicas(r);

    /* 1. Coordinator. Every rank ages its own units, which consumes the placement's list of
     * changed units; the ranks share the step's health changes, and every rank plans the same
     * moves from them. plan_us is the rank's own work: its ageing and its plan. */
    double tp = af_now_us();
    int64_t n_mine = af_age_own_units(r);
    double t_age = af_now_us() - tp;
    int64_t n_model = 0;
    AF_CHECK(af_gather_health(r, n_mine, &n_model));
    tp = af_now_us();
    af_plan(r, n_model);
    r->s.mine.phase[AF_PHASE_plan_us] = t_age + (af_now_us() - tp);
    /* A step with no health change, no FADING unit, no memory reset and no straggler detection
     * has an empty plan on every rank by construction (restores follow deaths and resets,
     * drains FADING units): there is nothing to prove. */
    if (n_model > 0 || r->health.n_fade > 0 || r->s.cfg.straggler_detect ||
        r->health.reset_moves > 0) {
        AF_CHECK(af_check_plan(r));
    }
    AF_CHECK(af_apply_plan(r));
    for (int64_t i = 0; i < r->health.plan.n_moves; ++i) {
        const af_move_t *m = &r->health.moves[i];
        r->tally.n_drain += m->kind == AF_MOVE_DRAIN;
        r->tally.n_restore += m->kind == AF_MOVE_RESTORE;
        /* Restores from older replicas that no rollback covers: replayed alone. */
        int64_t rs = m->kind == AF_MOVE_RESTORE ? r->rc.rep.step[m->block] : -1;
        if (r->health.plan.rollback_to < 0 && rs >= 0 && rs < r->s.state_step) {
            r->tally.n_replayed_blocks++;
            r->tally.n_replayed_block_steps += r->s.state_step - rs;
        }
    }
    debug_scan(r, "plan");
    double t1 = af_now_us();
    double blackout = (double)r->health.plan.dead / (double)r->s.units;
    if (blackout > r->tally.max_blackout) {
        r->tally.max_blackout = blackout;
    }
    if (r->health.plan.exhausted) {
        r->prog.exhausted = 1;
        r->prog.exhausted_why = "the live slots cannot hold every block";
        *stop = 1;
        r->s.mine.phase[AF_PHASE_coord_us] = t1 - t0;
        return AF_OK;
    }

    /* 2. Moves, and a rollback when a restore found its replica stale. */
    int rollback = r->health.plan.rollback_to >= 0;
    AF_CHECK(af_apply_moves(&r->rc, r->health.moves, r->health.plan.n_moves, !rollback));
    double t_halo = 0.0;
    double t_halo_rollback = 0.0;
    if (rollback) {
        AF_CHECK(r->health.plan.restart ? af_restart(&r->rc) : af_rollback(&r->rc));
        double th = af_now_us();
        for (int i = 0; i < k->n_occ; ++i) {
            k->commit[k->occ[i]] = 1;
        }
        AF_CHECK(k->ops->upload_control(k));
        AF_CHECK(af_exchange(&r->halo));
        AF_CHECK(af_exchange_swap(&r->halo));
        t_halo_rollback = af_now_us() - th;
        t_halo += t_halo_rollback;
        if (r->health.plan.restart) {
            /* Every replica (the lost ones too) holds step 0 again, with its edges. */
            AF_CHECK(af_replicas_refresh(&r->rc));
            AF_CHECK(af_replicas_log_edges(&r->rc));
        }
    }
    /* The moves' sources are empty now: their buffers go back before twins take some. */
    af_kernels_settle(k);
    debug_scan(r, "moves");
    double t2 = af_now_us();

    /* 3. Kernel: DMR twins, the masked compute, containment, commit. */
    int64_t twins = 0;
    if (af_detect_flags(r->s.cfg.detect) & (AF_DET_DMR | AF_DET_SAMPLED)) {
        AF_CHECK(af_dmr_begin(&r->rc, NULL, 0, r->health.fade_units, r->health.n_fade,
                              r->thr.strag_units, r->thr.n_strag_units, &twins));
    }
    /* Every rank plans the same twins: rank 0 alone counts them. */
    r->s.mine.count[CNT_TWINS] += r->s.world.rank == 0 ? twins : 0;
    double t3 = 0.0;
    if (r->graph.on && twins == 0 && !rollback) {
        /* Steps 3 and 4 but the retries, as one prepared unit of work. */
        AF_CHECK(graph_step(r, &t3));
        debug_scan(r, "commit");
    } else if (fused_step(r, twins, rollback)) {
        /* Steps 3 and 4 in one pass over each block: compute, containment, commit and this
         * rank's part of the exchange; the halo then completes it across ranks. select[] and
         * dmr_mark[] are neither read nor needed (no retry round yet, no twin). */
        af_step_out_t *o = &r->fused;
        r->tally.run_one_pass++;
        double tc = af_now_us();
        r->rc.tw.compute_key = af_inject_key(&r->s, 0);
        AF_CHECK(k->ops->step(k, r->rc.tw.compute_key, kernel_xchg(r), r->halo.xchg_cur, o));
        r->s.mine.phase[AF_PHASE_throttle_us] = af_throttle(r, af_now_us() - tc);
        AF_CHECK(contain_fused(r, o));
        debug_scan(r, "commit");
        t3 = af_now_us();
        AF_CHECK(af_exchange_fused(&r->halo, o));
    } else {
        /* Empty slots keep select[] 0 (af_kernels_set_block) and their dmr_mark[] is never
         * read; af_dmr_end marks the twinned ones. */
        for (int i = 0; i < k->n_occ; ++i) {
            k->select[k->occ[i]] = 0;
            r->rc.tw.dmr_mark[k->occ[i]] = AF_DMR_NONE;
        }
        double tc = af_now_us();
        r->rc.tw.compute_key = af_inject_key(&r->s, 0);
        AF_CHECK(k->ops->compute(k, r->rc.tw.compute_key, kernel_xchg(r), 0));
        AF_CHECK(k->ops->download_results(k));
        r->s.mine.phase[AF_PHASE_throttle_us] = af_throttle(r, af_now_us() - tc);
        if (twins > 0) {
            AF_CHECK(af_dmr_end(&r->rc, twins));
            /* The twins' slots are empty and their results read: their buffers go back now,
             * before a retry takes one (af_shard_pool_slots' bound of two a block). */
            af_kernels_settle(k);
        }
        AF_CHECK(contain(r, 0, 0));
        AF_CHECK(k->ops->upload_control(k));
        AF_CHECK(k->ops->commit(k));
        debug_scan(r, "commit");
        t3 = af_now_us();
        /* 4. Halo of the new state. */
        AF_CHECK(af_exchange(&r->halo));
    }
    /* Fenced blocks are retried within the step. */
    double t4 = af_now_us();
    double t_retry = 0.0;
    for (int round = 0; r->halo.n_fenced > 0; ++round) {
        af_count_fences(r);
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
            AF_CHECK(r->s.fab->ops->allreduce_max_u64(r->s.fab, &poisoned, 1));
            r->prog.exhausted = 1;
            r->prog.exhausted_why =
                poisoned ? "fenced blocks kept failing: their committed state turns non-finite "
                           "wherever they run (a finite corruption committed earlier)"
                         : "fenced blocks kept failing on the FADING units left to retry on";
            *stop = 1;
            AF_CHECK(undo_step_commits(r));
            break;
        }
        double tr = af_now_us();
        int64_t n = 0;
        const char *why = NULL;
        AF_CHECK(af_retry_fenced(&r->rc, &n, &why));
        af_kernels_settle(k);
        if (why != NULL) {
            r->prog.exhausted = 1;
            r->prog.exhausted_why = why;
        }
        for (int64_t i = 0; i < n; ++i) {
            af_step_event(r, "retry", r->health.moves[i].block, r->health.moves[i].from_slot,
                          r->health.moves[i].to_slot, round);
        }
        r->tally.n_retry_moves += n;
        if (r->prog.exhausted) {
            *stop = 1;
            AF_CHECK(undo_step_commits(r));
            break;
        }
        /* Retries that had to land on FADING units are checked by twins too. */
        int64_t rtwins = 0;
        for (int i = 0; i < k->n_occ; ++i) {
            r->rc.tw.dmr_mark[k->occ[i]] = AF_DMR_NONE;
        }
        if (af_detect_flags(r->s.cfg.detect) & AF_DET_DMR) {
            AF_CHECK(af_dmr_begin(&r->rc, r->health.moves, n, NULL, 0, NULL, 0, &rtwins));
            r->s.mine.count[CNT_TWINS] += r->s.world.rank == 0 ? rtwins : 0;
            for (int64_t i = 0; i < rtwins; ++i) {
                int64_t tw = r->rc.tw.twin[r->rc.xfer.items[i]];
                if (af_slot_is_local(&r->s.pl, tw)) {
                    k->select[tw - r->s.slot0] = 1;
                }
            }
            AF_CHECK(k->ops->upload_control(k));
        }
        r->rc.tw.compute_key = af_inject_key(&r->s, round + 1);
        AF_CHECK(k->ops->compute(k, r->rc.tw.compute_key, kernel_xchg(r), AF_COMPUTE_SELECTED));
        AF_CHECK(k->ops->download_results(k));
        if (rtwins > 0) {
            AF_CHECK(af_dmr_end(&r->rc, rtwins));
            af_kernels_settle(k); /* as after the main pass's twins */
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
        AF_CHECK(af_exchange(&r->halo));
        t_halo += af_now_us() - th;
        t_retry += th - tr;
    }
    /* An independent containment check: the owners count the NaN/Inf values of every committed
     * buffer when it is written, whatever the commit decision was. */
    r->tally.n_leaked = r->halo.leaked_now;
    r->tally.leaked_total += r->tally.n_leaked;
    if (r->halo.stop_now) {
        *stop = 1;
        r->prog.stop_signal = 1;
    }
    AF_CHECK(af_exchange_swap(&r->halo));
    if (!r->prog.exhausted) {
        r->s.state_step++;
    }
    double t5 = af_now_us();

    /* 5. Replicas: the periodic refresh, lost replicas taken again (replay = local), and the
     * neighbour edges of the committed state beside each replica. */
    if (!r->prog.exhausted) {
        if (r->s.state_step % r->s.cfg.replica_interval == 0) {
            AF_CHECK(af_replicas_refresh(&r->rc));
        } else {
            AF_CHECK(af_replicas_retake(&r->rc, &r->tally.n_replicas_retaken));
            for (int64_t i = 0; i < r->tally.n_replicas_retaken; ++i) {
                int64_t b = r->rc.xfer.items[i];
                af_step_event(r, "replica", b, r->s.pl.block_slot[b], af_replica_slot(r, b),
                              r->s.state_step);
            }
        }
        /* Blocks moved onto their replica's node have it copied to a buddy (detail: the
         * logical step it holds, older than the committed one unless just taken). */
        af_replicas_follow(&r->rc, &r->tally.n_replicas_moved);
        for (int64_t i = 0; i < r->tally.n_replicas_moved; ++i) {
            int64_t b = r->rc.xfer.items[i];
            af_step_event(r, "replica", b, r->s.pl.block_slot[b], af_replica_slot(r, b),
                          r->rc.rep.step[b]);
        }
        AF_CHECK(af_replicas_log_edges(&r->rc));
    }
    double t6 = af_now_us();

    r->prog.sim_hours += r->s.cfg.sim_hours_per_step;
    r->s.mine.phase[AF_PHASE_coord_us] = t1 - t0;
    r->s.mine.phase[AF_PHASE_moves_us] = t2 - t1 - t_halo_rollback;
    r->s.mine.phase[AF_PHASE_kernel_us] = (t3 - t2) + t_retry;
    r->s.mine.phase[AF_PHASE_halo_us] = (t4 - t3) + t_halo;
    r->s.mine.phase[AF_PHASE_replica_us] = t6 - t5;
    (void)t5;
    if (r->s.state_step >= r->s.cfg.steps) {
        *stop = 1;
    }
    /* A pooled backend's buffers follow the occupied slots exactly at the end of a step: a
     * buffer held by an empty slot would be memory the bound of two a block does not count. */
    af_kernels_settle(k);
    AF_CHECK(af_kernels_occ_ok(k));
    if (k->pool_cap > 0 && k->pool_used != k->n_occ) {
        af_error_set("step %lld: %d of the shard's pooled buffers held for %d occupied slots",
                     (long long)r->s.tick, k->pool_used, k->n_occ);
        return AF_ERR_INTERNAL;
    }
    af_health_warm(r);
    return AF_OK;
}
