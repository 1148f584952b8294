/* agefence: CUDA error checks in the style of af_result.h, for the files that include the
 * CUDA runtime (kernels/kernels_cuda.cu, fabric/fabric_nccl.c): set the one-line message (the
 * first error wins), leave a breadcrumb, and return or jump with AF_ERR_DEVICE. */
#ifndef AF_CUDA_CHECK_H
#define AF_CUDA_CHECK_H

#include <cuda_runtime.h>

#include "af_result.h"

#define AF_CUDA_CHECK(call)                                                                        \
    do {                                                                                           \
        cudaError_t af_cuda_rc_ = (call);                                                          \
        if (af_cuda_rc_ != cudaSuccess) {                                                          \
            af_error_set("CUDA: %s failed: %s", #call, cudaGetErrorString(af_cuda_rc_));           \
            af_error_breadcrumb(AF_ERR_DEVICE, #call, __FILE__, __LINE__);                         \
            return AF_ERR_DEVICE;                                                                  \
        }                                                                                          \
    } while (0)

#define AF_CUDA_CHECK_GOTO(call, rc, label)                                                        \
    do {                                                                                           \
        cudaError_t af_cuda_rc_ = (call);                                                          \
        if (af_cuda_rc_ != cudaSuccess) {                                                          \
            af_error_set("CUDA: %s failed: %s", #call, cudaGetErrorString(af_cuda_rc_));           \
            af_error_breadcrumb(AF_ERR_DEVICE, #call, __FILE__, __LINE__);                         \
            (rc) = AF_ERR_DEVICE;                                                                  \
            goto label;                                                                            \
        }                                                                                          \
    } while (0)

#endif
