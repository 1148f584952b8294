/* agefence fuzzing: scratch files and the log reader's whole path (see fuzz_common.h). */
#include "fuzz_common.h"

#include <hdf5.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../analysis/figures.h"
#include "../analysis/logread.h"
#include "../analysis/rundata.h"
#include "../analysis/summary.h"
#include "../analysis/textreport.h"

static char temp_paths[4][600];
static int temp_used;

static void remove_temps(void)
{
    for (int i = 0; i < temp_used; ++i) {
        remove(temp_paths[i]);
    }
}

const char *af_fuzz_temp_path(const char *tag)
{
    char(*path)[600] = temp_paths;
    static char tags[4][32];
    int used = temp_used;
    for (int i = 0; i < used; ++i) {
        if (strcmp(tags[i], tag) == 0) {
            return path[i];
        }
    }
    if (used == 4) {
        af_fuzz_fail("af_fuzz_temp_path: more than 4 tags");
    }
    const char *dir = getenv("TMPDIR");
    if (dir == NULL || dir[0] == '\0') {
        dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    }
    snprintf(tags[used], sizeof tags[used], "%s", tag);
    snprintf(path[used], sizeof path[used], "%s/agefence-fuzz-%ld-%s", dir, (long)getpid(), tag);
    if (used == 0) {
        atexit(remove_temps);
    }
    temp_used = used + 1;
    return path[used];
}

int af_fuzz_write_file(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        return -1;
    }
    int rc = (size > 0 && fwrite(data, 1, size, f) != size) ? -1 : 0;
    if (fclose(f) != 0) {
        rc = -1;
    }
    return rc;
}

FILE *af_fuzz_devnull(void)
{
    static FILE *null;
    if (null == NULL) {
        null = fopen("/dev/null", "w");
        if (null == NULL) {
            af_fuzz_fail("cannot open /dev/null");
        }
    }
    return null;
}

void af_fuzz_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "agefence fuzz: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

/* Every object of every file must be closed once the log is: a handle left open by the reader
 * is a leak that no memory checker sees (HDF5 frees it at exit). */
static void require_nothing_open(const char *when)
{
    ssize_t open = H5Fget_obj_count((hid_t)H5F_OBJ_ALL, H5F_OBJ_ALL);
    if (open != 0) {
        af_fuzz_fail("%zd HDF5 object(s) left open %s", open, when);
    }
}

static void read_attrs(const af_logfile_t *lf)
{
    static const char *const objs[] = {
        "/", "/final", "/units", "/calibration/allreduce8_us", "/steps/step", "/nosuch"};
    static const char *const names[] = {"schema_version", "config",      "ranks", "max_blackout",
                                        "exit_reason",    "cause_codes", "p50",   "doc"};
    for (size_t o = 0; o < sizeof objs / sizeof objs[0]; ++o) {
        for (size_t a = 0; a < sizeof names / sizeof names[0]; ++a) {
            char s[64];
            char tiny[2];
            int64_t i = 0;
            double d = 0;
            (void)af_logfile_attr_str(lf, objs[o], names[a], s, sizeof s);
            (void)af_logfile_attr_str(lf, objs[o], names[a], tiny, sizeof tiny);
            (void)af_logfile_attr_i64(lf, objs[o], names[a], &i);
            (void)af_logfile_attr_f64(lf, objs[o], names[a], &d);
        }
    }
}

static void read_datasets(const af_logfile_t *lf)
{
    static const char *const paths[] = {"/steps/step",  "/steps/mass",  "/ranks/step_us",
                                        "/units/cause", "/final/state", "/events"};
    for (size_t p = 0; p < sizeof paths / sizeof paths[0]; ++p) {
        int rank = 0;
        int64_t dims[2] = {0, 0};
        if (af_logfile_shape(lf, paths[p], &rank, dims) != AF_OK) {
            continue;
        }
        /* The harnesses make small files: a larger shape is read only up to a bound. */
        if (dims[0] < 0 || dims[1] < 0 || dims[0] > 4096 || dims[1] > 64) {
            continue;
        }
        size_t n = (size_t)dims[0] * (size_t)dims[1];
        double *f = malloc(sizeof(double) * (n ? n : 1));
        int64_t *i = malloc(sizeof(int64_t) * (n ? n : 1));
        if (f != NULL && i != NULL) {
            (void)af_logfile_read_f64(lf, paths[p], f, n);
            (void)af_logfile_read_i64(lf, paths[p], i, n);
        }
        free(f);
        free(i);
    }
    int64_t n = 0;
    if (af_logfile_events_count(lf, &n) == AF_OK && n >= 0 && n <= 4096) {
        af_event_row_t *ev = malloc(sizeof(af_event_row_t) * (size_t)(n ? n : 1));
        if (ev != NULL && af_logfile_read_events(lf, ev, (size_t)n) == AF_OK) {
            for (int64_t k = 0; k < n; ++k) {
                if (strlen(ev[k].kind) >= sizeof ev[k].kind) {
                    af_fuzz_fail("/events[%lld].kind is not terminated", (long long)k);
                }
            }
        }
        free(ev);
    }
}

static void report(const af_logfile_t *lf)
{
    FILE *out = af_fuzz_devnull();
    af_run_t run;
    af_summary_t sum;
    af_figs_t figs;
    af_figs_init(&figs);
    if (af_run_load(&run, lf) == AF_OK && af_summary_compute(&sum, &run) == AF_OK &&
        af_summary_figures(&sum, &figs) == AF_OK) {
        af_report_text(&sum, out);
        af_figs_json(&figs, out, 0);
    }
    af_figs_free(&figs);
    af_run_free(&run);
}

void af_fuzz_read_log(const char *path)
{
    af_logfile_t lf;
    char err[700] = "";
    if (af_logfile_open(&lf, path, err, sizeof err) != AF_OK) {
        if (err[0] == '\0') {
            af_fuzz_fail("af_logfile_open failed without a message");
        }
        require_nothing_open("after af_logfile_open refused the file");
        return;
    }
    (void)af_logfile_check(&lf, af_fuzz_devnull());
    read_attrs(&lf);
    read_datasets(&lf);
    report(&lf);
    af_logfile_close(&lf);
    require_nothing_open("after af_logfile_close");
}
