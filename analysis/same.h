/* agefence-report --same: are two logs the same run? The same scenario on 1 or 400 ranks, with
 * the cpu or the cuda backend, with the step graph off or on, must compute the same bits: this
 * compares what a run computed and leaves aside what only describes the launch. */
#ifndef AF_SAME_H
#define AF_SAME_H

#include <stdio.h>

/* Compares OTHER with RUN, byte for byte: every /steps column, /events, every /units column,
 * /final/state and every /final attribute except end_time (wall-clock time) and
 * graph_instantiations, graph_steps and one_pass_steps (how the steps were issued). Not compared:
 * /ranks (the timings), /calibration, /host and the root attributes (the launch). A log of a run
 * that did not finish is compared up to its commit record (rows of /steps, /events). Prints "same"
 * or one line per difference (the column or attribute, and the first rows that differ) to out.
 * Returns the exit status: 0 the same run, 1 they differ, 2 a log cannot be read (one line on
 * stderr naming it). */
int af_same_run(const char *other, const char *run, FILE *out);

#endif
