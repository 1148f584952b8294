/* Unit tests of the masked-attention workload (kernels/af_attention.h, kernels/workloads.c,
 * the cpu backend's attention paths): the polynomial exponential against the C library's, the
 * causal softmax on its edge rows, masking by select against masking by multiplication, the
 * ABFT verdict, and the cpu backend's vector path against the scalar row function bit for bit
 * (with and without injection), across shapes and random blocks. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../common/af_rsum.h"
#include "../kernels/kernels.h"

static af_attn_params_t params(int tokens, int dim)
{
    af_wl_config_t c;
    memset(&c, 0, sizeof c);
    c.blocks = 1;
    c.block_len = tokens;
    c.dim = dim;
    return af_workload_attention.params(&c).attn;
}

static void random_block(double *u, int n, uint64_t seed, double lo, double hi)
{
    for (int i = 0; i < n; ++i) {
        u[i] = lo + (hi - lo) * af_u01(af_hash4(seed, 7, (uint64_t)i, 0));
    }
}

/* got and want bit for bit, except that a NaN matches any NaN: which operand's NaN an x86
 * addition passes on (and so its sign and payload) follows the operand order the compiler
 * chose, which C leaves it free to swap; a NaN is a NaN to the containment and the verdict. */
static void assert_same_values(const double *got, const double *want, int n)
{
    for (int i = 0; i < n; ++i) {
        if (got[i] != got[i] && want[i] != want[i]) {
            continue;
        }
        if (af_bits(got[i]) != af_bits(want[i])) {
            fail_msg("value %d: %a (0x%016llx), expected %a (0x%016llx)", i, got[i],
                     (unsigned long long)af_bits(got[i]), want[i],
                     (unsigned long long)af_bits(want[i]));
        }
    }
}

/* Ulps between two finite doubles of the same sign. */
static double ulps(double a, double b)
{
    int64_t ia = (int64_t)af_bits(a);
    int64_t ib = (int64_t)af_bits(b);
    return fabs((double)(ia - ib));
}

static void test_exp_polynomial_within_two_ulp_of_libm(void **state)
{
    (void)state;
    double worst = 0.0;
    double at = 0.0;
    for (int i = 0; i <= 2000000; ++i) {
        double x = -708.0 + 717.0 * (double)i / 2000000.0; /* [-708, 9] */
        double e = af_exp(x);
        double want = exp(x);
        double u = ulps(e, want);
        if (u > worst) {
            worst = u;
            at = x;
        }
    }
    print_message("af_exp: at most %.0f ulp from exp() (at x = %.17g)\n", worst, at);
    assert_true(worst <= 2.0);
    assert_true(af_exp(0.0) == 1.0);
    assert_true(af_exp(-1e9) == 0.0);
    assert_true(af_exp(-708.5) == 0.0);
    assert_true(af_nonfinite(af_exp(709.5)) && af_exp(709.5) > 0.0);
    assert_true(isnan(af_exp(NAN)));
    /* The guards and the core agree where both apply. */
    assert_true(af_exp(-707.0) == af_exp_core(-707.0));
}

/* Row 0 attends to itself alone: its weight is exactly 1 (exp(0) / 1) and its attention
 * output is its own (shifted, last negated) features. */
static void test_single_token_row_weight_is_exactly_one(void **state)
{
    (void)state;
    const int T = 5;
    const int d = 3;
    af_attn_params_t p = params(T, d);
    double u[15];
    double un[15];
    double srow[5];
    random_block(u, T * d, 11, -1.0, 1.0);
    af_corrupt_mix_t none;
    memset(&none, 0, sizeof none);
    int inj = -1;
    int harm = -1;
    int ok = 0;
    af_attn_row(u, un, 0, 0.25, p, 0.0, 0, 0, 0, none, srow, &inj, &harm, &ok);
    assert_int_equal(ok, 1);
    assert_int_equal(inj, 0);
    assert_true(srow[0] == 1.0);
    for (int j = 1; j < T; ++j) {
        assert_true(srow[j] == 0.0); /* masked: weight exactly 0 */
    }
    for (int k = 0; k < d; ++k) {
        double y = k + 1 < d ? u[(k + 1) * T] : -u[0];
        assert_true(un[k * T] == af_attn_update(u[k * T], y, 0.25, p));
    }
}

/* A row whose scores are all equal (every other entry masked out by the causal mask or equal)
 * gets uniform weights; a row where every visible score is the masked value itself (as if all
 * were masked) still has finite weights summing to 1: the softmax's max shift keeps exp(0). */
static void test_uniform_and_fully_masked_rows(void **state)
{
    (void)state;
    const int T = 8;
    const int d = 4;
    af_attn_params_t p = params(T, d);
    double u[32];
    double un[32];
    double srow[8];
    for (int i = 0; i < T * d; ++i) {
        u[i] = 0.0; /* every score 0: row i has i + 1 equal weights */
    }
    af_corrupt_mix_t none;
    memset(&none, 0, sizeof none);
    for (int i = 0; i < T; ++i) {
        int inj = 0;
        int harm = 0;
        int ok = 0;
        af_attn_row(u, un, i, 0.0, p, 0.0, 0, 0, 0, none, srow, &inj, &harm, &ok);
        assert_int_equal(ok, 1);
        for (int j = 0; j < T; ++j) {
            assert_true(srow[j] == (j <= i ? 1.0 / (double)(i + 1) : 0.0));
        }
    }
    /* Scores at the masked value: exp(s - m) = 1 for each visible token, no NaN. */
    double s[8];
    for (int j = 0; j < T; ++j) {
        s[j] = AF_ATTN_MASKED;
    }
    double m = s[0];
    double z = 0.0;
    for (int j = 0; j < T; ++j) {
        double e = af_mask_select(j <= 3, af_exp(s[j] - m), 0.0);
        z = z + e;
    }
    assert_true(z == 4.0);
}

/* The causal mask by select keeps a future token's NaN out of earlier rows; the same weights
 * applied by multiplication (weight 0 times NaN) let it through. */
static void test_mask_by_select_stops_a_future_nan_multiplication_does_not(void **state)
{
    (void)state;
    const int T = 8;
    const int d = 4;
    af_attn_params_t p = params(T, d);
    double u[32];
    double un[32];
    double srow[8];
    random_block(u, T * d, 5, -1.0, 1.0);
    for (int k = 0; k < d; ++k) {
        u[k * T + (T - 1)] = NAN; /* the last token is poisoned */
    }
    af_corrupt_mix_t none;
    memset(&none, 0, sizeof none);
    for (int i = 0; i < T; ++i) {
        int inj = 0;
        int harm = 0;
        int ok = 0;
        af_attn_row(u, un, i, 0.0, p, 0.0, 0, 0, 0, none, srow, &inj, &harm, &ok);
        for (int k = 0; k < d; ++k) {
            if (i < T - 1) {
                assert_false(af_nonfinite(un[k * T + i]));
            } else {
                assert_true(isnan(un[k * T + i]));
            }
        }
        assert_int_equal(ok, i < T - 1);
        if (i == 0) {
            /* Row 0's weights by multiplication: sum_j w_j x_j with w_j = 0 for j > 0. */
            double y = 0.0;
            for (int j = 0; j < T; ++j) {
                y = y + af_mask_multiply(1, srow[j], 0.0) * u[1 * T + j];
            }
            assert_true(isnan(y));
        }
    }
}

/* No false alarm on clean rows across random blocks and shapes; a weight corrupted to a
 * non-finite value or moved by more than the bound fails the row. */
static void test_abft_row_sums_clean_and_corrupted(void **state)
{
    (void)state;
    const int shapes[][2] = {{3, 1}, {8, 8}, {16, 5}, {64, 16}, {256, 2}};
    double u[256 * 16];
    double un[256 * 16];
    double srow[256];
    af_corrupt_mix_t none;
    memset(&none, 0, sizeof none);
    for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; ++c) {
        af_attn_params_t p = params(shapes[c][0], shapes[c][1]);
        for (uint64_t seed = 0; seed < 20; ++seed) {
            random_block(u, p.tokens * p.dim, seed, -1.0, 1.0);
            for (int i = 0; i < p.tokens; ++i) {
                int inj = 0;
                int harm = 0;
                int ok = 0;
                af_attn_row(u, un, i, 0.1, p, 0.0, 0, 0, 0, none, srow, &inj, &harm, &ok);
                assert_int_equal(ok, 1);
            }
        }
    }
    /* Every element corrupted with non-finite values: the row fails, and all is counted. */
    af_attn_params_t p = params(16, 4);
    random_block(u, 64, 3, -1.0, 1.0);
    af_corrupt_mix_t nan_mix = {1.0, 1.0, 1.0, 1e-6};
    int inj = 0;
    int harm = 0;
    int ok = 1;
    af_attn_row(u, un, 7, 0.0, p, 1.0, 9, 1, 2, nan_mix, srow, &inj, &harm, &ok);
    assert_int_equal(ok, 0);
    assert_int_equal(inj, 8 + 4);  /* the row's 8 weights in use (j <= 7) and 4 outputs */
    assert_int_equal(harm, 8 + 4); /* every one non-finite */
    for (int k = 0; k < 4; ++k) {
        assert_true(af_nonfinite(un[k * 16 + 7])); /* a non-finite weight ends non-finite */
    }
    /* Only non-finite weights, outputs left alone (p = 1 on the weights' counters alone is not
     * possible, so check the propagation directly): an infinite weight gives infinite or NaN
     * values, which the update's clamp leaves non-finite. */
    assert_true(af_nonfinite(af_attn_update(0.5, INFINITY, 0.0, p)));
    assert_true(af_nonfinite(af_attn_update(0.5, -INFINITY, 0.0, p)));
    assert_true(isnan(af_attn_update(0.5, NAN, 0.0, p)));
    assert_true(af_attn_update(0.5, 1e300, 0.0, p) == 1.0); /* a finite one saturates */
    /* One exponent bit flipped in each corrupted weight: far outside the bound. */
    af_corrupt_mix_t exp_mix = {0.0, 0.0, 0.0, 1e-6};
    int rows_failed = 0;
    int rows_hit = 0;
    for (int i = 0; i < 16; ++i) {
        af_attn_row(u, un, i, 0.0, p, 0.05, 9, 3, 2, exp_mix, srow, &inj, &harm, &ok);
        rows_hit += harm > 0;
        rows_failed += !ok;
    }
    print_message("exponent flips at p = 0.05: %d of 16 rows with a harmful one, %d failed\n",
                  rows_hit, rows_failed);
    assert_true(rows_hit > 0);
    assert_true(rows_failed > 0);
}

/* The output checksum: a harmful finite corruption of an output that stays in [-1, 1] (which
 * the range check cannot see) fails its row; clean rows pass (also
 * test_abft_row_sums_clean_and_corrupted). Bit flips of the default mix's finite kinds, over
 * shapes and seeds, a few per row; rows whose weights were corrupted too are left out (two
 * harmful weight errors that cancel in the row's sum pass the weights' check and enter the
 * outputs before their checksum: the scheme's blind spot, rare at the rates the fleet sees). */
static void test_abft_output_checksum_sees_in_range_corruptions(void **state)
{
    (void)state;
    const int shapes[][2] = {{16, 8}, {32, 32}, {10, 3}, {64, 16}};
    static double u[64 * 32];
    static double un[64 * 32];
    static double clean[64 * 32];
    double srow[AF_ATTN_MAX_TOKENS];
    af_corrupt_mix_t none;
    memset(&none, 0, sizeof none);
    af_corrupt_mix_t flips = {0.0, 0.4, 0.9, 1e-6}; /* single, multi-mantissa, multi-exponent */
    int harmful_rows = 0;
    int in_range_rows = 0; /* harmful rows whose every output lies in [-1, 1] */
    for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; ++c) {
        af_attn_params_t p = params(shapes[c][0], shapes[c][1]);
        const int T = p.tokens;
        const int d = p.dim;
        for (uint64_t seed = 0; seed < 40; ++seed) {
            random_block(u, T * d, 500 + seed, -1.0, 1.0);
            for (int i = 0; i < T; ++i) {
                int inj = 0;
                int harm = 0;
                int ok = 1;
                af_attn_row(u, clean, i, 0.2, p, 0.0, 0, 0, 0, none, srow, &inj, &harm, &ok);
                assert_int_equal(ok, 1);
                af_attn_row(u, un, i, 0.2, p, 2.0 / (double)d, seed, 5, (uint64_t)c, flips, srow,
                            &inj, &harm, &ok);
                int weights_hit = 0;
                for (int j = 0; j <= i; ++j) { /* the weights' counters, as af_attn_row keys them */
                    int kind = AF_CORRUPT_NONE;
                    int h = 0;
                    (void)af_inject(0.5, 2.0 / (double)d, seed, 5, (uint64_t)c,
                                    (uint64_t)(T * d + i * T + j), flips, &kind, &h);
                    weights_hit |= kind != AF_CORRUPT_NONE;
                }
                if (harm == 0 || weights_hit) {
                    continue;
                }
                harmful_rows++;
                int in_range = 1;
                for (int k = 0; k < d; ++k) {
                    in_range &= un[k * T + i] >= -1.0 && un[k * T + i] <= 1.0;
                }
                in_range_rows += in_range;
                if (ok) {
                    fail_msg("shape %d x %d, seed %llu, row %d: %d harmful of %d injected, "
                             "every output in [-1, 1]: %d, and the row passed",
                             T, d, (unsigned long long)seed, i, harm, inj, in_range);
                }
            }
        }
    }
    print_message("%d rows with a harmful output corruption, %d of them inside [-1, 1]: all "
                  "failed\n",
                  harmful_rows, in_range_rows);
    assert_true(in_range_rows > 100);
}

/* A shard of `slots` attention slots on the cpu backend, each holding block s. */
static af_kernels_t *attn_shard(int slots, int tokens, int dim, int abft)
{
    af_shard_desc_t desc;
    memset(&desc, 0, sizeof desc);
    desc.n_slots = slots;
    desc.block_len = tokens * dim;
    desc.blocks = slots;
    desc.workload = AF_WORKLOAD_ATTENTION;
    desc.attn = params(tokens, dim);
    desc.seed = 77;
    desc.mix.nonfinite = 0.1;
    desc.mix.single = 0.6;
    desc.mix.mantissa = 0.8;
    desc.mix.harm_rel = 1e-6;
    desc.abft = abft;
    af_kernels_t *k = NULL;
    assert_int_equal(af_kernels_cpu.create(&desc, &k), AF_OK);
    for (int s = 0; s < slots; ++s) {
        af_kernels_set_block(k, s, s);
        k->slot_mode[s] = AF_MODE_HEALTHY;
        k->slot_p[s] = 0.0;
    }
    return k;
}

/* The cpu backend's compute (the vector path for multiples of 8 tokens, the scalar rows
 * otherwise, and with injection) against af_attn_row on the host, bit for bit. */
static void test_cpu_backend_matches_scalar_rows_bitwise(void **state)
{
    (void)state;
    const int shapes[][2] = {{8, 1}, {8, 3}, {16, 4}, {16, 8}, {24, 5}, {64, 16}, {10, 3}, {3, 2}};
    for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; ++c) {
        const int T = shapes[c][0];
        const int d = shapes[c][1];
        const int slots = 7;
        const int n = T * d;
        af_kernels_t *k = attn_shard(slots, T, d, 1);
        size_t xlen = af_xchg_len(slots);
        uint64_t *xchg = calloc(xlen, sizeof(uint64_t));
        double *u = malloc(sizeof(double) * (size_t)n);
        double *got = malloc(sizeof(double) * (size_t)n);
        double *want = malloc(sizeof(double) * (size_t)n);
        double srow[AF_ATTN_MAX_TOKENS];
        assert_non_null(xchg);
        const double g = -0.3125;
        xchg[5 * (size_t)slots + AF_XCHG_GLOBAL] = af_bits(g);
        for (int s = 0; s < slots; ++s) {
            /* Values beyond [-1, 1] in slot 1 exercise the clamp; slot 2 has -0.0 cells. */
            random_block(u, n, 100 + (uint64_t)s, s == 1 ? -3.0 : -1.0, s == 1 ? 3.0 : 1.0);
            if (s == 2) {
                for (int i = 0; i < n; i += 3) {
                    u[i] = -0.0;
                }
            }
            if (s == 6) { /* a NaN and an infinity: the vector path keeps the same bits */
                u[n / 2] = NAN;
                u[n - 1] = INFINITY;
            }
            assert_int_equal(k->ops->write_slot(k, s, u), AF_OK);
        }
        k->slot_p[4] = 0.02; /* slot 4 injects (a FADING unit) */
        k->slot_mode[4] = AF_MODE_FADING;
        k->slot_p[5] = 0.02; /* slot 5 is a twin: injected under step ^ AF_TWIN_SALT */
        k->slot_mode[5] = AF_MODE_SHADOW;
        assert_int_equal(k->ops->upload_control(k), AF_OK);
        assert_int_equal(k->ops->compute(k, 41, xchg, 0), AF_OK);
        assert_int_equal(k->ops->download_results(k), AF_OK);
        for (int s = 0; s < slots; ++s) {
            assert_int_equal(k->ops->read_slot(k, s, u), AF_OK);
            assert_int_equal(k->ops->read_next(k, s, got), AF_OK);
            int inj = 0;
            int harm = 0;
            int ok = 1;
            uint64_t key = s == 5 ? 41 ^ AF_TWIN_SALT : 41;
            for (int i = 0; i < T; ++i) {
                int ri = 0;
                int rh = 0;
                int rok = 1;
                af_attn_row(u, want, i, g, k->desc.attn, k->slot_p[s], k->desc.seed, key,
                            (uint64_t)s, k->desc.mix, srow, &ri, &rh, &rok);
                inj += ri;
                harm += rh;
                ok &= rok;
            }
            if (s == 6) { /* NaN in the input: its sign and payload are the compiler's */
                assert_same_values(got, want, n);
            } else {
                assert_memory_equal(got, want, sizeof(double) * (size_t)n);
            }
            assert_int_equal(k->injected[s], inj);
            assert_int_equal(k->harmful[s], harm);
            assert_int_equal(k->abft[s], !ok);
            int nf = 0;
            for (int i = 0; i < n; ++i) {
                nf += af_nonfinite(want[i]);
            }
            assert_int_equal(k->nonfinite[s], nf);
            if (s < 4) {
                assert_int_equal(inj, 0);
                assert_int_equal(ok, 1);
            }
        }
        /* The block-step function the driver replays with (the vector path where T is a
         * multiple of 8) gives the same bits and the same verdict as the rows, NaN included. */
        for (int s = 0; s < slots; s += 6) {
            assert_int_equal(k->ops->read_slot(k, s, u), AF_OK);
            assert_int_equal(k->ops->read_next(k, s, got), AF_OK);
            af_wl_params_t wp;
            memset(&wp, 0, sizeof wp);
            wp.kind = AF_WORKLOAD_ATTENTION;
            wp.attn = k->desc.attn;
            af_workload_attention.block_update(u, want, n, &wp, g, g);
            assert_same_values(got, want, n);
            int ok_rows = 1;
            int ok_update = 1;
            af_attn_block(u, want, &k->desc.attn, g, &ok_rows);
            af_attn_block_update(u, got, &k->desc.attn, g, &ok_update);
            assert_same_values(got, want, n);
            assert_int_equal(ok_update, ok_rows);
            assert_int_equal(ok_rows, s == 0);
        }
        free(xchg);
        free(u);
        free(got);
        free(want);
        af_kernels_destroy(&k);
    }
}

/* The workload table's checks: too many tokens and a dim out of range name their keys. */
static void test_attention_config_checks(void **state)
{
    (void)state;
    af_wl_config_t c;
    memset(&c, 0, sizeof c);
    c.blocks = 4;
    c.block_len = AF_ATTN_MAX_TOKENS + 1;
    c.dim = 8;
    const char *key = "";
    char msg[256];
    assert_int_equal(af_workload_attention.check(&c, &key, msg, sizeof msg), 1);
    assert_string_equal(key, "scenario.block_len");
    c.block_len = 16;
    c.dim = 0;
    assert_int_equal(af_workload_attention.check(&c, &key, msg, sizeof msg), 1);
    assert_string_equal(key, "workload.dim");
    c.dim = 8;
    assert_int_equal(af_workload_attention.check(&c, &key, msg, sizeof msg), 0);
    assert_int_equal(af_workload_attention.cells(&c), 128);
    assert_true(af_workload_get(AF_WORKLOAD_ATTENTION) == &af_workload_attention);
    assert_true(af_workload_get(AF_WORKLOAD_BURGERS) == &af_workload_burgers);
    assert_null(af_workload_get(AF_WORKLOAD_COUNT));
}

/* The reference's global coupling: one step of two blocks equals each block's step with the
 * global mean of both blocks' state (the exact sum of their lane-ordered masses). */
static void test_reference_couples_blocks_by_the_exact_mean(void **state)
{
    (void)state;
    af_wl_config_t c;
    memset(&c, 0, sizeof c);
    c.blocks = 3;
    c.block_len = 8;
    c.dim = 4;
    c.amplitude = 1.0;
    c.offset = 0.25;
    c.seed = 123;
    const int n = 32;
    double u[96];
    double ref[96];
    double next[32];
    af_workload_attention.initial(&c, 0, 3 * n, u);
    assert_int_equal(af_workload_attention.reference_run(&c, 1, ref), AF_OK);
    af_rsum_t sum;
    af_rsum_clear(&sum);
    for (int b = 2; b >= 0; --b) { /* any order: the sum is exact until it is rounded once */
        double m = 0.0;
        double e = 0.0;
        af_block_diag(u + b * n, n, &m, &e);
        af_rsum_add(&sum, m);
    }
    double g = af_workload_attention.global_word(af_rsum_value(&sum), 3, n);
    af_wl_params_t wp = af_workload_attention.params(&c);
    int differs = 0;
    for (int b = 0; b < 3; ++b) {
        af_workload_attention.block_update(u + b * n, next, n, &wp, g, g);
        differs += memcmp(next, ref + b * n, sizeof next) != 0;
    }
    assert_int_equal(differs, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exp_polynomial_within_two_ulp_of_libm),
        cmocka_unit_test(test_single_token_row_weight_is_exactly_one),
        cmocka_unit_test(test_uniform_and_fully_masked_rows),
        cmocka_unit_test(test_mask_by_select_stops_a_future_nan_multiplication_does_not),
        cmocka_unit_test(test_abft_row_sums_clean_and_corrupted),
        cmocka_unit_test(test_abft_output_checksum_sees_in_range_corruptions),
        cmocka_unit_test(test_cpu_backend_matches_scalar_rows_bitwise),
        cmocka_unit_test(test_attention_config_checks),
        cmocka_unit_test(test_reference_couples_blocks_by_the_exact_mean),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
