/* agefence serial reference solver: the fault-free, undistributed Burgers run that every final
 * state is compared with bit for bit. It evaluates the same per-cell function
 * (kernels/af_burgers.h) on one periodic array of B*T cells. */
#ifndef AF_REFERENCE_H
#define AF_REFERENCE_H

#include <stdint.h>

#include "../common/af_result.h"
#include "config.h"
#include "../kernels/af_burgers.h"

/* The scheme's coefficients for a scenario: c_adv = dt/(4 dx), c_diff = nu dt/dx^2. Every
 * backend and the reference take them from here, so they are the same bits everywhere. */
af_coeffs_t af_scheme_coeffs(const af_config_t *cfg);

/* The initial condition of cells [first, first + n) of the global grid:
 * u0(x) = offset + amplitude * sin(2 pi x), x = cell * dx. */
void af_initial_cells(const af_config_t *cfg, int64_t first, int64_t n, double *out);

/* Runs `steps` steps from the initial condition; u receives B*T cells in logical order. In
 * place: it needs no memory beside u. */
af_result_t af_reference_run(const af_config_t *cfg, int64_t steps, double *u);

/* Advances n periodic cells by one step from u into un. */
void af_reference_step(const double *u, double *un, int64_t n, double c_adv, double c_diff);

/* FNV-1a over the bit patterns of n doubles: the checksum printed with a verdict. */
uint64_t af_checksum(const double *u, int64_t n);

#endif
