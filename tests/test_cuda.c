/* GPU tests (label gpu): the CUDA compute backend against the CPU reference backend, bit for
 * bit, and the NCCL fabric. SKIP (exit 77) where no GPU is visible or the build has no CUDA.
 *
 *   test_cuda          the kernels: the same shard in both backends (blocks in scrambled slots,
 *                      empty, FADING, DEAD and SHADOW slots), 200 steps compared each step
 *                      (exchange vector, result counters) and at the end (every slot's state);
 *                      masked vs unmasked; poison, copy, refresh, read/write of the next buffer;
 *                      the attention workload's step (vector and scalar CPU paths, injection)
 *   test_cuda nccl     under mpiexec -n 1: the NCCL fabric on GPU 0 (exact max of special bit
 *                      patterns, sum, bcast, gather, gatherv, exchange to self, ordering after
 *                      asynchronous kernels, refusal of host buffers)
 *   test_cuda shared   under mpiexec -n 2 on one GPU: both ranks must refuse with AF_ERR_USAGE
 *                      and the "share GPU" message, none may hang
 *   test_cuda fixtures the lockstep fixtures on the CPU backend alone (label unit, no GPU, in
 *                      CI): what each fixture must exercise for the comparison to mean
 *                      something (corruptions injected, results fenced, NaNs computed in the
 *                      attention buffers that the NaN rule of kernels.h then compares), so a
 *                      fixture that stops exercising it fails where CI sees it, not on a GPU */
#include "fabric/fabric.h"
#include "kernels/kernels.h"
#include "sim/io/backend.h"
#include "sim/fleet/aging.h"
#include "sim/io/config.h"
#include "sim/oracle/reference.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SKIP_CODE 77

static af_config_t cfg;
/* 1 in `test_cuda fixtures`: the pair holds the CPU backend alone (gpu NULL). */
static int cpu_only;

/* B blocks of T cells, dt at 80% of the diffusion limit (as tests/test_kernels.c). */
static void make_config(int blocks, int block_len)
{
    char b[64];
    char t[64];
    char dt[64];
    double n = (double)blocks * (double)block_len;
    snprintf(b, sizeof b, "scenario.blocks=%d", blocks);
    snprintf(t, sizeof t, "scenario.block_len=%d", block_len);
    snprintf(dt, sizeof dt, "workload.dt=%.17g", 0.4 / (n * n) / 0.05);
    const char *sets[] = {b,
                          t,
                          dt,
                          "scenario.devices=1",
                          "workload.nu=0.05",
                          "workload.offset=0.5",
                          "workload.amplitude=1.0"};
    char err[512];
    af_result_t rc = af_config_load(&cfg, NULL, sets, 7, err, sizeof err);
    if (rc != AF_OK) {
        print_message("%s\n", err);
    }
    assert_int_equal(rc, AF_OK);
}

static af_shard_desc_t shard_desc(int n_slots, uint64_t seed)
{
    af_shard_desc_t d;
    memset(&d, 0, sizeof d);
    d.n_slots = n_slots;
    d.block_len = (int)cfg.block_len;
    d.blocks = (int)cfg.blocks;
    d.coeffs = af_scheme_coeffs(&cfg);
    d.seed = seed;
    d.mix = af_corrupt_mix(&cfg);
    d.abft = 1; /* the mass balance's verdicts are compared too */
    d.cuda_device = 0;
    return d;
}

/* The CPU and the CUDA shard of one problem, driven in lockstep. */
typedef struct pair {
    af_kernels_t *cpu;
    af_kernels_t *gpu;
    int n;
    int B;
    int T;
    size_t xlen;
    uint64_t *xc;  /* CPU exchange vector (host) */
    uint64_t *xg;  /* CUDA exchange vector, copied back (host) */
    uint64_t *dxg; /* CUDA exchange vector (device) */
    double *a;     /* T host doubles */
    double *b;
} pair_t;

static void pair_create(pair_t *p, int n_slots, uint64_t seed)
{
    memset(p, 0, sizeof *p);
    af_shard_desc_t d = shard_desc(n_slots, seed);
    d.cuda_device = -1;
    assert_int_equal(af_kernels_cpu.create(&d, &p->cpu), AF_OK);
    d.cuda_device = 0;
    if (!cpu_only) {
        af_result_t rc = af_kernels_cuda->create(&d, &p->gpu);
        if (rc != AF_OK) {
            print_message("cuda create: %s\n", af_error_message());
        }
        assert_int_equal(rc, AF_OK);
        assert_ptr_equal(p->gpu->ops, af_kernels_cuda);
        assert_string_equal(p->gpu->ops->name, "cuda");
    }
    p->n = n_slots;
    p->B = (int)cfg.blocks;
    p->T = (int)cfg.block_len;
    p->xlen = af_xchg_len(p->B);
    p->xc = calloc(p->xlen, sizeof(uint64_t));
    p->xg = calloc(p->xlen, sizeof(uint64_t));
    p->a = calloc((size_t)p->T, sizeof(double));
    p->b = calloc((size_t)p->T, sizeof(double));
    assert_non_null(p->xc);
    assert_non_null(p->xg);
    assert_non_null(p->a);
    assert_non_null(p->b);
    if (!cpu_only) {
        assert_int_equal(af_cuda_alloc((void **)&p->dxg, p->xlen * sizeof(uint64_t)), AF_OK);
    }
}

static void pair_destroy(pair_t *p)
{
    af_kernels_destroy(&p->cpu);
    if (p->gpu != NULL) {
        af_kernels_destroy(&p->gpu);
        assert_null(p->gpu);
        af_cuda_free(p->dxg);
    }
    free(p->xc);
    free(p->xg);
    free(p->a);
    free(p->b);
}

/* Sets a slot's control values in both backends (uploaded by pair_upload). */
static void pair_set(pair_t *p, int s, int32_t block, uint8_t mode, double prob)
{
    af_kernels_t *ks[2] = {p->cpu, p->gpu};
    for (int i = 0; i < 2 && ks[i] != NULL; ++i) {
        af_kernels_set_block(ks[i], s, block);
        ks[i]->slot_mode[s] = mode;
        ks[i]->slot_p[s] = prob;
        ks[i]->commit[s] = 0;
        ks[i]->select[s] = 0;
    }
}

static void pair_upload(pair_t *p)
{
    assert_int_equal(p->cpu->ops->upload_control(p->cpu), AF_OK);
    if (p->gpu != NULL) {
        assert_int_equal(p->gpu->ops->upload_control(p->gpu), AF_OK);
    }
}

static void pair_write(pair_t *p, int s, int block)
{
    af_initial_cells(&cfg, (int64_t)block * p->T, p->T, p->a);
    assert_int_equal(p->cpu->ops->write_slot(p->cpu, s, p->a), AF_OK);
    if (p->gpu != NULL) {
        assert_int_equal(p->gpu->ops->write_slot(p->gpu, s, p->a), AF_OK);
    }
}

static int is_nan_bits(uint64_t u)
{
    return (u & 0x7ff0000000000000ULL) == 0x7ff0000000000000ULL && (u & 0x000fffffffffffffULL) != 0;
}

/* Two exchange vectors, word for word. The diagnostic words may hold a NaN only when finite
 * values overflowed (inf - inf); a GPU's NaN carries no payload, so there two NaNs count as
 * equal. Edge cells, status and flag words must match exactly. */
static void compare_xchg(const pair_t *p, int step, const uint64_t *xc, const uint64_t *xg)
{
    for (size_t i = 0; i < p->xlen; ++i) {
        if (xc[i] == xg[i]) {
            continue;
        }
        int diag = i >= 2 * (size_t)p->B && i < 4 * (size_t)p->B;
        if (diag && is_nan_bits(xc[i]) && is_nan_bits(xg[i])) {
            continue;
        }
        fail_msg("step %d: exchange word %zu of %zu differs: cpu %016llx cuda %016llx", step, i,
                 p->xlen, (unsigned long long)xc[i], (unsigned long long)xg[i]);
    }
}

/* Packs both, compares the exchange vectors, and leaves the CPU's in the device vector (one
 * rank: the combined vector is the packed one). */
static void pair_pack(pair_t *p, int step)
{
    assert_int_equal(p->cpu->ops->pack(p->cpu, p->xc), AF_OK);
    if (p->gpu == NULL) {
        return;
    }
    assert_int_equal(p->gpu->ops->pack(p->gpu, p->dxg), AF_OK);
    assert_int_equal(af_cuda_copy_to_host(p->xg, p->dxg, p->xlen * sizeof(uint64_t)), AF_OK);
    compare_xchg(p, step, p->xc, p->xg);
    assert_int_equal(af_cuda_copy_to_device(p->dxg, p->xc, p->xlen * sizeof(uint64_t)), AF_OK);
}

static void pair_compute(pair_t *p, int step, int flags)
{
    assert_int_equal(p->cpu->ops->compute(p->cpu, (uint64_t)step, p->xc, flags), AF_OK);
    if (p->gpu == NULL) {
        assert_int_equal(p->cpu->ops->download_results(p->cpu), AF_OK);
        return;
    }
    af_result_t rc = p->gpu->ops->compute(p->gpu, (uint64_t)step, p->dxg, flags);
    if (rc != AF_OK) {
        print_message("cuda compute: %s\n", af_error_message());
    }
    assert_int_equal(rc, AF_OK);
    assert_int_equal(p->cpu->ops->download_results(p->cpu), AF_OK);
    assert_int_equal(p->gpu->ops->download_results(p->gpu), AF_OK);
    for (int s = 0; s < p->n; ++s) {
        if (p->cpu->nonfinite[s] != p->gpu->nonfinite[s] ||
            p->cpu->injected[s] != p->gpu->injected[s] ||
            p->cpu->harmful[s] != p->gpu->harmful[s] || p->cpu->abft[s] != p->gpu->abft[s]) {
            fail_msg("step %d slot %d: cpu nonfinite/injected/harmful/abft %d/%d/%d/%d, cuda "
                     "%d/%d/%d/%d",
                     step, s, p->cpu->nonfinite[s], p->cpu->injected[s], p->cpu->harmful[s],
                     p->cpu->abft[s], p->gpu->nonfinite[s], p->gpu->injected[s], p->gpu->harmful[s],
                     p->gpu->abft[s]);
        }
    }
}

/* Every slot's committed buffer, bit for bit. */
static void pair_compare_state(pair_t *p, int step)
{
    for (int s = 0; s < p->n && p->gpu != NULL; ++s) {
        assert_int_equal(p->cpu->ops->read_slot(p->cpu, s, p->a), AF_OK);
        assert_int_equal(p->gpu->ops->read_slot(p->gpu, s, p->b), AF_OK);
        if (memcmp(p->a, p->b, sizeof(double) * (size_t)p->T) != 0) {
            for (int i = 0; i < p->T; ++i) {
                if (af_bits(p->a[i]) != af_bits(p->b[i])) {
                    fail_msg("step %d slot %d cell %d: cpu %.17g (%016llx) cuda %.17g (%016llx)",
                             step, s, i, p->a[i], (unsigned long long)af_bits(p->a[i]), p->b[i],
                             (unsigned long long)af_bits(p->b[i]));
                }
            }
        }
    }
}

/* A deterministic scramble: block b sits in slot perm(b); the other slots are empty. */
static int slot_of(int b, int n_slots)
{
    return (int)(((int64_t)b * 7 + 3) % n_slots);
}

/* The lockstep run for one shape. Slot roles: scrambled blocks; every 5th occupied slot
 * FADING at p = 0.02 (0.3 for blocks under 8 cells: at one cell a block, 0.02 makes about 5
 * corruptions in 200 steps, too few for a non-finite one to be fenced); block 1's slot DEAD
 * (poisoned; its neighbours read zero edges, the same in both); SHADOW twins in spare slots; every
 * 7th step a retry round over the fenced slots (AF_COMPUTE_SELECTED). */
static void run_lockstep(int blocks, int block_len, int steps)
{
    make_config(blocks, block_len < 3 ? 3 : block_len);
    cfg.block_len = block_len; /* the backends take T = 1, the scenario keys do not */
    const int n = blocks + 13; /* coprime with 7 for these shapes */
    pair_t p;
    pair_create(&p, n, 20261129u + (uint64_t)block_len);
    for (int s = 0; s < n; ++s) {
        pair_set(&p, s, -1, AF_MODE_HEALTHY, 0.0);
    }
    const double p_fading = block_len < 8 ? 0.3 : 0.02;
    for (int b = 0; b < blocks; ++b) {
        int s = slot_of(b, n);
        int fading = b % 5 == 4;
        pair_set(&p, s, b, fading ? AF_MODE_FADING : AF_MODE_HEALTHY, fading ? p_fading : 0.0);
        pair_write(&p, s, b);
    }
    int dead = slot_of(1, n);
    p.cpu->slot_mode[dead] = AF_MODE_DEAD;
    assert_int_equal(p.cpu->ops->poison_slot(p.cpu, dead), AF_OK);
    if (p.gpu != NULL) {
        p.gpu->slot_mode[dead] = AF_MODE_DEAD;
        assert_int_equal(p.gpu->ops->poison_slot(p.gpu, dead), AF_OK);
    }
    /* Two DMR twins in spare slots: block 2's on a healthy unit, block 4's (FADING) on a
     * FADING unit, whose injection is keyed by step ^ AF_TWIN_SALT. */
    int twins = 0;
    for (int s = 0; s < n && twins < 2; ++s) {
        if (p.cpu->slot_block[s] < 0) {
            int b = twins == 0 ? 2 : 4;
            pair_set(&p, s, b, AF_MODE_SHADOW, twins == 0 ? 0.0 : p_fading);
            pair_write(&p, s, b);
            twins++;
        }
    }
    assert_int_equal(twins, 2);
    pair_upload(&p);
    pair_compare_state(&p, 0);

    int64_t injected = 0;
    int64_t fenced = 0;
    int64_t flips = 0;
    int64_t retries = 0;
    for (int step = 1; step <= steps; ++step) {
        pair_pack(&p, step);
        pair_compute(&p, step, 0);
        if (step % 7 == 0) {
            /* A retry round over the fenced slots: the others keep results and counters. */
            int any = 0;
            for (int s = 0; s < n; ++s) {
                uint8_t sel = p.cpu->nonfinite[s] > 0;
                p.cpu->select[s] = sel;
                if (p.gpu != NULL) {
                    p.gpu->select[s] = sel;
                }
                any |= sel;
            }
            if (any) {
                pair_upload(&p);
                pair_compute(&p, step, AF_COMPUTE_SELECTED);
                retries++;
            }
        }
        for (int s = 0; s < n; ++s) {
            int live = p.cpu->slot_block[s] >= 0 && p.cpu->slot_mode[s] != AF_MODE_DEAD;
            uint8_t commit = (uint8_t)(live && p.cpu->nonfinite[s] == 0);
            p.cpu->commit[s] = commit;
            p.cpu->select[s] = 0;
            if (p.gpu != NULL) {
                p.gpu->commit[s] = commit;
                p.gpu->select[s] = 0;
            }
            injected += p.cpu->injected[s];
            flips += p.cpu->harmful[s];
            fenced += live && !commit;
        }
        pair_upload(&p);
        assert_int_equal(p.cpu->ops->commit(p.cpu), AF_OK);
        if (p.gpu != NULL) {
            assert_int_equal(p.gpu->ops->commit(p.gpu), AF_OK);
        }
        if (step % 25 == 0) {
            pair_compare_state(&p, step);
        }
    }
    pair_pack(&p, steps + 1);
    pair_compare_state(&p, steps);
    print_message("  B=%d T=%d: %d steps, %lld injected (%lld harmful), %lld fenced, %lld "
                  "retry rounds%s\n",
                  blocks, block_len, steps, (long long)injected, (long long)flips,
                  (long long)fenced, (long long)retries, cpu_only ? "" : ": bitwise equal");
    assert_true(injected > 0);
    assert_true(fenced > 0);
    pair_destroy(&p);
}

static void test_lockstep_t100(void **state)
{
    (void)state;
    run_lockstep(24, 100, 200); /* T not a multiple of 32: ragged last row */
}

static void test_lockstep_t256(void **state)
{
    (void)state;
    run_lockstep(16, 256, 200); /* several full unrolled rows per lane */
}

static void test_lockstep_small(void **state)
{
    (void)state;
    run_lockstep(9, 33, 200); /* one cell in the second row */
    run_lockstep(12, 1, 200); /* one cell per block: both neighbours from the exchange */
}

/* The step graph (graph_prepare, graph_run) against the CPU backend's graph_run, in lockstep,
 * through failures that change only values in device memory: FADING slots whose probability
 * rises, units that die (poisoned slots), blocks moved to empty slots. Every step compares the
 * containment decisions, the counters and the exchange (flag word included); the state every
 * 20 steps. The graph is instantiated once and launched every step. `reduce` (the nccl fabric
 * at one rank, or NULL) runs the all-reduce inside the graph. */
static void run_graph_lockstep(af_fabric_t *reduce, int steps)
{
    make_config(40, 100);
    const int n = 40 + 13;
    pair_t p;
    pair_create(&p, n, 20261130u);
    for (int s = 0; s < n; ++s) {
        pair_set(&p, s, -1, AF_MODE_HEALTHY, 0.0);
    }
    for (int b = 0; b < 40; ++b) {
        int s = slot_of(b, n);
        int fading = b % 5 == 4;
        pair_set(&p, s, b, fading ? AF_MODE_FADING : AF_MODE_HEALTHY, fading ? 0.01 : 0.0);
        pair_write(&p, s, b);
        p.cpu->commit[s] = p.gpu->commit[s] = 1; /* the initial state is committed */
    }
    pair_upload(&p);
    pair_pack(&p, 0);
    uint64_t *xc_out = calloc(p.xlen, sizeof(uint64_t));
    uint64_t *xg_out = calloc(p.xlen, sizeof(uint64_t));
    uint64_t *dxg_out = NULL;
    assert_non_null(xc_out);
    assert_non_null(xg_out);
    assert_int_equal(af_cuda_alloc((void **)&dxg_out, p.xlen * sizeof(uint64_t)), AF_OK);
    af_graph_io_t gc = {p.xc, xc_out, p.xlen, NULL, xc_out};
    af_graph_reduce_t hook;
    af_graph_io_t gg = {p.dxg, dxg_out, p.xlen, af_graph_reduce_init(&hook, reduce), xg_out};
    assert_int_equal(p.cpu->ops->graph_prepare(p.cpu, &gc), AF_OK);
    af_result_t rc = p.gpu->ops->graph_prepare(p.gpu, &gg);
    if (rc != AF_OK) {
        print_message("cuda graph_prepare: %s\n", af_error_message());
    }
    assert_int_equal(rc, AF_OK);
    assert_int_equal(p.gpu->graph_instantiations, 1);
    assert_int_equal(p.cpu->graph_instantiations, 0);
    /* A second prepare is refused: one instantiation per run. */
    assert_int_equal(p.gpu->ops->graph_prepare(p.gpu, &gg), AF_ERR_INTERNAL);

    int64_t injected = 0;
    int64_t fenced = 0;
    int moved = 0;
    int died = 0;
    for (int step = 1; step <= steps; ++step) {
        if (step % 15 == 0) {
            /* A failure: a block moves to an empty slot, a FADING unit's slot dies (its block
             * moves too), and the FADING probabilities rise. Values only. */
            int b = (step / 15) % 40;
            int from = -1;
            int to = -1;
            for (int s = 0; s < n; ++s) {
                from = p.cpu->slot_block[s] == b ? s : from;
                to = to < 0 && p.cpu->slot_block[s] < 0 && p.cpu->slot_mode[s] != AF_MODE_DEAD ? s
                                                                                               : to;
            }
            if (from >= 0 && to >= 0) {
                assert_int_equal(p.cpu->ops->copy_slot(p.cpu, from, to), AF_OK);
                assert_int_equal(p.gpu->ops->copy_slot(p.gpu, from, to), AF_OK);
                uint8_t mode = p.cpu->slot_mode[from];
                double prob = p.cpu->slot_p[from];
                pair_set(&p, to, b, mode, prob);
                if (mode == AF_MODE_FADING) {
                    /* the unit died: its slot is lost */
                    pair_set(&p, from, -1, AF_MODE_DEAD, 0.0);
                    assert_int_equal(p.cpu->ops->poison_slot(p.cpu, from), AF_OK);
                    assert_int_equal(p.gpu->ops->poison_slot(p.gpu, from), AF_OK);
                    died++;
                } else {
                    pair_set(&p, from, -1, AF_MODE_HEALTHY, 0.0);
                }
                moved++;
            }
            for (int s = 0; s < n; ++s) {
                if (p.cpu->slot_mode[s] == AF_MODE_FADING) {
                    p.cpu->slot_p[s] = p.gpu->slot_p[s] = p.cpu->slot_p[s] * 1.5;
                }
            }
            pair_upload(&p);
        }
        uint64_t flags[AF_XCHG_FLAGS] = {(uint64_t)(step == steps)};
        assert_int_equal(p.cpu->ops->graph_run(p.cpu, &gc, (uint64_t)step, flags), AF_OK);
        rc = p.gpu->ops->graph_run(p.gpu, &gg, (uint64_t)step, flags);
        if (rc != AF_OK) {
            print_message("cuda graph_run: %s\n", af_error_message());
        }
        assert_int_equal(rc, AF_OK);
        for (int s = 0; s < n; ++s) {
            if (p.cpu->commit[s] != p.gpu->commit[s] ||
                p.cpu->nonfinite[s] != p.gpu->nonfinite[s] ||
                p.cpu->injected[s] != p.gpu->injected[s]) {
                fail_msg("step %d slot %d: cpu commit/nonfinite/injected %d/%d/%d, cuda %d/%d/%d",
                         step, s, p.cpu->commit[s], p.cpu->nonfinite[s], p.cpu->injected[s],
                         p.gpu->commit[s], p.gpu->nonfinite[s], p.gpu->injected[s]);
            }
            int live = p.cpu->slot_block[s] >= 0 && (p.cpu->slot_mode[s] == AF_MODE_HEALTHY ||
                                                     p.cpu->slot_mode[s] == AF_MODE_FADING);
            fenced += live && !p.cpu->commit[s];
            injected += p.cpu->injected[s];
        }
        compare_xchg(&p, step, xc_out, xg_out);
        assert_true(xg_out[5 * (size_t)p.B + AF_XCHG_STOP] == (uint64_t)(step == steps));
        /* The next step reads this one's exchange, at the fixed addresses the graph holds. */
        memcpy(p.xc, xc_out, p.xlen * sizeof(uint64_t));
        assert_int_equal(af_cuda_copy_on_device(p.dxg, dxg_out, p.xlen * sizeof(uint64_t)), AF_OK);
        if (step % 20 == 0) {
            pair_compare_state(&p, step);
        }
    }
    pair_compare_state(&p, steps);
    assert_int_equal(p.gpu->graph_instantiations, 1);
    assert_int_equal(p.gpu->graph_launches, steps);
    assert_int_equal(p.cpu->graph_launches, steps);
    print_message("  step graph%s: %d steps, %d moves, %d deaths, %lld injected, %lld fenced: "
                  "1 instantiation, bitwise equal\n",
                  reduce != NULL ? " (nccl all-reduce inside)" : "", steps, moved, died,
                  (long long)injected, (long long)fenced);
    assert_true(injected > 0);
    assert_true(fenced > 0);
    assert_true(died > 0);
    af_cuda_free(dxg_out);
    free(xc_out);
    free(xg_out);
    pair_destroy(&p);
}

static void test_graph_lockstep(void **state)
{
    (void)state;
    run_graph_lockstep(NULL, 150);
}

/* The benchmark's unmasked kernel computes the occupied slots exactly as the masked one, and
 * every other slot as the CPU's unmasked variant does (block 0's halo). */
static void test_masked_vs_unmasked(void **state)
{
    (void)state;
    make_config(32, 128);
    const int n = 48;
    pair_t p;
    pair_create(&p, n, 7);
    af_kernels_t *masked = NULL;
    af_shard_desc_t d = shard_desc(n, 7);
    assert_int_equal(af_kernels_cuda->create(&d, &masked), AF_OK);
    for (int s = 0; s < n; ++s) {
        pair_set(&p, s, -1, AF_MODE_HEALTHY, 0.0);
        af_kernels_set_block(masked, s, -1);
    }
    for (int b = 0; b < 32; ++b) {
        int s = slot_of(b, n);
        pair_set(&p, s, b, AF_MODE_HEALTHY, 0.0);
        af_kernels_set_block(masked, s, b);
        pair_write(&p, s, b);
        assert_int_equal(masked->ops->write_slot(masked, s, p.a), AF_OK);
    }
    /* Empty slots hold recognisable data too, so the unmasked variant has something to do. */
    for (int s = 0; s < n; ++s) {
        if (p.cpu->slot_block[s] < 0) {
            for (int i = 0; i < p.T; ++i) {
                p.a[i] = 0.25 + 1e-3 * (double)(i + s);
            }
            assert_int_equal(p.cpu->ops->write_slot(p.cpu, s, p.a), AF_OK);
            assert_int_equal(p.gpu->ops->write_slot(p.gpu, s, p.a), AF_OK);
            assert_int_equal(masked->ops->write_slot(masked, s, p.a), AF_OK);
        }
    }
    pair_upload(&p);
    assert_int_equal(masked->ops->upload_control(masked), AF_OK);
    pair_pack(&p, 1);
    /* p (cpu and gpu) run unmasked; `masked` runs the masked kernel on the same input. */
    pair_compute(&p, 1, AF_COMPUTE_UNMASKED);
    assert_int_equal(masked->ops->compute(masked, 1, p.dxg, 0), AF_OK);
    assert_int_equal(masked->ops->download_results(masked), AF_OK);
    for (int s = 0; s < n; ++s) {
        assert_int_equal(p.gpu->nonfinite[s], 0);
        assert_int_equal(masked->nonfinite[s], 0);
        /* commit[] is 0 on an empty slot (kernels.h: the caller's side of commit()). */
        uint8_t occupied = p.cpu->slot_block[s] >= 0;
        p.cpu->commit[s] = occupied;
        p.gpu->commit[s] = occupied;
        masked->commit[s] = occupied;
    }
    pair_upload(&p);
    assert_int_equal(masked->ops->upload_control(masked), AF_OK);
    assert_int_equal(p.cpu->ops->commit(p.cpu), AF_OK);
    assert_int_equal(p.gpu->ops->commit(p.gpu), AF_OK);
    assert_int_equal(masked->ops->commit(masked), AF_OK);
    pair_compare_state(&p, 1); /* committed: unmasked cuda == unmasked cpu on every slot */
    double *m = calloc((size_t)p.T, sizeof(double));
    assert_non_null(m);
    int occupied = 0;
    for (int s = 0; s < n; ++s) {
        assert_int_equal(p.gpu->ops->read_slot(p.gpu, s, p.b), AF_OK);
        assert_int_equal(masked->ops->read_slot(masked, s, m), AF_OK);
        if (p.cpu->slot_block[s] >= 0) {
            assert_memory_equal(m, p.b, sizeof(double) * (size_t)p.T);
            occupied++;
        } else {
            /* Masked out: the committed buffer is still what was written. Unmasked, both
             * backends computed the empty slot too (every slot with memory behind it, with
             * block 0's read-set), into the buffer commit() left uncommitted: the same bits. */
            assert_true(m[0] == 0.25 + 1e-3 * (double)s);
            assert_memory_equal(m, p.b, sizeof(double) * (size_t)p.T);
            assert_int_equal(p.cpu->ops->read_next(p.cpu, s, p.a), AF_OK);
            assert_int_equal(p.gpu->ops->read_next(p.gpu, s, p.b), AF_OK);
            assert_memory_equal(p.a, p.b, sizeof(double) * (size_t)p.T);
            assert_true(memcmp(m, p.b, sizeof(double) * (size_t)p.T) != 0);
        }
    }
    assert_int_equal(occupied, 32);
    free(m);
    af_kernels_destroy(&masked);
    pair_destroy(&p);
}

/* Poison, copy, refresh after an outside write (what a cross-rank move does), and the next
 * buffer's read and write (DMR), each compared with the CPU backend. */
static void test_slot_ops(void **state)
{
    (void)state;
    make_config(8, 96);
    const int n = 12;
    pair_t p;
    pair_create(&p, n, 99);
    for (int s = 0; s < n; ++s) {
        pair_set(&p, s, -1, AF_MODE_HEALTHY, 0.0);
    }
    for (int b = 0; b < 8; ++b) {
        pair_set(&p, b, b, AF_MODE_HEALTHY, 0.0);
        pair_write(&p, b, b);
    }
    pair_upload(&p);
    pair_pack(&p, 0);

    /* Poison: both buffers hold the NaN pattern, in both backends. */
    assert_int_equal(p.cpu->ops->poison_slot(p.cpu, 9), AF_OK);
    assert_int_equal(p.gpu->ops->poison_slot(p.gpu, 9), AF_OK);
    pair_compare_state(&p, 0);
    assert_int_equal(p.gpu->ops->read_slot(p.gpu, 9, p.b), AF_OK);
    assert_true(af_bits(p.b[0]) == 0x7ff8dead0000deadULL);
    assert_true(af_bits(p.b[p.T - 1]) == 0x7ff8dead0000deadULL);
    assert_int_equal(p.gpu->ops->read_next(p.gpu, 9, p.b), AF_OK);
    assert_true(af_bits(p.b[p.T / 2]) == 0x7ff8dead0000deadULL);

    /* Copy block 3 into slot 10 and move it there: the exchange must not change. */
    assert_int_equal(p.cpu->ops->copy_slot(p.cpu, 3, 10), AF_OK);
    assert_int_equal(p.gpu->ops->copy_slot(p.gpu, 3, 10), AF_OK);
    pair_set(&p, 3, -1, AF_MODE_HEALTHY, 0.0);
    pair_set(&p, 10, 3, AF_MODE_HEALTHY, 0.0);
    pair_upload(&p);
    uint64_t *before = calloc(p.xlen, sizeof(uint64_t));
    assert_non_null(before);
    memcpy(before, p.xc, p.xlen * sizeof(uint64_t));
    pair_pack(&p, 1);
    assert_memory_equal(before, p.xc, p.xlen * sizeof(uint64_t));
    pair_compare_state(&p, 1);

    /* An outside write into the committed buffer (slot_data), then refresh_slot. */
    for (int i = 0; i < p.T; ++i) {
        p.a[i] = sin(0.1 * (double)i) * 1e-3 + (double)i;
    }
    double *dev = p.gpu->ops->slot_data(p.gpu, 5);
    assert_non_null(dev);
    assert_int_equal(af_cuda_copy_to_device(dev, p.a, sizeof(double) * (size_t)p.T), AF_OK);
    assert_int_equal(p.gpu->ops->refresh_slot(p.gpu, 5), AF_OK);
    memcpy(p.cpu->ops->slot_data(p.cpu, 5), p.a, sizeof(double) * (size_t)p.T);
    assert_int_equal(p.cpu->ops->refresh_slot(p.cpu, 5), AF_OK);
    pair_pack(&p, 2); /* the refreshed mass and energy agree bit for bit */
    pair_compare_state(&p, 2);

    /* DMR: read the computed buffer, overwrite it, commit it. */
    pair_compute(&p, 3, 0);
    for (int s = 0; s < n; ++s) {
        assert_int_equal(p.cpu->ops->read_next(p.cpu, s, p.a), AF_OK);
        assert_int_equal(p.gpu->ops->read_next(p.gpu, s, p.b), AF_OK);
        if (p.cpu->slot_block[s] >= 0) {
            assert_memory_equal(p.a, p.b, sizeof(double) * (size_t)p.T);
        }
    }
    double *want = calloc((size_t)p.T, sizeof(double));
    assert_non_null(want);
    for (int i = 0; i < p.T; ++i) {
        want[i] = 1.0 / (double)(i + 1);
    }
    assert_int_equal(p.cpu->ops->write_next(p.cpu, 6, want), AF_OK);
    assert_int_equal(p.gpu->ops->write_next(p.gpu, 6, want), AF_OK);
    for (int s = 0; s < n; ++s) {
        uint8_t c = p.cpu->slot_block[s] >= 0;
        p.cpu->commit[s] = c;
        p.gpu->commit[s] = c;
    }
    pair_upload(&p);
    assert_int_equal(p.cpu->ops->commit(p.cpu), AF_OK);
    assert_int_equal(p.gpu->ops->commit(p.gpu), AF_OK);
    assert_int_equal(p.gpu->ops->sync(p.gpu), AF_OK);
    pair_pack(&p, 4);
    pair_compare_state(&p, 4);
    assert_int_equal(p.gpu->ops->read_slot(p.gpu, 6, p.b), AF_OK);
    assert_memory_equal(want, p.b, sizeof(double) * (size_t)p.T);
    free(want);
    free(before);
    pair_destroy(&p);
}

/* Errors are values: a bad slot index is refused with a message, not a crash. */
static void test_errors(void **state)
{
    (void)state;
    make_config(4, 32);
    af_kernels_t *k = NULL;
    af_shard_desc_t d = shard_desc(4, 1);
    assert_int_equal(af_kernels_cuda->create(&d, &k), AF_OK);
    double buf[32];
    af_error_clear();
    assert_int_equal(k->ops->read_slot(k, 4, buf), AF_ERR_INTERNAL);
    assert_non_null(strstr(af_error_message(), "outside"));
    assert_null(k->ops->slot_data(k, -1));
    af_kernels_destroy(&k);
}

/* ---- NCCL --------------------------------------------------------------------------------- */

/* The attention workload: a CPU and a CUDA shard of attention blocks (multiples of 8 tokens,
 * which the CPU takes on its vector path, and 24 x 5 and 10 x 3, which it does not), HEALTHY,
 * FADING and SHADOW slots injecting, a DEAD and an empty one, stepped together from the same
 * committed state and global word: the results and every slot's computed buffer bit for bit. */
/* What an attention lockstep fixture exercised: the corruptions injected, and the values of the
 * computed buffers that were NaN on the CPU (compared by kernels.h's NaN rule, not bit for
 * bit). */
typedef struct attn_seen {
    int64_t injected;
    int64_t nan_values;
} attn_seen_t;

static void attention_lockstep(int tokens, int dim, attn_seen_t *seen)
{
    af_wl_config_t wc;
    memset(&wc, 0, sizeof wc);
    wc.blocks = 12;
    wc.block_len = tokens;
    wc.dim = dim;
    wc.amplitude = 1.0;
    wc.seed = 5;
    af_shard_desc_t d;
    memset(&d, 0, sizeof d);
    d.n_slots = 12;
    d.block_len = tokens * dim;
    d.blocks = 12;
    d.workload = AF_WORKLOAD_ATTENTION;
    d.attn = af_workload_attention.params(&wc).attn;
    d.seed = 99;
    d.mix.nonfinite = 0.1;
    d.mix.single = 0.5;
    d.mix.mantissa = 0.8;
    d.mix.harm_rel = 1e-6;
    d.abft = 1;
    af_kernels_t *cpu = NULL;
    af_kernels_t *gpu = NULL;
    d.cuda_device = -1;
    assert_int_equal(af_kernels_cpu.create(&d, &cpu), AF_OK);
    d.cuda_device = 0;
    if (!cpu_only) {
        assert_int_equal(af_kernels_cuda->create(&d, &gpu), AF_OK);
    }
    const int n = tokens * dim;
    double *a = calloc((size_t)n, sizeof(double));
    double *b = calloc((size_t)n, sizeof(double));
    size_t xlen = af_xchg_len(12);
    uint64_t *x = calloc(xlen, sizeof(uint64_t));
    uint64_t *dx = NULL;
    if (gpu != NULL) {
        assert_int_equal(af_cuda_alloc((void **)&dx, xlen * sizeof(uint64_t)), AF_OK);
    }
    for (int s = 0; s < 12; ++s) {
        int32_t blk = s == 11 ? -1 : (s * 5) % 11; /* slot 11 empty */
        uint8_t mode = s == 3   ? AF_MODE_FADING
                       : s == 4 ? AF_MODE_SHADOW
                       : s == 5 ? AF_MODE_DEAD
                                : AF_MODE_HEALTHY;
        double prob = (s == 3 || s == 4 || s == 6) ? 0.01 : 0.0; /* slot 6: a silent unit */
        af_kernels_t *ks[2] = {cpu, gpu};
        for (int w = 0; w < 2 && ks[w] != NULL; ++w) {
            af_kernels_set_block(ks[w], s, blk);
            ks[w]->slot_mode[s] = mode;
            ks[w]->slot_p[s] = prob;
        }
        if (blk >= 0) {
            af_workload_attention.initial(&wc, (int64_t)blk * n, n, a);
            assert_int_equal(cpu->ops->write_slot(cpu, s, a), AF_OK);
            if (gpu != NULL) {
                assert_int_equal(gpu->ops->write_slot(gpu, s, a), AF_OK);
            }
        }
    }
    assert_int_equal(cpu->ops->upload_control(cpu), AF_OK);
    if (gpu != NULL) {
        assert_int_equal(gpu->ops->upload_control(gpu), AF_OK);
    }
    for (int step = 1; step <= 6; ++step) {
        x[5 * 12 + AF_XCHG_GLOBAL] = af_bits(0.0625 * (double)(step - 3));
        int flags = step == 6 ? AF_COMPUTE_UNMASKED : 0;
        assert_int_equal(cpu->ops->compute(cpu, (uint64_t)step, x, flags), AF_OK);
        assert_int_equal(cpu->ops->download_results(cpu), AF_OK);
        for (int s = 0; s < 12; ++s) {
            seen->injected += cpu->injected[s];
        }
        if (gpu != NULL) {
            assert_int_equal(af_cuda_copy_to_device(dx, x, xlen * sizeof(uint64_t)), AF_OK);
            assert_int_equal(gpu->ops->compute(gpu, (uint64_t)step, dx, flags), AF_OK);
            assert_int_equal(gpu->ops->download_results(gpu), AF_OK);
        }
        for (int s = 0; s < 12; ++s) {
            if (cpu->slot_block[s] < 0 || cpu->slot_mode[s] == AF_MODE_DEAD) {
                continue;
            }
            assert_int_equal(cpu->ops->read_next(cpu, s, a), AF_OK);
            for (int i = 0; i < n; ++i) {
                seen->nan_values += isnan(a[i]) != 0;
            }
        }
        for (int s = 0; s < 12 && gpu != NULL; ++s) {
            if (cpu->nonfinite[s] != gpu->nonfinite[s] || cpu->injected[s] != gpu->injected[s] ||
                cpu->harmful[s] != gpu->harmful[s] || cpu->abft[s] != gpu->abft[s]) {
                fail_msg("attention %dx%d step %d slot %d: cpu %d/%d/%d/%d cuda %d/%d/%d/%d",
                         tokens, dim, step, s, cpu->nonfinite[s], cpu->injected[s], cpu->harmful[s],
                         cpu->abft[s], gpu->nonfinite[s], gpu->injected[s], gpu->harmful[s],
                         gpu->abft[s]);
            }
            if (cpu->slot_block[s] < 0 || cpu->slot_mode[s] == AF_MODE_DEAD) {
                continue;
            }
            assert_int_equal(cpu->ops->read_next(cpu, s, a), AF_OK);
            assert_int_equal(gpu->ops->read_next(gpu, s, b), AF_OK);
            /* A computed buffer: two NaNs are equal whatever their sign and payload (the NaN
             * rule of kernels.h); every other value bit for bit. */
            for (int i = 0; i < n; ++i) {
                if (af_bits(a[i]) != af_bits(b[i]) && !(isnan(a[i]) && isnan(b[i]))) {
                    fail_msg("attention %dx%d step %d slot %d value %d: cpu %.17g (%016llx) cuda "
                             "%.17g (%016llx)",
                             tokens, dim, step, s, i, a[i], (unsigned long long)af_bits(a[i]), b[i],
                             (unsigned long long)af_bits(b[i]));
                }
            }
        }
        /* Commit the healthy results on both, so the next step starts from new state. */
        for (int s = 0; s < 12; ++s) {
            uint8_t c = (uint8_t)(cpu->slot_block[s] >= 0 && cpu->slot_mode[s] == AF_MODE_HEALTHY &&
                                  cpu->nonfinite[s] == 0);
            cpu->commit[s] = c;
            if (gpu != NULL) {
                gpu->commit[s] = c;
            }
        }
        assert_int_equal(cpu->ops->upload_control(cpu), AF_OK);
        assert_int_equal(cpu->ops->commit(cpu), AF_OK);
        if (gpu != NULL) {
            assert_int_equal(gpu->ops->upload_control(gpu), AF_OK);
            assert_int_equal(gpu->ops->commit(gpu), AF_OK);
        }
    }
    if (gpu != NULL) {
        af_cuda_free(dx);
    }
    free(x);
    free(a);
    free(b);
    af_kernels_destroy(&cpu);
    if (gpu != NULL) {
        af_kernels_destroy(&gpu);
    }
}

/* The attention shapes: the CPU's vector path (16 x 8, 64 x 16) and its row-by-row path. Their
 * corruptions reach the softmax weights, whose NaN and Inf the update's arithmetic turns into
 * computed NaNs: what the NaN rule is there for (test_cuda fixtures checks that some appear). */
static void test_attention_lockstep(void **state)
{
    (void)state;
    attn_seen_t seen = {0, 0};
    attention_lockstep(16, 8, &seen);
    attention_lockstep(64, 16, &seen);
    attention_lockstep(24, 5, &seen);
    attention_lockstep(10, 3, &seen);
    print_message("  attention: %lld corruptions injected, %lld computed values NaN on the cpu\n",
                  (long long)seen.injected, (long long)seen.nan_values);
    assert_true(seen.injected > 0);
    if (cpu_only) {
        assert_true(seen.nan_values > 0);
    }
}

static af_world_t world;
static af_fabric_t *fab;

static void *dev_from(const void *host, size_t bytes)
{
    void *d = NULL;
    assert_int_equal(af_cuda_alloc(&d, bytes), AF_OK);
    assert_int_equal(af_cuda_copy_to_device(d, host, bytes), AF_OK);
    return d;
}

static void test_nccl_allreduce(void **state)
{
    (void)state;
    /* The patterns a max all-reduce must carry unchanged from their owner. */
    const uint64_t pat[] = {
        0x8000000000000000ULL,                        /* -0.0 */
        0x7ff8dead0000deadULL,                        /* NaN with a payload */
        0xfff0000000000001ULL,                        /* signalling NaN, sign set */
        0x0000000000000001ULL,                        /* smallest denormal */
        0xfff0000000000000ULL,                        /* -Inf */
        0xffffffffffffffffULL, 0x3ff0000000000000ULL, /* 1.0 */
    };
    enum { N = sizeof pat / sizeof pat[0] };
    uint64_t mine[N];
    for (int i = 0; i < N; ++i) {
        mine[i] = i % fab->size == fab->rank ? pat[i] : 0;
    }
    uint64_t *d = dev_from(mine, sizeof mine);
    assert_int_equal(fab->ops->allreduce_max_u64(fab, d, N), AF_OK);
    uint64_t got[N];
    assert_int_equal(af_cuda_copy_to_host(got, d, sizeof got), AF_OK);
    assert_memory_equal(got, pat, sizeof pat);
    af_cuda_free(d);

    int64_t v[3] = {fab->rank + 1, -(int64_t)fab->rank, INT64_C(1) << 40};
    int64_t *dv = dev_from(v, sizeof v);
    assert_int_equal(fab->ops->allreduce_sum_i64(fab, dv, 3), AF_OK);
    assert_int_equal(af_cuda_copy_to_host(v, dv, sizeof v), AF_OK);
    int64_t R = fab->size;
    assert_true(v[0] == R * (R + 1) / 2);
    assert_true(v[1] == -(R * (R - 1) / 2));
    assert_true(v[2] == R * (INT64_C(1) << 40));
    af_cuda_free(dv);
    assert_int_equal(fab->ops->barrier(fab), AF_OK);
}

static void test_nccl_bcast_gather(void **state)
{
    (void)state;
    unsigned char buf[77];
    for (int i = 0; i < 77; ++i) {
        buf[i] = fab->rank == 0 ? (unsigned char)(i * 3 + 1) : 0;
    }
    unsigned char *d = dev_from(buf, sizeof buf);
    assert_int_equal(fab->ops->bcast(fab, d, sizeof buf, 0), AF_OK);
    assert_int_equal(af_cuda_copy_to_host(buf, d, sizeof buf), AF_OK);
    for (int i = 0; i < 77; ++i) {
        assert_int_equal(buf[i], (unsigned char)(i * 3 + 1));
    }
    af_cuda_free(d);

    /* gather: 24 bytes per rank, rank-major on root. */
    const int R = fab->size;
    uint64_t send[3] = {(uint64_t)fab->rank, 0x7ff8dead0000deadULL, ~(uint64_t)fab->rank};
    uint64_t *ds = dev_from(send, sizeof send);
    uint64_t *dr = NULL;
    assert_int_equal(af_cuda_alloc((void **)&dr, sizeof send * (size_t)R), AF_OK);
    assert_int_equal(fab->ops->gather(fab, ds, sizeof send, dr, 0), AF_OK);
    if (fab->rank == 0) {
        uint64_t *all = calloc((size_t)R * 3, sizeof(uint64_t));
        assert_non_null(all);
        assert_int_equal(af_cuda_copy_to_host(all, dr, sizeof send * (size_t)R), AF_OK);
        for (int r = 0; r < R; ++r) {
            assert_true(all[3 * r] == (uint64_t)r);
            assert_true(all[3 * r + 1] == 0x7ff8dead0000deadULL);
            assert_true(all[3 * r + 2] == ~(uint64_t)r);
        }
        free(all);
    }
    /* gatherv: rank r sends r+1 words (rank 0's own part too). */
    size_t *counts = calloc((size_t)R, sizeof(size_t));
    assert_non_null(counts);
    size_t total = 0;
    for (int r = 0; r < R; ++r) {
        counts[r] = (size_t)(r + 1) * sizeof(uint64_t);
        total += counts[r];
    }
    uint64_t vsend[64];
    for (int i = 0; i < 64; ++i) {
        vsend[i] = ((uint64_t)fab->rank << 32) | (uint64_t)i;
    }
    uint64_t *dvs = dev_from(vsend, sizeof vsend);
    uint64_t *dvr = NULL;
    assert_int_equal(af_cuda_alloc((void **)&dvr, total), AF_OK);
    assert_int_equal(
        fab->ops->gatherv(fab, dvs, (size_t)(fab->rank + 1) * sizeof(uint64_t), dvr, counts, 0),
        AF_OK);
    if (fab->rank == 0) {
        uint64_t *all = calloc(total / sizeof(uint64_t), sizeof(uint64_t));
        assert_non_null(all);
        assert_int_equal(af_cuda_copy_to_host(all, dvr, total), AF_OK);
        size_t at = 0;
        for (int r = 0; r < R; ++r) {
            for (int i = 0; i <= r; ++i) {
                assert_true(all[at++] == (((uint64_t)r << 32) | (uint64_t)i));
            }
        }
        free(all);
    }
    free(counts);
    af_cuda_free(ds);
    af_cuda_free(dr);
    af_cuda_free(dvs);
    af_cuda_free(dvr);
}

static void test_nccl_exchange(void **state)
{
    (void)state;
    /* Each rank sends to itself and to its right neighbour, receives from itself and its
     * left one (at one rank: both to self). */
    enum { W = 1000 };
    double *src = calloc(W, sizeof(double));
    double *got = calloc(W, sizeof(double));
    assert_non_null(src);
    assert_non_null(got);
    for (int i = 0; i < W; ++i) {
        src[i] = fab->rank * 1e6 + i + 0.5;
    }
    double *ds = dev_from(src, W * sizeof(double));
    double *dself = NULL;
    double *dleft = NULL;
    assert_int_equal(af_cuda_alloc((void **)&dself, W * sizeof(double)), AF_OK);
    assert_int_equal(af_cuda_alloc((void **)&dleft, W * sizeof(double)), AF_OK);
    const int R = fab->size;
    const int right = (fab->rank + 1) % R;
    const int left = (fab->rank + R - 1) % R;
    af_p2p_t ops[4] = {
        {.peer = fab->rank, .is_send = 0, .buf = dself, .bytes = W * sizeof(double)},
        {.peer = right, .is_send = 1, .buf = ds, .bytes = W * sizeof(double)},
        {.peer = fab->rank, .is_send = 1, .buf = ds, .bytes = W * sizeof(double)},
        {.peer = left, .is_send = 0, .buf = dleft, .bytes = W * sizeof(double)},
    };
    assert_int_equal(fab->ops->exchange(fab, ops, 4), AF_OK);
    assert_int_equal(af_cuda_copy_to_host(got, dself, W * sizeof(double)), AF_OK);
    assert_memory_equal(got, src, W * sizeof(double));
    assert_int_equal(af_cuda_copy_to_host(got, dleft, W * sizeof(double)), AF_OK);
    for (int i = 0; i < W; ++i) {
        assert_true(got[i] == left * 1e6 + i + 0.5);
    }
    af_cuda_free(ds);
    af_cuda_free(dself);
    af_cuda_free(dleft);
    free(src);
    free(got);
}

/* The fabric must wait for kernels still in flight on the backend's stream: a long compute
 * and a pack, then at once the all-reduce of the packed vector, which must equal the CPU's. */
static void test_nccl_orders_after_kernels(void **state)
{
    (void)state;
    make_config(4096, 512);
    pair_t p;
    pair_create(&p, 4096, 5);
    for (int b = 0; b < 4096; ++b) {
        pair_set(&p, b, b, AF_MODE_HEALTHY, 0.0);
        pair_write(&p, b, b);
        p.cpu->commit[b] = 1;
        p.gpu->commit[b] = 1;
    }
    pair_upload(&p);
    assert_int_equal(p.cpu->ops->pack(p.cpu, p.xc), AF_OK);
    assert_int_equal(af_cuda_copy_to_device(p.dxg, p.xc, p.xlen * sizeof(uint64_t)), AF_OK);
    for (int rep = 0; rep < 3; ++rep) {
        assert_int_equal(p.cpu->ops->compute(p.cpu, 1, p.xc, 0), AF_OK);
        assert_int_equal(p.cpu->ops->commit(p.cpu), AF_OK);
        assert_int_equal(p.cpu->ops->pack(p.cpu, p.xc), AF_OK);
        /* Nothing below synchronises before the fabric call; the repeated computes (same
         * input, same output) keep the device busy for a while. */
        for (int i = 0; i < 20; ++i) {
            assert_int_equal(p.gpu->ops->compute(p.gpu, 1, p.dxg, 0), AF_OK);
        }
        assert_int_equal(p.gpu->ops->commit(p.gpu), AF_OK);
        assert_int_equal(p.gpu->ops->pack(p.gpu, p.dxg), AF_OK);
        assert_int_equal(fab->ops->allreduce_max_u64(fab, p.dxg, p.xlen), AF_OK);
        assert_int_equal(af_cuda_copy_to_host(p.xg, p.dxg, p.xlen * sizeof(uint64_t)), AF_OK);
        if (fab->size == 1) {
            assert_memory_equal(p.xg, p.xc, p.xlen * sizeof(uint64_t));
        }
        /* Keep the CPU's step input identical (one rank: already is). */
        assert_int_equal(af_cuda_copy_to_device(p.dxg, p.xc, p.xlen * sizeof(uint64_t)), AF_OK);
    }
    pair_destroy(&p);
}

/* The step graph with the nccl all-reduce captured inside it (one rank: the identity). */
static void test_nccl_graph(void **state)
{
    (void)state;
    if (fab->size != 1) {
        skip(); /* the lockstep compares against one CPU shard */
    }
    run_graph_lockstep(fab, 60);
}

static void test_nccl_refuses_host_buffers(void **state)
{
    (void)state;
    uint64_t host[4] = {1, 2, 3, 4};
    af_error_clear();
    assert_int_equal(fab->ops->allreduce_max_u64(fab, host, 4), AF_ERR_INTERNAL);
    assert_non_null(strstr(af_error_message(), "host buffer"));
    af_error_clear();
}

static int run_nccl(int *argc, char ***argv)
{
    if (af_world_init(argc, argv, &world) != AF_OK) {
        fprintf(stderr, "test_cuda: %s\n", af_error_message());
        return 1;
    }
    int dev = world.local_rank;
    af_result_t rc = af_fabric_nccl_create(&fab, dev);
    if (rc != AF_OK) {
        fprintf(stderr, "test_cuda: rank %d: af_fabric_nccl_create: %s\n", world.rank,
                af_error_message());
        af_world_finalize();
        return 1;
    }
    assert_string_equal(fab->ops->name, "nccl");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nccl_allreduce),
        cmocka_unit_test(test_nccl_bcast_gather),
        cmocka_unit_test(test_nccl_exchange),
        cmocka_unit_test(test_nccl_orders_after_kernels),
        cmocka_unit_test(test_nccl_refuses_host_buffers),
        cmocka_unit_test(test_nccl_graph),
    };
    int failed = cmocka_run_group_tests_name("nccl", tests, NULL, NULL);
    af_fabric_destroy(&fab);
    af_world_finalize();
    return failed;
}

/* Two ranks on one GPU: every rank must get AF_ERR_USAGE with the explanation, none may hang. */
static int run_shared(int *argc, char ***argv)
{
    if (af_world_init(argc, argv, &world) != AF_OK) {
        fprintf(stderr, "test_cuda: %s\n", af_error_message());
        return 1;
    }
    af_result_t rc = af_fabric_nccl_create(&fab, 0);
    int ok = rc == AF_ERR_USAGE && fab == NULL && strstr(af_error_message(), "share GPU") != NULL &&
             strstr(af_error_message(), "one GPU per rank") != NULL;
    printf("rank %d: %s: %s -> %s\n", world.rank, af_result_str(rc), af_error_message(),
           ok ? "as expected" : "WRONG");
    af_fabric_destroy(&fab);
    af_world_finalize();
    if (world.size < 2) {
        printf("SKIP: the shared-GPU check needs two ranks\n");
        return SKIP_CODE;
    }
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "kernels";
    if (strcmp(mode, "fixtures") == 0) {
        /* No GPU needed: the CPU halves of the lockstep fixtures, with what each must exercise. */
        cpu_only = 1;
        const struct CMUnitTest fixtures[] = {
            cmocka_unit_test(test_lockstep_t100),
            cmocka_unit_test(test_lockstep_t256),
            cmocka_unit_test(test_lockstep_small),
            cmocka_unit_test(test_attention_lockstep),
        };
        return cmocka_run_group_tests_name("cuda fixtures (cpu alone)", fixtures, NULL, NULL);
    }
    if (af_kernels_cuda == NULL) {
        printf("SKIP: this agefence was built without CUDA\n");
        return SKIP_CODE;
    }
    int gpus = af_cuda_visible_devices();
    if (gpus == 0) {
        printf("SKIP: no GPU visible\n");
        return SKIP_CODE;
    }
    printf("test_cuda %s: %d GPU%s visible\n", mode, gpus, gpus == 1 ? "" : "s");
    if (strcmp(mode, "nccl") == 0) {
        return run_nccl(&argc, &argv);
    }
    if (strcmp(mode, "shared") == 0) {
        return run_shared(&argc, &argv);
    }
    if (strcmp(mode, "probe") == 0) {
        return 0; /* CUDA in the build and a GPU visible: the gpu run tests may go ahead */
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lockstep_t100),  cmocka_unit_test(test_lockstep_t256),
        cmocka_unit_test(test_lockstep_small), cmocka_unit_test(test_masked_vs_unmasked),
        cmocka_unit_test(test_slot_ops),       cmocka_unit_test(test_errors),
        cmocka_unit_test(test_graph_lockstep), cmocka_unit_test(test_attention_lockstep),
    };
    return cmocka_run_group_tests_name("cuda", tests, NULL, NULL);
}
