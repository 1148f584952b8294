/* agefence-report: the one-screen text report of a run, read top to bottom: the run, its
 * correctness, containment, recovery, latency (per phase, per blackout band, with and without
 * moves, the coordinator against the all-reduce floor) and the worst steps. */
#ifndef AF_TEXTREPORT_H
#define AF_TEXTREPORT_H

#include <stdio.h>

#include "summary.h"

void af_report_text(const af_summary_t *s, FILE *out);

#endif
