/* agefence serial reference solver: the fault-free, undistributed run of the scenario's
 * workload that every final state is compared with bit for bit (the workload table's
 * reference, kernels/workloads.c: the same shared arithmetic on one array of B blocks). */
#ifndef AF_REFERENCE_H
#define AF_REFERENCE_H

#include <stdint.h>

#include "../../common/af_result.h"
#include "../io/config.h"
#include "../../kernels/af_burgers.h"

/* The scheme's coefficients for a scenario: c_adv = dt/(4 dx), c_diff = nu dt/dx^2. Every
 * backend and the reference take them from here, so they are the same bits everywhere. */
af_coeffs_t af_scheme_coeffs(const af_config_t *cfg);

/* The initial state of state words [first, first + n) of the global problem (the workload's:
 * burgers u0(x) = offset + amplitude * sin(2 pi x), x = cell * dx). */
void af_initial_cells(const af_config_t *cfg, int64_t first, int64_t n, double *out);

/* Runs `steps` steps from the initial condition; u receives B*T cells in logical order. In
 * place: it needs no memory beside u. */
af_result_t af_reference_run(const af_config_t *cfg, int64_t steps, double *u);

/* Advances n periodic Burgers cells by one step from u into un. */
void af_reference_step(const double *u, double *un, int64_t n, double c_adv, double c_diff);

/* FNV-1a over the bit patterns of n doubles: the checksum printed with a verdict. */
uint64_t af_checksum(const double *u, int64_t n);

#endif
