/* agefence bench ensemble: what an ensemble of the scenario costs to simulate (README,
 * "Ensembles"). Members of the scenario (the preset to measure: -c configs/presets/
 * llama3-54d.ini) run one after the other in this launch at three fleet sizes (scenario.devices
 * = scenario.blocks = 1,024, 16,384 and 131,072; --quick: 64 and 256 on 48 steps), --samples
 * seeds each (at most 16, the target's; 3 with --quick) after one warm-up member, each logged into
 * one ensemble directory beside the results file (DIR/member-NNNN.h5 and DIR/grid: agefence-report
 * DIR gathers them). Per size: seconds per member, members per second and simulated GPU-hours per
 * second (devices x the member's simulated hours over its wall time). The target: the three sizes x
 * 16 seeds x the scenario's steps within 15 minutes, from the median member time per size (measured
 * at
 * --samples seeds; MET or MISSED only outside --quick, where the members are the target's). A
 * member that exits other than 0, 3 (an undetected corruption: a result) or 4 (capacity
 * exhausted) marks the bench invalid. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/logfile.h"
#include "bench.h"
#include "bench_common.h"

enum { NSIZES = 3, TARGET_SEEDS = 16 };
static const int64_t FULL[NSIZES] = {1024, 16384, 131072};
static const int64_t QUICK[NSIZES] = {64, 256, 0};

/* Rank 0: /final@sim_hours of a member's log. */
static af_result_t sim_hours(const char *log, double *h)
{
    af_logfile_t lf;
    char err[600];
    if (af_logfile_open(&lf, log, err, sizeof err) != AF_OK) {
        af_error_set("%s", err);
        return AF_ERR_IO;
    }
    af_result_t rc = af_logfile_attr_f64(&lf, "/final", "sim_hours", h);
    af_logfile_close(&lf);
    if (rc != AF_OK) {
        af_error_set("%s: no /final@sim_hours", log);
    }
    return rc;
}

static af_result_t bench_ensemble(af_bench_ctx_t *b)
{
    const int64_t *sizes = b->quick ? QUICK : FULL;
    const int nsizes = b->quick ? 2 : NSIZES;
    /* --samples seeds a size, at most the target's 16 (the default 30 would be twice the
     * target's members) and 3 in --quick */
    const int cap = b->quick ? 3 : TARGET_SEEDS;
    const int seeds = b->samples < 1 ? 1 : b->samples > cap ? cap : b->samples;
    char dir[600];
    af_bench_log_path(b, "ensemble", dir, sizeof dir);
    dir[strlen(dir) - strlen(".run.h5")] = '\0'; /* RESULTS.ensemble: a directory */
    if (b->world.rank == 0) {
        if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
            af_bench_fail(b, "cannot make the ensemble directory %s: %s", dir, strerror(errno));
        } else {
            char path[700];
            snprintf(path, sizeof path, "%s/grid", dir);
            FILE *g = fopen(path, "w");
            if (g == NULL || fprintf(g, "scenario.devices\nscenario.blocks\n") < 0 ||
                fclose(g) != 0) {
                af_bench_fail(b, "cannot write %s", path);
            }
        }
    }
    double *secs = malloc(sizeof(double) * (size_t)seeds);
    double *rate = malloc(sizeof(double) * (size_t)seeds);
    af_result_t rc = secs == NULL || rate == NULL ? AF_ERR_NOMEM : AF_OK;
    /* Rank 0 alone made the directory: every rank learns whether it could before the members. */
    rc = af_bench_agree(b, rc);
    if (rc != AF_OK) {
        free(secs);
        free(rate);
        return rc;
    }
    double projected_s = 0.0;
    int index = 0;
    char steps_set[64] = "";
    if (b->quick) {
        snprintf(steps_set, sizeof steps_set, "scenario.steps=48");
    }
    for (int z = 0; z < nsizes && rc == AF_OK && !b->invalid; ++z) {
        char dev[64];
        char blk[64];
        snprintf(dev, sizeof dev, "scenario.devices=%lld", (long long)sizes[z]);
        snprintf(blk, sizeof blk, "scenario.blocks=%lld", (long long)sizes[z]);
        /* one warm-up member (seed 0 of the bench's range, not logged in the ensemble) */
        for (int s = -1; s < seeds && rc == AF_OK && !b->invalid; ++s) {
            char seed[64];
            snprintf(seed, sizeof seed, "scenario.seed=%d", 1000 + (s < 0 ? 999 : s));
            char log[700];
            if (s < 0) {
                af_bench_log_path(b, "ensemble-warmup", log, sizeof log);
            } else {
                snprintf(log, sizeof log, "%s/member-%04d.h5", dir, index++);
            }
            char where[96];
            snprintf(where, sizeof where, "ensemble: %lld devices, member %d/%d%s",
                     (long long)sizes[z], s + 1, seeds, s < 0 ? " (warm-up)" : "");
            af_bench_progress(b, where, z * (seeds + 1) + s + 1, nsizes * (seeds + 1));
            const char *extra[4] = {dev, blk, seed, steps_set};
            double wall = 0;
            int code = 0;
            rc = af_bench_run_scenario_code(b, extra, b->quick ? 4 : 3, log, NULL, NULL, &wall,
                                            &code);
            if (rc != AF_OK) {
                break;
            }
            if (code != AF_EXIT_OK && code != AF_EXIT_MISMATCH && code != AF_EXIT_CAPACITY) {
                af_bench_fail(b, "member %s exited with status %d (see its log)", log, code);
                break;
            }
            if (s >= 0 && b->world.rank == 0) {
                double h = 0;
                rc = sim_hours(log, &h);
                secs[s] = wall;
                rate[s] = wall > 0 ? (double)sizes[z] * h / wall : 0.0;
            }
            rc = af_bench_agree(b, rc); /* rank 0 alone read the member's log */
        }
        if (rc != AF_OK || b->invalid || b->world.rank != 0) {
            continue;
        }
        char name[64];
        snprintf(name, sizeof name, "member_s.%lld", (long long)sizes[z]);
        AF_CHECK_GOTO(af_bench_add(b, name, "s", secs, seeds), rc, out);
        snprintf(name, sizeof name, "gpu_hours_per_s.%lld", (long long)sizes[z]);
        AF_CHECK_GOTO(af_bench_add(b, name, "GPU-h/s", rate, seeds), rc, out);
        af_stats_t st = af_stats_of(secs, seeds);
        af_stats_t gr = af_stats_of(rate, seeds);
        char what[96];
        snprintf(what, sizeof what, "members/s at %lld devices", (long long)sizes[z]);
        af_bench_ratio(b, what, st.p50 > 0 ? 1.0 / st.p50 : 0.0, 0, 0, 0);
        snprintf(what, sizeof what, "simulated GPU-hours/s at %lld devices", (long long)sizes[z]);
        af_bench_ratio(b, what, gr.p50, 0, 0, 0);
        projected_s += TARGET_SEEDS * st.p50;
    }
    if (rc == AF_OK && !b->invalid) {
        af_bench_progress(b, "ensemble members", nsizes * (seeds + 1), nsizes * (seeds + 1));
    }
    if (rc == AF_OK && !b->invalid && b->world.rank == 0) {
        af_bench_ratio(b, "minutes for the sizes x 16 seeds (from the median member)",
                       projected_s / 60.0, !b->quick, 15.0, 0);
        af_bench_note(b,
                      "%d seeds x %d sizes after one warm-up member each, one after the other on "
                      "this launch's %d rank%s; %s",
                      seeds, nsizes, b->world.size, b->world.size == 1 ? "" : "s",
                      seeds >= TARGET_SEEDS ? "the target's 16 seeds measured"
                                            : "the 16 seeds projected from the median member");
        af_bench_note(b, "members in %s (agefence-report %s gathers them)", dir, dir);
        af_bench_note(b, "members on sub-groups of one launch's ranks are not built: the 2-rank "
                         "against 1-rank members/s target is not measured here");
    }
out:
    free(secs);
    free(rate);
    return rc;
}

const af_bench_def_t af_bench_ensemble = {
    "ensemble",
    "an ensemble of the scenario at 1,024, 16,384 and 131,072 devices: seconds a member, "
    "members/s and simulated GPU-hours/s, against 3 sizes x 16 seeds in 15 minutes",
    bench_ensemble};
