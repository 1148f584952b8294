#include "af_result.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define AF_MAX_CRUMBS 16

/* One error state per thread: the log's writer thread (sim/io/log.c) records its own error, and
 * the step thread takes over the message when it collects the writer's result. */
/* Room for three of the longest paths a tool takes (4096 bytes each) and the reason: a message
 * names the file first and must not lose the reason at its end. */
static _Thread_local char af_message[3 * 4096 + 512];
static _Thread_local char af_crumbs[AF_MAX_CRUMBS][160];
static _Thread_local int af_ncrumbs;

const char *af_result_str(af_result_t rc)
{
    switch (rc) {
    case AF_OK:
        return "ok";
    case AF_ERR_USAGE:
        return "bad input";
    case AF_ERR_NOMEM:
        return "out of memory";
    case AF_ERR_IO:
        return "input/output error";
    case AF_ERR_FABRIC:
        return "fabric error";
    case AF_ERR_DEVICE:
        return "device error";
    case AF_ERR_HDF5:
        return "HDF5 error";
    case AF_ERR_CAPACITY:
        return "capacity exhausted";
    case AF_ERR_INTERNAL:
        return "internal error";
    case AF_ERR_UNSUPPORTED:
        return "not supported by this build";
    case AF_ERR_ELSEWHERE:
        return "failed on another rank";
    case AF_ERR_HUNG:
        return "a peer did not arrive within run.step_timeout";
    }
    return "unknown error";
}

void af_error_breadcrumb(af_result_t rc, const char *expr, const char *file, int line)
{
    if (af_ncrumbs < AF_MAX_CRUMBS) {
        snprintf(af_crumbs[af_ncrumbs++], sizeof af_crumbs[0], "%s:%d %s -> %s", file, line, expr,
                 af_result_str(rc));
    }
}

void af_error_set(const char *fmt, ...)
{
    if (af_message[0] != '\0') {
        return; /* the first error is the one that explains the others */
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(af_message, sizeof af_message, fmt, ap);
    va_end(ap);
}

const char *af_error_message(void)
{
    return af_message;
}

const char *af_error_text(af_result_t rc)
{
    return af_message[0] != '\0' ? af_message : af_result_str(rc);
}

void af_error_clear(void)
{
    af_message[0] = '\0';
    af_ncrumbs = 0;
}

void af_error_trace(FILE *f)
{
    if (getenv("AGEFENCE_DEBUG") == NULL) {
        return;
    }
    for (int i = 0; i < af_ncrumbs; ++i) {
        fprintf(f, "agefence: trace: %s\n", af_crumbs[i]);
    }
}
