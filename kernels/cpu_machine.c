/* agefence: what the benchmarks ask of the CPU the cpu backend runs on (kernels.h): its
 * last-level cache, which sizes the STREAM arrays beyond it, and the multiply-add peak of the
 * backend's vectors, the bound the attention kernel is measured against. */
#include "kernels.h"

#include "arith_cpu.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

size_t af_cpu_llc_bytes(void)
{
    /* sysfs's last cache level first: what the kernel was told (lscpu's answer); sysconf's
     * cpuid can report the whole package's cache inside a virtual machine. */
    long v = -1;
    for (int idx = 4; idx >= 0 && v <= 0; --idx) {
        char path[80];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", idx);
        FILE *f = fopen(path, "r");
        if (f == NULL) {
            continue;
        }
        long n = 0;
        char unit = 0;
        if (fscanf(f, "%ld%c", &n, &unit) >= 1 && n > 0) {
            v = n * (unit == 'K' ? 1024L : unit == 'M' ? 1024L * 1024L : 1L);
        }
        fclose(f);
    }
#ifdef _SC_LEVEL3_CACHE_SIZE
    if (v <= 0) {
        v = sysconf(_SC_LEVEL3_CACHE_SIZE);
    }
#endif
    return v > 0 ? (size_t)v : (size_t)32 << 20; /* unknown: 32 MiB */
}

/* The multiply-add peak (kernels.h): twelve independent chains keep both multipliers and both
 * adders of a core busy where a multiply and an add each take up to 6 cycles of latency
 * together at two a cycle (Zen 2/3: 3 + 3, two of each pipe; Skylake: 4 + 4 on two shared
 * ports needs only 8), and with m and c they fill 14 of the 16 vector registers. */
AF_HOT static void cpu_muladd_chains(int64_t iters, double *restrict out)
{
    const af_v4d m = AF_V4_SET1(AF_CPU_PEAK_M);
    const af_v4d c = AF_V4_SET1(AF_CPU_PEAK_C);
    af_v4d acc[AF_CPU_PEAK_CHAINS];
    for (int i = 0; i < AF_CPU_PEAK_CHAINS; ++i) {
        acc[i] = AF_V4_SET1(1.0 + (double)i / 16.0);
    }
    for (int64_t it = 0; it < iters; ++it) {
        for (int i = 0; i < AF_CPU_PEAK_CHAINS; ++i) {
            acc[i] = acc[i] * m + c;
        }
    }
    memcpy(out, acc, sizeof acc);
}

double af_cpu_muladd_peak(int64_t iters, double *out)
{
    cpu_muladd_chains(iters, out);
    return 2.0 * 4.0 * (double)AF_CPU_PEAK_CHAINS * (double)iters;
}
