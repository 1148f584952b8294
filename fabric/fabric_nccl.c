/* agefence fabric, NCCL backend: the same blocking collectives as fabric_mpi.c, on device
 * buffers, one GPU per rank. MPI is used once, to bootstrap: every rank checks that no other
 * rank of its node drives the same GPU, rank 0 makes the ncclUniqueId and broadcasts it.
 *
 * Ordering with the compute backend: the kernels enqueue on their own (blocking) stream and
 * do not synchronise, so a buffer handed to the fabric may still be being written. Every
 * operation here first records an event on the legacy default stream, which completes only
 * after all earlier work on the device's blocking streams, and makes the fabric's private
 * (non-blocking) stream wait for it; then it enqueues the NCCL calls and waits for its stream
 * before returning, as the fabric contract says. No host round trip is added before the
 * transfer starts. */
#include "fabric.h"

#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/af_cuda_check.h"
#include "../common/af_alloc.h"

/* The release of af_alloc_note_external's count; weak so that this file links whether or not
 * common/af_alloc.c has it yet (kernels/kernels_cuda.cu says the same). */
void af_alloc_note_external_free(size_t bytes) __attribute__((weak));

typedef struct af_nccl {
    ncclComm_t comm;
    cudaStream_t stream; /* private, non-blocking */
    cudaEvent_t after;   /* recorded on the legacy stream at the start of each operation */
    uint64_t *word;      /* one device word, for barrier() */
    int device;
} af_nccl_t;

#define AF_NCCL_CHECK(call)                                                                        \
    do {                                                                                           \
        ncclResult_t af_nccl_rc_ = (call);                                                         \
        if (af_nccl_rc_ != ncclSuccess) {                                                          \
            af_error_set("NCCL: %s failed: %s", #call, ncclGetErrorString(af_nccl_rc_));           \
            af_error_breadcrumb(AF_ERR_FABRIC, #call, __FILE__, __LINE__);                         \
            return AF_ERR_FABRIC;                                                                  \
        }                                                                                          \
    } while (0)

static af_nccl_t *nccl_impl(af_fabric_t *f)
{
    return (af_nccl_t *)f->impl;
}

/* A host pointer handed to NCCL fails deep inside it (or worse); say what happened instead. */
static af_result_t check_device(const void *p, size_t bytes, const char *op)
{
    if (bytes == 0) {
        return AF_OK;
    }
    struct cudaPointerAttributes attr;
    cudaError_t e = cudaPointerGetAttributes(&attr, p);
    if (e != cudaSuccess ||
        (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged)) {
        cudaGetLastError();
        af_error_set("fabric nccl: %s was handed a host buffer (%p, %zu bytes); the nccl fabric "
                     "moves device memory only (af_cuda_alloc, slot_data)",
                     op, p, bytes);
        return AF_ERR_INTERNAL;
    }
    return AF_OK;
}

/* Orders the fabric's stream after every earlier operation on the device's blocking streams. */
static af_result_t nccl_begin(af_nccl_t *n)
{
    AF_CUDA_CHECK(cudaEventRecord(n->after, cudaStreamLegacy));
    AF_CUDA_CHECK(cudaStreamWaitEvent(n->stream, n->after, 0));
    return AF_OK;
}

/* Waits for the operation (the fabric contract is blocking) and surfaces NCCL's own errors. */
static af_result_t nccl_end(af_nccl_t *n)
{
    AF_CUDA_CHECK(cudaStreamSynchronize(n->stream));
    ncclResult_t async = ncclSuccess;
    AF_NCCL_CHECK(ncclCommGetAsyncError(n->comm, &async));
    AF_NCCL_CHECK(async);
    return AF_OK;
}

static af_result_t nccl_allreduce_max_u64(af_fabric_t *f, uint64_t *buf, size_t n)
{
    af_nccl_t *c = nccl_impl(f);
    AF_CHECK(check_device(buf, n * sizeof *buf, "allreduce_max_u64"));
    AF_CHECK(nccl_begin(c));
    AF_NCCL_CHECK(ncclAllReduce(buf, buf, n, ncclUint64, ncclMax, c->comm, c->stream));
    return nccl_end(c);
}

/* For capture into the compute backend's step graph: no event, no wait, no pointer check (a
 * pointer query is best kept out of a capture; the driver hands af_cuda_alloc'ed buffers). */
static af_result_t nccl_enqueue_allreduce_max_u64(af_fabric_t *f, uint64_t *buf, size_t n,
                                                  void *stream)
{
    af_nccl_t *c = nccl_impl(f);
    AF_NCCL_CHECK(ncclAllReduce(buf, buf, n, ncclUint64, ncclMax, c->comm, (cudaStream_t)stream));
    return AF_OK;
}

static af_result_t nccl_allreduce_sum_i64(af_fabric_t *f, int64_t *buf, size_t n)
{
    af_nccl_t *c = nccl_impl(f);
    AF_CHECK(check_device(buf, n * sizeof *buf, "allreduce_sum_i64"));
    AF_CHECK(nccl_begin(c));
    AF_NCCL_CHECK(ncclAllReduce(buf, buf, n, ncclInt64, ncclSum, c->comm, c->stream));
    return nccl_end(c);
}

static af_result_t nccl_bcast(af_fabric_t *f, void *buf, size_t bytes, int root)
{
    af_nccl_t *c = nccl_impl(f);
    AF_CHECK(check_device(buf, bytes, "bcast"));
    AF_CHECK(nccl_begin(c));
    AF_NCCL_CHECK(ncclBroadcast(buf, buf, bytes, ncclUint8, root, c->comm, c->stream));
    return nccl_end(c);
}

/* NCCL has no gather: root posts one receive per other rank, the others one send each, all in
 * one group; root's own part is a device copy on the same stream. `counts` (root only) gives
 * each rank's bytes; zero-byte parts are skipped on both sides. */
static af_result_t nccl_gather_counts(af_fabric_t *f, const void *send, size_t bytes, void *recv,
                                      const size_t *counts, size_t uniform, int root)
{
    af_nccl_t *c = nccl_impl(f);
    AF_CHECK(check_device(send, bytes, "gather"));
    AF_CHECK(nccl_begin(c));
    if (f->rank == root) {
        size_t total = 0;
        for (int r = 0; r < f->size; ++r) {
            total += counts != NULL ? counts[r] : uniform;
        }
        AF_CHECK(check_device(recv, total, "gather (receive buffer)"));
        size_t off = 0;
        AF_NCCL_CHECK(ncclGroupStart());
        for (int r = 0; r < f->size; ++r) {
            size_t len = counts != NULL ? counts[r] : uniform;
            if (len > 0) {
                char *dst = (char *)recv + off;
                if (r == root) {
                    AF_CUDA_CHECK(
                        cudaMemcpyAsync(dst, send, len, cudaMemcpyDeviceToDevice, c->stream));
                } else {
                    AF_NCCL_CHECK(ncclRecv(dst, len, ncclUint8, r, c->comm, c->stream));
                }
            }
            off += len;
        }
        AF_NCCL_CHECK(ncclGroupEnd());
    } else if (bytes > 0) {
        AF_NCCL_CHECK(ncclGroupStart());
        AF_NCCL_CHECK(ncclSend(send, bytes, ncclUint8, root, c->comm, c->stream));
        AF_NCCL_CHECK(ncclGroupEnd());
    }
    return nccl_end(c);
}

static af_result_t nccl_gather(af_fabric_t *f, const void *send, size_t bytes, void *recv, int root)
{
    return nccl_gather_counts(f, send, bytes, recv, NULL, bytes, root);
}

static af_result_t nccl_gatherv(af_fabric_t *f, const void *send, size_t bytes, void *recv,
                                const size_t *counts, int root)
{
    return nccl_gather_counts(f, send, bytes, recv, counts, 0, root);
}

static af_result_t nccl_exchange(af_fabric_t *f, const af_p2p_t *ops, int n)
{
    af_nccl_t *c = nccl_impl(f);
    if (n > AF_FABRIC_MAX_P2P) {
        af_error_set("fabric: %d transfers in one batch, at most %d", n, AF_FABRIC_MAX_P2P);
        return AF_ERR_INTERNAL;
    }
    for (int i = 0; i < n; ++i) {
        AF_CHECK(check_device(ops[i].buf, ops[i].bytes, "exchange"));
    }
    AF_CHECK(nccl_begin(c));
    AF_NCCL_CHECK(ncclGroupStart());
    for (int i = 0; i < n; ++i) {
        if (ops[i].bytes == 0) {
            continue;
        }
        if (ops[i].is_send) {
            AF_NCCL_CHECK(
                ncclSend(ops[i].buf, ops[i].bytes, ncclUint8, ops[i].peer, c->comm, c->stream));
        } else {
            AF_NCCL_CHECK(
                ncclRecv(ops[i].buf, ops[i].bytes, ncclUint8, ops[i].peer, c->comm, c->stream));
        }
    }
    AF_NCCL_CHECK(ncclGroupEnd());
    return nccl_end(c);
}

static af_result_t nccl_barrier(af_fabric_t *f)
{
    af_nccl_t *c = nccl_impl(f);
    AF_CHECK(nccl_begin(c));
    AF_NCCL_CHECK(ncclAllReduce(c->word, c->word, 1, ncclUint64, ncclMax, c->comm, c->stream));
    return nccl_end(c);
}

static void nccl_destroy(af_fabric_t *f)
{
    if (f == NULL) {
        return;
    }
    af_nccl_t *c = nccl_impl(f);
    if (c != NULL) {
        if (c->stream != NULL) {
            cudaStreamSynchronize(c->stream);
        }
        if (c->comm != NULL) {
            ncclCommDestroy(c->comm);
        }
        if (c->word != NULL) {
            cudaFree(c->word);
            if (af_alloc_note_external_free != NULL) {
                af_alloc_note_external_free(sizeof *c->word);
            }
        }
        if (c->after != NULL) {
            cudaEventDestroy(c->after);
        }
        if (c->stream != NULL) {
            cudaStreamDestroy(c->stream);
        }
        af_free(c);
    }
    af_free(f);
}

static const af_fabric_ops_t af_fabric_nccl_ops = {
    .name = "nccl",
    .mem = AF_MEM_DEVICE,
    .allreduce_max_u64 = nccl_allreduce_max_u64,
    .allreduce_sum_i64 = nccl_allreduce_sum_i64,
    .bcast = nccl_bcast,
    .gather = nccl_gather,
    .gatherv = nccl_gatherv,
    .exchange = nccl_exchange,
    .barrier = nccl_barrier,
    .destroy = nccl_destroy,
    .enqueue_allreduce_max_u64 = nccl_enqueue_allreduce_max_u64,
};

/* What each rank tells the others before NCCL starts. */
typedef struct gpu_rec {
    int32_t ok;   /* 1: this rank selected its GPU and read its PCI bus id */
    int32_t ndev; /* GPUs this rank sees */
    char host[64];
    char busid[32];
} gpu_rec_t;

/* Selects the GPU and checks, with the same verdict on every rank, that every rank could and
 * that no two ranks of one node drive the same GPU (NCCL needs one GPU per rank). */
static af_result_t check_gpus(int rank, int size, int cuda_device)
{
    gpu_rec_t mine;
    memset(&mine, 0, sizeof mine);
    if (gethostname(mine.host, sizeof mine.host - 1) != 0) {
        snprintf(mine.host, sizeof mine.host, "unknown");
    }
    char why[200] = "";
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || ndev <= 0) {
        snprintf(why, sizeof why, "no GPU is visible (%s)",
                 e != cudaSuccess ? cudaGetErrorString(e) : "CUDA reports none");
        ndev = 0;
    } else if (cuda_device < 0 || cuda_device >= ndev) {
        snprintf(why, sizeof why, "GPU %d asked for, but only %d visible", cuda_device, ndev);
    } else if ((e = cudaSetDevice(cuda_device)) != cudaSuccess ||
               (e = cudaDeviceGetPCIBusId(mine.busid, (int)sizeof mine.busid, cuda_device)) !=
                   cudaSuccess) {
        snprintf(why, sizeof why, "GPU %d: %s", cuda_device, cudaGetErrorString(e));
    } else {
        mine.ok = 1;
    }
    cudaGetLastError();
    mine.ndev = ndev;
    gpu_rec_t *all = af_alloc(sizeof *all * (size_t)size);
    /* Agree on the allocation first: a rank that left now would hang the others below. */
    int have = all != NULL;
    if (MPI_Allreduce(MPI_IN_PLACE, &have, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS ||
        !have) {
        af_free(all);
        af_error_set("fabric nccl: out of memory (or MPI failed) at start-up");
        return AF_ERR_NOMEM;
    }
    int mrc = MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE,
                            MPI_COMM_WORLD);
    af_result_t rc = AF_OK;
    if (mrc != MPI_SUCCESS) {
        af_error_set("MPI: MPI_Allgather of the GPU table failed");
        rc = AF_ERR_FABRIC;
        goto out;
    }
    for (int r = 0; r < size; ++r) {
        if (!all[r].ok) {
            if (r == rank) {
                af_error_set("fabric nccl: rank %d on %s cannot use its GPU: %s", rank, mine.host,
                             why);
            } else {
                af_error_set("fabric nccl: rank %d on %.63s cannot use its GPU", r, all[r].host);
            }
            rc = AF_ERR_DEVICE;
            goto out;
        }
    }
    for (int r1 = 0; r1 < size; ++r1) {
        for (int r2 = r1 + 1; r2 < size; ++r2) {
            if (strncmp(all[r1].host, all[r2].host, sizeof all[r1].host) == 0 &&
                strncmp(all[r1].busid, all[r2].busid, sizeof all[r1].busid) == 0) {
                af_error_set("two ranks (%d and %d) share GPU %.31s on %.63s: NCCL needs one GPU "
                             "per rank; launch at most %d ranks per node",
                             r1, r2, all[r1].busid, all[r1].host, all[r1].ndev);
                rc = AF_ERR_USAGE;
                goto out;
            }
        }
    }
out:
    af_free(all);
    return rc;
}

af_result_t af_fabric_nccl_create(af_fabric_t **out, int cuda_device)
{
    af_result_t rc = AF_OK;
    *out = NULL;
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        af_error_set("fabric nccl: MPI is not initialised (call af_world_init first)");
        return AF_ERR_INTERNAL;
    }
    af_fabric_t *f = af_alloc(sizeof *f);
    af_nccl_t *c = af_alloc(sizeof *c);
    if (f == NULL || c == NULL) {
        af_free(f);
        af_free(c);
        af_error_set("fabric nccl: out of memory at start-up");
        return AF_ERR_NOMEM;
    }
    f->ops = &af_fabric_nccl_ops;
    f->impl = c;
    MPI_Comm_rank(MPI_COMM_WORLD, &f->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &f->size);
    c->device = cuda_device;

    AF_CHECK_GOTO(check_gpus(f->rank, f->size, cuda_device), rc, fail);

    /* Rank 0 makes the id; its status travels with it, so a failure there stops everyone. */
    struct {
        int32_t ok;
        ncclUniqueId id;
    } boot;
    memset(&boot, 0, sizeof boot);
    if (f->rank == 0) {
        ncclResult_t nr = ncclGetUniqueId(&boot.id);
        boot.ok = nr == ncclSuccess;
        if (nr != ncclSuccess) {
            af_error_set("NCCL: ncclGetUniqueId failed: %s", ncclGetErrorString(nr));
        }
    }
    if (MPI_Bcast(&boot, (int)sizeof boot, MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS) {
        af_error_set("MPI: broadcast of the ncclUniqueId failed");
        rc = AF_ERR_FABRIC;
        goto fail;
    }
    if (!boot.ok) {
        af_error_set("fabric nccl: rank 0 could not create the NCCL id");
        rc = AF_ERR_FABRIC;
        goto fail;
    }
    ncclResult_t nr = ncclCommInitRank(&c->comm, f->size, boot.id, f->rank);
    if (nr != ncclSuccess) {
        c->comm = NULL;
        af_error_set("NCCL: ncclCommInitRank failed on rank %d: %s", f->rank,
                     ncclGetErrorString(nr));
        rc = AF_ERR_FABRIC;
        goto fail;
    }
    af_alloc_note_comm();
    cudaError_t ce = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
    if (ce == cudaSuccess) {
        ce = cudaEventCreateWithFlags(&c->after, cudaEventDisableTiming);
    }
    if (ce == cudaSuccess) {
        ce = cudaMalloc((void **)&c->word, sizeof *c->word);
    }
    if (ce == cudaSuccess) {
        af_alloc_note_external(sizeof *c->word);
        ce = cudaMemset(c->word, 0, sizeof *c->word);
    }
    if (ce != cudaSuccess) {
        af_error_set("CUDA: setting up the nccl fabric failed: %s", cudaGetErrorString(ce));
        rc = AF_ERR_DEVICE;
        goto fail;
    }
    *out = f;
    return AF_OK;
fail:
    nccl_destroy(f);
    return rc;
}
