/* agefence recovery: what moves data when the fleet changes — slot control, moves between
 * slots and ranks (host-staged transfers in chunks), replicas and their edge logs, rollback
 * and restart, DMR twins, retries of fenced blocks — and the detectors' state that decides
 * which blocks are twinned. The part owns its state (af_recovery_t: replicas, transfers,
 * twins, detectors) and is handed the shard and the halo at start-up (af_recovery_bind); the
 * driver calls it, and it calls the exchange, the plan and the oracle below it. */
#ifndef AF_RECOVERY_H
#define AF_RECOVERY_H

#include <stdint.h>

#include "../exchange/halo.h"
#include "../plan/coord.h"
#include "../plan/shard.h"

/* Transfers of whole blocks (T doubles) between ranks go through host staging in chunks. */
#define AF_XFER_CHUNK 512
/* Entries of the slot set that splits a chunk where its items depend on each other (a power of
 * two above the 2 x AF_XFER_CHUNK keys a chunk can hold). */
#define AF_XFER_SET 4096

/* Outcome of a DMR comparison on the primary's slot. */
enum { AF_DMR_NONE = 0, AF_DMR_ADOPTED = 1, AF_DMR_FENCED = 2 };

/* Replicas: block b's copy lives in the host memory of rank rank[b] at off[b]. */
typedef struct af_replicas {
    int32_t *rank; /* blocks */
    int64_t *off;  /* blocks */
    double *store; /* my replicas x T */
    int64_t n_reps;
    int64_t replica_step; /* logical step of the last refresh of every replica */
    /* Every rank: the logical step block b's replica holds (the last refresh, or a later
     * re-take after a loss), or -1 while it is lost (a lose_replicas event). */
    int64_t *step;  /* blocks */
    int64_t n_lost; /* blocks whose replica is lost */
    /* Where the model keeps each replica (docs/recovery.md, "Replicas"), every rank alike: block
     * b's replica is in the memory of device dev[b], the buddy of the block's device when it was
     * taken (af_replica_device: another node while one lives). The data itself lives in rank
     * rank[b]'s host memory whatever dev says: dev decides what a loss takes. A device's
     * replicas are lost when it leaves the job whole (its last unit DEAD, of any cause) or its
     * memory is reset (hbm); a block moved onto its replica's node has its replica copied to a
     * buddy again (af_replicas_follow). */
    int32_t *dev;           /* blocks */
    uint8_t *dev_gone;      /* devices: 1 once every unit of the device is DEAD */
    uint8_t *dev_lost_now;  /* devices: 1 while the plan loses the replicas the device holds */
    int32_t *dev_lost_list; /* devices: those marked in dev_lost_now */
    /* recovery.replay = local: beside each replica its rank keeps the two neighbour edges the
     * block read at every logical step since (left neighbour's right edge, right neighbour's
     * left edge): entry (s % replica_interval) holds those of state s, so the block alone can
     * be replayed from its replica to the committed state. my replicas x interval x 2. */
    uint64_t *log;
    int64_t log_depth;  /* logical steps the log keeps: replica_interval (local) or 1 */
    int32_t *blocks;    /* my replicas: the block of each (off's inverse) */
    double *replay_buf; /* T doubles: the other half of a replay's two buffers */
    uint64_t *edges_in; /* my replicas x 2: the read-sets their blocks' ranks send */
    uint64_t *pub_bits; /* B / 64 + 1 words: the blocks this rank published, for the edge log */
    /* A batch's read-sets that go with blocks to other ranks: AF_XFER_CHUNK triples each way. */
    uint64_t *carry_send;
    uint64_t *carry_recv;
    /* This step's, every rank alike (af_step zeroes them when a step starts; the driver sums
     * them into its run totals). */
    int64_t n_rollbacks;     /* rollbacks and restarts */
    int64_t n_replayed;      /* logical steps they threw away */
    int64_t n_replicas_lost; /* replicas lost with their devices */
} af_replicas_t;

/* Transfers. */
typedef struct af_xfer {
    double *stage_send; /* AF_XFER_CHUNK x T */
    double *stage_recv; /* AF_XFER_CHUNK x T */
    af_p2p_t *p2p;      /* 2 x AF_XFER_CHUNK */
    int64_t *set;       /* AF_XFER_SET, -1 when empty: the slots a chunk reads and writes */
    int32_t *used;      /* 2 x AF_XFER_CHUNK: the entries of set in use */
    int64_t n_used;
    int32_t *items; /* 2 x blocks: scratch list of work items (block ids) */
    int64_t *peer;  /* 4 x ranks: a chunk's staged items to and from each peer, and their offsets */
    int32_t *route; /* 3 x AF_XFER_CHUNK: a chunk's items' source, destination, direct or not */
} af_xfer_t;

/* DMR twins. */
typedef struct af_twins {
    int32_t *twin;          /* blocks: DMR twin slot of each block this step, or -1 */
    uint8_t *dmr_mark;      /* local slots: AF_DMR_* outcome of the last comparison */
    uint8_t *committed_now; /* local slots: 1 when containment committed the slot's result in
                               this step (its other buffer holds the state before it) */
    double *twin_buf;       /* T doubles */
    uint64_t compute_key;   /* the injection key of the last compute pass (its twins' comparison) */
} af_twins_t;

/* Detectors (recovery.detect) beyond the non-finite test. Every rank holds the same. */
typedef struct af_detect {
    int64_t sample_period; /* sampled: N = ceil(1 / sample_fraction), 0 when off */
    int32_t *sample_order; /* sampled: the blocks grouped by their turn (h(b) mod N), ascending
                              within a group */
    int64_t *sample_start; /* sampled: group t is sample_order[sample_start[t], [t + 1]) */
    int32_t *quarantine;   /* quarantine: one word a unit of the fleet, its fences while HEALTHY
                              (0 to AF_QUARANTINE_MAX, recovery.quarantine_after's ceiling) until it
                              is declared suspect at step s, then -1 - s (af_quarantined_step): the
                              count is not read again once the unit is declared */
    int32_t *suspect_new;  /* quarantine: units that reached the count this step */
    int64_t n_suspect_new;
    int64_t suspect_cap;         /* quarantine: entries of suspect_new */
    int32_t *unit_first_corrupt; /* own units: the first step a result of theirs was corrupted */
    int64_t n_quarantined;       /* units declared suspect in this step */
} af_detect_t;

/* The step unit u was declared suspect at, -1 if never (or with the quarantine off). */
static inline int64_t af_quarantined_step(const af_detect_t *d, int64_t u)
{
    return d->quarantine != NULL && d->quarantine[u] < 0 ? -1 - (int64_t)d->quarantine[u] : -1;
}

typedef struct af_recovery {
    af_shard_t *s;    /* not owned */
    af_halo_t *halo;  /* not owned: its buffers carry the read-sets */
    af_move_t *moves; /* not owned: the plan's move table (blocks), which a retry round fills */
    af_replicas_t rep;
    af_xfer_t xfer;
    af_twins_t tw;
    af_detect_t det;
} af_recovery_t;

/* detect = sampled: the turn of block b in the rotation of sample_period steps (drawn from the
 * seed and the block alone); block b is twinned in the steps whose tick % sample_period is its
 * turn, so every block is checked once every sample_period steps. */
static inline int64_t af_sample_turn(const af_detect_t *d, int64_t seed, int64_t b)
{
    return (int64_t)(af_hash4((uint64_t)seed, 0x5a3b1e, (uint64_t)b, 0) %
                     (uint64_t)d->sample_period);
}

/* Hands the part what it works on (start-up, before any other call). */
void af_recovery_bind(af_recovery_t *r, af_shard_t *s, af_halo_t *halo, af_move_t *moves);
/* The kernels' control of global slot g, when local: its block, and its unit's mode and
 * corruption probability from unit_state and the aging model (af_aging_p_corrupt). */
void af_slot_control(af_recovery_t *r, int64_t g);
af_result_t af_replicas_init(af_recovery_t *r);
/* Frees the replicas' states and their edge logs once the run's steps are over: the memory the
 * verdict's gather and serial reference take instead (sim/driver/memory.c). */
void af_replicas_release(af_recovery_t *r);
af_result_t af_replicas_refresh(af_recovery_t *r);
/* After every committed step: the read-set of each block at the committed state (the two
 * neighbour edges its next step reads) into the log beside its replica, sent there by the
 * block's rank. Collective. */
af_result_t af_replicas_log_edges(af_recovery_t *r);
/* recovery.replay = local: takes the replicas of live blocks whose replica is lost again from
 * their committed state (after the step's commit). Returns the number re-taken. */
af_result_t af_replicas_retake(af_recovery_t *r, int64_t *n_retaken);
/* Every rank, after the step's moves: the replica of each block that came onto its replica's node
 * (a device of the same node with two nodes or more, the same device with one) is copied to the
 * block's buddy device (dev; the data stays where it is kept, step is unchanged). The blocks in
 * xfer.items, in the order they first moved, their number in *n_moved. Visits the blocks the
 * placement moved since the last call or refresh (its list, which it empties), not the fleet's.
 * No allocation. */
void af_replicas_follow(af_recovery_t *r, int64_t *n_moved);
/* Every rank, in the plan: the replicas kept in the memory of the devices this step's health
 * changes took out of the job whole, and of the devices whose memory is reset (resets[0..n)),
 * are lost (step = -1); calls lost(ctx, b, step) for each before it is marked. No allocation. */
void af_replicas_lose_devices(af_recovery_t *r, const af_health_change_t *ch, int64_t n_changes,
                              const int64_t *resets, int64_t n_resets,
                              void (*lost)(void *ctx, int64_t b, int64_t step), void *ctx);
/* Every block back to its replica step (recovery.replay = global). */
af_result_t af_rollback(af_recovery_t *r);
/* Every block back to the initial state, logical step 0: what is left when a block and its
 * replica were lost together. Refreshes every replica. */
af_result_t af_restart(af_recovery_t *r);
af_result_t af_apply_moves(af_recovery_t *r, const af_move_t *moves, int64_t n, int restore_data);
/* Twins for the blocks on FADING units: all blocks of the units in fade[0..n_fade) (the model's
 * FADING units, ascending) then strag[0..n_strag) (the declared stragglers; one that is in fade
 * too counts there), or only those of a retry round's moves (only != NULL). */
af_result_t af_dmr_begin(af_recovery_t *r, const af_move_t *only, int64_t n_only,
                         const int32_t *fade, int64_t n_fade, const int32_t *strag, int64_t n_strag,
                         int64_t *n_twins);
af_result_t af_dmr_end(af_recovery_t *r, int64_t n_twins);
/* Moves every fenced block of the last exchange to another live slot and retries it there;
 * *exhausted_why says why none was moved when no live slot is left (NULL otherwise). */
af_result_t af_retry_fenced(af_recovery_t *r, int64_t *n_retried, const char **exhausted_why);

#endif
