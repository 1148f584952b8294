#include "reference.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../kernels/af_burgers.h"

af_coeffs_t af_scheme_coeffs(const af_config_t *cfg)
{
    /* The Burgers table's parameters: one formula for every caller. */
    af_wl_config_t c = af_config_workload(cfg);
    return af_workload_burgers.params(&c).coeffs;
}

void af_initial_cells(const af_config_t *cfg, int64_t first, int64_t n, double *out)
{
    af_wl_config_t c = af_config_workload(cfg);
    af_config_wl(cfg)->initial(&c, first, n, out);
}

void af_reference_step(const double *u, double *un, int64_t n, double c_adv, double c_diff)
{
    af_coeffs_t k = {c_adv, c_diff};
    if (n == 1) {
        un[0] = af_burgers_cell(u[0], u[0], u[0], k);
        return;
    }
    un[0] = af_burgers_cell(u[n - 1], u[0], u[1], k);
    for (int64_t i = 1; i < n - 1; ++i) {
        un[i] = af_burgers_cell(u[i - 1], u[i], u[i + 1], k);
    }
    un[n - 1] = af_burgers_cell(u[n - 2], u[n - 1], u[0], k);
}

af_result_t af_reference_run(const af_config_t *cfg, int64_t steps, double *u)
{
    af_wl_config_t c = af_config_workload(cfg);
    return af_config_wl(cfg)->reference_run(&c, steps, u);
}

uint64_t af_checksum(const double *u, int64_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (int64_t i = 0; i < n; ++i) {
        uint64_t v = af_bits(u[i]);
        for (int byte = 0; byte < 8; ++byte) {
            h ^= (v >> (8 * byte)) & 0xffU;
            h *= 0x100000001b3ULL;
        }
    }
    return h;
}
