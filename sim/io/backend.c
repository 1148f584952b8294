/* agefence backend selection (DESIGN "Backends"): auto picks cuda+nccl when the build has CUDA
 * and the rank sees a GPU, else cpu+mpi, and says so. */
#include "backend.h"

#include <stdio.h>
#include <string.h>

#include "../../common/af_alloc.h"
#include "config.h"

/* Sets the user's one-line error in both `why` and the process error message. */
static af_result_t usage(char *why, size_t whylen, const char *msg)
{
    if (why != NULL && whylen > 0) {
        snprintf(why, whylen, "%s", msg);
    }
    af_error_set("%s", msg);
    return AF_ERR_USAGE;
}

af_result_t af_backend_decide(int want_compute, int want_fabric, int share_gpu, int local_rank,
                              int local_size, int cuda_built, int visible_gpus,
                              af_backend_choice_t *out, char *why, size_t whylen)
{
    char msg[320]; /* room for the longest message with the longest reason */
    char reason[160] = "";
    if (visible_gpus < 0) {
        visible_gpus = 0;
    }
    if (local_size < 1) {
        local_size = 1;
    }
    out->compute = AF_BACKEND_CPU;
    out->fabric = AF_FABRIC_MPI;
    out->cuda_device = -1;
    if (share_gpu && (want_compute != AF_BACKEND_CUDA || want_fabric != AF_FABRIC_MPI)) {
        return usage(why, whylen,
                     "backend.share_gpu = on needs backend.compute = cuda and backend.fabric = mpi "
                     "(NCCL refuses two ranks on one GPU)");
    }

    /* Compute. */
    switch (want_compute) {
    case AF_BACKEND_CPU:
        snprintf(reason, sizeof reason, "as configured");
        break;
    case AF_BACKEND_CUDA:
        if (!cuda_built) {
            return usage(why, whylen,
                         "backend.compute = cuda, but this agefence was built without CUDA "
                         "(rebuild with -DAGEFENCE_CUDA=ON)");
        }
        if (visible_gpus == 0) {
            return usage(why, whylen,
                         "backend.compute = cuda, but no GPU is visible (CUDA reports none)");
        }
        if (local_size > visible_gpus && !share_gpu) {
            snprintf(msg, sizeof msg,
                     "%d ranks on this node but only %d GPU%s visible: one GPU per rank (or "
                     "backend.share_gpu = on with fabric = mpi)",
                     local_size, visible_gpus, visible_gpus == 1 ? "" : "s");
            return usage(why, whylen, msg);
        }
        out->compute = AF_BACKEND_CUDA;
        snprintf(reason, sizeof reason, "as configured");
        break;
    default: /* AF_BACKEND_AUTO */
        if (!cuda_built) {
            snprintf(reason, sizeof reason, "auto: built without CUDA");
        } else if (visible_gpus == 0) {
            snprintf(reason, sizeof reason, "auto: no GPU visible");
        } else if (local_size > visible_gpus) {
            snprintf(reason, sizeof reason, "auto: %d ranks on this node but only %d GPU%s visible",
                     local_size, visible_gpus, visible_gpus == 1 ? "" : "s");
        } else {
            out->compute = AF_BACKEND_CUDA;
            snprintf(reason, sizeof reason, "auto: %d GPU%s visible", visible_gpus,
                     visible_gpus == 1 ? "" : "s");
        }
        break;
    }

    /* Fabric. */
    switch (want_fabric) {
    case AF_FABRIC_MPI:
        out->fabric = AF_FABRIC_MPI;
        break;
    case AF_FABRIC_NCCL:
        if (out->compute != AF_BACKEND_CUDA) {
            snprintf(msg, sizeof msg,
                     "backend.fabric = nccl needs backend.compute = cuda (NCCL moves device "
                     "memory), but compute is cpu (%s)",
                     reason);
            return usage(why, whylen, msg);
        }
        out->fabric = AF_FABRIC_NCCL;
        break;
    default: /* AF_FABRIC_AUTO */
        out->fabric = out->compute == AF_BACKEND_CUDA ? AF_FABRIC_NCCL : AF_FABRIC_MPI;
        break;
    }

    if (out->compute == AF_BACKEND_CUDA) {
        out->cuda_device = share_gpu ? local_rank % visible_gpus : local_rank;
    }
    char shared[48] = "";
    if (share_gpu && local_size > visible_gpus) {
        snprintf(shared, sizeof shared, ", shared by %d ranks",
                 (local_size + visible_gpus - 1 - out->cuda_device) / visible_gpus);
    }
    if (why != NULL && whylen > 0) {
        if (out->compute == AF_BACKEND_CUDA) {
            snprintf(why, whylen, "compute=cuda fabric=%s (%s; GPU %d for node-local rank %d%s%s)",
                     out->fabric == AF_FABRIC_NCCL ? "nccl" : "mpi", reason, out->cuda_device,
                     local_rank, shared,
                     out->fabric == AF_FABRIC_MPI ? "; exchange staged through host memory" : "");
        } else {
            snprintf(why, whylen, "compute=cpu fabric=mpi (%s)", reason);
        }
    }
    return AF_OK;
}

af_result_t af_backend_select(int want_compute, int want_fabric, int share_gpu, int local_rank,
                              int local_size, const af_kernels_ops_t **kops, int *use_nccl,
                              int *cuda_device, char *why, size_t whylen)
{
    const int built = af_kernels_cuda != NULL;
    /* Ask CUDA only when it can matter: a cpu run never touches the driver. */
    const int gpus = built && want_compute != AF_BACKEND_CPU ? af_cuda_visible_devices() : 0;
    af_backend_choice_t ch;
    af_result_t rc = af_backend_decide(want_compute, want_fabric, share_gpu, local_rank, local_size,
                                       built, gpus, &ch, why, whylen);
    if (rc != AF_OK) {
        return rc;
    }
    *kops = ch.compute == AF_BACKEND_CUDA ? af_kernels_cuda : &af_kernels_cpu;
    *use_nccl = ch.fabric == AF_FABRIC_NCCL;
    *cuda_device = ch.cuda_device;
    return AF_OK;
}

af_result_t af_buf_alloc(af_mem_t mem, size_t bytes, void **out)
{
    if (mem == AF_MEM_DEVICE) {
        return af_cuda_alloc(out, bytes);
    }
    *out = af_alloc(bytes);
    if (*out == NULL) {
        af_error_set("cannot allocate %zu bytes", bytes);
        return AF_ERR_NOMEM;
    }
    return AF_OK;
}

void af_buf_free(af_mem_t mem, void *p)
{
    if (mem == AF_MEM_DEVICE) {
        af_cuda_free(p);
    } else {
        af_free(p);
    }
}

af_result_t af_buf_copy(void *dst, af_mem_t dst_mem, const void *src, af_mem_t src_mem,
                        size_t bytes)
{
    if (bytes == 0) {
        return AF_OK;
    }
    if (dst_mem == AF_MEM_HOST && src_mem == AF_MEM_HOST) {
        memcpy(dst, src, bytes);
        return AF_OK;
    }
    if (dst_mem == AF_MEM_HOST) {
        return af_cuda_copy_to_host(dst, src, bytes);
    }
    if (src_mem == AF_MEM_HOST) {
        return af_cuda_copy_to_device(dst, src, bytes);
    }
    return af_cuda_copy_on_device(dst, src, bytes);
}

static af_result_t fabric_reduce_run(void *ctx, uint64_t *buf, size_t n)
{
    af_fabric_t *f = ctx;
    return f->ops->allreduce_max_u64(f, buf, n);
}

static af_result_t fabric_reduce_enqueue(void *ctx, uint64_t *buf, size_t n, void *stream)
{
    af_fabric_t *f = ctx;
    return f->ops->enqueue_allreduce_max_u64(f, buf, n, stream);
}

const af_graph_reduce_t *af_graph_reduce_init(af_graph_reduce_t *out, af_fabric_t *f)
{
    if (f == NULL) {
        return NULL;
    }
    out->name = f->ops->name;
    out->run = fabric_reduce_run;
    out->enqueue = f->ops->enqueue_allreduce_max_u64 != NULL ? fabric_reduce_enqueue : NULL;
    out->ctx = f;
    return out;
}
