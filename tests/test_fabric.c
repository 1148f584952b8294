/* MPI tests of the fabric's MPI backend, run under mpiexec with 1 to 4 ranks: the exact
 * bit-pattern all-reduce, bcast, gather, gatherv, the integer sum and batched point-to-point
 * exchange. Every test makes all of its collective calls before it asserts anything, so a
 * failure on one rank never leaves the others waiting in a collective; the failure counts of
 * all ranks are summed at the end so that every rank exits non-zero when any rank failed. */
#include "common/af_alloc.h"
#include "common/af_time.h"
#include "fabric/fabric.h"

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

static af_world_t world;
static af_fabric_t *fab;
/* The rank count the test was launched for (its argument), 0 when not given: a launcher of
 * another MPI starts N one-rank jobs that would each pass every test as "rank 0 of 1". */
static int expected_size;

static uint64_t bits_of(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static void test_fabric_matches_the_launch(void **state)
{
    (void)state;
#ifdef AF_TEST_PIECES
    /* This build cuts every MPI transfer into pieces of AF_TEST_PIECES elements. */
    assert_int_equal(af_fabric_mpi_max_count(), AF_TEST_PIECES);
#else
    assert_true(af_fabric_mpi_max_count() >= 1000000);
#endif
    assert_non_null(fab);
    assert_string_equal(fab->ops->name, "mpi");
    assert_int_equal(fab->ops->mem, AF_MEM_HOST);
    assert_int_equal(fab->rank, world.rank);
    assert_int_equal(fab->size, world.size);
    if (expected_size > 0) {
        assert_int_equal(world.size, expected_size);
    }
    assert_true(world.size >= 1 && world.rank >= 0 && world.rank < world.size);
    assert_true(world.local_size >= 1 && world.local_rank < world.local_size);
    assert_int_equal(af_alloc_comms_after_seal(), 0);
    assert_int_equal(fab->ops->barrier(fab), AF_OK);
}

/* A communicator created after start-up is counted, whichever call made it: the counter that
 * comms_after_init reports cannot miss the reshape a recovery must never need. */
static void test_communicators_after_start_up_are_counted(void **state)
{
    (void)state;
    af_alloc_reset();
    af_fabric_t *split = NULL;
    assert_int_equal(af_fabric_mpi_split(fab, 0, world.rank, &split), AF_OK);
    af_fabric_destroy(&split);
    assert_int_equal(af_alloc_comms_after_seal(), 0); /* before the seal: start-up */
    af_alloc_seal();
    assert_int_equal(af_fabric_mpi_split(fab, world.rank % 2, world.rank, &split), AF_OK);
    assert_int_equal(af_alloc_comms_after_seal(), 1);
    af_fabric_t *dup = NULL;
    assert_int_equal(af_fabric_mpi_create(&dup), AF_OK);
    assert_int_equal(af_alloc_comms_after_seal(), 2);
    af_fabric_destroy(&dup);
    af_fabric_destroy(&split);
    assert_null(split);
    af_alloc_reset();
    assert_int_equal(af_alloc_comms_after_seal(), 0);
}

static void test_allreduce_max_u64_carries_owner_bit_patterns_exactly(void **state)
{
    (void)state;
    const uint64_t specials[] = {
        bits_of(-0.0),      0x7ff8000000001234ULL, /* a quiet NaN with a payload */
        bits_of(4.9e-324),                         /* the smallest denormal */
        bits_of(-INFINITY), bits_of(DBL_MAX),      bits_of(1.0 / 3.0),
    };
    assert_int_equal(specials[2], 1);
    assert_int_equal(specials[0], 0x8000000000000000ULL);
    assert_int_equal(specials[3], 0xfff0000000000000ULL);
    enum { N = 6 * 5 };
    uint64_t want[N];
    uint64_t buf[N];
    for (int i = 0; i < N; ++i) {
        /* Every special lands on every owner across the entries. */
        want[i] = specials[(i + i / 6) % 6];
        buf[i] = i % fab->size == fab->rank ? want[i] : 0;
    }
    af_result_t rc = fab->ops->allreduce_max_u64(fab, buf, N);
    /* The same again with the payload NaN negated (sign bit set) everywhere. */
    uint64_t buf2[N];
    for (int i = 0; i < N; ++i) {
        buf2[i] = i % fab->size == fab->rank ? (want[i] | 0x8000000000000000ULL) : 0;
    }
    af_result_t rc2 = fab->ops->allreduce_max_u64(fab, buf2, N);
    assert_int_equal(rc, AF_OK);
    assert_int_equal(rc2, AF_OK);
    assert_memory_equal(buf, want, sizeof want);
    for (int i = 0; i < N; ++i) {
        assert_int_equal(buf2[i], want[i] | 0x8000000000000000ULL);
    }
}

/* A true unsigned maximum where several ranks contribute, words with the top bit set among
 * them: the driver's agreements (the plan digest and its complement, the memory shortfall's
 * doubles) rely on it. MPICH 4.0.2's MPI_MAX on MPI_UINT64_T compares as signed and gives 1 for
 * max(0x8000000000000000, 1). */
static void test_allreduce_max_u64_is_the_unsigned_maximum(void **state)
{
    (void)state;
    enum { N = 5 };
    const uint64_t r = (uint64_t)fab->rank;
    const uint64_t top = 0x8000000000000000ULL;
    uint64_t buf[N] = {
        fab->rank == 0 ? top : 1,                         /* max: top bit alone (or 1 alone) */
        top + r,                                          /* max: top + size - 1 */
        fab->rank == fab->size - 1 ? UINT64_MAX : r,      /* max: all ones */
        fab->rank % 2 == 0 ? 0x7fffffffffffffffULL : top, /* max: top, on 2 ranks or more */
        r,                                                /* max: size - 1 */
    };
    const uint64_t n = (uint64_t)fab->size;
    const uint64_t want[N] = {top, top + n - 1, UINT64_MAX,
                              fab->size > 1 ? top : 0x7fffffffffffffffULL, n - 1};
    af_result_t rc = fab->ops->allreduce_max_u64(fab, buf, N);
    assert_int_equal(rc, AF_OK);
    for (int i = 0; i < N; ++i) {
        assert_int_equal(buf[i], want[i]);
    }
}

/* The plan check's test (sim/driver/health.c af_check_plan): the maximum of each rank's digest and
 * of its complement give back the rank's own digest and complement on every rank only when all
 * ranks hold the same digest. Ranks that differ in any bit (the top one included) see it, every one
 * of them; ranks that agree see nothing. */
static void test_digest_and_complement_maxima_catch_any_disagreement(void **state)
{
    (void)state;
    const uint64_t base = 0xcbf29ce484222325ULL;
    /* Which bit the odd ranks flip: the top, the lowest, one in the middle; none. */
    const uint64_t flips[] = {0x8000000000000000ULL, 1, 1ULL << 31, 0};
    enum { T = sizeof flips / sizeof flips[0] };
    int caught[T];
    af_result_t rc[T];
    for (int t = 0; t < T; ++t) {
        const uint64_t d = fab->rank % 2 == 1 ? base ^ flips[t] : base;
        uint64_t w[2] = {d, ~d};
        rc[t] = fab->ops->allreduce_max_u64(fab, w, 2);
        caught[t] = w[0] != d || w[1] != ~d;
    }
    for (int t = 0; t < T; ++t) {
        assert_int_equal(rc[t], AF_OK);
        const int differ = fab->size > 1 && flips[t] != 0;
        assert_int_equal(caught[t], differ);
    }
}

static void test_bcast_copies_root_bytes_to_every_rank(void **state)
{
    (void)state;
    unsigned char buf[37];
    unsigned char want[37];
    af_result_t rc[2];
    int roots[2] = {0, fab->size - 1};
    int ok = 1;
    for (int t = 0; t < 2; ++t) {
        for (int i = 0; i < 37; ++i) {
            want[i] = (unsigned char)(31 * i + 7 * roots[t] + 1);
            buf[i] = fab->rank == roots[t] ? want[i] : 0xaa;
        }
        rc[t] = fab->ops->bcast(fab, buf, sizeof buf, roots[t]);
        ok = ok && memcmp(buf, want, sizeof want) == 0;
    }
    assert_int_equal(rc[0], AF_OK);
    assert_int_equal(rc[1], AF_OK);
    assert_true(ok);
}

static void test_gather_is_rank_major_on_the_root(void **state)
{
    (void)state;
    int64_t send[3] = {fab->rank, 10 * fab->rank + 1, -(int64_t)fab->rank - 5};
    int64_t *recv = calloc((size_t)fab->size * 3, sizeof(int64_t));
    int64_t *recv_last = calloc((size_t)fab->size * 3, sizeof(int64_t));
    assert_non_null(recv);
    assert_non_null(recv_last);
    af_result_t rc = fab->ops->gather(fab, send, sizeof send, recv, 0);
    af_result_t rc_last = fab->ops->gather(fab, send, sizeof send, recv_last, fab->size - 1);
    assert_int_equal(rc, AF_OK);
    assert_int_equal(rc_last, AF_OK);
    if (fab->rank == 0) {
        for (int r = 0; r < fab->size; ++r) {
            assert_int_equal(recv[3 * r + 0], r);
            assert_int_equal(recv[3 * r + 1], 10 * r + 1);
            assert_int_equal(recv[3 * r + 2], -r - 5);
        }
    }
    if (fab->rank == fab->size - 1) {
        for (int r = 0; r < fab->size; ++r) {
            assert_int_equal(recv_last[3 * r + 0], r);
            assert_int_equal(recv_last[3 * r + 1], 10 * r + 1);
            assert_int_equal(recv_last[3 * r + 2], -r - 5);
        }
    }
    free(recv);
    free(recv_last);
}

static void test_gatherv_with_unequal_counts_concatenates_in_rank_order(void **state)
{
    (void)state;
    /* Rank r sends 2r values (rank 0 sends none): 100 r + j. */
    int mine = 2 * fab->rank;
    int64_t *send = calloc((size_t)(mine > 0 ? mine : 1), sizeof(int64_t));
    assert_non_null(send);
    for (int j = 0; j < mine; ++j) {
        send[j] = 100 * fab->rank + j;
    }
    size_t *counts = calloc((size_t)fab->size, sizeof(size_t));
    assert_non_null(counts);
    size_t total = 0;
    for (int r = 0; r < fab->size; ++r) {
        counts[r] = sizeof(int64_t) * (size_t)(2 * r);
        total += (size_t)(2 * r);
    }
    int64_t *recv = calloc(total > 0 ? total : 1, sizeof(int64_t));
    assert_non_null(recv);
    af_result_t rc = fab->ops->gatherv(fab, send, sizeof(int64_t) * (size_t)mine, recv, counts, 0);
    assert_int_equal(rc, AF_OK);
    if (fab->rank == 0) {
        size_t at = 0;
        for (int r = 0; r < fab->size; ++r) {
            for (int j = 0; j < 2 * r; ++j) {
                assert_int_equal(recv[at++], 100 * r + j);
            }
        }
        assert_int_equal(at, total);
    }
    free(send);
    free(counts);
    free(recv);
}

/* allgatherv_i32 from a send buffer inside the receive buffer (its tail, where the driver's
 * health model writes its own changes): every rank gets every rank's values in rank order, as
 * with separate buffers. Rank r sends r + 1 values 1000 r + j. */
static void test_allgatherv_in_place_from_the_tail(void **state)
{
    (void)state;
    const int n = fab->rank + 1;
    const size_t cap = (size_t)fab->size * (size_t)(fab->size + 1) / 2 + 8;
    int32_t *buf = calloc(cap, sizeof(int32_t));
    assert_non_null(buf);
    int32_t *send = buf + cap - (size_t)n;
    for (int j = 0; j < n; ++j) {
        send[j] = 1000 * fab->rank + j;
    }
    size_t total = 0;
    af_result_t rc = fab->ops->allgatherv_i32(fab, send, (size_t)n, buf, cap, &total);
    assert_int_equal(rc, AF_OK);
    assert_int_equal(total, cap - 8);
    size_t at = 0;
    for (int r = 0; r < fab->size; ++r) {
        for (int j = 0; j <= r; ++j) {
            assert_int_equal(buf[at++], 1000 * r + j);
        }
    }
    free(buf);
}

static void test_allreduce_sum_i64_is_exact(void **state)
{
    (void)state;
    enum { N = 5 };
    int64_t buf[N];
    const int64_t big = (int64_t)1 << 52;
    buf[0] = 1;
    buf[1] = fab->rank;
    buf[2] = -3 * (int64_t)fab->rank;
    buf[3] = big + fab->rank; /* beyond the exact range of a double once summed */
    buf[4] = 0;
    af_result_t rc = fab->ops->allreduce_sum_i64(fab, buf, N);
    int64_t s = fab->size;
    int64_t ranks_sum = s * (s - 1) / 2;
    assert_int_equal(rc, AF_OK);
    assert_int_equal(buf[0], s);
    assert_int_equal(buf[1], ranks_sum);
    assert_int_equal(buf[2], -3 * ranks_sum);
    assert_int_equal(buf[3], s * big + ranks_sum);
    assert_int_equal(buf[4], 0);
}

static void test_exchange_ring_posted_in_one_batch(void **state)
{
    (void)state;
    enum { LEN = 64 };
    const int right = (fab->rank + 1) % fab->size;
    const int left = (fab->rank - 1 + fab->size) % fab->size;
    double send[LEN];
    double recv[LEN];
    for (int i = 0; i < LEN; ++i) {
        send[i] = 1000.0 * fab->rank + i + 0.5;
        recv[i] = -1.0;
    }
    /* The receive first: the batch is posted at once, so the order cannot deadlock. With one
     * rank both halves name this rank itself. */
    af_p2p_t ops[2] = {
        {.peer = left, .is_send = 0, .buf = recv, .bytes = sizeof recv},
        {.peer = right, .is_send = 1, .buf = send, .bytes = sizeof send},
    };
    af_result_t rc = fab->ops->exchange(fab, ops, 2);
    af_result_t rcb = fab->ops->barrier(fab);
    assert_int_equal(rc, AF_OK);
    assert_int_equal(rcb, AF_OK);
    for (int i = 0; i < LEN; ++i) {
        assert_true(recv[i] == 1000.0 * left + i + 0.5);
    }
}

static void test_exchange_all_pairs_with_different_sizes(void **state)
{
    (void)state;
    /* Every rank sends (rank + 1) * 3 + peer bytes to every rank (itself included) and
     * receives from every rank: 2 * size transfers in one batch. */
    const int S = fab->size;
    enum { MAXB = 64 };
    unsigned char(*out)[MAXB] = calloc((size_t)S, MAXB);
    unsigned char(*in)[MAXB] = calloc((size_t)S, MAXB);
    af_p2p_t *ops = calloc((size_t)(2 * S), sizeof(af_p2p_t));
    assert_non_null(out);
    assert_non_null(in);
    assert_non_null(ops);
    for (int p = 0; p < S; ++p) {
        size_t nsend = (size_t)((fab->rank + 1) * 3 + p);
        size_t nrecv = (size_t)((p + 1) * 3 + fab->rank);
        for (size_t i = 0; i < nsend; ++i) {
            out[p][i] = (unsigned char)(17 * fab->rank + 5 * p + (int)i);
        }
        ops[2 * p] = (af_p2p_t){.peer = p, .is_send = 1, .buf = out[p], .bytes = nsend};
        ops[2 * p + 1] = (af_p2p_t){.peer = p, .is_send = 0, .buf = in[p], .bytes = nrecv};
    }
    af_result_t rc = fab->ops->exchange(fab, ops, 2 * S);
    assert_int_equal(rc, AF_OK);
    for (int p = 0; p < S; ++p) {
        size_t nrecv = (size_t)((p + 1) * 3 + fab->rank);
        for (size_t i = 0; i < nrecv; ++i) {
            assert_int_equal(in[p][i], (unsigned char)(17 * p + 5 * fab->rank + (int)i));
        }
        assert_int_equal(in[p][nrecv], 0); /* nothing beyond the message */
    }
    free(out);
    free(in);
    free(ops);
}

static void test_world_hostnames_gathers_every_rank_on_root(void **state)
{
    (void)state;
    char *names = calloc((size_t)world.size, 64);
    assert_non_null(names);
    af_result_t rc = af_world_hostnames(&world, names);
    assert_int_equal(rc, AF_OK);
    if (world.rank == 0) {
        assert_string_equal(names, world.hostname);
        for (int r = 0; r < world.size; ++r) {
            assert_true(strlen(names + 64 * r) > 0);
        }
    }
    free(names);
}

/* A message shorter than the plan's receive is an error that names the sender, not bytes left
 * over from before taken for its data. Ring: every rank sends 23 bytes where its right
 * neighbour expects 24 (one piece short in the pieces build too: 5 x 4 + 3 against 5 x 4 + 4). */
static void test_exchange_short_message_is_an_error_naming_the_peer(void **state)
{
    (void)state;
    const int right = (fab->rank + 1) % fab->size;
    const int left = (fab->rank - 1 + fab->size) % fab->size;
    unsigned char out[24];
    unsigned char in[24];
    memset(out, 7, sizeof out);
    memset(in, 0, sizeof in);
    af_p2p_t ops[2] = {
        {.peer = left, .is_send = 0, .buf = in, .bytes = sizeof in},
        {.peer = right, .is_send = 1, .buf = out, .bytes = sizeof out - 1},
    };
    af_error_clear();
    af_result_t rc = fab->ops->exchange(fab, ops, 2);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", af_error_message());
    af_error_clear();
    af_result_t rcb = fab->ops->barrier(fab);
    assert_int_equal(rcb, AF_OK);
    assert_int_equal(rc, AF_ERR_INTERNAL);
    char want[96];
    snprintf(want, sizeof want, "fabric: rank %d sent ", left);
    assert_non_null(strstr(msg, want));
    assert_non_null(strstr(msg, "where the exchange's plan expects"));
}

/* The watchdog: with a deadline, a collective that a peer does not join ends with AF_ERR_HUNG
 * at the deadline and marks the fabric timed out. The other ranks stay away for 1 s, rank 0
 * gives up after 0.2 s; they then join (the collective still completes inside MPI, rank 0's
 * request given up), so the tests after this one find the fabric in step. The census: every
 * rank hears every other, and the largest step. */
static void test_deadline_ends_a_wait_a_peer_does_not_join(void **state)
{
    (void)state;
    if (fab->size < 2) {
        skip();
    }
    static uint64_t v[1];
    v[0] = (uint64_t)fab->rank;
    af_result_t rc = AF_OK;
    double waited_us = 0;
    if (fab->rank == 0) {
        const double t0 = af_now_us();
        fab->deadline_us = t0 + 200e3;
        rc = fab->ops->allreduce_max_u64(fab, v, 1);
        waited_us = af_now_us() - t0;
        fab->deadline_us = 0;
    } else {
        const double t0 = af_now_us();
        while (af_now_us() - t0 < 1e6) {
        }
        /* A deadline of their own, far off: every rank of a collective has one or none (the
         * fabric then takes the same path on every rank). */
        fab->deadline_us = af_now_us() + 30e6;
        rc = fab->ops->allreduce_max_u64(fab, v, 1);
        fab->deadline_us = 0;
    }
    const int timed_out = fab->timed_out;
    uint8_t arrived[64];
    int64_t step = 0;
    int late = 1;
    af_result_t crc = fab->size <= 64
                          ? af_fabric_hung_census(fab, 7 + fab->rank, 5e6, arrived, &step, &late)
                          : AF_OK;
    fab->timed_out = 0;
    af_result_t rcb = fab->ops->barrier(fab);
    assert_int_equal(rcb, AF_OK);
    assert_int_equal(rc, fab->rank == 0 ? AF_ERR_HUNG : AF_OK);
    assert_int_equal(crc, AF_OK);
    assert_int_equal(timed_out, fab->rank == 0);
    if (fab->rank == 0) {
        assert_true(waited_us >= 200e3 && waited_us < 900e3);
    } else {
        assert_true(v[0] == (uint64_t)(fab->size - 1)); /* rank 0's part arrived all the same */
    }
    for (int q = 0; q < fab->size && q < 64; ++q) {
        assert_int_equal(arrived[q], 1);
    }
    assert_int_equal(step, 7 + fab->size - 1);
    assert_int_equal(late, 0);
}

int main(int argc, char **argv)
{
    if (af_world_init(&argc, &argv, &world) != AF_OK) {
        fprintf(stderr, "test_fabric: af_world_init failed\n");
        return 1;
    }
    if (af_fabric_mpi_create(&fab) != AF_OK) {
        fprintf(stderr, "test_fabric: af_fabric_mpi_create failed on rank %d\n", world.rank);
        af_world_abort(1);
        return 1;
    }
    /* test_fabric [N]: the launch must have N ranks. */
    expected_size = argc > 1 ? atoi(argv[1]) : 0;
    char name[64];
    snprintf(name, sizeof name, "test_fabric rank %d of %d", world.rank, world.size);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fabric_matches_the_launch),
        cmocka_unit_test(test_communicators_after_start_up_are_counted),
        cmocka_unit_test(test_allreduce_max_u64_carries_owner_bit_patterns_exactly),
        cmocka_unit_test(test_allreduce_max_u64_is_the_unsigned_maximum),
        cmocka_unit_test(test_digest_and_complement_maxima_catch_any_disagreement),
        cmocka_unit_test(test_bcast_copies_root_bytes_to_every_rank),
        cmocka_unit_test(test_gather_is_rank_major_on_the_root),
        cmocka_unit_test(test_gatherv_with_unequal_counts_concatenates_in_rank_order),
        cmocka_unit_test(test_allgatherv_in_place_from_the_tail),
        cmocka_unit_test(test_allreduce_sum_i64_is_exact),
        cmocka_unit_test(test_exchange_ring_posted_in_one_batch),
        cmocka_unit_test(test_exchange_all_pairs_with_different_sizes),
        cmocka_unit_test(test_world_hostnames_gathers_every_rank_on_root),
        cmocka_unit_test(test_exchange_short_message_is_an_error_naming_the_peer),
        cmocka_unit_test(test_deadline_ends_a_wait_a_peer_does_not_join),
    };
    int failed = cmocka_run_group_tests_name(name, tests, NULL, NULL);
    /* All ranks agree on the verdict: any failure anywhere fails every rank. */
    int64_t total = failed;
    if (fab->ops->allreduce_sum_i64(fab, &total, 1) != AF_OK) {
        total = failed > 0 ? failed : 1;
    }
    if (world.rank == 0) {
        printf("test_fabric: %lld failed test(s) over %d rank(s)\n", (long long)total, world.size);
    }
    af_fabric_destroy(&fab);
    af_world_finalize();
    return total == 0 ? 0 : 1;
}
