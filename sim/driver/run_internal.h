/* agefence run driver internals: the run's state, the composition of the parts (af_run_state_t),
 * shared by the driver's files. Each part's state is its own struct behind its own header:
 * the shard (sim/plan/shard.h), the halo (sim/exchange/halo.h), recovery
 * (sim/recovery/recovery.h), and the driver's health (health.h), throttling (throttle.h) and
 * step log (steplog.h); the small driver-only groups (the step graph, the tallies, progress,
 * memory) are here. Calls go one way: run.c -> step_init.c, step.c, steplog.c, memory.c;
 * step.c -> health.c, throttle.c, steplog.c; health.c -> steplog.c; and from the driver down
 * to recovery, the exchange, the plan, the fleet model and io (tests/layers.py checks the
 * sub-folders' rules, that there is no cycle, and that no two files call each other). */
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
#include "../plan/shard.h"
#include "../exchange/halo.h"
#include "../recovery/recovery.h"
#include "../fleet/straggler.h"
#include "health.h"
#include "steplog.h"
#include "throttle.h"

/* Retry rounds within one step before giving up (a retry runs on a healthy unit, without
 * injection: a second round means something is wrong). */
#define AF_MAX_RETRY_ROUNDS 6

/* The memory figures of /final (sim/driver/run.c). */
#define AF_NMEM 5

/* The backend's step graph (backend.graph): steady-state steps run as the backend's graph_run
 * (step.c); while it is on the halo's device buffers are pinned (af_halo_t.pinned). */
typedef struct af_graph_state {
    int on;
    af_graph_io_t gio;
    af_graph_reduce_t greduce; /* gio.reduce: the nccl fabric's all-reduce, inside the graph */
    char why[200];
    char backend_why[200];
} af_graph_state_t;

/* Step counters known to every rank alike (the replicas' own are in af_replicas_t). */
typedef struct af_tally {
    int64_t n_drain, n_restore, n_retry_moves, n_leaked;
    int64_t n_replayed_blocks, n_replayed_block_steps, n_replicas_retaken;
    int64_t n_replicas_moved; /* replicas copied to a new buddy (their block came to their node) */
    int64_t run_drains, run_restores, run_retry_moves, run_rollbacks, run_replayed;
    int64_t run_replayed_blocks;
    int64_t run_one_pass; /* steps whose kernel and halo phases ran as the fused step */
    int64_t leaked_total;
    int64_t sdc_total;
    double max_blackout;
} af_tally_t;

/* Progress and the run's end. */
typedef struct af_progress {
    double sim_hours;
    int stop_signal;
    int exhausted;
    const char *exhausted_why;
    int mode;       /* rank 0: AF_PROGRESS_* */
    int quiet;      /* -q: no summary, no estimate of the run's time */
    int estimated;  /* rank 0: the estimate after the first steps is done */
    int shown;      /* rank 0: a progress line was written */
    double last_us; /* rank 0: when the last one was */
    double ref_s;   /* rank 0: the serial reference check's estimated seconds (-1: none) */
    double step_us; /* rank 0: recent wall time a step (moving average), for the ETA */
    double prev_us; /* rank 0: when the last step ended */
    int64_t timed;  /* rank 0: steps in step_us */
} af_progress_t;

/* Memory: this rank's budget, its resident memory before start-up, and (after the verdict)
 * the largest over the ranks of budget startup and peak, baseline, allocator peak and resident
 * peak, for /final. */
typedef struct af_memuse {
    af_memory_t budget;
    double rss_baseline;
    double max[AF_NMEM];
} af_memuse_t;

/* A run: the composition of the parts. The driver owns every part; the exchange and recovery
 * are handed the shard (and recovery the halo) at start-up. */
typedef struct af_run_state {
    af_shard_t s;     /* sim/plan/shard.h */
    af_halo_t halo;   /* sim/exchange/halo.h */
    af_recovery_t rc; /* sim/recovery/recovery.h: replicas, transfers, twins, detectors */
    af_graph_state_t graph;
    /* The fused step's outputs (sim/driver/step.c): its lists are the halo's pub_blocks and
     * fenced_mine, notable (halo.blocks entries, step_init.c) and committed_now. */
    af_step_out_t fused;
    af_health_t health;
    af_throttle_t thr;
    af_tally_t tally;
    af_steplog_t slog;
    af_progress_t prog;
    af_memuse_t mem;
} af_run_state_t;

/* Progress on rank 0's stderr: none, repainted in place on a terminal (\r), or plain lines
 * every AF_PROGRESS_LINE_S seconds (--progress where stderr is a file or a pipe). */
enum { AF_PROGRESS_OFF = 0, AF_PROGRESS_REPAINT = 1, AF_PROGRESS_LINES = 2 };
#define AF_PROGRESS_LINE_S 10.0

/* step.c */
af_result_t af_step_init(af_run_state_t *r);
/* Decides backend.graph for this run and, when on, prepares the backend's step graph over the
 * exchange buffers (start-up only; sets graph_on and graph_why). */
af_result_t af_step_graph_init(af_run_state_t *r);
/* The watchdog fired: a wait of the step passed run.step_timeout on r->s.fab (its timed_out is
 * set). Takes the census of the ranks still there, writes /final@exit_reason = hung on rank 0
 * when it is there, and ends the launch with AF_EXIT_HUNG (sim/driver/hung.c). Never returns. */
void af_run_end_hung(af_run_state_t *r);
void af_step_destroy(af_run_state_t *r);
/* Frees, once the steps are over, the largest tables no later part of the run reads (the
 * replicas' states and edge logs, the plan's change list): the room the verdict's gather and
 * serial reference take instead (sim/driver/memory.c). */
void af_step_release(af_run_state_t *r);
af_result_t af_step(af_run_state_t *r, int *stop);

#endif
