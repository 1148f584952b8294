/* agefence-report: figure lists, JSON and the --compare table (see figures.h). */
#include "figures.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void af_figs_init(af_figs_t *f)
{
    memset(f, 0, sizeof *f);
}

void af_figs_free(af_figs_t *f)
{
    for (size_t i = 0; i < f->n; ++i) {
        free(f->v[i].key);
        free(f->v[i].s);
    }
    free(f->v);
    memset(f, 0, sizeof *f);
}

/* fmt is the caller's printf format (checked where the callers' prototypes say so). */
__attribute__((format(printf, 3, 0))) static af_fig_t *append(af_figs_t *f, unsigned flags,
                                                              const char *fmt, va_list ap)
{
    if (f->oom) {
        return NULL;
    }
    if (f->n == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 256;
        af_fig_t *v = realloc(f->v, cap * sizeof *v);
        if (v == NULL) {
            f->oom = 1;
            return NULL;
        }
        f->v = v;
        f->cap = cap;
    }
    char key[256];
    vsnprintf(key, sizeof key, fmt, ap);
    af_fig_t *g = &f->v[f->n];
    memset(g, 0, sizeof *g);
    g->key = strdup(key);
    if (g->key == NULL) {
        f->oom = 1;
        return NULL;
    }
    g->flags = flags;
    f->n++;
    return g;
}

void af_figs_int(af_figs_t *f, unsigned flags, int64_t v, const char *key, ...)
{
    va_list ap;
    va_start(ap, key);
    af_fig_t *g = append(f, flags, key, ap);
    va_end(ap);
    if (g != NULL) {
        g->kind = AF_FIG_INT;
        g->i = v;
    }
}

void af_figs_real(af_figs_t *f, unsigned flags, double v, const char *key, ...)
{
    va_list ap;
    va_start(ap, key);
    af_fig_t *g = append(f, flags, key, ap);
    va_end(ap);
    if (g != NULL) {
        g->kind = isfinite(v) ? AF_FIG_REAL : AF_FIG_NULL;
        g->x = isfinite(v) ? v : 0.0;
    }
}

void af_figs_str(af_figs_t *f, unsigned flags, const char *v, const char *key, ...)
{
    va_list ap;
    va_start(ap, key);
    af_fig_t *g = append(f, flags, key, ap);
    va_end(ap);
    if (g != NULL) {
        g->kind = AF_FIG_STR;
        g->s = strdup(v != NULL ? v : "");
        if (g->s == NULL) {
            g->kind = AF_FIG_NULL;
            f->oom = 1;
        }
    }
}

void af_figs_bool(af_figs_t *f, unsigned flags, int v, const char *key, ...)
{
    va_list ap;
    va_start(ap, key);
    af_fig_t *g = append(f, flags, key, ap);
    va_end(ap);
    if (g != NULL) {
        g->kind = AF_FIG_BOOL;
        g->i = v != 0;
    }
}

void af_figs_null(af_figs_t *f, unsigned flags, const char *key, ...)
{
    va_list ap;
    va_start(ap, key);
    af_fig_t *g = append(f, flags, key, ap);
    va_end(ap);
    if (g != NULL) {
        g->kind = AF_FIG_NULL;
    }
}

void af_figs_empty_array(af_figs_t *f, unsigned flags, const char *key, ...)
{
    va_list ap;
    va_start(ap, key);
    af_fig_t *g = append(f, flags, key, ap);
    va_end(ap);
    if (g != NULL) {
        g->kind = AF_FIG_EMPTY;
    }
}

const af_fig_t *af_figs_find(const af_figs_t *f, const char *key)
{
    for (size_t i = 0; i < f->n; ++i) {
        if (strcmp(f->v[i].key, key) == 0) {
            return &f->v[i];
        }
    }
    return NULL;
}

void af_json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; ++p) {
        switch (*p) {
        case '"':
            fputs("\\\"", out);
            break;
        case '\\':
            fputs("\\\\", out);
            break;
        case '\n':
            fputs("\\n", out);
            break;
        case '\t':
            fputs("\\t", out);
            break;
        case '\r':
            fputs("\\r", out);
            break;
        default:
            if (*p < 0x20) {
                fprintf(out, "\\u%04x", *p);
            } else {
                fputc(*p, out);
            }
        }
    }
    fputc('"', out);
}

void af_json_number(FILE *out, double x)
{
    if (!isfinite(x)) {
        fputs("null", out);
        return;
    }
    char buf[40];
    for (int prec = 15; prec <= 17; ++prec) {
        snprintf(buf, sizeof buf, "%.*g", prec, x);
        if (strtod(buf, NULL) == x) {
            break;
        }
    }
    /* A JSON number needs no more than this: %g never writes "inf", "nan" or a bare ".". */
    fputs(buf, out);
}

static void json_value(const af_fig_t *g, FILE *out)
{
    switch (g->kind) {
    case AF_FIG_INT:
        fprintf(out, "%lld", (long long)g->i);
        break;
    case AF_FIG_REAL:
        af_json_number(out, g->x);
        break;
    case AF_FIG_STR:
        af_json_string(out, g->s);
        break;
    case AF_FIG_BOOL:
        fputs(g->i ? "true" : "false", out);
        break;
    case AF_FIG_EMPTY:
        fputs("[]", out);
        break;
    default:
        fputs("null", out);
        break;
    }
}

#define MAX_DEPTH 12

/* Splits key into at most MAX_DEPTH components (pointers into buf). */
static int split_key(const char *key, char *buf, size_t n, char **comp)
{
    snprintf(buf, n, "%s", key);
    int k = 0;
    char *p = buf;
    while (k < MAX_DEPTH) {
        comp[k++] = p;
        char *dot = strchr(p, '.');
        if (dot == NULL) {
            break;
        }
        *dot = '\0';
        p = dot + 1;
    }
    return k;
}

static void indent_to(FILE *out, int level)
{
    fputc('\n', out);
    for (int i = 0; i < level; ++i) {
        fputs("  ", out);
    }
}

void af_figs_json(const af_figs_t *f, FILE *out, int indent)
{
    /* The path of open containers: names, whether each is an array, whether it has members. */
    char open_buf[MAX_DEPTH][128];
    int open_arr[MAX_DEPTH + 1];
    int open_has[MAX_DEPTH + 1];
    int depth = 0;
    open_arr[0] = 0;
    open_has[0] = 0;
    fputc('{', out);
    for (size_t i = 0; i < f->n; ++i) {
        char buf[256];
        char *comp[MAX_DEPTH];
        int k = split_key(f->v[i].key, buf, sizeof buf, comp);
        /* Containers of this figure: comp[0 .. k-2]. Keep the common prefix open. */
        int m = 0;
        while (m < depth && m < k - 1 && strcmp(open_buf[m], comp[m]) == 0) {
            m++;
        }
        while (depth > m) {
            indent_to(out, indent + depth);
            fputc(open_arr[depth] ? ']' : '}', out);
            depth--;
        }
        for (int j = m; j < k - 1; ++j) {
            if (open_has[depth]) {
                fputc(',', out);
            }
            open_has[depth] = 1;
            indent_to(out, indent + depth + 1);
            if (!open_arr[depth]) {
                af_json_string(out, comp[j]);
                fputs(": ", out);
            }
            int arr = comp[j + 1][0] == '#';
            fputc(arr ? '[' : '{', out);
            snprintf(open_buf[depth], sizeof open_buf[depth], "%s", comp[j]);
            depth++;
            open_arr[depth] = arr;
            open_has[depth] = 0;
        }
        if (open_has[depth]) {
            fputc(',', out);
        }
        open_has[depth] = 1;
        indent_to(out, indent + depth + 1);
        if (!open_arr[depth]) {
            af_json_string(out, comp[k - 1]);
            fputs(": ", out);
        }
        json_value(&f->v[i], out);
    }
    while (depth > 0) {
        indent_to(out, indent + depth);
        fputc(open_arr[depth] ? ']' : '}', out);
        depth--;
    }
    indent_to(out, indent);
    fputc('}', out);
    if (indent == 0) {
        fputc('\n', out);
    }
}

static int numeric(const af_fig_t *g)
{
    return g->kind == AF_FIG_INT || g->kind == AF_FIG_REAL || g->kind == AF_FIG_BOOL;
}

static double num(const af_fig_t *g)
{
    return g->kind == AF_FIG_REAL ? g->x : (double)g->i;
}

int af_fig_ratio(const af_fig_t *run, const af_fig_t *other, double *ratio)
{
    if (run == NULL || other == NULL || !numeric(run) || !numeric(other) ||
        ((run->flags | other->flags) & AF_FIG_NORATIO)) {
        return 0;
    }
    double a = num(run);
    double b = num(other);
    if (a == 0.0) {
        return 0;
    }
    double r = b / a;
    if (!isfinite(r)) {
        return 0;
    }
    *ratio = r;
    return 1;
}

static void text_value(const af_fig_t *g, char *buf, size_t n)
{
    if (g == NULL) {
        snprintf(buf, n, "(absent)");
        return;
    }
    switch (g->kind) {
    case AF_FIG_INT:
        snprintf(buf, n, "%lld", (long long)g->i);
        break;
    case AF_FIG_REAL:
        snprintf(buf, n, "%.6g", g->x);
        break;
    case AF_FIG_STR:
        snprintf(buf, n, "%s", g->s);
        break;
    case AF_FIG_BOOL:
        snprintf(buf, n, "%s", g->i ? "yes" : "no");
        break;
    default:
        snprintf(buf, n, "-");
        break;
    }
}

/* Shortens a string value for a table cell: the first line, at most w bytes. */
static void cell(char *buf, size_t w)
{
    char *nl = strchr(buf, '\n');
    if (nl != NULL) {
        *nl = '\0';
    }
    if (strlen(buf) > w && w > 3) {
        strcpy(buf + w - 3, "...");
    }
}

static void compare_row(const char *key, const af_fig_t *a, const af_fig_t *b, int kw, FILE *out)
{
    char va[128];
    char vb[128];
    text_value(a, va, sizeof va);
    text_value(b, vb, sizeof vb);
    cell(va, 20);
    cell(vb, 20);
    double r = 0.0;
    char rs[32];
    if (af_fig_ratio(a, b, &r)) {
        snprintf(rs, sizeof rs, r == 1.0 ? "1" : "%.4g", r);
    } else {
        snprintf(rs, sizeof rs, "\u2014");
    }
    fprintf(out, "%-*s  %20s  %20s  %s\n", kw, key, va, vb, rs);
}

void af_figs_compare_text(const af_figs_t *run, const af_figs_t *other, FILE *out)
{
    int kw = 6;
    for (size_t i = 0; i < run->n; ++i) {
        int l = (int)strlen(run->v[i].key);
        kw = !(run->v[i].flags & AF_FIG_DETAIL) && l > kw ? l : kw;
    }
    fprintf(out, "%-*s  %20s  %20s  %s\n", kw, "figure", "RUN", "OTHER", "OTHER/RUN");
    char section[64] = "";
    for (size_t i = 0; i < run->n; ++i) {
        const af_fig_t *a = &run->v[i];
        const af_fig_t *b = af_figs_find(other, a->key);
        if ((a->flags & AF_FIG_DETAIL) ||
            (a->kind == AF_FIG_NULL && (b == NULL || b->kind == AF_FIG_NULL))) {
            continue;
        }
        size_t sl = strcspn(a->key, ".");
        if (strncmp(section, a->key, sl) != 0 || section[sl] != '\0') {
            snprintf(section, sizeof section, "%.*s", (int)sl, a->key);
            fputc('\n', out);
        }
        compare_row(a->key, a, b, kw, out);
    }
    /* Figures only the other run has. */
    for (size_t i = 0; i < other->n; ++i) {
        const af_fig_t *b = &other->v[i];
        if (!(b->flags & AF_FIG_DETAIL) && b->kind != AF_FIG_NULL &&
            af_figs_find(run, b->key) == NULL) {
            compare_row(b->key, NULL, b, kw, out);
        }
    }
}

af_result_t af_figs_compare_json(const af_figs_t *run, const af_figs_t *other, FILE *out)
{
    af_figs_t ratio;
    af_figs_init(&ratio);
    for (size_t i = 0; i < run->n; ++i) {
        double r = 0.0;
        const af_fig_t *a = &run->v[i];
        if (af_fig_ratio(a, af_figs_find(other, a->key), &r)) {
            af_figs_real(&ratio, 0, r, "%s", a->key);
        } else {
            af_figs_null(&ratio, 0, "%s", a->key);
        }
    }
    if (ratio.oom) {
        af_figs_free(&ratio);
        return AF_ERR_NOMEM;
    }
    fputs("{\n  \"run\": ", out);
    af_figs_json(run, out, 1);
    fputs(",\n  \"other\": ", out);
    af_figs_json(other, out, 1);
    fputs(",\n  \"ratio\": ", out);
    af_figs_json(&ratio, out, 1);
    fputs("\n}\n", out);
    af_figs_free(&ratio);
    return AF_OK;
}
