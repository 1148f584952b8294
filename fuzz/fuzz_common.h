/* agefence fuzzing: what the libFuzzer harnesses share (fuzz/README.md). Each harness defines
 * LLVMFuzzerTestOneInput; built with -fsanitize=fuzzer it runs under libFuzzer (scripts/fuzz.sh),
 * built with replay_main.c it replays the committed corpus and regressions as a ctest. */
#ifndef AF_FUZZ_COMMON_H
#define AF_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A path for this process's scratch file `tag` (in $TMPDIR, else /dev/shm, else /tmp), the same
 * for every call with the same tag, so that libFuzzer's millions of runs reuse one file. */
const char *af_fuzz_temp_path(const char *tag);

/* Writes size bytes to path; 0 on success. */
int af_fuzz_write_file(const char *path, const void *data, size_t size);

/* A stream that discards what is printed to it (the reports under test print a lot). */
FILE *af_fuzz_devnull(void);

/* Fails the run (abort, so libFuzzer and ASan report it with a stack) with a message: a broken
 * contract of agefence that is not a memory error, e.g. an error returned without a message. */
void af_fuzz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Everything agefence-report does with a log, on the file at path: open it, --check it, read
 * attributes, columns and /events, load the run, compute the summary and every figure, and print
 * the text report and --json to af_fuzz_devnull(). (--compare is left out: its figures are the
 * same keys whatever the file holds, and its quadratic key lookup would slow every run tenfold.)
 * Fails the run when an error comes back without a message or when an HDF5 object is left open. */
void af_fuzz_read_log(const char *path);

#endif
