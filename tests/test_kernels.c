/* Unit tests of the CPU compute backend and the shared arithmetic of kernels/af_burgers.h: the
 * masked step over slots equals the serial reference bit for bit wherever the blocks sit,
 * masking by select (never by multiplication), the containment test, fault injection keyed by
 * (seed, step, block, element), commit, poison and copy of slots, and the fixed-order block
 * diagnostics. */
#include "common/af_alloc.h"
#include "kernels/kernels.h"
#include "kernels/af_burgers.h"
#include "sim/fleet/aging.h"
#include "sim/io/config.h"
#include "sim/oracle/reference.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SLOTS 64
#define MAX_CELLS 4096

static af_config_t cfg;
/* The cpu backend's hot loop every shard of these tests uses: main() runs the whole group once
 * with the fused one-pass step and once with the two-pass one (backend.cpu_kernel). */
static int g_cpu_kernel = AF_CPU_KERNEL_FUSED;

/* A problem of B blocks of T cells: nu = 0.05, dt at 80% of the diffusion limit, so a few
 * hundred steps change the state visibly. */
static void make_config(int blocks, int block_len)
{
    char b[64];
    char t[64];
    char dt[64];
    double n = (double)blocks * (double)block_len;
    snprintf(b, sizeof b, "scenario.blocks=%d", blocks);
    snprintf(t, sizeof t, "scenario.block_len=%d", block_len);
    snprintf(dt, sizeof dt, "workload.dt=%.17g", 0.4 / (n * n) / 0.05);
    const char *sets[] = {b,
                          t,
                          dt,
                          "scenario.devices=1",
                          "workload.nu=0.05",
                          "workload.offset=0.5",
                          "workload.amplitude=1.0"};
    char err[512];
    af_result_t rc = af_config_load(&cfg, NULL, sets, 7, err, sizeof err);
    if (rc != AF_OK) {
        print_message("%s\n", err);
    }
    assert_int_equal(rc, AF_OK);
    cfg.n_events = 0; /* the default scenario's scripted events need its own fleet */
    rc = af_config_validate(&cfg, 1, err, sizeof err);
    if (rc != AF_OK) {
        print_message("%s\n", err);
    }
    assert_int_equal(rc, AF_OK);
}

/* A shard of n_slots slots holding the blocks of cfg at slot_of_block[b] (-1: not placed). */
typedef struct shard {
    af_kernels_t *k;
    int n_slots;
    int blocks;
    int T;
    uint64_t *xchg;
} shard_t;

static void shard_create(shard_t *sh, int n_slots, const int *slot_of_block, uint64_t seed)
{
    memset(sh, 0, sizeof *sh);
    sh->n_slots = n_slots;
    sh->blocks = (int)cfg.blocks;
    sh->T = (int)cfg.block_len;
    af_shard_desc_t desc;
    memset(&desc, 0, sizeof desc);
    desc.n_slots = n_slots;
    desc.block_len = sh->T;
    desc.blocks = sh->blocks;
    desc.coeffs = af_scheme_coeffs(&cfg);
    desc.seed = seed;
    desc.mix = af_corrupt_mix(&cfg);
    desc.cuda_device = -1;
    desc.cpu_kernel = g_cpu_kernel;
    /* Buffers for two slots a block, as a run's shard has (fewer than the slots where these
     * tests leave most of them empty). */
    desc.pool_slots = af_shard_pool_slots(n_slots, sh->blocks);
    assert_int_equal(af_kernels_cpu.create(&desc, &sh->k), AF_OK);
    assert_non_null(sh->k);
    assert_ptr_equal(sh->k->ops, &af_kernels_cpu);
    for (int s = 0; s < n_slots; ++s) {
        assert_int_equal(sh->k->slot_block[s], -1); /* empty after create */
        sh->k->slot_mode[s] = AF_MODE_HEALTHY;
        sh->k->slot_p[s] = 0.0;
    }
    double cells[MAX_CELLS];
    for (int b = 0; b < sh->blocks; ++b) {
        int s = slot_of_block[b];
        if (s < 0) {
            continue;
        }
        af_kernels_set_block(sh->k, s, b);
        af_initial_cells(&cfg, (int64_t)b * sh->T, sh->T, cells);
        assert_int_equal(sh->k->ops->write_slot(sh->k, s, cells), AF_OK);
    }
    assert_int_equal(sh->k->ops->upload_control(sh->k), AF_OK);
    sh->xchg = calloc(af_xchg_len(sh->blocks), sizeof(uint64_t));
    assert_non_null(sh->xchg);
}

static void shard_destroy(shard_t *sh)
{
    af_kernels_destroy(&sh->k);
    assert_null(sh->k);
    free(sh->xchg);
    sh->xchg = NULL;
}

/* pack, compute and download_results; commit is left to the caller. */
static void shard_compute(shard_t *sh, uint64_t step)
{
    af_kernels_t *k = sh->k;
    assert_int_equal(k->ops->pack(k, sh->xchg), AF_OK);
    assert_int_equal(k->ops->upload_control(k), AF_OK);
    assert_int_equal(k->ops->compute(k, step, sh->xchg, 0), AF_OK);
    assert_int_equal(k->ops->download_results(k), AF_OK);
}

/* Commits every occupied slot whose output is finite (what containment does). */
static void shard_commit_finite(shard_t *sh)
{
    af_kernels_t *k = sh->k;
    for (int s = 0; s < sh->n_slots; ++s) {
        k->commit[s] = (uint8_t)(k->slot_block[s] >= 0 && k->nonfinite[s] == 0);
    }
    assert_int_equal(k->ops->upload_control(k), AF_OK);
    assert_int_equal(k->ops->commit(k), AF_OK);
    assert_int_equal(k->ops->sync(k), AF_OK);
}

/* Reads every placed block into u (B*T cells in logical order). */
static void shard_gather(shard_t *sh, double *u)
{
    for (int s = 0; s < sh->n_slots; ++s) {
        int b = sh->k->slot_block[s];
        if (b >= 0) {
            assert_int_equal(sh->k->ops->read_slot(sh->k, s, u + (size_t)b * (size_t)sh->T), AF_OK);
        }
    }
}

static void run_shard_and_compare_with_reference(int blocks, int T, int n_slots,
                                                 const int *slot_of_block, int steps)
{
    make_config(blocks, T);
    shard_t sh;
    shard_create(&sh, n_slots, slot_of_block, 1234);
    size_t n = (size_t)blocks * (size_t)T;
    double *got = calloc(n, sizeof(double));
    double *want = calloc(n, sizeof(double));
    assert_non_null(got);
    assert_non_null(want);
    for (int s = 1; s <= steps; ++s) {
        shard_compute(&sh, (uint64_t)s);
        for (int q = 0; q < n_slots; ++q) {
            assert_int_equal(sh.k->nonfinite[q], 0);
            assert_int_equal(sh.k->injected[q], 0);
        }
        shard_commit_finite(&sh);
    }
    shard_gather(&sh, got);
    assert_int_equal(af_reference_run(&cfg, steps, want), AF_OK);
    assert_memory_equal(got, want, n * sizeof(double));
    /* The run really moved away from the initial condition. */
    double *init = calloc(n, sizeof(double));
    assert_non_null(init);
    af_initial_cells(&cfg, 0, (int64_t)n, init);
    assert_true(memcmp(init, want, n * sizeof(double)) != 0 || steps == 0);
    free(init);
    free(got);
    free(want);
    shard_destroy(&sh);
}

static void test_one_step_over_slots_equals_reference_step_bitwise(void **state)
{
    (void)state;
    const int B = 5;
    const int T = 12;
    make_config(B, T);
    const int slot_of_block[] = {0, 1, 2, 3, 4};
    shard_t sh;
    shard_create(&sh, 5, slot_of_block, 7);
    size_t n = (size_t)B * T;
    double u0[MAX_CELLS];
    double u1[MAX_CELLS];
    double got[MAX_CELLS];
    af_initial_cells(&cfg, 0, (int64_t)n, u0);
    af_coeffs_t kc = af_scheme_coeffs(&cfg);
    af_reference_step(u0, u1, (int64_t)n, kc.c_adv, kc.c_diff);
    shard_compute(&sh, 1);
    shard_commit_finite(&sh);
    shard_gather(&sh, got);
    assert_memory_equal(got, u1, n * sizeof(double));
    shard_destroy(&sh);
}

static void test_many_steps_in_slot_order_equal_reference_run_bitwise(void **state)
{
    (void)state;
    const int slot_of_block[] = {0, 1, 2, 3, 4, 5};
    run_shard_and_compare_with_reference(6, 20, 6, slot_of_block, 300);
}

static void test_scrambled_slots_with_gaps_equal_reference_run_bitwise(void **state)
{
    (void)state;
    /* 7 blocks in 20 slots, out of order, with empty slots between and around them. */
    const int slot_of_block[] = {17, 3, 11, 0, 8, 19, 5};
    run_shard_and_compare_with_reference(7, 33, 20, slot_of_block, 250);
}

static void test_scrambled_slots_with_block_len_multiple_of_32_equal_reference(void **state)
{
    (void)state;
    const int slot_of_block[] = {6, 2, 9, 4};
    run_shard_and_compare_with_reference(4, 64, 12, slot_of_block, 120);
}

static void test_pack_publishes_edges_and_diagnostics_by_logical_block(void **state)
{
    (void)state;
    const int B = 4;
    const int T = 37;
    make_config(B, T);
    const int slot_of_block[] = {5, -1, 0, 2}; /* block 1 is not in this shard */
    shard_t sh;
    shard_create(&sh, 7, slot_of_block, 1);
    sh.k->slot_mode[2] = AF_MODE_DEAD; /* block 3's unit died: it publishes nothing */
    /* Poison the xchg to see that pack zeroes what it does not write. */
    memset(sh.xchg, 0xff, af_xchg_len(B) * sizeof(uint64_t));
    assert_int_equal(sh.k->ops->pack(sh.k, sh.xchg), AF_OK);
    double cells[MAX_CELLS];
    for (int b = 0; b < B; ++b) {
        const uint64_t *e = sh.xchg;
        if (b == 1 || b == 3) {
            assert_int_equal(e[2 * b], 0);
            assert_int_equal(e[2 * b + 1], 0);
            assert_int_equal(e[2 * B + b], 0);
            assert_int_equal(e[3 * B + b], 0);
            continue;
        }
        af_initial_cells(&cfg, (int64_t)b * T, T, cells);
        double mass = 0;
        double energy = 0;
        af_block_diag(cells, T, &mass, &energy);
        assert_int_equal(e[2 * b], af_bits(cells[0]));
        assert_int_equal(e[2 * b + 1], af_bits(cells[T - 1]));
        assert_int_equal(e[2 * B + b], af_bits(mass));
        assert_int_equal(e[3 * B + b], af_bits(energy));
    }
    /* The flag words at the end of the vector are zero. */
    size_t len = af_xchg_len(B);
    for (int f = 0; f < AF_XCHG_FLAGS; ++f) {
        assert_int_equal(sh.xchg[len - AF_XCHG_FLAGS + (size_t)f], 0);
    }
    shard_destroy(&sh);
}

static void test_multiplicative_masking_leaks_nan_where_select_does_not(void **state)
{
    (void)state;
    const double nan = af_double(0x7ff8000000000001ULL);
    /* Fenced (keep_new = 0): multiplication gives 0*NaN + 1*old = NaN, select gives old. */
    assert_true(isnan(af_mask_multiply(0, nan, 1.0)));
    assert_true(af_mask_select(0, nan, 1.0) == 1.0);
    assert_true(isnan(af_mask_multiply(0, INFINITY, 1.0)));
    assert_true(af_mask_select(0, INFINITY, 1.0) == 1.0);
    assert_true(isnan(af_mask_multiply(1, 2.0, nan)));
    assert_true(af_mask_select(1, 2.0, nan) == 2.0);
    /* Kept values pass through select unchanged, bit for bit. */
    assert_int_equal(af_bits(af_mask_select(1, -0.0, 1.0)), af_bits(-0.0));
    assert_int_equal(af_bits(af_mask_select(1, nan, 1.0)), af_bits(nan));
}

static void test_nonfinite_flags_nan_and_infinities_only(void **state)
{
    (void)state;
    assert_int_equal(af_nonfinite(NAN), 1);
    assert_int_equal(af_nonfinite(-NAN), 1);
    assert_int_equal(af_nonfinite(af_double(0x7ff0000000000001ULL)), 1); /* signalling NaN */
    assert_int_equal(af_nonfinite(af_double(0xfff8dead0000beefULL)), 1);
    assert_int_equal(af_nonfinite(INFINITY), 1);
    assert_int_equal(af_nonfinite(-INFINITY), 1);
    assert_int_equal(af_nonfinite(DBL_MAX), 0);
    assert_int_equal(af_nonfinite(-DBL_MAX), 0);
    assert_int_equal(af_nonfinite(af_double(1)), 0); /* smallest denormal */
    assert_int_equal(af_nonfinite(DBL_MIN / 2.0), 0);
    assert_int_equal(af_nonfinite(-0.0), 0);
    assert_int_equal(af_nonfinite(0.0), 0);
    assert_int_equal(af_nonfinite(1.0), 0);
}

/* How many of block b's T elements af_inject corrupts at (seed, step) with probability p. */
static int predicted_injections(uint64_t seed, uint64_t step, int b, int T, double p)
{
    int n = 0;
    for (int i = 0; i < T; ++i) {
        int kind = AF_CORRUPT_NONE;
        int harm = 0;
        (void)af_inject(1.0, p, seed, step, (uint64_t)b, (uint64_t)i, af_corrupt_mix(&cfg), &kind,
                        &harm);
        n += kind != AF_CORRUPT_NONE;
    }
    return n;
}

static void test_fading_slot_injection_is_keyed_by_block_not_by_slot(void **state)
{
    (void)state;
    const int B = 6;
    const int T = 16;
    const uint64_t seed = 99;
    const double p = 0.05;
    make_config(B, T);
    const int layout_a[] = {0, 1, 2, 3, 4, 5};
    const int layout_b[] = {9, 4, 0, 13, 6, 2};
    const int fading_block = 2;
    shard_t a;
    shard_t b;
    shard_create(&a, 6, layout_a, seed);
    shard_create(&b, 14, layout_b, seed);
    /* Non-finite corruptions only: each one is its own non-finite output (a huge finite value
     * would spread Inf to its neighbours a step later). */
    a.k->desc.mix = (af_corrupt_mix_t){1.0, 1.0, 1.0, 1e-6};
    b.k->desc.mix = a.k->desc.mix;
    int sa = layout_a[fading_block];
    int sb = layout_b[fading_block];
    a.k->slot_mode[sa] = AF_MODE_FADING;
    a.k->slot_p[sa] = p;
    b.k->slot_mode[sb] = AF_MODE_FADING;
    b.k->slot_p[sb] = p;
    int total = 0;
    int total_nonfinite = 0;
    for (uint64_t step = 1; step <= 60; ++step) {
        shard_compute(&a, step);
        shard_compute(&b, step);
        int want = predicted_injections(seed, step, fading_block, T, p);
        assert_int_equal(a.k->injected[sa], want);
        assert_int_equal(b.k->injected[sb], want);
        assert_int_equal(a.k->harmful[sa], b.k->harmful[sb]);
        assert_int_equal(a.k->nonfinite[sa], b.k->nonfinite[sb]);
        assert_int_equal(a.k->harmful[sa], a.k->injected[sa]);
        assert_int_equal(a.k->nonfinite[sa], a.k->injected[sa]);
        total += want;
        total_nonfinite += a.k->nonfinite[sa];
        /* Healthy slots get nothing injected. */
        for (int s = 0; s < a.n_slots; ++s) {
            if (s != sa) {
                assert_int_equal(a.k->injected[s], 0);
                assert_int_equal(a.k->nonfinite[s], 0);
            }
        }
        shard_commit_finite(&a);
        shard_commit_finite(&b);
    }
    print_message("fading block: %d injected corruptions over 60 steps, %d non-finite\n", total,
                  total_nonfinite);
    assert_true(total > 0);
    assert_true(total_nonfinite > 0);
    /* Both layouts committed the same things, so they hold the same state. */
    size_t n = (size_t)B * T;
    double ua[MAX_CELLS];
    double ub[MAX_CELLS];
    shard_gather(&a, ua);
    shard_gather(&b, ub);
    assert_memory_equal(ua, ub, n * sizeof(double));
    shard_destroy(&a);
    shard_destroy(&b);
}

static void test_nonfinite_count_equals_nonfinite_outputs_of_the_slot(void **state)
{
    (void)state;
    const int B = 3;
    const int T = 40;
    make_config(B, T);
    const int layout[] = {2, 0, 1};
    shard_t sh;
    shard_create(&sh, 3, layout, 4242);
    /* Three in four corruptions non-finite, the rest single bit flips: both kinds show. */
    sh.k->desc.mix = (af_corrupt_mix_t){0.75, 1.0, 1.0, 1e-6};
    /* p = 1: every element of the slot is corrupted. */
    sh.k->slot_mode[0] = AF_MODE_FADING;
    sh.k->slot_p[0] = 1.0;
    shard_compute(&sh, 5);
    assert_int_equal(sh.k->injected[0], T);
    assert_int_equal(predicted_injections(4242, 5, 1, T, 1.0), T);
    /* Commit everything, the corrupted slot too, to look at what it computed. */
    for (int s = 0; s < 3; ++s) {
        sh.k->commit[s] = 1;
    }
    assert_int_equal(sh.k->ops->commit(sh.k), AF_OK);
    double u[MAX_CELLS];
    assert_int_equal(sh.k->ops->read_slot(sh.k, 0, u), AF_OK);
    int nf = 0;
    for (int i = 0; i < T; ++i) {
        nf += af_nonfinite(u[i]);
    }
    print_message("p = 1 over %d cells: %d non-finite, %d harmful\n", T, nf, sh.k->harmful[0]);
    assert_int_equal(sh.k->nonfinite[0], nf);
    assert_true(nf > 0);
    assert_true(nf < T); /* some single bit flips stayed finite */
    /* Every non-finite value is harmful; a finite flip is harmful when it moves the value by
     * more than harm_rel: low mantissa bits do not, so not every corruption is harmful. */
    assert_true(sh.k->harmful[0] >= nf);
    assert_true(sh.k->harmful[0] < T);
    assert_int_equal(sh.k->nonfinite[1], 0);
    assert_int_equal(sh.k->nonfinite[2], 0);
    shard_destroy(&sh);
}

static int bits_set(uint64_t x)
{
    int n = 0;
    for (; x != 0; x &= x - 1U) {
        n++;
    }
    return n;
}

/* Each corruption mode of the mix produces what it says, on values of either sign and many
 * magnitudes, and the harm flag is the relative-error rule. */
static void test_each_corruption_mode_produces_what_it_says(void **state)
{
    (void)state;
    const int N = 20000;
    /* Mixes with a single mode: non-finite, single bit, multi mantissa, multi exponent. */
    const af_corrupt_mix_t mixes[4] = {
        {1.0, 1.0, 1.0, 1e-6}, {0.0, 1.0, 1.0, 1e-6}, {0.0, 0.0, 1.0, 1e-6}, {0.0, 0.0, 0.0, 1e-6}};
    const int kinds[4] = {-1, AF_CORRUPT_BITFLIP, AF_CORRUPT_MULTI_MANTISSA,
                          AF_CORRUPT_MULTI_EXPONENT};
    for (int m = 0; m < 4; ++m) {
        int nan = 0;
        int pinf = 0;
        int ninf = 0;
        int harmful = 0;
        uint64_t positions = 0;
        for (int i = 0; i < N; ++i) {
            double v = (i % 2 ? -1.0 : 1.0) * (0.5 + sin((double)i)) * pow(10.0, (i % 7) - 3);
            int kind = AF_CORRUPT_NONE;
            int harm = 0;
            double out = af_inject(v, 1.0, 7, 3, (uint64_t)i, 5, mixes[m], &kind, &harm);
            uint64_t diff = af_bits(out) ^ af_bits(v);
            double err = fabs(out - v);
            int want_harm = af_nonfinite(out) || err > 1e-6 * fabs(v);
            assert_int_equal(harm, want_harm);
            harmful += harm;
            if (m == 0) {
                assert_true(af_nonfinite(out));
                assert_true(kind == AF_CORRUPT_NAN || kind == AF_CORRUPT_PINF ||
                            kind == AF_CORRUPT_NINF);
                nan += kind == AF_CORRUPT_NAN && isnan(out);
                pinf += kind == AF_CORRUPT_PINF && out == INFINITY;
                ninf += kind == AF_CORRUPT_NINF && out == -INFINITY;
                continue;
            }
            assert_int_equal(kind, kinds[m]);
            positions |= diff;
            if (m == 1) {
                assert_int_equal(bits_set(diff), 1);
            } else if (m == 2) {
                assert_true(bits_set(diff) >= 2);
                assert_true((diff & ~AF_MANTISSA_BITS) == 0);
            } else {
                assert_true(bits_set(diff) >= 2);
                assert_true((diff & AF_EXPONENT_BITS) != 0);
                assert_true((diff >> 63) == 0); /* the sign is not part of the mode */
            }
        }
        if (m == 0) {
            assert_int_equal(nan + pinf + ninf, N);
            assert_in_range(nan, N / 3 - 400, N / 3 + 400);
            assert_in_range(pinf, N / 3 - 400, N / 3 + 400);
            assert_int_equal(harmful, N);
        } else if (m == 1) {
            assert_true(positions == ~0ULL); /* every one of the 64 bits is flipped somewhere */
        } else if (m == 2) {
            assert_true(positions == AF_MANTISSA_BITS);
        } else {
            assert_true(positions == (AF_MANTISSA_BITS | AF_EXPONENT_BITS));
            assert_int_equal(harmful, N); /* an exponent bit moves any non-zero value a lot */
        }
        print_message("mode %d: %d of %d harmful\n", m, harmful, N);
    }
}

/* The default mix's shares come out as configured (within five binomial deviations), and
 * p decides how many elements are corrupted, not which mode. */
static void test_default_mix_shares_match_the_configuration(void **state)
{
    (void)state;
    make_config(4, 16);
    const af_corrupt_mix_t mix = af_corrupt_mix(&cfg);
    const double want[4] = {cfg.corrupt_nonfinite, cfg.corrupt_single_bit,
                            cfg.corrupt_multi_mantissa, cfg.corrupt_multi_exponent};
    assert_true(fabs(want[0] + want[1] + want[2] + want[3] - 1.0) < 1e-12);
    const int N = 200000;
    int count[4] = {0, 0, 0, 0};
    int injected = 0;
    for (int i = 0; i < N; ++i) {
        int kind = AF_CORRUPT_NONE;
        int harm = 0;
        (void)af_inject(0.75, 0.5, 11, 2, (uint64_t)i, 0, mix, &kind, &harm);
        if (kind == AF_CORRUPT_NONE) {
            continue;
        }
        injected++;
        count[kind <= AF_CORRUPT_NINF ? 0 : kind - AF_CORRUPT_BITFLIP + 1]++;
    }
    assert_in_range(injected, N / 2 - 1200, N / 2 + 1200);
    for (int m = 0; m < 4; ++m) {
        double share = (double)count[m] / (double)injected;
        double sd = sqrt(want[m] * (1.0 - want[m]) / (double)injected);
        print_message("mode %d: share %.4f, configured %.4f (sd %.4f)\n", m, share, want[m], sd);
        assert_true(fabs(share - want[m]) <= 5.0 * sd);
    }
}

/* A HEALTHY slot with slot_p > 0 (a silent unit) injects exactly as a FADING one does, and
 * its harmful count is the number of elements whose relative error exceeds harm_rel. */
static void test_healthy_slot_with_probability_injects_like_a_silent_unit(void **state)
{
    (void)state;
    const int B = 3;
    const int T = 64;
    make_config(B, T);
    const int layout[] = {0, 1, 2};
    shard_t h;
    shard_t f;
    shard_create(&h, 3, layout, 321);
    shard_create(&f, 3, layout, 321);
    h.k->slot_p[1] = 0.2; /* HEALTHY mode: a silent unit */
    f.k->slot_mode[1] = AF_MODE_FADING;
    f.k->slot_p[1] = 0.2;
    int injected = 0;
    int harmful = 0;
    for (uint64_t step = 1; step <= 20; ++step) {
        double before[MAX_CELLS];
        assert_int_equal(h.k->ops->read_slot(h.k, 1, before), AF_OK);
        shard_compute(&h, step);
        shard_compute(&f, step);
        assert_int_equal(h.k->injected[1], predicted_injections(321, step, 1, T, 0.2));
        assert_int_equal(h.k->injected[1], f.k->injected[1]);
        assert_int_equal(h.k->harmful[1], f.k->harmful[1]);
        assert_int_equal(h.k->injected[0] + h.k->injected[2], 0);
        /* The harmful count against the clean update of the same committed state. */
        double clean[MAX_CELLS];
        double got[MAX_CELLS];
        uint64_t *x = h.xchg;
        double ul = af_double(x[2 * 0 + 1]);
        double ur = af_double(x[2 * 2]);
        af_block_update(before, clean, T, ul, ur, af_scheme_coeffs(&cfg));
        assert_int_equal(h.k->ops->read_next(h.k, 1, got), AF_OK);
        int want = 0;
        for (int i = 0; i < T; ++i) {
            want += af_nonfinite(got[i]) || fabs(got[i] - clean[i]) > 1e-6 * fabs(clean[i]);
        }
        assert_int_equal(h.k->harmful[1], want);
        injected += h.k->injected[1];
        harmful += h.k->harmful[1];
        /* Keep the clean state: the next step starts from a fault-free one. */
        for (int s = 0; s < 3; ++s) {
            h.k->commit[s] = s != 1;
            f.k->commit[s] = s != 1;
        }
        assert_int_equal(h.k->ops->commit(h.k), AF_OK);
        assert_int_equal(f.k->ops->commit(f.k), AF_OK);
    }
    print_message("silent slot: %d injected, %d harmful\n", injected, harmful);
    assert_true(injected > 100);
    assert_true(harmful > 0 && harmful < injected);
    shard_destroy(&h);
    shard_destroy(&f);
}

/* The mass balance of one block step from its buffers, as the kernels check it. */
static int abft_of(const double *u, const double *un, int T, double ul, double ur, af_coeffs_t k)
{
    double m0 = 0;
    double e0 = 0;
    double m1 = 0;
    double e1 = 0;
    af_block_diag(u, T, &m0, &e0);
    af_block_diag(un, T, &m1, &e1);
    return af_abft_consistent(m0, e0, m1, e1, u[0], u[T - 1], ul, ur, T, k);
}

/* abft: a clean step always balances, over block lengths, magnitudes, signs and the
 * scenarios' coefficients; one changed value is caught when it moves the mass beyond the
 * rounding bound, and not when it is below it or when a second change cancels it (the blind
 * spots the README names). */
static void test_abft_balances_clean_steps_and_catches_planted_errors(void **state)
{
    (void)state;
    const int lens[] = {3, 16, 33, 64, 256, 1000};
    int clean = 0;
    int caught = 0;
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; ++li) {
        const int T = lens[li];
        make_config(64, T);
        af_coeffs_t k = af_scheme_coeffs(&cfg);
        for (int trial = 0; trial < 200; ++trial) {
            double u[1000];
            double un[1000];
            double scale = pow(10.0, (trial % 9) - 4);
            for (int i = 0; i < T; ++i) {
                double r = af_u01(af_hash4(5, (uint64_t)trial, (uint64_t)T, (uint64_t)i));
                u[i] = scale * (0.5 + sin(0.1 * i + trial) + 0.3 * (r - 0.5));
            }
            double ul = scale * af_u01(af_hash4(6, (uint64_t)trial, 1, 0));
            double ur = -scale * af_u01(af_hash4(6, (uint64_t)trial, 2, 0));
            af_block_update(u, un, T, ul, ur, k);
            assert_true(abft_of(u, un, T, ul, ur, k));
            clean++;
            /* One value off by 1e-9 of the block's magnitude (far above rounding): caught. The
             * check's resolution is relative to the block, not to the value: a small value's
             * relative error can be harmful and below it (bench sdc measures how often). */
            int at = trial % T;
            double keep = un[at];
            un[at] = keep + 1e-9 * scale;
            assert_false(abft_of(u, un, T, ul, ur, k));
            caught++;
            /* The lowest mantissa bit: below the bound, not seen. */
            un[at] = af_double(af_bits(keep) ^ 1ULL);
            assert_true(abft_of(u, un, T, ul, ur, k));
            /* Two changes that cancel: the mass is conserved, not seen. */
            if (T > 1) {
                int other = (at + 1) % T;
                double d = 1e-3 * scale;
                double keep2 = un[other];
                un[at] = keep + d;
                un[other] = keep2 - d;
                double m1 = 0;
                double e1 = 0;
                af_block_diag(un, T, &m1, &e1);
                double m1c = 0;
                un[at] = keep;
                un[other] = keep2;
                af_block_diag(un, T, &m1c, &e1);
                if (m1 == m1c) { /* exactly conserved in floating point too */
                    un[at] = keep + d;
                    un[other] = keep2 - d;
                    assert_true(abft_of(u, un, T, ul, ur, k));
                    un[other] = keep2;
                }
            }
            un[at] = keep;
            /* A huge finite value (exponent bits flipped) whose square overflows: caught; and
             * one whose energy stays finite near DBL_MAX, where 2 T e would overflow the
             * bound (a miss found by bench sdc): caught. */
            un[at] = 1e200;
            assert_false(abft_of(u, un, T, ul, ur, k));
            un[at] = 1.5e154;
            assert_false(abft_of(u, un, T, ul, ur, k));
            un[at] = keep;
        }
    }
    print_message("abft: %d clean block steps balanced, %d planted errors caught\n", clean, caught);
}

/* The kernels' mass balance over many steps of a FADING slot with the default mix: a clean
 * result is never fenced by it, and every harmful finite corruption is. */
static void test_abft_in_the_kernel_fences_every_harmful_corruption(void **state)
{
    (void)state;
    const int B = 6;
    const int T = 64;
    make_config(B, T);
    const int layout[] = {0, 1, 2, 3, 4, 5};
    shard_t sh;
    shard_create(&sh, 6, layout, 77);
    sh.k->desc.abft = 1;
    sh.k->slot_mode[2] = AF_MODE_FADING;
    sh.k->slot_p[2] = 0.01;
    int harmful_slots = 0;
    int fenced_by_abft = 0;
    for (uint64_t step = 1; step <= 400; ++step) {
        shard_compute(&sh, step);
        for (int s = 0; s < 6; ++s) {
            if (sh.k->injected[s] == 0) {
                assert_int_equal(sh.k->abft[s], 0); /* no false alarm */
            }
            if (sh.k->harmful[s] > 0 && sh.k->nonfinite[s] == 0) {
                assert_int_equal(sh.k->abft[s], 1);
                harmful_slots++;
            }
            fenced_by_abft += sh.k->abft[s];
            /* Commit only what passes both tests: the state stays clean. */
            sh.k->commit[s] = (uint8_t)(sh.k->nonfinite[s] == 0 && sh.k->abft[s] == 0);
        }
        assert_int_equal(sh.k->ops->upload_control(sh.k), AF_OK);
        assert_int_equal(sh.k->ops->commit(sh.k), AF_OK);
    }
    print_message("abft in the kernel: %d harmful slot results, %d fenced by abft\n", harmful_slots,
                  fenced_by_abft);
    assert_true(harmful_slots > 10);
    assert_true(fenced_by_abft >= harmful_slots);
    shard_destroy(&sh);
}

static void test_fading_slot_with_zero_probability_injects_nothing(void **state)
{
    (void)state;
    const int B = 4;
    const int T = 24;
    make_config(B, T);
    const int layout[] = {0, 1, 2, 3};
    shard_t sh;
    shard_create(&sh, 4, layout, 5);
    for (int s = 0; s < 4; ++s) {
        sh.k->slot_mode[s] = AF_MODE_FADING;
        sh.k->slot_p[s] = 0.0;
    }
    for (uint64_t step = 1; step <= 50; ++step) {
        shard_compute(&sh, step);
        for (int s = 0; s < 4; ++s) {
            assert_int_equal(sh.k->injected[s], 0);
            assert_int_equal(sh.k->harmful[s], 0);
            assert_int_equal(sh.k->nonfinite[s], 0);
        }
        shard_commit_finite(&sh);
    }
    /* And the result is the fault-free one. */
    double got[MAX_CELLS];
    double want[MAX_CELLS];
    shard_gather(&sh, got);
    assert_int_equal(af_reference_run(&cfg, 50, want), AF_OK);
    assert_memory_equal(got, want, (size_t)B * T * sizeof(double));
    shard_destroy(&sh);
}

static void test_uncommitted_slot_keeps_its_previous_committed_state(void **state)
{
    (void)state;
    const int B = 3;
    const int T = 10;
    make_config(B, T);
    const int layout[] = {1, 2, 0};
    shard_t sh;
    shard_create(&sh, 3, layout, 5);
    for (uint64_t step = 1; step <= 3; ++step) {
        shard_compute(&sh, step);
        shard_commit_finite(&sh);
    }
    double before[3][MAX_CELLS];
    double after[3][MAX_CELLS];
    for (int s = 0; s < 3; ++s) {
        assert_int_equal(sh.k->ops->read_slot(sh.k, s, before[s]), AF_OK);
    }
    shard_compute(&sh, 4);
    sh.k->commit[0] = 1;
    sh.k->commit[1] = 0; /* fenced */
    sh.k->commit[2] = 1;
    assert_int_equal(sh.k->ops->commit(sh.k), AF_OK);
    for (int s = 0; s < 3; ++s) {
        assert_int_equal(sh.k->ops->read_slot(sh.k, s, after[s]), AF_OK);
    }
    assert_memory_equal(after[1], before[1], (size_t)T * sizeof(double));
    assert_true(memcmp(after[0], before[0], (size_t)T * sizeof(double)) != 0);
    assert_true(memcmp(after[2], before[2], (size_t)T * sizeof(double)) != 0);
    /* Computing again from the kept state and committing it now gives the step-4 value of
     * that block: the fenced step left nothing behind. */
    double want[3 * MAX_CELLS];
    double u[3 * MAX_CELLS];
    assert_int_equal(af_reference_run(&cfg, 3, u), AF_OK);
    af_coeffs_t kc = af_scheme_coeffs(&cfg);
    af_reference_step(u, want, (int64_t)B * T, kc.c_adv, kc.c_diff);
    /* Slot 0 holds block 2. */
    assert_memory_equal(after[0], want + (size_t)2 * T, (size_t)T * sizeof(double));
    shard_destroy(&sh);
}

static void test_poison_slot_fills_both_buffers_with_nan(void **state)
{
    (void)state;
    const int B = 2;
    const int T = 9;
    make_config(B, T);
    const int layout[] = {0, 1};
    shard_t sh;
    shard_create(&sh, 2, layout, 5);
    assert_int_equal(sh.k->ops->poison_slot(sh.k, 1), AF_OK);
    double u[MAX_CELLS];
    for (int w = 0; w < 2; ++w) {
        assert_int_equal(sh.k->ops->read_slot(sh.k, 1, u), AF_OK);
        for (int i = 0; i < T; ++i) {
            assert_true(isnan(u[i]));
            assert_int_equal(af_nonfinite(u[i]), 1);
        }
        /* Flip to the other buffer without computing: it is poisoned as well. */
        sh.k->commit[0] = 0;
        sh.k->commit[1] = 1;
        assert_int_equal(sh.k->ops->commit(sh.k), AF_OK);
    }
    /* The slot's published diagnostics are NaN too; slot 0 is untouched. */
    assert_int_equal(sh.k->ops->pack(sh.k, sh.xchg), AF_OK);
    assert_int_equal(af_nonfinite(af_double(sh.xchg[2 * B + 1])), 1);
    assert_int_equal(af_nonfinite(af_double(sh.xchg[2 * B + 0])), 0);
    assert_int_equal(sh.k->ops->read_slot(sh.k, 0, u), AF_OK);
    double init[MAX_CELLS];
    af_initial_cells(&cfg, 0, T, init);
    assert_memory_equal(u, init, (size_t)T * sizeof(double));
    shard_destroy(&sh);
}

static void test_copy_slot_copies_the_committed_buffer_and_diagnostics(void **state)
{
    (void)state;
    const int B = 3;
    const int T = 45;
    make_config(B, T);
    const int layout[] = {0, 1, 2};
    shard_t sh;
    shard_create(&sh, 5, layout, 5);
    for (uint64_t step = 1; step <= 4; ++step) {
        shard_compute(&sh, step);
        shard_commit_finite(&sh);
    }
    /* Move block 1 from slot 1 to slot 4 the way a drain does: copy, then edit the tables. */
    assert_int_equal(sh.k->ops->copy_slot(sh.k, 1, 4), AF_OK);
    double src[MAX_CELLS];
    double dst[MAX_CELLS];
    assert_int_equal(sh.k->ops->read_slot(sh.k, 1, src), AF_OK);
    assert_int_equal(sh.k->ops->read_slot(sh.k, 4, dst), AF_OK);
    assert_memory_equal(dst, src, (size_t)T * sizeof(double));
    assert_memory_equal(sh.k->ops->slot_data(sh.k, 4), src, (size_t)T * sizeof(double));
    uint64_t before[32];
    assert_true(af_xchg_len(B) <= 32);
    assert_int_equal(sh.k->ops->pack(sh.k, sh.xchg), AF_OK);
    memcpy(before, sh.xchg, af_xchg_len(B) * sizeof(uint64_t));
    sh.k->commit[4] = sh.k->commit[1];
    af_kernels_set_block(sh.k, 1, -1); /* zeroes slot 1's commit[] and results */
    af_kernels_set_block(sh.k, 4, 1);
    assert_int_equal(sh.k->ops->pack(sh.k, sh.xchg), AF_OK);
    assert_memory_equal(sh.xchg, before, af_xchg_len(B) * sizeof(uint64_t));
    /* The moved run continues exactly as the reference. */
    for (uint64_t step = 5; step <= 30; ++step) {
        shard_compute(&sh, step);
        shard_commit_finite(&sh);
    }
    double got[3 * MAX_CELLS];
    double want[3 * MAX_CELLS];
    shard_gather(&sh, got);
    assert_int_equal(af_reference_run(&cfg, 30, want), AF_OK);
    assert_memory_equal(got, want, (size_t)B * T * sizeof(double));
    shard_destroy(&sh);
}

static void test_refresh_slot_recomputes_diagnostics_after_outside_write(void **state)
{
    (void)state;
    const int B = 2;
    const int T = 35;
    make_config(B, T);
    const int layout[] = {0, 1};
    shard_t sh;
    shard_create(&sh, 2, layout, 5);
    double *u = sh.k->ops->slot_data(sh.k, 1);
    for (int i = 0; i < T; ++i) {
        u[i] = 0.25 * (double)i - 3.0;
    }
    assert_int_equal(sh.k->ops->refresh_slot(sh.k, 1), AF_OK);
    assert_int_equal(sh.k->ops->pack(sh.k, sh.xchg), AF_OK);
    double mass = 0;
    double energy = 0;
    af_block_diag(u, T, &mass, &energy);
    assert_int_equal(sh.xchg[2 * B + 1], af_bits(mass));
    assert_int_equal(sh.xchg[3 * B + 1], af_bits(energy));
    assert_int_equal(sh.xchg[2 * 1], af_bits(-3.0));
    assert_int_equal(sh.xchg[2 * 1 + 1], af_bits(0.25 * 34 - 3.0));
    shard_destroy(&sh);
}

static void test_lane_tree_equals_hand_computed_butterfly(void **state)
{
    (void)state;
    double p[AF_LANES];
    /* 1..32: the exact sum 528. */
    for (int l = 0; l < AF_LANES; ++l) {
        p[l] = (double)(l + 1);
    }
    assert_true(af_lane_tree(p) == 528.0); /* lane 0's value; p[] is scratch */
    /* 1e16 in lane 0 and 1.0 in the others, where the order of additions shows (ulp(1e16) =
     * 2, ties to even). The butterfly pairs lane l with l+16, l+8, l+4, l+2, l+1:
     *   o=16: lane 0: 1e16 + 1 = 1e16 (tie, to even); lanes 1..15: 2
     *   o=8:  lane 0: 1e16 + 2;          lanes 1..7: 4
     *   o=4:  lane 0: 1e16 + 6;          lanes 1..3: 8
     *   o=2:  lane 0: 1e16 + 14;         lane 1: 16
     *   o=1:  1e16 + 30.
     * A left-to-right sum would give 1e16 and the exact sum rounds to 1e16 + 32. */
    p[0] = 1e16;
    for (int l = 1; l < AF_LANES; ++l) {
        p[l] = 1.0;
    }
    double got = af_lane_tree(p);
    assert_true(got == 1e16 + 30.0);
}

/* The block diagnostics written out independently: element i goes to lane i % 32 in
 * increasing i, then the butterfly with offsets 16, 8, 4, 2, 1. */
static void explicit_block_diag(const double *u, int len, double *mass, double *energy)
{
    double pm[AF_LANES] = {0};
    double pe[AF_LANES] = {0};
    for (int i = 0; i < len; ++i) {
        pm[i % AF_LANES] += u[i];
        pe[i % AF_LANES] += 0.5 * u[i] * u[i];
    }
    for (int o = AF_LANES / 2; o >= 1; o /= 2) {
        double nm[AF_LANES];
        double ne[AF_LANES];
        for (int l = 0; l < AF_LANES; ++l) {
            nm[l] = pm[l] + pm[l ^ o];
            ne[l] = pe[l] + pe[l ^ o];
        }
        memcpy(pm, nm, sizeof pm);
        memcpy(pe, ne, sizeof pe);
    }
    *mass = pm[0];
    *energy = pe[0];
}

static void test_block_diag_follows_lane_stripes_and_butterfly_for_any_length(void **state)
{
    (void)state;
    const int lens[] = {1, 2, 5, 31, 32, 33, 63, 64, 65, 100, 256, 257, 1000};
    static double u[2048];
    /* Values of very different magnitudes, so any other summation order changes bits. */
    for (int i = 0; i < 2048; ++i) {
        u[i] = sin(0.37 * i) * pow(10.0, (double)(i % 7) - 3.0) + (i % 5 == 0 ? 1e8 : 0.0);
    }
    for (size_t c = 0; c < sizeof lens / sizeof lens[0]; ++c) {
        double m1 = 0;
        double e1 = 0;
        double m2 = 0;
        double e2 = 0;
        af_block_diag(u, lens[c], &m1, &e1);
        explicit_block_diag(u, lens[c], &m2, &e2);
        assert_int_equal(af_bits(m1), af_bits(m2));
        assert_int_equal(af_bits(e1), af_bits(e2));
    }
    /* A short block's mass is simply its sum when it is exact. */
    const double small[] = {1.0, 2.0, 3.0, 4.5};
    double m = 0;
    double e = 0;
    af_block_diag(small, 4, &m, &e);
    assert_true(m == 10.5);
    assert_true(e == 0.5 * (1.0 + 4.0 + 9.0 + 20.25));
}

/* Random contents with special values among them: mostly ordinary values near 0.5, some of
 * order 1, NaN, +-Inf and huge numbers (about one cell in eight special). */
static void random_cells(uint64_t *x, double *cells, int T, int blk)
{
    for (int i = 0; i < T; ++i) {
        *x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
        int kind = (int)((*x >> 59) & 31);
        double u = (double)(*x >> 11) * 0x1.0p-53;
        cells[i] = kind == 0   ? NAN
                   : kind == 1 ? INFINITY
                   : kind == 2 ? -INFINITY
                   : kind == 3 ? 1e300 * (u - 0.5)
                   : blk % 3   ? 0.5 + (u - 0.5) * 1e-3
                               : u - 0.5;
    }
}

/* The fused one-pass step and the two-pass one give the same bits: every output cell, the
 * non-finite counts and the committed buffers' mass and energy as pack() publishes them, over
 * blocks of random values with NaN, infinities and huge numbers among them, for lengths where
 * the two kernels take different paths (36, 44, 64, 256, 260: past the 32 lanes, groups of four
 * and a tail), and for a shard larger than the last-level cache. Up to 32 cells both kernels
 * take the short step in registers (af_cpu_slot_step_short), so a length there would compare
 * it with itself: test_short_block_step_equals_update_and_diag checks it against the two
 * passes instead. */
static void test_fused_and_two_pass_steps_give_the_same_bits(void **state)
{
    (void)state;
    const int lens[] = {36, 44, 64, 256, 260};
    uint64_t x = 0x243f6a8885a308d3ULL;
    for (size_t li = 0; li <= sizeof lens / sizeof lens[0]; ++li) {
        const int big = li == sizeof lens / sizeof lens[0]; /* beyond the last-level cache */
        const int T = big ? 256 : lens[li];
        const int B = big ? (int)(af_cpu_llc_bytes() / (2 * 256 * 8) + 64) : 24;
        make_config(B, T);
        int *where = malloc(sizeof(int) * (size_t)B);
        double *cells = malloc(sizeof(double) * (size_t)T);
        double *a = malloc(sizeof(double) * (size_t)T);
        double *b = malloc(sizeof(double) * (size_t)T);
        assert_true(where && cells && a && b);
        for (int i = 0; i < B; ++i) {
            where[i] = i;
        }
        shard_t sh[2];
        for (int v = 0; v < 2; ++v) {
            g_cpu_kernel = v == 0 ? AF_CPU_KERNEL_FUSED : AF_CPU_KERNEL_TWO_PASS;
            shard_create(&sh[v], B, where, 7);
        }
        g_cpu_kernel = AF_CPU_KERNEL_FUSED;
        assert_non_null(strstr(sh[0].k->path, "one pass"));
        assert_non_null(strstr(sh[1].k->path, "two passes"));
        /* The same random contents in both: mostly ordinary values, some special ones. */
        for (int blk = 0; blk < B; ++blk) {
            random_cells(&x, cells, T, blk);
            for (int v = 0; v < 2; ++v) {
                assert_int_equal(sh[v].k->ops->write_slot(sh[v].k, blk, cells), AF_OK);
            }
        }
        for (int step = 1; step <= 2; ++step) {
            for (int v = 0; v < 2; ++v) {
                shard_compute(&sh[v], (uint64_t)step);
            }
            for (int s = 0; s < B; ++s) {
                assert_int_equal(sh[0].k->nonfinite[s], sh[1].k->nonfinite[s]);
                assert_int_equal(sh[0].k->ops->read_next(sh[0].k, s, a), AF_OK);
                assert_int_equal(sh[1].k->ops->read_next(sh[1].k, s, b), AF_OK);
                for (int i = 0; i < T; ++i) {
                    /* The same bits, but a NaN's sign and payload (see below). */
                    if (!(isnan(a[i]) && isnan(b[i])) && af_bits(a[i]) != af_bits(b[i])) {
                        print_message("T %d step %d slot %d cell %d: fused %a two-pass %a\n", T,
                                      step, s, i, a[i], b[i]);
                        fail();
                    }
                }
            }
            for (int v = 0; v < 2; ++v) {
                for (int s = 0; s < B; ++s) {
                    sh[v].k->commit[s] = 1;
                }
                assert_int_equal(sh[v].k->ops->commit(sh[v].k), AF_OK);
                assert_int_equal(sh[v].k->ops->pack(sh[v].k, sh[v].xchg), AF_OK);
            }
            /* Every word the same bits, but a NaN's sign and payload: C lets a compiler commute
             * an addition or a multiplication, which picks the NaN that propagates, so they are
             * not part of the contract (a finite input gives the same bits on every path, and
             * containment never commits a buffer holding NaN, so no NaN reaches the state or an
             * exchange; these slots are committed here on purpose). */
            int nan_words = 0;
            for (size_t w = 0; w < af_xchg_len(B); ++w) {
                double p = af_double(sh[0].xchg[w]);
                double q = af_double(sh[1].xchg[w]);
                /* [0, 2B) edge cells, [2B, 4B) mass and energy: values */
                int both_nan = w < 4 * (size_t)B && isnan(p) && isnan(q);
                nan_words += both_nan;
                if (!both_nan && sh[0].xchg[w] != sh[1].xchg[w]) {
                    print_message("T %d step %d word %zu: fused %016llx two-pass %016llx\n", T,
                                  step, w, (unsigned long long)sh[0].xchg[w],
                                  (unsigned long long)sh[1].xchg[w]);
                    fail();
                }
            }
            assert_true(nan_words > 0); /* the special values did reach the sums */
        }
        for (int v = 0; v < 2; ++v) {
            shard_destroy(&sh[v]);
        }
        free(where);
        free(cells);
        free(a);
        free(b);
    }
}

/* What the driver's separate passes make of a step after compute(): the containment rule into
 * commit[], commit(), pack_owned() into xchg, and the halo's part of the figures taken from
 * the packed entries of the published slots (sim/exchange/halo.c my_figures). */
static void separate_passes(shard_t *sh, uint64_t *xchg, af_step_out_t *o)
{
    af_kernels_t *k = sh->k;
    const size_t B = (size_t)sh->blocks;
    for (int i = 0; i < k->n_occ; ++i) {
        int s = k->occ[i];
        k->commit[s] =
            af_commit_decision(k->slot_block[s], k->slot_mode[s], k->nonfinite[s], k->abft[s]);
        o->committed[s] = k->commit[s];
    }
    assert_int_equal(k->ops->commit(k), AF_OK);
    assert_int_equal(k->ops->pack_owned(k, xchg), AF_OK);
    af_rsum_clear(&o->mass);
    af_rsum_clear(&o->energy);
    o->leaked = 0;
    o->n_pub = o->n_fenced = o->n_notable = 0;
    for (int i = 0; i < k->n_occ; ++i) {
        int s = k->occ[i];
        int b = k->slot_block[s];
        int mode = k->slot_mode[s];
        if (mode == AF_MODE_DEAD || mode == AF_MODE_SHADOW) {
            continue;
        }
        af_rsum_add(&o->mass, af_double(xchg[2 * B + (size_t)b]));
        af_rsum_add(&o->energy, af_double(xchg[3 * B + (size_t)b]));
        o->leaked += (int64_t)(xchg[4 * B + (size_t)b] >> 1);
        if (xchg[4 * B + (size_t)b] & 1U) {
            o->fenced[o->n_fenced++] = b;
        }
        if (k->injected[s] || k->nonfinite[s] || k->abft[s] || mode == AF_MODE_FADING) {
            o->notable[o->n_notable++] = s;
        }
        o->pub[o->n_pub++] = b;
    }
}

/* The fused step (ops->step) against compute(), the containment rule, commit() and
 * pack_owned() in passes of their own: the same bits in every exchange word (edges, mass,
 * energy, status words), every committed and computed buffer and the per-slot results, the
 * same commit decisions, exact sums (every word), leaked count and lists, step after step, over
 * blocks of random values with NaN, +-Inf and huge numbers, placed out of order with empty
 * slots between them, on units HEALTHY, FADING (injecting), silent HEALTHY, DEAD and twins'
 * (SHADOW, injecting under the twin's key), with the ABFT check on and off, on a pooled shard
 * whose slots come and go between steps. */
static void test_fused_step_equals_separate_passes_bitwise(void **state)
{
    (void)state;
    const int lens[] = {8, 12, 33, 64};
    uint64_t x = 0x13198a2e03707344ULL;
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; ++li) {
        for (int abft = 0; abft < 2; ++abft) {
            const int T = lens[li];
            const int B = 19;
            const int S = 60;
            make_config(B, T);
            int where[19];
            for (int b = 0; b < B; ++b) {
                where[b] = (b * 23 + 7) % S; /* out of order, gaps between */
            }
            shard_t sh[2];
            for (int v = 0; v < 2; ++v) {
                shard_create(&sh[v], S, where, 99);
                sh[v].k->desc.abft = abft;
            }
            double cells[128];
            double a[128];
            double b2[128];
            for (int blk = 0; blk < B; ++blk) {
                random_cells(&x, cells, T, blk);
                for (int i = 0; blk % 4 == 1 && i < T; ++i) {
                    /* Every fourth block (5 among them) clean: finite, near 0.5. */
                    cells[i] = isfinite(cells[i]) && fabs(cells[i]) < 1.0 ? cells[i] : 0.5;
                }
                for (int v = 0; v < 2; ++v) {
                    assert_int_equal(sh[v].k->ops->write_slot(sh[v].k, where[blk], cells), AF_OK);
                }
            }
            /* Modes: blocks 1 and 5 on FADING units (5 with p = 0), 2 silent, 3 DEAD, and a twin of
             * block 4. */
            const int twin_slot = (where[4] + 1) % S;
            for (int v = 0; v < 2; ++v) {
                af_kernels_t *k = sh[v].k;
                k->slot_mode[where[1]] = AF_MODE_FADING;
                k->slot_p[where[1]] = 0.2;
                k->slot_mode[where[5]] = AF_MODE_FADING; /* notable, injecting nothing */
                k->slot_p[where[2]] = 0.05;
                k->slot_mode[where[3]] = AF_MODE_DEAD;
                af_kernels_set_block(k, twin_slot, 4);
                assert_int_equal(k->ops->copy_slot(k, where[4], twin_slot), AF_OK);
                k->slot_mode[twin_slot] = AF_MODE_SHADOW;
                k->slot_p[twin_slot] = 0.3;
            }
            /* The exchange both read: random bits, special values included. */
            for (size_t w = 0; w < af_xchg_len(B); ++w) {
                x = x * 6364136223846793005ULL + 1442695040888963407ULL;
                /* Block 5's read-set (4's right edge, 6's left) always finite. */
                int edge5 = w == 2 * 4 + 1 || w == 2 * 6;
                uint64_t bits = w < 2 * (size_t)B && ((x >> 62) != 0 || edge5)
                                    ? af_bits((double)(x >> 11) * 0x1.0p-53)
                                    : x;
                sh[0].xchg[w] = sh[1].xchg[w] = bits;
            }
            uint64_t *xin = calloc(af_xchg_len(B), sizeof(uint64_t));
            assert_non_null(xin);
            memcpy(xin, sh[0].xchg, sizeof(uint64_t) * af_xchg_len(B));
            int32_t lists[2][3][64];
            uint8_t committed[2][64];
            af_step_out_t out[2];
            int fenced_seen = 0;
            int notable_seen = 0;
            for (int step = 1; step <= 6; ++step) {
                for (int v = 0; v < 2; ++v) {
                    memset(&out[v], 0, sizeof out[v]);
                    out[v].pub = lists[v][0];
                    out[v].pub_cap = 64;
                    out[v].fenced = lists[v][1];
                    out[v].notable = lists[v][2];
                    memset(committed[v], 0xAA, sizeof committed[v]);
                    out[v].committed = committed[v];
                }
                af_kernels_t *ka = sh[0].k;
                af_kernels_t *kb = sh[1].k;
                assert_int_equal(ka->ops->compute(ka, (uint64_t)step, xin, 0), AF_OK);
                separate_passes(&sh[0], sh[0].xchg, &out[0]);
                assert_int_equal(kb->ops->step(kb, (uint64_t)step, xin, sh[1].xchg, &out[1]),
                                 AF_OK);
                for (size_t w = 0; w < af_xchg_len(B); ++w) {
                    if (sh[0].xchg[w] != sh[1].xchg[w]) {
                        print_message("T %d abft %d step %d word %zu: separate %016llx fused "
                                      "%016llx\n",
                                      T, abft, step, w, (unsigned long long)sh[0].xchg[w],
                                      (unsigned long long)sh[1].xchg[w]);
                        fail();
                    }
                }
                for (int s = 0; s < S; ++s) {
                    assert_int_equal(ka->slot_block[s], kb->slot_block[s]);
                    assert_int_equal(ka->commit[s], kb->commit[s]);
                    assert_int_equal(ka->nonfinite[s], kb->nonfinite[s]);
                    assert_int_equal(ka->injected[s], kb->injected[s]);
                    assert_int_equal(ka->harmful[s], kb->harmful[s]);
                    assert_int_equal(ka->abft[s], kb->abft[s]);
                    if (ka->slot_block[s] < 0) {
                        continue;
                    }
                    assert_int_equal(committed[0][s], committed[1][s]);
                    assert_int_equal(ka->ops->read_slot(ka, s, a), AF_OK);
                    assert_int_equal(kb->ops->read_slot(kb, s, b2), AF_OK);
                    assert_memory_equal(a, b2, sizeof(double) * (size_t)T);
                    assert_int_equal(ka->ops->read_next(ka, s, a), AF_OK);
                    assert_int_equal(kb->ops->read_next(kb, s, b2), AF_OK);
                    assert_memory_equal(a, b2, sizeof(double) * (size_t)T);
                }
                assert_memory_equal(af_rsum_words(&out[0].mass), af_rsum_words(&out[1].mass),
                                    sizeof(int64_t) * AF_RSUM_WORDS);
                assert_memory_equal(af_rsum_words(&out[0].energy), af_rsum_words(&out[1].energy),
                                    sizeof(int64_t) * AF_RSUM_WORDS);
                assert_int_equal(out[0].leaked, out[1].leaked);
                assert_int_equal(out[0].n_pub, out[1].n_pub);
                assert_int_equal(out[0].n_pub, B - 1); /* all but the DEAD one's block */
                assert_memory_equal(lists[0][0], lists[1][0],
                                    sizeof(int32_t) * (size_t)out[0].n_pub);
                assert_int_equal(out[0].n_fenced, out[1].n_fenced);
                assert_memory_equal(lists[0][1], lists[1][1],
                                    sizeof(int32_t) * (size_t)out[0].n_fenced);
                assert_int_equal(out[0].n_notable, out[1].n_notable);
                assert_memory_equal(lists[0][2], lists[1][2],
                                    sizeof(int32_t) * (size_t)out[0].n_notable);
                fenced_seen += out[1].n_fenced > 0;
                notable_seen += out[1].n_notable > 0;
                /* The next step reads this one's exchange; between steps a block moves to
                 * another slot (its old one empties and its buffer goes back to the pool). */
                memcpy(xin, sh[0].xchg, sizeof(uint64_t) * af_xchg_len(B));
                int blk = 5 + step;
                int from = where[blk];
                int to = (from + 2 * step + 1) % S;
                while (ka->slot_block[to] >= 0 || to == twin_slot) {
                    to = (to + 1) % S;
                }
                for (int v = 0; v < 2; ++v) {
                    af_kernels_t *k = sh[v].k;
                    assert_int_equal(k->ops->copy_slot(k, from, to), AF_OK);
                    af_kernels_set_block(k, to, blk);
                    af_kernels_set_block(k, from, -1);
                    af_kernels_settle(k);
                    assert_int_equal(k->pool_used, k->n_occ);
                }
                where[blk] = to;
            }
            /* The special values were there: fenced slots and notable ones. */
            assert_true(fenced_seen > 0);
            assert_true(notable_seen > 0);
            free(xin);
            for (int v = 0; v < 2; ++v) {
                shard_destroy(&sh[v]);
            }
        }
    }
}

/* The pooled shard: a slot takes a buffer when first written and gives it back at the settle
 * after it empties (not before: a move's source is set empty before its state is copied out),
 * a slot occupied again before the settle keeps its state, the memory behind the slots is the
 * pool's (desc.pool_slots buffers, not one a slot), a read of a slot never written is an
 * error, and a write past the pool's buffers fails with a message, allocating nothing. */
static void test_pool_follows_the_occupied_slots(void **state)
{
    (void)state;
    const int B = 4;
    const int T = 16;
    const int S = 40;
    make_config(B, T);
    const int where[] = {3, 17, 25, 38};
    shard_t sh;
    shard_create(&sh, S, where, 5);
    af_kernels_t *k = sh.k;
    assert_int_equal(k->pool_cap, 2 * B);
    assert_int_equal(k->pool_used, B);
    /* The pool's memory, not the grid's: under 2 B buffers' worth of the full grid. */
    af_shard_desc_t full = k->desc;
    full.pool_slots = 0;
    assert_true(af_kernels_cpu.host_bytes(&k->desc) <
                af_kernels_cpu.host_bytes(&full) - (size_t)(S - 2 * B) * 2 * T * sizeof(double));
    double cells[16];
    double got[16];
    assert_int_equal(k->ops->read_slot(k, 0, got), AF_ERR_INTERNAL);
    assert_non_null(strstr(af_error_message(), "holds no state"));
    af_error_clear();
    /* A move of block 1 from slot 17 to 18: the source is set empty first, its state still
     * there until the settle. */
    af_kernels_set_block(k, 17, -1);
    assert_int_equal(k->pool_used, B);
    assert_int_equal(k->ops->copy_slot(k, 17, 18), AF_OK);
    af_kernels_set_block(k, 18, 1);
    assert_int_equal(k->pool_used, B + 1);
    af_kernels_settle(k);
    assert_int_equal(k->pool_used, B);
    assert_int_equal(k->ops->read_slot(k, 17, got), AF_ERR_INTERNAL);
    af_error_clear();
    af_initial_cells(&cfg, 1 * T, T, cells);
    assert_int_equal(k->ops->read_slot(k, 18, got), AF_OK);
    assert_memory_equal(got, cells, sizeof cells);
    /* Emptied and occupied again before the settle: the state stays. */
    af_kernels_set_block(k, 25, -1);
    af_kernels_set_block(k, 25, 2);
    af_kernels_settle(k);
    af_initial_cells(&cfg, 2 * T, T, cells);
    assert_int_equal(k->ops->read_slot(k, 25, got), AF_OK);
    assert_memory_equal(got, cells, sizeof cells);
    assert_int_equal(k->pool_used, k->n_occ);
    /* Every buffer held, then one write more: refused, nothing allocated. */
    int64_t allocs = af_alloc_count_total();
    for (int s = 0; s < B; ++s) {
        assert_int_equal(k->ops->write_slot(k, 30 + s, cells), AF_OK);
    }
    assert_int_equal(k->pool_used, 2 * B);
    assert_int_equal(k->ops->write_slot(k, 0, cells), AF_ERR_NOMEM);
    assert_non_null(strstr(af_error_message(), "pool"));
    af_error_clear();
    assert_null(k->ops->slot_data(k, 1));
    af_error_clear();
    assert_int_equal(af_alloc_count_total(), allocs);
    for (int s = 0; s < B; ++s) {
        af_kernels_set_block(k, 30 + s, -1); /* never occupied: back at the settle too */
    }
    af_kernels_settle(k);
    assert_int_equal(k->pool_used, B);
    assert_non_null(k->ops->slot_data(k, 1));
    /* The occupied-slot list has the pool's bound too: a slot occupied past it is not listed,
     * and the check the driver makes at every step's end says so. */
    assert_int_equal(k->occ_cap, 2 * B);
    assert_int_equal(af_kernels_occ_ok(k), AF_OK);
    for (int s = 0; s < B; ++s) {
        af_kernels_set_block(k, 30 + s, s);
    }
    assert_int_equal(k->n_occ, 2 * B);
    assert_int_equal(af_kernels_occ_ok(k), AF_OK);
    af_kernels_set_block(k, 35, 0);
    assert_int_equal(k->n_occ, 2 * B);
    assert_int_equal(af_kernels_occ_ok(k), AF_ERR_INTERNAL);
    assert_non_null(strstr(af_error_message(), "occupied"));
    af_error_clear();
    shard_destroy(&sh);
}

/* The backend's diagnostics of a buffer (what write_slot computes and pack publishes) are
 * af_block_diag's, bit for bit, and its NaN/Inf count is the buffer's, for every length from
 * the smallest a scenario allows (3) to past the 32 lanes (the short buffers' vector path) and
 * beyond, over values with -0.0, NaN, +-Inf, huge and tiny ones among them (a NaN's sign and
 * payload aside, as above). */
static void test_slot_diagnostics_equal_block_diag_for_every_length(void **state)
{
    (void)state;
    uint64_t x = 0x452821e638d01377ULL;
    for (int T = 3; T <= 72; T += T < 40 ? 1 : 8) {
        make_config(8, T); /* 8 blocks: a stable dt for the shortest */
        const int where[] = {0, 1, 2, 3, 4, 5, 6, 7};
        shard_t sh;
        shard_create(&sh, 8, where, 3);
        double cells[72];
        for (int round = 0; round < 40; ++round) {
            for (int i = 0; i < T; ++i) {
                x = x * 6364136223846793005ULL + 1442695040888963407ULL;
                int kind = (int)((x >> 58) & 63);
                double u = (double)(x >> 11) * 0x1.0p-53 - 0.5;
                cells[i] = kind == 0   ? NAN
                           : kind == 1 ? INFINITY
                           : kind == 2 ? -INFINITY
                           : kind == 3 ? 1e300 * u
                           : kind < 8  ? -0.0
                           : kind < 10 ? 1e-310 * u
                                       : u * pow(10.0, (double)(kind % 9) - 4.0);
            }
            if (round % 4 == 0) {
                for (int i = 0; i < T; ++i) {
                    cells[i] = isfinite(cells[i]) ? cells[i] : -0.0; /* finite rounds too */
                }
            }
            if (round == 1) {
                for (int i = 0; i < T; ++i) {
                    cells[i] = -0.0; /* every partial 0.0 + -0.0: the mass is +0.0 */
                }
            }
            assert_int_equal(sh.k->ops->write_slot(sh.k, 0, cells), AF_OK);
            memset(sh.k->commit, 1, 8);
            assert_int_equal(sh.k->ops->pack(sh.k, sh.xchg), AF_OK);
            double m = 0;
            double e = 0;
            af_block_diag(cells, T, &m, &e);
            int nf = 0;
            for (int i = 0; i < T; ++i) {
                nf += af_nonfinite(cells[i]);
            }
            double gm = af_double(sh.xchg[2 * 8]); /* block 0's entries */
            double ge = af_double(sh.xchg[3 * 8]);
            if (!(isnan(m) && isnan(gm))) {
                assert_int_equal(af_bits(gm), af_bits(m));
            }
            if (!(isnan(e) && isnan(ge))) {
                assert_int_equal(af_bits(ge), af_bits(e));
            }
            assert_int_equal(sh.xchg[4 * 8] >> 1, (uint64_t)nf);
        }
        shard_destroy(&sh);
    }
}

/* A short block's step in one pass (8 to 32 cells, a multiple of 4: the registers' path, taken
 * whichever cpu_kernel) is af_block_update's output and af_block_diag's diagnostics of it, bit
 * for bit, its NaN/Inf count the output's, over random values with NaN, +-Inf, -0.0 and huge
 * ones (a NaN's sign and payload aside, as above), and every lane of a 32-cell block used. */
static void test_short_block_step_equals_update_and_diag(void **state)
{
    (void)state;
    uint64_t x = 0xbe5466cf34e90c6cULL;
    for (int T = 8; T <= 36; T += 4) {
        const int B = 12;
        make_config(B, T);
        int where[12];
        for (int b = 0; b < B; ++b) {
            where[b] = b;
        }
        shard_t sh;
        shard_create(&sh, B, where, 11);
        double u[64];
        double got[64];
        double want[64];
        uint64_t *xin = calloc(af_xchg_len(B), sizeof(uint64_t));
        assert_non_null(xin);
        for (int round = 0; round < 6; ++round) {
            for (int b = 0; b < B; ++b) {
                random_cells(&x, u, T, b + round);
                assert_int_equal(sh.k->ops->write_slot(sh.k, b, u), AF_OK);
            }
            for (size_t w = 0; w < 2 * (size_t)B; ++w) {
                x = x * 6364136223846793005ULL + 1442695040888963407ULL;
                xin[w] = (x >> 61) == 0 ? x : af_bits((double)(x >> 11) * 0x1.0p-53 - 0.5);
            }
            assert_int_equal(sh.k->ops->compute(sh.k, 1, xin, 0), AF_OK);
            const af_coeffs_t kc = sh.k->desc.coeffs;
            for (int b = 0; b < B; ++b) {
                assert_int_equal(sh.k->ops->read_slot(sh.k, b, u), AF_OK);
                assert_int_equal(sh.k->ops->read_next(sh.k, b, got), AF_OK);
                size_t i0 = 0;
                size_t i1 = 0;
                af_wl_read_set(AF_WORKLOAD_BURGERS, B, b, &i0, &i1);
                af_block_update(u, want, T, af_double(xin[i0]), af_double(xin[i1]), kc);
                int nf = 0;
                for (int i = 0; i < T; ++i) {
                    nf += af_nonfinite(want[i]);
                    if (!(isnan(got[i]) && isnan(want[i]))) {
                        assert_int_equal(af_bits(got[i]), af_bits(want[i]));
                    }
                }
                assert_int_equal(sh.k->nonfinite[b], nf);
                sh.k->commit[b] = 1;
            }
            assert_int_equal(sh.k->ops->commit(sh.k), AF_OK);
            assert_int_equal(sh.k->ops->pack(sh.k, sh.xchg), AF_OK);
            for (int b = 0; b < B; ++b) {
                assert_int_equal(sh.k->ops->read_slot(sh.k, b, got), AF_OK);
                double m = 0;
                double e = 0;
                af_block_diag(got, T, &m, &e);
                double gm = af_double(sh.xchg[2 * (size_t)B + (size_t)b]);
                double ge = af_double(sh.xchg[3 * (size_t)B + (size_t)b]);
                if (!(isnan(m) && isnan(gm))) {
                    assert_int_equal(af_bits(gm), af_bits(m));
                }
                if (!(isnan(e) && isnan(ge))) {
                    assert_int_equal(af_bits(ge), af_bits(e));
                }
            }
        }
        free(xin);
        shard_destroy(&sh);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_step_over_slots_equals_reference_step_bitwise),
        cmocka_unit_test(test_many_steps_in_slot_order_equal_reference_run_bitwise),
        cmocka_unit_test(test_scrambled_slots_with_gaps_equal_reference_run_bitwise),
        cmocka_unit_test(test_scrambled_slots_with_block_len_multiple_of_32_equal_reference),
        cmocka_unit_test(test_pack_publishes_edges_and_diagnostics_by_logical_block),
        cmocka_unit_test(test_multiplicative_masking_leaks_nan_where_select_does_not),
        cmocka_unit_test(test_nonfinite_flags_nan_and_infinities_only),
        cmocka_unit_test(test_fading_slot_injection_is_keyed_by_block_not_by_slot),
        cmocka_unit_test(test_nonfinite_count_equals_nonfinite_outputs_of_the_slot),
        cmocka_unit_test(test_fading_slot_with_zero_probability_injects_nothing),
        cmocka_unit_test(test_each_corruption_mode_produces_what_it_says),
        cmocka_unit_test(test_default_mix_shares_match_the_configuration),
        cmocka_unit_test(test_healthy_slot_with_probability_injects_like_a_silent_unit),
        cmocka_unit_test(test_abft_balances_clean_steps_and_catches_planted_errors),
        cmocka_unit_test(test_abft_in_the_kernel_fences_every_harmful_corruption),
        cmocka_unit_test(test_uncommitted_slot_keeps_its_previous_committed_state),
        cmocka_unit_test(test_poison_slot_fills_both_buffers_with_nan),
        cmocka_unit_test(test_copy_slot_copies_the_committed_buffer_and_diagnostics),
        cmocka_unit_test(test_refresh_slot_recomputes_diagnostics_after_outside_write),
        cmocka_unit_test(test_lane_tree_equals_hand_computed_butterfly),
        cmocka_unit_test(test_block_diag_follows_lane_stripes_and_butterfly_for_any_length),
        cmocka_unit_test(test_slot_diagnostics_equal_block_diag_for_every_length),
        cmocka_unit_test(test_short_block_step_equals_update_and_diag),
        cmocka_unit_test(test_fused_step_equals_separate_passes_bitwise),
        cmocka_unit_test(test_pool_follows_the_occupied_slots),
    };
    /* Every test with the fused step, then with the two-pass one. */
    g_cpu_kernel = AF_CPU_KERNEL_FUSED;
    int failed = cmocka_run_group_tests_name("cpu_kernel = fused", tests, NULL, NULL);
    g_cpu_kernel = AF_CPU_KERNEL_TWO_PASS;
    failed += cmocka_run_group_tests_name("cpu_kernel = two_pass", tests, NULL, NULL);
    g_cpu_kernel = AF_CPU_KERNEL_FUSED;
    const struct CMUnitTest both[] = {
        cmocka_unit_test(test_fused_and_two_pass_steps_give_the_same_bits),
    };
    failed += cmocka_run_group_tests_name("fused against two_pass", both, NULL, NULL);
    return failed;
}
