/* agefence: what the CUDA side of this build offers. With CUDA, kernels/kernels_cuda.cu defines
 * everything below; without it, these stand-ins say "no GPU" and "not in this build", so the
 * driver and the tests need no #ifdef. */
#include "kernels.h"

#ifndef AGEFENCE_HAVE_CUDA
const af_kernels_ops_t *const af_kernels_cuda = NULL;

int af_cuda_visible_devices(void)
{
    return 0;
}

const char *af_device_versions(void)
{
    return "none (built without CUDA)";
}

static af_result_t no_cuda(const char *what)
{
    af_error_set("%s: this agefence was built without CUDA (rebuild with -DAGEFENCE_CUDA=ON)",
                 what);
    return AF_ERR_UNSUPPORTED;
}

af_result_t af_cuda_alloc(void **out, size_t bytes)
{
    (void)bytes;
    *out = NULL;
    return no_cuda("af_cuda_alloc");
}

void af_cuda_free(void *p)
{
    (void)p;
}

af_result_t af_cuda_copy_to_host(void *host, const void *dev, size_t bytes)
{
    (void)host;
    (void)dev;
    (void)bytes;
    return no_cuda("af_cuda_copy_to_host");
}

af_result_t af_cuda_copy_to_device(void *dev, const void *host, size_t bytes)
{
    (void)dev;
    (void)host;
    (void)bytes;
    return no_cuda("af_cuda_copy_to_device");
}

af_result_t af_cuda_copy_on_device(void *dst, const void *src, size_t bytes)
{
    (void)dst;
    (void)src;
    (void)bytes;
    return no_cuda("af_cuda_copy_on_device");
}
#endif
