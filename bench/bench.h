/* agefence bench: microbenchmarks over one shared driver (after nccl-tests). Each benchmark
 * is one file (bench/bench_*.c) exporting an af_bench_def_t; the driver gives it the launch, a
 * fabric, a scenario and the warm-up and sample counts, and collects named sample series on
 * rank 0. It prints one table (min, p10, p50, p90, p99, max, coefficient of variation), the
 * ratios each benchmark derives with their targets, and keeps every raw sample in an HDF5 file
 * with /host (cores, load average before and after, library versions, hostnames). A benchmark
 * that finds its own result wrong marks the run invalid: exit status 3. */
#ifndef AF_BENCH_H
#define AF_BENCH_H

#include <stddef.h>

#include "../common/af_result.h"
#include "../fabric/fabric.h"
#include "../sim/io/config.h"
#include "../sim/driver/run.h"

#define AF_BENCH_MAX_SERIES 64
#define AF_BENCH_MAX_RATIOS 128

typedef struct af_bench_series {
    char name[64];
    char unit[16];
    double *v; /* rank 0 */
    int n;
} af_bench_series_t;

typedef struct af_bench_ratio {
    char name[96];
    double value;
    double target;
    int higher_is_better; /* 1: value >= target meets it; 0: value <= target */
    int has_target;
} af_bench_ratio_t;

typedef struct af_bench_ctx {
    af_world_t world;
    af_fabric_t *fab;
    int warmup;
    int samples;
    int quick;           /* tiny configuration (the tests) */
    af_run_opts_t run;   /* scenario options for benchmarks that run scenarios */
    const char *out;     /* HDF5 path */
    int progress;        /* rank 0: 1 when stderr is a terminal (repainted), 2 when not (lines) */
    double prog_t0_us;   /* af_bench_progress: when the benchmark's first unit began, */
    double prog_last_us; /* when its last unit ended, when a line was last shown, */
    double prog_shown_us;
    double prog_sum, prog_sum2; /* and the sum of the units' times and of their squares, us */
    int prog_done;
    af_bench_series_t series[AF_BENCH_MAX_SERIES];
    int n_series;
    af_bench_ratio_t ratios[AF_BENCH_MAX_RATIOS];
    int n_ratios;
    char notes[16][200];
    int n_notes;
    int invalid;
    char why[300];
} af_bench_ctx_t;

typedef struct af_bench_def {
    const char *name;
    const char *summary;
    af_result_t (*run)(af_bench_ctx_t *b);
} af_bench_def_t;

/* Rank 0 keeps a copy of n samples as a named series (other ranks: no-op). */
af_result_t af_bench_add(af_bench_ctx_t *b, const char *name, const char *unit, const double *v,
                         int n);
/* A derived figure, with a target when has_target. */
void af_bench_ratio(af_bench_ctx_t *b, const char *name, double value, int has_target,
                    double target, int higher_is_better);
void af_bench_note(af_bench_ctx_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Marks the result wrong (exit 3), with the first reason kept. */
void af_bench_fail(af_bench_ctx_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Rank 0: where the benchmark is (`what`: its case and sample) and an estimate of the time
 * left, from the mean time of the done units over the total, on stderr: repainted on a terminal,
 * else a plain line at most every 10 s. Nothing in the first 3 s (a quick benchmark says
 * nothing). The estimate says "unsure" while fewer than 3 units are done or their times
 * spread widely (a coefficient of variation above 0.5). Call with done = 0 at the start. */
void af_bench_progress(af_bench_ctx_t *b, const char *what, int done, int total);
/* Collective: every rank leaves with the same outcome, so that a loop or branch after it
 * depends only on values all ranks hold (rank 0 alone reads the runs' logs, and may fail or
 * find the result wrong). b->invalid is set on every rank when it was on any. Returns rc on a
 * rank whose own rc failed; on the others AF_ERR_USAGE when a rank met bad input (that rank
 * said so), else AF_ERR_ELSEWHERE when a rank failed, else AF_OK. */
af_result_t af_bench_agree(af_bench_ctx_t *b, af_result_t rc);
/* Max over ranks of a per-rank time (collective). */
af_result_t af_bench_max(af_bench_ctx_t *b, double *v);

/* Statistics of a series: sorts a copy. */
typedef struct af_stats {
    double min, p10, p50, p90, p99, max, mean, sd, cv;
    int n;
} af_stats_t;
af_stats_t af_stats_of(const double *v, int n);

/* `agefence bench ...`: returns the exit status. */
int af_bench_main(int argc, char **argv);

extern const af_bench_def_t af_bench_kernel;
extern const af_bench_def_t af_bench_remap;
extern const af_bench_def_t af_bench_recovery;
extern const af_bench_def_t af_bench_coord;
extern const af_bench_def_t af_bench_log;
extern const af_bench_def_t af_bench_scale;
extern const af_bench_def_t af_bench_jitter;
extern const af_bench_def_t af_bench_graph;
extern const af_bench_def_t af_bench_sdc;
extern const af_bench_def_t af_bench_ensemble;

/* `bench kernel` with workload.kind = attention (bench/bench_kernel_attn.c): the masked
 * attention step's flop rate against the multiply-add peak. AF_ERR_USAGE when the scenario is
 * bad (rank 0 said so). */
af_result_t af_bench_kernel_attention(af_bench_ctx_t *b);

#endif
