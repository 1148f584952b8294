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
#include "halo.h"
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

static int owner_of(const af_halo_t *h, int64_t b)
{
    return h->s->pl.block_rank[b];
}

/* Whether local slot s publishes its block (the pack writes its entries). */
static int published(const af_halo_t *h, int s)
{
    const af_kernels_t *k = h->s->k;
    return k->slot_block[s] >= 0 && k->slot_mode[s] != AF_MODE_DEAD &&
           k->slot_mode[s] != AF_MODE_SHADOW;
}

af_result_t af_halo_init(af_halo_t *h, af_shard_t *s)
{
    h->s = s;
    const size_t R = (size_t)h->s->world.size;
    int64_t most = h->s->B < h->s->n_local ? h->s->B : h->s->n_local;
    h->blocks = most > 0 ? most : 1;
    /* Two items (one per side) of two words per block a rank can hold, each way. */
    h->send = af_alloc(sizeof(uint64_t) * 4 * (size_t)h->blocks);
    h->recv = af_alloc(sizeof(uint64_t) * 4 * (size_t)h->blocks);
    h->count = af_alloc(sizeof(int64_t) * R);
    h->count2 = af_alloc(sizeof(int64_t) * R);
    h->at = af_alloc(sizeof(int64_t) * R);
    h->p2p = af_alloc(sizeof(af_p2p_t) * 2 * R);
    h->fenced_mine = af_alloc(sizeof(int32_t) * (size_t)h->blocks);
    h->pub_blocks = af_alloc(sizeof(int32_t) * (size_t)h->blocks);
    h->fenced = af_alloc(sizeof(int32_t) * (size_t)h->s->B);
    h->sum_words = af_alloc(sizeof(int64_t) * SUM_WORDS);
    if (!h->send || !h->recv || !h->count || !h->count2 || !h->at || !h->p2p || !h->fenced_mine ||
        !h->pub_blocks || !h->fenced || !h->sum_words) {
        af_error_set("cannot allocate the halo buffers for %lld blocks", (long long)h->blocks);
        return AF_ERR_NOMEM;
    }
    return AF_OK;
}

void af_halo_destroy(af_halo_t *h)
{
    af_free(h->send);
    af_free(h->recv);
    af_free(h->count);
    af_free(h->count2);
    af_free(h->at);
    af_free(h->p2p);
    af_free(h->fenced_mine);
    af_free(h->pub_blocks);
    af_free(h->fenced);
    af_free(h->sum_words);
    h->send = h->recv = NULL;
    h->count = h->count2 = h->at = NULL;
    h->p2p = NULL;
    h->fenced_mine = h->fenced = h->pub_blocks = NULL;
    h->sum_words = NULL;
}

int64_t af_halo_offsets(af_halo_t *h, const int64_t *count)
{
    int64_t at = 0;
    for (int q = 0; q < h->s->world.size; ++q) {
        h->at[q] = at;
        at += count[q];
    }
    return at;
}

af_result_t af_halo_post(af_halo_t *h, uint64_t *send, const int64_t *cs, uint64_t *recv,
                         const int64_t *cr, int words, int64_t *got, int counter)
{
    const int R = h->s->world.size;
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
            h->p2p[np++] = (af_p2p_t){q, 1, send + as * words, len};
            as += cs[q];
            bytes += (int64_t)len;
        }
        if (cr[q] > 0) {
            size_t len = sizeof(uint64_t) * (size_t)words * (size_t)cr[q];
            h->p2p[np++] = (af_p2p_t){q, 0, recv + ar * words, len};
            ar += cr[q];
        }
    }
    *got = ar;
    h->s->mine.count[counter] += bytes;
    return np > 0 ? h->s->fab->ops->exchange(h->s->fab, h->p2p, np) : AF_OK;
}

/* The neighbour edges of this rank's published blocks, both ways (x: the host exchange). */
static af_result_t neighbour_edges(af_halo_t *h, uint64_t *x)
{
    const int me = h->s->world.rank;
    const int R = h->s->world.size;
    const int64_t B = h->s->B;
    if (R == 1 || !h->s->wl->neighbour_edges) {
        return AF_OK; /* one rank, or a workload whose read-set is the global word */
    }
    /* One pass over the published blocks lists the edges another rank reads, as (rank, exchange
     * index) pairs in recv (room for two a block, free until the post): a rank's blocks lie
     * mostly side by side, so the list is short, and the pass reads block_rank in order. */
    memset(h->count, 0, sizeof(int64_t) * (size_t)R);
    int64_t n = 0;
    for (int64_t i = 0; i < h->n_pub; ++i) {
        int64_t b = h->pub_blocks[i];
        int ql = owner_of(h, (b + B - 1) % B);
        int qr = owner_of(h, (b + 1) % B);
        if (ql != me) {
            h->recv[2 * n] = (uint64_t)ql;
            h->recv[2 * n++ + 1] = (uint64_t)(2 * b); /* b's left edge: b - 1's right read */
            h->count[ql]++;
        }
        if (qr != me) {
            h->recv[2 * n] = (uint64_t)qr;
            h->recv[2 * n++ + 1] = (uint64_t)(2 * b + 1);
            h->count[qr]++;
        }
    }
    int64_t at = af_halo_offsets(h, h->count);
    if (at > 2 * h->blocks) {
        af_error_set("halo: %lld edge items for room of %lld", (long long)at,
                     (long long)(2 * h->blocks));
        return AF_ERR_INTERNAL;
    }
    for (int64_t i = 0; i < n; ++i) {
        uint64_t idx = h->recv[2 * i + 1];
        uint64_t *e = h->send + 2 * h->at[h->recv[2 * i]]++;
        e[0] = idx;
        e[1] = x[idx];
    }
    int64_t got = 0;
    AF_CHECK(af_halo_post(h, h->send, h->count, h->recv, h->count, 2, &got, CNT_HALO_BYTES));
    for (int64_t i = 0; i < got; ++i) {
        uint64_t idx = h->recv[2 * i];
        if (idx >= (uint64_t)(2 * B)) {
            af_error_set("halo: an edge item for exchange index %llu of %lld",
                         (unsigned long long)idx, (long long)(2 * B));
            return AF_ERR_INTERNAL;
        }
        x[idx] = h->recv[2 * i + 1];
    }
    return AF_OK;
}

/* This rank's part of the figures, from the published blocks' entries in the exchange x: their
 * mass and energy summed exactly, the NaN/Inf values of their committed state, and the fenced
 * ones into fenced_mine (the count in *nf). */
static void my_figures(af_halo_t *h, const uint64_t *x, af_rsum_t *mass, af_rsum_t *energy,
                       int64_t *leaked, int64_t *nf)
{
    const int64_t B = h->s->B;
    af_rsum_clear(mass);
    af_rsum_clear(energy);
    *leaked = 0;
    *nf = 0;
    for (int64_t i = 0; i < h->n_pub; ++i) {
        int64_t b = h->pub_blocks[i];
        af_rsum_add(mass, af_double(x[2 * B + b]));
        af_rsum_add(energy, af_double(x[3 * B + b]));
        uint64_t st = x[4 * B + b];
        *leaked += (int64_t)(st >> 1);
        if ((st & 1U) != 0) {
            h->fenced_mine[(*nf)++] = (int32_t)b;
        }
    }
}

/* The global figures from every rank's part (fenced_mine holds this rank's nf fenced blocks),
 * and the fleet's sorted fenced list. */
static af_result_t figures(af_halo_t *h, const af_rsum_t *my_mass, const af_rsum_t *my_energy,
                           int64_t leaked, int64_t nf)
{
    const int64_t B = h->s->B;
    int64_t *w = h->sum_words;
    af_rsum_t mass = *my_mass;
    af_rsum_t energy = *my_energy;
    memcpy(w + SUM_MASS, af_rsum_words(&mass), sizeof(int64_t) * AF_RSUM_WORDS);
    memcpy(w + SUM_ENERGY, af_rsum_words(&energy), sizeof(int64_t) * AF_RSUM_WORDS);
    w[SUM_LEAKED] = leaked;
    w[SUM_FENCED] = nf;
    w[SUM_STOP] = h->stop_mine;
    AF_CHECK(h->s->fab->ops->allreduce_sum_i64(h->s->fab, w, SUM_WORDS));
    if (h->s->world.size > 1) {
        h->s->mine.count[CNT_HALO_BYTES] += (int64_t)(sizeof(int64_t) * SUM_WORDS);
    }
    memcpy(af_rsum_words(&mass), w + SUM_MASS, sizeof(int64_t) * AF_RSUM_WORDS);
    memcpy(af_rsum_words(&energy), w + SUM_ENERGY, sizeof(int64_t) * AF_RSUM_WORDS);
    double dx = af_config_dx(&h->s->cfg);
    double mass_sum = af_rsum_value(&mass);
    h->mass_now = mass_sum * dx;
    if (h->s->wl->global_word != NULL) {
        /* The global word the next compute reads (AF_XCHG_GLOBAL), the same bits on every
         * rank: the exact sum of the published blocks' masses, rounded once. */
        h->global_now = h->s->wl->global_word(mass_sum, B, h->s->T);
    }
    h->energy_now = af_rsum_value(&energy) * dx;
    h->leaked_now = w[SUM_LEAKED];
    h->stop_now = w[SUM_STOP] != 0;
    h->n_fenced = 0;
    if (w[SUM_FENCED] > 0) {
        size_t total = 0;
        AF_CHECK(h->s->fab->ops->allgatherv_i32(h->s->fab, h->fenced_mine, (size_t)nf, h->fenced,
                                                (size_t)B, &total));
        if ((int64_t)total != w[SUM_FENCED]) {
            af_error_set("halo: %zu fenced blocks gathered, %lld counted", total,
                         (long long)w[SUM_FENCED]);
            return AF_ERR_INTERNAL;
        }
        af_sort_i32(h->fenced, total);
        h->n_fenced = (int64_t)total;
        h->s->mine.count[CNT_HALO_BYTES] +=
            h->s->world.size > 1 ? (int64_t)(sizeof(int32_t) * (size_t)nf) : 0;
    }
    return AF_OK;
}

/* The published slots' blocks, in the occupied-slot list's order, into pub_blocks. */
static af_result_t list_published(af_halo_t *h)
{
    h->n_pub = 0;
    for (int i = 0; i < h->s->k->n_occ; ++i) {
        int s = h->s->k->occ[i];
        if (published(h, s)) {
            if (h->n_pub == h->blocks) {
                af_error_set("halo: more than %lld published slots", (long long)h->blocks);
                return AF_ERR_INTERNAL;
            }
            h->pub_blocks[h->n_pub++] = h->s->k->slot_block[s];
        }
    }
    return AF_OK;
}

/* After the pack into the host exchange xchg_cur (or its copy from the device) and the list of
 * published slots: the neighbour edges when the vector was not combined whole, the figures
 * (this rank's part given by `mine`, else taken from the exchange), the straggler words, and
 * the result back into the device mirror when the compute reads one. */
static af_result_t complete(af_halo_t *h, int combined, const af_step_out_t *mine)
{
    uint64_t *x = h->xchg_cur;
    if (!combined) {
        AF_CHECK(neighbour_edges(h, x));
        size_t tail = h->xlen - af_xchg_len((int)h->s->B);
        if (tail > 0) {
            AF_CHECK(
                h->s->fab->ops->allreduce_max_u64(h->s->fab, x + af_xchg_len((int)h->s->B), tail));
        }
    }
    if (mine != NULL) {
        AF_CHECK(figures(h, &mine->mass, &mine->energy, mine->leaked, mine->n_fenced));
    } else {
        af_rsum_t mass;
        af_rsum_t energy;
        int64_t leaked = 0;
        int64_t nf = 0;
        my_figures(h, x, &mass, &energy, &leaked, &nf);
        AF_CHECK(figures(h, &mass, &energy, leaked, nf));
    }
    const size_t at = 5 * (size_t)h->s->B + AF_XCHG_GLOBAL;
    if (h->s->wl->global_word != NULL) {
        x[at] = af_bits(h->global_now);
    }
    if (!combined && h->dxchg_cur != NULL) {
        return af_buf_copy(h->dxchg_cur, AF_MEM_DEVICE, x, AF_MEM_HOST, sizeof(uint64_t) * h->xlen);
    }
    if (h->s->wl->global_word != NULL && h->dxchg_cur != NULL) {
        return af_buf_copy(h->dxchg_cur + at, AF_MEM_DEVICE, x + at, AF_MEM_HOST, sizeof x[at]);
    }
    return AF_OK;
}

af_result_t af_halo_after_graph(af_halo_t *h, uint64_t stop_flag, int combined)
{
    h->stop_mine = (int64_t)stop_flag;
    AF_CHECK(list_published(h));
    return complete(h, combined, NULL);
}

af_result_t af_exchange_fused(af_halo_t *h, const af_step_out_t *mine)
{
    if (h->dxchg_cur != NULL || mine->pub != h->pub_blocks || mine->fenced != h->fenced_mine) {
        af_error_set("halo: a fused step's figures must come in the halo's own lists, with a "
                     "host exchange");
        return AF_ERR_INTERNAL;
    }
    const size_t head = af_xchg_len((int)h->s->B);
    const size_t tail = h->xlen - head;
    h->stop_mine = af_stop_flag() ? 1 : 0;
    if (tail > 0) {
        memcpy(h->xchg_cur + head, h->dev_words, tail * sizeof(uint64_t));
    }
    h->n_pub = mine->n_pub;
    return complete(h, 0, mine);
}

af_result_t af_exchange(af_halo_t *h)
{
    const size_t len = h->xlen;
    const size_t head = af_xchg_len((int)h->s->B);
    const size_t tail = len - head;
    const uint64_t flag = af_stop_flag() ? 1 : 0;
    h->stop_mine = (int64_t)flag;
    if (h->dxchg_cur == NULL) {
        af_kernels_t *k = h->s->k;
        AF_CHECK(k->ops->pack_owned != NULL ? k->ops->pack_owned(k, h->xchg_cur)
                                            : k->ops->pack(k, h->xchg_cur));
        if (tail > 0) {
            memcpy(h->xchg_cur + head, h->dev_words, tail * sizeof(uint64_t));
        }
        AF_CHECK(list_published(h));
        return complete(h, 0, NULL);
    }
    /* Device-resident exchange: pack there, set the flag and the straggler words there, and
     * combine it whole over nccl on the device, or bring it to the host for the neighbour
     * halo over mpi (and back, in complete()). */
    AF_CHECK(h->s->k->ops->pack(h->s->k, h->dxchg_cur));
    AF_CHECK(af_buf_copy(h->dxchg_cur + 5 * h->s->B + AF_XCHG_STOP, AF_MEM_DEVICE, &flag,
                         AF_MEM_HOST, sizeof flag));
    if (tail > 0) {
        AF_CHECK(af_buf_copy(h->dxchg_cur + head, AF_MEM_DEVICE, h->dev_words, AF_MEM_HOST,
                             tail * sizeof(uint64_t)));
    }
    if (h->s->nccl != NULL) {
        AF_CHECK(h->s->nccl->ops->allreduce_max_u64(h->s->nccl, h->dxchg_cur, len));
    }
    AF_CHECK(
        af_buf_copy(h->xchg_cur, AF_MEM_HOST, h->dxchg_cur, AF_MEM_DEVICE, len * sizeof(uint64_t)));
    AF_CHECK(list_published(h));
    return complete(h, h->s->nccl != NULL, NULL);
}

af_result_t af_exchange_swap(af_halo_t *h)
{
    uint64_t *t = h->xchg_prev;
    h->xchg_prev = h->xchg_cur;
    h->xchg_cur = t;
    if (h->dxchg_prev != NULL && h->pinned) {
        /* The step graph reads and writes these two buffers, wherever the step is. */
        return af_buf_copy(h->dxchg_prev, AF_MEM_DEVICE, h->dxchg_cur, AF_MEM_DEVICE,
                           sizeof(uint64_t) * h->xlen);
    }
    t = h->dxchg_prev;
    h->dxchg_prev = h->dxchg_cur;
    h->dxchg_cur = t;
    return AF_OK;
}
