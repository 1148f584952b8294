/* agefence-report --plots (see plots.h). */
#include "plots.h"

#include "../common/af_path.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Runs argv (argv[0] looked up in PATH when it has no '/'); output to /dev/null when quiet,
 * else stdout to stderr. Returns the exit status, or -1 when it could not start. */
static int run(char *const argv[], int quiet)
{
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0) {
        return -1;
    }
    if (quiet) {
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    } else {
        posix_spawn_file_actions_adddup2(&fa, 2, 1);
    }
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        return -1;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        /* EINTR: wait again */
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int usable_python(const char *py)
{
    char *argv[] = {(char *)py, "-c", "import h5py, matplotlib", NULL};
    return run(argv, 1) == 0;
}

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The directory part of path into out ("." when there is none). */
static void dir_of(const char *path, char *out, size_t n)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL) {
        snprintf(out, n, ".");
    } else {
        snprintf(out, n, "%.*s", (int)(slash - path), path);
    }
}

int af_plots_check_env(FILE *msg)
{
    const char *env = getenv("AGEFENCE_PLOTS_PY");
    if (env == NULL || env[0] == '\0') {
        return 0;
    }
    struct stat st;
    if (stat(env, &st) != 0) {
        fprintf(msg, "agefence-report: AGEFENCE_PLOTS_PY=%s: %s\n", env, strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        fprintf(msg, "agefence-report: AGEFENCE_PLOTS_PY=%s: not a regular file\n", env);
        return -1;
    }
    return 0;
}

int af_plots_check_dir(const char *dir, FILE *msg)
{
    struct stat st;
    const char *why = NULL;
    if (dir[0] == '\0') {
        fprintf(msg, "agefence-report: --plots '': the folder name is empty: name a folder\n");
        return -1;
    }
    if (stat(dir, &st) != 0) {
        if (errno != ENOENT) {
            why = strerror(errno);
        } else {
            /* The rule of every tool's output folder (common/af_path.h): made with its missing
             * parents, unless the path runs through a file or an unwritable folder. */
            char made[4096];
            if (af_path_check_folder(dir, dir) != AF_OK ||
                af_path_make_folder(dir, dir, made, sizeof made) != AF_OK) {
                fprintf(msg, "agefence-report: --plots %s\n", af_error_message());
                return -1;
            }
        }
    } else if (!S_ISDIR(st.st_mode)) {
        why = "not a folder";
    } else if (access(dir, W_OK | X_OK) != 0) {
        why = "the folder is not writable";
    }
    if (why == NULL) {
        return 0;
    }
    fprintf(msg, "agefence-report: --plots %s: %s\n", dir, why);
    return -1;
}

/* The script into out: $AGEFENCE_PLOTS_PY, else plots.py beside the executable (a build tree:
 * the build copies it there), else AF_PLOTS_REL from the executable's directory (an
 * installation, wherever its prefix was moved). Returns 1, or 0 with the reason in why. */
static int find_script(char *out, size_t n, char *why, size_t nwhy)
{
    const char *env = getenv("AGEFENCE_PLOTS_PY");
    if (env != NULL && env[0] != '\0') {
        snprintf(out, n, "%s", env);
        if (is_file(out)) {
            return 1;
        }
        snprintf(why, nwhy, "AGEFENCE_PLOTS_PY=%s is not a file", env);
        return 0;
    }
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) {
        snprintf(why, nwhy,
                 "plots.py not found (/proc/self/exe unreadable: %s; set "
                 "AGEFENCE_PLOTS_PY)",
                 strerror(errno));
        return 0;
    }
    exe[len] = '\0';
    char dir[4096];
    dir_of(exe, dir, sizeof dir);
    snprintf(out, n, "%s/plots.py", dir);
    if (is_file(out)) {
        return 1;
    }
    snprintf(out, n, "%s/%s", dir, AF_PLOTS_REL);
    if (is_file(out)) {
        return 1;
    }
    snprintf(why, nwhy, "plots.py not found beside %s nor at %s (set AGEFENCE_PLOTS_PY)", exe, out);
    return 0;
}

int af_plots_run(const char *path, const char *dir, FILE *msg)
{
    char script[8400];
    char why[12800];
    if (!find_script(script, sizeof script, why, sizeof why)) {
        fprintf(msg, "agefence-report: plots skipped: %s\n", why);
        return AF_PLOTS_UNAVAILABLE;
    }
    const char *env = getenv("AGEFENCE_PYTHON");
    const char *candidates[2] = {"/usr/bin/python3", "python3"};
    int ncand = 2;
    if (env != NULL && env[0] != '\0') {
        candidates[0] = env;
        ncand = 1;
    }
    const char *py = NULL;
    for (int i = 0; i < ncand && py == NULL; ++i) {
        if (usable_python(candidates[i])) {
            py = candidates[i];
        }
    }
    if (py == NULL) {
        fprintf(
            msg,
            "agefence-report: plots skipped: no Python 3 with h5py and matplotlib (tried %s%s%s)\n",
            candidates[0], ncand > 1 ? ", " : "", ncand > 1 ? candidates[1] : "");
        return AF_PLOTS_UNAVAILABLE;
    }
    char *argv[] = {(char *)py, script, (char *)path, (char *)dir, NULL};
    int rc = run(argv, 0);
    if (rc != 0) {
        fprintf(msg, "agefence-report: plots failed: %s %s exited with status %d\n", py, script,
                rc);
        return AF_PLOTS_FAILED;
    }
    return AF_PLOTS_DONE;
}
