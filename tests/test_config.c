/* Unit tests of sim/config: the embedded default, --set precedence, the round trip through
 * af_config_format, [event.N] sections, and one precise line of error text for every kind of
 * bad input (file and line or "--set", the key, the allowed range). */
#include "sim/io/config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ERRLEN 1024

/* af_config_t is large: keep the test's instances out of the stack frames. */
static af_config_t cfg_a;
static af_config_t cfg_b;
static char err[ERRLEN];

/* Writes text to a fresh temporary .ini file; path receives its name. */
static void write_temp_ini(const char *text, char *path, size_t n)
{
    snprintf(path, n, "/tmp/af_test_config_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

/* Asserts that err is one line holding every fragment given (NULL-terminated list). */
static void assert_one_line_with(const char *msg, ...)
{
    assert_null(strchr(msg, '\n'));
    assert_true(strlen(msg) > 0);
    va_list ap;
    va_start(ap, msg);
    const char *frag;
    while ((frag = va_arg(ap, const char *)) != NULL) {
        if (strstr(msg, frag) == NULL) {
            print_message("error text \"%s\" lacks \"%s\"\n", msg, frag);
            va_end(ap);
            fail();
        }
    }
    va_end(ap);
}

/* Loads a file with the given text and removes it; returns the result, leaves the name in
 * path. */
static af_result_t load_text_file(const char *text, char *path, size_t n)
{
    write_temp_ini(text, path, n);
    err[0] = '\0';
    af_result_t rc = af_config_load(&cfg_a, path, NULL, 0, err, sizeof err);
    /* Nothing reads the file again (validation uses the recorded "FILE:LINE" text), so it goes
     * now and a failing assertion leaves nothing behind in /tmp. */
    unlink(path);
    return rc;
}

/* "PATH:LINE:" as an error message starts. */
static const char *file_line(const char *path, int line)
{
    static char buf[600];
    snprintf(buf, sizeof buf, "%s:%d:", path, line);
    return buf;
}

static void test_embedded_default_parses_and_validates_for_one_to_four_ranks(void **state)
{
    (void)state;
    assert_int_equal(af_config_load(&cfg_a, NULL, NULL, 0, err, sizeof err), AF_OK);
    assert_string_equal(cfg_a.name, "default");
    assert_int_equal(cfg_a.devices, 8);
    assert_int_equal(cfg_a.blocks, 256);
    assert_int_equal(cfg_a.block_len, 256);
    /* One scripted kill (device 3, units 0-3) between replica refreshes: the rollback path. */
    assert_int_equal(cfg_a.n_events, 1);
    assert_int_equal(cfg_a.events[0].device, 3);
    for (int nranks = 1; nranks <= 4; ++nranks) {
        err[0] = '\0';
        af_result_t rc = af_config_validate(&cfg_a, nranks, err, sizeof err);
        if (rc != AF_OK) {
            print_message("nranks %d: %s\n", nranks, err);
        }
        assert_int_equal(rc, AF_OK);
    }
}

static void test_default_text_equals_loading_without_a_file(void **state)
{
    (void)state;
    assert_int_equal(af_config_load(&cfg_a, NULL, NULL, 0, err, sizeof err), AF_OK);
    assert_int_equal(af_config_parse_text(&cfg_b, af_default_ini, "default", err, sizeof err),
                     AF_OK);
    static char ta[16384];
    static char tb[16384];
    af_config_format(&cfg_a, ta, sizeof ta);
    af_config_format(&cfg_b, tb, sizeof tb);
    assert_string_equal(ta, tb);
}

static void test_set_overrides_win_over_the_file_and_later_sets_win(void **state)
{
    (void)state;
    char path[64];
    write_temp_ini("[scenario]\nsteps = 10\nblocks = 64\n[workload]\nnu = 0.1\n", path,
                   sizeof path);
    const char *sets[] = {"scenario.steps=20", "workload.nu=0.02", "scenario.steps=30",
                          "backend.compute=cpu"};
    af_result_t rc = af_config_load(&cfg_a, path, sets, 4, err, sizeof err);
    unlink(path);
    assert_int_equal(rc, AF_OK);
    assert_int_equal(cfg_a.steps, 30);
    assert_true(cfg_a.nu == 0.02);
    assert_int_equal(cfg_a.blocks, 64); /* from the file, not overridden */
    assert_int_equal(cfg_a.compute, AF_BACKEND_CPU);
    /* A key the file does not set keeps its built-in default. */
    assert_int_equal(cfg_a.block_len, 256);
}

/* Counts the lines of cfg->notes. */
static int note_lines(const af_config_t *cfg)
{
    int n = 0;
    for (const char *p = cfg->notes; *p; ++p) {
        n += *p == '\n';
    }
    return n;
}

static void test_a_key_set_twice_takes_the_later_value_with_a_note_naming_both(void **state)
{
    (void)state;
    char path[64];
    write_temp_ini("[scenario]\nsteps = 10\nseed = 4\nsteps = 12\n"
                   "[event.1]\nstep = 2\naction = kill\ndevice = 0\nunits = 0\nstep = 3\n",
                   path, sizeof path);
    const char *sets[] = {"scenario.seed=5", "scenario.seed=6"};
    af_result_t rc = af_config_load(&cfg_a, path, sets, 2, err, sizeof err);
    unlink(path);
    assert_int_equal(rc, AF_OK);
    assert_int_equal(cfg_a.steps, 12);
    assert_int_equal(cfg_a.seed, 6);
    assert_int_equal(cfg_a.events[0].step, 3);
    assert_int_equal(note_lines(&cfg_a), 4);
    char want[4][700];
    snprintf(want[0], sizeof want[0],
             "scenario.steps is set at %s:2 and again at %s:4: the later value, '12', wins\n", path,
             path);
    snprintf(want[1], sizeof want[1],
             "event.1.step is set at %s:6 and again at %s:10: the later value, '3', wins\n", path,
             path);
    snprintf(want[2], sizeof want[2],
             "scenario.seed is set at %s:3 and again at --set: the later value, '5', wins\n", path);
    snprintf(want[3], sizeof want[3],
             "scenario.seed is set at --set and again at --set: the later value, '6', wins\n");
    for (int i = 0; i < 4; ++i) {
        if (strstr(cfg_a.notes, want[i]) == NULL) {
            print_message("notes \"%s\" lack \"%s\"\n", cfg_a.notes, want[i]);
            fail();
        }
    }
    /* --set over the embedded default scenario is what --set is for: no note. */
    const char *over[] = {"scenario.steps=100", "event.1.step=50"};
    assert_int_equal(af_config_load(&cfg_a, NULL, over, 2, err, sizeof err), AF_OK);
    assert_int_equal(cfg_a.steps, 100);
    assert_string_equal(cfg_a.notes, "");
}

static void test_format_parse_format_round_trip_is_identical(void **state)
{
    (void)state;
    const char *sets[] = {
        "scenario.name=round-trip", "scenario.seed=12345",    "workload.dt=1.2345678901234567e-9",
        "workload.amplitude=-0.3",  "backend.fabric=mpi",     "recovery.detect=dmr",
        "recovery.drain=off",       "aging.p_max=0.1",        "event.2.step=7",
        "event.2.action=fade",      "event.2.device=1",       "event.2.units=3",
        "event.0.step=5",           "event.0.action=kill",    "event.0.device=0",
        "event.0.units=0-7",        "event.3.step=9",         "event.3.action=slow",
        "event.3.device=2",         "event.3.units=1-2",      "event.3.factor=2.5",
        "pacing.mode=ewma",         "pacing.gamma=1.5",       "straggler.detect=on",
        "throttle.spike_rate=0.01", "metrics.textfile=m.prom"};
    int nsets = (int)(sizeof sets / sizeof sets[0]);
    assert_int_equal(af_config_load(&cfg_a, NULL, sets, nsets, err, sizeof err), AF_OK);
    size_t need = af_config_format(&cfg_a, NULL, 0);
    assert_true(need > 100);
    char *t1 = malloc(need + 1);
    char *t2 = malloc(need + 1);
    assert_non_null(t1);
    assert_non_null(t2);
    assert_int_equal(af_config_format(&cfg_a, t1, need + 1), need);
    assert_int_equal(strlen(t1), need);
    assert_int_equal(af_config_parse_text(&cfg_b, t1, "formatted", err, sizeof err), AF_OK);
    size_t need2 = af_config_format(&cfg_b, NULL, 0);
    assert_int_equal(need2, need);
    af_config_format(&cfg_b, t2, need + 1);
    assert_string_equal(t1, t2);

    /* The values themselves survive, reals to the last bit. */
    assert_string_equal(cfg_b.name, "round-trip");
    assert_int_equal(cfg_b.seed, 12345);
    assert_memory_equal(&cfg_b.dt, &cfg_a.dt, sizeof(double));
    assert_memory_equal(&cfg_b.amplitude, &cfg_a.amplitude, sizeof(double));
    assert_memory_equal(&cfg_b.p_max, &cfg_a.p_max, sizeof(double));
    assert_int_equal(cfg_b.fabric, AF_FABRIC_MPI);
    assert_int_equal(cfg_b.detect, AF_DETECT_DMR);
    assert_int_equal(cfg_b.drain, 0);
    assert_int_equal(cfg_b.n_events, 4); /* the default scenario's event.1, and these three */
    assert_int_equal(cfg_b.events[3].action, AF_EVENT_SLOW);
    assert_true(cfg_b.events[3].factor == 2.5);
    assert_int_equal(cfg_b.pacing_mode, AF_PACING_EWMA);
    assert_true(cfg_b.pacing_gamma == 1.5);
    assert_int_equal(cfg_b.straggler_detect, 1);
    assert_string_equal(cfg_b.metrics_textfile, "m.prom");
    /* Formatting sorts events by N, so event 0 comes back first. */
    assert_int_equal(cfg_b.events[0].index, 0);
    assert_int_equal(cfg_b.events[0].unit_lo, 0);
    assert_int_equal(cfg_b.events[0].unit_hi, 7);
    assert_int_equal(cfg_b.events[1].index, 1);
    assert_int_equal(cfg_b.events[2].index, 2);
    assert_int_equal(cfg_b.events[2].unit_lo, 3);
    assert_int_equal(cfg_b.events[2].unit_hi, 3);
    assert_int_equal(cfg_b.events[2].action, AF_EVENT_FADE);
    /* Every configuration field before the provenance table is the same. */
    assert_memory_equal(&cfg_a, &cfg_b, offsetof(af_config_t, n_events));
    free(t1);
    free(t2);
}

/* Builds a path of n characters with a '/' every 20. */
static void long_path(char *path, int n)
{
    memset(path, 'p', (size_t)n);
    path[0] = '/';
    for (int i = 20; i < n; i += 20) {
        path[i] = '/';
    }
    path[n] = '\0';
}

/* The longest log.path (180 characters) survives format -> parse_text, so `agefence config`
 * output can always be read back (libinih reads lines of at most 199 characters). */
static void test_format_round_trip_holds_for_the_longest_log_path(void **state)
{
    (void)state;
    char path[181];
    long_path(path, 180);
    char set[400];
    snprintf(set, sizeof set, "log.path=%s", path);
    const char *sets[] = {set};
    assert_int_equal(af_config_load(&cfg_a, NULL, sets, 1, err, sizeof err), AF_OK);
    assert_string_equal(cfg_a.log_path, path);
    static char t1[16384];
    static char t2[16384];
    af_config_format(&cfg_a, t1, sizeof t1);
    err[0] = '\0';
    af_result_t rc = af_config_parse_text(&cfg_b, t1, "resolved scenario", err, sizeof err);
    if (rc != AF_OK) {
        print_message("parse_text of the formatted scenario: %s\n", err);
    }
    assert_int_equal(rc, AF_OK);
    assert_string_equal(cfg_b.log_path, path);
    af_config_format(&cfg_b, t2, sizeof t2);
    assert_string_equal(t1, t2);
}

/* A longer path is refused up front with the limit, not cut or garbled later. */
static void test_a_300_character_log_path_is_refused_with_the_limit(void **state)
{
    (void)state;
    char path[301];
    long_path(path, 300);
    char set[400];
    snprintf(set, sizeof set, "log.path=%s", path);
    const char *sets[] = {set};
    assert_int_equal(af_config_load(&cfg_a, NULL, sets, 1, err, sizeof err), AF_ERR_USAGE);
    assert_non_null(strstr(err, "--set"));
    assert_non_null(strstr(err, "log.path"));
    assert_non_null(strstr(err, "at most 180 characters"));
    assert_null(strchr(err, '\n'));
}

/* A scenario file line longer than libinih reads is an error naming the file and line. */
static void test_a_line_longer_than_199_characters_is_an_error_with_its_line(void **state)
{
    (void)state;
    char text[512];
    char path[260];
    long_path(path, 250);
    snprintf(text, sizeof text, "[scenario]\nsteps = 10\n[log]\npath = %s\n", path);
    assert_int_equal(af_config_parse_text(&cfg_a, text, "long.ini", err, sizeof err), AF_ERR_USAGE);
    assert_non_null(strstr(err, "long.ini:4:"));
    assert_non_null(strstr(err, "longer than"));
}

static void test_format_reports_needed_length_and_truncates_like_snprintf(void **state)
{
    (void)state;
    assert_int_equal(af_config_load(&cfg_a, NULL, NULL, 0, err, sizeof err), AF_OK);
    size_t need = af_config_format(&cfg_a, NULL, 0);
    char small[32];
    memset(small, 'x', sizeof small);
    assert_int_equal(af_config_format(&cfg_a, small, sizeof small), need);
    assert_int_equal(strlen(small), sizeof small - 1);
}

static void test_event_sections_parse_step_action_device_and_units(void **state)
{
    (void)state;
    char path[64];
    const char *text = "[scenario]\nsteps = 100\n\n"
                       "[event.1]\nstep = 12\naction = kill\ndevice = 3\nunits = 0-7\n\n"
                       "[event.4]\nstep = 40\naction = fade\ndevice = 7\nunits = 3\n";
    assert_int_equal(load_text_file(text, path, sizeof path), AF_OK);
    assert_int_equal(cfg_a.n_events, 2);
    const af_event_cfg_t *e1 = &cfg_a.events[0];
    const af_event_cfg_t *e4 = &cfg_a.events[1];
    assert_int_equal(e1->index, 1);
    assert_int_equal(e1->step, 12);
    assert_int_equal(e1->action, AF_EVENT_KILL);
    assert_int_equal(e1->device, 3);
    assert_int_equal(e1->unit_lo, 0);
    assert_int_equal(e1->unit_hi, 7);
    assert_int_equal(e4->index, 4);
    assert_int_equal(e4->step, 40);
    assert_int_equal(e4->action, AF_EVENT_FADE);
    assert_int_equal(e4->device, 7);
    assert_int_equal(e4->unit_lo, 3);
    assert_int_equal(e4->unit_hi, 3);
    assert_int_equal(af_config_validate(&cfg_a, 4, err, sizeof err), AF_OK);
}

static void test_event_with_a_missing_key_is_an_error_naming_the_key(void **state)
{
    (void)state;
    char path[64];
    const char *text = "[event.2]\nstep = 12\naction = kill\ndevice = 3\n";
    assert_int_equal(load_text_file(text, path, sizeof path), AF_ERR_USAGE);
    assert_one_line_with(err, path, "event.2", "units", NULL);

    /* The same through --set. */
    const char *sets[] = {"event.5.step=3", "event.5.device=0", "event.5.units=1"};
    err[0] = '\0';
    assert_int_equal(af_config_load(&cfg_a, NULL, sets, 3, err, sizeof err), AF_ERR_USAGE);
    assert_one_line_with(err, "--set", "event.5", NULL);
}

static void test_slow_event_needs_a_factor_and_only_slow_events_have_one(void **state)
{
    (void)state;
    char path[64];
    const char *text = "[event.4]\nstep = 12\naction = slow\ndevice = 3\nunits = 0-1\n";
    assert_int_equal(load_text_file(text, path, sizeof path), AF_ERR_USAGE);
    assert_one_line_with(err, path, "event.4", "slow", "factor", NULL);

    const char *kill[] = {"event.5.step=3", "event.5.action=kill", "event.5.device=0",
                          "event.5.units=1", "event.5.factor=2"};
    assert_int_equal(af_config_load(&cfg_a, NULL, kill, 5, err, sizeof err), AF_ERR_USAGE);
    assert_one_line_with(err, "--set", "event.5.factor", "only a slow event", NULL);

    const char *low[] = {"event.5.step=3", "event.5.action=slow", "event.5.device=0",
                         "event.5.units=1", "event.5.factor=0.5"};
    assert_int_equal(af_config_load(&cfg_a, NULL, low, 5, err, sizeof err), AF_ERR_USAGE);
    assert_one_line_with(err, "--set", "event.5.factor", "[1, 1000]", NULL);

    const char *ok[] = {"event.5.step=3", "event.5.action=slow", "event.5.device=0",
                        "event.5.units=1", "event.5.factor=3"};
    assert_int_equal(af_config_load(&cfg_a, NULL, ok, 5, err, sizeof err), AF_OK);
}

static void test_text_an_ini_reader_would_strip_is_refused(void **state)
{
    (void)state;
    const char *comment[] = {"scenario.name=a ;b"};
    assert_int_equal(af_config_load(&cfg_a, NULL, comment, 1, err, sizeof err), AF_ERR_USAGE);
    assert_one_line_with(err, "--set", "scenario.name", "written back", NULL);
    const char *blank[] = {"log.path= out.h5"};
    assert_int_equal(af_config_load(&cfg_a, NULL, blank, 1, err, sizeof err), AF_ERR_USAGE);
    assert_one_line_with(err, "--set", "log.path", "blanks", NULL);
    const char *fine[] = {"scenario.name=a;b c"};
    assert_int_equal(af_config_load(&cfg_a, NULL, fine, 1, err, sizeof err), AF_OK);
    assert_string_equal(cfg_a.name, "a;b c");
}

static void test_event_with_a_bad_unit_range_is_rejected(void **state)
{
    (void)state;
    char path[64];
    const char *text = "[event.0]\nstep = 12\naction = kill\ndevice = 3\nunits = 7-2\n";
    assert_int_equal(load_text_file(text, path, sizeof path), AF_ERR_USAGE);
    assert_one_line_with(err, file_line(path, 5), "units", "7-2", "A <= B", NULL);
}

static void test_unknown_section_names_file_line_and_the_allowed_sections(void **state)
{
    (void)state;
    char path[64];
    const char *text = "[scenario]\nsteps = 10\n[bogus]\nx = 1\n";
    assert_int_equal(load_text_file(text, path, sizeof path), AF_ERR_USAGE);
    assert_one_line_with(err, file_line(path, 3), "[bogus]", "scenario", "workload", "event.N",
                         NULL);
}

static void test_an_empty_or_comment_only_file_is_refused_naming_it(void **state)
{
    (void)state;
    char path[64];
    const char *texts[] = {"", "\n\n", "# nothing but a comment\n; and another\n"};
    for (int i = 0; i < 3; ++i) {
        assert_int_equal(load_text_file(texts[i], path, sizeof path), AF_ERR_USAGE);
        assert_one_line_with(err, path, "the scenario file is empty", NULL);
        assert_true(strncmp(err, path, strlen(path)) == 0);
    }
    /* A bare section header is a scenario that takes every default: accepted. */
    assert_int_equal(load_text_file("[scenario]\n", path, sizeof path), AF_OK);
}

static void test_an_unterminated_section_header_is_an_error_on_its_own_line(void **state)
{
    (void)state;
    char path[64];
    assert_int_equal(load_text_file("[scenario\nsteps = 10\n", path, sizeof path), AF_ERR_USAGE);
    assert_one_line_with(err, file_line(path, 1), "unterminated section header '[scenario'", NULL);
    assert_int_equal(
        load_text_file("[scenario]\nsteps = 10\n\n  [workload\r\nnu = 0.1\n", path, sizeof path),
        AF_ERR_USAGE);
    assert_one_line_with(err, file_line(path, 4), "unterminated section header '[workload'", NULL);
    assert_null(strchr(err, '\r'));
}

static void test_unknown_section_without_keys_is_still_an_error(void **state)
{
    (void)state;
    char path[64];
    const char *text = "[scenario]\nsteps = 10\n\n[empty_one]\n";
    assert_int_equal(load_text_file(text, path, sizeof path), AF_ERR_USAGE);
    assert_one_line_with(err, file_line(path, 4), "[empty_one]", NULL);
}

static void test_unknown_key_names_file_line_section_and_key(void **state)
{
    (void)state;
    char path[64];
    const char *text = "# a comment\n[scenario]\nsteps = 10\nstepz = 3\n";
    assert_int_equal(load_text_file(text, path, sizeof path), AF_ERR_USAGE);
    assert_one_line_with(err, file_line(path, 4), "stepz", "[scenario]", NULL);

    const char *sets[] = {"scenario.stepz=3"};
    err[0] = '\0';
    assert_int_equal(af_config_load(&cfg_a, NULL, sets, 1, err, sizeof err), AF_ERR_USAGE);
    assert_one_line_with(err, "--set", "stepz", NULL);
}

static void test_integer_key_with_text_value_names_key_and_range(void **state)
{
    (void)state;
    char path[64];
    const char *text = "[scenario]\n\nsteps = abc\n";
    assert_int_equal(load_text_file(text, path, sizeof path), AF_ERR_USAGE);
    assert_one_line_with(err, file_line(path, 3), "scenario.steps", "'abc'",
                         "an integer in [1, 1000000000]", NULL);

    const char *sets[] = {"scenario.steps=12x"};
    err[0] = '\0';
    assert_int_equal(af_config_load(&cfg_a, NULL, sets, 1, err, sizeof err), AF_ERR_USAGE);
    assert_one_line_with(err, "--set", "scenario.steps", "'12x'", "an integer in [1, ", NULL);
}

static void test_real_key_with_incomplete_exponent_names_key_and_range(void **state)
{
    (void)state;
    char path[64];
    const char *text = "[scenario]\nsteps = 10\n[workload]\nnu = 1e\n";
    assert_int_equal(load_text_file(text, path, sizeof path), AF_ERR_USAGE);
    assert_one_line_with(err, file_line(path, 4), "workload.nu", "'1e'", "a number in [1e-12, ",
                         NULL);
}

static void test_seeds_take_every_non_negative_int64_and_say_the_limit(void **state)
{
    (void)state;
    const char *top[] = {"scenario.seed=9223372036854775807"};
    assert_int_equal(af_config_load(&cfg_a, NULL, top, 1, err, sizeof err), AF_OK);
    assert_true(cfg_a.seed == INT64_MAX);
    const char *mid[] = {"scenario.seed=9000000000000001"};
    assert_int_equal(af_config_load(&cfg_a, NULL, mid, 1, err, sizeof err), AF_OK);
    assert_true(cfg_a.seed == 9000000000000001LL);
    const char *over[] = {"scenario.seed=9223372036854775808"};
    assert_int_equal(af_config_load(&cfg_a, NULL, over, 1, err, sizeof err), AF_ERR_USAGE);
    assert_one_line_with(err, "--set", "scenario.seed = '9223372036854775808'",
                         "expected an integer in [0, 9223372036854775807]", NULL);
}

static void test_quarantine_after_is_held_to_the_fence_counters_range(void **state)
{
    (void)state;
    const char *top[] = {"recovery.quarantine_after=65535"};
    assert_int_equal(af_config_load(&cfg_a, NULL, top, 1, err, sizeof err), AF_OK);
    assert_int_equal(cfg_a.quarantine_after, AF_QUARANTINE_MAX);
    const char *over[] = {"recovery.quarantine_after=65536"};
    assert_int_equal(af_config_load(&cfg_a, NULL, over, 1, err, sizeof err), AF_ERR_USAGE);
    assert_one_line_with(err, "--set", "recovery.quarantine_after = '65536'",
                         "expected an integer in [0, 65535]", NULL);
}

static void test_block_len_below_minimum_names_key_and_range(void **state)
{
    (void)state;
    char path[64];
    const char *text = "[scenario]\nblock_len = 2\n";
    assert_int_equal(load_text_file(text, path, sizeof path), AF_ERR_USAGE);
    assert_one_line_with(err, file_line(path, 2), "scenario.block_len", "'2'",
                         "an integer in [3, 16777216]", NULL);
}

static void test_max_blackout_outside_zero_to_095_is_rejected_both_ways(void **state)
{
    (void)state;
    char path[64];
    const char *high = "[scenario]\nsteps = 5\nmax_blackout = 0.96\n";
    assert_int_equal(load_text_file(high, path, sizeof path), AF_ERR_USAGE);
    assert_one_line_with(err, file_line(path, 3), "scenario.max_blackout", "'0.96'",
                         "a number in [0, 0.95]", NULL);

    const char *low = "[scenario]\nmax_blackout = -0.1\n";
    assert_int_equal(load_text_file(low, path, sizeof path), AF_ERR_USAGE);
    assert_one_line_with(err, file_line(path, 2), "scenario.max_blackout", "'-0.1'",
                         "a number in [0, 0.95]", NULL);

    const char *sets[] = {"scenario.max_blackout=0.96"};
    err[0] = '\0';
    assert_int_equal(af_config_load(&cfg_a, NULL, sets, 1, err, sizeof err), AF_ERR_USAGE);
    assert_one_line_with(err, "--set", "scenario.max_blackout", "a number in [0, 0.95]", NULL);
}

static void test_fewer_devices_than_ranks_fails_validation_with_file_and_line(void **state)
{
    (void)state;
    char path[64];
    const char *text = "[scenario]\nsteps = 5\n\ndevices = 2\n";
    assert_int_equal(load_text_file(text, path, sizeof path), AF_OK);
    assert_int_equal(af_config_validate(&cfg_a, 2, err, sizeof err), AF_OK);
    err[0] = '\0';
    assert_int_equal(af_config_validate(&cfg_a, 4, err, sizeof err), AF_ERR_USAGE);
    assert_one_line_with(err, file_line(path, 4), "scenario.devices", "= 2", "4 ranks",
                         "devices >= ranks", NULL);

    /* Through --set the message names --set. */
    const char *sets[] = {"scenario.devices=3"};
    assert_int_equal(af_config_load(&cfg_a, NULL, sets, 1, err, sizeof err), AF_OK);
    err[0] = '\0';
    assert_int_equal(af_config_validate(&cfg_a, 4, err, sizeof err), AF_ERR_USAGE);
    assert_one_line_with(err, "--set", "scenario.devices", "devices >= ranks", NULL);

    /* devices = 0 means one per rank and always fits. */
    const char *zero[] = {"scenario.devices=0"};
    assert_int_equal(af_config_load(&cfg_a, NULL, zero, 1, err, sizeof err), AF_OK);
    assert_int_equal(af_config_validate(&cfg_a, 4, err, sizeof err), AF_OK);
    assert_int_equal(af_config_devices(&cfg_a, 4), 4);
}

static void test_fewer_blocks_than_devices_fails_validation(void **state)
{
    (void)state;
    char path[64];
    const char *text = "[scenario]\ndevices = 8\nblocks = 4\n";
    assert_int_equal(load_text_file(text, path, sizeof path), AF_OK);
    err[0] = '\0';
    assert_int_equal(af_config_validate(&cfg_a, 1, err, sizeof err), AF_ERR_USAGE);
    assert_one_line_with(err, file_line(path, 3), "scenario.blocks", "= 4", "8 devices",
                         "blocks >= devices", NULL);
}

static void test_unstable_time_step_names_stability_and_the_limit(void **state)
{
    (void)state;
    char path[64];
    /* 64 blocks x 16 cells: dx = 1/1024, nu = 0.05, so the limit is 0.5 dx^2 / nu =
     * 9.5367431640625e-06; dt = 1e-5 is just above it. */
    const char *text = "[scenario]\nblocks = 64\nblock_len = 16\n[workload]\nnu = 0.05\n"
                       "dt = 1e-5\n";
    assert_int_equal(load_text_file(text, path, sizeof path), AF_OK);
    err[0] = '\0';
    assert_int_equal(af_config_validate(&cfg_a, 1, err, sizeof err), AF_ERR_USAGE);
    assert_one_line_with(err, file_line(path, 6), "workload.dt", "stability", "9.53674e-06", NULL);

    /* Just below the limit it passes. */
    const char *ok[] = {"scenario.blocks=64", "scenario.block_len=16", "workload.dt=9.5e-6"};
    assert_int_equal(af_config_load(&cfg_a, NULL, ok, 3, err, sizeof err), AF_OK);
    assert_int_equal(af_config_validate(&cfg_a, 1, err, sizeof err), AF_OK);
}

/* 16,384 devices, one 64-cell block each: dx = 1/1048576, and with nu = 0.05 the diffusion limit
 * 0.5 dx^2 / nu = 9.09e-12 is the stability limit. */
#define FLEET_16K "[scenario]\ndevices = 16384\nblocks = 16384\nblock_len = 64\n"

static void test_dt_auto_is_the_fraction_of_the_stability_limit(void **state)
{
    (void)state;
    const double dx = 1.0 / 1048576.0;
    const double limit = 0.5 * dx * dx / 0.05;
    const char *texts[] = {FLEET_16K, FLEET_16K "[workload]\ndt = auto\n"};
    for (int i = 0; i < 2; ++i) {
        assert_int_equal(af_config_parse_text(&cfg_a, texts[i], "fleet.ini", err, sizeof err),
                         AF_OK);
        assert_int_equal(cfg_a.dt_auto, 1);
        assert_true(af_config_dt_limit(&cfg_a) == limit);
        assert_true(cfg_a.dt == AF_DT_AUTO_FRACTION * limit);
        assert_true(cfg_a.dt <= limit);
        assert_int_equal(af_config_validate(&cfg_a, 4, err, sizeof err), AF_OK);
        /* Printed as the number (with a comment), which reads back to the same scenario. */
        static char t1[16384];
        af_config_format(&cfg_a, t1, sizeof t1);
        assert_non_null(strstr(t1, "\n# dt = auto: 0.8 x the stability limit "));
        assert_int_equal(af_config_parse_text(&cfg_b, t1, "printed", err, sizeof err), AF_OK);
        assert_int_equal(cfg_b.dt_auto, 0);
        assert_memory_equal(&cfg_b.dt, &cfg_a.dt, sizeof(double));
        assert_memory_equal(&cfg_a, &cfg_b, offsetof(af_config_t, n_events));
    }
    /* A fleet whose limit is the advection one: 16 cells, nu = 0.01, umax = 1.5. */
    const char *adv = "[scenario]\ndevices = 1\nblocks = 4\nblock_len = 4\n[workload]\nnu = 0.01\n";
    assert_int_equal(af_config_parse_text(&cfg_a, adv, "adv.ini", err, sizeof err), AF_OK);
    assert_true(af_config_dt_limit(&cfg_a) == 2.0 * 0.01 / (1.5 * 1.5));
    assert_true(cfg_a.dt == AF_DT_AUTO_FRACTION * (2.0 * 0.01 / (1.5 * 1.5)));
    assert_int_equal(af_config_validate(&cfg_a, 1, err, sizeof err), AF_OK);
    /* An explicit number stays what it says, and a later auto wins over it. */
    const char *sets[] = {"workload.dt=3e-12"};
    char path[64];
    write_temp_ini(FLEET_16K, path, sizeof path);
    assert_int_equal(af_config_load(&cfg_a, path, sets, 1, err, sizeof err), AF_OK);
    assert_int_equal(cfg_a.dt_auto, 0);
    assert_true(cfg_a.dt == 3e-12);
    const char *back[] = {"workload.dt=3e-12", "workload.dt=auto"};
    assert_int_equal(af_config_load(&cfg_a, path, back, 2, err, sizeof err), AF_OK);
    unlink(path);
    assert_int_equal(cfg_a.dt_auto, 1);
    assert_true(cfg_a.dt == AF_DT_AUTO_FRACTION * limit);
}

static void test_explicit_dt_above_the_limit_keeps_its_error(void **state)
{
    (void)state;
    char path[64];
    assert_int_equal(load_text_file(FLEET_16K "[workload]\ndt = 1e-11\n", path, sizeof path),
                     AF_OK);
    err[0] = '\0';
    assert_int_equal(af_config_validate(&cfg_a, 1, err, sizeof err), AF_ERR_USAGE);
    assert_one_line_with(err, file_line(path, 6), "workload.dt = 1e-11", "diffusion stability",
                         "expected dt <= 9.09495e-12", NULL);
    /* Neither a number nor auto. */
    const char *sets[] = {"workload.dt=fast"};
    assert_int_equal(af_config_load(&cfg_a, NULL, sets, 1, err, sizeof err), AF_ERR_USAGE);
    assert_one_line_with(err, "--set", "workload.dt = 'fast'", "auto or a number in [1e-300, ",
                         NULL);
}

static void test_embedded_default_events_after_a_shortened_end_are_skipped(void **state)
{
    (void)state;
    const char *sets[] = {"scenario.steps=100"};
    assert_int_equal(af_config_load(&cfg_a, NULL, sets, 1, err, sizeof err), AF_OK);
    assert_int_equal(cfg_a.n_events, 1);
    assert_int_equal(af_config_validate(&cfg_a, 2, err, sizeof err), AF_OK);
    assert_int_equal(cfg_a.n_events, 0);
    static char t1[16384];
    af_config_format(&cfg_a, t1, sizeof t1);
    assert_null(strstr(t1, "[event."));
    /* At the event's own step it stays. */
    const char *at[] = {"scenario.steps=300"};
    assert_int_equal(af_config_load(&cfg_a, NULL, at, 1, err, sizeof err), AF_OK);
    assert_int_equal(af_config_validate(&cfg_a, 2, err, sizeof err), AF_OK);
    assert_int_equal(cfg_a.n_events, 1);
    assert_int_equal(cfg_a.events[0].step, 300);
}

static void test_events_after_the_last_step_of_a_file_or_a_set_are_errors(void **state)
{
    (void)state;
    char path[64];
    const char *text = "[scenario]\nsteps = 100\n\n"
                       "[event.1]\nstep = 300\naction = kill\ndevice = 3\nunits = 0-3\n";
    assert_int_equal(load_text_file(text, path, sizeof path), AF_OK);
    err[0] = '\0';
    assert_int_equal(af_config_validate(&cfg_a, 1, err, sizeof err), AF_ERR_USAGE);
    assert_one_line_with(err, file_line(path, 5), "event.1.step = 300", "after the last step",
                         "1..100", NULL);
    assert_int_equal(cfg_a.n_events, 1);

    /* The embedded default's event moved by --set is the user's: an error. */
    const char *moved[] = {"scenario.steps=100", "event.1.step=200"};
    assert_int_equal(af_config_load(&cfg_a, NULL, moved, 2, err, sizeof err), AF_OK);
    err[0] = '\0';
    assert_int_equal(af_config_validate(&cfg_a, 1, err, sizeof err), AF_ERR_USAGE);
    assert_one_line_with(err, "--set", "event.1.step = 200", "after the last step", NULL);
}

static void test_event_on_a_device_outside_the_fleet_fails_validation(void **state)
{
    (void)state;
    char path[64];
    const char *text = "[scenario]\nsteps = 100\ndevices = 4\n\n"
                       "[event.3]\nstep = 10\naction = kill\ndevice = 4\nunits = 0-1\n";
    assert_int_equal(load_text_file(text, path, sizeof path), AF_OK);
    err[0] = '\0';
    assert_int_equal(af_config_validate(&cfg_a, 1, err, sizeof err), AF_ERR_USAGE);
    /* The key, its value and the fleet's range... */
    assert_one_line_with(err, "event.3", "device", "4", "0..3", NULL);
    /* ...and where it was written, as for every other bad value. */
    assert_one_line_with(err, path, NULL);
}

/* [interrupt]: the job-level rates default to 0, are read by cause, and a value out of range
 * or negative is one line naming the key. */
static void test_interrupt_rates_default_to_zero_and_are_checked(void **state)
{
    (void)state;
    assert_int_equal(af_config_load(&cfg_a, NULL, NULL, 0, err, sizeof err), AF_OK);
    for (int i = 0; i < AF_NJOB_INTR; ++i) {
        assert_true(cfg_a.intr_per_hour[i] == 0.0);
    }
    const char *sets[] = {
        "interrupt.software_per_hour=0.04",   "interrupt.network_per_node_hour=1e-5",
        "interrupt.nic_per_node_hour=2e-6",   "interrupt.nccl_watchdog_per_hour=5e-3",
        "interrupt.sdc_per_device_hour=3e-7", "interrupt.dependency_per_hour=1e-3"};
    assert_int_equal(af_config_load(&cfg_a, NULL, sets, 6, err, sizeof err), AF_OK);
    assert_true(cfg_a.intr_per_hour[AF_INTR_software - AF_INTR_FIRST_JOB] == 0.04);
    assert_true(cfg_a.intr_per_hour[AF_INTR_network - AF_INTR_FIRST_JOB] == 1e-5);
    assert_true(cfg_a.intr_per_hour[AF_INTR_nic - AF_INTR_FIRST_JOB] == 2e-6);
    assert_true(cfg_a.intr_per_hour[AF_INTR_nccl_watchdog - AF_INTR_FIRST_JOB] == 5e-3);
    assert_true(cfg_a.intr_per_hour[AF_INTR_sdc - AF_INTR_FIRST_JOB] == 3e-7);
    assert_true(cfg_a.intr_per_hour[AF_INTR_dependency - AF_INTR_FIRST_JOB] == 1e-3);
    const char *neg[] = {"interrupt.nic_per_node_hour=-1e-6"};
    assert_int_equal(af_config_load(&cfg_a, NULL, neg, 1, err, sizeof err), AF_ERR_USAGE);
    assert_one_line_with(err, "--set", "interrupt.nic_per_node_hour", "[0, 1]", NULL);
    const char *big[] = {"interrupt.software_per_hour=2"};
    assert_int_equal(af_config_load(&cfg_a, NULL, big, 1, err, sizeof err), AF_ERR_USAGE);
    assert_one_line_with(err, "interrupt.software_per_hour", "[0, 1]", NULL);
    char path[64];
    assert_int_equal(load_text_file("[interrupt]\nsoftware_rate = 1e-3\n", path, sizeof path),
                     AF_ERR_USAGE);
    assert_one_line_with(err, path, "software_rate", "[interrupt]", NULL);
}

/* The Weibull shapes of the device and node loss times: 1 (exponential) by default, within
 * [0.1, 20], a bad one named with its range. */
static void test_domain_shapes_default_to_one_and_are_checked(void **state)
{
    (void)state;
    assert_int_equal(af_config_load(&cfg_a, NULL, NULL, 0, err, sizeof err), AF_OK);
    assert_true(cfg_a.device_shape == 1.0 && cfg_a.node_shape == 1.0);
    const char *ok[] = {"aging.device_shape=0.7", "aging.node_shape=3"};
    assert_int_equal(af_config_load(&cfg_a, NULL, ok, 2, err, sizeof err), AF_OK);
    assert_true(cfg_a.device_shape == 0.7 && cfg_a.node_shape == 3.0);
    const char *zero[] = {"aging.device_shape=0"};
    assert_int_equal(af_config_load(&cfg_a, NULL, zero, 1, err, sizeof err), AF_ERR_USAGE);
    assert_one_line_with(err, "--set", "aging.device_shape", "[0.1, 20]", NULL);
    const char *neg[] = {"aging.node_shape=-2"};
    assert_int_equal(af_config_load(&cfg_a, NULL, neg, 1, err, sizeof err), AF_ERR_USAGE);
    assert_one_line_with(err, "--set", "aging.node_shape", "[0.1, 20]", NULL);
}

/* A cause's mean interruptions a step is bounded (the step's buffer): the key, the mean and
 * the bound in one line. 1e-3 per device-hour x 8 devices x 1,000 hours a step = 8 a step. */
static void test_interrupt_rate_too_high_for_the_step_names_the_key(void **state)
{
    (void)state;
    const char *sets[] = {"aging.sim_hours_per_step=1000", "interrupt.sdc_per_device_hour=1e-3"};
    assert_int_equal(af_config_load(&cfg_a, NULL, sets, 2, err, sizeof err), AF_OK);
    err[0] = '\0';
    assert_int_equal(af_config_validate(&cfg_a, 1, err, sizeof err), AF_ERR_USAGE);
    assert_one_line_with(err, "--set", "interrupt.sdc_per_device_hour", "8 interruptions a step",
                         "at most 4", NULL);
    const char *ok[] = {"aging.sim_hours_per_step=400", "interrupt.sdc_per_device_hour=1e-3"};
    assert_int_equal(af_config_load(&cfg_a, NULL, ok, 2, err, sizeof err), AF_OK);
    assert_int_equal(af_config_validate(&cfg_a, 1, err, sizeof err), AF_OK);
}

/* action = interrupt: a cause from the record's list, where it struck at the cause's grain
 * (device: sdc; node: network, nic) or nowhere, never units; printed back as read. */
static void test_interrupt_events_need_a_cause_and_name_where_at_its_grain(void **state)
{
    (void)state;
    char path[64];
    const char *text = "[scenario]\nsteps = 100\ndevices = 8\ndevices_per_node = 2\n\n"
                       "[event.1]\nstep = 12\naction = interrupt\ncause = software\n\n"
                       "[event.2]\nstep = 13\naction = interrupt\ncause = nic\nnode = 3\n\n"
                       "[event.3]\nstep = 14\naction = interrupt\ncause = sdc\ndevice = 5\n";
    assert_int_equal(load_text_file(text, path, sizeof path), AF_OK);
    assert_int_equal(af_config_validate(&cfg_a, 2, err, sizeof err), AF_OK);
    assert_int_equal(cfg_a.n_events, 3);
    assert_int_equal(cfg_a.events[0].action, AF_EVENT_INTERRUPT);
    assert_int_equal(cfg_a.events[0].cause, AF_INTR_software);
    assert_int_equal(cfg_a.events[0].device, -1);
    assert_int_equal(cfg_a.events[0].node, -1);
    assert_int_equal(cfg_a.events[1].cause, AF_INTR_nic);
    assert_int_equal(cfg_a.events[1].node, 3);
    assert_int_equal(cfg_a.events[1].device, -1);
    assert_int_equal(cfg_a.events[2].cause, AF_INTR_sdc);
    assert_int_equal(cfg_a.events[2].device, 5);
    /* No unit is named, so none is a scripted health change. */
    assert_int_equal(af_config_scripted_units(&cfg_a), 0);
    /* Printed and read back, the same scenario. */
    static char out1[1 << 16];
    static char out2[1 << 16];
    af_config_format(&cfg_a, out1, sizeof out1);
    assert_non_null(strstr(out1, "action = interrupt\ncause = nic\nnode = 3\n"));
    assert_int_equal(af_config_parse_text(&cfg_b, out1, "printed", err, sizeof err), AF_OK);
    assert_int_equal(af_config_validate(&cfg_b, 2, err, sizeof err), AF_OK);
    af_config_format(&cfg_b, out2, sizeof out2);
    /* (The rest differs only in dt's `auto` comment: the printed dt is a number.) */
    assert_non_null(strstr(out1, "\n[event."));
    assert_string_equal(strstr(out1, "\n[event."), strstr(out2, "\n[event."));

    const char *nocause[] = {"event.11.step=3", "event.11.action=interrupt"};
    assert_int_equal(af_config_load(&cfg_a, NULL, nocause, 2, err, sizeof err), AF_ERR_USAGE);
    assert_one_line_with(err, "event.11", "cause", "step, action and cause", NULL);
    const char *unknown[] = {"event.11.step=3", "event.11.action=interrupt",
                             "event.11.cause=cosmic"};
    assert_int_equal(af_config_load(&cfg_a, NULL, unknown, 3, err, sizeof err), AF_ERR_USAGE);
    assert_one_line_with(err, "--set", "event.11.cause", "cosmic", "software|network", NULL);
    const char *where[] = {"event.11.step=3", "event.11.action=interrupt",
                           "event.11.cause=software", "event.11.device=2"};
    assert_int_equal(af_config_load(&cfg_a, NULL, where, 4, err, sizeof err), AF_ERR_USAGE);
    assert_one_line_with(err, "--set", "event.11.device", "software", NULL);
    const char *units[] = {"event.11.step=3", "event.11.action=interrupt", "event.11.cause=sdc",
                           "event.11.units=2"};
    assert_int_equal(af_config_load(&cfg_a, NULL, units, 4, err, sizeof err), AF_ERR_USAGE);
    assert_one_line_with(err, "--set", "event.11.units", NULL);
    const char *killcause[] = {"event.11.step=3", "event.11.action=kill_device",
                               "event.11.device=1", "event.11.cause=nic"};
    assert_int_equal(af_config_load(&cfg_a, NULL, killcause, 4, err, sizeof err), AF_ERR_USAGE);
    assert_one_line_with(err, "--set", "event.11.cause", "kill_device", NULL);
    const char *far[] = {"scenario.devices_per_node=2", "event.11.step=3",
                         "event.11.action=interrupt", "event.11.cause=network", "event.11.node=4"};
    assert_int_equal(af_config_load(&cfg_a, NULL, far, 5, err, sizeof err), AF_OK);
    assert_int_equal(af_config_validate(&cfg_a, 1, err, sizeof err), AF_ERR_USAGE);
    assert_one_line_with(err, "event.11.node", "0..3", NULL);
}

static void test_an_unstable_embedded_dt_says_where_it_came_from_and_to_use_auto(void **state)
{
    (void)state;
    const char *sets[] = {"scenario.blocks=100000"};
    assert_int_equal(af_config_load(&cfg_a, NULL, sets, 1, err, sizeof err), AF_OK);
    err[0] = '\0';
    assert_int_equal(af_config_validate(&cfg_a, 1, err, sizeof err), AF_ERR_USAGE);
    assert_one_line_with(err, "default.ini (embedded):21: ", "workload.dt = 2e-09",
                         "expected dt <= 1.52588e-14", "--set workload.dt=auto", NULL);
    /* ... which then resolves to a stable dt. */
    const char *fixed[] = {"scenario.blocks=100000", "workload.dt=auto"};
    assert_int_equal(af_config_load(&cfg_a, NULL, fixed, 2, err, sizeof err), AF_OK);
    assert_int_equal(af_config_validate(&cfg_a, 1, err, sizeof err), AF_OK);
    assert_true(cfg_a.dt > 0 && cfg_a.dt <= af_config_dt_limit(&cfg_a));
}

static void test_missing_scenario_file_names_the_path(void **state)
{
    (void)state;
    const char *path = "/tmp/af_test_config_no_such_dir/no_such_file.ini";
    err[0] = '\0';
    assert_int_equal(af_config_load(&cfg_a, path, NULL, 0, err, sizeof err), AF_ERR_USAGE);
    assert_one_line_with(err, path, "cannot open", NULL);
}

static void test_malformed_set_without_equals_names_set_and_the_argument(void **state)
{
    (void)state;
    const char *sets[] = {"scenario.steps"};
    err[0] = '\0';
    assert_int_equal(af_config_load(&cfg_a, NULL, sets, 1, err, sizeof err), AF_ERR_USAGE);
    assert_one_line_with(err, "--set", "scenario.steps", "section.key=value", NULL);

    const char *nodot[] = {"steps=5"};
    err[0] = '\0';
    assert_int_equal(af_config_load(&cfg_a, NULL, nodot, 1, err, sizeof err), AF_ERR_USAGE);
    assert_one_line_with(err, "--set", "steps=5", "section.key=value", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_embedded_default_parses_and_validates_for_one_to_four_ranks),
        cmocka_unit_test(test_default_text_equals_loading_without_a_file),
        cmocka_unit_test(test_set_overrides_win_over_the_file_and_later_sets_win),
        cmocka_unit_test(test_a_key_set_twice_takes_the_later_value_with_a_note_naming_both),
        cmocka_unit_test(test_format_parse_format_round_trip_is_identical),
        cmocka_unit_test(test_format_round_trip_holds_for_the_longest_log_path),
        cmocka_unit_test(test_a_300_character_log_path_is_refused_with_the_limit),
        cmocka_unit_test(test_a_line_longer_than_199_characters_is_an_error_with_its_line),
        cmocka_unit_test(test_format_reports_needed_length_and_truncates_like_snprintf),
        cmocka_unit_test(test_event_sections_parse_step_action_device_and_units),
        cmocka_unit_test(test_event_with_a_missing_key_is_an_error_naming_the_key),
        cmocka_unit_test(test_slow_event_needs_a_factor_and_only_slow_events_have_one),
        cmocka_unit_test(test_text_an_ini_reader_would_strip_is_refused),
        cmocka_unit_test(test_event_with_a_bad_unit_range_is_rejected),
        cmocka_unit_test(test_unknown_section_names_file_line_and_the_allowed_sections),
        cmocka_unit_test(test_an_empty_or_comment_only_file_is_refused_naming_it),
        cmocka_unit_test(test_an_unterminated_section_header_is_an_error_on_its_own_line),
        cmocka_unit_test(test_unknown_section_without_keys_is_still_an_error),
        cmocka_unit_test(test_unknown_key_names_file_line_section_and_key),
        cmocka_unit_test(test_integer_key_with_text_value_names_key_and_range),
        cmocka_unit_test(test_real_key_with_incomplete_exponent_names_key_and_range),
        cmocka_unit_test(test_seeds_take_every_non_negative_int64_and_say_the_limit),
        cmocka_unit_test(test_quarantine_after_is_held_to_the_fence_counters_range),
        cmocka_unit_test(test_block_len_below_minimum_names_key_and_range),
        cmocka_unit_test(test_max_blackout_outside_zero_to_095_is_rejected_both_ways),
        cmocka_unit_test(test_fewer_devices_than_ranks_fails_validation_with_file_and_line),
        cmocka_unit_test(test_fewer_blocks_than_devices_fails_validation),
        cmocka_unit_test(test_unstable_time_step_names_stability_and_the_limit),
        cmocka_unit_test(test_dt_auto_is_the_fraction_of_the_stability_limit),
        cmocka_unit_test(test_explicit_dt_above_the_limit_keeps_its_error),
        cmocka_unit_test(test_embedded_default_events_after_a_shortened_end_are_skipped),
        cmocka_unit_test(test_events_after_the_last_step_of_a_file_or_a_set_are_errors),
        cmocka_unit_test(test_event_on_a_device_outside_the_fleet_fails_validation),
        cmocka_unit_test(test_interrupt_rates_default_to_zero_and_are_checked),
        cmocka_unit_test(test_domain_shapes_default_to_one_and_are_checked),
        cmocka_unit_test(test_interrupt_rate_too_high_for_the_step_names_the_key),
        cmocka_unit_test(test_interrupt_events_need_a_cause_and_name_where_at_its_grain),
        cmocka_unit_test(test_an_unstable_embedded_dt_says_where_it_came_from_and_to_use_auto),
        cmocka_unit_test(test_missing_scenario_file_names_the_path),
        cmocka_unit_test(test_malformed_set_without_equals_names_set_and_the_argument),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
