/* agefence: the cpu backend's block arithmetic (kernels/cpu_block.c): a block's diagnostics and
 * its step in one pass, built like the hot loops (avx2 and baseline clones, no FMA). Private to
 * the cpu backend's files. */
#ifndef AF_CPU_BLOCK_H
#define AF_CPU_BLOCK_H

#include "arith_cpu.h"

/* The diagnostics of one buffer of len values into d: mass and energy in af_block_diag's order
 * (element i to lane partial i % AF_LANES, in increasing i; then the tree), and how many values
 * are NaN or Inf. The same bits as af_block_diag. */
void af_cpu_fill_diag(const double *restrict u, int len, double *restrict d);
/* One block's update (af_block_update's arithmetic) with its diagnostics (af_cpu_fill_diag's)
 * in one pass: T a multiple of 4, at least 8. The same bits as the two passes. */
void af_cpu_slot_step(const double *restrict u, double *restrict un, int T, double ul, double ur,
                      af_coeffs_t kc, double *restrict d);
/* The same for T of at most AF_LANES (a multiple of 4, at least 8), in registers. */
void af_cpu_slot_step_short(const double *restrict u, double *restrict un, int T, double ul,
                            double ur, af_coeffs_t kc, double *restrict d);

#endif
