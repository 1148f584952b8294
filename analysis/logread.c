/* agefence-report: the log's checker (af_logfile_check, `agefence-report --check`) — every group,
 * dataset and attribute of the schema (common/log_schema.h) against its type and shape, and the
 * rows against each other (steps in order, counters that add up, events and interruptions that
 * name real units, devices and steps, /final's figures against /steps).
 *
 * Longer than ~900 lines, on purpose: one check per part of the log, each a short function, all
 * reporting through one violation list (chk_t) with the path they name; split, that list and its
 * helpers would be shared across files for nothing. */
#include "logread.h"

#include "interrupts.h"

#include <hdf5.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log_schema.h"

/* ---- the schema check ---------------------------------------------------------------------- */

/* What the checker knows while it walks the file. */
typedef struct chk {
    const af_logfile_t *lf;
    hid_t f;
    FILE *out;
    int bad;
    /* Root attributes (0 when absent or invalid; *_ok say whether they can be relied on). */
    int64_t ranks, devices, upd, units, blocks, block_len, capacity, steps_planned;
    int ranks_ok, fleet_ok, blocks_ok, capacity_ok, steps_planned_ok;
    /* /steps */
    int64_t nrows;
    int steps_ok;               /* every column there, of its type and length */
    int64_t *icol[AF_NCOLUMNS]; /* integer columns, read when steps_ok */
    double *fcol[AF_NCOLUMNS];  /* float columns, read when steps_ok */
    /* /final */
    char reason[64];
    int finished; /* exit_reason present */
    int complete; /* finished, and not through the error path */
} chk_t;

static void viol(chk_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void viol(chk_t *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(c->out, fmt, ap);
    va_end(ap);
    fputc('\n', c->out);
    c->bad++;
}

/* "/@name" for the root, "OBJ@name" otherwise. */
static const char *apath(char *buf, size_t n, const char *obj, const char *name)
{
    snprintf(buf, n, "%s@%s", strcmp(obj, "/") == 0 ? "/" : obj, name);
    return buf;
}

/* The kind of an object: H5I_GROUP, H5I_DATASET, H5I_DATATYPE, or H5I_BADID when absent. Walks
 * the path one link at a time, since H5Lexists fails on a missing intermediate group. */
static H5I_type_t obj_kind(hid_t f, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p != '\0'; ++p) {
        if (*p == '/') {
            *p = '\0';
            htri_t e = H5Lexists(f, buf, H5P_DEFAULT);
            *p = '/';
            if (e <= 0) {
                return H5I_BADID;
            }
        }
    }
    if (strcmp(path, "/") != 0 && H5Lexists(f, path, H5P_DEFAULT) <= 0) {
        return H5I_BADID;
    }
    hid_t o = H5Oopen(f, path, H5P_DEFAULT);
    if (o < 0) {
        return H5I_BADID;
    }
    H5I_type_t t = H5Iget_type(o);
    H5Oclose(o);
    return t;
}

static const char *kind_name(H5I_type_t t)
{
    return t == H5I_GROUP ? "a group" : t == H5I_DATASET ? "a dataset" : "another kind of object";
}

/* Describes a datatype for a message ("64-bit signed integers", "32-bit floats", ...). */
static void type_desc(hid_t t, char *buf, size_t n)
{
    size_t bits = H5Tget_size(t) * 8;
    switch (H5Tget_class(t)) {
    case H5T_INTEGER:
        snprintf(buf, n, "%zu-bit %s integers", bits,
                 H5Tget_sign(t) == H5T_SGN_NONE ? "unsigned" : "signed");
        break;
    case H5T_FLOAT:
        snprintf(buf, n, "%zu-bit floats", bits);
        break;
    case H5T_STRING:
        snprintf(buf, n, "strings");
        break;
    case H5T_COMPOUND:
        snprintf(buf, n, "a compound type");
        break;
    default:
        snprintf(buf, n, "another type");
        break;
    }
}

enum { WANT_I64, WANT_F64, WANT_STR };

/* 1 when the run stopped because its capacity ran out: exit reason capacity_exhausted, or a
 * mismatch that ran out of capacity after it had committed a corruption (/final@exhausted_why
 * says so in both). */
static int ran_out(const chk_t *c)
{
    return strcmp(c->reason, "capacity_exhausted") == 0 ||
           H5Aexists_by_name(c->f, "/final", "exhausted_why", H5P_DEFAULT) > 0;
}

static const char *want_desc(int want)
{
    return want == WANT_I64   ? "a 64-bit signed integer"
           : want == WANT_F64 ? "a 64-bit float"
                              : "a string";
}

static int type_is(hid_t t, int want)
{
    H5T_class_t cls = H5Tget_class(t);
    switch (want) {
    case WANT_I64:
        return cls == H5T_INTEGER && H5Tget_size(t) == 8 && H5Tget_sign(t) == H5T_SGN_2;
    case WANT_F64:
        return cls == H5T_FLOAT && H5Tget_size(t) == 8;
    default:
        return cls == H5T_STRING;
    }
}

/* Checks that obj has a scalar attribute name of the wanted type; returns 1 when it does. The
 * object itself is assumed to exist (its absence is reported once by the caller). */
static int need_attr(chk_t *c, const char *obj, const char *name, int want)
{
    char ap[160];
    apath(ap, sizeof ap, obj, name);
    if (H5Aexists_by_name(c->f, obj, name, H5P_DEFAULT) <= 0) {
        viol(c, "%s: missing", ap);
        return 0;
    }
    hid_t a = H5Aopen_by_name(c->f, obj, name, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0) {
        viol(c, "%s: unreadable", ap);
        return 0;
    }
    hid_t t = H5Aget_type(a);
    hid_t s = H5Aget_space(a);
    int ok = 1;
    if (!type_is(t, want)) {
        char d[64];
        type_desc(t, d, sizeof d);
        viol(c, "%s: expected %s, found %s", ap, want_desc(want), d);
        ok = 0;
    } else if (H5Sget_simple_extent_npoints(s) != 1) {
        viol(c, "%s: expected a scalar, found %lld values", ap,
             (long long)H5Sget_simple_extent_npoints(s));
        ok = 0;
    }
    H5Sclose(s);
    H5Tclose(t);
    H5Aclose(a);
    return ok;
}

/* Checks that path is a group; returns 1 when it is. */
static int need_group(chk_t *c, const char *path)
{
    H5I_type_t k = obj_kind(c->f, path);
    if (k == H5I_BADID) {
        viol(c, "%s: missing group", path);
        return 0;
    }
    if (k != H5I_GROUP) {
        viol(c, "%s: expected a group, found %s", path, kind_name(k));
        return 0;
    }
    return 1;
}

/* Checks that path is a dataset of `want` values (WANT_STR: a compound is checked by the
 * caller, pass -1) of rank `rank`, with dims[0] == d0 and dims[1] == d1 where those are >= 0,
 * extendible along axis 0 when `extendible`. The length of axis 0 goes to *len. Returns 1 when
 * the dataset can be read as such. */
static int need_dataset(chk_t *c, const char *path, int want, int rank, int64_t d0, int64_t d1,
                        int extendible, int64_t *len)
{
    H5I_type_t k = obj_kind(c->f, path);
    if (k == H5I_BADID) {
        viol(c, "%s: missing dataset", path);
        return 0;
    }
    if (k != H5I_DATASET) {
        viol(c, "%s: expected a dataset, found %s", path, kind_name(k));
        return 0;
    }
    hid_t d = H5Dopen2(c->f, path, H5P_DEFAULT);
    if (d < 0) {
        viol(c, "%s: unreadable dataset", path);
        return 0;
    }
    hid_t t = H5Dget_type(d);
    hid_t s = H5Dget_space(d);
    int ok = 1;
    int r = H5Sget_simple_extent_ndims(s);
    hsize_t dims[8] = {0};
    hsize_t maxd[8] = {0};
    if (r >= 0 && r <= 8) {
        H5Sget_simple_extent_dims(s, dims, maxd);
    }
    if (want >= 0 && !type_is(t, want)) {
        char desc[64];
        type_desc(t, desc, sizeof desc);
        viol(c, "%s: expected %s values, found %s", path,
             want == WANT_I64 ? "64-bit signed integer" : "64-bit float", desc);
        ok = 0;
    }
    if (r != rank) {
        viol(c, "%s: expected %d-D, found %d-D", path, rank, r);
        ok = 0;
    } else if ((d0 >= 0 && (int64_t)dims[0] != d0) ||
               (rank > 1 && d1 >= 0 && (int64_t)dims[1] != d1)) {
        if (rank == 1) {
            viol(c, "%s: expected %lld values, found %lld", path, (long long)d0,
                 (long long)dims[0]);
        } else {
            viol(c, "%s: expected %lld x %lld, found %lld x %lld", path,
                 (long long)(d0 >= 0 ? d0 : (int64_t)dims[0]),
                 (long long)(d1 >= 0 ? d1 : (int64_t)dims[1]), (long long)dims[0],
                 (long long)dims[1]);
        }
        ok = 0;
    } else if (extendible && maxd[0] != H5S_UNLIMITED) {
        viol(c, "%s: not extendible along the step axis (expected chunked, unlimited rows)", path);
    }
    if (len != NULL) {
        *len = r >= 1 ? (int64_t)dims[0] : 0;
    }
    H5Sclose(s);
    H5Tclose(t);
    H5Dclose(d);
    return ok;
}

/* The number of links in a group, or -1 when it is not there. */
static int64_t group_links(hid_t f, const char *group)
{
    if (obj_kind(f, group) != H5I_GROUP) {
        return -1;
    }
    hid_t g = H5Gopen2(f, group, H5P_DEFAULT);
    H5G_info_t info;
    int64_t n = g >= 0 && H5Gget_info(g, &info) >= 0 ? (int64_t)info.nlinks : -1;
    if (g >= 0) {
        H5Gclose(g);
    }
    return n;
}

/* Reports datasets or groups under group that the schema does not name. */
static void unexpected_members(chk_t *c, const char *group, const char *const *names, int n)
{
    hid_t g = H5Gopen2(c->f, group, H5P_DEFAULT);
    if (g < 0) {
        return;
    }
    H5G_info_t info;
    if (H5Gget_info(g, &info) >= 0) {
        for (hsize_t i = 0; i < info.nlinks; ++i) {
            char name[128];
            if (H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name,
                                   H5P_DEFAULT) < 0) {
                continue;
            }
            int known = 0;
            for (int k = 0; k < n && !known; ++k) {
                known = strcmp(name, names[k]) == 0;
            }
            if (!known) {
                viol(c, "%s/%s: not in the schema (schema version %d)", group, name,
                     AF_SCHEMA_VERSION);
            }
        }
    }
    H5Gclose(g);
}

static int64_t get_i64(chk_t *c, const char *obj, const char *name, int *ok);

/* The last step an event or interruption may name. A run that stopped on an error may have
 * logged the events of a step whose row it never appended; a hung one (the watchdog) those of
 * every step up to the one that did not complete (/final@hung_step: its rows since the last
 * flush needed the ranks that did not arrive); every other log has a row for every event's
 * step. */
static int64_t last_event_step(chk_t *c)
{
    int ok = 0;
    int64_t hung = strcmp(c->reason, "hung") == 0 ? get_i64(c, "/final", "hung_step", &ok) : 0;
    return c->complete ? c->nrows : ok && hung > c->nrows ? hung : c->nrows + 1;
}

static int64_t get_i64(chk_t *c, const char *obj, const char *name, int *ok)
{
    int64_t v = 0;
    *ok = af_logfile_attr_i64(c->lf, obj, name, &v) == AF_OK;
    return v;
}

static double get_f64(chk_t *c, const char *obj, const char *name, int *ok)
{
    double v = 0;
    *ok = af_logfile_attr_f64(c->lf, obj, name, &v) == AF_OK;
    return v;
}

/* Counts a row-wise violation: the first offending row is kept, the others counted. */
typedef struct rowviol {
    int64_t first;
    int64_t more;
    char msg[200];
} rowviol_t;

static void rv_init(rowviol_t *v)
{
    v->first = -1;
    v->more = 0;
    v->msg[0] = '\0';
}

static void rv_hit(rowviol_t *v, int64_t row, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void rv_hit(rowviol_t *v, int64_t row, const char *fmt, ...)
{
    if (v->first >= 0) {
        v->more++;
        return;
    }
    v->first = row;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->msg, sizeof v->msg, fmt, ap);
    va_end(ap);
}

static void rv_report(chk_t *c, const rowviol_t *v, const char *path)
{
    if (v->first < 0) {
        return;
    }
    if (v->more > 0) {
        viol(c, "%s[%lld]: %s (and %lld more row%s)", path, (long long)v->first, v->msg,
             (long long)v->more, v->more == 1 ? "" : "s");
    } else {
        viol(c, "%s[%lld]: %s", path, (long long)v->first, v->msg);
    }
}

/* ---- root ---- */

static int is_pow2(int64_t v)
{
    return v > 0 && (v & (v - 1)) == 0;
}

static void check_root(chk_t *c)
{
    const char *strs[] = {"agefence_version", "git_revision",    "config",
                          "scenario",         "compute_backend", "fabric_backend",
                          "hostnames",        "start_time",      "mpi_version"};
    const char *ints[] = {"schema_version",   "seed",   "ranks",     "devices",
                          "units_per_device", "blocks", "block_len", "capacity",
                          "steps_planned"};
    const char *flts[] = {"max_blackout", "state_bytes_static", "state_bytes_fault_free"};
    int ok_s[sizeof strs / sizeof strs[0]];
    int ok_i[sizeof ints / sizeof ints[0]];
    int ok_f[sizeof flts / sizeof flts[0]];
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; ++i) {
        ok_s[i] = need_attr(c, "/", strs[i], WANT_STR);
    }
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; ++i) {
        ok_i[i] = need_attr(c, "/", ints[i], WANT_I64);
    }
    for (size_t i = 0; i < sizeof flts / sizeof flts[0]; ++i) {
        ok_f[i] = need_attr(c, "/", flts[i], WANT_F64);
    }
    /* Written by the current writer but not (yet) in the README's schema: typed when present. */
    const char *opt_strs[] = {"backend_choice", "device_versions", "launcher",
                              "step_graph",     "kernel_path",     "slurm_job_id",
                              "slurm_job_name", "slurm_nodelist",  "slurm_tasks_per_node"};
    const char *opt_ints[] = {"slurm_ntasks", "slurm_nnodes"};
    for (size_t i = 0; i < sizeof opt_strs / sizeof opt_strs[0]; ++i) {
        if (H5Aexists_by_name(c->f, "/", opt_strs[i], H5P_DEFAULT) > 0) {
            need_attr(c, "/", opt_strs[i], WANT_STR);
        }
    }
    for (size_t i = 0; i < sizeof opt_ints / sizeof opt_ints[0]; ++i) {
        if (H5Aexists_by_name(c->f, "/", opt_ints[i], H5P_DEFAULT) > 0) {
            need_attr(c, "/", opt_ints[i], WANT_I64);
        }
    }
    int ok = 0;
    char s[4096];
    if (ok_s[4] && af_logfile_attr_str(c->lf, "/", "compute_backend", s, sizeof s) == AF_OK &&
        strcmp(s, "cpu") != 0 && strcmp(s, "cuda") != 0) {
        viol(c, "/@compute_backend: '%s', expected cpu or cuda", s);
    }
    if (ok_s[5] && af_logfile_attr_str(c->lf, "/", "fabric_backend", s, sizeof s) == AF_OK &&
        strcmp(s, "mpi") != 0 && strcmp(s, "nccl") != 0) {
        viol(c, "/@fabric_backend: '%s', expected mpi or nccl", s);
    }
    if (ok_s[2] && af_logfile_attr_str(c->lf, "/", "config", s, sizeof s) == AF_OK &&
        s[0] == '\0') {
        viol(c, "/@config: empty (expected the resolved scenario)");
    }
    c->ranks = get_i64(c, "/", "ranks", &ok);
    c->ranks_ok = ok_i[2] && ok && c->ranks >= 1;
    if (ok_i[2] && ok && c->ranks < 1) {
        viol(c, "/@ranks: %lld, expected at least 1", (long long)c->ranks);
    }
    c->devices = get_i64(c, "/", "devices", &ok);
    int dev_ok = ok_i[3] && ok && c->devices >= 1;
    if (ok_i[3] && ok && (c->devices < 1 || (c->ranks_ok && c->devices < c->ranks))) {
        viol(c, "/@devices: %lld, expected at least one per rank (%lld ranks)",
             (long long)c->devices, (long long)c->ranks);
        dev_ok = 0;
    }
    c->upd = get_i64(c, "/", "units_per_device", &ok);
    int upd_ok = ok_i[4] && ok && c->upd >= 1;
    if (ok_i[4] && ok && c->upd < 1) {
        viol(c, "/@units_per_device: %lld, expected at least 1", (long long)c->upd);
    }
    c->fleet_ok = dev_ok && upd_ok;
    if (c->fleet_ok && __builtin_mul_overflow(c->devices, c->upd, &c->units)) {
        viol(c, "/@units_per_device: %lld devices x %lld units is beyond a 64-bit count",
             (long long)c->devices, (long long)c->upd);
        c->fleet_ok = 0;
    }
    if (!c->fleet_ok) {
        c->units = 0;
    }
    c->blocks = get_i64(c, "/", "blocks", &ok);
    int b_ok = ok_i[5] && ok && c->blocks >= 1;
    if (ok_i[5] && ok && c->blocks < 1) {
        viol(c, "/@blocks: %lld, expected at least 1", (long long)c->blocks);
    }
    c->block_len = get_i64(c, "/", "block_len", &ok);
    int t_ok = ok_i[6] && ok && c->block_len >= 3;
    if (ok_i[6] && ok && c->block_len < 3) {
        viol(c, "/@block_len: %lld, expected at least 3", (long long)c->block_len);
    }
    c->blocks_ok = b_ok && t_ok;
    c->capacity = get_i64(c, "/", "capacity", &ok);
    c->capacity_ok = ok_i[7] && ok && is_pow2(c->capacity);
    if (ok_i[7] && ok && !is_pow2(c->capacity)) {
        viol(c, "/@capacity: %lld, expected a power of two", (long long)c->capacity);
    }
    c->steps_planned = get_i64(c, "/", "steps_planned", &ok);
    c->steps_planned_ok = ok_i[8] && ok && c->steps_planned >= 1;
    if (ok_i[8] && ok && c->steps_planned < 1) {
        viol(c, "/@steps_planned: %lld, expected at least 1", (long long)c->steps_planned);
    }
    int64_t seed = get_i64(c, "/", "seed", &ok);
    if (ok_i[1] && ok && seed < 0) {
        viol(c, "/@seed: negative (%lld)", (long long)seed);
    }
    double mb = get_f64(c, "/", "max_blackout", &ok);
    int mb_ok = ok_f[0] && ok && mb >= 0.0 && mb < 1.0;
    if (ok_f[0] && ok && !mb_ok) {
        viol(c, "/@max_blackout: %g outside [0, 1)", mb);
    }
    /* Static capacity, as DESIGN defines it: the smallest power of two that holds every block on
     * the units surviving max_blackout (the writer's 1e-9 keeps exact quotients exact). */
    if (c->capacity_ok && c->fleet_ok && b_ok && mb_ok) {
        double need = (double)c->blocks / ((double)c->units * (1.0 - mb)) - 1e-9;
        if ((double)c->capacity < need || (c->capacity > 1 && (double)(c->capacity / 2) >= need)) {
            viol(c,
                 "/@capacity: %lld, expected next_pow2(ceil(blocks / (units x (1 - "
                 "max_blackout)))) = next_pow2(ceil(%.6g))",
                 (long long)c->capacity, need + 1e-9);
        }
    }
    if (c->capacity_ok && c->fleet_ok && t_ok) {
        double want = (double)c->units * (double)c->capacity * 2.0 * (double)c->block_len * 8.0;
        double v = get_f64(c, "/", "state_bytes_static", &ok);
        if (ok_f[1] && ok && v != want) {
            viol(c,
                 "/@state_bytes_static: %.17g, expected units x capacity x 2 x block_len x 8 "
                 "= %.17g",
                 v, want);
        }
    }
    if (c->blocks_ok) {
        double want = (double)c->blocks * 2.0 * (double)c->block_len * 8.0;
        double v = get_f64(c, "/", "state_bytes_fault_free", &ok);
        if (ok_f[2] && ok && v != want) {
            viol(c, "/@state_bytes_fault_free: %.17g, expected blocks x 2 x block_len x 8 = %.17g",
                 v, want);
        }
    }
    if (ok_s[6] && c->ranks_ok &&
        af_logfile_attr_str(c->lf, "/", "hostnames", s, sizeof s) == AF_OK) {
        int64_t names = 1;
        int empty = s[0] == '\0' || s[0] == ',';
        for (const char *p = s; *p != '\0'; ++p) {
            if (*p == ',') {
                names++;
                empty |= p[1] == ',' || p[1] == '\0';
            }
        }
        if (names != c->ranks || empty) {
            viol(c, "/@hostnames: %lld comma-separated names%s, expected one per rank (%lld)",
                 (long long)names, empty ? " (some empty)" : "", (long long)c->ranks);
        }
    }
}

/* ---- /steps ---- */

static void check_steps_structure(chk_t *c)
{
    char path[128];
    c->nrows = -1;
    c->steps_ok = need_group(c, "/steps");
    if (!c->steps_ok) {
        c->nrows = 0;
        return;
    }
    for (int k = 0; k < AF_NCOLUMNS; ++k) {
        snprintf(path, sizeof path, "/steps/%s", af_step_column_names[k]);
        int64_t len = -1;
        if (!need_dataset(c, path, af_step_column_is_int[k] ? WANT_I64 : WANT_F64, 1, -1, -1, 1,
                          &len)) {
            c->steps_ok = 0;
            continue;
        }
        if (c->lf->rows_limit >= 0) {
            /* A run that did not finish: every column holds at least the committed rows. */
            if (len < c->lf->rows_limit) {
                viol(c, "%s: %lld rows, fewer than the %lld of /committed", path, (long long)len,
                     (long long)c->lf->rows_limit);
                c->steps_ok = 0;
            }
            c->nrows = c->lf->rows_limit;
        } else if (c->nrows < 0) {
            c->nrows = len;
        } else if (len != c->nrows) {
            viol(c, "%s: %lld rows, /steps/%s has %lld", path, (long long)len,
                 af_step_column_names[0], (long long)c->nrows);
            c->steps_ok = 0;
        }
        if (need_attr(c, path, "doc", WANT_STR)) {
            char doc[512];
            if (af_logfile_attr_str(c->lf, path, "doc", doc, sizeof doc) == AF_OK &&
                doc[0] == '\0') {
                viol(c, "%s@doc: empty", path);
            }
        }
    }
    unexpected_members(c, "/steps", af_step_column_names, AF_NCOLUMNS);
    if (c->nrows < 0) {
        c->nrows = 0;
    }
    /* The commit record (schema 3: the dataset /committed, required; before: the attribute
     * /steps@committed, checked when present): a finished run committed every row. */
    const char *rec = c->lf->schema_version >= 3 ? "/committed" : "/steps@committed";
    int there = c->lf->schema_version >= 3
                    ? H5Lexists(c->f, "/committed", H5P_DEFAULT) > 0
                    : H5Aexists_by_name(c->f, "/steps", "committed", H5P_DEFAULT) > 0;
    if (!there && c->lf->schema_version >= 3) {
        viol(c, "/committed: missing (the commit record)");
    } else if (there) {
        int64_t v[2] = {0, 0};
        if (af_logfile_committed(c->lf, v) != AF_OK) {
            viol(c, "%s: expected 2 integers >= 0 (rows, events)", rec);
        } else if (c->lf->finished && c->steps_ok && v[0] != c->nrows) {
            viol(c, "%s: %lld rows, but the finished run's /steps holds %lld", rec, (long long)v[0],
                 (long long)c->nrows);
        }
    }
}

static void check_ranks(chk_t *c)
{
    char path[128];
    if (!need_group(c, "/ranks")) {
        return;
    }
    for (int p = 0; p < AF_NPHASES; ++p) {
        snprintf(path, sizeof path, "/ranks/%s", af_phase_names[p]);
        int64_t len = 0;
        int limited = c->lf->rows_limit >= 0;
        int ok = need_dataset(c, path, WANT_F64, 2, limited ? -1 : c->nrows,
                              c->ranks_ok ? c->ranks : -1, 1, &len);
        if (ok && limited && len < c->nrows) {
            viol(c, "%s: %lld rows, fewer than the %lld of /committed", path, (long long)len,
                 (long long)c->nrows);
            ok = 0;
        }
        if (H5Lexists(c->f, path, H5P_DEFAULT) > 0 && obj_kind(c->f, path) == H5I_DATASET) {
            need_attr(c, path, "doc", WANT_STR);
            if (need_attr(c, path, "units", WANT_STR)) {
                char u[64];
                if (af_logfile_attr_str(c->lf, path, "units", u, sizeof u) == AF_OK &&
                    strcmp(u, "microseconds") != 0) {
                    viol(c, "%s@units: '%s', expected microseconds", path, u);
                }
            }
        }
        if (!ok || !c->ranks_ok) {
            continue;
        }
        size_t n = (size_t)c->nrows * (size_t)c->ranks;
        double *v = malloc(sizeof(double) * (n ? n : 1));
        if (v == NULL) {
            viol(c, "%s: out of memory reading it", path);
            continue;
        }
        if (af_logfile_read_f64(c->lf, path, v, n) == AF_OK) {
            rowviol_t rv;
            rv_init(&rv);
            for (size_t i = 0; i < n; ++i) {
                if (!(isfinite(v[i]) && v[i] >= 0.0)) {
                    rv_hit(&rv, (int64_t)(i / (size_t)c->ranks),
                           "rank %lld: %g, expected a finite time >= 0",
                           (long long)(i % (size_t)c->ranks), v[i]);
                }
            }
            rv_report(c, &rv, path);
        }
        free(v);
    }
    unexpected_members(c, "/ranks", af_phase_names, AF_NPHASES);
}

/* Reads every /steps column (when their structure is sound) for the checks of contents. */
static int read_columns(chk_t *c)
{
    if (!c->steps_ok) {
        return 0;
    }
    size_t n = (size_t)c->nrows;
    char path[128];
    for (int k = 0; k < AF_NCOLUMNS; ++k) {
        snprintf(path, sizeof path, "/steps/%s", af_step_column_names[k]);
        af_result_t rc;
        if (af_step_column_is_int[k]) {
            c->icol[k] = malloc(sizeof(int64_t) * (n ? n : 1));
            rc = c->icol[k] ? af_logfile_read_i64(c->lf, path, c->icol[k], n) : AF_ERR_NOMEM;
        } else {
            c->fcol[k] = malloc(sizeof(double) * (n ? n : 1));
            rc = c->fcol[k] ? af_logfile_read_f64(c->lf, path, c->fcol[k], n) : AF_ERR_NOMEM;
        }
        if (rc != AF_OK) {
            viol(c, "%s: %s", path, rc == AF_ERR_NOMEM ? "out of memory reading it" : "unreadable");
            return 0;
        }
    }
    return 1;
}

#define I(col) (c->icol[AF_COL_##col])
#define F(col) (c->fcol[AF_COL_##col])

/* The sum of an integer column, saturated at INT64_MAX (INT64_MIN) when a damaged log's counts
 * add up beyond 64 bits. */
static int64_t col_sum(const chk_t *c, int k)
{
    int64_t s = 0;
    for (int64_t i = 0; i < c->nrows; ++i) {
        if (__builtin_add_overflow(s, c->icol[k][i], &s)) {
            return c->icol[k][i] < 0 ? INT64_MIN : INT64_MAX;
        }
    }
    return s;
}

static void check_steps_contents(chk_t *c)
{
    int64_t n = c->nrows;
    rowviol_t rv;
    char path[128];
    rv_init(&rv);
    for (int64_t i = 0; i < n; ++i) {
        if (I(step)[i] != i + 1) {
            rv_hit(&rv, i, "%lld, expected %lld (steps must be contiguous from 1)",
                   (long long)I(step)[i], (long long)(i + 1));
        }
    }
    rv_report(c, &rv, "/steps/step");
    /* Every counter is a count. */
    for (int k = 0; k < AF_NCOLUMNS; ++k) {
        if (!af_step_column_is_int[k]) {
            continue;
        }
        rv_init(&rv);
        for (int64_t i = 0; i < n; ++i) {
            if (c->icol[k][i] < 0) {
                rv_hit(&rv, i, "negative (%lld)", (long long)c->icol[k][i]);
            }
        }
        snprintf(path, sizeof path, "/steps/%s", af_step_column_names[k]);
        rv_report(c, &rv, path);
    }
    /* The logical step advances by one, or goes back by the steps a rollback replays. The step
     * that finds the capacity exhausted commits nothing: it stays where it was, or where its
     * rollback took it (a rollback, then no live slot left to retry a fenced block on). */
    int exhausted = ran_out(c);
    rv_init(&rv);
    for (int64_t i = 0; i < n; ++i) {
        int64_t prev = i > 0 ? I(state_step)[i - 1] : 0;
        int64_t want = 0;
        if (exhausted && i == n - 1 &&
            (I(state_step)[i] == prev || I(state_step)[i] == prev - I(replayed_steps)[i])) {
            continue;
        }
        if (__builtin_add_overflow(prev, 1, &want) ||
            __builtin_sub_overflow(want, I(replayed_steps)[i], &want)) {
            rv_hit(&rv, i, "%lld, expected the previous %lld + 1 - %lld replayed: beyond 64 bits",
                   (long long)I(state_step)[i], (long long)prev, (long long)I(replayed_steps)[i]);
        } else if (I(state_step)[i] != want) {
            rv_hit(&rv, i, "%lld, expected %lld (the previous %lld + 1 - %lld replayed)",
                   (long long)I(state_step)[i], (long long)want, (long long)prev,
                   (long long)I(replayed_steps)[i]);
        } else if (c->steps_planned_ok &&
                   (I(state_step)[i] < 1 || I(state_step)[i] > c->steps_planned)) {
            rv_hit(&rv, i, "%lld outside 1..%lld (steps_planned)", (long long)I(state_step)[i],
                   (long long)c->steps_planned);
        }
    }
    rv_report(c, &rv, "/steps/state_step");
    rv_init(&rv);
    for (int64_t i = 0; i < n; ++i) {
        if (I(replayed_steps)[i] > 0 && I(rollbacks)[i] == 0) {
            rv_hit(&rv, i, "%lld replayed steps without a rollback",
                   (long long)I(replayed_steps)[i]);
        }
    }
    rv_report(c, &rv, "/steps/replayed_steps");
    /* A block replayed alone was restored in that step, by a step that rolled nothing back,
     * and recomputed at least one step of its own. */
    rv_init(&rv);
    for (int64_t i = 0; i < n; ++i) {
        int64_t rb = I(replayed_blocks)[i];
        int64_t rbs = I(replayed_block_steps)[i];
        if (rb > I(moves_restore)[i]) {
            rv_hit(&rv, i, "%lld replayed blocks, but %lld restores", (long long)rb,
                   (long long)I(moves_restore)[i]);
        } else if (rb > 0 && I(rollbacks)[i] > 0) {
            rv_hit(&rv, i, "%lld replayed blocks in a step that rolled back", (long long)rb);
        } else if (rbs < rb || (rb == 0 && rbs != 0)) {
            rv_hit(&rv, i, "%lld block-steps for %lld replayed blocks", (long long)rbs,
                   (long long)rb);
        }
    }
    rv_report(c, &rv, "/steps/replayed_blocks");
    rv_init(&rv);
    for (int64_t i = 0; i < n; ++i) {
        double h = F(sim_hours)[i];
        if (!(isfinite(h) && h >= 0.0) || (i > 0 && h < F(sim_hours)[i - 1])) {
            rv_hit(&rv, i, "%g, expected finite, >= 0 and non-decreasing", h);
        }
    }
    rv_report(c, &rv, "/steps/sim_hours");
    /* Mass and energy stay finite, unless a finite corruption got through before (a flipped
     * exponent bit makes a huge finite value, whose square overflows the energy). */
    const int finite_cols[] = {AF_COL_mass, AF_COL_energy};
    for (size_t j = 0; j < sizeof finite_cols / sizeof finite_cols[0]; ++j) {
        int k = finite_cols[j];
        rv_init(&rv);
        int sdc_seen = 0;
        for (int64_t i = 0; i < n; ++i) {
            sdc_seen |= I(sdc_undetected)[i] != 0;
            if (!isfinite(c->fcol[k][i]) && !sdc_seen) {
                rv_hit(&rv, i, "%g, expected a finite value", c->fcol[k][i]);
            }
        }
        snprintf(path, sizeof path, "/steps/%s", af_step_column_names[k]);
        rv_report(c, &rv, path);
    }
    rv_init(&rv);
    for (int64_t i = 0; i < n; ++i) {
        if (I(corrupt_detected)[i] > I(corrupt_injected)[i]) {
            rv_hit(&rv, i, "%lld exceeds corrupt_injected %lld", (long long)I(corrupt_detected)[i],
                   (long long)I(corrupt_injected)[i]);
        }
    }
    rv_report(c, &rv, "/steps/corrupt_detected");
    rv_init(&rv);
    for (int64_t i = 0; i < n; ++i) {
        if (I(sdc_harmful)[i] < 0 || I(sdc_harmful)[i] > I(sdc_undetected)[i]) {
            rv_hit(&rv, i, "%lld, expected 0..sdc_undetected (%lld)", (long long)I(sdc_harmful)[i],
                   (long long)I(sdc_undetected)[i]);
        }
    }
    rv_report(c, &rv, "/steps/sdc_harmful");
    rv_init(&rv);
    for (int64_t i = 0; i < n; ++i) {
        int64_t split = 0;
        int over = __builtin_add_overflow(I(detected_finite)[i], I(detected_abft)[i], &split) ||
                   __builtin_add_overflow(split, I(detected_twin)[i], &split);
        if (over || split != I(corrupt_detected)[i] || I(detected_finite)[i] < 0 ||
            I(detected_abft)[i] < 0 || I(detected_twin)[i] < 0) {
            rv_hit(&rv, i, "finite %lld + abft %lld + twin %lld, expected corrupt_detected %lld",
                   (long long)I(detected_finite)[i], (long long)I(detected_abft)[i],
                   (long long)I(detected_twin)[i], (long long)I(corrupt_detected)[i]);
        }
    }
    rv_report(c, &rv, "/steps/detected_finite");
    rv_init(&rv);
    for (int64_t i = 0; i < n; ++i) {
        if (I(corrupt_harmful)[i] < 0 || I(corrupt_harmful)[i] > I(corrupt_injected)[i] ||
            I(sdc_harmful)[i] > I(corrupt_harmful)[i]) {
            rv_hit(&rv, i, "%lld, expected 0..corrupt_injected (%lld) and >= sdc_harmful (%lld)",
                   (long long)I(corrupt_harmful)[i], (long long)I(corrupt_injected)[i],
                   (long long)I(sdc_harmful)[i]);
        }
    }
    rv_report(c, &rv, "/steps/corrupt_harmful");
    rv_init(&rv);
    for (int64_t i = 0; i < n; ++i) {
        if (I(unverified_commits)[i] < 0 ||
            (I(unverified_commits)[i] > 0 && I(fading_units)[i] == 0 && i > 0 &&
             I(fading_units)[i - 1] == 0)) {
            rv_hit(&rv, i, "%lld, expected >= 0 and 0 when no unit was FADING",
                   (long long)I(unverified_commits)[i]);
        }
    }
    rv_report(c, &rv, "/steps/unverified_commits");
    if (c->fleet_ok) {
        rv_init(&rv);
        for (int64_t i = 0; i < n; ++i) {
            int64_t sum = 0;
            if (__builtin_add_overflow(I(healthy_units)[i], I(fading_units)[i], &sum) ||
                __builtin_add_overflow(sum, I(dead_units)[i], &sum) ||
                __builtin_add_overflow(sum, I(straggler_units)[i], &sum)) {
                rv_hit(&rv, i,
                       "healthy + fading + dead + straggler beyond 64 bits, expected %lld "
                       "units",
                       (long long)c->units);
            } else if (sum != c->units) {
                rv_hit(&rv, i, "healthy + fading + dead + straggler = %lld, expected %lld units",
                       (long long)sum, (long long)c->units);
            }
        }
        rv_report(c, &rv, "/steps");
    }
    rv_init(&rv);
    for (int64_t i = 1; i < n; ++i) {
        if (I(dead_units)[i] < I(dead_units)[i - 1]) {
            rv_hit(&rv, i, "%lld after %lld (a dead unit never recovers)",
                   (long long)I(dead_units)[i], (long long)I(dead_units)[i - 1]);
        }
    }
    rv_report(c, &rv, "/steps/dead_units");
    rv_init(&rv);
    for (int64_t i = 0; i < n; ++i) {
        double f = F(blackout_frac)[i];
        if (!(f >= 0.0 && f <= 1.0)) {
            rv_hit(&rv, i, "%g outside [0, 1]", f);
        } else if (c->fleet_ok && fabs(f - (double)I(dead_units)[i] / (double)c->units) > 1e-12) {
            rv_hit(&rv, i, "%.17g, expected dead_units / units = %lld / %lld", f,
                   (long long)I(dead_units)[i], (long long)c->units);
        }
    }
    rv_report(c, &rv, "/steps/blackout_frac");
    /* Allocations and communicators after start-up are running totals over the ranks. */
    const int cumulative[] = {AF_COL_allocs_after_init, AF_COL_comms_after_init};
    for (size_t j = 0; j < 2; ++j) {
        int k = cumulative[j];
        rv_init(&rv);
        for (int64_t i = 1; i < n; ++i) {
            if (c->icol[k][i] < c->icol[k][i - 1]) {
                rv_hit(&rv, i, "%lld after %lld (a running total cannot decrease)",
                       (long long)c->icol[k][i], (long long)c->icol[k][i - 1]);
            }
        }
        snprintf(path, sizeof path, "/steps/%s", af_step_column_names[k]);
        rv_report(c, &rv, path);
    }
}

/* ---- /calibration ---- */

static void check_calibration(chk_t *c)
{
    if (!need_group(c, "/calibration")) {
        return;
    }
    need_attr(c, "/calibration", "warmup_iterations", WANT_I64);
    const char *names[] = {"timer_floor_us", "allreduce8_us"};
    for (int i = 0; i < 2; ++i) {
        char path[96];
        snprintf(path, sizeof path, "/calibration/%s", names[i]);
        int64_t len = 0;
        int ok = need_dataset(c, path, WANT_F64, 1, -1, -1, 0, &len);
        if (obj_kind(c->f, path) != H5I_DATASET) {
            continue;
        }
        const char *stat[] = {"min", "p10", "p50", "p90"};
        double sv[4] = {0, 0, 0, 0};
        int all = 1;
        for (int k = 0; k < 4; ++k) {
            int got = 0;
            if (need_attr(c, path, stat[k], WANT_F64)) {
                sv[k] = get_f64(c, path, stat[k], &got);
            }
            all &= got;
        }
        if (need_attr(c, path, "units", WANT_STR)) {
            char u[64];
            if (af_logfile_attr_str(c->lf, path, "units", u, sizeof u) == AF_OK &&
                strcmp(u, "microseconds") != 0) {
                viol(c, "%s@units: '%s', expected microseconds", path, u);
            }
        }
        if (!ok) {
            continue;
        }
        if (len < 1) {
            viol(c, "%s: no samples", path);
            continue;
        }
        double *v = malloc(sizeof(double) * (size_t)len);
        if (v == NULL || af_logfile_read_f64(c->lf, path, v, (size_t)len) != AF_OK) {
            free(v);
            viol(c, "%s: unreadable", path);
            continue;
        }
        int64_t badi = -1;
        for (int64_t k = 0; k < len && badi < 0; ++k) {
            if (!(isfinite(v[k]) && v[k] >= 0.0)) {
                badi = k;
            }
        }
        if (badi >= 0) {
            viol(c, "%s[%lld]: %g, expected a finite time >= 0", path, (long long)badi, v[badi]);
        } else if (all) {
            /* The summary attributes are the samples' own: sort a copy and recompute. */
            for (int64_t a = 1; a < len; ++a) {
                double x = v[a];
                int64_t b = a - 1;
                while (b >= 0 && v[b] > x) {
                    v[b + 1] = v[b];
                    b--;
                }
                v[b + 1] = x;
            }
            const double p[4] = {-1, 10, 50, 90};
            for (int k = 0; k < 4; ++k) {
                double want = k == 0 ? v[0] : 0.0;
                if (k > 0) {
                    double pos = p[k] / 100.0 * (double)(len - 1);
                    int64_t lo = (int64_t)pos;
                    want = lo + 1 < len ? v[lo] + (v[lo + 1] - v[lo]) * (pos - (double)lo)
                                        : v[len - 1];
                }
                if (fabs(sv[k] - want) > 1e-9 * (fabs(want) + 1e-9)) {
                    viol(c, "%s@%s: %.17g, but the samples give %.17g", path, stat[k], sv[k], want);
                }
            }
        }
        free(v);
    }
}

/* ---- /events ---- */

static void check_events(chk_t *c, int cols_ok)
{
    H5I_type_t k = obj_kind(c->f, "/events");
    if (k == H5I_BADID) {
        viol(c, "/events: missing dataset");
        return;
    }
    if (k != H5I_DATASET) {
        viol(c, "/events: expected a dataset, found %s", kind_name(k));
        return;
    }
    hid_t d = H5Dopen2(c->f, "/events", H5P_DEFAULT);
    if (d < 0) {
        viol(c, "/events: unreadable dataset");
        return;
    }
    hid_t t = H5Dget_type(d);
    char why[128];
    af_logfile_event_type_problem(t, why, sizeof why);
    H5Tclose(t);
    H5Dclose(d);
    if (why[0] != '\0') {
        viol(c, "/events: %s", why);
        return;
    }
    int64_t n = 0;
    if (!need_dataset(c, "/events", -1, 1, -1, -1, 1, &n)) {
        return;
    }
    int64_t committed[2] = {0, 0};
    int okc = af_logfile_committed(c->lf, committed) == AF_OK;
    if (c->lf->events_limit >= 0) {
        if (n < c->lf->events_limit) {
            viol(c, "/events: %lld rows, fewer than the %lld of /committed", (long long)n,
                 (long long)c->lf->events_limit);
            return;
        }
        n = c->lf->events_limit;
    } else if (okc && c->lf->finished && committed[1] != n) {
        viol(c, "/committed: %lld events, but the finished run's /events holds %lld",
             (long long)committed[1], (long long)n);
    }
    af_event_row_t *ev = malloc(sizeof(af_event_row_t) * (size_t)(n > 0 ? n : 1));
    if (ev == NULL || af_logfile_read_events(c->lf, ev, (size_t)n) != AF_OK) {
        free(ev);
        viol(c, "/events: unreadable");
        return;
    }
    static const char *const kinds[] = {
        "fade",    "death",    "sudden", "drain",     "restore",      "retry",     "rollback",
        "replica", "capacity", "slow",   "straggler", "replica_lost", "interrupt", "suspect"};
    enum { NK = sizeof kinds / sizeof kinds[0] };
    int kind_interrupt = -1;
    for (int j = 0; j < NK; ++j) {
        kind_interrupt = strcmp(kinds[j], "interrupt") == 0 ? j : kind_interrupt;
    }
    int64_t count[NK] = {0};
    char known[192] = "";
    for (int j = 0; j < NK; ++j) {
        size_t at = strlen(known);
        snprintf(known + at, sizeof known - at, "%s%s", j ? ", " : "", kinds[j]);
    }
    int64_t last = last_event_step(c);
    rowviol_t r_step, r_order, r_kind, r_range, r_move, r_cause;
    rv_init(&r_cause);
    rv_init(&r_step);
    rv_init(&r_order);
    rv_init(&r_kind);
    rv_init(&r_range);
    rv_init(&r_move);
    for (int64_t i = 0; i < n; ++i) {
        const af_event_row_t *e = &ev[i];
        if (c->steps_ok && (e->step < 1 || e->step > last)) {
            rv_hit(&r_step, i, "step %lld outside the logged steps 1..%lld", (long long)e->step,
                   (long long)c->nrows);
        }
        if (i > 0 && e->step < ev[i - 1].step) {
            rv_hit(&r_order, i, "step %lld after step %lld (events are in step order)",
                   (long long)e->step, (long long)ev[i - 1].step);
        }
        int kind = -1;
        for (int j = 0; j < NK; ++j) {
            if (strcmp(e->kind, kinds[j]) == 0) {
                kind = j;
            }
        }
        if (kind < 0) {
            rv_hit(&r_kind, i, "kind '%s' is not one of %s", e->kind, known);
        } else if (e->step <= c->nrows) {
            count[kind]++;
        }
        int in_range = (e->block >= -1 && (!c->blocks_ok || e->block < c->blocks)) &&
                       e->from_device >= -1 && e->to_device >= -1 && e->from_unit >= -1 &&
                       e->to_unit >= -1 && e->from_slot >= -1 && e->to_slot >= -1;
        if (c->fleet_ok) {
            in_range = in_range && e->from_device < c->devices && e->to_device < c->devices &&
                       e->from_unit < c->upd && e->to_unit < c->upd;
        }
        if (c->capacity_ok) {
            in_range = in_range && e->from_slot < c->capacity && e->to_slot < c->capacity;
        }
        if (!in_range) {
            rv_hit(&r_range, i,
                   "block %lld, from %lld/%lld/%lld, to %lld/%lld/%lld: outside the "
                   "fleet (device/unit/slot; -1 for none)",
                   (long long)e->block, (long long)e->from_device, (long long)e->from_unit,
                   (long long)e->from_slot, (long long)e->to_device, (long long)e->to_unit,
                   (long long)e->to_slot);
        }
        /* A job-level interruption names its cause, and strikes the job (-1) or a device. */
        if (kind == kind_interrupt && (e->detail < AF_INTR_FIRST_JOB || e->detail > AF_INTR_hbm)) {
            rv_hit(&r_cause, i, "an interrupt of cause %lld: expected %d..%d (common/log_schema.h)",
                   (long long)e->detail, AF_INTR_FIRST_JOB, AF_INTR_hbm);
        }
        int is_move = kind == 3 || kind == 4 || kind == 5;
        if (is_move && (e->block < 0 || e->to_device < 0 || e->to_unit < 0 || e->to_slot < 0)) {
            rv_hit(&r_move, i, "a %s without a block and a target slot", e->kind);
        }
    }
    rv_report(c, &r_step, "/events");
    rv_report(c, &r_order, "/events");
    rv_report(c, &r_kind, "/events");
    rv_report(c, &r_range, "/events");
    rv_report(c, &r_move, "/events");
    rv_report(c, &r_cause, "/events");
    free(ev);
    if (!cols_ok) {
        return;
    }
    /* Every counted move and rollback has its event, and every death its event. */
    const struct {
        int kind;
        int col;
    } pairs[] = {{3, AF_COL_moves_drain},
                 {4, AF_COL_moves_restore},
                 {5, AF_COL_moves_retry},
                 {6, AF_COL_rollbacks}};
    for (size_t j = 0; j < sizeof pairs / sizeof pairs[0]; ++j) {
        int64_t sum = col_sum(c, pairs[j].col);
        if (count[pairs[j].kind] != sum) {
            viol(c, "/events: %lld '%s' events, but /steps/%s sums to %lld",
                 (long long)count[pairs[j].kind], kinds[pairs[j].kind],
                 af_step_column_names[pairs[j].col], (long long)sum);
        }
    }
    int64_t dead = c->nrows > 0 ? I(dead_units)[c->nrows - 1] : 0;
    if (count[1] + count[2] != dead) {
        viol(c, "/events: %lld 'death' and 'sudden' events, but /steps/dead_units ends at %lld",
             (long long)(count[1] + count[2]), (long long)dead);
    }
}

/* ---- /interruptions ---- */

/* scenario.devices_per_node of the log's /@config (1 when it says none). */
static int64_t config_devices_per_node(chk_t *c)
{
    int64_t v = 1;
    char *text = malloc(1 << 16);
    if (text != NULL && af_logfile_attr_str(c->lf, "/", "config", text, 1 << 16) == AF_OK) {
        const char *at = strstr(text, "\ndevices_per_node = ");
        long long x = 0;
        if (at != NULL && sscanf(at, "\ndevices_per_node = %lld", &x) == 1 && x >= 1) {
            v = (int64_t)x;
        }
    }
    free(text);
    return v;
}

/* The run's own table of interruptions (schema 5; optional before): its type, rows inside the
 * fleet and the logged steps, each row's hours those of its step, and the rows the same as
 * those /events gives (analysis/interrupts.h), in order. */
static void check_interruptions(chk_t *c, int cols_ok)
{
    H5I_type_t k = obj_kind(c->f, "/interruptions");
    if (k == H5I_BADID) {
        if (c->lf->schema_version >= 5) {
            viol(c, "/interruptions: missing dataset");
        }
        return;
    }
    if (k != H5I_DATASET) {
        viol(c, "/interruptions: expected a dataset, found %s", kind_name(k));
        return;
    }
    hid_t d = H5Dopen2(c->f, "/interruptions", H5P_DEFAULT);
    if (d < 0) {
        viol(c, "/interruptions: unreadable dataset");
        return;
    }
    hid_t t = H5Dget_type(d);
    char why[128];
    af_logfile_intr_type_problem(t, why, sizeof why);
    H5Tclose(t);
    H5Dclose(d);
    if (why[0] != '\0') {
        viol(c, "/interruptions: %s", why);
        return;
    }
    int64_t n = 0;
    if (!need_dataset(c, "/interruptions", -1, 1, -1, -1, 1, &n)) {
        return;
    }
    char names[512] = "";
    for (int j = 0; j < AF_NINTR; ++j) {
        size_t at = strlen(names);
        snprintf(names + at, sizeof names - at, "%s%d %s", j ? ", " : "", j, af_intr_names[j]);
    }
    char got[512];
    if (af_logfile_attr_str(c->lf, "/interruptions", "cause_names", got, sizeof got) != AF_OK) {
        viol(c, "/interruptions@cause_names: missing");
    } else {
        /* Causes are appended, never renumbered: a log written before the last ones were
         * added names a prefix of them (whole entries), and its numbers mean the same. */
        size_t gl = strlen(got);
        if (gl == 0 || strncmp(got, names, gl) != 0 || (names[gl] != '\0' && names[gl] != ',')) {
            viol(c, "/interruptions@cause_names: '%s', expected '%s' or a prefix of it", got,
                 names);
        }
    }
    af_intr_row_t *rows = malloc(sizeof(af_intr_row_t) * (size_t)(n > 0 ? n : 1));
    if (rows == NULL || af_logfile_read_intr(c->lf, rows, (size_t)n) != AF_OK) {
        free(rows);
        viol(c, "/interruptions: unreadable");
        return;
    }
    /* A killed run's rows of steps after its commit record are not its own yet. */
    if (c->lf->rows_limit >= 0) {
        int64_t keep = 0;
        while (keep < n && rows[keep].step <= c->lf->rows_limit) {
            keep++;
        }
        n = keep;
    }
    const int64_t per_node = config_devices_per_node(c);
    const int64_t nodes = c->fleet_ok ? c->devices / per_node : 0;
    rowviol_t r_step, r_cause, r_place, r_hours, r_time;
    rv_init(&r_step);
    rv_init(&r_cause);
    rv_init(&r_place);
    rv_init(&r_hours);
    rv_init(&r_time);
    const int timed = af_logfile_intr_timed(c->lf);
    const int exhausted = ran_out(c);
    for (int64_t i = 0; i < n; ++i) {
        const af_intr_row_t *r = &rows[i];
        if (r->step < 1 ||
            (c->steps_ok &&
             r->step > (strcmp(c->reason, "hung") == 0 ? last_event_step(c) : c->nrows)) ||
            (i > 0 && r->step < rows[i - 1].step)) {
            rv_hit(&r_step, i, "step %lld: outside the logged steps 1..%lld or out of order",
                   (long long)r->step, (long long)c->nrows);
        }
        if (r->cause < 0 || r->cause >= AF_NINTR) {
            rv_hit(&r_cause, i, "cause %lld: expected 0..%d (cause_names)", (long long)r->cause,
                   AF_NINTR - 1);
        }
        int in_fleet = r->device >= -1 && r->node >= -1 &&
                       (!c->fleet_ok || (r->device < c->devices && r->node < nodes)) &&
                       (r->device < 0 || r->node == r->device / per_node);
        if (!in_fleet) {
            rv_hit(&r_place, i,
                   "device %lld, node %lld: outside the fleet, or not the device's node (-1 for "
                   "none; %lld devices a node)",
                   (long long)r->device, (long long)r->node, (long long)per_node);
        }
        /* (Its step's row is row step - 1 when the steps are contiguous: a gap is the steps'
         * own violation.) */
        if (cols_ok && r->step >= 1 && r->step <= c->nrows && I(step)[r->step - 1] == r->step &&
            !(r->sim_hours == F(sim_hours)[r->step - 1])) {
            rv_hit(&r_hours, i, "sim_hours %.17g, but step %lld's /steps/sim_hours is %.17g",
                   r->sim_hours, (long long)r->step, F(sim_hours)[r->step - 1]);
        }
        /* Its time lies in its step: after the previous step's hours, at most its own (the
         * step that finds the capacity exhausted, the last, serves no hours: no upper bound;
         * with aging.sim_hours_per_step = 0 no step does, and every time is 0). */
        if (timed && cols_ok && r->step >= 1 && r->step <= c->nrows &&
            I(step)[r->step - 1] == r->step) {
            double lo = r->step > 1 ? F(sim_hours)[r->step - 2] : 0.0;
            double hi = exhausted && r->step == c->nrows ? INFINITY : F(sim_hours)[r->step - 1];
            if (!(r->time_h >= lo && r->time_h <= hi) ||
                (r->time_h == lo && F(sim_hours)[r->step - 1] > lo)) {
                rv_hit(&r_time, i, "time_h %.17g, outside step %lld's hours (%.17g, %.17g]",
                       r->time_h, (long long)r->step, lo, hi);
            }
        }
    }
    rv_report(c, &r_step, "/interruptions");
    rv_report(c, &r_cause, "/interruptions");
    rv_report(c, &r_place, "/interruptions");
    rv_report(c, &r_hours, "/interruptions");
    rv_report(c, &r_time, "/interruptions");
    /* The same rows as /events gives. */
    int64_t ne = 0;
    af_event_row_t *ev = NULL;
    af_intr_row_t *want = NULL;
    if (af_logfile_events_count(c->lf, &ne) == AF_OK) {
        /* A killed run's events after its commit record are not its own yet (as for the
         * /events check): the interruptions derive from the committed ones. */
        if (c->lf->events_limit >= 0 && ne > c->lf->events_limit) {
            ne = c->lf->events_limit;
        }
        ev = malloc(sizeof(af_event_row_t) * (size_t)(ne > 0 ? ne : 1));
        want = malloc(sizeof(af_intr_row_t) * (size_t)(ne > 0 ? ne : 1));
    }
    if (ev != NULL && want != NULL && af_logfile_read_events(c->lf, ev, (size_t)ne) == AF_OK) {
        int64_t nw = af_intr_derive(ev, ne, per_node, want);
        if (c->lf->rows_limit >= 0) { /* the same cut as the rows' above */
            int64_t keep = 0;
            while (keep < nw && want[keep].step <= c->lf->rows_limit) {
                keep++;
            }
            nw = keep;
        }
        int64_t i = 0;
        while (i < n && i < nw && rows[i].step == want[i].step && rows[i].cause == want[i].cause &&
               rows[i].device == want[i].device && rows[i].node == want[i].node) {
            i++;
        }
        if (i < n && i < nw) {
            viol(c,
                 "/interruptions[%lld]: step %lld cause %lld device %lld node %lld, but /events "
                 "gives step %lld cause %lld device %lld node %lld",
                 (long long)i, (long long)rows[i].step, (long long)rows[i].cause,
                 (long long)rows[i].device, (long long)rows[i].node, (long long)want[i].step,
                 (long long)want[i].cause, (long long)want[i].device, (long long)want[i].node);
        } else if (n != nw) {
            viol(c, "/interruptions: %lld rows, but /events gives %lld interruptions", (long long)n,
                 (long long)nw);
        }
    }
    free(ev);
    free(want);
    free(rows);
}

/* ---- /units ---- */

static void check_units(chk_t *c, int cols_ok)
{
    /* /units is filled with /final: a killed run has none (the writer creates the group empty
     * at the start). */
    if (!c->complete && group_links(c->f, "/units") <= 0) {
        return;
    }
    if (!need_group(c, "/units")) {
        return;
    }
    if (need_attr(c, "/units", "cause_codes", WANT_STR)) {
        char s[256];
        if (af_logfile_attr_str(c->lf, "/units", "cause_codes", s, sizeof s) == AF_OK &&
            s[0] == '\0') {
            viol(c, "/units@cause_codes: empty");
        }
    }
    const char *inames[] = {"device", "unit",   "fade_step",        "death_step",
                            "cause",  "silent", "quarantined_step", "first_corrupt_step"};
    const char *fnames[] = {"lifetime_hours", "age_hours", "temperature_K"};
    enum { NI = 8, NF = 3 };
    int64_t want = c->fleet_ok ? c->units : -1;
    int64_t *iv[NI] = {NULL};
    double *fv[NF] = {NULL};
    int all = c->fleet_ok;
    char path[96];
    for (int i = 0; i < NI; ++i) {
        snprintf(path, sizeof path, "/units/%s", inames[i]);
        if (need_dataset(c, path, WANT_I64, 1, want, -1, 0, NULL) && c->fleet_ok) {
            iv[i] = malloc(sizeof(int64_t) * (size_t)c->units);
            if (iv[i] == NULL ||
                af_logfile_read_i64(c->lf, path, iv[i], (size_t)c->units) != AF_OK) {
                viol(c, "%s: unreadable", path);
                all = 0;
            }
        } else {
            all = 0;
        }
    }
    for (int i = 0; i < NF; ++i) {
        snprintf(path, sizeof path, "/units/%s", fnames[i]);
        if (need_dataset(c, path, WANT_F64, 1, want, -1, 0, NULL) && c->fleet_ok) {
            fv[i] = malloc(sizeof(double) * (size_t)c->units);
            if (fv[i] == NULL ||
                af_logfile_read_f64(c->lf, path, fv[i], (size_t)c->units) != AF_OK) {
                viol(c, "%s: unreadable", path);
                all = 0;
            }
        } else {
            all = 0;
        }
    }
    if (all) {
        int64_t *dev = iv[0], *unit = iv[1], *fade = iv[2], *death = iv[3], *cause = iv[4];
        int64_t *silent = iv[5], *quar = iv[6], *first = iv[7];
        double *life = fv[0], *age = fv[1], *temp = fv[2];
        rowviol_t r_id, r_cause, r_steps, r_phys;
        rv_init(&r_id);
        rv_init(&r_cause);
        rv_init(&r_steps);
        rv_init(&r_phys);
        int64_t dead = 0;
        int64_t last = c->steps_ok ? c->nrows : INT64_MAX;
        for (int64_t u = 0; u < c->units; ++u) {
            if (dev[u] != u / c->upd || unit[u] != u % c->upd) {
                rv_hit(&r_id, u, "device %lld unit %lld, expected device %lld unit %lld",
                       (long long)dev[u], (long long)unit[u], (long long)(u / c->upd),
                       (long long)(u % c->upd));
            }
            if (silent[u] != 0 && silent[u] != 1) {
                rv_hit(&r_id, u, "silent %lld, expected 0 or 1", (long long)silent[u]);
            }
            if (quar[u] != -1 && (quar[u] < 1 || quar[u] > last)) {
                rv_hit(&r_steps, u, "quarantined_step %lld: expected -1 or a logged step",
                       (long long)quar[u]);
            }
            if (first[u] != -1 && (first[u] < 1 || first[u] > last)) {
                rv_hit(&r_steps, u, "first_corrupt_step %lld: expected -1 or a logged step",
                       (long long)first[u]);
            }
            if (cause[u] < 0 || cause[u] > 9 || cause[u] == 6 || cause[u] == 7) {
                rv_hit(&r_cause, u,
                       "cause %lld, expected 0 alive, 1 wear-out, 2 sudden, "
                       "3 scripted, 4 device, 5 node, 8 link, 9 link_down",
                       (long long)cause[u]);
            } else if ((cause[u] == 0) != (death[u] == -1)) {
                rv_hit(&r_cause, u, "cause %lld with death_step %lld (alive iff never dead)",
                       (long long)cause[u], (long long)death[u]);
            }
            dead += cause[u] != 0;
            int steps_bad = (fade[u] != -1 && (fade[u] < 1 || fade[u] > last)) ||
                            (death[u] != -1 && (death[u] < 1 || death[u] > last)) ||
                            (fade[u] != -1 && death[u] != -1 && fade[u] > death[u]);
            if (steps_bad) {
                rv_hit(&r_steps, u,
                       "fade_step %lld, death_step %lld: expected -1 or a logged "
                       "step (1..%lld), fade before death",
                       (long long)fade[u], (long long)death[u], (long long)c->nrows);
            }
            if (!(isfinite(life[u]) && life[u] > 0.0 && isfinite(age[u]) && age[u] >= 0.0 &&
                  isfinite(temp[u]) && temp[u] > 0.0)) {
                rv_hit(&r_phys, u,
                       "lifetime %g h, age %g h, temperature %g K: expected finite, "
                       "lifetime and temperature > 0, age >= 0",
                       life[u], age[u], temp[u]);
            }
        }
        rv_report(c, &r_id, "/units/device");
        rv_report(c, &r_cause, "/units/cause");
        rv_report(c, &r_steps, "/units/death_step");
        rv_report(c, &r_phys, "/units/lifetime_hours");
        if (cols_ok && c->nrows > 0 && dead != I(dead_units)[c->nrows - 1]) {
            viol(c, "/units/cause: %lld dead units, but /steps/dead_units ends at %lld",
                 (long long)dead, (long long)I(dead_units)[c->nrows - 1]);
        }
    }
    for (int i = 0; i < NI; ++i) {
        free(iv[i]);
    }
    for (int i = 0; i < NF; ++i) {
        free(fv[i]);
    }
}

/* ---- /final ---- */

static int is_hex16(const char *s)
{
    if (strlen(s) != 16) {
        return 0;
    }
    for (const char *p = s; *p != '\0'; ++p) {
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) {
            return 0;
        }
    }
    return 1;
}

static void check_final(chk_t *c, int cols_ok)
{
    if (obj_kind(c->f, "/final") == H5I_BADID) {
        /* The writer links /final (and /units) into the file only at the end. */
        viol(c,
             c->lf->writing ? "/final@exit_reason: missing: the run is still writing the log (its "
                              "writer holds it); /steps holds the %lld steps up to its last flush"
                            : "/final@exit_reason: missing: the run did not finish (killed before "
                              "it wrote /final and /units); /steps holds the %lld steps up to its "
                              "last flush",
             (long long)c->nrows);
        return;
    }
    if (!need_group(c, "/final")) {
        return;
    }
    c->finished =
        af_logfile_attr_str(c->lf, "/final", "exit_reason", c->reason, sizeof c->reason) == AF_OK;
    if (!c->finished) {
        if (H5Aexists_by_name(c->f, "/final", "exit_reason", H5P_DEFAULT) > 0) {
            need_attr(c, "/final", "exit_reason", WANT_STR); /* there, but not a string */
        } else {
            viol(c,
                 "/final@exit_reason: missing: the run did not finish (killed before it "
                 "wrote /final and /units); /steps holds the %lld steps up to its last flush",
                 (long long)c->nrows);
        }
    }
    int ok = 0;
    int64_t completed = get_i64(c, "/final", "steps_completed", &ok);
    if (c->finished || ok) {
        if (need_attr(c, "/final", "steps_completed", WANT_I64) && completed != c->nrows) {
            viol(c, "/final@steps_completed: %lld, but /steps holds %lld rows",
                 (long long)completed, (long long)c->nrows);
        }
    }
    if (!c->finished) {
        return;
    }
    static const struct {
        const char *reason;
        int code;
    } reasons[] = {{"completed", 0}, {"error", 1},  {"mismatch", 3},    {"capacity_exhausted", 4},
                   {"signal", 5},    {"leaked", 6}, {"no_progress", 7}, {"hung", 8}};
    int code = -1;
    for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; ++i) {
        if (strcmp(c->reason, reasons[i].reason) == 0) {
            code = reasons[i].code;
        }
    }
    if (code < 0) {
        viol(c,
             "/final@exit_reason: '%s', expected completed, signal, mismatch, "
             "capacity_exhausted, leaked, no_progress, hung or error",
             c->reason);
    }
    c->complete = strcmp(c->reason, "error") != 0 && strcmp(c->reason, "hung") != 0;
    if (!c->complete) {
        /* The error path writes exit_reason and steps_completed only; a hung run (the
         * watchdog) adds exit_code, hung_step, hung_ranks and step_timeout_s. */
        return;
    }
    if (need_attr(c, "/final", "exit_code", WANT_I64)) {
        int64_t ec = get_i64(c, "/final", "exit_code", &ok);
        if (code >= 0 && ec != code) {
            viol(c, "/final@exit_code: %lld, expected %d for exit_reason '%s'", (long long)ec, code,
                 c->reason);
        }
    }
    const char *strs[] = {"state_checksum", "reference_checksum", "end_time"};
    int str_ok[3];
    for (int i = 0; i < 3; ++i) {
        str_ok[i] = need_attr(c, "/final", strs[i], WANT_STR);
    }
    /* bitwise_equal is 1 or 0; -1 (not verified) only for a run that mpirun's ending of the
     * job stopped (exit_reason signal), whose reference checksum is then "unverified". */
    int be_ok = need_attr(c, "/final", "bitwise_equal", WANT_I64);
    int64_t be = get_i64(c, "/final", "bitwise_equal", &ok);
    int unverified = be_ok && be == -1 && strcmp(c->reason, "signal") == 0;
    if (be_ok && be != 0 && be != 1 && !unverified) {
        viol(c,
             "/final@bitwise_equal: %lld, expected 0 or 1 (or -1, not verified, for "
             "exit_reason signal)",
             (long long)be);
        be_ok = 0;
    }
    char sum[2][64] = {"", ""};
    for (int i = 0; i < 2; ++i) {
        if (str_ok[i] &&
            af_logfile_attr_str(c->lf, "/final", strs[i], sum[i], sizeof sum[i]) == AF_OK &&
            !is_hex16(sum[i]) && !(i == 1 && unverified && strcmp(sum[i], "unverified") == 0)) {
            viol(c, "/final@%s: '%s', expected 16 hexadecimal digits%s", strs[i], sum[i],
                 i == 1 && unverified ? " or 'unverified'" : "");
        }
    }
    if (be_ok && be == 1 && str_ok[0] && str_ok[1] && strcmp(sum[0], sum[1]) != 0) {
        viol(c,
             "/final@state_checksum: %s differs from reference_checksum %s, yet "
             "bitwise_equal = 1",
             sum[0], sum[1]);
    }
    int ss_ok = need_attr(c, "/final", "state_step", WANT_I64);
    int64_t ss = get_i64(c, "/final", "state_step", &ok);
    const char *flts[] = {"mass_initial", "mass_final", "sim_hours", "max_blackout"};
    double fv[4] = {0, 0, 0, 0};
    int f_ok[4];
    for (int i = 0; i < 4; ++i) {
        f_ok[i] = need_attr(c, "/final", flts[i], WANT_F64);
        fv[i] = get_f64(c, "/final", flts[i], &ok);
        /* Blocks lost when the capacity ran out leave NaN in the final state, and its mass. */
        int lost = i == 1 && ran_out(c);
        if (f_ok[i] && !isfinite(fv[i]) && !lost) {
            viol(c, "/final@%s: %g, expected a finite value", flts[i], fv[i]);
            f_ok[i] = 0;
        }
    }
    /* Events the writer could not log (schema 3): the log is incomplete when any was lost. */
    if (c->lf->schema_version >= 3 && need_attr(c, "/final", "event_log_errors", WANT_I64)) {
        int64_t lost = get_i64(c, "/final", "event_log_errors", &ok);
        if (lost != 0) {
            viol(c, "/final@event_log_errors: %lld, expected 0 (events missing from /events)",
                 (long long)lost);
        }
    }
    int leak_ok = need_attr(c, "/final", "nonfinite_leaked_total", WANT_I64);
    int64_t leaked = get_i64(c, "/final", "nonfinite_leaked_total", &ok);
    if (need_attr(c, "/final", "allocs_after_init", WANT_I64)) {
        int64_t a = get_i64(c, "/final", "allocs_after_init", &ok);
        if (a < 0) {
            viol(c, "/final@allocs_after_init: negative (%lld)", (long long)a);
        }
    }
    if (strcmp(c->reason, "capacity_exhausted") == 0) {
        need_attr(c, "/final", "exhausted_why", WANT_STR);
    }
    /* The step graph (written since backend.graph; optional for older logs): at most one
     * instantiation per run, exactly one on a GPU that ran any graph step, none on a CPU. */
    if (H5Aexists_by_name(c->f, "/final", "graph_instantiations", H5P_DEFAULT) > 0 &&
        need_attr(c, "/final", "graph_instantiations", WANT_I64) &&
        need_attr(c, "/final", "graph_steps", WANT_I64)) {
        int64_t gi = get_i64(c, "/final", "graph_instantiations", &ok);
        int64_t gs = get_i64(c, "/final", "graph_steps", &ok);
        int64_t done = get_i64(c, "/final", "steps_completed", &ok);
        char cb[32] = "";
        (void)af_logfile_attr_str(c->lf, "/", "compute_backend", cb, sizeof cb);
        if (gi < 0 || gi > 1) {
            viol(c,
                 "/final@graph_instantiations: %lld, expected 0 or 1 (the step graph is "
                 "instantiated once, at start-up)",
                 (long long)gi);
        } else if (strcmp(cb, "cuda") == 0 && gs > 0 && gi != 1) {
            viol(c, "/final@graph_instantiations: 0, yet %lld steps ran as a CUDA graph",
                 (long long)gs);
        } else if (strcmp(cb, "cpu") == 0 && gi != 0) {
            viol(c, "/final@graph_instantiations: %lld, expected 0 with the cpu backend",
                 (long long)gi);
        }
        if (gs < 0 || (done >= 0 && gs > done)) {
            viol(c, "/final@graph_steps: %lld, expected 0..steps_completed (%lld)", (long long)gs,
                 (long long)done);
        }
    }
    /* Memory (written since the budget was logged; optional for older logs): five sizes in
     * bytes, finite and not negative, the resident peak no lower than what the process held
     * before start-up. */
    if (H5Aexists_by_name(c->f, "/final", "alloc_peak_bytes", H5P_DEFAULT) > 0) {
        static const char *const mem[] = {"memory_budget_startup_bytes", "memory_budget_peak_bytes",
                                          "rss_before_startup_bytes", "alloc_peak_bytes",
                                          "rss_peak_bytes"};
        double v[5] = {0};
        int all = 1;
        for (int i = 0; i < 5; ++i) {
            if (!need_attr(c, "/final", mem[i], WANT_F64)) {
                all = 0;
                continue;
            }
            v[i] = get_f64(c, "/final", mem[i], &ok);
            if (!(v[i] >= 0) || isinf(v[i])) {
                viol(c, "/final@%s: %g, expected a size in bytes", mem[i], v[i]);
                all = 0;
            }
        }
        if (all && v[4] > 0 && v[4] < v[2]) {
            viol(c, "/final@rss_peak_bytes: %.0f, below rss_before_startup_bytes %.0f", v[4], v[2]);
        }
    }
    /* The verdict follows from the figures. */
    if (strcmp(c->reason, "completed") == 0) {
        if (be_ok && be != 1) {
            viol(c, "/final@exit_reason: completed, yet bitwise_equal = 0 (expected mismatch)");
        }
        if (leak_ok && leaked != 0) {
            viol(c, "/final@exit_reason: completed, yet nonfinite_leaked_total = %lld",
                 (long long)leaked);
        }
        if (ss_ok && c->steps_planned_ok && ss != c->steps_planned) {
            viol(c, "/final@state_step: %lld, but a completed run reaches steps_planned = %lld",
                 (long long)ss, (long long)c->steps_planned);
        }
    } else if (strcmp(c->reason, "mismatch") == 0 && be_ok && be != 0) {
        viol(c, "/final@exit_reason: mismatch, yet bitwise_equal = 1");
    } else if (strcmp(c->reason, "leaked") == 0 && leak_ok && leaked == 0) {
        viol(c, "/final@exit_reason: leaked, yet nonfinite_leaked_total = 0");
    }
    /* /final/state: the final state in logical order. */
    int64_t cells = -1; /* unknown: any length */
    if (c->blocks_ok && __builtin_mul_overflow(c->blocks, c->block_len, &cells)) {
        cells = -1;
    }
    need_dataset(c, "/final/state", WANT_F64, 1, cells, -1, 0, NULL);
    /* The totals are the sums of /steps, and the last row's values. */
    const struct {
        const char *name;
        int col;
    } totals[] = {{"corrupt_injected_total", AF_COL_corrupt_injected},
                  {"corrupt_detected_total", AF_COL_corrupt_detected},
                  {"fenced_total", AF_COL_fenced},
                  {"retried_total", AF_COL_retried},
                  {"nonfinite_leaked_total", AF_COL_nonfinite_leaked},
                  {"sdc_undetected_total", AF_COL_sdc_undetected},
                  {"sdc_harmful_total", AF_COL_sdc_harmful},
                  {"corrupt_harmful_total", AF_COL_corrupt_harmful},
                  {"detected_finite_total", AF_COL_detected_finite},
                  {"detected_abft_total", AF_COL_detected_abft},
                  {"detected_twin_total", AF_COL_detected_twin},
                  {"abft_false_alarms_total", AF_COL_abft_false_alarms},
                  {"quarantined_units_total", AF_COL_quarantined_units},
                  {"twins_total", AF_COL_twins},
                  {"unverified_commits_total", AF_COL_unverified_commits},
                  {"moves_drain_total", AF_COL_moves_drain},
                  {"moves_restore_total", AF_COL_moves_restore},
                  {"moves_retry_total", AF_COL_moves_retry},
                  {"rollbacks_total", AF_COL_rollbacks},
                  {"replayed_steps_total", AF_COL_replayed_steps},
                  {"replayed_blocks_total", AF_COL_replayed_blocks},
                  {"replayed_block_steps_total", AF_COL_replayed_block_steps}};
    for (size_t i = 0; i < sizeof totals / sizeof totals[0]; ++i) {
        if (strcmp(totals[i].name, "nonfinite_leaked_total") == 0
                ? leak_ok
                : need_attr(c, "/final", totals[i].name, WANT_I64)) {
            int64_t v = get_i64(c, "/final", totals[i].name, &ok);
            if (v < 0) {
                viol(c, "/final@%s: negative (%lld)", totals[i].name, (long long)v);
            } else if (cols_ok && v != col_sum(c, totals[i].col)) {
                viol(c, "/final@%s: %lld, but /steps/%s sums to %lld", totals[i].name, (long long)v,
                     af_step_column_names[totals[i].col], (long long)col_sum(c, totals[i].col));
            }
        }
    }
    if (!cols_ok || c->nrows == 0) {
        return;
    }
    int64_t last = c->nrows - 1;
    if (ss_ok && ss != I(state_step)[last]) {
        viol(c, "/final@state_step: %lld, but the last row of /steps/state_step is %lld",
             (long long)ss, (long long)I(state_step)[last]);
    }
    if (f_ok[2] && fv[2] != F(sim_hours)[last]) {
        viol(c, "/final@sim_hours: %.17g, but the last row of /steps/sim_hours is %.17g", fv[2],
             F(sim_hours)[last]);
    }
    double mx = 0.0;
    for (int64_t i = 0; i < c->nrows; ++i) {
        mx = F(blackout_frac)[i] > mx ? F(blackout_frac)[i] : mx;
    }
    if (f_ok[3] && fabs(fv[3] - mx) > 1e-12) {
        viol(c, "/final@max_blackout: %.17g, but /steps/blackout_frac peaks at %.17g", fv[3], mx);
    }
}

int af_logfile_check(const af_logfile_t *lf, FILE *out)
{
    chk_t c;
    memset(&c, 0, sizeof c);
    c.lf = lf;
    c.f = (hid_t)lf->file;
    c.out = out;
    check_root(&c);
    check_steps_structure(&c);
    check_ranks(&c);
    int cols_ok = read_columns(&c);
    check_final(&c, cols_ok);
    if (cols_ok) {
        check_steps_contents(&c);
    }
    check_calibration(&c);
    check_events(&c, cols_ok);
    check_interruptions(&c, cols_ok);
    check_units(&c, cols_ok);
    /* /host: created by the writer (empty so far) and not in the README; a group if present. */
    H5I_type_t host = obj_kind(c.f, "/host");
    if (host != H5I_BADID && host != H5I_GROUP) {
        viol(&c, "/host: expected a group, found %s", kind_name(host));
    }
    for (int k = 0; k < AF_NCOLUMNS; ++k) {
        free(c.icol[k]);
        free(c.fcol[k]);
    }
    return c.bad;
}
