/* agefence-report --plots: runs analysis/plots.py (Python 3 with h5py and matplotlib) on a log.
 * The interpreter is $AGEFENCE_PYTHON when set, else the first of /usr/bin/python3 and python3
 * on PATH that imports h5py and matplotlib. The script is $AGEFENCE_PLOTS_PY when set, else
 * plots.py beside this source file (a build tree), beside the executable, or in
 * ../share/agefence/ from it (an installation). */
#ifndef AF_PLOTS_H
#define AF_PLOTS_H

#include <stdio.h>

enum {
    AF_PLOTS_DONE = 0,        /* the figures are in dir */
    AF_PLOTS_UNAVAILABLE = 1, /* no usable Python or no script: one line said so on msg */
    AF_PLOTS_FAILED = 2       /* the script ran and failed (its own messages went to stderr) */
};

/* Writes the PNG figures of the log at path into dir (created if needed). Messages go to msg,
 * the script's output to stderr. */
int af_plots_run(const char *path, const char *dir, FILE *msg);

#endif
