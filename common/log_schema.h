/* agefence log schema: the one list of per-step columns and per-rank phases, shared by the
 * writer (sim/io/log.c), the reader (common/logfile.c), the checker and report (analysis/) and the
 * tests. Bump AF_SCHEMA_VERSION when a reader of the old schema would misread the new one. */
#ifndef AF_LOG_SCHEMA_H
#define AF_LOG_SCHEMA_H

#include <stdint.h>

/* 3: the commit record is the dataset /committed (was /steps@committed); /final@event_log_errors
 * and /steps/unverified_commits. 4: /steps/replayed_blocks and replayed_block_steps (blocks
 * replayed alone from their replicas), the replica_lost event, and a restore's detail is the
 * logical step its data comes from; /steps/halo_bytes and replica_log_bytes, /ranks/plan_us, and
 * mass and energy are exact sums. 5: /steps/sdc_harmful and /final@sdc_harmful_total (the
 * corruption mix of [corruption]), /units/silent; corrupt_harmful, the detected_* split,
 * abft_false_alarms, quarantined_units, the suspect event and /units/quarantined_step (the
 * detectors of recovery.detect); /interruptions (the interruptions of a synchronous job,
 * written by the run), and the `interrupt` event (job-level causes). */
#define AF_SCHEMA_VERSION 5

/* /steps/<name>: one value per step. X(name, type, doc) with type I64 or F64. */
#define AF_STEP_COLUMNS(X)                                                                         \
    X(step, I64, "executed step number, from 1, contiguous (replays after a rollback count)")      \
    X(state_step, I64, "logical step of the committed state after this executed step")             \
    X(sim_hours, F64, "simulated hours of service at the end of the step")                         \
    X(mass, F64, "sum of u*dx after the step: the blocks' masses summed exactly, rounded once")    \
    X(energy, F64, "sum of u^2/2*dx after the step, summed like mass")                             \
    X(healthy_units, I64, "units HEALTHY after the step")                                          \
    X(fading_units, I64, "units FADING after the step")                                            \
    X(dead_units, I64, "units DEAD after the step")                                                \
    X(straggler_units, I64,                                                                        \
      "units of declared straggler devices, and suspects, the model still calls HEALTHY")          \
    X(slow_units, I64, "live units running slower than nominal (throttled) in the step")           \
    X(blackout_frac, F64, "dead_units / all units")                                                \
    X(corrupt_injected, I64, "corrupted output elements injected (FADING and silent units)")       \
    X(corrupt_harmful, I64,                                                                        \
      "of corrupt_injected, those whose relative error exceeds corruption.harm_rel_error")         \
    X(corrupt_detected, I64, "injected corruptions caught (non-finite count, abft or a twin)")     \
    X(detected_finite, I64, "of corrupt_detected, in results fenced for a non-finite output")      \
    X(detected_abft, I64, "of corrupt_detected, in results fenced by the mass balance (abft)")     \
    X(detected_twin, I64,                                                                          \
      "of corrupt_detected, in results a twin disagreed with (dmr or sampled; fenced or "          \
      "replaced)")                                                                                 \
    X(abft_false_alarms, I64, "results abft fenced with nothing injected into them")               \
    X(fenced, I64, "slot results not committed because they failed containment")                   \
    X(retried, I64, "blocks recomputed on a healthy unit within the step")                         \
    X(nonfinite_leaked, I64, "non-finite values committed to state (must be 0)")                   \
    X(sdc_undetected, I64, "finite corruptions committed (silent data corruption)")                \
    X(sdc_harmful, I64,                                                                            \
      "of sdc_undetected, those whose relative error exceeds corruption.harm_rel_error")           \
    X(unverified_commits, I64,                                                                     \
      "blocks of FADING units committed without a DMR twin (detect = dmr, no room for one)")       \
    X(twins, I64, "twin computations (dmr and sampled, main pass and retries) in the step")        \
    X(quarantined_units, I64,                                                                      \
      "units declared suspect in the step (fenced recovery.quarantine_after times) and drained")   \
    X(moves_drain, I64, "blocks moved off FADING units")                                           \
    X(moves_restore, I64, "blocks restored from replicas after a death")                           \
    X(moves_retry, I64, "blocks re-homed after being fenced")                                      \
    X(rollbacks, I64,                                                                              \
      "coordinated rollbacks of every block to the replica step (or, a block lost with its "       \
      "replica, to step 0)")                                                                       \
    X(replayed_steps, I64, "steps recomputed because of a rollback (lost work)")                   \
    X(replayed_blocks, I64,                                                                        \
      "blocks restored from an older replica and replayed alone to the committed step "            \
      "(recovery.replay = local)")                                                                 \
    X(replayed_block_steps, I64, "block-steps those replays recomputed (lost work, per block)")    \
    X(halo_bytes, I64,                                                                             \
      "bytes the ranks sent each other in the step's halos (neighbour edges, the read-sets "       \
      "of moved blocks, the figures' all-reduce, fenced lists), over all ranks")                   \
    X(replica_log_bytes, I64,                                                                      \
      "bytes the ranks sent each other for the edge logs beside the replicas, over all ranks")     \
    X(allocs_after_init, I64, "allocations after start-up, cumulative over ranks (must be 0)")     \
    X(comms_after_init, I64, "communicators created after start-up (must be 0)")

/* /ranks/<name>: step x rank wall times in microseconds. */
#define AF_PHASES(X)                                                                               \
    X(step_us, "whole step, from its start to the start of the next")                              \
    X(kernel_us, "masked compute, containment, retries and commit (throttle_us included; in a "    \
                 "step-graph step also the pack and, with nccl, the all-reduce)")                  \
    X(throttle_us, "modelled throttling delay the rank spent as a busy wait inside kernel_us")     \
    X(halo_us, "edge pack and exact all-reduce of edges and diagnostics (in a step-graph step "    \
               "only a host all-reduce after the graph)")                                          \
    X(coord_us, "coordinator: the aging of the rank's units, the all-gathers of the health "       \
                "changes, the plan and its digest check")                                          \
    X(plan_us, "the rank's own share of coord_us: the aging of its units and its plan, without "   \
               "the all-gathers and the digest check")                                             \
    X(moves_us, "applying the move list (slot copies and cross-rank transfers)")                   \
    X(replica_us, "replica refresh")                                                               \
    X(log_us, "gathering the row to rank 0 and writing the log")                                   \
    X(sink_us, "pacing wait after the step (inside step_us; 0 with pacing off)")

#define AF_CTYPE_I64 int64_t
#define AF_CTYPE_F64 double
#define AF_ISINT_I64 1
#define AF_ISINT_F64 0

/* The column and phase names and docs, in schema order (common/log_schema.c). */
extern const char *const af_step_column_names[];
extern const int af_step_column_is_int[];
extern const char *const af_step_column_docs[];
extern const char *const af_phase_names[];
extern const char *const af_phase_docs[];

typedef struct af_step_row {
#define AF_X(name, type, doc) AF_CTYPE_##type name;
    AF_STEP_COLUMNS(AF_X)
#undef AF_X
} af_step_row_t;

enum {
#define AF_X(name, doc) AF_PHASE_##name,
    AF_PHASES(AF_X)
#undef AF_X
        AF_NPHASES
};

enum {
#define AF_X(name, type, doc) AF_COL_##name,
    AF_STEP_COLUMNS(AF_X)
#undef AF_X
        AF_NCOLUMNS
};

/* Causes of an interruption of a synchronous job, as the log records them and the report counts
 * them: the failure domains that lose hardware (a device's units by wear-out, sudden failure or
 * a script; a whole device; a whole node), then the job-level causes that lose none, named after
 * the Llama 3 405B record's causes (docs/failure-model.md). X(name, grain, doc); grain is
 * where one strikes: job, node or device. The value of a cause is its index here: an `interrupt`
 * event's detail, and the report's by_cause order. Append only: the numbers are in logs. */
#define AF_INTR_CAUSES(X)                                                                          \
    X(wearout, device, "a device's units died of wear-out")                                        \
    X(sudden, device, "a device's units died suddenly (record: GPU SRAM)")                         \
    X(scripted, device, "a device's units were killed by a scripted event")                        \
    X(device, device,                                                                              \
      "a whole device was lost (record: faulty GPU, HBM3, system processor, "                      \
      "thermal interface and sensor)")                                                             \
    X(node, node,                                                                                  \
      "a whole node was lost (record: host maintenance, SSD, power supply, chassis, "              \
      "IO expansion board, CPU, system memory)")                                                   \
    X(software, job, "record: software bug")                                                       \
    X(network, node, "record: network switch/cable")                                               \
    X(nic, node, "record: NIC")                                                                    \
    X(nccl_watchdog, job, "record: NCCL watchdog timeouts")                                        \
    X(sdc, device, "record: silent data corruption")                                               \
    X(dependency, job, "record: dependency")                                                       \
    X(hbm, device, "a device's memory lost its state (record: HBM3); its units live on")           \
    X(link, device,                                                                                \
      "a device's fabric link was lost (record: NIC); the device lives on, out of the job")

enum {
#define AF_X(name, grain, doc) AF_INTR_##name,
    AF_INTR_CAUSES(AF_X)
#undef AF_X
        AF_NINTR
};
/* The job-level causes, AF_INTR_FIRST_JOB to AF_INTR_LAST_JOB: they kill no unit and move no
 * block. hbm, appended after them (the numbers are in logs), kills no unit either, but every
 * block of its device is restored from its replica (docs/failure-model.md). */
#define AF_INTR_FIRST_JOB AF_INTR_software
#define AF_INTR_LAST_JOB  AF_INTR_dependency
#define AF_NJOB_INTR      (AF_INTR_LAST_JOB + 1 - AF_INTR_FIRST_JOB)
#define AF_INTR_IS_JOB(c) ((c) >= AF_INTR_FIRST_JOB && (c) <= AF_INTR_LAST_JOB)
enum { AF_GRAIN_JOB = 0, AF_GRAIN_NODE = 1, AF_GRAIN_DEVICE = 2 };
/* Names ("wearout", ..., "dependency"), grains (AF_GRAIN_*) and docs of the causes. */
extern const char *const af_intr_names[AF_NINTR];
extern const int af_intr_grain[AF_NINTR];
extern const char *const af_intr_docs[AF_NINTR];

/* One /events row. kind is one of "fade", "death", "sudden", "drain", "restore", "retry",
 * mass and energy are exact sums. 5: /steps/sdc_harmful and /final@sdc_harmful_total (the
 * corruption mix of [corruption]), /units/silent; corrupt_harmful, the detected_* split,
 * abft_false_alarms, quarantined_units, the suspect event and /units/quarantined_step (the
 * detectors of recovery.detect); /interruptions (the interruptions of a synchronous job,
 * written by the run), and the `interrupt` event (job-level causes). */
typedef struct af_event_row {
    int64_t step;
    char kind[16];
    int64_t block;
    int64_t from_device;
    int64_t from_unit;
    int64_t from_slot;
    int64_t to_device;
    int64_t to_unit;
    int64_t to_slot;
    int64_t detail;
} af_event_row_t;

/* The HDF5 memory type (hid_t) of an af_event_row_t, as /events stores it; the caller closes
 * it with H5Tclose. */
int64_t af_log_event_type(void);

/* One /interruptions row (schema 5): what interrupted a synchronous job in one executed step.
 * The deaths of a step give one row per node lost (cause node), per device lost (device), and
 * per device whose units died by wear-out, sudden failure or a script (in the order the step's
 * death events first name them); each `interrupt` event gives one row. device and node are -1
 * where the cause has none (a node's loss names no device; a job-level cause at the job's grain
 * names neither); a device's node is device / devices_per_node. sim_hours is the step's
 * /steps/sim_hours. Derived from /events it is the same table (analysis/interrupts.h), less
 * time_h.
 *
 * time_h is the simulated hour the interruption happened at, exactly as the model drew it: a
 * drawn job-level or hbm interruption's t_k (sim/fleet/jobintr.h); a device, node or link loss's,
 * or a unit's sudden death's, loss time (sim/fleet/aging.h); a wear-out death's, the hour its age
 * reached its lifetime on the step's linear segment; the earliest of those the row counts (the
 * units of one device dying in one step are one row). A scripted event's is its step's hour, step x
 * sim_hours_per_step. The step the run took it at is the first whose hours reach it, so time_h lies
 * in (hours(step - 1), hours(step)]. Written into logs of schema 5 after the field was added; a log
 * without it reads with time_h = sim_hours (af_logfile_intr_timed says which), and a reader of a
 * log without it misreads nothing, so the schema's number stays 5. */
typedef struct af_intr_row {
    int64_t step;
    double sim_hours;
    int64_t cause; /* AF_INTR_*; names in the dataset's cause_names attribute */
    int64_t device;
    int64_t node;
    double time_h; /* hours, as drawn (above) */
} af_intr_row_t;

/* The HDF5 memory type (hid_t) of an af_intr_row_t; the caller closes it with H5Tclose. */
int64_t af_log_intr_type(void);

#endif
