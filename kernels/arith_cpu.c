/* agefence host arithmetic shared by the CPU backend (kernels_cpu.c) and the workload table
 * (workloads.c): a block's diagnostics, a Burgers block's step, and an attention block's step,
 * row by row (the serial reference) and on the vector path. Both use it and neither calls the
 * other (tests/layers.py). The per-element arithmetic is the shared headers' (af_burgers.h,
 * af_attention.h), as every backend evaluates it. */
#include "arith_cpu.h"

#include <string.h>

#include "kernels.h"

#if defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__
#error "arith_cpu.c tests for NaN with x != x: never build it with -ffinite-math-only"
#endif

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

/* ---- masked attention ------------------------------------------------------------------ */

void af_attn_block(const double *u, double *un, const af_attn_params_t *p, double g, int *abft_ok)
{
    double srow[AF_ATTN_MAX_TOKENS];
    af_corrupt_mix_t none;
    memset(&none, 0, sizeof none);
    int ok = 1;
    for (int i = 0; i < p->tokens; ++i) {
        int inj = 0;
        int harm = 0;
        int row_ok = 1;
        af_attn_row(u, un, i, g, *p, 0.0, 0, 0, 0, none, srow, &inj, &harm, &row_ok);
        ok &= row_ok;
    }
    *abft_ok = ok;
}

/* The helpers below take and return four-double vectors; they are always inlined into the
 * clones that call them, so no call crosses an ABI boundary (GCC's -Wpsabi note, that such a
 * call's ABI would differ without AVX, is silenced for this file at af_v4d's definition). */
#define AF_V4_INLINE static inline __attribute__((always_inline))

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
void af_attn_block_vec(const double *u, double *un, const af_attn_params_t *p, double g, int check,
                       int *abft_ok)
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
    af_attn_block_vec(u, un, p, g, 1, abft_ok);
}
