/* agefence-report --same: two logs compared byte for byte where they say what a run computed. */
#include "same.h"

#include <hdf5.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../common/logfile.h"

#define MAX_NAMES 256
#define NAME_LEN  96
#define MAX_SHOWN 5

/* /final attributes that describe the launch, the clock or the machine, not the run's result:
 * the memory figures are the largest over ranks, so they shrink as ranks are added; the log
 * writer thread's figures are rank 0's clock. */
static const char *const NOT_COMPARED[] = {"end_time",
                                           "graph_instantiations",
                                           "graph_steps",
                                           "one_pass_steps",
                                           "alloc_peak_bytes",
                                           "memory_budget_startup_bytes",
                                           "memory_budget_peak_bytes",
                                           "rss_before_startup_bytes",
                                           "rss_peak_bytes",
                                           "log_writer_busy_us",
                                           "log_writer_wait_us",
                                           "log_writer_batches",
                                           "log_writer_cpu_us"};

/* /steps columns that describe the launch rather than the run: the bytes the ranks sent each
 * other follow where the blocks live, which the number of ranks decides. */
static const char *const STEPS_NOT_COMPARED[] = {"halo_bytes", "replica_log_bytes"};

typedef struct names {
    int n;
    char name[MAX_NAMES][NAME_LEN];
} names_t;

typedef struct diffs {
    FILE *out;
    const char *other;
    const char *run;
    int n;
} diffs_t;

static void differ(diffs_t *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void differ(diffs_t *d, const char *fmt, ...)
{
    if (d->n++ == 0) {
        fprintf(d->out, "DIFF %s against %s (RUN):\n", d->other, d->run);
    }
    va_list ap;
    va_start(ap, fmt);
    fprintf(d->out, "  ");
    vfprintf(d->out, fmt, ap);
    fprintf(d->out, "\n");
    va_end(ap);
}

static void add_name(names_t *n, const char *name)
{
    if (n->n < MAX_NAMES) {
        snprintf(n->name[n->n++], NAME_LEN, "%s", name);
    }
}

/* HDF5 1.12 renamed the link iteration (H5Literate2, H5L_info2_t); 1.10 has the first one. */
#if H5_VERSION_GE(1, 12, 0)
typedef H5L_info2_t af_link_info_t;
#define af_link_iterate H5Literate2
#else
typedef H5L_info_t af_link_info_t;
#define af_link_iterate H5Literate
#endif

static herr_t add_link(hid_t g, const char *name, const af_link_info_t *info, void *op)
{
    (void)g;
    (void)info;
    add_name(op, name);
    return 0;
}

static herr_t add_attr(hid_t o, const char *name, const H5A_info_t *info, void *op)
{
    (void)o;
    (void)info;
    add_name(op, name);
    return 0;
}

static int has(const names_t *n, const char *name)
{
    for (int i = 0; i < n->n; ++i) {
        if (strcmp(n->name[i], name) == 0) {
            return 1;
        }
    }
    return 0;
}

/* The names in a or b, a's first: what either log has. */
static void both(const names_t *a, const names_t *b, names_t *u)
{
    *u = *a;
    for (int i = 0; i < b->n && u->n < MAX_NAMES; ++i) {
        if (!has(a, b->name[i])) {
            snprintf(u->name[u->n++], NAME_LEN, "%s", b->name[i]);
        }
    }
}

static void group_names(hid_t f, const char *group, names_t *n)
{
    n->n = 0;
    if (H5Lexists(f, group, H5P_DEFAULT) <= 0) {
        return;
    }
    hid_t g = H5Gopen2(f, group, H5P_DEFAULT);
    if (g >= 0) {
        af_link_iterate(g, H5_INDEX_NAME, H5_ITER_INC, NULL, add_link, n);
        H5Gclose(g);
    }
}

/* A dataset read whole in its native type: rows along the first axis of row_bytes each. */
typedef struct blob {
    unsigned char *data;
    int64_t rows;
    size_t row_bytes;
    int ok;
} blob_t;

static blob_t read_blob(hid_t f, const char *path, int64_t limit)
{
    blob_t b = {NULL, 0, 0, 0};
    if (H5Lexists(f, path, H5P_DEFAULT) <= 0) {
        return b;
    }
    hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
    if (d < 0) {
        return b;
    }
    hid_t ft = H5Dget_type(d);
    hid_t mt = ft >= 0 ? H5Tget_native_type(ft, H5T_DIR_ASCEND) : -1;
    hid_t s = H5Dget_space(d);
    hsize_t dims[2] = {0, 1};
    int rank = s >= 0 ? H5Sget_simple_extent_ndims(s) : -1;
    if (mt >= 0 && rank >= 1 && rank <= 2 && H5Sget_simple_extent_dims(s, dims, NULL) >= 0) {
        size_t es = H5Tget_size(mt);
        b.rows = (int64_t)dims[0];
        b.row_bytes = es * (rank == 2 ? (size_t)dims[1] : 1);
        size_t total = b.row_bytes * (size_t)b.rows;
        b.data = calloc(total > 0 ? total : 1, 1);
        if (b.data != NULL &&
            (total == 0 || H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, b.data) >= 0)) {
            b.ok = 1;
            if (limit >= 0 && limit < b.rows) {
                b.rows = limit; /* a killed run: the rows its commit record counts */
            }
        }
    }
    if (s >= 0) {
        H5Sclose(s);
    }
    if (mt >= 0) {
        H5Tclose(mt);
    }
    if (ft >= 0) {
        H5Tclose(ft);
    }
    H5Dclose(d);
    return b;
}

static void compare_dataset(diffs_t *d, hid_t fa, hid_t fb, const char *path, int64_t la,
                            int64_t lb)
{
    blob_t a = read_blob(fa, path, la);
    blob_t b = read_blob(fb, path, lb);
    if (!a.ok || !b.ok) {
        differ(d, "%s: %s", path, !a.ok && !b.ok ? "unreadable in both" : "missing in one log");
    } else if (a.row_bytes != b.row_bytes) {
        differ(d, "%s: rows of %zu bytes (RUN: %zu)", path, b.row_bytes, a.row_bytes);
    } else {
        char rows[160] = "";
        size_t at = 0;
        int64_t n = a.rows < b.rows ? a.rows : b.rows;
        int64_t shown = 0;
        int64_t count = 0;
        for (int64_t r = 0; r < n; ++r) {
            if (memcmp(a.data + (size_t)r * a.row_bytes, b.data + (size_t)r * b.row_bytes,
                       a.row_bytes) != 0) {
                count++;
                if (shown++ < MAX_SHOWN && at < sizeof rows) {
                    at += (size_t)snprintf(rows + at, sizeof rows - at, "%s%lld",
                                           shown > 1 ? ", " : "", (long long)r);
                }
            }
        }
        if (a.rows != b.rows) {
            differ(d, "%s: %lld rows (RUN: %lld)%s%s", path, (long long)b.rows, (long long)a.rows,
                   count > 0 ? "; of the rows both have, these differ: " : "", rows);
        } else if (count > 0) {
            differ(d, "%s: %lld of %lld rows differ (%s%s)", path, (long long)count, (long long)n,
                   rows, count > MAX_SHOWN ? ", ..." : "");
        }
    }
    free(a.data);
    free(b.data);
}

static int compared(const char *name)
{
    for (size_t i = 0; i < sizeof NOT_COMPARED / sizeof NOT_COMPARED[0]; ++i) {
        if (strcmp(name, NOT_COMPARED[i]) == 0) {
            return 0;
        }
    }
    return 1;
}

/* An attribute's value as bytes: strings as their text, anything else in its native type. */
static unsigned char *attr_bytes(const af_logfile_t *lf, const char *obj, const char *name,
                                 size_t *len)
{
    hid_t o = H5Oopen((hid_t)lf->file, obj, H5P_DEFAULT);
    if (o < 0) {
        return NULL;
    }
    unsigned char *out = NULL;
    hid_t a = H5Aopen(o, name, H5P_DEFAULT);
    hid_t ft = a >= 0 ? H5Aget_type(a) : -1;
    if (ft >= 0 && H5Tget_class(ft) == H5T_STRING) {
        static char text[65536];
        if (af_logfile_attr_str(lf, obj, name, text, sizeof text) == AF_OK) {
            *len = strlen(text);
            out = malloc(*len + 1);
            if (out != NULL) {
                memcpy(out, text, *len + 1);
            }
        }
    } else if (ft >= 0) {
        hid_t mt = H5Tget_native_type(ft, H5T_DIR_ASCEND);
        hid_t s = H5Aget_space(a);
        hssize_t np = s >= 0 ? H5Sget_simple_extent_npoints(s) : -1;
        if (mt >= 0 && np >= 0) {
            *len = H5Tget_size(mt) * (size_t)np;
            out = calloc(*len > 0 ? *len : 1, 1);
            if (out != NULL && *len > 0 && H5Aread(a, mt, out) < 0) {
                free(out);
                out = NULL;
            }
        }
        if (s >= 0) {
            H5Sclose(s);
        }
        if (mt >= 0) {
            H5Tclose(mt);
        }
    }
    if (ft >= 0) {
        H5Tclose(ft);
    }
    if (a >= 0) {
        H5Aclose(a);
    }
    H5Oclose(o);
    return out;
}

static void compare_final_attrs(diffs_t *d, const af_logfile_t *la, const af_logfile_t *lb)
{
    names_t na;
    names_t nb;
    names_t all;
    na.n = nb.n = 0;
    hid_t ga = H5Lexists((hid_t)la->file, "/final", H5P_DEFAULT) > 0
                   ? H5Oopen((hid_t)la->file, "/final", H5P_DEFAULT)
                   : -1;
    hid_t gb = H5Lexists((hid_t)lb->file, "/final", H5P_DEFAULT) > 0
                   ? H5Oopen((hid_t)lb->file, "/final", H5P_DEFAULT)
                   : -1;
    if ((ga < 0) != (gb < 0)) {
        differ(d, "/final: in one log only (one run did not finish)");
    }
    if (ga >= 0) {
        H5Aiterate2(ga, H5_INDEX_NAME, H5_ITER_INC, NULL, add_attr, &na);
        H5Oclose(ga);
    }
    if (gb >= 0) {
        H5Aiterate2(gb, H5_INDEX_NAME, H5_ITER_INC, NULL, add_attr, &nb);
        H5Oclose(gb);
    }
    both(&na, &nb, &all);
    for (int i = 0; i < all.n; ++i) {
        const char *name = all.name[i];
        if (!compared(name)) {
            continue;
        }
        size_t sa = 0;
        size_t sb = 0;
        unsigned char *va = has(&na, name) ? attr_bytes(la, "/final", name, &sa) : NULL;
        unsigned char *vb = has(&nb, name) ? attr_bytes(lb, "/final", name, &sb) : NULL;
        if (va == NULL || vb == NULL) {
            differ(d, "/final@%s: in one log only", name);
        } else if (sa != sb || memcmp(va, vb, sa) != 0) {
            char ta[80] = "";
            char tb[80] = "";
            char ia[80];
            char ib[80];
            af_logfile_attr_str(la, "/final", name, ta, sizeof ta);
            af_logfile_attr_str(lb, "/final", name, tb, sizeof tb);
            double x = 0;
            double y = 0;
            if (ta[0] == '\0' && af_logfile_attr_f64(la, "/final", name, &x) == AF_OK) {
                snprintf(ia, sizeof ia, "%.17g", x);
            } else {
                snprintf(ia, sizeof ia, "'%s'", ta);
            }
            if (tb[0] == '\0' && af_logfile_attr_f64(lb, "/final", name, &y) == AF_OK) {
                snprintf(ib, sizeof ib, "%.17g", y);
            } else {
                snprintf(ib, sizeof ib, "'%s'", tb);
            }
            differ(d, "/final@%s: %s (RUN: %s)", name, ib, ia);
        }
        free(va);
        free(vb);
    }
}

static void compare_group(diffs_t *d, const af_logfile_t *la, const af_logfile_t *lb,
                          const char *group, int limited)
{
    names_t na;
    names_t nb;
    names_t all;
    group_names((hid_t)la->file, group, &na);
    group_names((hid_t)lb->file, group, &nb);
    both(&na, &nb, &all);
    for (int i = 0; i < all.n; ++i) {
        char path[NAME_LEN + 16];
        int skip = 0;
        for (size_t k = 0; k < sizeof STEPS_NOT_COMPARED / sizeof STEPS_NOT_COMPARED[0]; ++k) {
            skip |= strcmp(group, "/steps") == 0 && strcmp(all.name[i], STEPS_NOT_COMPARED[k]) == 0;
        }
        if (skip) {
            continue;
        }
        snprintf(path, sizeof path, "%s/%s", group, all.name[i]);
        compare_dataset(d, (hid_t)la->file, (hid_t)lb->file, path, limited ? la->rows_limit : -1,
                        limited ? lb->rows_limit : -1);
    }
}

int af_same_run(const char *other, const char *run, FILE *out)
{
    af_logfile_t la;
    af_logfile_t lb;
    char err[700];
    if (af_logfile_open(&la, run, err, sizeof err) != AF_OK) {
        fprintf(stderr, "agefence-report: %s\n", err);
        return 2;
    }
    if (af_logfile_open(&lb, other, err, sizeof err) != AF_OK) {
        fprintf(stderr, "agefence-report: %s\n", err);
        af_logfile_close(&la);
        return 2;
    }
    diffs_t d = {out, other, run, 0};
    /* RUN is the reference: the differences are said of OTHER. */
    compare_group(&d, &la, &lb, "/steps", 1);
    compare_dataset(&d, (hid_t)la.file, (hid_t)lb.file, "/events", la.events_limit,
                    lb.events_limit);
    /* The run's own interruptions (schema 5), when both logs of finished runs have them (a
     * killed run's rows are counted by step, and the table follows from /events and /steps,
     * compared above). */
    if (H5Lexists((hid_t)la.file, "/interruptions", H5P_DEFAULT) > 0 &&
        H5Lexists((hid_t)lb.file, "/interruptions", H5P_DEFAULT) > 0 && la.rows_limit < 0 &&
        lb.rows_limit < 0) {
        compare_dataset(&d, (hid_t)la.file, (hid_t)lb.file, "/interruptions", -1, -1);
    }
    compare_group(&d, &la, &lb, "/units", 0);
    int sa = H5Lexists((hid_t)la.file, "/final/state", H5P_DEFAULT) > 0;
    int sb = H5Lexists((hid_t)lb.file, "/final/state", H5P_DEFAULT) > 0;
    if (sa || sb) {
        compare_dataset(&d, (hid_t)la.file, (hid_t)lb.file, "/final/state", -1, -1);
    }
    compare_final_attrs(&d, &la, &lb);
    if (d.n == 0) {
        fprintf(out, "same: %s computed what %s did (/steps, /events, /units, /final)\n", other,
                run);
    }
    af_logfile_close(&lb);
    af_logfile_close(&la);
    return d.n == 0 ? 0 : 1;
}
