/* agefence: the cpu backend's block arithmetic (see cpu_block.h): the diagnostics of a buffer
 * and the one-pass steps of a block, which kernels_cpu.c calls slot by slot. */
#include "cpu_block.h"

#include <string.h>

#if defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__
#error "cpu_block.c counts NaN/Inf with v - v != 0: never build it with -ffinite-math-only"
#endif

/* 1.0 when v is NaN or +-Inf (v - v is then NaN), else 0.0: the verdict of af_nonfinite(), in a
 * form the compiler vectorises without 64-bit integer compares. */
static inline double cpu_nonfinite01(double v)
{
    return (v - v) != 0.0 ? 1.0 : 0.0;
}

/* af_lane_tree over the AF_LANES partials held as eight four-lane vectors (v[g] holds
 * partials 4g .. 4g + 3; v is overwritten): the butterfly's levels of offset 16, 8 and 4 are
 * whole vectors added lane by lane, low operand first, the last two within the first vector,
 * so the additions and their order are af_lane_tree's, and so are the bits. */
static inline __attribute__((always_inline)) double cpu_lane_tree_v4(af_v4d *v)
{
    for (int o = AF_LANES / 8; o >= 1; o /= 2) {
        for (int g = 0; g < o; ++g) {
            v[g] = v[g] + v[g + o];
        }
    }
    double p0 = v[0][0] + v[0][2];
    double p1 = v[0][1] + v[0][3];
    return p0 + p1;
}

/* af_cpu_fill_diag for a buffer of at most AF_LANES values, the same bits: each lane's partial is
 * 0.0 plus its one value (a lane past the end keeps 0.0, as 0.0 + 0.0 is), and the lane tree
 * runs on the vectors (cpu_lane_tree_v4). The general loop's overhead (a lane tree of 31
 * scalar additions for each sum) was most of a 16-cell block's diagnostics. */
AF_HOT static void cpu_fill_diag_short(const double *restrict u, int len, double *restrict d)
{
    const af_v4d zero = {0.0, 0.0, 0.0, 0.0};
    const af_v4d half = {0.5, 0.5, 0.5, 0.5};
    af_v4d m[AF_LANES / 4];
    af_v4d e[AF_LANES / 4];
    af_v4l n = {0, 0, 0, 0};
#pragma GCC unroll 8
    for (int g = 0; g < AF_LANES / 4; ++g) {
        /* Whole groups straight from the buffer (just written: a copy first would wait on the
         * stores), a last partial one value by value, the rest 0.0. */
        af_v4d a = zero;
        if (4 * g + 4 <= len) {
            memcpy(&a, u + 4 * g, sizeof a);
        } else {
            for (int i = 4 * g; i < len; ++i) {
                a[i - 4 * g] = u[i];
            }
        }
        m[g] = zero + a;
        e[g] = zero + (half * a) * a;
        n += (a - a) != zero; /* -1 where NaN or Inf */
    }
    d[0] = cpu_lane_tree_v4(m);
    d[1] = cpu_lane_tree_v4(e);
    d[2] = (double)-(n[0] + n[1] + n[2] + n[3]);
}

/* The diagnostics of one buffer: mass and energy in af_block_diag's order (element i to lane
 * partial i % AF_LANES, in increasing i; then the tree), and how many values are NaN or Inf
 * (v - v != 0). The lanes go in groups of eight, whose partials stay in registers while every
 * 32nd element of the L1-resident buffer streams through. Each partial sees the same
 * additions in the same order as af_block_diag's, so the bits are the same. */
AF_HOT void af_cpu_fill_diag(const double *restrict u, int len, double *restrict d)
{
    if (len <= AF_LANES) {
        cpu_fill_diag_short(u, len, d);
        return;
    }
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

/* The update of cells i .. i + 3 of a block of T cells (i a multiple of 4), as af_burgers_cell
 * evaluates it lane by lane (the same operations in the same order, no FMA); ul and ur are the
 * neighbours past the block's ends, ca and cd the advection and diffusion coefficients in every
 * lane. Shared by the one-pass steps below. */
static inline __attribute__((always_inline)) af_v4d
cpu_update4(const double *restrict u, int i, int T, double ul, double ur, af_v4d ca, af_v4d cd)
{
    const af_v4d two = {2.0, 2.0, 2.0, 2.0};
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
    return c - flux + diff;
}

/* One block's step in one pass (T a multiple of 4, at least 8): each group of four cells is
 * updated as af_burgers_cell evaluates it (the same operations in the same order, lane by
 * lane, no FMA), stored, and added at once to the mass, energy and non-finite partials of its
 * lanes: element i goes to lane i % AF_LANES in increasing i, exactly as af_block_diag and
 * af_cpu_fill_diag add it, so the diagnostics have their bits. The partials of the 32 lanes live
 * in eight four-wide vectors each (L1), the block is read once and written once. Measured
 * slower than the two passes on the machines at hand (docs/performance.md): the second pass
 * reads a block L1 holds, and these accumulators add a load and a store per group. */
AF_HOT void af_cpu_slot_step(const double *restrict u, double *restrict un, int T, double ul,
                             double ur, af_coeffs_t kc, double *restrict d)
{
    const af_v4d zero = {0.0, 0.0, 0.0, 0.0};
    const af_v4d half = {0.5, 0.5, 0.5, 0.5};
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
        af_v4d v = cpu_update4(u, i, T, ul, ur, ca, cd);
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

/* af_cpu_slot_step for a block of at most AF_LANES cells (a multiple of 4, at least 8): each lane
 * takes one value, so each partial is 0.0 plus it (a lane past the block's end keeps 0.0), and
 * the lane tree runs on the vectors (cpu_lane_tree_v4), the block's update, stores and
 * diagnostics in registers: the same bits as cpu_slot_update then af_cpu_fill_diag (or
 * af_cpu_slot_step), which either cpu_kernel takes for such a block. At 16 cells a block the
 * second pass's reload of what the update had just stored was a third of the step. */
AF_HOT void af_cpu_slot_step_short(const double *restrict u, double *restrict un, int T, double ul,
                                   double ur, af_coeffs_t kc, double *restrict d)
{
    const af_v4d zero = {0.0, 0.0, 0.0, 0.0};
    const af_v4d half = {0.5, 0.5, 0.5, 0.5};
    const af_v4d ca = {kc.c_adv, kc.c_adv, kc.c_adv, kc.c_adv};
    const af_v4d cd = {kc.c_diff, kc.c_diff, kc.c_diff, kc.c_diff};
    af_v4d pm[AF_LANES / 4];
    af_v4d pe[AF_LANES / 4];
    af_v4l nf = {0, 0, 0, 0};
#pragma GCC unroll 8
    for (int g = 0; g < AF_LANES / 4; ++g) {
        const int i = 4 * g;
        if (i >= T) {
            pm[g] = zero;
            pe[g] = zero;
            continue;
        }
        af_v4d v = cpu_update4(u, i, T, ul, ur, ca, cd);
        pm[g] = zero + v;
        pe[g] = zero + (half * v) * v;
        nf += (v - v) != zero; /* -1 where NaN or Inf */
        memcpy(un + i, &v, sizeof v);
    }
    d[0] = cpu_lane_tree_v4(pm);
    d[1] = cpu_lane_tree_v4(pe);
    d[2] = (double)-(nf[0] + nf[1] + nf[2] + nf[3]);
}
