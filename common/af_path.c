/* agefence: the folders of the files the tools write (see af_path.h). */
#include "af_path.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void af_path_folder_of(const char *path, char *dir, size_t n)
{
    const char *slash = strrchr(path, '/');
    while (slash != NULL && slash > path && slash[-1] == '/') {
        --slash; /* "a//b": the folder is "a" */
    }
    if (slash == NULL) {
        snprintf(dir, n, ".");
    } else if (slash == path) {
        snprintf(dir, n, "/");
    } else {
        snprintf(dir, n, "%.*s", (int)(slash - path), path);
    }
}

/* Strips dir's last component in place: 0 when there is none left to strip. */
static int up(char *dir)
{
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/') {
        dir[--len] = '\0';
    }
    char *slash = strrchr(dir, '/');
    if (slash == NULL) {
        if (strcmp(dir, ".") == 0) {
            return 0;
        }
        snprintf(dir, 2, ".");
        return 1;
    }
    if (slash == dir) {
        if (dir[1] == '\0') {
            return 0;
        }
        dir[1] = '\0';
        return 1;
    }
    while (slash > dir && slash[-1] == '/') {
        --slash;
    }
    *slash = '\0';
    return 1;
}

af_result_t af_path_check_folder(const char *what, const char *dir)
{
    char at[4096];
    if (snprintf(at, sizeof at, "%s", dir) >= (int)sizeof at) {
        af_error_set("the folder is too long (%zu bytes): %.100s...", strlen(dir), what);
        return AF_ERR_USAGE;
    }
    struct stat st;
    /* The nearest part of the path that is there decides. */
    while (stat(at, &st) != 0) {
        if ((errno != ENOENT && errno != ENOTDIR) || !up(at)) {
            af_error_set("%s: cannot use the folder %s: %s", what, at, strerror(errno));
            return AF_ERR_USAGE;
        }
    }
    if (!S_ISDIR(st.st_mode)) {
        af_error_set("%s: cannot create the folder: %s is not a folder", what, at);
        return AF_ERR_USAGE;
    }
    if (access(at, W_OK | X_OK) != 0) {
        af_error_set("%s: the folder %s is not writable", what, at);
        return AF_ERR_USAGE;
    }
    return AF_OK;
}

af_result_t af_path_make_folder(const char *what, const char *dir, char *made, size_t n)
{
    made[0] = '\0';
    struct stat st;
    if (stat(dir, &st) == 0) {
        return AF_OK;
    }
    char at[4096];
    if (snprintf(at, sizeof at, "%s", dir) >= (int)sizeof at) {
        af_error_set("the folder is too long (%zu bytes): %.100s...", strlen(dir), what);
        return AF_ERR_USAGE;
    }
    /* Each prefix that ends at a slash, from the top: the missing ones are made. */
    size_t len = strlen(at);
    for (size_t i = 1; i <= len; ++i) {
        if (at[i] != '/' && at[i] != '\0') {
            continue;
        }
        char c = at[i];
        at[i] = '\0';
        if (at[0] != '\0' && stat(at, &st) != 0) {
            if (mkdir(at, 0777) != 0 && errno != EEXIST) {
                int e = errno;
                af_path_unmake_folder(at, made);
                af_error_set("%s: cannot create the folder %s: %s", what, at, strerror(e));
                made[0] = '\0';
                return AF_ERR_IO;
            }
            if (made[0] == '\0') {
                snprintf(made, n, "%s", at);
            }
        }
        at[i] = c;
    }
    return AF_OK;
}

void af_path_unmake_folder(const char *dir, const char *made)
{
    if (made == NULL || made[0] == '\0') {
        return;
    }
    char at[4096];
    snprintf(at, sizeof at, "%s", dir);
    size_t stop = strlen(made);
    while (strlen(at) >= stop && strncmp(at, made, stop) == 0) {
        if (rmdir(at) != 0 || strlen(at) == stop || !up(at)) {
            break;
        }
    }
}
