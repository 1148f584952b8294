/* agefence bench recovery: the time from a unit's death to the next committed step, with
 * agefence's index-table remap (the step in which the coordinator learns of the death, plans
 * the restores, moves the blocks between preallocated slots and commits), against a
 * reshape-and-rebuild baseline in the same binary, measured right after each death on the same
 * ranks and the same data: split the communicator, free and reallocate the shard to the new
 * shape, repartition every block, and compute one step. Samples alternate A, B, A, B.
 *
 * Checked: the run itself (bitwise equal to the reference) and the baseline's repartition (the
 * blocks it received hash to the same value as the blocks the run holds). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/kernels.h"
#include "../common/af_alloc.h"
#include "../common/af_time.h"
#include "../common/logfile.h"
#include "bench.h"
#include "../sim/oracle/reference.h"
#include "../sim/driver/run_internal.h"
#include "bench_common.h"

typedef struct rec {
    af_bench_ctx_t *b;
    double *normal; /* steps without a death (us), rank max: the step's own cost */
    int nn;
    double *a;  /* remap samples (us), rank max */
    double *bl; /* baseline samples */
    int na;
    int nb;
    int cap;
    int hash_bad;
    const char *workload; /* the run's workload (its table's name) */
    int64_t T;            /* the doubles of a block the buffers below hold */
    double *buf;          /* T doubles */
    double *stage;        /* AF_XFER_CHUNK x T, send side */
    double *stage2;       /* receive side */
    af_p2p_t *p2p;
} rec_t;

static uint64_t block_hash(int64_t b, const double *u, int64_t T)
{
    return af_checksum(u, T) ^ af_mix64((uint64_t)b + 1);
}

/* The baseline's block buffers, for blocks of T doubles: the run's state doubles per block
 * (af_config_cells: block_len cells for burgers, tokens x dim for attention), known once the
 * run has loaded its scenario. */
static af_result_t ensure_buffers(rec_t *c, int64_t T)
{
    if (c->T >= T) {
        return AF_OK;
    }
    free(c->buf);
    free(c->stage);
    free(c->stage2);
    c->buf = malloc(sizeof(double) * (size_t)T);
    c->stage = malloc(sizeof(double) * AF_XFER_CHUNK * (size_t)T);
    c->stage2 = malloc(sizeof(double) * AF_XFER_CHUNK * (size_t)T);
    if (c->buf == NULL || c->stage == NULL || c->stage2 == NULL) {
        c->T = 0;
        af_error_set("bench recovery: cannot allocate the baseline's buffers for blocks of %lld "
                     "doubles",
                     (long long)T);
        return AF_ERR_NOMEM;
    }
    c->T = T;
    return AF_OK;
}

/* The baseline, on every rank: returns its duration (us), rank max. */
static af_result_t rebuild(af_run_state_t *r, rec_t *c, double *us)
{
    const int R = r->s.world.size;
    const int me = r->s.world.rank;
    const int64_t B = r->s.B;
    const int64_t T = r->s.T;
    af_result_t rc = AF_OK;
    af_fabric_t *nf = NULL;
    af_kernels_t *nk = NULL;
    uint64_t *xchg = NULL;
    AF_CHECK(r->s.fab->ops->barrier(r->s.fab));
    double t0 = af_now_us();
    /* 1. A new communicator for the survivors (every rank survives a unit's death here; the
     *    split is what a shrink costs). */
    AF_CHECK_GOTO(af_fabric_mpi_split(r->s.fab, 0, me, &nf), rc, out);
    /* 2. Free and reallocate to the new shape: exactly the blocks of a contiguous partition,
     *    no spare slots. */
    int64_t lo = me * B / R;
    int64_t hi = (me + 1) * B / R;
    af_shard_desc_t desc = r->s.k->desc;
    desc.n_slots = (int)(hi - lo);
    AF_CHECK_GOTO(r->s.k->ops->create(&desc, &nk), rc, out);
    xchg = af_alloc(sizeof(uint64_t) * af_xchg_len((int)B));
    AF_REQUIRE_GOTO(xchg != NULL, AF_ERR_NOMEM, rc, out);
    /* 3. Repartition: every block from where the run keeps it to its new owner. */
    uint64_t hash_new = 0;
    for (int64_t c0 = 0; c0 < B; c0 += AF_XFER_CHUNK) {
        int64_t c1 = c0 + AF_XFER_CHUNK < B ? c0 + AF_XFER_CHUNK : B;
        int np = 0;
        int ns = 0;
        int nr = 0;
        for (int64_t blk = c0; blk < c1; ++blk) {
            int32_t g = r->s.pl.block_slot[blk];
            int src = af_device_rank(r->s.D, R, af_slot_device(&r->s.pl, g));
            int dst = (int)((blk * R + R - 1) / B);
            while (dst > 0 && dst * B / R > blk) {
                dst--;
            }
            while ((dst + 1) * B / R <= blk) {
                dst++;
            }
            if (src == me) {
                double *p = dst == me ? c->buf : c->stage + (size_t)ns++ * (size_t)T;
                AF_CHECK_GOTO(r->s.k->ops->read_slot(r->s.k, (int)(g - r->s.slot0), p), rc, out);
                if (dst == me) {
                    AF_CHECK_GOTO(nk->ops->write_slot(nk, (int)(blk - lo), p), rc, out);
                    hash_new ^= block_hash(blk, p, T);
                } else {
                    c->p2p[np++] = (af_p2p_t){dst, 1, p, (size_t)T * sizeof(double)};
                }
            } else if (dst == me) {
                c->p2p[np++] = (af_p2p_t){src, 0, c->stage2 + (size_t)nr++ * (size_t)T,
                                          (size_t)T * sizeof(double)};
            }
        }
        AF_CHECK_GOTO(nf->ops->exchange(nf, c->p2p, np), rc, out);
        nr = 0;
        for (int64_t blk = c0; blk < c1; ++blk) {
            int32_t g = r->s.pl.block_slot[blk];
            int src = af_device_rank(r->s.D, R, af_slot_device(&r->s.pl, g));
            if (blk >= lo && blk < hi && src != me) {
                const double *p = c->stage2 + (size_t)nr++ * (size_t)T;
                AF_CHECK_GOTO(nk->ops->write_slot(nk, (int)(blk - lo), p), rc, out);
                hash_new ^= block_hash(blk, p, T);
            }
        }
    }
    /* 4. One step on the new shape. */
    for (int s = 0; s < desc.n_slots; ++s) {
        af_kernels_set_block(nk, s, (int32_t)(lo + s));
        nk->commit[s] = 1;
    }
    AF_CHECK_GOTO(nk->ops->upload_control(nk), rc, out);
    AF_CHECK_GOTO(nk->ops->pack(nk, xchg), rc, out);
    AF_CHECK_GOTO(nf->ops->allreduce_max_u64(nf, xchg, af_xchg_len((int)B)), rc, out);
    /* The global word the run's next step reads (a globally coupled workload's; 0 otherwise):
     * the driver writes it after the exchange's sums, as here. */
    xchg[5 * (size_t)B + AF_XCHG_GLOBAL] = af_bits(r->halo.global_now);
    AF_CHECK_GOTO(nk->ops->compute(nk, 1, xchg, 0), rc, out);
    AF_CHECK_GOTO(nk->ops->commit(nk), rc, out);
    AF_CHECK_GOTO(nk->ops->sync(nk), rc, out);
    *us = af_now_us() - t0;
    /* Check the repartition: the blocks received hash as the blocks the run holds. */
    uint64_t hash_run = 0;
    for (int64_t blk = 0; blk < B; ++blk) {
        int32_t g = r->s.pl.block_slot[blk];
        if (af_slot_is_local(&r->s.pl, g)) {
            AF_CHECK_GOTO(r->s.k->ops->read_slot(r->s.k, (int)(g - r->s.slot0), c->buf), rc, out);
            hash_run ^= block_hash(blk, c->buf, T);
        }
    }
    /* XOR over ranks through two max-reductions is not an XOR: gather instead. */
    uint64_t mine[2] = {hash_new, hash_run};
    uint64_t *all = malloc(sizeof(uint64_t) * 2 * (size_t)R);
    AF_REQUIRE_GOTO(all != NULL, AF_ERR_NOMEM, rc, out);
    rc = r->s.fab->ops->gather(r->s.fab, mine, sizeof mine, all, 0);
    if (rc == AF_OK && me == 0) {
        uint64_t hn = 0;
        uint64_t hr = 0;
        for (int q = 0; q < R; ++q) {
            hn ^= all[2 * q];
            hr ^= all[2 * q + 1];
        }
        c->hash_bad |= hn != hr;
    }
    free(all);
out:
    af_free(xchg);
    af_kernels_destroy(&nk);
    af_fabric_destroy(&nf);
    return rc;
}

static af_result_t hook(af_run_state_t *r, double step_us, void *ctx)
{
    rec_t *c = ctx;
    AF_CHECK(ensure_buffers(c, r->s.T));
    c->workload = r->s.wl->name;
    /* A death in this step: its step is the remap's recovery time. */
    int died = 0;
    for (int64_t i = 0; i < r->health.plan.n_changes; ++i) {
        died |= r->health.changes[i].state == AF_DEAD;
    }
    if (!died) {
        /* The same phases of an ordinary step, so the recovery's own cost can be told apart. */
        double a = r->s.mine.phase[AF_PHASE_coord_us] + r->s.mine.phase[AF_PHASE_moves_us] +
                   r->s.mine.phase[AF_PHASE_kernel_us] + r->s.mine.phase[AF_PHASE_halo_us];
        AF_CHECK(af_bench_max(c->b, &a));
        if (c->nn < 10 * c->cap) {
            c->normal[c->nn++] = a;
        }
        return AF_OK;
    }
    if (c->na >= c->cap) {
        return AF_OK;
    }
    /* Death to commit: the coordinator, the moves, the compute and the halo of the step (the
     * replica refresh that follows the commit is not part of the recovery). */
    (void)step_us;
    double a = r->s.mine.phase[AF_PHASE_coord_us] + r->s.mine.phase[AF_PHASE_moves_us] +
               r->s.mine.phase[AF_PHASE_kernel_us] + r->s.mine.phase[AF_PHASE_halo_us];
    AF_CHECK(af_bench_max(c->b, &a));
    double bl = 0;
    AF_CHECK(rebuild(r, c, &bl));
    AF_CHECK(af_bench_max(c->b, &bl));
    c->a[c->na++] = a;
    c->bl[c->nb++] = bl;
    af_bench_progress(c->b, "recovery samples", c->na, c->cap);
    return AF_OK;
}

static af_result_t bench_recovery(af_bench_ctx_t *b)
{
    /* A fleet that does not age by itself; one unit dies every 10 steps (scripted); replicas
     * refreshed every step, so a death restores the current state with no rollback. */
    /* One scripted kill per sample (4 settings each, within the 128 a run takes). */
    int kills = b->warmup + b->samples;
    if (kills > 30) {
        kills = 30;
        af_bench_note(b, "samples capped at %d deaths (one scripted event each)",
                      kills - b->warmup);
    }
    static char sets[AF_MAX_EVENTS * 4 + 8][64];
    const char *extra[AF_MAX_EVENTS * 4 + 8];
    int ne = 0;
    snprintf(sets[ne], sizeof sets[0], "aging.sim_hours_per_step=0");
    extra[ne] = sets[ne];
    ne++;
    snprintf(sets[ne], sizeof sets[0], "recovery.replica_interval=1");
    extra[ne] = sets[ne];
    ne++;
    snprintf(sets[ne], sizeof sets[0], "scenario.steps=%d", 10 * kills + 10);
    extra[ne] = sets[ne];
    ne++;
    for (int i = 0; i < kills; ++i) {
        /* event.1 of the default scenario is replaced by the first of these. */
        snprintf(sets[ne], sizeof sets[0], "event.%d.step=%d", i + 1, 10 * (i + 1));
        extra[ne] = sets[ne];
        ne++;
        snprintf(sets[ne], sizeof sets[0], "event.%d.action=kill", i + 1);
        extra[ne] = sets[ne];
        ne++;
        snprintf(sets[ne], sizeof sets[0], "event.%d.device=%d", i + 1, i % 8);
        extra[ne] = sets[ne];
        ne++;
        snprintf(sets[ne], sizeof sets[0], "event.%d.units=%d", i + 1, (i / 8) % 16);
        extra[ne] = sets[ne];
        ne++;
    }
    rec_t c;
    memset(&c, 0, sizeof c);
    c.b = b;
    c.cap = kills;
    c.a = calloc((size_t)kills, sizeof(double));
    c.bl = calloc((size_t)kills, sizeof(double));
    c.normal = calloc((size_t)kills * 10, sizeof(double));
    /* The block buffers are sized by the hook from the run's own blocks (ensure_buffers). */
    c.p2p = malloc(sizeof(af_p2p_t) * 2 * AF_XFER_CHUNK);
    af_result_t rc = c.a && c.bl && c.normal && c.p2p ? AF_OK : AF_ERR_NOMEM;
    /* Before the run (collective): a rank that could not allocate stops every rank. */
    AF_CHECK_GOTO(af_bench_agree(b, rc), rc, out);
    char log[600];
    af_bench_log_path(b, "recovery", log, sizeof log);
    AF_CHECK_GOTO(af_bench_run_scenario(b, extra, ne, log, hook, &c, NULL), rc, out);
    if (c.na <= b->warmup) {
        af_bench_fail(b, "only %d deaths were measured", c.na);
        goto out;
    }
    /* Drop the warm-up pairs. */
    AF_CHECK_GOTO(af_bench_add(b, "remap_recovery_us", "us", c.a + b->warmup, c.na - b->warmup), rc,
                  out);
    AF_CHECK_GOTO(af_bench_add(b, "reshape_rebuild_us", "us", c.bl + b->warmup, c.nb - b->warmup),
                  rc, out);
    AF_CHECK_GOTO(af_bench_add(b, "ordinary_step_us", "us", c.normal, c.nn), rc, out);
    if (b->world.rank == 0) {
        af_stats_t sa = af_stats_of(c.a + b->warmup, c.na - b->warmup);
        af_stats_t sb = af_stats_of(c.bl + b->warmup, c.nb - b->warmup);
        af_bench_ratio(b, "rebuild / remap (p50)", sb.p50 / sa.p50, 1, 100.0, 1);
        af_bench_ratio(b, "rebuild / remap (p99 vs p99)", sb.p99 / sa.p99, 0, 0, 1);
        /* What recovery adds to a step: each path minus an ordinary step's p50. */
        af_stats_t sn = af_stats_of(c.normal, c.nn);
        double ra = sa.p50 - sn.p50;
        double rb = sb.p50 - sn.p50;
        af_bench_ratio(b, "ordinary step p50 (us)", sn.p50, 0, 0, 0);
        af_bench_ratio(b, "remap recovery step / ordinary step (p50)", sa.p50 / sn.p50, 0, 0, 0);
        af_bench_ratio(b, "recovery overhead: remap p50 - step p50 (us)", ra, 0, 0, 0);
        af_bench_ratio(b, "recovery overhead: rebuild p50 - step p50 (us)", rb, 0, 0, 0);
        af_bench_ratio(b, "overhead ratio rebuild / remap", ra > 0 ? rb / ra : 0, 0, 0, 1);
        af_bench_note(b,
                      "a death every 10 steps on the default fleet (aging off, replicas every "
                      "step); baseline = MPI_Comm_split + shard free/alloc + repartition of "
                      "every block + one step; run log %s",
                      log);
        /* What the deaths cost beyond moving blocks: replays from replicas older than the
         * committed state (recovery.replica_interval > 1), from the run's own log. */
        int64_t rblocks = 0;
        int64_t rbs = 0;
        int64_t rolls = 0;
        int64_t rsteps = 0;
        af_logfile_t lf;
        char err[600];
        if (af_logfile_open(&lf, log, err, sizeof err) == AF_OK) {
            af_logfile_attr_i64(&lf, "/final", "replayed_blocks_total", &rblocks);
            af_logfile_attr_i64(&lf, "/final", "replayed_block_steps_total", &rbs);
            af_logfile_attr_i64(&lf, "/final", "rollbacks_total", &rolls);
            af_logfile_attr_i64(&lf, "/final", "replayed_steps_total", &rsteps);
            af_logfile_close(&lf);
        }
        af_bench_note(b,
                      "workload %s, %lld doubles a block; %lld blocks replayed alone (%lld "
                      "block-steps), %lld rollbacks (%lld steps replayed by every block)",
                      c.workload ? c.workload : "?", (long long)c.T, (long long)rblocks,
                      (long long)rbs, (long long)rolls, (long long)rsteps);
        if (c.hash_bad) {
            af_bench_fail(b, "the baseline's repartition lost or changed a block");
        }
    }
out:
    free(c.a);
    free(c.bl);
    free(c.normal);
    free(c.buf);
    free(c.stage);
    free(c.stage2);
    free(c.p2p);
    return rc;
}

const af_bench_def_t af_bench_recovery = {
    "recovery", "death-to-next-committed-step: index-table remap vs reshape-and-rebuild",
    bench_recovery};
