/* agefence driver, health (health.c): the fleet model's side of a step — every rank ages its own
 * devices' units, the ranks share the health changes, and every rank makes the same plan from
 * them (drains, restores, quarantine, declared stragglers) and applies it. */
#ifndef AF_DRIVER_HEALTH_H
#define AF_DRIVER_HEALTH_H

#include <stdint.h>

#include "../../common/af_result.h"
#include "../fleet/aging.h"
#include "../fleet/jobintr.h"
#include "../plan/coord.h"

struct af_run_state;

/* af_health_t.standing: what gives the plan work in every step whatever the model does. */
enum {
    AF_STANDING_STRAGGLERS = 1, /* straggler detection is on: it reads every step's times */
    AF_STANDING_DECLARED = 2,   /* declared stragglers or suspects wait to be drained */
    AF_STANDING_SUSPECTS = 4    /* units reached the quarantine's count: the next plan declares
                                   them */
};

/* Health: the fleet model's side of a step (aging, job-level interruptions) and the plan every
 * rank makes from the shared health changes.
 *
 * Its first two cache lines (the plan's header and the fields after it, up to the aging model,
 * which starts on the third with its own first line) are what the coordinator reads and writes
 * in a step without events (no load change, nothing due, no scripted event, nothing FADING, no
 * interruption, nothing standing): af_age_own_units and af_plan decide from them that the step
 * is quiet and touch nothing else, so that the step costs the same few lines at any fleet size,
 * whatever the step's other phases evicted. */
typedef struct af_health {
    /* The step's plan, which every rank makes from the shared health changes. */
    _Alignas(64) af_plan_header_t plan;
    int64_t next_event;   /* the first step after the last planned with a scripted event of any
                             kind (INT64_MAX: none) */
    int64_t n_fade;       /* the fleet's FADING units, in fade_units */
    int64_t dead_units;   /* units DEAD so far */
    int64_t slow_mine;    /* own live units running slower than nominal */
    double intr_due_h;    /* when the next drawn interruption is due (+inf: none can be) */
    int32_t standing;     /* AF_STANDING_* bits */
    int32_t reset_moves;  /* this step's restores of memory resets: the plan's first moves */
    int32_t n_hits;       /* this step's interruptions, in jobintr_hits */
    int16_t own_slow;     /* 1: a slow event names own units (af_throttle_t.n_slow > 0) */
    int16_t debug_loads;  /* 1: AGEFENCE_DEBUG=agingloads */
    af_aging_t aging;     /* this rank's own devices' units */
    af_jobintr_t jobintr; /* job-level interruptions (every rank draws them alike) */
    af_jobintr_hit_t jobintr_hits[AF_JOBINTR_MAX_STEP]; /* this step's */
    /* The step's interruptions for /interruptions (rank 0): a device or node is one
     * interruption a step per cause; these say which were counted in which executed step. */
    uint64_t *intr_dev_memo;     /* per device: (the last step a hardware cause was counted + 1)
                                    << 16 | the causes counted then (bit AF_INTR_*); 0: never */
    int64_t *intr_node_tick;     /* per node: the last step its loss was counted */
    af_health_change_t *changes; /* the step's changes: units + the scripted events' units */
    int64_t changes_cap;         /* its entries */
    int overflow;                /* 1: a declaration found changes full (af_apply_plan fails) */
    af_move_t *moves;            /* blocks */
    /* What this rank's model gives each step, before the ranks share it (gather_health). */
    af_health_change_t
        *my_changes;              /* own units + the scripted events' units: the tail of changes */
    af_health_change_t *scripted; /* scratch: the scripted events' units */
    int64_t scripted_cap;         /* its entries */
    /* The coordinator's shared facts. */
    int32_t *fade_units; /* units: the fleet's FADING units to the model, ascending (the drain
                            list; a declared straggler or suspect is not one of them) */
} af_health_t;

/* Every rank, at each round of a step's retries: the units the fenced blocks ran on count a
 * fence while the coordinator calls them HEALTHY; a unit that reaches
 * recovery.quarantine_after is declared suspect at the next plan. */
void af_count_fences(struct af_run_state *r);
/* Every rank: the step of the aging model for its own units; returns the changes, in
 * my_changes. */
int64_t af_age_own_units(struct af_run_state *r);
/* Every rank, at the end of a step: asks for the lines the next step's coordinator reads first
 * (the health lines, the model's first line, the placement's count of changed units), after the
 * phases that streamed the shard and evicted them, so that their misses overlap the rest of the
 * step (its log) instead of opening the next one. Prefetches only: no state changes. */
void af_health_warm(const struct af_run_state *r);
/* Every rank: the step's health changes and FADING units of the whole fleet, from every rank's
 * own (n_mine of them), in the order one model of the whole fleet gives them. Collective. */
af_result_t af_gather_health(struct af_run_state *r, int64_t n_mine, int64_t *n_model);
/* The slot a replica or replica_lost event names as its `to`: the first of the device whose
 * memory keeps (kept) block b's replica. */
int64_t af_replica_slot(const struct af_run_state *r, int64_t b);
/* Every rank: the plan, from the step's health changes (the n_model of the model first), applied
 * to the placement. */
void af_plan(struct af_run_state *r, int64_t n_model);
/* Proves that every rank planned the same before any rank moves data. Collective. */
af_result_t af_check_plan(struct af_run_state *r);
/* Every rank: the health changes and the moves of the plan, in the tables and slots. */
af_result_t af_apply_plan(struct af_run_state *r);
/* Every rank, at the start of an executed step: the lose_replicas events of the step. */
void af_lose_replicas(struct af_run_state *r);

#endif
