/* agefence: reproducible summation (af_rsum.h says what it guarantees and why it can). */
#include "af_rsum.h"

#include <math.h>
#include <string.h>

_Static_assert(sizeof(af_rsum_t) == AF_RSUM_WORDS * sizeof(int64_t),
               "an accumulator must be exactly its words, for the all-reduce");
_Static_assert((AF_RSUM_NORMALISE_EVERY & (AF_RSUM_NORMALISE_EVERY - 1)) == 0,
               "the normalisation period is tested with a mask");
/* The largest double's top bit, 2097 (2^1023 counted from 2^-1074), needs limbs up to 65, and
 * the three digits of the highest significand (lowest bit 2045, limb 63) reach limb 65. */
_Static_assert(AF_RSUM_LIMBS *AF_RSUM_DIGIT_BITS > 2097 && (2045 >> 5) + 2 == AF_RSUM_LIMBS - 1,
               "the limbs must cover the double range");
/* Between calls a limb below the top is below 2^32 + (AF_RSUM_NORMALISE_EVERY - 1) * 2^32 in
 * magnitude; the documented bound and the combining limit must follow from that. */
_Static_assert((int64_t)AF_RSUM_NORMALISE_EVERY << AF_RSUM_DIGIT_BITS <= AF_RSUM_LIMB_BOUND,
               "the limb bound follows from the normalisation period");
_Static_assert(AF_RSUM_LIMB_BOUND <= ((int64_t)1 << 62) / AF_RSUM_COMBINE_MAX,
               "a combined sum's limbs must stay below 2^62, leaving room for the carries");

/* Carries and the split of a negative significand shift negative values right and need the
 * shift to be arithmetic (floor division by a power of two): implementation-defined in C, what
 * GCC and Clang document, and checked here. */
_Static_assert((-9 >> 2) == -3, "right shifts of negative values must be arithmetic");

#define DIGIT_MASK ((uint64_t)0xffffffffu)
#define TOP        (AF_RSUM_LIMBS - 1)
#define FRAC_BITS  52
#define FRAC_MASK  (((uint64_t)1 << FRAC_BITS) - 1)
#define EXP_MAX    0x7ffu
#define SIGN_BIT   ((uint64_t)1 << 63)

void af_rsum_clear(af_rsum_t *acc)
{
    memset(acc, 0, sizeof *acc);
}

/* floor(v / 2^32). */
static inline int64_t carry_of(int64_t v)
{
    return v >> AF_RSUM_DIGIT_BITS;
}

/* One pass from the lowest limb up: each limb below the top keeps its digit in [0, 2^32) and
 * hands the rest to the next. With limbs below 2^62 in magnitude a carry is below 2^30 + 1, so
 * no addition here can overflow. */
static void normalise_limbs(int64_t *w)
{
    int64_t carry = 0;
    for (int i = 0; i < TOP; ++i) {
        int64_t v = w[i] + carry;
        carry = carry_of(v);
        w[i] = (int64_t)((uint64_t)v & DIGIT_MASK);
    }
    w[TOP] += carry;
}

void af_rsum_normalise(af_rsum_t *acc)
{
    normalise_limbs(acc->w);
}

/* Adds x to the limbs or to its counter; the term count is the caller's. A finite double is
 * m * 2^(p - 1074) with m < 2^53 and p = max(biased exponent, 1) - 1, so m lands at bit p of
 * the fixed-point number: bits p..p+52, which are digits k = p / 32 to k + 2 after a shift of
 * p % 32. The signed significand is split there into two digits in [0, 2^32) and a signed top
 * one (below 2^21 in magnitude): a negative term adds positive low digits and borrows from its
 * top one. The rare terms (NaN, infinities, -0.0) only count, on a branch of their own, so the
 * common path touches no counter. */
static inline void add_term(int64_t *w, double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    uint64_t e = (u >> FRAC_BITS) & EXP_MAX;
    uint64_t m = u & FRAC_MASK;
    if (e == EXP_MAX || u == SIGN_BIT) {
        w[e != EXP_MAX     ? AF_RSUM_NEG_ZERO
          : m != 0         ? AF_RSUM_NAN
          : (u & SIGN_BIT) ? AF_RSUM_NEG_INF
                           : AF_RSUM_POS_INF] += 1;
        return;
    }
    uint64_t normal = (e != 0);
    m |= normal << FRAC_BITS;
    uint64_t p = e - normal;
    unsigned s = (unsigned)(p & 31u);
    uint64_t k = p >> 5;
    int64_t neg = -(int64_t)(u >> 63);
    int64_t sm = ((int64_t)m ^ neg) - neg;
    /* sm * 2^s can exceed 64 bits: its low digit is still that of (uint64_t)sm << s, and the
     * rest is floor(sm / 2^(32 - s)), a shift of 1..32 that never reaches the type's width. */
    int64_t rest = sm >> (AF_RSUM_DIGIT_BITS - s);
    w[k] += (int64_t)(((uint64_t)sm << s) & DIGIT_MASK);
    w[k + 1] += (int64_t)((uint64_t)rest & DIGIT_MASK);
    w[k + 2] += rest >> AF_RSUM_DIGIT_BITS;
}

void af_rsum_add(af_rsum_t *acc, double x)
{
    add_term(acc->w, x);
    if ((++acc->w[AF_RSUM_TERMS] & (AF_RSUM_NORMALISE_EVERY - 1)) == 0) {
        normalise_limbs(acc->w);
    }
}

void af_rsum_add_n(af_rsum_t *acc, const double *x, size_t n)
{
    /* Runs up to the next multiple of the period, so the normalisations fall on the same term
     * counts as one add per term would put them, and the words come out the same. */
    while (n > 0) {
        uint64_t done = (uint64_t)acc->w[AF_RSUM_TERMS] & (AF_RSUM_NORMALISE_EVERY - 1);
        size_t run = (size_t)(AF_RSUM_NORMALISE_EVERY - done);
        if (run > n) {
            run = n;
        }
        for (size_t i = 0; i < run; ++i) {
            add_term(acc->w, x[i]);
        }
        acc->w[AF_RSUM_TERMS] += (int64_t)run;
        if ((acc->w[AF_RSUM_TERMS] & (AF_RSUM_NORMALISE_EVERY - 1)) == 0) {
            normalise_limbs(acc->w);
        }
        x += run;
        n -= run;
    }
}

void af_rsum_merge(af_rsum_t *acc, const af_rsum_t *other)
{
    /* Normalising acc first leaves its limbs in [0, 2^32), so other's may be as large as a
     * combined sum's (below 2^62) without the element-wise sum overflowing. */
    normalise_limbs(acc->w);
    for (int i = 0; i < AF_RSUM_WORDS; ++i) {
        acc->w[i] += other->w[i];
    }
    normalise_limbs(acc->w);
}

/* Bit q of the digit array d (digits of 32 bits in uint64_t). */
static int bit_at(const uint64_t *d, int q)
{
    return (int)((d[q >> 5] >> (q & 31)) & 1u);
}

/* Whether any bit of d below bit q is set. */
static int any_below(const uint64_t *d, int q)
{
    if (d[q >> 5] & ((((uint64_t)1) << (q & 31)) - 1u)) {
        return 1;
    }
    for (int i = (q >> 5) - 1; i >= 0; --i) {
        if (d[i] != 0) {
            return 1;
        }
    }
    return 0;
}

/* The 53 bits of d starting at bit q (d padded with two zero digits above its top). */
static uint64_t bits53_at(const uint64_t *d, int q)
{
    int k = q >> 5;
    unsigned s = (unsigned)(q & 31);
    uint64_t v = d[k] | (d[k + 1] << 32);
    if (s != 0) {
        v = (v >> s) | (d[k + 2] << (64 - s));
    }
    return v & ((((uint64_t)1) << 53) - 1u);
}

double af_rsum_value(const af_rsum_t *acc)
{
    const int64_t *w = acc->w;
    if (w[AF_RSUM_NAN] > 0 || (w[AF_RSUM_POS_INF] > 0 && w[AF_RSUM_NEG_INF] > 0)) {
        return NAN;
    }
    if (w[AF_RSUM_POS_INF] > 0) {
        return INFINITY;
    }
    if (w[AF_RSUM_NEG_INF] > 0) {
        return -INFINITY;
    }

    /* The magnitude as nonnegative 32-bit digits, on a copy: the top limb's sign is the sum's,
     * and a negative sum is negated limb by limb and normalised again. */
    int64_t v[AF_RSUM_LIMBS];
    memcpy(v, w, sizeof v);
    normalise_limbs(v);
    uint64_t sign = 0;
    if (v[TOP] < 0) {
        sign = SIGN_BIT;
        for (int i = 0; i < AF_RSUM_LIMBS; ++i) {
            v[i] = -v[i];
        }
        normalise_limbs(v);
    }
    /* The top limb may exceed a digit (it is below 2^63): split it in two, and pad with two
     * zero digits for bits53_at. */
    enum { NDIG = AF_RSUM_LIMBS + 3 };
    uint64_t d[NDIG];
    for (int i = 0; i < TOP; ++i) {
        d[i] = (uint64_t)v[i];
    }
    d[TOP] = (uint64_t)v[TOP] & DIGIT_MASK;
    d[TOP + 1] = (uint64_t)v[TOP] >> 32;
    d[TOP + 2] = 0;
    d[TOP + 3] = 0;

    int h = TOP + 1;
    while (h >= 0 && d[h] == 0) {
        --h;
    }
    if (h < 0) {
        int all_neg_zero = w[AF_RSUM_NEG_ZERO] > 0 && w[AF_RSUM_NEG_ZERO] == w[AF_RSUM_TERMS];
        return all_neg_zero ? -0.0 : 0.0;
    }
    int top_bit = 32 * h;
    for (uint64_t t = d[h] >> 1; t != 0; t >>= 1) {
        ++top_bit;
    }

    uint64_t bits;
    if (top_bit <= FRAC_BITS) {
        /* Below 2^53 units of 2^-1074 every integer is a double (a subnormal, or a normal of
         * the lowest binade), and its bits are the integer itself. */
        bits = d[0] | (d[1] << 32);
    } else {
        /* A normal double: 53 bits from the top, the next one decides, the rest break ties.
         * Its biased exponent is the position of its lowest bit plus one, and a round-up that
         * carries out of the significand carries into the exponent, up to +Inf's bits. */
        int low = top_bit - FRAC_BITS;
        uint64_t exponent = (uint64_t)low + 1;
        if (exponent >= EXP_MAX) {
            bits = (uint64_t)EXP_MAX << FRAC_BITS;
        } else {
            uint64_t m = bits53_at(d, low);
            bits = (exponent << FRAC_BITS) + (m & FRAC_MASK);
            if (bit_at(d, low - 1) && ((m & 1u) || any_below(d, low - 1))) {
                bits += 1;
            }
        }
    }
    bits |= sign;
    double out;
    memcpy(&out, &bits, sizeof out);
    return out;
}
