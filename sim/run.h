/* agefence run: the driver of `agefence run`: start-up (configuration from rank 0, fabric,
 * placement, shard, calibration, log), the step loop, and the final verdict. */
#ifndef AF_RUN_H
#define AF_RUN_H

#include "af_result.h"

#define AF_MAX_SETS 128

typedef struct af_run_opts {
    const char *config_file; /* NULL: the embedded default scenario */
    const char *sets[AF_MAX_SETS];
    int nsets;
    const char *output;    /* NULL: log.path of the scenario */
    int quiet;             /* no summary on stdout */
    char usage_error[300]; /* a bad command line: reported by rank 0, exit 2 */
} af_run_opts_t;

/* Runs under MPI (initialises and finalises it) and returns the process exit status
 * (AF_EXIT_*): the same on every rank. */
int af_run(const af_run_opts_t *opts, int *argc, char ***argv);

#endif
