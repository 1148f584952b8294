/* agefence run driver internals, shared by run.c (start-up, the loop, the verdict), step.c (one
 * step), recover.c (data movement: slot control, moves, replicas, rollback, DMR twins,
 * retries) and halo.c (what crosses ranks each step, and the fleet's figures). Calls go one
 * way: run.c -> step.c -> recover.c -> halo.c, run.c and step.c also calling halo.c
 * (tests/layers.py checks there is no cycle). */
#ifndef AF_RUN_INTERNAL_H
#define AF_RUN_INTERNAL_H

#include <stdint.h>

#include "../../fabric/fabric.h"
#include "../../kernels/kernels.h"
#include "../fleet/aging.h"
#include "../io/config.h"
#include "../plan/coord.h"
#include "../fleet/jobintr.h"
#include "../io/log.h"
#include "memory.h"
#include "../io/metrics.h"
#include "../plan/placement.h"
#include "../fleet/straggler.h"

/* Counters each rank reports for each step; summed on rank 0. */
enum {
    CNT_INJECTED,
    CNT_DETECTED,
    CNT_FENCED,
    CNT_RETRIED,
    CNT_SDC,
    CNT_SDC_HARMFUL, /* of CNT_SDC, relative error above corruption.harm_rel_error */
    CNT_HARMFUL,     /* of CNT_INJECTED, relative error above corruption.harm_rel_error */
    CNT_DET_FINITE,  /* of CNT_DETECTED, by the non-finite test */
    CNT_DET_ABFT,    /* of CNT_DETECTED, by the mass balance */
    CNT_DET_TWIN,    /* of CNT_DETECTED, by a twin's disagreement */
    CNT_ABFT_FALSE,  /* slots abft fenced with nothing injected */
    CNT_TWINS,       /* twins computed (rank 0 counts; every rank plans the same) */
    CNT_UNVERIFIED,
    CNT_ALLOCS,
    CNT_COMMS,
    CNT_HALO_BYTES, /* bytes this rank sent in the step's halos (edges, figures, fenced lists) */
    CNT_LOG_BYTES,  /* bytes this rank sent to the edge logs beside the replicas */
    NCOUNTS
};

/* What each rank sends to rank 0 at the end of a step: the phases of this step, except step_us
 * and log_us, which are those of the previous step (a step's own log phase ends after its
 * gather). */
typedef struct af_payload {
    double phase[AF_NPHASES];
    int64_t count[NCOUNTS];
} af_payload_t;

/* The memory figures of /final (sim/driver/run.c). */
#define AF_NMEM 5

/* Transfers of whole blocks (T doubles) between ranks go through host staging in chunks. */
#define AF_XFER_CHUNK 512
/* Entries of the slot set that splits a chunk where its items depend on each other (a power of
 * two above the 2 x AF_XFER_CHUNK keys a chunk can hold). */
#define AF_XFER_SET 4096

/* Outcome of a DMR comparison on the primary's slot. */
enum { AF_DMR_NONE = 0, AF_DMR_ADOPTED = 1, AF_DMR_FENCED = 2 };

typedef struct af_run_state {
    af_config_t cfg;
    af_world_t world;
    af_fabric_t *fab;
    af_kernels_t *k;
    af_placement_t pl;
    const af_workload_t *wl; /* the scenario's workload (workload.kind) */
    af_wl_params_t wlp;      /* its parameters, the bits every backend gets */
    int64_t T, B, D, U, C;
    int n_local;   /* local slots */
    int64_t slot0; /* global index of local slot 0 */
    int64_t units; /* D * U */

    /* Exchange words: af_xchg_len(B), then (straggler detection on) one word per device, its
     * compute time per block in the step as a double's bit pattern (0 from other ranks). */
    size_t xlen;
    uint64_t *xchg_prev; /* exchange of the committed state the next compute reads */
    uint64_t *xchg_cur;  /* exchange being built after this step's commit */
    /* With the cuda backend the kernels read and write the exchange in device memory: these
     * mirror xchg_prev/xchg_cur there (NULL with cpu). The host copies stay the coordinator's
     * view (status words, diagnostics, flags). */
    uint64_t *dxchg_prev;
    uint64_t *dxchg_cur;
    af_fabric_t *nccl; /* the device fabric for the halo (nccl), or NULL */
    /* The halo (sim/exchange/halo.c): buffers for the neighbour edges of the blocks a rank can hold
     * (halo_blocks = min(B, local slots)), counts and offsets per rank, the fenced blocks of
     * this rank and (sorted) of every rank, and the figures' words. */
    int64_t halo_blocks;
    uint64_t *halo_send; /* 4 x halo_blocks words: (index, bits) pairs by peer */
    uint64_t *halo_recv;
    int64_t *halo_count;  /* ranks */
    int64_t *halo_count2; /* ranks */
    int64_t *halo_at;     /* ranks */
    af_p2p_t *halo_p2p;   /* 2 x ranks */
    int32_t *fenced_mine;
    /* The local slots that published a block in the last exchange, ascending (halo_blocks at
     * most): what the halo, the figures and the replicas' read-sets iterate, not the shard. */
    int32_t *pub_slots;
    int64_t n_pub;
    int32_t *fenced; /* B */
    int64_t n_fenced;
    int64_t *sum_words;
    /* What the last exchange found over the fleet: the committed state's mass and energy
     * (exact sums, the same bits on any number of ranks), its NaN/Inf values, and whether a
     * rank was asked to stop (stop_mine: this rank's flag for the next exchange). */
    double mass_now, energy_now;
    double global_now; /* the global word of a globally coupled workload (AF_XCHG_GLOBAL) */
    int64_t leaked_now;
    int64_t stop_mine;
    int stop_now;
    char backend_why[200];
    /* The step graph (backend.graph): steady-state steps run as the backend's graph_run. While
     * it is on, the device exchange buffers stay where the graph was captured: a swap copies
     * dxchg_cur into dxchg_prev instead of exchanging the pointers. */
    int graph_on;
    af_graph_io_t gio;
    af_graph_reduce_t greduce; /* gio.reduce: the nccl fabric's all-reduce, inside the graph */
    char graph_why[200];
    double *cellbuf; /* T doubles */

    /* Health: every unit's state as every rank knows it; what only the units' own rank needs
     * (their corruption probability, their throttling) in tables of its own units, indexed by
     * u - own_u0 (af_own_unit). */
    int8_t *unit_state;   /* units */
    int64_t own_u0;       /* the first unit of this rank's devices */
    int64_t own_units;    /* how many */
    double *unit_p;       /* own units: corruption probability per element */
    af_aging_t aging;     /* this rank's own devices' units */
    af_jobintr_t jobintr; /* job-level interruptions (every rank draws them alike) */
    af_jobintr_hit_t jobintr_hits[AF_JOBINTR_MAX_STEP]; /* this step's */
    int n_hits;                                         /* of them */
    int64_t reset_moves; /* this step's restores of memory resets: the plan's first moves */
    /* The step's interruptions for /interruptions (rank 0): a device or node is one
     * interruption a step per cause; these say which were counted in which executed step. */
    int64_t *intr_dev_tick;  /* per device: the last step a hardware cause was counted */
    uint16_t *intr_dev_mask; /* per device: the causes counted then (bit AF_INTR_*) */
    int64_t *intr_node_tick; /* per node: the last step its loss was counted */

    /* The step's plan, which every rank makes from the shared health changes. */
    af_plan_header_t plan;
    af_health_change_t *changes; /* units */
    af_move_t *moves;            /* blocks */
    /* What this rank's model gives each step, before the ranks share it (gather_health). */
    af_health_change_t *my_changes; /* own units + the scripted events' units */
    af_health_change_t *scripted;   /* scratch: the scripted events' units */
    int64_t scripted_cap;           /* its entries */
    int64_t slow_mine;              /* own live units running slower than nominal */
    /* The coordinator's shared facts. */
    int32_t *fade_units; /* units: the fleet's FADING units, ascending (the drain list) */
    int64_t n_fade;
    int8_t *model_state; /* units: the state the model gives (a declared straggler stays
                            HEALTHY here) */
    int64_t dead_units;  /* units DEAD so far */

    /* Throttling (sim/fleet/straggler.h) of this rank's own units. */
    double *unit_base;   /* own units: slowdown set by scripted slow events (1 nominal) */
    double *unit_deg;    /* own units: degradation of a FADING unit, from its model */
    int64_t *unit_stamp; /* own units: scratch, the tick a unit's delay was counted in */
    int32_t *slow_list;  /* own units ever named by a slow event (global numbers) */
    int64_t n_slow;
    double *dev_delay;     /* local devices: modelled delay of this step (us) */
    uint64_t *dev_words;   /* devices: this rank's per-block compute times, for the exchange */
    int throttle_possible; /* slowdown, spikes or slow events can make any delay at all */
    /* Straggler detection (rank 0). */
    af_straggler_t strag;
    double *strag_in;     /* devices: the per-block times of the last exchange */
    int64_t *strag_new;   /* devices: newly declared stragglers */
    int32_t *strag_units; /* units of the declared stragglers and suspects, ascending */
    int64_t n_strag_units;
    /* Detectors (recovery.detect) beyond the non-finite test. Every rank holds the same. */
    int64_t sample_period; /* sampled: N = ceil(1 / sample_fraction), 0 when off */
    int32_t *sample_order; /* sampled: the blocks grouped by their turn (h(b) mod N), ascending
                              within a group */
    int64_t *sample_start; /* sampled: group t is sample_order[sample_start[t], [t + 1]) */
    uint16_t *fence_count; /* quarantine: fences of each unit while HEALTHY (saturating at
                              AF_QUARANTINE_MAX, recovery.quarantine_after's ceiling) */
    int32_t *suspect_new;  /* quarantine: units that reached the count this step */
    int64_t n_suspect_new;
    int64_t suspect_cap;         /* quarantine: entries of suspect_new */
    int32_t *quarantined_step;   /* quarantine: the step each unit was declared suspect, -1 */
    int32_t *unit_first_corrupt; /* own units: the first step a result of theirs was corrupted */
    uint64_t compute_key;  /* the injection key of the last compute pass (its twins' comparison) */
    int64_t n_quarantined; /* units declared suspect in this step */
    int64_t straggler_healthy; /* declared units the aging model still calls HEALTHY */
    int64_t slow_units;        /* live units with a slowdown above 1 */
    /* Pacing. */
    af_pacer_t pacer;
    double prev_sink_us;
    /* Live metrics (rank 0, with metrics.textfile). */
    af_metrics_t metrics;
    int metrics_on;
    int64_t flushed_step; /* rank 0: the last step whose row was written */
    int64_t run_drains, run_restores, run_retry_moves, run_rollbacks, run_replayed;
    int64_t run_replayed_blocks;

    /* Replicas: block b's copy lives in the host memory of rank rep_rank[b] at rep_off[b]. */
    int32_t *rep_rank; /* blocks */
    int64_t *rep_off;  /* blocks */
    double *rep_store; /* my replicas x T */
    int64_t n_reps;
    int64_t replica_step; /* logical step of the last refresh of every replica */
    /* Every rank: the logical step block b's replica holds (the last refresh, or a later
     * re-take after a loss), or -1 while it is lost (a lose_replicas event). */
    int64_t *rep_step; /* blocks */
    int64_t n_lost;    /* blocks whose replica is lost */
    /* Where the model keeps each replica (README "Replicas"), every rank alike: block b's replica
     * is in the memory of device rep_dev[b], the buddy of the block's device when it was taken
     * (af_replica_device: another node while one lives). The data itself lives in rank
     * rep_rank[b]'s host memory whatever rep_dev says: rep_dev decides what a loss takes. A
     * device's replicas are lost when it leaves the job whole (its last unit DEAD, of any
     * cause) or its memory is reset (hbm); a block moved onto its replica's node has its
     * replica copied to a buddy again (af_replicas_follow). */
    int32_t *rep_dev;       /* blocks */
    uint8_t *dev_gone;      /* devices: 1 once every unit of the device is DEAD */
    uint8_t *dev_lost_now;  /* devices: 1 while the plan loses the replicas the device holds */
    int32_t *dev_lost_list; /* devices: those marked in dev_lost_now */
    /* recovery.replay = local: beside each replica its rank keeps the two neighbour edges the
     * block read at every logical step since (left neighbour's right edge, right neighbour's
     * left edge): entry (s % replica_interval) holds those of state s, so the block alone can
     * be replayed from its replica to the committed state. my replicas x interval x 2. */
    uint64_t *rep_log;
    int64_t rep_log_depth;  /* logical steps the log keeps: replica_interval (local) or 1 */
    int32_t *rep_blocks;    /* my replicas: the block of each (rep_off's inverse) */
    double *replay_buf;     /* T doubles: the other half of a replay's two buffers */
    uint64_t *rep_edges_in; /* my replicas x 3: the read-sets their blocks' ranks send */
    /* A batch's read-sets that go with blocks to other ranks: AF_XFER_CHUNK triples each way. */
    uint64_t *carry_send;
    uint64_t *carry_recv;

    /* Transfers. */
    double *stage_send; /* AF_XFER_CHUNK x T */
    double *stage_recv; /* AF_XFER_CHUNK x T */
    af_p2p_t *p2p;      /* 2 x AF_XFER_CHUNK */
    int64_t *xfer_set;  /* AF_XFER_SET, -1 when empty: the slots a chunk reads and writes */
    int32_t *xfer_used; /* 2 x AF_XFER_CHUNK: the entries of xfer_set in use */
    int64_t n_xfer_used;
    int64_t *items;         /* blocks: scratch list of work items */
    int32_t *twin;          /* blocks: DMR twin slot of each block this step, or -1 */
    uint8_t *dmr_mark;      /* local slots: AF_DMR_* outcome of the last comparison */
    uint8_t *committed_now; /* local slots: 1 when containment committed the slot's result in
                               this step (its other buffer holds the state before it) */
    double *twin_buf;       /* T doubles */

    /* Memory: this rank's budget, its resident memory before start-up, and (after the verdict)
     * the largest over the ranks of budget startup and peak, baseline, allocator peak and
     * resident peak, for /final. */
    af_memory_t mem;
    double rss_baseline;
    double mem_max[AF_NMEM];

    /* Progress. */
    int64_t tick;       /* executed steps */
    int64_t state_step; /* logical step of the committed state */
    double sim_hours;
    int stop_signal;
    int exhausted;
    const char *exhausted_why;
    double max_blackout;
    int64_t leaked_total;
    int64_t sdc_total;
    int64_t event_log_errors; /* rank 0: events the log could not take (counted, reported) */

    /* Step counters known to every rank alike. */
    int64_t n_drain, n_restore, n_retry_moves, n_rollbacks, n_replayed, n_leaked;
    int64_t n_replayed_blocks, n_replayed_block_steps, n_replicas_lost, n_replicas_retaken;
    int64_t n_replicas_moved; /* replicas copied to a new buddy (their block came to their node) */

    /* Log. */
    af_payload_t mine;   /* this step's payload */
    af_payload_t *batch; /* flush_interval + 1 payloads waiting for the next gather */
    int64_t n_batch;
    af_step_row_t *rows;  /* rank 0: the rows of the batch */
    af_payload_t *all;    /* rank 0: nranks x (flush_interval + 1) gathered payloads */
    double *phases;       /* rank 0: AF_NPHASES x nranks of one row */
    af_step_row_t totals; /* rank 0: counters summed over the run */
    af_log_t *log;
    const char *out_path;
    double prev_step_us;
    double prev_log_us;
    int progress;            /* rank 0: AF_PROGRESS_* */
    int quiet;               /* -q: no summary, no estimate of the run's time */
    int progress_estimated;  /* rank 0: the estimate after the first steps is done */
    int progress_shown;      /* rank 0: a progress line was written */
    double progress_last_us; /* rank 0: when the last one was */
} af_run_state_t;

/* Progress on rank 0's stderr: none, repainted in place on a terminal (\r), or plain lines
 * every AF_PROGRESS_LINE_S seconds (--progress where stderr is a file or a pipe). */
enum { AF_PROGRESS_OFF = 0, AF_PROGRESS_REPAINT = 1, AF_PROGRESS_LINES = 2 };
#define AF_PROGRESS_LINE_S 10.0

/* The injection counter of a compute pass: executed step x 8 + retry round, so a retry (or a
 * replay after a rollback) draws fresh corruption, whatever unit it runs on. */
static inline uint64_t af_inject_key(const af_run_state_t *r, int round)
{
    return (uint64_t)r->tick * 8U + (uint64_t)round;
}

/* detect = sampled: the turn of block b in the rotation of sample_period steps (drawn from the
 * seed and the block alone); block b is twinned in the steps whose tick % sample_period is its
 * turn, so every block is checked once every sample_period steps. */
static inline int64_t af_sample_turn(const af_run_state_t *r, int64_t b)
{
    return (int64_t)(af_hash4((uint64_t)r->cfg.seed, 0x5a3b1e, (uint64_t)b, 0) %
                     (uint64_t)r->sample_period);
}

/* The index of unit u (one of this rank's own) in the tables of own units. */
static inline int64_t af_own_unit(const af_run_state_t *r, int64_t u)
{
    return u - r->own_u0;
}

/* halo.c */
af_result_t af_halo_init(af_run_state_t *r);
void af_halo_destroy(af_run_state_t *r);
/* Packs the committed state's edges, diagnostics and status into xchg_cur and completes it:
 * each published block's neighbours' edges from their ranks (or, over nccl, the whole vector
 * combined on the device), and the fleet's figures (mass_now, energy_now, leaked_now,
 * stop_now, the sorted fenced list). Collective. */
af_result_t af_exchange(af_run_state_t *r);
/* The same completion after the backend's step graph packed xchg_cur itself (and, with nccl,
 * combined it); stop_flag is the flag word the graph was given. Collective. */
af_result_t af_halo_after_graph(af_run_state_t *r, uint64_t stop_flag);
/* halo_at[q] = the items of ranks before q in count[] (where q's items start in a buffer cut
 * by rank); returns the total. */
int64_t af_halo_offsets(af_run_state_t *r, const int64_t *count);
/* Posts, to every rank q, send's cs[q] items (in rank order) and receives cr[q] items from
 * it into recv (in rank order), items of `words` words; *got is the items received, and the
 * bytes sent count in mine.count[counter]. One batch of point-to-point transfers (not
 * collective). */
af_result_t af_halo_post(af_run_state_t *r, uint64_t *send, const int64_t *cs, uint64_t *recv,
                         const int64_t *cr, int words, int64_t *got, int counter);
/* xchg_prev <-> xchg_cur, and their device mirrors (a copy while the step graph is on). */
af_result_t af_exchange_swap(af_run_state_t *r);

/* step.c */
af_result_t af_step_init(af_run_state_t *r);
/* Decides backend.graph for this run and, when on, prepares the backend's step graph over the
 * exchange buffers (start-up only; sets graph_on and graph_why). */
af_result_t af_step_graph_init(af_run_state_t *r);
void af_step_destroy(af_run_state_t *r);
af_result_t af_step(af_run_state_t *r, int *stop);
af_result_t af_step_log(af_run_state_t *r, int final);

/* recover.c */
/* The kernels' control of global slot g, when local: its block, and its unit's mode and
 * corruption probability from unit_state and unit_p. */
void af_slot_control(af_run_state_t *r, int64_t g);
af_result_t af_replicas_init(af_run_state_t *r);
af_result_t af_replicas_refresh(af_run_state_t *r);
/* After every committed step: the read-set of each block at the committed state (the two
 * neighbour edges its next step reads) into the log beside its replica, sent there by the
 * block's rank. Collective. */
af_result_t af_replicas_log_edges(af_run_state_t *r);
/* recovery.replay = local: takes the replicas of live blocks whose replica is lost again from
 * their committed state (after the step's commit). Returns the number re-taken. */
af_result_t af_replicas_retake(af_run_state_t *r, int64_t *n_retaken);
/* Every rank, after the step's moves: the replica of each block that came onto its replica's node
 * (a device of the same node with two nodes or more, the same device with one) is copied to the
 * block's buddy device (rep_dev; the data stays where it is kept, rep_step is unchanged). The
 * blocks in r->items, in the order they first moved, their number in *n_moved. Visits the
 * blocks the placement moved since the last call or refresh (its list, which it empties), not
 * the fleet's. No allocation. */
void af_replicas_follow(af_run_state_t *r, int64_t *n_moved);
/* Every rank, in the plan: the replicas kept in the memory of the devices this step's health
 * changes took out of the job whole, and of the devices whose memory is reset (resets[0..n)),
 * are lost (rep_step = -1); calls lost(r, b, step) for each before it is marked. No allocation. */
void af_replicas_lose_devices(af_run_state_t *r, const af_health_change_t *ch, int64_t n_changes,
                              const int64_t *resets, int64_t n_resets,
                              void (*lost)(af_run_state_t *r, int64_t b, int64_t step));
/* Every block back to its replica step (recovery.replay = global). */
af_result_t af_rollback(af_run_state_t *r);
/* Every block back to the initial state, logical step 0: what is left when a block and its
 * replica were lost together. Refreshes every replica. */
af_result_t af_restart(af_run_state_t *r);
af_result_t af_apply_moves(af_run_state_t *r, const af_move_t *moves, int64_t n, int restore_data);
/* Twins for the blocks on FADING units: all blocks, or only those of a retry round's moves. */
af_result_t af_dmr_begin(af_run_state_t *r, const af_move_t *only, int64_t n_only,
                         int64_t *n_twins);
af_result_t af_dmr_end(af_run_state_t *r, int64_t n_twins);
af_result_t af_retry_fenced(af_run_state_t *r, int64_t *n_retried);

#endif
