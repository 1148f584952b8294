/* bench_kernel_cuda: is agefence's masked step memory-bound on one GPU?
 *
 * On one large shard (default 65536 slots x 1024 cells: 512 MiB per buffer, 1 GiB of state)
 * it times, interleaved sample by sample, with CUDA events on the legacy default stream
 * (which orders itself after the kernels' blocking stream):
 *   masked    compute(step, xchg, 0): the production kernel, every slot occupied and HEALTHY
 *   unmasked  compute(step, xchg, AF_COMPUTE_UNMASKED): no masking, injection or counting
 *   copy      cudaMemcpyAsync device-to-device of one buffer's bytes (512 MiB)
 *   triad     STREAM triad a = b + s*c over three arrays of one buffer's length each
 * Byte accounting (the fewest bytes each must move through device memory):
 *   masked, unmasked: read the committed buffer + write the other one = 2 x n x T x 8 bytes
 *                     (halos, control and diagnostics are < 0.1% and not counted)
 *   copy:             read + write = 2 x n x T x 8 bytes
 *   triad:            read b, c + write a = 3 x n x T x 8 bytes
 * Reports min/p50/p90 GB/s (1e9 bytes/s) per kind and the ratios masked/copy and
 * masked/unmasked (at p50); writes every raw sample as CSV (kind,sample,ms,bytes,gbps).
 *
 * Self-validation (the exit code follows it): with every 64th slot emptied, the masked
 * kernel's result on every occupied slot must equal the unmasked kernel's bit for bit, and a
 * few slots must equal the per-cell update evaluated on the host (af_burgers_cell).
 *
 *   bench_kernel_cuda [CSV] [--slots N] [--cells T] [--samples N] [--warmup N] [--strict]
 * --strict also fails (exit 3) when a target is missed: masked >= 85% of copy, and within 3%
 * of unmasked. Exit 77 (SKIP) without a GPU. */
#include <cuda_runtime.h>

#include <algorithm>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

extern "C" {
#include "kernels/kernels.h"
}

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "bench_kernel_cuda: %s failed: %s (%s:%d)\n", #call,                   \
                    cudaGetErrorString(e_), __FILE__, __LINE__);                                   \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define AFCHECK(call)                                                                              \
    do {                                                                                           \
        af_result_t r_ = (call);                                                                   \
        if (r_ != AF_OK) {                                                                         \
            fprintf(stderr, "bench_kernel_cuda: %s failed: %s (%s)\n", #call, af_result_str(r_),   \
                    af_error_message());                                                           \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

__global__ void triad_kernel(double *__restrict__ a, const double *__restrict__ b,
                             const double *__restrict__ c, double s, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        a[i] = b[i] + s * c[i];
    }
}

__global__ void fill_kernel(double *x, size_t n, double v)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        x[i] = v + 1e-9 * (double)(i & 1023);
    }
}

enum { K_MASKED, K_UNMASKED, K_COPY, K_TRIAD, NKINDS };
static const char *kind_name[NKINDS] = {"masked", "unmasked", "copy", "triad"};

typedef struct stats {
    double min, p50, p90, max;
} stats_t;

/* Percentiles of the GB/s samples (nearest rank). */
static stats_t summarise(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    stats_t s;
    size_t n = v.size();
    s.min = v[0];
    s.max = v[n - 1];
    s.p50 = v[(n - 1) / 2];
    s.p90 = v[std::min(n - 1, (size_t)ceil(0.9 * (double)n) - 1)];
    return s;
}

int main(int argc, char **argv)
{
    const char *csv_path = NULL;
    int n = 65536;
    int T = 1024;
    int samples = 30;
    int warmup = 5;
    int strict = 0;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--slots") == 0 && i + 1 < argc) {
            n = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--cells") == 0 && i + 1 < argc) {
            T = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--samples") == 0 && i + 1 < argc) {
            samples = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--warmup") == 0 && i + 1 < argc) {
            warmup = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--strict") == 0) {
            strict = 1;
        } else if (argv[i][0] != '-') {
            csv_path = argv[i];
        } else {
            fprintf(stderr, "usage: bench_kernel_cuda [CSV] [--slots N] [--cells T] [--samples N] "
                            "[--warmup N] [--strict]\n");
            return 2;
        }
    }
    if (n < 64 || T < 3 || samples < 20) {
        fprintf(stderr, "bench_kernel_cuda: need --slots >= 64, --cells >= 3, --samples >= 20\n");
        return 2;
    }
    if (af_cuda_visible_devices() == 0) {
        printf("SKIP: no GPU visible\n");
        return 77;
    }
    cudaDeviceProp prop;
    CHECK(cudaSetDevice(0));
    CHECK(cudaGetDeviceProperties(&prop, 0));
    const size_t cells = (size_t)n * (size_t)T;
    const size_t buf_bytes = cells * sizeof(double);
    printf("bench_kernel_cuda: %s, %d SMs, %.1f GiB; shard %d slots x %d cells = %.0f MiB per "
           "buffer (%.2f GiB of state)\n",
           prop.name, prop.multiProcessorCount, (double)prop.totalGlobalMem / 1073741824.0, n, T,
           (double)buf_bytes / 1048576.0, 2.0 * (double)buf_bytes / 1073741824.0);

    /* The shard: block b of B = n in a scrambled slot, every slot HEALTHY. */
    af_shard_desc_t desc;
    memset(&desc, 0, sizeof desc);
    desc.n_slots = n;
    desc.block_len = T;
    desc.blocks = n;
    const double dx = 1.0 / (double)cells;
    desc.coeffs.c_diff = 0.4;                  /* nu dt / dx^2, stable */
    desc.coeffs.c_adv = 0.4 * dx / 0.05 / 4.0; /* dt / (4 dx) with nu = 0.05 */
    desc.seed = 1;
    /* The default [corruption] mix (configs/default.ini), as cumulative shares. */
    desc.mix.nonfinite = 0.01;
    desc.mix.single = 0.39;
    desc.mix.mantissa = 0.89;
    desc.mix.harm_rel = 1e-6;
    desc.cuda_device = 0;
    af_kernels_t *k = NULL;
    AFCHECK(af_kernels_cuda->create(&desc, &k));
    double *host = NULL;
    CHECK(cudaMallocHost((void **)&host, buf_bytes));
    for (size_t i = 0; i < cells; ++i) {
        host[i] = 0.5 + sin(6.283185307179586 * (double)i * dx);
    }
    for (int s = 0; s < n; ++s) {
        const int b = (int)(((int64_t)s * 7919) % n); /* odd stride: a permutation */
        k->slot_block[s] = b;
        k->slot_mode[s] = AF_MODE_HEALTHY;
        k->slot_p[s] = 0.0;
        k->commit[s] = 1;
        CHECK(cudaMemcpyAsync(k->ops->slot_data(k, s), host + (size_t)b * T,
                              sizeof(double) * (size_t)T, cudaMemcpyHostToDevice, 0));
    }
    CHECK(cudaDeviceSynchronize());
    AFCHECK(k->ops->upload_control(k));
    for (int s = 0; s < n; ++s) {
        AFCHECK(k->ops->refresh_slot(k, s));
    }
    uint64_t *xchg = NULL;
    const size_t xlen = af_xchg_len(n);
    AFCHECK(af_cuda_alloc((void **)&xchg, xlen * sizeof(uint64_t)));
    AFCHECK(k->ops->pack(k, xchg));
    AFCHECK(k->ops->sync(k));

    double *src = NULL, *dst = NULL, *ta = NULL, *tb = NULL, *tc = NULL;
    CHECK(cudaMalloc((void **)&src, buf_bytes));
    CHECK(cudaMalloc((void **)&dst, buf_bytes));
    CHECK(cudaMalloc((void **)&ta, buf_bytes));
    CHECK(cudaMalloc((void **)&tb, buf_bytes));
    CHECK(cudaMalloc((void **)&tc, buf_bytes));
    fill_kernel<<<4 * prop.multiProcessorCount, 256>>>(src, cells, 0.5);
    fill_kernel<<<4 * prop.multiProcessorCount, 256>>>(tb, cells, 1.5);
    fill_kernel<<<4 * prop.multiProcessorCount, 256>>>(tc, cells, 2.5);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    const int triad_grid = 8 * prop.multiProcessorCount;

    const double bytes[NKINDS] = {2.0 * (double)buf_bytes, 2.0 * (double)buf_bytes,
                                  2.0 * (double)buf_bytes, 3.0 * (double)buf_bytes};
    cudaEvent_t ev0, ev1;
    CHECK(cudaEventCreate(&ev0));
    CHECK(cudaEventCreate(&ev1));
    std::vector<double> gbps[NKINDS];
    std::vector<double> ms_raw[NKINDS];
    for (int it = 0; it < warmup + samples; ++it) {
        for (int kind = 0; kind < NKINDS; ++kind) {
            CHECK(cudaEventRecord(ev0, cudaStreamLegacy));
            switch (kind) {
            case K_MASKED:
                AFCHECK(k->ops->compute(k, 1, xchg, 0));
                break;
            case K_UNMASKED:
                AFCHECK(k->ops->compute(k, 1, xchg, AF_COMPUTE_UNMASKED));
                break;
            case K_COPY:
                CHECK(cudaMemcpyAsync(dst, src, buf_bytes, cudaMemcpyDeviceToDevice,
                                      cudaStreamLegacy));
                break;
            default:
                triad_kernel<<<triad_grid, 256, 0, cudaStreamLegacy>>>(ta, tb, tc, 3.0, cells);
                CHECK(cudaGetLastError());
                break;
            }
            CHECK(cudaEventRecord(ev1, cudaStreamLegacy));
            CHECK(cudaEventSynchronize(ev1));
            float ms = 0.0f;
            CHECK(cudaEventElapsedTime(&ms, ev0, ev1));
            if (it >= warmup) {
                ms_raw[kind].push_back(ms);
                gbps[kind].push_back(bytes[kind] / ((double)ms * 1e-3) / 1e9);
            }
        }
    }

    /* Self-validation. Every 64th slot empty: the masked kernel skips it, the unmasked one
     * computes it; on the occupied slots both must agree bit for bit. */
    int bad = 0;
    for (int s = 63; s < n; s += 64) {
        k->slot_block[s] = -1;
    }
    AFCHECK(k->ops->upload_control(k));
    AFCHECK(k->ops->compute(k, 2, xchg, 0));
    AFCHECK(k->ops->download_results(k));
    std::vector<double> masked_out(cells);
    for (int s = 0; s < n; ++s) {
        if (k->nonfinite[s] != 0) {
            fprintf(stderr, "validation: slot %d produced %d non-finite values\n", s,
                    k->nonfinite[s]);
            bad = 1;
        }
        if (k->slot_block[s] >= 0) {
            AFCHECK(k->ops->read_next(k, s, masked_out.data() + (size_t)s * T));
        }
    }
    AFCHECK(k->ops->compute(k, 2, xchg, AF_COMPUTE_UNMASKED));
    std::vector<double> un(T);
    std::vector<uint64_t> hx(xlen);
    AFCHECK(af_cuda_copy_to_host(hx.data(), xchg, xlen * sizeof(uint64_t)));
    int compared = 0;
    for (int s = 0; s < n && bad < 10; ++s) {
        const int b = k->slot_block[s];
        if (b < 0) {
            continue;
        }
        AFCHECK(k->ops->read_next(k, s, un.data()));
        const double *m = masked_out.data() + (size_t)s * T;
        if (memcmp(m, un.data(), sizeof(double) * (size_t)T) != 0) {
            fprintf(stderr, "validation: slot %d (block %d): masked and unmasked results differ\n",
                    s, b);
            bad++;
        }
        if (s < 16) {
            /* The host evaluates the same per-cell function on the same input. */
            const double *u = host + (size_t)b * T;
            const double ul = af_double(hx[2 * (size_t)((b + n - 1) % n) + 1]);
            const double ur = af_double(hx[2 * (size_t)((b + 1) % n)]);
            for (int i = 0; i < T; ++i) {
                double l = i > 0 ? u[i - 1] : ul;
                double r = i + 1 < T ? u[i + 1] : ur;
                double want = af_burgers_cell(l, u[i], r, desc.coeffs);
                if (af_bits(want) != af_bits(m[i])) {
                    fprintf(stderr, "validation: slot %d cell %d: kernel %.17g, host %.17g\n", s, i,
                            m[i], want);
                    bad++;
                    break;
                }
            }
        }
        compared++;
    }
    printf("validation: %d occupied slots compared (masked == unmasked, 16 against the host): "
           "%s\n",
           compared, bad ? "FAIL" : "ok");

    stats_t st[NKINDS];
    printf("\n%-9s %12s %10s %10s %10s %10s %11s\n", "kernel", "bytes/iter", "min GB/s", "p50 GB/s",
           "p90 GB/s", "max GB/s", "p50 time");
    for (int kind = 0; kind < NKINDS; ++kind) {
        st[kind] = summarise(gbps[kind]);
        std::vector<double> t = ms_raw[kind];
        std::sort(t.begin(), t.end());
        printf("%-9s %9.0f MiB %10.1f %10.1f %10.1f %10.1f %8.3f ms\n", kind_name[kind],
               bytes[kind] / 1048576.0, st[kind].min, st[kind].p50, st[kind].p90, st[kind].max,
               t[(t.size() - 1) / 2]);
    }
    const double r_copy = st[K_MASKED].p50 / st[K_COPY].p50;
    const double r_unmasked = st[K_MASKED].p50 / st[K_UNMASKED].p50;
    const double r_triad = st[K_MASKED].p50 / st[K_TRIAD].p50;
    const int ok_copy = r_copy >= 0.85;
    const int ok_unmasked = r_unmasked >= 0.97;
    printf("\nmasked / copy      %.3f  (target >= 0.85: %s)\n", r_copy, ok_copy ? "met" : "MISSED");
    printf("masked / unmasked  %.3f  (target >= 0.97: %s)\n", r_unmasked,
           ok_unmasked ? "met" : "MISSED");
    printf("masked / triad     %.3f\n", r_triad);
    printf("samples: %d per kind after %d warm-ups, interleaved; bytes = fewest bytes moved "
           "(read + write)\n",
           samples, warmup);

    if (csv_path != NULL) {
        FILE *f = fopen(csv_path, "w");
        if (f == NULL) {
            fprintf(stderr, "bench_kernel_cuda: cannot write %s\n", csv_path);
            bad = 1;
        } else {
            fprintf(f, "kind,sample,ms,bytes,gbps,slots,cells,device\n");
            for (int kind = 0; kind < NKINDS; ++kind) {
                for (size_t i = 0; i < ms_raw[kind].size(); ++i) {
                    fprintf(f, "%s,%zu,%.6f,%.0f,%.3f,%d,%d,\"%s\"\n", kind_name[kind], i,
                            ms_raw[kind][i], bytes[kind], gbps[kind][i], n, T, prop.name);
                }
            }
            fclose(f);
            printf("raw samples: %s\n", csv_path);
        }
    }

    cudaEventDestroy(ev0);
    cudaEventDestroy(ev1);
    cudaFree(src);
    cudaFree(dst);
    cudaFree(ta);
    cudaFree(tb);
    cudaFree(tc);
    af_cuda_free(xchg);
    cudaFreeHost(host);
    af_kernels_destroy(&k);
    if (bad) {
        printf("verdict: FAIL (wrong result)\n");
        return 1;
    }
    if (strict && !(ok_copy && ok_unmasked)) {
        printf("verdict: FAIL (--strict: a bandwidth target was missed)\n");
        return 3;
    }
    printf("verdict: PASS\n");
    return 0;
}
