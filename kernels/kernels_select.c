/* agefence: what the CUDA side of this build offers (nothing without CUDA). */
#include "kernels.h"

#ifndef AGEFENCE_HAVE_CUDA
const af_kernels_ops_t *const af_kernels_cuda = NULL;

int af_cuda_visible_devices(void)
{
    return 0;
}
#endif
