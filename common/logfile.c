#define _GNU_SOURCE /* F_OFD_SETLK, F_OFD_GETLK */
#include "logfile.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <math.h>
#include <stdarg.h>
#include <hdf5.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "log_schema.h"

static hid_t open_attr(const af_logfile_t *lf, const char *obj, const char *name);

af_result_t af_logfile_open(af_logfile_t *lf, const char *path, char *err, size_t errlen)
{
    memset(lf, 0, sizeof *lf);
    lf->file = -1;
    snprintf(lf->path, sizeof lf->path, "%s", path);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return AF_ERR_USAGE;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        return AF_ERR_USAGE;
    }
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return AF_ERR_USAGE;
    }
    fclose(f);
    htri_t is = H5Fis_hdf5(path);
    if (is <= 0) {
        snprintf(err, errlen, "%s: not an HDF5 file (or truncated before its superblock)", path);
        return AF_ERR_USAGE;
    }
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file < 0) {
        /* A killed run's log stays marked as open for SWMR writing, which only SWMR readers
         * may open; SWMR writing keeps it consistent (sim/io/log.h). */
        file = H5Fopen(path, H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, H5P_DEFAULT);
        lf->live = file >= 0;
    }
    if (file < 0) {
        snprintf(err, errlen, "%s: HDF5 cannot open it (damaged or truncated)", path);
        return AF_ERR_USAGE;
    }
    lf->file = file;
    lf->rows_limit = -1;
    lf->events_limit = -1;
    if (H5Aexists_by_name(file, "/", "schema_version", H5P_DEFAULT) <= 0) {
        snprintf(err, errlen, "%s: an HDF5 file, but not an agefence log (no schema_version)",
                 path);
        af_logfile_close(lf);
        return AF_ERR_USAGE;
    }
    if (af_logfile_attr_i64(lf, "/", "schema_version", &lf->schema_version) != AF_OK) {
        snprintf(err, errlen, "%s: schema_version is unreadable (damaged log)", path);
        af_logfile_close(lf);
        return AF_ERR_USAGE;
    }
    if (lf->schema_version > AF_SCHEMA_VERSION || lf->schema_version < 1) {
        snprintf(err, errlen,
                 "%s: log schema version %lld, this agefence reads version %d or older: use a "
                 "newer agefence-report",
                 path, (long long)lf->schema_version, AF_SCHEMA_VERSION);
        af_logfile_close(lf);
        return AF_ERR_USAGE;
    }
    lf->finished = H5Lexists(file, "/final", H5P_DEFAULT) > 0 &&
                   H5Aexists_by_name(file, "/final", "exit_reason", H5P_DEFAULT) > 0;
    lf->writing = !lf->finished && af_logfile_held(path);
    int64_t committed[2] = {0, 0};
    if (!lf->finished && af_logfile_committed(lf, committed) == AF_OK) {
        lf->rows_limit = committed[0];
        lf->events_limit = committed[1];
    }
    return AF_OK;
}

int af_logfile_is_log(const char *path)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || H5Fis_hdf5(path) <= 0) {
        return 0;
    }
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file < 0) {
        file = H5Fopen(path, H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, H5P_DEFAULT);
    }
    if (file < 0) {
        return 0;
    }
    int is = H5Aexists_by_name(file, "/", "schema_version", H5P_DEFAULT) > 0;
    H5Fclose(file);
    return is;
}

af_result_t af_logfile_committed(const af_logfile_t *lf, int64_t committed[2])
{
    if (H5Lexists(lf->file, "/committed", H5P_DEFAULT) > 0) {
        /* Schema 3: the dataset /committed. */
        hid_t d = H5Dopen2(lf->file, "/committed", H5P_DEFAULT);
        if (d < 0) {
            return AF_ERR_IO;
        }
        hid_t t = H5Dget_type(d);
        hid_t s = H5Dget_space(d);
        af_result_t rc = AF_ERR_IO;
        if (t >= 0 && s >= 0 && H5Tget_class(t) == H5T_INTEGER &&
            H5Sget_simple_extent_ndims(s) == 1 && H5Sget_simple_extent_npoints(s) == 2 &&
            H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, committed) >= 0 &&
            committed[0] >= 0 && committed[1] >= 0) {
            rc = AF_OK;
        }
        if (s >= 0) {
            H5Sclose(s);
        }
        if (t >= 0) {
            H5Tclose(t);
        }
        H5Dclose(d);
        return rc;
    }
    /* Schema 2: the attribute /steps@committed. */
    hid_t a = open_attr(lf, "/steps", "committed");
    if (a < 0) {
        return AF_ERR_IO;
    }
    hid_t t = H5Aget_type(a);
    hid_t s = H5Aget_space(a);
    af_result_t rc = AF_ERR_IO;
    if (H5Tget_class(t) == H5T_INTEGER && H5Sget_simple_extent_ndims(s) == 1 &&
        H5Sget_simple_extent_npoints(s) == 2 && H5Aread(a, H5T_NATIVE_INT64, committed) >= 0 &&
        committed[0] >= 0 && committed[1] >= 0) {
        rc = AF_OK;
    }
    H5Sclose(s);
    H5Tclose(t);
    H5Aclose(a);
    return rc;
}

/* The rows of the dataset at path that count: its length, or less for /steps, /ranks and
 * /events of a run that did not finish (its commit record). */
static hsize_t counted_rows(const af_logfile_t *lf, const char *path, hsize_t len)
{
    int64_t limit = -1;
    if (strncmp(path, "/steps/", 7) == 0 || strncmp(path, "/ranks/", 7) == 0) {
        limit = lf->rows_limit;
    } else if (strcmp(path, "/events") == 0) {
        limit = lf->events_limit;
    }
    return limit >= 0 && (hsize_t)limit < len ? (hsize_t)limit : len;
}

static int writer_lock(int fd, int cmd, short type)
{
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = (off_t)AF_LOGFILE_WRITER_BYTE;
    fl.l_len = 1;
    if (fcntl(fd, cmd, &fl) != 0) {
        return -1;
    }
    return fl.l_type;
}

int af_logfile_hold(const char *path)
{
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    if (writer_lock(fd, F_OFD_SETLK, F_WRLCK) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int af_logfile_held(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return 0;
    }
    /* A read lock would conflict with the writer's write lock: GETLK names it, if any. */
    int type = writer_lock(fd, F_OFD_GETLK, F_RDLCK);
    close(fd);
    return type == F_WRLCK;
}

void af_logfile_close(af_logfile_t *lf)
{
    if (lf->file >= 0) {
        H5Fclose((hid_t)lf->file);
    }
    lf->file = -1;
}

static hid_t open_attr(const af_logfile_t *lf, const char *obj, const char *name)
{
    if (H5Oexists_by_name((hid_t)lf->file, obj, H5P_DEFAULT) <= 0) {
        return -1;
    }
    if (H5Aexists_by_name((hid_t)lf->file, obj, name, H5P_DEFAULT) <= 0) {
        return -1;
    }
    return H5Aopen_by_name((hid_t)lf->file, obj, name, H5P_DEFAULT, H5P_DEFAULT);
}

af_result_t af_logfile_attr_str(const af_logfile_t *lf, const char *obj, const char *name,
                                char *out, size_t n)
{
    hid_t a = open_attr(lf, obj, name);
    if (a < 0) {
        return AF_ERR_IO;
    }
    af_result_t rc = AF_ERR_IO;
    hid_t t = H5Aget_type(a);
    hid_t space = H5Aget_space(a);
    /* One string only: H5Aread fills as many as the attribute holds, and out has room for one
     * (a fuzzed log with two overran the buffer: fuzz/regressions/log). */
    if (H5Tget_class(t) == H5T_STRING && H5Sget_simple_extent_npoints(space) == 1) {
        if (H5Tis_variable_str(t) > 0) {
            char *s = NULL;
            hid_t mt = H5Tcopy(t); /* same character set as stored */
            if (H5Aread(a, mt, &s) >= 0 && s != NULL) {
                snprintf(out, n, "%s", s);
                H5free_memory(s);
                rc = AF_OK;
            }
            H5Tclose(mt);
        } else {
            size_t sz = H5Tget_size(t);
            char *buf = calloc(sz + 1, 1);
            if (buf != NULL && H5Aread(a, t, buf) >= 0) {
                snprintf(out, n, "%s", buf);
                rc = AF_OK;
            }
            free(buf);
        }
    }
    H5Sclose(space);
    H5Tclose(t);
    H5Aclose(a);
    return rc;
}

static af_result_t attr_num(const af_logfile_t *lf, const char *obj, const char *name, hid_t mtype,
                            void *out)
{
    hid_t a = open_attr(lf, obj, name);
    if (a < 0) {
        return AF_ERR_IO;
    }
    hid_t t = H5Aget_type(a);
    hid_t s = H5Aget_space(a);
    H5T_class_t cls = H5Tget_class(t);
    af_result_t rc = AF_ERR_IO;
    if ((cls == H5T_INTEGER || cls == H5T_FLOAT) && H5Sget_simple_extent_npoints(s) == 1 &&
        H5Aread(a, mtype, out) >= 0) {
        rc = AF_OK;
    }
    H5Sclose(s);
    H5Tclose(t);
    H5Aclose(a);
    return rc;
}

af_result_t af_logfile_attr_i64(const af_logfile_t *lf, const char *obj, const char *name,
                                int64_t *out)
{
    return attr_num(lf, obj, name, H5T_NATIVE_INT64, out);
}

af_result_t af_logfile_attr_f64(const af_logfile_t *lf, const char *obj, const char *name,
                                double *out)
{
    return attr_num(lf, obj, name, H5T_NATIVE_DOUBLE, out);
}

af_result_t af_logfile_shape(const af_logfile_t *lf, const char *path, int *rank, int64_t *dims)
{
    if (H5Lexists((hid_t)lf->file, path, H5P_DEFAULT) <= 0) {
        return AF_ERR_IO;
    }
    hid_t d = H5Dopen2((hid_t)lf->file, path, H5P_DEFAULT);
    if (d < 0) {
        return AF_ERR_IO;
    }
    hid_t s = H5Dget_space(d);
    hsize_t hd[8] = {0};
    int r = H5Sget_simple_extent_ndims(s);
    af_result_t rc = AF_ERR_IO;
    if (r >= 0 && r <= 2) {
        H5Sget_simple_extent_dims(s, hd, NULL);
        *rank = r;
        dims[0] = r > 0 ? (int64_t)counted_rows(lf, path, hd[0]) : 1;
        dims[1] = r > 1 ? (int64_t)hd[1] : 1;
        rc = AF_OK;
    }
    H5Sclose(s);
    H5Dclose(d);
    return rc;
}

/* Reads the rows of path that count (counted_rows): n values, or AF_ERR_IO when they are not
 * n. */
static af_result_t read_all(const af_logfile_t *lf, const char *path, hid_t mtype, void *out,
                            size_t n)
{
    hid_t d = H5Dopen2((hid_t)lf->file, path, H5P_DEFAULT);
    if (d < 0) {
        return AF_ERR_IO;
    }
    hid_t s = H5Dget_space(d);
    int r = H5Sget_simple_extent_ndims(s);
    hsize_t dims[8] = {0};
    hsize_t count[8] = {0};
    hsize_t start[8] = {0};
    size_t np = 1;
    if (r >= 0 && r <= 8) {
        H5Sget_simple_extent_dims(s, dims, NULL);
        for (int i = 0; i < r; ++i) {
            count[i] = i == 0 ? counted_rows(lf, path, dims[0]) : dims[i];
            np *= (size_t)count[i];
        }
    }
    af_result_t rc = AF_ERR_IO;
    if (r >= 0 && r <= 8 && np == n) {
        herr_t w = 0;
        if (n > 0 && r > 0 && count[0] < dims[0]) {
            hid_t ms = H5Screate_simple(r, count, NULL);
            H5Sselect_hyperslab(s, H5S_SELECT_SET, start, NULL, count, NULL);
            w = H5Dread(d, mtype, ms, s, H5P_DEFAULT, out);
            H5Sclose(ms);
        } else if (n > 0) {
            w = H5Dread(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, out);
        }
        rc = w < 0 ? AF_ERR_IO : AF_OK;
    }
    H5Sclose(s);
    H5Dclose(d);
    return rc;
}

af_result_t af_logfile_read_f64(const af_logfile_t *lf, const char *path, double *out, size_t n)
{
    return read_all(lf, path, H5T_NATIVE_DOUBLE, out, n);
}

af_result_t af_logfile_read_i64(const af_logfile_t *lf, const char *path, int64_t *out, size_t n)
{
    return read_all(lf, path, H5T_NATIVE_INT64, out, n);
}

/* ---- /events ------------------------------------------------------------------------------- */

static const char *EVENT_INT_FIELDS[] = {"step",      "block",     "from_device",
                                         "from_unit", "from_slot", "to_device",
                                         "to_unit",   "to_slot",   "detail"};
#define N_EVENT_INT_FIELDS (sizeof EVENT_INT_FIELDS / sizeof EVENT_INT_FIELDS[0])

/* Describes what is wrong with the type of /events in why (empty when it is the event table). */
void af_logfile_event_type_problem(int64_t ftype, char *why, size_t n)
{
    why[0] = '\0';
    if (H5Tget_class(ftype) != H5T_COMPOUND) {
        snprintf(why, n, "expected a compound of the event fields");
        return;
    }
    int idx = H5Tget_member_index(ftype, "kind");
    if (idx < 0) {
        snprintf(why, n, "field 'kind' missing");
        return;
    }
    hid_t mt = H5Tget_member_type(ftype, (unsigned)idx);
    int is_str = H5Tget_class(mt) == H5T_STRING;
    H5Tclose(mt);
    if (!is_str) {
        snprintf(why, n, "field 'kind' is not a string");
        return;
    }
    for (size_t i = 0; i < N_EVENT_INT_FIELDS; ++i) {
        idx = H5Tget_member_index(ftype, EVENT_INT_FIELDS[i]);
        if (idx < 0) {
            snprintf(why, n, "field '%s' missing", EVENT_INT_FIELDS[i]);
            return;
        }
        mt = H5Tget_member_type(ftype, (unsigned)idx);
        int ok =
            H5Tget_class(mt) == H5T_INTEGER && H5Tget_size(mt) == 8 && H5Tget_sign(mt) == H5T_SGN_2;
        H5Tclose(mt);
        if (!ok) {
            snprintf(why, n, "field '%s' is not a 64-bit signed integer", EVENT_INT_FIELDS[i]);
            return;
        }
    }
}

/* The rows of the compound table at path whose type `problem` accepts (it writes an empty
 * reason): all of them, or with `committed` those the commit record counts. AF_ERR_IO when the
 * table is missing, unreadable or of another type or shape. */
static af_result_t table_rows(const af_logfile_t *lf, const char *path,
                              void (*problem)(int64_t, char *, size_t), int committed, int64_t *n)
{
    if (H5Lexists((hid_t)lf->file, path, H5P_DEFAULT) <= 0) {
        return AF_ERR_IO;
    }
    hid_t d = H5Dopen2((hid_t)lf->file, path, H5P_DEFAULT);
    if (d < 0) {
        return AF_ERR_IO;
    }
    hid_t t = H5Dget_type(d);
    hid_t s = H5Dget_space(d);
    char why[128];
    problem(t, why, sizeof why);
    af_result_t rc = AF_ERR_IO;
    if (why[0] == '\0' && H5Sget_simple_extent_ndims(s) == 1) {
        hsize_t dims[1] = {0};
        H5Sget_simple_extent_dims(s, dims, NULL);
        *n = (int64_t)(committed ? counted_rows(lf, path, dims[0]) : dims[0]);
        rc = AF_OK;
    }
    H5Sclose(s);
    H5Tclose(t);
    H5Dclose(d);
    return rc;
}

af_result_t af_logfile_events_count(const af_logfile_t *lf, int64_t *n)
{
    return table_rows(lf, "/events", af_logfile_event_type_problem, 1, n);
}

af_result_t af_logfile_read_events(const af_logfile_t *lf, af_event_row_t *out, size_t n)
{
    int64_t have = 0;
    if (af_logfile_events_count(lf, &have) != AF_OK || (size_t)have != n) {
        return AF_ERR_IO;
    }
    if (n == 0) {
        return AF_OK;
    }
    hid_t d = H5Dopen2((hid_t)lf->file, "/events", H5P_DEFAULT);
    if (d < 0) {
        return AF_ERR_IO;
    }
    hid_t mt = (hid_t)af_log_event_type();
    hsize_t start[1] = {0};
    hsize_t count[1] = {(hsize_t)n};
    hid_t fs = H5Dget_space(d);
    hid_t ms = H5Screate_simple(1, count, NULL);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
    herr_t r = H5Dread(d, mt, ms, fs, H5P_DEFAULT, out);
    H5Sclose(ms);
    H5Sclose(fs);
    H5Tclose(mt);
    H5Dclose(d);
    if (r < 0) {
        return AF_ERR_IO;
    }
    for (size_t i = 0; i < n; ++i) {
        out[i].kind[sizeof out[i].kind - 1] = '\0';
    }
    return AF_OK;
}

/* ---- /interruptions ------------------------------------------------------------------------ */

/* The fields of af_intr_row_t a /interruptions type must have, and time_h, which it may lack
 * (a log written before the field was added). */
static const char *const intr_fields[] = {"step", "sim_hours", "cause", "device", "node", "time_h"};
enum { INTR_TIME_FIELD = 5 };

void af_logfile_intr_type_problem(int64_t ftype, char *why, size_t n)
{
    why[0] = '\0';
    if (H5Tget_class(ftype) != H5T_COMPOUND) {
        snprintf(why, n, "expected a compound of the interruption fields");
        return;
    }
    for (size_t i = 0; i < sizeof intr_fields / sizeof intr_fields[0]; ++i) {
        int idx = H5Tget_member_index(ftype, intr_fields[i]);
        if (idx < 0 && i == INTR_TIME_FIELD) {
            continue; /* optional: af_logfile_read_intr falls back to sim_hours */
        }
        if (idx < 0) {
            snprintf(why, n, "field '%s' missing", intr_fields[i]);
            return;
        }
        hid_t mt = H5Tget_member_type(ftype, (unsigned)idx);
        int real = i == 1 || i == INTR_TIME_FIELD;
        int ok = real ? H5Tget_class(mt) == H5T_FLOAT && H5Tget_size(mt) == 8
                      : H5Tget_class(mt) == H5T_INTEGER && H5Tget_size(mt) == 8 &&
                            H5Tget_sign(mt) == H5T_SGN_2;
        H5Tclose(mt);
        if (!ok) {
            snprintf(why, n, "field '%s' is not a %s", intr_fields[i],
                     real ? "64-bit float" : "64-bit signed integer");
            return;
        }
    }
}

int af_logfile_intr_timed(const af_logfile_t *lf)
{
    if (H5Lexists((hid_t)lf->file, "/interruptions", H5P_DEFAULT) <= 0) {
        return 0;
    }
    hid_t d = H5Dopen2((hid_t)lf->file, "/interruptions", H5P_DEFAULT);
    if (d < 0) {
        return 0;
    }
    hid_t t = H5Dget_type(d);
    int timed = H5Tget_class(t) == H5T_COMPOUND &&
                H5Tget_member_index(t, intr_fields[INTR_TIME_FIELD]) >= 0;
    H5Tclose(t);
    H5Dclose(d);
    return timed;
}

af_result_t af_logfile_intr_count(const af_logfile_t *lf, int64_t *n)
{
    return table_rows(lf, "/interruptions", af_logfile_intr_type_problem, 0, n);
}

af_result_t af_logfile_read_intr(const af_logfile_t *lf, af_intr_row_t *out, size_t n)
{
    int64_t have = 0;
    if (af_logfile_intr_count(lf, &have) != AF_OK || (size_t)have != n) {
        return AF_ERR_IO;
    }
    if (n == 0) {
        return AF_OK;
    }
    hid_t d = H5Dopen2((hid_t)lf->file, "/interruptions", H5P_DEFAULT);
    if (d < 0) {
        return AF_ERR_IO;
    }
    /* A log without time_h is read without it (a compound read by name would leave the field
     * as the buffer had it), and its rows get the step's hours instead. */
    int timed = af_logfile_intr_timed(lf);
    hid_t mt = (hid_t)af_log_intr_type();
    if (!timed) {
        H5Tclose(mt);
        mt = H5Tcreate(H5T_COMPOUND, sizeof(af_intr_row_t));
        H5Tinsert(mt, "step", HOFFSET(af_intr_row_t, step), H5T_NATIVE_INT64);
        H5Tinsert(mt, "sim_hours", HOFFSET(af_intr_row_t, sim_hours), H5T_NATIVE_DOUBLE);
        H5Tinsert(mt, "cause", HOFFSET(af_intr_row_t, cause), H5T_NATIVE_INT64);
        H5Tinsert(mt, "device", HOFFSET(af_intr_row_t, device), H5T_NATIVE_INT64);
        H5Tinsert(mt, "node", HOFFSET(af_intr_row_t, node), H5T_NATIVE_INT64);
    }
    herr_t r = H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, out);
    H5Tclose(mt);
    H5Dclose(d);
    for (size_t i = 0; r >= 0 && !timed && i < n; ++i) {
        out[i].time_h = out[i].sim_hours;
    }
    return r < 0 ? AF_ERR_IO : AF_OK;
}
