/* agefence exchange: what crosses ranks each step — the committed state's edges, diagnostics and
 * status words, each published block's neighbour edges, and the fleet's figures (exact sums of
 * mass and energy, leaked values, the fenced blocks, the stop flag). The halo owns its buffers
 * and is handed the shard at start-up (af_halo_init); recovery borrows its buffers and its
 * point-to-point batches for the replicas' read-sets. */
#ifndef AF_HALO_H
#define AF_HALO_H

#include <stddef.h>
#include <stdint.h>

#include "../plan/shard.h"

typedef struct af_halo {
    af_shard_t *s; /* the shard it exchanges (not owned) */
    /* Exchange words: af_xchg_len(B), then (straggler detection on) one word per device, its
     * compute time per block in the step as a double's bit pattern (0 from other ranks). */
    size_t xlen;
    uint64_t *xchg_prev; /* exchange of the committed state the next compute reads */
    uint64_t *xchg_cur;  /* exchange being built after this step's commit */
    /* With the cuda backend the kernels read and write the exchange in device memory: these
     * mirror xchg_prev/xchg_cur there (NULL with cpu). The host copies stay the coordinator's
     * view (status words, diagnostics, flags). */
    uint64_t *dxchg_prev;
    uint64_t *dxchg_cur;
    /* While the backend's step graph is on, the device buffers stay where the graph was
     * captured: a swap copies dxchg_cur into dxchg_prev instead of exchanging the pointers. */
    int pinned;
    uint64_t *dev_words; /* devices: this rank's per-block compute times, for the exchange */
    /* Buffers for the neighbour edges of the blocks a rank can hold (blocks = min(B, local
     * slots)), counts and offsets per rank, the fenced blocks of this rank and (sorted) of every
     * rank, and the figures' words. */
    int64_t blocks;
    uint64_t *send; /* 4 x blocks words: (index, bits) pairs by peer */
    uint64_t *recv;
    int64_t *count;  /* ranks */
    int64_t *count2; /* ranks */
    int64_t *at;     /* ranks */
    af_p2p_t *p2p;   /* 2 x ranks */
    int32_t *fenced_mine;
    /* The blocks the local slots published in the last exchange (blocks at most), in the
     * order of the kernels' occupied-slot list, not ascending: what the halo, the figures and
     * the replicas' read-sets iterate, not the shard (nor its per-slot arrays). */
    int32_t *pub_blocks;
    int64_t n_pub;
    int32_t *fenced; /* B */
    int64_t n_fenced;
    int64_t *sum_words;
    /* What the last exchange found over the fleet: the committed state's mass and energy
     * (exact sums, the same bits on any number of ranks), its NaN/Inf values, and whether a
     * rank was asked to stop (stop_mine: this rank's flag for the next exchange). */
    double mass_now, energy_now;
    double global_now; /* the global word of a globally coupled workload (AF_XCHG_GLOBAL) */
    int64_t leaked_now;
    int64_t stop_mine;
    int stop_now;
} af_halo_t;

/* Allocates the halo's buffers for shard s (start-up only). */
af_result_t af_halo_init(af_halo_t *h, af_shard_t *s);
void af_halo_destroy(af_halo_t *h);
/* Packs the committed state's edges, diagnostics and status into xchg_cur and completes it:
 * each published block's neighbours' edges from their ranks (or, over nccl, the whole vector
 * combined on the device), and the fleet's figures (mass_now, energy_now, leaked_now,
 * stop_now, the sorted fenced list). Collective. */
af_result_t af_exchange(af_halo_t *h);
/* The same completion after the backend's step graph packed xchg_cur itself (and, where
 * `combined`, combined it over the device fabric); stop_flag is the flag word the graph was
 * given. Collective. */
af_result_t af_halo_after_graph(af_halo_t *h, uint64_t stop_flag, int combined);
/* The same completion after the backend's fused step (ops->step) packed xchg_cur itself and
 * handed back this rank's part of the figures and its published and fenced slots, in the
 * halo's own pub_blocks and fenced_mine (host exchange only). Collective. */
af_result_t af_exchange_fused(af_halo_t *h, const af_step_out_t *mine);
/* at[q] = the items of ranks before q in count[] (where q's items start in a buffer cut by
 * rank); returns the total. */
int64_t af_halo_offsets(af_halo_t *h, const int64_t *count);
/* Posts, to every rank q, send's cs[q] items (in rank order) and receives cr[q] items from
 * it into recv (in rank order), items of `words` words; *got is the items received, and the
 * bytes sent count in the shard's mine.count[counter]. One batch of point-to-point transfers
 * (not collective). */
af_result_t af_halo_post(af_halo_t *h, uint64_t *send, const int64_t *cs, uint64_t *recv,
                         const int64_t *cr, int words, int64_t *got, int counter);
/* xchg_prev <-> xchg_cur, and their device mirrors (a copy while pinned). */
af_result_t af_exchange_swap(af_halo_t *h);

#endif
