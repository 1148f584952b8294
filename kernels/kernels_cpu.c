/* agefence CPU compute backend: the reference implementation of the masked step, and the one
 * CI runs. Every buffer is allocated in create(); the step functions only index. */
#include "kernels.h"

#include <stdlib.h>
#include <string.h>

#include "../common/af_alloc.h"

#include <stdio.h>
#include <unistd.h>

typedef struct af_cpu {
    double *state;   /* 2 x n_slots x T: every slot's buffer 0, then every slot's buffer 1, so
                        a step over slots of one parity reads one long run of memory and writes
                        another (a slot's two buffers side by side cut every run to one block
                        and halved the bandwidth: README "Performance") */
    uint8_t *parity; /* which buffer of a slot is committed */
    double *diag;    /* n_slots x 2 x 3: (mass, energy, non-finite count) of each buffer */
    int fused;       /* 1: the one-pass step (AF_CPU_KERNEL_FUSED), else the two-pass one */
    /* The scratch of an attention row with injection: its scores, then its weights. */
    double attn_st[AF_ATTN_MAX_TOKENS];
    char path[112]; /* what the hot loop runs, for k->path */
} af_cpu_t;

static inline double *cpu_buf(const af_kernels_t *k, const af_cpu_t *c, int slot, int which)
{
    return c->state +
           ((size_t)which * (size_t)k->desc.n_slots + (size_t)slot) * (size_t)k->desc.block_len;
}

static inline double *cpu_diag(const af_cpu_t *c, int slot, int which)
{
    return c->diag + ((size_t)slot * 2 + (size_t)which) * 3;
}

void af_block_diag(const double *u, int len, double *mass, double *energy)
{
    double pm[AF_LANES];
    double pe[AF_LANES];
    for (int l = 0; l < AF_LANES; ++l) {
        pm[l] = 0.0;
        pe[l] = 0.0;
    }
    int i = 0;
    for (; i + AF_LANES <= len; i += AF_LANES) {
        for (int l = 0; l < AF_LANES; ++l) {
            double v = u[i + l];
            pm[l] += v;
            pe[l] += 0.5 * v * v;
        }
    }
    for (int l = 0; i + l < len; ++l) {
        double v = u[i + l];
        pm[l] += v;
        pe[l] += 0.5 * v * v;
    }
    *mass = af_lane_tree(pm);
    *energy = af_lane_tree(pe);
}

#if defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__
#error "kernels_cpu.c counts NaN/Inf with v - v != 0: never build it with -ffinite-math-only"
#endif

/* 1.0 when v is NaN or +-Inf (v - v is then NaN), else 0.0: the verdict of af_nonfinite(), in a
 * form the compiler vectorises without 64-bit integer compares. */
static inline double cpu_nonfinite01(double v)
{
    return (v - v) != 0.0 ? 1.0 : 0.0;
}

/* Hot loops are built twice, for AVX2 and for the baseline x86-64, and the loader picks one.
 * Neither uses FMA (-ffp-contract=off, and target "avx2" does not enable it), and a wider
 * vector does not change any element's arithmetic or the order of the lane sums: both clones
 * give the same bits. GCC only. Clang 14 accepts target_clones, but refuses (a hard error, not
 * -Wpsabi) every call that passes a four-double vector from the AVX2 clone to the helpers below,
 * always_inline as they are: a clang build runs the baseline (sse2) loops, with the same bits
 * (README.md). Not under AddressSanitizer, whose run-time is not yet there when the loader calls
 * the resolver. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&                             \
    !defined(__SANITIZE_ADDRESS__)
#define AF_CLONES 1
#define AF_HOT    __attribute__((target_clones("avx2", "default")))
#else
#define AF_HOT
#endif

/* Four doubles (GCC/Clang vector extension): the loops below must vectorise across the eight
 * lanes of a group, not across chunks, and compilers left to themselves pick the latter. */
typedef double af_v4d __attribute__((vector_size(32)));
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wpsabi"
#elif defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
typedef long long af_v4l __attribute__((vector_size(32)));

/* The diagnostics of one buffer: mass and energy in af_block_diag's order (element i to lane
 * partial i % AF_LANES, in increasing i; then the tree), and how many values are NaN or Inf
 * (v - v != 0). The lanes go in groups of eight, whose partials stay in registers while every
 * 32nd element of the L1-resident buffer streams through. Each partial sees the same
 * additions in the same order as af_block_diag's, so the bits are the same. */
AF_HOT static void cpu_fill_diag(const double *restrict u, int len, double *restrict d)
{
    double pm[AF_LANES];
    double pe[AF_LANES];
    long long negcount = 0;
    const af_v4d zero = {0.0, 0.0, 0.0, 0.0};
    const af_v4d half = {0.5, 0.5, 0.5, 0.5};
    int full = len - len % AF_LANES;
    for (int g = 0; g < AF_LANES; g += 8) {
        af_v4d m0 = zero;
        af_v4d m1 = zero;
        af_v4d e0 = zero;
        af_v4d e1 = zero;
        af_v4l n0 = {0, 0, 0, 0};
        af_v4l n1 = {0, 0, 0, 0};
        for (int i0 = 0; i0 < full; i0 += AF_LANES) {
            af_v4d a;
            af_v4d b;
            memcpy(&a, u + i0 + g, sizeof a);
            memcpy(&b, u + i0 + g + 4, sizeof b);
            m0 += a;
            m1 += b;
            e0 += (half * a) * a;
            e1 += (half * b) * b;
            n0 += (a - a) != zero; /* -1 where NaN or Inf */
            n1 += (b - b) != zero;
        }
        memcpy(pm + g, &m0, sizeof m0);
        memcpy(pm + g + 4, &m1, sizeof m1);
        memcpy(pe + g, &e0, sizeof e0);
        memcpy(pe + g + 4, &e1, sizeof e1);
        for (int l = 0; l < 4; ++l) {
            negcount += n0[l] + n1[l];
        }
    }
    double count = (double)-negcount;
    for (int l = 0; full + l < len; ++l) {
        double v = u[full + l];
        pm[l] += v;
        pe[l] += 0.5 * v * v;
        count += cpu_nonfinite01(v);
    }
    d[0] = af_lane_tree(pm);
    d[1] = af_lane_tree(pe);
    d[2] = count;
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

size_t af_cpu_llc_bytes(void)
{
    /* sysfs's last cache level first: what the kernel was told (lscpu's answer); sysconf's
     * cpuid can report the whole package's cache inside a virtual machine. */
    long v = -1;
    for (int idx = 4; idx >= 0 && v <= 0; --idx) {
        char path[80];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", idx);
        FILE *f = fopen(path, "r");
        if (f == NULL) {
            continue;
        }
        long n = 0;
        char unit = 0;
        if (fscanf(f, "%ld%c", &n, &unit) >= 1 && n > 0) {
            v = n * (unit == 'K' ? 1024L : unit == 'M' ? 1024L * 1024L : 1L);
        }
        fclose(f);
    }
#ifdef _SC_LEVEL3_CACHE_SIZE
    if (v <= 0) {
        v = sysconf(_SC_LEVEL3_CACHE_SIZE);
    }
#endif
    return v > 0 ? (size_t)v : (size_t)32 << 20; /* unknown: 32 MiB */
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
        af_free(c->diag);
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

static size_t cpu_host_bytes(const af_shard_desc_t *desc)
{
    /* The backend's own struct (with the attention path's scratch); per slot: two buffers of
     * T doubles, parity, 6 diagnostics, the control arrays (block, mode, p, commit, select) and
     * the four result counters. */
    size_t n = (size_t)desc->n_slots;
    return sizeof(af_kernels_t) + sizeof(af_cpu_t) +
           n * (2 * (size_t)desc->block_len * sizeof(double) + 1 + 6 * sizeof(double) +
                sizeof(int32_t) + 1 + sizeof(double) + 1 + 1 + 4 * sizeof(int32_t)) +
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
    size_t state_bytes = n * 2 * (size_t)desc->block_len * sizeof(double);
    c->state = af_alloc(state_bytes);
    c->parity = af_alloc(n);
    c->diag = af_alloc(n * 6 * sizeof(double));
    k->slot_block = af_alloc(n * sizeof(int32_t));
    k->slot_mode = af_alloc(n);
    k->slot_p = af_alloc(n * sizeof(double));
    k->commit = af_alloc(n);
    k->select = af_alloc(n);
    k->nonfinite = af_alloc(n * sizeof(int32_t));
    k->injected = af_alloc(n * sizeof(int32_t));
    k->harmful = af_alloc(n * sizeof(int32_t));
    k->abft = af_alloc(n * sizeof(int32_t));
    AF_REQUIRE_GOTO(c->state && c->parity && c->diag && k->slot_block && k->slot_mode &&
                        k->slot_p && k->commit && k->select && k->nonfinite && k->injected &&
                        k->harmful && k->abft,
                    AF_ERR_NOMEM, rc, fail);
    AF_CHECK_GOTO(af_kernels_occ_alloc(k), rc, fail);
    for (size_t s = 0; s < n; ++s) {
        k->slot_block[s] = -1;
    }
    k->bytes = state_bytes + n * (1 + 6 * sizeof(double) + sizeof(int32_t) * 4 + 1 + 8 + 1) +
               af_kernels_occ_bytes(desc);
    /* The fused step needs whole groups of four cells and a first and a last group apart; the
     * two-pass step takes any length. */
    const int T = desc->block_len;
    c->fused = desc->cpu_kernel == AF_CPU_KERNEL_FUSED && T >= 8 && T % 4 == 0;
    snprintf(c->path, sizeof c->path, "%s %s", cpu_isa(),
             c->fused ? "one pass (backend.cpu_kernel = fused)"
             : desc->cpu_kernel == AF_CPU_KERNEL_FUSED
                 ? "two passes (fused needs blocks of 4k cells)"
                 : "two passes");
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
    double *dst = cpu_buf(k, c, slot, c->parity[slot]);
    memcpy(dst, host, sizeof(double) * (size_t)k->desc.block_len);
    cpu_fill_diag(dst, k->desc.block_len, cpu_diag(c, slot, c->parity[slot]));
    return AF_OK;
}

static af_result_t cpu_read_slot(af_kernels_t *k, int slot, double *host)
{
    af_cpu_t *c = k->impl;
    memcpy(host, cpu_buf(k, c, slot, c->parity[slot]), sizeof(double) * (size_t)k->desc.block_len);
    return AF_OK;
}

/* The entries of every published slot's block: its edges, diagnostics and status word. */
static void cpu_pack_slots(af_kernels_t *k, uint64_t *xchg)
{
    af_cpu_t *c = k->impl;
    const int B = k->desc.blocks;
    const int T = k->desc.block_len;
    for (int i = 0; i < k->n_occ; ++i) {
        int s = k->occ[i];
        int b = k->slot_block[s];
        if (b < 0 || k->slot_mode[s] == AF_MODE_DEAD || k->slot_mode[s] == AF_MODE_SHADOW) {
            continue;
        }
        const double *u = cpu_buf(k, c, s, c->parity[s]);
        const double *d = cpu_diag(c, s, c->parity[s]);
        xchg[2 * (size_t)b] = af_bits(u[0]);
        xchg[2 * (size_t)b + 1] = af_bits(u[T - 1]);
        xchg[2 * (size_t)B + (size_t)b] = af_bits(d[0]);
        xchg[3 * (size_t)B + (size_t)b] = af_bits(d[1]);
        xchg[4 * (size_t)B + (size_t)b] = (k->commit[s] ? 0U : 1U) | ((uint64_t)d[2] << 1);
    }
}

static af_result_t cpu_pack(af_kernels_t *k, uint64_t *xchg)
{
    memset(xchg, 0, sizeof(uint64_t) * af_xchg_len(k->desc.blocks));
    cpu_pack_slots(k, xchg);
    return AF_OK;
}

static af_result_t cpu_pack_owned(af_kernels_t *k, uint64_t *xchg)
{
    cpu_pack_slots(k, xchg);
    return AF_OK;
}

/* One slot's update: cells 1..T-2 read only the slot, the two ends read the neighbours' edges.
 * Returns the number of non-finite outputs. */
AF_HOT static void cpu_slot_update(const double *restrict u, double *restrict un, int T, double ul,
                                   double ur, af_coeffs_t kc)
{
    if (T == 1) {
        un[0] = af_burgers_cell(ul, u[0], ur, kc);
        return;
    }
    un[0] = af_burgers_cell(ul, u[0], u[1], kc);
    for (int i = 1; i < T - 1; ++i) {
        un[i] = af_burgers_cell(u[i - 1], u[i], u[i + 1], kc);
    }
    un[T - 1] = af_burgers_cell(u[T - 2], u[T - 1], ur, kc);
}

void af_block_update(const double *u, double *un, int len, double ul, double ur, af_coeffs_t k)
{
    cpu_slot_update(u, un, len, ul, ur, k);
}

/* One block's step in one pass (T a multiple of 4, at least 8): each group of four cells is
 * updated as af_burgers_cell evaluates it (the same operations in the same order, lane by
 * lane, no FMA), stored, and added at once to the mass, energy and non-finite partials of its
 * lanes: element i goes to lane i % AF_LANES in increasing i, exactly as af_block_diag and
 * cpu_fill_diag add it, so the diagnostics have their bits. The partials of the 32 lanes live
 * in eight four-wide vectors each (L1), the block is read once and written once. Measured
 * slower than the two passes on the machines at hand (README "Performance"): the second pass
 * reads a block L1 holds, and these accumulators add a load and a store per group. */
AF_HOT static void cpu_slot_step(const double *restrict u, double *restrict un, int T, double ul,
                                 double ur, af_coeffs_t kc, double *restrict d)
{
    const af_v4d zero = {0.0, 0.0, 0.0, 0.0};
    const af_v4d half = {0.5, 0.5, 0.5, 0.5};
    const af_v4d two = {2.0, 2.0, 2.0, 2.0};
    const af_v4d ca = {kc.c_adv, kc.c_adv, kc.c_adv, kc.c_adv};
    const af_v4d cd = {kc.c_diff, kc.c_diff, kc.c_diff, kc.c_diff};
    af_v4d pm[AF_LANES / 4];
    af_v4d pe[AF_LANES / 4];
    af_v4l nf = {0, 0, 0, 0};
    for (int g = 0; g < AF_LANES / 4; ++g) {
        pm[g] = zero;
        pe[g] = zero;
    }
    for (int i = 0; i < T; i += 4) {
        af_v4d l;
        af_v4d c;
        af_v4d r;
        memcpy(&c, u + i, sizeof c);
        if (i == 0) {
            l = (af_v4d){ul, u[0], u[1], u[2]};
        } else {
            memcpy(&l, u + i - 1, sizeof l);
        }
        if (i + 4 == T) {
            r = (af_v4d){u[i + 1], u[i + 2], u[i + 3], ur};
        } else {
            memcpy(&r, u + i + 1, sizeof r);
        }
        af_v4d flux = (r * r - l * l) * ca;
        af_v4d diff = (r - two * c + l) * cd;
        af_v4d v = c - flux + diff;
        const int g = (i % AF_LANES) / 4;
        pm[g] += v;
        pe[g] += (half * v) * v;
        nf += (v - v) != zero; /* -1 where NaN or Inf */
        memcpy(un + i, &v, sizeof v);
    }
    double m[AF_LANES];
    double e[AF_LANES];
    memcpy(m, pm, sizeof m);
    memcpy(e, pe, sizeof e);
    d[0] = af_lane_tree(m);
    d[1] = af_lane_tree(e);
    d[2] = (double)-(nf[0] + nf[1] + nf[2] + nf[3]);
}

/* ---- masked attention ------------------------------------------------------------------ */

/* The helpers below take and return four-double vectors; they are always inlined into the
 * clones that call them, so no call crosses an ABI boundary (GCC's -Wpsabi note, that such a
 * call's ABI would differ without AVX, is silenced for this file at af_v4d's definition). */
#define AF_V4_INLINE static inline __attribute__((always_inline))

/* x in every lane. A macro, not an inline function: GCC lowers a vector built from a scalar in
 * a function compiled for the baseline before inlining it, and the AVX2 clones then broadcast
 * a loaded double with two shuffles on the floating-point pipes (vmovddup, vperm2f128) instead
 * of one vbroadcastsd from memory, which the load ports execute alone. x is evaluated once per
 * lane: pass it no side effect. */
#define AF_V4_SET1(x) ((af_v4d){(x), (x), (x), (x)})

/* a where m (all ones), else b: a bitwise select, NaN payloads intact. */
AF_V4_INLINE af_v4d v4_select(af_v4l m, af_v4d a, af_v4d b)
{
    af_v4l ai;
    af_v4l bi;
    memcpy(&ai, &a, sizeof ai);
    memcpy(&bi, &b, sizeof bi);
    af_v4l ri = (ai & m) | (bi & ~m);
    af_v4d r;
    memcpy(&r, &ri, sizeof r);
    return r;
}

/* af_exp on four lanes: the same operations as af_exp_core in the same order, then the
 * guards as selects (a guarded lane's core result is discarded). */
AF_V4_INLINE af_v4d v4_exp(af_v4d x)
{
    af_v4d t = x * AF_V4_SET1(AF_EXP_LOG2E);
    af_v4d big = t + AF_V4_SET1(AF_EXP_ROUND);
    af_v4d n = big - AF_V4_SET1(AF_EXP_ROUND);
    af_v4d r = x - n * AF_V4_SET1(AF_EXP_LN2_HI);
    r = r - n * AF_V4_SET1(AF_EXP_LN2_LO);
    af_v4d p = AF_V4_SET1(AF_EXP_C13);
    p = p * r + AF_V4_SET1(AF_EXP_C12);
    p = p * r + AF_V4_SET1(AF_EXP_C11);
    p = p * r + AF_V4_SET1(AF_EXP_C10);
    p = p * r + AF_V4_SET1(AF_EXP_C9);
    p = p * r + AF_V4_SET1(AF_EXP_C8);
    p = p * r + AF_V4_SET1(AF_EXP_C7);
    p = p * r + AF_V4_SET1(AF_EXP_C6);
    p = p * r + AF_V4_SET1(AF_EXP_C5);
    p = p * r + AF_V4_SET1(AF_EXP_C4);
    p = p * r + AF_V4_SET1(AF_EXP_C3);
    p = p * r + AF_V4_SET1(AF_EXP_C2);
    p = p * r + AF_V4_SET1(1.0);
    p = p * r + AF_V4_SET1(1.0);
    af_v4l bi;
    memcpy(&bi, &big, sizeof bi);
    const long long round_bits = (long long)af_bits(AF_EXP_ROUND);
    af_v4l ni = bi - (af_v4l){round_bits, round_bits, round_bits, round_bits};
    af_v4l si = (ni + 1023) << 52;
    af_v4d scale;
    memcpy(&scale, &si, sizeof scale);
    af_v4d res = p * scale;
    res = v4_select(x < AF_V4_SET1(-708.0), AF_V4_SET1(0.0), res);
    res = v4_select(x > AF_V4_SET1(709.0), AF_V4_SET1(af_double(0x7ff0000000000000ULL)), res);
    return v4_select(x != x, x, res);
}

/* Rows i0 .. i0+7 of an attention block's step without injection, four rows to a vector:
 * every row's arithmetic is af_attn_row's, operation for operation and in the same order (each
 * sum runs over its index from 0.0; lanes are rows, so no sum is split across lanes), and
 * independent rows and columns give the accumulators the processor needs to overlap its
 * multiplies and adds. Tokens beyond i0 + 7 are masked for all eight rows: their scores are
 * never read and their weights are exactly 0, which af_attn_row adds as +0.0 to sums that are
 * never -0.0 (a no-op), so they are skipped. *ok is cleared when a row's weights do not sum to
 * 1 within the bound or an output leaves [-1, 1], and, with check, when a row's output checksum
 * fails (af_attn_sum_ok: the lanes are rows, so each row's two sums run over k from 0.0 in
 * increasing k, as af_attn_row's do). */
AF_HOT static void cpu_attn_rows8(const double *restrict u, double *restrict un, int i0, double g,
                                  const af_attn_params_t *pp, double *restrict st, int check,
                                  int *ok)
{
    const int T = pp->tokens;
    const int d = pp->dim;
    const int jend = i0 + 8; /* tokens 0 .. i0 + 7 are visible to some row */
    const af_v4d zero = AF_V4_SET1(0.0);
    const af_v4d one = AF_V4_SET1(1.0);
    const af_v4d scale = AF_V4_SET1(pp->scale);
    const af_v4d masked = AF_V4_SET1(AF_ATTN_MASKED);
    const af_v4d row0 = {(double)i0, (double)(i0 + 1), (double)(i0 + 2), (double)(i0 + 3)};
    const af_v4d row1 = row0 + AF_V4_SET1(4.0);
    /* Scores: st[j * 8 + l] is row i0 + l's score of token j. */
    for (int j0 = 0; j0 < jend; j0 += 4) {
        af_v4d a0[4] = {zero, zero, zero, zero};
        af_v4d a1[4] = {zero, zero, zero, zero};
        for (int k = 0; k < d; ++k) {
            const double *col = u + (size_t)k * (size_t)T;
            af_v4d r0;
            af_v4d r1;
            memcpy(&r0, col + i0, sizeof r0);
            memcpy(&r1, col + i0 + 4, sizeof r1);
            for (int c = 0; c < 4; ++c) {
                af_v4d bc = AF_V4_SET1(col[j0 + c]);
                a0[c] += r0 * bc;
                a1[c] += r1 * bc;
            }
        }
        for (int c = 0; c < 4; ++c) {
            af_v4d jv = AF_V4_SET1((double)(j0 + c));
            af_v4d s0 = v4_select(jv <= row0, a0[c] * scale, masked);
            af_v4d s1 = v4_select(jv <= row1, a1[c] * scale, masked);
            memcpy(st + (size_t)(j0 + c) * 8, &s0, sizeof s0);
            memcpy(st + (size_t)(j0 + c) * 8 + 4, &s1, sizeof s1);
        }
    }
    /* The softmax of the eight rows, both halves in one loop. */
    af_v4d m0;
    af_v4d m1;
    memcpy(&m0, st, sizeof m0);
    memcpy(&m1, st + 4, sizeof m1);
    for (int j = 1; j < jend; ++j) {
        af_v4d jv = AF_V4_SET1((double)j);
        af_v4d s0;
        af_v4d s1;
        memcpy(&s0, st + (size_t)j * 8, sizeof s0);
        memcpy(&s1, st + (size_t)j * 8 + 4, sizeof s1);
        m0 = v4_select((jv <= row0) & (s0 > m0), s0, m0);
        m1 = v4_select((jv <= row1) & (s1 > m1), s1, m1);
    }
    af_v4d z0 = zero;
    af_v4d z1 = zero;
    for (int j = 0; j < jend; ++j) {
        af_v4d jv = AF_V4_SET1((double)j);
        af_v4d s0;
        af_v4d s1;
        memcpy(&s0, st + (size_t)j * 8, sizeof s0);
        memcpy(&s1, st + (size_t)j * 8 + 4, sizeof s1);
        af_v4d e0 = v4_select(jv <= row0, v4_exp(s0 - m0), zero);
        af_v4d e1 = v4_select(jv <= row1, v4_exp(s1 - m1), zero);
        memcpy(st + (size_t)j * 8, &e0, sizeof e0);
        memcpy(st + (size_t)j * 8 + 4, &e1, sizeof e1);
        z0 = z0 + e0;
        z1 = z1 + e1;
    }
    const af_v4d rz0 = one / z0;
    const af_v4d rz1 = one / z1;
    af_v4d rs0 = zero;
    af_v4d rs1 = zero;
    for (int j = 0; j < jend; ++j) {
        af_v4d e0;
        af_v4d e1;
        memcpy(&e0, st + (size_t)j * 8, sizeof e0);
        memcpy(&e1, st + (size_t)j * 8 + 4, sizeof e1);
        af_v4d w0 = e0 * rz0;
        af_v4d w1 = e1 * rz1;
        memcpy(st + (size_t)j * 8, &w0, sizeof w0);
        memcpy(st + (size_t)j * 8 + 4, &w1, sizeof w1);
        rs0 = rs0 + w0;
        rs1 = rs1 + w1;
    }
    const double row_bound = af_attn_row_bound(T);
    const af_v4d bound = AF_V4_SET1(row_bound);
    af_v4d dev0 = rs0 - one;
    af_v4d dev1 = rs1 - one;
    dev0 = v4_select(dev0 < zero, -dev0, dev0);
    dev1 = v4_select(dev1 < zero, -dev1, dev1);
    af_v4l good = (dev0 <= bound) & (dev1 <= bound);
    /* Weighted values and the update, four features at a time: feature k reads the attention
     * of feature k + 1, the last feature feature 0's, negated. */
    const af_v4d c_self = AF_V4_SET1(pp->c_self);
    const af_v4d c_attn = AF_V4_SET1(pp->c_attn);
    const af_v4d mean = AF_V4_SET1(pp->c_mean) * AF_V4_SET1(g);
    const af_v4d half = AF_V4_SET1(0.5);
    const af_v4d three_halves = AF_V4_SET1(1.5);
    const af_v4d big = AF_V4_SET1(AF_ATTN_DBL_MAX);
    af_v4d made0 = zero; /* the eight rows' output checksums, as the update produces them */
    af_v4d made1 = zero;
    for (int k0 = 0; k0 < d; k0 += 4) {
        const int nf = d - k0 < 4 ? d - k0 : 4;
        const double *src[4];
        for (int f = 0; f < 4; ++f) {
            int kk = k0 + (f < nf ? f : 0);
            int ks = kk + 1 < d ? kk + 1 : 0;
            src[f] = u + (size_t)ks * (size_t)T;
        }
        af_v4d y0[4] = {zero, zero, zero, zero};
        af_v4d y1[4] = {zero, zero, zero, zero};
        for (int j = 0; j <= i0; ++j) { /* visible to all eight rows */
            af_v4d w0;
            af_v4d w1;
            memcpy(&w0, st + (size_t)j * 8, sizeof w0);
            memcpy(&w1, st + (size_t)j * 8 + 4, sizeof w1);
            for (int f = 0; f < 4; ++f) {
                af_v4d b = AF_V4_SET1(src[f][j]);
                y0[f] += w0 * b;
                y1[f] += w1 * b;
            }
        }
        for (int j = i0 + 1; j < jend; ++j) { /* the diagonal: masked by select per row */
            af_v4d jv = AF_V4_SET1((double)j);
            af_v4l v0 = jv <= row0;
            af_v4l v1 = jv <= row1;
            af_v4d w0;
            af_v4d w1;
            memcpy(&w0, st + (size_t)j * 8, sizeof w0);
            memcpy(&w1, st + (size_t)j * 8 + 4, sizeof w1);
            for (int f = 0; f < 4; ++f) {
                af_v4d b = AF_V4_SET1(src[f][j]);
                y0[f] += v4_select(v0, w0 * b, zero);
                y1[f] += v4_select(v1, w1 * b, zero);
            }
        }
        for (int f = 0; f < nf; ++f) {
            const size_t at = (size_t)(k0 + f) * (size_t)T + (size_t)i0;
            if (k0 + f + 1 == d) { /* the last feature reads feature 0's attention, negated */
                y0[f] = -y0[f];
                y1[f] = -y1[f];
            }
            af_v4d x0;
            af_v4d x1;
            memcpy(&x0, u + at, sizeof x0);
            memcpy(&x1, u + at + 4, sizeof x1);
            af_v4d v0 = c_self * x0 + c_attn * y0[f];
            af_v4d v1 = c_self * x1 + c_attn * y1[f];
            v0 = v0 + mean;
            v1 = v1 + mean;
            v0 = v4_select((v0 > one) & (v0 <= big), one, v0);
            v1 = v4_select((v1 > one) & (v1 <= big), one, v1);
            v0 = v4_select((v0 < -one) & (v0 >= -big), -one, v0);
            v1 = v4_select((v1 < -one) & (v1 >= -big), -one, v1);
            af_v4d t0 = half * v0;
            af_v4d t1 = half * v1;
            t0 = t0 * v0;
            t1 = t1 * v1;
            af_v4d o0 = v0 * (three_halves - t0);
            af_v4d o1 = v1 * (three_halves - t1);
            memcpy(un + at, &o0, sizeof o0);
            memcpy(un + at + 4, &o1, sizeof o1);
            good &= (o0 >= -one) & (o0 <= one) & (o1 >= -one) & (o1 <= one);
            if (check) {
                made0 = made0 + o0;
                made1 = made1 + o1;
            }
        }
    }
    if (check) { /* the same sums of the rows as stored; equal bit for bit, NaN excluded */
        af_v4d kept0 = zero;
        af_v4d kept1 = zero;
        for (int k = 0; k < d; ++k) {
            af_v4d s0;
            af_v4d s1;
            memcpy(&s0, un + (size_t)k * (size_t)T + (size_t)i0, sizeof s0);
            memcpy(&s1, un + (size_t)k * (size_t)T + (size_t)i0 + 4, sizeof s1);
            kept0 = kept0 + s0;
            kept1 = kept1 + s1;
        }
        af_v4l made0b;
        af_v4l made1b;
        af_v4l kept0b;
        af_v4l kept1b;
        memcpy(&made0b, &made0, sizeof made0b);
        memcpy(&made1b, &made1, sizeof made1b);
        memcpy(&kept0b, &kept0, sizeof kept0b);
        memcpy(&kept1b, &kept1, sizeof kept1b);
        good &= (made0b == kept0b) & (made1b == kept1b) & (made0 == made0) & (made1 == made1);
    }
    for (int l = 0; l < 4; ++l) {
        *ok &= good[l] != 0;
    }
}

/* af_attn_block_update, the output checksum computed only with check (the driver's step
 * without abft skips it, so bench sdc's overhead of abft over finite includes its cost); the
 * rows of a block of other than a multiple of 8 tokens (af_attn_block) always compute it. */
static void cpu_attn_block_vec(const double *u, double *un, const af_attn_params_t *p, double g,
                               int check, int *abft_ok)
{
    if (p->tokens % 8 != 0) {
        af_attn_block(u, un, p, g, abft_ok);
        return;
    }
    double st[8 * AF_ATTN_MAX_TOKENS];
    int ok = 1;
    for (int i0 = 0; i0 < p->tokens; i0 += 8) {
        cpu_attn_rows8(u, un, i0, g, p, st, check, &ok);
    }
    *abft_ok = ok;
}

void af_attn_block_update(const double *u, double *un, const af_attn_params_t *p, double g,
                          int *abft_ok)
{
    cpu_attn_block_vec(u, un, p, g, 1, abft_ok);
}

/* The multiply-add peak (kernels.h): twelve independent chains keep both multipliers and both
 * adders of a core busy where a multiply and an add each take up to 6 cycles of latency
 * together at two a cycle (Zen 2/3: 3 + 3, two of each pipe; Skylake: 4 + 4 on two shared
 * ports needs only 8), and with m and c they fill 14 of the 16 vector registers. */
AF_HOT static void cpu_muladd_chains(int64_t iters, double *restrict out)
{
    const af_v4d m = AF_V4_SET1(AF_CPU_PEAK_M);
    const af_v4d c = AF_V4_SET1(AF_CPU_PEAK_C);
    af_v4d acc[AF_CPU_PEAK_CHAINS];
    for (int i = 0; i < AF_CPU_PEAK_CHAINS; ++i) {
        acc[i] = AF_V4_SET1(1.0 + (double)i / 16.0);
    }
    for (int64_t it = 0; it < iters; ++it) {
        for (int i = 0; i < AF_CPU_PEAK_CHAINS; ++i) {
            acc[i] = acc[i] * m + c;
        }
    }
    memcpy(out, acc, sizeof acc);
}

double af_cpu_muladd_peak(int64_t iters, double *out)
{
    cpu_muladd_chains(iters, out);
    return 2.0 * 4.0 * (double)AF_CPU_PEAK_CHAINS * (double)iters;
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
        cpu_attn_block_vec(u, un, p, g, check, &ok);
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

static af_result_t cpu_compute(af_kernels_t *k, uint64_t step, const uint64_t *xchg, int flags)
{
    af_cpu_t *c = k->impl;
    const int B = k->desc.blocks;
    const int T = k->desc.block_len;
    const af_coeffs_t kc = k->desc.coeffs;
    const int unmasked = (flags & AF_COMPUTE_UNMASKED) != 0;
    const int selected = (flags & AF_COMPUTE_SELECTED) != 0;
    /* The masked step visits the occupied slots only: an empty slot computes nothing and its
     * results stay zero (af_kernels_set_block zeroed them when it emptied). The unmasked
     * benchmark variant covers the whole static grid. */
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
        if (b < 0) {
            b = 0; /* unmasked benchmark variant: empty slots compute with block 0's halo */
        }
        const double *u = cpu_buf(k, c, s, c->parity[s]);
        double *un = cpu_buf(k, c, s, c->parity[s] ^ 1);
        size_t i0 = 0;
        size_t i1 = 0;
        af_wl_read_set(k->desc.workload, B, b, &i0, &i1);
        double ul = af_double(xchg[i0]);
        double ur = af_double(xchg[i1]);
        int mode = k->slot_mode[s];
        double *d = cpu_diag(c, s, c->parity[s] ^ 1);
        /* HEALTHY slots inject too when slot_p > 0: a silent unit corrupts with no precursor. */
        int inject = !unmasked && k->slot_p[s] > 0.0;
        if (k->desc.workload == AF_WORKLOAD_ATTENTION) {
            uint64_t key = mode == AF_MODE_SHADOW ? step ^ AF_TWIN_SALT : step;
            int inj = 0;
            int harm = 0;
            int ok = cpu_attn_block(c, u, un, &k->desc.attn, ul, k->desc.abft,
                                    inject ? k->slot_p[s] : 0.0, k->desc.seed, key, (uint64_t)b,
                                    k->desc.mix, &inj, &harm);
            cpu_fill_diag(un, T, d);
            if (!unmasked) {
                k->injected[s] = inj;
                k->harmful[s] = harm;
                k->nonfinite[s] = (int32_t)d[2];
                k->abft[s] = k->desc.abft ? !ok : 0;
            }
            continue;
        }
        if (c->fused && !inject) {
            /* One pass: the update with its diagnostics (a corrupting slot's results change
             * after the update, so it takes the two passes below). */
            cpu_slot_step(u, un, T, ul, ur, kc, d);
        } else {
            cpu_slot_update(u, un, T, ul, ur, kc);
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
            k->injected[s] = inj;
            k->harmful[s] = harm;
        }
        if (!c->fused || inject) {
            cpu_fill_diag(un, T, d);
        }
        if (!unmasked) {
            k->nonfinite[s] = (int32_t)d[2];
            if (k->desc.abft) {
                const double *od = cpu_diag(c, s, c->parity[s]);
                k->abft[s] =
                    !af_abft_consistent(od[0], od[1], d[0], d[1], u[0], u[T - 1], ul, ur, T, kc);
            }
        }
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
        c->parity[s] ^= (uint8_t)(k->commit[s] != 0);
    }
    return AF_OK;
}

static af_result_t cpu_copy_slot(af_kernels_t *k, int src, int dst)
{
    af_cpu_t *c = k->impl;
    memcpy(cpu_buf(k, c, dst, c->parity[dst]), cpu_buf(k, c, src, c->parity[src]),
           sizeof(double) * (size_t)k->desc.block_len);
    memcpy(cpu_diag(c, dst, c->parity[dst]), cpu_diag(c, src, c->parity[src]), 3 * sizeof(double));
    return AF_OK;
}

static double *cpu_slot_data(af_kernels_t *k, int slot)
{
    af_cpu_t *c = k->impl;
    return cpu_buf(k, c, slot, c->parity[slot]);
}

static af_result_t cpu_read_next(af_kernels_t *k, int slot, double *host)
{
    af_cpu_t *c = k->impl;
    memcpy(host, cpu_buf(k, c, slot, c->parity[slot] ^ 1),
           sizeof(double) * (size_t)k->desc.block_len);
    return AF_OK;
}

static af_result_t cpu_write_next(af_kernels_t *k, int slot, const double *host)
{
    af_cpu_t *c = k->impl;
    double *dst = cpu_buf(k, c, slot, c->parity[slot] ^ 1);
    memcpy(dst, host, sizeof(double) * (size_t)k->desc.block_len);
    cpu_fill_diag(dst, k->desc.block_len, cpu_diag(c, slot, c->parity[slot] ^ 1));
    return AF_OK;
}

static af_result_t cpu_refresh_slot(af_kernels_t *k, int slot)
{
    af_cpu_t *c = k->impl;
    cpu_fill_diag(cpu_buf(k, c, slot, c->parity[slot]), k->desc.block_len,
                  cpu_diag(c, slot, c->parity[slot]));
    return AF_OK;
}

static af_result_t cpu_poison_slot(af_kernels_t *k, int slot)
{
    af_cpu_t *c = k->impl;
    const uint64_t pattern = 0x7ff8dead0000deadULL; /* a quiet NaN with a recognisable payload */
    for (int w = 0; w < 2; ++w) {
        double *u = cpu_buf(k, c, slot, w);
        for (int i = 0; i < k->desc.block_len; ++i) {
            u[i] = af_double(pattern);
        }
        double *d = cpu_diag(c, slot, w);
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
    for (int s = 0; s < k->desc.n_slots; ++s) {
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
};

void af_kernels_destroy(af_kernels_t **k)
{
    if (k != NULL && *k != NULL) {
        (*k)->ops->destroy(*k);
        *k = NULL;
    }
}
