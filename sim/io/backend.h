/* agefence backend selection: which compute backend (cpu, cuda) and fabric (mpi, nccl) a rank
 * uses, from the scenario's [backend] keys, what this build has and what the rank sees. The
 * driver calls af_backend_select() once at start-up, then agrees on the outcome across ranks
 * (every rank must use the same pair). */
#ifndef AF_BACKEND_H
#define AF_BACKEND_H

#include <stddef.h>

#include "../../common/af_result.h"
#include "../../fabric/fabric.h"
#include "../../kernels/kernels.h"

/* The outcome of a selection, as plain values (testable without a GPU). */
typedef struct af_backend_choice {
    int compute;     /* AF_BACKEND_CPU or AF_BACKEND_CUDA (never AUTO) */
    int fabric;      /* AF_FABRIC_MPI or AF_FABRIC_NCCL (never AUTO) */
    int cuda_device; /* the GPU this rank drives (its node-local rank), -1 with cpu */
} af_backend_choice_t;

/* The decision itself, from explicit facts: want_compute is AF_BACKEND_* and want_fabric
 * AF_FABRIC_* (sim/io/config.h); cuda_built says whether this build has the CUDA backend;
 * visible_gpus is how many GPUs this rank sees; local_rank/local_size place the rank on its
 * node. Rules:
 *   compute auto  -> cuda when built with CUDA and the node has a GPU for each of its ranks,
 *                    else cpu (the reason is said in `why`);
 *   compute cuda  -> AF_ERR_USAGE when not built with CUDA, when no GPU is visible, or when the
 *                    node has more ranks than GPUs;
 *   fabric auto   -> nccl with cuda, mpi with cpu;
 *   fabric nccl   -> AF_ERR_USAGE unless the compute backend is cuda;
 *   fabric mpi    -> always allowed (with cuda, the driver stages the exchange vector through
 *                    host memory);
 *   share_gpu     -> (backend.share_gpu = on) lets the node's ranks share its GPUs, rank r
 *                    driving GPU r mod visible_gpus, so the multi-rank paths run on a machine
 *                    with one GPU; only with compute = cuda and fabric = mpi both set (NCCL
 *                    refuses two ranks on one GPU), AF_ERR_USAGE otherwise.
 * On success `why` gets one sentence saying what was chosen and why ("compute=cpu fabric=mpi
 * (auto: no GPU visible)"); on AF_ERR_USAGE it gets the one-line error for the user (also set
 * with af_error_set). Never touches a device. */
af_result_t af_backend_decide(int want_compute, int want_fabric, int share_gpu, int local_rank,
                              int local_size, int cuda_built, int visible_gpus,
                              af_backend_choice_t *out, char *why, size_t whylen);

/* af_backend_decide() with this build and this process's view (af_kernels_cuda,
 * af_cuda_visible_devices()). *kops gets the compute table, *use_nccl 1 for the nccl fabric,
 * *cuda_device the GPU to pass in af_shard_desc_t.cuda_device and af_fabric_nccl_create()
 * (-1 with cpu). */
af_result_t af_backend_select(int want_compute, int want_fabric, int share_gpu, int local_rank,
                              int local_size, const af_kernels_ops_t **kops, int *use_nccl,
                              int *cuda_device, char *why, size_t whylen);

/* Buffers that the compute backend and the fabric share (the exchange vector), in `mem`'s
 * space: af_alloc'ed host memory, or device memory on the current GPU (AF_ERR_UNSUPPORTED
 * without CUDA). Start-up only. */
af_result_t af_buf_alloc(af_mem_t mem, size_t bytes, void **out);
void af_buf_free(af_mem_t mem, void *p);
/* Copy of `bytes` bytes between any two spaces; a copy from or to device memory comes after all
 * work enqueued on the device before it (so after an asynchronous pack()). Blocking, except a
 * device-to-device copy, which is only ordered before the work enqueued after it. */
af_result_t af_buf_copy(void *dst, af_mem_t dst_mem, const void *src, af_mem_t src_mem,
                        size_t bytes);

/* The step graph's all-reduce (kernels/kernels.h) over fabric f: its exact max all-reduce now,
 * and enqueued on a CUDA stream when f can do that (nccl). *out refers to f, which must outlive
 * it; NULL f gives NULL (the driver reduces on the host). */
const af_graph_reduce_t *af_graph_reduce_init(af_graph_reduce_t *out, af_fabric_t *f);

#endif
