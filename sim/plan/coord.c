#include "coord.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The least-loaded unit of [u0, u1) in state `want` with a free slot, not `exclude`; ties go to
 * the lowest index. */
static int64_t best_unit(const af_placement_t *p, const int8_t *unit_state, int64_t u0, int64_t u1,
                         int8_t want, int64_t exclude)
{
    int64_t best = -1;
    int32_t best_load = 0;
    for (int64_t u = u0; u < u1; ++u) {
        if (unit_state[u] != want || u == exclude || p->unit_load[u] >= p->capacity) {
            continue;
        }
        if (best < 0 || p->unit_load[u] < best_load) {
            best = u;
            best_load = p->unit_load[u];
        }
    }
    return best;
}

/* AGEFENCE_DEBUG=coorddir: every fleet-wide search the directory answers is also answered
 * by the scan of every unit, and a difference is reported on stderr (a change of a unit's load
 * or state that the directory missed). O(units) per search: a check, not a mode to run at
 * scale. */
static int debug_dir(void)
{
    static int on = -1;
    if (on < 0) {
        const char *d = getenv("AGEFENCE_DEBUG");
        on = d != NULL && strstr(d, "coorddir") != NULL;
    }
    return on;
}

/* The fleet's best unit in state `want`: from the directory when it follows these states,
 * else by the scan. */
static int64_t fleet_best(af_placement_t *p, const int8_t *unit_state, int8_t want, int64_t exclude)
{
    if (p->dir_state != unit_state || (want != AF_HEALTHY && want != AF_FADING)) {
        return best_unit(p, unit_state, 0, p->devices * p->units, want, exclude);
    }
    int64_t u = af_placement_dir_best(p, want, exclude);
    if (debug_dir()) {
        int64_t scan = best_unit(p, unit_state, 0, p->devices * p->units, want, exclude);
        if (scan != u) {
            fprintf(stderr,
                    "agefence: coorddir: the directory's best unit in state %d is %lld, the "
                    "scan's %lld (excluding %lld)\n",
                    want, (long long)u, (long long)scan, (long long)exclude);
        }
    }
    return u;
}

int32_t af_coord_target_excluding(af_placement_t *p, const int8_t *unit_state,
                                  int64_t prefer_device, int allow_fading, int64_t exclude_unit)
{
    const int8_t want[2] = {AF_HEALTHY, AF_FADING};
    for (int w = 0; w < (allow_fading ? 2 : 1); ++w) {
        int64_t u = -1;
        if (prefer_device >= 0) {
            u = best_unit(p, unit_state, prefer_device * p->units, (prefer_device + 1) * p->units,
                          want[w], exclude_unit);
        }
        if (u < 0 && prefer_device >= 0 && p->devices_per_node > 1) {
            /* Then the block's own node (its own device, scanned above, has no room). */
            int64_t n0 = (prefer_device / p->devices_per_node) * p->devices_per_node;
            u = best_unit(p, unit_state, n0 * p->units, (n0 + p->devices_per_node) * p->units,
                          want[w], exclude_unit);
        }
        if (u < 0) {
            u = fleet_best(p, unit_state, want[w], exclude_unit);
        }
        if (u >= 0) {
            return af_placement_free_slot(p, u);
        }
    }
    return -1;
}

int32_t af_coord_target(af_placement_t *p, const int8_t *unit_state, int64_t prefer_device,
                        int allow_fading)
{
    return af_coord_target_excluding(p, unit_state, prefer_device, allow_fading, -1);
}

void af_coord_undo(af_placement_t *p, const af_move_t *moves, int64_t n)
{
    for (int64_t i = n - 1; i >= 0; --i) {
        af_placement_move(p, moves[i].block, moves[i].from_slot);
    }
}

int64_t af_coord_plan(af_placement_t *p, const int8_t *unit_state, const af_health_change_t *ch,
                      int64_t n_changes, int drain, int64_t max_drain, af_move_t *moves,
                      int64_t *exhausted)
{
    return af_coord_plan_listed(p, unit_state, ch, n_changes, NULL, 0, drain, max_drain, moves,
                                exhausted);
}

int64_t af_coord_plan_listed(af_placement_t *p, const int8_t *unit_state,
                             const af_health_change_t *ch, int64_t n_changes, const int32_t *fading,
                             int64_t n_fading, int drain, int64_t max_drain, af_move_t *moves,
                             int64_t *exhausted)
{
    int64_t n = 0;
    *exhausted = 0;
    /* Restores: every block of a unit that died this step. */
    for (int64_t i = 0; i < n_changes; ++i) {
        if (ch[i].state != AF_DEAD) {
            continue;
        }
        int64_t u = ch[i].unit;
        int64_t dev = u / p->units;
        for (int64_t c = 0; c < p->capacity; ++c) {
            int32_t g = (int32_t)(u * p->capacity + c);
            int32_t b = p->slot_block[g];
            if (b < 0) {
                continue;
            }
            int32_t to = af_coord_target(p, unit_state, dev, 1);
            if (to < 0) {
                /* Not every block fits: none moves. The blocks stay where they were (their
                 * dead slots), so what the run ends with is the state it had, on any number
                 * of ranks, not a half-applied plan. */
                af_coord_undo(p, moves, n);
                *exhausted = 1;
                return 0;
            }
            moves[n].block = b;
            moves[n].from_slot = g;
            moves[n].to_slot = to;
            moves[n].kind = AF_MOVE_RESTORE;
            af_placement_move(p, b, to);
            n++;
        }
    }
    if (!drain) {
        return n;
    }
    /* Drains: blocks on FADING units, lowest unit first, while healthy room lasts. With the
     * list of FADING units (ascending), the cost follows the fading units, not the fleet. */
    int64_t drained = 0;
    int64_t count = fading != NULL ? n_fading : p->devices * p->units;
    for (int64_t k = 0; k < count && drained < max_drain; ++k) {
        int64_t u = fading != NULL ? fading[k] : k;
        if (unit_state[u] != AF_FADING || p->unit_load[u] == 0) {
            continue;
        }
        int64_t dev = u / p->units;
        for (int64_t c = 0; c < p->capacity && drained < max_drain; ++c) {
            int32_t g = (int32_t)(u * p->capacity + c);
            int32_t b = p->slot_block[g];
            if (b < 0) {
                continue;
            }
            int32_t to = af_coord_target(p, unit_state, dev, 0);
            if (to < 0) {
                return n; /* no healthy room: the block stays, fenced when it fails */
            }
            moves[n].block = b;
            moves[n].from_slot = g;
            moves[n].to_slot = to;
            moves[n].kind = AF_MOVE_DRAIN;
            af_placement_move(p, b, to);
            n++;
            drained++;
        }
    }
    return n;
}

int64_t af_coord_plan_reset(const af_placement_t *p, const int8_t *unit_state, int64_t device,
                            af_move_t *moves)
{
    /* In place: the slot is live and still the block's, so any other target would only add a
     * copy, and the least-loaded rule has nothing to balance (the loads do not change). */
    int64_t n = 0;
    for (int64_t u = device * p->units; u < (device + 1) * p->units; ++u) {
        if (unit_state[u] == AF_DEAD || p->unit_load[u] == 0) {
            continue;
        }
        for (int64_t c = 0; c < p->capacity; ++c) {
            int32_t g = (int32_t)(u * p->capacity + c);
            int32_t b = p->slot_block[g];
            if (b < 0) {
                continue;
            }
            moves[n].block = b;
            moves[n].from_slot = g;
            moves[n].to_slot = g;
            moves[n].kind = AF_MOVE_RESTORE;
            n++;
        }
    }
    return n;
}
