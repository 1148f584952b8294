/* agefence fabric, MPI backend, and the launch (af_world_*). This and the NCCL bootstrap are
 * the only compilation units that include <mpi.h> (after CoMD's parallel.c). */
#include "fabric.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/af_alloc.h"

typedef struct af_mpi {
    MPI_Comm comm;
    MPI_Request *reqs; /* AF_FABRIC_MAX_P2P, allocated at creation */
    int *counts;       /* size, for gatherv */
    int *displs;
} af_mpi_t;

#define AF_MPI_CHECK(call)                                                                         \
    do {                                                                                           \
        int af_mpi_rc_ = (call);                                                                   \
        if (af_mpi_rc_ != MPI_SUCCESS) {                                                           \
            char af_mpi_msg_[MPI_MAX_ERROR_STRING];                                                \
            int af_mpi_len_ = 0;                                                                   \
            MPI_Error_string(af_mpi_rc_, af_mpi_msg_, &af_mpi_len_);                               \
            af_error_set("MPI: %s failed: %s", #call, af_mpi_msg_);                                \
            af_error_breadcrumb(AF_ERR_FABRIC, #call, __FILE__, __LINE__);                         \
            return AF_ERR_FABRIC;                                                                  \
        }                                                                                          \
    } while (0)

static MPI_Comm mpi_comm(af_fabric_t *f)
{
    return ((af_mpi_t *)f->impl)->comm;
}

static af_result_t mpi_allreduce_max_u64(af_fabric_t *f, uint64_t *buf, size_t n)
{
    AF_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_UINT64_T, MPI_MAX, mpi_comm(f)));
    return AF_OK;
}

static af_result_t mpi_allreduce_sum_i64(af_fabric_t *f, int64_t *buf, size_t n)
{
    AF_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_INT64_T, MPI_SUM, mpi_comm(f)));
    return AF_OK;
}

static af_result_t mpi_bcast(af_fabric_t *f, void *buf, size_t bytes, int root)
{
    AF_MPI_CHECK(MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, mpi_comm(f)));
    return AF_OK;
}

static af_result_t mpi_gather(af_fabric_t *f, const void *send, size_t bytes, void *recv, int root)
{
    AF_MPI_CHECK(
        MPI_Gather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, root, mpi_comm(f)));
    return AF_OK;
}

static af_result_t mpi_gatherv(af_fabric_t *f, const void *send, size_t bytes, void *recv,
                               const size_t *counts, int root)
{
    af_mpi_t *m = f->impl;
    if (f->rank == root) {
        int off = 0;
        for (int r = 0; r < f->size; ++r) {
            m->counts[r] = (int)counts[r];
            m->displs[r] = off;
            off += (int)counts[r];
        }
    }
    AF_MPI_CHECK(MPI_Gatherv(send, (int)bytes, MPI_BYTE, recv, m->counts, m->displs, MPI_BYTE, root,
                             m->comm));
    return AF_OK;
}

static af_result_t mpi_exchange(af_fabric_t *f, const af_p2p_t *ops, int n)
{
    af_mpi_t *m = f->impl;
    if (n > AF_FABRIC_MAX_P2P) {
        af_error_set("fabric: %d transfers in one batch, at most %d", n, AF_FABRIC_MAX_P2P);
        return AF_ERR_INTERNAL;
    }
    for (int i = 0; i < n; ++i) {
        if (ops[i].is_send) {
            AF_MPI_CHECK(MPI_Isend(ops[i].buf, (int)ops[i].bytes, MPI_BYTE, ops[i].peer, 7, m->comm,
                                   &m->reqs[i]));
        } else {
            AF_MPI_CHECK(MPI_Irecv(ops[i].buf, (int)ops[i].bytes, MPI_BYTE, ops[i].peer, 7, m->comm,
                                   &m->reqs[i]));
        }
    }
    AF_MPI_CHECK(MPI_Waitall(n, m->reqs, MPI_STATUSES_IGNORE));
    return AF_OK;
}

static af_result_t mpi_barrier(af_fabric_t *f)
{
    AF_MPI_CHECK(MPI_Barrier(mpi_comm(f)));
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
    m->reqs = af_alloc(sizeof(MPI_Request) * AF_FABRIC_MAX_P2P);
    m->counts = af_alloc(sizeof(int) * (size_t)f->size);
    m->displs = af_alloc(sizeof(int) * (size_t)f->size);
    AF_REQUIRE_GOTO(m->reqs && m->counts && m->displs, AF_ERR_NOMEM, rc, fail);
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
    m->reqs = af_alloc(sizeof(MPI_Request) * AF_FABRIC_MAX_P2P);
    m->counts = af_alloc(sizeof(int) * (size_t)n->size);
    m->displs = af_alloc(sizeof(int) * (size_t)n->size);
    AF_REQUIRE_GOTO(m->reqs && m->counts && m->displs, AF_ERR_NOMEM, rc, fail);
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

void af_fabric_destroy(af_fabric_t **f)
{
    if (f != NULL && *f != NULL) {
        (*f)->ops->destroy(*f);
        *f = NULL;
    }
}

af_result_t af_world_init(int *argc, char ***argv, af_world_t *world)
{
    memset(world, 0, sizeof *world);
    if (MPI_Init(argc, argv) != MPI_SUCCESS) {
        af_error_set("MPI: MPI_Init failed");
        return AF_ERR_FABRIC;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &world->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world->size);
    MPI_Comm local;
    AF_MPI_CHECK(
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local));
    MPI_Comm_rank(local, &world->local_rank);
    MPI_Comm_size(local, &world->local_size);
    MPI_Comm_free(&local);
    if (gethostname(world->hostname, sizeof world->hostname - 1) != 0) {
        snprintf(world->hostname, sizeof world->hostname, "unknown");
    }
    return AF_OK;
}

void af_world_finalize(void)
{
    int done = 0;
    MPI_Finalized(&done);
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
