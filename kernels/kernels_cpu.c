/* agefence CPU compute backend: the reference implementation of the masked step, and the one
 * CI runs. Every buffer is allocated in create(); the step functions only index. */
#include "kernels.h"

#include "arith_cpu.h"
#include "cpu_block.h"
#include "pool.h"

#include <stdlib.h>
#include <string.h>

#include "../common/af_alloc.h"

#include <stdio.h>
#include <unistd.h>

typedef struct af_cpu {
    /* The state lives in entries of a pool (kernels/pool.h: desc.pool_slots of them, or one
     * per slot), so the memory follows the occupied slots, not the static grid. */
    af_pool_t pool;
    double *state;   /* 2 x pool x T: every entry's buffer 0, then every entry's buffer 1, so
                        a step over entries of one parity reads one long run of memory and
                        writes another (an entry's two buffers side by side cut every run to
                        one block and halved the bandwidth: docs/performance.md) */
    uint8_t *parity; /* per entry: which buffer is committed */
    uint8_t *res_nz; /* per entry: 0 when its slot's four results are all 0 (1: maybe not) */
    double *diag;    /* pool x 2 x 3: (mass, energy, non-finite count) of each buffer */
    int fused;       /* 1: the one-pass step (AF_CPU_KERNEL_FUSED), else the two-pass one */
    /* The scratch of an attention row with injection: its scores, then its weights. */
    double attn_st[AF_ATTN_MAX_TOKENS];
    char path[112]; /* what the hot loop runs, for k->path */
} af_cpu_t;

static inline double *cpu_buf(const af_kernels_t *k, const af_cpu_t *c, int32_t e, int which)
{
    return c->state + ((size_t)which * (size_t)c->pool.cap + (size_t)e) * (size_t)k->desc.block_len;
}

static inline double *cpu_diag(const af_cpu_t *c, int32_t e, int which)
{
    return c->diag + ((size_t)e * 2 + (size_t)which) * 3;
}

/* The entry holding slot s's state, -1 when it holds none. */
static inline int32_t cpu_ent(const af_cpu_t *c, int s)
{
    return af_pool_entry(&c->pool, s);
}

/* The entry of a slot about to be written: its own, or one taken from the pool (its committed
 * buffer is then buffer 0). -1, with the error set, when the pool has none left: a break of
 * the two-buffers-a-block bound (af_shard_pool_slots), never a run's ordinary outcome. */
static int32_t cpu_take(af_kernels_t *k, af_cpu_t *c, int s)
{
    int taken = 0;
    int32_t e = af_pool_take(&c->pool, s, &taken);
    if (e < 0) {
        af_error_set("cpu backend: local slot %d needs a buffer and all %d of the shard's pool "
                     "are held (%d slots occupied)",
                     s, c->pool.cap, k->n_occ);
        return -1;
    }
    if (taken) {
        c->parity[e] = 0;
        c->res_nz[e] = 1; /* its slot's results are 0 (emptied slots' are zeroed): 1 is safe */
        k->pool_used++;
    }
    return e;
}

/* The entry of a slot about to be read: -1, with the error set, when no write ever gave it
 * state (a read of memory the run never wrote). */
static int32_t cpu_held(const af_kernels_t *k, const af_cpu_t *c, int s)
{
    int32_t e = cpu_ent(c, s);
    if (e < 0) {
        af_error_set("cpu backend: local slot %d (block %d) holds no state: nothing was ever "
                     "written to it",
                     s, k->slot_block[s]);
    }
    return e;
}

static void cpu_release_slot(af_kernels_t *k, int s)
{
    af_cpu_t *c = k->impl;
    af_pool_release(&c->pool, s);
}

static void cpu_settle(af_kernels_t *k)
{
    af_cpu_t *c = k->impl;
    k->pool_used -= af_pool_settle(&c->pool, k->slot_block);
}

/* The vector width the loader picked for the AF_HOT loops. */
static const char *cpu_isa(void)
{
#if defined(AF_CLONES)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") ? "avx2" : "sse2";
#elif defined(__x86_64__)
    return "sse2";
#else
    return "portable";
#endif
}

static void cpu_destroy(af_kernels_t *k)
{
    if (k == NULL) {
        return;
    }
    af_cpu_t *c = k->impl;
    if (c != NULL) {
        af_free(c->state);
        af_free(c->parity);
        af_free(c->res_nz);
        af_free(c->diag);
        af_pool_free(&c->pool);
        af_free(c);
    }
    af_free(k->slot_block);
    af_free(k->slot_mode);
    af_free(k->slot_p);
    af_free(k->commit);
    af_free(k->select);
    af_free(k->nonfinite);
    af_free(k->injected);
    af_free(k->harmful);
    af_free(k->abft);
    af_kernels_occ_free(k);
    af_free(k);
}

/* What an entry holds (two buffers of T doubles, parity, res_nz, 6 diagnostics) and what a slot
 * does (the control arrays: block, mode, p, commit, select; the four result counters), beside the
 * occupied-slot list and the pool's lists. */
static size_t cpu_entry_bytes(const af_shard_desc_t *desc)
{
    return 2 * (size_t)desc->block_len * sizeof(double) + 2 + 6 * sizeof(double);
}

static size_t cpu_slot_bytes(const af_shard_desc_t *desc)
{
    return sizeof(int32_t) + 1 + sizeof(double) + 1 + 1 + 4 * sizeof(int32_t);
}

static size_t cpu_host_bytes(const af_shard_desc_t *desc)
{
    /* The backend's own struct (with the attention path's scratch); the pool's entries and
     * its lists; the slots. */
    size_t n = (size_t)desc->n_slots;
    size_t pool = (size_t)af_shard_pool_cap(desc);
    return sizeof(af_kernels_t) + sizeof(af_cpu_t) + pool * cpu_entry_bytes(desc) +
           af_pool_bytes(desc->n_slots, (int64_t)pool) + n * cpu_slot_bytes(desc) +
           af_kernels_occ_bytes(desc);
}

static af_result_t cpu_create(const af_shard_desc_t *desc, af_kernels_t **out)
{
    af_result_t rc = AF_OK;
    size_t n = (size_t)desc->n_slots;
    af_kernels_t *k = af_alloc(sizeof *k);
    AF_REQUIRE_GOTO(k != NULL, AF_ERR_NOMEM, rc, fail);
    k->ops = &af_kernels_cpu;
    k->desc = *desc;
    af_cpu_t *c = af_alloc(sizeof *c);
    k->impl = c;
    AF_REQUIRE_GOTO(c != NULL, AF_ERR_NOMEM, rc, fail);
    AF_CHECK_GOTO(af_pool_init(&c->pool, desc->n_slots, af_shard_pool_cap(desc)), rc, fail);
    k->pool_cap = c->pool.entry != NULL ? c->pool.cap : 0;
    const size_t pool = (size_t)c->pool.cap;
    size_t state_bytes = pool * 2 * (size_t)desc->block_len * sizeof(double);
    c->state = af_alloc(state_bytes);
    c->parity = af_alloc(pool);
    c->res_nz = af_alloc(pool);
    c->diag = af_alloc(pool * 6 * sizeof(double));
    k->slot_block = af_alloc(n * sizeof(int32_t));
    k->slot_mode = af_alloc(n);
    k->slot_p = af_alloc(n * sizeof(double));
    k->commit = af_alloc(n);
    k->select = af_alloc(n);
    k->nonfinite = af_alloc(n * sizeof(int32_t));
    k->injected = af_alloc(n * sizeof(int32_t));
    k->harmful = af_alloc(n * sizeof(int32_t));
    k->abft = af_alloc(n * sizeof(int32_t));
    AF_REQUIRE_GOTO(c->state && c->parity && c->res_nz && c->diag && k->slot_block &&
                        k->slot_mode && k->slot_p && k->commit && k->select && k->nonfinite &&
                        k->injected && k->harmful && k->abft,
                    AF_ERR_NOMEM, rc, fail);
    AF_CHECK_GOTO(af_kernels_occ_alloc(k), rc, fail);
    for (size_t s = 0; s < n; ++s) {
        k->slot_block[s] = -1;
    }
    k->bytes = pool * cpu_entry_bytes(desc) + af_pool_bytes(desc->n_slots, (int64_t)pool) +
               n * cpu_slot_bytes(desc) + af_kernels_occ_bytes(desc);
    /* The fused step needs whole groups of four cells and a first and a last group apart; the
     * two-pass step takes any length. */
    const int T = desc->block_len;
    c->fused = desc->cpu_kernel == AF_CPU_KERNEL_FUSED && T >= 8 && T % 4 == 0;
    snprintf(c->path, sizeof c->path, "%s %s%s", cpu_isa(),
             c->fused ? "one pass (backend.cpu_kernel = fused)"
             : desc->cpu_kernel == AF_CPU_KERNEL_FUSED
                 ? "two passes (fused needs blocks of 4k cells)"
                 : "two passes",
             T <= AF_LANES && T >= 8 && T % 4 == 0 && !c->fused
                 ? "; one for blocks of 8-32 cells in steps without injection"
                 : "");
    if (desc->workload == AF_WORKLOAD_ATTENTION) {
        snprintf(c->path, sizeof c->path, "attention %s %s", cpu_isa(),
                 desc->attn.tokens % 8 == 0
                     ? "rows of 8 (scalar rows where a fault is injected)"
                     : "scalar rows (the vector path needs a multiple of 8 tokens)");
    }
    k->path = c->path;
    *out = k;
    return AF_OK;
fail:
    af_error_set("cpu backend: cannot allocate the shard (%d slots of %d cells)", desc->n_slots,
                 desc->block_len);
    cpu_destroy(k);
    return rc;
}

static af_result_t cpu_upload_control(af_kernels_t *k)
{
    (void)k; /* the host views are the live arrays */
    return AF_OK;
}

static af_result_t cpu_write_slot(af_kernels_t *k, int slot, const double *host)
{
    af_cpu_t *c = k->impl;
    int32_t e = cpu_take(k, c, slot);
    if (e < 0) {
        return AF_ERR_NOMEM;
    }
    double *dst = cpu_buf(k, c, e, c->parity[e]);
    memcpy(dst, host, sizeof(double) * (size_t)k->desc.block_len);
    af_cpu_fill_diag(dst, k->desc.block_len, cpu_diag(c, e, c->parity[e]));
    return AF_OK;
}

static af_result_t cpu_read_slot(af_kernels_t *k, int slot, double *host)
{
    af_cpu_t *c = k->impl;
    int32_t e = cpu_held(k, c, slot);
    if (e < 0) {
        return AF_ERR_INTERNAL;
    }
    memcpy(host, cpu_buf(k, c, e, c->parity[e]), sizeof(double) * (size_t)k->desc.block_len);
    return AF_OK;
}

/* Whether a slot publishes its block: occupied, and HEALTHY or FADING (a DEAD unit's and a DMR
 * twin's results are never published). */
static inline int cpu_published(const af_kernels_t *k, int s)
{
    return k->slot_block[s] >= 0 && k->slot_mode[s] != AF_MODE_DEAD &&
           k->slot_mode[s] != AF_MODE_SHADOW;
}

/* The entries of block b in the exchange, from its slot's committed buffer u and diagnostics
 * d: its edges, mass, energy and status word (bit 0: commit is 0, the step's result was
 * fenced; bits 1..: the committed buffer's NaN/Inf count). */
static inline void cpu_pack_one(uint64_t *xchg, size_t B, size_t b, int T, const double *u,
                                const double *d, uint8_t commit)
{
    xchg[2 * b] = af_bits(u[0]);
    xchg[2 * b + 1] = af_bits(u[T - 1]);
    xchg[2 * B + b] = af_bits(d[0]);
    xchg[3 * B + b] = af_bits(d[1]);
    xchg[4 * B + b] = (commit ? 0U : 1U) | ((uint64_t)d[2] << 1);
}

/* The entries of every published slot's block. */
static af_result_t cpu_pack_slots(af_kernels_t *k, uint64_t *xchg)
{
    af_cpu_t *c = k->impl;
    for (int i = 0; i < k->n_occ; ++i) {
        int s = k->occ[i];
        if (!cpu_published(k, s)) {
            continue;
        }
        int32_t e = cpu_held(k, c, s);
        if (e < 0) {
            return AF_ERR_INTERNAL;
        }
        cpu_pack_one(xchg, (size_t)k->desc.blocks, (size_t)k->slot_block[s], k->desc.block_len,
                     cpu_buf(k, c, e, c->parity[e]), cpu_diag(c, e, c->parity[e]), k->commit[s]);
    }
    return AF_OK;
}

static af_result_t cpu_pack(af_kernels_t *k, uint64_t *xchg)
{
    memset(xchg, 0, sizeof(uint64_t) * af_xchg_len(k->desc.blocks));
    return cpu_pack_slots(k, xchg);
}

static af_result_t cpu_pack_owned(af_kernels_t *k, uint64_t *xchg)
{
    return cpu_pack_slots(k, xchg);
}

/* One attention block's step: without injection the vector path for blocks of a multiple of 8
 * tokens (its output checksum only with check: desc.abft), else af_attn_row row by row (with
 * injection keyed as every backend keys it).
 * Returns the ABFT verdict (1: every row's weights sum to 1, its outputs lie in [-1, 1] and, on
 * the row path or with check, its output checksum holds). */
static int cpu_attn_block(af_cpu_t *c, const double *u, double *un, const af_attn_params_t *p,
                          double g, int check, double prob, uint64_t seed, uint64_t key,
                          uint64_t block, af_corrupt_mix_t mix, int *inj, int *harm)
{
    int ok = 1;
    *inj = 0;
    *harm = 0;
    if (prob <= 0.0) {
        af_attn_block_vec(u, un, p, g, check, &ok);
        return ok;
    }
    for (int i = 0; i < p->tokens; ++i) {
        int ri = 0;
        int rh = 0;
        int row_ok = 1;
        af_attn_row(u, un, i, g, *p, prob, seed, key, block, mix, c->attn_st, &ri, &rh, &row_ok);
        *inj += ri;
        *harm += rh;
        ok &= row_ok;
    }
    return ok;
}

#if defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__
#error "kernels_cpu.c counts NaN/Inf with v - v != 0: never build it with -ffinite-math-only"
#endif

/* A slot's results of one compute (kernels.h: nonfinite, injected, harmful, abft). */
typedef struct cpu_res {
    int32_t nonfinite, injected, harmful, abft;
} cpu_res_t;

/* One occupied, computed slot's masked step: entry e's committed buffer and the block's
 * read-set from xchg into its other buffer, with injection where slot_p > 0 (not `unmasked`),
 * then its diagnostics; the slot's results into *res (all 0 when `unmasked`). */
static void cpu_slot_compute(af_kernels_t *k, af_cpu_t *c, int s, int32_t e, int b, uint64_t step,
                             const uint64_t *xchg, int unmasked, cpu_res_t *res)
{
    const int B = k->desc.blocks;
    const int T = k->desc.block_len;
    const af_coeffs_t kc = k->desc.coeffs;
    const double *u = cpu_buf(k, c, e, c->parity[e]);
    double *un = cpu_buf(k, c, e, c->parity[e] ^ 1);
    size_t i0 = 0;
    size_t i1 = 0;
    af_wl_read_set(k->desc.workload, B, b, &i0, &i1);
    double ul = af_double(xchg[i0]);
    double ur = af_double(xchg[i1]);
    int mode = k->slot_mode[s];
    double *d = cpu_diag(c, e, c->parity[e] ^ 1);
    memset(res, 0, sizeof *res);
    /* HEALTHY slots inject too when slot_p > 0: a silent unit corrupts with no precursor. */
    int inject = !unmasked && k->slot_p[s] > 0.0;
    if (k->desc.workload == AF_WORKLOAD_ATTENTION) {
        uint64_t key = mode == AF_MODE_SHADOW ? step ^ AF_TWIN_SALT : step;
        int inj = 0;
        int harm = 0;
        int ok =
            cpu_attn_block(c, u, un, &k->desc.attn, ul, k->desc.abft, inject ? k->slot_p[s] : 0.0,
                           k->desc.seed, key, (uint64_t)b, k->desc.mix, &inj, &harm);
        af_cpu_fill_diag(un, T, d);
        if (!unmasked) {
            res->injected = inj;
            res->harmful = harm;
            res->nonfinite = (int32_t)d[2];
            res->abft = k->desc.abft ? !ok : 0;
        }
        return;
    }
    const int short_block = T <= AF_LANES && T >= 8 && T % 4 == 0;
    if (short_block && !inject) {
        /* One pass in registers, whichever cpu_kernel (the same bits). */
        af_cpu_slot_step_short(u, un, T, ul, ur, kc, d);
    } else if (c->fused && !inject) {
        /* One pass: the update with its diagnostics (a corrupting slot's results change after
         * the update, so it takes the two passes below). */
        af_cpu_slot_step(u, un, T, ul, ur, kc, d);
    } else {
        af_block_update(u, un, T, ul, ur, kc);
    }
    if (inject) {
        /* Corrupting outputs: corrupted after the update, before they are counted. */
        uint64_t key = mode == AF_MODE_SHADOW ? step ^ AF_TWIN_SALT : step;
        int inj = 0;
        int harm = 0;
        for (int i = 0; i < T; ++i) {
            int kind = AF_CORRUPT_NONE;
            int h = 0;
            un[i] = af_inject(un[i], k->slot_p[s], k->desc.seed, key, (uint64_t)b, (uint64_t)i,
                              k->desc.mix, &kind, &h);
            inj += kind != AF_CORRUPT_NONE;
            harm += h;
        }
        res->injected = inj;
        res->harmful = harm;
    }
    if ((!c->fused && !short_block) || inject) {
        af_cpu_fill_diag(un, T, d);
    }
    if (!unmasked) {
        res->nonfinite = (int32_t)d[2];
        if (k->desc.abft) {
            const double *od = cpu_diag(c, e, c->parity[e]);
            res->abft =
                !af_abft_consistent(od[0], od[1], d[0], d[1], u[0], u[T - 1], ul, ur, T, kc);
        }
    }
}

/* Stores a slot's results, and whether any is nonzero in its entry's res_nz. */
static inline void cpu_store_res(af_kernels_t *k, af_cpu_t *c, int s, int32_t e,
                                 const cpu_res_t *res)
{
    k->nonfinite[s] = res->nonfinite;
    k->injected[s] = res->injected;
    k->harmful[s] = res->harmful;
    k->abft[s] = res->abft;
    c->res_nz[e] = (res->nonfinite | res->injected | res->harmful | res->abft) != 0;
}

static af_result_t cpu_compute(af_kernels_t *k, uint64_t step, const uint64_t *xchg, int flags)
{
    af_cpu_t *c = k->impl;
    const int unmasked = (flags & AF_COMPUTE_UNMASKED) != 0;
    const int selected = (flags & AF_COMPUTE_SELECTED) != 0;
    /* The masked step visits the occupied slots only: an empty slot computes nothing and its
     * results stay zero (af_kernels_set_block zeroed them when it emptied). The unmasked
     * benchmark variant covers the whole static grid (every slot with a buffer). */
    const int n = unmasked ? k->desc.n_slots : k->n_occ;
    for (int j = 0; j < n; ++j) {
        int s = unmasked ? j : k->occ[j];
        int b = k->slot_block[s];
        if (selected && !k->select[s]) {
            continue; /* a retry round: other slots keep their results and counts */
        }
        k->nonfinite[s] = 0;
        k->injected[s] = 0;
        k->harmful[s] = 0;
        k->abft[s] = 0;
        if (!unmasked && (b < 0 || k->slot_mode[s] == AF_MODE_DEAD)) {
            continue; /* empty or lost: masked out, nothing written */
        }
        int32_t e = cpu_ent(c, s);
        if (e < 0) {
            if (unmasked) {
                continue; /* no memory behind it: nothing to compute */
            }
            return cpu_held(k, c, s) < 0 ? AF_ERR_INTERNAL : AF_OK;
        }
        if (b < 0) {
            b = 0; /* unmasked benchmark variant: empty slots compute with block 0's halo */
        }
        cpu_res_t res;
        cpu_slot_compute(k, c, s, e, b, step, xchg, unmasked, &res);
        cpu_store_res(k, c, s, e, &res);
    }
    return AF_OK;
}

static af_result_t cpu_download_results(af_kernels_t *k)
{
    (void)k;
    return AF_OK;
}

static af_result_t cpu_commit(af_kernels_t *k)
{
    af_cpu_t *c = k->impl;
    /* Only occupied slots hold a block's state; an empty slot's buffers are never read
     * before a copy or a transfer writes its committed buffer. */
    for (int i = 0; i < k->n_occ; ++i) {
        int s = k->occ[i];
        int32_t e = cpu_ent(c, s);
        if (e >= 0) {
            c->parity[e] ^= (uint8_t)(k->commit[s] != 0);
        }
    }
    return AF_OK;
}

/* The fused step (kernels.h, ops->step): per occupied slot, what cpu_compute, the driver's
 * containment rule, cpu_commit and cpu_pack_owned do to it, in that order, before the next
 * slot; the figures are the exact sums the halo would take from the packed entries. */
static af_result_t cpu_step(af_kernels_t *k, uint64_t step, const uint64_t *xchg_in,
                            uint64_t *xchg_out, af_step_out_t *o)
{
    af_cpu_t *c = k->impl;
    const size_t B = (size_t)k->desc.blocks;
    const int T = k->desc.block_len;
    af_rsum_clear(&o->mass);
    af_rsum_clear(&o->energy);
    o->leaked = 0;
    o->n_pub = 0;
    o->n_fenced = 0;
    o->n_notable = 0;
    for (int i = 0; i < k->n_occ; ++i) {
        const int s = k->occ[i];
        const int b = k->slot_block[s];
        const int mode = k->slot_mode[s];
        if (mode == AF_MODE_DEAD) {
            /* Lost: masked out, nothing written, nothing published, results zero. */
            k->nonfinite[s] = k->injected[s] = k->harmful[s] = k->abft[s] = 0;
            k->commit[s] = 0;
            o->committed[s] = 0;
            continue;
        }
        const int32_t e = cpu_ent(c, s);
        if (e < 0) {
            return cpu_held(k, c, s) < 0 ? AF_ERR_INTERNAL : AF_OK;
        }
        cpu_res_t res;
        cpu_slot_compute(k, c, s, e, b, step, xchg_in, 0, &res);
        /* A clean slot whose results are zero already leaves the four arrays untouched: at 8
         * slots a block they are more lines than the block's own state. */
        if (c->res_nz[e] || (res.nonfinite | res.injected | res.harmful | res.abft) != 0) {
            cpu_store_res(k, c, s, e, &res);
        }
        const uint8_t ok = af_commit_decision(b, mode, res.nonfinite, res.abft);
        k->commit[s] = ok;
        o->committed[s] = ok;
        c->parity[e] ^= ok;
        if (mode == AF_MODE_SHADOW) {
            continue; /* a twin's result: computed, never published */
        }
        if (o->n_pub == o->pub_cap) {
            af_error_set("cpu backend: more than %lld published slots", (long long)o->pub_cap);
            return AF_ERR_INTERNAL;
        }
        if (res.injected != 0 || res.nonfinite != 0 || res.abft != 0 || mode == AF_MODE_FADING) {
            o->notable[o->n_notable++] = s;
        }
        const double *u = cpu_buf(k, c, e, c->parity[e]);
        const double *d = cpu_diag(c, e, c->parity[e]);
        cpu_pack_one(xchg_out, B, (size_t)b, T, u, d, ok);
        af_rsum_add(&o->mass, d[0]);
        af_rsum_add(&o->energy, d[1]);
        o->leaked += (int64_t)((uint64_t)d[2]);
        if (!ok) {
            o->fenced[o->n_fenced++] = b;
        }
        o->pub[o->n_pub++] = b;
    }
    return AF_OK;
}

static af_result_t cpu_copy_slot(af_kernels_t *k, int src, int dst)
{
    af_cpu_t *c = k->impl;
    int32_t es = cpu_held(k, c, src);
    if (es < 0) {
        return AF_ERR_INTERNAL;
    }
    int32_t ed = cpu_take(k, c, dst);
    if (ed < 0) {
        return AF_ERR_NOMEM;
    }
    memcpy(cpu_buf(k, c, ed, c->parity[ed]), cpu_buf(k, c, es, c->parity[es]),
           sizeof(double) * (size_t)k->desc.block_len);
    memcpy(cpu_diag(c, ed, c->parity[ed]), cpu_diag(c, es, c->parity[es]), 3 * sizeof(double));
    return AF_OK;
}

static double *cpu_slot_data(af_kernels_t *k, int slot)
{
    af_cpu_t *c = k->impl;
    int32_t e = cpu_take(k, c, slot);
    return e < 0 ? NULL : cpu_buf(k, c, e, c->parity[e]);
}

static af_result_t cpu_read_next(af_kernels_t *k, int slot, double *host)
{
    af_cpu_t *c = k->impl;
    int32_t e = cpu_held(k, c, slot);
    if (e < 0) {
        return AF_ERR_INTERNAL;
    }
    memcpy(host, cpu_buf(k, c, e, c->parity[e] ^ 1), sizeof(double) * (size_t)k->desc.block_len);
    return AF_OK;
}

static af_result_t cpu_write_next(af_kernels_t *k, int slot, const double *host)
{
    af_cpu_t *c = k->impl;
    int32_t e = cpu_held(k, c, slot);
    if (e < 0) {
        return AF_ERR_INTERNAL;
    }
    double *dst = cpu_buf(k, c, e, c->parity[e] ^ 1);
    memcpy(dst, host, sizeof(double) * (size_t)k->desc.block_len);
    af_cpu_fill_diag(dst, k->desc.block_len, cpu_diag(c, e, c->parity[e] ^ 1));
    return AF_OK;
}

static af_result_t cpu_refresh_slot(af_kernels_t *k, int slot)
{
    af_cpu_t *c = k->impl;
    int32_t e = cpu_held(k, c, slot);
    if (e < 0) {
        return AF_ERR_INTERNAL;
    }
    af_cpu_fill_diag(cpu_buf(k, c, e, c->parity[e]), k->desc.block_len,
                     cpu_diag(c, e, c->parity[e]));
    return AF_OK;
}

static af_result_t cpu_poison_slot(af_kernels_t *k, int slot)
{
    af_cpu_t *c = k->impl;
    int32_t e = cpu_ent(c, slot);
    if (e < 0) {
        return AF_OK; /* no memory behind the slot: nothing to lose */
    }
    const uint64_t pattern = 0x7ff8dead0000deadULL; /* a quiet NaN with a recognisable payload */
    for (int w = 0; w < 2; ++w) {
        double *u = cpu_buf(k, c, e, w);
        for (int i = 0; i < k->desc.block_len; ++i) {
            u[i] = af_double(pattern);
        }
        double *d = cpu_diag(c, e, w);
        d[0] = af_double(pattern);
        d[1] = af_double(pattern);
        d[2] = (double)k->desc.block_len;
    }
    return AF_OK;
}

static af_result_t cpu_sync(af_kernels_t *k)
{
    (void)k;
    return AF_OK;
}

static af_result_t cpu_graph_prepare(af_kernels_t *k, const af_graph_io_t *io)
{
    if (io->reduce != NULL) {
        af_error_set("cpu backend: a step graph cannot run the %s fabric's device all-reduce",
                     io->reduce->name);
        return AF_ERR_UNSUPPORTED;
    }
    if (io->xlen != af_xchg_len(k->desc.blocks)) {
        af_error_set("cpu backend: a step graph carries %zu exchange words, not %zu", io->xlen,
                     af_xchg_len(k->desc.blocks));
        return AF_ERR_INTERNAL;
    }
    return AF_OK;
}

/* The step graph's work in the order the CUDA graph runs it; nothing to capture on a CPU. */
static af_result_t cpu_graph_run(af_kernels_t *k, const af_graph_io_t *io, uint64_t step,
                                 const uint64_t *flags)
{
    AF_CHECK(cpu_graph_prepare(k, io));
    AF_CHECK(cpu_compute(k, step, io->xchg_in, 0));
    /* The occupied slots decide; an empty slot's commit[] stays 0 (af_kernels_set_block). */
    for (int i = 0; i < k->n_occ; ++i) {
        int s = k->occ[i];
        k->commit[s] =
            af_commit_decision(k->slot_block[s], k->slot_mode[s], k->nonfinite[s], k->abft[s]);
    }
    AF_CHECK(cpu_commit(k));
    AF_CHECK(cpu_pack(k, io->xchg_out));
    const size_t at = 5 * (size_t)k->desc.blocks;
    memcpy(io->xchg_out + at, flags, sizeof(uint64_t) * AF_XCHG_FLAGS);
    if (io->host_out != io->xchg_out) {
        memcpy(io->host_out, io->xchg_out, sizeof(uint64_t) * io->xlen);
    }
    k->graph_launches++;
    return AF_OK;
}

const af_kernels_ops_t af_kernels_cpu = {
    .name = "cpu",
    .create = cpu_create,
    .destroy = cpu_destroy,
    .host_bytes = cpu_host_bytes,
    .upload_control = cpu_upload_control,
    .write_slot = cpu_write_slot,
    .read_slot = cpu_read_slot,
    .pack = cpu_pack,
    .pack_owned = cpu_pack_owned,
    .compute = cpu_compute,
    .download_results = cpu_download_results,
    .commit = cpu_commit,
    .copy_slot = cpu_copy_slot,
    .slot_data = cpu_slot_data,
    .read_next = cpu_read_next,
    .write_next = cpu_write_next,
    .refresh_slot = cpu_refresh_slot,
    .poison_slot = cpu_poison_slot,
    .sync = cpu_sync,
    .graph_prepare = cpu_graph_prepare,
    .graph_run = cpu_graph_run,
    .step = cpu_step,
    .release_slot = cpu_release_slot,
    .settle = cpu_settle,
};

void af_kernels_destroy(af_kernels_t **k)
{
    if (k != NULL && *k != NULL) {
        (*k)->ops->destroy(*k);
        *k = NULL;
    }
}
