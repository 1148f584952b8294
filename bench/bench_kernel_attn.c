/* agefence bench kernel with workload.kind = attention: the masked attention step's
 * floating-point rate against the multiply-add peak of the same processor, measured in the same
 * run on every rank at once, the two interleaved sample by sample (their order alternating).
 *
 * The attention rate counts the workload table's flops() per block (kernels/workloads.c: the
 * multiply-adds of the scores and the weighted values that the cpu backend executes, 2 flops
 * each), over every slot of a shard whose slots all hold a block on a HEALTHY unit (the masked
 * compute over the occupied slots, as a fault-free step runs it). The peak is
 * af_cpu_muladd_peak: independent chains of acc = acc * m + c on four-double vectors, 2 flops
 * per multiply-add per lane, built as the hot loops are (no FMA). The number of slots and the
 * peak's iterations are calibrated so that a sample of either lasts a few milliseconds.
 *
 * The shape is scenario.block_len (tokens) x workload.dim (features) of -c FILE and --set;
 * without -c the bench's default is 64 tokens (workload.dim's default is 64).
 *
 * The result is checked: the masked compute's output of a few slots must equal af_attn_block
 * (the scalar host function the reference runs) on the same input and global word, bit for bit,
 * with no non-finite output; and the peak's chains must hold what the same chains computed one
 * double at a time hold. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/af_alloc.h"
#include "../common/af_rsum.h"
#include "../common/af_time.h"
#include "../kernels/kernels.h"
#include "../sim/fleet/aging.h"
#include "bench.h"

enum { V_ATTN, V_PEAK, NV };
static const char *const VNAME[NV] = {"attention_masked", "muladd_peak"};

typedef struct abench {
    af_kernels_t *k;
    uint64_t *xchg;
    const af_workload_t *wl;
    af_wl_config_t wc;
    af_wl_params_t p;
    int slots;
    int64_t cells; /* doubles per block: tokens x dim */
    double flops;  /* per block */
    double g;      /* the global word the compute reads */
    int64_t peak_iters;
    double peak_out[AF_CPU_PEAK_CHAINS * 4];
} abench_t;

/* A shard of n slots, slot s holding block s of n (the initial state), all HEALTHY, packed, with
 * the global word of those blocks in the exchange. */
static af_result_t make_shard(abench_t *a, const af_config_t *cfg, int n)
{
    af_kernels_destroy(&a->k);
    af_free(a->xchg);
    a->xchg = NULL;
    a->slots = n;
    a->wc.blocks = n;
    af_shard_desc_t desc = {.n_slots = n,
                            .block_len = (int)a->cells,
                            .blocks = n,
                            .workload = AF_WORKLOAD_ATTENTION,
                            .attn = a->p.attn,
                            .seed = 1,
                            .mix = af_corrupt_mix(cfg),
                            .cuda_device = -1,
                            .cpu_kernel = cfg->cpu_kernel};
    AF_CHECK(af_kernels_cpu.create(&desc, &a->k));
    a->xchg = af_alloc(sizeof(uint64_t) * af_xchg_len(n));
    double *buf = af_alloc(sizeof(double) * (size_t)a->cells);
    af_result_t rc = a->xchg != NULL && buf != NULL ? AF_OK : AF_ERR_NOMEM;
    for (int s = 0; rc == AF_OK && s < n; ++s) {
        af_kernels_set_block(a->k, s, s);
        a->k->slot_mode[s] = AF_MODE_HEALTHY;
        a->k->commit[s] = 1;
        a->wl->initial(&a->wc, (int64_t)s * a->cells, a->cells, buf);
        rc = a->k->ops->write_slot(a->k, s, buf);
    }
    if (rc == AF_OK) {
        rc = a->k->ops->upload_control(a->k);
    }
    if (rc == AF_OK) {
        rc = a->k->ops->pack(a->k, a->xchg);
    }
    if (rc == AF_OK) {
        /* The global word as the driver forms it: the exact sum of the blocks' masses. */
        af_rsum_t mass;
        af_rsum_clear(&mass);
        for (int b = 0; b < n; ++b) {
            af_rsum_add(&mass, af_double(a->xchg[2 * (size_t)n + (size_t)b]));
        }
        a->g = a->wl->global_word(af_rsum_value(&mass), n, a->cells);
        a->xchg[5 * (size_t)n + AF_XCHG_GLOBAL] = af_bits(a->g);
    }
    af_free(buf);
    return rc;
}

static af_result_t run_variant(abench_t *a, int v)
{
    if (v == V_ATTN) {
        return a->k->ops->compute(a->k, 1, a->xchg, 0);
    }
    af_cpu_muladd_peak(a->peak_iters, a->peak_out);
    return AF_OK;
}

/* Microseconds per call of variant v, the slowest rank's, from calls repeated for at least
 * min_us. */
static af_result_t time_per_call(af_bench_ctx_t *b, abench_t *a, int v, double min_us, double *us)
{
    /* The warm call, then every rank starts together (the agreement is the barrier): a call
     * that failed on one rank stops every rank, before and after the timed calls. */
    AF_CHECK(af_bench_agree(b, run_variant(a, v)));
    af_result_t rc = AF_OK;
    int calls = 0;
    double t0 = af_now_us();
    double dt = 0;
    do {
        rc = run_variant(a, v);
        calls++;
        dt = af_now_us() - t0;
    } while (rc == AF_OK && dt < min_us);
    double per = dt / calls;
    AF_CHECK(af_bench_max(b, &per));
    AF_CHECK(af_bench_agree(b, rc));
    *us = per;
    return AF_OK;
}

/* The masked output of a few slots against af_attn_block, and the peak's chains against the same
 * chains one double at a time. */
static void validate(af_bench_ctx_t *b, abench_t *a)
{
    size_t n = (size_t)a->cells;
    double *u = malloc(sizeof(double) * n);
    double *got = malloc(sizeof(double) * n);
    double *ref = malloc(sizeof(double) * n);
    if (!u || !got || !ref) {
        af_bench_fail(b, "out of memory for the validation arrays");
        goto out;
    }
    if (a->k->ops->compute(a->k, 1, a->xchg, 0) != AF_OK) {
        af_bench_fail(b, "the masked compute failed: %s", af_error_message());
        goto out;
    }
    const int check[3] = {0, a->slots / 2, a->slots - 1};
    for (int i = 0; i < 3; ++i) {
        int s = check[i];
        a->k->ops->read_slot(a->k, s, u);
        a->k->ops->read_next(a->k, s, got);
        int ok = 1;
        af_attn_block(u, ref, &a->p.attn, a->g, &ok);
        if (memcmp(got, ref, sizeof(double) * n) != 0) {
            size_t at = 0;
            while (at < n && memcmp(&got[at], &ref[at], sizeof(double)) == 0) {
                at++;
            }
            af_bench_fail(b,
                          "the masked attention kernel differs from af_attn_block in slot %d "
                          "(first at double %zu: %.17g vs %.17g)",
                          s, at, got[at], ref[at]);
            goto out;
        }
        if (a->k->nonfinite[s] != 0 || !ok) {
            af_bench_fail(b, "slot %d: %d non-finite outputs, softmax rows %s", s,
                          (int)a->k->nonfinite[s], ok ? "sum to 1" : "fail their bound");
            goto out;
        }
    }
    /* The peak kernel did the work it is credited with: its chains end where the same chains
     * computed one double at a time end (the same operations in the same order, no FMA). */
    double acc[AF_CPU_PEAK_CHAINS];
    for (int i = 0; i < AF_CPU_PEAK_CHAINS; ++i) {
        acc[i] = 1.0 + (double)i / 16.0;
    }
    for (int64_t it = 0; it < a->peak_iters; ++it) {
        for (int i = 0; i < AF_CPU_PEAK_CHAINS; ++i) {
            acc[i] = acc[i] * AF_CPU_PEAK_M + AF_CPU_PEAK_C;
        }
    }
    af_cpu_muladd_peak(a->peak_iters, a->peak_out);
    for (int i = 0; i < AF_CPU_PEAK_CHAINS * 4; ++i) {
        if (memcmp(&a->peak_out[i], &acc[i / 4], sizeof(double)) != 0 ||
            !(a->peak_out[i] >= 1.0 && a->peak_out[i] <= 2.0)) {
            af_bench_fail(b, "the multiply-add peak's chain %d lane %d holds %.17g, not %.17g",
                          i / 4, i % 4, a->peak_out[i], acc[i / 4]);
            break;
        }
    }
out:
    free(u);
    free(got);
    free(ref);
}

af_result_t af_bench_kernel_attention(af_bench_ctx_t *b)
{
    /* The scenario: the bench's default shape first (without -c), then the user's settings. */
    static af_config_t cfg;
    char err[512];
    const char *sets[AF_MAX_SETS + 1];
    int ns = 0;
    if (b->run.config_file == NULL) {
        sets[ns++] = "scenario.block_len=64";
    }
    for (int i = 0; i < b->run.nsets && ns < AF_MAX_SETS + 1; ++i) {
        sets[ns++] = b->run.sets[i];
    }
    af_result_t lrc = af_config_load(&cfg, b->run.config_file, sets, ns, err, sizeof err);
    abench_t a;
    memset(&a, 0, sizeof a);
    a.wl = af_config_wl(&cfg);
    a.wc = af_config_workload(&cfg);
    const char *key = "";
    if (lrc == AF_OK && a.wl->check(&a.wc, &key, err, sizeof err) != 0) {
        lrc = AF_ERR_USAGE;
    }
    if (lrc != AF_OK && b->world.rank == 0) {
        fprintf(stderr, "agefence: %s\n", err);
    }
    /* Each rank loads the file itself: one that cannot (a file on one node only) stops all. */
    AF_CHECK(af_bench_agree(b, lrc != AF_OK ? AF_ERR_USAGE : AF_OK));
    a.p = a.wl->params(&a.wc);
    a.cells = a.wl->cells(&a.wc);
    a.flops = a.wl->flops(&a.p, a.cells);
    const int vector_path = a.p.attn.tokens % 8 == 0;

    /* Slots: enough that a sample of the masked compute lasts about 5 ms (1 ms with --quick),
     * at least 8 and within 256 MiB of state per rank; measured on a shard of 8. */
    const double target_us = b->quick ? 1000.0 : 5000.0;
    af_result_t rc = af_bench_agree(b, make_shard(&a, &cfg, 8));
    double per_call = 0;
    if (rc == AF_OK) {
        rc = time_per_call(b, &a, V_ATTN, b->quick ? 2000.0 : 20000.0, &per_call);
    }
    if (rc == AF_OK) {
        double per_block = per_call / 8.0;
        double want = ceil(target_us / (per_block > 0 ? per_block : 1e-3));
        double most = (double)((size_t)256 << 20) / (16.0 * (double)a.cells);
        want = want < most ? want : most;
        want = want > 8 ? want : 8;
        want = want < 1 << 20 ? want : 1 << 20;
        if ((int)want != a.slots) {
            /* want is alike on every rank (from the slowest rank's time): so is this branch. */
            rc = af_bench_agree(b, make_shard(&a, &cfg, (int)want));
        }
    }
    /* The peak's iterations: a sample as long as the attention's. */
    double attn_us = 0;
    double peak_us = 0;
    if (rc == AF_OK) {
        rc = time_per_call(b, &a, V_ATTN, b->quick ? 2000.0 : 20000.0, &attn_us);
    }
    if (rc == AF_OK) {
        a.peak_iters = 1 << 14;
        rc = time_per_call(b, &a, V_PEAK, b->quick ? 2000.0 : 20000.0, &peak_us);
    }
    if (rc == AF_OK) {
        double it = ceil((double)a.peak_iters * attn_us / (peak_us > 0 ? peak_us : 1e-3));
        a.peak_iters = (int64_t)(it > 1024 ? it : 1024);
    }
    double *t[NV + 1] = {NULL, NULL, NULL};
    for (int v = 0; v < NV + 1 && rc == AF_OK; ++v) {
        t[v] = calloc((size_t)b->samples, sizeof(double));
        rc = t[v] != NULL ? AF_OK : AF_ERR_NOMEM;
    }
    /* Before the samples' barriers: every rank learns whether all could allocate. */
    rc = af_bench_agree(b, rc);
    const double ranks = (double)b->world.size;
    const double work[NV] = {a.flops * (double)a.slots,
                             2.0 * 4.0 * AF_CPU_PEAK_CHAINS * (double)a.peak_iters};
    double dts[NV] = {0, 0};
    const int total = b->warmup + b->samples;
    for (int it = 0; it < total && rc == AF_OK; ++it) {
        for (int j = 0; j < NV && rc == AF_OK; ++j) {
            const int v = (it + j) % NV; /* alternate the order: neither always runs first */
            rc = b->fab->ops->barrier(b->fab);
            double t0 = af_now_us();
            af_result_t vrc = rc == AF_OK ? run_variant(&a, v) : rc;
            double dt = af_now_us() - t0;
            if (rc == AF_OK) {
                rc = af_bench_max(b, &dt);
            }
            if (rc == AF_OK) {
                /* Past the timing: a call that failed on one rank stops every rank. */
                rc = af_bench_agree(b, vrc);
            }
            dts[v] = dt;
            if (rc == AF_OK && it >= b->warmup) {
                /* Every rank's flops over the slowest rank's time. */
                t[v][it - b->warmup] = work[v] * ranks / (dt * 1e-6) / 1e9;
            }
        }
        if (rc == AF_OK && it >= b->warmup) {
            t[NV][it - b->warmup] = t[V_ATTN][it - b->warmup] / t[V_PEAK][it - b->warmup];
        }
        char where[64];
        snprintf(where, sizeof where, "kernel (attention): %s %d/%d",
                 it < b->warmup ? "warm-up" : "sample",
                 it < b->warmup ? it + 1 : it - b->warmup + 1,
                 it < b->warmup ? b->warmup : b->samples);
        af_bench_progress(b, where, it + 1, total);
    }
    for (int v = 0; v < NV && rc == AF_OK; ++v) {
        rc = af_bench_add(b, VNAME[v], "GFLOP/s", t[v], b->samples);
    }
    if (rc == AF_OK) {
        rc = af_bench_add(b, "attention_over_peak.paired", "ratio", t[NV], b->samples);
    }
    if (rc == AF_OK && b->world.rank == 0) {
        af_stats_t st[NV];
        for (int v = 0; v < NV; ++v) {
            st[v] = af_stats_of(t[v], b->samples);
        }
        af_bench_ratio(b, "attention / multiply-add peak (p50)", st[V_ATTN].p50 / st[V_PEAK].p50, 1,
                       0.5, 1);
        af_bench_note(b,
                      "attention: %d tokens x %d features a block, %d slots a rank (all "
                      "occupied, HEALTHY), %d ranks; %.0f flops a block (%s)",
                      a.p.attn.tokens, a.p.attn.dim, a.slots, b->world.size, a.flops,
                      vector_path ? "vector path: T (T + 8) / 2 (d + 4 ceil(d / 4)) multiply-adds"
                                  : "row path: 2 d T^2 multiply-adds");
        af_bench_note(b,
                      "peak: %d chains of acc = acc * m + c on 4-double vectors, %lld iterations, "
                      "no FMA; a sample: %.2f ms (attention), %.2f ms (peak); kernel: %s",
                      AF_CPU_PEAK_CHAINS, (long long)a.peak_iters, dts[V_ATTN] * 1e-3,
                      dts[V_PEAK] * 1e-3, a.k->path);
    }
    if (rc == AF_OK) {
        validate(b, &a);
    }
    for (int v = 0; v < NV + 1; ++v) {
        free(t[v]);
    }
    af_kernels_destroy(&a.k);
    af_free(a.xchg);
    return rc;
}
