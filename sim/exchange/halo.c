/* agefence halo (DESIGN "One step", 4): what the next compute needs from other ranks, and the
 * step's global figures, with a cost that follows each rank's own blocks.
 *
 * After the pack, the exchange vector of a rank holds the entries of the blocks it publishes
 * (edges, mass, energy, status word). Then:
 *   - neighbour edges (a workload whose read-set is its neighbours' edges: burgers): for
 *     each published block b whose neighbour b-1 (b+1) lives on another
 *     rank, b's left (right) edge goes to that rank and the neighbour's right (left) edge comes
 *     back; the relation is symmetric, so each rank sends to a peer exactly as many items as it
 *     receives from it. Items are (exchange index, bit pattern) pairs on preallocated buffers,
 *     posted together (fabric exchange), so -0.0, NaN payloads and every bit arrive unchanged;
 *   - the global figures: one integer all-reduce (sum) of a fixed number of words: the exact
 *     accumulators of the published blocks' mass and energy (common/af_rsum.h: the same bits on
 *     any number of ranks and in any order), the NaN/Inf values counted in committed state, the
 *     fenced blocks and the stop flags;
 *   - when any block was fenced, an all-gather of the fenced blocks' ids, sorted, so every rank
 *     plans the same retries;
 *   - with straggler detection, the per-device words (an exact max all-reduce of D words);
 *   - a globally coupled workload (attention): its global word from the exact mass sum, into
 *     the exchange's AF_XCHG_GLOBAL flag word, where the next compute reads it.
 * With the nccl fabric the device vector is combined whole by its all-reduce (every entry on
 * every rank): the neighbour step is then skipped and the rest is the same. */
#include <stdlib.h>
#include <string.h>

#include "../../common/af_alloc.h"
#include "../../common/af_rsum.h"
#include "../../common/percentile.h"
#include "../io/backend.h"
#include "../driver/run_internal.h"
#include "../io/stop.h"

/* The words of the figures' all-reduce: two accumulators, then the counts. */
enum {
    SUM_MASS = 0,
    SUM_ENERGY = AF_RSUM_WORDS,
    SUM_LEAKED = 2 * AF_RSUM_WORDS,
    SUM_FENCED,
    SUM_STOP,
    SUM_WORDS
};

static int owner_of(const af_run_state_t *r, int64_t b)
{
    return r->pl.block_rank[b];
}

/* Whether local slot s publishes its block (the pack writes its entries). */
static int published(const af_run_state_t *r, int s)
{
    const af_kernels_t *k = r->k;
    return k->slot_block[s] >= 0 && k->slot_mode[s] != AF_MODE_DEAD &&
           k->slot_mode[s] != AF_MODE_SHADOW;
}

af_result_t af_halo_init(af_run_state_t *r)
{
    const size_t R = (size_t)r->world.size;
    int64_t most = r->B < r->n_local ? r->B : r->n_local;
    r->halo_blocks = most > 0 ? most : 1;
    /* Two items (one per side) of two words per block a rank can hold, each way. */
    r->halo_send = af_alloc(sizeof(uint64_t) * 4 * (size_t)r->halo_blocks);
    r->halo_recv = af_alloc(sizeof(uint64_t) * 4 * (size_t)r->halo_blocks);
    r->halo_count = af_alloc(sizeof(int64_t) * R);
    r->halo_count2 = af_alloc(sizeof(int64_t) * R);
    r->halo_at = af_alloc(sizeof(int64_t) * R);
    r->halo_p2p = af_alloc(sizeof(af_p2p_t) * 2 * R);
    r->fenced_mine = af_alloc(sizeof(int32_t) * (size_t)r->halo_blocks);
    r->pub_slots = af_alloc(sizeof(int32_t) * (size_t)r->halo_blocks);
    r->fenced = af_alloc(sizeof(int32_t) * (size_t)r->B);
    r->sum_words = af_alloc(sizeof(int64_t) * SUM_WORDS);
    if (!r->halo_send || !r->halo_recv || !r->halo_count || !r->halo_count2 || !r->halo_at ||
        !r->halo_p2p || !r->fenced_mine || !r->pub_slots || !r->fenced || !r->sum_words) {
        af_error_set("cannot allocate the halo buffers for %lld blocks", (long long)r->halo_blocks);
        return AF_ERR_NOMEM;
    }
    return AF_OK;
}

void af_halo_destroy(af_run_state_t *r)
{
    af_free(r->halo_send);
    af_free(r->halo_recv);
    af_free(r->halo_count);
    af_free(r->halo_count2);
    af_free(r->halo_at);
    af_free(r->halo_p2p);
    af_free(r->fenced_mine);
    af_free(r->pub_slots);
    af_free(r->fenced);
    af_free(r->sum_words);
    r->halo_send = r->halo_recv = NULL;
    r->halo_count = r->halo_count2 = r->halo_at = NULL;
    r->halo_p2p = NULL;
    r->fenced_mine = r->fenced = r->pub_slots = NULL;
    r->sum_words = NULL;
}

int64_t af_halo_offsets(af_run_state_t *r, const int64_t *count)
{
    int64_t at = 0;
    for (int q = 0; q < r->world.size; ++q) {
        r->halo_at[q] = at;
        at += count[q];
    }
    return at;
}

af_result_t af_halo_post(af_run_state_t *r, uint64_t *send, const int64_t *cs, uint64_t *recv,
                         const int64_t *cr, int words, int64_t *got, int counter)
{
    const int R = r->world.size;
    int np = 0;
    int64_t as = 0;
    int64_t ar = 0;
    int64_t bytes = 0;
    for (int q = 0; q < R; ++q) {
        if (cs[q] > 0 || cr[q] > 0) {
            np += (cs[q] > 0) + (cr[q] > 0);
        }
    }
    if (np > AF_FABRIC_MAX_P2P || np > 2 * R) {
        af_error_set("halo: %d transfers exceed one batch of %d", np, AF_FABRIC_MAX_P2P);
        return AF_ERR_INTERNAL;
    }
    np = 0;
    for (int q = 0; q < R; ++q) {
        if (cs[q] > 0) {
            size_t len = sizeof(uint64_t) * (size_t)words * (size_t)cs[q];
            r->halo_p2p[np++] = (af_p2p_t){q, 1, send + as * words, len};
            as += cs[q];
            bytes += (int64_t)len;
        }
        if (cr[q] > 0) {
            size_t len = sizeof(uint64_t) * (size_t)words * (size_t)cr[q];
            r->halo_p2p[np++] = (af_p2p_t){q, 0, recv + ar * words, len};
            ar += cr[q];
        }
    }
    *got = ar;
    r->mine.count[counter] += bytes;
    return np > 0 ? r->fab->ops->exchange(r->fab, r->halo_p2p, np) : AF_OK;
}

/* The neighbour edges of this rank's published blocks, both ways (x: the host exchange). */
static af_result_t neighbour_edges(af_run_state_t *r, uint64_t *x)
{
    const int me = r->world.rank;
    const int R = r->world.size;
    const int64_t B = r->B;
    if (R == 1 || !r->wl->neighbour_edges) {
        return AF_OK; /* one rank, or a workload whose read-set is the global word */
    }
    memset(r->halo_count, 0, sizeof(int64_t) * (size_t)R);
    for (int64_t i = 0; i < r->n_pub; ++i) {
        int64_t b = r->k->slot_block[r->pub_slots[i]];
        int ql = owner_of(r, (b + B - 1) % B);
        int qr = owner_of(r, (b + 1) % B);
        r->halo_count[ql] += ql != me;
        r->halo_count[qr] += qr != me;
    }
    int64_t at = af_halo_offsets(r, r->halo_count);
    if (at > 2 * r->halo_blocks) {
        af_error_set("halo: %lld edge items for room of %lld", (long long)at,
                     (long long)(2 * r->halo_blocks));
        return AF_ERR_INTERNAL;
    }
    for (int64_t i = 0; i < r->n_pub; ++i) {
        int64_t b = r->k->slot_block[r->pub_slots[i]];
        int ql = owner_of(r, (b + B - 1) % B);
        int qr = owner_of(r, (b + 1) % B);
        if (ql != me) {
            uint64_t *e = r->halo_send + 2 * r->halo_at[ql]++;
            e[0] = (uint64_t)(2 * b); /* b's left edge, which b - 1 reads as its right */
            e[1] = x[2 * b];
        }
        if (qr != me) {
            uint64_t *e = r->halo_send + 2 * r->halo_at[qr]++;
            e[0] = (uint64_t)(2 * b + 1);
            e[1] = x[2 * b + 1];
        }
    }
    int64_t got = 0;
    AF_CHECK(af_halo_post(r, r->halo_send, r->halo_count, r->halo_recv, r->halo_count, 2, &got,
                          CNT_HALO_BYTES));
    for (int64_t i = 0; i < got; ++i) {
        uint64_t idx = r->halo_recv[2 * i];
        if (idx >= (uint64_t)(2 * B)) {
            af_error_set("halo: an edge item for exchange index %llu of %lld",
                         (unsigned long long)idx, (long long)(2 * B));
            return AF_ERR_INTERNAL;
        }
        x[idx] = r->halo_recv[2 * i + 1];
    }
    return AF_OK;
}

/* The global figures of the published blocks (x: the host exchange), and the fenced list. */
static af_result_t figures(af_run_state_t *r, const uint64_t *x)
{
    const int64_t B = r->B;
    af_rsum_t mass;
    af_rsum_t energy;
    af_rsum_clear(&mass);
    af_rsum_clear(&energy);
    int64_t leaked = 0;
    int64_t nf = 0;
    for (int64_t i = 0; i < r->n_pub; ++i) {
        int64_t b = r->k->slot_block[r->pub_slots[i]];
        af_rsum_add(&mass, af_double(x[2 * B + b]));
        af_rsum_add(&energy, af_double(x[3 * B + b]));
        uint64_t st = x[4 * B + b];
        leaked += (int64_t)(st >> 1);
        if ((st & 1U) != 0) {
            r->fenced_mine[nf++] = (int32_t)b;
        }
    }
    int64_t *w = r->sum_words;
    memcpy(w + SUM_MASS, af_rsum_words(&mass), sizeof(int64_t) * AF_RSUM_WORDS);
    memcpy(w + SUM_ENERGY, af_rsum_words(&energy), sizeof(int64_t) * AF_RSUM_WORDS);
    w[SUM_LEAKED] = leaked;
    w[SUM_FENCED] = nf;
    w[SUM_STOP] = r->stop_mine;
    AF_CHECK(r->fab->ops->allreduce_sum_i64(r->fab, w, SUM_WORDS));
    if (r->world.size > 1) {
        r->mine.count[CNT_HALO_BYTES] += (int64_t)(sizeof(int64_t) * SUM_WORDS);
    }
    memcpy(af_rsum_words(&mass), w + SUM_MASS, sizeof(int64_t) * AF_RSUM_WORDS);
    memcpy(af_rsum_words(&energy), w + SUM_ENERGY, sizeof(int64_t) * AF_RSUM_WORDS);
    double dx = af_config_dx(&r->cfg);
    double mass_sum = af_rsum_value(&mass);
    r->mass_now = mass_sum * dx;
    if (r->wl->global_word != NULL) {
        /* The global word the next compute reads (AF_XCHG_GLOBAL), the same bits on every
         * rank: the exact sum of the published blocks' masses, rounded once. */
        r->global_now = r->wl->global_word(mass_sum, B, r->T);
    }
    r->energy_now = af_rsum_value(&energy) * dx;
    r->leaked_now = w[SUM_LEAKED];
    r->stop_now = w[SUM_STOP] != 0;
    r->n_fenced = 0;
    if (w[SUM_FENCED] > 0) {
        size_t total = 0;
        AF_CHECK(r->fab->ops->allgatherv_i32(r->fab, r->fenced_mine, (size_t)nf, r->fenced,
                                             (size_t)B, &total));
        if ((int64_t)total != w[SUM_FENCED]) {
            af_error_set("halo: %zu fenced blocks gathered, %lld counted", total,
                         (long long)w[SUM_FENCED]);
            return AF_ERR_INTERNAL;
        }
        af_sort_i32(r->fenced, total);
        r->n_fenced = (int64_t)total;
        r->mine.count[CNT_HALO_BYTES] +=
            r->world.size > 1 ? (int64_t)(sizeof(int32_t) * (size_t)nf) : 0;
    }
    return AF_OK;
}

/* After the pack into the host exchange xchg_cur (or its copy from the device): the neighbour
 * edges when the vector was not combined whole, the figures, the straggler words, and the
 * result back into the device mirror when the compute reads one. */
static af_result_t complete(af_run_state_t *r, int combined)
{
    uint64_t *x = r->xchg_cur;
    /* One pass over the shard's occupied slots; everything after it follows the published
     * blocks. */
    r->n_pub = 0;
    for (int i = 0; i < r->k->n_occ; ++i) {
        int s = r->k->occ[i];
        if (published(r, s)) {
            if (r->n_pub == r->halo_blocks) {
                af_error_set("halo: more than %lld published slots", (long long)r->halo_blocks);
                return AF_ERR_INTERNAL;
            }
            r->pub_slots[r->n_pub++] = s;
        }
    }
    if (!combined) {
        AF_CHECK(neighbour_edges(r, x));
        size_t tail = r->xlen - af_xchg_len((int)r->B);
        if (tail > 0) {
            AF_CHECK(r->fab->ops->allreduce_max_u64(r->fab, x + af_xchg_len((int)r->B), tail));
        }
    }
    AF_CHECK(figures(r, x));
    const size_t at = 5 * (size_t)r->B + AF_XCHG_GLOBAL;
    if (r->wl->global_word != NULL) {
        x[at] = af_bits(r->global_now);
    }
    if (!combined && r->dxchg_cur != NULL) {
        return af_buf_copy(r->dxchg_cur, AF_MEM_DEVICE, x, AF_MEM_HOST, sizeof(uint64_t) * r->xlen);
    }
    if (r->wl->global_word != NULL && r->dxchg_cur != NULL) {
        return af_buf_copy(r->dxchg_cur + at, AF_MEM_DEVICE, x + at, AF_MEM_HOST, sizeof x[at]);
    }
    return AF_OK;
}

af_result_t af_halo_after_graph(af_run_state_t *r, uint64_t stop_flag)
{
    r->stop_mine = (int64_t)stop_flag;
    return complete(r, r->gio.reduce != NULL);
}

af_result_t af_exchange(af_run_state_t *r)
{
    const size_t len = r->xlen;
    const size_t head = af_xchg_len((int)r->B);
    const size_t tail = len - head;
    const uint64_t flag = af_stop_flag() ? 1 : 0;
    r->stop_mine = (int64_t)flag;
    if (r->dxchg_cur == NULL) {
        af_kernels_t *k = r->k;
        AF_CHECK(k->ops->pack_owned != NULL ? k->ops->pack_owned(k, r->xchg_cur)
                                            : k->ops->pack(k, r->xchg_cur));
        if (tail > 0) {
            memcpy(r->xchg_cur + head, r->dev_words, tail * sizeof(uint64_t));
        }
        return complete(r, 0);
    }
    /* Device-resident exchange: pack there, set the flag and the straggler words there, and
     * combine it whole over nccl on the device, or bring it to the host for the neighbour
     * halo over mpi (and back, in complete()). */
    AF_CHECK(r->k->ops->pack(r->k, r->dxchg_cur));
    AF_CHECK(af_buf_copy(r->dxchg_cur + 5 * r->B + AF_XCHG_STOP, AF_MEM_DEVICE, &flag, AF_MEM_HOST,
                         sizeof flag));
    if (tail > 0) {
        AF_CHECK(af_buf_copy(r->dxchg_cur + head, AF_MEM_DEVICE, r->dev_words, AF_MEM_HOST,
                             tail * sizeof(uint64_t)));
    }
    if (r->nccl != NULL) {
        AF_CHECK(r->nccl->ops->allreduce_max_u64(r->nccl, r->dxchg_cur, len));
    }
    AF_CHECK(
        af_buf_copy(r->xchg_cur, AF_MEM_HOST, r->dxchg_cur, AF_MEM_DEVICE, len * sizeof(uint64_t)));
    return complete(r, r->nccl != NULL);
}

af_result_t af_exchange_swap(af_run_state_t *r)
{
    uint64_t *t = r->xchg_prev;
    r->xchg_prev = r->xchg_cur;
    r->xchg_cur = t;
    if (r->dxchg_prev != NULL && r->graph_on) {
        /* The step graph reads and writes these two buffers, wherever the step is. */
        return af_buf_copy(r->dxchg_prev, AF_MEM_DEVICE, r->dxchg_cur, AF_MEM_DEVICE,
                           sizeof(uint64_t) * r->xlen);
    }
    t = r->dxchg_prev;
    r->dxchg_prev = r->dxchg_cur;
    r->dxchg_cur = t;
    return AF_OK;
}
