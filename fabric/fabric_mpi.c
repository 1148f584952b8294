/* agefence fabric, MPI backend, and the launch (af_world_*). This and the NCCL bootstrap are
 * the only compilation units that include <mpi.h> (after CoMD's parallel.c). */
#include "fabric.h"

#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "../common/af_alloc.h"
#include "../common/af_time.h"

/* MPI counts and displacements are int: every transfer goes in pieces of at most
 * AF_MPI_MAX_COUNT elements (bytes, or words of an all-reduce), so any size the configuration
 * accepts works. A test build forces a tiny piece (tests/CMakeLists.txt, test_fabric_pieces). */
#ifndef AF_MPI_MAX_COUNT
#define AF_MPI_MAX_COUNT INT_MAX
#endif
#define AF_MPI_PIECES_MAX (4 * AF_FABRIC_MAX_P2P)

/* Tags: the batches of exchange(), the pieces of a large gather, and the watchdog's census
 * and its end (af_fabric_hung_census). */
enum {
    AF_TAG_EXCHANGE = 7,
    AF_TAG_GATHER = 8,
    AF_TAG_CENSUS = 9,
    AF_TAG_CENSUS_END = 10,
    AF_TAG_SMALL = 11, /* the small collectives under a deadline (small_allgather) */
    AF_TAG_SMALLV = 12
};

/* Under a deadline, the step's small collectives (an all-reduce of at most AF_SMALL_WORDS words,
 * an all-gather's counts and values) on at most AF_SMALL_RANKS ranks go point to point: every
 * rank sends its part to every other, and each reduces what it received in rank order (max and
 * integer sums give the same bits whatever the order). Open MPI's non-blocking collectives
 * (libnbc) cost about 2 us more a step than the blocking ones on shared memory (bench coord);
 * these cost what the blocking ones do. Larger ones use MPI_I*. */
enum { AF_SMALL_RANKS = 64, AF_SMALL_WORDS = 64 };

typedef struct af_mpi {
    MPI_Comm comm;
    MPI_Request *reqs;    /* AF_MPI_PIECES_MAX, allocated at creation */
    MPI_Status *statuses; /* AF_MPI_PIECES_MAX: an exchange's, for its received counts */
    int *want;            /* AF_MPI_PIECES_MAX: each receive's expected bytes (-1: a send) */
    int *peer;            /* AF_MPI_PIECES_MAX: and its peer */
    int64_t *census;      /* size: the steps the watchdog's census heard from each rank */
    int64_t census_step;  /* this rank's, the census's send buffer */
    uint64_t *small;      /* AF_SMALL_WORDS x size (size <= AF_SMALL_RANKS): small_allgather's */
    size_t *offs;         /* size: where each rank's bytes start in a gather's receive buffer */
    int64_t *ns;          /* size: each rank's count in an all-gather */
    int *counts;          /* size: the same as MPI's ints, and their displacements */
    int *displs;
} af_mpi_t;

/* Returns AF_ERR_FABRIC with MPI's message when rc (what `what` returned) is not success. */
#define AF_MPI_CHECK_RC(rc, what)                                                                  \
    do {                                                                                           \
        int af_mpi_rc_ = (rc);                                                                     \
        if (af_mpi_rc_ != MPI_SUCCESS) {                                                           \
            char af_mpi_msg_[MPI_MAX_ERROR_STRING];                                                \
            int af_mpi_len_ = 0;                                                                   \
            MPI_Error_string(af_mpi_rc_, af_mpi_msg_, &af_mpi_len_);                               \
            af_error_set("MPI: %s failed: %s", what, af_mpi_msg_);                                 \
            af_error_breadcrumb(AF_ERR_FABRIC, what, __FILE__, __LINE__);                          \
            return AF_ERR_FABRIC;                                                                  \
        }                                                                                          \
    } while (0)
#define AF_MPI_CHECK(call) AF_MPI_CHECK_RC(call, #call)

static MPI_Comm mpi_comm(af_fabric_t *f)
{
    return ((af_mpi_t *)f->impl)->comm;
}

static size_t piece_of(size_t left)
{
    return left < (size_t)AF_MPI_MAX_COUNT ? left : (size_t)AF_MPI_MAX_COUNT;
}

size_t af_fabric_mpi_max_count(void)
{
    return (size_t)AF_MPI_MAX_COUNT;
}

/* MPI_Waitall without statuses. MPICH declares the statuses as an array and defines
 * MPI_STATUSES_IGNORE as (MPI_Status *)1, so GCC's -Wstringop-overflow sees an access of 20
 * bytes "in a region of size 0" at every call: a false alarm (MPI never touches the statuses it
 * is told to ignore), silenced here, in the one place that passes it. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif
static int wait_all(MPI_Request *reqs, int n)
{
    return MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
}
static int test_all(MPI_Request *reqs, int n, int *done)
{
    return MPI_Testall(n, reqs, done, MPI_STATUSES_IGNORE);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

/* Waits for n requests (statuses into st, or none when st is NULL). Without a deadline
 * (f->deadline_us 0) it blocks in MPI_Waitall. With one, it polls them with MPI_Testall until
 * they complete or the deadline passes: then it marks the fabric timed out and returns
 * AF_ERR_HUNG, and the requests stay posted (a peer that never arrives never completes them:
 * the launch ends, af_fabric_hung_census). */
static af_result_t wait_reqs(af_fabric_t *f, MPI_Request *reqs, int n, MPI_Status *st,
                             const char *what)
{
    if (f->deadline_us <= 0) {
        AF_MPI_CHECK_RC(st != NULL ? MPI_Waitall(n, reqs, st) : wait_all(reqs, n), what);
        return AF_OK;
    }
    for (;;) {
        int done = 0;
        AF_MPI_CHECK_RC(st != NULL ? MPI_Testall(n, reqs, &done, st) : test_all(reqs, n, &done),
                        what);
        if (done) {
            return AF_OK;
        }
        if (af_now_us() >= f->deadline_us) {
            f->timed_out = 1;
            af_error_set("fabric: %s did not complete within run.step_timeout", what);
            return AF_ERR_HUNG;
        }
    }
}

/* One non-blocking collective's request, posted by `post` (an MPI_I* call), then waited for
 * with wait_reqs. */
#define AF_MPI_WAIT_ONE(f, post)                                                                   \
    do {                                                                                           \
        MPI_Request af_req_ = MPI_REQUEST_NULL;                                                    \
        AF_MPI_CHECK_RC(post, #post);                                                              \
        AF_CHECK(wait_reqs((f), &af_req_, 1, NULL, #post));                                        \
    } while (0)

/* The unsigned maximum through MPI's signed one. MPI_MAX on MPI_UINT64_T is not to be trusted:
 * MPICH 4.0.2 compares it as signed (MPI_MAX(0x8000000000000000, 1) gives 1), and Open MPI
 * 4.1.4 has a like bug for MPI_UNSIGNED_LONG; the halo's bit patterns (a negative double has its
 * top bit set) were lost. Flipping the top bit maps the unsigned order onto the signed one
 * (0 -> INT64_MIN, UINT64_MAX -> INT64_MAX), and MPI_MAX on MPI_INT64_T is right on every MPI:
 * flip, reduce as signed, flip back, in place, exact. */
#define AF_U64_TOP 0x8000000000000000ULL

static void flip_top_bits(uint64_t *buf, size_t n)
{
    for (size_t i = 0; i < n; ++i) {
        buf[i] ^= AF_U64_TOP;
    }
}

/* Every rank's n words (mine) into all (size x n, rank-major), point to point, waited for
 * under the deadline. */
static af_result_t small_allgather(af_fabric_t *f, const void *mine, int n, MPI_Datatype type,
                                   size_t elem, void *all, int tag)
{
    af_mpi_t *m = f->impl;
    int nr = 0;
    memcpy((char *)all + (size_t)f->rank * (size_t)n * elem, mine, (size_t)n * elem);
    for (int q = 0; q < f->size; ++q) {
        if (q != f->rank) {
            AF_MPI_CHECK(MPI_Irecv((char *)all + (size_t)q * (size_t)n * elem, n, type, q, tag,
                                   m->comm, &m->reqs[nr++]));
        }
    }
    for (int q = 0; q < f->size; ++q) {
        if (q != f->rank) {
            AF_MPI_CHECK(MPI_Isend(mine, n, type, q, tag, m->comm, &m->reqs[nr++]));
        }
    }
    return wait_reqs(f, m->reqs, nr, NULL, "a small collective's messages");
}

static int small_ok(const af_fabric_t *f, size_t n)
{
    return f->deadline_us > 0 && f->size <= AF_SMALL_RANKS && n <= AF_SMALL_WORDS;
}

static af_result_t mpi_allreduce_max_u64(af_fabric_t *f, uint64_t *buf, size_t n)
{
    if (small_ok(f, n)) {
        af_mpi_t *m = f->impl;
        AF_CHECK(small_allgather(f, buf, (int)n, MPI_UINT64_T, 8, m->small, AF_TAG_SMALL));
        for (int q = 0; q < f->size; ++q) {
            for (size_t i = 0; i < n; ++i) {
                uint64_t v = m->small[(size_t)q * n + i];
                buf[i] = v > buf[i] ? v : buf[i]; /* unsigned, as the operation promises */
            }
        }
        return AF_OK;
    }
    int rc = MPI_SUCCESS;
    flip_top_bits(buf, n);
    af_result_t arc = AF_OK;
    for (size_t at = 0, k = 0; at < n && rc == MPI_SUCCESS && arc == AF_OK; at += k) {
        k = piece_of(n - at);
        if (f->deadline_us > 0) {
            MPI_Request q = MPI_REQUEST_NULL;
            rc = MPI_Iallreduce(MPI_IN_PLACE, buf + at, (int)k, MPI_INT64_T, MPI_MAX, mpi_comm(f),
                                &q);
            arc = rc == MPI_SUCCESS ? wait_reqs(f, &q, 1, NULL, "MPI_Iallreduce(MPI_MAX)") : AF_OK;
        } else {
            rc = MPI_Allreduce(MPI_IN_PLACE, buf + at, (int)k, MPI_INT64_T, MPI_MAX, mpi_comm(f));
        }
    }
    flip_top_bits(buf, n);
    AF_MPI_CHECK_RC(rc, "MPI_Allreduce(MPI_INT64_T, MPI_MAX)");
    return arc;
}

static af_result_t mpi_allreduce_sum_i64(af_fabric_t *f, int64_t *buf, size_t n)
{
    if (small_ok(f, n)) {
        af_mpi_t *m = f->impl;
        AF_CHECK(small_allgather(f, buf, (int)n, MPI_INT64_T, 8, m->small, AF_TAG_SMALL));
        for (size_t i = 0; i < n; ++i) {
            uint64_t sum = 0;
            for (int q = 0; q < f->size; ++q) {
                sum += m->small[(size_t)q * n + i];
            }
            buf[i] = (int64_t)sum;
        }
        return AF_OK;
    }
    for (size_t at = 0, k = 0; at < n; at += k) {
        k = piece_of(n - at);
        if (f->deadline_us > 0) {
            AF_MPI_WAIT_ONE(f, MPI_Iallreduce(MPI_IN_PLACE, buf + at, (int)k, MPI_INT64_T, MPI_SUM,
                                              mpi_comm(f), &af_req_));
        } else {
            AF_MPI_CHECK(
                MPI_Allreduce(MPI_IN_PLACE, buf + at, (int)k, MPI_INT64_T, MPI_SUM, mpi_comm(f)));
        }
    }
    return AF_OK;
}

static af_result_t mpi_bcast(af_fabric_t *f, void *buf, size_t bytes, int root)
{
    for (size_t at = 0, k = 0; at < bytes; at += k) {
        k = piece_of(bytes - at);
        if (f->deadline_us > 0) {
            AF_MPI_WAIT_ONE(
                f, MPI_Ibcast((char *)buf + at, (int)k, MPI_BYTE, root, mpi_comm(f), &af_req_));
        } else {
            AF_MPI_CHECK(MPI_Bcast((char *)buf + at, (int)k, MPI_BYTE, root, mpi_comm(f)));
        }
    }
    return AF_OK;
}

/* A gather in pieces, point to point: rank r's counts[r] bytes (every rank's `bytes` when
 * counts is NULL) land on the root at the sum of the earlier ranks' counts. The ranks send their
 * pieces in order; the root receives piece k of every rank in round k. */
static af_result_t gather_pieces(af_fabric_t *f, const void *send, size_t bytes, void *recv,
                                 const size_t *counts, int root)
{
    af_mpi_t *m = f->impl;
    if (f->rank != root) {
        for (size_t at = 0, k = 0; at < bytes; at += k) {
            k = piece_of(bytes - at);
            AF_MPI_WAIT_ONE(f, MPI_Isend((const char *)send + at, (int)k, MPI_BYTE, root,
                                         AF_TAG_GATHER, m->comm, &af_req_));
        }
        return AF_OK;
    }
    size_t off = 0;
    for (int r = 0; r < f->size; ++r) {
        m->offs[r] = off;
        off += counts != NULL ? counts[r] : bytes;
    }
    memcpy((char *)recv + m->offs[root], send, counts != NULL ? counts[root] : bytes);
    for (size_t round = 0;; ++round) {
        int nreq = 0;
        int any = 0;
        for (int r = 0; r < f->size; ++r) {
            size_t len = counts != NULL ? counts[r] : bytes;
            size_t at = round * (size_t)AF_MPI_MAX_COUNT;
            if (r == root || at >= len) {
                continue;
            }
            any = 1;
            AF_MPI_CHECK(MPI_Irecv((char *)recv + m->offs[r] + at, (int)piece_of(len - at),
                                   MPI_BYTE, r, AF_TAG_GATHER, m->comm, &m->reqs[nreq++]));
            if (nreq == AF_MPI_PIECES_MAX) {
                AF_CHECK(wait_reqs(f, m->reqs, nreq, NULL, "MPI_Irecv of a gather's pieces"));
                nreq = 0;
            }
        }
        AF_CHECK(wait_reqs(f, m->reqs, nreq, NULL, "MPI_Irecv of a gather's pieces"));
        if (!any) {
            return AF_OK;
        }
    }
}

static af_result_t mpi_gather(af_fabric_t *f, const void *send, size_t bytes, void *recv, int root)
{
    if (bytes > (size_t)AF_MPI_MAX_COUNT) {
        return gather_pieces(f, send, bytes, recv, NULL, root); /* every rank knows bytes */
    }
    /* One collective: MPI places rank r at r * bytes itself (an MPI_Aint, not an int). */
    if (f->deadline_us > 0) {
        AF_MPI_WAIT_ONE(f, MPI_Igather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, root,
                                       mpi_comm(f), &af_req_));
    } else {
        AF_MPI_CHECK(
            MPI_Gather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, root, mpi_comm(f)));
    }
    return AF_OK;
}

/* Only the root knows every count, and MPI_Gatherv's displacements are int: always in pieces
 * (the final state's gather, once per run). */
static af_result_t mpi_gatherv(af_fabric_t *f, const void *send, size_t bytes, void *recv,
                               const size_t *counts, int root)
{
    return gather_pieces(f, send, bytes, recv, counts, root);
}

/* Two collectives: the counts (an all-gather of one int64 each), then the values, whose total
 * is known to fit an int (checked on every rank alike, so all return the same code). */
static af_result_t mpi_allgatherv_i32(af_fabric_t *f, const int32_t *send, size_t n, int32_t *recv,
                                      size_t cap, size_t *total)
{
    af_mpi_t *m = f->impl;
    int64_t mine = (int64_t)n;
    const int small = small_ok(f, 1);
    if (small) {
        AF_CHECK(small_allgather(f, &mine, 1, MPI_INT64_T, 8, m->ns, AF_TAG_SMALL));
    } else if (f->deadline_us > 0) {
        AF_MPI_WAIT_ONE(
            f, MPI_Iallgather(&mine, 1, MPI_INT64_T, m->ns, 1, MPI_INT64_T, m->comm, &af_req_));
    } else {
        AF_MPI_CHECK(MPI_Allgather(&mine, 1, MPI_INT64_T, m->ns, 1, MPI_INT64_T, m->comm));
    }
    int64_t sum = 0;
    for (int r = 0; r < f->size; ++r) {
        if (m->ns[r] < 0 || sum > INT_MAX - m->ns[r]) {
            af_error_set("fabric: an all-gather of more than %d values", INT_MAX);
            return AF_ERR_INTERNAL;
        }
        m->counts[r] = (int)m->ns[r];
        m->displs[r] = (int)sum;
        sum += m->ns[r];
    }
    if ((size_t)sum > cap) {
        af_error_set("fabric: an all-gather of %lld values into room for %zu", (long long)sum, cap);
        return AF_ERR_INTERNAL;
    }
    if (small) {
        /* Point to point (see AF_SMALL_RANKS): this rank's values to their place first (they
         * may lie in recv), then sent from there to every rank while the others' arrive. */
        memmove(recv + m->displs[f->rank], send, sizeof(int32_t) * n);
        int nr = 0;
        for (int q = 0; q < f->size; ++q) {
            if (q != f->rank && m->counts[q] > 0) {
                AF_MPI_CHECK(MPI_Irecv(recv + m->displs[q], m->counts[q], MPI_INT32_T, q,
                                       AF_TAG_SMALLV, m->comm, &m->reqs[nr++]));
            }
        }
        for (int q = 0; q < f->size && n > 0; ++q) {
            if (q != f->rank) {
                AF_MPI_CHECK(MPI_Isend(recv + m->displs[f->rank], (int)n, MPI_INT32_T, q,
                                       AF_TAG_SMALLV, m->comm, &m->reqs[nr++]));
            }
        }
        AF_CHECK(wait_reqs(f, m->reqs, nr, NULL, "an all-gather's messages"));
    } else if (send >= recv && send < recv + cap) {
        /* In place: this rank's values to their place, the others gathered around them. */
        memmove(recv + m->displs[f->rank], send, sizeof(int32_t) * n);
        if (f->deadline_us > 0) {
            AF_MPI_WAIT_ONE(f, MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, m->counts,
                                               m->displs, MPI_INT32_T, m->comm, &af_req_));
        } else {
            AF_MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, m->counts,
                                        m->displs, MPI_INT32_T, m->comm));
        }
    } else if (f->deadline_us > 0) {
        AF_MPI_WAIT_ONE(f, MPI_Iallgatherv(send, (int)n, MPI_INT32_T, recv, m->counts, m->displs,
                                           MPI_INT32_T, m->comm, &af_req_));
    } else {
        AF_MPI_CHECK(MPI_Allgatherv(send, (int)n, MPI_INT32_T, recv, m->counts, m->displs,
                                    MPI_INT32_T, m->comm));
    }
    *total = (size_t)sum;
    return AF_OK;
}

static af_result_t mpi_exchange(af_fabric_t *f, const af_p2p_t *ops, int n)
{
    af_mpi_t *m = f->impl;
    if (n > AF_FABRIC_MAX_P2P) {
        af_error_set("fabric: %d transfers in one batch, at most %d", n, AF_FABRIC_MAX_P2P);
        return AF_ERR_INTERNAL;
    }
    /* Each transfer in pieces; both sides cut a transfer the same way (its bytes), and MPI keeps
     * the order of messages between two ranks, so the pieces match. */
    int nreq = 0;
    for (int i = 0; i < n; ++i) {
        size_t at = 0;
        do { /* an empty transfer is one empty message */
            size_t k = piece_of(ops[i].bytes - at);
            if (nreq == AF_MPI_PIECES_MAX) {
                af_error_set("fabric: one batch of %d transfers makes more than %d pieces of %zu "
                             "bytes",
                             n, AF_MPI_PIECES_MAX, (size_t)AF_MPI_MAX_COUNT);
                wait_all(m->reqs, nreq);
                return AF_ERR_INTERNAL;
            }
            char *p = (char *)ops[i].buf + at;
            m->peer[nreq] = ops[i].peer;
            m->want[nreq] = ops[i].is_send ? -1 : (int)k;
            if (ops[i].is_send) {
                AF_MPI_CHECK(MPI_Isend(p, (int)k, MPI_BYTE, ops[i].peer, AF_TAG_EXCHANGE, m->comm,
                                       &m->reqs[nreq++]));
            } else {
                AF_MPI_CHECK(MPI_Irecv(p, (int)k, MPI_BYTE, ops[i].peer, AF_TAG_EXCHANGE, m->comm,
                                       &m->reqs[nreq++]));
            }
            at += k;
        } while (at < ops[i].bytes);
    }
    AF_CHECK(wait_reqs(f, m->reqs, nreq, m->statuses, "MPI_Waitall of an exchange"));
    /* A receive completes with a message shorter than its buffer (MPI reports only a longer
     * one): what arrived is checked against what the plan expects, so a short message is an
     * error that names its peer, never stale bytes taken for the peer's state. */
    for (int q = 0; q < nreq; ++q) {
        int got = -1;
        if (m->want[q] < 0) {
            continue;
        }
        AF_MPI_CHECK(MPI_Get_count(&m->statuses[q], MPI_BYTE, &got));
        if (got != m->want[q]) {
            af_error_set("fabric: rank %d sent %d bytes where the exchange's plan expects %d "
                         "(a message to rank %d)",
                         m->peer[q], got, m->want[q], f->rank);
            return AF_ERR_INTERNAL;
        }
    }
    return AF_OK;
}

static af_result_t mpi_barrier(af_fabric_t *f)
{
    if (f->deadline_us > 0) {
        AF_MPI_WAIT_ONE(f, MPI_Ibarrier(mpi_comm(f), &af_req_));
    } else {
        AF_MPI_CHECK(MPI_Barrier(mpi_comm(f)));
    }
    return AF_OK;
}

static void mpi_destroy(af_fabric_t *f)
{
    af_mpi_t *m = f->impl;
    if (m != NULL) {
        if (m->comm != MPI_COMM_NULL) {
            MPI_Comm_free(&m->comm);
        }
        af_free(m->reqs);
        af_free(m->statuses);
        af_free(m->want);
        af_free(m->peer);
        af_free(m->census);
        af_free(m->small);
        af_free(m->offs);
        af_free(m->ns);
        af_free(m->counts);
        af_free(m->displs);
        af_free(m);
    }
    af_free(f);
}

static const af_fabric_ops_t af_fabric_mpi_ops = {
    .name = "mpi",
    .mem = AF_MEM_HOST,
    .allreduce_max_u64 = mpi_allreduce_max_u64,
    .allreduce_sum_i64 = mpi_allreduce_sum_i64,
    .bcast = mpi_bcast,
    .gather = mpi_gather,
    .gatherv = mpi_gatherv,
    .allgatherv_i32 = mpi_allgatherv_i32,
    .exchange = mpi_exchange,
    .barrier = mpi_barrier,
    .destroy = mpi_destroy,
    .enqueue_allreduce_max_u64 = NULL, /* host buffers: nothing a CUDA graph could capture */
};

af_result_t af_fabric_mpi_create(af_fabric_t **out)
{
    af_result_t rc = AF_OK;
    af_fabric_t *f = af_alloc(sizeof *f);
    af_mpi_t *m = af_alloc(sizeof *m);
    AF_REQUIRE_GOTO(f != NULL && m != NULL, AF_ERR_NOMEM, rc, fail);
    f->ops = &af_fabric_mpi_ops;
    f->impl = m;
    m->comm = MPI_COMM_NULL;
    if (MPI_Comm_dup(MPI_COMM_WORLD, &m->comm) != MPI_SUCCESS) {
        af_error_set("MPI: could not duplicate MPI_COMM_WORLD");
        rc = AF_ERR_FABRIC;
        goto fail;
    }
    af_alloc_note_comm();
    MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(m->comm, &f->rank);
    MPI_Comm_size(m->comm, &f->size);
    m->reqs = af_alloc(sizeof(MPI_Request) * AF_MPI_PIECES_MAX);
    m->statuses = af_alloc(sizeof(MPI_Status) * AF_MPI_PIECES_MAX);
    m->want = af_alloc(sizeof(int) * AF_MPI_PIECES_MAX);
    m->peer = af_alloc(sizeof(int) * AF_MPI_PIECES_MAX);
    m->census = af_alloc(sizeof(int64_t) * (size_t)f->size);
    m->small = f->size <= AF_SMALL_RANKS
                   ? af_alloc(sizeof(uint64_t) * AF_SMALL_WORDS * (size_t)f->size)
                   : NULL;
    m->offs = af_alloc(sizeof(size_t) * (size_t)f->size);
    m->ns = af_alloc(sizeof(int64_t) * (size_t)f->size);
    m->counts = af_alloc(sizeof(int) * (size_t)f->size);
    m->displs = af_alloc(sizeof(int) * (size_t)f->size);
    AF_REQUIRE_GOTO(m->reqs && m->statuses && m->want && m->peer && m->census &&
                        (m->small || f->size > AF_SMALL_RANKS) && m->offs && m->ns && m->counts &&
                        m->displs,
                    AF_ERR_NOMEM, rc, fail);
    *out = f;
    return AF_OK;
fail:
    if (f != NULL) {
        f->impl = m;
        mpi_destroy(f);
    } else {
        af_free(m);
    }
    return rc;
}

af_result_t af_fabric_mpi_split(af_fabric_t *f, int color, int key, af_fabric_t **out)
{
    af_result_t rc = AF_OK;
    af_fabric_t *n = af_alloc(sizeof *n);
    af_mpi_t *m = af_alloc(sizeof *m);
    AF_REQUIRE_GOTO(n != NULL && m != NULL, AF_ERR_NOMEM, rc, fail);
    n->ops = &af_fabric_mpi_ops;
    n->impl = m;
    m->comm = MPI_COMM_NULL;
    if (MPI_Comm_split(mpi_comm(f), color, key, &m->comm) != MPI_SUCCESS) {
        af_error_set("MPI: MPI_Comm_split failed");
        rc = AF_ERR_FABRIC;
        goto fail;
    }
    af_alloc_note_comm();
    MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(m->comm, &n->rank);
    MPI_Comm_size(m->comm, &n->size);
    m->reqs = af_alloc(sizeof(MPI_Request) * AF_MPI_PIECES_MAX);
    m->statuses = af_alloc(sizeof(MPI_Status) * AF_MPI_PIECES_MAX);
    m->want = af_alloc(sizeof(int) * AF_MPI_PIECES_MAX);
    m->peer = af_alloc(sizeof(int) * AF_MPI_PIECES_MAX);
    m->census = af_alloc(sizeof(int64_t) * (size_t)n->size);
    m->small = n->size <= AF_SMALL_RANKS
                   ? af_alloc(sizeof(uint64_t) * AF_SMALL_WORDS * (size_t)n->size)
                   : NULL;
    m->offs = af_alloc(sizeof(size_t) * (size_t)n->size);
    m->ns = af_alloc(sizeof(int64_t) * (size_t)n->size);
    m->counts = af_alloc(sizeof(int) * (size_t)n->size);
    m->displs = af_alloc(sizeof(int) * (size_t)n->size);
    AF_REQUIRE_GOTO(m->reqs && m->statuses && m->want && m->peer && m->census &&
                        (m->small || n->size > AF_SMALL_RANKS) && m->offs && m->ns && m->counts &&
                        m->displs,
                    AF_ERR_NOMEM, rc, fail);
    *out = n;
    return AF_OK;
fail:
    if (n != NULL) {
        n->impl = m;
        mpi_destroy(n);
    } else {
        af_free(m);
    }
    return rc;
}

/* The census's messages are point to point on the fabric's communicator, beside whatever
 * collective or exchange timed out (MPI keeps collectives and point-to-point messages apart):
 * the requests that never complete are left posted, as the timed-out ones are, since the launch
 * ends next. The requests are the fabric's own array (its timed-out exchange's handles are
 * given up). */
af_result_t af_fabric_hung_census(af_fabric_t *f, int64_t step, double grace_us, uint8_t *arrived,
                                  int64_t *step_of, int *late)
{
    af_mpi_t *m = f->impl;
    const int n = f->size;
    memset(arrived, 0, (size_t)n);
    arrived[f->rank] = 1;
    *step_of = step;
    if (2 * (n - 1) > AF_MPI_PIECES_MAX) {
        af_error_set("fabric: the census of %d ranks needs more than %d requests", n,
                     AF_MPI_PIECES_MAX);
        return AF_ERR_INTERNAL;
    }
    m->census_step = step;
    int nr = 0;
    for (int q = 0; q < n; ++q) {
        if (q != f->rank) {
            m->peer[nr] = q;
            AF_MPI_CHECK(MPI_Irecv(&m->census[q], 1, MPI_INT64_T, q, AF_TAG_CENSUS, m->comm,
                                   &m->reqs[nr++]));
        }
    }
    const int nrecv = nr;
    for (int q = 0; q < n; ++q) {
        if (q != f->rank) {
            AF_MPI_CHECK(MPI_Isend(&m->census_step, 1, MPI_INT64_T, q, AF_TAG_CENSUS, m->comm,
                                   &m->reqs[nr++]));
        }
    }
    const double until = af_now_us() + grace_us;
    int heard = 0;
    while (heard < nrecv && af_now_us() < until) {
        for (int i = 0; i < nrecv; ++i) {
            int done = 0;
            if (m->reqs[i] == MPI_REQUEST_NULL) {
                continue;
            }
            AF_MPI_CHECK(MPI_Test(&m->reqs[i], &done, MPI_STATUS_IGNORE));
            if (done) {
                arrived[m->peer[i]] = 1;
                *step_of = m->census[m->peer[i]] > *step_of ? m->census[m->peer[i]] : *step_of;
                heard++;
            }
        }
    }
    *late = 0;
    AF_MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, AF_TAG_CENSUS_END, m->comm, late, MPI_STATUS_IGNORE));
    return AF_OK;
}

void af_fabric_hung_word(af_fabric_t *f, const uint8_t *to)
{
    af_mpi_t *m = f->impl;
    int nr = 0;
    for (int q = 0; q < f->size && nr < AF_MPI_PIECES_MAX; ++q) {
        if (q != f->rank && to[q] &&
            MPI_Isend(&m->census_step, 1, MPI_INT64_T, q, AF_TAG_CENSUS_END, m->comm,
                      &m->reqs[nr]) == MPI_SUCCESS) {
            nr++;
        }
    }
    /* Eight bytes leave at once even to a stopped rank (the library buffers them); up to a
     * second for the library to move them before the launch ends. */
    const double until = af_now_us() + 1e6;
    int done = 0;
    while (!done && af_now_us() < until && test_all(m->reqs, nr, &done) == MPI_SUCCESS) {
    }
}

void af_fabric_hung_wait_word(af_fabric_t *f, double wait_us)
{
    af_mpi_t *m = f->impl;
    MPI_Request req = MPI_REQUEST_NULL;
    if (MPI_Irecv(&m->census[0], 1, MPI_INT64_T, 0, AF_TAG_CENSUS_END, m->comm, &req) !=
        MPI_SUCCESS) {
        return;
    }
    const double until = af_now_us() + wait_us;
    int done = 0;
    while (!done && af_now_us() < until) {
        if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            return;
        }
    }
}

void af_fabric_destroy(af_fabric_t **f)
{
    if (f != NULL && *f != NULL) {
        (*f)->ops->destroy(*f);
        *f = NULL;
    }
}

/* The ranks of this node (MPI_COMM_TYPE_SHARED), from af_world_init to af_world_finalize. */
static MPI_Comm af_node_comm = MPI_COMM_NULL;

af_result_t af_world_node_sum_f64(double *v, int n)
{
    AF_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, af_node_comm));
    return AF_OK;
}

af_result_t af_world_init(int *argc, char ***argv, af_world_t *world)
{
    memset(world, 0, sizeof *world);
    /* Rank 0 runs a second thread, the log's writer (sim/io/log.c), which makes no MPI call:
     * only the main thread calls MPI (FUNNELED). */
    int provided = MPI_THREAD_SINGLE;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
        af_error_set("MPI: MPI_Init_thread failed");
        return AF_ERR_FABRIC;
    }
    if (provided < MPI_THREAD_FUNNELED) {
        af_error_set("MPI: the library gives threads level %d, below MPI_THREAD_FUNNELED (the "
                     "log's writer is a second thread)",
                     provided);
        return AF_ERR_FABRIC;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &world->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world->size);
    AF_MPI_CHECK(
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &af_node_comm));
    MPI_Comm_set_errhandler(af_node_comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(af_node_comm, &world->local_rank);
    MPI_Comm_size(af_node_comm, &world->local_size);
    if (gethostname(world->hostname, sizeof world->hostname - 1) != 0) {
        snprintf(world->hostname, sizeof world->hostname, "unknown");
    }
    return AF_OK;
}

void af_world_finalize(void)
{
    int done = 0;
    MPI_Finalized(&done);
    if (!done && af_node_comm != MPI_COMM_NULL) {
        MPI_Comm_free(&af_node_comm);
    }
    if (!done) {
        MPI_Finalize();
    }
}

void af_world_abort(int code)
{
    MPI_Abort(MPI_COMM_WORLD, code);
}

af_result_t af_world_hostnames(const af_world_t *world, char *out)
{
    AF_MPI_CHECK(MPI_Gather(world->hostname, 64, MPI_CHAR, out, 64, MPI_CHAR, 0, MPI_COMM_WORLD));
    return AF_OK;
}

void af_world_versions(char *out, size_t size)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    /* Keep the first line: Open MPI appends build details. */
    char *nl = strchr(lib, '\n');
    if (nl != NULL) {
        *nl = '\0';
    }
    int major = 0;
    int minor = 0;
    MPI_Get_version(&major, &minor);
    snprintf(out, size, "MPI %d.%d (%s)", major, minor, lib);
}

void af_world_library(char *out, size_t size)
{
    if (size == 0) {
        return;
    }
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, "\n")] = '\0';
    /* "MPICH Version:\t4.0.2", "Open MPI v4.1.4, package: ...", "MVAPICH2 Version :\t2.3". */
    size_t cut = strcspn(lib, ",:\t");
    for (size_t i = 0; i + 1 < cut; ++i) {
        if (lib[i] == ' ' && (strncasecmp(lib + i + 1, "version", 7) == 0 ||
                              (lib[i + 1] == 'v' && lib[i + 2] >= '0' && lib[i + 2] <= '9'))) {
            cut = i;
            break;
        }
    }
    while (cut > 0 && lib[cut - 1] == ' ') {
        --cut;
    }
    if (cut <= 3) { /* "MPI VERSION : CRAY MPICH ...": no name before the version word */
        cut = strlen(lib);
    }
    snprintf(out, size, "%.*s", (int)cut, lib);
}
