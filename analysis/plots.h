/* agefence-report --plots: runs analysis/plots.py (Python 3 with h5py and matplotlib) on a log.
 * The interpreter is $AGEFENCE_PYTHON when set, else the first of /usr/bin/python3 and python3
 * on PATH that imports h5py and matplotlib. The script is $AGEFENCE_PLOTS_PY when set, else
 * plots.py beside the executable (a build tree, where the build copies it), else
 * ../share/agefence/plots.py from the executable's directory (an installation; found through
 * /proc/self/exe, so a moved prefix or a symbolic link to the binary still finds it). Nothing
 * refers to the source tree. */
#ifndef AF_PLOTS_H
#define AF_PLOTS_H

#include <stdio.h>

/* The installed script's path from the executable's directory: CMake sets it from
 * GNUInstallDirs (CMAKE_INSTALL_BINDIR to CMAKE_INSTALL_DATADIR/agefence). */
#ifndef AF_PLOTS_REL
#define AF_PLOTS_REL "../share/agefence/plots.py"
#endif

enum {
    AF_PLOTS_DONE = 0,        /* the figures are in dir */
    AF_PLOTS_UNAVAILABLE = 1, /* no usable Python or no script: one line said so on msg */
    AF_PLOTS_FAILED = 2       /* the script ran and failed (its own messages went to stderr) */
};

/* 0 when $AGEFENCE_PLOTS_PY is unset, empty or a regular file; else -1 after one line on msg
 * naming the variable, its value and what is wrong with it (bad input: the caller exits 2). */
int af_plots_check_env(FILE *msg);

/* 0 when dir can take the figures: a writable directory, or a new one made now with its missing
 * parents (the rule of every tool's output folder, common/af_path.h); else -1 after one line on
 * msg naming the folder and what is wrong with it (the empty name, a path through a file, an
 * unwritable folder: bad input, the caller exits 2 before any output of the report). */
int af_plots_check_dir(const char *dir, FILE *msg);

/* Writes the PNG figures of the log at path into dir (created if needed). Messages go to msg,
 * the script's output to stderr. */
int af_plots_run(const char *path, const char *dir, FILE *msg);

#endif
