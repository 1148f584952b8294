/* A preloaded shim for the crash-consistency test (tests/crashlog.sh): it counts the writes
 * (pwrite, pwrite64) a process makes to files whose path contains $AF_CRASH_MATCH, and kills
 * the process with SIGKILL just before write number $AF_CRASH_AT (1-based), so that exactly
 * writes 1 .. AF_CRASH_AT-1 reached the file. Since a file changes only when it is written,
 * killing before each write in turn reaches every state a SIGKILL at any moment can leave.
 * With $AF_CRASH_LOG set, it appends "write N OFFSET SIZE" for each counted write to that file
 * (before the write; "kill N" before the kill). Preload it (LD_PRELOAD) into the process. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);

static long counted;

/* Whether fd is a file whose path contains $AF_CRASH_MATCH. */
static int watched(int fd)
{
    const char *match = getenv("AF_CRASH_MATCH");
    if (match == NULL || match[0] == '\0') {
        return 0;
    }
    char link[64];
    char path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0) {
        return 0;
    }
    path[n] = '\0';
    return strstr(path, match) != NULL;
}

static void note(const char *what, long n, off_t off, size_t size)
{
    const char *log = getenv("AF_CRASH_LOG");
    if (log == NULL || log[0] == '\0') {
        return;
    }
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0) {
        return;
    }
    char line[128];
    int len = snprintf(line, sizeof line, "%s %ld %lld %zu\n", what, n, (long long)off, size);
    if (write(fd, line, (size_t)len) < 0) {
        /* A lost trace line only weakens the test's diagnostics. */
    }
    close(fd);
}

/* Called before every write: counts it and kills the process at the chosen one. */
static void before_write(int fd, off_t off, size_t size)
{
    if (!watched(fd)) {
        return;
    }
    counted++;
    const char *at = getenv("AF_CRASH_AT");
    if (at != NULL && atol(at) == counted) {
        note("kill", counted, off, size);
        kill(getpid(), SIGKILL);
    }
    note("write", counted, off, size);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    static pwrite_fn real;
    if (real == NULL) {
        real = (pwrite_fn)dlsym(RTLD_NEXT, "pwrite");
    }
    before_write(fd, off, n);
    return real(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    static pwrite_fn real;
    if (real == NULL) {
        real = (pwrite_fn)dlsym(RTLD_NEXT, "pwrite64");
    }
    before_write(fd, off, n);
    return real(fd, buf, n, off);
}
