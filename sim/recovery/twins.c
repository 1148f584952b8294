/* agefence recovery, DMR twins: the blocks of FADING units (and declared stragglers, and sampled
 * blocks) are computed twice, on the primary's slot and on a twin slot of a HEALTHY unit; the
 * primary's rank compares the two bit for bit and adopts or fences (af_dmr_begin, af_dmr_end).
 * Calls xfer.c only. */
#include <string.h>

#include "../../common/af_alloc.h"
#include "../../common/percentile.h"
#include "../io/backend.h"
#include "../oracle/reference.h"
#include "recovery_internal.h"

/* ---- DMR twins --------------------------------------------------------------------------------
 */

/* Items are blocks with a twin: the primary's committed state goes to the twin before the
 * compute, and the twin's result comes back after it. */
static void twin_in_ranks(af_recovery_t *r, void *ctx, int64_t i, int *src, int *dst)
{
    (void)ctx;
    int64_t b = r->xfer.items[i];
    *src = af_slot_rank(r, r->s->pl.block_slot[b]);
    *dst = af_slot_rank(r, r->tw.twin[b]);
}

static af_result_t twin_in_write(af_recovery_t *r, void *ctx, int64_t i, const double *buf)
{
    (void)ctx;
    return r->s->k->ops->write_slot(r->s->k, af_local_slot(r, r->tw.twin[r->xfer.items[i]]), buf);
}

static af_result_t twin_in_read(af_recovery_t *r, void *ctx, int64_t i, double *buf)
{
    (void)ctx;
    return r->s->k->ops->read_slot(r->s->k, af_local_slot(r, r->s->pl.block_slot[r->xfer.items[i]]),
                                   buf);
}

static af_result_t twin_in_local(af_recovery_t *r, void *ctx, int64_t i)
{
    (void)ctx;
    int64_t b = r->xfer.items[i];
    return r->s->k->ops->copy_slot(r->s->k, af_local_slot(r, r->s->pl.block_slot[b]),
                                   af_local_slot(r, r->tw.twin[b]));
}

static int twin_in_slots(af_recovery_t *r, void *ctx, int64_t i, int64_t *from, int64_t *to)
{
    (void)ctx;
    int64_t b = r->xfer.items[i];
    *from = r->s->pl.block_slot[b];
    *to = r->tw.twin[b];
    return 0;
}

static void twin_in_touches(af_recovery_t *r, void *ctx, int64_t i, int64_t *reads, int64_t *writes)
{
    twin_in_slots(r, ctx, i, reads, writes);
}

/* A twin computes its primary's block: the read-set goes from the primary's rank. */
static int twin_in_carries(af_recovery_t *r, void *ctx, int64_t i, int64_t *block)
{
    (void)ctx;
    *block = r->xfer.items[i];
    return CARRY_XCHG;
}

/* A twin's home: the least-loaded HEALTHY unit with room (own device first); failing that,
 * another FADING unit than the primary's, whose independent corruption draws still make a
 * mismatch visible. */
static int32_t twin_target(af_recovery_t *r, int64_t primary_slot)
{
    return af_coord_target_excluding(&r->s->pl, r->s->unit_state,
                                     af_slot_device(&r->s->pl, primary_slot), 1,
                                     af_slot_unit(&r->s->pl, primary_slot));
}

af_result_t af_dmr_begin(af_recovery_t *r, const af_move_t *only, int64_t n_only,
                         const int32_t *fade, int64_t n_fade, const int32_t *strag, int64_t n_strag,
                         int64_t *n_twins)
{
    int64_t n = 0;
    int64_t candidates = n_only;
    if (only == NULL) {
        /* The main pass: the blocks of the FADING units (the plan's list, on every rank), in
         * increasing block order, as a pass over every block would meet them, so twins land
         * where they always did. twin[] is only read for these blocks (containment) and for
         * the retried ones, which the retry pass resets, so the rest keep stale entries. */
        candidates = 0;
        const int dmr = (af_detect_flags(r->s->cfg.detect) & AF_DET_DMR) != 0;
        for (int64_t i = 0; dmr && i < n_fade + n_strag; ++i) {
            /* The model's FADING units, then the declared stragglers (FADING to the
             * coordinator) the model does not call FADING since: a unit that is both lists its
             * blocks once, so these candidates are at most the blocks, and with the sampled
             * turn's at most twice the blocks (items' room). */
            int64_t u = i < n_fade ? fade[i] : strag[i - n_fade];
            if (i >= n_fade) {
                int64_t at = af_lower_bound_i32(fade, n_fade, u);
                if (at < n_fade && fade[at] == u) {
                    continue;
                }
            }
            for (int64_t k = 0; k < r->s->C; ++k) {
                int32_t b = r->s->pl.slot_block[u * r->s->C + k];
                if (b >= 0) {
                    r->xfer.items[candidates++] = b;
                }
            }
        }
        if (r->det.sample_period > 0) {
            /* detect = sampled: this step's turn of the rotation, whatever their units. */
            int64_t t = (int64_t)((uint64_t)r->s->tick % (uint64_t)r->det.sample_period);
            for (int64_t j = r->det.sample_start[t]; j < r->det.sample_start[t + 1]; ++j) {
                r->xfer.items[candidates++] = r->det.sample_order[j];
            }
        }
        af_sort_i32(r->xfer.items, (size_t)candidates);
        int64_t kept = 0;
        for (int64_t i = 0; i < candidates; ++i) {
            if (kept == 0 || r->xfer.items[kept - 1] != r->xfer.items[i]) {
                r->xfer.items[kept++] = r->xfer.items[i];
            }
        }
        candidates = kept;
    }
    for (int64_t i = 0; i < candidates; ++i) {
        int64_t b = only != NULL ? only[i].block : r->xfer.items[i];
        r->tw.twin[b] = -1;
        int64_t g = r->s->pl.block_slot[b];
        int sampled = only == NULL && r->det.sample_period > 0 &&
                      af_sample_turn(&r->det, r->s->cfg.seed, b) ==
                          (int64_t)((uint64_t)r->s->tick % (uint64_t)r->det.sample_period);
        if (r->s->unit_state[af_slot_unit(&r->s->pl, g)] != AF_FADING && !sampled) {
            continue;
        }
        int32_t t = twin_target(r, g);
        if (t < 0) {
            continue; /* no room at all: this block runs without its twin */
        }
        af_placement_reserve(&r->s->pl, t);
        r->tw.twin[b] = t;
        r->xfer.items[n++] = (int32_t)b;
    }
    static const xfer_ops_t ops = {twin_in_ranks, twin_in_read,    twin_in_write,  twin_in_local,
                                   twin_in_slots, twin_in_touches, twin_in_carries};
    AF_CHECK(af_transfer(r, n, &ops, NULL));
    for (int64_t i = 0; i < n; ++i) {
        int64_t t = r->tw.twin[r->xfer.items[i]];
        if (af_slot_is_local(&r->s->pl, t)) {
            int s = af_local_slot(r, t);
            int64_t u = af_slot_unit(&r->s->pl, t);
            af_kernels_set_block(r->s->k, s, (int32_t)r->xfer.items[i]);
            r->s->k->slot_mode[s] = AF_MODE_SHADOW;
            r->s->k->slot_p[s] = af_unit_corrupt_p(r, u);
        }
    }
    *n_twins = n;
    return r->s->k->ops->upload_control(r->s->k);
}

static void twin_out_ranks(af_recovery_t *r, void *ctx, int64_t i, int *src, int *dst)
{
    twin_in_ranks(r, ctx, i, dst, src);
}

static af_result_t twin_out_read(af_recovery_t *r, void *ctx, int64_t i, double *buf)
{
    (void)ctx;
    return r->s->k->ops->read_next(r->s->k, af_local_slot(r, r->tw.twin[r->xfer.items[i]]), buf);
}

/* The simulator's truth about an adopted twin result (no detector reads it): a twin on a
 * HEALTHY unit corrupts only when the unit is silent, and what it injected is now committed.
 * The draws are the kernels' own (af_inject under the twin's key), so they are counted here
 * without the twin's rank; an element's harm is judged against the primary's value where the
 * primary drew no corruption there, and counted harmful where both did (the clean value is
 * then nobody's). */
static void count_twin_corruption(af_recovery_t *r, int64_t b, int64_t tu, int s,
                                  const double *twin)
{
    double pt = af_aging_silent(&r->s->cfg, tu) ? r->s->cfg.silent_p : 0.0;
    if (!(pt > 0.0)) {
        return;
    }
    const af_corrupt_mix_t mix = r->s->k->desc.mix;
    const uint64_t seed = (uint64_t)r->s->cfg.seed;
    const uint64_t key = r->tw.compute_key; /* the pass whose twins are being compared */
    const double ps = r->s->k->slot_p[s];
    int64_t injected = 0;
    int64_t harmful = 0;
    for (int64_t i = 0; i < r->s->T; ++i) {
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
        double clean = r->tw.twin_buf[i];
        double err = twin[i] - clean;
        double mag = clean < 0.0 ? -clean : clean;
        harmful += af_nonfinite(twin[i]) || (err < 0.0 ? -err : err) > mix.harm_rel * mag;
    }
    r->s->mine.count[CNT_INJECTED] += injected;
    r->s->mine.count[CNT_HARMFUL] += harmful;
    r->s->mine.count[CNT_SDC] += injected;
    r->s->mine.count[CNT_SDC_HARMFUL] += harmful;
}

/* The primary's rank compares its result with the twin's, bit for bit. On a mismatch it adopts
 * the twin's result when the twin ran on a HEALTHY unit, its result is finite and the primary's
 * unit is not HEALTHY, and fences the block otherwise (two FADING units, or two HEALTHY ones,
 * disagree: neither is trusted). The outcome goes to dmr_mark[].
 */
static af_result_t twin_out_write(af_recovery_t *r, void *ctx, int64_t i, const double *buf)
{
    (void)ctx;
    int64_t b = r->xfer.items[i];
    int s = af_local_slot(r, r->s->pl.block_slot[b]);
    AF_CHECK(r->s->k->ops->read_next(r->s->k, s, r->tw.twin_buf));
    if (memcmp(buf, r->tw.twin_buf, sizeof(double) * (size_t)r->s->T) != 0) {
        int64_t tu = af_slot_unit(&r->s->pl, r->tw.twin[b]);
        int twin_finite = 1;
        for (int64_t j = 0; j < r->s->T; ++j) {
            twin_finite &= !af_nonfinite(buf[j]);
        }
        /* A twin's non-finite result fails containment like any other: never adopted. Nor is
         * a twin's result adopted over a HEALTHY primary's (a sampled check): two units that
         * look alike disagree, and neither is trusted. */
        int64_t pu = af_slot_unit(&r->s->pl, r->s->pl.block_slot[b]);
        if (r->s->unit_state[tu] == AF_HEALTHY && twin_finite &&
            r->s->unit_state[pu] != AF_HEALTHY) {
            AF_CHECK(r->s->k->ops->write_next(r->s->k, s, buf));
            r->tw.dmr_mark[s] = AF_DMR_ADOPTED;
            count_twin_corruption(r, b, tu, s, buf);
        } else {
            r->tw.dmr_mark[s] = AF_DMR_FENCED;
        }
    }
    return AF_OK;
}

af_result_t af_dmr_end(af_recovery_t *r, int64_t n)
{
    static const xfer_ops_t ops = {twin_out_ranks, twin_out_read, twin_out_write, NULL, NULL,
                                   NULL,           NULL};
    AF_CHECK(af_transfer(r, n, &ops, NULL));
    for (int64_t i = 0; i < n; ++i) {
        int64_t t = r->tw.twin[r->xfer.items[i]];
        af_placement_release(&r->s->pl, t);
        af_slot_control(r, t);
    }
    return r->s->k->ops->upload_control(r->s->k);
}
