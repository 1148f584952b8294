/* agefence recovery, replicas: each block's copy in a buddy rank's host memory, refreshed every
 * replica_interval logical steps, the edge log beside it (recovery.replay = local), losses with
 * their devices and re-takes, the buddy a moved block's replica follows to, and the coordinated
 * rollback and restart. Calls xfer.c only. */
#include <string.h>

#include "../../common/af_alloc.h"
#include "../../common/percentile.h"
#include "../io/backend.h"
#include "../oracle/reference.h"
#include "recovery_internal.h"

/* ---- replicas ------------------------------------------------------------------------------ */

/* The device the model keeps block b's replica on when it is taken now: the buddy of the
 * block's device (af_replica_device). */
static int32_t replica_device_of(const af_recovery_t *r, int64_t b)
{
    int64_t d = af_slot_device(&r->s->pl, r->s->pl.block_slot[b]);
    return (int32_t)af_replica_device(d, r->s->D, r->s->cfg.devices_per_node, r->rep.dev_gone);
}

af_result_t af_replicas_init(af_recovery_t *r)
{
    /* Block b's replica lives on the rank half the launch away from the rank b started on. */
    int64_t *count = af_alloc(sizeof(int64_t) * (size_t)r->s->world.size);
    if (count == NULL) {
        return AF_ERR_NOMEM;
    }
    for (int64_t b = 0; b < r->s->B; ++b) {
        int home = af_slot_rank(r, r->s->pl.block_slot[b]);
        int q = af_replica_rank(home, r->s->world.size);
        r->rep.rank[b] = q;
        r->rep.off[b] = count[q]++;
    }
    r->rep.n_reps = count[r->s->world.rank];
    af_free(count);
    r->rep.dev = af_alloc(sizeof(int32_t) * (size_t)r->s->B);
    r->rep.dev_gone = af_alloc((size_t)r->s->D);
    r->rep.dev_lost_now = af_alloc((size_t)r->s->D);
    r->rep.dev_lost_list = af_alloc(sizeof(int32_t) * (size_t)r->s->D);
    if (r->rep.dev == NULL || r->rep.dev_gone == NULL || r->rep.dev_lost_now == NULL ||
        r->rep.dev_lost_list == NULL) {
        af_error_set("cannot allocate the replicas' devices (%lld blocks, %lld devices)",
                     (long long)r->s->B, (long long)r->s->D);
        return AF_ERR_NOMEM;
    }
    memset(r->rep.dev_gone, 0, (size_t)r->s->D);
    memset(r->rep.dev_lost_now, 0, (size_t)r->s->D);
    for (int64_t b = 0; b < r->s->B; ++b) {
        r->rep.dev[b] = replica_device_of(r, b);
    }
    af_placement_moved_clear(&r->s->pl);
    size_t nrep = (size_t)(r->rep.n_reps > 0 ? r->rep.n_reps : 1);
    r->rep.store = af_alloc(sizeof(double) * nrep * (size_t)r->s->T);
    r->rep.step = af_alloc(sizeof(int64_t) * (size_t)r->s->B);
    if (r->rep.store == NULL || r->rep.step == NULL) {
        af_error_set("cannot allocate %lld replicas", (long long)r->rep.n_reps);
        return AF_ERR_NOMEM;
    }
    /* Beside each replica, its block's read-sets: replica_interval steps of two words with
     * replay = local (to replay from), the newest with global (what a restored block's new
     * rank needs before its first compute). */
    r->rep.log_depth = r->s->cfg.replay == AF_REPLAY_LOCAL ? r->s->cfg.replica_interval : 1;
    r->rep.log = af_alloc(sizeof(uint64_t) * 2 * nrep * (size_t)r->rep.log_depth);
    r->rep.blocks = af_alloc(sizeof(int32_t) * nrep);
    r->rep.replay_buf = af_alloc(sizeof(double) * (size_t)r->s->T);
    r->rep.edges_in = af_alloc(sizeof(uint64_t) * 2 * nrep);
    r->rep.pub_bits = af_alloc(sizeof(uint64_t) * (size_t)(r->s->B / 64 + 1));
    r->rep.carry_send = af_alloc(sizeof(uint64_t) * 3 * AF_XFER_CHUNK);
    r->rep.carry_recv = af_alloc(sizeof(uint64_t) * 3 * AF_XFER_CHUNK);
    if (r->rep.log == NULL || r->rep.blocks == NULL || r->rep.replay_buf == NULL ||
        r->rep.edges_in == NULL || r->rep.pub_bits == NULL || r->rep.carry_send == NULL ||
        r->rep.carry_recv == NULL) {
        af_error_set("cannot allocate the edge logs of %lld replicas (%lld steps each)",
                     (long long)r->rep.n_reps, (long long)r->rep.log_depth);
        return AF_ERR_NOMEM;
    }
    for (int64_t b = 0; b < r->s->B; ++b) {
        if (r->rep.rank[b] == r->s->world.rank) {
            r->rep.blocks[r->rep.off[b]] = (int32_t)b;
        }
    }
    return AF_OK;
}

static void refresh_ranks(af_recovery_t *r, void *ctx, int64_t b, int *src, int *dst)
{
    (void)ctx;
    *src = r->s->pl.block_rank[b];
    *dst = r->rep.rank[b];
}

static af_result_t refresh_read(af_recovery_t *r, void *ctx, int64_t b, double *buf)
{
    (void)ctx;
    return r->s->k->ops->read_slot(r->s->k, af_local_slot(r, r->s->pl.block_slot[b]), buf);
}

static af_result_t store_write(af_recovery_t *r, void *ctx, int64_t b, const double *buf)
{
    (void)ctx;
    memcpy(r->rep.store + (size_t)r->rep.off[b] * (size_t)r->s->T, buf,
           sizeof(double) * (size_t)r->s->T);
    return AF_OK;
}

void af_replicas_release(af_recovery_t *r)
{
    af_free(r->rep.store);
    af_free(r->rep.log);
    r->rep.store = NULL;
    r->rep.log = NULL;
}

af_result_t af_replicas_refresh(af_recovery_t *r)
{
    static const xfer_ops_t ops = {refresh_ranks, refresh_read, store_write, NULL,
                                   NULL,          NULL,         NULL};
    AF_CHECK(af_transfer(r, r->s->B, &ops, NULL));
    r->rep.replica_step = r->s->state_step;
    for (int64_t b = 0; b < r->s->B; ++b) {
        r->rep.step[b] = r->s->state_step;
        r->rep.dev[b] = replica_device_of(r, b);
    }
    af_placement_moved_clear(&r->s->pl);
    r->rep.n_lost = 0;
    return AF_OK;
}

af_result_t af_replicas_log_edges(af_recovery_t *r)
{
    const int me = r->s->world.rank;
    const int R = r->s->world.size;
    const int64_t s = r->s->state_step;
    if (r->s->nccl != NULL || R == 1) {
        /* Every edge is in this rank's exchange. */
        uint64_t *row = af_edge_log_row(r, s);
        for (int64_t i = 0; i < r->rep.n_reps; ++i) {
            uint64_t *e = row + 2 * i;
            af_get_read_set(r, CARRY_XCHG, r->rep.blocks[i], &e[0], &e[1]);
        }
        return AF_OK;
    }
    /* The rank that computes a block has its read-set: it sends (left, right) to the block's
     * replica rank, 16 bytes a block, in one batch a peer. The block is implied by the position:
     * a sender sends its blocks in ascending block order (its published blocks, pub_blocks, are in
     * the occupied-slot list's order, so they are marked in a bitmap of the blocks and the bitmap
     * is walked: the published blocks plus B / 64 words), and a receiver walks its replicas in
     * ascending block order (blocks[] is, by construction) taking the next pair from the part of
     * the rank that computes the block (every rank holds the same placement). */
    int64_t *cs = r->halo->count;
    int64_t *cr = r->halo->count2;
    uint64_t *bits = r->rep.pub_bits;
    const int64_t words = r->s->B / 64 + 1;
    memset(cs, 0, sizeof(int64_t) * (size_t)R);
    memset(cr, 0, sizeof(int64_t) * (size_t)R);
    memset(bits, 0, sizeof(uint64_t) * (size_t)words);
    for (int64_t i = 0; i < r->halo->n_pub; ++i) {
        int64_t b = r->halo->pub_blocks[i];
        const uint64_t bit = (uint64_t)1 << (b & 63);
        if ((bits[b >> 6] & bit) == 0) { /* each block once, as the walk below meets it */
            bits[b >> 6] |= bit;
            int q = r->rep.rank[b];
            cs[q] += q != me;
        }
    }
    for (int64_t i = 0; i < r->rep.n_reps; ++i) {
        int q = r->s->pl.block_rank[r->rep.blocks[i]];
        cr[q] += q != me;
    }
    af_halo_offsets(r->halo, cs);
    uint64_t *row = af_edge_log_row(r, s);
    for (int64_t w = 0; w < words; ++w) {
        for (uint64_t x = bits[w]; x != 0; x &= x - 1) {
            int64_t b = w * 64 + __builtin_ctzll(x);
            int q = r->rep.rank[b];
            if (q == me) {
                uint64_t *e = row + 2 * r->rep.off[b];
                af_get_read_set(r, CARRY_XCHG, b, &e[0], &e[1]);
                continue;
            }
            uint64_t *t = r->halo->send + 2 * r->halo->at[q]++;
            af_get_read_set(r, CARRY_XCHG, b, &t[0], &t[1]);
        }
    }
    /* What each peer sends (its cs for this rank) must be what this rank expects of it (cr):
     * the exchange checks every message's byte count against its receive (fabric/fabric_mpi.c,
     * mpi_exchange), so a peer that sends fewer pairs than this rank keeps replicas of its
     * blocks is an internal error naming that peer, and never pairs left over from an earlier
     * step taken for its read-sets. (The totals of cr compared here once were the same sum.) */
    int64_t got = 0;
    AF_CHECK(af_halo_post(r->halo, r->halo->send, cs, r->rep.edges_in, cr, 2, &got, CNT_LOG_BYTES));
    (void)got;
    af_halo_offsets(r->halo, cr); /* at[q]: where q's pairs start */
    for (int64_t i = 0; i < r->rep.n_reps; ++i) {
        int q = r->s->pl.block_rank[r->rep.blocks[i]];
        if (q == me) {
            continue;
        }
        const uint64_t *t = r->rep.edges_in + 2 * r->halo->at[q]++;
        uint64_t *e = row + 2 * i;
        e[0] = t[0];
        e[1] = t[1];
    }
    return AF_OK;
}

/* Items of a re-take: the blocks in r->xfer.items. */
static void retake_ranks(af_recovery_t *r, void *ctx, int64_t i, int *src, int *dst)
{
    refresh_ranks(r, ctx, r->xfer.items[i], src, dst);
}

static af_result_t retake_read(af_recovery_t *r, void *ctx, int64_t i, double *buf)
{
    return refresh_read(r, ctx, r->xfer.items[i], buf);
}

static af_result_t retake_write(af_recovery_t *r, void *ctx, int64_t i, const double *buf)
{
    return store_write(r, ctx, r->xfer.items[i], buf);
}

af_result_t af_replicas_retake(af_recovery_t *r, int64_t *n_retaken)
{
    *n_retaken = 0;
    if (r->rep.n_lost == 0 || r->s->cfg.replay != AF_REPLAY_LOCAL) {
        return AF_OK;
    }
    int64_t n = 0;
    for (int64_t b = 0; b < r->s->B; ++b) {
        if (r->rep.step[b] < 0) {
            r->xfer.items[n++] = (int32_t)b;
        }
    }
    static const xfer_ops_t ops = {retake_ranks, retake_read, retake_write, NULL, NULL, NULL, NULL};
    AF_CHECK(af_transfer(r, n, &ops, NULL));
    for (int64_t i = 0; i < n; ++i) {
        r->rep.step[r->xfer.items[i]] = r->s->state_step;
        r->rep.dev[r->xfer.items[i]] = replica_device_of(r, r->xfer.items[i]);
    }
    r->rep.n_lost = 0;
    *n_retaken = n;
    return AF_OK;
}

void af_replicas_follow(af_recovery_t *r, int64_t *n_moved)
{
    *n_moved = 0;
    const int64_t per = r->s->cfg.devices_per_node > 1 ? r->s->cfg.devices_per_node : 1;
    const int by_node = r->s->D / per >= 2;
    int64_t n = 0;
    for (int64_t i = 0; i < r->s->pl.n_moved; ++i) {
        const int64_t b = r->s->pl.moved[i];
        int64_t d = af_slot_device(&r->s->pl, r->s->pl.block_slot[b]);
        int64_t q = r->rep.dev[b];
        if (r->rep.step[b] < 0 || (by_node ? d / per != q / per : d != q)) {
            continue;
        }
        int32_t to = replica_device_of(r, b);
        if (to != q) {
            r->rep.dev[b] = to;
            r->xfer.items[n++] = (int32_t)b;
        }
    }
    af_placement_moved_clear(&r->s->pl);
    *n_moved = n;
}

void af_replicas_lose_devices(af_recovery_t *r, const af_health_change_t *ch, int64_t n_changes,
                              const int64_t *resets, int64_t n_resets,
                              void (*lost)(void *ctx, int64_t b, int64_t step), void *ctx)
{
    int64_t n = 0;
    for (int64_t i = 0; i < n_changes; ++i) {
        int64_t d = ch[i].unit / r->s->U;
        if (ch[i].state != AF_DEAD || r->rep.dev_gone[d]) {
            continue;
        }
        int64_t live = 0;
        for (int64_t u = d * r->s->U; u < (d + 1) * r->s->U && live == 0; ++u) {
            live += r->s->unit_state[u] != AF_DEAD;
        }
        if (live == 0) {
            r->rep.dev_gone[d] = 1;
            r->rep.dev_lost_now[d] = 1;
            r->rep.dev_lost_list[n++] = (int32_t)d;
        }
    }
    for (int64_t i = 0; i < n_resets; ++i) {
        int64_t d = resets[i];
        if (!r->rep.dev_lost_now[d]) {
            r->rep.dev_lost_now[d] = 1;
            r->rep.dev_lost_list[n++] = (int32_t)d;
        }
    }
    for (int64_t b = 0; n > 0 && b < r->s->B; ++b) {
        if (r->rep.step[b] >= 0 && r->rep.dev_lost_now[r->rep.dev[b]]) {
            lost(ctx, b, r->rep.step[b]);
            r->rep.step[b] = -1;
            r->rep.n_lost++;
            r->rep.n_replicas_lost++;
        }
    }
    for (int64_t i = 0; i < n; ++i) {
        r->rep.dev_lost_now[r->rep.dev_lost_list[i]] = 0;
    }
}

static void rollback_ranks(af_recovery_t *r, void *ctx, int64_t b, int *src, int *dst)
{
    (void)ctx;
    *src = r->rep.rank[b];
    *dst = af_slot_rank(r, r->s->pl.block_slot[b]);
}

static af_result_t store_read(af_recovery_t *r, void *ctx, int64_t b, double *buf)
{
    (void)ctx;
    memcpy(buf, r->rep.store + (size_t)r->rep.off[b] * (size_t)r->s->T,
           sizeof(double) * (size_t)r->s->T);
    return AF_OK;
}

static af_result_t rollback_write(af_recovery_t *r, void *ctx, int64_t b, const double *buf)
{
    (void)ctx;
    return r->s->k->ops->write_slot(r->s->k, af_local_slot(r, r->s->pl.block_slot[b]), buf);
}

af_result_t af_rollback(af_recovery_t *r)
{
    static const xfer_ops_t ops = {rollback_ranks, store_read, rollback_write, NULL, NULL,
                                   NULL,           NULL};
    AF_CHECK(af_transfer(r, r->s->B, &ops, NULL));
    r->rep.n_replayed += r->s->state_step - r->rep.replica_step;
    r->rep.n_rollbacks++;
    r->s->state_step = r->rep.replica_step;
    return AF_OK;
}

af_result_t af_restart(af_recovery_t *r)
{
    for (int s = 0; s < r->s->n_local; ++s) {
        int32_t b = r->s->pl.slot_block[r->s->slot0 + s];
        if (b >= 0 && r->s->k->slot_mode[s] != AF_MODE_DEAD) {
            af_initial_cells(&r->s->cfg, (int64_t)b * r->s->T, r->s->T, r->s->cellbuf);
            AF_CHECK(r->s->k->ops->write_slot(r->s->k, s, r->s->cellbuf));
        }
    }
    r->rep.n_replayed += r->s->state_step;
    r->rep.n_rollbacks++;
    r->s->state_step = 0;
    return AF_OK;
}

/* Block b's state at the committed step, from its replica (this rank keeps it): the replica
 * itself when it is that recent, else the replica replayed step by step with the read-sets
 * logged beside it (neighbour edges, or the global word), in the backends' arithmetic (the
 * workload's block_update), so the bits are those the block would have had had it never been
 * lost. */
af_result_t af_replica_state(af_recovery_t *r, int64_t b, double *buf)
{
    AF_CHECK(store_read(r, NULL, b, buf));
    int64_t from = r->rep.step[b];
    if (from >= r->s->state_step || r->s->cfg.replay != AF_REPLAY_LOCAL) {
        return AF_OK;
    }
    double *cur = buf;
    double *next = r->rep.replay_buf;
    for (int64_t s = from; s < r->s->state_step; ++s) {
        const uint64_t *e = af_edge_log_entry(r, r->rep.off[b], s);
        r->s->wl->block_update(cur, next, r->s->T, &r->s->wlp, af_double(e[0]), af_double(e[1]));
        double *t = cur;
        cur = next;
        next = t;
    }
    if (cur != buf) {
        memcpy(buf, cur, sizeof(double) * (size_t)r->s->T);
    }
    return AF_OK;
}
