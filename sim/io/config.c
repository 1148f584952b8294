/* agefence configuration: a key table drives parsing, range checks, printing and the key
 * documentation, so the four never disagree.
 *
 * Longer than the ~900 lines the rest of sim/ keeps to, on purpose: the table (KEYS, one entry
 * a key with its unit, default, range and text) is static to this file, and the parser, the
 * scripted events, the cross-key validation, the printer and `config --keys` all walk it. Split
 * across files, the table would have to become a shared global and the four would no longer be
 * visibly one thing. */
#include "config.h"

#include "../../common/goodput_keys.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <ini.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { T_INT, T_REAL, T_STR, T_ENUM };

typedef struct key_def {
    const char *section;
    const char *key;
    int type;
    size_t offset;
    size_t size; /* T_STR: buffer size */
    double min;
    double max;
    const char *choices; /* T_ENUM: "a|b|c", value = index; T_REAL: "auto" also accepted */
    const char *def;     /* built-in default, as text: what configs/default.ini gives */
    const char *unit;
    const char *doc;
} key_def_t;

#define OFF(f) offsetof(af_config_t, f)
/* libinih reads lines of at most 199 characters (INI_MAX_LINE 200 in the system build): a
 * longer value could not be read back from `agefence config` output. */
#define AF_MAX_LINE  199
#define AF_MAX_VALUE 180
/* scenario.seed's ceiling, 2^63 - 1: the RNG keys take all 64 bits, but the scenario and the
 * log (the root attribute seed, I64) hold it as a signed 64-bit integer. As a double it rounds
 * up to 2^63, above every int64_t, so the range check takes every non-negative one. */
#define SEED_MAX   9223372036854775807.0
#define AF_STR_(x) #x
#define AF_STR(x)  AF_STR_(x)

/* Every key of a scenario. Order is the order of `agefence config` output. Each default is the
 * value configs/default.ini gives the key (workload.dt excepted: auto here, 2e-9 there), so a
 * scenario file inherits what the embedded default scenario shows; the test
 * config_empty_equals_default holds the two together. */
static const key_def_t KEYS[] = {
    {"scenario", "name", T_STR, OFF(name), AF_NAME_LEN, 0, 0, NULL, "default", "",
     "scenario name, copied into the log"},
    {"scenario", "seed", T_INT, OFF(seed), 0, 0, SEED_MAX, NULL, "20261129", "",
     "seed of every random draw (lifetimes, sudden failures, corruption)"},
    {"scenario", "steps", T_INT, OFF(steps), 0, 1, 1e9, NULL, "1850", "steps", "time steps to run"},
    {"scenario", "devices", T_INT, OFF(devices), 0, 0, 1e7, NULL, "8", "devices",
     "fleet size D (0: one device per rank); ranks split it in contiguous ranges"},
    {"scenario", "devices_per_node", T_INT, OFF(devices_per_node), 0, 1, 1e7, NULL, "1", "devices",
     "devices of one node (host), the grain of a node failure; must divide devices"},
    {"scenario", "units_per_device", T_INT, OFF(units_per_device), 0, 1, 4096, NULL, "16", "units",
     "compute units U per device (the grain of failure; think SMs)"},
    {"scenario", "blocks", T_INT, OFF(blocks), 0, 1, 1e9, NULL, "256", "blocks",
     "blocks B of the global problem (never reshaped)"},
    {"scenario", "block_len", T_INT, OFF(block_len), 0, 3, 1 << 24, NULL, "256", "cells",
     "cells T per block"},
    {"scenario", "max_blackout", T_REAL, OFF(max_blackout), 0, 0.0, 0.95, NULL, "0.9", "fraction",
     "largest fraction of dead units the static capacity is sized for"},
    {"scenario", "record", T_ENUM, OFF(record), 0, 0, 0, "none|llama3-405b", "none", "",
     "the published record of interruptions the scenario is fitted to: agefence-report prints "
     "the record's counts beside the run's (llama3-405b: Llama 3 405B, 54 days, 16,384 GPUs)"},
    {"workload", "kind", T_ENUM, OFF(workload), 0, 0, 0, "burgers|attention", "burgers", "",
     "what every block computes (docs/workloads.md): burgers, the viscous Burgers stencil "
     "(memory-bound, neighbour-coupled; block_len cells); attention, causal masked self-attention "
     "of block_len tokens of dim features (compute-bound, coupled by a global mean; block_len at "
     "most " AF_STR(AF_ATTN_MAX_TOKENS) ")"},
    {"workload", "dim", T_INT, OFF(dim), 0, 1, AF_ATTN_MAX_DIM, NULL, "64", "features",
     "features per token of the attention workload (ignored by burgers)"},
    {"workload", "nu", T_REAL, OFF(nu), 0, 1e-12, 1e6, NULL, "0.05", "length^2/time",
     "viscosity of Burgers' equation on the unit periodic domain (burgers only)"},
    {"workload", "dt", T_REAL, OFF(dt), 0, 1e-300, 1e6, "auto", "auto", "time",
     "time step; a number is checked against the explicit scheme's stability limit "
     "min(0.5*dx^2/nu, 2*nu/umax^2); auto: " AF_STR(AF_DT_AUTO_FRACTION) " x that limit for the "
                                                                         "configured fleet"},
    {"workload", "amplitude", T_REAL, OFF(amplitude), 0, -1e6, 1e6, NULL, "1.0", "",
     "initial condition u0(x) = offset + amplitude * sin(2 pi x) (burgers); offset + amplitude "
     "* (2U - 1), U uniform in [0, 1) hashed from the seed and the state word (attention)"},
    {"workload", "offset", T_REAL, OFF(offset), 0, -1e6, 1e6, NULL, "0.5", "", "see amplitude"},
    {"backend", "compute", T_ENUM, OFF(compute), 0, 0, 0, "auto|cpu|cuda", "auto", "",
     "compute backend; auto = cuda when built with CUDA and a GPU is visible, else cpu"},
    {"backend", "fabric", T_ENUM, OFF(fabric), 0, 0, 0, "auto|mpi|nccl", "auto", "",
     "fabric backend; auto = nccl with the cuda backend, else mpi"},
    {"backend", "graph", T_ENUM, OFF(graph), 0, 0, 0, "auto|on|off", "auto", "",
     "run each steady-state step (no DMR twins, no rollback) as one prepared unit of work: with "
     "cuda, a CUDA graph captured once at start-up; auto = on with cuda unless straggler detection "
     "is on; on with cpu runs the same path without a graph"},
    {"backend", "cpu_kernel", T_ENUM, OFF(cpu_kernel), 0, 0, 0, "auto|two_pass|fused", "auto", "",
     "the cpu backend's masked step, SIMD either way (avx2 or sse2): two_pass updates a block "
     "then reads it again for its diagnostics; fused does both in one pass (blocks of 4k cells); "
     "the same bits; auto = two_pass, the faster where measured"},
    {"backend", "step_pass", T_ENUM, OFF(step_pass), 0, 0, 0, "auto|one|separate", "auto", "",
     "the eager step's passes over the shard: one = compute, containment, commit and the "
     "exchange's pack and sums of a block before the next (the backend's fused step: cpu), in "
     "steps without DMR twins or a rollback; separate = each in a pass of its own; the same bits; "
     "auto = one where the backend has it"},
    {"backend", "share_gpu", T_ENUM, OFF(share_gpu), 0, 0, 0, "off|on", "off", "",
     "on: several ranks of a node may share one GPU (rank r drives GPU r mod the GPUs visible), "
     "so the multi-rank cuda paths run on a machine with one GPU; needs compute = cuda and "
     "fabric = mpi (NCCL refuses two ranks on one GPU)"},
    {"log", "path", T_STR, OFF(log_path), AF_MAX_VALUE + 1, 0, 0, NULL, "agefence-run.h5", "",
     "HDF5 log written by rank 0 (-o overrides)"},
    {"log", "flush_interval", T_INT, OFF(flush_interval), 0, 1, 1e9, NULL, "500", "steps",
     "steps between flushes of the log to disk"},
    {"run", "step_timeout", T_REAL, OFF(step_timeout_s), 0, 0.0, 1e6, NULL, "600", "s",
     "the watchdog: when a step does not complete within this many seconds (mpi fabric), every "
     "rank still there ends with exit status 8 (hung) and the log names the ranks that did not "
     "arrive; 0 = off"},
    {"aging", "sim_hours_per_step", T_REAL, OFF(sim_hours_per_step), 0, 0.0, 1e9, NULL, "100",
     "hours", "time compression: simulated hours of service per step"},
    {"aging", "weibull_shape", T_REAL, OFF(weibull_shape), 0, 0.1, 20, NULL, "3.0", "",
     "Weibull shape k of unit lifetimes (k > 1: wear-out, hazard rising with age)"},
    {"aging", "weibull_scale_hours", T_REAL, OFF(weibull_scale_hours), 0, 1.0, 1e9, NULL, "43800",
     "hours", "Weibull scale eta at the reference temperature (characteristic life)"},
    {"aging", "fade_window", T_REAL, OFF(fade_window), 0, 0.0, 0.9, NULL, "0.05", "fraction",
     "precursor window w: FADING from age (1-w)*lifetime until death"},
    {"aging", "p_max", T_REAL, OFF(p_max), 0, 0.0, 1.0, NULL, "1e-3", "per element",
     "corruption probability per output element reached at the end of the fade window"},
    {"aging", "sudden_rate_per_hour", T_REAL, OFF(sudden_rate_per_hour), 0, 0.0, 1.0, NULL, "1e-7",
     "1/hour", "rate of sudden (exponential, no precursor) unit deaths"},
    {"aging", "device_rate_per_hour", T_REAL, OFF(device_rate_per_hour), 0, 0.0, 1.0, NULL, "0",
     "1/hour", "rate of sudden whole-device losses (exponential): every unit of the device dies"},
    {"aging", "node_rate_per_hour", T_REAL, OFF(node_rate_per_hour), 0, 0.0, 1.0, NULL, "0",
     "1/hour", "rate of sudden whole-node losses (exponential): every device of the node dies"},
    {"aging", "device_shape", T_REAL, OFF(device_shape), 0, 0.1, 20, NULL, "1", "",
     "Weibull shape of the whole-device loss times, of scale 1/device_rate_per_hour (1: "
     "exponential; < 1 infant mortality, > 1 wear-out)"},
    {"aging", "node_shape", T_REAL, OFF(node_shape), 0, 0.1, 20, NULL, "1", "",
     "Weibull shape of the whole-node loss times, of scale 1/node_rate_per_hour (1: "
     "exponential)"},
    {"aging", "link_rate_per_hour", T_REAL, OFF(link_rate_per_hour), 0, 0.0, 1.0, NULL, "0",
     "1/hour",
     "rate of fabric link losses per device-hour: the device lives on but leaves the job (its "
     "units out, its blocks restored elsewhere from their replicas; cause link)"},
    {"aging", "link_shape", T_REAL, OFF(link_shape), 0, 0.1, 20, NULL, "1", "",
     "Weibull shape of the link loss times, of scale 1/link_rate_per_hour (1: exponential)"},
    {"aging", "hbm_rate_per_hour", T_REAL, OFF(hbm_rate_per_hour), 0, 0.0, 1.0, NULL, "0", "1/hour",
     "rate of device memory (HBM) errors per device-hour (Poisson): the device's units live on, "
     "every block it holds is restored from its replica"},
    {"aging", "t_ambient_k", T_REAL, OFF(t_ambient_k), 0, 200, 500, NULL, "318.15", "K",
     "ambient (coolant-side) die temperature"},
    {"aging", "t_ref_k", T_REAL, OFF(t_ref_k), 0, 200, 500, NULL, "343.15", "K",
     "reference temperature at which lifetimes have scale eta (acceleration 1)"},
    {"aging", "ea_ev", T_REAL, OFF(ea_ev), 0, 0.0, 3.0, NULL, "0.7", "eV",
     "Arrhenius activation energy of the wear-out mechanism"},
    {"aging", "hotspot_device_k", T_REAL, OFF(hotspot_device_k), 0, 0.0, 100, NULL, "6", "K",
     "spread of per-device temperature offsets (uniform in [0, value])"},
    {"aging", "hotspot_unit_k", T_REAL, OFF(hotspot_unit_k), 0, 0.0, 100, NULL, "4", "K",
     "spread of per-unit temperature offsets (uniform in [0, value])"},
    {"aging", "load_delta_k", T_REAL, OFF(load_delta_k), 0, 0.0, 200, NULL, "30", "K",
     "temperature rise of a fully loaded unit (load = occupied-slot fraction)"},
    /* Job-level interruptions (sim/fleet/jobintr.h): each key's name says the grain its rate is
       per. */
    {"interrupt", "software_per_hour", T_REAL,
     OFF(intr_per_hour[AF_INTR_software - AF_INTR_FIRST_JOB]), 0, 0.0, 1.0, NULL, "0", "1/hour",
     "job interruptions by a software bug (the record's 'software bug'), per hour of the job"},
    {"interrupt", "network_per_node_hour", T_REAL,
     OFF(intr_per_hour[AF_INTR_network - AF_INTR_FIRST_JOB]), 0, 0.0, 1.0, NULL, "0", "1/hour",
     "job interruptions by a network switch or cable, per node-hour"},
    {"interrupt", "nic_per_node_hour", T_REAL, OFF(intr_per_hour[AF_INTR_nic - AF_INTR_FIRST_JOB]),
     0, 0.0, 1.0, NULL, "0", "1/hour", "job interruptions by a node's NIC, per node-hour"},
    {"interrupt", "nccl_watchdog_per_hour", T_REAL,
     OFF(intr_per_hour[AF_INTR_nccl_watchdog - AF_INTR_FIRST_JOB]), 0, 0.0, 1.0, NULL, "0",
     "1/hour", "job interruptions by an NCCL watchdog timeout, per hour of the job"},
    {"interrupt", "sdc_per_device_hour", T_REAL,
     OFF(intr_per_hour[AF_INTR_sdc - AF_INTR_FIRST_JOB]), 0, 0.0, 1.0, NULL, "0", "1/hour",
     "job interruptions by a silent data corruption found on a device, per device-hour"},
    {"interrupt", "dependency_per_hour", T_REAL,
     OFF(intr_per_hour[AF_INTR_dependency - AF_INTR_FIRST_JOB]), 0, 0.0, 1.0, NULL, "0", "1/hour",
     "job interruptions by an external dependency (storage, scheduler), per hour of the job"},
    {"recovery", "max_moves_per_step", T_INT, OFF(max_moves_per_step), 0, 1, 65536, NULL, "2",
     "moves", "drain moves planned per step at most (restores and retries are not capped)"},
    {"recovery", "replica_interval", T_INT, OFF(replica_interval), 0, 1, 1e9, NULL, "20", "steps",
     "steps between refreshes of every block's replica on a buddy device"},
    {"recovery", "detect", T_ENUM, OFF(detect), 0, 0, 0, AF_DETECT_VALUES, "dmr", "",
     "finite: fence non-finite outputs (always on); dmr: recompute FADING units' blocks on a "
     "buddy and compare bitwise; abft: fence a block whose mass change differs from its edge "
     "fluxes; sampled: recompute a rotating sample_fraction of all blocks on a buddy"},
    {"recovery", "sample_fraction", T_REAL, OFF(sample_fraction), 0, 1e-6, 1.0, NULL, "0.05",
     "fraction",
     "detect = sampled: share of all blocks twinned each step (every block once in "
     "ceil(1/fraction) steps)"},
    {"recovery", "quarantine_after", T_INT, OFF(quarantine_after), 0, 0, AF_QUARANTINE_MAX, NULL,
     "3", "fences",
     "a unit whose results are fenced this many times by abft or a twin is declared suspect and "
     "drained (0: never)"},
    {"recovery", "drain", T_ENUM, OFF(drain), 0, 0, 0, "off|on", "on", "",
     "move blocks off FADING units before they die"},
    {"recovery", "replay", T_ENUM, OFF(replay), 0, 0, 0, "local|global", "local", "",
     "a block restored from a replica older than the committed state: local replays that block "
     "alone from its replica and the neighbour edges logged beside it; global rolls every block "
     "back to the replica step"},
    {"corruption", "nonfinite", T_REAL, OFF(corrupt_nonfinite), 0, 0.0, 1.0, NULL, "0.01",
     "fraction", "share of corruptions that turn a value into NaN, +Inf or -Inf (a third each)"},
    {"corruption", "single_bit", T_REAL, OFF(corrupt_single_bit), 0, 0.0, 1.0, NULL, "0.38",
     "fraction", "share that flip one of the value's 64 bits"},
    {"corruption", "multi_mantissa", T_REAL, OFF(corrupt_multi_mantissa), 0, 0.0, 1.0, NULL, "0.50",
     "fraction", "share that flip two or more mantissa bits"},
    {"corruption", "multi_exponent", T_REAL, OFF(corrupt_multi_exponent), 0, 0.0, 1.0, NULL, "0.11",
     "fraction",
     "share that flip two or more bits, at least one in the exponent; the four shares sum to 1"},
    {"corruption", "harm_rel_error", T_REAL, OFF(corrupt_harm_rel), 0, 0.0, 1e300, NULL, "1e-6", "",
     "a corrupted value whose relative error exceeds this is harmful (non-finite always is)"},
    {"corruption", "silent_fraction", T_REAL, OFF(silent_fraction), 0, 0.0, 1.0, NULL, "0",
     "fraction",
     "units that corrupt their outputs with no FADING precursor and no slowdown "
     "(mercurial units), drawn from the seed"},
    {"corruption", "silent_p", T_REAL, OFF(silent_p), 0, 0.0, 1.0, NULL, "1e-4", "per element",
     "corruption probability per output element of a silent unit while it lives"},
    {"throttle", "slowdown", T_REAL, OFF(throttle_slowdown), 0, 0.0, 1000, NULL, "1.0", "",
     "a FADING unit at degradation d (0 at fade, 1 at death) runs 1 + slowdown*d^exponent times "
     "as long as nominal"},
    {"throttle", "exponent", T_REAL, OFF(throttle_exponent), 0, 0.0, 16, NULL, "1.0", "",
     "shape of the slowdown curve (1 linear, 2 late, 0.5 early)"},
    {"throttle", "block_us", T_REAL, OFF(throttle_block_us), 0, 0.0, 1e6, NULL, "0", "us",
     "nominal compute time of one block; 0: measured, each step, from the rank's own compute"},
    {"throttle", "spike_rate", T_REAL, OFF(spike_rate), 0, 0.0, 1.0, NULL, "0", "per step",
     "probability that a device with work suffers a transient slowdown spike in a step"},
    {"throttle", "spike_us", T_REAL, OFF(spike_us), 0, 0.0, 1e7, NULL, "200", "us",
     "median spike delay (log-normal)"},
    {"throttle", "spike_sigma", T_REAL, OFF(spike_sigma), 0, 0.0, 4, NULL, "0.5", "",
     "log-normal shape of the spike delay (0: every spike is spike_us)"},
    {"straggler", "detect", T_ENUM, OFF(straggler_detect), 0, 0, 0, "off|on", "off", "",
     "drain devices whose compute time per block stays above threshold x the fleet median"},
    {"straggler", "threshold", T_REAL, OFF(straggler_threshold), 0, 1.01, 1000, NULL, "2.0", "x",
     "a device is slow when its EWMA minus its deviation exceeds threshold x the fleet median"},
    {"straggler", "alpha", T_REAL, OFF(straggler_alpha), 0, 0.001, 1.0, NULL, "0.1", "",
     "EWMA weight of the newest per-device compute time"},
    {"straggler", "patience", T_INT, OFF(straggler_patience), 0, 1, 1e9, NULL, "20", "steps",
     "consecutive slow steps before a device is declared a straggler"},
    {"pacing", "mode", T_ENUM, OFF(pacing_mode), 0, 0, 0, "off|ewma|quantile", "off", "",
     "after each step, wait until a deadline on the step's work time: ewma, the EWMA bound mean "
     "+ gamma x deviation; quantile, a streaming estimate of its `quantile`"},
    {"pacing", "gamma", T_REAL, OFF(pacing_gamma), 0, 0.0, 100, NULL, "2.0", "",
     "deviations above the mean the pacing bound sits"},
    {"pacing", "alpha", T_REAL, OFF(pacing_alpha), 0, 0.001, 1.0, NULL, "0.05", "",
     "EWMA weight of the newest step's work time"},
    {"pacing", "quantile", T_REAL, OFF(pacing_quantile), 0, 0.5, 0.999, NULL, "0.99", "",
     "quantile of the step's work time that is the deadline of mode quantile (a log-scale "
     "histogram's estimate, within 4.4%; no wait before 1/(1 - quantile) steps)"},
    {"pacing", "warmup", T_INT, OFF(pacing_warmup), 0, 0, 1e9, NULL, "20", "steps",
     "steps measured before the first wait"},
    {"metrics", "textfile", T_STR, OFF(metrics_textfile), AF_MAX_VALUE + 1, 0, 0, NULL, "", "",
     "Prometheus text file rank 0 rewrites atomically (empty: none)"},
    {"metrics", "interval", T_INT, OFF(metrics_interval), 0, 1, 1e9, NULL, "100", "steps",
     "steps between rewrites of the metrics file"},
/* [goodput]: common/goodput_keys.h, the one table the report reads them by too */
/* clang-format off */
#define GOODPUT_ROW(key, field, is_int, lo, hi, def, unit, help) \
    {"goodput", #key, (is_int) ? T_INT : T_REAL, OFF(goodput_##field), 0, lo, hi, NULL, def, \
     unit, help},
    AF_GOODPUT_KEYS(GOODPUT_ROW)
/* clang-format on */
#undef GOODPUT_ROW
};
#define NKEYS ((int)(sizeof KEYS / sizeof KEYS[0]))
_Static_assert(sizeof KEYS / sizeof KEYS[0] <=
                   sizeof((af_config_t *)0)->where / sizeof((af_config_t *)0)->where[0],
               "af_config_t.where needs a row per key");

/* The sections of the key table, and events, as error messages list them. */
#define SECTIONS                                                                                   \
    "scenario, workload, backend, log, run, aging, interrupt, recovery, corruption, throttle, "    \
    "straggler, pacing, metrics, goodput or event.N"

static const char *EVENT_KEYS[] = {"step", "action", "device", "units", "factor", "node", "cause"};
/* In the order of AF_EVENT_*. */
#define EVENT_ACTIONS                                                                              \
    "kill|fade|slow|lose_replicas|kill_device|kill_node|interrupt|reset_device|link_down"
/* The job-level causes an interrupt event may name, in the order of AF_INTR_* from
 * AF_INTR_FIRST_JOB (common/log_schema.h). */
#define EVENT_CAUSES      "software|network|nic|nccl_watchdog|sdc|dependency"
#define AF_EVENT_REQUIRED 15 /* step, action, device, units */

typedef struct parse_ctx {
    af_config_t *cfg;
    const char *origin; /* file name, "--set" or "default" */
    const char *text;   /* string being read, for the line reader */
    size_t pos;
    int line;
    char *err;
    size_t errlen;
    int failed;
    int n_content; /* section headers and keys read: none is an empty scenario file */
} parse_ctx_t;

/* The origin of the embedded default scenario's text: "default.ini (embedded):LINE" in where[]. */
#define EMBEDDED_ORIGIN "default.ini (embedded)"

static void ctx_fail(parse_ctx_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_note(af_config_t *cfg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends one line to cfg->notes; when they are full, the last line says so instead. */
static void add_note(af_config_t *cfg, const char *fmt, ...)
{
    static const char full[] = "(more notes left out)\n";
    size_t len = strlen(cfg->notes);
    if (len >= sizeof full - 1 && strcmp(cfg->notes + len - (sizeof full - 1), full) == 0) {
        return;
    }
    char line[640];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (len + strlen(line) + 2 + sizeof full > sizeof cfg->notes) {
        snprintf(cfg->notes + len, sizeof cfg->notes - len, "%s", full);
        return;
    }
    snprintf(cfg->notes + len, sizeof cfg->notes - len, "%s\n", line);
}

/* Whether `where` is a place the user wrote (a file or --set): not the built-in default nor
 * the embedded default scenario's own text. */
static int user_origin(const char *where)
{
    return where[0] != '\0' && strcmp(where, "default") != 0 &&
           strncmp(where, EMBEDDED_ORIGIN, strlen(EMBEDDED_ORIGIN)) != 0;
}
static void ctx_where(const parse_ctx_t *c, char *out, size_t n);

static void ctx_fail(parse_ctx_t *c, const char *fmt, ...)
{
    if (c->failed) {
        return;
    }
    c->failed = 1;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (strcmp(c->origin, "--set") == 0) {
        snprintf(c->err, c->errlen, "--set: %s", msg);
    } else {
        snprintf(c->err, c->errlen, "%s:%d: %s", c->origin, c->line, msg);
    }
}

static int find_key(const char *section, const char *key)
{
    for (int i = 0; i < NKEYS; ++i) {
        if (strcmp(KEYS[i].section, section) == 0 && strcmp(KEYS[i].key, key) == 0) {
            return i;
        }
    }
    return -1;
}

/* The key of job-level cause c's rate. */
static int intr_key(int c)
{
    for (int i = 0; i < NKEYS; ++i) {
        if (KEYS[i].offset ==
            OFF(intr_per_hour[0]) + sizeof(double) * (size_t)(c - AF_INTR_FIRST_JOB)) {
            return i;
        }
    }
    return 0;
}

static int section_known(const char *s)
{
    for (int i = 0; i < NKEYS; ++i) {
        if (strcmp(KEYS[i].section, s) == 0) {
            return 1;
        }
    }
    return 0;
}

/* "event.N" with N a non-negative integer: returns N, else -1. */
static int event_section(const char *s)
{
    if (strncmp(s, "event.", 6) != 0 || s[6] == '\0') {
        return -1;
    }
    long n = 0;
    for (const char *p = s + 6; *p; ++p) {
        if (!isdigit((unsigned char)*p) || n > 1000000) {
            return -1;
        }
        n = n * 10 + (*p - '0');
    }
    return (int)n;
}

static int parse_int(const char *v, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0') {
        return 0;
    }
    *out = x;
    return 1;
}

static int parse_real(const char *v, double *out)
{
    /* Decimal only: strtod would also take "0x10" (16) and "0x1p-4"; a scenario is written
     * in decimal, and a hexadecimal value is taken for a mistake. */
    if (strpbrk(v, "xX") != NULL) {
        return 0;
    }
    char *end = NULL;
    errno = 0;
    double x = strtod(v, &end);
    if (errno != 0 || end == v || *end != '\0' || !isfinite(x)) {
        return 0;
    }
    /* -0 is 0: the resolved scenario says "0", not "-0". */
    *out = x == 0.0 ? 0.0 : x;
    return 1;
}

/* What makes value unfit as a text key's value, as a phrase after the key's name, or NULL:
 * UTF-8 text is taken (a scenario named in any language); control characters (C0, DEL, C1)
 * and bytes that are not UTF-8 are not. */
static const char *text_problem(const char *value)
{
    const unsigned char *s = (const unsigned char *)value;
    while (*s != '\0') {
        unsigned cp;
        int more;
        if (*s < 0x80) {
            cp = *s;
            more = 0;
        } else if ((*s & 0xE0) == 0xC0) {
            cp = *s & 0x1Fu;
            more = 1;
        } else if ((*s & 0xF0) == 0xE0) {
            cp = *s & 0x0Fu;
            more = 2;
        } else if ((*s & 0xF8) == 0xF0) {
            cp = *s & 0x07u;
            more = 3;
        } else {
            return "is not UTF-8 text (a byte that starts no character)";
        }
        for (int i = 1; i <= more; ++i) {
            if ((s[i] & 0xC0) != 0x80) {
                return "is not UTF-8 text (a character cut short)";
            }
            cp = (cp << 6) | (s[i] & 0x3Fu);
        }
        static const unsigned least[] = {0, 0x80, 0x800, 0x10000};
        if (cp < least[more] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
            return "is not UTF-8 text (an overlong or invalid character)";
        }
        if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0)) {
            return "holds a control character (tab, newline, escape, ...)";
        }
        s += 1 + more;
    }
    return NULL;
}

static void range_text(const key_def_t *k, char *out, size_t n)
{
    if (k->type == T_INT) {
        if (k->max >= SEED_MAX) {
            snprintf(out, n, "an integer in [%.0f, %lld]", k->min, (long long)INT64_MAX);
        } else {
            snprintf(out, n, "an integer in [%.0f, %.0f]", k->min, k->max);
        }
    } else if (k->type == T_REAL) {
        snprintf(out, n, "%s%sa number in [%g, %g]", k->choices ? k->choices : "",
                 k->choices ? " or " : "", k->min, k->max);
    } else if (k->type == T_ENUM) {
        snprintf(out, n, "one of %s", k->choices);
    } else {
        snprintf(out, n, "text of at most %zu characters", k->size - 1);
    }
}

static int enum_index(const char *choices, const char *v)
{
    int idx = 0;
    const char *p = choices;
    size_t vl = strlen(v);
    while (*p) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == vl && strncmp(p, v, len) == 0) {
            return idx;
        }
        idx++;
        if (!bar) {
            break;
        }
        p = bar + 1;
    }
    return -1;
}

static const char *enum_name(const char *choices, int idx, char *buf, size_t n)
{
    const char *p = choices;
    for (int i = 0; i < idx && p; ++i) {
        p = strchr(p, '|');
        if (p) {
            p++;
        }
    }
    if (!p) {
        return "?";
    }
    const char *bar = strchr(p, '|');
    size_t len = bar ? (size_t)(bar - p) : strlen(p);
    if (len >= n) {
        len = n - 1;
    }
    memcpy(buf, p, len);
    buf[len] = '\0';
    return buf;
}

/* Sets one key from text; returns 0 and fills the context's error when the value is bad. */
static int set_value(parse_ctx_t *c, int ki, const char *value)
{
    const key_def_t *k = &KEYS[ki];
    char *base = (char *)c->cfg;
    char range[96];
    range_text(k, range, sizeof range);
    switch (k->type) {
    case T_INT: {
        int64_t x = 0;
        if (!parse_int(value, &x) || (double)x < k->min || (double)x > k->max) {
            if (strpbrk(value, "xX") != NULL) {
                ctx_fail(c,
                         "%s.%s = '%s' is invalid: expected %s (decimal: hexadecimal is not "
                         "taken)",
                         k->section, k->key, value, range);
                return 0;
            }
            ctx_fail(c, "%s.%s = '%s' is invalid: expected %s", k->section, k->key, value, range);
            return 0;
        }
        memcpy(base + k->offset, &x, sizeof x);
        break;
    }
    case T_REAL: {
        double x = 0;
        if (k->choices != NULL && enum_index(k->choices, value) >= 0) {
            /* `auto`: NaN (which parse_real never yields) until resolve_auto() replaces it. */
            x = NAN;
        } else if (!parse_real(value, &x) || x < k->min || x > k->max) {
            ctx_fail(c, "%s.%s = '%s' is invalid: expected %s%s", k->section, k->key, value, range,
                     strpbrk(value, "xX") != NULL ? " (decimal: hexadecimal is not taken)" : "");
            return 0;
        }
        memcpy(base + k->offset, &x, sizeof x);
        break;
    }
    case T_ENUM: {
        int x = enum_index(k->choices, value);
        if (x < 0) {
            ctx_fail(c, "%s.%s = '%s' is invalid: expected %s", k->section, k->key, value, range);
            return 0;
        }
        memcpy(base + k->offset, &x, sizeof x);
        break;
    }
    default: {
        size_t len = strlen(value);
        if (len + 1 > k->size) {
            ctx_fail(c, "%s.%s is too long: expected %s", k->section, k->key, range);
            return 0;
        }
        const char *why = text_problem(value);
        if (why != NULL) {
            ctx_fail(c, "%s.%s %s", k->section, k->key, why);
            return 0;
        }
        /* What an INI reader would strip could not be read back from `agefence config`. */
        if (len > 0 &&
            (isspace((unsigned char)value[0]) || isspace((unsigned char)value[len - 1]) ||
             strstr(value, " ;") != NULL || strstr(value, "\t;") != NULL ||
             strstr(value, " #") != NULL || strstr(value, "\t#") != NULL)) {
            ctx_fail(c,
                     "%s.%s = '%s' cannot be written back to a scenario file: no leading or "
                     "trailing blanks, and no ';' or '#' after a blank (an INI comment)",
                     k->section, k->key, value);
            return 0;
        }
        memcpy(base + k->offset, value, len + 1);
        break;
    }
    }
    char *w = c->cfg->where[ki];
    char prev[sizeof c->cfg->where[ki]];
    snprintf(prev, sizeof prev, "%s", w);
    ctx_where(c, w, sizeof c->cfg->where[ki]);
    if (user_origin(prev)) {
        /* The later value wins (--set over the file, a file's last line over its earlier). */
        add_note(c->cfg, "%s.%s is set at %s and again at %s: the later value, '%s', wins",
                 k->section, k->key, prev, w, value);
    }
    return 1;
}

static af_event_cfg_t *event_slot(parse_ctx_t *c, int n)
{
    af_config_t *cfg = c->cfg;
    for (int i = 0; i < cfg->n_events; ++i) {
        if (cfg->events[i].index == n) {
            return &cfg->events[i];
        }
    }
    if (cfg->n_events >= AF_MAX_EVENTS) {
        ctx_fail(c, "[event.%d]: at most %d scripted events", n, AF_MAX_EVENTS);
        return NULL;
    }
    af_event_cfg_t *e = &cfg->events[cfg->n_events++];
    memset(e, 0, sizeof *e);
    e->index = n;
    return e;
}

static void ctx_where(const parse_ctx_t *c, char *out, size_t n)
{
    if (strcmp(c->origin, "--set") == 0 || c->line == 0) {
        snprintf(out, n, "%s", c->origin);
    } else {
        snprintf(out, n, "%s:%d", c->origin, c->line);
    }
}

static int set_event(parse_ctx_t *c, int n, const char *key, const char *value)
{
    af_event_cfg_t *e = event_slot(c, n);
    if (e == NULL) {
        return 0;
    }
    for (int k = 0; k < 7; ++k) {
        if (strcmp(key, EVENT_KEYS[k]) == 0) {
            char prev[sizeof e->where[k]];
            snprintf(prev, sizeof prev, "%s", e->where[k]);
            ctx_where(c, e->where[k], sizeof e->where[k]);
            if ((e->set_mask & (1 << k)) && user_origin(prev)) {
                add_note(c->cfg,
                         "event.%d.%s is set at %s and again at %s: the later value, '%s', wins", n,
                         key, prev, e->where[k], value);
            }
        }
    }
    int64_t x = 0;
    if (strcmp(key, "step") == 0) {
        if (!parse_int(value, &x) || x < 1) {
            ctx_fail(c, "event.%d.step = '%s' is invalid: expected an integer >= 1", n, value);
            return 0;
        }
        e->step = x;
        e->set_mask |= 1;
    } else if (strcmp(key, "action") == 0) {
        int a = enum_index(EVENT_ACTIONS, value);
        if (a < 0) {
            ctx_fail(c, "event.%d.action = '%s' is invalid: expected one of " EVENT_ACTIONS, n,
                     value);
            return 0;
        }
        e->action = a;
        e->set_mask |= 2;
    } else if (strcmp(key, "device") == 0) {
        if (!parse_int(value, &x) || x < 0) {
            ctx_fail(c, "event.%d.device = '%s' is invalid: expected an integer >= 0", n, value);
            return 0;
        }
        e->device = x;
        e->set_mask |= 4;
    } else if (strcmp(key, "units") == 0) {
        /* "A" or "A-B", inclusive */
        int64_t lo = 0;
        int64_t hi = 0;
        char buf[64];
        snprintf(buf, sizeof buf, "%s", value);
        char *dash = strchr(buf, '-');
        int ok;
        if (dash) {
            *dash = '\0';
            ok = parse_int(buf, &lo) && parse_int(dash + 1, &hi);
        } else {
            ok = parse_int(buf, &lo);
            hi = lo;
        }
        if (!ok || lo < 0 || hi < lo) {
            ctx_fail(c,
                     "event.%d.units = '%s' is invalid: expected a unit or a range A-B with "
                     "0 <= A <= B",
                     n, value);
            return 0;
        }
        e->unit_lo = lo;
        e->unit_hi = hi;
        e->set_mask |= 8;
    } else if (strcmp(key, "factor") == 0) {
        double f = 0;
        if (!parse_real(value, &f) || f < 1.0 || f > 1000.0) {
            ctx_fail(c, "event.%d.factor = '%s' is invalid: expected a number in [1, 1000]", n,
                     value);
            return 0;
        }
        e->factor = f;
        e->set_mask |= 16;
    } else if (strcmp(key, "node") == 0) {
        if (!parse_int(value, &x) || x < 0) {
            ctx_fail(c, "event.%d.node = '%s' is invalid: expected an integer >= 0", n, value);
            return 0;
        }
        e->node = x;
        e->set_mask |= 32;
    } else if (strcmp(key, "cause") == 0) {
        int cause = enum_index(EVENT_CAUSES, value);
        if (cause < 0) {
            ctx_fail(c, "event.%d.cause = '%s' is invalid: expected one of " EVENT_CAUSES, n,
                     value);
            return 0;
        }
        e->cause = AF_INTR_FIRST_JOB + cause;
        e->set_mask |= 64;
    } else {
        ctx_fail(c,
                 "unknown key '%s' in [event.%d]: expected step, action, device, units, factor, "
                 "node or cause",
                 key, n);
        return 0;
    }
    return 1;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
    parse_ctx_t *c = user;
    if (c->failed) {
        return 0;
    }
    c->n_content++;
    int n = event_section(section);
    if (n >= 0) {
        return set_event(c, n, name, value);
    }
    if (!section_known(section)) {
        ctx_fail(c, "unknown section [%s]: expected " SECTIONS, section);
        return 0;
    }
    int ki = find_key(section, name);
    if (ki < 0) {
        ctx_fail(c, "unknown key '%s' in [%s] (agefence config --keys lists them)", name, section);
        return 0;
    }
    return set_value(c, ki, value);
}

/* Line reader for ini_parse_stream: counts lines, so errors name them, and checks section
 * headers (inih does not report a section with no keys). */
static char *reader(char *str, int num, void *stream)
{
    parse_ctx_t *c = stream;
    const char *t = c->text + c->pos;
    if (*t == '\0' || num < 2) {
        return NULL;
    }
    int i = 0;
    while (t[i] != '\0' && i < num - 1) {
        str[i] = t[i];
        if (t[i++] == '\n') {
            break;
        }
    }
    str[i] = '\0';
    if (c->pos == 0 || c->text[c->pos - 1] == '\n') {
        c->line++;
        const char *p = str;
        while (*p == ' ' || *p == '\t') {
            p++;
        }
        if (*p == '[' && !c->failed) {
            char sec[96];
            const char *close = strchr(p, ']');
            size_t len = close ? (size_t)(close - p - 1) : 0;
            c->n_content++;
            if (close == NULL) {
                /* Said on its own line, with what was written (inih would report the next
                 * line, or none). */
                size_t wl = strcspn(p, "\r\n");
                ctx_fail(c, "unterminated section header '%.*s': expected [section]",
                         (int)(wl < 80 ? wl : 80), p);
            } else if (len < sizeof sec) {
                memcpy(sec, p + 1, len);
                sec[len] = '\0';
                if (!section_known(sec) && event_section(sec) < 0) {
                    ctx_fail(c, "unknown section [%s]: expected " SECTIONS, sec);
                }
            }
        }
    }
    /* An inline comment starts with ';' or '#' after a blank, as INI readers take both: inih
     * (built with ';' alone) is handed a ';' for the '#'. */
    for (int j = 1; j < i; ++j) {
        if (str[j] == '#' && (str[j - 1] == ' ' || str[j - 1] == '\t')) {
            str[j] = ';';
            break;
        }
    }
    if (i == num - 1 && str[i - 1] != '\n' && t[i] != '\0' && !c->failed) {
        ctx_fail(c, "line longer than %d characters (agefence reads at most %d)", num - 1,
                 AF_MAX_LINE);
    }
    c->pos += (size_t)i;
    return str;
}

/* Each event has step and action; kill, fade, slow and lose_replicas name a device and its
 * units, kill_device a device alone, kill_node a node alone; a slow event has a factor, and
 * only a slow event may have one. */
static af_result_t event_complete(const af_config_t *cfg, const char *origin, char *err,
                                  size_t errlen)
{
    for (int i = 0; i < cfg->n_events; ++i) {
        const af_event_cfg_t *e = &cfg->events[i];
        for (int k = 0; k < 2; ++k) {
            if (!(e->set_mask & (1 << k))) {
                snprintf(err, errlen,
                         "%s: [event.%d] lacks '%s' (each event needs step and action)", origin,
                         e->index, EVENT_KEYS[k]);
                return AF_ERR_USAGE;
            }
        }
        /* Keys each action needs (bits of set_mask) and keys it must not have. An interrupt
         * may name where it struck at its cause's grain: a device (sdc), a node (network, nic). */
        int grain = e->action == AF_EVENT_INTERRUPT && (e->set_mask & 64) ? af_intr_grain[e->cause]
                                                                          : AF_GRAIN_JOB;
        int by_device = e->action == AF_EVENT_KILL_DEVICE || e->action == AF_EVENT_RESET_DEVICE ||
                        e->action == AF_EVENT_LINK_DOWN;
        int need = e->action == AF_EVENT_KILL_NODE   ? 32
                   : by_device                       ? 4
                   : e->action == AF_EVENT_INTERRUPT ? 64
                                                     : 4 | 8;
        int forbid = e->action == AF_EVENT_KILL_NODE   ? 4 | 8 | 64
                     : by_device                       ? 8 | 32 | 64
                     : e->action == AF_EVENT_INTERRUPT ? 8 | (grain == AF_GRAIN_DEVICE ? 0 : 4) |
                                                             (grain == AF_GRAIN_NODE ? 0 : 32)
                                                       : 32 | 64;
        static const char *const needs[] = {"kill",          "fade",         "slow",
                                            "lose_replicas", "kill_device",  "kill_node",
                                            "interrupt",     "reset_device", "link_down"};
        for (int k = 2; k < 7; ++k) {
            if ((need & (1 << k)) && !(e->set_mask & (1 << k))) {
                snprintf(err, errlen, "%s: [event.%d] lacks '%s' (a %s event needs %s)", origin,
                         e->index, EVENT_KEYS[k], needs[e->action],
                         e->action == AF_EVENT_KILL_NODE   ? "step, action and node"
                         : by_device                       ? "step, action and device"
                         : e->action == AF_EVENT_INTERRUPT ? "step, action and cause"
                                                           : "step, action, device and units");
                return AF_ERR_USAGE;
            }
        }
        for (int k = 2; k < 7; ++k) {
            if ((forbid & (1 << k)) && (e->set_mask & (1 << k))) {
                if (e->action == AF_EVENT_INTERRUPT && (k == 2 || k == 5)) {
                    snprintf(err, errlen,
                             "%s: event.%d.%s is set, but an interrupt of cause %s has none "
                             "(device: sdc only; node: network and nic only)",
                             e->where[k], e->index, EVENT_KEYS[k], af_intr_names[e->cause]);
                } else {
                    snprintf(err, errlen, "%s: event.%d.%s is set, but a %s event has none",
                             e->where[k], e->index, EVENT_KEYS[k], needs[e->action]);
                }
                return AF_ERR_USAGE;
            }
        }
        int has_factor = (e->set_mask & 16) != 0;
        if (e->action == AF_EVENT_SLOW && !has_factor) {
            snprintf(err, errlen, "%s: [event.%d] is a slow event without 'factor'", origin,
                     e->index);
            return AF_ERR_USAGE;
        }
        if (e->action != AF_EVENT_SLOW && has_factor) {
            snprintf(err, errlen, "%s: event.%d.factor is set, but only a slow event has one",
                     e->where[4], e->index);
            return AF_ERR_USAGE;
        }
    }
    return AF_OK;
}

/* Gives every `auto` value its number, once all the keys it depends on are known. */
static void resolve_auto(af_config_t *cfg)
{
    cfg->dt_auto = isnan(cfg->dt) ? 1 : 0;
    if (cfg->dt_auto) {
        const key_def_t *k = &KEYS[find_key("workload", "dt")];
        double dt = AF_DT_AUTO_FRACTION * af_config_dt_limit(cfg);
        /* Within the key's range, so that the printed number reads back. */
        cfg->dt = dt < k->min ? k->min : dt > k->max ? k->max : dt;
    }
}

/* Parses text over cfg; *n_content (when not NULL) receives the section headers and keys it
 * read. */
static af_result_t parse_text(af_config_t *cfg, const char *text, const char *origin, char *err,
                              size_t errlen, int *n_content)
{
    parse_ctx_t c = {cfg, origin, text, 0, 0, err, errlen, 0, 0};
    int rc = ini_parse_stream(reader, &c, handler, &c);
    if (n_content != NULL) {
        *n_content = c.n_content;
    }
    if (c.failed) {
        return AF_ERR_USAGE;
    }
    if (rc != 0) {
        snprintf(err, errlen, "%s:%d: not a valid INI line (expected [section] or key = value)",
                 origin, rc > 0 ? rc : 0);
        return AF_ERR_USAGE;
    }
    return event_complete(cfg, origin, err, errlen);
}

static void set_defaults(af_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    char err[8];
    parse_ctx_t c = {cfg, "default", "", 0, 0, err, sizeof err, 0, 0};
    for (int i = 0; i < NKEYS; ++i) {
        (void)set_value(&c, i, KEYS[i].def);
    }
}

af_result_t af_config_parse_text(af_config_t *cfg, const char *text, const char *origin, char *err,
                                 size_t errlen)
{
    set_defaults(cfg);
    af_result_t rc = parse_text(cfg, text, origin, err, errlen, NULL);
    if (rc == AF_OK) {
        resolve_auto(cfg);
    }
    return rc;
}

static char *read_file(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: is a folder, not a scenario file (-c takes an INI file)", path);
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(err, errlen, "%s: cannot open the scenario file: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = NULL;
    size_t len = 0;
    size_t cap = 0;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + n + 1 > cap) {
            cap = (len + n + 1) * 2;
            char *nb = realloc(buf, cap);
            if (nb == NULL) {
                free(buf);
                fclose(f);
                snprintf(err, errlen, "%s: out of memory reading the scenario file", path);
                return NULL;
            }
            buf = nb;
        }
        memcpy(buf + len, chunk, n);
        len += n;
        if (len > (1U << 20)) {
            free(buf);
            fclose(f);
            snprintf(err, errlen, "%s: larger than 1 MiB: not a scenario file", path);
            return NULL;
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        snprintf(err, errlen, "%s: cannot read the scenario file", path);
        return NULL;
    }
    if (buf == NULL) {
        buf = malloc(1);
        if (buf == NULL) {
            return NULL;
        }
    }
    buf[len] = '\0';
    if (strlen(buf) != len) {
        free(buf);
        snprintf(err, errlen, "%s: holds a NUL byte: not a scenario file", path);
        return NULL;
    }
    return buf;
}

af_result_t af_config_load(af_config_t *cfg, const char *file, const char *const *sets, int nsets,
                           char *err, size_t errlen)
{
    set_defaults(cfg);
    af_result_t rc;
    if (file == NULL) {
        rc = parse_text(cfg, af_default_ini, EMBEDDED_ORIGIN, err, errlen, NULL);
    } else {
        char *text = read_file(file, err, errlen);
        if (text == NULL) {
            return AF_ERR_USAGE;
        }
        int n_content = 0;
        rc = parse_text(cfg, text, file, err, errlen, &n_content);
        free(text);
        if (rc == AF_OK && n_content == 0) {
            /* Almost always a mistake (a truncated copy, the wrong file): not a silent run of
             * the defaults. */
            snprintf(err, errlen,
                     "%s: the scenario file is empty (no [section], no key): expected a scenario "
                     "(without -c, agefence runs the embedded default scenario)",
                     file);
            return AF_ERR_USAGE;
        }
    }
    if (rc != AF_OK) {
        return rc;
    }
    for (int i = 0; i < nsets; ++i) {
        const char *s = sets[i];
        const char *eq = strchr(s, '=');
        const char *dot = strchr(s, '.');
        if (eq == NULL || dot == NULL || dot > eq) {
            snprintf(err, errlen, "--set '%s': expected section.key=value", s);
            return AF_ERR_USAGE;
        }
        char section[96];
        char key[96];
        const char *lastdot = dot;
        /* event.N.key: the section holds a dot itself */
        if (strncmp(s, "event.", 6) == 0) {
            lastdot = strchr(dot + 1, '.');
            if (lastdot == NULL || lastdot > eq) {
                snprintf(err, errlen, "--set '%s': expected event.N.key=value", s);
                return AF_ERR_USAGE;
            }
        }
        size_t sl = (size_t)(lastdot - s);
        size_t kl = (size_t)(eq - lastdot - 1);
        if (sl >= sizeof section || kl >= sizeof key || kl == 0) {
            snprintf(err, errlen, "--set '%s': expected section.key=value", s);
            return AF_ERR_USAGE;
        }
        memcpy(section, s, sl);
        section[sl] = '\0';
        memcpy(key, lastdot + 1, kl);
        key[kl] = '\0';
        parse_ctx_t c = {cfg, "--set", "", 0, 0, err, errlen, 0, 0};
        if (!handler(&c, section, key, eq + 1)) {
            return AF_ERR_USAGE;
        }
    }
    rc = event_complete(cfg, "--set", err, errlen);
    if (rc == AF_OK) {
        resolve_auto(cfg);
    }
    return rc;
}

int64_t af_config_devices(const af_config_t *cfg, int nranks)
{
    return cfg->devices == 0 ? nranks : cfg->devices;
}

int64_t af_config_scripted_units(const af_config_t *cfg)
{
    int64_t n = 0;
    for (int i = 0; i < cfg->n_events; ++i) {
        const af_event_cfg_t *e = &cfg->events[i];
        if (e->action == AF_EVENT_KILL || e->action == AF_EVENT_FADE ||
            e->action == AF_EVENT_KILL_DEVICE || e->action == AF_EVENT_KILL_NODE ||
            e->action == AF_EVENT_LINK_DOWN) {
            n += af_event_devices(e) * (e->unit_hi - e->unit_lo + 1);
        }
    }
    return n;
}

int64_t af_config_last_tick(const af_config_t *cfg)
{
    int64_t ticks = cfg->steps * 100 + 1000;
    return ticks < AF_TICK_MAX ? ticks : AF_TICK_MAX;
}

int64_t af_config_next_event(const af_config_t *cfg, int64_t after, int health_only)
{
    int64_t next = INT64_MAX;
    for (int i = 0; i < cfg->n_events; ++i) {
        const af_event_cfg_t *e = &cfg->events[i];
        int health = e->action == AF_EVENT_KILL || e->action == AF_EVENT_KILL_DEVICE ||
                     e->action == AF_EVENT_KILL_NODE || e->action == AF_EVENT_LINK_DOWN ||
                     e->action == AF_EVENT_FADE;
        if ((health || !health_only) && e->step > after && e->step < next) {
            next = e->step;
        }
    }
    return next;
}

af_wl_config_t af_config_workload(const af_config_t *cfg)
{
    af_wl_config_t c = {
        .blocks = cfg->blocks,
        .block_len = cfg->block_len,
        .dim = (int)cfg->dim,
        .nu = cfg->nu,
        .dt = cfg->dt,
        .amplitude = cfg->amplitude,
        .offset = cfg->offset,
        .seed = (uint64_t)cfg->seed,
    };
    return c;
}

const af_workload_t *af_config_wl(const af_config_t *cfg)
{
    const af_workload_t *w = af_workload_get(cfg->workload);
    return w != NULL ? w : &af_workload_burgers;
}

int64_t af_config_cells(const af_config_t *cfg)
{
    af_wl_config_t c = af_config_workload(cfg);
    return af_config_wl(cfg)->cells(&c);
}

double af_config_dx(const af_config_t *cfg)
{
    return 1.0 / ((double)cfg->blocks * (double)af_config_cells(cfg));
}

double af_config_dt_limit(const af_config_t *cfg)
{
    af_wl_config_t c = af_config_workload(cfg);
    return af_burgers_dt_limit(&c);
}

/* Whether an event's step comes from the embedded default scenario's own text. */
static int step_from_embedded_default(const af_event_cfg_t *e)
{
    return strncmp(e->where[0], EMBEDDED_ORIGIN ":", strlen(EMBEDDED_ORIGIN ":")) == 0;
}

static const char *where(const af_config_t *cfg, const char *section, const char *key)
{
    int ki = find_key(section, key);
    return (ki >= 0 && cfg->where[ki][0]) ? cfg->where[ki] : "default";
}

af_result_t af_config_validate(af_config_t *cfg, int nranks, char *err, size_t errlen)
{
    int64_t D = af_config_devices(cfg, nranks);
    if (D < nranks) {
        snprintf(err, errlen,
                 "%s: scenario.devices = %lld is smaller than the %d ranks of this launch: "
                 "expected devices >= ranks (or 0 for one per rank)",
                 where(cfg, "scenario", "devices"), (long long)D, nranks);
        return AF_ERR_USAGE;
    }
    if (cfg->blocks < D) {
        snprintf(err, errlen,
                 "%s: scenario.blocks = %lld is smaller than the fleet of %lld devices: expected "
                 "blocks >= devices",
                 where(cfg, "scenario", "blocks"), (long long)cfg->blocks, (long long)D);
        return AF_ERR_USAGE;
    }
    double cells = (double)cfg->blocks * (double)af_config_cells(cfg);
    if (cells > 4e9) {
        char shape[96];
        af_wl_config_t wc = af_config_workload(cfg);
        af_config_wl(cfg)->shape(&wc, shape, sizeof shape);
        snprintf(err, errlen, "%s: %lld blocks x %s = %.0f doubles of state: expected at most 4e9",
                 where(cfg, "scenario", "blocks"), (long long)cfg->blocks, shape, cells);
        return AF_ERR_USAGE;
    }
    {
        af_wl_config_t wc = af_config_workload(cfg);
        const char *key = "";
        char msg[320];
        if (af_config_wl(cfg)->check(&wc, &key, msg, sizeof msg)) {
            char section[16];
            const char *dot = strchr(key, '.');
            size_t len = dot != NULL ? (size_t)(dot - key) : 0;
            snprintf(section, sizeof section, "%.*s", (int)len, key);
            /* An explicit dt that the grid made unstable (a file's, or the embedded default's
             * after --set scenario.blocks): say how to get a stable one. */
            int fixed_dt = strcmp(key, "workload.dt") == 0 && !cfg->dt_auto;
            snprintf(err, errlen, "%s: %s%s", where(cfg, section, dot != NULL ? dot + 1 : key), msg,
                     fixed_dt ? "; workload.dt = auto (--set workload.dt=auto) picks " AF_STR(
                                    AF_DT_AUTO_FRACTION) " x the limit"
                              : "");
            return AF_ERR_USAGE;
        }
    }
    if (cfg->t_ref_k <= 0 || cfg->t_ambient_k <= 0) {
        snprintf(err, errlen, "%s: temperatures must be positive (kelvin)",
                 where(cfg, "aging", "t_ambient_k"));
        return AF_ERR_USAGE;
    }
    if (cfg->graph == AF_GRAPH_ON && cfg->straggler_detect) {
        snprintf(err, errlen,
                 "%s: backend.graph = on cannot run with straggler.detect = on (the step graph "
                 "reduces the exchange before the per-device times are known): expected graph = "
                 "auto or off",
                 where(cfg, "backend", "graph"));
        return AF_ERR_USAGE;
    }
    double shares = cfg->corrupt_nonfinite + cfg->corrupt_single_bit + cfg->corrupt_multi_mantissa +
                    cfg->corrupt_multi_exponent;
    if (fabs(shares - 1.0) > 1e-9) {
        /* Named where the user set one of the four (the embedded defaults sum to 1). */
        static const char *const share_keys[] = {"nonfinite", "single_bit", "multi_mantissa",
                                                 "multi_exponent"};
        const char *at = where(cfg, "corruption", "nonfinite");
        for (int i = 0; i < 4; ++i) {
            const char *w = where(cfg, "corruption", share_keys[i]);
            if (strncmp(w, EMBEDDED_ORIGIN, strlen(EMBEDDED_ORIGIN)) != 0) {
                at = w;
                break;
            }
        }
        snprintf(err, errlen,
                 "%s: corruption.nonfinite + single_bit + multi_mantissa + multi_exponent = %.17g: "
                 "expected the four shares to sum to 1",
                 at, shares);
        return AF_ERR_USAGE;
    }
    if (D % cfg->devices_per_node != 0) {
        snprintf(err, errlen,
                 "%s: scenario.devices_per_node = %lld does not divide the fleet of %lld devices: "
                 "expected a divisor of devices",
                 where(cfg, "scenario", "devices_per_node"), (long long)cfg->devices_per_node,
                 (long long)D);
        return AF_ERR_USAGE;
    }
    /* A job-level cause's interruptions a step, rate x its grain's count x hours a step, is
     * bounded so that a step's fixed buffer (sim/fleet/jobintr.h) holds them all but with a chance
     * below 1e-100. */
    for (int c = AF_INTR_FIRST_JOB; c <= AF_INTR_LAST_JOB; ++c) {
        double rate = cfg->intr_per_hour[c - AF_INTR_FIRST_JOB];
        int64_t n = af_intr_grain[c] == AF_GRAIN_DEVICE ? D
                    : af_intr_grain[c] == AF_GRAIN_NODE ? D / cfg->devices_per_node
                                                        : 1;
        double mean = rate * (double)n * cfg->sim_hours_per_step;
        if (mean > AF_JOBINTR_MEAN_MAX) {
            char key[48];
            snprintf(key, sizeof key, "%s", KEYS[intr_key(c)].key);
            snprintf(err, errlen,
                     "%s: interrupt.%s = %g makes %g interruptions a step (x %lld x %g hours a "
                     "step): expected at most %d a step (a lower rate, or fewer "
                     "aging.sim_hours_per_step)",
                     where(cfg, "interrupt", key), key, rate, mean, (long long)n,
                     cfg->sim_hours_per_step, AF_JOBINTR_MEAN_MAX);
            return AF_ERR_USAGE;
        }
    }
    /* The same bound for the memory errors, which the same buffer takes (device grain). */
    double hbm_mean = cfg->hbm_rate_per_hour * (double)D * cfg->sim_hours_per_step;
    if (hbm_mean > AF_JOBINTR_MEAN_MAX) {
        snprintf(err, errlen,
                 "%s: aging.hbm_rate_per_hour = %g makes %g memory errors a step (x %lld devices "
                 "x %g hours a step): expected at most %d a step (a lower rate, or fewer "
                 "aging.sim_hours_per_step)",
                 where(cfg, "aging", "hbm_rate_per_hour"), cfg->hbm_rate_per_hour, hbm_mean,
                 (long long)D, cfg->sim_hours_per_step, AF_JOBINTR_MEAN_MAX);
        return AF_ERR_USAGE;
    }
    int skip[AF_MAX_EVENTS] = {0};
    int nskip = 0;
    for (int i = 0; i < cfg->n_events; ++i) {
        af_event_cfg_t *e = &cfg->events[i];
        /* Every event as devices [device, dev_hi] and units [unit_lo, unit_hi] of each. */
        if (e->action == AF_EVENT_KILL_NODE) {
            int64_t nodes = D / cfg->devices_per_node;
            if (e->node >= nodes) {
                snprintf(err, errlen,
                         "%s: event.%d.node = %lld is outside the fleet: expected 0..%lld (%lld "
                         "devices, %lld per node)",
                         e->where[5], e->index, (long long)e->node, (long long)nodes - 1,
                         (long long)D, (long long)cfg->devices_per_node);
                return AF_ERR_USAGE;
            }
            e->device = e->node * cfg->devices_per_node;
            e->dev_hi = e->device + cfg->devices_per_node - 1;
        } else if (e->action == AF_EVENT_INTERRUPT) {
            /* Where it struck, at its cause's grain, or -1 (the job, or not said). */
            int64_t nodes = D / cfg->devices_per_node;
            if ((e->set_mask & 32) && e->node >= nodes) {
                snprintf(err, errlen,
                         "%s: event.%d.node = %lld is outside the fleet: expected 0..%lld",
                         e->where[5], e->index, (long long)e->node, (long long)nodes - 1);
                return AF_ERR_USAGE;
            }
            e->node = (e->set_mask & 32) ? e->node : -1;
            e->device = (e->set_mask & 4) ? e->device : -1;
            e->dev_hi = e->device;
        } else {
            e->dev_hi = e->device;
        }
        if (e->action == AF_EVENT_KILL_NODE || e->action == AF_EVENT_KILL_DEVICE ||
            e->action == AF_EVENT_LINK_DOWN) {
            e->unit_lo = 0;
            e->unit_hi = cfg->units_per_device - 1;
        }
        /* The embedded default scenario shortened by --set scenario.steps: its own events past
         * the new end are not the user's mistake; they are skipped (a user's file keeps the
         * error below). */
        if (e->step > cfg->steps && step_from_embedded_default(e)) {
            skip[i] = 1;
            nskip++;
            continue;
        }
        if (e->device >= D) {
            snprintf(err, errlen,
                     "%s: event.%d.device = %lld is outside the fleet: expected 0..%lld",
                     e->where[2], e->index, (long long)e->device, (long long)D - 1);
            return AF_ERR_USAGE;
        }
        if (e->unit_hi >= cfg->units_per_device) {
            snprintf(err, errlen,
                     "%s: event.%d.units = %lld-%lld is outside the device: expected units within "
                     "0..%lld",
                     e->where[3], e->index, (long long)e->unit_lo, (long long)e->unit_hi,
                     (long long)cfg->units_per_device - 1);
            return AF_ERR_USAGE;
        }
        if (e->step > cfg->steps) {
            snprintf(err, errlen,
                     "%s: event.%d.step = %lld is after the last step: expected 1..%lld",
                     e->where[0], e->index, (long long)e->step, (long long)cfg->steps);
            return AF_ERR_USAGE;
        }
    }
    if (nskip > 0) {
        int kept = 0;
        for (int i = 0; i < cfg->n_events; ++i) {
            const af_event_cfg_t *e = &cfg->events[i];
            if (skip[i]) {
                add_note(cfg,
                         "%s: event.%d (step %lld) of the embedded default scenario is after "
                         "the last step (scenario.steps = %lld, %s): skipped",
                         e->where[0], e->index, (long long)e->step, (long long)cfg->steps,
                         where(cfg, "scenario", "steps"));
            } else {
                cfg->events[kept++] = *e;
            }
        }
        cfg->n_events = kept;
    }
    return AF_OK;
}

static int cmp_events(const void *a, const void *b)
{
    const af_event_cfg_t *x = a;
    const af_event_cfg_t *y = b;
    return (x->index > y->index) - (x->index < y->index);
}

size_t af_config_format(const af_config_t *cfg, char *out, size_t size)
{
    size_t n = 0;
#define EMIT(...)                                                                                  \
    do {                                                                                           \
        int w_ = snprintf(size > n ? out + n : NULL, size > n ? size - n : 0, __VA_ARGS__);        \
        if (w_ > 0) {                                                                              \
            n += (size_t)w_;                                                                       \
        }                                                                                          \
    } while (0)
    const char *section = "";
    const char *base = (const char *)cfg;
    EMIT("# agefence resolved scenario (agefence config)\n");
    for (int i = 0; i < NKEYS; ++i) {
        const key_def_t *k = &KEYS[i];
        if (strcmp(section, k->section) != 0) {
            EMIT("%s[%s]\n", i ? "\n" : "", k->section);
            section = k->section;
        }
        switch (k->type) {
        case T_INT: {
            int64_t v;
            memcpy(&v, base + k->offset, sizeof v);
            EMIT("%s = %lld\n", k->key, (long long)v);
            break;
        }
        case T_REAL: {
            double v;
            memcpy(&v, base + k->offset, sizeof v);
            if (k->offset == OFF(dt) && cfg->dt_auto) {
                /* The number, so that the printed scenario runs as is; the comment says where it
                 * came from. */
                EMIT("# dt = auto: %g x the stability limit %.17g\n", AF_DT_AUTO_FRACTION,
                     af_config_dt_limit(cfg));
            }
            EMIT("%s = %.17g\n", k->key, v);
            break;
        }
        case T_ENUM: {
            int v;
            char buf[32];
            memcpy(&v, base + k->offset, sizeof v);
            EMIT("%s = %s\n", k->key, enum_name(k->choices, v, buf, sizeof buf));
            break;
        }
        default:
            EMIT("%s = %s\n", k->key, base + k->offset);
            break;
        }
    }
    af_event_cfg_t ev[AF_MAX_EVENTS];
    memcpy(ev, cfg->events, sizeof(af_event_cfg_t) * (size_t)cfg->n_events);
    qsort(ev, (size_t)cfg->n_events, sizeof ev[0], cmp_events);
    for (int i = 0; i < cfg->n_events; ++i) {
        static const char *const actions[] = {"kill",          "fade",         "slow",
                                              "lose_replicas", "kill_device",  "kill_node",
                                              "interrupt",     "reset_device", "link_down"};
        EMIT("\n[event.%d]\nstep = %lld\naction = %s\n", ev[i].index, (long long)ev[i].step,
             actions[ev[i].action]);
        if (ev[i].action == AF_EVENT_INTERRUPT) {
            char cb[32];
            EMIT("cause = %s\n",
                 enum_name(EVENT_CAUSES, ev[i].cause - AF_INTR_FIRST_JOB, cb, sizeof cb));
            if (ev[i].set_mask & 4) {
                EMIT("device = %lld\n", (long long)ev[i].device);
            }
            if (ev[i].set_mask & 32) {
                EMIT("node = %lld\n", (long long)ev[i].node);
            }
        } else if (ev[i].action == AF_EVENT_KILL_NODE) {
            EMIT("node = %lld\n", (long long)ev[i].node);
        } else if (ev[i].action == AF_EVENT_KILL_DEVICE || ev[i].action == AF_EVENT_RESET_DEVICE ||
                   ev[i].action == AF_EVENT_LINK_DOWN) {
            EMIT("device = %lld\n", (long long)ev[i].device);
        } else {
            EMIT("device = %lld\nunits = %lld-%lld\n", (long long)ev[i].device,
                 (long long)ev[i].unit_lo, (long long)ev[i].unit_hi);
        }
        if (ev[i].action == AF_EVENT_SLOW) {
            EMIT("factor = %.17g\n", ev[i].factor);
        }
    }
#undef EMIT
    return n;
}

void af_config_print_notes(const af_config_t *cfg, FILE *f)
{
    const char *p = cfg->notes;
    while (*p != '\0') {
        size_t len = strcspn(p, "\n");
        fprintf(f, "agefence: note: %.*s\n", (int)len, p);
        p += len + (p[len] == '\n');
    }
}

const char *af_backend_name(int compute)
{
    return compute == AF_BACKEND_CUDA ? "cuda" : compute == AF_BACKEND_CPU ? "cpu" : "auto";
}

const char *af_fabric_name(int fabric)
{
    return fabric == AF_FABRIC_NCCL ? "nccl" : fabric == AF_FABRIC_MPI ? "mpi" : "auto";
}

void af_config_print_keys(void)
{
    const char *section = "";
    for (int i = 0; i < NKEYS; ++i) {
        const key_def_t *k = &KEYS[i];
        char range[96];
        range_text(k, range, sizeof range);
        if (strcmp(section, k->section) != 0) {
            printf("[%s]\n", k->section);
            section = k->section;
        }
        printf("  %-22s %-12s default %-16s %s%s%s; %s\n", k->key, k->unit[0] ? k->unit : "-",
               k->def, k->doc, "", "", range);
    }
    printf("[event.N]  (scripted failures, any number up to %d)\n", AF_MAX_EVENTS);
    printf("  step                   steps        step at which the event happens (>= 1)\n");
    printf("  action                 -            kill (death, memory lost), fade (precursor), "
           "slow (throttled), lose_replicas (the replicas of the blocks the units hold), "
           "kill_device (every unit of the device), kill_node (every device of the node), "
           "interrupt (the job, for a cause), reset_device (the device's memory loses its "
           "state: cause hbm) or link_down (the device's fabric link fails: it leaves the job, "
           "cause link)\n");
    printf("  device                 -            device index in the fleet (0..devices-1); not "
           "with kill_node\n");
    printf("  units                  -            a unit or an inclusive range A-B; not with "
           "kill_device, kill_node, reset_device or link_down\n");
    printf("  node                   -            kill_node only: node index (0..devices / "
           "devices_per_node - 1)\n");
    printf("  factor                 x            slow only: the units run factor times as long "
           "as nominal (1 restores them); in [1, 1000]\n");
    printf("  cause                  -            interrupt only: a job-level interruption that "
           "kills no unit, one of " EVENT_CAUSES "; device (sdc) or node (network, nic) may say "
           "where\n");
}
