/* agefence-report: a flat, ordered list of named figures, printed as one JSON object (--json)
 * or side by side with another run's (--compare). A key is a dotted path: "run.ranks",
 * "latency.phases.step_us.p50"; a component "#N" is element N of an array, so
 * "worst_steps.#0.step" is worst_steps[0].step. Figures under one object are appended
 * together, so the nested JSON is printed in a single pass. */
#ifndef AF_FIGURES_H
#define AF_FIGURES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../common/af_result.h"

typedef enum af_fig_kind {
    AF_FIG_NULL = 0, /* unknown: JSON null */
    AF_FIG_INT,
    AF_FIG_REAL,
    AF_FIG_STR,
    AF_FIG_BOOL,
    AF_FIG_EMPTY /* an empty array: JSON [] */
} af_fig_kind_t;

enum {
    AF_FIG_DETAIL = 1u << 0,  /* JSON only: left out of the --compare table */
    AF_FIG_NORATIO = 1u << 1, /* an identifier (seed, step number): no ratio */
};

typedef struct af_fig {
    char *key;
    af_fig_kind_t kind;
    unsigned flags;
    int64_t i; /* AF_FIG_INT, AF_FIG_BOOL (0/1) */
    double x;  /* AF_FIG_REAL (always finite) */
    char *s;   /* AF_FIG_STR */
} af_fig_t;

typedef struct af_figs {
    af_fig_t *v;
    size_t n;
    size_t cap;
    int oom; /* an append failed for want of memory: the list is incomplete */
} af_figs_t;

void af_figs_init(af_figs_t *f);
void af_figs_free(af_figs_t *f);

/* Appends a figure; key is a printf format. A real that is not finite is stored as null. */
void af_figs_int(af_figs_t *f, unsigned flags, int64_t v, const char *key, ...)
    __attribute__((format(printf, 4, 5)));
void af_figs_real(af_figs_t *f, unsigned flags, double v, const char *key, ...)
    __attribute__((format(printf, 4, 5)));
void af_figs_str(af_figs_t *f, unsigned flags, const char *v, const char *key, ...)
    __attribute__((format(printf, 4, 5)));
void af_figs_bool(af_figs_t *f, unsigned flags, int v, const char *key, ...)
    __attribute__((format(printf, 4, 5)));
void af_figs_null(af_figs_t *f, unsigned flags, const char *key, ...)
    __attribute__((format(printf, 3, 4)));
void af_figs_empty_array(af_figs_t *f, unsigned flags, const char *key, ...)
    __attribute__((format(printf, 3, 4)));

/* The figure with that key, or NULL. */
const af_fig_t *af_figs_find(const af_figs_t *f, const char *key);

/* Prints the figures as one nested JSON object (indented by 2, ending in a newline when
 * indent is 0). Keys in f must keep each object's members together. */
void af_figs_json(const af_figs_t *f, FILE *out, int indent);

/* The ratio OTHER / RUN of two figures, when it is defined: both numeric, RUN non-zero, neither
 * an identifier. Returns 1 and sets *ratio, else 0. */
int af_fig_ratio(const af_fig_t *run, const af_fig_t *other, double *ratio);

/* --compare: the table "key  RUN  OTHER  OTHER/RUN" of every figure that is not a detail, with
 * "—" where the ratio is undefined. */
void af_figs_compare_text(const af_figs_t *run, const af_figs_t *other, FILE *out);

/* --compare --json: {"run": {...}, "other": {...}, "ratio": {...}} where "ratio" has every key
 * of RUN, null where the ratio is undefined. AF_ERR_NOMEM only. */
af_result_t af_figs_compare_json(const af_figs_t *run, const af_figs_t *other, FILE *out);

/* Writes s as a JSON string (quoted and escaped). */
void af_json_string(FILE *out, const char *s);
/* Writes x as a JSON number: the shortest of %.15g..%.17g that reads back as x; null when not
 * finite. */
void af_json_number(FILE *out, double x);

#endif
