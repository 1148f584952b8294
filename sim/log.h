/* agefence HDF5 log writer. Only rank 0 writes (it gathers every row first), so the file stays
 * consistent whatever happens to the other ranks. Datasets are chunked and extendible along the
 * step axis; rows are buffered (at most flush_interval) and written and flushed to disk
 * together, so a run killed between flushes still leaves a readable file with every step up to
 * the last flush. sim/log_schema.h lists the columns. */
#ifndef AF_LOG_H
#define AF_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "af_result.h"
#include "log_schema.h"

typedef struct af_log af_log_t;

/* Creates (truncates) the file and every group and extendible dataset. */
af_result_t af_log_create(af_log_t **out, const char *path, int nranks, int64_t flush_interval);

/* Creates (truncates) a file with no run schema (benchmark results), and groups in it. */
af_result_t af_log_create_plain(af_log_t **out, const char *path);
af_result_t af_log_group(af_log_t *log, const char *path);

/* Attributes on a group ("/", "/final", "/calibration", ...). */
af_result_t af_log_attr_str(af_log_t *log, const char *obj, const char *name, const char *value);
af_result_t af_log_attr_i64(af_log_t *log, const char *obj, const char *name, int64_t value);
af_result_t af_log_attr_f64(af_log_t *log, const char *obj, const char *name, double value);

/* A fixed-size dataset written once (/final/state, /units/..., /calibration/...). */
af_result_t af_log_write_f64(af_log_t *log, const char *path, const double *v, size_t n);
af_result_t af_log_write_i64(af_log_t *log, const char *path, const int64_t *v, size_t n);

/* Raw samples of a calibration (microseconds) with their p10/p50/p90/min as attributes. */
af_result_t af_log_calibration(af_log_t *log, const char *name, const double *samples_us, int n);

/* Appends one step: its row and its phase times, phases[AF_NPHASES][nranks] in microseconds. */
af_result_t af_log_append(af_log_t *log, const af_step_row_t *row, const double *phases);
/* Appends one event row. */
af_result_t af_log_event(af_log_t *log, const af_event_row_t *ev);
/* Writes every buffered row and event, and flushes the file to disk. */
af_result_t af_log_flush(af_log_t *log);
int64_t af_log_rows(const af_log_t *log);

/* The HDF5 memory type (hid_t) of an af_event_row_t, as /events stores it; the caller closes
 * it with H5Tclose. */
int64_t af_log_event_type(void);

/* Flushes and closes; sets *log to NULL. */
af_result_t af_log_close(af_log_t **log);

/* The percentile p (0..100) of n values, by linear interpolation between closest ranks (the
 * definition numpy uses by default). Sorts v in place. */
double af_percentile_sorted(const double *sorted, size_t n, double p);
void af_sort_doubles(double *v, size_t n);

#endif
