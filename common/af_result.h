/* agefence: one result type for the whole project, and the check macros that carry a
 * file:line breadcrumb as an error climbs the stack (after NCCL's checks.h). */
#ifndef AF_RESULT_H
#define AF_RESULT_H

#include <stdio.h>

typedef enum af_result {
    AF_OK = 0,
    AF_ERR_USAGE,       /* bad command line, configuration or input file: exit status 2 */
    AF_ERR_NOMEM,       /* an allocation failed (only ever at start-up) */
    AF_ERR_IO,          /* a file could not be read or written */
    AF_ERR_FABRIC,      /* MPI or NCCL reported an error */
    AF_ERR_DEVICE,      /* CUDA reported an error, or no device is usable */
    AF_ERR_HDF5,        /* the HDF5 library reported an error */
    AF_ERR_CAPACITY,    /* healthy slots can no longer hold every block */
    AF_ERR_INTERNAL,    /* an invariant of agefence itself broke: a bug */
    AF_ERR_UNSUPPORTED, /* asked for something this build does not have */
    AF_ERR_ELSEWHERE,   /* another rank failed (it says why): this one stops with it */
    AF_ERR_HUNG         /* a wait passed run.step_timeout: a peer did not arrive (the watchdog) */
} af_result_t;

/* Process exit statuses of agefence and agefence-report; README documents them. */
enum {
    AF_EXIT_OK = 0,
    AF_EXIT_ERROR = 1,       /* internal or system error */
    AF_EXIT_USAGE = 2,       /* bad input: configuration, arguments, files */
    AF_EXIT_MISMATCH = 3,    /* final state differs from the serial reference */
    AF_EXIT_CAPACITY = 4,    /* healthy capacity dropped below the number of blocks */
    AF_EXIT_SIGNAL = 5,      /* stopped by SIGINT or SIGTERM after a clean flush */
    AF_EXIT_CONTAINMENT = 6, /* a non-finite value leaked into committed state */
    AF_EXIT_NO_PROGRESS = 7, /* failures outpaced the replicas: rollbacks replayed forever */
    AF_EXIT_HUNG = 8         /* a rank did not arrive within run.step_timeout (the watchdog) */
};

const char *af_result_str(af_result_t rc);

/* Records where an error passed through; printed by af_error_trace() at the top. */
void af_error_breadcrumb(af_result_t rc, const char *expr, const char *file, int line);

#define AF_CHECK(call)                                                                             \
    do {                                                                                           \
        af_result_t af_rc_ = (call);                                                               \
        if (af_rc_ != AF_OK) {                                                                     \
            af_error_breadcrumb(af_rc_, #call, __FILE__, __LINE__);                                \
            return af_rc_;                                                                         \
        }                                                                                          \
    } while (0)

#define AF_CHECK_GOTO(call, rc, label)                                                             \
    do {                                                                                           \
        (rc) = (call);                                                                             \
        if ((rc) != AF_OK) {                                                                       \
            af_error_breadcrumb((rc), #call, __FILE__, __LINE__);                                  \
            goto label;                                                                            \
        }                                                                                          \
    } while (0)

/* Fails with the given code when cond is false. */
#define AF_REQUIRE_GOTO(cond, code, rc, label)                                                     \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            (rc) = (code);                                                                         \
            af_error_breadcrumb((rc), #cond, __FILE__, __LINE__);                                  \
            goto label;                                                                            \
        }                                                                                          \
    } while (0)

/* Set once per thread: the one-line message shown to the user for the first error. (A second
 * thread, the log's writer, keeps its own; the thread that collects its result sets it again.) */
void af_error_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *af_error_message(void);
/* The message when one was set, else what rc means ("out of memory"): never empty. */
const char *af_error_text(af_result_t rc);
void af_error_clear(void);
/* Prints the breadcrumbs to f when AGEFENCE_DEBUG is set in the environment. */
void af_error_trace(FILE *f);

#endif
