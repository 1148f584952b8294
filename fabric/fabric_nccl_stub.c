/* agefence fabric: the NCCL backend's entry point in a build without CUDA. It exists so that
 * callers need no #ifdef, and says plainly why it cannot help. */
#include "fabric.h"

#ifndef AGEFENCE_HAVE_CUDA
af_result_t af_fabric_nccl_create(af_fabric_t **out, int cuda_device)
{
    (void)cuda_device;
    *out = NULL;
    af_error_set("fabric nccl: this agefence was built without CUDA and NCCL (rebuild with "
                 "-DAGEFENCE_CUDA=ON, NCCL_HOME pointing at NCCL)");
    return AF_ERR_UNSUPPORTED;
}
#else
/* ISO C wants at least one declaration in a translation unit. */
typedef int af_fabric_nccl_stub_unused_t;
#endif
