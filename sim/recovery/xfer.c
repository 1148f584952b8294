/* agefence recovery, transfers (the bottom of the part): moving whole blocks between
 * preallocated slots and host staging, in chunks of AF_XFER_CHUNK whose items do not depend on
 * each other, with their read-sets carried along (from the exchange or from the edge log beside
 * a replica), and the kernels' control of a slot. Nothing here allocates: every buffer was sized
 * at start-up. Every rank walks the same item lists in the same order, so the point-to-point
 * transfers of a chunk always match. */
#include <string.h>

#include "../../common/af_alloc.h"
#include "../../common/percentile.h"
#include "../io/backend.h"
#include "../oracle/reference.h"
#include "recovery_internal.h"

void af_recovery_bind(af_recovery_t *r, af_shard_t *s, af_halo_t *halo, af_move_t *moves)
{
    r->s = s;
    r->halo = halo;
    r->moves = moves;
}

int af_slot_rank(const af_recovery_t *r, int64_t g)
{
    return af_device_rank(r->s->D, r->s->world.size, af_slot_device(&r->s->pl, g));
}

int af_local_slot(const af_recovery_t *r, int64_t g)
{
    return (int)(g - r->s->slot0);
}

/* The fabric that reaches the slots' memory: the device fabric (nccl) for device slots, the
 * host fabric for host slots (cpu backend); NULL when only staging can (cuda over mpi). */
static af_fabric_t *direct_fabric(const af_recovery_t *r)
{
    if (r->s->nccl != NULL) {
        return r->s->nccl;
    }
    return r->halo->dxchg_prev == NULL ? r->s->fab : NULL;
}

/* The set of committed slots the items of one chunk read and write: open addressing over
 * AF_XFER_SET entries, keys (slot << 1) | is_write, emptied after each chunk by its list. */
static uint32_t set_hash(int64_t key)
{
    return (uint32_t)(((uint64_t)key * 0x9E3779B97F4A7C15ULL) >> 40) & (AF_XFER_SET - 1);
}

static int set_has(const af_recovery_t *r, int64_t key)
{
    for (uint32_t h = set_hash(key);; h = (h + 1) & (AF_XFER_SET - 1)) {
        if (r->xfer.set[h] == key) {
            return 1;
        }
        if (r->xfer.set[h] < 0) {
            return 0;
        }
    }
}

static void set_add(af_recovery_t *r, int64_t key)
{
    uint32_t h = set_hash(key);
    while (r->xfer.set[h] >= 0 && r->xfer.set[h] != key) {
        h = (h + 1) & (AF_XFER_SET - 1);
    }
    if (r->xfer.set[h] < 0) {
        r->xfer.set[h] = key;
        r->xfer.used[r->xfer.n_used++] = (int32_t)h;
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
static int64_t chunk_end(af_recovery_t *r, int64_t n, const xfer_ops_t *ops, void *ctx, int64_t c0)
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
    for (int64_t k = 0; k < r->xfer.n_used; ++k) {
        r->xfer.set[r->xfer.used[k]] = -1;
    }
    r->xfer.n_used = 0;
    return end;
}

static af_result_t carry_edges(af_recovery_t *r, int64_t n, const xfer_ops_t *ops, void *ctx);

af_result_t af_transfer(af_recovery_t *r, int64_t n, const xfer_ops_t *ops, void *ctx)
{
    const int me = r->s->world.rank;
    const int R = r->s->world.size;
    const size_t T = (size_t)r->s->T;
    af_fabric_t *df = ops->slots != NULL ? direct_fabric(r) : NULL;
    af_p2p_t *direct = r->xfer.p2p + AF_XFER_CHUNK;
    /* A chunk's staged items go to (come from) each peer as one message, the items in list
     * order: every rank walks the same list, so the receiver's order is the sender's. One
     * message a block made a refresh of 500,000 blocks a rank half a second of posts. */
    int64_t *ns = r->xfer.peer;           /* items this rank sends each peer in the chunk */
    int64_t *nr = r->xfer.peer + R;       /* items it receives from each */
    int64_t *at_s = r->xfer.peer + 2 * R; /* where each peer's items start in the staging */
    int64_t *at_r = r->xfer.peer + 3 * R;
    /* Each item's ranks and whether it goes straight between slots, found once a chunk. */
    int32_t *route = r->xfer.route;
    for (int64_t c0 = 0, c1 = 0; c0 < n; c0 = c1) {
        c1 = chunk_end(r, n, ops, ctx, c0);
        int np = 0;
        int nd = 0;
        memset(ns, 0, sizeof(int64_t) * 2 * (size_t)R);
        for (int64_t i = c0; i < c1; ++i) {
            int src = 0;
            int dst = 0;
            int64_t from = -1;
            int64_t to = -1;
            ops->ranks(r, ctx, i, &src, &dst);
            int is_direct =
                df != NULL && (src == me) != (dst == me) && ops->slots(r, ctx, i, &from, &to) == 0;
            int32_t *rt = route + 3 * (i - c0);
            rt[0] = src;
            rt[1] = dst;
            rt[2] = is_direct;
            if (src == me && dst == me) {
                if (ops->local != NULL) {
                    AF_CHECK(ops->local(r, ctx, i));
                } else {
                    AF_CHECK(ops->read(r, ctx, i, r->s->cellbuf));
                    AF_CHECK(ops->write(r, ctx, i, r->s->cellbuf));
                }
            } else if (is_direct && src == me) {
                double *buf = r->s->k->ops->slot_data(r->s->k, af_local_slot(r, from));
                if (buf == NULL) {
                    return AF_ERR_NOMEM; /* the backend said why */
                }
                direct[nd++] = (af_p2p_t){dst, 1, buf, T * sizeof(double)};
            } else if (is_direct) {
                double *buf = r->s->k->ops->slot_data(r->s->k, af_local_slot(r, to));
                if (buf == NULL) {
                    return AF_ERR_NOMEM;
                }
                direct[nd++] = (af_p2p_t){src, 0, buf, T * sizeof(double)};
            } else if (src == me) {
                ns[dst]++;
            } else if (dst == me) {
                nr[src]++;
            }
        }
        int64_t s_at = 0;
        int64_t r_at = 0;
        for (int q = 0; q < R; ++q) {
            at_s[q] = s_at;
            at_r[q] = r_at;
            if (ns[q] > 0) {
                r->xfer.p2p[np++] = (af_p2p_t){q, 1, r->xfer.stage_send + (size_t)s_at * T,
                                               (size_t)ns[q] * T * sizeof(double)};
            }
            if (nr[q] > 0) {
                r->xfer.p2p[np++] = (af_p2p_t){q, 0, r->xfer.stage_recv + (size_t)r_at * T,
                                               (size_t)nr[q] * T * sizeof(double)};
            }
            s_at += ns[q];
            r_at += nr[q];
        }
        if (s_at > 0) {
            /* The sends, read into each peer's part of the staging in list order. */
            for (int64_t i = c0; i < c1; ++i) {
                const int32_t *rt = route + 3 * (i - c0);
                if (rt[0] != me || rt[1] == me || rt[2]) {
                    continue;
                }
                AF_CHECK(ops->read(r, ctx, i, r->xfer.stage_send + (size_t)at_s[rt[1]]++ * T));
            }
        }
        if (nd > 0) {
            if (df != r->s->fab) {
                /* The device fabric reads what the backend's stream wrote: let it finish. */
                AF_CHECK(r->s->k->ops->sync(r->s->k));
            }
            AF_CHECK(df->ops->exchange(df, direct, nd));
        }
        if (np > 0) {
            AF_CHECK(r->s->fab->ops->exchange(r->s->fab, r->xfer.p2p, np));
        }
        for (int64_t i = c0; i < c1; ++i) {
            const int32_t *rt = route + 3 * (i - c0);
            int64_t from = -1;
            int64_t to = -1;
            if (rt[1] != me || rt[0] == me) {
                continue;
            }
            if (rt[2]) {
                /* Received straight into the committed buffer: its diagnostics follow. */
                ops->slots(r, ctx, i, &from, &to);
                AF_CHECK(r->s->k->ops->refresh_slot(r->s->k, af_local_slot(r, to)));
            } else {
                AF_CHECK(ops->write(r, ctx, i, r->xfer.stage_recv + (size_t)at_r[rt[0]]++ * T));
            }
        }
    }
    return carry_edges(r, n, ops, ctx);
}

/* The edge log's row of logical step s (the log keeps rep_log_depth steps: replica_interval with
 * replay = local, the newest one with global). */
uint64_t *af_edge_log_row(const af_recovery_t *r, int64_t s)
{
    /* One row of every replica's pair per logical step kept: a step's writes, which come in
     * the order of the replicas (or close to it), land side by side. */
    size_t row = (size_t)(r->rep.n_reps > 0 ? r->rep.n_reps : 1);
    return r->rep.log + (size_t)(s % r->rep.log_depth) * row * 2;
}

/* Block b's read-set into this rank's exchange (and its device mirror, where the kernels read
 * one): the right edge of b - 1 and the left edge of b + 1. */
static af_result_t put_read_set(af_recovery_t *r, int64_t b, uint64_t left, uint64_t right)
{
    size_t il = 0;
    size_t ir = 0;
    af_wl_read_set(r->s->wl->kind, r->s->B, b, &il, &ir);
    r->halo->xchg_prev[il] = left;
    r->halo->xchg_prev[ir] = right;
    if (r->halo->dxchg_prev != NULL) {
        AF_CHECK(
            af_buf_copy(r->halo->dxchg_prev + il, AF_MEM_DEVICE, &left, AF_MEM_HOST, sizeof left));
        AF_CHECK(af_buf_copy(r->halo->dxchg_prev + ir, AF_MEM_DEVICE, &right, AF_MEM_HOST,
                             sizeof right));
    }
    return AF_OK;
}

/* The read-set of block b as this rank has it: from its exchange, or from the log beside b's
 * replica (which this rank keeps), at the committed step. */
void af_get_read_set(const af_recovery_t *r, int how, int64_t b, uint64_t *left, uint64_t *right)
{
    if (how == CARRY_LOG) {
        const uint64_t *e = af_edge_log_entry(r, r->rep.off[b], r->s->state_step);
        *left = e[0];
        *right = e[1];
    } else {
        size_t il = 0;
        size_t ir = 0;
        af_wl_read_set(r->s->wl->kind, r->s->B, b, &il, &ir);
        *left = r->halo->xchg_prev[il];
        *right = r->halo->xchg_prev[ir];
    }
}

/* Block b's read-set as the next (block, left, right) triple of the send buffer's part for
 * rank q (halo_at, from af_halo_offsets). */
static void pack_read_set(af_recovery_t *r, uint64_t *send, int q, int how, int64_t b)
{
    uint64_t *t = send + 3 * r->halo->at[q]++;
    t[0] = (uint64_t)b;
    af_get_read_set(r, how, b, &t[1], &t[2]);
}

/* After a batch of transfers: the blocks that changed rank take their read-sets with them, in
 * triples (block, left, right), one message per pair of ranks and chunk. Without it the new
 * rank would compute with edges it never received: the neighbour halo delivers each block's
 * read-set to the rank that published the block, and only there. Not needed where the
 * exchange is combined whole (nccl) or on one rank. */
static af_result_t carry_edges(af_recovery_t *r, int64_t n, const xfer_ops_t *ops, void *ctx)
{
    const int me = r->s->world.rank;
    const int R = r->s->world.size;
    if (ops->carries == NULL || r->s->nccl != NULL || R == 1) {
        return AF_OK;
    }
    int64_t *cs = r->halo->count;
    int64_t *cr = r->halo->count2;
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
                    af_get_read_set(r, how, b, &left, &right);
                    AF_CHECK(put_read_set(r, b, left, right));
                }
                continue;
            }
            cs[dst] += src == me;
            cr[src] += dst == me;
        }
        af_halo_offsets(r->halo, cs);
        for (int64_t i = c0; i < c1; ++i) {
            int64_t b = -1;
            int src = 0;
            int dst = 0;
            int how = ops->carries(r, ctx, i, &b);
            ops->ranks(r, ctx, i, &src, &dst);
            if (how == CARRY_NONE || src != me || dst < 0 || dst == me) {
                continue;
            }
            pack_read_set(r, r->rep.carry_send, dst, how, b);
        }
        int64_t got = 0;
        AF_CHECK(af_halo_post(r->halo, r->rep.carry_send, cs, r->rep.carry_recv, cr, 3, &got,
                              CNT_HALO_BYTES));
        for (int64_t i = 0; i < got; ++i) {
            const uint64_t *t = r->rep.carry_recv + 3 * i;
            if (t[0] >= (uint64_t)r->s->B) {
                af_error_set("carry: a read-set for block %llu of %lld", (unsigned long long)t[0],
                             (long long)r->s->B);
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
double af_unit_corrupt_p(const af_recovery_t *r, int64_t u)
{
    /* A unit FADING to the coordinator but not to the model (a declared straggler or suspect)
     * has probability 0 from the model, as it had before. */
    int8_t st = r->s->unit_state[u];
    return st == AF_FADING ? af_aging_p_corrupt(r->s->aging, &r->s->cfg, u)
           : st == AF_HEALTHY && af_aging_silent(&r->s->cfg, u) ? r->s->cfg.silent_p
                                                                : 0.0;
}

void af_slot_control(af_recovery_t *r, int64_t g)
{
    if (!af_slot_is_local(&r->s->pl, g)) {
        return;
    }
    int s = (int)(g - r->s->slot0);
    int64_t u = af_slot_unit(&r->s->pl, g);
    int32_t b = r->s->pl.slot_block[g];
    af_kernels_set_block(r->s->k, s, b >= 0 ? b : -1);
    int8_t st = r->s->unit_state[u];
    r->s->k->slot_mode[s] = st == AF_DEAD     ? AF_MODE_DEAD
                            : st == AF_FADING ? AF_MODE_FADING
                                              : AF_MODE_HEALTHY;
    r->s->k->slot_p[s] = af_unit_corrupt_p(r, u);
}
