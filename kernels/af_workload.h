/* agefence workloads: what the driver needs from the computation a block runs, as one table
 * per workload (kernels/workloads.c), chosen by workload.kind. The driver, placement,
 * coordinator, recovery and log see a block as `cells` doubles, its step as a function of the
 * block and two exchange words (its read-set), and its diagnostics as mass, energy and a
 * non-finite count; they name no workload. The backends' compute() dispatches on the kind
 * (kernels_cpu.c, kernels_cuda.cu) to the workload's shared host/device arithmetic
 * (af_burgers.h, af_attention.h). docs/workloads.md says how to add one. */
#ifndef AF_WORKLOAD_H
#define AF_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "../common/af_result.h"
#include "af_attention.h"
#include "af_burgers.h"

enum {
    AF_WORKLOAD_BURGERS = 0,   /* viscous Burgers stencil: memory-bound, neighbour-coupled */
    AF_WORKLOAD_ATTENTION = 1, /* masked attention: compute-bound, globally coupled */
    AF_WORKLOAD_COUNT
};

/* The exchange vector's layout (kernels.h): 5 words per block, then AF_XCHG_FLAGS words.
 * Flag AF_XCHG_STOP: the stop flag (max-combined); AF_XCHG_GLOBAL: the global word a globally
 * coupled workload reads, which the driver writes after the step's figures (the same bits on
 * every rank); zero for a workload without one. */
#define AF_XCHG_FLAGS  2
#define AF_XCHG_STOP   0
#define AF_XCHG_GLOBAL 1

/* The parameters a backend's step needs, built on the host once (every backend and the
 * reference get the same bits). */
typedef struct af_wl_params {
    int kind;
    af_coeffs_t coeffs;    /* burgers */
    af_attn_params_t attn; /* attention */
} af_wl_params_t;

/* The read-set of block b of B: the two exchange words its step reads. Burgers: the left
 * neighbour's right edge and the right neighbour's left edge; attention: the global word,
 * twice. */
AF_HD void af_wl_read_set(int kind, int64_t B, int64_t b, size_t *i0, size_t *i1)
{
    if (kind == AF_WORKLOAD_ATTENTION) {
        *i0 = (size_t)(5 * B + AF_XCHG_GLOBAL);
        *i1 = *i0;
        return;
    }
    /* b in [0, B): the ring's neighbours without a division (a 64-bit one a call, in every
     * slot's step and every replica's log entry, cost more than the rest of the call). */
    *i0 = (size_t)(2 * (b == 0 ? B - 1 : b - 1) + 1);
    *i1 = (size_t)(2 * (b + 1 == B ? 0 : b + 1));
}

/* What a workload takes from the scenario (sim/io/config.c fills it). */
typedef struct af_wl_config {
    int64_t blocks;
    int64_t block_len; /* scenario.block_len: cells (burgers) or tokens (attention) */
    int dim;           /* workload.dim (attention) */
    double nu, dt, amplitude, offset;
    uint64_t seed;
} af_wl_config_t;

typedef struct af_workload {
    const char *name;
    int kind;
    /* 1: a block's read-set is its neighbours' edge cells, which the driver trades between
     * owners (sim/exchange/halo.c); 0: it is the global word. */
    int neighbour_edges;
    /* doubles of state per block */
    int64_t (*cells)(const af_wl_config_t *c);
    /* Whether the configuration is valid for the workload: 0, or 1 with the offending key
     * ("section.key") in *key and what is wrong in msg. */
    int (*check)(const af_wl_config_t *c, const char **key, char *msg, size_t n);
    af_wl_params_t (*params)(const af_wl_config_t *c);
    /* The initial state of state words [first, first + n) of the global problem. */
    void (*initial)(const af_wl_config_t *c, int64_t first, int64_t n, double *out);
    /* The global word from the exact sum of every block's mass (NULL: none). */
    double (*global_word)(double mass_sum, int64_t blocks, int64_t cells);
    /* One block's step on the host, as every backend computes it without injection: un from
     * u and its read-set words w0, w1. The driver replays a lost block with it. */
    void (*block_update)(const double *u, double *un, int64_t cells, const af_wl_params_t *p,
                         double w0, double w1);
    /* The serial fault-free reference: `steps` steps of the whole problem from the initial
     * state; u receives blocks x cells doubles in logical order. */
    af_result_t (*reference_run)(const af_wl_config_t *c, int64_t steps, double *u);
    /* Values per element of a block (features per token for attention; 1 for burgers), and
     * the block's shape in words ("16 tokens x 8 features", "256 cells"): the log and the
     * summary. */
    int (*features)(const af_wl_config_t *c);
    void (*shape)(const af_wl_config_t *c, char *buf, size_t n);
    /* Floating-point operations of one block's step that the benchmark counts: those the cpu
     * backend executes in the workload's products (workloads.c says which). */
    double (*flops)(const af_wl_params_t *p, int64_t cells);
} af_workload_t;

/* The table of a kind (NULL when out of range); the names, for messages. */
const af_workload_t *af_workload_get(int kind);
extern const af_workload_t af_workload_burgers;
extern const af_workload_t af_workload_attention;

/* The largest stable dt of the Burgers scheme for the configuration: min(0.5 dx^2 / nu,
 * 2 nu / umax^2), the two limits its check enforces (dt = auto takes a fraction of it). */
double af_burgers_dt_limit(const af_wl_config_t *c);

#endif
