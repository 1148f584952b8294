#include "logread.h"

#include <errno.h>
#include <hdf5.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../sim/log_schema.h"

static const char *COLS[] = {
#define AF_X(name, type, doc) #name,
    AF_STEP_COLUMNS(AF_X)
#undef AF_X
};
static const int COL_INT[] = {
#define AF_X(name, type, doc) AF_ISINT_##type,
    AF_STEP_COLUMNS(AF_X)
#undef AF_X
};
static const char *PHASES[] = {
#define AF_X(name, doc) #name,
    AF_PHASES(AF_X)
#undef AF_X
};

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
        snprintf(err, errlen, "%s: HDF5 cannot open it (damaged or truncated)", path);
        return AF_ERR_USAGE;
    }
    lf->file = file;
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
    return AF_OK;
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
    if (H5Tget_class(t) == H5T_STRING) {
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
        dims[0] = r > 0 ? (int64_t)hd[0] : 1;
        dims[1] = r > 1 ? (int64_t)hd[1] : 1;
        rc = AF_OK;
    }
    H5Sclose(s);
    H5Dclose(d);
    return rc;
}

static af_result_t read_all(const af_logfile_t *lf, const char *path, hid_t mtype, void *out,
                            size_t n)
{
    hid_t d = H5Dopen2((hid_t)lf->file, path, H5P_DEFAULT);
    if (d < 0) {
        return AF_ERR_IO;
    }
    hid_t s = H5Dget_space(d);
    hssize_t np = H5Sget_simple_extent_npoints(s);
    af_result_t rc = AF_ERR_IO;
    if (np >= 0 && (size_t)np == n &&
        (n == 0 || H5Dread(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) >= 0)) {
        rc = AF_OK;
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

static int dataset_class_is(const af_logfile_t *lf, const char *path, H5T_class_t cls)
{
    hid_t d = H5Dopen2((hid_t)lf->file, path, H5P_DEFAULT);
    if (d < 0) {
        return 0;
    }
    hid_t t = H5Dget_type(d);
    int ok = H5Tget_class(t) == cls && H5Tget_size(t) == 8;
    H5Tclose(t);
    H5Dclose(d);
    return ok;
}

#define VIOLATION(...)                                                                             \
    do {                                                                                           \
        fprintf(out, __VA_ARGS__);                                                                 \
        fputc('\n', out);                                                                          \
        bad++;                                                                                     \
    } while (0)

int af_logfile_check(const af_logfile_t *lf, FILE *out)
{
    int bad = 0;
    const char *root_str[] = {"agefence_version", "git_revision",   "config",    "scenario",
                              "compute_backend",  "fabric_backend", "hostnames", "start_time"};
    const char *root_int[] = {"schema_version",   "seed",   "ranks",     "devices",
                              "units_per_device", "blocks", "block_len", "capacity",
                              "steps_planned"};
    char sbuf[256];
    int64_t v = 0;
    for (size_t i = 0; i < sizeof root_str / sizeof root_str[0]; ++i) {
        if (af_logfile_attr_str(lf, "/", root_str[i], sbuf, sizeof sbuf) != AF_OK) {
            VIOLATION("/@%s: missing or not a string", root_str[i]);
        }
    }
    int64_t ranks = 0;
    int64_t devices = 0;
    int64_t units = 0;
    int64_t blocks = 0;
    int64_t block_len = 0;
    for (size_t i = 0; i < sizeof root_int / sizeof root_int[0]; ++i) {
        if (af_logfile_attr_i64(lf, "/", root_int[i], &v) != AF_OK) {
            VIOLATION("/@%s: missing or not an integer", root_int[i]);
        } else if (v < 0) {
            VIOLATION("/@%s: negative (%lld)", root_int[i], (long long)v);
        }
    }
    af_logfile_attr_i64(lf, "/", "ranks", &ranks);
    af_logfile_attr_i64(lf, "/", "devices", &devices);
    af_logfile_attr_i64(lf, "/", "units_per_device", &units);
    af_logfile_attr_i64(lf, "/", "blocks", &blocks);
    af_logfile_attr_i64(lf, "/", "block_len", &block_len);
    if (ranks < 1) {
        VIOLATION("/@ranks: expected at least 1, found %lld", (long long)ranks);
    }
    const char *groups[] = {"/steps", "/ranks", "/calibration", "/final"};
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; ++i) {
        if (H5Lexists((hid_t)lf->file, groups[i], H5P_DEFAULT) <= 0) {
            VIOLATION("%s: missing group", groups[i]);
        }
    }
    /* /steps: every column, 1-D, of its type, all the same length. */
    int64_t nrows = -1;
    char path[128];
    for (int c = 0; c < AF_NCOLUMNS; ++c) {
        int rank = 0;
        int64_t dims[2];
        snprintf(path, sizeof path, "/steps/%s", COLS[c]);
        if (af_logfile_shape(lf, path, &rank, dims) != AF_OK) {
            VIOLATION("%s: missing dataset", path);
            continue;
        }
        if (rank != 1) {
            VIOLATION("%s: expected 1-D, found %d-D", path, rank);
            continue;
        }
        if (!dataset_class_is(lf, path, COL_INT[c] ? H5T_INTEGER : H5T_FLOAT)) {
            VIOLATION("%s: expected %s", path, COL_INT[c] ? "64-bit integers" : "64-bit floats");
        }
        if (nrows < 0) {
            nrows = dims[0];
        } else if (dims[0] != nrows) {
            VIOLATION("%s: %lld rows, /steps/%s has %lld", path, (long long)dims[0], COLS[0],
                      (long long)nrows);
        }
    }
    if (nrows < 0) {
        nrows = 0;
    }
    for (int p = 0; p < AF_NPHASES; ++p) {
        int rank = 0;
        int64_t dims[2];
        snprintf(path, sizeof path, "/ranks/%s", PHASES[p]);
        if (af_logfile_shape(lf, path, &rank, dims) != AF_OK) {
            VIOLATION("%s: missing dataset", path);
        } else if (rank != 2 || dims[0] != nrows || dims[1] != ranks) {
            VIOLATION("%s: expected %lld x %lld (steps x ranks), found %lld x %lld", path,
                      (long long)nrows, (long long)ranks, (long long)dims[0],
                      (long long)(rank > 1 ? dims[1] : 1));
        }
    }
    /* /final */
    char reason[64] = "";
    int64_t completed = -1;
    if (af_logfile_attr_str(lf, "/final", "exit_reason", reason, sizeof reason) != AF_OK) {
        VIOLATION("/final@exit_reason: missing (the run did not finish: killed before its end?)");
    }
    if (af_logfile_attr_i64(lf, "/final", "steps_completed", &completed) != AF_OK) {
        VIOLATION("/final@steps_completed: missing");
    } else if (completed != nrows) {
        VIOLATION("/final@steps_completed: %lld, but /steps holds %lld rows", (long long)completed,
                  (long long)nrows);
    }
    if (strcmp(reason, "error") != 0 && reason[0] != '\0') {
        int64_t be = -1;
        if (af_logfile_attr_i64(lf, "/final", "bitwise_equal", &be) != AF_OK ||
            (be != 0 && be != 1)) {
            VIOLATION("/final@bitwise_equal: missing or not 0/1");
        }
        const char *fs[] = {"state_checksum", "reference_checksum"};
        for (int i = 0; i < 2; ++i) {
            if (af_logfile_attr_str(lf, "/final", fs[i], sbuf, sizeof sbuf) != AF_OK) {
                VIOLATION("/final@%s: missing", fs[i]);
            }
        }
        int rank = 0;
        int64_t dims[2];
        if (af_logfile_shape(lf, "/final/state", &rank, dims) != AF_OK) {
            VIOLATION("/final/state: missing dataset");
        } else if (rank != 1 || dims[0] != blocks * block_len) {
            VIOLATION("/final/state: expected %lld cells, found %lld",
                      (long long)(blocks * block_len), (long long)dims[0]);
        }
    }
    /* Row contents: contiguous steps and consistent counters. */
    if (nrows > 0 && bad == 0) {
        int64_t *a = malloc(sizeof(int64_t) * (size_t)nrows);
        int64_t *b = malloc(sizeof(int64_t) * (size_t)nrows);
        double *f = malloc(sizeof(double) * (size_t)nrows);
        if (a == NULL || b == NULL || f == NULL) {
            VIOLATION("%s: out of memory reading %lld rows", lf->path, (long long)nrows);
        } else {
            af_logfile_read_i64(lf, "/steps/step", a, (size_t)nrows);
            for (int64_t i = 0; i < nrows; ++i) {
                if (a[i] != i + 1) {
                    VIOLATION("/steps/step[%lld]: %lld, expected %lld (steps must be contiguous "
                              "from 1)",
                              (long long)i, (long long)a[i], (long long)(i + 1));
                    break;
                }
            }
            af_logfile_read_i64(lf, "/steps/corrupt_injected", a, (size_t)nrows);
            af_logfile_read_i64(lf, "/steps/corrupt_detected", b, (size_t)nrows);
            for (int64_t i = 0; i < nrows; ++i) {
                if (b[i] > a[i]) {
                    VIOLATION("/steps/corrupt_detected[%lld]: %lld exceeds corrupt_injected %lld",
                              (long long)i, (long long)b[i], (long long)a[i]);
                    break;
                }
            }
            for (int c = 0; c < AF_NCOLUMNS; ++c) {
                if (!COL_INT[c]) {
                    continue;
                }
                snprintf(path, sizeof path, "/steps/%s", COLS[c]);
                af_logfile_read_i64(lf, path, a, (size_t)nrows);
                for (int64_t i = 0; i < nrows; ++i) {
                    if (a[i] < 0) {
                        VIOLATION("%s[%lld]: negative (%lld)", path, (long long)i, (long long)a[i]);
                        break;
                    }
                }
            }
            af_logfile_read_f64(lf, "/steps/blackout_frac", f, (size_t)nrows);
            for (int64_t i = 0; i < nrows; ++i) {
                if (!(f[i] >= 0.0 && f[i] <= 1.0)) {
                    VIOLATION("/steps/blackout_frac[%lld]: %g outside [0, 1]", (long long)i, f[i]);
                    break;
                }
            }
            int64_t *h = a;
            int64_t *fa = b;
            af_logfile_read_i64(lf, "/steps/healthy_units", h, (size_t)nrows);
            af_logfile_read_i64(lf, "/steps/fading_units", fa, (size_t)nrows);
            int64_t *dd = malloc(sizeof(int64_t) * (size_t)nrows);
            if (dd != NULL) {
                af_logfile_read_i64(lf, "/steps/dead_units", dd, (size_t)nrows);
                for (int64_t i = 0; i < nrows; ++i) {
                    if (h[i] + fa[i] + dd[i] != devices * units) {
                        VIOLATION("/steps[%lld]: healthy + fading + dead = %lld, expected %lld "
                                  "units",
                                  (long long)i, (long long)(h[i] + fa[i] + dd[i]),
                                  (long long)(devices * units));
                        break;
                    }
                }
                free(dd);
            }
        }
        free(a);
        free(b);
        free(f);
    }
    return bad;
}
