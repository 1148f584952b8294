/* agefence bench remap: the coordinator's planning cost for one failure event and for a step
 * in which 1% of the units die, against fleets of 10^2 ... 10^5 virtual devices of 8 and 132
 * units, and a naive baseline that recomputes the whole placement after the same failure. Pure
 * coordinator work on one rank (the plan every rank makes from the shared changes). The plans are
 * checked: every table invariant holds and every block sits on a live unit afterwards. */
#include <stdlib.h>
#include <string.h>

#include "../kernels/af_burgers.h"
#include "../common/af_alloc.h"
#include "../common/af_time.h"
#include "bench.h"
#include "../sim/plan/coord.h"

/* The naive baseline: rebuild both tables from scratch over the live units (what a system
 * that reshapes does to its partition), O(blocks + units). */
static void naive_replace(af_placement_t *p, const int8_t *state, int32_t *slot_of)
{
    int64_t units = p->devices * p->units;
    int64_t nslots = units * p->capacity;
    for (int64_t g = 0; g < nslots; ++g) {
        p->slot_block[g] = AF_SLOT_FREE;
    }
    for (int64_t u = 0; u < units; ++u) {
        p->unit_load[u] = 0;
    }
    int64_t u = 0;
    for (int64_t b = 0; b < p->blocks; ++b) {
        int64_t tries = 0;
        while ((state[u] == AF_DEAD || p->unit_load[u] >= p->capacity) && tries++ < units) {
            u = (u + 1) % units;
        }
        int32_t g = (int32_t)(u * p->capacity + p->unit_load[u]);
        p->slot_block[g] = (int32_t)b;
        slot_of[b] = g;
        p->unit_load[u]++;
        u = (u + 1) % units;
    }
}

static af_result_t one_size(af_bench_ctx_t *b, int64_t D, int64_t U, int *bad)
{
    af_placement_t p;
    memset(&p, 0, sizeof p);
    int64_t B = D * U;
    AF_CHECK(af_placement_init(&p, D, U, B, 0.85, 1, 0));
    int64_t units = D * U;
    af_result_t rc = AF_OK;
    int8_t *state = calloc((size_t)units, 1);
    af_health_change_t *ch = calloc((size_t)(units / 100 + 2), sizeof *ch);
    af_move_t *moves = calloc((size_t)B, sizeof *moves);
    int32_t *slot_of = calloc((size_t)B, sizeof *slot_of);
    double *one = calloc((size_t)b->samples, sizeof(double));
    double *many = calloc((size_t)b->samples, sizeof(double));
    double *naive = calloc((size_t)b->samples, sizeof(double));
    AF_REQUIRE_GOTO(state && ch && moves && slot_of && one && many && naive, AF_ERR_NOMEM, rc, out);
    /* The run's coordinator searches beyond a block's own device through the placement's
     * free-capacity directory: so does this plan, and it pays for keeping it. */
    AF_CHECK_GOTO(af_placement_dir_attach(&p, state), rc, out);
    int64_t k_many = units / 100 > 0 ? units / 100 : 1;
    int total = b->warmup + b->samples;
    uint64_t draw = 0;
    for (int it = 0; it < total; ++it) {
        /* One event: a random live unit dies; its blocks are restored. */
        int64_t u;
        do {
            u = (int64_t)(af_hash4(7, 1, draw++, 0) % (uint64_t)units);
        } while (state[u] == AF_DEAD);
        state[u] = AF_DEAD;
        ch[0] = (af_health_change_t){(int32_t)u, AF_DEAD, AF_CAUSE_SUDDEN, 0.0};
        int64_t exhausted = 0;
        double t0 = af_now_us();
        af_placement_dir_unit(&p, u);
        /* No unit is FADING here: the coordinator passes its (empty) list of them. */
        int32_t none = 0;
        int64_t nm = af_coord_plan_listed(&p, state, ch, 1, &none, 0, 1, 8, moves, &exhausted);
        double t1 = af_now_us();
        /* A step with many deaths at once. */
        int64_t k = 0;
        while (k < k_many) {
            int64_t v = (int64_t)(af_hash4(7, 2, draw++, 0) % (uint64_t)units);
            if (state[v] != AF_DEAD) {
                state[v] = AF_DEAD;
                ch[k++] = (af_health_change_t){(int32_t)v, AF_DEAD, AF_CAUSE_SUDDEN, 0.0};
            }
        }
        double t2 = af_now_us();
        for (int64_t i = 0; i < k; ++i) {
            af_placement_dir_unit(&p, ch[i].unit);
        }
        nm += af_coord_plan_listed(&p, state, ch, k, &none, 0, 1, 8, moves, &exhausted);
        double t3 = af_now_us();
        if (exhausted || af_placement_check(&p) != AF_OK) {
            *bad = 1;
        }
        (void)nm;
        /* The naive baseline after the same failures, on a copy of nothing: it rebuilds. */
        double t4 = af_now_us();
        naive_replace(&p, state, slot_of);
        double t5 = af_now_us();
        /* Put the tables back in agreement (the naive rebuild replaced them). */
        for (int64_t blk = 0; blk < B; ++blk) {
            p.block_slot[blk] = slot_of[blk];
        }
        AF_CHECK_GOTO(af_placement_dir_attach(&p, state), rc, out);
        if (af_placement_check(&p) != AF_OK) {
            *bad = 1;
        }
        for (int64_t blk = 0; blk < B; ++blk) {
            if (state[af_slot_unit(&p, p.block_slot[blk])] == AF_DEAD) {
                *bad = 1;
            }
        }
        if (it >= b->warmup) {
            one[it - b->warmup] = t1 - t0;
            many[it - b->warmup] = t3 - t2;
            naive[it - b->warmup] = t5 - t4;
        }
    }
    char name[64];
    snprintf(name, sizeof name, "plan_1_event_D%lld_U%lld", (long long)D, (long long)U);
    AF_CHECK_GOTO(af_bench_add(b, name, "us", one, b->samples), rc, out);
    snprintf(name, sizeof name, "plan_%lld_events_D%lld_U%lld", (long long)k_many, (long long)D,
             (long long)U);
    AF_CHECK_GOTO(af_bench_add(b, name, "us", many, b->samples), rc, out);
    snprintf(name, sizeof name, "naive_rebuild_D%lld_U%lld", (long long)D, (long long)U);
    AF_CHECK_GOTO(af_bench_add(b, name, "us", naive, b->samples), rc, out);
    af_stats_t s1 = af_stats_of(one, b->samples);
    af_stats_t sm = af_stats_of(many, b->samples);
    af_stats_t sn = af_stats_of(naive, b->samples);
    snprintf(name, sizeof name, "D%lld U%lld: naive / one-event plan (p50)", (long long)D,
             (long long)U);
    af_bench_ratio(b, name, sn.p50 / (s1.p50 > 0 ? s1.p50 : 1e-3), 0, 0, 1);
    snprintf(name, sizeof name, "D%lld U%lld: us per event in a %lld-event step (p50)",
             (long long)D, (long long)U, (long long)k_many);
    af_bench_ratio(b, name, sm.p50 / (double)k_many, 0, 0, 0);
    if (D == 100000 && U == 8) {
        af_bench_ratio(b, "D100000 U8: one-event plan p99 (us)", s1.p99, 1, 1000.0, 0);
    }
out:
    free(state);
    free(ch);
    free(moves);
    free(slot_of);
    free(one);
    free(many);
    free(naive);
    af_placement_destroy(&p);
    return rc;
}

static af_result_t bench_remap(af_bench_ctx_t *b)
{
    if (b->world.rank != 0) {
        return AF_OK; /* every rank plans alike: one measures */
    }
    const int64_t full_d[] = {100, 1000, 10000, 100000};
    const int64_t quick_d[] = {100, 1000};
    const int64_t us[] = {8, 132};
    const int64_t *ds = b->quick ? quick_d : full_d;
    int nd = b->quick ? 2 : 4;
    int nu = b->quick ? 1 : 2;
    int bad = 0;
    int done = 0;
    for (int j = 0; j < nu; ++j) {
        for (int i = 0; i < nd; ++i) {
            if (us[j] == 132 && ds[i] == 100000) {
                continue; /* 13.2M units: past this machine's memory for the slot tables */
            }
            AF_CHECK(one_size(b, ds[i], us[j], &bad));
            af_bench_progress(b, "remap sizes", ++done, nd * nu);
        }
    }
    if (bad) {
        af_bench_fail(b, "a plan broke the placement invariants or left a block on a dead unit");
    }
    af_bench_note(b, "one block per unit, capacity for 85%% blackout; deaths accumulate over the "
                     "samples; many-event step = 1%% of the units");
    return AF_OK;
}

const af_bench_def_t af_bench_remap = {
    "remap", "coordinator planning per failure event vs fleet size, vs a naive rebuild",
    bench_remap};
