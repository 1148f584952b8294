/* agefence coordinator logic: where blocks go when units fade, die or fail containment. Pure
 * functions over the placement and the units' health, deterministic and independent of the
 * number of ranks, so rank 0 can plan for everyone (drains, restores) and every rank can agree
 * on within-step re-homing (retries, DMR shadows) without a message. */
#ifndef AF_COORD_H
#define AF_COORD_H

#include <stdint.h>

#include "../fleet/aging.h"
#include "placement.h"

enum { AF_MOVE_DRAIN = 1, AF_MOVE_RESTORE = 2, AF_MOVE_RETRY = 3 };

/* One entry of the move list. from_slot is the block's slot before the move (for a restore,
 * the dead slot: the data comes from the block's replica). */
typedef struct af_move {
    int32_t block;
    int32_t from_slot;
    int32_t to_slot;
    int32_t kind;
} af_move_t;

/* The head of a step's plan: one cache line (a step without events writes it and little else,
 * sim/driver/health.h). */
typedef struct af_plan_header {
    int64_t step;        /* executed step this plan is for */
    int64_t n_changes;   /* health changes of the step (the model's, then declared stragglers') */
    int64_t n_moves;     /* moves planned */
    int64_t rollback_to; /* -1, or the logical step every block rolls back to */
    int64_t restart;     /* 1: a block and its replica were lost together: every block restarts
                            from the initial state (rollback_to = 0) */
    int64_t exhausted;   /* 1: some block has no live slot left (capacity exhausted) */
    int64_t fading;      /* units FADING after the changes */
    int64_t dead;        /* units DEAD after the changes */
} af_plan_header_t;

/* The least-loaded HEALTHY unit with a free slot, the block's own device first, then its node
 * (placement devices_per_node), then the fleet; when none has
 * room and allow_fading is set, the least-loaded FADING unit likewise (the last resort). Ties go
 * to the lowest unit index. Returns a free global slot, or -1 when there is none. */
int32_t af_coord_target(af_placement_t *p, const int8_t *unit_state, int64_t prefer_device,
                        int allow_fading);
/* The same, never choosing exclude_unit (a fenced block's own unit, a twin's primary's). */
int32_t af_coord_target_excluding(af_placement_t *p, const int8_t *unit_state,
                                  int64_t prefer_device, int allow_fading, int64_t exclude_unit);

/* Takes back n moves planned and applied to the placement (not yet to the data), newest first:
 * every block returns to its from_slot. */
void af_coord_undo(af_placement_t *p, const af_move_t *moves, int64_t n);

/* Plans the moves that follow this step's health changes (already applied to unit_state):
 * every block on a newly DEAD unit is restored to a live slot (when one of them finds none:
 * exhausted=1, no move at all, the placement as it was);
 * then, when drain is on, blocks on FADING units move to HEALTHY ones, at most max_drain.
 * Applies each move to the placement as it is planned. Returns the number of moves. */
int64_t af_coord_plan(af_placement_t *p, const int8_t *unit_state, const af_health_change_t *ch,
                      int64_t n_changes, int drain, int64_t max_drain, af_move_t *moves,
                      int64_t *exhausted);
/* Plans the restores of a memory reset of `device` (an HBM error, cause hbm): every block on a
 * live unit of the device lost its state but not its slot, so it is restored in place (from_slot
 * = to_slot, kind AF_MOVE_RESTORE), from its replica like a block of a dead unit; a DEAD unit's
 * blocks are left to the restores of its death. Blocks in slot order; the placement does not
 * change. Appends to moves and returns the number appended. No allocation. */
int64_t af_coord_plan_reset(const af_placement_t *p, const int8_t *unit_state, int64_t device,
                            af_move_t *moves);
/* The same, given the FADING units in ascending order (NULL: scan the fleet for them). */
int64_t af_coord_plan_listed(af_placement_t *p, const int8_t *unit_state,
                             const af_health_change_t *ch, int64_t n_changes, const int32_t *fading,
                             int64_t n_fading, int drain, int64_t max_drain, af_move_t *moves,
                             int64_t *exhausted);

/* The rank whose host memory keeps the replicas of the blocks that start on home_rank: half the
 * launch away, so another rank whenever there are two or more. Replicas live in host memory,
 * which the model does not age, so their place changes what a refresh costs, never what
 * happens: the failure history stays independent of the number of ranks. */
static inline int af_replica_rank(int home_rank, int nranks)
{
    return (home_rank + (nranks + 1) / 2) % nranks;
}

/* The device whose memory the model puts the replica of a block on device d in (README "Replicas"):
 * the same device of the node half the fleet's nodes away (devices / per_node nodes; with one
 * node, the device half the fleet away), or the first after it in device order that is not gone
 * (gone[c] != 0; NULL: none is) and, with two nodes or more, not on d's node; failing that
 * another device of d's node that is not gone; d itself when every other device is gone. So a
 * node failure never takes a block and its replica together while another node lives. O(1)
 * unless devices after the buddy are gone; no allocation. */
static inline int64_t af_replica_device(int64_t d, int64_t devices, int64_t per_node,
                                        const uint8_t *gone)
{
    per_node = per_node > 1 ? per_node : 1;
    const int64_t nodes = devices / per_node;
    const int64_t off = nodes >= 2 ? per_node * ((nodes + 1) / 2) : (devices + 1) / 2;
    int64_t fallback = -1;
    for (int64_t k = 0; k < devices; ++k) {
        int64_t c = (d + off + k) % devices;
        if (c == d || (gone != NULL && gone[c])) {
            continue;
        }
        if (nodes < 2 || c / per_node != d / per_node) {
            return c;
        }
        fallback = fallback < 0 ? c : fallback;
    }
    return fallback >= 0 ? fallback : d;
}

#endif
