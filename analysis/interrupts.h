/* agefence-report: the interruptions of a synchronous job, derived from a log's /events, the
 * way the run writes /interruptions itself (common/log_schema.h, af_intr_row_t): a step's
 * `death` and `sudden` events grouped by what failed, in the order the step's events first
 * name each group (one per node lost, per device lost, per device whose units died of wear-out,
 * sudden failure or a script), and one per `interrupt` event (a job-level cause). The report
 * reads the table when the log has it and derives it from /events for older logs; --check and
 * tests/report_verify.py compare the two. */
#ifndef AF_INTERRUPTS_H
#define AF_INTERRUPTS_H

#include <stdint.h>

#include "../common/log_schema.h"

/* Writes the interruptions of ev[0..nev) into out (room for nev rows: every interruption has an
 * event), with sim_hours NAN (the caller knows the steps' hours), for nodes of devices_per_node
 * devices (< 1: 1). An `interrupt` event of a cause outside the job-level ones is skipped.
 * Returns the number of rows. */
int64_t af_intr_derive(const af_event_row_t *ev, int64_t nev, int64_t devices_per_node,
                       af_intr_row_t *out);

#endif
