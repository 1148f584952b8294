/* agefence log reader: opens a log with a clear one-line error for every kind of bad file, and
 * reads its attributes, columns and events as common/log_schema.h describes them. The report
 * (analysis/) and the benchmarks that read a run back (bench/) share it. */
#ifndef AF_LOGFILE_H
#define AF_LOGFILE_H

#include <stddef.h>
#include <stdint.h>

#include "af_result.h"
#include "log_schema.h"

typedef struct af_logfile {
    int64_t file; /* hid_t */
    int64_t schema_version;
    char path[512];
    int live;             /* opened with SWMR read access: its writer was killed (or still runs) */
    int writing;          /* not finished, and its writer still holds it (af_logfile_held) */
    int finished;         /* /final@exit_reason is there */
    int64_t rows_limit;   /* rows of /steps and /ranks that count (-1: all there are) */
    int64_t events_limit; /* rows of /events that count (-1: all there are) */
} af_logfile_t;

/* Opens read-only. AF_ERR_USAGE with one line in err for: a missing or unreadable file, a file
 * that is not HDF5 (or is truncated), an HDF5 file that is not an agefence log, and a log of a
 * newer schema than this reader knows. A log whose writer was killed is still marked as open
 * for (SWMR) writing: it is opened with SWMR read access. When the run did not finish (no
 * /final@exit_reason), only the rows its commit record (/committed; /steps@committed before schema
 * 3) counts are read: af_logfile_shape, af_logfile_events_count and the readers below see that
 * prefix (sim/io/log.h, "Crash consistency"). */
af_result_t af_logfile_open(af_logfile_t *lf, const char *path, char *err, size_t errlen);
void af_logfile_close(af_logfile_t *lf);

/* A run's writer holds its log while it writes it: a write lock of its own open file
 * description (Linux's OFD locks: not dropped when another descriptor of the file closes) on one
 * byte far beyond any data, AF_LOGFILE_WRITER_BYTE, which HDF5 never locks or writes. A reader
 * tells a log still being written (read up to its last flush) from one whose writer was killed
 * (the lock goes with the process). af_logfile_hold takes the lock on a new descriptor of path
 * and returns it (-1 when the file cannot be opened or locked: the log is then read as a
 * killed run's until it is finished); closing the descriptor releases it. af_logfile_held is 1
 * when another open file description holds the lock, 0 otherwise. */
#define AF_LOGFILE_WRITER_BYTE ((long long)1 << 62)
int af_logfile_hold(const char *path);
int af_logfile_held(const char *path);

/* Whether path is an agefence log: a regular file that HDF5 opens (with SWMR read access when
 * a killed writer left it marked) and whose root has the attribute schema_version, of any
 * version. 0 for anything else (missing, unreadable, another file). The run's writer asks it
 * before it replaces a file (sim/io/log.c, af_log_check_path). */
int af_logfile_is_log(const char *path);

/* The commit record /committed (schema 3; /steps@committed before): {rows of /steps and /ranks,
 * rows of /events} complete at the writer's last flush. AF_ERR_IO when absent (a log written before
 * it existed) or not two integers >= 0. */
af_result_t af_logfile_committed(const af_logfile_t *lf, int64_t committed[2]);

/* Attributes of an object ("/", "/final", ...). AF_ERR_IO when absent or of another kind. */
af_result_t af_logfile_attr_str(const af_logfile_t *lf, const char *obj, const char *name,
                                char *out, size_t n);
af_result_t af_logfile_attr_i64(const af_logfile_t *lf, const char *obj, const char *name,
                                int64_t *out);
af_result_t af_logfile_attr_f64(const af_logfile_t *lf, const char *obj, const char *name,
                                double *out);

/* Shape of a dataset: rank and dims (up to 2). AF_ERR_IO when absent. */
af_result_t af_logfile_shape(const af_logfile_t *lf, const char *path, int *rank, int64_t *dims);
/* Reads a whole dataset converted to double or int64 (n elements, as its shape says). */
af_result_t af_logfile_read_f64(const af_logfile_t *lf, const char *path, double *out, size_t n);
af_result_t af_logfile_read_i64(const af_logfile_t *lf, const char *path, int64_t *out, size_t n);

/* Rows of /events. AF_ERR_IO when /events is absent or is not a 1-D compound with the fields of
 * af_event_row_t (common/log_schema.h). */
af_result_t af_logfile_events_count(const af_logfile_t *lf, int64_t *n);
/* What is wrong with ftype (a hid_t) as the type of /events, as a phrase in why; empty when it
 * is the event table's type. */
void af_logfile_event_type_problem(int64_t ftype, char *why, size_t n);
/* Reads all n rows of /events (n as af_logfile_events_count says). */
af_result_t af_logfile_read_events(const af_logfile_t *lf, af_event_row_t *out, size_t n);

/* Rows of /interruptions (schema 5) there are; of a run that did not finish, all of them,
 * some of which may be of steps after its commit record (the caller keeps the rows of the
 * steps the record counts: the table is in step order). AF_ERR_IO when the dataset is absent
 * or is not a 1-D compound with the fields of af_intr_row_t. */
af_result_t af_logfile_intr_count(const af_logfile_t *lf, int64_t *n);
/* What is wrong with ftype (a hid_t) as the type of /interruptions, as a phrase in why; empty
 * when it is the table's type. */
void af_logfile_intr_type_problem(int64_t ftype, char *why, size_t n);
/* 1 when /interruptions has the field time_h (logs written before it was added lack it). */
int af_logfile_intr_timed(const af_logfile_t *lf);
/* Reads all n rows of /interruptions (n as af_logfile_intr_count says); in a log without
 * time_h, each row's time_h is its sim_hours (its step's hours). */
af_result_t af_logfile_read_intr(const af_logfile_t *lf, af_intr_row_t *out, size_t n);

#endif
