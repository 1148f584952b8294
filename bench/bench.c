/* agefence bench driver: options, statistics, the table and the HDF5 file of raw samples. */
#include "bench.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/af_alloc.h"
#include "../common/af_time.h"
#include "../kernels/kernels.h"
#include "../common/percentile.h"
#include "../sim/io/log.h"
#include "../sim/io/version.h"

static const af_bench_def_t *const BENCHES[] = {
    &af_bench_kernel, &af_bench_remap,  &af_bench_recovery, &af_bench_coord, &af_bench_log,
    &af_bench_scale,  &af_bench_jitter, &af_bench_graph,    &af_bench_sdc,   &af_bench_ensemble};
#define NBENCH ((int)(sizeof BENCHES / sizeof BENCHES[0]))

af_stats_t af_stats_of(const double *v, int n)
{
    af_stats_t s;
    memset(&s, 0, sizeof s);
    s.n = n;
    if (n <= 0) {
        return s;
    }
    double *c = malloc(sizeof(double) * (size_t)n);
    if (c == NULL) {
        return s;
    }
    memcpy(c, v, sizeof(double) * (size_t)n);
    af_sort_doubles(c, (size_t)n);
    s.min = c[0];
    s.max = c[n - 1];
    s.p10 = af_percentile_sorted(c, (size_t)n, 10);
    s.p50 = af_percentile_sorted(c, (size_t)n, 50);
    s.p90 = af_percentile_sorted(c, (size_t)n, 90);
    s.p99 = af_percentile_sorted(c, (size_t)n, 99);
    double sum = 0;
    for (int i = 0; i < n; ++i) {
        sum += c[i];
    }
    s.mean = sum / n;
    double ss = 0;
    for (int i = 0; i < n; ++i) {
        ss += (c[i] - s.mean) * (c[i] - s.mean);
    }
    s.sd = n > 1 ? sqrt(ss / (n - 1)) : 0.0;
    s.cv = s.mean != 0 ? s.sd / fabs(s.mean) : 0.0;
    free(c);
    return s;
}

af_result_t af_bench_add(af_bench_ctx_t *b, const char *name, const char *unit, const double *v,
                         int n)
{
    if (b->world.rank != 0) {
        return AF_OK;
    }
    if (b->n_series == AF_BENCH_MAX_SERIES) {
        af_error_set("bench: more than %d series", AF_BENCH_MAX_SERIES);
        return AF_ERR_INTERNAL;
    }
    af_bench_series_t *s = &b->series[b->n_series];
    s->v = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (s->v == NULL) {
        return AF_ERR_NOMEM;
    }
    memcpy(s->v, v, sizeof(double) * (size_t)n);
    s->n = n;
    snprintf(s->name, sizeof s->name, "%s", name);
    snprintf(s->unit, sizeof s->unit, "%s", unit);
    b->n_series++;
    return AF_OK;
}

void af_bench_ratio(af_bench_ctx_t *b, const char *name, double value, int has_target,
                    double target, int higher_is_better)
{
    if (b->n_ratios == AF_BENCH_MAX_RATIOS) {
        /* Never a figure dropped in silence: the result says which one did not fit. */
        af_bench_fail(b, "more than %d figures: \"%s\" and any after it were not kept",
                      AF_BENCH_MAX_RATIOS, name);
        return;
    }
    af_bench_ratio_t *r = &b->ratios[b->n_ratios++];
    snprintf(r->name, sizeof r->name, "%s", name);
    r->value = value;
    r->has_target = has_target;
    r->target = target;
    r->higher_is_better = higher_is_better;
}

void af_bench_note(af_bench_ctx_t *b, const char *fmt, ...)
{
    if (b->n_notes == 16) {
        af_bench_fail(b, "more than 16 notes: the later ones were not kept");
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->notes[b->n_notes++], sizeof b->notes[0], fmt, ap);
    va_end(ap);
}

void af_bench_fail(af_bench_ctx_t *b, const char *fmt, ...)
{
    if (!b->invalid) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(b->why, sizeof b->why, fmt, ap);
        va_end(ap);
    }
    b->invalid = 1;
}

/* "45 s", "3 min 20 s", "2 h 5 min". */
static void fmt_left(char *out, size_t n, double s)
{
    long t = (long)(s + 0.5);
    if (t < 60) {
        snprintf(out, n, "%ld s", t);
    } else if (t < 3600) {
        snprintf(out, n, "%ld min %ld s", t / 60, t % 60);
    } else {
        snprintf(out, n, "%ld h %ld min", t / 3600, (t % 3600) / 60);
    }
}

void af_bench_progress(af_bench_ctx_t *b, const char *what, int done, int total)
{
    if (!b->progress) {
        return;
    }
    double now = af_now_us();
    if (done > b->prog_done) {
        /* The time since the last unit ended, shared by the units done since. */
        int k = done - b->prog_done;
        double each = (now - b->prog_last_us) / k;
        b->prog_sum += each * k;
        b->prog_sum2 += each * each * k;
        b->prog_done = done;
        b->prog_last_us = now;
    }
    /* A plain line at most every 10 s where it is not repainted, and none in the first 3 s. */
    if (now - b->prog_t0_us < 3e6 ||
        (b->progress == 2 && done < total && now - b->prog_shown_us < 10e6)) {
        return;
    }
    b->prog_shown_us = now;
    char eta[160] = "estimate after the first unit";
    int n = b->prog_done;
    if (n > 0 && done < total) {
        double mean = b->prog_sum / n;
        double var = b->prog_sum2 / n - mean * mean;
        double cv = mean > 0 && var > 0 ? sqrt(var) / mean : 0.0;
        char left[48];
        fmt_left(left, sizeof left, mean * (total - done) * 1e-6);
        snprintf(eta, sizeof eta, "about %s left%s", left,
                 n < 3 || cv > 0.5 ? " (unsure: the units so far differ or are few)" : "");
    } else if (done >= total) {
        char took[48];
        fmt_left(took, sizeof took, (now - b->prog_t0_us) * 1e-6);
        snprintf(eta, sizeof eta, "done in %s", took);
    }
    /* What the benchmark printed so far goes first: its table and result lines are stdout's,
     * and a reader of both (2>&1) must not find this line inside one of them. */
    fflush(stdout);
    fprintf(stderr, "%sagefence bench: %s (%d/%d), %s%s", b->progress == 1 ? "\r" : "", what, done,
            total, eta, b->progress == 1 && done < total ? "   " : "\n");
    fflush(stderr);
}

af_result_t af_bench_agree(af_bench_ctx_t *b, af_result_t rc)
{
    uint64_t v[3] = {rc != AF_OK, rc == AF_ERR_USAGE, (uint64_t)(b->invalid != 0)};
    AF_CHECK(b->fab->ops->allreduce_max_u64(b->fab, v, 3));
    if (v[2] != 0 && !b->invalid) {
        af_bench_fail(b, "another rank found its result wrong");
    }
    if (rc != AF_OK) {
        return rc;
    }
    return v[1] != 0 ? AF_ERR_USAGE : v[0] != 0 ? AF_ERR_ELSEWHERE : AF_OK;
}

af_result_t af_bench_max(af_bench_ctx_t *b, double *v)
{
    /* Non-negative doubles order like their bit patterns. */
    uint64_t bits;
    double x = *v < 0 ? 0 : *v;
    memcpy(&bits, &x, sizeof bits);
    AF_CHECK(b->fab->ops->allreduce_max_u64(b->fab, &bits, 1));
    memcpy(v, &bits, sizeof bits);
    return AF_OK;
}

static int met(const af_bench_ratio_t *r)
{
    return r->higher_is_better ? r->value >= r->target : r->value <= r->target;
}

static void print_table(const af_bench_ctx_t *b, const af_bench_def_t *d)
{
    printf("agefence bench %s: %s\n", d->name, d->summary);
    printf("  %-34s %-6s %5s %10s %10s %10s %10s %10s %10s %6s\n", "series", "unit", "n", "min",
           "p10", "p50", "p90", "p99", "max", "cv");
    for (int i = 0; i < b->n_series; ++i) {
        const af_bench_series_t *s = &b->series[i];
        af_stats_t st = af_stats_of(s->v, s->n);
        printf("  %-34s %-6s %5d %10.4g %10.4g %10.4g %10.4g %10.4g %10.4g %6.3f\n", s->name,
               s->unit, s->n, st.min, st.p10, st.p50, st.p90, st.p99, st.max, st.cv);
    }
    for (int i = 0; i < b->n_ratios; ++i) {
        const af_bench_ratio_t *r = &b->ratios[i];
        if (r->has_target) {
            printf("  %-48s %12.4g   target %s %-10.4g %s\n", r->name, r->value,
                   r->higher_is_better ? ">=" : "<=", r->target, met(r) ? "MET" : "MISSED");
        } else {
            printf("  %-48s %12.4g\n", r->name, r->value);
        }
    }
    for (int i = 0; i < b->n_notes; ++i) {
        printf("  note: %s\n", b->notes[i]);
    }
    printf("  result: %s%s%s\n", b->invalid ? "WRONG" : "valid", b->invalid ? " - " : "",
           b->invalid ? b->why : "");
}

static af_result_t write_results(const af_bench_ctx_t *b, const af_bench_def_t *d,
                                 const double load0[3], const double load1[3], const char *hosts)
{
    af_log_t *log = NULL;
    AF_CHECK(af_log_create_plain(&log, b->out));
    af_result_t rc = AF_OK;
    char buf[512];
    AF_CHECK_GOTO(af_log_attr_i64(log, "/", "schema_version", 1), rc, out);
    AF_CHECK_GOTO(af_log_attr_str(log, "/", "kind", "agefence bench"), rc, out);
    AF_CHECK_GOTO(af_log_attr_str(log, "/", "benchmark", d->name), rc, out);
    AF_CHECK_GOTO(af_log_attr_str(log, "/", "agefence_version", af_version), rc, out);
    AF_CHECK_GOTO(af_log_attr_str(log, "/", "git_revision", af_git_revision), rc, out);
    AF_CHECK_GOTO(af_log_attr_i64(log, "/", "ranks", b->world.size), rc, out);
    AF_CHECK_GOTO(af_log_attr_i64(log, "/", "warmup", b->warmup), rc, out);
    AF_CHECK_GOTO(af_log_attr_i64(log, "/", "samples", b->samples), rc, out);
    AF_CHECK_GOTO(af_log_attr_i64(log, "/", "valid", !b->invalid), rc, out);
    AF_CHECK_GOTO(af_log_attr_str(log, "/", "invalid_reason", b->why), rc, out);
    AF_CHECK_GOTO(af_log_group(log, "/host"), rc, out);
    AF_CHECK_GOTO(af_log_attr_i64(log, "/host", "cores", sysconf(_SC_NPROCESSORS_ONLN)), rc, out);
    AF_CHECK_GOTO(af_log_attr_f64(log, "/host", "loadavg_1min_before", load0[0]), rc, out);
    AF_CHECK_GOTO(af_log_attr_f64(log, "/host", "loadavg_1min_after", load1[0]), rc, out);
    af_world_versions(buf, sizeof buf);
    AF_CHECK_GOTO(af_log_attr_str(log, "/host", "mpi_version", buf), rc, out);
    AF_CHECK_GOTO(af_log_attr_str(log, "/host", "cuda_nccl_version", af_device_versions()), rc,
                  out);
    AF_CHECK_GOTO(af_log_attr_str(log, "/host", "hostnames", hosts), rc, out);
    AF_CHECK_GOTO(af_log_group(log, "/series"), rc, out);
    for (int i = 0; i < b->n_series; ++i) {
        const af_bench_series_t *s = &b->series[i];
        char path[128];
        snprintf(path, sizeof path, "/series/%s", s->name);
        AF_CHECK_GOTO(af_log_write_f64(log, path, s->v, (size_t)s->n), rc, out);
        af_stats_t st = af_stats_of(s->v, s->n);
        AF_CHECK_GOTO(af_log_attr_str(log, path, "unit", s->unit), rc, out);
        const char *names[] = {"min", "p10", "p50", "p90", "p99", "max", "mean", "sd", "cv"};
        const double vals[] = {st.min, st.p10,  st.p50, st.p90, st.p99,
                               st.max, st.mean, st.sd,  st.cv};
        for (int k = 0; k < 9; ++k) {
            AF_CHECK_GOTO(af_log_attr_f64(log, path, names[k], vals[k]), rc, out);
        }
    }
    AF_CHECK_GOTO(af_log_group(log, "/ratios"), rc, out);
    for (int i = 0; i < b->n_ratios; ++i) {
        const af_bench_ratio_t *r = &b->ratios[i];
        AF_CHECK_GOTO(af_log_attr_f64(log, "/ratios", r->name, r->value), rc, out);
        if (r->has_target) {
            snprintf(buf, sizeof buf, "%s target", r->name);
            AF_CHECK_GOTO(af_log_attr_f64(log, "/ratios", buf, r->target), rc, out);
            snprintf(buf, sizeof buf, "%s met", r->name);
            AF_CHECK_GOTO(af_log_attr_i64(log, "/ratios", buf, met(r)), rc, out);
        }
    }
    for (int i = 0; i < b->n_notes; ++i) {
        snprintf(buf, sizeof buf, "note_%d", i);
        AF_CHECK_GOTO(af_log_attr_str(log, "/", buf, b->notes[i]), rc, out);
    }
out:
    if (af_log_close(&log) != AF_OK && rc == AF_OK) {
        rc = AF_ERR_HDF5;
    }
    return rc;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: agefence bench NAME [-o FILE.h5] [--samples N] [--warmup N] [--quick]\n"
               "                      [-c FILE] [--set section.key=value]...\n"
               "       agefence bench --list\n"
               "Runs under mpirun like `agefence run`. Benchmarks:\n");
    for (int i = 0; i < NBENCH; ++i) {
        fprintf(f, "  %-9s %s\n", BENCHES[i]->name, BENCHES[i]->summary);
    }
}

int af_bench_main(int argc, char **argv)
{
    if (argc < 3 || strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "--list") == 0) {
        usage(argc < 3 ? stderr : stdout);
        return argc < 3 ? AF_EXIT_USAGE : AF_EXIT_OK;
    }
    const af_bench_def_t *d = NULL;
    for (int i = 0; i < NBENCH; ++i) {
        if (strcmp(argv[2], BENCHES[i]->name) == 0) {
            d = BENCHES[i];
        }
    }
    static af_bench_ctx_t ctx;
    af_bench_ctx_t *b = &ctx;
    memset(b, 0, sizeof *b);
    b->warmup = -1;
    b->samples = -1;
    char usage_error[300] = "";
    if (d == NULL) {
        snprintf(usage_error, sizeof usage_error, "unknown benchmark '%s' (agefence bench --list)",
                 argv[2]);
    }
    for (int i = 3; i < argc && usage_error[0] == '\0'; ++i) {
        const char *a = argv[i];
        int takes = strcmp(a, "-o") == 0 || strcmp(a, "--samples") == 0 ||
                    strcmp(a, "--warmup") == 0 || strcmp(a, "-c") == 0 || strcmp(a, "--set") == 0;
        if (takes && i + 1 >= argc) {
            snprintf(usage_error, sizeof usage_error, "%s needs a value", a);
            break;
        }
        if (strcmp(a, "-o") == 0) {
            b->out = argv[++i];
        } else if (strcmp(a, "--samples") == 0 || strcmp(a, "--warmup") == 0) {
            char *end = NULL;
            long v = strtol(argv[++i], &end, 10);
            if (*end != '\0' || v < (a[2] == 's' ? 1 : 0) || v > 1000000) {
                snprintf(usage_error, sizeof usage_error,
                         "%s = '%s': expected an integer in "
                         "[%d, 1000000]",
                         a, argv[i], a[2] == 's' ? 1 : 0);
                break;
            }
            if (a[2] == 's') {
                b->samples = (int)v;
            } else {
                b->warmup = (int)v;
            }
        } else if (strcmp(a, "-c") == 0) {
            b->run.config_file = argv[++i];
        } else if (strcmp(a, "--set") == 0) {
            if (b->run.nsets == AF_MAX_SETS) {
                snprintf(usage_error, sizeof usage_error, "at most %d --set options", AF_MAX_SETS);
                break;
            }
            b->run.sets[b->run.nsets++] = argv[++i];
        } else if (strcmp(a, "--quick") == 0) {
            b->quick = 1;
        } else {
            snprintf(usage_error, sizeof usage_error, "unknown option '%s' (agefence bench --help)",
                     a);
        }
    }
    if (b->samples < 0) {
        b->samples = b->quick ? 5 : 30;
    }
    if (b->warmup < 0) {
        b->warmup = b->quick ? 1 : 5;
    }
    static char out_default[96];
    if (b->out == NULL && d != NULL) {
        snprintf(out_default, sizeof out_default, "agefence-bench-%s.h5", d->name);
        b->out = out_default;
    }
    if (af_world_init(&argc, &argv, &b->world) != AF_OK) {
        fprintf(stderr, "agefence: %s\n", af_error_message());
        return AF_EXIT_ERROR;
    }
    int code = AF_EXIT_ERROR;
    if (usage_error[0] != '\0') {
        if (b->world.rank == 0) {
            fprintf(stderr, "agefence: %s\n", usage_error);
        }
        af_world_finalize();
        return AF_EXIT_USAGE;
    }
    /* The output must be writable before any work, and what is at its path must be an
     * agefence file (an earlier result, replaced at the end) or nothing: a folder, the empty
     * name, a folder that is not there or any other file is refused, and left as it is (the
     * rules of agefence run's -o, sim/io/log.h). */
    int bad = 0;
    if (b->world.rank == 0) {
        if (af_log_check_path(b->out, NULL) != AF_OK) {
            fprintf(stderr, "agefence: %s\n", af_error_message());
            bad = 1;
        }
        b->progress = isatty(STDERR_FILENO) ? 1 : 2;
    }
    af_result_t rc = af_fabric_mpi_create(&b->fab);
    uint64_t flag = (uint64_t)bad;
    if (rc == AF_OK) {
        rc = b->fab->ops->allreduce_max_u64(b->fab, &flag, 1);
    }
    if (rc != AF_OK || flag != 0) {
        af_fabric_destroy(&b->fab);
        af_world_finalize();
        return rc != AF_OK ? AF_EXIT_ERROR : AF_EXIT_USAGE;
    }
    double load0[3] = {0, 0, 0};
    double load1[3] = {0, 0, 0};
    getloadavg(load0, 3);
    char *hosts = NULL;
    char *names = NULL;
    if (b->world.rank == 0) {
        names = calloc((size_t)b->world.size, 64);
        hosts = calloc((size_t)b->world.size, 65);
        if (names == NULL || hosts == NULL) {
            af_error_set("bench: cannot allocate the hostnames of %d ranks", b->world.size);
            rc = AF_ERR_NOMEM;
        }
    }
    /* Rank 0 alone allocates: the gather that follows waits for every rank, so all learn first
     * whether it can. */
    rc = af_bench_agree(b, rc);
    if (rc == AF_OK) {
        rc = af_world_hostnames(&b->world, names);
    }
    if (rc == AF_OK && b->world.rank == 0) {
        for (int q = 0; q < b->world.size; ++q) {
            strcat(hosts, q ? "," : "");
            strncat(hosts, names + (size_t)q * 64, 63);
        }
    }
    if (rc == AF_OK) {
        b->prog_t0_us = af_now_us();
        b->prog_last_us = b->prog_t0_us;
        /* A wrong result or a failure on any rank is the whole benchmark's. */
        rc = af_bench_agree(b, d->run(b));
    }
    getloadavg(load1, 3);
    if (rc == AF_ERR_USAGE) {
        code = AF_EXIT_USAGE; /* the scenario was bad: the rank that met it said so */
    } else if (rc != AF_OK) {
        if (rc != AF_ERR_ELSEWHERE) {
            fprintf(stderr, "agefence bench %s: rank %d: %s\n", d->name, b->world.rank,
                    af_error_text(rc));
        }
        af_world_abort(AF_EXIT_ERROR);
    } else {
        code = b->invalid ? AF_EXIT_MISMATCH : AF_EXIT_OK;
        if (b->world.rank == 0) {
            print_table(b, d);
            if (write_results(b, d, load0, load1, hosts ? hosts : "") != AF_OK) {
                fprintf(stderr, "agefence bench: %s\n", af_error_message());
                code = AF_EXIT_ERROR;
            } else {
                printf("  raw samples: %s\n", b->out);
            }
        }
    }
    for (int i = 0; i < b->n_series; ++i) {
        free(b->series[i].v);
    }
    free(names);
    free(hosts);
    af_fabric_destroy(&b->fab);
    af_world_finalize();
    return code;
}
