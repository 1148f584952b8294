/* agefence recovery data path: moving blocks between preallocated slots (drains, restores,
 * retries), buddy replicas in host memory, coordinated rollback, and DMR twins. Nothing here
 * allocates: every buffer was sized at start-up. Every rank walks the same item lists in the
 * same order, so the point-to-point transfers of a chunk always match. */
#include <string.h>

#include "../../common/af_alloc.h"
#include "../../common/percentile.h"
#include "../io/backend.h"
#include "../oracle/reference.h"
#include "../driver/run_internal.h"

static int rank_of_slot(const af_run_state_t *r, int64_t g)
{
    return af_device_rank(r->D, r->world.size, af_slot_device(&r->pl, g));
}

static int local_of(const af_run_state_t *r, int64_t g)
{
    return (int)(g - r->slot0);
}

/* A batch of block transfers: for item i, where the data comes from and goes to. */
typedef struct xfer_ops {
    void (*ranks)(af_run_state_t *r, void *ctx, int64_t i, int *src, int *dst);
    af_result_t (*read)(af_run_state_t *r, void *ctx, int64_t i, double *buf);
    af_result_t (*write)(af_run_state_t *r, void *ctx, int64_t i, const double *buf);
    /* Optional: a same-rank transfer without staging (slot to slot). */
    af_result_t (*local)(af_run_state_t *r, void *ctx, int64_t i);
    /* Optional: the global slots of an item that goes from one slot's committed buffer to
     * another's (0), or -1 when either end is elsewhere (a replica, a computed buffer). Such an
     * item crosses ranks directly between the two buffers when the fabric reaches the shard's
     * memory: no staging copy on either side. */
    int (*slots)(af_run_state_t *r, void *ctx, int64_t i, int64_t *from, int64_t *to);
    /* Optional: the global slot whose committed buffer item i reads, and the one it writes (-1:
     * none). A batch is applied in list order: an item that reads or overwrites a slot an
     * earlier item of the same chunk writes or reads starts a new chunk (see transfer()). */
    void (*touches)(af_run_state_t *r, void *ctx, int64_t i, int64_t *reads, int64_t *writes);
    /* Optional: whether item i takes a block to where it will be computed, so that its read-set
     * (the two neighbour edges of the state the next compute reads) must go with it: CARRY_NONE,
     * CARRY_XCHG (the source rank has them in its exchange, as the block's computing rank
     * always does) or CARRY_LOG (from the edge log beside the block's replica); *block is the
     * block. */
    int (*carries)(af_run_state_t *r, void *ctx, int64_t i, int64_t *block);
} xfer_ops_t;

enum { CARRY_NONE = 0, CARRY_XCHG = 1, CARRY_LOG = 2 };

/* The fabric that reaches the slots' memory: the device fabric (nccl) for device slots, the
 * host fabric for host slots (cpu backend); NULL when only staging can (cuda over mpi). */
static af_fabric_t *direct_fabric(const af_run_state_t *r)
{
    if (r->nccl != NULL) {
        return r->nccl;
    }
    return r->dxchg_prev == NULL ? r->fab : NULL;
}

/* The set of committed slots the items of one chunk read and write: open addressing over
 * AF_XFER_SET entries, keys (slot << 1) | is_write, emptied after each chunk by its list. */
static uint32_t set_hash(int64_t key)
{
    return (uint32_t)(((uint64_t)key * 0x9E3779B97F4A7C15ULL) >> 40) & (AF_XFER_SET - 1);
}

static int set_has(const af_run_state_t *r, int64_t key)
{
    for (uint32_t h = set_hash(key);; h = (h + 1) & (AF_XFER_SET - 1)) {
        if (r->xfer_set[h] == key) {
            return 1;
        }
        if (r->xfer_set[h] < 0) {
            return 0;
        }
    }
}

static void set_add(af_run_state_t *r, int64_t key)
{
    uint32_t h = set_hash(key);
    while (r->xfer_set[h] >= 0 && r->xfer_set[h] != key) {
        h = (h + 1) & (AF_XFER_SET - 1);
    }
    if (r->xfer_set[h] < 0) {
        r->xfer_set[h] = key;
        r->xfer_used[r->n_xfer_used++] = (int32_t)h;
    }
}

/* The end of the chunk that starts at item c0: at most AF_XFER_CHUNK items, and none that
 * depends on an earlier item of the chunk. A chunk's transfers are posted together and its
 * received data written after them, so within a chunk an item must not read a slot an earlier
 * one writes (it would read the old data on some ranks, the new on others), nor write a slot
 * an earlier one reads or writes (a pending send would carry the new data). Splitting there
 * keeps the batch's meaning what it is on one rank, where every item is a copy made in list
 * order: a retry that takes the slot another block of the same batch just left moves the same
 * bits on any number of ranks. Every rank walks the same list, so all split alike. */
static int64_t chunk_end(af_run_state_t *r, int64_t n, const xfer_ops_t *ops, void *ctx, int64_t c0)
{
    int64_t c1 = c0 + AF_XFER_CHUNK < n ? c0 + AF_XFER_CHUNK : n;
    if (ops->touches == NULL) {
        return c1;
    }
    int64_t end = c1;
    for (int64_t i = c0; i < c1; ++i) {
        int64_t rd = -1;
        int64_t wr = -1;
        ops->touches(r, ctx, i, &rd, &wr);
        if ((rd >= 0 && set_has(r, rd << 1 | 1)) ||
            (wr >= 0 && (set_has(r, wr << 1) || set_has(r, wr << 1 | 1)))) {
            end = i;
            break;
        }
        if (rd >= 0) {
            set_add(r, rd << 1);
        }
        if (wr >= 0) {
            set_add(r, wr << 1 | 1);
        }
    }
    for (int64_t k = 0; k < r->n_xfer_used; ++k) {
        r->xfer_set[r->xfer_used[k]] = -1;
    }
    r->n_xfer_used = 0;
    return end;
}

static af_result_t carry_edges(af_run_state_t *r, int64_t n, const xfer_ops_t *ops, void *ctx);

static af_result_t transfer(af_run_state_t *r, int64_t n, const xfer_ops_t *ops, void *ctx)
{
    const int me = r->world.rank;
    const size_t T = (size_t)r->T;
    af_fabric_t *df = ops->slots != NULL ? direct_fabric(r) : NULL;
    af_p2p_t *direct = r->p2p + AF_XFER_CHUNK;
    for (int64_t c0 = 0, c1 = 0; c0 < n; c0 = c1) {
        c1 = chunk_end(r, n, ops, ctx, c0);
        int np = 0;
        int nd = 0;
        int ns = 0;
        int nr = 0;
        for (int64_t i = c0; i < c1; ++i) {
            int src = 0;
            int dst = 0;
            int64_t from = -1;
            int64_t to = -1;
            ops->ranks(r, ctx, i, &src, &dst);
            int is_direct =
                df != NULL && (src == me) != (dst == me) && ops->slots(r, ctx, i, &from, &to) == 0;
            if (src == me && dst == me) {
                if (ops->local != NULL) {
                    AF_CHECK(ops->local(r, ctx, i));
                } else {
                    AF_CHECK(ops->read(r, ctx, i, r->cellbuf));
                    AF_CHECK(ops->write(r, ctx, i, r->cellbuf));
                }
            } else if (is_direct && src == me) {
                double *buf = r->k->ops->slot_data(r->k, local_of(r, from));
                direct[nd++] = (af_p2p_t){dst, 1, buf, T * sizeof(double)};
            } else if (is_direct) {
                double *buf = r->k->ops->slot_data(r->k, local_of(r, to));
                direct[nd++] = (af_p2p_t){src, 0, buf, T * sizeof(double)};
            } else if (src == me) {
                double *buf = r->stage_send + (size_t)ns++ * T;
                AF_CHECK(ops->read(r, ctx, i, buf));
                r->p2p[np++] = (af_p2p_t){dst, 1, buf, T * sizeof(double)};
            } else if (dst == me) {
                double *buf = r->stage_recv + (size_t)nr++ * T;
                r->p2p[np++] = (af_p2p_t){src, 0, buf, T * sizeof(double)};
            }
        }
        if (nd > 0) {
            if (df != r->fab) {
                /* The device fabric reads what the backend's stream wrote: let it finish. */
                AF_CHECK(r->k->ops->sync(r->k));
            }
            AF_CHECK(df->ops->exchange(df, direct, nd));
        }
        if (np > 0) {
            AF_CHECK(r->fab->ops->exchange(r->fab, r->p2p, np));
        }
        nr = 0;
        for (int64_t i = c0; i < c1; ++i) {
            int src = 0;
            int dst = 0;
            int64_t from = -1;
            int64_t to = -1;
            ops->ranks(r, ctx, i, &src, &dst);
            if (dst != me || src == me) {
                continue;
            }
            if (df != NULL && ops->slots(r, ctx, i, &from, &to) == 0) {
                /* Received straight into the committed buffer: its diagnostics follow. */
                AF_CHECK(r->k->ops->refresh_slot(r->k, local_of(r, to)));
            } else {
                AF_CHECK(ops->write(r, ctx, i, r->stage_recv + (size_t)nr++ * T));
            }
        }
    }
    return carry_edges(r, n, ops, ctx);
}

/* The edge log entry of logical step s beside replica i of this rank (the log keeps
 * rep_log_depth steps: replica_interval with replay = local, the newest one with global). */
static uint64_t *log_entry(const af_run_state_t *r, int64_t i, int64_t s)
{
    /* One row of every replica's pair per logical step kept: a step's writes, which come in
     * the order of the replicas (or close to it), land side by side. */
    size_t row = (size_t)(r->n_reps > 0 ? r->n_reps : 1);
    return r->rep_log + ((size_t)(s % r->rep_log_depth) * row + (size_t)i) * 2;
}

/* Block b's read-set into this rank's exchange (and its device mirror, where the kernels read
 * one): the right edge of b - 1 and the left edge of b + 1. */
static af_result_t put_read_set(af_run_state_t *r, int64_t b, uint64_t left, uint64_t right)
{
    size_t il = 0;
    size_t ir = 0;
    af_wl_read_set(r->wl->kind, r->B, b, &il, &ir);
    r->xchg_prev[il] = left;
    r->xchg_prev[ir] = right;
    if (r->dxchg_prev != NULL) {
        AF_CHECK(af_buf_copy(r->dxchg_prev + il, AF_MEM_DEVICE, &left, AF_MEM_HOST, sizeof left));
        AF_CHECK(af_buf_copy(r->dxchg_prev + ir, AF_MEM_DEVICE, &right, AF_MEM_HOST, sizeof right));
    }
    return AF_OK;
}

/* The read-set of block b as this rank has it: from its exchange, or from the log beside b's
 * replica (which this rank keeps), at the committed step. */
static void get_read_set(const af_run_state_t *r, int how, int64_t b, uint64_t *left,
                         uint64_t *right)
{
    if (how == CARRY_LOG) {
        const uint64_t *e = log_entry(r, r->rep_off[b], r->state_step);
        *left = e[0];
        *right = e[1];
    } else {
        size_t il = 0;
        size_t ir = 0;
        af_wl_read_set(r->wl->kind, r->B, b, &il, &ir);
        *left = r->xchg_prev[il];
        *right = r->xchg_prev[ir];
    }
}

/* Block b's read-set as the next (block, left, right) triple of the send buffer's part for
 * rank q (halo_at, from af_halo_offsets). */
static void pack_read_set(af_run_state_t *r, uint64_t *send, int q, int how, int64_t b)
{
    uint64_t *t = send + 3 * r->halo_at[q]++;
    t[0] = (uint64_t)b;
    get_read_set(r, how, b, &t[1], &t[2]);
}

/* After a batch of transfers: the blocks that changed rank take their read-sets with them, in
 * triples (block, left, right), one message per pair of ranks and chunk. Without it the new
 * rank would compute with edges it never received: the neighbour halo delivers each block's
 * read-set to the rank that published the block, and only there. Not needed where the
 * exchange is combined whole (nccl) or on one rank. */
static af_result_t carry_edges(af_run_state_t *r, int64_t n, const xfer_ops_t *ops, void *ctx)
{
    const int me = r->world.rank;
    const int R = r->world.size;
    if (ops->carries == NULL || r->nccl != NULL || R == 1) {
        return AF_OK;
    }
    int64_t *cs = r->halo_count;
    int64_t *cr = r->halo_count2;
    for (int64_t c0 = 0; c0 < n; c0 += AF_XFER_CHUNK) {
        int64_t c1 = c0 + AF_XFER_CHUNK < n ? c0 + AF_XFER_CHUNK : n;
        memset(cs, 0, sizeof(int64_t) * (size_t)R);
        memset(cr, 0, sizeof(int64_t) * (size_t)R);
        for (int64_t i = c0; i < c1; ++i) {
            int64_t b = -1;
            int src = 0;
            int dst = 0;
            int how = ops->carries(r, ctx, i, &b);
            ops->ranks(r, ctx, i, &src, &dst);
            if (how == CARRY_NONE || src < 0 || dst < 0) {
                continue;
            }
            if (src == me && dst == me) {
                if (how == CARRY_LOG) {
                    uint64_t left = 0;
                    uint64_t right = 0;
                    get_read_set(r, how, b, &left, &right);
                    AF_CHECK(put_read_set(r, b, left, right));
                }
                continue;
            }
            cs[dst] += src == me;
            cr[src] += dst == me;
        }
        af_halo_offsets(r, cs);
        for (int64_t i = c0; i < c1; ++i) {
            int64_t b = -1;
            int src = 0;
            int dst = 0;
            int how = ops->carries(r, ctx, i, &b);
            ops->ranks(r, ctx, i, &src, &dst);
            if (how == CARRY_NONE || src != me || dst < 0 || dst == me) {
                continue;
            }
            pack_read_set(r, r->carry_send, dst, how, b);
        }
        int64_t got = 0;
        AF_CHECK(af_halo_post(r, r->carry_send, cs, r->carry_recv, cr, 3, &got, CNT_HALO_BYTES));
        for (int64_t i = 0; i < got; ++i) {
            const uint64_t *t = r->carry_recv + 3 * i;
            if (t[0] >= (uint64_t)r->B) {
                af_error_set("carry: a read-set for block %llu of %lld", (unsigned long long)t[0],
                             (long long)r->B);
                return AF_ERR_INTERNAL;
            }
            AF_CHECK(put_read_set(r, (int64_t)t[0], t[1], t[2]));
        }
    }
    return AF_OK;
}

/* ---- slot control ---------------------------------------------------------------------------- */

/* The corruption probability per element of a local unit's outputs: a FADING unit's from the
 * aging model, a silent unit's while it is HEALTHY, 0 for the others. */
static double unit_corrupt_p(const af_run_state_t *r, int64_t u)
{
    int8_t st = r->unit_state[u];
    return st == AF_FADING                                   ? r->unit_p[af_own_unit(r, u)]
           : st == AF_HEALTHY && af_aging_silent(&r->cfg, u) ? r->cfg.silent_p
                                                             : 0.0;
}

void af_slot_control(af_run_state_t *r, int64_t g)
{
    if (!af_slot_is_local(&r->pl, g)) {
        return;
    }
    int s = (int)(g - r->slot0);
    int64_t u = af_slot_unit(&r->pl, g);
    int32_t b = r->pl.slot_block[g];
    af_kernels_set_block(r->k, s, b >= 0 ? b : -1);
    int8_t st = r->unit_state[u];
    r->k->slot_mode[s] = st == AF_DEAD     ? AF_MODE_DEAD
                         : st == AF_FADING ? AF_MODE_FADING
                                           : AF_MODE_HEALTHY;
    r->k->slot_p[s] = unit_corrupt_p(r, u);
}

/* ---- replicas ------------------------------------------------------------------------------ */

/* The device the model keeps block b's replica on when it is taken now: the buddy of the
 * block's device (af_replica_device). */
static int32_t replica_device_of(const af_run_state_t *r, int64_t b)
{
    int64_t d = af_slot_device(&r->pl, r->pl.block_slot[b]);
    return (int32_t)af_replica_device(d, r->D, r->cfg.devices_per_node, r->dev_gone);
}

af_result_t af_replicas_init(af_run_state_t *r)
{
    /* Block b's replica lives on the rank half the launch away from the rank b started on. */
    int64_t *count = af_alloc(sizeof(int64_t) * (size_t)r->world.size);
    if (count == NULL) {
        return AF_ERR_NOMEM;
    }
    for (int64_t b = 0; b < r->B; ++b) {
        int home = rank_of_slot(r, r->pl.block_slot[b]);
        int q = af_replica_rank(home, r->world.size);
        r->rep_rank[b] = q;
        r->rep_off[b] = count[q]++;
    }
    r->n_reps = count[r->world.rank];
    af_free(count);
    r->rep_dev = af_alloc(sizeof(int32_t) * (size_t)r->B);
    r->dev_gone = af_alloc((size_t)r->D);
    r->dev_lost_now = af_alloc((size_t)r->D);
    r->dev_lost_list = af_alloc(sizeof(int32_t) * (size_t)r->D);
    if (r->rep_dev == NULL || r->dev_gone == NULL || r->dev_lost_now == NULL ||
        r->dev_lost_list == NULL) {
        af_error_set("cannot allocate the replicas' devices (%lld blocks, %lld devices)",
                     (long long)r->B, (long long)r->D);
        return AF_ERR_NOMEM;
    }
    memset(r->dev_gone, 0, (size_t)r->D);
    memset(r->dev_lost_now, 0, (size_t)r->D);
    for (int64_t b = 0; b < r->B; ++b) {
        r->rep_dev[b] = replica_device_of(r, b);
    }
    af_placement_moved_clear(&r->pl);
    size_t nrep = (size_t)(r->n_reps > 0 ? r->n_reps : 1);
    r->rep_store = af_alloc(sizeof(double) * nrep * (size_t)r->T);
    r->rep_step = af_alloc(sizeof(int64_t) * (size_t)r->B);
    if (r->rep_store == NULL || r->rep_step == NULL) {
        af_error_set("cannot allocate %lld replicas", (long long)r->n_reps);
        return AF_ERR_NOMEM;
    }
    /* Beside each replica, its block's read-sets: replica_interval steps of two words with
     * replay = local (to replay from), the newest with global (what a restored block's new
     * rank needs before its first compute). */
    r->rep_log_depth = r->cfg.replay == AF_REPLAY_LOCAL ? r->cfg.replica_interval : 1;
    r->rep_log = af_alloc(sizeof(uint64_t) * 2 * nrep * (size_t)r->rep_log_depth);
    r->rep_blocks = af_alloc(sizeof(int32_t) * nrep);
    r->replay_buf = af_alloc(sizeof(double) * (size_t)r->T);
    r->rep_edges_in = af_alloc(sizeof(uint64_t) * 3 * nrep);
    r->carry_send = af_alloc(sizeof(uint64_t) * 3 * AF_XFER_CHUNK);
    r->carry_recv = af_alloc(sizeof(uint64_t) * 3 * AF_XFER_CHUNK);
    if (r->rep_log == NULL || r->rep_blocks == NULL || r->replay_buf == NULL ||
        r->rep_edges_in == NULL || r->carry_send == NULL || r->carry_recv == NULL) {
        af_error_set("cannot allocate the edge logs of %lld replicas (%lld steps each)",
                     (long long)r->n_reps, (long long)r->rep_log_depth);
        return AF_ERR_NOMEM;
    }
    for (int64_t b = 0; b < r->B; ++b) {
        if (r->rep_rank[b] == r->world.rank) {
            r->rep_blocks[r->rep_off[b]] = (int32_t)b;
        }
    }
    return AF_OK;
}

static void refresh_ranks(af_run_state_t *r, void *ctx, int64_t b, int *src, int *dst)
{
    (void)ctx;
    *src = rank_of_slot(r, r->pl.block_slot[b]);
    *dst = r->rep_rank[b];
}

static af_result_t refresh_read(af_run_state_t *r, void *ctx, int64_t b, double *buf)
{
    (void)ctx;
    return r->k->ops->read_slot(r->k, local_of(r, r->pl.block_slot[b]), buf);
}

static af_result_t store_write(af_run_state_t *r, void *ctx, int64_t b, const double *buf)
{
    (void)ctx;
    memcpy(r->rep_store + (size_t)r->rep_off[b] * (size_t)r->T, buf, sizeof(double) * (size_t)r->T);
    return AF_OK;
}

af_result_t af_replicas_refresh(af_run_state_t *r)
{
    static const xfer_ops_t ops = {refresh_ranks, refresh_read, store_write, NULL,
                                   NULL,          NULL,         NULL};
    AF_CHECK(transfer(r, r->B, &ops, NULL));
    r->replica_step = r->state_step;
    for (int64_t b = 0; b < r->B; ++b) {
        r->rep_step[b] = r->state_step;
        r->rep_dev[b] = replica_device_of(r, b);
    }
    af_placement_moved_clear(&r->pl);
    r->n_lost = 0;
    return AF_OK;
}

af_result_t af_replicas_log_edges(af_run_state_t *r)
{
    const int me = r->world.rank;
    const int R = r->world.size;
    const int64_t s = r->state_step;
    if (r->nccl != NULL || R == 1) {
        /* Every edge is in this rank's exchange. */
        for (int64_t i = 0; i < r->n_reps; ++i) {
            uint64_t *e = log_entry(r, i, s);
            get_read_set(r, CARRY_XCHG, r->rep_blocks[i], &e[0], &e[1]);
        }
        return AF_OK;
    }
    /* The rank that computes a block has its read-set: it sends (block, left, right) to the
     * block's replica rank, which expects one triple per replica whose block lives elsewhere.
     * The blocks a rank computes are those it published in the last exchange (pub_slots). */
    int64_t *cs = r->halo_count;
    int64_t *cr = r->halo_count2;
    memset(cs, 0, sizeof(int64_t) * (size_t)R);
    memset(cr, 0, sizeof(int64_t) * (size_t)R);
    for (int64_t i = 0; i < r->n_pub; ++i) {
        int q = r->rep_rank[r->k->slot_block[r->pub_slots[i]]];
        cs[q] += q != me;
    }
    for (int64_t i = 0; i < r->n_reps; ++i) {
        int q = r->pl.block_rank[r->rep_blocks[i]];
        cr[q] += q != me;
    }
    af_halo_offsets(r, cs);
    for (int64_t i = 0; i < r->n_pub; ++i) {
        int64_t b = r->k->slot_block[r->pub_slots[i]];
        int q = r->rep_rank[b];
        if (q == me) {
            uint64_t *e = log_entry(r, r->rep_off[b], s);
            get_read_set(r, CARRY_XCHG, b, &e[0], &e[1]);
            continue;
        }
        pack_read_set(r, r->halo_send, q, CARRY_XCHG, b);
    }
    int64_t got = 0;
    AF_CHECK(af_halo_post(r, r->halo_send, cs, r->rep_edges_in, cr, 3, &got, CNT_LOG_BYTES));
    for (int64_t i = 0; i < got; ++i) {
        const uint64_t *t = r->rep_edges_in + 3 * i;
        if (t[0] >= (uint64_t)r->B || r->rep_rank[t[0]] != me) {
            af_error_set("replicas: read-set of block %llu, whose replica is not kept here",
                         (unsigned long long)t[0]);
            return AF_ERR_INTERNAL;
        }
        uint64_t *e = log_entry(r, r->rep_off[t[0]], s);
        e[0] = t[1];
        e[1] = t[2];
    }
    return AF_OK;
}

/* Items of a re-take: the blocks in r->items. */
static void retake_ranks(af_run_state_t *r, void *ctx, int64_t i, int *src, int *dst)
{
    refresh_ranks(r, ctx, r->items[i], src, dst);
}

static af_result_t retake_read(af_run_state_t *r, void *ctx, int64_t i, double *buf)
{
    return refresh_read(r, ctx, r->items[i], buf);
}

static af_result_t retake_write(af_run_state_t *r, void *ctx, int64_t i, const double *buf)
{
    return store_write(r, ctx, r->items[i], buf);
}

af_result_t af_replicas_retake(af_run_state_t *r, int64_t *n_retaken)
{
    *n_retaken = 0;
    if (r->n_lost == 0 || r->cfg.replay != AF_REPLAY_LOCAL) {
        return AF_OK;
    }
    int64_t n = 0;
    for (int64_t b = 0; b < r->B; ++b) {
        if (r->rep_step[b] < 0) {
            r->items[n++] = b;
        }
    }
    static const xfer_ops_t ops = {retake_ranks, retake_read, retake_write, NULL, NULL, NULL, NULL};
    AF_CHECK(transfer(r, n, &ops, NULL));
    for (int64_t i = 0; i < n; ++i) {
        r->rep_step[r->items[i]] = r->state_step;
        r->rep_dev[r->items[i]] = replica_device_of(r, r->items[i]);
    }
    r->n_lost = 0;
    *n_retaken = n;
    return AF_OK;
}

void af_replicas_follow(af_run_state_t *r, int64_t *n_moved)
{
    *n_moved = 0;
    const int64_t per = r->cfg.devices_per_node > 1 ? r->cfg.devices_per_node : 1;
    const int by_node = r->D / per >= 2;
    int64_t n = 0;
    for (int64_t i = 0; i < r->pl.n_moved; ++i) {
        const int64_t b = r->pl.moved[i];
        int64_t d = af_slot_device(&r->pl, r->pl.block_slot[b]);
        int64_t q = r->rep_dev[b];
        if (r->rep_step[b] < 0 || (by_node ? d / per != q / per : d != q)) {
            continue;
        }
        int32_t to = replica_device_of(r, b);
        if (to != q) {
            r->rep_dev[b] = to;
            r->items[n++] = b;
        }
    }
    af_placement_moved_clear(&r->pl);
    *n_moved = n;
}

void af_replicas_lose_devices(af_run_state_t *r, const af_health_change_t *ch, int64_t n_changes,
                              const int64_t *resets, int64_t n_resets,
                              void (*lost)(af_run_state_t *r, int64_t b, int64_t step))
{
    int64_t n = 0;
    for (int64_t i = 0; i < n_changes; ++i) {
        int64_t d = ch[i].unit / r->U;
        if (ch[i].state != AF_DEAD || r->dev_gone[d]) {
            continue;
        }
        int64_t live = 0;
        for (int64_t u = d * r->U; u < (d + 1) * r->U && live == 0; ++u) {
            live += r->unit_state[u] != AF_DEAD;
        }
        if (live == 0) {
            r->dev_gone[d] = 1;
            r->dev_lost_now[d] = 1;
            r->dev_lost_list[n++] = (int32_t)d;
        }
    }
    for (int64_t i = 0; i < n_resets; ++i) {
        int64_t d = resets[i];
        if (!r->dev_lost_now[d]) {
            r->dev_lost_now[d] = 1;
            r->dev_lost_list[n++] = (int32_t)d;
        }
    }
    for (int64_t b = 0; n > 0 && b < r->B; ++b) {
        if (r->rep_step[b] >= 0 && r->dev_lost_now[r->rep_dev[b]]) {
            lost(r, b, r->rep_step[b]);
            r->rep_step[b] = -1;
            r->n_lost++;
            r->n_replicas_lost++;
        }
    }
    for (int64_t i = 0; i < n; ++i) {
        r->dev_lost_now[r->dev_lost_list[i]] = 0;
    }
}

static void rollback_ranks(af_run_state_t *r, void *ctx, int64_t b, int *src, int *dst)
{
    (void)ctx;
    *src = r->rep_rank[b];
    *dst = rank_of_slot(r, r->pl.block_slot[b]);
}

static af_result_t store_read(af_run_state_t *r, void *ctx, int64_t b, double *buf)
{
    (void)ctx;
    memcpy(buf, r->rep_store + (size_t)r->rep_off[b] * (size_t)r->T, sizeof(double) * (size_t)r->T);
    return AF_OK;
}

static af_result_t rollback_write(af_run_state_t *r, void *ctx, int64_t b, const double *buf)
{
    (void)ctx;
    return r->k->ops->write_slot(r->k, local_of(r, r->pl.block_slot[b]), buf);
}

af_result_t af_rollback(af_run_state_t *r)
{
    static const xfer_ops_t ops = {rollback_ranks, store_read, rollback_write, NULL, NULL,
                                   NULL,           NULL};
    AF_CHECK(transfer(r, r->B, &ops, NULL));
    r->n_replayed += r->state_step - r->replica_step;
    r->n_rollbacks++;
    r->state_step = r->replica_step;
    return AF_OK;
}

af_result_t af_restart(af_run_state_t *r)
{
    for (int s = 0; s < r->n_local; ++s) {
        int32_t b = r->pl.slot_block[r->slot0 + s];
        if (b >= 0 && r->k->slot_mode[s] != AF_MODE_DEAD) {
            af_initial_cells(&r->cfg, (int64_t)b * r->T, r->T, r->cellbuf);
            AF_CHECK(r->k->ops->write_slot(r->k, s, r->cellbuf));
        }
    }
    r->n_replayed += r->state_step;
    r->n_rollbacks++;
    r->state_step = 0;
    return AF_OK;
}

/* Block b's state at the committed step, from its replica (this rank keeps it): the replica
 * itself when it is that recent, else the replica replayed step by step with the read-sets
 * logged beside it (neighbour edges, or the global word), in the backends' arithmetic (the
 * workload's block_update), so the bits are those the block would have had had it never been
 * lost. */
static af_result_t replica_state(af_run_state_t *r, int64_t b, double *buf)
{
    AF_CHECK(store_read(r, NULL, b, buf));
    int64_t from = r->rep_step[b];
    if (from >= r->state_step || r->cfg.replay != AF_REPLAY_LOCAL) {
        return AF_OK;
    }
    double *cur = buf;
    double *next = r->replay_buf;
    for (int64_t s = from; s < r->state_step; ++s) {
        const uint64_t *e = log_entry(r, r->rep_off[b], s);
        r->wl->block_update(cur, next, r->T, &r->wlp, af_double(e[0]), af_double(e[1]));
        double *t = cur;
        cur = next;
        next = t;
    }
    if (cur != buf) {
        memcpy(buf, cur, sizeof(double) * (size_t)r->T);
    }
    return AF_OK;
}

/* ---- moves ----------------------------------------------------------------------------------- */

typedef struct move_ctx {
    const af_move_t *moves;
    int restore_data; /* 1: restores read the replica (no rollback); 0: they carry nothing */
} move_ctx_t;

static void move_ranks(af_run_state_t *r, void *vctx, int64_t i, int *src, int *dst)
{
    const move_ctx_t *c = vctx;
    const af_move_t *m = &c->moves[i];
    *dst = rank_of_slot(r, m->to_slot);
    if (m->kind == AF_MOVE_RESTORE) {
        /* Without data to carry (a rollback restores every block afterwards), nobody sends. */
        *src = c->restore_data ? r->rep_rank[m->block] : -1;
        if (*src < 0) {
            *dst = -1;
        }
    } else {
        *src = rank_of_slot(r, m->from_slot);
    }
}

static af_result_t move_read(af_run_state_t *r, void *vctx, int64_t i, double *buf)
{
    const move_ctx_t *c = vctx;
    const af_move_t *m = &c->moves[i];
    if (m->kind == AF_MOVE_RESTORE) {
        return replica_state(r, m->block, buf);
    }
    return r->k->ops->read_slot(r->k, local_of(r, m->from_slot), buf);
}

static af_result_t move_write(af_run_state_t *r, void *vctx, int64_t i, const double *buf)
{
    const move_ctx_t *c = vctx;
    return r->k->ops->write_slot(r->k, local_of(r, c->moves[i].to_slot), buf);
}

static af_result_t move_local(af_run_state_t *r, void *vctx, int64_t i)
{
    const move_ctx_t *c = vctx;
    const af_move_t *m = &c->moves[i];
    if (m->kind == AF_MOVE_RESTORE) {
        AF_CHECK(replica_state(r, m->block, r->cellbuf));
        return r->k->ops->write_slot(r->k, local_of(r, m->to_slot), r->cellbuf);
    }
    return r->k->ops->copy_slot(r->k, local_of(r, m->from_slot), local_of(r, m->to_slot));
}

static int move_slots(af_run_state_t *r, void *vctx, int64_t i, int64_t *from, int64_t *to)
{
    (void)r;
    const move_ctx_t *c = vctx;
    const af_move_t *m = &c->moves[i];
    if (m->kind == AF_MOVE_RESTORE) {
        return -1; /* from a replica in host memory */
    }
    *from = m->from_slot;
    *to = m->to_slot;
    return 0;
}

static void move_touches(af_run_state_t *r, void *vctx, int64_t i, int64_t *reads, int64_t *writes)
{
    (void)r;
    const move_ctx_t *c = vctx;
    const af_move_t *m = &c->moves[i];
    int restore = m->kind == AF_MOVE_RESTORE;
    *reads = restore ? -1 : m->from_slot; /* a restore reads the replica */
    *writes = restore && !c->restore_data ? -1 : m->to_slot;
}

/* A drain or retry takes its read-set from the block's rank; a restore with data from the log
 * beside its replica. A restore without data (a rollback follows, and an exchange of the
 * rolled-back state) takes nothing. */
static int move_carries(af_run_state_t *r, void *vctx, int64_t i, int64_t *block)
{
    (void)r;
    const move_ctx_t *c = vctx;
    const af_move_t *m = &c->moves[i];
    *block = m->block;
    if (m->kind == AF_MOVE_RESTORE) {
        return c->restore_data ? CARRY_LOG : CARRY_NONE;
    }
    return CARRY_XCHG;
}

af_result_t af_apply_moves(af_run_state_t *r, const af_move_t *moves, int64_t n, int restore_data)
{
    static const xfer_ops_t ops = {move_ranks, move_read,    move_write,  move_local,
                                   move_slots, move_touches, move_carries};
    move_ctx_t ctx = {moves, restore_data};
    AF_CHECK(transfer(r, n, &ops, &ctx));
    for (int64_t i = 0; i < n; ++i) {
        af_slot_control(r, moves[i].from_slot);
        af_slot_control(r, moves[i].to_slot);
    }
    return r->k->ops->upload_control(r->k);
}

/* ---- DMR twins --------------------------------------------------------------------------------
 */

/* Items are blocks with a twin: the primary's committed state goes to the twin before the
 * compute, and the twin's result comes back after it. */
static void twin_in_ranks(af_run_state_t *r, void *ctx, int64_t i, int *src, int *dst)
{
    (void)ctx;
    int64_t b = r->items[i];
    *src = rank_of_slot(r, r->pl.block_slot[b]);
    *dst = rank_of_slot(r, r->twin[b]);
}

static af_result_t twin_in_write(af_run_state_t *r, void *ctx, int64_t i, const double *buf)
{
    (void)ctx;
    return r->k->ops->write_slot(r->k, local_of(r, r->twin[r->items[i]]), buf);
}

static af_result_t twin_in_read(af_run_state_t *r, void *ctx, int64_t i, double *buf)
{
    (void)ctx;
    return r->k->ops->read_slot(r->k, local_of(r, r->pl.block_slot[r->items[i]]), buf);
}

static af_result_t twin_in_local(af_run_state_t *r, void *ctx, int64_t i)
{
    (void)ctx;
    int64_t b = r->items[i];
    return r->k->ops->copy_slot(r->k, local_of(r, r->pl.block_slot[b]), local_of(r, r->twin[b]));
}

static int twin_in_slots(af_run_state_t *r, void *ctx, int64_t i, int64_t *from, int64_t *to)
{
    (void)ctx;
    int64_t b = r->items[i];
    *from = r->pl.block_slot[b];
    *to = r->twin[b];
    return 0;
}

static void twin_in_touches(af_run_state_t *r, void *ctx, int64_t i, int64_t *reads,
                            int64_t *writes)
{
    twin_in_slots(r, ctx, i, reads, writes);
}

/* A twin computes its primary's block: the read-set goes from the primary's rank. */
static int twin_in_carries(af_run_state_t *r, void *ctx, int64_t i, int64_t *block)
{
    (void)ctx;
    *block = r->items[i];
    return CARRY_XCHG;
}

/* A twin's home: the least-loaded HEALTHY unit with room (own device first); failing that,
 * another FADING unit than the primary's, whose independent corruption draws still make a
 * mismatch visible. */
static int32_t twin_target(af_run_state_t *r, int64_t primary_slot)
{
    return af_coord_target_excluding(&r->pl, r->unit_state, af_slot_device(&r->pl, primary_slot), 1,
                                     af_slot_unit(&r->pl, primary_slot));
}

af_result_t af_dmr_begin(af_run_state_t *r, const af_move_t *only, int64_t n_only, int64_t *n_twins)
{
    int64_t n = 0;
    int64_t candidates = n_only;
    if (only == NULL) {
        /* The main pass: the blocks of the FADING units (the plan's list, on every rank), in
         * increasing block order, as a pass over every block would meet them, so twins land
         * where they always did. twin[] is only read for these blocks (containment) and for
         * the retried ones, which the retry pass resets, so the rest keep stale entries. */
        candidates = 0;
        const int dmr = (af_detect_flags(r->cfg.detect) & AF_DET_DMR) != 0;
        for (int64_t i = 0; dmr && i < r->n_fade + r->n_strag_units; ++i) {
            /* The model's FADING units, then the declared stragglers (FADING to the
             * coordinator; a unit may be both). */
            int64_t u = i < r->n_fade ? r->fade_units[i] : r->strag_units[i - r->n_fade];
            for (int64_t k = 0; k < r->C; ++k) {
                int32_t b = r->pl.slot_block[u * r->C + k];
                if (b >= 0) {
                    r->items[candidates++] = b;
                }
            }
        }
        if (r->sample_period > 0) {
            /* detect = sampled: this step's turn of the rotation, whatever their units. */
            int64_t t = (int64_t)((uint64_t)r->tick % (uint64_t)r->sample_period);
            for (int64_t j = r->sample_start[t]; j < r->sample_start[t + 1]; ++j) {
                r->items[candidates++] = r->sample_order[j];
            }
        }
        af_sort_i64(r->items, (size_t)candidates);
        int64_t kept = 0;
        for (int64_t i = 0; i < candidates; ++i) {
            if (kept == 0 || r->items[kept - 1] != r->items[i]) {
                r->items[kept++] = r->items[i];
            }
        }
        candidates = kept;
    }
    for (int64_t i = 0; i < candidates; ++i) {
        int64_t b = only != NULL ? only[i].block : r->items[i];
        r->twin[b] = -1;
        int64_t g = r->pl.block_slot[b];
        int sampled =
            only == NULL && r->sample_period > 0 &&
            af_sample_turn(r, b) == (int64_t)((uint64_t)r->tick % (uint64_t)r->sample_period);
        if (r->unit_state[af_slot_unit(&r->pl, g)] != AF_FADING && !sampled) {
            continue;
        }
        int32_t t = twin_target(r, g);
        if (t < 0) {
            continue; /* no room at all: this block runs without its twin */
        }
        af_placement_reserve(&r->pl, t);
        r->twin[b] = t;
        r->items[n++] = b;
    }
    static const xfer_ops_t ops = {twin_in_ranks, twin_in_read,    twin_in_write,  twin_in_local,
                                   twin_in_slots, twin_in_touches, twin_in_carries};
    AF_CHECK(transfer(r, n, &ops, NULL));
    for (int64_t i = 0; i < n; ++i) {
        int64_t t = r->twin[r->items[i]];
        if (af_slot_is_local(&r->pl, t)) {
            int s = local_of(r, t);
            int64_t u = af_slot_unit(&r->pl, t);
            af_kernels_set_block(r->k, s, (int32_t)r->items[i]);
            r->k->slot_mode[s] = AF_MODE_SHADOW;
            r->k->slot_p[s] = unit_corrupt_p(r, u);
        }
    }
    *n_twins = n;
    return r->k->ops->upload_control(r->k);
}

static void twin_out_ranks(af_run_state_t *r, void *ctx, int64_t i, int *src, int *dst)
{
    twin_in_ranks(r, ctx, i, dst, src);
}

static af_result_t twin_out_read(af_run_state_t *r, void *ctx, int64_t i, double *buf)
{
    (void)ctx;
    return r->k->ops->read_next(r->k, local_of(r, r->twin[r->items[i]]), buf);
}

/* The simulator's truth about an adopted twin result (no detector reads it): a twin on a
 * HEALTHY unit corrupts only when the unit is silent, and what it injected is now committed.
 * The draws are the kernels' own (af_inject under the twin's key), so they are counted here
 * without the twin's rank; an element's harm is judged against the primary's value where the
 * primary drew no corruption there, and counted harmful where both did (the clean value is
 * then nobody's). */
static void count_twin_corruption(af_run_state_t *r, int64_t b, int64_t tu, int s,
                                  const double *twin)
{
    double pt = af_aging_silent(&r->cfg, tu) ? r->cfg.silent_p : 0.0;
    if (!(pt > 0.0)) {
        return;
    }
    const af_corrupt_mix_t mix = r->k->desc.mix;
    const uint64_t seed = (uint64_t)r->cfg.seed;
    const uint64_t key = r->compute_key; /* the pass whose twins are being compared */
    const double ps = r->k->slot_p[s];
    int64_t injected = 0;
    int64_t harmful = 0;
    for (int64_t i = 0; i < r->T; ++i) {
        int kind = AF_CORRUPT_NONE;
        int harm = 0;
        (void)af_inject(0.0, pt, seed, key ^ AF_TWIN_SALT, (uint64_t)b, (uint64_t)i, mix, &kind,
                        &harm);
        if (kind == AF_CORRUPT_NONE) {
            continue;
        }
        injected++;
        int pkind = AF_CORRUPT_NONE;
        (void)af_inject(0.0, ps, seed, key, (uint64_t)b, (uint64_t)i, mix, &pkind, &harm);
        if (pkind != AF_CORRUPT_NONE) {
            harmful++;
            continue;
        }
        /* The primary's value here is clean: the twin's corruption of it, judged as the
         * kernels judge it. */
        double clean = r->twin_buf[i];
        double err = twin[i] - clean;
        double mag = clean < 0.0 ? -clean : clean;
        harmful += af_nonfinite(twin[i]) || (err < 0.0 ? -err : err) > mix.harm_rel * mag;
    }
    r->mine.count[CNT_INJECTED] += injected;
    r->mine.count[CNT_HARMFUL] += harmful;
    r->mine.count[CNT_SDC] += injected;
    r->mine.count[CNT_SDC_HARMFUL] += harmful;
}

/* The primary's rank compares its result with the twin's, bit for bit. On a mismatch it adopts
 * the twin's result when the twin ran on a HEALTHY unit, its result is finite and the primary's
 * unit is not HEALTHY, and fences the block otherwise (two FADING units, or two HEALTHY ones,
 * disagree: neither is trusted). The outcome goes to dmr_mark[].
 */
static af_result_t twin_out_write(af_run_state_t *r, void *ctx, int64_t i, const double *buf)
{
    (void)ctx;
    int64_t b = r->items[i];
    int s = local_of(r, r->pl.block_slot[b]);
    AF_CHECK(r->k->ops->read_next(r->k, s, r->twin_buf));
    if (memcmp(buf, r->twin_buf, sizeof(double) * (size_t)r->T) != 0) {
        int64_t tu = af_slot_unit(&r->pl, r->twin[b]);
        int twin_finite = 1;
        for (int64_t j = 0; j < r->T; ++j) {
            twin_finite &= !af_nonfinite(buf[j]);
        }
        /* A twin's non-finite result fails containment like any other: never adopted. Nor is
         * a twin's result adopted over a HEALTHY primary's (a sampled check): two units that
         * look alike disagree, and neither is trusted. */
        int64_t pu = af_slot_unit(&r->pl, r->pl.block_slot[b]);
        if (r->unit_state[tu] == AF_HEALTHY && twin_finite && r->unit_state[pu] != AF_HEALTHY) {
            AF_CHECK(r->k->ops->write_next(r->k, s, buf));
            r->dmr_mark[s] = AF_DMR_ADOPTED;
            count_twin_corruption(r, b, tu, s, buf);
        } else {
            r->dmr_mark[s] = AF_DMR_FENCED;
        }
    }
    return AF_OK;
}

af_result_t af_dmr_end(af_run_state_t *r, int64_t n)
{
    static const xfer_ops_t ops = {twin_out_ranks, twin_out_read, twin_out_write, NULL, NULL,
                                   NULL,           NULL};
    AF_CHECK(transfer(r, n, &ops, NULL));
    for (int64_t i = 0; i < n; ++i) {
        int64_t t = r->twin[r->items[i]];
        af_placement_release(&r->pl, t);
        af_slot_control(r, t);
    }
    return r->k->ops->upload_control(r->k);
}

/* ---- retries ----------------------------------------------------------------------------------
 */

/* Blocks fenced this step (their status word is set in the exchange) are re-homed to a healthy
 * unit and recomputed there from the previous step's state and halos. Every rank plans the same
 * re-homing from the same tables, so no message is needed. */
af_result_t af_retry_fenced(af_run_state_t *r, int64_t *n_retried)
{
    int64_t n = 0;
    for (int64_t i = 0; i < r->n_fenced; ++i) {
        int32_t b = r->fenced[i];
        int32_t from = r->pl.block_slot[b];
        int64_t dev = af_slot_device(&r->pl, from);
        /* A healthy unit; with no healthy room left, another FADING unit than the one that
         * failed (with fresh injection draws). */
        int32_t to =
            af_coord_target_excluding(&r->pl, r->unit_state, dev, 1, af_slot_unit(&r->pl, from));
        if (to < 0) {
            /* None of this round's retries happens: every block stays where its data is. */
            af_coord_undo(&r->pl, r->moves, n);
            r->exhausted = 1;
            r->exhausted_why = "no live slot is left to retry a fenced block on";
            *n_retried = 0;
            return AF_OK;
        }
        af_placement_move(&r->pl, (int32_t)b, to);
        r->moves[n] = (af_move_t){(int32_t)b, from, to, AF_MOVE_RETRY};
        n++;
    }
    *n_retried = n;
    if (n == 0) {
        return AF_OK;
    }
    AF_CHECK(af_apply_moves(r, r->moves, n, 0));
    for (int i = 0; i < r->k->n_occ; ++i) {
        r->k->select[r->k->occ[i]] = 0;
    }
    for (int64_t i = 0; i < n; ++i) {
        if (af_slot_is_local(&r->pl, r->moves[i].to_slot)) {
            r->k->select[local_of(r, r->moves[i].to_slot)] = 1;
        }
    }
    AF_CHECK(r->k->ops->upload_control(r->k));
    return AF_OK;
}
