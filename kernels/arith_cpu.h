/* agefence: what the CPU backend (kernels_cpu.c) and the host arithmetic below it
 * (arith_cpu.c) share: the build of the hot loops (avx2 and baseline clones), the four-double
 * vector types, and the attention block step with its output checksum optional. Private to
 * those two files; the host arithmetic's public entry points are in kernels.h. */
#ifndef AF_ARITH_CPU_H
#define AF_ARITH_CPU_H

#include "af_attention.h"

/* Hot loops are built twice, for AVX2 and for the baseline x86-64, and the loader picks one.
 * Neither uses FMA (-ffp-contract=off, and target "avx2" does not enable it), and a wider
 * vector does not change any element's arithmetic or the order of the lane sums: both clones
 * give the same bits. GCC only. Clang 14 accepts target_clones, but refuses (a hard error, not
 * -Wpsabi) every call that passes a four-double vector from the AVX2 clone to the helpers below,
 * always_inline as they are: a clang build runs the baseline (sse2) loops, with the same bits
 * (README.md). Not under AddressSanitizer, whose run-time is not yet there when the loader calls
 * the resolver. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&                             \
    !defined(__SANITIZE_ADDRESS__)
#define AF_CLONES 1
#define AF_HOT    __attribute__((target_clones("avx2", "default")))
#else
#define AF_HOT
#endif

/* Four doubles (GCC/Clang vector extension): the loops below must vectorise across the eight
 * lanes of a group, not across chunks, and compilers left to themselves pick the latter. */
typedef double af_v4d __attribute__((vector_size(32)));
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wpsabi"
#elif defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
typedef long long af_v4l __attribute__((vector_size(32)));

/* x in every lane. A macro, not an inline function: GCC lowers a vector built from a scalar in
 * a function compiled for the baseline before inlining it, and the AVX2 clones then broadcast
 * a loaded double with two shuffles on the floating-point pipes (vmovddup, vperm2f128) instead
 * of one vbroadcastsd from memory, which the load ports execute alone. x is evaluated once per
 * lane: pass it no side effect. */
#define AF_V4_SET1(x) ((af_v4d){(x), (x), (x), (x)})

/* af_attn_block_update, the output checksum computed only with check (the driver's step
 * without abft skips it, so bench sdc's overhead of abft over finite includes its cost); the
 * rows of a block of other than a multiple of 8 tokens (af_attn_block) always compute it. */
void af_attn_block_vec(const double *u, double *un, const af_attn_params_t *p, double g, int check,
                       int *abft_ok);

#endif
