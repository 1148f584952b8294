/* Helpers shared by the benchmarks that run whole scenarios. */
#ifndef AF_BENCH_COMMON_H
#define AF_BENCH_COMMON_H

#include <stdint.h>

#include "bench.h"

/* Runs the scenario of b->run with `extra` settings applied first (the user's --set options
 * win), writing its log to log_path; wall_s gets the whole run's wall time. A run that fails
 * its own checks marks the benchmark invalid. AF_ERR_USAGE: the scenario was bad (reported). */
af_result_t af_bench_run_scenario(af_bench_ctx_t *b, const char *const *extra, int nextra,
                                  const char *log_path, af_run_hook_t hook, void *ctx,
                                  double *wall_s);
/* The same, for a benchmark that judges the outcome itself: *code gets the run's exit status
 * (the same on every rank), and no status marks the benchmark invalid here. */
af_result_t af_bench_run_scenario_code(af_bench_ctx_t *b, const char *const *extra, int nextra,
                                       const char *log_path, af_run_hook_t hook, void *ctx,
                                       double *wall_s, int *code);
/* Rank 0: one rank's column of /ranks/<phase> per step (rank_col < 0: the maximum over ranks),
 * malloc'ed. */
af_result_t af_bench_phase_rank(const char *log_path, const char *phase, int rank_col, double **out,
                                int64_t *rows);
/* Rank 0: the per-step maximum over ranks of /ranks/<phase>, malloc'ed. */
af_result_t af_bench_phase_max(const char *log_path, const char *phase, double **out,
                               int64_t *rows);
/* Rank 0: a /steps column as doubles. */
af_result_t af_bench_column(const char *log_path, const char *path, double *out, int64_t n);
/* The path of a benchmark's run log beside its results file. */
void af_bench_log_path(const af_bench_ctx_t *b, const char *what, char *out, size_t n);

#endif
