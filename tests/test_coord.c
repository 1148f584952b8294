/* Unit tests of sim/coord: the choice of a target slot, the plan of restores and drains that
 * follows health changes (checked against the placement invariants over random failure
 * histories), and the buddy device that holds each block's replica. */
#include "sim/plan/coord.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

/* ---- helpers --------------------------------------------------------------------------------- */

static void make_placement(af_placement_t *p, int64_t d, int64_t u, int64_t b, double mb)
{
    memset(p, 0, sizeof *p);
    assert_int_equal(af_placement_init(p, d, u, b, mb, 1, 0), AF_OK);
    assert_int_equal(af_placement_check(p), AF_OK);
}

/* Moves blocks between units until unit_load equals want (sum B, each <= C). */
static void set_loads(af_placement_t *p, const int32_t *want)
{
    int64_t units = p->devices * p->units;
    int64_t sum = 0;
    for (int64_t u = 0; u < units; ++u) {
        assert_true(want[u] >= 0 && want[u] <= p->capacity);
        sum += want[u];
    }
    assert_int_equal(sum, p->blocks);
    for (int64_t u = 0; u < units; ++u) {
        for (int64_t c = p->capacity - 1; c >= 0 && p->unit_load[u] > want[u]; --c) {
            int32_t b = p->slot_block[u * p->capacity + c];
            if (b < 0) {
                continue;
            }
            int64_t v = 0;
            while (v < units && p->unit_load[v] >= want[v]) {
                v++;
            }
            assert_true(v < units);
            int32_t g = af_placement_free_slot(p, v);
            assert_true(g >= 0);
            af_placement_move(p, b, g);
        }
    }
    for (int64_t u = 0; u < units; ++u) {
        assert_int_equal(p->unit_load[u], want[u]);
    }
    assert_int_equal(af_placement_check(p), AF_OK);
}

/* The unit of the slot af_coord_target returns (-1 for none), after checking the slot is free. */
static int64_t target_unit(af_placement_t *p, const int8_t *st, int64_t prefer, int fading)
{
    int32_t g = af_coord_target(p, st, prefer, fading);
    if (g < 0) {
        assert_int_equal(g, -1);
        return -1;
    }
    assert_true(g < p->devices * p->units * p->capacity);
    assert_int_equal(p->slot_block[g], AF_SLOT_FREE);
    int64_t u = af_slot_unit(p, g);
    assert_int_not_equal(st[u], AF_DEAD);
    assert_true(p->unit_load[u] < p->capacity);
    return u;
}

/* Least-loaded unit in [u0, u1) of state s with room, lowest index on ties; -1 if none. */
static int64_t ref_best(const af_placement_t *p, const int8_t *st, int64_t u0, int64_t u1, int s)
{
    int64_t best = -1;
    for (int64_t u = u0; u < u1; ++u) {
        if (st[u] != s || p->unit_load[u] >= p->capacity) {
            continue;
        }
        if (best < 0 || p->unit_load[u] < p->unit_load[best]) {
            best = u;
        }
    }
    return best;
}

/* The documented choice among HEALTHY units: own device first, then the fleet. */
static int64_t ref_healthy_target(const af_placement_t *p, const int8_t *st, int64_t prefer)
{
    int64_t u = -1;
    if (prefer >= 0) {
        u = ref_best(p, st, prefer * p->units, (prefer + 1) * p->units, AF_HEALTHY);
    }
    if (u < 0) {
        u = ref_best(p, st, 0, p->devices * p->units, AF_HEALTHY);
    }
    return u;
}

static int any_room(const af_placement_t *p, const int8_t *st, int s)
{
    return ref_best(p, st, 0, p->devices * p->units, s) >= 0;
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int64_t rng_below(uint64_t *s, int64_t n)
{
    return (int64_t)(rng_next(s) % (uint64_t)n);
}

/* ---- af_coord_target ------------------------------------------------------------------------- */

/* D=3, U=4, B=24, max_blackout 0.75: 3 surviving units hold 8 blocks each, C = 8. */
static const int32_t base_loads[12] = {4, 2, 2, 8, 1, 0, 3, 2, 0, 2, 0, 0};

static void test_target_prefers_least_loaded_healthy_unit_of_own_device(void **state)
{
    (void)state;
    af_placement_t p;
    make_placement(&p, 3, 4, 24, 0.75);
    assert_int_equal(p.capacity, 8);
    set_loads(&p, base_loads);
    int8_t st[12] = {0};
    assert_int_equal(target_unit(&p, st, 0, 0), 1); /* loads 4 2 2 8: tie to the lower index */
    assert_int_equal(target_unit(&p, st, 1, 0), 5);
    assert_int_equal(target_unit(&p, st, 2, 0), 8); /* loads 0 2 0 0 */
    /* No preference: the whole fleet, lowest index among the empty units 5, 8, 10, 11. */
    assert_int_equal(target_unit(&p, st, -1, 0), 5);
    /* The own device wins even when another device has a less loaded unit. */
    assert_int_equal(target_unit(&p, st, 0, 1), 1);
    /* The slot returned is the unit's first free slot. */
    int32_t g = af_coord_target(&p, st, 0, 0);
    assert_int_equal(g, af_placement_free_slot(&p, 1));
    af_placement_destroy(&p);
}

/* A memory reset restores every block of its device's live units in place, in slot order,
 * skips a DEAD unit's blocks (its death restores them), and leaves the placement as it was. */
static void test_reset_restores_the_device_blocks_in_place(void **state)
{
    (void)state;
    af_placement_t p;
    make_placement(&p, 3, 4, 24, 0.75);
    set_loads(&p, base_loads); /* device 1: units 4-7 hold 1, 0, 3, 2 blocks */
    int8_t st[12] = {0};
    st[6] = AF_DEAD;
    st[7] = AF_FADING;
    int32_t before[24];
    memcpy(before, p.block_slot, sizeof before);
    af_move_t moves[24];
    int64_t n = af_coord_plan_reset(&p, st, 1, moves);
    assert_int_equal(n, 1 + 2); /* unit 4's block and unit 7's two; not dead unit 6's three */
    int64_t last = -1;
    for (int64_t i = 0; i < n; ++i) {
        assert_int_equal(moves[i].kind, AF_MOVE_RESTORE);
        assert_int_equal(moves[i].from_slot, moves[i].to_slot);
        assert_int_equal(p.slot_block[moves[i].to_slot], moves[i].block);
        int64_t u = moves[i].to_slot / p.capacity;
        assert_true(u == 4 || u == 7);
        assert_true(moves[i].to_slot > last);
        last = moves[i].to_slot;
    }
    assert_memory_equal(before, p.block_slot, sizeof before);
    assert_int_equal(af_placement_check(&p), AF_OK);
    /* A device with no live block: nothing. */
    st[8] = st[9] = st[10] = st[11] = AF_DEAD;
    assert_int_equal(af_coord_plan_reset(&p, st, 2, moves), 0);
    af_placement_destroy(&p);
}

static void test_target_skips_dead_and_fading_and_falls_back_to_the_fleet(void **state)
{
    (void)state;
    af_placement_t p;
    make_placement(&p, 3, 4, 24, 0.75);
    set_loads(&p, base_loads);
    int8_t st[12] = {0};
    st[1] = AF_DEAD;
    assert_int_equal(target_unit(&p, st, 0, 0), 2);
    st[2] = AF_FADING;
    assert_int_equal(target_unit(&p, st, 0, 0), 0); /* load 4, but the only healthy room */
    st[0] = AF_DEAD;
    /* Device 0: unit 3 is full, the rest dead or fading: the least-loaded healthy unit of the
     * fleet, lowest index on ties (5 and 8 are both empty). */
    assert_int_equal(target_unit(&p, st, 0, 0), 5);
    st[5] = AF_DEAD;
    assert_int_equal(target_unit(&p, st, 0, 0), 8);
    assert_int_equal(target_unit(&p, st, 1, 0), 4); /* own device: loads 1, -, 3, 2 */
    st[8] = AF_FADING;
    st[10] = AF_DEAD;
    assert_int_equal(target_unit(&p, st, 2, 0), 11);
    /* Only full healthy units left: nothing without fading units. */
    for (int64_t u = 0; u < 12; ++u) {
        if (u != 3) {
            st[u] = (int8_t)(u % 2 ? AF_DEAD : AF_FADING);
        }
    }
    assert_int_equal(target_unit(&p, st, 0, 0), -1);
    assert_int_equal(target_unit(&p, st, -1, 0), -1);
    /* With fading units allowed: a fading unit with room (units 0, 2, 4, 6, 8, 10). */
    int64_t u = target_unit(&p, st, 1, 1);
    assert_true(u >= 0);
    assert_int_equal(st[u], AF_FADING);
    /* Everything dead: nothing at all. */
    memset(st, AF_DEAD, sizeof st);
    assert_int_equal(target_unit(&p, st, 0, 0), -1);
    assert_int_equal(target_unit(&p, st, 0, 1), -1);
    assert_int_equal(target_unit(&p, st, -1, 1), -1);
    af_placement_destroy(&p);
}

static void test_target_of_a_full_fleet_is_none(void **state)
{
    (void)state;
    af_placement_t p;
    make_placement(&p, 2, 2, 8, 0.0); /* C = 2, every slot taken */
    assert_int_equal(p.capacity, 2);
    int8_t st[4] = {AF_HEALTHY, AF_FADING, AF_HEALTHY, AF_HEALTHY};
    for (int64_t d = -1; d < 2; ++d) {
        assert_int_equal(af_coord_target(&p, st, d, 0), -1);
        assert_int_equal(af_coord_target(&p, st, d, 1), -1);
    }
    af_placement_destroy(&p);
}

/* allow_fading is the last resort of a restore: a FADING unit only when no HEALTHY unit of the
 * whole fleet has room, even if the FADING unit is less loaded or on the preferred device. */
static void test_target_allow_fading_takes_fading_units_only_as_last_resort(void **state)
{
    (void)state;
    af_placement_t p;
    make_placement(&p, 3, 4, 24, 0.75);
    set_loads(&p, base_loads);
    int8_t st[12] = {0};
    st[1] = AF_DEAD;
    st[2] = AF_FADING; /* load 2 < load 4 of the healthy unit 0 on the same device */
    assert_int_equal(target_unit(&p, st, 0, 1), 0);
    st[0] = AF_FADING;
    /* Device 0 has only fading room; device 1 and 2 have healthy room. */
    assert_int_equal(target_unit(&p, st, 0, 1), 5);
    /* No healthy room anywhere: now the fading units, own device first. */
    for (int64_t u = 4; u < 12; ++u) {
        st[u] = AF_DEAD;
    }
    assert_int_equal(target_unit(&p, st, 0, 0), -1);
    assert_int_equal(target_unit(&p, st, 0, 1), 2);
    af_placement_destroy(&p);
}

/* Random fleets: allow_fading = 0 matches the documented choice exactly; allow_fading = 1 never
 * gives a dead or full unit and finds room whenever a live unit has some. */
static void test_target_matches_reference_on_random_fleets(void **state)
{
    (void)state;
    const int64_t shapes[][3] = {{3, 4, 24}, {7, 3, 48}, {2, 8, 40}, {5, 5, 60}};
    uint64_t seed = 2024;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; ++si) {
        int64_t D = shapes[si][0];
        int64_t U = shapes[si][1];
        int64_t B = shapes[si][2];
        af_placement_t p;
        make_placement(&p, D, U, B, 0.75);
        int64_t units = D * U;
        int32_t *want = calloc((size_t)units, sizeof(int32_t));
        int8_t *st = calloc((size_t)units, 1);
        assert_non_null(want);
        assert_non_null(st);
        for (int trial = 0; trial < 300; ++trial) {
            /* Random loads summing to B, capped at C. */
            memset(want, 0, sizeof(int32_t) * (size_t)units);
            /* Half the blocks favour the first three units, so that some units are full. */
            for (int64_t b = 0; b < B; ++b) {
                int64_t u;
                do {
                    u = rng_below(&seed, 2) ? rng_below(&seed, 3) : rng_below(&seed, units);
                } while (want[u] >= p.capacity);
                want[u]++;
            }
            set_loads(&p, want);
            for (int64_t u = 0; u < units; ++u) {
                int64_t r = rng_below(&seed, 10);
                st[u] = (int8_t)(r < 5 ? AF_HEALTHY : r < 8 ? AF_FADING : AF_DEAD);
            }
            for (int64_t prefer = -1; prefer < D; ++prefer) {
                int64_t got = target_unit(&p, st, prefer, 0);
                assert_int_equal(got, ref_healthy_target(&p, st, prefer));
                int64_t got_f = target_unit(&p, st, prefer, 1);
                int live_room = any_room(&p, st, AF_HEALTHY) || any_room(&p, st, AF_FADING);
                assert_int_equal(got_f >= 0, live_room);
            }
        }
        free(want);
        free(st);
        af_placement_destroy(&p);
    }
}

/* ---- af_coord_plan --------------------------------------------------------------------------- */

typedef struct {
    af_placement_t p;
    int8_t *st;
    af_health_change_t *ch;
    int64_t nch;
    af_move_t *moves;
    int32_t *before; /* block_slot before the plan */
} plan_fixture_t;

static void fixture_init(plan_fixture_t *f, int64_t d, int64_t u, int64_t b, double mb)
{
    make_placement(&f->p, d, u, b, mb);
    int64_t units = d * u;
    f->st = calloc((size_t)units, 1);
    f->ch = calloc((size_t)(2 * units), sizeof *f->ch);
    f->moves = calloc((size_t)(b + units + 8), sizeof *f->moves);
    f->before = calloc((size_t)b, sizeof(int32_t));
    assert_non_null(f->st);
    assert_non_null(f->ch);
    assert_non_null(f->moves);
    assert_non_null(f->before);
    f->nch = 0;
}

static void fixture_destroy(plan_fixture_t *f)
{
    af_placement_destroy(&f->p);
    free(f->st);
    free(f->ch);
    free(f->moves);
    free(f->before);
}

/* Applies a change to the unit states and appends it to the change list. */
static void mark(plan_fixture_t *f, int64_t unit, int state)
{
    f->st[unit] = (int8_t)state;
    f->ch[f->nch].unit = (int32_t)unit;
    f->ch[f->nch].state = (int8_t)state;
    f->ch[f->nch].cause = AF_CAUSE_SCRIPTED;
    f->nch++;
}

/* Plans, then checks what holds for every plan; returns the number of moves. */
static int64_t plan_and_check(plan_fixture_t *f, int drain, int64_t max_drain, int64_t *exhausted)
{
    af_placement_t *p = &f->p;
    int64_t units = p->devices * p->units;
    memcpy(f->before, p->block_slot, sizeof(int32_t) * (size_t)p->blocks);
    int8_t *dead_now = calloc((size_t)units, 1);
    assert_non_null(dead_now);
    for (int64_t i = 0; i < f->nch; ++i) {
        if (f->ch[i].state == AF_DEAD) {
            dead_now[f->ch[i].unit] = 1;
        }
    }
    *exhausted = -7;
    int64_t n = af_coord_plan(p, f->st, f->ch, f->nch, drain, max_drain, f->moves, exhausted);
    assert_true(*exhausted == 0 || *exhausted == 1);
    assert_true(n >= 0 && n <= p->blocks + max_drain);
    assert_int_equal(af_placement_check(p), AF_OK);

    int32_t *restores = calloc((size_t)p->blocks, sizeof(int32_t));
    int32_t *last_to = malloc(sizeof(int32_t) * (size_t)p->blocks);
    assert_non_null(restores);
    assert_non_null(last_to);
    for (int64_t b = 0; b < p->blocks; ++b) {
        last_to[b] = f->before[b];
    }
    int64_t drains = 0;
    int seen_drain = 0;
    for (int64_t i = 0; i < n; ++i) {
        const af_move_t *m = &f->moves[i];
        assert_true(m->block >= 0 && m->block < p->blocks);
        /* Moves chain: each starts where the block was. */
        assert_int_equal(m->from_slot, last_to[m->block]);
        int64_t tu = af_slot_unit(p, m->to_slot);
        int64_t fu = af_slot_unit(p, m->from_slot);
        assert_int_not_equal(f->st[tu], AF_DEAD);
        if (m->kind == AF_MOVE_RESTORE) {
            assert_false(seen_drain); /* restores come before drains */
            assert_true(dead_now[fu]);
            assert_int_equal(m->from_slot, f->before[m->block]);
            restores[m->block]++;
        } else {
            assert_int_equal(m->kind, AF_MOVE_DRAIN);
            assert_true(drain);
            seen_drain = 1;
            assert_int_equal(f->st[fu], AF_FADING);
            assert_int_equal(f->st[tu], AF_HEALTHY);
            drains++;
        }
        last_to[m->block] = m->to_slot;
    }
    assert_true(drains <= max_drain);
    for (int64_t b = 0; b < p->blocks; ++b) {
        /* The moves are applied already. */
        assert_int_equal(p->block_slot[b], last_to[b]);
        int on_dead = dead_now[af_slot_unit(p, f->before[b])];
        if (!*exhausted) {
            /* Every block of a newly dead unit restored exactly once, and no other. */
            assert_int_equal(restores[b], on_dead ? 1 : 0);
            assert_int_not_equal(f->st[af_slot_unit(p, p->block_slot[b])], AF_DEAD);
        } else {
            assert_true(restores[b] <= 1);
        }
    }
    for (int64_t u = 0; u < units; ++u) {
        assert_true(p->unit_load[u] >= 0 && p->unit_load[u] <= p->capacity);
    }
    free(restores);
    free(last_to);
    free(dead_now);
    f->nch = 0;
    return n;
}

static int64_t count_kind(const plan_fixture_t *f, int64_t n, int kind)
{
    int64_t c = 0;
    for (int64_t i = 0; i < n; ++i) {
        c += f->moves[i].kind == kind;
    }
    return c;
}

static void test_plan_restores_every_block_of_dead_units(void **state)
{
    (void)state;
    plan_fixture_t f;
    fixture_init(&f, 4, 4, 32, 0.5); /* 8 surviving units x 4 = 32: C = 4, loads 2 */
    assert_int_equal(f.p.capacity, 4);
    mark(&f, 4, AF_DEAD);
    mark(&f, 5, AF_DEAD);
    mark(&f, 6, AF_FADING); /* a fading change restores nothing */
    int64_t ex;
    int64_t n = plan_and_check(&f, 0, 0, &ex);
    assert_int_equal(ex, 0);
    assert_int_equal(n, 4);
    assert_int_equal(count_kind(&f, n, AF_MOVE_RESTORE), 4);
    /* Device 1 keeps room on its healthy unit 7 (2 free): own device first, then the least
     * loaded healthy unit of the fleet (never the fading unit 6 while healthy room lasts). */
    for (int64_t i = 0; i < n; ++i) {
        int64_t tu = af_slot_unit(&f.p, f.moves[i].to_slot);
        assert_int_equal(f.st[tu], AF_HEALTHY);
        if (i < 2) {
            assert_int_equal(tu, 7);
        } else {
            assert_int_not_equal(af_slot_device(&f.p, f.moves[i].to_slot), 1);
        }
    }
    assert_int_equal(f.p.unit_load[4], 0);
    assert_int_equal(f.p.unit_load[5], 0);
    assert_int_equal(f.p.unit_load[6], 2);
    /* A second round: the same dead units are not in the change list, nothing moves. */
    assert_int_equal(plan_and_check(&f, 0, 0, &ex), 0);
    fixture_destroy(&f);
}

static void test_plan_drains_fading_units_within_max_drain(void **state)
{
    (void)state;
    plan_fixture_t f;
    int64_t ex;
    /* drain = 0: nothing moves off fading units. */
    fixture_init(&f, 4, 4, 32, 0.5);
    mark(&f, 0, AF_FADING);
    mark(&f, 9, AF_FADING);
    assert_int_equal(plan_and_check(&f, 0, 100, &ex), 0);
    assert_int_equal(ex, 0);
    /* max_drain = 3: three of the four blocks move, to healthy units. */
    mark(&f, 0, AF_FADING);
    mark(&f, 9, AF_FADING);
    int64_t n = plan_and_check(&f, 1, 3, &ex);
    assert_int_equal(n, 3);
    assert_int_equal(count_kind(&f, n, AF_MOVE_DRAIN), 3);
    assert_int_equal(f.p.unit_load[0] + f.p.unit_load[9], 1);
    /* Drains continue in later plans, with no change at all. */
    n = plan_and_check(&f, 1, 3, &ex);
    assert_int_equal(n, 1);
    assert_int_equal(f.p.unit_load[0] + f.p.unit_load[9], 0);
    /* max_drain = 0 with drain on: nothing. */
    mark(&f, 1, AF_FADING);
    assert_int_equal(plan_and_check(&f, 1, 0, &ex), 0);
    /* Restores first, then drains, in one plan (unit 1 also holds a block drained to it). */
    int32_t on_1 = f.p.unit_load[1];
    assert_true(on_1 >= 2);
    mark(&f, 14, AF_DEAD);
    n = plan_and_check(&f, 1, 100, &ex);
    assert_int_equal(ex, 0);
    assert_int_equal(count_kind(&f, n, AF_MOVE_RESTORE), 2);
    assert_int_equal(count_kind(&f, n, AF_MOVE_DRAIN), on_1);
    assert_int_equal(f.moves[0].kind, AF_MOVE_RESTORE);
    assert_int_equal(f.moves[1].kind, AF_MOVE_RESTORE);
    assert_int_equal(f.p.unit_load[1], 0);
    assert_int_equal(f.p.unit_load[14], 0);
    fixture_destroy(&f);

    /* Too little healthy room: the drains stop when it is gone, never onto fading units. */
    fixture_init(&f, 2, 2, 8, 0.5); /* C = 4, loads 2 */
    assert_int_equal(f.p.capacity, 4);
    mark(&f, 0, AF_FADING);
    mark(&f, 1, AF_FADING);
    mark(&f, 2, AF_FADING);
    n = plan_and_check(&f, 1, 100, &ex);
    assert_int_equal(n, 2);
    assert_int_equal(f.p.unit_load[3], 4);
    fixture_destroy(&f);
}

static void test_plan_sets_exhausted_when_live_capacity_is_too_small(void **state)
{
    (void)state;
    plan_fixture_t f;
    int64_t ex;
    fixture_init(&f, 2, 2, 8, 0.5); /* C = 4, loads 2: two surviving units hold everything */
    mark(&f, 0, AF_DEAD);
    mark(&f, 1, AF_DEAD);
    int64_t n = plan_and_check(&f, 1, 100, &ex);
    assert_int_equal(ex, 0);
    assert_int_equal(n, 4);
    assert_int_equal(f.p.unit_load[2], 4);
    assert_int_equal(f.p.unit_load[3], 4);
    /* One more death: 4 blocks, no room left. */
    mark(&f, 2, AF_DEAD);
    n = plan_and_check(&f, 1, 100, &ex);
    assert_int_equal(ex, 1);
    assert_int_equal(n, 0);
    fixture_destroy(&f);

    /* Three of four units die at once: 6 blocks, 2 free slots. */
    fixture_init(&f, 2, 2, 8, 0.5);
    mark(&f, 0, AF_DEAD);
    mark(&f, 1, AF_DEAD);
    mark(&f, 2, AF_DEAD);
    n = plan_and_check(&f, 0, 0, &ex);
    assert_int_equal(ex, 1);
    /* Two blocks would fit: none moves, and every block is where it was. */
    assert_int_equal(n, 0);
    for (int64_t b = 0; b < f.p.blocks; ++b) {
        assert_int_equal(f.p.block_slot[b], f.before[b]);
    }
    fixture_destroy(&f);
}

static void test_plan_restores_onto_fading_units_as_last_resort(void **state)
{
    (void)state;
    plan_fixture_t f;
    int64_t ex;
    fixture_init(&f, 2, 2, 8, 0.5); /* C = 4, loads 2 */
    /* Healthy room off the device beats fading room on it. */
    mark(&f, 1, AF_FADING);
    mark(&f, 0, AF_DEAD);
    int64_t n = plan_and_check(&f, 0, 0, &ex);
    assert_int_equal(ex, 0);
    assert_int_equal(n, 2);
    for (int64_t i = 0; i < n; ++i) {
        assert_int_equal(af_slot_device(&f.p, f.moves[i].to_slot), 1);
    }
    fixture_destroy(&f);

    /* No healthy room at all: the fading units take the blocks, nothing is exhausted. */
    fixture_init(&f, 2, 2, 8, 0.5);
    mark(&f, 1, AF_FADING);
    mark(&f, 2, AF_FADING);
    mark(&f, 3, AF_FADING);
    mark(&f, 0, AF_DEAD);
    n = plan_and_check(&f, 1, 100, &ex);
    assert_int_equal(ex, 0);
    assert_int_equal(count_kind(&f, n, AF_MOVE_RESTORE), 2);
    assert_int_equal(count_kind(&f, n, AF_MOVE_DRAIN), 0);
    assert_int_equal(f.p.unit_load[1], 4); /* own device first */
    fixture_destroy(&f);
}

/* Random failure histories over several fleet shapes, up to max_blackout of the units dead.
 * The capacity formula guarantees that the survivors (FADING ones included) always hold every
 * block, so exhausted is never set here. */
static void test_plan_random_rounds_keep_invariants(void **state)
{
    (void)state;
    const struct {
        int64_t d, u, b;
        double mb;
    } shapes[] = {
        {7, 3, 48, 0.85},  {7, 3, 50, 0.85}, {8, 16, 256, 0.85}, {8, 16, 307, 0.85},
        {8, 16, 256, 0.9}, {4, 4, 64, 0.5},  {2, 8, 12, 0.75},   {5, 2, 10, 0.6},
        {1, 4, 4, 0.5},    {3, 5, 7, 0.0},
    };
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; ++si) {
        for (uint64_t s = 1; s <= 6; ++s) {
            uint64_t rng = s * 1000003ULL + si;
            plan_fixture_t f;
            fixture_init(&f, shapes[si].d, shapes[si].u, shapes[si].b, shapes[si].mb);
            int64_t units = shapes[si].d * shapes[si].u;
            /* B <= D*U*C*(1 - max_blackout): the fleet shape is in range. */
            assert_true((double)f.p.blocks <=
                        (double)units * (double)f.p.capacity * (1.0 - shapes[si].mb) + 1e-9);
            int64_t max_dead = (int64_t)(shapes[si].mb * (double)units + 1e-9);
            int64_t dead = 0;
            for (int round = 0; round < 200; ++round) {
                int64_t k = 1 + rng_below(&rng, 3);
                for (int64_t i = 0; i < k; ++i) {
                    int64_t u = rng_below(&rng, units);
                    if (f.st[u] == AF_DEAD) {
                        continue;
                    }
                    int kill = dead < max_dead && (f.st[u] == AF_FADING || rng_below(&rng, 2));
                    if (kill) {
                        mark(&f, u, AF_DEAD);
                        dead++;
                    } else if (f.st[u] == AF_HEALTHY) {
                        mark(&f, u, AF_FADING);
                    }
                }
                int drain = (int)rng_below(&rng, 2);
                int64_t max_drain = rng_below(&rng, 5);
                int64_t ex;
                (void)plan_and_check(&f, drain, max_drain, &ex);
                assert_int_equal(ex, 0);
                for (int64_t b = 0; b < f.p.blocks; ++b) {
                    assert_int_not_equal(f.st[af_slot_unit(&f.p, f.p.block_slot[b])], AF_DEAD);
                }
            }
            fixture_destroy(&f);
        }
    }
}

/* ---- the free-capacity directory ---------------------------------------------------------- */

/* The fleet's best unit in state s with room, never `exclude`, by a scan of every unit. */
static int64_t ref_dir_best(const af_placement_t *p, const int8_t *st, int s, int64_t exclude)
{
    int64_t best = -1;
    for (int64_t u = 0; u < p->devices * p->units; ++u) {
        if (st[u] != s || u == exclude || p->unit_load[u] >= p->capacity) {
            continue;
        }
        if (best < 0 || p->unit_load[u] < p->unit_load[best]) {
            best = u;
        }
    }
    return best;
}

/* Moves, reservations, releases and state changes at random: after each, the directory's best
 * unit of each state (with no exclusion, excluding that best, and excluding a random unit) is
 * the scan's, and af_coord_target through the directory picks the slot the scan's unit gives. */
static void test_directory_matches_the_scan_over_random_histories(void **state)
{
    (void)state;
    const int64_t shapes[][3] = {{1, 4, 4}, {3, 4, 24}, {7, 3, 48}, {9, 5, 60}, {16, 2, 20}};
    uint64_t seed = 77;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; ++si) {
        af_placement_t p;
        make_placement(&p, shapes[si][0], shapes[si][1], shapes[si][2], 0.75);
        int64_t units = p.devices * p.units;
        int8_t *st = calloc((size_t)units, 1);
        int32_t *reserved = calloc((size_t)(units * p.capacity), sizeof(int32_t));
        assert_non_null(st);
        assert_non_null(reserved);
        int64_t n_res = 0;
        assert_int_equal(af_placement_dir_attach(&p, st), AF_OK);
        int hits = 0;
        for (int op = 0; op < 3000; ++op) {
            int64_t r = rng_below(&seed, 10);
            if (r < 5) {
                /* A block to a random free slot. */
                int32_t b = (int32_t)rng_below(&seed, p.blocks);
                int64_t u = rng_below(&seed, units);
                int32_t g = af_placement_free_slot(&p, u);
                if (g >= 0) {
                    af_placement_move(&p, b, g);
                }
            } else if (r < 8) {
                int64_t u = rng_below(&seed, units);
                st[u] = (int8_t)rng_below(&seed, 3); /* HEALTHY, FADING or DEAD */
                af_placement_dir_unit(&p, u);
            } else if (r < 9 || n_res == 0) {
                int32_t g = af_placement_free_slot(&p, rng_below(&seed, units));
                if (g >= 0) {
                    af_placement_reserve(&p, g);
                    reserved[n_res++] = g;
                }
            } else {
                af_placement_release(&p, reserved[--n_res]);
            }
            for (int s = 0; s < 2; ++s) {
                int64_t best = ref_dir_best(&p, st, s, -1);
                assert_int_equal(af_placement_dir_best(&p, s, -1), best);
                if (best >= 0) {
                    assert_int_equal(af_placement_dir_best(&p, s, best),
                                     ref_dir_best(&p, st, s, best));
                    hits++;
                }
                int64_t ex = rng_below(&seed, units);
                assert_int_equal(af_placement_dir_best(&p, s, ex), ref_dir_best(&p, st, s, ex));
            }
            int64_t want = ref_dir_best(&p, st, AF_HEALTHY, -1);
            assert_int_equal(af_coord_target(&p, st, -1, 0),
                             want >= 0 ? af_placement_free_slot(&p, want) : -1);
        }
        assert_true(hits > 0);
        while (n_res > 0) {
            af_placement_release(&p, reserved[--n_res]);
        }
        assert_int_equal(af_placement_check(&p), AF_OK);
        free(st);
        free(reserved);
        af_placement_destroy(&p);
    }
}

/* ---- replica ranks -------------------------------------------------------------------------- */

/* The replicas of a rank's blocks live on another rank whenever there are two or more, and the
 * mapping is a permutation: every rank keeps the replicas of exactly one rank. */
static void test_replica_rank_is_another_rank_and_a_permutation(void **state)
{
    (void)state;
    assert_int_equal(af_replica_rank(0, 1), 0); /* one rank: itself, the only choice */
    for (int n = 2; n <= 64; ++n) {
        char *hit = calloc((size_t)n, 1);
        assert_non_null(hit);
        for (int q = 0; q < n; ++q) {
            int r = af_replica_rank(q, n);
            assert_true(r >= 0 && r < n);
            assert_int_not_equal(r, q);
            hit[r]++;
        }
        for (int q = 0; q < n; ++q) {
            assert_int_equal(hit[q], 1);
        }
        free(hit);
    }
}

/* The replica's device: another node's live device whenever one lives (so a node failure never
 * takes a block and its replica together), else another live device, else the block's own; with
 * nothing gone, a permutation of the devices (each keeps the replicas of one device's blocks). */
static void test_replica_device_is_on_another_live_node_while_one_lives(void **state)
{
    (void)state;
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    int checked_other_node = 0;
    for (int trial = 0; trial < 4000; ++trial) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        int64_t per = 1 + (int64_t)((x >> 33) % 8);
        int64_t nodes = 1 + (int64_t)((x >> 40) % 9);
        int64_t D = per * nodes;
        uint8_t gone[72];
        int none_gone = trial % 4 == 0;
        for (int64_t c = 0; c < D; ++c) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            gone[c] = none_gone ? 0 : (uint8_t)((x >> 35) % 3 == 0);
        }
        uint8_t hit[72] = {0};
        for (int64_t d = 0; d < D; ++d) {
            int64_t q = af_replica_device(d, D, per, gone);
            assert_true(q >= 0 && q < D);
            int other_node_live = 0;
            int other_live = 0;
            for (int64_t c = 0; c < D; ++c) {
                other_node_live |= !gone[c] && c / per != d / per;
                other_live |= !gone[c] && c != d;
            }
            if (nodes >= 2 && other_node_live) {
                assert_false(gone[q]);
                assert_int_not_equal(q / per, d / per);
                checked_other_node++;
            } else if (other_live) {
                assert_false(gone[q]);
                assert_int_not_equal(q, d);
            } else {
                assert_int_equal(q, d);
            }
            hit[q]++;
            /* NULL: nothing gone, the same as a table of zeros. */
            if (none_gone) {
                assert_int_equal(af_replica_device(d, D, per, NULL), q);
            }
        }
        for (int64_t c = 0; none_gone && D > 1 && c < D; ++c) {
            assert_int_equal(hit[c], 1);
        }
    }
    assert_true(checked_other_node > 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_target_prefers_least_loaded_healthy_unit_of_own_device),
        cmocka_unit_test(test_target_skips_dead_and_fading_and_falls_back_to_the_fleet),
        cmocka_unit_test(test_reset_restores_the_device_blocks_in_place),
        cmocka_unit_test(test_target_of_a_full_fleet_is_none),
        cmocka_unit_test(test_target_allow_fading_takes_fading_units_only_as_last_resort),
        cmocka_unit_test(test_target_matches_reference_on_random_fleets),
        cmocka_unit_test(test_plan_restores_every_block_of_dead_units),
        cmocka_unit_test(test_plan_drains_fading_units_within_max_drain),
        cmocka_unit_test(test_plan_sets_exhausted_when_live_capacity_is_too_small),
        cmocka_unit_test(test_plan_restores_onto_fading_units_as_last_resort),
        cmocka_unit_test(test_plan_random_rounds_keep_invariants),
        cmocka_unit_test(test_directory_matches_the_scan_over_random_histories),
        cmocka_unit_test(test_replica_rank_is_another_rank_and_a_permutation),
        cmocka_unit_test(test_replica_device_is_on_another_live_node_while_one_lives),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
