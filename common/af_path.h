/* agefence: the one rule every tool follows for the folder of a file it writes (a run's -o, a
 * benchmark's -o, agefence-report --plots DIR; scripts/ensemble.sh -o does the same in shell):
 * missing folders are made, as `mkdir -p` does, once the input is accepted; a path through a
 * regular file, or under a folder the user may not write, is refused with one line before
 * anything is made (docs/running.md, "Where output goes"). */
#ifndef AF_PATH_H
#define AF_PATH_H

#include <stddef.h>

#include "af_result.h"

/* The folder part of path into dir ("." when there is none, "/" for a file at the root). */
void af_path_folder_of(const char *path, char *dir, size_t n);

/* Whether dir exists as a writable folder, or can be made: its nearest existing ancestor is a
 * writable folder. AF_ERR_USAGE with one line (af_error_set) that starts with `what` (the
 * name the user gave, to be named first) and says which part of the path is in the way;
 * nothing is made. */
af_result_t af_path_check_folder(const char *what, const char *dir);

/* Makes dir and its missing ancestors (mode 0777 less the umask). made receives the topmost
 * folder this call made ("" when dir was there), for af_path_unmake. AF_ERR_IO with one line
 * when a mkdir fails; the folders made before it are removed again. */
af_result_t af_path_make_folder(const char *what, const char *dir, char *made, size_t n);

/* Removes what af_path_make_folder made for dir: dir, then each parent up to made, as long as
 * each is empty (a file someone put there since keeps its folder). Nothing when made is "". */
void af_path_unmake_folder(const char *dir, const char *made);

#endif
