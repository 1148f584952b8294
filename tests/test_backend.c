/* Unit tests of backend selection (sim/io/backend.c): every rule of af_backend_decide() from
 * explicit facts (built with CUDA or not, GPUs visible, ranks per node), so they run without a
 * GPU; then af_backend_select() as this build and machine see it, and the buffer helpers. */
#include "sim/io/backend.h"
#include "sim/io/config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

static af_backend_choice_t ch;
static char why[256];

static af_result_t decide_shared(int compute, int fabric, int share, int local_rank, int local_size,
                                 int built, int gpus)
{
    af_error_clear();
    memset(&ch, 0x5a, sizeof ch);
    why[0] = '\0';
    af_result_t rc = af_backend_decide(compute, fabric, share, local_rank, local_size, built, gpus,
                                       &ch, why, sizeof why);
    print_message("  -> %s: %s\n", af_result_str(rc), why);
    return rc;
}

static af_result_t decide(int compute, int fabric, int local_rank, int local_size, int built,
                          int gpus)
{
    return decide_shared(compute, fabric, 0, local_rank, local_size, built, gpus);
}

static void test_auto_without_gpu(void **state)
{
    (void)state;
    assert_int_equal(decide(AF_BACKEND_AUTO, AF_FABRIC_AUTO, 0, 1, 1, 0), AF_OK);
    assert_int_equal(ch.compute, AF_BACKEND_CPU);
    assert_int_equal(ch.fabric, AF_FABRIC_MPI);
    assert_int_equal(ch.cuda_device, -1);
    assert_non_null(strstr(why, "compute=cpu fabric=mpi (auto: no GPU visible)"));

    assert_int_equal(decide(AF_BACKEND_AUTO, AF_FABRIC_AUTO, 0, 1, 0, 4), AF_OK);
    assert_int_equal(ch.compute, AF_BACKEND_CPU);
    assert_non_null(strstr(why, "built without CUDA"));
}

static void test_auto_with_gpus(void **state)
{
    (void)state;
    assert_int_equal(decide(AF_BACKEND_AUTO, AF_FABRIC_AUTO, 3, 4, 1, 4), AF_OK);
    assert_int_equal(ch.compute, AF_BACKEND_CUDA);
    assert_int_equal(ch.fabric, AF_FABRIC_NCCL);
    assert_int_equal(ch.cuda_device, 3);
    assert_non_null(strstr(why, "compute=cuda fabric=nccl (auto: 4 GPUs visible"));
    /* More ranks on the node than GPUs: auto stays on the CPU and says why. */
    assert_int_equal(decide(AF_BACKEND_AUTO, AF_FABRIC_AUTO, 0, 4, 1, 1), AF_OK);
    assert_int_equal(ch.compute, AF_BACKEND_CPU);
    assert_int_equal(ch.fabric, AF_FABRIC_MPI);
    assert_non_null(strstr(why, "4 ranks on this node but only 1 GPU visible"));
}

static void test_cuda_requested(void **state)
{
    (void)state;
    assert_int_equal(decide(AF_BACKEND_CUDA, AF_FABRIC_AUTO, 0, 1, 1, 0), AF_ERR_USAGE);
    assert_string_equal(why, "backend.compute = cuda, but no GPU is visible (CUDA reports none)");
    assert_string_equal(af_error_message(), why);

    assert_int_equal(decide(AF_BACKEND_CUDA, AF_FABRIC_AUTO, 0, 1, 0, 0), AF_ERR_USAGE);
    assert_non_null(strstr(why, "built without CUDA (rebuild with -DAGEFENCE_CUDA=ON)"));

    assert_int_equal(decide(AF_BACKEND_CUDA, AF_FABRIC_AUTO, 1, 8, 1, 4), AF_ERR_USAGE);
    assert_string_equal(why, "8 ranks on this node but only 4 GPUs visible: one GPU per rank (or "
                             "backend.share_gpu = on with fabric = mpi)");

    assert_int_equal(decide(AF_BACKEND_CUDA, AF_FABRIC_AUTO, 1, 2, 1, 2), AF_OK);
    assert_int_equal(ch.compute, AF_BACKEND_CUDA);
    assert_int_equal(ch.fabric, AF_FABRIC_NCCL);
    assert_int_equal(ch.cuda_device, 1);
}

static void test_fabric_rules(void **state)
{
    (void)state;
    /* nccl needs cuda compute. */
    assert_int_equal(decide(AF_BACKEND_CPU, AF_FABRIC_NCCL, 0, 1, 1, 1), AF_ERR_USAGE);
    assert_non_null(strstr(why, "backend.fabric = nccl needs backend.compute = cuda"));
    assert_int_equal(decide(AF_BACKEND_AUTO, AF_FABRIC_NCCL, 0, 1, 1, 0), AF_ERR_USAGE);
    assert_non_null(strstr(why, "no GPU visible"));
    /* cuda compute over the mpi fabric is allowed (the driver stages the exchange). */
    assert_int_equal(decide(AF_BACKEND_CUDA, AF_FABRIC_MPI, 0, 1, 1, 1), AF_OK);
    assert_int_equal(ch.compute, AF_BACKEND_CUDA);
    assert_int_equal(ch.fabric, AF_FABRIC_MPI);
    assert_non_null(strstr(why, "staged through host memory"));
    /* cpu compute with an explicit mpi fabric. */
    assert_int_equal(decide(AF_BACKEND_CPU, AF_FABRIC_MPI, 0, 1, 1, 8), AF_OK);
    assert_int_equal(ch.compute, AF_BACKEND_CPU);
    assert_int_equal(ch.fabric, AF_FABRIC_MPI);
    assert_int_equal(ch.cuda_device, -1);
}

/* backend.share_gpu = on: the node's ranks share its GPUs (rank r on GPU r mod G), with cuda
 * compute and the mpi fabric both set, and only then. */
static void test_share_gpu(void **state)
{
    (void)state;
    for (int size = 1; size <= 4; ++size) {
        for (int rank = 0; rank < size; ++rank) {
            assert_int_equal(decide_shared(AF_BACKEND_CUDA, AF_FABRIC_MPI, 1, rank, size, 1, 1),
                             AF_OK);
            assert_int_equal(ch.compute, AF_BACKEND_CUDA);
            assert_int_equal(ch.fabric, AF_FABRIC_MPI);
            assert_int_equal(ch.cuda_device, 0);
            if (size > 1) {
                assert_non_null(strstr(why, "shared by"));
            }
        }
    }
    /* Four ranks on two GPUs: 0 and 2 on GPU 0, 1 and 3 on GPU 1, each shared by two. */
    for (int rank = 0; rank < 4; ++rank) {
        assert_int_equal(decide_shared(AF_BACKEND_CUDA, AF_FABRIC_MPI, 1, rank, 4, 1, 2), AF_OK);
        assert_int_equal(ch.cuda_device, rank % 2);
        assert_non_null(strstr(why, "shared by 2 ranks"));
    }
    /* Refused unless compute = cuda and fabric = mpi are both explicit. */
    const int bad[][2] = {{AF_BACKEND_CUDA, AF_FABRIC_NCCL},
                          {AF_BACKEND_CUDA, AF_FABRIC_AUTO},
                          {AF_BACKEND_AUTO, AF_FABRIC_MPI},
                          {AF_BACKEND_CPU, AF_FABRIC_MPI}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        assert_int_equal(decide_shared(bad[i][0], bad[i][1], 1, 0, 2, 1, 1), AF_ERR_USAGE);
        assert_string_equal(why, "backend.share_gpu = on needs backend.compute = cuda and "
                                 "backend.fabric = mpi (NCCL refuses two ranks on one GPU)");
    }
    /* Still no GPU, or no CUDA: the same errors as without sharing. */
    assert_int_equal(decide_shared(AF_BACKEND_CUDA, AF_FABRIC_MPI, 1, 0, 2, 1, 0), AF_ERR_USAGE);
    assert_non_null(strstr(why, "no GPU is visible"));
    assert_int_equal(decide_shared(AF_BACKEND_CUDA, AF_FABRIC_MPI, 1, 0, 2, 0, 1), AF_ERR_USAGE);
    assert_non_null(strstr(why, "built without CUDA"));
    /* Off, as before: one GPU per rank. */
    assert_int_equal(decide_shared(AF_BACKEND_CUDA, AF_FABRIC_MPI, 0, 1, 2, 1, 1), AF_ERR_USAGE);
    assert_non_null(strstr(why, "one GPU per rank"));
}

/* The real thing, on whatever this machine is. */
static void test_select_here(void **state)
{
    (void)state;
    const af_kernels_ops_t *kops = NULL;
    int nccl = -1;
    int dev = -2;
    af_error_clear();
    assert_int_equal(af_backend_select(AF_BACKEND_CPU, AF_FABRIC_AUTO, 0, 0, 1, &kops, &nccl, &dev,
                                       why, sizeof why),
                     AF_OK);
    assert_ptr_equal(kops, &af_kernels_cpu);
    assert_int_equal(nccl, 0);
    assert_int_equal(dev, -1);

    af_result_t rc = af_backend_select(AF_BACKEND_AUTO, AF_FABRIC_AUTO, 0, 0, 1, &kops, &nccl, &dev,
                                       why, sizeof why);
    print_message("  auto here: %s\n", why);
    assert_int_equal(rc, AF_OK);
    if (af_kernels_cuda != NULL && af_cuda_visible_devices() > 0) {
        assert_ptr_equal(kops, af_kernels_cuda);
        assert_int_equal(nccl, 1);
        assert_int_equal(dev, 0);
    } else {
        assert_ptr_equal(kops, &af_kernels_cpu);
        assert_int_equal(nccl, 0);
        af_error_clear();
        assert_int_equal(af_backend_select(AF_BACKEND_CUDA, AF_FABRIC_AUTO, 0, 0, 1, &kops, &nccl,
                                           &dev, why, sizeof why),
                         AF_ERR_USAGE);
        print_message("  cuda here: %s\n", why);
    }
}

static void test_buffers(void **state)
{
    (void)state;
    uint64_t src[5] = {1, 0x8000000000000000ULL, 0x7ff8dead0000deadULL, 0, 42};
    uint64_t *host = NULL;
    assert_int_equal(af_buf_alloc(AF_MEM_HOST, sizeof src, (void **)&host), AF_OK);
    assert_int_equal(af_buf_copy(host, AF_MEM_HOST, src, AF_MEM_HOST, sizeof src), AF_OK);
    assert_memory_equal(host, src, sizeof src);
    if (af_kernels_cuda != NULL && af_cuda_visible_devices() > 0) {
        uint64_t *dev = NULL;
        uint64_t back[5];
        memset(back, 0, sizeof back);
        assert_int_equal(af_buf_alloc(AF_MEM_DEVICE, sizeof src, (void **)&dev), AF_OK);
        assert_int_equal(af_buf_copy(dev, AF_MEM_DEVICE, src, AF_MEM_HOST, sizeof src), AF_OK);
        assert_int_equal(af_buf_copy(back, AF_MEM_HOST, dev, AF_MEM_DEVICE, sizeof src), AF_OK);
        assert_memory_equal(back, src, sizeof src);
        af_buf_free(AF_MEM_DEVICE, dev);
    } else {
        void *dev = NULL;
        af_error_clear();
        af_result_t rc = af_buf_alloc(AF_MEM_DEVICE, 64, &dev);
        /* Without CUDA in the build: unsupported; with CUDA but no GPU: a device error. */
        assert_true(rc == AF_ERR_UNSUPPORTED || rc == AF_ERR_DEVICE);
        assert_null(dev);
        print_message("  device buffer here: %s\n", af_error_message());
    }
    af_buf_free(AF_MEM_HOST, host);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_auto_without_gpu), cmocka_unit_test(test_auto_with_gpus),
        cmocka_unit_test(test_cuda_requested),   cmocka_unit_test(test_fabric_rules),
        cmocka_unit_test(test_share_gpu),        cmocka_unit_test(test_select_here),
        cmocka_unit_test(test_buffers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
