/* Unit tests of common/af_rsum: the value is the correctly rounded exact sum (against an
 * independent oracle, the exact expansion summation of Shewchuk as Python's math.fsum does
 * it), through cancellation, subnormals, signed zeros, overflow and non-finite terms; it does
 * not depend on the order of the additions nor on how the terms are split into accumulators
 * and merged (by merge, or by the element-wise word sum the all-reduce does); the limbs stay
 * within the documented bound under carry stress and a sum of AF_RSUM_COMBINE_MAX accumulators
 * does not overflow (the sanitizer build traps any signed overflow). The last test measures
 * the time of an add against a naive double sum, for information only. */
#include "common/af_rsum.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/af_time.h"

#define TOP_LIMB (AF_RSUM_LIMBS - 1)

/* ---- helpers ------------------------------------------------------------------------------ */

static uint64_t bits_of(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static double from_bits(uint64_t u)
{
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* The same double to the bit (any NaN matches any NaN: the module promises a NaN, not which). */
#define assert_same_double(got, want) assert_same_double_((got), (want), __FILE__, __LINE__)
static void assert_same_double_(double got, double want, const char *file, int line)
{
    if (isnan(got) && isnan(want)) {
        return;
    }
    if (bits_of(got) != bits_of(want)) {
        fail_msg("%s:%d: got %a (0x%016llx), want %a (0x%016llx)", file, line, got,
                 (unsigned long long)bits_of(got), want, (unsigned long long)bits_of(want));
    }
}

/* splitmix64: a small deterministic generator, so a failure reproduces. */
static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static size_t below(uint64_t *s, size_t n)
{
    return (size_t)(next_u64(s) % n);
}

/* A double of random sign and significand with a biased exponent in [emin, emax] (0 is the
 * subnormals and zero, 2046 the top binade). */
static double rand_double(uint64_t *s, unsigned emin, unsigned emax)
{
    uint64_t r = next_u64(s);
    uint64_t e = emin + below(s, (size_t)(emax - emin) + 1);
    return from_bits((r & ((uint64_t)1 << 63)) | (e << 52) | (r & (((uint64_t)1 << 52) - 1)));
}

static void shuffle(uint64_t *s, double *x, size_t n)
{
    for (size_t i = n; i > 1; --i) {
        size_t j = below(s, i);
        double t = x[i - 1];
        x[i - 1] = x[j];
        x[j] = t;
    }
}

/* The oracle: the correctly rounded sum of finite terms, by Shewchuk's exact expansion (the
 * non-overlapping partials of CPython's math.fsum, and its half-even fix-up across partials).
 * It computes in doubles, not in integers, so it shares nothing with the module; it is only
 * valid when no partial sum of magnitudes reaches 2^1024 (the callers keep the terms below
 * that). */
typedef struct oracle {
    double p[128]; /* non-overlapping, increasing magnitude; their exact sum is the sum */
    size_t np;
} oracle_t;

static void oracle_add(oracle_t *o, double v)
{
    size_t i = 0;
    for (size_t j = 0; j < o->np; ++j) {
        double y = o->p[j];
        if (fabs(v) < fabs(y)) {
            double t = v;
            v = y;
            y = t;
        }
        double hi = v + y;
        double lo = y - (hi - v);
        if (lo != 0.0) {
            o->p[i++] = lo;
        }
        v = hi;
    }
    o->np = i;
    if (v != 0.0) {
        assert_true(isfinite(v));
        assert_true(o->np < sizeof o->p / sizeof o->p[0]);
        o->p[o->np++] = v;
    }
}

static double oracle_value(const oracle_t *o)
{
    const double *p = o->p;
    size_t np = o->np;
    double hi = 0.0;
    if (np > 0) {
        double lo = 0.0;
        hi = p[--np];
        while (np > 0) {
            double v = hi;
            double y = p[--np];
            hi = v + y;
            double yr = hi - v;
            lo = y - yr;
            if (lo != 0.0) {
                break;
            }
        }
        if (np > 0 && ((lo < 0.0 && p[np - 1] < 0.0) || (lo > 0.0 && p[np - 1] > 0.0))) {
            double y = lo * 2.0;
            double v = hi + y;
            double yr = v - hi;
            if (y == yr) {
                hi = v;
            }
        }
    }
    return hi;
}

static double oracle_sum(const double *x, size_t n)
{
    oracle_t o = {.np = 0};
    for (size_t i = 0; i < n; ++i) {
        oracle_add(&o, x[i]);
    }
    return oracle_value(&o);
}

static double naive_sum(const double *x, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; ++i) {
        s += x[i];
    }
    return s;
}

static double rsum_of(const double *x, size_t n)
{
    af_rsum_t a;
    af_rsum_clear(&a);
    for (size_t i = 0; i < n; ++i) {
        af_rsum_add(&a, x[i]);
    }
    return af_rsum_value(&a);
}

/* The largest magnitude of a limb below the top. */
static int64_t max_limb(const af_rsum_t *a)
{
    int64_t m = 0;
    for (int i = 0; i < TOP_LIMB; ++i) {
        int64_t v = a->w[i] < 0 ? -a->w[i] : a->w[i];
        m = v > m ? v : m;
    }
    return m;
}

/* The documented state between calls: limbs below the top under AF_RSUM_LIMB_BOUND. */
static void assert_local_state(const af_rsum_t *a)
{
    assert_true(max_limb(a) < AF_RSUM_LIMB_BOUND);
}

static double *alloc_doubles(size_t n)
{
    double *v = malloc(sizeof(double) * (n > 0 ? n : 1));
    assert_non_null(v);
    return v;
}

/* ---- exactness ---------------------------------------------------------------------------- */

static void test_single_terms_come_back_unchanged(void **state)
{
    (void)state;
    const double special[] = {0.0,
                              1.0,
                              -1.0,
                              0.1,
                              -3.141592653589793,
                              DBL_MIN,
                              -DBL_MIN,
                              from_bits(1),                   /* the smallest subnormal */
                              from_bits(0x000fffffffffffffu), /* the largest subnormal */
                              from_bits(0x800fffffffffffffu),
                              DBL_MAX,
                              -DBL_MAX,
                              ldexp(1.0, 1023),
                              ldexp(1.0, -1022) + ldexp(1.0, -1074)};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; ++i) {
        assert_same_double(rsum_of(&special[i], 1), special[i]);
    }
    /* Every biased exponent, so every limb and every shift within a limb is taken. */
    uint64_t s = 1;
    for (unsigned e = 0; e <= 2046; ++e) {
        for (int rep = 0; rep < 4; ++rep) {
            double x = rand_double(&s, e, e);
            assert_same_double(rsum_of(&x, 1), x);
        }
    }
}

static void test_rounding_is_to_nearest_ties_to_even(void **state)
{
    (void)state;
    const double two53 = ldexp(1.0, 53);
    const double tiny = from_bits(1);
    /* 2^53 + 1 is half-way between 2^53 and 2^53 + 2: even wins, unless anything, however far
     * below, breaks the tie. */
    assert_same_double(rsum_of((double[]){two53, 1.0}, 2), two53);
    assert_same_double(rsum_of((double[]){two53, 1.0, tiny}, 3), two53 + 2.0);
    assert_same_double(rsum_of((double[]){two53, 1.0, -tiny}, 3), two53);
    assert_same_double(rsum_of((double[]){two53 + 2.0, 1.0}, 2), two53 + 4.0);
    assert_same_double(rsum_of((double[]){1.0, ldexp(1.0, -53)}, 2), 1.0);
    assert_same_double(rsum_of((double[]){1.0, ldexp(1.0, -53), tiny}, 3), 1.0 + ldexp(1.0, -52));
    assert_same_double(rsum_of((double[]){-1.0, -ldexp(1.0, -53), -tiny}, 3),
                       -1.0 - ldexp(1.0, -52));
    /* fsum's own example: the 1e-16 makes 1 closer to 2 than to 0 in the last place. */
    assert_same_double(rsum_of((double[]){1e-16, 1.0, 1e16}, 3), 10000000000000002.0);
    /* 0.1 ten times is exactly 10 * 0.1 rounded once: 1 (naive summation gives 1 - 2^-53). */
    double tenth[10];
    for (int i = 0; i < 10; ++i) {
        tenth[i] = 0.1;
    }
    assert_same_double(rsum_of(tenth, 10), 1.0);
    assert_true(naive_sum(tenth, 10) != 1.0);
}

static void test_matches_the_oracle_on_random_vectors(void **state)
{
    (void)state;
    /* Exponent ranges: everything the oracle can sum (up to 2^1000), one magnitude band, the
     * subnormals and the lowest normals, a band around 1. */
    const unsigned ranges[][2] = {{0, 2023}, {1000, 1046}, {0, 60}, {1013, 1033}, {0, 2023}};
    const size_t sizes[] = {1, 2, 3, 10, 100, 1000, 4000};
    double *x = alloc_doubles(4000);
    uint64_t s = 2;
    int differs = 0;
    int vectors = 0;
    for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; ++r) {
        for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; ++z) {
            for (int trial = 0; trial < 8; ++trial) {
                size_t n = sizes[z];
                for (size_t i = 0; i < n; ++i) {
                    x[i] = rand_double(&s, ranges[r][0], ranges[r][1]);
                }
                /* In the last range half the vectors are positive only (mass, energy). */
                if (r == 4 && trial % 2 == 0) {
                    for (size_t i = 0; i < n; ++i) {
                        x[i] = fabs(x[i]);
                    }
                }
                double want = oracle_sum(x, n);
                af_rsum_t a;
                af_rsum_clear(&a);
                af_rsum_add_n(&a, x, n);
                assert_local_state(&a);
                assert_same_double(af_rsum_value(&a), want);
                assert_true(af_rsum_terms(&a) == (int64_t)n);
                differs += naive_sum(x, n) != want;
                vectors++;
            }
        }
    }
    /* The oracle is not a naive sum: a module that summed doubles would have failed above. */
    print_message("rsum: %d of %d random vectors sum differently naively\n", differs, vectors);
    assert_true(differs > vectors / 4);
    free(x);
}

static void test_top_of_the_range_against_the_scaled_oracle(void **state)
{
    (void)state;
    /* Terms from 2^-800 to DBL_MAX: the oracle sums them scaled by 2^-200 (exact: all stay
     * normal) and scales its correctly rounded result back, which rounds to +-Inf exactly when
     * the unscaled sum must (IEEE overflow is decided on the result rounded as if the exponent
     * were unbounded). */
    double *x = alloc_doubles(300);
    double *scaled = alloc_doubles(300);
    uint64_t s = 3;
    int infinite = 0;
    int finite_top = 0;
    for (int trial = 0; trial < 400; ++trial) {
        size_t n = 1 + below(&s, 300);
        unsigned emin = trial % 3 == 0 ? 2040 : 224;
        for (size_t i = 0; i < n; ++i) {
            x[i] = rand_double(&s, emin, 2046);
            if (trial % 4 == 1) {
                x[i] = fabs(x[i]);
            }
            scaled[i] = ldexp(x[i], -200);
        }
        double want = ldexp(oracle_sum(scaled, n), 200);
        assert_same_double(rsum_of(x, n), want);
        infinite += isinf(want);
        finite_top += !isinf(want) && fabs(want) > 0x1p1020;
    }
    assert_true(infinite > 10 && finite_top > 10);
    free(x);
    free(scaled);
}

static void test_catastrophic_cancellation(void **state)
{
    (void)state;
    const double tiny = from_bits(1);
    assert_same_double(rsum_of((double[]){1e308, 1.0, -1e308}, 3), 1.0);
    assert_same_double(naive_sum((double[]){1e308, 1.0, -1e308}, 3), 0.0);
    /* The exact sum passes through twice DBL_MAX on its way to the smallest subnormal. */
    assert_same_double(rsum_of((double[]){DBL_MAX, DBL_MAX, -DBL_MAX, tiny, -DBL_MAX}, 5), tiny);
    /* Many terms of every magnitude and their negatives, plus one small term: exactly it. */
    uint64_t s = 4;
    const size_t half = 2000;
    double *x = alloc_doubles(2 * half + 1);
    const double rest[] = {tiny, 7 * tiny, from_bits(0x000fffffffffffffu), -DBL_MIN, 1.0, 0.0};
    for (size_t t = 0; t < sizeof rest / sizeof rest[0]; ++t) {
        for (size_t i = 0; i < half; ++i) {
            x[i] = rand_double(&s, 0, 2046);
            x[half + i] = -x[i];
        }
        x[2 * half] = rest[t];
        shuffle(&s, x, 2 * half + 1);
        assert_same_double(rsum_of(x, 2 * half + 1), rest[t]);
    }
    /* Exactly zero from nonzero terms is +0.0. */
    for (size_t i = 0; i < half; ++i) {
        x[i] = -rand_double(&s, 0, 2046);
        x[half + i] = -x[i];
    }
    assert_same_double(rsum_of(x, 2 * half), 0.0);
    free(x);
}

static void test_subnormals(void **state)
{
    (void)state;
    const double tiny = from_bits(1);
    /* Subnormals over their whole range, mixed and positive, against the oracle; and below
     * 2^-1034, where 500 of them and every partial sum stay subnormal, so that IEEE addition is
     * exact too and the naive sum is another oracle. */
    uint64_t s = 5;
    double x[500];
    for (int trial = 0; trial < 40; ++trial) {
        for (size_t i = 0; i < 500; ++i) {
            x[i] = rand_double(&s, 0, 0);
            if (trial % 2) {
                x[i] = fabs(x[i]);
            }
            if (trial >= 20) {
                x[i] = from_bits(bits_of(x[i]) & ~(((uint64_t)1 << 52) - ((uint64_t)1 << 40)));
            }
        }
        assert_same_double(rsum_of(x, 500), oracle_sum(x, 500));
        if (trial >= 20) {
            assert_same_double(rsum_of(x, 500), naive_sum(x, 500));
        }
    }
    /* Into and out of the normals. */
    assert_same_double(rsum_of((double[]){DBL_MIN - tiny, tiny}, 2), DBL_MIN);
    assert_same_double(rsum_of((double[]){-DBL_MIN, tiny}, 2), -(DBL_MIN - tiny));
    assert_same_double(rsum_of((double[]){tiny, tiny, tiny, -tiny}, 4), 2 * tiny);
    assert_same_double(rsum_of((double[]){1.0, tiny, -1.0}, 3), tiny);
}

static void test_signed_zeros(void **state)
{
    (void)state;
    af_rsum_t a;
    af_rsum_clear(&a);
    assert_same_double(af_rsum_value(&a), 0.0);
    assert_same_double(rsum_of((double[]){-0.0}, 1), -0.0);
    assert_same_double(rsum_of((double[]){-0.0, -0.0, -0.0}, 3), -0.0);
    assert_same_double(rsum_of((double[]){-0.0, 0.0}, 2), 0.0);
    assert_same_double(rsum_of((double[]){0.0, -0.0}, 2), 0.0);
    assert_same_double(rsum_of((double[]){-1.0, 1.0}, 2), 0.0);
    assert_same_double(rsum_of((double[]){-1.0, 1.0, -0.0}, 3), 0.0);
    /* The same as IEEE addition, in every order of the same terms. */
    assert_same_double(-0.0 + -0.0, -0.0);
    assert_same_double(-1.0 + 1.0 + -0.0, 0.0);
    /* An empty accumulator merged in changes nothing; one of +0.0 makes the sum +0.0. */
    af_rsum_t b;
    af_rsum_clear(&a);
    af_rsum_clear(&b);
    af_rsum_add(&a, -0.0);
    af_rsum_merge(&a, &b);
    assert_same_double(af_rsum_value(&a), -0.0);
    af_rsum_add(&b, 0.0);
    af_rsum_merge(&a, &b);
    assert_same_double(af_rsum_value(&a), 0.0);
    /* -0.0 terms do not disturb a nonzero sum. */
    assert_same_double(rsum_of((double[]){-0.0, 2.5, -0.0}, 3), 2.5);
}

static void test_overflow_rounds_to_infinity(void **state)
{
    (void)state;
    const double half_ulp = ldexp(1.0, 970); /* half an ulp of DBL_MAX */
    const double tiny = from_bits(1);
    assert_same_double(rsum_of((double[]){DBL_MAX, DBL_MAX}, 2), INFINITY);
    assert_same_double(rsum_of((double[]){-DBL_MAX, -DBL_MAX}, 2), -INFINITY);
    assert_same_double(rsum_of((double[]){DBL_MAX, DBL_MAX, -DBL_MAX}, 3), DBL_MAX);
    /* The threshold: DBL_MAX + half an ulp is a tie, which goes to the even 2^1024: +Inf. */
    assert_same_double(rsum_of((double[]){DBL_MAX, half_ulp}, 2), INFINITY);
    assert_same_double(rsum_of((double[]){DBL_MAX, half_ulp, -tiny}, 3), DBL_MAX);
    assert_same_double(rsum_of((double[]){-DBL_MAX, -half_ulp}, 2), -INFINITY);
    assert_same_double(rsum_of((double[]){-DBL_MAX, -half_ulp, tiny}, 3), -DBL_MAX);
    assert_same_double(DBL_MAX + half_ulp, INFINITY);
    /* 2^15 times 2^1023 is 2^1038: the top limb alone, exactly 2^32 in it, holds the sum. */
    af_rsum_t a;
    af_rsum_clear(&a);
    for (int i = 0; i < 1 << 15; ++i) {
        af_rsum_add(&a, 0x1p1023);
    }
    assert_same_double(af_rsum_value(&a), INFINITY);
    /* A thousand DBL_MAX less 999 and a half of them. */
    af_rsum_clear(&a);
    for (int i = 0; i < 1000; ++i) {
        af_rsum_add(&a, DBL_MAX);
    }
    assert_same_double(af_rsum_value(&a), INFINITY);
    for (int i = 0; i < 999; ++i) {
        af_rsum_add(&a, -DBL_MAX);
    }
    af_rsum_add(&a, -DBL_MAX / 2);
    assert_same_double(af_rsum_value(&a), DBL_MAX / 2);
}

static void test_nonfinite_terms(void **state)
{
    (void)state;
    const double qnan = NAN;
    const double neg_nan = from_bits(0xfff0000000000001u); /* negative, signalling payload */
    assert_true(isnan(rsum_of(&qnan, 1)));
    assert_true(isnan(rsum_of(&neg_nan, 1)));
    assert_true(isnan(rsum_of((double[]){1.0, qnan, 2.0}, 3)));
    assert_true(isnan(rsum_of((double[]){INFINITY, qnan}, 2)));
    assert_true(isnan(rsum_of((double[]){INFINITY, -INFINITY}, 2)));
    assert_same_double(rsum_of((double[]){INFINITY}, 1), INFINITY);
    assert_same_double(rsum_of((double[]){INFINITY, INFINITY, 5.0}, 3), INFINITY);
    assert_same_double(rsum_of((double[]){-INFINITY, DBL_MAX, DBL_MAX}, 3), -INFINITY);
    /* An infinite term decides whatever the finite ones sum to, even an overflow the other
     * way (which IEEE addition, in some orders, would turn into NaN). */
    assert_same_double(rsum_of((double[]){INFINITY, -DBL_MAX, -DBL_MAX}, 3), INFINITY);

    /* The counters count, and combine by merge as by the all-reduce. */
    af_rsum_t a;
    af_rsum_t b;
    af_rsum_clear(&a);
    af_rsum_clear(&b);
    af_rsum_add_n(&a, (double[]){INFINITY, 1.0, INFINITY, -0.0}, 4);
    af_rsum_add_n(&b, (double[]){qnan, -INFINITY, neg_nan}, 3);
    assert_true(a.w[AF_RSUM_POS_INF] == 2 && a.w[AF_RSUM_NEG_INF] == 0);
    assert_true(a.w[AF_RSUM_NEG_ZERO] == 1 && af_rsum_terms(&a) == 4);
    assert_true(b.w[AF_RSUM_NAN] == 2 && b.w[AF_RSUM_NEG_INF] == 1);
    af_rsum_t c = a;
    af_rsum_merge(&c, &b);
    assert_true(isnan(af_rsum_value(&c)));
    assert_true(c.w[AF_RSUM_NAN] == 2 && c.w[AF_RSUM_POS_INF] == 2 && c.w[AF_RSUM_NEG_INF] == 1 &&
                af_rsum_terms(&c) == 7);
    af_rsum_clear(&b);
    af_rsum_add(&b, -INFINITY);
    c = a;
    af_rsum_merge(&c, &b);
    assert_true(isnan(af_rsum_value(&c)));
    af_rsum_clear(&b);
    af_rsum_add(&b, -DBL_MAX);
    c = a;
    af_rsum_merge(&c, &b);
    assert_same_double(af_rsum_value(&c), INFINITY);
}

/* ---- independence of order and partition -------------------------------------------------- */

static void test_order_does_not_matter(void **state)
{
    (void)state;
    enum { N = 4096 };
    double *x = alloc_doubles(N);
    uint64_t s = 6;
    for (int kind = 0; kind < 3; ++kind) {
        for (size_t i = 0; i < N; ++i) {
            x[i] = kind == 0   ? rand_double(&s, 0, 2023)
                   : kind == 1 ? rand_double(&s, 1000, 1046)
                               : fabs(rand_double(&s, 1013, 1033)); /* positive, like mass */
        }
        const double want = oracle_sum(x, N);
        const double first_naive = naive_sum(x, N);
        int naive_moved = 0;
        for (int perm = 0; perm < 40; ++perm) {
            shuffle(&s, x, N);
            assert_same_double(rsum_of(x, N), want);
            naive_moved |= naive_sum(x, N) != first_naive;
        }
        /* Naive summation depends on the order for every kind of vector here. */
        assert_true(naive_moved);
    }
    free(x);
}

/* Splits x into `pieces` accumulators at random cuts (some pieces may be empty), and checks
 * that merging them in a random order, and summing their words in another random order as the
 * all-reduce does, both give `want`. */
static void check_partition(uint64_t *s, const double *x, size_t n, int pieces, double want)
{
    af_rsum_t part[8];
    size_t cut[9];
    cut[0] = 0;
    cut[pieces] = n;
    for (int p = 1; p < pieces; ++p) {
        cut[p] = below(s, n + 1);
    }
    for (int p = 1; p < pieces; ++p) { /* insertion sort of the inner cuts */
        for (int q = p; q > 1 && cut[q - 1] > cut[q]; --q) {
            size_t t = cut[q];
            cut[q] = cut[q - 1];
            cut[q - 1] = t;
        }
    }
    for (int p = 0; p < pieces; ++p) {
        af_rsum_clear(&part[p]);
        if (p % 2 == 0) {
            af_rsum_add_n(&part[p], x + cut[p], cut[p + 1] - cut[p]);
        } else {
            for (size_t i = cut[p]; i < cut[p + 1]; ++i) {
                af_rsum_add(&part[p], x[i]);
            }
        }
        assert_local_state(&part[p]);
    }
    int order[8];
    for (int p = 0; p < pieces; ++p) {
        order[p] = p;
    }
    for (int p = pieces; p > 1; --p) {
        int j = (int)below(s, (size_t)p);
        int t = order[p - 1];
        order[p - 1] = order[j];
        order[j] = t;
    }
    af_rsum_t merged = part[order[0]];
    for (int p = 1; p < pieces; ++p) {
        af_rsum_merge(&merged, &part[order[p]]);
        assert_local_state(&merged);
    }
    assert_same_double(af_rsum_value(&merged), want);
    assert_true(af_rsum_terms(&merged) == (int64_t)n);
    /* Merged into itself it doubles (a doubling rounds as the sum did, or overflows). */
    af_rsum_t twice = merged;
    af_rsum_merge(&twice, &twice);
    assert_same_double(af_rsum_value(&twice), ldexp(want, 1));

    af_rsum_t reduced;
    af_rsum_clear(&reduced);
    for (int p = pieces - 1; p >= 0; --p) {
        const int64_t *src = af_rsum_words(&part[order[p]]);
        int64_t *dst = af_rsum_words(&reduced);
        for (int i = 0; i < AF_RSUM_WORDS; ++i) {
            dst[i] += src[i];
        }
    }
    assert_same_double(af_rsum_value(&reduced), want);
}

static void test_partition_does_not_matter(void **state)
{
    (void)state;
    enum { N = 3000 };
    double *x = alloc_doubles(N);
    uint64_t s = 7;
    for (int trial = 0; trial < 12; ++trial) {
        size_t n = trial < 2 ? (size_t)trial : N - below(&s, 100);
        for (size_t i = 0; i < n; ++i) {
            x[i] = rand_double(&s, trial % 2 ? 1000 : 0, trial % 2 ? 1046 : 2023);
        }
        const double want = oracle_sum(x, n);
        for (int pieces = 1; pieces <= 8; ++pieces) {
            for (int rep = 0; rep < 4; ++rep) {
                check_partition(&s, x, n, pieces, want);
            }
        }
    }
    free(x);
}

static void test_add_n_gives_the_words_of_add(void **state)
{
    (void)state;
    enum { N = 5000 };
    double *x = alloc_doubles(N);
    uint64_t s = 8;
    for (size_t i = 0; i < N; ++i) {
        x[i] = rand_double(&s, 0, 2046);
    }
    x[17] = NAN;
    x[2000] = -0.0;
    for (int trial = 0; trial < 10; ++trial) {
        af_rsum_t one;
        af_rsum_t batch;
        af_rsum_clear(&one);
        af_rsum_clear(&batch);
        /* Start both at a term count that is not a multiple of the period. */
        size_t skew = below(&s, 3000);
        for (size_t i = 0; i < skew; ++i) {
            af_rsum_add(&one, 1.0);
            af_rsum_add(&batch, 1.0);
        }
        for (size_t i = 0; i < N; ++i) {
            af_rsum_add(&one, x[i]);
        }
        for (size_t i = 0; i < N;) {
            size_t run = below(&s, 2500);
            run = run > N - i ? N - i : run;
            af_rsum_add_n(&batch, x + i, run);
            i += run;
        }
        assert_memory_equal(one.w, batch.w, sizeof one.w);
    }
    free(x);
}

/* ---- carries ------------------------------------------------------------------------------ */

static void test_many_largest_doubles_do_not_overflow(void **state)
{
    (void)state;
    /* 3 * 2^20 + 5 times DBL_MAX (a sum of about 2^1045), then as many -DBL_MAX, then 1. */
    const int64_t n = 3 * ((int64_t)1 << 20) + 5;
    af_rsum_t a;
    af_rsum_clear(&a);
    for (int64_t i = 0; i < n; ++i) {
        af_rsum_add(&a, DBL_MAX);
        if (i < 3000 || i % 997 == 0) {
            assert_local_state(&a);
        }
    }
    assert_same_double(af_rsum_value(&a), INFINITY);
    for (int64_t i = 0; i < n; ++i) {
        af_rsum_add(&a, -DBL_MAX);
    }
    assert_local_state(&a);
    assert_same_double(af_rsum_value(&a), 0.0);
    af_rsum_add(&a, 1.0);
    assert_same_double(af_rsum_value(&a), 1.0);
    assert_true(af_rsum_terms(&a) == 2 * n + 1);
}

/* m * 2^(p - 1074): the significand m with its lowest bit at fixed-point bit p. */
static double term_at(double m, int p)
{
    return ldexp(m, p - 1074);
}

/* The i-th of a sequence of terms that each put (nearly) the largest digit a term can, 2^32 - 1,
 * into limb 20, alternately through their low digit and their middle one. A positive term's
 * digits are those of its significand: 2^53 - 1 at bit 640 (low digit 2^32 - 1) and at bit
 * 619 (middle digit 2^32 - 1). A negative term's low and middle digits are those of the
 * negated significand in two's complement, and its top digit borrows: -(2^52 + 1) at bit 640
 * (low digit 2^32 - 1) and at bit 608 (middle digit 2^32 - 2^20 - 1). */
static double same_digit_term(int64_t i, double sign)
{
    if (sign > 0) {
        return term_at(9007199254740991.0, i % 2 ? 32 * 19 + 11 : 32 * 20);
    }
    return -term_at(4503599627370497.0, i % 2 ? 32 * 19 : 32 * 20);
}

static void add_same_digit(af_rsum_t *a, int64_t count, double sign)
{
    for (int64_t i = 0; i < count; ++i) {
        af_rsum_add(a, same_digit_term(i, sign));
    }
}

static void test_terms_on_one_digit_stay_within_the_bound(void **state)
{
    (void)state;
    enum { N = 400000 };
    double *x = alloc_doubles(N);
    for (int signs = 0; signs < 2; ++signs) {
        const double sign = signs ? -1.0 : 1.0;
        af_rsum_t a;
        af_rsum_clear(&a);
        int64_t peak = 0;
        for (int64_t i = 0; i < N; ++i) {
            x[i] = same_digit_term(i, sign);
            af_rsum_add(&a, x[i]);
            /* The term that ends a period normalises; the one before leaves the most pending. */
            if ((af_rsum_terms(&a) & (AF_RSUM_NORMALISE_EVERY - 1)) ==
                AF_RSUM_NORMALISE_EVERY - 1) {
                assert_local_state(&a);
                peak = max_limb(&a) > peak ? max_limb(&a) : peak;
            }
        }
        /* The stress reaches the bound's order: more than half of it. */
        assert_true(peak > AF_RSUM_LIMB_BOUND / 2);
        assert_same_double(af_rsum_value(&a), oracle_sum(x, N));
    }
    free(x);
}

/* Sums the words of `count` accumulators as the all-reduce does, alternating between a and b
 * (count even): plain int64 additions, which the sanitizer build traps on overflow. */
static void combine(af_rsum_t *out, const af_rsum_t *a, const af_rsum_t *b, int64_t count)
{
    af_rsum_clear(out);
    for (int64_t r = 0; r < count; ++r) {
        const af_rsum_t *src = r % 2 ? b : a;
        for (int i = 0; i < AF_RSUM_WORDS; ++i) {
            out->w[i] += src->w[i];
        }
    }
}

static void test_combining_the_most_accumulators_does_not_overflow(void **state)
{
    (void)state;
    /* The worst accumulators: AF_RSUM_NORMALISE_EVERY - 1 pending terms each adding (nearly)
     * 2^32 - 1 to limb 20, above a digit that normalisation left; of positive terms and of
     * negative ones. */
    af_rsum_t pos;
    af_rsum_t neg;
    af_rsum_clear(&pos);
    af_rsum_clear(&neg);
    add_same_digit(&pos, 5 * AF_RSUM_NORMALISE_EVERY - 1, 1.0);
    add_same_digit(&neg, 5 * AF_RSUM_NORMALISE_EVERY - 1, -1.0);
    assert_local_state(&pos);
    assert_local_state(&neg);
    assert_true(max_limb(&pos) > AF_RSUM_LIMB_BOUND / 2 && max_limb(&neg) > AF_RSUM_LIMB_BOUND / 2);

    /* 2^20 copies of the positive one: limb 20 reaches above 2^61, below 2^62. The sum is
     * 2^20 times the exact sum of one, so its rounding is 2^20 times that of one. */
    af_rsum_t total;
    combine(&total, &pos, &pos, AF_RSUM_COMBINE_MAX);
    assert_true(total.w[20] > ((int64_t)1 << 61));
    assert_same_double(af_rsum_value(&total), ldexp(af_rsum_value(&pos), 20));
    assert_true(af_rsum_terms(&total) == AF_RSUM_COMBINE_MAX * af_rsum_terms(&pos));
    /* Normalised, it is an accumulator in the local state again, with the same value. */
    double before = af_rsum_value(&total);
    af_rsum_normalise(&total);
    assert_local_state(&total);
    assert_same_double(af_rsum_value(&total), before);

    /* Half positive, half negative. */
    af_rsum_t both = pos;
    af_rsum_merge(&both, &neg);
    combine(&total, &pos, &neg, AF_RSUM_COMBINE_MAX);
    assert_same_double(af_rsum_value(&total), ldexp(af_rsum_value(&both), 19));

    /* The top limb: 2^19 accumulators of 1023 DBL_MAX and 2^19 of 1023 -DBL_MAX and a 1. A
     * combined accumulator still merges into a local one. */
    af_rsum_clear(&pos);
    af_rsum_clear(&neg);
    for (int i = 0; i < AF_RSUM_NORMALISE_EVERY - 1; ++i) {
        af_rsum_add(&pos, DBL_MAX);
        af_rsum_add(&neg, -DBL_MAX);
    }
    af_rsum_add(&neg, 1.0);
    combine(&total, &pos, &neg, AF_RSUM_COMBINE_MAX);
    assert_same_double(af_rsum_value(&total), 0x1p19);
    af_rsum_t local;
    af_rsum_clear(&local);
    af_rsum_add(&local, 0.5);
    af_rsum_merge(&local, &total);
    assert_same_double(af_rsum_value(&local), 0x1p19 + 0.5);
    assert_local_state(&local);
}

/* ---- against naive summation, and how long an add takes ----------------------------------- */

static void test_naive_summation_differs(void **state)
{
    (void)state;
    /* Each of these sums differently when the doubles are simply added in order. */
    const double a[] = {1e308, 1.0, -1e308};
    const double b[] = {1.0, 1e100, 1.0, -1e100};
    const double c[] = {0.1, 0.2, 0.3};
    assert_same_double(rsum_of(a, 3), 1.0);
    assert_same_double(rsum_of(b, 4), 2.0);
    assert_same_double(rsum_of(c, 3), oracle_sum(c, 3));
    assert_true(naive_sum(a, 3) != rsum_of(a, 3));
    assert_true(naive_sum(b, 4) != rsum_of(b, 4));
    assert_true(naive_sum(c, 3) != rsum_of(c, 3)); /* 0.6000000000000001 against 0.6 */
}

static void test_measure_ns_per_add(void **state)
{
    (void)state;
    /* 10^7 adds: 10 passes over 10^6 positive terms spread over six decades (a fleet's block
     * masses), against the naive sum of the same. Printed only: no time is asserted. */
    enum { N = 1000000, PASSES = 10 };
    double *x = alloc_doubles(N);
    uint64_t s = 9;
    for (size_t i = 0; i < N; ++i) {
        x[i] = ldexp(1.0 + (double)(next_u64(&s) >> 11) * 0x1p-53, (int)below(&s, 20) - 10);
    }
    af_rsum_t a;
    af_rsum_t b;
    af_rsum_clear(&a);
    af_rsum_clear(&b);
    double t0 = af_now_us();
    for (int p = 0; p < PASSES; ++p) {
        for (size_t i = 0; i < N; ++i) {
            af_rsum_add(&a, x[i]);
        }
    }
    double t1 = af_now_us();
    for (int p = 0; p < PASSES; ++p) {
        af_rsum_add_n(&b, x, N);
    }
    double t2 = af_now_us();
    volatile double naive_out = 0.0; /* kept, so the naive loop is not optimised away */
    double naive = 0.0;
    for (int p = 0; p < PASSES; ++p) {
        for (size_t i = 0; i < N; ++i) {
            naive += x[i];
        }
    }
    naive_out = naive;
    double t3 = af_now_us();
    double v = af_rsum_value(&a);
    double t4 = af_now_us();
    const double adds = (double)N * PASSES;
    print_message("rsum: %.2f ns per af_rsum_add, %.2f ns per term of af_rsum_add_n, %.2f ns "
                  "per naive double add; af_rsum_value %.2f us\n",
                  (t1 - t0) * 1e3 / adds, (t2 - t1) * 1e3 / adds, (t3 - t2) * 1e3 / adds, t4 - t3);
    assert_memory_equal(a.w, b.w, sizeof a.w);
    oracle_t o = {.np = 0};
    for (int p = 0; p < PASSES; ++p) {
        for (size_t i = 0; i < N; ++i) {
            oracle_add(&o, x[i]);
        }
    }
    assert_same_double(v, oracle_value(&o));
    assert_true(v != naive_out); /* the naive sum of these 10^7 terms is off in its last bits */
    free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_terms_come_back_unchanged),
        cmocka_unit_test(test_rounding_is_to_nearest_ties_to_even),
        cmocka_unit_test(test_matches_the_oracle_on_random_vectors),
        cmocka_unit_test(test_top_of_the_range_against_the_scaled_oracle),
        cmocka_unit_test(test_catastrophic_cancellation),
        cmocka_unit_test(test_subnormals),
        cmocka_unit_test(test_signed_zeros),
        cmocka_unit_test(test_overflow_rounds_to_infinity),
        cmocka_unit_test(test_nonfinite_terms),
        cmocka_unit_test(test_order_does_not_matter),
        cmocka_unit_test(test_partition_does_not_matter),
        cmocka_unit_test(test_add_n_gives_the_words_of_add),
        cmocka_unit_test(test_many_largest_doubles_do_not_overflow),
        cmocka_unit_test(test_terms_on_one_digit_stay_within_the_bound),
        cmocka_unit_test(test_combining_the_most_accumulators_does_not_overflow),
        cmocka_unit_test(test_naive_summation_differs),
        cmocka_unit_test(test_measure_ns_per_add),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
