/* agefence-report: offline reading of a run's log (no MPI needed). This version prints the
 * run's identity, verdict and totals, validates a file against the schema (--check), and reads
 * single attributes for scripts (--attr). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/af_result.h"
#include "../sim/log_schema.h"
#include "logread.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: agefence-report RUN.h5            summary of a run\n"
               "       agefence-report --check RUN.h5    validate against the log schema\n"
               "       agefence-report --attr OBJ NAME RUN.h5   print one attribute\n"
               "exit status: 0 ok, 1 the file breaks the schema (--check), 2 bad input\n");
}

static void print_attr(const af_logfile_t *lf, const char *obj, const char *name, const char *label)
{
    char s[4096];
    int64_t i = 0;
    double d = 0;
    if (af_logfile_attr_str(lf, obj, name, s, sizeof s) == AF_OK) {
        printf("  %-22s %s\n", label, s);
    } else if (af_logfile_attr_i64(lf, obj, name, &i) == AF_OK &&
               af_logfile_attr_f64(lf, obj, name, &d) == AF_OK && d == (double)i) {
        printf("  %-22s %lld\n", label, (long long)i);
    } else if (af_logfile_attr_f64(lf, obj, name, &d) == AF_OK) {
        printf("  %-22s %.6g\n", label, d);
    } else {
        printf("  %-22s (absent)\n", label);
    }
}

static int summary(const af_logfile_t *lf)
{
    printf("agefence log %s (schema %lld)\n", lf->path, (long long)lf->schema_version);
    printf("run\n");
    const char *root[] = {"scenario",  "agefence_version", "git_revision",   "ranks",
                          "devices",   "units_per_device", "blocks",         "block_len",
                          "capacity",  "compute_backend",  "fabric_backend", "seed",
                          "hostnames", "start_time"};
    for (size_t i = 0; i < sizeof root / sizeof root[0]; ++i) {
        print_attr(lf, "/", root[i], root[i]);
    }
    printf("final\n");
    const char *fin[] = {"exit_reason",          "steps_completed",    "bitwise_equal",
                         "state_checksum",       "reference_checksum", "mass_initial",
                         "mass_final",           "max_blackout",       "nonfinite_leaked_total",
                         "sdc_undetected_total", "allocs_after_init"};
    for (size_t i = 0; i < sizeof fin / sizeof fin[0]; ++i) {
        print_attr(lf, "/final", fin[i], fin[i]);
    }
    int rank = 0;
    int64_t dims[2] = {0, 0};
    if (af_logfile_shape(lf, "/steps/step", &rank, dims) == AF_OK && dims[0] > 0) {
        size_t n = (size_t)dims[0];
        int64_t *v = malloc(sizeof(int64_t) * n);
        if (v == NULL) {
            return 1;
        }
        printf("totals over %zu steps\n", n);
        const char *cols[] = {"corrupt_injected", "corrupt_detected", "fenced",
                              "retried",          "nonfinite_leaked", "sdc_undetected",
                              "moves_drain",      "moves_restore",    "moves_retry",
                              "rollbacks",        "replayed_steps"};
        for (size_t c = 0; c < sizeof cols / sizeof cols[0]; ++c) {
            char path[96];
            snprintf(path, sizeof path, "/steps/%s", cols[c]);
            long long sum = 0;
            if (af_logfile_read_i64(lf, path, v, n) == AF_OK) {
                for (size_t i = 0; i < n; ++i) {
                    sum += v[i];
                }
                printf("  %-22s %lld\n", cols[c], sum);
            }
        }
        free(v);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return AF_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return 0;
    }
    int check = 0;
    const char *obj = NULL;
    const char *name = NULL;
    const char *path = NULL;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--check") == 0) {
            check = 1;
        } else if (strcmp(argv[i], "--attr") == 0 && i + 2 < argc) {
            obj = argv[++i];
            name = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "agefence-report: unknown option '%s'\n", argv[i]);
            return AF_EXIT_USAGE;
        } else if (path == NULL) {
            path = argv[i];
        } else {
            fprintf(stderr, "agefence-report: more than one log given ('%s')\n", argv[i]);
            return AF_EXIT_USAGE;
        }
    }
    if (path == NULL) {
        fprintf(stderr, "agefence-report: no log given (agefence-report --help)\n");
        return AF_EXIT_USAGE;
    }
    af_logfile_t lf;
    char err[700];
    if (af_logfile_open(&lf, path, err, sizeof err) != AF_OK) {
        fprintf(stderr, "agefence-report: %s\n", err);
        return AF_EXIT_USAGE;
    }
    int rc = 0;
    if (check) {
        int bad = af_logfile_check(&lf, stdout);
        if (bad) {
            printf("%s: %d schema violation%s\n", path, bad, bad == 1 ? "" : "s");
            rc = 1;
        } else {
            printf("%s: valid agefence log (schema %lld)\n", path, (long long)lf.schema_version);
        }
    } else if (obj != NULL) {
        char s[65536];
        int64_t i = 0;
        double d = 0;
        if (af_logfile_attr_str(&lf, obj, name, s, sizeof s) == AF_OK) {
            printf("%s\n", s);
        } else if (af_logfile_attr_i64(&lf, obj, name, &i) == AF_OK &&
                   af_logfile_attr_f64(&lf, obj, name, &d) == AF_OK && d == (double)i) {
            printf("%lld\n", (long long)i);
        } else if (af_logfile_attr_f64(&lf, obj, name, &d) == AF_OK) {
            printf("%.17g\n", d);
        } else {
            fprintf(stderr, "agefence-report: %s: no attribute %s@%s\n", path, obj, name);
            rc = AF_EXIT_USAGE;
        }
    } else {
        rc = summary(&lf);
    }
    af_logfile_close(&lf);
    return rc;
}
