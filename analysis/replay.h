/* agefence-report: goodput by replay. Each recovery policy is a state machine over the
 * wall-clock seconds of a run's window [0, W) (an interruption at W itself is outside it), replayed
 * on the run's own interruptions at their drawn times; interruptions arrive in every state.
 * docs/goodput.md states the model, its assumptions and its check against Daly's closed form.
 *
 * States: working, writing a checkpoint (checkpoint_s) or an in-memory replica (replica_s),
 * restarting (restart_s), recovering from a hardware loss without a restart (remap: detect_s +
 * remap_s; shrink: shrink_s + repartition_s). Work is counted in work seconds: what a healthy
 * fleet does in one wall-clock second; a job that runs on less capacity does less per second.
 *   checkpoint_restart  a checkpoint after every tau_s of work since the last completed one;
 *                       any interruption (while working, writing or restarting) rolls back to
 *                       the last completed checkpoint and starts a restart of restart_s.
 *   remap               agefence's policy, two levels: a replica after every rho_s of work
 *                       since the last replica or checkpoint, a checkpoint after every tau_s
 *                       of work; a hardware loss rolls back to the last replica (or checkpoint,
 *                       whichever is later) and costs detect_s + remap_s, no restart; a
 *                       job-level interruption is handled as checkpoint_restart handles it.
 *   shrink_rebuild      a hardware loss loses the step in flight (at most step_s of work since
 *                       the job last came back to work: a checkpoint or a recovery ended) and costs
 * shrink_s + repartition_s; job-level interruptions as checkpoint_restart. An interruption during a
 * recovery (a restart, a remap, a shrink) starts it again; one during a write loses the write. A
 * write or recovery that ends at the very second an interruption arrives completes first.
 *
 * Capacity, one rule for every policy: a hardware loss takes devices out of service; each is
 * taken back replace_s later while spares last (spare_nodes x devices_per_node devices, drawn in
 * the order of the losses, never returned); the rest stay out. While devices are out, the job
 * works at throughput (devices - out) / devices; for remap a pace series from the run's placement
 * (the most loaded unit's pace) replaces that ratio for as long as no spare has come back (after
 * that the run's placement no longer describes the replayed fleet).
 *
 * Useful work is the work done and not rolled back by W: the work in the last completed
 * checkpoint plus the work done since (ETTR = useful / W; no interruption and no checkpoint
 * give exactly 1). Daly's T_s counts only completed segments; the difference is at most tau_s
 * of work, reported apart as checkpointed_s.
 *
 * Cost: one replay is O(interruptions + checkpoints + replicas + capacity and pace changes),
 * whatever the fleet's size; nothing is allocated; nothing of the machine's clock enters. */
#ifndef AF_REPLAY_H
#define AF_REPLAY_H

#include <stdint.h>

#include "../common/af_result.h"

typedef enum af_replay_kind {
    AF_REPLAY_HARDWARE = 0, /* devices lost (a device, a node, a device's units), or a fault of
                               the hardware that loses none and is recovered in place (a device
                               memory error: devices_lost 0) */
    AF_REPLAY_JOB = 1       /* a job-level cause: no hardware lost, the job's state is gone */
} af_replay_kind_t;

/* One interruption at its drawn time: the log's /interruptions time_h x 3600 (logs written
 * before time_h have only the step's hours, sim_hours), its kind and devices from the cause's
 * grain. */
typedef struct af_replay_intr {
    double t_s;           /* wall-clock seconds from the window's start */
    int32_t kind;         /* af_replay_kind_t */
    int64_t devices_lost; /* hardware: the devices it took out of service (>= 0; 0: in place,
                             the capacity unchanged); job: 0 */
    int64_t node;         /* hardware: the node it struck, -1 when unknown (not used yet) */
} af_replay_intr_t;

/* A piecewise-constant relative throughput: pace from t_s on, until the next point (before the
 * first point: 1). 1 is a healthy fleet; lower while the most loaded unit holds more blocks
 * (from the log's /steps and /events). */
typedef struct af_replay_pace {
    double t_s;
    double pace; /* in [0, 1] */
} af_replay_pace_t;

typedef struct af_replay_timeline {
    double window_s;              /* W: the run's simulated hours x 3600 (> 0) */
    int64_t devices;              /* the fleet (>= 1) */
    const af_replay_intr_t *intr; /* sorted by t_s (ties allowed); times in [0, W) count */
    int64_t n_intr;
    const af_replay_pace_t *pace; /* remap's pace series, sorted by t_s; NULL: none */
    int64_t n_pace;
} af_replay_timeline_t;

/* Seconds are wall-clock seconds, except tau_s and rho_s: seconds of work. */
typedef struct af_replay_params {
    double checkpoint_s;      /* delta: writing one persistent checkpoint */
    double restart_s;         /* R: restarting from the last checkpoint */
    double tau_s;             /* the checkpoint interval (> 0; INFINITY: no checkpoint) */
    double replica_s;         /* writing one in-memory replica (remap) */
    double rho_s;             /* the replica interval (> 0; INFINITY: no replica) */
    double detect_s;          /* noticing a hardware loss (remap) */
    double remap_s;           /* moving the lost blocks onto survivors (remap) */
    double shrink_s;          /* shrinking the communicator (shrink_rebuild) */
    double repartition_s;     /* repartitioning the lost share (shrink_rebuild) */
    double step_s;            /* one step: the work a shrink loses in flight */
    int64_t spare_nodes;      /* spares of the fleet, in nodes */
    double replace_s;         /* a lost device's place taken back by a spare after this long */
    int64_t devices_per_node; /* >= 1 */
} af_replay_params_t;

typedef enum af_replay_policy {
    AF_REPLAY_CHECKPOINT_RESTART = 0,
    AF_REPLAY_REMAP = 1,
    AF_REPLAY_SHRINK_REBUILD = 2,
    AF_REPLAY_NPOLICY = 3
} af_replay_policy_t;

/* What one policy did over the window. The wall-clock parts add up to W:
 * useful_s + lost_s + capacity_loss_s + checkpoint_time_s + replica_time_s + restart_time_s +
 * recover_time_s = W (to rounding). */
typedef struct af_replay_result {
    double ettr;              /* useful_s / W */
    double useful_s;          /* work done and not rolled back by W */
    double checkpointed_s;    /* work in the last completed checkpoint at W */
    double lost_s;            /* work done and rolled back */
    double capacity_loss_s;   /* working seconds not worked for lost capacity: the integral of
                                 (1 - throughput) over the time spent working */
    double checkpoint_time_s; /* writing checkpoints, interrupted writes included */
    double replica_time_s;    /* writing replicas, interrupted writes included */
    double restart_time_s;    /* restarting, interrupted restarts included */
    double recover_time_s;    /* detecting and remapping, or shrinking and repartitioning */
    int64_t interruptions;    /* met in [0, W) */
    int64_t checkpoints;      /* completed */
    int64_t replicas;         /* completed */
} af_replay_result_t;

/* Built-in parameters, the [goodput] defaults where they exist (analysis/goodput.c): tau_s and
 * rho_s INFINITY, no spares. */
void af_replay_defaults(af_replay_params_t *p);

/* Replays policy on tl with p into *out. AF_ERR_USAGE, with a one-line message
 * (af_error_message) naming the field or the interruption, when tl or p is bad: W <= 0, a
 * negative, NaN or infinite duration (tau_s and rho_s may be infinite, not <= 0), unsorted or
 * non-finite times, a hardware loss of a negative count of devices, a pace outside [0, 1]. */
af_result_t af_replay_run(const af_replay_timeline_t *tl, const af_replay_params_t *p,
                          af_replay_policy_t policy, af_replay_result_t *out);

/* Young's interval sqrt(2 delta M) and Daly's higher-order one,
 * sqrt(2 delta M) [1 + (1/3) sqrt(delta / (2M)) + (1/9) delta / (2M)] - delta for delta < 2M,
 * else M. M is the mean time between the interruptions the interval guards against; M <= 0 or
 * infinite gives INFINITY (no checkpoint). */
double af_replay_young(double delta_s, double mtbi_s);
double af_replay_daly(double delta_s, double mtbi_s);

/* The interruptions an interval guards against on tl, for policy: for tau_s every interruption
 * under checkpoint_restart, the job-level ones under remap and shrink_rebuild; for rho_s
 * (remap) the hardware losses. M = W / that count (INFINITY with none). */
double af_replay_mtbi(const af_replay_timeline_t *tl, af_replay_policy_t policy, int replica);

/* An interval a user can set: a whole number k >= 1 of training steps (step_s). x_s rounded to
 * the nearest such multiple (at least one step); the window W where that multiple reaches W or
 * x_s is infinite (one interval over the whole window: no write in it). NaN stays NaN. */
double af_replay_whole_steps(double x_s, double step_s, double window_s);

/* The interval to search: the checkpoint interval (tau_s) or remap's replica interval (rho_s). */
typedef enum af_replay_knob { AF_REPLAY_TAU = 0, AF_REPLAY_RHO = 1 } af_replay_knob_t;

/* What a search maximises: one history's ETTR, or a group's mean ETTR, at tau_s and rho_s. */
typedef af_result_t (*af_replay_objective_t)(void *ctx, double tau_s, double rho_s, double *ettr);

enum { AF_REPLAY_KNOB_TAU = 1, AF_REPLAY_KNOB_RHO = 2 };

/* Where a search looks: whole multiples of step_s up to the window. */
typedef struct af_replay_space {
    double step_s;         /* one training step (> 0): intervals are k x step_s, k >= 1 */
    double window_s;       /* W: a multiple at or past it is W (no write in the window) */
    double bound_window_s; /* the shortest window the objective's histories have (<= W) */
    double checkpoint_s;   /* the writes' costs: they bound the ETTR of short intervals */
    double replica_s;
    int knobs; /* AF_REPLAY_KNOB_TAU, AF_REPLAY_KNOB_RHO or both (remap's two levels) */
} af_replay_space_t;

/* The whole-step intervals that maximise f: first the candidates cand[c] = {tau_s, rho_s}
 * rounded to whole steps (af_replay_whole_steps), in their order (a tie keeps the earlier: the
 * first is the reference); for both knobs a coarse log-spaced scan of the plane, then the
 * replica, the checkpoint and the replica interval again one at a time; for one knob that
 * coordinate alone (a coordinate not searched keeps cand[0]'s value as it is). Each coordinate:
 * a log-spaced scan of [1, W / step_s] steps, then a golden-section refinement on whole steps
 * around the best point. A point whose ETTR cannot beat the best so far (an interval's ETTR is
 * at most x / (x + write) + x / W) is skipped. The result is never below any candidate's.
 * *tau_s, *rho_s and *ettr get the best point; errors are f's, or AF_ERR_USAGE for a bad
 * space. */
af_result_t af_replay_optimise(const af_replay_space_t *sp, af_replay_objective_t f, void *ctx,
                               const double (*cand)[2], int ncand, double *tau_s, double *rho_s,
                               double *ettr);

/* Searches the knob's interval (the other parameters as p holds them) for the largest ETTR on
 * tl, over whole multiples of p->step_s (af_replay_optimise) with W (no write), Young's and
 * Daly's intervals for af_replay_mtbi as candidates: its ETTR is never below theirs at the whole
 * steps they round to. *best_s gets the interval (W: none needed), *out what it gives. Errors
 * as af_replay_run. */
af_result_t af_replay_search(const af_replay_timeline_t *tl, const af_replay_params_t *p,
                             af_replay_policy_t policy, af_replay_knob_t knob, double *best_s,
                             af_replay_result_t *out);

const char *af_replay_policy_name(af_replay_policy_t policy);

#endif
