/* agefence command line: run, config, bench (see --help). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/af_result.h"
#include "../io/config.h"
#include "../../bench/bench.h"
#include "run.h"
#include "../io/version.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: agefence run [-c FILE] [--set section.key=value]... [-o FILE.h5 [--force]]\n"
               "                    [-q] [--progress]\n"
               "       agefence config [-c FILE] [--set section.key=value]... [--keys]\n"
               "       agefence bench NAME [options] (agefence bench --list)\n"
               "       agefence --help | --version\n"
               "\n"
               "  run      runs a scenario under mpirun/srun (the embedded default without -c),\n"
               "           logs it to HDF5 and checks the final state bit for bit against the\n"
               "           serial fault-free reference. Progress on stderr where it (or\n"
               "           mpirun's) is a terminal; --progress: plain lines elsewhere too.\n"
               "           An agefence log already at FILE.h5 is kept as FILE.h5.~N~ (at\n"
               "           most $AGEFENCE_BACKUPS of them, 5 if unset; --force: replaced);\n"
               "           any other file there is refused; missing folders are made.\n"
               "  config   prints the fully resolved scenario as INI (save it, run it again);\n"
               "           --keys lists every key with its unit, default and allowed range.\n"
               "\n"
               "exit status: 0 pass, 1 error, 2 bad input, 3 final state differs from the\n"
               "reference, 4 capacity exhausted, 5 stopped by a signal, 6 NaN/Inf leaked,\n"
               "7 no progress (failures outpaced the replicas).\n");
}

/* Parses the options shared by run and config. Returns 0, or 2 with one line in o->usage_error
 * (printed by the caller: under mpirun, by rank 0 alone once MPI is up). */
static int parse_common(int argc, char **argv, int first, af_run_opts_t *o, int *keys)
{
    char *msg = o->usage_error;
    size_t n = sizeof o->usage_error;
    for (int i = first; i < argc; ++i) {
        const char *a = argv[i];
        const char *val = NULL;
        if ((strcmp(a, "-c") == 0 || strcmp(a, "--config") == 0 || strcmp(a, "-o") == 0 ||
             strcmp(a, "--output") == 0 || strcmp(a, "--set") == 0)) {
            if (i + 1 >= argc) {
                snprintf(msg, n, "%s needs a value", a);
                return AF_EXIT_USAGE;
            }
            val = argv[++i];
        }
        if (strcmp(a, "-c") == 0 || strcmp(a, "--config") == 0) {
            o->config_file = val;
        } else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            o->output = val;
        } else if (strcmp(a, "--set") == 0) {
            if (o->nsets == AF_MAX_SETS) {
                snprintf(msg, n, "at most %d --set options", AF_MAX_SETS);
                return AF_EXIT_USAGE;
            }
            o->sets[o->nsets++] = val;
        } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            o->quiet = 1;
        } else if (keys == NULL && strcmp(a, "--progress") == 0) {
            o->progress = 1;
        } else if (keys == NULL && strcmp(a, "--force") == 0) {
            o->force = 1;
        } else if (keys != NULL && strcmp(a, "--keys") == 0) {
            *keys = 1;
        } else {
            snprintf(msg, n, "unknown option '%s' (agefence --help)", a);
            return AF_EXIT_USAGE;
        }
    }
    return 0;
}

static int cmd_config(int argc, char **argv)
{
    af_run_opts_t o;
    memset(&o, 0, sizeof o);
    int keys = 0;
    int rc = parse_common(argc, argv, 2, &o, &keys);
    if (rc != 0) {
        fprintf(stderr, "agefence: %s\n", o.usage_error);
        return rc;
    }
    if (o.output != NULL) {
        /* -o names a run's log; config writes nothing but its standard output. */
        fprintf(stderr,
                "agefence: config: -o %s: config writes no log; it prints the resolved "
                "scenario on standard output (agefence config ... > FILE.ini)\n",
                o.output);
        return 2;
    }
    if (keys) {
        af_config_print_keys();
        return 0;
    }
    static af_config_t cfg;
    char err[700];
    if (af_config_load(&cfg, o.config_file, o.sets, o.nsets, err, sizeof err) != AF_OK ||
        af_config_validate(&cfg, 1, err, sizeof err) != AF_OK) {
        fprintf(stderr, "agefence: %s\n", err);
        return AF_EXIT_USAGE;
    }
    if (!o.quiet) {
        af_config_print_notes(&cfg, stderr);
    }
    size_t len = af_config_format(&cfg, NULL, 0);
    char *text = malloc(len + 1);
    if (text == NULL) {
        return AF_EXIT_ERROR;
    }
    af_config_format(&cfg, text, len + 1);
    fputs(text, stdout);
    free(text);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? AF_EXIT_USAGE : 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("agefence %s\n", af_build);
        return 0;
    }
    if (strcmp(argv[1], "bench") == 0) {
        return af_bench_main(argc, argv);
    }
    if (strcmp(argv[1], "config") == 0) {
        return cmd_config(argc, argv);
    }
    if (strcmp(argv[1], "run") == 0) {
        af_run_opts_t o;
        memset(&o, 0, sizeof o);
        for (int i = 2; i < argc; ++i) {
            if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
                usage(stdout);
                return 0;
            }
        }
        /* A bad command line is reported by af_run, from rank 0 alone. */
        (void)parse_common(argc, argv, 2, &o, NULL);
        return af_run(&o, &argc, &argv);
    }
    fprintf(stderr, "agefence: unknown command '%s' (agefence --help)\n", argv[1]);
    return AF_EXIT_USAGE;
}
