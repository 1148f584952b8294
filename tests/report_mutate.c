/* Test helper for tests/report.sh: seeds one defect into a copy of an agefence log, or makes an
 * HDF5 file that is not an agefence log.
 *   report_mutate FILE set-i64 OBJ NAME VALUE   (re)write an integer attribute
 *   report_mutate FILE set-str OBJ NAME VALUE   (re)write a string attribute
 *   report_mutate FILE del-attr OBJ NAME        delete an attribute
 *   report_mutate FILE del PATH                 unlink a group or dataset
 *   report_mutate FILE killed                   what a killed run leaves: no /final, no /units
 *   report_mutate FILE killed-empty             what a killed run of a writer before crash-
 *                                               consistent logging left: no /final attributes,
 *                                               no /final/state, an empty /units
 *   report_mutate FILE foreign                  create FILE: HDF5, but not an agefence log
 * Exit status 0 done, 1 the HDF5 call failed, 2 bad arguments. */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int set_i64(hid_t f, const char *obj, const char *name, long long v)
{
    if (H5Aexists_by_name(f, obj, name, H5P_DEFAULT) > 0 &&
        H5Adelete_by_name(f, obj, name, H5P_DEFAULT) < 0) {
        return 1;
    }
    hid_t s = H5Screate(H5S_SCALAR);
    hid_t a =
        H5Acreate_by_name(f, obj, name, H5T_STD_I64LE, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int64_t v64 = v;
    int rc = a < 0 || H5Awrite(a, H5T_NATIVE_INT64, &v64) < 0;
    if (a >= 0) {
        H5Aclose(a);
    }
    H5Sclose(s);
    return rc;
}

/* A fixed-length, NUL-terminated string attribute, as the log writer makes them. */
static int set_str(hid_t f, const char *obj, const char *name, const char *v)
{
    if (H5Aexists_by_name(f, obj, name, H5P_DEFAULT) > 0 &&
        H5Adelete_by_name(f, obj, name, H5P_DEFAULT) < 0) {
        return 1;
    }
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, strlen(v) + 1);
    H5Tset_strpad(t, H5T_STR_NULLTERM);
    hid_t s = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate_by_name(f, obj, name, t, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int rc = a < 0 || H5Awrite(a, t, v) < 0;
    if (a >= 0) {
        H5Aclose(a);
    }
    H5Sclose(s);
    H5Tclose(t);
    return rc;
}

/* Deletes every attribute of obj. */
static int del_all_attrs(hid_t f, const char *obj)
{
    hid_t o = H5Oopen(f, obj, H5P_DEFAULT);
    if (o < 0) {
        return 1;
    }
    int rc = 0;
    char name[256];
    while (rc == 0 && H5Aget_name_by_idx(o, ".", H5_INDEX_NAME, H5_ITER_INC, 0, name, sizeof name,
                                         H5P_DEFAULT) > 0) {
        rc = H5Adelete(o, name) < 0;
    }
    H5Oclose(o);
    return rc;
}

static int foreign(const char *path)
{
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) {
        return 1;
    }
    hsize_t dims[1] = {3};
    hid_t s = H5Screate_simple(1, dims, NULL);
    hid_t d =
        H5Dcreate2(f, "temperature", H5T_IEEE_F64LE, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const double v[3] = {20.5, 21.0, 21.5};
    int rc = d < 0 || H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0;
    if (d >= 0) {
        H5Dclose(d);
    }
    H5Sclose(s);
    H5Fclose(f);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: report_mutate FILE OP [ARGS]\n");
        return 2;
    }
    const char *path = argv[1];
    const char *op = argv[2];
    if (strcmp(op, "foreign") == 0) {
        return foreign(path);
    }
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    if (f < 0) {
        fprintf(stderr, "report_mutate: %s: cannot open\n", path);
        return 1;
    }
    int rc = 2;
    if (strcmp(op, "set-i64") == 0 && argc == 6) {
        rc = set_i64(f, argv[3], argv[4], strtoll(argv[5], NULL, 10));
    } else if (strcmp(op, "set-str") == 0 && argc == 6) {
        rc = set_str(f, argv[3], argv[4], argv[5]);
    } else if (strcmp(op, "del-attr") == 0 && argc == 5) {
        rc = H5Adelete_by_name(f, argv[3], argv[4], H5P_DEFAULT) < 0;
    } else if (strcmp(op, "del") == 0 && argc == 4) {
        rc = H5Ldelete(f, argv[3], H5P_DEFAULT) < 0;
    } else if (strcmp(op, "killed") == 0 && argc == 3) {
        /* The writer links /units and /final into the file at the end (sim/io/log.h). */
        rc = H5Ldelete(f, "/final", H5P_DEFAULT) < 0 || H5Ldelete(f, "/units", H5P_DEFAULT) < 0;
    } else if (strcmp(op, "killed-empty") == 0 && argc == 3) {
        /* The earlier writer created /units empty at the start and filled it at the end. */
        rc = del_all_attrs(f, "/final") || H5Ldelete(f, "/final/state", H5P_DEFAULT) < 0 ||
             H5Ldelete(f, "/units", H5P_DEFAULT) < 0;
        hid_t g = rc ? -1 : H5Gcreate2(f, "/units", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        rc = rc || g < 0;
        if (g >= 0) {
            H5Gclose(g);
        }
    } else {
        fprintf(stderr, "report_mutate: bad arguments for %s\n", op);
    }
    H5Fclose(f);
    if (rc == 1) {
        fprintf(stderr, "report_mutate: %s %s failed\n", path, op);
    }
    return rc;
}
