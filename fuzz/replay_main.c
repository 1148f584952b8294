/* Replays inputs through a harness's LLVMFuzzerTestOneInput without libFuzzer, so the committed
 * corpus and every regression run in the normal build (gcc) and under ASan + UBSan
 * (scripts/test.sh --sanitize).
 *   fuzz_replay_HARNESS PATH...   each PATH a file, or a folder whose files are replayed
 * Exit status 0 when every input ran (a harness reports a finding by aborting), 1 on an
 * unreadable path or when no input was found. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_common.h"

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "replay: %s: cannot open\n", path);
        return -1;
    }
    size_t cap = 4096;
    size_t len = 0;
    unsigned char *buf = malloc(cap);
    size_t n;
    while (buf != NULL && (n = fread(buf + len, 1, cap - len, f)) > 0) {
        len += n;
        if (len == cap) {
            unsigned char *nb = realloc(buf, cap * 2);
            if (nb == NULL) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf == NULL) {
        fprintf(stderr, "replay: %s: out of memory\n", path);
        return -1;
    }
    /* A copy of exactly len bytes, so that ASan sees a read past the input. */
    unsigned char *in = malloc(len ? len : 1);
    if (in == NULL) {
        free(buf);
        return -1;
    }
    memcpy(in, buf, len);
    free(buf);
    fprintf(stderr, "replay: %s (%zu bytes)\n", path, len);
    LLVMFuzzerTestOneInput(in, len);
    free(in);
    return 1;
}

static int replay_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "replay: %s: not found\n", path);
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        return replay_file(path);
    }
    DIR *d = opendir(path);
    if (d == NULL) {
        fprintf(stderr, "replay: %s: cannot list\n", path);
        return -1;
    }
    char **names = NULL;
    size_t count = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, "README.md") == 0) {
            continue;
        }
        char **nn = realloc(names, sizeof *names * (count + 1));
        if (nn == NULL) {
            break;
        }
        names = nn;
        names[count] = malloc(strlen(path) + strlen(e->d_name) + 2);
        if (names[count] == NULL) {
            break;
        }
        sprintf(names[count], "%s/%s", path, e->d_name);
        count++;
    }
    closedir(d);
    if (count > 1) {
        qsort(names, count, sizeof *names, cmp_names); /* names is NULL when count is 0 */
    }
    int total = 0;
    for (size_t i = 0; i < count; ++i) {
        int r = replay_path(names[i]);
        if (r < 0) {
            total = -1;
        } else if (total >= 0) {
            total += r;
        }
        free(names[i]);
    }
    free(names);
    return total;
}

int main(int argc, char **argv)
{
    int total = 0;
    int bad = 0;
    for (int i = 1; i < argc; ++i) {
        int r = replay_path(argv[i]);
        if (r < 0) {
            bad = 1;
        } else {
            total += r;
        }
    }
    printf("replay: %d inputs replayed%s\n", total, bad ? ", some paths unreadable" : "");
    return bad || total == 0 ? 1 : 0;
}
