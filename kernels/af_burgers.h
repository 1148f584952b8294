/* agefence shared arithmetic: the per-cell Burgers update, the fault-injection hash, the
 * containment test and the fixed-order diagnostics. Compiled as C by the CPU backend, the serial
 * reference and the tests, and as CUDA by kernels/kernels_cuda.cu, so that every backend produces
 * the same bits. Build flags keep it so: -ffp-contract=off for C, -fmad=false for nvcc (no fused
 * multiply-add may change a rounding). */
#ifndef AF_BURGERS_H
#define AF_BURGERS_H

#include <stdint.h>
#ifndef __CUDACC__
#include <math.h>
#endif

#ifdef __CUDACC__
#define AF_HD __host__ __device__ __forceinline__
#else
#define AF_HD static inline
#endif

/* Number of interleaved partial sums in a block diagnostic (one per lane of a CUDA warp). */
#define AF_LANES 32

/* Coefficients of the explicit scheme for u_t + (u^2/2)_x = nu u_xx on a periodic grid of
 * spacing dx, time step dt: central flux difference and central second difference (FTCS).
 * First order in time, second order in space; with dt proportional to dx^2 (constant
 * diffusion number) the error falls as dx^2. */
typedef struct af_coeffs {
    double c_adv;  /* dt / (4 dx): multiplies (u_r^2 - u_l^2) */
    double c_diff; /* nu dt / dx^2: the diffusion number, at most 1/2 for stability */
} af_coeffs_t;

/* The update of one cell from its left, own and right values. The expression order is part of
 * agefence's contract: every backend and the reference evaluate exactly this. */
AF_HD double af_burgers_cell(double ul, double uc, double ur, af_coeffs_t k)
{
    double flux = (ur * ur - ul * ul) * k.c_adv;
    double diff = (ur - 2.0 * uc + ul) * k.c_diff;
    return uc - flux + diff;
}

AF_HD uint64_t af_bits(double x)
{
    union {
        double d;
        uint64_t u;
    } v;
    v.d = x;
    return v.u;
}

AF_HD double af_double(uint64_t u)
{
    union {
        double d;
        uint64_t u;
    } v;
    v.u = u;
    return v.d;
}

/* Containment test: 1 when x is NaN or +-Inf (exponent all ones), on the bit pattern so that
 * no compiler flag can fold it away. */
AF_HD int af_nonfinite(double x)
{
    return (af_bits(x) & 0x7ff0000000000000ULL) == 0x7ff0000000000000ULL;
}

/* Masking by select: keeps `old` where keep_new is 0, whatever `new_value` holds (NaN too). */
AF_HD double af_mask_select(int keep_new, double new_value, double old)
{
    return keep_new ? new_value : old;
}

/* Masking by multiplication, kept only to show why agefence never uses it: NaN * 0 = NaN, so a
 * fenced NaN leaks into the result (tests/test_kernels.c keeps this as a regression test). */
AF_HD double af_mask_multiply(int keep_new, double new_value, double old)
{
    double m = keep_new ? 1.0 : 0.0;
    return m * new_value + (1.0 - m) * old;
}

/* Counter-based RNG: a stateless hash of (seed, stream, counter) into 64 random bits
 * (SplitMix64's finaliser over a mixed key). The same counters give the same bits on every
 * rank and backend, whatever the launch's shape. */
AF_HD uint64_t af_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

AF_HD uint64_t af_hash4(uint64_t seed, uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t h = af_mix64(seed + 0x9e3779b97f4a7c15ULL);
    h = af_mix64(h ^ (a + 0x632be59bd9b4e019ULL));
    h = af_mix64(h ^ (b + 0x8cb92ba72f3d8dd7ULL));
    return af_mix64(h ^ (c + 0x5851f42d4c957f2dULL));
}

/* Uniform in [0, 1) from the top 53 bits. */
AF_HD double af_u01(uint64_t h)
{
    return (double)(h >> 11) * (1.0 / 9007199254740992.0);
}

/* Mixed into the injection counter of a DMR twin, so that a twin on another FADING unit draws
 * its corruption independently of the primary it checks. */
#define AF_TWIN_SALT 0x5a17000000000000ULL

/* Kinds of injected corruption (also the /events `detail` of a corruption). */
enum {
    AF_CORRUPT_NONE = 0,
    AF_CORRUPT_NAN = 1,
    AF_CORRUPT_PINF = 2,
    AF_CORRUPT_NINF = 3,
    AF_CORRUPT_BITFLIP = 4,        /* one bit of the 64 flipped (may stay finite) */
    AF_CORRUPT_MULTI_MANTISSA = 5, /* two or more bits flipped, all in the 52-bit mantissa */
    AF_CORRUPT_MULTI_EXPONENT = 6  /* two or more bits flipped, at least one in the exponent */
};

/* What a corrupted output element becomes: the mix of corruption modes (cumulative shares of a
 * uniform draw: [0, nonfinite) NaN/+Inf/-Inf, [nonfinite, single) one bit flipped, [single,
 * mantissa) several mantissa bits, [mantissa, 1) several bits reaching the exponent), and the
 * relative error above which a corrupted value is harmful (non-finite values always are). The
 * driver builds it from [corruption] (sim/io/config.c); every backend injects with it. */
typedef struct af_corrupt_mix {
    double nonfinite; /* cumulative share: non-finite */
    double single;    /* cumulative share: + single-bit flips */
    double mantissa;  /* cumulative share: + multi-bit mantissa flips */
    double harm_rel;  /* |v' - v| > harm_rel * |v|: harmful */
} af_corrupt_mix_t;

/* The fields of a double's bit pattern the multi-bit modes flip. */
#define AF_MANTISSA_BITS 0x000fffffffffffffULL
#define AF_EXPONENT_BITS 0x7ff0000000000000ULL

/* A sparse random mask of `field`'s bits (each kept with probability 1/8) with at least two
 * bits set: the multi-bit flips. */
AF_HD uint64_t af_multibit_mask(uint64_t h, uint64_t field, int nbits, int first_bit)
{
    uint64_t a = af_mix64(h + 1U);
    uint64_t b = af_mix64(h + 2U);
    uint64_t c = af_mix64(h + 3U);
    uint64_t m = a & b & c & field;
    if ((m & (m - 1U)) == 0) { /* fewer than two bits: add two distinct bits of the field */
        uint64_t d = af_mix64(h + 4U);
        int i = (int)(d % (uint64_t)nbits);
        int j = (i + 1 + (int)((d >> 20) % (uint64_t)(nbits - 1))) % nbits;
        m |= (1ULL << (first_bit + i)) | (1ULL << (first_bit + j));
    }
    return m;
}

/* Fault injection on a corrupting unit's output: with probability p per element (keyed by
 * seed, step, logical block and element, so it does not depend on where the block runs),
 * replaces the value by one of mix's modes: a NaN with a payload, +Inf or -Inf (a third each);
 * one of the 64 bits flipped; two or more mantissa bits flipped; or two or more bits of bits
 * 0-62 flipped with at least one in the exponent. Sets *kind to what was injected and *harm to
 * 1 when the result is non-finite or its relative error exceeds mix.harm_rel (the simulator's
 * truth: no detector reads it). */
AF_HD double af_inject(double v, double p, uint64_t seed, uint64_t step, uint64_t block,
                       uint64_t elem, af_corrupt_mix_t mix, int *kind, int *harm)
{
    *kind = AF_CORRUPT_NONE;
    *harm = 0;
    if (p <= 0.0) {
        return v;
    }
    uint64_t h = af_hash4(seed, step, block, elem);
    if (af_u01(h) >= p) {
        return v;
    }
    uint64_t h2 = af_mix64(h);
    double m = af_u01(h2);
    uint64_t h3 = af_mix64(h2);
    double out;
    if (m < mix.nonfinite) {
        uint64_t which = h3 % 3U;
        *kind = which == 0 ? AF_CORRUPT_NAN : which == 1 ? AF_CORRUPT_PINF : AF_CORRUPT_NINF;
        out = which == 0
                  ? af_double(0x7ff8000000000000ULL | ((h3 >> 8) & 0x0007ffffffffffffULL) | 1ULL)
              : which == 1 ? af_double(0x7ff0000000000000ULL)
                           : af_double(0xfff0000000000000ULL);
    } else if (m < mix.single) {
        *kind = AF_CORRUPT_BITFLIP;
        out = af_double(af_bits(v) ^ (1ULL << (h3 % 64U)));
    } else if (m < mix.mantissa) {
        *kind = AF_CORRUPT_MULTI_MANTISSA;
        out = af_double(af_bits(v) ^ af_multibit_mask(h3, AF_MANTISSA_BITS, 52, 0));
    } else {
        *kind = AF_CORRUPT_MULTI_EXPONENT;
        uint64_t mask = af_multibit_mask(h3, AF_MANTISSA_BITS | AF_EXPONENT_BITS, 63, 0);
        mask |= 1ULL << (52 + (int)((h3 >> 40) % 11U)); /* at least one exponent bit */
        out = af_double(af_bits(v) ^ mask);
    }
    if (af_nonfinite(out)) {
        *harm = 1;
    } else {
        double err = out - v;
        double mag = v < 0.0 ? -v : v;
        *harm = (err < 0.0 ? -err : err) > mix.harm_rel * mag;
    }
    return out;
}

/* ABFT for the conservative Burgers step: summed over a block's cells, the update telescopes,
 * so the block's mass changes by exactly its two edge fluxes,
 *   sum(un) - sum(u) = c_diff (ur - u[T-1] - u[0] + ul) - c_adv (ur^2 + u[T-1]^2 - u[0]^2 - ul^2),
 * with ul, ur the neighbours' edge cells. The check compares the two sides from the blocks'
 * diagnostics (m_* the lane-ordered sums, e_* the sums of u^2/2) within a rounding bound:
 * each cell's update rounds at most ~7 times and each of the two lane-ordered sums adds
 * T/32 + 5 roundings, on terms whose magnitudes are bounded by sum|u| <= sqrt(2 T e)
 * (Cauchy-Schwarz), the flux terms by c_adv (2 * 2e + ul^2 + ur^2) and the diffusion terms by
 * 4 c_diff sum|u|; the bound takes (T/32 + 24) epsilon (machine epsilon, twice the unit
 * roundoff) times that sum, about twice the worst case. A corruption is seen when it moves the
 * block's mass by more than the bound (about 1e-12 of a block of 256 values of order 1); one
 * that conserves the mass (two errors that cancel) or moves it by less is not. Non-finite new
 * diagnostics always fail it (a huge finite value whose square overflows), and so does a
 * bound or a deviation that is not finite. Returns 1 when the block is consistent. */
AF_HD int af_abft_consistent(double m_old, double e_old, double m_new, double e_new, double u0,
                             double ulast, double ul, double ur, int T, af_coeffs_t k)
{
    if (af_nonfinite(m_new) || af_nonfinite(e_new) || af_nonfinite(m_old) || af_nonfinite(e_old)) {
        return 0;
    }
    double flux = (ur * ur + ulast * ulast - u0 * u0 - ul * ul) * k.c_adv;
    double diff = (ur - ulast - u0 + ul) * k.c_diff;
    double dev = (m_new - m_old) - (diff - flux);
    /* sqrt(2T) sqrt(e), not sqrt(2T e): the product overflows for an energy near DBL_MAX
     * (a value of 1e154 squared), which would make the bound infinite and pass anything. */
    double a_old = sqrt(2.0 * (double)T) * sqrt(e_old);
    double a_new = sqrt(2.0 * (double)T) * sqrt(e_new);
    double scale = a_new + a_old * (1.0 + 4.0 * k.c_diff) +
                   2.0 * k.c_adv * (4.0 * e_old + ul * ul + ur * ur) + (flux < 0 ? -flux : flux) +
                   (diff < 0 ? -diff : diff);
    double bound = ((double)T / 32.0 + 24.0) * 2.220446049250313e-16 * scale;
    if (af_nonfinite(bound) || af_nonfinite(dev)) {
        return 0; /* magnitudes no double check can bound: not consistent */
    }
    return (dev < 0 ? -dev : dev) <= bound;
}

/* The fixed-order block diagnostics: AF_LANES interleaved partial sums (element i goes to
 * partial i % AF_LANES, in increasing i), then a butterfly over the partials, exactly as a CUDA
 * warp does it with __shfl_xor_sync: at offset o, lane l adds lane l ^ o's partial. Lane 0's
 * result only needs the lanes below each offset, low operand first (partial[l] + partial[l+o]
 * for l < o), and that is what this loop computes: the same additions, in the same order, as
 * lane 0 of the butterfly. (The other lanes of the butterfly end with the same value, since
 * IEEE 754 addition is commutative bit for bit.) */
AF_HD double af_lane_tree(double *partial)
{
    for (int o = AF_LANES / 2; o >= 1; o /= 2) {
        for (int l = 0; l < o; ++l) {
            partial[l] = partial[l] + partial[l + o];
        }
    }
    return partial[0];
}

#endif
