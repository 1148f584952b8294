/* Unit tests of sim/evq, the aging model's event queue: (step, unit) order with ties to the
 * lower unit, re-keying in both directions, removal from any place, units indexed from the
 * start of a range, every allocation failure, and random operations against a sorted oracle. */
#include "common/af_alloc.h"
#include "sim/fleet/evq.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

static uint64_t next_random(uint64_t *s)
{
    /* splitmix64: reproducible, independent of the C library. */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void init_queue(af_evq_t *q, int64_t lo, int64_t hi)
{
    memset(q, 0, sizeof *q);
    assert_int_equal(af_evq_init(q, lo, hi), AF_OK);
    assert_int_equal(q->n, 0);
}

static void expect_pop(af_evq_t *q, int64_t step, int64_t unit)
{
    int64_t s = -1;
    int64_t u = -1;
    assert_int_equal(af_evq_pop(q, &s, &u), 1);
    assert_int_equal(s, step);
    assert_int_equal(u, unit);
    assert_int_equal(af_evq_step_of(q, unit), -1);
    assert_int_equal(af_evq_check(q), AF_OK);
}

static void test_pops_in_step_order_with_ties_to_the_lower_unit(void **state)
{
    (void)state;
    af_evq_t q;
    init_queue(&q, 0, 10);
    int64_t s = 0;
    int64_t u = 0;
    assert_int_equal(af_evq_peek(&q, &s, &u), 0);
    assert_int_equal(af_evq_pop(&q, &s, &u), 0);
    /* Same step for units inserted in descending order: they leave ascending. */
    for (int64_t k = 9; k >= 5; --k) {
        af_evq_set(&q, k, 40);
    }
    af_evq_set(&q, 3, 41);
    af_evq_set(&q, 2, 7);
    af_evq_set(&q, 4, 40);
    assert_int_equal(af_evq_check(&q), AF_OK);
    assert_int_equal(q.n, 8);
    assert_int_equal(af_evq_peek(&q, &s, &u), 1);
    assert_int_equal(s, 7);
    assert_int_equal(u, 2);
    assert_int_equal(q.n, 8); /* peek leaves it there */
    expect_pop(&q, 7, 2);
    for (int64_t k = 4; k <= 9; ++k) {
        expect_pop(&q, 40, k);
    }
    expect_pop(&q, 41, 3);
    assert_int_equal(q.n, 0);
    af_evq_destroy(&q);
    assert_null(q.heap);
    assert_null(q.pos);
    af_evq_destroy(&q); /* twice is harmless */
}

static void test_rekey_moves_a_unit_both_ways(void **state)
{
    (void)state;
    af_evq_t q;
    init_queue(&q, 0, 8);
    for (int64_t k = 0; k < 8; ++k) {
        af_evq_set(&q, k, 100 + 10 * k);
    }
    af_evq_set(&q, 6, 5);   /* earlier: to the top */
    af_evq_set(&q, 0, 500); /* later: to the bottom */
    af_evq_set(&q, 3, 130); /* the same key: stays */
    af_evq_set(&q, 4, 110); /* ties with unit 1, which is lower */
    assert_int_equal(q.n, 8);
    assert_int_equal(af_evq_step_of(&q, 6), 5);
    assert_int_equal(af_evq_step_of(&q, 0), 500);
    assert_int_equal(af_evq_check(&q), AF_OK);
    expect_pop(&q, 5, 6);
    expect_pop(&q, 110, 1);
    expect_pop(&q, 110, 4);
    expect_pop(&q, 120, 2);
    expect_pop(&q, 130, 3);
    expect_pop(&q, 150, 5);
    expect_pop(&q, 170, 7);
    expect_pop(&q, 500, 0);
    af_evq_destroy(&q);
}

static void test_remove_from_any_place(void **state)
{
    (void)state;
    af_evq_t q;
    init_queue(&q, 0, 16);
    for (int64_t k = 0; k < 16; ++k) {
        af_evq_set(&q, k, (k * 7) % 16);
    }
    af_evq_remove(&q, 0);  /* the root: step 0 */
    af_evq_remove(&q, 15); /* somewhere inside */
    af_evq_remove(&q, 15); /* absent: nothing happens */
    int64_t s = 0;
    int64_t u = 0;
    assert_int_equal(af_evq_peek(&q, &s, &u), 1);
    /* The last heap entry itself. */
    af_evq_remove(&q, af_evq_key_unit(&q, q.heap[q.n - 1]));
    assert_int_equal(q.n, 13);
    assert_int_equal(af_evq_check(&q), AF_OK);
    int64_t prev = -1;
    int64_t popped = 0;
    while (af_evq_pop(&q, &s, &u)) {
        assert_true(s > prev); /* distinct keys here */
        prev = s;
        popped++;
    }
    assert_int_equal(popped, 13);
    af_evq_destroy(&q);
}

/* A queue of a range of units is indexed from its start: units are global numbers. */
static void test_a_range_is_indexed_from_its_start(void **state)
{
    (void)state;
    af_evq_t q;
    init_queue(&q, 1000, 1004);
    af_evq_set(&q, 1003, 2);
    af_evq_set(&q, 1000, 2);
    af_evq_set(&q, 1002, 1);
    assert_int_equal(af_evq_step_of(&q, 1001), -1);
    assert_int_equal(af_evq_step_of(&q, 1003), 2);
    expect_pop(&q, 1, 1002);
    expect_pop(&q, 2, 1000);
    expect_pop(&q, 2, 1003);
    af_evq_destroy(&q);
    memset(&q, 0, sizeof q);
    assert_int_equal(af_evq_init(&q, 5, 4), AF_ERR_USAGE);
    assert_int_equal(af_evq_init(&q, -1, 4), AF_ERR_USAGE);
    assert_int_equal(af_evq_init(&q, 0, (int64_t)INT32_MAX + 1), AF_ERR_USAGE);
    assert_null(q.heap);
}

/* A unit that leaves for good keeps a value of its owner's in its index word: the heap around it
 * is whole, the value comes back unchanged (0 and the largest alike), a queued or plain absent
 * unit has none, and queuing the unit again drops it. */
static void test_a_parked_value_survives_the_heap_around_it(void **state)
{
    (void)state;
    af_evq_t q;
    init_queue(&q, 100, 164);
    for (int64_t u = 100; u < 164; ++u) {
        af_evq_set(&q, u, (u * 37) % 50);
    }
    af_evq_park(&q, 100, 0);
    af_evq_park(&q, 163, INT32_MAX - 1);
    af_evq_park(&q, 131, 77);
    af_evq_remove(&q, 120);
    assert_int_equal(q.n, 60);
    assert_int_equal(af_evq_check(&q), AF_OK);
    assert_int_equal(af_evq_parked(&q, 100), 0);
    assert_int_equal(af_evq_parked(&q, 163), INT32_MAX - 1);
    assert_int_equal(af_evq_parked(&q, 131), 77);
    assert_int_equal(af_evq_parked(&q, 120), -1); /* absent, nothing parked */
    assert_int_equal(af_evq_parked(&q, 101), -1); /* queued */
    assert_int_equal(af_evq_step_of(&q, 131), -1);
    af_evq_remove(&q, 131); /* absent: nothing happens, the value stays */
    assert_int_equal(af_evq_parked(&q, 131), 77);
    /* Re-keying and popping every other unit moves entries past the parked ones. */
    for (int64_t u = 102; u < 163; u += 2) {
        af_evq_set(&q, u, 60 + u % 7);
    }
    int64_t s = 0;
    int64_t u = 0;
    for (int i = 0; i < 20; ++i) {
        assert_int_equal(af_evq_pop(&q, &s, &u), 1);
    }
    assert_int_equal(af_evq_check(&q), AF_OK);
    assert_int_equal(af_evq_parked(&q, 100), 0);
    assert_int_equal(af_evq_parked(&q, 163), INT32_MAX - 1);
    assert_int_equal(af_evq_parked(&q, 131), 77);
    af_evq_set(&q, 131, 3);
    assert_int_equal(af_evq_parked(&q, 131), -1);
    assert_int_equal(af_evq_step_of(&q, 131), 3);
    assert_int_equal(af_evq_check(&q), AF_OK);
    af_evq_destroy(&q);
}

static void test_init_reports_every_failed_allocation(void **state)
{
    (void)state;
    int64_t live = af_alloc_bytes_live();
    int failures = 0;
    for (int64_t n = 1;; ++n) {
        af_evq_t q;
        memset(&q, 0, sizeof q);
        af_alloc_fail_at(n);
        af_result_t rc = af_evq_init(&q, 0, 100);
        af_alloc_fail_at(0);
        if (rc == AF_OK) {
            assert_non_null(q.heap);
            assert_non_null(q.pos);
            af_evq_destroy(&q);
            break;
        }
        assert_int_equal(rc, AF_ERR_NOMEM);
        assert_null(q.heap);
        assert_null(q.pos);
        assert_int_equal(af_alloc_bytes_live(), live);
        failures++;
    }
    assert_int_equal(failures, 2); /* the heap and the position index */
}

/* The oracle: the key of every unit (or -1), and its least (step, unit) found by a scan. */
static int oracle_min(const int64_t *key, int64_t n, int64_t *step, int64_t *unit)
{
    int found = 0;
    for (int64_t u = 0; u < n; ++u) {
        if (key[u] >= 0 && (!found || key[u] < *step)) {
            *step = key[u];
            *unit = u;
            found = 1;
        }
    }
    return found;
}

static void test_random_operations_agree_with_a_sorted_oracle(void **state)
{
    (void)state;
    const int64_t lo = 37;
    const int64_t n = 300;
    af_evq_t q;
    init_queue(&q, lo, lo + n);
    int64_t *key = malloc(sizeof(int64_t) * (size_t)n);
    assert_non_null(key);
    for (int64_t u = 0; u < n; ++u) {
        key[u] = -1;
    }
    uint64_t rng = 20261129;
    int64_t pops = 0;
    for (int i = 0; i < 200000; ++i) {
        uint64_t r = next_random(&rng);
        int64_t u = (int64_t)((r >> 8) % (uint64_t)n);
        /* Few distinct steps, so that ties are common. */
        int64_t step = (int64_t)((r >> 24) % 40);
        switch (r % 8) {
        case 0:
        case 1:
        case 2:
            af_evq_set(&q, lo + u, step);
            key[u] = step;
            break;
        case 3:
            af_evq_remove(&q, lo + u);
            key[u] = -1;
            break;
        case 4:
        case 5: {
            int64_t ws = 0;
            int64_t wu = 0;
            int64_t gs = 0;
            int64_t gu = 0;
            int want = oracle_min(key, n, &ws, &wu);
            assert_int_equal(af_evq_pop(&q, &gs, &gu), want);
            if (want) {
                assert_int_equal(gs, ws);
                assert_int_equal(gu, lo + wu);
                key[wu] = -1;
                pops++;
            }
            break;
        }
        default:
            assert_int_equal(af_evq_step_of(&q, lo + u), key[u]);
            break;
        }
        if (i % 997 == 0) {
            assert_int_equal(af_evq_check(&q), AF_OK);
            int64_t present = 0;
            for (int64_t k = 0; k < n; ++k) {
                present += key[k] >= 0;
                assert_int_equal(af_evq_step_of(&q, lo + k), key[k]);
            }
            assert_int_equal(q.n, present);
        }
    }
    assert_true(pops > 10000);
    /* Draining leaves the oracle's order. */
    int64_t ws = 0;
    int64_t wu = 0;
    while (oracle_min(key, n, &ws, &wu)) {
        expect_pop(&q, ws, lo + wu);
        key[wu] = -1;
    }
    assert_int_equal(q.n, 0);
    free(key);
    af_evq_destroy(&q);
}

/* The check catches a heap whose order or index is broken. */
static void test_check_catches_corruption(void **state)
{
    (void)state;
    af_evq_t q;
    init_queue(&q, 0, 4);
    af_evq_set(&q, 0, 1);
    af_evq_set(&q, 1, 2);
    af_evq_set(&q, 2, 3);
    assert_int_equal(af_evq_check(&q), AF_OK);
    q.heap[0] = af_evq_key(&q, 0, 9); /* bigger than its children */
    assert_int_equal(af_evq_check(&q), AF_ERR_INTERNAL);
    q.heap[0] = af_evq_key(&q, 0, 1);
    q.top = af_evq_key(&q, 1, 2); /* a top word that is not the least key */
    assert_int_equal(af_evq_check(&q), AF_ERR_INTERNAL);
    q.top = q.heap[0];
    q.pos[3] = 0; /* an absent unit pointing into the heap */
    assert_int_equal(af_evq_check(&q), AF_ERR_INTERNAL);
    q.pos[3] = -1;
    assert_int_equal(af_evq_check(&q), AF_OK);
    af_evq_destroy(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pops_in_step_order_with_ties_to_the_lower_unit),
        cmocka_unit_test(test_rekey_moves_a_unit_both_ways),
        cmocka_unit_test(test_remove_from_any_place),
        cmocka_unit_test(test_a_range_is_indexed_from_its_start),
        cmocka_unit_test(test_a_parked_value_survives_the_heap_around_it),
        cmocka_unit_test(test_init_reports_every_failed_allocation),
        cmocka_unit_test(test_random_operations_agree_with_a_sorted_oracle),
        cmocka_unit_test(test_check_catches_corruption),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
