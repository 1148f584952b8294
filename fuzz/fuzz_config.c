/* libFuzzer harness: the scenario parser (sim/io/config.c).
 *
 * Input: INI text, then up to 8 `--set` strings, the parts separated by NUL bytes ("[scenario]\n
 * steps = 3\0scenario.seed=4\0event.1.step=2"). A scenario file cannot hold a NUL (the loader
 * refuses one), so NUL is a delimiter that costs the INI part nothing.
 *
 * Each input goes through:
 *   1. af_config_parse_text on the INI text;
 *   2. af_config_load on the same text written to a file (or the embedded default scenario when
 *      the text is empty), with the --set strings;
 * and every scenario that loads through af_config_validate at 1-4 ranks and af_config_format
 * (into an exact buffer, a short one and none), whose output is parsed back. Memory errors, leaks
 * and undefined behaviour are the sanitizers' to find; the harness itself fails the run when an
 * error comes back without a message, or when af_config_format's length or termination is
 * wrong. */
#include <stdlib.h>
#include <string.h>

#include "../sim/io/config.h"
#include "fuzz_common.h"

#define MAX_SETS 8
#define ERRLEN   300

static void need_message(af_result_t rc, const char *err, const char *what)
{
    if (rc != AF_OK && err[0] == '\0') {
        af_fuzz_fail("%s failed (%s) without a message", what, af_result_str(rc));
    }
}

static void exercise(af_config_t *cfg, char *err)
{
    for (int nranks = 1; nranks <= 4; ++nranks) {
        err[0] = '\0';
        need_message(af_config_validate(cfg, nranks, err, ERRLEN), err, "af_config_validate");
        (void)af_config_devices(cfg, nranks);
    }
    (void)af_config_dx(cfg);
    (void)af_backend_name(cfg->compute);
    (void)af_fabric_name(cfg->fabric);

    size_t need = af_config_format(cfg, NULL, 0);
    char *text = malloc(need + 1);
    if (text == NULL) {
        return;
    }
    size_t got = af_config_format(cfg, text, need + 1);
    if (got != need || strlen(text) != need) {
        af_fuzz_fail("af_config_format: %zu then %zu characters, the text holds %zu", need, got,
                     strlen(text));
    }
    char shorter[17];
    if (af_config_format(cfg, shorter, sizeof shorter) != need ||
        strlen(shorter) != sizeof shorter - 1) {
        af_fuzz_fail("af_config_format into 17 bytes: wrong length or not terminated");
    }
    /* The resolved scenario read back (the log's `config` attribute is meant to be runnable). */
    af_config_t *back = malloc(sizeof *back);
    if (back != NULL) {
        err[0] = '\0';
        need_message(af_config_parse_text(back, text, "resolved", err, ERRLEN), err,
                     "af_config_parse_text of af_config_format's output");
    }
    free(back);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16) {
        return 0; /* scenarios are small; long inputs only slow the search down */
    }
    char *buf = malloc(size + 1);
    af_config_t *cfg = malloc(sizeof *cfg);
    char *err = malloc(ERRLEN); /* on the heap, exactly ERRLEN bytes: ASan sees an overrun */
    if (buf == NULL || cfg == NULL || err == NULL) {
        free(buf);
        free(cfg);
        free(err);
        return 0;
    }
    memcpy(buf, data, size);
    buf[size] = '\0';
    const char *ini = buf;
    const char *sets[MAX_SETS];
    int nsets = 0;
    for (size_t i = 0; i < size && nsets < MAX_SETS; ++i) {
        if (buf[i] == '\0') {
            sets[nsets++] = buf + i + 1;
        }
    }

    err[0] = '\0';
    af_result_t rc = af_config_parse_text(cfg, ini, "fuzz.ini", err, ERRLEN);
    need_message(rc, err, "af_config_parse_text");
    if (rc == AF_OK) {
        exercise(cfg, err);
    }

    const char *path = NULL;
    if (ini[0] != '\0') {
        path = af_fuzz_temp_path("ini");
        if (af_fuzz_write_file(path, ini, strlen(ini)) != 0) {
            af_fuzz_fail("cannot write %s", path);
        }
    }
    err[0] = '\0';
    rc = af_config_load(cfg, path, sets, nsets, err, ERRLEN);
    need_message(rc, err, "af_config_load");
    if (rc == AF_OK) {
        exercise(cfg, err);
    }
    free(buf);
    free(cfg);
    free(err);
    return 0;
}
