/* libFuzzer harness: the log reader behind agefence-report, on logs built from the fuzz input.
 *
 * Why a builder and not raw bytes: libhdf5 1.10 is not robust against damaged files (it crashes
 * and loops on some of them, and those bugs are HDF5's, not agefence's), and a mutated HDF5 byte
 * stream rarely stays a readable file, so raw-byte fuzzing spends its time in HDF5's format
 * parsing and seldom reaches agefence's checks. This harness instead reads the input as a list
 * of decisions and writes, through the HDF5 API, a well-formed HDF5 file laid out like an
 * agefence log (sim/io/log.c, README "The log") in which every part may be absent, of another kind
 * (a group for a dataset), of another type (32-bit, unsigned, float for integer, string, a
 * compound missing fields), of another rank or length, extendible or not, and filled with
 * consistent values, hostile ones (NaN, Inf, INT64_MIN, huge counts) or raw bytes. HDF5 only
 * ever reads files that it wrote itself, so every finding is in agefence's code. The file then
 * goes through af_fuzz_read_log (everything agefence-report does). fuzz_log_raw.c covers
 * damaged files at the byte level, with HDF5's own crashes told apart (scripts/fuzz.sh).
 *
 * Every decision is one input byte and byte 0 means "as the writer would": the empty input
 * builds a valid log (2 ranks, 2 devices x 2 units, 5 steps), so mutations start from files
 * that pass the outer checks and reach the deep ones. Sizes are bounded (at most 32 rows, 8 ranks,
 * 80 units, 200 cells), so one run takes milliseconds. The byte layout is the format of the
 * committed corpus (fuzz/corpus/log) and regressions (fuzz/regressions/log): change it only by
 * appending decisions, or those files stop meaning what they meant. */
#include <float.h>
#include <hdf5.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log_schema.h"
#include "fuzz_common.h"

typedef struct fdp {
    const uint8_t *p;
    size_t n;
} fdp_t;

/* The next decision byte (0 once the input is used up: "as the writer would"). */
static unsigned take(fdp_t *f)
{
    if (f->n == 0) {
        return 0;
    }
    f->n--;
    return *f->p++;
}

static uint64_t take_u64(fdp_t *f)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) {
        v = v << 8 | take(f);
    }
    return v;
}

static int64_t fz_i64(fdp_t *f, int64_t canon)
{
    static const int64_t tab[] = {
        0,  1,    -1,        2,         3,         4,         7,         8,
        64, 1000, INT32_MAX, INT32_MIN, 1LL << 40, INT64_MAX, INT64_MIN, INT64_MAX - 1};
    enum { NTAB = sizeof tab / sizeof tab[0] };
    unsigned c = take(f);
    if (c == 0) {
        return canon;
    }
    if (c <= NTAB) {
        return tab[c - 1];
    }
    if (c == 255) {
        return (int64_t)take_u64(f);
    }
    /* a neighbour of the consistent value, without overflow */
    int64_t d = (int64_t)(c & 7) - 4;
    if ((d > 0 && canon > INT64_MAX - d) || (d < 0 && canon < INT64_MIN - d)) {
        return canon;
    }
    return canon + d;
}

static double fz_f64(fdp_t *f, double canon)
{
    static const double tab[] = {0.0, -0.0,     1.0,       -1.0,    0.5,      0.85,   0.95,   1.5,
                                 NAN, INFINITY, -INFINITY, DBL_MAX, -DBL_MAX, 1e-310, 1e-300, 1e15};
    enum { NTAB = sizeof tab / sizeof tab[0] };
    unsigned c = take(f);
    if (c == 0) {
        return canon;
    }
    if (c <= NTAB) {
        return tab[c - 1];
    }
    if (c == 255) {
        uint64_t u = take_u64(f);
        double d;
        memcpy(&d, &u, sizeof d);
        return d;
    }
    return canon * (double)(c % 5) - (double)(c % 3);
}

/* A short string: the consistent one, or up to 40 bytes of the input (any bytes but NUL). */
static void fz_str(fdp_t *f, const char *canon, char *out, size_t n)
{
    unsigned c = take(f);
    if (c == 0) {
        snprintf(out, n, "%s", canon);
        return;
    }
    size_t len = c % 41;
    if (len >= n) {
        len = n - 1;
    }
    for (size_t i = 0; i < len; ++i) {
        unsigned b = take(f);
        out[i] = (char)(b ? b : 'x');
    }
    out[len] = '\0';
}

/* ---- attributes ---- */

enum { K_I64, K_F64, K_STR };

/* How an attribute is written. 0: as the writer does. */
enum {
    A_WRITER,
    A_ABSENT,
    A_I32,
    A_U64,
    A_F32,
    A_OTHER_KIND, /* a float for an integer, an integer for a float or a string */
    A_FIXED_STR,
    A_VLEN_STR,
    A_ARRAY2, /* two values instead of one */
    A_NULL_SPACE,
    A_NMODES
};

static void write_attr(hid_t loc, const char *name, hid_t ftype, hid_t space, hid_t mtype,
                       const void *buf)
{
    hid_t a = H5Acreate2(loc, name, ftype, space, H5P_DEFAULT, H5P_DEFAULT);
    if (a >= 0) {
        if (buf != NULL) {
            H5Awrite(a, mtype, buf);
        }
        H5Aclose(a);
    }
}

static void put_str_attr(hid_t loc, const char *name, const char *v, int vlen, hsize_t n,
                         hid_t space)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    if (vlen) {
        H5Tset_size(t, H5T_VARIABLE);
        const char *ptrs[2] = {v, v};
        write_attr(loc, name, t, space, t, ptrs);
    } else {
        size_t len = strlen(v) + 1;
        H5Tset_size(t, len);
        char *buf = calloc(n ? n : 1, len);
        if (buf != NULL) {
            for (hsize_t i = 0; i < n; ++i) {
                memcpy(buf + i * len, v, len);
            }
            write_attr(loc, name, t, space, t, buf);
        }
        free(buf);
    }
    H5Tclose(t);
}

/* An attribute of kind k whose consistent value is ival, fval or sval. */
static void put_attr(fdp_t *f, hid_t loc, const char *name, int k, int64_t ival, double fval,
                     const char *sval)
{
    unsigned mode = take(f) % A_NMODES;
    if (mode == A_ABSENT) {
        return;
    }
    int64_t iv[2];
    double fv[2];
    char sv[48];
    iv[0] = iv[1] = fz_i64(f, ival);
    fv[0] = fv[1] = fz_f64(f, fval);
    fz_str(f, sval != NULL ? sval : "", sv, sizeof sv);
    hsize_t two = 2;
    hid_t space = mode == A_NULL_SPACE ? H5Screate(H5S_NULL)
                  : mode == A_ARRAY2   ? H5Screate_simple(1, &two, NULL)
                                       : H5Screate(H5S_SCALAR);
    hsize_t n = mode == A_ARRAY2 ? 2 : 1;
    const void *ibuf = mode == A_NULL_SPACE ? NULL : iv;
    const void *fbuf = mode == A_NULL_SPACE ? NULL : fv;
    if (mode == A_FIXED_STR || mode == A_VLEN_STR ||
        (k == K_STR && mode != A_OTHER_KIND && mode != A_I32 && mode != A_U64 && mode != A_F32)) {
        put_str_attr(loc, name, sv, mode == A_VLEN_STR, n, space);
    } else if (mode == A_I32) {
        write_attr(loc, name, H5T_STD_I32LE, space, H5T_NATIVE_INT64, ibuf);
    } else if (mode == A_U64) {
        write_attr(loc, name, H5T_STD_U64LE, space, H5T_NATIVE_INT64, ibuf);
    } else if (mode == A_F32) {
        write_attr(loc, name, H5T_IEEE_F32LE, space, H5T_NATIVE_DOUBLE, fbuf);
    } else if ((k == K_I64) == (mode != A_OTHER_KIND)) {
        write_attr(loc, name, H5T_STD_I64LE, space, H5T_NATIVE_INT64, ibuf);
    } else {
        write_attr(loc, name, H5T_IEEE_F64LE, space, H5T_NATIVE_DOUBLE, fbuf);
    }
    H5Sclose(space);
}

static void put_i64(fdp_t *f, hid_t loc, const char *name, int64_t v)
{
    put_attr(f, loc, name, K_I64, v, (double)v, NULL);
}

static void put_f64(fdp_t *f, hid_t loc, const char *name, double v)
{
    put_attr(f, loc, name, K_F64, (int64_t)0, v, NULL);
}

static void put_str(fdp_t *f, hid_t loc, const char *name, const char *v)
{
    put_attr(f, loc, name, K_STR, 0, 0.0, v);
}

/* ---- groups and datasets ---- */

/* A group as the writer makes it (0), absent (1), or a dataset in its place (2). Returns the
 * open group, or -1. */
static hid_t put_group(fdp_t *f, hid_t file, const char *path)
{
    unsigned mode = take(f) % 8;
    if (mode == 1) {
        return -1;
    }
    if (mode == 2) {
        hid_t s = H5Screate(H5S_SCALAR);
        hid_t d = H5Dcreate2(file, path, H5T_STD_I64LE, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (d >= 0) {
            H5Dclose(d);
        }
        H5Sclose(s);
        return -1;
    }
    return H5Gcreate2(file, path, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
}

/* How a dataset is written. 0: as the writer does. */
enum {
    D_WRITER,
    D_ABSENT,
    D_GROUP, /* a group in its place */
    D_I32,   /* another type */
    D_U64,
    D_F32,
    D_OTHER,  /* float for integer and back */
    D_STRING, /* fixed-length strings */
    D_RANK,   /* one axis more or less */
    D_LENGTH, /* another length along axis 0 */
    D_FIXED,  /* contiguous, not extendible */
    D_NMODES
};

/* Writes a dataset of rows x cols values (cols 0: 1-D) of integers (is_int) or floats. The
 * values are canon[] (n = rows x cols of them), each possibly replaced by the input. */
static void put_dataset(fdp_t *f, hid_t loc, const char *name, int is_int, hsize_t rows,
                        hsize_t cols, const double *canon)
{
    unsigned mode = take(f) % D_NMODES;
    unsigned vmode = take(f) % 4; /* 0 consistent, 1 every value fuzzed, 2 one value, 3 const */
    if (mode == D_ABSENT) {
        return;
    }
    if (mode == D_GROUP) {
        hid_t g = H5Gcreate2(loc, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (g >= 0) {
            H5Gclose(g);
        }
        return;
    }
    int rank = cols > 0 ? 2 : 1;
    hsize_t dims[3] = {rows, cols > 0 ? cols : 1, 2};
    if (mode == D_RANK) {
        rank = take(f) % 2 ? rank + 1 : rank - 1; /* 0-D (scalar), 2-D or 3-D */
    }
    if (mode == D_LENGTH) {
        dims[0] = take(f) % 40;
    }
    hsize_t n = 1;
    for (int r = 0; r < rank; ++r) {
        n *= dims[r];
    }
    double *fv = malloc(sizeof(double) * (n ? n : 1));
    int64_t *iv = malloc(sizeof(int64_t) * (n ? n : 1));
    char(*sv)[8] = malloc(sizeof *sv * (n ? n : 1));
    if (fv == NULL || iv == NULL || sv == NULL) {
        free(fv);
        free(iv);
        free(sv);
        return;
    }
    size_t one = n ? take(f) % n : 0;
    double cval = fz_f64(f, 0.0);
    int64_t cint = fz_i64(f, 0);
    size_t ncanon = (size_t)(rows * (cols > 0 ? cols : 1));
    for (size_t i = 0; i < n; ++i) {
        double c = i < ncanon ? canon[i] : 0.0;
        if (vmode == 1 || (vmode == 2 && i == one)) {
            fv[i] = fz_f64(f, c);
            iv[i] = fz_i64(f, (int64_t)c);
        } else if (vmode == 3) {
            fv[i] = cval;
            iv[i] = cint;
        } else {
            fv[i] = c;
            iv[i] = (int64_t)c;
        }
        snprintf(sv[i], sizeof sv[i], "%lld", (long long)iv[i]);
    }
    hid_t ftype = is_int ? H5T_STD_I64LE : H5T_IEEE_F64LE;
    hid_t str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, sizeof sv[0]);
    switch (mode) {
    case D_I32:
        ftype = H5T_STD_I32LE;
        break;
    case D_U64:
        ftype = H5T_STD_U64LE;
        break;
    case D_F32:
        ftype = H5T_IEEE_F32LE;
        break;
    case D_OTHER:
        ftype = is_int ? H5T_IEEE_F64LE : H5T_STD_I64LE;
        break;
    case D_STRING:
        ftype = str;
        break;
    default:
        break;
    }
    hid_t mtype = ftype == str ? str
                  : (ftype == H5T_STD_I64LE || ftype == H5T_STD_I32LE || ftype == H5T_STD_U64LE)
                      ? H5T_NATIVE_INT64
                      : H5T_NATIVE_DOUBLE;
    const void *buf = mtype == str                ? (const void *)sv
                      : mtype == H5T_NATIVE_INT64 ? (const void *)iv
                                                  : (const void *)fv;
    hsize_t maxd[3] = {H5S_UNLIMITED, dims[1], dims[2]};
    hid_t space;
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (rank == 0) {
        space = H5Screate(H5S_SCALAR);
    } else if (mode == D_FIXED) {
        space = H5Screate_simple(rank, dims, NULL);
    } else {
        space = H5Screate_simple(rank, dims, maxd);
        hsize_t chunk[3] = {dims[0] > 0 ? dims[0] : 1, dims[1] > 0 ? dims[1] : 1,
                            dims[2] > 0 ? dims[2] : 1};
        H5Pset_chunk(dcpl, rank, chunk);
    }
    hid_t d = H5Dcreate2(loc, name, ftype, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (d >= 0) {
        if (n > 0) {
            H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
        }
        H5Dclose(d);
    }
    H5Pclose(dcpl);
    H5Sclose(space);
    H5Tclose(str);
    free(fv);
    free(iv);
    free(sv);
}

/* ---- the log ---- */

typedef struct shape {
    int64_t rows, ranks, devices, upd, units, blocks, block_len, capacity, nevents;
    double max_blackout;
} shape_t;

static int64_t next_pow2(double need)
{
    int64_t c = 1;
    while ((double)c < need && c < (1LL << 40)) {
        c *= 2;
    }
    return c;
}

static void put_root(fdp_t *f, hid_t file, const shape_t *s)
{
    char hosts[8 * 24] = "";
    for (int64_t r = 0; r < s->ranks; ++r) {
        char h[24];
        snprintf(h, sizeof h, "%sh%lld", r ? "," : "", (long long)r);
        strcat(hosts, h);
    }
    put_i64(f, file, "schema_version", AF_SCHEMA_VERSION);
    put_str(f, file, "agefence_version", "0.1.0");
    put_str(f, file, "git_revision", "0123abc");
    put_str(f, file, "config", "[scenario]\nname = fuzz\n");
    put_str(f, file, "scenario", "fuzz");
    put_i64(f, file, "seed", 7);
    put_i64(f, file, "ranks", s->ranks);
    put_i64(f, file, "devices", s->devices);
    put_i64(f, file, "units_per_device", s->upd);
    put_i64(f, file, "blocks", s->blocks);
    put_i64(f, file, "block_len", s->block_len);
    put_i64(f, file, "capacity", s->capacity);
    put_i64(f, file, "steps_planned", s->rows > 0 ? s->rows : 1);
    put_f64(f, file, "max_blackout", s->max_blackout);
    put_f64(f, file, "state_bytes_static",
            (double)s->units * (double)s->capacity * 2.0 * (double)s->block_len * 8.0);
    put_f64(f, file, "state_bytes_fault_free",
            (double)s->blocks * 2.0 * (double)s->block_len * 8.0);
    put_str(f, file, "compute_backend", "cpu");
    put_str(f, file, "fabric_backend", "mpi");
    put_str(f, file, "hostnames", hosts);
    put_str(f, file, "start_time", "2026-01-01T00:00:00Z");
    put_str(f, file, "mpi_version", "Open MPI");
    put_str(f, file, "backend_choice", "cpu: asked for");
    put_str(f, file, "launcher", "mpirun");
    put_i64(f, file, "slurm_ntasks", -1);
}

static void put_steps(fdp_t *f, hid_t file, const shape_t *s, double *buf)
{
    /* The commit record: the rows, no event (the events' own count is fuzzed too). */
    double committed[2] = {(double)s->rows, 0.0};
    put_dataset(f, file, "committed", 1, 2, 0, committed);
    hid_t g = put_group(f, file, "/steps");
    if (g < 0) {
        return;
    }
    for (int k = 0; k < AF_NCOLUMNS; ++k) {
        for (int64_t i = 0; i < s->rows; ++i) {
            double v = 0.0;
            switch (k) {
            case AF_COL_step:
            case AF_COL_state_step:
                v = (double)(i + 1);
                break;
            case AF_COL_sim_hours:
                v = 30.0 * (double)(i + 1);
                break;
            case AF_COL_mass:
                v = 0.5;
                break;
            case AF_COL_energy:
                v = 0.25;
                break;
            case AF_COL_healthy_units:
                v = (double)s->units;
                break;
            default:
                break;
            }
            buf[i] = v;
        }
        put_dataset(f, g, af_step_column_names[k], af_step_column_is_int[k], (hsize_t)s->rows, 0,
                    buf);
        hid_t d = H5Oexists_by_name(g, af_step_column_names[k], H5P_DEFAULT) > 0
                      ? H5Oopen(g, af_step_column_names[k], H5P_DEFAULT)
                      : -1;
        if (d >= 0) {
            put_str(f, d, "doc", af_step_column_docs[k]);
            H5Oclose(d);
        }
    }
    if (take(f) % 8 == 1) {
        put_dataset(f, g, "extra", 1, 1, 0, buf); /* not in the schema */
    }
    H5Gclose(g);
}

static void put_ranks(fdp_t *f, hid_t file, const shape_t *s, double *buf)
{
    hid_t g = put_group(f, file, "/ranks");
    if (g < 0) {
        return;
    }
    for (int p = 0; p < AF_NPHASES; ++p) {
        for (int64_t i = 0; i < s->rows * s->ranks; ++i) {
            buf[i] = (double)(p + 1) * 10.0 + (double)(i % 7);
        }
        put_dataset(f, g, af_phase_names[p], 0, (hsize_t)s->rows, (hsize_t)s->ranks, buf);
        hid_t d = H5Oexists_by_name(g, af_phase_names[p], H5P_DEFAULT) > 0
                      ? H5Oopen(g, af_phase_names[p], H5P_DEFAULT)
                      : -1;
        if (d >= 0) {
            put_str(f, d, "doc", af_phase_docs[p]);
            put_str(f, d, "units", "microseconds");
            H5Oclose(d);
        }
    }
    H5Gclose(g);
}

static void put_calibration(fdp_t *f, hid_t file, double *buf)
{
    hid_t g = put_group(f, file, "/calibration");
    if (g < 0) {
        return;
    }
    put_i64(f, g, "warmup_iterations", 10);
    static const char *const names[] = {"timer_floor_us", "allreduce8_us"};
    for (int i = 0; i < 2; ++i) {
        int64_t n = 1 + take(f) % 9;
        for (int64_t k = 0; k < n; ++k) {
            buf[k] = 1.0 + (double)k;
        }
        put_dataset(f, g, names[i], 0, (hsize_t)n, 0, buf);
        hid_t d = H5Oexists_by_name(g, names[i], H5P_DEFAULT) > 0
                      ? H5Oopen(g, names[i], H5P_DEFAULT)
                      : -1;
        if (d >= 0) {
            /* samples 1..n: percentile p is 1 + p/100 (n - 1) */
            put_f64(f, d, "min", 1.0);
            put_f64(f, d, "p10", 1.0 + 0.1 * (double)(n - 1));
            put_f64(f, d, "p50", 1.0 + 0.5 * (double)(n - 1));
            put_f64(f, d, "p90", 1.0 + 0.9 * (double)(n - 1));
            put_str(f, d, "units", "microseconds");
            H5Oclose(d);
        }
    }
    H5Gclose(g);
}

static const char *const EVENT_FIELDS[] = {"step",      "block",     "from_device",
                                           "from_unit", "from_slot", "to_device",
                                           "to_unit",   "to_slot",   "detail"};
static const char *const EVENT_KINDS[] = {"fade",  "death",    "sudden",  "drain",    "restore",
                                          "retry", "rollback", "replica", "capacity", "other"};

static void put_events(fdp_t *f, hid_t file, const shape_t *s)
{
    unsigned mode = take(f) % 10;
    /* 0 the writer's table, 1 absent, 2 a group, 3 not a compound, 4 a field missing, 5 a field
     * of 32 bits, 6 kind not a string, 7 kind a variable-length string, 8 2-D, 9 fixed size */
    if (mode == 1) {
        return;
    }
    if (mode == 2) {
        hid_t g = H5Gcreate2(file, "/events", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (g >= 0) {
            H5Gclose(g);
        }
        return;
    }
    int64_t n = s->nevents;
    af_event_row_t *ev = calloc((size_t)(n ? n : 1), sizeof *ev);
    if (ev == NULL) {
        return;
    }
    for (int64_t i = 0; i < n; ++i) {
        af_event_row_t *e = &ev[i];
        int64_t *fields[] = {&e->step,      &e->block,     &e->from_device,
                             &e->from_unit, &e->from_slot, &e->to_device,
                             &e->to_unit,   &e->to_slot,   &e->detail};
        /* consistent: replica refreshes, spread over the logged steps in order */
        int64_t canon[] = {
            s->rows > 0 ? 1 + i * s->rows / n : 1, i % s->blocks, -1, -1, -1, -1, -1, -1, 0};
        for (int k = 0; k < 9; ++k) {
            *fields[k] = fz_i64(f, canon[k]);
        }
        unsigned kc = take(f);
        if (kc < 200) {
            snprintf(e->kind, sizeof e->kind, "%s", EVENT_KINDS[kc ? (kc - 1) % 10 : 7]);
        } else {
            fz_str(f, "replica", e->kind, sizeof e->kind);
        }
    }
    hid_t mt = (hid_t)af_log_event_type(); /* the writer's type, in memory and in the file */
    hid_t ft = -1;
    if (mode == 3) {
        ft = H5Tcopy(H5T_STD_I64LE);
    } else if (mode >= 4 && mode <= 7) {
        /* the writer's fields, one of them changed or left out */
        unsigned which = take(f) % 10; /* 0..8 an integer field, 9 kind */
        hid_t str = H5Tcopy(H5T_C_S1);
        H5Tset_size(str, mode == 7 ? H5T_VARIABLE : sizeof ev[0].kind);
        ft = H5Tcreate(H5T_COMPOUND, sizeof(af_event_row_t) + 16);
        size_t off = 0;
        for (int k = 0; k < 10; ++k) {
            const char *name = k < 9 ? EVENT_FIELDS[k] : "kind";
            int changed = (unsigned)k == which;
            if (changed && mode == 4) {
                continue;
            }
            hid_t t = k == 9 ? str : H5T_STD_I64LE;
            if (changed && mode == 5) {
                t = H5T_STD_I32LE;
            }
            if (changed && mode == 6) {
                t = k == 9 ? H5T_STD_I64LE : str;
            }
            H5Tinsert(ft, name, off, t);
            off += H5Tget_size(t);
        }
        H5Tset_size(ft, off);
        H5Tclose(str);
    } else {
        ft = H5Tcopy(mt);
    }
    hsize_t dims[2] = {(hsize_t)n, 2};
    hsize_t maxd[2] = {H5S_UNLIMITED, 2};
    int rank = mode == 8 ? 2 : 1;
    hid_t space = H5Screate_simple(rank, dims, mode == 9 ? NULL : maxd);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (mode != 9) {
        hsize_t chunk[2] = {n > 0 ? (hsize_t)n : 1, 2};
        H5Pset_chunk(dcpl, rank, chunk);
    }
    hid_t d = H5Dcreate2(file, "/events", ft, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (d >= 0) {
        /* Rows are written through the writer's memory type where HDF5 can convert them. */
        if (n > 0 && rank == 1 && mode != 3 && mode != 6 && mode != 7) {
            H5Dwrite(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, ev);
        }
        H5Dclose(d);
    }
    H5Pclose(dcpl);
    H5Sclose(space);
    H5Tclose(ft);
    H5Tclose(mt);
    free(ev);
}

/* /interruptions (schema 5), the last decisions of an input: 0 the writer's table (empty, as
 * the consistent events give none) with its cause names, 1 absent, 2 a group, 3 not a compound,
 * 4 a field missing, 5 up to 16 rows of fuzzed values, 6 2-D, 7 no cause_names. */
static void put_interruptions(fdp_t *f, hid_t file, const shape_t *s)
{
    unsigned mode = take(f) % 8;
    if (mode == 1) {
        return;
    }
    if (mode == 2) {
        hid_t g = H5Gcreate2(file, "/interruptions", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (g >= 0) {
            H5Gclose(g);
        }
        return;
    }
    int64_t n = mode == 5 ? take(f) % 17 : 0;
    af_intr_row_t rows[16];
    for (int64_t i = 0; i < n; ++i) {
        rows[i].step = fz_i64(f, s->rows > 0 ? 1 + i * s->rows / n : 1);
        rows[i].sim_hours = fz_f64(f, 0.0);
        rows[i].cause = fz_i64(f, AF_INTR_software);
        rows[i].device = fz_i64(f, -1);
        rows[i].node = fz_i64(f, -1);
        rows[i].time_h =
            rows[i].sim_hours; /* no decision of its own: the corpus keeps its meaning */
    }
    hid_t mt = (hid_t)af_log_intr_type();
    hid_t ft = -1;
    if (mode == 3) {
        ft = H5Tcopy(H5T_STD_I64LE);
    } else if (mode == 4) {
        ft = H5Tcreate(H5T_COMPOUND, 32);
        H5Tinsert(ft, "step", 0, H5T_STD_I64LE);
        H5Tinsert(ft, "sim_hours", 8, H5T_IEEE_F64LE);
        H5Tinsert(ft, "cause", 16, H5T_STD_I64LE);
        H5Tinsert(ft, "device", 24, H5T_STD_I64LE);
    } else {
        ft = H5Tcopy(mt);
    }
    hsize_t dims[2] = {(hsize_t)n, 2};
    hsize_t maxd[2] = {H5S_UNLIMITED, 2};
    int rank = mode == 6 ? 2 : 1;
    hid_t space = H5Screate_simple(rank, dims, maxd);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hsize_t chunk[2] = {16, 2};
    H5Pset_chunk(dcpl, rank, chunk);
    hid_t d = H5Dcreate2(file, "/interruptions", ft, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (d >= 0) {
        if (n > 0 && rank == 1 && mode != 3 && mode != 4) {
            H5Dwrite(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows);
        }
        if (mode != 7) {
            char names[512] = "";
            for (int c = 0; c < AF_NINTR; ++c) {
                size_t at = strlen(names);
                snprintf(names + at, sizeof names - at, "%s%d %s", c ? ", " : "", c,
                         af_intr_names[c]);
            }
            hid_t str = H5Tcopy(H5T_C_S1);
            H5Tset_size(str, H5T_VARIABLE);
            hid_t as = H5Screate(H5S_SCALAR);
            hid_t a = H5Acreate2(d, "cause_names", str, as, H5P_DEFAULT, H5P_DEFAULT);
            const char *v = names;
            if (a >= 0) {
                H5Awrite(a, str, &v);
                H5Aclose(a);
            }
            H5Sclose(as);
            H5Tclose(str);
        }
        H5Dclose(d);
    }
    H5Pclose(dcpl);
    H5Sclose(space);
    H5Tclose(ft);
    H5Tclose(mt);
}

static void put_final(fdp_t *f, hid_t file, const shape_t *s, double *buf)
{
    hid_t g = put_group(f, file, "/final");
    if (g < 0) {
        return;
    }
    static const char *const reasons[] = {"completed",          "error",  "mismatch",
                                          "capacity_exhausted", "signal", "leaked",
                                          "no_progress",        "bogus"};
    static const int codes[] = {0, 1, 3, 4, 5, 6, 7, 9};
    unsigned r = take(f) % 8;
    put_str(f, g, "exit_reason", reasons[r]);
    put_i64(f, g, "exit_code", codes[r]);
    put_i64(f, g, "steps_completed", s->rows);
    put_i64(f, g, "state_step", s->rows);
    put_i64(f, g, "bitwise_equal", r == 2 ? 0 : 1);
    put_str(f, g, "state_checksum", "55d28eda322ef80d");
    put_str(f, g, "reference_checksum", "55d28eda322ef80d");
    put_str(f, g, "end_time", "2026-01-01T00:01:00Z");
    put_f64(f, g, "mass_initial", 0.5);
    put_f64(f, g, "mass_final", 0.5);
    put_f64(f, g, "sim_hours", 30.0 * (double)s->rows);
    put_f64(f, g, "max_blackout", 0.0);
    put_i64(f, g, "allocs_after_init", 0);
    put_i64(f, g, "event_log_errors", 0);
    put_str(f, g, "exhausted_why", "no slot left");
    static const char *const totals[] = {"corrupt_injected_total",
                                         "corrupt_detected_total",
                                         "fenced_total",
                                         "retried_total",
                                         "nonfinite_leaked_total",
                                         "sdc_undetected_total",
                                         "moves_drain_total",
                                         "moves_restore_total",
                                         "moves_retry_total",
                                         "rollbacks_total",
                                         "replayed_steps_total",
                                         "unverified_commits_total",
                                         "sdc_harmful_total",
                                         "corrupt_harmful_total",
                                         "detected_finite_total",
                                         "detected_abft_total",
                                         "detected_twin_total",
                                         "abft_false_alarms_total",
                                         "quarantined_units_total",
                                         "twins_total"};
    for (size_t i = 0; i < sizeof totals / sizeof totals[0]; ++i) {
        put_i64(f, g, totals[i], 0);
    }
    int64_t cells = s->blocks * s->block_len;
    for (int64_t i = 0; i < cells; ++i) {
        buf[i] = 0.5;
    }
    put_dataset(f, g, "state", 0, (hsize_t)cells, 0, buf);
    H5Gclose(g);
}

static void put_units(fdp_t *f, hid_t file, const shape_t *s, double *buf)
{
    hid_t g = put_group(f, file, "/units");
    if (g < 0) {
        return;
    }
    put_str(f, g, "cause_codes", "0 alive, 1 wear-out, 2 sudden, 3 scripted");
    static const char *const names[] = {
        "device",         "unit",      "fade_step",        "death_step",
        "cause",          "silent",    "quarantined_step", "first_corrupt_step",
        "lifetime_hours", "age_hours", "temperature_K"};
    for (int k = 0; k < 11; ++k) {
        for (int64_t u = 0; u < s->units; ++u) {
            static const double other[] = {-1.0, -1.0, 0.0, 0.0, -1.0, -1.0, 1000.0, 30.0, 330.0};
            buf[u] = k == 0 ? (double)(u / s->upd) : k == 1 ? (double)(u % s->upd) : other[k - 2];
        }
        put_dataset(f, g, names[k], k < 8, (hsize_t)s->units, 0, buf);
    }
    H5Gclose(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 14) {
        return 0;
    }
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    fdp_t in = {data, size};
    fdp_t *f = &in;
    shape_t s;
    s.rows = (5 + take(f)) % 33;
    s.ranks = 1 + (1 + take(f)) % 8;
    s.devices = s.ranks + take(f) % 3;
    s.upd = 1 + (1 + take(f)) % 8;
    s.units = s.devices * s.upd;
    s.block_len = 3 + take(f) % 6;
    s.blocks = s.devices + take(f) % 16;
    s.max_blackout = 0.5 + 0.05 * (double)(take(f) % 9);
    s.capacity = next_pow2((double)s.blocks / ((double)s.units * (1.0 - s.max_blackout)) - 1e-9);
    s.nevents = s.rows > 0 ? (4 + take(f)) % 17 : 0;

    size_t cap = 1024; /* >= rows x ranks (256), units (80), blocks x block_len (200), samples */
    double *buf = malloc(sizeof(double) * cap);
    if (buf == NULL) {
        return 0;
    }
    const char *path = af_fuzz_temp_path("log.h5");
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (file < 0) {
        af_fuzz_fail("cannot create %s", path);
    }
    put_root(f, file, &s);
    put_steps(f, file, &s, buf);
    put_ranks(f, file, &s, buf);
    put_calibration(f, file, buf);
    put_events(f, file, &s);
    put_final(f, file, &s, buf);
    put_units(f, file, &s, buf);
    if (take(f) % 4 == 1) {
        hid_t g = H5Gcreate2(file, "/host", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (g >= 0) {
            H5Gclose(g);
        }
    }
    put_interruptions(f, file, &s);
    H5Fclose(file);
    free(buf);
    af_fuzz_read_log(path);
    return 0;
}
