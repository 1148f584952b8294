/* agefence HDF5 log writer. Only rank 0 writes (it gathers every row first), so the file stays
 * consistent whatever happens to the other ranks. Datasets are chunked and extendible along the
 * step axis; rows are buffered (at most flush_interval) and written and flushed to disk
 * together. common/log_schema.h lists the columns.
 *
 * Crash consistency (README, "The log"): a SIGKILL at any moment leaves a readable log.
 *  - The file is built under "<path>.tmp" and moved to its path by af_log_begin, once the
 *    part written up front (root attributes, calibration) is complete: from then on the
 *    path holds a readable log (before, nothing: an earlier log there is moved aside or
 *    removed by af_log_claim once the run is accepted).
 *  - af_log_begin switches HDF5 to SWMR writing (single writer, multiple readers): HDF5 then
 *    orders its writes so that the file on disk is consistent at every moment. A killed
 *    run's file stays marked as open for SWMR writing: readers open it with SWMR read access
 *    (common/logfile.c does so by itself; h5py: swmr=True).
 *  - In SWMR mode the writer does only what HDF5's SWMR contract allows: it appends rows to
 *    the extendible datasets /steps/..., /ranks/..., /events and /interruptions, and rewrites
 *    the raw data of the commit record /committed. Every object (groups, datasets,
 *    attributes) is created before af_log_begin.
 *  - Each flush writes the rows and events, flushes, then writes the commit record
 *    /committed = {rows, events} and flushes again: a reader of a killed run reads that many
 *    rows of /steps and /ranks and of /events (a dataset may hold more: rows of the flush
 *    under way).
 *  - The end (/units, /final, attributes written after the steps) is not written in SWMR mode:
 *    the first such write commits the steps and closes the file, which ends SWMR writing,
 *    copies it to "<path>.tmp" and writes the end there as an ordinary HDF5 file;
 *    af_log_close moves it to the path in one rename. A run killed before has its steps and
 *    neither /units nor /final; a stale "<path>.tmp" may remain beside it. After the end
 *    has begun no step row or event can be added.
 *
 * The writer thread. From af_log_begin until the end is begun, a thread of the log's own writes
 * the rows, events and interruptions and makes the commits, off the step's path: the log holds
 * two batches of them (allocated at create, before the allocator's seal); the caller fills one
 * while the thread writes the other, and af_log_submit hands the full one over and returns
 * (waiting only while the thread still writes the batch before). Only one thread calls HDF5
 * at a time: while the writer runs the caller's functions here touch only the batch it fills,
 * and every other call (an attribute, a dataset, the end, close, discard) first lets the writer
 * finish and joins it, and then writes itself. The writer makes no MPI call and blocks every
 * signal. Its first error ends its writing (the file keeps its last commit) and is returned,
 * with its message, by the next call that hands over, waits or stops it. The functions here
 * are the calling thread's: one thread uses a log. */
#ifndef AF_LOG_H
#define AF_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "../../common/af_result.h"
#include "../../common/log_schema.h"

typedef struct af_log af_log_t;

/* Whether a run may write its log to path, touching nothing: AF_OK, or AF_ERR_USAGE with one
 * line (af_error_message) when path is empty, names a folder, lies in a folder that is not a
 * folder or not writable, or under a missing folder that cannot be made there (its nearest
 * existing ancestor is not a writable folder: common/af_path.h; af_log_create makes it), when
 * AGEFENCE_BACKUPS is not a number af_log_backups takes, or when a file is at path or at
 * "<path>.tmp" that is not an agefence log (common/logfile.h, af_logfile_is_log), a folder, or the
 * scenario file being read (scenario, NULL for none; compared by device and inode). An agefence log
 * at either name is allowed: af_log_claim keeps or removes the one at path; the one at "<path>.tmp"
 * is a killed run's leftover, replaced by af_log_create. */
af_result_t af_log_check_path(const char *path, const char *scenario);

/* Creates the log under "<path>.tmp" (replacing a killed run's leftover there) with every group
 * and extendible dataset; the file at path is not touched (af_log_claim). With
 * AGEFENCE_LOG_TRACE=FILE in the environment, FILE gets one line per step of the log's life, each
 * written once that step is on disk: "begin PATH", "commit ROWS EVENTS", "steps closed" (the steps'
 * file closed, before the end is written), "final" (the end moved to the path), "closed" (a testing
 * aid: tests/crashlog.sh). With AGEFENCE_DEBUG= eventfail=N the N-th call of af_log_event fails
 * (tests/checks_fail.sh); with logfail=N the N-th commit after af_log_begin fails between its two
 * flushes (its rows written, the record not); with logslow=MS the writer thread takes MS
 * milliseconds more for each batch (tests/logwriter.sh). */
af_result_t af_log_create(af_log_t **out, const char *path, int nranks, int64_t flush_interval);

/* Clears the log's path once the run is accepted (every check of the scenario, the launch and
 * the memory passed), before the first write that can land there: an agefence log at path is
 * kept as "NAME.~N~" in its folder (GNU's numbered backups), N one more than the highest
 * there, whose name goes to kept (empty when nothing was there) with a note of the oldest
 * backups removed so that at most AGEFENCE_BACKUPS are left (af_log_backups); with force, or
 * AGEFENCE_BACKUPS=0, it is removed instead. A file there that is not an
 * agefence log is left alone: AF_ERR_USAGE. AF_ERR_IO when it cannot be moved or removed. */
af_result_t af_log_claim(af_log_t *log, int force, char *kept, size_t n);

/* How many earlier logs af_log_claim keeps beside a log's path: AGEFENCE_BACKUPS from the
 * environment (a whole number from 0 to AF_LOG_BACKUPS_MAX), AF_LOG_BACKUPS_DEFAULT when it is
 * unset or empty; AF_ERR_USAGE with one line for anything else. */
enum { AF_LOG_BACKUPS_DEFAULT = 5, AF_LOG_BACKUPS_MAX = 999, AF_LOG_BACKUPS_SCAN = 1024 };
af_result_t af_log_backups(int *keep);

/* Everything written so far is what a killed run keeps besides its rows: starts crash-
 * consistent (SWMR) writing and moves the file to its path. Call it once, before the first
 * step. A log closed without it is moved to its path when closed. */
af_result_t af_log_begin(af_log_t *log);

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
/* Appends one row of /interruptions. Its rows are committed with their steps: a reader of a
 * killed run keeps the rows whose step /committed counts (the table is in step order, and a
 * step's rows are written in the flush that writes its row). */
af_result_t af_log_interruption(af_log_t *log, const af_intr_row_t *row);
/* Hands every buffered row, event and interruption to the writer thread, which writes,
 * flushes and commits them (the commit record), and returns: the commit is on disk later (its
 * trace line says when). Waits only while the writer still writes the batch handed over
 * before. Returns an error the writer met since. Without the writer (before af_log_begin, after
 * the end is begun) it is af_log_flush. */
af_result_t af_log_submit(af_log_t *log);
/* Writes every buffered row and event, flushes, and commits them (the commit record): returns
 * once the commit is on disk. */
af_result_t af_log_flush(af_log_t *log);
/* The rows appended so far (written or not). */
int64_t af_log_rows(const af_log_t *log);
/* The writer thread's figures so far: busy_us, the time it spent writing and committing
 * batches (its own thread's, off the step's path); wait_us, the time the caller waited for it
 * to finish a batch before it could hand over the next (or stop it); batches, those it wrote. */
void af_log_writer_stats(af_log_t *log, double *busy_us, double *wait_us, int64_t *batches);
/* The writer thread's CPU time in those batches so far, in µs (its own thread's clock): what
 * the log takes from the cores it shares with the ranks, beside busy_us, which is wall time. */
double af_log_writer_cpu_us(af_log_t *log);

/* Flushes, links /final and /units into the file, closes; sets *log to NULL. */
af_result_t af_log_close(af_log_t **log);
/* Closes without committing anything more and removes the file (a run that did nothing);
 * sets *log to NULL. */
void af_log_discard(af_log_t **log);

#endif
