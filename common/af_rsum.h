/* agefence: reproducible summation of doubles, for the global diagnostics (the fleet's mass and
 * energy summed over blocks that live on any number of ranks, visited in any order).
 *
 * An accumulator holds the exact sum of the doubles added to it as a fixed-point integer with
 * one unit at 2^-1074 (the smallest subnormal), so no addition ever rounds. Its value is the
 * exact sum rounded once, to nearest with ties to even: the same bits whatever the order of the
 * additions and however the terms are split across ranks, and the bits a correctly rounded
 * sum (such as Python's math.fsum) gives.
 *
 * Representation. An accumulator is AF_RSUM_WORDS int64_t words and nothing else, so that the
 * accumulators of several ranks combine by an element-wise integer sum of their words:
 *   - words 0 .. AF_RSUM_LIMBS-1 are the limbs: the sum is the sum over i of
 *     w[i] * 2^(32 i - 1074). A double's 53-bit significand spans two or three of them, chosen
 *     by its exponent, so an add is three integer additions whatever the term; 66 limbs reach
 *     from 2^-1074 to past 2^1024 (bit 2097 of 2112 holds the top bit of the largest double),
 *     the fewest 32-bit digits that hold the double range;
 *   - then five counters: the NaN terms, the +Inf terms, the -Inf terms, the -0.0 terms and all
 *     terms. Counters sum across ranks as the limbs do.
 * The element-wise sum is the fabric's allreduce_sum_i64 (on buffers in the backend's memory
 * space: host memory for "mpi", a copy on the device for "nccl"):
 *     af_rsum_t mass;
 *     af_rsum_clear(&mass);
 *     af_rsum_add_n(&mass, block_mass, nblocks);
 *     AF_CHECK(f->ops->allreduce_sum_i64(f, af_rsum_words(&mass), AF_RSUM_WORDS));
 *     double total = af_rsum_value(&mass);   (the same bits on every rank)
 * 71 words: sizeof(af_rsum_t) is 568 bytes. The struct is plain data: no allocation, copyable
 * with memcpy or assignment; af_rsum_clear (or zero-initialising it) makes an empty sum.
 *
 * Invariants and bounds. Normalising (propagating the carries, which add does itself every
 * AF_RSUM_NORMALISE_EVERY terms and merge does always) leaves limbs 0..64 in [0, 2^32) and the
 * top limb, which carries the sign, signed. Between calls, at most AF_RSUM_NORMALISE_EVERY - 1
 * terms have been added since the last normalisation, each changing a limb by less than 2^32,
 * so every limb below the top satisfies |w[i]| < AF_RSUM_LIMB_BOUND = 2^42. Hence:
 *   - an element-wise sum of up to AF_RSUM_COMBINE_MAX = 2^20 accumulators, each as these
 *     functions leave it (after clear, add, add_n, merge or normalise), cannot overflow a limb
 *     below the top: its limbs stay below 2^62 in magnitude;
 *   - the top limb holds the sum's part above 2^1006, so it stays below 2^62 in magnitude as
 *     long as the terms of all the accumulators combined have a sum of magnitudes below 2^1067,
 *     which any 2^43 (8.8e12) finite doubles have;
 *   - the counters cannot overflow before 2^63 terms.
 * An accumulator produced by such a combined sum may be read (af_rsum_value), merged into
 * another, or added to; call af_rsum_normalise on it before it is itself summed with others
 * again (a second level of all-reduce), which brings it back within the bound.
 *
 * Special values. A NaN term, or both an +Inf and a -Inf term, make the value NaN; otherwise an
 * infinite term makes the value that infinity whatever the finite terms are. A finite exact sum
 * too large for a double rounds to +-Inf as IEEE arithmetic rounds one addition: at or beyond
 * DBL_MAX + 2^970 (half an ulp above DBL_MAX). The exact sum of doubles is a multiple of 2^-1074,
 * so a nonzero sum never rounds to zero.
 *
 * Zeros. The value of an exactly zero sum is -0.0 when at least one term was added and every
 * term was -0.0, and +0.0 otherwise (an empty sum included): what IEEE addition in round to
 * nearest gives, in any order, for the same terms.
 *
 * The functions are not thread-safe on one accumulator; distinct accumulators are independent. */
#ifndef AF_RSUM_H
#define AF_RSUM_H

#include <stddef.h>
#include <stdint.h>

/* The limbs: 32-bit digits with 31 bits of headroom each, the lowest worth 2^-1074. */
#define AF_RSUM_LIMBS      66
#define AF_RSUM_DIGIT_BITS 32

/* The counters that follow the limbs. */
enum {
    AF_RSUM_NAN = AF_RSUM_LIMBS, /* NaN terms (of any sign or payload) */
    AF_RSUM_POS_INF,             /* +Inf terms */
    AF_RSUM_NEG_INF,             /* -Inf terms */
    AF_RSUM_NEG_ZERO,            /* -0.0 terms */
    AF_RSUM_TERMS,               /* all terms, each of the above included */
    AF_RSUM_WORDS                /* the number of int64_t words of an accumulator: 71 */
};

/* add and add_n propagate the carries when the term count reaches a multiple of this. */
#define AF_RSUM_NORMALISE_EVERY 1024
/* Between calls, every limb below the top is below this in magnitude. */
#define AF_RSUM_LIMB_BOUND ((int64_t)1 << 42)
/* The most accumulators whose words may be summed element-wise (ranks of one all-reduce). */
#define AF_RSUM_COMBINE_MAX ((int64_t)1 << 20)

typedef struct af_rsum {
    int64_t w[AF_RSUM_WORDS];
} af_rsum_t;

/* Makes acc the empty sum (value +0.0). */
void af_rsum_clear(af_rsum_t *acc);

/* Adds one term, exactly: three limb additions, and a normalisation (a pass over the limbs)
 * every AF_RSUM_NORMALISE_EVERY terms. Any double, NaN and infinities included. */
void af_rsum_add(af_rsum_t *acc, double x);

/* Adds the n terms x[0..n-1]; the same words as n calls of af_rsum_add, in less time (about
 * 2 ns a term on a current x86 core against 2.7 for af_rsum_add and 0.8 for a naive sum of
 * doubles; tests/test_rsum.c measures it). */
void af_rsum_add_n(af_rsum_t *acc, const double *x, size_t n);

/* Adds other's terms to acc, as the all-reduce does (an element-wise sum of the words), then
 * normalises acc. other may be acc itself (doubling it). Either may come from a combined sum
 * within the bounds above. */
void af_rsum_merge(af_rsum_t *acc, const af_rsum_t *other);

/* Propagates the carries of acc in place: the same sum, limbs 0..64 in [0, 2^32). For an
 * accumulator that came out of an all-reduce, before it is summed with others again. */
void af_rsum_normalise(af_rsum_t *acc);

/* The exact sum of acc's terms, correctly rounded (to nearest, ties to even); NaN, +-Inf and
 * the sign of zero as the header says. acc is not modified. */
double af_rsum_value(const af_rsum_t *acc);

/* acc's words, AF_RSUM_WORDS of them, for the fabric's allreduce_sum_i64: on return from the
 * all-reduce every rank's acc holds the sum of all ranks' terms. */
static inline int64_t *af_rsum_words(af_rsum_t *acc)
{
    return acc->w;
}

/* The number of terms added to acc (on every rank after an all-reduce: the fleet's total). */
static inline int64_t af_rsum_terms(const af_rsum_t *acc)
{
    return acc->w[AF_RSUM_TERMS];
}

#endif
