/* agefence HDF5 log writer (rank 0 only).
 *
 * Longer than the ~900 lines the rest of sim/ keeps to, on purpose: af_log_t is opaque, and
 * everything that touches its HDF5 handles and its writer thread lives here — creating and
 * claiming the file (never overwriting another program's), the extendible /steps, /events and
 * /interruptions datasets, the batches the writer thread commits with their commit record, the
 * attributes, and the close that leaves a readable file on every path. Split, the handles and
 * the thread's locking would be shared across files. */
#define _GNU_SOURCE /* SCHED_BATCH */
#include "log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../common/af_alloc.h"
#include "../../common/af_path.h"
#include "../../common/af_time.h"
#include "../../common/logfile.h"
#include "../../common/percentile.h"

#define AF_EVENT_BUFFER 4096
#define AF_INTR_BUFFER  1024 /* interruptions buffered between writes */

_Static_assert(sizeof(af_step_row_t) == 8 * AF_NCOLUMNS, "step rows are packed 8-byte columns");

/* One batch of the steps' rows, events and interruptions. The log has two: the step thread
 * fills one while the writer thread writes the other (af_log_begin to the end's start). */
typedef struct log_batch {
    af_step_row_t *rows; /* flush_interval rows */
    double *phase_buf;   /* flush_interval x AF_NPHASES x nranks */
    af_event_row_t *ev;  /* AF_EVENT_BUFFER events */
    af_intr_row_t *intr; /* AF_INTR_BUFFER interruptions */
    int64_t rows_n;
    int events_n;
    int intr_n;
} log_batch_t;

/* The writer thread of a live log. From af_log_begin until the end is begun (or the log is
 * closed) it alone calls HDF5: the step thread hands it a full batch (hand_over) and goes on;
 * before any HDF5 call of its own the step thread stops it (writer_stop). It makes no MPI
 * call. mu guards every field but running (the step thread's alone) and the thread's id. */
typedef struct log_writer {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t work; /* a batch handed over, or quit */
    pthread_cond_t idle; /* the batch is written */
    int running;         /* the thread exists (step thread's view: set and cleared by it) */
    int busy;            /* a batch is handed over and not written yet */
    int commit;          /* ... and is committed once written */
    int quit;
    log_batch_t *batch; /* the batch handed over */
    af_result_t err;    /* the writer's first error: it writes nothing after it */
    char err_msg[512];
    double busy_us;  /* time spent writing batches */
    double cpu_us;   /* the thread's CPU time in them (CLOCK_THREAD_CPUTIME_ID) */
    int64_t batches; /* batches written (or failed) */
} log_writer_t;

struct af_log {
    hid_t file;
    int plain;  /* af_log_create_plain: no run schema, nothing deferred, no crash consistency */
    int live;   /* after af_log_begin: SWMR appending, and the file is at its path */
    int ending; /* after the steps closed: a copy at tmp, opened without SWMR, takes the end */
    char path[4096];
    char made[4096];  /* the topmost folder af_log_create made for path ("" for none) */
    int holder;       /* 1 + the descriptor holding the writer's lock (common/logfile.h), or 0 */
    char tmp[4112];   /* where a run log is built until af_log_begin, and its end after it */
    char trace[4096]; /* AGEFENCE_LOG_TRACE: a file that gets a line per commit */
    hid_t steps_group;
    hid_t commit;          /* the commit record: the dataset /committed, {rows, events} */
    int64_t event_fail_at; /* AGEFENCE_DEBUG=eventfail=N: the N-th event cannot be written */
    int64_t events_seen;
    int64_t commit_fail_at; /* AGEFENCE_DEBUG=logfail=N: the N-th commit of the steps fails */
    int64_t commits_seen;
    double slow_ms; /* AGEFENCE_DEBUG=logslow=MS: each batch written takes MS more */
    int nranks;
    int64_t flush_interval;
    /* Written rows: the writer's (the step thread's once it has stopped the writer). */
    int64_t rows_written;
    int64_t events_written;
    int64_t intr_written;
    int64_t rows_appended; /* the step thread's count of af_log_append */
    hid_t col[AF_NCOLUMNS];
    hid_t phase[AF_NPHASES];
    hid_t events;
    hid_t event_type;
    hid_t intr; /* /interruptions */
    hid_t intr_type;
    double *colbuf;    /* flush_interval values of one column (the writer's) */
    double *phase_tmp; /* flush_interval x nranks values of one phase (the writer's) */
    log_batch_t batch[2];
    int fill; /* the batch the step thread fills */
    log_writer_t w;
    int failed;     /* the writer failed (w.err): nothing more is written */
    double wait_us; /* time the step thread waited for the writer */
};

#define H5_CHECK(expr)                                                                             \
    do {                                                                                           \
        if ((expr) < 0) {                                                                          \
            af_error_set("HDF5: %s failed", #expr);                                                \
            af_error_breadcrumb(AF_ERR_HDF5, #expr, __FILE__, __LINE__);                           \
            return AF_ERR_HDF5;                                                                    \
        }                                                                                          \
    } while (0)

static hid_t make_extendible(hid_t loc, const char *name, hid_t type, int rank, hsize_t cols,
                             hsize_t chunk_rows)
{
    hsize_t dims[2] = {0, cols};
    hsize_t maxdims[2] = {H5S_UNLIMITED, cols};
    hsize_t chunk[2] = {chunk_rows, cols};
    hid_t space = H5Screate_simple(rank, dims, maxdims);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, rank, chunk);
    hid_t d = H5Dcreate2(loc, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Pclose(dcpl);
    H5Sclose(space);
    return d;
}

/* Appends one line to the AGEFENCE_LOG_TRACE file, if there is one. Opened, written and closed
 * each time, so a line written is in the file whatever happens to the process next. */
static void trace(const af_log_t *log, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void trace(const af_log_t *log, const char *fmt, ...)
{
    if (log->trace[0] == '\0') {
        return;
    }
    char line[4400];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0) {
        return;
    }
    n = n > (int)sizeof line - 2 ? (int)sizeof line - 2 : n;
    line[n++] = '\n';
    int fd = open(log->trace, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
        if (write(fd, line, (size_t)n) < 0) {
            /* The trace is a testing aid: losing a line changes nothing in the log. */
        }
        close(fd);
    }
}

static af_result_t write_batch(af_log_t *log, log_batch_t *b, int commit);

/* The calling thread's CPU time in µs: what the writer takes from the cores it shares with the
 * ranks, where its wall time (busy_us) also counts its waits for the disk. 0 when the clock is
 * not there. */
static double thread_cpu_us(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) {
        return 0.0;
    }
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* The writer thread: writes each batch handed over, commits it when asked, and reports. */
static void *writer_main(void *arg)
{
    af_log_t *log = arg;
    log_writer_t *w = &log->w;
#ifdef SCHED_BATCH
    /* A batch thread does not preempt the thread that woke it: on a machine whose cores the
     * ranks fill, the hand-over returns before the writer takes its core. (Best effort.) */
    struct sched_param sp = {0};
    pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp);
#endif
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->busy && !w->quit) {
            pthread_cond_wait(&w->work, &w->mu);
        }
        if (!w->busy) {
            break;
        }
        log_batch_t *b = w->batch;
        int commit = w->commit;
        int failed = w->err != AF_OK;
        pthread_mutex_unlock(&w->mu);
        double t0 = af_now_us();
        double c0 = thread_cpu_us();
        if (log->slow_ms > 0) {
            /* AGEFENCE_DEBUG=logslow: a slow disk, for the tests of a busy writer. */
            struct timespec ts = {(time_t)(log->slow_ms / 1000.0),
                                  (long)(fmod(log->slow_ms, 1000.0) * 1e6)};
            nanosleep(&ts, NULL);
        }
        af_result_t rc = failed ? AF_OK : write_batch(log, b, commit);
        double t1 = af_now_us();
        double c1 = thread_cpu_us();
        pthread_mutex_lock(&w->mu);
        w->busy_us += t1 - t0;
        w->cpu_us += c1 - c0;
        w->batches++;
        if (rc != AF_OK && w->err == AF_OK) {
            w->err = rc;
            snprintf(w->err_msg, sizeof w->err_msg, "%s", af_error_text(rc));
        }
        w->busy = 0;
        pthread_cond_signal(&w->idle);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* The step thread takes over the writer's error: its message, and a failed log. */
static af_result_t writer_error(af_log_t *log)
{
    if (log->w.err != AF_OK) {
        log->failed = 1;
        af_error_set("%s", log->w.err_msg);
    }
    return log->w.err;
}

/* Step thread, writer locked: waits until the writer has written the batch handed over. The
 * wait is the step thread's: counted in wait_us (and in the step's log_us around it). */
static void writer_wait_locked(af_log_t *log)
{
    log_writer_t *w = &log->w;
    if (w->busy) {
        double t0 = af_now_us();
        while (w->busy) {
            pthread_cond_wait(&w->idle, &w->mu);
        }
        log->wait_us += af_now_us() - t0;
    }
}

/* Starts the writer thread (af_log_begin). It blocks every signal: SIGTERM and SIGINT reach the
 * step thread, which stops the run cleanly. */
static af_result_t writer_start(af_log_t *log)
{
    log_writer_t *w = &log->w;
    if (pthread_mutex_init(&w->mu, NULL) != 0) {
        af_error_set("%s: cannot start the log's writer thread", log->path);
        return AF_ERR_INTERNAL;
    }
    if (pthread_cond_init(&w->work, NULL) != 0) {
        pthread_mutex_destroy(&w->mu);
        af_error_set("%s: cannot start the log's writer thread", log->path);
        return AF_ERR_INTERNAL;
    }
    if (pthread_cond_init(&w->idle, NULL) != 0) {
        pthread_cond_destroy(&w->work);
        pthread_mutex_destroy(&w->mu);
        af_error_set("%s: cannot start the log's writer thread", log->path);
        return AF_ERR_INTERNAL;
    }
    sigset_t all;
    sigset_t old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int e = pthread_create(&w->thread, NULL, writer_main, log);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e != 0) {
        pthread_cond_destroy(&w->idle);
        pthread_cond_destroy(&w->work);
        pthread_mutex_destroy(&w->mu);
        af_error_set("%s: cannot start the log's writer thread: %s", log->path, strerror(e));
        return AF_ERR_INTERNAL;
    }
    w->running = 1;
    return AF_OK;
}

/* Step thread: lets the writer finish the batch it has, joins it, and reports its error. From
 * then on the step thread makes the log's HDF5 calls itself. */
static af_result_t writer_stop(af_log_t *log)
{
    log_writer_t *w = &log->w;
    if (!w->running) {
        return log->failed ? writer_error(log) : AF_OK;
    }
    pthread_mutex_lock(&w->mu);
    writer_wait_locked(log);
    w->quit = 1;
    pthread_cond_signal(&w->work);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->idle);
    pthread_cond_destroy(&w->work);
    pthread_mutex_destroy(&w->mu);
    w->running = 0;
    return writer_error(log);
}

/* Step thread: the batch being filled goes to be written (and committed when commit is set).
 * With the writer running it is handed over, once the writer has finished the batch before
 * (the only wait: two batches at most are held), and the step thread fills the other one;
 * without it (before af_log_begin, after the end is begun) it is written here. */
static af_result_t hand_over(af_log_t *log, int commit)
{
    if (log->failed) {
        return writer_error(log);
    }
    log_batch_t *b = &log->batch[log->fill];
    if (!log->w.running) {
        return write_batch(log, b, commit);
    }
    log_writer_t *w = &log->w;
    pthread_mutex_lock(&w->mu);
    writer_wait_locked(log);
    af_result_t rc = writer_error(log);
    if (rc == AF_OK) {
        w->batch = b;
        w->commit = commit;
        w->busy = 1;
        log->fill ^= 1;
        pthread_cond_signal(&w->work);
    }
    pthread_mutex_unlock(&w->mu);
    return rc;
}

static void log_free(af_log_t *log)
{
    if (log == NULL) {
        return;
    }
    (void)writer_stop(log);
    if (log->holder > 0) {
        close(log->holder - 1);
    }
    for (int i = 0; i < AF_NCOLUMNS; ++i) {
        if (log->col[i] > 0) {
            H5Dclose(log->col[i]);
        }
    }
    for (int i = 0; i < AF_NPHASES; ++i) {
        if (log->phase[i] > 0) {
            H5Dclose(log->phase[i]);
        }
    }
    if (log->events > 0) {
        H5Dclose(log->events);
    }
    if (log->event_type > 0) {
        H5Tclose(log->event_type);
    }
    if (log->intr > 0) {
        H5Dclose(log->intr);
    }
    if (log->intr_type > 0) {
        H5Tclose(log->intr_type);
    }
    if (log->commit > 0) {
        H5Dclose(log->commit);
    }
    if (log->steps_group > 0) {
        H5Gclose(log->steps_group);
    }
    if (log->file > 0) {
        H5Fclose(log->file);
        trace(log, "closed");
    }
    for (int i = 0; i < 2; ++i) {
        af_free(log->batch[i].rows);
        af_free(log->batch[i].phase_buf);
        af_free(log->batch[i].ev);
        af_free(log->batch[i].intr);
    }
    af_free(log->colbuf);
    af_free(log->phase_tmp);
    af_free(log);
}

static af_result_t attr_str(hid_t loc, const char *name, const char *value)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    hid_t s = H5Screate(H5S_SCALAR);
    if (H5Aexists(loc, name) > 0) {
        H5Adelete(loc, name);
    }
    hid_t a = H5Acreate2(loc, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
    herr_t w = a < 0 ? -1 : H5Awrite(a, t, &value);
    if (a >= 0) {
        H5Aclose(a);
    }
    H5Sclose(s);
    H5Tclose(t);
    H5_CHECK(w);
    return AF_OK;
}

/* The commit record /committed = {rows of /steps and /ranks, rows of /events} that are
 * complete: the raw data of a dataset of two integers, contiguous and allocated at creation,
 * rewritten in place (what a SWMR writer may do). 16 bytes in one write, so its two numbers
 * change together. */
static af_result_t write_commit_record(af_log_t *log)
{
    int64_t v[2] = {log->rows_written, log->events_written};
    H5_CHECK(H5Dwrite(log->commit, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v));
    return AF_OK;
}

static af_result_t make_commit_record(af_log_t *log)
{
    hsize_t n = 2;
    hid_t s = H5Screate_simple(1, &n, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (s < 0 || dcpl < 0 || H5Pset_layout(dcpl, H5D_CONTIGUOUS) < 0 ||
        H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY) < 0) {
        log->commit = -1;
    } else {
        log->commit =
            H5Dcreate2(log->file, "/committed", H5T_STD_I64LE, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    }
    if (dcpl >= 0) {
        H5Pclose(dcpl);
    }
    if (s >= 0) {
        H5Sclose(s);
    }
    H5_CHECK(log->commit);
    if (log->commit >= 0) {
        attr_str(log->commit, "doc",
                 "commit record: rows of /steps and /ranks, rows of /events that are complete");
    }
    return write_commit_record(log);
}

/* Whether st is the file the scenario was read from (same device and inode: another name of
 * it, a hard link, a symbolic link to it count). */
static int is_scenario(const struct stat *st, const char *scenario)
{
    struct stat sc;
    return scenario != NULL && stat(scenario, &sc) == 0 && sc.st_dev == st->st_dev &&
           sc.st_ino == st->st_ino;
}

/* What a run may do with a file that is already at `file` (the log's path or its temporary
 * name `what` says which): AF_OK when nothing is there or an agefence log is; AF_ERR_USAGE
 * with one line otherwise. */
static af_result_t may_replace(const char *file, const char *what, const char *scenario)
{
    struct stat st;
    if (stat(file, &st) != 0) {
        if (errno == ENOENT) {
            return AF_OK;
        }
        af_error_set("%s: cannot create the log file there: %s", file, strerror(errno));
        return AF_ERR_USAGE;
    }
    if (S_ISDIR(st.st_mode)) {
        af_error_set("%s: is a folder, not a log file (-o takes a file name)", file);
        return AF_ERR_USAGE;
    }
    if (!S_ISREG(st.st_mode)) {
        af_error_set("%s: not a regular file; agefence writes its log only to a new file or over "
                     "an agefence log",
                     file);
        return AF_ERR_USAGE;
    }
    if (is_scenario(&st, scenario)) {
        af_error_set("%s: is the scenario file being read (-c %s); agefence does not write its "
                     "log over it",
                     file, scenario);
        return AF_ERR_USAGE;
    }
    if (!af_logfile_is_log(file)) {
        af_error_set("%s: %s exists and is not an agefence log; agefence does not overwrite it "
                     "(remove it or choose another -o)",
                     file, what);
        return AF_ERR_USAGE;
    }
    return AF_OK;
}

af_result_t af_log_backups(int *keep)
{
    const char *env = getenv("AGEFENCE_BACKUPS");
    *keep = AF_LOG_BACKUPS_DEFAULT;
    if (env == NULL || env[0] == '\0') {
        return AF_OK;
    }
    char *end = NULL;
    errno = 0;
    long v = strtol(env, &end, 10);
    if (errno != 0 || *end != '\0' || env[0] < '0' || env[0] > '9' || v > AF_LOG_BACKUPS_MAX) {
        af_error_set("AGEFENCE_BACKUPS=%s: not a whole number from 0 to %d (how many earlier logs "
                     "to keep at -o)",
                     env, AF_LOG_BACKUPS_MAX);
        return AF_ERR_USAGE;
    }
    *keep = (int)v;
    return AF_OK;
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a;
    long y = *(const long *)b;
    return (x > y) - (x < y);
}

/* The numbers N of the agefence logs "name.~N~" in dir, in increasing order, at most max of
 * them (the highest): how many were found. Other files of such names are not backups the run
 * made: they are neither counted nor removed. */
static int backups_of(const char *dir, const char *name, long *numbers, int max)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        return 0;
    }
    size_t len = strlen(name);
    int found = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *s = e->d_name;
        if (strncmp(s, name, len) != 0 || strncmp(s + len, ".~", 2) != 0 || s[len + 2] < '1' ||
            s[len + 2] > '9') {
            continue;
        }
        char *end = NULL;
        long v = strtol(s + len + 2, &end, 10);
        if (end[0] != '~' || end[1] != '\0') {
            continue;
        }
        char full[8320];
        snprintf(full, sizeof full, "%s/%s", dir, s);
        if (!af_logfile_is_log(full)) {
            continue;
        }
        /* Past max, the lowest number falls out: the highest ones are kept. */
        if (found < max) {
            numbers[found++] = v;
        } else {
            int lo = 0;
            for (int i = 1; i < found; ++i) {
                lo = numbers[i] < numbers[lo] ? i : lo;
            }
            numbers[lo] = v > numbers[lo] ? v : numbers[lo];
        }
    }
    qsort(numbers, (size_t)found, sizeof *numbers, cmp_long);
    closedir(d);
    return found;
}

af_result_t af_log_check_path(const char *path, const char *scenario)
{
    if (path[0] == '\0') {
        af_error_set("the log path is empty (-o '' or log.path = ''): name a file");
        return AF_ERR_USAGE;
    }
    size_t len = strlen(path);
    if (len + 8 >= sizeof(((af_log_t *)0)->path)) {
        af_error_set("%.200s...: the log path is too long", path);
        return AF_ERR_USAGE;
    }
    if (path[len - 1] == '/') {
        af_error_set("%s: names a folder, not a log file (-o takes a file name)", path);
        return AF_ERR_USAGE;
    }
    /* A missing folder is made when the log is created (common/af_path.h). */
    char dir[4096];
    af_path_folder_of(path, dir, sizeof dir);
    AF_CHECK(af_path_check_folder(path, dir));
    int keep = 0;
    AF_CHECK(af_log_backups(&keep));
    AF_CHECK(may_replace(path, "the file", scenario));
    char tmp[4112];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    return may_replace(tmp, "the log's temporary file", scenario);
}

af_result_t af_log_claim(af_log_t *log, int force, char *kept, size_t n)
{
    kept[0] = '\0';
    struct stat st;
    if (log->plain || lstat(log->path, &st) != 0) {
        return AF_OK;
    }
    if (!af_logfile_is_log(log->path)) {
        /* Something took the path's place since af_log_check_path: left alone. */
        af_error_set("%s: exists and is not an agefence log; agefence does not overwrite it "
                     "(remove it or choose another -o)",
                     log->path);
        return AF_ERR_USAGE;
    }
    if (force) {
        if (unlink(log->path) != 0) {
            af_error_set("%s: cannot remove the earlier log (--force): %s", log->path,
                         strerror(errno));
            return AF_ERR_IO;
        }
        return AF_OK;
    }
    /* "NAME.~N~" beside it, N one more than the highest there (GNU's numbered backups: a
     * name no shell treats as special), then the oldest beyond AGEFENCE_BACKUPS removed.
     * link() never replaces a file, so a backup made meanwhile by another run is not lost. */
    int keep = 0;
    AF_CHECK(af_log_backups(&keep));
    if (keep == 0) {
        if (unlink(log->path) != 0) {
            af_error_set("%s: cannot remove the earlier log (AGEFENCE_BACKUPS=0): %s", log->path,
                         strerror(errno));
            return AF_ERR_IO;
        }
        return AF_OK;
    }
    char dir[4096];
    af_path_folder_of(log->path, dir, sizeof dir);
    const char *slash = strrchr(log->path, '/');
    const char *name = slash != NULL ? slash + 1 : log->path;
    long numbers[AF_LOG_BACKUPS_SCAN];
    int found = backups_of(dir, name, numbers, AF_LOG_BACKUPS_SCAN);
    long next = found > 0 ? numbers[found - 1] + 1 : 1;
    char backup[8320];
    for (;; ++next) {
        snprintf(backup, sizeof backup, "%.*s%s.~%ld~", (int)(name - log->path), log->path, name,
                 next);
        if (link(log->path, backup) == 0) {
            if (unlink(log->path) != 0) {
                af_error_set("%s: cannot move the earlier log to %s: %s", log->path, backup,
                             strerror(errno));
                unlink(backup);
                return AF_ERR_IO;
            }
            break;
        }
        if (errno == EEXIST) {
            continue;
        }
        /* A file system without hard links: a rename, once nothing is at the name. */
        struct stat b;
        if (lstat(backup, &b) == 0) {
            continue;
        }
        if (rename(log->path, backup) != 0) {
            af_error_set("%s: cannot move the earlier log to %s: %s", log->path, backup,
                         strerror(errno));
            return AF_ERR_IO;
        }
        break;
    }
    /* The oldest agefence logs among the backups go, until `keep` are left. */
    found = backups_of(dir, name, numbers, AF_LOG_BACKUPS_SCAN);
    int removed = 0;
    long first_removed = 0;
    for (int i = 0; found - removed > keep && i < found; ++i) {
        char old[8320];
        snprintf(old, sizeof old, "%.*s%s.~%ld~", (int)(name - log->path), log->path, name,
                 numbers[i]);
        if (unlink(old) == 0) {
            first_removed = removed == 0 ? numbers[i] : first_removed;
            ++removed;
        }
    }
    if (removed == 0) {
        snprintf(kept, n, "%s", backup);
    } else {
        snprintf(kept, n, "%s (%s %s.~%ld~%s removed: AGEFENCE_BACKUPS keeps %d)", backup,
                 removed == 1 ? "the oldest," : "the oldest, from", name, first_removed,
                 removed == 1 ? "," : " on,", keep);
    }
    return AF_OK;
}

af_result_t af_log_create(af_log_t **out, const char *path, int nranks, int64_t flush_interval)
{
    af_result_t rc = AF_OK;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    af_log_t *log = af_alloc(sizeof *log);
    hid_t fapl = -1;
    hid_t fcpl = -1;
    AF_REQUIRE_GOTO(log != NULL, AF_ERR_NOMEM, rc, fail);
    log->nranks = nranks;
    log->flush_interval = flush_interval;
    if (snprintf(log->path, sizeof log->path, "%s", path) >= (int)sizeof log->path) {
        af_error_set("%s: the log path is too long", path);
        rc = AF_ERR_USAGE;
        goto fail;
    }
    snprintf(log->tmp, sizeof log->tmp, "%s.tmp", path);
    const char *tr = getenv("AGEFENCE_LOG_TRACE");
    snprintf(log->trace, sizeof log->trace, "%s", tr != NULL ? tr : "");
    const char *dbg = getenv("AGEFENCE_DEBUG");
    const char *ef = dbg != NULL ? strstr(dbg, "eventfail=") : NULL;
    log->event_fail_at = ef != NULL ? atoll(ef + strlen("eventfail=")) : -1;
    const char *lf = dbg != NULL ? strstr(dbg, "logfail=") : NULL;
    log->commit_fail_at = lf != NULL ? atoll(lf + strlen("logfail=")) : -1;
    const char *ls = dbg != NULL ? strstr(dbg, "logslow=") : NULL;
    log->slow_ms = ls != NULL ? atof(ls + strlen("logslow=")) : 0.0;
    /* Two batches: one filled by the step thread while the writer writes the other. */
    int bad = 0;
    for (int i = 0; i < 2; ++i) {
        log_batch_t *b = &log->batch[i];
        b->rows = af_alloc(sizeof(af_step_row_t) * (size_t)flush_interval);
        b->phase_buf =
            af_alloc(sizeof(double) * (size_t)flush_interval * AF_NPHASES * (size_t)nranks);
        b->ev = af_alloc(sizeof(af_event_row_t) * AF_EVENT_BUFFER);
        b->intr = af_alloc(sizeof(af_intr_row_t) * AF_INTR_BUFFER);
        bad |= !b->rows || !b->phase_buf || !b->ev || !b->intr;
    }
    log->colbuf = af_alloc(sizeof(double) * (size_t)flush_interval);
    log->phase_tmp = af_alloc(sizeof(double) * (size_t)flush_interval * (size_t)nranks);
    if (bad || !log->colbuf || !log->phase_tmp) {
        af_error_set("cannot allocate the log's buffers (%lld rows x %d ranks)",
                     (long long)flush_interval, nranks);
        rc = AF_ERR_NOMEM;
        goto fail;
    }
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        af_error_set("%s: cannot create the log file (the path is not a regular file)", path);
        rc = AF_ERR_IO;
        goto fail;
    }
    /* The file is built under "<path>.tmp" and moved to its path by af_log_begin, once it is
     * a readable log (see log.h). The 1.10 file format is the one SWMR writing needs; the root
     * group's first object-header chunk is sized for all its links. */
    fapl = H5Pcreate(H5P_FILE_ACCESS);
    fcpl = H5Pcreate(H5P_FILE_CREATE);
    AF_REQUIRE_GOTO(fapl >= 0 && fcpl >= 0, AF_ERR_HDF5, rc, fail);
    AF_REQUIRE_GOTO(H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_V110) >= 0, AF_ERR_HDF5,
                    rc, fail);
    AF_REQUIRE_GOTO(H5Pset_link_phase_change(fcpl, 16, 12) >= 0, AF_ERR_HDF5, rc, fail);
    AF_REQUIRE_GOTO(H5Pset_est_link_info(fcpl, 12, 12) >= 0, AF_ERR_HDF5, rc, fail);
    /* The root's many attributes in dense storage from the first: they never move through
     * (or spill out of) the header chunk that holds the links. */
    AF_REQUIRE_GOTO(H5Pset_attr_phase_change(fcpl, 0, 0) >= 0, AF_ERR_HDF5, rc, fail);
    {
        char dir[4096];
        af_path_folder_of(path, dir, sizeof dir);
        AF_CHECK_GOTO(af_path_make_folder(path, dir, log->made, sizeof log->made), rc, fail);
    }
    log->file = H5Fcreate(log->tmp, H5F_ACC_TRUNC, fcpl, fapl);
    if (log->file < 0) {
        af_error_set("%s: cannot create the log file (is the folder there and writable?)", path);
        rc = AF_ERR_IO;
        goto fail;
    }
    /* The temporary file is an agefence log from the first: a run killed before its root
     * attributes leaves at "<path>.tmp" a file the next run may replace (af_log_check_path).
     * The file at the path is left alone until af_log_claim. */
    {
        int64_t version = AF_SCHEMA_VERSION;
        hid_t sp = H5Screate(H5S_SCALAR);
        hid_t a =
            H5Acreate2(log->file, "schema_version", H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
        herr_t w = a < 0 ? -1 : H5Awrite(a, H5T_NATIVE_INT64, &version);
        if (a >= 0) {
            H5Aclose(a);
        }
        H5Sclose(sp);
        AF_REQUIRE_GOTO(w >= 0 && H5Fflush(log->file, H5F_SCOPE_GLOBAL) >= 0, AF_ERR_HDF5, rc,
                        fail);
        /* Held from now until the log is finished, so that a reader tells this log, still
         * being written, from a killed run's (common/logfile.h). Without the lock the log is
         * only read as a killed run's while it runs. */
        int fd = af_logfile_hold(log->tmp);
        log->holder = fd >= 0 ? fd + 1 : 0;
    }
    hsize_t chunk = (hsize_t)(flush_interval < 64     ? 64
                              : flush_interval > 4096 ? 4096
                                                      : flush_interval);
    const char *groups[] = {"/ranks", "/calibration", "/host"};
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; ++i) {
        hid_t g = H5Gcreate2(log->file, groups[i], H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        AF_REQUIRE_GOTO(g >= 0, AF_ERR_HDF5, rc, fail);
        H5Gclose(g);
    }
    /* /steps keeps no access and change times: rewriting the commit record then rewrites only
     * the header chunk that holds it. */
    hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
    AF_REQUIRE_GOTO(gcpl >= 0, AF_ERR_HDF5, rc, fail);
    H5Pset_obj_track_times(gcpl, 0);
    log->steps_group = H5Gcreate2(log->file, "/steps", H5P_DEFAULT, gcpl, H5P_DEFAULT);
    H5Pclose(gcpl);
    AF_REQUIRE_GOTO(log->steps_group >= 0, AF_ERR_HDF5, rc, fail);
    AF_CHECK_GOTO(make_commit_record(log), rc, fail);
    for (int i = 0; i < AF_NCOLUMNS; ++i) {
        log->col[i] =
            make_extendible(log->steps_group, af_step_column_names[i],
                            af_step_column_is_int[i] ? H5T_STD_I64LE : H5T_IEEE_F64LE, 1, 1, chunk);
        if (log->col[i] >= 0) {
            attr_str(log->col[i], "doc", af_step_column_docs[i]);
        }
    }
    hid_t ranks = H5Gopen2(log->file, "/ranks", H5P_DEFAULT);
    for (int i = 0; i < AF_NPHASES; ++i) {
        log->phase[i] =
            make_extendible(ranks, af_phase_names[i], H5T_IEEE_F64LE, 2, (hsize_t)nranks, chunk);
        if (log->phase[i] >= 0) {
            attr_str(log->phase[i], "doc", af_phase_docs[i]);
            attr_str(log->phase[i], "units", "microseconds");
        }
    }
    H5Gclose(ranks);
    for (int i = 0; i < AF_NCOLUMNS; ++i) {
        AF_REQUIRE_GOTO(log->col[i] >= 0, AF_ERR_HDF5, rc, fail);
    }
    for (int i = 0; i < AF_NPHASES; ++i) {
        AF_REQUIRE_GOTO(log->phase[i] >= 0, AF_ERR_HDF5, rc, fail);
    }
    log->event_type = (hid_t)af_log_event_type();
    log->events = make_extendible(log->file, "/events", log->event_type, 1, 1, 256);
    AF_REQUIRE_GOTO(log->events >= 0, AF_ERR_HDF5, rc, fail);
    /* The interruptions table, its cause names with it (created now: nothing is created after
     * af_log_begin). */
    log->intr_type = (hid_t)af_log_intr_type();
    log->intr = make_extendible(log->file, "/interruptions", log->intr_type, 1, 1, 256);
    AF_REQUIRE_GOTO(log->intr >= 0, AF_ERR_HDF5, rc, fail);
    {
        char names[512] = "";
        for (int c = 0; c < AF_NINTR; ++c) {
            size_t at = strlen(names);
            snprintf(names + at, sizeof names - at, "%s%d %s", c ? ", " : "", c, af_intr_names[c]);
        }
        AF_CHECK_GOTO(attr_str(log->intr, "cause_names", names), rc, fail);
        AF_CHECK_GOTO(attr_str(log->intr, "doc",
                               "what interrupted a synchronous job, one row each: step, sim_hours "
                               "(the step's), cause (cause_names), device and node (-1: none), "
                               "time_h (the hour it happened, as the model drew it)"),
                      rc, fail);
    }
    H5Pclose(fapl);
    H5Pclose(fcpl);
    *out = log;
    return AF_OK;
fail:
    if (fapl >= 0) {
        H5Pclose(fapl);
    }
    if (fcpl >= 0) {
        H5Pclose(fcpl);
    }
    if (log != NULL) {
        /* The temporary file and the folders made for it go. */
        char tmp[sizeof log->tmp];
        char dir[4096];
        char made[sizeof log->made];
        int created = log->file > 0;
        memcpy(tmp, log->tmp, sizeof tmp);
        af_path_folder_of(log->path, dir, sizeof dir);
        snprintf(made, sizeof made, "%s", log->made);
        log_free(log);
        if (created) {
            unlink(tmp);
        }
        af_path_unmake_folder(dir, made);
        return rc;
    }
    return rc;
}

af_result_t af_log_begin(af_log_t *log)
{
    if (log->plain || log->live) {
        return AF_OK;
    }
    AF_CHECK(write_batch(log, &log->batch[log->fill], 0));
    AF_CHECK(write_commit_record(log));
    if (H5Fstart_swmr_write(log->file) < 0) {
        af_error_set("%s: HDF5 cannot start crash-consistent (SWMR) writing of the log", log->path);
        return AF_ERR_HDF5;
    }
    if (rename(log->tmp, log->path) != 0) {
        af_error_set("%s: cannot move the log there from %s: %s", log->path, log->tmp,
                     strerror(errno));
        return AF_ERR_IO;
    }
    log->live = 1;
    trace(log, "begin %s", log->path);
    /* From here on the writer thread makes the log's HDF5 calls, until the end is begun. */
    return writer_start(log);
}

af_result_t af_log_create_plain(af_log_t **out, const char *path)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    af_log_t *log = af_alloc(sizeof *log);
    if (log == NULL) {
        return AF_ERR_NOMEM;
    }
    log->plain = 1;
    log->flush_interval = 1;
    snprintf(log->path, sizeof log->path, "%s", path);
    char dir[4096];
    af_path_folder_of(path, dir, sizeof dir);
    if (af_path_make_folder(path, dir, log->made, sizeof log->made) != AF_OK) {
        log_free(log);
        return AF_ERR_IO;
    }
    log->file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (log->file < 0) {
        af_error_set("%s: cannot create the file (is the folder there and writable?)", path);
        log_free(log);
        return AF_ERR_IO;
    }
    *out = log;
    return AF_OK;
}

af_result_t af_log_group(af_log_t *log, const char *path)
{
    AF_CHECK(writer_stop(log));
    if (H5Lexists(log->file, path, H5P_DEFAULT) > 0) {
        return AF_OK;
    }
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    hid_t g = H5Gcreate2(log->file, path, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    H5Pclose(lcpl);
    H5_CHECK(g);
    H5Gclose(g);
    return AF_OK;
}

/* Copies the file at from to to (created or truncated): the log's steps, to take its end. */
static af_result_t copy_file(const char *from, const char *to)
{
    int in = open(from, O_RDONLY);
    int out = in < 0 ? -1 : open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    af_result_t rc = AF_OK;
    if (in < 0 || out < 0) {
        af_error_set("%s: cannot copy the log to %s: %s", from, to, strerror(errno));
        rc = AF_ERR_IO;
    }
    char buf[1 << 16];
    while (rc == AF_OK) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n == 0) {
            break;
        }
        ssize_t w = 0;
        while (n > 0 && w < n) {
            ssize_t k = write(out, buf + w, (size_t)(n - w));
            if (k <= 0) {
                n = -1;
                break;
            }
            w += k;
        }
        if (n < 0) {
            af_error_set("%s: cannot copy the log to %s: %s", from, to, strerror(errno));
            rc = AF_ERR_IO;
        }
    }
    if (in >= 0) {
        close(in);
    }
    if (out >= 0 && close(out) != 0 && rc == AF_OK) {
        af_error_set("%s: cannot copy the log to %s: %s", from, to, strerror(errno));
        rc = AF_ERR_IO;
    }
    return rc;
}

/* The end of a live log (the first write that is not a step row or an event: /units, /final).
 * HDF5's SWMR writer may only append to and rewrite the raw data of datasets that exist, so
 * the end is not written in SWMR mode: the steps are flushed and committed, the file closed
 * (which ends SWMR writing and leaves at the path the log of a run that did not finish, its
 * steps complete), copied to "<path>.tmp" and opened there as an ordinary HDF5 file. The end is
 * written into that copy, which af_log_close moves to the path in one rename: a kill at any
 * moment leaves at the path either the steps without an end or the whole log. */
static af_result_t end_live(af_log_t *log)
{
    AF_CHECK(af_log_flush(log));
    for (int i = 0; i < AF_NCOLUMNS; ++i) {
        H5Dclose(log->col[i]);
        log->col[i] = -1;
    }
    for (int i = 0; i < AF_NPHASES; ++i) {
        H5Dclose(log->phase[i]);
        log->phase[i] = -1;
    }
    H5Dclose(log->events);
    log->events = -1;
    H5Dclose(log->intr);
    log->intr = -1;
    H5Dclose(log->commit);
    log->commit = -1;
    H5Gclose(log->steps_group);
    log->steps_group = -1;
    herr_t c = H5Fclose(log->file);
    log->file = -1;
    H5_CHECK(c);
    trace(log, "steps closed");
    AF_CHECK(copy_file(log->path, log->tmp));
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5_CHECK(fapl);
    H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_V110);
    log->file = H5Fopen(log->tmp, H5F_ACC_RDWR, fapl);
    H5Pclose(fapl);
    if (log->file < 0) {
        af_error_set("%s: cannot open the copy of the log to write its end", log->tmp);
        unlink(log->tmp);
        return AF_ERR_IO;
    }
    log->ending = 1;
    return AF_OK;
}

/* Where a path of the log is written: in the file, after the end of a live log's steps (after
 * af_log_begin only step rows and events are written in SWMR mode; anything else ends it). */
static af_result_t writable(af_log_t *log)
{
    AF_CHECK(writer_stop(log));
    if (log->live && !log->ending) {
        AF_CHECK(end_live(log));
    }
    return AF_OK;
}

/* Opens the object at obj, creating it as a group (with any group above it) when it is not
 * there. */
static hid_t open_obj(af_log_t *log, const char *obj)
{
    if (writable(log) != AF_OK) {
        return -1;
    }
    if (strcmp(obj, "/") != 0) {
        htri_t there = H5Lexists(log->file, obj, H5P_DEFAULT);
        if (there <= 0 && af_log_group(log, obj) != AF_OK) {
            return -1;
        }
    }
    return H5Oopen(log->file, obj, H5P_DEFAULT);
}

af_result_t af_log_attr_str(af_log_t *log, const char *obj, const char *name, const char *value)
{
    hid_t o = open_obj(log, obj);
    H5_CHECK(o);
    af_result_t rc = attr_str(o, name, value);
    H5Oclose(o);
    return rc;
}

/* Whether attribute a is a scalar of type t. */
static int attr_is(hid_t a, hid_t t)
{
    hid_t at = H5Aget_type(a);
    hid_t as = H5Aget_space(a);
    int same =
        at >= 0 && as >= 0 && H5Tequal(at, t) > 0 && H5Sget_simple_extent_type(as) == H5S_SCALAR;
    if (at >= 0) {
        H5Tclose(at);
    }
    if (as >= 0) {
        H5Sclose(as);
    }
    return same;
}

static af_result_t attr_scalar(af_log_t *log, const char *obj, const char *name, hid_t ftype,
                               hid_t mtype, const void *v)
{
    hid_t o = open_obj(log, obj);
    H5_CHECK(o);
    hid_t a = -1;
    if (H5Aexists(o, name) > 0) {
        /* A scalar of the same type is rewritten where it is: one object-header chunk changes
         * (what a crash-consistent log may do after af_log_begin, see log.h). */
        a = H5Aopen(o, name, H5P_DEFAULT);
        if (a >= 0 && !attr_is(a, ftype)) {
            H5Aclose(a);
            a = -1;
            H5Adelete(o, name);
        }
    }
    hid_t s = H5Screate(H5S_SCALAR);
    if (a < 0) {
        a = H5Acreate2(o, name, ftype, s, H5P_DEFAULT, H5P_DEFAULT);
    }
    herr_t w = a < 0 ? -1 : H5Awrite(a, mtype, v);
    if (a >= 0) {
        H5Aclose(a);
    }
    H5Sclose(s);
    H5Oclose(o);
    H5_CHECK(w);
    return AF_OK;
}

af_result_t af_log_attr_i64(af_log_t *log, const char *obj, const char *name, int64_t value)
{
    return attr_scalar(log, obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value);
}

af_result_t af_log_attr_f64(af_log_t *log, const char *obj, const char *name, double value)
{
    return attr_scalar(log, obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value);
}

static af_result_t write_fixed(af_log_t *log, const char *path, hid_t ftype, hid_t mtype,
                               const void *v, size_t n)
{
    AF_CHECK(writable(log));
    hid_t loc = log->file;
    const char *rest = path;
    hsize_t dims[1] = {(hsize_t)n};
    hid_t s = H5Screate_simple(1, dims, NULL);
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    hid_t d = H5Dcreate2(loc, rest, ftype, s, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    herr_t w = d < 0 ? -1 : (n ? H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) : 0);
    if (d >= 0) {
        H5Dclose(d);
    }
    H5Pclose(lcpl);
    H5Sclose(s);
    if (w < 0) {
        af_error_set("HDF5: cannot write %s", path);
        return AF_ERR_HDF5;
    }
    return AF_OK;
}

af_result_t af_log_write_f64(af_log_t *log, const char *path, const double *v, size_t n)
{
    return write_fixed(log, path, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, v, n);
}

af_result_t af_log_write_i64(af_log_t *log, const char *path, const int64_t *v, size_t n)
{
    return write_fixed(log, path, H5T_STD_I64LE, H5T_NATIVE_INT64, v, n);
}

af_result_t af_log_calibration(af_log_t *log, const char *name, const double *samples_us, int n)
{
    char path[128];
    snprintf(path, sizeof path, "/calibration/%s", name);
    AF_CHECK(af_log_write_f64(log, path, samples_us, (size_t)n));
    double *sorted = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (sorted == NULL) {
        return AF_ERR_NOMEM;
    }
    memcpy(sorted, samples_us, sizeof(double) * (size_t)n);
    af_sort_doubles(sorted, (size_t)n);
    af_result_t rc = AF_OK;
    AF_CHECK_GOTO(af_log_attr_f64(log, path, "min", n ? sorted[0] : 0), rc, out);
    AF_CHECK_GOTO(af_log_attr_f64(log, path, "p10", af_percentile_sorted(sorted, (size_t)n, 10)),
                  rc, out);
    AF_CHECK_GOTO(af_log_attr_f64(log, path, "p50", af_percentile_sorted(sorted, (size_t)n, 50)),
                  rc, out);
    AF_CHECK_GOTO(af_log_attr_f64(log, path, "p90", af_percentile_sorted(sorted, (size_t)n, 90)),
                  rc, out);
    AF_CHECK_GOTO(af_log_attr_str(log, path, "units", "microseconds"), rc, out);
out:
    free(sorted);
    return rc;
}

/* Extends a dataset along axis 0 by n rows and writes buf there. */
static af_result_t extend_write(hid_t d, int rank, hsize_t cols, int64_t at, int64_t n, hid_t mtype,
                                const void *buf)
{
    hsize_t size[2] = {(hsize_t)(at + n), cols};
    H5_CHECK(H5Dset_extent(d, size));
    hid_t fs = H5Dget_space(d);
    hsize_t start[2] = {(hsize_t)at, 0};
    hsize_t count[2] = {(hsize_t)n, cols};
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
    hid_t ms = H5Screate_simple(rank, count, NULL);
    herr_t w = H5Dwrite(d, mtype, ms, fs, H5P_DEFAULT, buf);
    H5Sclose(ms);
    H5Sclose(fs);
    H5_CHECK(w);
    return AF_OK;
}

/* Writes batch b (and empties it): its rows, events and interruptions. */
static af_result_t write_pending(af_log_t *log, log_batch_t *b)
{
    int64_t n = b->rows_n;
    if (n > 0) {
        for (int c = 0; c < AF_NCOLUMNS; ++c) {
            /* Column c of each buffered row: rows are structs of 8-byte fields in column order. */
            for (int64_t r = 0; r < n; ++r) {
                memcpy(&log->colbuf[r], (const char *)&b->rows[r] + (size_t)c * 8, 8);
            }
            AF_CHECK(extend_write(log->col[c], 1, 1, log->rows_written, n,
                                  af_step_column_is_int[c] ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE,
                                  log->colbuf));
        }
        size_t R = (size_t)log->nranks;
        for (int p = 0; p < AF_NPHASES; ++p) {
            for (int64_t r = 0; r < n; ++r) {
                memcpy(&log->phase_tmp[(size_t)r * R],
                       &b->phase_buf[((size_t)r * AF_NPHASES + (size_t)p) * R], sizeof(double) * R);
            }
            AF_CHECK(extend_write(log->phase[p], 2, (hsize_t)R, log->rows_written, n,
                                  H5T_NATIVE_DOUBLE, log->phase_tmp));
        }
        log->rows_written += n;
        b->rows_n = 0;
    }
    if (b->events_n > 0) {
        AF_CHECK(extend_write(log->events, 1, 1, log->events_written, b->events_n, log->event_type,
                              b->ev));
        log->events_written += b->events_n;
        b->events_n = 0;
    }
    if (b->intr_n > 0) {
        AF_CHECK(
            extend_write(log->intr, 1, 1, log->intr_written, b->intr_n, log->intr_type, b->intr));
        log->intr_written += b->intr_n;
        b->intr_n = 0;
    }
    return AF_OK;
}

/* Makes what is written so far the log's committed part. Two flushes: the rows and events
 * first (SWMR keeps the file consistent while HDF5 writes them, but one dataset may be extended
 * on disk before another), then the commit record that says how many of them are complete, in
 * one write. A SIGKILL anywhere in between leaves the previous record, and at least that many
 * rows in every dataset. */
static af_result_t commit(af_log_t *log)
{
    H5_CHECK(H5Fflush(log->file, H5F_SCOPE_GLOBAL));
    if (log->live && ++log->commits_seen == log->commit_fail_at) {
        af_error_set("%s: the log's writer could not commit %lld steps (AGEFENCE_DEBUG=logfail)",
                     log->path, (long long)log->rows_written);
        return AF_ERR_IO;
    }
    AF_CHECK(write_commit_record(log));
    H5_CHECK(H5Fflush(log->file, H5F_SCOPE_GLOBAL));
    if (log->live) {
        trace(log, "commit %lld %lld", (long long)log->rows_written,
              (long long)log->events_written);
    }
    return AF_OK;
}

/* Writes batch b and, when commit is set, commits it: the writer thread's work (the step
 * thread's before af_log_begin and once the end is begun). */
static af_result_t write_batch(af_log_t *log, log_batch_t *b, int commit_after)
{
    AF_CHECK(write_pending(log, b));
    if (commit_after) {
        AF_CHECK(commit(log));
    }
    return AF_OK;
}

af_result_t af_log_append(af_log_t *log, const af_step_row_t *row, const double *phases)
{
    if (log->ending) {
        af_error_set("%s: a step row after the log's end was begun", log->path);
        return AF_ERR_INTERNAL;
    }
    if (log->batch[log->fill].rows_n == log->flush_interval) {
        AF_CHECK(hand_over(log, 0));
    }
    log_batch_t *b = &log->batch[log->fill];
    b->rows[b->rows_n] = *row;
    memcpy(&b->phase_buf[(size_t)b->rows_n * AF_NPHASES * (size_t)log->nranks], phases,
           sizeof(double) * AF_NPHASES * (size_t)log->nranks);
    b->rows_n++;
    log->rows_appended++;
    return AF_OK;
}

af_result_t af_log_event(af_log_t *log, const af_event_row_t *ev)
{
    if (log->ending) {
        af_error_set("%s: an event after the log's end was begun", log->path);
        return AF_ERR_INTERNAL;
    }
    if (++log->events_seen == log->event_fail_at) {
        af_error_set("%s: event %lld not written (AGEFENCE_DEBUG=eventfail)", log->path,
                     (long long)log->events_seen);
        return AF_ERR_IO;
    }
    if (log->batch[log->fill].events_n == AF_EVENT_BUFFER) {
        AF_CHECK(hand_over(log, 0));
    }
    log_batch_t *b = &log->batch[log->fill];
    b->ev[b->events_n++] = *ev;
    return AF_OK;
}

af_result_t af_log_interruption(af_log_t *log, const af_intr_row_t *row)
{
    if (log->ending || log->plain || log->intr <= 0) {
        af_error_set("%s: an interruption where the log takes none", log->path);
        return AF_ERR_INTERNAL;
    }
    if (log->batch[log->fill].intr_n == AF_INTR_BUFFER) {
        AF_CHECK(hand_over(log, 0));
    }
    log_batch_t *b = &log->batch[log->fill];
    b->intr[b->intr_n++] = *row;
    return AF_OK;
}

af_result_t af_log_submit(af_log_t *log)
{
    if (log->plain || log->ending) {
        return af_log_flush(log);
    }
    return hand_over(log, 1);
}

af_result_t af_log_flush(af_log_t *log)
{
    if (log->plain || log->ending) {
        H5_CHECK(H5Fflush(log->file, H5F_SCOPE_GLOBAL));
        return AF_OK;
    }
    AF_CHECK(hand_over(log, 1));
    if (!log->w.running) {
        return AF_OK;
    }
    pthread_mutex_lock(&log->w.mu);
    writer_wait_locked(log);
    af_result_t rc = writer_error(log);
    pthread_mutex_unlock(&log->w.mu);
    return rc;
}

double af_log_writer_cpu_us(af_log_t *log)
{
    if (log->w.running) {
        pthread_mutex_lock(&log->w.mu);
    }
    double cpu_us = log->w.cpu_us;
    if (log->w.running) {
        pthread_mutex_unlock(&log->w.mu);
    }
    return cpu_us;
}

void af_log_writer_stats(af_log_t *log, double *busy_us, double *wait_us, int64_t *batches)
{
    if (log->w.running) {
        pthread_mutex_lock(&log->w.mu);
    }
    *busy_us = log->w.busy_us;
    *wait_us = log->wait_us;
    *batches = log->w.batches;
    if (log->w.running) {
        pthread_mutex_unlock(&log->w.mu);
    }
}

int64_t af_log_rows(const af_log_t *log)
{
    return log->rows_appended;
}

af_result_t af_log_close(af_log_t **plog)
{
    if (plog == NULL || *plog == NULL) {
        return AF_OK;
    }
    af_log_t *log = *plog;
    /* The writer finishes its batch and stops; the rest is written here. A log whose writer
     * failed takes nothing more: its path keeps the steps of its last commit. */
    af_result_t rc = writer_stop(log);
    if (rc == AF_OK) {
        rc = af_log_flush(log);
    }
    int move = !log->plain && (!log->live || log->ending);
    int ending = log->ending;
    char tmp[sizeof log->tmp];
    char path[sizeof log->path];
    char trace_path[sizeof log->trace];
    memcpy(tmp, log->tmp, sizeof tmp);
    memcpy(path, log->path, sizeof path);
    memcpy(trace_path, log->trace, sizeof trace_path);
    /* The writer's lock stays until the finished log is at the path. */
    int holder = log->holder;
    log->holder = 0;
    log_free(log);
    *plog = NULL;
    /* A log that never went live (the run failed before its first step), and the end of one
     * that did (end_live), are complete once closed: they move to the path then, in one
     * rename. An end that failed is not moved: the path keeps the steps. */
    if (move && rc != AF_OK) {
        unlink(tmp);
    } else if (move && rename(tmp, path) != 0) {
        af_error_set("%s: cannot move the log there from %s: %s", path, tmp, strerror(errno));
        rc = AF_ERR_IO;
    } else if (move && ending && trace_path[0] != '\0') {
        af_log_t t = {.file = -1};
        snprintf(t.trace, sizeof t.trace, "%s", trace_path);
        trace(&t, "final");
    }
    if (holder > 0) {
        close(holder - 1);
    }
    return rc;
}

void af_log_discard(af_log_t **plog)
{
    if (plog == NULL || *plog == NULL) {
        return;
    }
    af_log_t *log = *plog;
    char name[sizeof log->tmp];
    snprintf(name, sizeof name, "%s",
             log->plain || (log->live && !log->ending) ? log->path : log->tmp);
    /* The folders made for the log go with it (a run refused before its first step leaves
     * nothing behind). */
    char dir[4096];
    char made[sizeof log->made];
    af_path_folder_of(log->path, dir, sizeof dir);
    snprintf(made, sizeof made, "%s", log->made);
    log_free(log);
    *plog = NULL;
    unlink(name);
    af_path_unmake_folder(dir, made);
}
