/* agefence benchmarks measured on whole runs: the coordinator's steady-state cost against the
 * calibrated all-reduce floor (coord), the HDF5 log's share of the step time (log), and a
 * fleet of 100,000 virtual devices (scale). Each runs a scenario through the real driver, then
 * reads the per-step, per-rank phase times from the run's own log. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/logfile.h"
#include "../common/af_time.h"
#include "bench.h"
#include "bench_common.h"

af_result_t af_bench_run_scenario(af_bench_ctx_t *b, const char *const *extra, int nextra,
                                  const char *log_path, af_run_hook_t hook, void *ctx,
                                  double *wall_s)
{
    af_run_opts_t o = b->run;
    if (o.nsets + nextra > AF_MAX_SETS) {
        af_error_set("bench: %d settings of its own and %d --set options exceed %d", nextra,
                     o.nsets, AF_MAX_SETS);
        return AF_ERR_INTERNAL;
    }
    for (int i = 0; i < nextra; ++i) {
        /* The benchmark's settings first: the user's --set options (already in o) win. */
        memmove(&o.sets[1], &o.sets[0], sizeof(o.sets[0]) * (size_t)o.nsets);
        o.sets[0] = extra[nextra - 1 - i];
        o.nsets++;
    }
    o.output = log_path;
    o.quiet = 1;
    o.hook = hook;
    o.hook_ctx = ctx;
    double t0 = af_now_us();
    int code = af_run_in_world(&o, &b->world);
    if (wall_s != NULL) {
        *wall_s = (af_now_us() - t0) * 1e-6;
    }
    if (code == AF_EXIT_USAGE) {
        return AF_ERR_USAGE;
    }
    if (code != AF_EXIT_OK) {
        af_bench_fail(b, "the scenario run exited with status %d (see its log %s)", code, log_path);
    }
    return AF_OK;
}

af_result_t af_bench_phase_max(const char *log_path, const char *phase, double **out, int64_t *rows)
{
    return af_bench_phase_rank(log_path, phase, -1, out, rows);
}

af_result_t af_bench_phase_rank(const char *log_path, const char *phase, int rank_col, double **out,
                                int64_t *rows)
{
    af_logfile_t lf;
    char err[600];
    char path[96];
    if (af_logfile_open(&lf, log_path, err, sizeof err) != AF_OK) {
        af_error_set("%s", err);
        return AF_ERR_IO;
    }
    int rank = 0;
    int64_t dims[2] = {0, 0};
    snprintf(path, sizeof path, "/ranks/%s", phase);
    af_result_t rc = af_logfile_shape(&lf, path, &rank, dims);
    double *all = NULL;
    double *v = NULL;
    if (rc == AF_OK) {
        all = malloc(sizeof(double) * (size_t)(dims[0] * dims[1] + 1));
        v = malloc(sizeof(double) * (size_t)(dims[0] + 1));
        rc = (all && v) ? af_logfile_read_f64(&lf, path, all, (size_t)(dims[0] * dims[1]))
                        : AF_ERR_NOMEM;
    }
    if (rc == AF_OK) {
        const int one = rank_col >= 0 && rank_col < dims[1];
        for (int64_t s = 0; s < dims[0]; ++s) {
            double m = one ? all[s * dims[1] + rank_col] : 0;
            for (int64_t q = 0; !one && q < dims[1]; ++q) {
                double x = all[s * dims[1] + q];
                m = x > m ? x : m;
            }
            v[s] = m;
        }
        *out = v;
        *rows = dims[0];
        v = NULL;
    } else {
        af_error_set("%s: cannot read %s", log_path, path);
    }
    free(all);
    free(v);
    af_logfile_close(&lf);
    return rc;
}

af_result_t af_bench_column(const char *log_path, const char *path, double *out, int64_t n)
{
    af_logfile_t lf;
    char err[600];
    if (af_logfile_open(&lf, log_path, err, sizeof err) != AF_OK) {
        af_error_set("%s", err);
        return AF_ERR_IO;
    }
    af_result_t rc = af_logfile_read_f64(&lf, path, out, (size_t)n);
    af_logfile_close(&lf);
    if (rc != AF_OK) {
        af_error_set("%s: cannot read %s", log_path, path);
    }
    return rc;
}

void af_bench_log_path(const af_bench_ctx_t *b, const char *what, char *out, size_t n)
{
    snprintf(out, n, "%s.%s.run.h5", b->out, what);
}

/* ---- coord ----------------------------------------------------------------------------------- */

static af_result_t bench_coord(af_bench_ctx_t *b)
{
    char log[600];
    af_bench_log_path(b, "coord", log, sizeof log);
    const char *quick[] = {"scenario.steps=300"};
    AF_CHECK(af_bench_run_scenario(b, quick, b->quick ? 1 : 0, log, NULL, NULL, NULL));
    if (b->world.rank != 0 || b->invalid) {
        return AF_OK;
    }
    double *coord = NULL;
    int64_t n = 0;
    AF_CHECK(af_bench_phase_max(log, "coord_us", &coord, &n));
    double *fad = malloc(sizeof(double) * (size_t)n);
    double *dead = malloc(sizeof(double) * (size_t)n);
    double *steady = malloc(sizeof(double) * (size_t)n);
    af_result_t rc = AF_OK;
    AF_REQUIRE_GOTO(fad && dead && steady, AF_ERR_NOMEM, rc, out);
    AF_CHECK_GOTO(af_bench_column(log, "/steps/fading_units", fad, n), rc, out);
    AF_CHECK_GOTO(af_bench_column(log, "/steps/dead_units", dead, n), rc, out);
    /* Steady state: past the warm-up, no unit fading and no death in the step (nothing to plan
     * or broadcast but the fixed header). */
    int m = 0;
    for (int64_t s = b->warmup; s < n; ++s) {
        if (fad[s] == 0 && (s == 0 || dead[s] == dead[s - 1])) {
            steady[m++] = coord[s];
        }
    }
    AF_CHECK_GOTO(af_bench_add(b, "coord_us_steady", "us", steady, m), rc, out);
    AF_CHECK_GOTO(af_bench_add(b, "coord_us_all_steps", "us", coord, (int)n), rc, out);
    {
        af_logfile_t lf;
        char err[600];
        double floor[200];
        AF_REQUIRE_GOTO(af_logfile_open(&lf, log, err, sizeof err) == AF_OK, AF_ERR_IO, rc, out);
        af_result_t r2 = af_logfile_read_f64(&lf, "/calibration/allreduce8_us", floor, 200);
        af_logfile_close(&lf);
        AF_CHECK_GOTO(r2, rc, out);
        AF_CHECK_GOTO(af_bench_add(b, "allreduce8_floor_us", "us", floor, 200), rc, out);
        af_stats_t sc = af_stats_of(steady, m);
        af_stats_t sf = af_stats_of(floor, 200);
        af_bench_ratio(b, "coord p50 / all-reduce floor p50", sc.p50 / sf.p50, 1, 2.0, 0);
        af_bench_ratio(b, "coord p99 / all-reduce floor p50", sc.p99 / sf.p50, 0, 0, 0);
        af_bench_note(b, "%d steady steps of %lld (default scenario unless -c/--set); run log %s",
                      m, (long long)n, log);
        if (m == 0) {
            af_bench_fail(b, "no steady-state step in the run");
        }
    }
out:
    free(coord);
    free(fad);
    free(dead);
    free(steady);
    return rc;
}

const af_bench_def_t af_bench_coord = {
    "coord", "coordinator cost per steady-state step vs the 8-byte all-reduce floor", bench_coord};

/* ---- log ------------------------------------------------------------------------------------- */

static af_result_t bench_log(af_bench_ctx_t *b)
{
    char log[600];
    af_bench_log_path(b, "log", log, sizeof log);
    const char *quick[] = {"scenario.steps=300"};
    AF_CHECK(af_bench_run_scenario(b, quick, b->quick ? 1 : 0, log, NULL, NULL, NULL));
    if (b->world.rank != 0 || b->invalid) {
        return AF_OK;
    }
    double *lg = NULL;
    double *st = NULL;
    int64_t n = 0;
    int64_t n2 = 0;
    AF_CHECK(af_bench_phase_max(log, "log_us", &lg, &n));
    af_result_t rc = af_bench_phase_max(log, "step_us", &st, &n2);
    if (rc == AF_OK) {
        double sl = 0;
        double ss = 0;
        for (int64_t s = 0; s < n; ++s) {
            sl += lg[s];
            ss += st[s];
        }
        rc = af_bench_add(b, "log_us", "us", lg, (int)n);
        if (rc == AF_OK) {
            rc = af_bench_add(b, "step_us", "us", st, (int)n);
        }
        af_bench_ratio(b, "log time / step time (sum over the run)", ss > 0 ? sl / ss : 0, 1, 0.01,
                       0);
        af_bench_note(b, "rank-max log_us and step_us per step over %lld steps; run log %s",
                      (long long)n, log);
    }
    free(lg);
    free(st);
    return rc;
}

const af_bench_def_t af_bench_log = {
    "log", "HDF5 logging cost per step as a fraction of the step time", bench_log};

/* ---- scale ----------------------------------------------------------------------------------- */

static af_result_t bench_scale(af_bench_ctx_t *b)
{
    char log[600];
    af_bench_log_path(b, "scale", log, sizeof log);
    /* 100,000 virtual devices x 8 units; two small blocks per device. One simulated hour per
     * step: at 800,000 units the default 100 hours would kill ~8 units a step by sudden failure
     * alone, faster than replicas every 10 steps can absorb (every death a rollback). */
    const char *full[] = {"scenario.devices=100000", "scenario.units_per_device=8",
                          "scenario.blocks=200000",  "scenario.block_len=8",
                          "scenario.steps=40",       "workload.dt=1e-13",
                          "log.flush_interval=10",   "recovery.replica_interval=10",
                          "event.1.step=10",         "aging.sim_hours_per_step=1"};
    const char *quick[] = {"scenario.devices=2000", "scenario.units_per_device=8",
                           "scenario.blocks=4000",  "scenario.block_len=8",
                           "scenario.steps=20",     "workload.dt=1e-11",
                           "log.flush_interval=10", "recovery.replica_interval=10",
                           "event.1.step=10",       "aging.sim_hours_per_step=1"};
    double wall = 0;
    AF_CHECK(af_bench_run_scenario(b, b->quick ? quick : full, 10, log, NULL, NULL, &wall));
    if (b->world.rank != 0 || b->invalid) {
        return AF_OK;
    }
    af_logfile_t lf;
    char err[600];
    if (af_logfile_open(&lf, log, err, sizeof err) != AF_OK) {
        af_error_set("%s", err);
        return AF_ERR_IO;
    }
    int64_t devices = 0;
    int64_t steps = 0;
    double bytes = 0;
    af_logfile_attr_i64(&lf, "/", "devices", &devices);
    af_logfile_attr_i64(&lf, "/final", "steps_completed", &steps);
    af_logfile_attr_f64(&lf, "/", "state_bytes_static", &bytes);
    double alloc_peak = 0;
    double rss_peak = 0;
    double budget = 0;
    af_logfile_attr_f64(&lf, "/final", "alloc_peak_bytes", &alloc_peak);
    af_logfile_attr_f64(&lf, "/final", "rss_peak_bytes", &rss_peak);
    af_logfile_attr_f64(&lf, "/final", "memory_budget_peak_bytes", &budget);
    af_logfile_close(&lf);
    double *st = NULL;
    double *co = NULL;
    int64_t n = 0;
    AF_CHECK(af_bench_phase_max(log, "step_us", &st, &n));
    af_result_t rc = af_bench_phase_max(log, "coord_us", &co, &n);
    if (rc == AF_OK) {
        rc = af_bench_add(b, "step_us", "us", st, (int)n);
    }
    if (rc == AF_OK) {
        rc = af_bench_add(b, "coord_us", "us", co, (int)n);
    }
    double sum = 0;
    for (int64_t s = 0; s < n; ++s) {
        sum += st[s];
    }
    af_bench_ratio(b, "devices", (double)devices, 0, 0, 1);
    af_bench_ratio(b, "steps per second (steps / sum of step_us)", sum > 0 ? n / (sum * 1e-6) : 0,
                   0, 0, 1);
    af_bench_ratio(b, "state bytes per virtual device", bytes / (double)devices, 0, 0, 1);
    /* The largest rank's: agefence's own allocations at their peak, the memory budget, and the
     * process's peak resident memory (libraries and MPI included), per rank and per device. */
    af_bench_ratio(b, "allocated bytes per rank (peak, largest rank)", alloc_peak, 0, 0, 1);
    af_bench_ratio(b, "budgeted bytes per rank (start-up and verdict)", budget, 0, 0, 1);
    af_bench_ratio(b, "resident bytes per rank (peak, largest rank)", rss_peak, 0, 0, 1);
    af_bench_ratio(b, "allocated bytes per device (largest rank x ranks / devices)",
                   alloc_peak * (double)b->world.size / (double)devices, 0, 0, 1);
    af_bench_note(b,
                  "%lld steps of a %lld-device fleet in %.1f s wall (start-up and verdict "
                  "included); run log %s",
                  (long long)steps, (long long)devices, wall, log);
    free(st);
    free(co);
    return rc;
}

const af_bench_def_t af_bench_scale = {
    "scale", "a fleet of 100,000 virtual devices: steps per second, bytes per device", bench_scale};
