/* agefence log checker: validates a log against the schema the writer produces
 * (agefence-report --check, and the tests on every log they produce). */
#ifndef AF_LOGREAD_H
#define AF_LOGREAD_H

#include <stdio.h>

#include "../common/logfile.h"

/* Validates the file against the schema the writer produces (sim/io/log.c, sim/driver/run.c,
 * sim/driver/verdict.c and docs/log.md): every group, dataset and attribute, its type and shape,
 * and the consistency of the contents (contiguous steps, counters against each other, against
 * /events, /units and the /final totals). Prints each violation as one line "PATH: problem" to out
 * and returns how many there were (0: valid). A row-wise violation is reported once per path, at
 * its first row, with the number of further rows. A log whose /final@exit_reason is missing
 * (the run was killed before it finished) gets exactly that one violation for /final and
 * /units, which a killed run cannot have written. */
int af_logfile_check(const af_logfile_t *lf, FILE *out);

#endif
