/* agefence driver, the step log (steplog.c): the rows of /events and /interruptions of a step
 * (rank 0), and the log phase — every rank's payloads batched, gathered to rank 0 every
 * flush_interval steps and written as /steps rows, with the live metrics. */
#ifndef AF_DRIVER_STEPLOG_H
#define AF_DRIVER_STEPLOG_H

#include <stdint.h>

#include "../../common/af_result.h"
#include "../fleet/jobintr.h"
#include "../io/log.h"
#include "../io/metrics.h"
#include "../plan/coord.h"
#include "../plan/shard.h"

struct af_run_state;

/* The step log (rank 0 writes it) and the live metrics. */
typedef struct af_steplog {
    af_payload_t *batch; /* flush_interval + 1 payloads waiting for the next gather */
    int64_t n_batch;
    af_step_row_t *rows;  /* rank 0: the rows of the batch */
    af_payload_t *all;    /* rank 0: nranks x (flush_interval + 1) gathered payloads */
    double *phases;       /* rank 0: AF_NPHASES x nranks of one row */
    af_step_row_t totals; /* rank 0: counters summed over the run */
    af_log_t *log;
    const char *out_path;
    double prev_step_us;
    double prev_log_us;
    int64_t flushed_step; /* rank 0: the last step whose row was written */
    af_metrics_t metrics; /* rank 0, with metrics.textfile */
    int metrics_on;
    int64_t event_log_errors; /* rank 0: events the log could not take (counted, reported) */
} af_steplog_t;

/* Rank 0: one /events row of this step (other ranks: nothing). */
void af_step_event(struct af_run_state *r, const char *kind, int64_t block, int64_t from_slot,
                   int64_t to_slot, int64_t detail);
/* Rank 0: the interruption the death ch[i] makes (of n changes), unless the step counted it
 * already. */
void af_log_death_interruption(struct af_run_state *r, const af_health_change_t *ch, int64_t i,
                               int64_t n);
/* Rank 0: a job-level interruption's event and its /interruptions row. */
void af_log_interrupt(struct af_run_state *r, const af_jobintr_hit_t *x);
/* The log phase (final: flush whatever is batched). Collective. */
af_result_t af_step_log(struct af_run_state *r, int final);
/* Rank 0, once the log is created: the run's root attributes (the resolved configuration,
 * versions, shape, backends, launch, host and memory figures). */
af_result_t af_steplog_root_attrs(struct af_run_state *r);
/* Collective: every rank's hostname, written by rank 0 as the root attribute `hostnames`. */
af_result_t af_steplog_hostnames(struct af_run_state *r);

#endif
