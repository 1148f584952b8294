/* agefence run: the driver of `agefence run`: start-up (configuration from rank 0, fabric,
 * placement, shard, calibration, log), the step loop, and the final verdict. */
#ifndef AF_RUN_H
#define AF_RUN_H

#include "../../common/af_result.h"

#define AF_MAX_SETS 128

struct af_run_state;
struct af_world;
/* Called on every rank after every step with the step's own duration (benchmarks). */
typedef af_result_t (*af_run_hook_t)(struct af_run_state *r, double step_us, void *ctx);

typedef struct af_run_opts {
    const char *config_file; /* NULL: the embedded default scenario */
    const char *sets[AF_MAX_SETS];
    int nsets;
    const char *output;    /* NULL: log.path of the scenario */
    int force;             /* --force: an agefence log at the output path is replaced, not
                              kept as "NAME.~N~" (sim/io/log.h, af_log_claim) */
    int quiet;             /* no summary on stdout, no estimate of the run's time on stderr */
    int progress;          /* --progress: progress lines on rank 0's stderr even where neither
                              it nor the launcher's is a terminal */
    char usage_error[300]; /* a bad command line: reported by rank 0, exit 2 */
    af_run_hook_t hook;    /* NULL, or a benchmark's probe */
    void *hook_ctx;
} af_run_opts_t;

/* Runs under MPI (initialises and finalises it) and returns the process exit status
 * (AF_EXIT_*): the same on every rank. */
int af_run(const af_run_opts_t *opts, int *argc, char ***argv);

/* The same inside an MPI launch already initialised (benchmarks run several in one process). */
int af_run_in_world(const af_run_opts_t *opts, const struct af_world *world);

#endif
