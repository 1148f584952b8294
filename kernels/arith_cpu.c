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

/* |x|: x with its sign bit cleared (NaN stays NaN). */
AF_V4_INLINE af_v4d v4_abs(af_v4d x)
{
    af_v4l xi;
    memcpy(&xi, &x, sizeof xi);
    const long long mag = 0x7fffffffffffffffLL;
    xi &= (af_v4l){mag, mag, mag, mag};
    af_v4d r;
    memcpy(&r, &xi, sizeof r);
    return r;
}

/* af_exp for the softmax, in place on the scores st + j * 8 of NTOK tokens (2 NTOK vectors),
 * adding the results to the rows' sums z0, z1 in increasing j. Every lane's x is s_j - m with m
 * the row's running maximum over the visible tokens (m >= s_j, so x <= 0, unless either is NaN
 * or both are the same infinity: then x is NaN): the same operations as af_exp_core in the same
 * order, then af_exp's guards as selects, except the one for x > 709, which no such lane
 * reaches. Lanes of tokens after their row (the causal mask) are exactly 0, as af_attn_row's
 * select makes them, whatever x holds; the guard for x < -708 folds into the same mask. The
 * polynomial is a chain of 26 dependent operations: the vectors go through it in step, one
 * coefficient for all of them before the next, so that up to twelve independent chains are in
 * the processor's window at once. (Written out step by step for eight vectors, GCC placed each
 * vector's chain after the previous one's; the loop over the coefficients keeps the order for
 * twelve.) Two vectors at a time, the exponentials of a 64 x 64 block took 4.5 us on machine A
 * of docs/performance.md; twelve at a time, 2.6 us. */
#define AF_EXP_MAXV 12
AF_V4_INLINE void rows8_exp(double *restrict st, int j, const int NTOK, af_v4d m0, af_v4d m1,
                            af_v4d row0, af_v4d row1, af_v4d *z0, af_v4d *z1)
{
    const int W = 2 * NTOK;
    af_v4d x[AF_EXP_MAXV];
    af_v4d big[AF_EXP_MAXV];
    af_v4d r[AF_EXP_MAXV];
    af_v4d p[AF_EXP_MAXV];
    for (int q = 0; q < W; ++q) {
        af_v4d s;
        memcpy(&s, st + (size_t)j * 8 + 4 * (size_t)q, sizeof s);
        x[q] = s - (q % 2 == 0 ? m0 : m1);
        af_v4d t = x[q] * AF_V4_SET1(AF_EXP_LOG2E);
        big[q] = t + AF_V4_SET1(AF_EXP_ROUND);
        af_v4d n = big[q] - AF_V4_SET1(AF_EXP_ROUND);
        r[q] = x[q] - n * AF_V4_SET1(AF_EXP_LN2_HI);
        r[q] = r[q] - n * AF_V4_SET1(AF_EXP_LN2_LO);
        p[q] = AF_V4_SET1(AF_EXP_C13);
    }
    static const double coef[] = {AF_EXP_C12, AF_EXP_C11, AF_EXP_C10, AF_EXP_C9, AF_EXP_C8,
                                  AF_EXP_C7,  AF_EXP_C6,  AF_EXP_C5,  AF_EXP_C4, AF_EXP_C3,
                                  AF_EXP_C2,  1.0,        1.0};
    for (int c = 0; c < (int)(sizeof coef / sizeof coef[0]); ++c) {
        for (int q = 0; q < W; ++q) {
            p[q] = p[q] * r[q] + AF_V4_SET1(coef[c]);
        }
    }
    /* 2^n: (bits(big) - bits(round) + 1023) << 52, the three integer steps of af_exp_core
     * folded into one constant (the same value modulo 2^64). */
    const long long bias = 1023 - (long long)af_bits(AF_EXP_ROUND);
    for (int q = 0; q < W; ++q) {
        af_v4l bi;
        memcpy(&bi, &big[q], sizeof bi);
        af_v4l si = (bi + (af_v4l){bias, bias, bias, bias}) << 52;
        af_v4d scale;
        memcpy(&scale, &si, sizeof scale);
        af_v4d e = p[q] * scale;
        e = v4_select(x[q] != x[q], x[q], e);
        af_v4l hidden = AF_V4_SET1((double)(j + q / 2)) > (q % 2 == 0 ? row0 : row1);
        e = v4_select(hidden | (x[q] < AF_V4_SET1(-708.0)), AF_V4_SET1(0.0), e);
        memcpy(st + (size_t)j * 8 + 4 * (size_t)q, &e, sizeof e);
        if (q % 2 == 0) {
            *z0 = *z0 + e;
        } else {
            *z1 = *z1 + e;
        }
    }
}

/* Tiles: the score and weighted-value loops keep NT x 2 accumulators (NT tokens or features by
 * the group's two vectors of four rows) in registers while they stream over k or j. Six make
 * twelve accumulators, which with the two row vectors and a broadcast fill 15 of the 16 AVX2
 * registers: each step of the inner loop then loads two vectors and broadcasts six doubles from
 * memory for its 12 multiplies and 12 adds, where a tile of four needs the same two loads for 8
 * of each. A span of a multiple of 4 is cut into tiles of 6 while at least 6 are left, except
 * that the last 8 go as 4 + 4: 12 = 6 + 6, 16 = 6 + 6 + 4, 20 = 6 + 6 + 4 + 4, 64 = 10 x 6 + 4. */
#define AF_ATTN_TILE 6
static inline int rows8_tile(int left)
{
    return left >= 6 && left != 8 ? 6 : 4;
}

/* What every tile of a group shares: the block, its shape, the group's first row and the rows
 * of its two vectors (as doubles, to compare with a token's index). */
typedef struct rows8_ctx {
    const double *u;
    double *un;
    int T;
    int d;
    int i0;
    af_v4d row0;
    af_v4d row1;
} rows8_ctx_t;

/* Scores of tokens j0 .. j0 + NT - 1 for the group's eight rows into st (st[j * 8 + l]: row
 * i0 + l's score of token j), scaled and causally masked as af_attn_row's, and the rows' running
 * maxima m0, m1 carried over them in increasing j as af_attn_row's m (m = s_0, then s_j where
 * visible and greater). NT is a constant after inlining, so the accumulators are registers. */
AF_V4_INLINE void rows8_scores(const rows8_ctx_t *x, int j0, const int NT, af_v4d scale,
                               double *restrict st, af_v4d *m0, af_v4d *m1)
{
    const af_v4d zero = AF_V4_SET1(0.0);
    af_v4d a0[AF_ATTN_TILE];
    af_v4d a1[AF_ATTN_TILE];
    for (int c = 0; c < NT; ++c) {
        a0[c] = zero;
        a1[c] = zero;
    }
    const double *rows = x->u + x->i0;
    const double *toks = x->u + j0;
    for (int k = 0; k < x->d; ++k) {
        af_v4d r0;
        af_v4d r1;
        memcpy(&r0, rows, sizeof r0);
        memcpy(&r1, rows + 4, sizeof r1);
        for (int c = 0; c < NT; ++c) {
            af_v4d b = AF_V4_SET1(toks[c]);
            a0[c] += r0 * b;
            a1[c] += r1 * b;
        }
        rows += x->T;
        toks += x->T;
    }
    const af_v4d masked = AF_V4_SET1(AF_ATTN_MASKED);
    for (int c = 0; c < NT; ++c) {
        const int j = j0 + c;
        af_v4d s0 = a0[c] * scale;
        af_v4d s1 = a1[c] * scale;
        if (j > x->i0) { /* the diagonal: the rows before token j mask it */
            af_v4d jv = AF_V4_SET1((double)j);
            af_v4l v0 = jv <= x->row0;
            af_v4l v1 = jv <= x->row1;
            s0 = v4_select(v0, s0, masked);
            s1 = v4_select(v1, s1, masked);
            *m0 = v4_select(v0 & (s0 > *m0), s0, *m0);
            *m1 = v4_select(v1 & (s1 > *m1), s1, *m1);
        } else if (j == 0) {
            *m0 = s0;
            *m1 = s1;
        } else {
            *m0 = v4_select(s0 > *m0, s0, *m0);
            *m1 = v4_select(s1 > *m1, s1, *m1);
        }
        memcpy(st + (size_t)j * 8, &s0, sizeof s0);
        memcpy(st + (size_t)j * 8 + 4, &s1, sizeof s1);
    }
}

/* What the update of a group's values needs, as vectors. */
typedef struct rows8_upd {
    af_v4d c_self;
    af_v4d c_attn;
    af_v4d mean; /* c_mean g */
} rows8_upd_t;

/* af_attn_update on four rows of one feature (x their old values, y their attention): the
 * same operations in the same order, the clamps by select. */
AF_V4_INLINE af_v4d v4_attn_update(af_v4d x, af_v4d y, const rows8_upd_t *c)
{
    const af_v4d one = AF_V4_SET1(1.0);
    const af_v4d big = AF_V4_SET1(AF_ATTN_DBL_MAX);
    af_v4d v = c->c_self * x + c->c_attn * y;
    v = v + c->mean;
    v = v4_select((v > one) & (v <= big), one, v);
    v = v4_select((v < -one) & (v >= -big), -one, v);
    af_v4d t = AF_V4_SET1(0.5) * v;
    t = t * v;
    return v * (AF_V4_SET1(1.5) - t);
}

/* Features k0 .. k0 + NT - 1 of the group's eight rows: the weighted values (feature k reads the
 * tokens' feature k + 1, the last feature feature 0's, negated), summed in increasing j from
 * 0.0 over tokens 0 .. i0 + 7, then the update, the range check into *good and, with check, the
 * rows' output checksums made0, made1 in increasing k. On the diagonal (tokens i0 + 1 ..
 * i0 + 7) a row adds +0.0 where it masks the token, as af_attn_row's select does; st holds the
 * weights of those tokens already masked (+0.0 where hidden), and with SEL = 0 the products
 * are added as they come: (+0.0) b is +-0.0 for a finite b, and adding +-0.0 to a sum that
 * started from +0.0 (so is never -0.0) changes nothing, NaN and infinities included. SEL = 0
 * therefore needs every value of the diagonal's tokens finite (the caller checks); otherwise
 * SEL = 1 selects each product of the diagonal by the row's mask (vis: token i0 + 1 + t's masks
 * at vis[2 t], vis[2 t + 1]), so that a hidden token's infinity or NaN, which (+0.0) b would
 * turn into a NaN, stays out of the row. A tile that runs past d computes its last features as
 * copies of feature k0's and drops them (the work the flops of kernels/workloads.c count:
 * 4 ceil(d / 4) features). */
AF_V4_INLINE void rows8_values(const rows8_ctx_t *x, int k0, const int NT, const int SEL,
                               const double *restrict st, const af_v4l *restrict vis,
                               const rows8_upd_t *upd, int check, af_v4l *good, af_v4d *made0,
                               af_v4d *made1)
{
    const int T = x->T;
    const int d = x->d;
    const int i0 = x->i0;
    const int nf = d - k0 < NT ? d - k0 : NT;
    const double *src[AF_ATTN_TILE];
    for (int f = 0; f < NT; ++f) {
        int kk = k0 + (f < nf ? f : 0);
        int ks = kk + 1 < d ? kk + 1 : 0;
        src[f] = x->u + (size_t)ks * (size_t)T;
    }
    const af_v4d zero = AF_V4_SET1(0.0);
    af_v4d y0[AF_ATTN_TILE];
    af_v4d y1[AF_ATTN_TILE];
    for (int f = 0; f < NT; ++f) {
        y0[f] = zero;
        y1[f] = zero;
    }
    const int jfull = SEL ? i0 + 1 : i0 + 8; /* tokens added without a select */
    for (int j = 0; j < jfull; ++j) {
        af_v4d w0;
        af_v4d w1;
        memcpy(&w0, st + (size_t)j * 8, sizeof w0);
        memcpy(&w1, st + (size_t)j * 8 + 4, sizeof w1);
        for (int f = 0; f < NT; ++f) {
            af_v4d b = AF_V4_SET1(src[f][j]);
            y0[f] += w0 * b;
            y1[f] += w1 * b;
        }
    }
    for (int t = 0; SEL && t < 7; ++t) { /* the diagonal, masked by select per row */
        const int j = i0 + 1 + t;
        af_v4d w0;
        af_v4d w1;
        memcpy(&w0, st + (size_t)j * 8, sizeof w0);
        memcpy(&w1, st + (size_t)j * 8 + 4, sizeof w1);
        for (int f = 0; f < NT; ++f) {
            af_v4d b = AF_V4_SET1(src[f][j]);
            y0[f] += v4_select(vis[2 * t], w0 * b, zero);
            y1[f] += v4_select(vis[2 * t + 1], w1 * b, zero);
        }
    }
    const af_v4d one = AF_V4_SET1(1.0);
    for (int f = 0; f < NT; ++f) {
        if (f >= nf) {
            break;
        }
        const size_t at = (size_t)(k0 + f) * (size_t)T + (size_t)i0;
        if (k0 + f + 1 == d) { /* the last feature reads feature 0's attention, negated */
            y0[f] = -y0[f];
            y1[f] = -y1[f];
        }
        af_v4d x0;
        af_v4d x1;
        memcpy(&x0, x->u + at, sizeof x0);
        memcpy(&x1, x->u + at + 4, sizeof x1);
        af_v4d o0 = v4_attn_update(x0, y0[f], upd);
        af_v4d o1 = v4_attn_update(x1, y1[f], upd);
        memcpy(x->un + at, &o0, sizeof o0);
        memcpy(x->un + at + 4, &o1, sizeof o1);
        /* In [-1, 1] as |o| <= 1: the same verdict for every double, NaN (false) included. */
        *good &= (v4_abs(o0) <= one) & (v4_abs(o1) <= one);
        if (check) {
            *made0 = *made0 + o0;
            *made1 = *made1 + o1;
        }
    }
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
    rows8_ctx_t x = {.u = u, .un = un, .T = T, .d = d, .i0 = i0};
    x.row0 = (af_v4d){(double)i0, (double)(i0 + 1), (double)(i0 + 2), (double)(i0 + 3)};
    x.row1 = x.row0 + AF_V4_SET1(4.0);
    /* Scores and the rows' maxima. */
    const af_v4d scale = AF_V4_SET1(pp->scale);
    af_v4d m0 = zero;
    af_v4d m1 = zero;
    for (int j0 = 0; j0 < jend;) {
        if (rows8_tile(jend - j0) == 6) {
            rows8_scores(&x, j0, 6, scale, st, &m0, &m1);
            j0 += 6;
        } else {
            rows8_scores(&x, j0, 4, scale, st, &m0, &m1);
            j0 += 4;
        }
    }
    /* Whether the diagonal's tokens i0 + 1 .. i0 + 7 hold finite values only (rows8_values
     * then needs no select: see there). A token's score of itself is its features' sum of
     * squares, scaled: finite only if every feature is (an infinite or NaN feature makes its
     * square +Inf or NaN, and the sum of non-negative terms with it too). A finite block whose
     * squares overflow takes the selects, which give the same bits. */
    int sel = 0;
    for (int j = i0 + 1; j < jend; ++j) {
        const double sjj = st[(size_t)j * 8 + (size_t)(j - i0)];
        sel |= !(sjj - sjj == 0.0);
    }
    /* The exponentials and their sums, six tokens (twelve vectors) at a time. */
    af_v4d z0 = zero;
    af_v4d z1 = zero;
    int je = 0;
    for (; jend - je >= 6; je += 6) {
        rows8_exp(st, je, 6, m0, m1, x.row0, x.row1, &z0, &z1);
    }
    if (jend - je == 4) {
        rows8_exp(st, je, 4, m0, m1, x.row0, x.row1, &z0, &z1);
    } else if (jend - je == 2) {
        rows8_exp(st, je, 2, m0, m1, x.row0, x.row1, &z0, &z1);
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
    /* The diagonal's weights masked (+0.0 where the row hides the token). */
    af_v4l vis[14];
    for (int t = 0; t < 7; ++t) {
        const size_t at = (size_t)(i0 + 1 + t) * 8;
        af_v4d jv = AF_V4_SET1((double)(i0 + 1 + t));
        vis[2 * t] = jv <= x.row0;
        vis[2 * t + 1] = jv <= x.row1;
        af_v4d w0;
        af_v4d w1;
        memcpy(&w0, st + at, sizeof w0);
        memcpy(&w1, st + at + 4, sizeof w1);
        w0 = v4_select(vis[2 * t], w0, zero);
        w1 = v4_select(vis[2 * t + 1], w1, zero);
        memcpy(st + at, &w0, sizeof w0);
        memcpy(st + at + 4, &w1, sizeof w1);
    }
    /* Weighted values and the update, by tiles of features. */
    const rows8_upd_t upd = {.c_self = AF_V4_SET1(pp->c_self),
                             .c_attn = AF_V4_SET1(pp->c_attn),
                             .mean = AF_V4_SET1(pp->c_mean) * AF_V4_SET1(g)};
    af_v4d made0 = zero; /* the eight rows' output checksums, as the update produces them */
    af_v4d made1 = zero;
    const int dpad = (d + 3) / 4 * 4;
    for (int k0 = 0; k0 < dpad;) {
        const int nt = rows8_tile(dpad - k0);
        if (nt == 6 && !sel) {
            rows8_values(&x, k0, 6, 0, st, vis, &upd, check, &good, &made0, &made1);
        } else if (nt == 6) {
            rows8_values(&x, k0, 6, 1, st, vis, &upd, check, &good, &made0, &made1);
        } else if (!sel) {
            rows8_values(&x, k0, 4, 0, st, vis, &upd, check, &good, &made0, &made1);
        } else {
            rows8_values(&x, k0, 4, 1, st, vis, &upd, check, &good, &made0, &made1);
        }
        k0 += nt;
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
