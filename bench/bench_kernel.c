/* agefence bench kernel: the masked Burgers kernel against the same kernel unmasked and against
 * STREAM-style copy and triad over arrays of the same length, on every rank at once, samples
 * interleaved. Each array, summed over the node's ranks, is at least 4x the last-level cache
 * (STREAM's rule, read from the machine: af_cpu_llc_bytes), so the floor is memory, not cache.
 * Bandwidth counts STREAM's way: the kernel and copy move 16 bytes per cell (read one array,
 * write one), triad 24 (read two, write one). Besides that fully occupied grid it times the
 * run's own grid: this rank's shard of the default scenario (its occupancy, mostly empty
 * slots), masked and unmasked. The result is checked: the masked kernel's output must equal the
 * unmasked kernel's and the serial reference step, bit for bit, and the triad's output its
 * formula. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/kernels.h"
#include "../common/af_alloc.h"
#include "../common/af_time.h"
#include "bench.h"
#include "../sim/fleet/aging.h"
#include "../sim/plan/placement.h"
#include "../sim/oracle/reference.h"

enum {
    V_MASKED,
    V_UNMASKED,
    V_COPY,
    V_TRIAD,
    V_RUN_MASKED,
    V_RUN_UNMASKED,
    V_FUSED,
    V_RUN_POOLED,
    NV
};
static const char *VNAME[NV] = {"masked_kernel",
                                "unmasked_kernel",
                                "stream_copy",
                                "stream_triad",
                                "run_grid_masked_kernel",
                                "run_grid_unmasked",
                                "masked_kernel_fused",
                                "run_grid_pooled_masked_kernel"};
static const double VBYTES[NV] = {16.0, 16.0, 16.0, 24.0, 16.0, 16.0, 16.0, 16.0};

typedef struct kbench {
    af_kernels_t *k;
    af_kernels_t *fused; /* the same grid with backend.cpu_kernel = fused */
    uint64_t *xchg;
    af_kernels_t *run_k; /* this rank's shard of the default scenario */
    /* The same with the run's pool (af_shard_pool_slots): its blocks' buffers side by side, as
     * a run holds them. */
    af_kernels_t *run_kp;
    uint64_t *run_xchg;
    int64_t run_occ_cells; /* the cells of its blocks */
    int64_t run_all_cells; /* the cells of its static grid */
    double *a;
    double *b;
    double *c;
    int64_t cells;
    int slots;
    int T;
} kbench_t;

static void triad(double *a, const double *b, const double *c, int64_t n, double s)
{
    for (int64_t i = 0; i < n; ++i) {
        a[i] = b[i] + s * c[i];
    }
}

static af_result_t run_variant(kbench_t *kb, int v)
{
    switch (v) {
    case V_MASKED:
        return kb->k->ops->compute(kb->k, 1, kb->xchg, 0);
    case V_UNMASKED:
        return kb->k->ops->compute(kb->k, 1, kb->xchg, AF_COMPUTE_UNMASKED);
    case V_COPY:
        memcpy(kb->a, kb->b, sizeof(double) * (size_t)kb->cells);
        return AF_OK;
    case V_FUSED:
        return kb->fused->ops->compute(kb->fused, 1, kb->xchg, 0);
    case V_RUN_MASKED:
        return kb->run_k->ops->compute(kb->run_k, 1, kb->run_xchg, 0);
    case V_RUN_UNMASKED:
        return kb->run_k->ops->compute(kb->run_k, 1, kb->run_xchg, AF_COMPUTE_UNMASKED);
    case V_RUN_POOLED:
        return kb->run_kp->ops->compute(kb->run_kp, 1, kb->run_xchg, 0);
    default:
        triad(kb->a, kb->b, kb->c, kb->cells, 3.0);
        return AF_OK;
    }
}

/* The masked output, slot by slot, must equal the unmasked one and the reference step. */
static void validate(af_bench_ctx_t *b, kbench_t *kb, const af_config_t *cfg)
{
    size_t n = (size_t)kb->cells;
    double *state = malloc(sizeof(double) * n);
    double *ref = malloc(sizeof(double) * n);
    double *masked = malloc(sizeof(double) * n);
    double *unmasked = malloc(sizeof(double) * n);
    if (!state || !ref || !masked || !unmasked) {
        af_bench_fail(b, "out of memory for the validation arrays");
        goto out;
    }
    for (int s = 0; s < kb->slots; ++s) {
        kb->k->ops->read_slot(kb->k, s, state + (size_t)s * (size_t)kb->T);
    }
    kb->k->ops->compute(kb->k, 1, kb->xchg, 0);
    for (int s = 0; s < kb->slots; ++s) {
        kb->k->ops->read_next(kb->k, s, masked + (size_t)s * (size_t)kb->T);
    }
    kb->k->ops->compute(kb->k, 1, kb->xchg, AF_COMPUTE_UNMASKED);
    for (int s = 0; s < kb->slots; ++s) {
        kb->k->ops->read_next(kb->k, s, unmasked + (size_t)s * (size_t)kb->T);
    }
    af_coeffs_t kc = af_scheme_coeffs(cfg);
    af_reference_step(state, ref, kb->cells, kc.c_adv, kc.c_diff);
    kb->fused->ops->compute(kb->fused, 1, kb->xchg, 0);
    for (int s = 0; s < kb->slots; ++s) {
        kb->fused->ops->read_next(kb->fused, s, unmasked + (size_t)s * (size_t)kb->T);
    }
    if (memcmp(masked, unmasked, sizeof(double) * n) != 0) {
        af_bench_fail(b, "the fused and two-pass kernels differ");
    }
    kb->k->ops->compute(kb->k, 1, kb->xchg, AF_COMPUTE_UNMASKED);
    for (int s = 0; s < kb->slots; ++s) {
        kb->k->ops->read_next(kb->k, s, unmasked + (size_t)s * (size_t)kb->T);
    }
    if (memcmp(masked, unmasked, sizeof(double) * n) != 0) {
        af_bench_fail(b, "masked and unmasked kernels differ");
    } else if (memcmp(masked, ref, sizeof(double) * n) != 0) {
        af_bench_fail(b, "the masked kernel differs from the reference step");
    }
    /* The run grid in the run's pool computes what it computes with a buffer a slot. */
    kb->run_k->ops->compute(kb->run_k, 1, kb->run_xchg, 0);
    kb->run_kp->ops->compute(kb->run_kp, 1, kb->run_xchg, 0);
    for (int s = 0; s < kb->run_k->desc.n_slots && (size_t)kb->T <= n; ++s) {
        if (kb->run_k->slot_block[s] < 0) {
            continue;
        }
        const int T = kb->run_k->desc.block_len;
        if (kb->run_k->ops->read_next(kb->run_k, s, state) != AF_OK ||
            kb->run_kp->ops->read_next(kb->run_kp, s, ref) != AF_OK ||
            memcmp(state, ref, sizeof(double) * (size_t)T) != 0) {
            af_bench_fail(b, "the run grid's slot %d differs in the run's pool", s);
            break;
        }
    }
    triad(kb->a, kb->b, kb->c, kb->cells, 3.0);
    for (int64_t i = 0; i < kb->cells; i += 997) {
        if (kb->a[i] != kb->b[i] + 3.0 * kb->c[i]) {
            af_bench_fail(b, "triad result wrong at %lld", (long long)i);
            break;
        }
    }
out:
    free(state);
    free(ref);
    free(masked);
    free(unmasked);
}

/* This rank's shard of the embedded default scenario (the run's own grid: its capacity, its
 * blocks where the placement puts them at start-up), in the cpu backend, packed. */
static af_result_t run_grid(af_bench_ctx_t *b, kbench_t *kb)
{
    static af_config_t dc;
    char err[512];
    if (af_config_load(&dc, NULL, NULL, 0, err, sizeof err) != AF_OK) {
        af_error_set("bench kernel: the default scenario: %s", err);
        return AF_ERR_INTERNAL;
    }
    const int64_t D = af_config_devices(&dc, b->world.size);
    af_placement_t p;
    memset(&p, 0, sizeof p);
    AF_CHECK(af_placement_init(&p, D, dc.units_per_device, dc.blocks, dc.max_blackout,
                               b->world.size, b->world.rank));
    const int64_t per_dev = p.units * p.capacity;
    const int64_t g0 = p.dev_lo * per_dev;
    const int n = (int)((p.dev_hi - p.dev_lo) * per_dev);
    af_shard_desc_t desc = {.n_slots = n > 0 ? n : 1,
                            .block_len = (int)dc.block_len,
                            .blocks = (int)dc.blocks,
                            .coeffs = af_scheme_coeffs(&dc),
                            .seed = 1,
                            .mix = af_corrupt_mix(&dc),
                            .cuda_device = -1,
                            .cpu_kernel = dc.cpu_kernel};
    af_result_t rc = af_kernels_cpu.create(&desc, &kb->run_k);
    desc.pool_slots = af_shard_pool_slots(desc.n_slots, desc.blocks);
    if (rc == AF_OK) {
        rc = af_kernels_cpu.create(&desc, &kb->run_kp);
    }
    kb->run_xchg = af_alloc(sizeof(uint64_t) * af_xchg_len((int)dc.blocks));
    double *cells = af_alloc(sizeof(double) * (size_t)dc.block_len);
    if (rc == AF_OK && (kb->run_xchg == NULL || cells == NULL)) {
        rc = AF_ERR_NOMEM;
    }
    for (int s = 0; rc == AF_OK && s < n; ++s) {
        int32_t blk = p.slot_block[g0 + s];
        if (blk >= 0) {
            af_kernels_set_block(kb->run_k, s, blk);
            kb->run_k->commit[s] = 1;
            af_kernels_set_block(kb->run_kp, s, blk);
            kb->run_kp->commit[s] = 1;
            af_initial_cells(&dc, (int64_t)blk * dc.block_len, dc.block_len, cells);
            rc = kb->run_k->ops->write_slot(kb->run_k, s, cells);
            if (rc == AF_OK) {
                rc = kb->run_kp->ops->write_slot(kb->run_kp, s, cells);
            }
            kb->run_occ_cells += dc.block_len;
        }
    }
    kb->run_all_cells = (int64_t)n * dc.block_len;
    if (rc == AF_OK) {
        rc = kb->run_k->ops->pack(kb->run_k, kb->run_xchg);
    }
    af_free(cells);
    af_placement_destroy(&p);
    return rc;
}

static af_result_t bench_kernel(af_bench_ctx_t *b)
{
    /* The workload of -c/--set: attention has its own benchmark; Burgers takes the shape below
     * whatever the scenario says. */
    {
        static af_config_t ucfg;
        char uerr[512];
        af_result_t lrc =
            af_config_load(&ucfg, b->run.config_file, b->run.sets, b->run.nsets, uerr, sizeof uerr);
        if (lrc != AF_OK && b->world.rank == 0) {
            fprintf(stderr, "agefence: %s\n", uerr);
        }
        /* Each rank loads the file itself: one that cannot (a file on one node only) stops
         * all, before the choice of benchmark. */
        AF_CHECK(af_bench_agree(b, lrc != AF_OK ? AF_ERR_USAGE : AF_OK));
        if (ucfg.workload == AF_WORKLOAD_ATTENTION) {
            return af_bench_kernel_attention(b);
        }
    }
    /* Per rank: two state buffers and three STREAM arrays of `bytes` each: the node's ranks'
     * arrays together at least 4x its last-level cache (at least 32 MiB a rank; 2 MiB in the
     * quick configuration the tests run). */
    const size_t llc = af_cpu_llc_bytes();
    const int local = b->world.local_size > 0 ? b->world.local_size : 1;
    size_t bytes = (4 * llc + (size_t)local - 1) / (size_t)local;
    bytes = bytes > ((size_t)32 << 20) ? bytes : (size_t)32 << 20;
    bytes = b->quick ? (size_t)2 << 20 : bytes;
    const int T = 256;
    kbench_t kb;
    memset(&kb, 0, sizeof kb);
    kb.T = T;
    kb.slots = (int)((bytes + 8 * T - 1) / 8 / T);
    kb.cells = (int64_t)kb.slots * T;
    static af_config_t cfg;
    char err[512];
    char blocks[64];
    snprintf(blocks, sizeof blocks, "scenario.blocks=%d", kb.slots);
    const char *sets[] = {blocks, "scenario.block_len=256", "scenario.devices=1",
                          "workload.dt=1e-12"};
    AF_CHECK(af_config_load(&cfg, NULL, sets, 4, err, sizeof err) == AF_OK ? AF_OK
                                                                           : AF_ERR_INTERNAL);
    af_shard_desc_t desc = {.n_slots = kb.slots,
                            .block_len = T,
                            .blocks = kb.slots,
                            .coeffs = af_scheme_coeffs(&cfg),
                            .seed = 1,
                            .mix = af_corrupt_mix(&cfg),
                            .cuda_device = -1};
    /* The set-up is this rank's own (no collective): a failure goes to `agreed`, where every
     * rank learns whether all could set up before the first barrier. */
    double *t[NV] = {NULL};
    af_result_t rc = AF_OK;
    AF_CHECK_GOTO(af_kernels_cpu.create(&desc, &kb.k), rc, agreed);
    af_shard_desc_t fdesc = desc;
    fdesc.cpu_kernel = AF_CPU_KERNEL_FUSED;
    AF_CHECK_GOTO(af_kernels_cpu.create(&fdesc, &kb.fused), rc, agreed);
    kb.xchg = af_alloc(sizeof(uint64_t) * af_xchg_len(kb.slots));
    kb.a = af_alloc(sizeof(double) * (size_t)kb.cells);
    kb.b = af_alloc(sizeof(double) * (size_t)kb.cells);
    kb.c = af_alloc(sizeof(double) * (size_t)kb.cells);
    for (int v = 0; v < NV; ++v) {
        t[v] = calloc((size_t)b->samples, sizeof(double));
    }
    for (int v = 0; v < NV; ++v) {
        AF_REQUIRE_GOTO(t[v] != NULL, AF_ERR_NOMEM, rc, agreed);
    }
    AF_REQUIRE_GOTO(kb.xchg && kb.a && kb.b && kb.c, AF_ERR_NOMEM, rc, agreed);
    AF_CHECK_GOTO(run_grid(b, &kb), rc, agreed);
    for (int s = 0; s < kb.slots; ++s) {
        af_kernels_set_block(kb.k, s, s);
        kb.k->commit[s] = 1;
        af_initial_cells(&cfg, (int64_t)s * T, T, kb.a);
        AF_CHECK_GOTO(kb.k->ops->write_slot(kb.k, s, kb.a), rc, agreed);
        af_kernels_set_block(kb.fused, s, s);
        kb.fused->commit[s] = 1;
        AF_CHECK_GOTO(kb.fused->ops->write_slot(kb.fused, s, kb.a), rc, agreed);
    }
    for (int64_t i = 0; i < kb.cells; ++i) {
        kb.b[i] = 1.0 + (double)(i % 1000) * 1e-3;
        kb.c[i] = 2.0 - (double)(i % 777) * 1e-3;
    }
    AF_CHECK_GOTO(kb.k->ops->pack(kb.k, kb.xchg), rc, agreed);
agreed:
    AF_CHECK_GOTO(af_bench_agree(b, rc), rc, out);
    const int total = b->warmup + b->samples;
    for (int it = 0; it < total; ++it) {
        for (int j = 0; j < NV; ++j) {
            int v = (it + j) % NV; /* rotate the order: no variant always runs first */
            AF_CHECK_GOTO(b->fab->ops->barrier(b->fab), rc, out);
            double t0 = af_now_us();
            af_result_t vrc = run_variant(&kb, v);
            double dt = af_now_us() - t0;
            AF_CHECK_GOTO(af_bench_max(b, &dt), rc, out);
            /* Past the timing: a variant that failed on one rank stops every rank before the
             * next barrier. */
            AF_CHECK_GOTO(af_bench_agree(b, vrc), rc, out);
            if (it >= b->warmup) {
                /* Aggregate bandwidth of all ranks, from the slowest rank's time: the run's grid
                 * counts the cells it computes (its blocks masked, every slot unmasked; the
                 * default scenario's shards are alike on every rank). */
                double cells = v == V_RUN_MASKED || v == V_RUN_POOLED ? (double)kb.run_occ_cells
                               : v == V_RUN_UNMASKED                  ? (double)kb.run_all_cells
                                                                      : (double)kb.cells;
                t[v][it - b->warmup] = VBYTES[v] * cells * b->world.size / (dt * 1e-6) / 1e9;
            }
        }
        char where[64];
        snprintf(where, sizeof where, "kernel: %s %d/%d", it < b->warmup ? "warm-up" : "sample",
                 it < b->warmup ? it + 1 : it - b->warmup + 1,
                 it < b->warmup ? b->warmup : b->samples);
        af_bench_progress(b, where, it + 1, total);
    }
    for (int v = 0; v < NV; ++v) {
        AF_CHECK_GOTO(af_bench_add(b, VNAME[v], "GB/s", t[v], b->samples), rc, out);
    }
    if (b->world.rank == 0) {
        af_stats_t st[NV];
        for (int v = 0; v < NV; ++v) {
            st[v] = af_stats_of(t[v], b->samples);
        }
        af_bench_ratio(b, "masked / triad bandwidth (p50)", st[V_MASKED].p50 / st[V_TRIAD].p50, 1,
                       0.8, 1);
        af_bench_ratio(b, "masked / unmasked bandwidth (p50)",
                       st[V_MASKED].p50 / st[V_UNMASKED].p50, 1, 0.97, 1);
        af_bench_ratio(b, "masked / copy bandwidth (p50)", st[V_MASKED].p50 / st[V_COPY].p50, 0, 0,
                       1);
        af_bench_ratio(b, "fused one pass / two passes (p50)", st[V_FUSED].p50 / st[V_MASKED].p50,
                       0, 0, 1);
        af_bench_ratio(b, "run grid: masked / triad bandwidth (p50)",
                       st[V_RUN_MASKED].p50 / st[V_TRIAD].p50, 0, 0, 1);
        af_bench_ratio(b, "run grid pooled: masked / triad bandwidth (p50)",
                       st[V_RUN_POOLED].p50 / st[V_TRIAD].p50, 0, 0, 1);
        af_bench_ratio(b, "run grid: masked / unmasked step time (p50)",
                       (st[V_RUN_UNMASKED].p50 * (double)kb.run_occ_cells) /
                           (st[V_RUN_MASKED].p50 * (double)kb.run_all_cells),
                       0, 0, 0);
        af_bench_note(b,
                      "%d ranks x %.0f MiB per array (%d slots of %d cells; last-level cache "
                      "%.0f MiB, %d ranks on this node: arrays %.1fx it); bytes counted as "
                      "STREAM does; kernel: %s",
                      b->world.size, (double)bytes / 1048576.0, kb.slots, T,
                      (double)llc / 1048576.0, local, (double)bytes * local / (double)llc,
                      kb.k->path);
        af_bench_note(b,
                      "run grid: the default scenario's shard on this rank, %lld of %lld cells "
                      "occupied (%.1f%%), cache-resident; masked counts its blocks' cells, "
                      "unmasked every slot's; pooled: its blocks in the run's pool of buffers",
                      (long long)kb.run_occ_cells, (long long)kb.run_all_cells,
                      100.0 * (double)kb.run_occ_cells / (double)kb.run_all_cells);
    }
    validate(b, &kb, &cfg);
out:
    for (int v = 0; v < NV; ++v) {
        free(t[v]);
    }
    af_kernels_destroy(&kb.k);
    af_kernels_destroy(&kb.fused);
    af_kernels_destroy(&kb.run_k);
    af_kernels_destroy(&kb.run_kp);
    af_free(kb.run_xchg);
    af_free(kb.xchg);
    af_free(kb.a);
    af_free(kb.b);
    af_free(kb.c);
    return rc;
}

const af_bench_def_t af_bench_kernel = {
    "kernel",
    "masked kernel vs unmasked vs STREAM copy and triad (GB/s, ratios); with "
    "workload.kind=attention, masked attention vs the multiply-add peak (GFLOP/s)",
    bench_kernel};
