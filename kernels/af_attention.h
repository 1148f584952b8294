/* agefence shared arithmetic of the masked-attention workload: the exponential, the causal
 * softmax and one token's update, compiled as C by the CPU backend, the serial reference, the
 * driver's replay and the tests, and as CUDA by kernels/kernels_cuda.cu, so that every backend
 * produces the same bits (the build keeps FMA out: -ffp-contract=off, -fmad=false). The
 * mathematics is in docs/workloads.md.
 *
 * A block holds `tokens` tokens of `dim` features, stored feature-major: feature k of token t
 * is u[k * tokens + t] (a feature's values over the tokens are contiguous, which is what the
 * CPU backend's vector path loads; the layout is part of the contract, not of a backend). */
#ifndef AF_ATTENTION_H
#define AF_ATTENTION_H

#include "af_burgers.h"

/* The most tokens a block may hold: a row of scores lives in a scratch of this many doubles
 * (on the stack of a CPU call, in a CUDA thread's local memory). */
#define AF_ATTN_MAX_TOKENS 256
/* The most features a token may have. */
#define AF_ATTN_MAX_DIM 1024
/* The score a causal mask selects for a future token: its exponential is exactly 0. */
#define AF_ATTN_MASKED (-1e9)
/* The weights of the update: x' = h(c_self x + c_attn y + c_mean g), c_self = 1 - c_attn -
 * c_mean (docs/workloads.md). */
#define AF_ATTN_C_ATTN 0.5
#define AF_ATTN_C_MEAN 0.125

typedef struct af_attn_params {
    int tokens;    /* T: tokens per block */
    int dim;       /* d: features per token */
    double scale;  /* 1 / sqrt(d), computed once on the host */
    double c_self; /* 1 - c_attn - c_mean, computed once on the host */
    double c_attn; /* weight of the attention output */
    double c_mean; /* weight of the global mean */
} af_attn_params_t;

/* e^x for x <= 0 as the softmax needs it (any x is accepted), without a library call:
 * x = n ln2 + r with n = x / ln2 rounded to the nearest integer (the 1.5 * 2^52 rounding
 * trick) and |r| <= ln2 / 2 (Cody-Waite: ln2 split in a 21-bit head, so n * head is exact,
 * and a tail), e^r by its Taylor polynomial of degree 13 in Horner form (truncation error
 * below 5e-18 relative), and 2^n set in the exponent bits. Below -708 the result is 0 (the
 * masked scores: no subnormal); above 709, +Inf; NaN stays NaN. Accurate to a few ulp; what
 * matters is that every backend evaluates exactly these operations. */
#define AF_EXP_ROUND  6755399441055744.0 /* 1.5 * 2^52 */
#define AF_EXP_LOG2E  1.4426950408889634
#define AF_EXP_LN2_HI 0.6931467056274414
#define AF_EXP_LN2_LO 4.7493250390316726e-07
#define AF_EXP_C13    1.6059043836821613e-10
#define AF_EXP_C12    2.08767569878681e-09
#define AF_EXP_C11    2.505210838544172e-08
#define AF_EXP_C10    2.755731922398589e-07
#define AF_EXP_C9     2.7557319223985893e-06
#define AF_EXP_C8     2.48015873015873e-05
#define AF_EXP_C7     0.0001984126984126984
#define AF_EXP_C6     0.001388888888888889
#define AF_EXP_C5     0.008333333333333333
#define AF_EXP_C4     0.041666666666666664
#define AF_EXP_C3     0.16666666666666666
#define AF_EXP_C2     0.5

/* The polynomial and the scaling, for x in [-708, 709]; af_exp adds the guards. */
AF_HD double af_exp_core(double x)
{
    double t = x * AF_EXP_LOG2E;
    double big = t + AF_EXP_ROUND;
    double n = big - AF_EXP_ROUND;
    double r = x - n * AF_EXP_LN2_HI;
    r = r - n * AF_EXP_LN2_LO;
    double p = AF_EXP_C13;
    p = p * r + AF_EXP_C12;
    p = p * r + AF_EXP_C11;
    p = p * r + AF_EXP_C10;
    p = p * r + AF_EXP_C9;
    p = p * r + AF_EXP_C8;
    p = p * r + AF_EXP_C7;
    p = p * r + AF_EXP_C6;
    p = p * r + AF_EXP_C5;
    p = p * r + AF_EXP_C4;
    p = p * r + AF_EXP_C3;
    p = p * r + AF_EXP_C2;
    p = p * r + 1.0;
    p = p * r + 1.0;
    /* n sits in the low bits of big: its bit pattern minus the constant's is n. */
    int64_t ni = (int64_t)(af_bits(big) - af_bits(AF_EXP_ROUND));
    double scale = af_double((uint64_t)(ni + 1023) << 52);
    return p * scale;
}

AF_HD double af_exp(double x)
{
    if (x != x) {
        return x;
    }
    if (x < -708.0) {
        return 0.0;
    }
    if (x > 709.0) {
        return af_double(0x7ff0000000000000ULL);
    }
    return af_exp_core(x);
}

/* The bound of a softmax row's sum: T weights e_j r, r = 1 / z rounded once and each product
 * rounded once, z the rounded sum of T terms, and their sum rounded T - 1 times:
 * |sum - 1| <= 2T u to first order, u the unit roundoff; the check allows (2T + 8) u, with
 * u = 2^-53. */
AF_HD double af_attn_row_bound(int tokens)
{
    return (2.0 * (double)tokens + 8.0) * 1.1102230246251565e-16;
}

/* The ABFT verdict of one softmax row: 1 when its weights sum to 1 within the bound (a NaN
 * sum fails). */
AF_HD int af_attn_row_ok(double rowsum, int tokens)
{
    double dev = rowsum - 1.0;
    dev = dev < 0.0 ? -dev : dev;
    return dev <= af_attn_row_bound(tokens);
}

/* The output checksum of a row: `produced`, the sum over the features k = 0 .. d-1 (from 0.0,
 * in increasing k) of the values the update computed, taken as they leave the update, and
 * `stored`, the same sum of the row as it was written to the new state. Both are the same
 * additions of the same operands in the same order, so on a clean row they are equal bit for
 * bit: the rounding bound is 0 and the check cannot raise a false alarm. A value changed between
 * the update and the state it commits (where a corrupting unit's output corruption lands:
 * af_inject after af_attn_update) changes `stored` unless its change is lost in rounding (a
 * change below about an ulp of the row's partial sums, 2^-52 of the sum of the row's
 * magnitudes: a harmful relative error of 1e-6 hides only in a value some 1e-10 times smaller
 * than that sum; bench sdc measures how often). It does not see an error inside the
 * update's own arithmetic, which enters both sums alike; and a NaN sum fails it (the non-finite
 * test contains those anyway). The products and the softmax before the update are checked by
 * af_attn_row_ok and the range. Returns 1 when the row checks out. */
AF_HD int af_attn_sum_ok(double produced, double stored)
{
    return af_bits(produced) == af_bits(stored) && produced == produced;
}

/* The largest finite double: the clamp below leaves infinities alone. */
#define AF_ATTN_DBL_MAX 1.7976931348623157e308

/* The bounded update of one value from its old value x, its attention output y and the
 * global mean g: v = (c_self x + c_attn y) + c_mean g, a finite v clamped to [-1, 1] by select
 * (NaN and +-Inf pass unchanged, so a non-finite weight or value still ends non-finite and the
 * containment sees it), then h(v) = v (1.5 - 0.5 v^2), which maps [-1, 1] onto itself with
 * attracting fixed points at -1 and 1 and a repelling one at 0: whatever finite state a
 * corruption commits, the next step's is in [-1, 1]. */
AF_HD double af_attn_update(double x, double y, double g, af_attn_params_t p)
{
    double v = p.c_self * x + p.c_attn * y;
    v = v + p.c_mean * g;
    v = (v > 1.0 && v <= AF_ATTN_DBL_MAX) ? 1.0 : v;
    v = (v < -1.0 && v >= -AF_ATTN_DBL_MAX) ? -1.0 : v;
    double t = 0.5 * v;
    t = t * v;
    return v * (1.5 - t);
}

/* One token's row of a block's step: token i of the block u (feature-major, p.tokens x
 * p.dim) attends to tokens 0..i and writes its new features un[k * T + i].
 *   scores   s_j = (sum_k u_i[k] u_j[k]) / sqrt(d) for every j, then the causal mask by
 *            select: s_j = AF_ATTN_MASKED for j > i (never a multiplication by 0, which lets a
 *            future token's NaN through: NaN * 0 = NaN);
 *   softmax  m = max_{j <= i} s_j, e_j = exp(s_j - m) for j <= i and 0 (by select) beyond,
 *            z = sum_j e_j, r = 1 / z, a_j = e_j r (one division a row, not one a
 *            weight);
 *   values   y[k] = sum_j select(j <= i, a_j u_j[k + 1], 0) (the last feature reads feature
 *            0's, negated: a signed rotation of the features);
 *   update   un_i[k] = af_attn_update(u_i[k], y[k], g).
 * Every sum runs in increasing j (or k) from 0.0. With prob > 0 the row's softmax weights
 * a_ij, j <= i (counter T d + i T + j) and its outputs (counter k T + i) are corrupted by
 * af_inject keyed by (seed, key, block, counter); *inj and *harm count what was injected (a
 * corrupted weight is harmful when not finite or moved by more than mix.harm_rel in absolute terms:
 * the weights of a row sum to 1). *rowsum_ok is the row's ABFT verdict: its weights sum to 1 within
 * the bound (af_attn_row_ok, after the injection into the weights), each of its outputs lies in
 * [-1, 1], the update's range (after the injection into the outputs), and the row's output
 * checksum holds (af_attn_sum_ok: the sum over k of the values the update produced, before the
 * injection, against the sum of the row as stored, after it). srow: scratch of p.tokens
 * doubles. */
AF_HD void af_attn_row(const double *u, double *un, int i, double g, af_attn_params_t p,
                       double prob, uint64_t seed, uint64_t key, uint64_t block,
                       af_corrupt_mix_t mix, double *srow, int *inj, int *harm, int *rowsum_ok)
{
    const int T = p.tokens;
    const int d = p.dim;
    for (int j = 0; j < T; ++j) {
        double acc = 0.0;
        for (int k = 0; k < d; ++k) {
            acc = acc + u[k * T + i] * u[k * T + j];
        }
        srow[j] = af_mask_select(j <= i, acc * p.scale, AF_ATTN_MASKED);
    }
    double m = srow[0];
    for (int j = 1; j < T; ++j) {
        m = (j <= i && srow[j] > m) ? srow[j] : m;
    }
    double z = 0.0;
    for (int j = 0; j < T; ++j) {
        double e = af_mask_select(j <= i, af_exp(srow[j] - m), 0.0);
        srow[j] = e;
        z = z + e;
    }
    const double rz = 1.0 / z;
    double rs = 0.0;
    int ninj = 0;
    int nharm = 0;
    for (int j = 0; j < T; ++j) {
        double a = srow[j] * rz;
        if (prob > 0.0 && j <= i) { /* the weights the row uses; a masked one is never read */
            int kind = AF_CORRUPT_NONE;
            int h = 0;
            double a2 =
                af_inject(a, prob, seed, key, block,
                          (uint64_t)T * (uint64_t)d + (uint64_t)i * (uint64_t)T + (uint64_t)j, mix,
                          &kind, &h);
            if (kind != AF_CORRUPT_NONE) {
                /* Harmful when not finite or moved by more than harm_rel of the row's total
                 * (1), not of itself: a weight of 0 that a flip makes a subnormal changes no
                 * output. */
                double err = a2 - a;
                err = err < 0.0 ? -err : err;
                h = af_nonfinite(a2) || err > mix.harm_rel;
            }
            a = a2;
            ninj += kind != AF_CORRUPT_NONE;
            nharm += h;
        }
        srow[j] = a;
        rs = rs + a;
    }
    int ok = af_attn_row_ok(rs, T);
    double produced = 0.0; /* the row's output checksum, as the update produces the values */
    for (int k = 0; k < d; ++k) {
        const int ks = k + 1 < d ? k + 1 : 0;
        double y = 0.0;
        for (int j = 0; j < T; ++j) {
            y = y + af_mask_select(j <= i, srow[j] * u[ks * T + j], 0.0);
        }
        y = k + 1 < d ? y : -y;
        double x = af_attn_update(u[k * T + i], y, g, p);
        produced = produced + x;
        if (prob > 0.0) {
            int kind = AF_CORRUPT_NONE;
            int h = 0;
            x = af_inject(x, prob, seed, key, block, (uint64_t)k * (uint64_t)T + (uint64_t)i, mix,
                          &kind, &h);
            ninj += kind != AF_CORRUPT_NONE;
            nharm += h;
        }
        /* The update's range is [-1, 1]: a value outside (or a NaN) is a corruption. */
        ok = ok && x >= -1.0 && x <= 1.0;
        un[k * T + i] = x;
    }
    double stored = 0.0;
    for (int k = 0; k < d; ++k) {
        stored = stored + un[k * T + i];
    }
    ok = ok && af_attn_sum_ok(produced, stored);
    *inj = ninj;
    *harm = nharm;
    *rowsum_ok = ok;
}

#endif
