/* agefence configuration: INI scenario files (libinih), --set overrides, validation with the
 * file, line and allowed range of every bad value, and the resolved scenario printed back in
 * the same INI form. configs/README.md documents every key. */
#ifndef AF_CONFIG_H
#define AF_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../../common/af_result.h"
#include "../../common/log_schema.h"
#include "../../kernels/af_workload.h"

#define AF_MAX_EVENTS 64
/* Job-level interruptions: the most one cause may make in a step on average (rate x its grain's
 * count x sim_hours_per_step; validation holds every cause to it), and the most the run logs in
 * one step (sim/fleet/jobintr.h: what is due beyond it moves to the next step; with every cause at
 * the bound the chance of that is below 1e-100). */
#define AF_JOBINTR_MEAN_MAX 4
#define AF_JOBINTR_MAX_STEP 256
#define AF_NAME_LEN         64
/* recovery.quarantine_after's ceiling: the quarantine counts each unit's fences, saturating
 * here, in the word a unit of the fleet that later holds its declaration step (af_detect_t). */
#define AF_QUARANTINE_MAX 65535
#define AF_PATH_LEN       512

/* workload.dt = auto: this fraction of the explicit scheme's stability limit,
 * min(0.5*dx^2/nu, 2*nu/umax^2), for the configured fleet (af_config_dt_limit). */
#define AF_DT_AUTO_FRACTION 0.8

enum { AF_BACKEND_AUTO = 0, AF_BACKEND_CPU = 1, AF_BACKEND_CUDA = 2 };
enum { AF_FABRIC_AUTO = 0, AF_FABRIC_MPI = 1, AF_FABRIC_NCCL = 2 };
enum { AF_GRAPH_AUTO = 0, AF_GRAPH_ON = 1, AF_GRAPH_OFF = 2 };
/* backend.step_pass: the eager step's passes over the shard (sim/driver/step.c). */
enum { AF_STEP_PASS_AUTO = 0, AF_STEP_PASS_ONE = 1, AF_STEP_PASS_SEPARATE = 2 };
/* recovery.detect: the index of its value in the key's list (sim/io/config.c), and the detectors
 * each value turns on (af_detect_flags). The finite check is always on. */
enum { AF_DETECT_FINITE = 0, AF_DETECT_DMR = 1 };
enum { AF_DET_DMR = 1, AF_DET_ABFT = 2, AF_DET_SAMPLED = 4 };
static inline int af_detect_flags(int detect)
{
    static const int flags[] = {0,
                                AF_DET_DMR,
                                AF_DET_ABFT,
                                AF_DET_SAMPLED,
                                AF_DET_ABFT | AF_DET_DMR,
                                AF_DET_ABFT | AF_DET_SAMPLED,
                                AF_DET_SAMPLED | AF_DET_DMR,
                                AF_DET_ABFT | AF_DET_SAMPLED | AF_DET_DMR};
    return detect >= 0 && detect < 8 ? flags[detect] : 0;
}
/* The values of recovery.detect, in the order of its index. */
#define AF_DETECT_VALUES                                                                           \
    "finite|dmr|abft|sampled|abft+dmr|abft+sampled|sampled+dmr|abft+sampled+dmr"
static inline const char *af_detect_name(int detect)
{
    static const char *const names[] = {
        "finite",   "dmr",          "abft",        "sampled",
        "abft+dmr", "abft+sampled", "sampled+dmr", "abft+sampled+dmr"};
    return detect >= 0 && detect < 8 ? names[detect] : "?";
}
enum {
    AF_EVENT_KILL = 0,
    AF_EVENT_FADE = 1,
    AF_EVENT_SLOW = 2,
    AF_EVENT_LOSE_REPLICAS = 3,
    AF_EVENT_KILL_DEVICE = 4,  /* every unit of `device` */
    AF_EVENT_KILL_NODE = 5,    /* every unit of every device of `node` */
    AF_EVENT_INTERRUPT = 6,    /* a job-level interruption of `cause`: kills no unit */
    AF_EVENT_RESET_DEVICE = 7, /* `device`'s memory loses its state (cause hbm): kills no unit */
    AF_EVENT_LINK_DOWN = 8     /* `device`'s fabric link fails (cause link): its units leave the
                                  job, the device lives on */
};
enum { AF_REPLAY_LOCAL = 0, AF_REPLAY_GLOBAL = 1 };
enum { AF_PACING_OFF = 0, AF_PACING_EWMA = 1, AF_PACING_QUANTILE = 2 };

/* A scripted event: at `step`, units [unit_lo, unit_hi] of `device` die, start fading, (slow)
 * run `factor` times as long as nominal from then on (1 restores the nominal speed), or
 * (lose_replicas) lose the replicas of the blocks they hold at that step; kill_device kills
 * every unit of `device`, kill_node every unit of the devices of `node`; interrupt interrupts
 * the job for a job-level `cause` (at `device` for a device-grain cause, at `node` for a
 * node-grain one, when given; -1 when not) and touches no unit; reset_device resets the memory
 * of `device` (an HBM error: its units live on, its blocks are restored from their replicas).
 * Validation resolves
 * every event to the devices [device, dev_hi] and the units [unit_lo, unit_hi] of each. */
typedef struct af_event_cfg {
    int64_t step;
    int action; /* AF_EVENT_* */
    int64_t device;
    int64_t dev_hi; /* the last device (device itself but for kill_node), set by validation */
    int64_t node;   /* kill_node only */
    int64_t unit_lo;
    int64_t unit_hi;
    double factor;     /* slow only */
    int cause;         /* interrupt only: its AF_INTR_* cause (a job-level one) */
    int set_mask;      /* which of step/action/device/units/factor/node/cause were given (bits 1,
                          2, 4, 8, 16, 32, 64) */
    int index;         /* N of [event.N] */
    char where[7][80]; /* where step, action, device, units, factor, node and cause were set */
} af_event_cfg_t;

/* The devices an event covers, [device, device + n): one but for a validated kill_node (an
 * event built without validation, as in tests, covers its device). */
static inline int64_t af_event_devices(const af_event_cfg_t *e)
{
    return e->dev_hi > e->device ? e->dev_hi - e->device + 1 : 1;
}

typedef struct af_config {
    /* [scenario] */
    char name[AF_NAME_LEN];
    int64_t seed;
    int64_t steps;
    int64_t devices; /* 0: one per rank */
    int64_t devices_per_node;
    int64_t units_per_device;
    int64_t blocks;
    int64_t block_len;
    double max_blackout;
    int record; /* the record the scenario is fitted to (0 none; agefence-report's names) */
    /* [workload] */
    int workload; /* AF_WORKLOAD_* (kernels/af_workload.h) */
    int64_t dim;  /* attention: features per token */
    double nu;
    double dt;
    double amplitude;
    double offset;
    /* [backend] */
    int compute;
    int fabric;
    int graph;      /* AF_GRAPH_* */
    int share_gpu;  /* 1: the node's ranks may share its GPUs (cuda compute, mpi fabric) */
    int cpu_kernel; /* AF_CPU_KERNEL_* (kernels/kernels.h): auto, two_pass or fused */
    int step_pass;  /* AF_STEP_PASS_*: auto, one or separate */
    /* [log] */
    char log_path[AF_PATH_LEN];
    int64_t flush_interval;
    /* [run] */
    double step_timeout_s; /* the watchdog: seconds a step may take on the mpi fabric; 0 = off */
    /* [aging] */
    double sim_hours_per_step;
    double weibull_shape;
    double weibull_scale_hours;
    double fade_window;
    double p_max;
    double sudden_rate_per_hour;
    double device_rate_per_hour;
    double node_rate_per_hour;
    double device_shape; /* Weibull shapes of the device and node loss times (1: exponential) */
    double node_shape;
    double link_rate_per_hour; /* fabric link losses per device-hour (a loss time per device, of
                                  Weibull shape link_shape): the device leaves the job */
    double link_shape;
    double hbm_rate_per_hour; /* device memory (HBM) errors per device-hour: Poisson, each one
                                 resets one device's memory (sim/fleet/jobintr.h) */
    /* [interrupt]: job-level interruptions without hardware loss, by cause (index c -
     * AF_INTR_FIRST_JOB), per hour of their grain (the job, a node or a device) */
    double intr_per_hour[AF_NJOB_INTR];
    double t_ambient_k;
    double t_ref_k;
    double ea_ev;
    double hotspot_device_k;
    double hotspot_unit_k;
    double load_delta_k;
    /* [recovery] */
    int64_t max_moves_per_step;
    int64_t replica_interval;
    int detect;               /* index into recovery.detect's values: af_detect_flags */
    double sample_fraction;   /* detect = sampled */
    int64_t quarantine_after; /* fences before a unit is declared suspect (0: never) */
    int drain;
    int replay; /* AF_REPLAY_*: how a block restored from an older replica catches up */
    /* [throttle] */
    /* [corruption]: what a corrupting unit produces (shares summing to 1), when a corrupted
     * value is harmful, and the silent (mercurial) units. */
    double corrupt_nonfinite;
    double corrupt_single_bit;
    double corrupt_multi_mantissa;
    double corrupt_multi_exponent;
    double corrupt_harm_rel;
    double silent_fraction;
    double silent_p;

    double throttle_slowdown;
    double throttle_exponent;
    double throttle_block_us;
    double spike_rate;
    double spike_us;
    double spike_sigma;
    /* [straggler] */
    int straggler_detect;
    double straggler_threshold;
    double straggler_alpha;
    int64_t straggler_patience;
    /* [pacing] */
    int pacing_mode;
    double pacing_gamma;
    double pacing_alpha;
    double pacing_quantile;
    int64_t pacing_warmup;
    /* [metrics] */
    char metrics_textfile[AF_PATH_LEN];
    int64_t metrics_interval;
    /* [goodput]: the real job agefence's history is replayed against (agefence-report) */
    double goodput_step_s;
    double goodput_checkpoint_s;
    double goodput_restart_s;
    double goodput_shrink_s;
    double goodput_repartition_s;
    double goodput_replica_s;
    double goodput_detect_s;
    double goodput_remap_s;
    int64_t goodput_spare_nodes;
    double goodput_replace_s;
    /* [event.N] */
    int n_events;
    af_event_cfg_t events[AF_MAX_EVENTS];
    /* workload.dt was `auto`: dt holds the value it resolved to (AF_DT_AUTO_FRACTION of
     * af_config_dt_limit), which af_config_format prints with a comment saying so. */
    int dt_auto;

    /* Where each key's value came from ("FILE:LINE", "--set", "default"), for error messages;
     * indexed like the key table. */
    char where[96][AF_PATH_LEN + 16];
    /* Notes for the user, one line each ending in '\n' (a key set twice and the value used, an
     * event of the embedded default skipped): af_config_load and af_config_validate add them,
     * the caller prints them (af_config_print_notes) unless told to be quiet. */
    char notes[2048];
} af_config_t;

/* The embedded default scenario (configs/default.ini, compiled in). */
extern const char af_default_ini[];

/* Loads a scenario: the built-in key defaults (the values configs/default.ini gives, except
 * workload.dt = auto and the events), then `file` (or the embedded default scenario when file is
 * NULL), then each "section.key=value" of sets[] in order. Checks each value's type and range on
 * the way, and resolves workload.dt = auto last. On error returns AF_ERR_USAGE with one line in
 * err naming the file, line, key and allowed range. A file with no section and no key (empty,
 * or only blanks and comments) is an error. A key set twice (twice in the file, in the file and
 * by --set, or twice by --set) takes the later value, and a note names both places; a --set
 * over the embedded default scenario is no note. */
af_result_t af_config_load(af_config_t *cfg, const char *file, const char *const *sets, int nsets,
                           char *err, size_t errlen);

/* Parses INI text over the key defaults (tests, and `agefence config` output read back), and
 * resolves workload.dt = auto. */
af_result_t af_config_parse_text(af_config_t *cfg, const char *text, const char *origin, char *err,
                                 size_t errlen);

/* Cross-key checks that need the launch: devices vs ranks, blocks vs devices, stability of the
 * time step, events inside the fleet and the run. An event after the last step is an error,
 * except an event of the embedded default scenario (its text unchanged by --set): when
 * scenario.steps shortens that scenario, such events are removed from cfg, with one note line
 * each in cfg->notes, once every check has passed. */
af_result_t af_config_validate(af_config_t *cfg, int nranks, char *err, size_t errlen);

/* Prints cfg's notes to f, each line as "agefence: note: ...". */
void af_config_print_notes(const af_config_t *cfg, FILE *f);

/* Writes the fully resolved scenario as INI (every key, events last). Returns the length that
 * the whole text needs, like snprintf. */
size_t af_config_format(const af_config_t *cfg, char *out, size_t size);

/* Derived values. */
int64_t af_config_devices(const af_config_t *cfg, int nranks); /* resolves devices = 0 */
/* The scenario's workload (workload.kind), what it takes from the scenario, and the doubles of
 * state per block (block_len cells for burgers, block_len x dim for attention). */
const af_workload_t *af_config_wl(const af_config_t *cfg);
af_wl_config_t af_config_workload(const af_config_t *cfg);
int64_t af_config_cells(const af_config_t *cfg);
/* 1 / (blocks x cells): the grid spacing of the unit domain, the weight of the logged mass. */
double af_config_dx(const af_config_t *cfg);
/* The largest stable dt of the Burgers scheme for this fleet, the workload table's
 * (af_burgers_dt_limit): min(0.5*dx^2/nu, 2*nu/umax^2), umax = |offset| + |amplitude| (the
 * diffusion limit alone when umax = 0), dx = 1 / (blocks x block_len). */
double af_config_dt_limit(const af_config_t *cfg);
/* The units the kill and fade events name, all steps together: a bound on the scripted health
 * changes of any one step. */
int64_t af_config_scripted_units(const af_config_t *cfg);
/* The most executed steps a run makes (replays after rollbacks add executed steps to
 * scenario.steps; the run stops a runaway at 100 x steps + 1000 of them), and so the last step
 * the fleet model is ever asked about. At most AF_TICK_MAX, so that every step the model keeps
 * fits in 32 bits (sim/fleet/evq.h): a bound only a run of more than 21 million steps that
 * replays more than its length would meet. */
#define AF_TICK_MAX (INT32_MAX - 1)
int64_t af_config_last_tick(const af_config_t *cfg);
/* The first step after `after` with a scripted event (health_only: one that changes a unit's
 * health: kill, kill_device, kill_node, link_down, fade), INT64_MAX when there is none: a step
 * before it has none to look at. */
int64_t af_config_next_event(const af_config_t *cfg, int64_t after, int health_only);
const char *af_backend_name(int compute);
const char *af_fabric_name(int fabric);

/* Prints the documented key table (used by `agefence config --keys`). */
void af_config_print_keys(void);

#endif
