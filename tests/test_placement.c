/* Unit tests of sim/placement: the static capacity formula, the split of the fleet over ranks,
 * the initial placement, moves between preallocated slots and the list of units whose load
 * changed. */
#include "sim/plan/placement.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

/* The documented formula, written independently: next_pow2(ceil(B / (D*U*(1-mb)))), with
 * mb = pct/100 and the division done exactly in integers, so that no rounding of 1 - mb can
 * move the ceiling. */
static int64_t documented_capacity(int64_t b, int64_t d, int64_t u, int64_t pct_dead)
{
    int64_t num = 100 * b;
    int64_t den = d * u * (100 - pct_dead);
    int64_t need = (num + den - 1) / den;
    int64_t c = 1;
    while (c < need) {
        c *= 2;
    }
    return c;
}

static void test_capacity_matches_hand_computed_cases(void **state)
{
    (void)state;
    /* 8*16*0.15 = 19.2 surviving units; 256/19.2 = 13.33 -> 14 -> 16. */
    assert_int_equal(af_capacity(256, 8, 16, 0.85), 16);
    /* 7*3*0.15 = 3.15; 48/3.15 = 15.24 -> 16 -> 16. */
    assert_int_equal(af_capacity(48, 7, 3, 0.85), 16);
    /* No blackout: 64 blocks on 4*4 units = 4 per unit exactly. */
    assert_int_equal(af_capacity(64, 4, 4, 0.0), 4);
    /* 65 blocks on 16 units: 5 -> 8. */
    assert_int_equal(af_capacity(65, 4, 4, 0.0), 8);
    /* 2*8*0.5 = 8 units; 48/8 = 6 -> 8. */
    assert_int_equal(af_capacity(48, 2, 8, 0.5), 8);
    /* 1 block on a big fleet: one slot per unit. */
    assert_int_equal(af_capacity(1, 8, 16, 0.85), 1);
    /* 4*10*0.75 = 10 units; 100/10 = 10 -> 16. */
    assert_int_equal(af_capacity(100, 4, 10, 0.75), 16);
}

/* Where D*U*(1-mb) is not a whole number the documented formula divides by the fractional
 * surviving-unit count: 1*10*(1-0.75) = 2.5 units, 5/2.5 = 2 -> C = 2 (and 2.5 -> in truth 3
 * units survive, which hold 6 >= 5 blocks). */
static void test_capacity_with_fractional_surviving_units_follows_documented_formula(void **state)
{
    (void)state;
    assert_int_equal(documented_capacity(5, 1, 10, 75), 2);
    assert_int_equal(af_capacity(5, 1, 10, 0.75), 2);
    /* 1*5*(1-0.25) = 3.75 units (at most 1 of the 5 dies, so 4 survive): 15/3.75 = 4 -> 4. */
    assert_int_equal(af_capacity(15, 1, 5, 0.25), 4);
    /* 2*2*(1-0.6) = 1.6 units: 3/1.6 = 1.875 -> 2 -> 2. */
    assert_int_equal(af_capacity(3, 2, 2, 0.6), 2);
}

static void test_capacity_equals_documented_formula_over_a_sweep(void **state)
{
    (void)state;
    const int64_t pcts[] = {0, 25, 50, 75, 85, 90, 95};
    int mismatches = 0;
    for (int64_t b = 1; b <= 300; b += 7) {
        for (int64_t d = 1; d <= 9; ++d) {
            for (int64_t u = 1; u <= 17; u += 4) {
                for (size_t m = 0; m < sizeof pcts / sizeof pcts[0]; ++m) {
                    double mb = (double)pcts[m] / 100.0;
                    int64_t want = documented_capacity(b, d, u, pcts[m]);
                    int64_t got = af_capacity(b, d, u, mb);
                    if (d * u * (100 - pcts[m]) < 100) {
                        continue; /* fewer than one unit survives: degenerate */
                    }
                    /* Always a power of two that holds every block when all units live. */
                    assert_true(got >= 1 && (got & (got - 1)) == 0);
                    assert_true(got * d * u >= b);
                    if (got != want && mismatches++ < 5) {
                        print_message("af_capacity(B=%lld, D=%lld, U=%lld, mb=%g) = %lld, "
                                      "formula gives %lld\n",
                                      (long long)b, (long long)d, (long long)u, mb, (long long)got,
                                      (long long)want);
                    }
                }
            }
        }
    }
    if (mismatches > 0) {
        print_message("%d cases differ from the documented formula\n", mismatches);
    }
    assert_int_equal(mismatches, 0);
}

static void test_rank_devices_split_is_contiguous_balanced_and_inverted_by_device_rank(void **state)
{
    (void)state;
    for (int64_t d = 1; d <= 50; ++d) {
        for (int nranks = 1; nranks <= 8 && nranks <= d; ++nranks) {
            int64_t expect_lo = 0;
            int64_t min_size = d + 1;
            int64_t max_size = -1;
            for (int r = 0; r < nranks; ++r) {
                int64_t lo = -1;
                int64_t hi = -1;
                af_rank_devices(d, nranks, r, &lo, &hi);
                assert_int_equal(lo, expect_lo); /* contiguous, in rank order */
                assert_true(hi > lo);            /* every rank owns at least one device */
                int64_t size = hi - lo;
                min_size = size < min_size ? size : min_size;
                max_size = size > max_size ? size : max_size;
                for (int64_t dev = lo; dev < hi; ++dev) {
                    assert_int_equal(af_device_rank(d, nranks, dev), r);
                }
                expect_lo = hi;
            }
            assert_int_equal(expect_lo, d); /* the ranges cover [0, D) */
            assert_true(max_size - min_size <= 1);
        }
    }
}

/* Checks that no slot holds two blocks and that every block is in exactly one slot. */
static void assert_each_block_in_exactly_one_slot(const af_placement_t *p)
{
    int64_t nslots = p->devices * p->units * p->capacity;
    int32_t *seen = calloc((size_t)p->blocks, sizeof(int32_t));
    assert_non_null(seen);
    for (int64_t g = 0; g < nslots; ++g) {
        int32_t b = p->slot_block[g];
        if (b >= 0) {
            assert_true(b < p->blocks);
            seen[b]++;
            assert_int_equal(p->block_slot[b], g);
        }
    }
    for (int64_t b = 0; b < p->blocks; ++b) {
        assert_int_equal(seen[b], 1);
        int32_t g = p->block_slot[b];
        assert_true(g >= 0 && g < nslots);
        assert_int_equal(p->slot_block[g], b);
    }
    int64_t total = 0;
    for (int64_t u = 0; u < p->devices * p->units; ++u) {
        int32_t n = 0;
        for (int64_t c = 0; c < p->capacity; ++c) {
            n += p->slot_block[u * p->capacity + c] >= 0;
        }
        assert_int_equal(n, p->unit_load[u]);
        assert_true(n <= p->capacity);
        total += n;
    }
    assert_int_equal(total, p->blocks);
    free(seen);
}

static void test_initial_placement_passes_check_and_places_every_block_once(void **state)
{
    (void)state;
    const int64_t cases[][3] = {{8, 16, 256}, {7, 3, 48}, {1, 1, 5}, {3, 4, 3}, {5, 2, 97}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        af_placement_t p;
        memset(&p, 0, sizeof p);
        assert_int_equal(af_placement_init(&p, cases[i][0], cases[i][1], cases[i][2], 0.85, 1, 0),
                         AF_OK);
        assert_int_equal(p.capacity, af_capacity(cases[i][2], cases[i][0], cases[i][1], 0.85));
        assert_int_equal(af_placement_check(&p), AF_OK);
        assert_each_block_in_exactly_one_slot(&p);
        /* Blocks start in contiguous, balanced ranges by device (in block order), and within
         * a device round-robin over its units, filling slot 0 of every unit first. */
        int64_t prev_dev = 0;
        int64_t first = 0;
        int64_t min_n = p.blocks + 1;
        int64_t max_n = -1;
        for (int64_t b = 0; b <= p.blocks; ++b) {
            int64_t dev = b < p.blocks ? af_slot_device(&p, p.block_slot[b]) : p.devices;
            assert_true(dev >= prev_dev);
            if (dev != prev_dev) {
                int64_t n = b - first;
                min_n = n < min_n ? n : min_n;
                max_n = n > max_n ? n : max_n;
                /* Devices skipped over hold no block: only possible when B < D. */
                if (dev > prev_dev + 1) {
                    min_n = 0;
                }
                first = b;
                prev_dev = dev;
            }
            if (b < p.blocks) {
                int64_t j = b - first;
                int64_t g = p.block_slot[b];
                assert_int_equal(af_slot_unit(&p, g), dev * p.units + j % p.units);
                assert_int_equal(g % p.capacity, j / p.units);
            }
        }
        assert_true(max_n - min_n <= 1);
        af_placement_destroy(&p);
        assert_null(p.block_slot);
        assert_null(p.slot_block);
        assert_null(p.unit_load);
    }
}

static void test_initial_placement_is_independent_of_ranks(void **state)
{
    (void)state;
    const int64_t D = 7;
    const int64_t U = 3;
    const int64_t B = 48;
    af_placement_t one;
    memset(&one, 0, sizeof one);
    assert_int_equal(af_placement_init(&one, D, U, B, 0.85, 1, 0), AF_OK);
    int64_t nslots = D * U * one.capacity;
    for (int rank = 0; rank < 3; ++rank) {
        af_placement_t three;
        memset(&three, 0, sizeof three);
        assert_int_equal(af_placement_init(&three, D, U, B, 0.85, 3, rank), AF_OK);
        assert_int_equal(three.capacity, one.capacity);
        assert_memory_equal(three.block_slot, one.block_slot, sizeof(int32_t) * (size_t)B);
        assert_memory_equal(three.slot_block, one.slot_block, sizeof(int32_t) * (size_t)nslots);
        assert_memory_equal(three.unit_load, one.unit_load, sizeof(int32_t) * (size_t)(D * U));
        /* Only the local range differs: 7 devices over 3 ranks are 3, 2, 2. */
        const int64_t lo[] = {0, 3, 5};
        const int64_t hi[] = {3, 5, 7};
        assert_int_equal(three.dev_lo, lo[rank]);
        assert_int_equal(three.dev_hi, hi[rank]);
        assert_int_equal(af_placement_local_slots(&three),
                         (hi[rank] - lo[rank]) * U * one.capacity);
        for (int64_t g = 0; g < nslots; ++g) {
            int64_t dev = af_slot_device(&three, g);
            assert_int_equal(af_slot_is_local(&three, g), dev >= lo[rank] && dev < hi[rank]);
            if (af_slot_is_local(&three, g)) {
                int local = af_slot_local(&three, g);
                assert_true(local >= 0 && local < af_placement_local_slots(&three));
            }
        }
        af_placement_destroy(&three);
    }
    af_placement_destroy(&one);
}

/* xorshift64*: a small deterministic generator for the random walk of moves. */
static uint64_t next_random(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545f4914f6cdd1dULL;
}

static void test_random_moves_into_free_slots_keep_the_invariants(void **state)
{
    (void)state;
    af_placement_t p;
    memset(&p, 0, sizeof p);
    assert_int_equal(af_placement_init(&p, 5, 4, 61, 0.0, 2, 1), AF_OK);
    const int64_t units = p.devices * p.units;
    uint64_t rng = 0x9e3779b97f4a7c15ULL;
    int moves = 0;
    for (int i = 0; i < 5000; ++i) {
        int32_t b = (int32_t)(next_random(&rng) % (uint64_t)p.blocks);
        int64_t unit = (int64_t)(next_random(&rng) % (uint64_t)units);
        int32_t dst = af_placement_free_slot(&p, unit);
        if (dst < 0) {
            assert_int_equal(p.unit_load[unit], p.capacity);
            continue;
        }
        assert_int_equal(af_slot_unit(&p, dst), unit);
        assert_int_equal(p.slot_block[dst], -1);
        int32_t src = p.block_slot[b];
        int64_t src_unit = af_slot_unit(&p, src);
        int32_t load_src = p.unit_load[src_unit];
        int32_t load_dst = p.unit_load[unit];
        af_placement_move(&p, b, dst);
        moves++;
        assert_int_equal(p.block_slot[b], dst);
        assert_int_equal(p.slot_block[dst], b);
        assert_int_equal(p.slot_block[src], -1);
        if (src_unit != unit) {
            assert_int_equal(p.unit_load[src_unit], load_src - 1);
            assert_int_equal(p.unit_load[unit], load_dst + 1);
        } else {
            assert_int_equal(p.unit_load[unit], load_dst);
        }
        assert_int_equal(af_placement_check(&p), AF_OK);
        if (i % 500 == 0) {
            assert_each_block_in_exactly_one_slot(&p);
        }
    }
    assert_true(moves > 1000);
    assert_each_block_in_exactly_one_slot(&p);
    af_placement_destroy(&p);
}

static void test_free_slot_of_a_full_unit_is_none_and_check_catches_corruption(void **state)
{
    (void)state;
    af_placement_t p;
    memset(&p, 0, sizeof p);
    /* 1 device, 2 units, capacity 4 with no blackout: 8 blocks fill every slot. */
    assert_int_equal(af_placement_init(&p, 1, 2, 8, 0.0, 1, 0), AF_OK);
    assert_int_equal(p.capacity, 4);
    assert_int_equal(af_placement_free_slot(&p, 0), -1);
    assert_int_equal(af_placement_free_slot(&p, 1), -1);
    assert_int_equal(af_placement_check(&p), AF_OK);
    /* A load that disagrees with the occupancy is caught. */
    p.unit_load[0]++;
    assert_int_equal(af_placement_check(&p), AF_ERR_INTERNAL);
    p.unit_load[0]--;
    /* A slot that claims a block whose table points elsewhere is caught. */
    int32_t saved = p.slot_block[1];
    p.slot_block[1] = p.slot_block[0];
    assert_int_equal(af_placement_check(&p), AF_ERR_INTERNAL);
    p.slot_block[1] = saved;
    assert_int_equal(af_placement_check(&p), AF_OK);
    af_placement_destroy(&p);
}

/* The list of changed units: empty at start, each unit a move touches listed once until the
 * list is emptied, a DMR-style reservation (unit_load written directly, up and down) not
 * listed, and over random moves every unit whose load differs from what it was when the list
 * was last emptied is on it. */
static void test_moves_list_each_changed_unit_once(void **state)
{
    (void)state;
    af_placement_t p;
    memset(&p, 0, sizeof p);
    assert_int_equal(af_placement_init(&p, 3, 4, 20, 0.5, 1, 0), AF_OK);
    const int64_t units = p.devices * p.units;
    assert_int_equal(p.n_changed, 0);
    for (int64_t u = 0; u < units; ++u) {
        assert_int_equal(af_placement_changed_marked(&p, u), 0);
    }
    /* Block 0 starts on unit 0: a move to unit 5 lists 0 and 5; a move back lists nothing new
     * (both loads are as they were, but listing them is allowed: the reader compares). */
    assert_int_equal(af_slot_unit(&p, p.block_slot[0]), 0);
    af_placement_move(&p, 0, af_placement_free_slot(&p, 5));
    assert_int_equal(p.n_changed, 2);
    assert_int_equal(p.changed[0], 0);
    assert_int_equal(p.changed[1], 5);
    af_placement_move(&p, 0, af_placement_free_slot(&p, 0));
    assert_int_equal(p.n_changed, 2);
    assert_int_equal(af_placement_check(&p), AF_OK);
    /* A move within one unit lists it once. */
    af_placement_changed_clear(&p);
    assert_int_equal(p.n_changed, 0);
    assert_int_equal(af_placement_changed_marked(&p, 0), 0);
    assert_int_equal(af_placement_changed_marked(&p, 5), 0);
    af_placement_move(&p, 0, af_placement_free_slot(&p, 0));
    assert_int_equal(p.n_changed, 1);
    assert_int_equal(p.changed[0], 0);
    af_placement_changed_clear(&p);
    /* A reservation that is released within the step is not a change. */
    int32_t t = af_placement_free_slot(&p, 7);
    p.slot_block[t] = AF_SLOT_RESERVED;
    p.unit_load[7]++;
    p.slot_block[t] = AF_SLOT_FREE;
    p.unit_load[7]--;
    assert_int_equal(p.n_changed, 0);
    assert_int_equal(af_placement_check(&p), AF_OK);

    int32_t *seen = malloc(sizeof(int32_t) * (size_t)units);
    assert_non_null(seen);
    memcpy(seen, p.unit_load, sizeof(int32_t) * (size_t)units);
    uint64_t rng = 0x243f6a8885a308d3ULL;
    for (int i = 0; i < 4000; ++i) {
        int32_t b = (int32_t)(next_random(&rng) % (uint64_t)p.blocks);
        int64_t unit = (int64_t)(next_random(&rng) % (uint64_t)units);
        int32_t dst = af_placement_free_slot(&p, unit);
        if (dst >= 0) {
            af_placement_move(&p, b, dst);
        }
        if (i % 7 == 6) {
            for (int64_t u = 0; u < units; ++u) {
                if (p.unit_load[u] != seen[u]) {
                    assert_int_equal(af_placement_changed_marked(&p, u), 1);
                }
            }
            for (int64_t k = 0; k < p.n_changed; ++k) {
                for (int64_t j = 0; j < k; ++j) {
                    assert_int_not_equal(p.changed[j], p.changed[k]);
                }
            }
            assert_true(p.n_changed <= units);
            assert_int_equal(af_placement_check(&p), AF_OK);
            af_placement_changed_clear(&p);
            memcpy(seen, p.unit_load, sizeof(int32_t) * (size_t)units);
        }
    }
    /* A mark without its entry is caught. */
    af_placement_changed_clear(&p);
    p.changed_mark[0] |= UINT64_C(1) << 3;
    assert_int_equal(af_placement_check(&p), AF_ERR_INTERNAL);
    p.changed_mark[0] &= ~(UINT64_C(1) << 3);
    free(seen);
    af_placement_destroy(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_capacity_matches_hand_computed_cases),
        cmocka_unit_test(test_capacity_with_fractional_surviving_units_follows_documented_formula),
        cmocka_unit_test(test_capacity_equals_documented_formula_over_a_sweep),
        cmocka_unit_test(
            test_rank_devices_split_is_contiguous_balanced_and_inverted_by_device_rank),
        cmocka_unit_test(test_initial_placement_passes_check_and_places_every_block_once),
        cmocka_unit_test(test_initial_placement_is_independent_of_ranks),
        cmocka_unit_test(test_random_moves_into_free_slots_keep_the_invariants),
        cmocka_unit_test(test_free_slot_of_a_full_unit_is_none_and_check_catches_corruption),
        cmocka_unit_test(test_moves_list_each_changed_unit_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
