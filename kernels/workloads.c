/* agefence workload tables (af_workload.h): Burgers and masked attention. Host code; the
 * per-element arithmetic is the shared header's, as every backend evaluates it. */
#include "af_workload.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/af_rsum.h"
#include "kernels.h"

/* ---- Burgers ------------------------------------------------------------------------------- */

static int64_t burgers_cells(const af_wl_config_t *c)
{
    return c->block_len;
}

static double burgers_dx(const af_wl_config_t *c)
{
    return 1.0 / ((double)c->blocks * (double)c->block_len);
}

/* The explicit scheme's two stability limits on dt: diffusion, nu dt / dx^2 <= 1/2, and
 * advection, dt <= 2 nu / umax^2 with umax = |offset| + |amplitude| (+Inf when umax is 0). */
static double burgers_diffusion_dt(const af_wl_config_t *c)
{
    double dx = burgers_dx(c);
    return 0.5 * dx * dx / c->nu;
}

static double burgers_umax(const af_wl_config_t *c)
{
    return fabs(c->offset) + fabs(c->amplitude);
}

static double burgers_advection_dt(const af_wl_config_t *c)
{
    double umax = burgers_umax(c);
    return umax > 0 ? 2.0 * c->nu / (umax * umax) : INFINITY;
}

double af_burgers_dt_limit(const af_wl_config_t *c)
{
    double diffusion = burgers_diffusion_dt(c);
    double advection = burgers_advection_dt(c);
    return advection < diffusion ? advection : diffusion;
}

static int burgers_check(const af_wl_config_t *c, const char **key, char *msg, size_t n)
{
    double dx = burgers_dx(c);
    double cells = (double)c->blocks * (double)c->block_len;
    double r = c->nu * c->dt / (dx * dx);
    *key = "workload.dt";
    if (r > 0.5) {
        snprintf(msg, n,
                 "workload.dt = %g violates the diffusion stability limit: nu*dt/dx^2 = %g > "
                 "0.5; expected dt <= %g for %.0f cells",
                 c->dt, r, burgers_diffusion_dt(c), cells);
        return 1;
    }
    if (c->dt > burgers_advection_dt(c)) {
        snprintf(msg, n,
                 "workload.dt = %g violates the advection stability limit dt <= 2*nu/umax^2 "
                 "= %g (umax = |offset| + |amplitude| = %g)",
                 c->dt, burgers_advection_dt(c), burgers_umax(c));
        return 1;
    }
    return 0;
}

static af_wl_params_t burgers_params(const af_wl_config_t *c)
{
    double dx = burgers_dx(c);
    af_wl_params_t p;
    memset(&p, 0, sizeof p);
    p.kind = AF_WORKLOAD_BURGERS;
    p.coeffs.c_adv = c->dt / (4.0 * dx);
    p.coeffs.c_diff = c->nu * c->dt / (dx * dx);
    return p;
}

static void burgers_initial(const af_wl_config_t *c, int64_t first, int64_t n, double *out)
{
    const double dx = burgers_dx(c);
    const double two_pi = 6.283185307179586476925286766559;
    for (int64_t i = 0; i < n; ++i) {
        double x = (double)(first + i) * dx;
        out[i] = c->offset + c->amplitude * sin(two_pi * x);
    }
}

static void burgers_block_update(const double *u, double *un, int64_t cells,
                                 const af_wl_params_t *p, double w0, double w1)
{
    af_block_update(u, un, (int)cells, w0, w1, p->coeffs);
}

static af_result_t burgers_reference_run(const af_wl_config_t *c, int64_t steps, double *u)
{
    int64_t n = c->blocks * c->block_len;
    af_coeffs_t k = burgers_params(c).coeffs;
    burgers_initial(c, 0, n, u);
    /* In place, one array: each cell reads its left neighbour's value before this step (kept
     * in `left`) and its right one's (not yet overwritten; the last cell's is cell 0's, kept in
     * `first`): the same inputs the backends give af_burgers_cell, so the same bits. */
    for (int64_t s = 0; s < steps; ++s) {
        double first = u[0];
        double left = u[n - 1];
        for (int64_t i = 0; i < n; ++i) {
            double cc = u[i];
            double right = i + 1 < n ? u[i + 1] : first;
            u[i] = af_burgers_cell(left, cc, right, k);
            left = cc;
        }
    }
    return AF_OK;
}

static int burgers_features(const af_wl_config_t *c)
{
    (void)c;
    return 1;
}

static void burgers_shape(const af_wl_config_t *c, char *buf, size_t n)
{
    snprintf(buf, n, "%lld cells", (long long)c->block_len);
}

/* Per cell: two squares, two multiplications by coefficients, 2 uc, and five additions. */
static double burgers_flops(const af_wl_params_t *p, int64_t cells)
{
    (void)p;
    return 10.0 * (double)cells;
}

const af_workload_t af_workload_burgers = {
    .name = "burgers",
    .kind = AF_WORKLOAD_BURGERS,
    .neighbour_edges = 1,
    .cells = burgers_cells,
    .check = burgers_check,
    .params = burgers_params,
    .initial = burgers_initial,
    .global_word = NULL,
    .block_update = burgers_block_update,
    .reference_run = burgers_reference_run,
    .features = burgers_features,
    .shape = burgers_shape,
    .flops = burgers_flops,
};

/* ---- masked attention ---------------------------------------------------------------------- */

static int64_t attn_cells(const af_wl_config_t *c)
{
    return c->block_len * (int64_t)c->dim;
}

static int attn_check(const af_wl_config_t *c, const char **key, char *msg, size_t n)
{
    if (c->block_len > AF_ATTN_MAX_TOKENS) {
        *key = "scenario.block_len";
        snprintf(msg, n,
                 "scenario.block_len = %lld tokens: the attention workload takes at most %d "
                 "tokens per block",
                 (long long)c->block_len, AF_ATTN_MAX_TOKENS);
        return 1;
    }
    if (c->dim < 1 || c->dim > AF_ATTN_MAX_DIM) {
        *key = "workload.dim";
        snprintf(msg, n, "workload.dim = %d: expected an integer in [1, %d]", c->dim,
                 AF_ATTN_MAX_DIM);
        return 1;
    }
    return 0;
}

static af_wl_params_t attn_params(const af_wl_config_t *c)
{
    af_wl_params_t p;
    memset(&p, 0, sizeof p);
    p.kind = AF_WORKLOAD_ATTENTION;
    p.attn.tokens = (int)c->block_len;
    p.attn.dim = c->dim;
    p.attn.scale = 1.0 / sqrt((double)c->dim);
    p.attn.c_attn = AF_ATTN_C_ATTN;
    p.attn.c_mean = AF_ATTN_C_MEAN;
    p.attn.c_self = 1.0 - AF_ATTN_C_ATTN - AF_ATTN_C_MEAN;
    return p;
}

/* offset + amplitude (2 U - 1), U uniform in [0, 1) from the counter-based hash of the seed
 * and the state word's index: any block's initial state without the others'. */
static void attn_initial(const af_wl_config_t *c, int64_t first, int64_t n, double *out)
{
    for (int64_t i = 0; i < n; ++i) {
        double v = af_u01(af_hash4(c->seed, 0x61747465ULL, (uint64_t)(first + i), 0));
        out[i] = c->offset + c->amplitude * (2.0 * v - 1.0);
    }
}

/* The mean of every state word of the problem. */
static double attn_global_word(double mass_sum, int64_t blocks, int64_t cells)
{
    return mass_sum / ((double)blocks * (double)cells);
}

static void attn_block_update(const double *u, double *un, int64_t cells, const af_wl_params_t *p,
                              double w0, double w1)
{
    (void)cells;
    (void)w1;
    int ok = 1;
    af_attn_block_update(u, un, &p->attn, w0, &ok);
}

static af_result_t attn_reference_run(const af_wl_config_t *c, int64_t steps, double *u)
{
    const int64_t T = attn_cells(c);
    const int64_t B = c->blocks;
    af_wl_params_t p = attn_params(c);
    attn_initial(c, 0, B * T, u);
    double *next = malloc(sizeof(double) * (size_t)T);
    if (next == NULL) {
        af_error_set("attention reference: cannot allocate a block of %lld doubles", (long long)T);
        return AF_ERR_NOMEM;
    }
    for (int64_t s = 0; s < steps; ++s) {
        /* The global mean of the state before the step, as the driver sums it: the exact sum
         * of the blocks' lane-ordered masses, rounded once. */
        af_rsum_t mass;
        af_rsum_clear(&mass);
        for (int64_t b = 0; b < B; ++b) {
            double m = 0.0;
            double e = 0.0;
            af_block_diag(u + b * T, (int)T, &m, &e);
            af_rsum_add(&mass, m);
        }
        double g = attn_global_word(af_rsum_value(&mass), B, T);
        for (int64_t b = 0; b < B; ++b) {
            int ok = 1;
            af_attn_block(u + b * T, next, &p.attn, g, &ok);
            memcpy(u + b * T, next, sizeof(double) * (size_t)T);
        }
    }
    free(next);
    return AF_OK;
}

static int attn_features(const af_wl_config_t *c)
{
    return c->dim;
}

static void attn_shape(const af_wl_config_t *c, char *buf, size_t n)
{
    snprintf(buf, n, "%lld tokens x %d features", (long long)c->block_len, c->dim);
}

/* The multiply-adds of the scores and the weighted values that the CPU backend executes, a
 * multiply and an add each (2 flops); the scaling, the softmax, the exponential and the update
 * are not counted. A block of a multiple of 8 tokens takes the vector path (cpu_attn_rows8 in
 * kernels/arith_cpu.c), which computes the rows in groups of eight and, for the group of rows
 * i0 .. i0 + 7, the scores and values of tokens 0 .. i0 + 7 only (the tokens beyond are masked
 * for all eight rows): 8 rows x (i0 + 8) tokens x d features for the scores, and as many for
 * the values, whose features go in tiles of six and four that cover 4 ceil(d / 4) features
 * (those of a last tile beyond d are computed and dropped), summed over the T / 8 groups,
 * T (T + 8) / 2 x (d + 4 ceil(d / 4)) multiply-adds: 2 d T (T + 8) flops when 4 divides d.
 * Any other block takes af_attn_row, which visits every token of every row and masks by
 * select: 4 d T^2. (The CUDA backend runs af_attn_row for every block: 4 d T^2 whatever T.)
 * Masked products are counted as executed, not as useful: the causal products alone (tokens
 * j <= i) are 2 d T (T + 1) flops. */
static double attn_flops(const af_wl_params_t *p, int64_t cells)
{
    (void)cells;
    const double T = (double)p->attn.tokens;
    const double d = (double)p->attn.dim;
    if (p->attn.tokens % 8 == 0) {
        const double dv = 4.0 * (double)((p->attn.dim + 3) / 4);
        return T * (T + 8.0) * (d + dv);
    }
    return 4.0 * d * T * T;
}

const af_workload_t af_workload_attention = {
    .name = "attention",
    .kind = AF_WORKLOAD_ATTENTION,
    .neighbour_edges = 0,
    .cells = attn_cells,
    .check = attn_check,
    .params = attn_params,
    .initial = attn_initial,
    .global_word = attn_global_word,
    .block_update = attn_block_update,
    .reference_run = attn_reference_run,
    .features = attn_features,
    .shape = attn_shape,
    .flops = attn_flops,
};

const af_workload_t *af_workload_get(int kind)
{
    switch (kind) {
    case AF_WORKLOAD_BURGERS:
        return &af_workload_burgers;
    case AF_WORKLOAD_ATTENTION:
        return &af_workload_attention;
    default:
        return NULL;
    }
}
