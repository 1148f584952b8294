/* Unit tests of agefence-report's modules (analysis/): percentiles and moments against values
 * computed by hand, blackout bands, the JSON writer and ratios, the figures of a synthetic log
 * whose every figure is known, partial logs (the report says what is missing and does not
 * crash), and af_logfile_check catching each seeded inconsistency by its path. */
#include "analysis/ensemble.h"
#include "analysis/figures.h"
#include "analysis/goodput.h"
#include "analysis/record.h"
#include "analysis/logread.h"
#include "analysis/rundata.h"
#include "analysis/stats.h"
#include "analysis/summary.h"
#include "analysis/textreport.h"
#include "sim/io/log.h"
#include "common/log_schema.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NEAR(a, b) assert_true(fabs((a) - (b)) <= 1e-12 * (fabs(b) + 1e-300))

/* ---- percentiles and moments ------------------------------------------------------------- */

static void test_percentiles_match_hand_computed_values(void **state)
{
    (void)state;
    /* position (n - 1) p / 100, then linear interpolation between its neighbours */
    const double a[] = {1.0, 2.0, 3.0, 4.0};
    NEAR(af_stats_percentile_sorted(a, 4, 50), 2.5);  /* pos 1.5 */
    NEAR(af_stats_percentile_sorted(a, 4, 90), 3.7);  /* pos 2.7: 3 + 0.7 */
    NEAR(af_stats_percentile_sorted(a, 4, 10), 1.3);  /* pos 0.3 */
    NEAR(af_stats_percentile_sorted(a, 4, 99), 3.97); /* pos 2.97 */
    assert_true(af_stats_percentile_sorted(a, 4, 0) == 1.0);
    assert_true(af_stats_percentile_sorted(a, 4, 100) == 4.0);
    const double b[] = {15.0, 20.0, 35.0, 40.0, 50.0};
    NEAR(af_stats_percentile_sorted(b, 5, 40), 29.0); /* pos 1.6: 20 + 0.6 x 15 */
    NEAR(af_stats_percentile_sorted(b, 5, 50), 35.0); /* pos 2: exactly the middle value */
    NEAR(af_stats_percentile_sorted(b, 5, 99), 49.6); /* pos 3.96: 40 + 0.96 x 10 */
    NEAR(af_stats_percentile_sorted(b, 5, 25), 20.0); /* pos 1 */
    /* numpy.percentile([10, 20, 30, 40, 50], [10, 75]) = [14, 40] */
    const double c[] = {10, 20, 30, 40, 50};
    NEAR(af_stats_percentile_sorted(c, 5, 10), 14.0);
    NEAR(af_stats_percentile_sorted(c, 5, 75), 40.0);
    /* One value is every percentile; none is none. */
    const double one[] = {7.25};
    assert_true(af_stats_percentile_sorted(one, 1, 0) == 7.25);
    assert_true(af_stats_percentile_sorted(one, 1, 50) == 7.25);
    assert_true(af_stats_percentile_sorted(one, 1, 100) == 7.25);
    assert_true(isnan(af_stats_percentile_sorted(NULL, 0, 50)));
    /* Equal neighbours interpolate to themselves exactly. */
    const double eq[] = {3.0, 3.0, 3.0};
    assert_true(af_stats_percentile_sorted(eq, 3, 37) == 3.0);
}

static void test_stats_summary_of_a_known_sample(void **state)
{
    (void)state;
    /* Mean 5, population standard deviation 2 (the textbook sample), given unsorted. */
    const double v[] = {9, 2, 5, 4, 4, 7, 4, 5};
    double copy[8];
    memcpy(copy, v, sizeof v);
    af_stats_t st;
    assert_int_equal(af_stats_compute(v, 8, &st), AF_OK);
    assert_memory_equal(v, copy, sizeof v); /* the input is left alone */
    assert_int_equal(st.n, 8);
    assert_true(st.min == 2.0);
    assert_true(st.max == 9.0);
    NEAR(st.mean, 5.0);
    NEAR(st.sd, 2.0);
    NEAR(st.cv, 0.4);
    /* sorted: 2 4 4 4 5 5 7 9; p50 at 3.5 = 4.5; p90 at 6.3 = 7 + 0.3 x 2; p99 at 6.93 */
    NEAR(st.p50, 4.5);
    NEAR(st.p90, 7.6);
    NEAR(st.p99, 8.86);
    /* An empty sample: n = 0 and every figure NAN (null in JSON). */
    assert_int_equal(af_stats_compute(NULL, 0, &st), AF_OK);
    assert_int_equal(st.n, 0);
    assert_true(isnan(st.p50) && isnan(st.mean) && isnan(st.sd) && isnan(st.cv));
    /* A zero mean has no coefficient of variation. */
    const double z[] = {-1.0, 1.0};
    assert_int_equal(af_stats_compute(z, 2, &st), AF_OK);
    NEAR(st.sd, 1.0);
    assert_true(isnan(st.cv));
}

static void test_blackout_bands(void **state)
{
    (void)state;
    assert_int_equal(af_band_of(0.0), 0);
    assert_int_equal(af_band_of(0.0999), 0);
    assert_int_equal(af_band_of(0.1), 1); /* lower edges belong to their band */
    assert_int_equal(af_band_of(1.0 / 10.0), 1);
    assert_int_equal(af_band_of(3.0 / 10.0), 3); /* 0.3, not 3 x 0.1 = 0.30000000000000004 */
    assert_int_equal(af_band_of(0.7999), 7);
    assert_int_equal(af_band_of(0.8), 8);
    assert_int_equal(af_band_of(0.8499), 8);
    assert_int_equal(af_band_of(0.85), 9);
    assert_int_equal(af_band_of(17.0 / 20.0), 9);
    assert_int_equal(af_band_of(1.0), 9);
    assert_int_equal(af_band_of(NAN), 0);
    assert_string_equal(af_band_labels[0], "0-10%");
    assert_string_equal(af_band_labels[8], "80-85%");
    assert_string_equal(af_band_labels[9], ">=85%");
}

/* ---- figures, JSON, ratios ----------------------------------------------------------------- */

static char *capture_json(const af_figs_t *f)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    assert_non_null(out);
    af_figs_json(f, out, 0);
    fclose(out);
    return buf;
}

static void test_json_nests_dotted_keys_and_arrays(void **state)
{
    (void)state;
    af_figs_t f;
    af_figs_init(&f);
    af_figs_str(&f, 0, "a \"quoted\"\\path\n", "run.file");
    af_figs_int(&f, 0, 4, "run.ranks");
    af_figs_real(&f, 0, 0.1, "lat.step_us.p50");
    af_figs_real(&f, 0, NAN, "lat.step_us.cv");
    af_figs_bool(&f, 0, 1, "lat.ok");
    af_figs_int(&f, 0, 3, "worst.#0.step");
    af_figs_int(&f, 0, 9, "worst.#1.step");
    af_figs_str(&f, 0, "x", "notes.#0");
    af_figs_empty_array(&f, 0, "missing");
    char *json = capture_json(&f);
    const char *want = "{\n"
                       "  \"run\": {\n"
                       "    \"file\": \"a \\\"quoted\\\"\\\\path\\n\",\n"
                       "    \"ranks\": 4\n"
                       "  },\n"
                       "  \"lat\": {\n"
                       "    \"step_us\": {\n"
                       "      \"p50\": 0.1,\n"
                       "      \"cv\": null\n"
                       "    },\n"
                       "    \"ok\": true\n"
                       "  },\n"
                       "  \"worst\": [\n"
                       "    {\n"
                       "      \"step\": 3\n"
                       "    },\n"
                       "    {\n"
                       "      \"step\": 9\n"
                       "    }\n"
                       "  ],\n"
                       "  \"notes\": [\n"
                       "    \"x\"\n"
                       "  ],\n"
                       "  \"missing\": []\n"
                       "}\n";
    if (strcmp(json, want) != 0) {
        print_message("got:\n%s", json);
    }
    assert_string_equal(json, want);
    free(json);
    /* Numbers read back exactly. */
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    const double xs[] = {0.1, 1.0 / 3.0, 1e-300, 123456789.125, -2.5e-16};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; ++i) {
        af_json_number(out, xs[i]);
        fputc(' ', out);
    }
    af_json_number(out, INFINITY);
    fclose(out);
    char *p = buf;
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; ++i) {
        char *end = NULL;
        assert_true(strtod(p, &end) == xs[i]);
        p = end;
    }
    assert_string_equal(p, " null");
    free(buf);
    af_figs_free(&f);
}

static void test_ratio_is_defined_only_for_numbers_over_non_zero(void **state)
{
    (void)state;
    af_figs_t a;
    af_figs_t b;
    af_figs_init(&a);
    af_figs_init(&b);
    af_figs_int(&a, 0, 4, "x");
    af_figs_int(&b, 0, 6, "x");
    af_figs_int(&a, 0, 0, "zero");
    af_figs_int(&b, 0, 0, "zero");
    af_figs_str(&a, 0, "s", "s");
    af_figs_str(&b, 0, "s", "s");
    af_figs_int(&a, AF_FIG_NORATIO, 7, "seed");
    af_figs_int(&b, AF_FIG_NORATIO, 7, "seed");
    af_figs_null(&a, 0, "n");
    af_figs_real(&b, 0, 1.0, "n");
    af_figs_real(&a, 0, 0.3, "r");
    af_figs_real(&b, 0, 0.3, "r");
    double r = 0;
    assert_true(af_fig_ratio(af_figs_find(&a, "x"), af_figs_find(&b, "x"), &r));
    assert_true(r == 1.5);
    assert_false(af_fig_ratio(af_figs_find(&a, "zero"), af_figs_find(&b, "zero"), &r));
    assert_false(af_fig_ratio(af_figs_find(&a, "s"), af_figs_find(&b, "s"), &r));
    assert_false(af_fig_ratio(af_figs_find(&a, "seed"), af_figs_find(&b, "seed"), &r));
    assert_false(af_fig_ratio(af_figs_find(&a, "n"), af_figs_find(&b, "n"), &r));
    assert_false(af_fig_ratio(af_figs_find(&a, "x"), NULL, &r));
    assert_true(af_fig_ratio(af_figs_find(&a, "r"), af_figs_find(&b, "r"), &r));
    assert_true(r == 1.0);
    /* The table of a list against itself: every ratio is exactly 1 or undefined. */
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    af_figs_compare_text(&a, &a, out);
    fclose(out);
    assert_non_null(strstr(buf, "OTHER/RUN"));
    int rows = 0;
    for (char *line = strtok(buf, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        if (strncmp(line, "figure", 6) == 0) {
            continue;
        }
        const char *last = strrchr(line, ' ');
        assert_non_null(last);
        assert_true(strcmp(last + 1, "1") == 0 || strcmp(last + 1, "\u2014") == 0);
        rows++;
    }
    assert_int_equal(rows, 5); /* "n" is null in both: left out */
    free(buf);
    af_figs_free(&a);
    af_figs_free(&b);
}

/* ---- a synthetic log with known figures ----------------------------------------------------- */

#define NRANKS    2
#define NROWS     20
#define DEVICES   4
#define UPD       2
#define UNITS     (DEVICES * UPD)
#define BLOCKS    8
#define BLOCK_LEN 4
#define CAPACITY  2 /* next_pow2(ceil(8 / (8 x (1 - 0.5)))) */
#define PLANNED   18

static const int64_t DEAD[NROWS] = {0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 4, 4, 4, 4, 4, 7, 7, 7, 7, 7};

static void temp_path(char *path, size_t n, const char *tag)
{
    snprintf(path, n, "/tmp/af_test_report_%s_XXXXXX", tag);
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
}

static void event(af_log_t *log, int64_t step, const char *kind, int64_t block, int64_t fd,
                  int64_t fu, int64_t td, int64_t tu, int64_t ts, int64_t detail)
{
    af_event_row_t e;
    memset(&e, 0, sizeof e);
    e.step = step;
    snprintf(e.kind, sizeof e.kind, "%s", kind);
    e.block = block;
    e.from_device = fd;
    e.from_unit = fu;
    e.from_slot = block >= 0 ? 0 : -1;
    e.to_device = td;
    e.to_unit = tu;
    e.to_slot = ts;
    e.detail = detail;
    assert_int_equal(af_log_event(log, &e), AF_OK);
}

/* Writes a complete and consistent log (rows: see the figures asserted below). */
static void write_log(const char *path)
{
    af_log_t *log = NULL;
    assert_int_equal(af_log_create(&log, path, NRANKS, 8), AF_OK);
    const char *root_str[][2] = {{"agefence_version", "0.1.0"},
                                 {"git_revision", "feedc0de"},
                                 {"config", "[scenario]\nname = synthetic\n"},
                                 {"scenario", "synthetic"},
                                 {"compute_backend", "cpu"},
                                 {"fabric_backend", "mpi"},
                                 {"hostnames", "node1,node2"},
                                 {"start_time", "2026-01-01T00:00:00Z"},
                                 {"mpi_version", "test MPI"}};
    for (size_t i = 0; i < sizeof root_str / sizeof root_str[0]; ++i) {
        assert_int_equal(af_log_attr_str(log, "/", root_str[i][0], root_str[i][1]), AF_OK);
    }
    const struct {
        const char *name;
        int64_t v;
    } root_int[] = {{"schema_version", AF_SCHEMA_VERSION},
                    {"seed", 42},
                    {"ranks", NRANKS},
                    {"devices", DEVICES},
                    {"units_per_device", UPD},
                    {"blocks", BLOCKS},
                    {"block_len", BLOCK_LEN},
                    {"capacity", CAPACITY},
                    {"steps_planned", PLANNED}};
    for (size_t i = 0; i < sizeof root_int / sizeof root_int[0]; ++i) {
        assert_int_equal(af_log_attr_i64(log, "/", root_int[i].name, root_int[i].v), AF_OK);
    }
    assert_int_equal(af_log_attr_f64(log, "/", "max_blackout", 0.5), AF_OK);
    assert_int_equal(
        af_log_attr_f64(log, "/", "state_bytes_static", UNITS * CAPACITY * 2.0 * BLOCK_LEN * 8),
        AF_OK);
    assert_int_equal(
        af_log_attr_f64(log, "/", "state_bytes_fault_free", BLOCKS * 2.0 * BLOCK_LEN * 8), AF_OK);
    const double ar[] = {40.0, 10.0, 30.0, 20.0}; /* p50 25 */
    const double tf[] = {0.03, 0.03, 0.04};
    assert_int_equal(af_log_calibration(log, "allreduce8_us", ar, 4), AF_OK);
    assert_int_equal(af_log_calibration(log, "timer_floor_us", tf, 3), AF_OK);
    assert_int_equal(af_log_attr_i64(log, "/calibration", "warmup_iterations", 20), AF_OK);

    af_step_row_t tot;
    memset(&tot, 0, sizeof tot);
    int64_t state_step = 0;
    for (int r = 0; r < NROWS; ++r) {
        af_step_row_t row;
        memset(&row, 0, sizeof row);
        row.step = r + 1;
        row.sim_hours = 10.0 * (r + 1);
        row.mass = 0.5;
        row.energy = 0.25;
        row.dead_units = DEAD[r];
        row.fading_units = 1;
        row.healthy_units = UNITS - row.dead_units - row.fading_units;
        row.blackout_frac = (double)row.dead_units / UNITS;
        if (r == 2 || r == 12) { /* 3 + 3 injected; 1 finite corruption gets through in row 12 */
            row.corrupt_injected = 3;
            row.corrupt_detected = r == 2 ? 3 : 2;
            row.detected_finite = row.corrupt_detected; /* all non-finite */
            row.sdc_undetected = r == 12;
            row.fenced = row.corrupt_detected;
            row.retried = row.fenced;
        }
        row.moves_drain = r == 3 ? 2 : 0;
        row.moves_restore = r == 10 ? 1 : 0;
        row.rollbacks = r == 15;
        row.replayed_steps = r == 15 ? 2 : 0;
        state_step = state_step + 1 - row.replayed_steps;
        row.state_step = state_step;
        double ph[AF_NPHASES * NRANKS];
        for (int p = 0; p < AF_NPHASES; ++p) {
            for (int k = 0; k < NRANKS; ++k) {
                ph[p * NRANKS + k] = 1.0 + p;
            }
        }
        ph[AF_PHASE_step_us * NRANKS + 0] = r == 15 ? 5000.0 : 100.0 + r;
        ph[AF_PHASE_step_us * NRANKS + 1] = 200.0 + r;
        ph[AF_PHASE_coord_us * NRANKS + 0] = 50.0;
        ph[AF_PHASE_coord_us * NRANKS + 1] = 50.0;
        ph[AF_PHASE_halo_us * NRANKS + 0] = r == 15 ? 4000.0 : 3.0;
        assert_int_equal(af_log_append(log, &row, ph), AF_OK);
#define ADD(c) tot.c += row.c
        ADD(corrupt_injected);
        ADD(corrupt_detected);
        ADD(detected_finite);
        ADD(fenced);
        ADD(retried);
        ADD(nonfinite_leaked);
        ADD(sdc_undetected);
        ADD(moves_drain);
        ADD(moves_restore);
        ADD(moves_retry);
        ADD(rollbacks);
        ADD(replayed_steps);
#undef ADD
    }
    assert_int_equal(state_step, PLANNED);
    /* Events: 2 drains (step 4), deaths at steps 6, 11 (3) and 16 (3), a restore (step 11), a
     * rollback (step 16). */
    event(log, 4, "drain", 0, 0, 0, 1, 0, 1, -1);
    event(log, 4, "drain", 1, 0, 0, 1, 1, 1, -1);
    event(log, 6, "death", -1, 0, 0, -1, -1, -1, 1);
    for (int u = 1; u <= 3; ++u) {
        event(log, 11, "death", -1, u / UPD, u % UPD, -1, -1, -1, 1);
    }
    event(log, 11, "restore", 2, 0, 1, 2, 0, 1, 8);
    for (int u = 4; u <= 6; ++u) {
        event(log, 16, "death", -1, u / UPD, u % UPD, -1, -1, -1, 1);
    }
    event(log, 16, "rollback", -1, -1, -1, -1, -1, -1, 2);
    /* Job-level interruptions: a software bug (the job) and a silent data corruption found on
     * device 3. */
    event(log, 16, "interrupt", -1, -1, -1, -1, -1, -1, AF_INTR_software);
    event(log, 18, "interrupt", -1, 3, -1, -1, -1, -1, AF_INTR_sdc);
    /* The run's own table of them (one device a node: no devices_per_node in the config), each
     * at its time as drawn, inside its step's hours (step s ends at 10 s hours). */
    const af_intr_row_t intr[] = {
        {6, 60.0, AF_INTR_wearout, 0, 0, 55.0},    {11, 110.0, AF_INTR_wearout, 0, 0, 101.0},
        {11, 110.0, AF_INTR_wearout, 1, 1, 104.0}, {16, 160.0, AF_INTR_wearout, 2, 2, 151.0},
        {16, 160.0, AF_INTR_wearout, 3, 3, 152.5}, {16, 160.0, AF_INTR_software, -1, -1, 157.25},
        {18, 180.0, AF_INTR_sdc, 3, 3, 175.0}};
    for (size_t i = 0; i < sizeof intr / sizeof intr[0]; ++i) {
        assert_int_equal(af_log_interruption(log, &intr[i]), AF_OK);
    }
    assert_int_equal(af_log_flush(log), AF_OK);

    /* /units: units 0..6 die (wear-out), unit 7 is fading at the end. */
    double life[UNITS], age[UNITS], temp[UNITS];
    int64_t dev[UNITS], unit[UNITS], fade[UNITS], death[UNITS], cause[UNITS];
    const int64_t death_at[UNITS] = {6, 11, 11, 11, 16, 16, 16, -1};
    for (int u = 0; u < UNITS; ++u) {
        life[u] = 100.0 + u;
        age[u] = 90.0;
        temp[u] = 330.0;
        dev[u] = u / UPD;
        unit[u] = u % UPD;
        death[u] = death_at[u];
        fade[u] = 1;
        cause[u] = death[u] >= 0 ? 1 : 0;
    }
    assert_int_equal(af_log_write_f64(log, "/units/lifetime_hours", life, UNITS), AF_OK);
    assert_int_equal(af_log_write_f64(log, "/units/age_hours", age, UNITS), AF_OK);
    assert_int_equal(af_log_write_f64(log, "/units/temperature_K", temp, UNITS), AF_OK);
    assert_int_equal(af_log_write_i64(log, "/units/fade_step", fade, UNITS), AF_OK);
    assert_int_equal(af_log_write_i64(log, "/units/death_step", death, UNITS), AF_OK);
    assert_int_equal(af_log_write_i64(log, "/units/cause", cause, UNITS), AF_OK);
    assert_int_equal(af_log_write_i64(log, "/units/device", dev, UNITS), AF_OK);
    assert_int_equal(af_log_write_i64(log, "/units/unit", unit, UNITS), AF_OK);
    for (int u = 0; u < UNITS; ++u) {
        fade[u] = 0; /* no silent unit */
    }
    assert_int_equal(af_log_write_i64(log, "/units/silent", fade, UNITS), AF_OK);
    for (int u = 0; u < UNITS; ++u) {
        fade[u] = -1; /* none quarantined */
    }
    assert_int_equal(af_log_write_i64(log, "/units/quarantined_step", fade, UNITS), AF_OK);
    assert_int_equal(af_log_write_i64(log, "/units/first_corrupt_step", fade, UNITS), AF_OK);
    assert_int_equal(af_log_attr_str(log, "/units", "cause_codes", "0 alive, 1 wear-out"), AF_OK);

    double state[BLOCKS * BLOCK_LEN];
    for (int i = 0; i < BLOCKS * BLOCK_LEN; ++i) {
        state[i] = 0.5;
    }
    assert_int_equal(af_log_write_f64(log, "/final/state", state, BLOCKS * BLOCK_LEN), AF_OK);
    assert_int_equal(af_log_attr_str(log, "/final", "exit_reason", "completed"), AF_OK);
    const struct {
        const char *name;
        int64_t v;
    } fin[] = {{"exit_code", 0},
               {"steps_completed", NROWS},
               {"state_step", PLANNED},
               {"bitwise_equal", 1},
               {"nonfinite_leaked_total", tot.nonfinite_leaked},
               {"sdc_undetected_total", tot.sdc_undetected},
               {"sdc_harmful_total", tot.sdc_harmful},
               {"corrupt_harmful_total", tot.corrupt_harmful},
               {"detected_finite_total", tot.detected_finite},
               {"detected_abft_total", tot.detected_abft},
               {"detected_twin_total", tot.detected_twin},
               {"abft_false_alarms_total", tot.abft_false_alarms},
               {"quarantined_units_total", tot.quarantined_units},
               {"twins_total", tot.twins},
               {"event_log_errors", 0},
               {"unverified_commits_total", tot.unverified_commits},
               {"allocs_after_init", 0},
               {"corrupt_injected_total", tot.corrupt_injected},
               {"corrupt_detected_total", tot.corrupt_detected},
               {"fenced_total", tot.fenced},
               {"retried_total", tot.retried},
               {"moves_drain_total", tot.moves_drain},
               {"moves_restore_total", tot.moves_restore},
               {"moves_retry_total", tot.moves_retry},
               {"rollbacks_total", tot.rollbacks},
               {"replayed_steps_total", tot.replayed_steps},
               {"replayed_blocks_total", tot.replayed_blocks},
               {"replayed_block_steps_total", tot.replayed_block_steps}};
    for (size_t i = 0; i < sizeof fin / sizeof fin[0]; ++i) {
        assert_int_equal(af_log_attr_i64(log, "/final", fin[i].name, fin[i].v), AF_OK);
    }
    assert_int_equal(af_log_attr_str(log, "/final", "state_checksum", "00112233445566ff"), AF_OK);
    assert_int_equal(af_log_attr_str(log, "/final", "reference_checksum", "00112233445566ff"),
                     AF_OK);
    assert_int_equal(af_log_attr_str(log, "/final", "end_time", "2026-01-01T00:01:00Z"), AF_OK);
    assert_int_equal(af_log_attr_f64(log, "/final", "mass_initial", 0.5), AF_OK);
    assert_int_equal(af_log_attr_f64(log, "/final", "mass_final", 0.5 + 1e-15), AF_OK);
    assert_int_equal(af_log_attr_f64(log, "/final", "sim_hours", 10.0 * NROWS), AF_OK);
    assert_int_equal(af_log_attr_f64(log, "/final", "max_blackout", 7.0 / 8.0), AF_OK);
    assert_int_equal(af_log_close(&log), AF_OK);
}

/* Runs the checker on path; returns the violation count and leaves the text in *text. */
static int check_log(const char *path, char **text)
{
    af_logfile_t lf;
    char err[512] = "";
    af_result_t rc = af_logfile_open(&lf, path, err, sizeof err);
    if (rc != AF_OK) {
        print_message("%s\n", err);
    }
    assert_int_equal(rc, AF_OK);
    size_t len = 0;
    FILE *f = open_memstream(text, &len);
    assert_non_null(f);
    int bad = af_logfile_check(&lf, f);
    fclose(f);
    af_logfile_close(&lf);
    return bad;
}

typedef struct loaded {
    af_logfile_t lf;
    af_run_t run;
    af_summary_t sum;
} loaded_t;

static void load(loaded_t *l, const char *path)
{
    char err[512] = "";
    assert_int_equal(af_logfile_open(&l->lf, path, err, sizeof err), AF_OK);
    assert_int_equal(af_run_load(&l->run, &l->lf), AF_OK);
    assert_int_equal(af_summary_compute(&l->sum, &l->run), AF_OK);
}

static void unload(loaded_t *l)
{
    af_run_free(&l->run);
    af_logfile_close(&l->lf);
}

static char *text_report(const af_summary_t *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    assert_non_null(out);
    af_report_text(s, out);
    fclose(out);
    return buf;
}

static void test_synthetic_log_is_valid(void **state)
{
    (void)state;
    char path[64];
    temp_path(path, sizeof path, "valid");
    write_log(path);
    char *text = NULL;
    int bad = check_log(path, &text);
    if (bad) {
        print_message("%s", text);
    }
    assert_int_equal(bad, 0);
    free(text);
    unlink(path);
}

static void test_figures_of_a_known_log(void **state)
{
    (void)state;
    char path[64];
    temp_path(path, sizeof path, "figures");
    write_log(path);
    loaded_t l;
    load(&l, path);
    const af_summary_t *s = &l.sum;
    assert_int_equal(l.run.nmissing, 0);
    assert_int_equal(s->units, UNITS);
    assert_int_equal(s->slots, UNITS * CAPACITY);
    assert_int_equal(s->hosts, 2);
    assert_int_equal(s->steps_executed, NROWS);
    assert_int_equal(s->steps_logical, PLANNED);
    NEAR(s->memory_overhead, (double)UNITS * CAPACITY / BLOCKS);
    NEAR(s->max_blackout, 7.0 / 8.0);
    NEAR(s->mass_drift, (0.5 + 1e-15) - 0.5);
    assert_int_equal(s->checksums_match, 1);
    /* containment: 6 injected, 5 detected, 1 finite corruption through */
    assert_int_equal(s->tot[AF_COL_corrupt_injected], 6);
    assert_int_equal(s->tot[AF_COL_corrupt_detected], 5);
    assert_int_equal(s->tot[AF_COL_sdc_undetected], 1);
    NEAR(s->detected_per_injected, 5.0 / 6.0);
    NEAR(s->undetected_per_injected, 1.0 / 6.0);
    NEAR(s->fenced_per_injected, 5.0 / 6.0);
    NEAR(s->retried_per_fenced, 1.0);
    NEAR(s->injected_per_step, 6.0 / NROWS);
    NEAR(s->sdc_per_step, 1.0 / NROWS);
    assert_true(s->leaked_per_step == 0.0);
    NEAR(s->injected_per_fading_unit_step, 6.0 / NROWS); /* one fading unit in every row */
    assert_int_equal(s->steps_with_corruption, 2);
    /* recovery */
    assert_int_equal(s->moves_total, 3);
    assert_int_equal(s->steps_with_moves, 3); /* rows 3, 10 and 15 */
    NEAR(s->lost_work_frac, 2.0 / NROWS);
    assert_int_equal(s->units_dead, 7);
    assert_int_equal(s->dead_by_cause[1], 7);
    assert_int_equal(s->events[AF_EV_drain], 2);
    assert_int_equal(s->events[AF_EV_death], 7);
    assert_int_equal(s->events[AF_EV_rollback], 1);
    assert_int_equal(s->events[AF_EV_interrupt], 2);
    /* interruptions: wear-out on device 0 (step 6), devices 0 and 1 (step 11), devices 2 and 3
     * (step 16), and the two job-level ones: 7 in 200 hours */
    assert_int_equal(s->interruptions, 7);
    assert_int_equal(s->intr_by_cause[AF_INTR_wearout], 5);
    assert_int_equal(s->intr_by_cause[AF_INTR_software], 1);
    assert_int_equal(s->intr_by_cause[AF_INTR_sdc], 1);
    assert_int_equal(s->intr_job, 2);
    NEAR(s->mtbi_hours, 200.0 / 7.0);
    /* goodput by replay (analysis/goodput.h): the report's timeline is the table's, at its
     * drawn hours, each of its kind (wear-out: its device out, none when it is out already, as
     * device 0 is at 101 h; software and sdc: job-level),
     * on a window of 200 h, with remap's pace from the healthy units (blocks 8 on 8 units: the
     * most loaded unit starts with 1 block; 7 healthy from row 0, 6 from row 5: ceil(8 / h) = 2,
     * pace 1/2 from 10 h; 3 from row 10: 1/3 from 110 h; none from row 15: 0 from 160 h). The
     * replay's own arithmetic is tested by hand in tests/test_replay.c; here, that the report
     * feeds it this timeline and the [goodput] defaults, and prints what it gives. */
    assert_true(s->have_goodput);
    NEAR(s->goodput_window_s, 720000.0);
    assert_int_equal(s->goodput_hw, 5);
    assert_int_equal(s->goodput_hw_devices, 4); /* device 0's second strike finds it out */
    assert_int_equal(s->goodput_inplace, 0);
    assert_int_equal(s->goodput_job, 2);
    assert_int_equal(s->goodput_pace_points, 4);
    {
        const af_replay_intr_t x[7] = {
            {55.0 * 3600, AF_REPLAY_HARDWARE, 1, 0},  {101.0 * 3600, AF_REPLAY_HARDWARE, 0, 0},
            {104.0 * 3600, AF_REPLAY_HARDWARE, 1, 1}, {151.0 * 3600, AF_REPLAY_HARDWARE, 1, 2},
            {152.5 * 3600, AF_REPLAY_HARDWARE, 1, 3}, {157.25 * 3600, AF_REPLAY_JOB, 0, -1},
            {175.0 * 3600, AF_REPLAY_JOB, 0, 3}};
        const af_replay_pace_t pace[4] = {
            {0.0, 1.0}, {10.0 * 3600, 0.5}, {110.0 * 3600, 1.0 / 3.0}, {160.0 * 3600, 0.0}};
        af_replay_timeline_t tl = {.window_s = 720000.0,
                                   .devices = DEVICES,
                                   .intr = x,
                                   .n_intr = 7,
                                   .pace = pace,
                                   .n_pace = 4};
        af_goodput_params_t g;
        af_goodput_defaults(&g);
        af_replay_params_t p;
        af_goodput_replay_params(&g, 1, &p);
        af_goodput_t want;
        assert_int_equal(af_goodput_replay(&tl, &p, &want), AF_OK);
        for (int k = 0; k < AF_REPLAY_NPOLICY; ++k) {
            const af_goodput_policy_t *got = &s->goodput.pol[k];
            assert_true(got->ettr == want.pol[k].ettr);
            assert_true(got->interval_s == want.pol[k].interval_s);
            assert_true(got->at.useful_s == want.pol[k].at.useful_s);
            assert_true(got->young_ettr == want.pol[k].young_ettr);
            assert_true(got->daly_ettr == want.pol[k].daly_ettr);
            assert_true(got->ettr > 0.0 && got->ettr < 1.0);
            assert_true(got->ettr >= got->young_ettr && got->ettr >= got->daly_ettr);
        }
        /* checkpoint_restart guards against all 7 (M = 720,000 / 7 s), remap's and
         * shrink_rebuild's checkpoints against the 2 job-level ones, remap's replicas against
         * the 5 hardware losses */
        NEAR(s->goodput.pol[AF_REPLAY_CHECKPOINT_RESTART].mtbi_s, 720000.0 / 7.0);
        NEAR(s->goodput.pol[AF_REPLAY_SHRINK_REBUILD].mtbi_s, 360000.0);
        NEAR(s->goodput.pol[AF_REPLAY_REMAP].mtbi_s, 360000.0);
        NEAR(s->goodput.pol[AF_REPLAY_REMAP].replica_mtbi_s, 144000.0);
        NEAR(s->goodput.pol[AF_REPLAY_CHECKPOINT_RESTART].young_s,
             sqrt(2.0 * 60.0 * 720000.0 / 7.0));
    }
    assert_int_equal(s->allocs_after_init, 0);
    /* latency: bands 0-10% (rows 0-4), 10-20% (5-9), 50-60% (10-14), >=85% (15-19) */
    const int64_t band_steps[AF_NBANDS] = {5, 5, 0, 0, 0, 5, 0, 0, 0, 5};
    for (int b = 0; b < AF_NBANDS; ++b) {
        assert_int_equal(s->band[b].steps, band_steps[b]);
        assert_int_equal(s->band[b].ph[AF_PHASE_step_us].n, 2 * band_steps[b]);
    }
    /* >=85%: 116 117 118 119 215 216 217 218 219 5000 */
    const af_stats_t *top = &s->band[9].ph[AF_PHASE_step_us];
    NEAR(top->p50, 215.5);
    NEAR(top->p90, 219.0 + 0.1 * (5000.0 - 219.0)); /* pos 8.1 */
    assert_true(top->max == 5000.0);
    NEAR(top->mean, (116 + 117 + 118 + 119 + 215 + 216 + 217 + 218 + 219 + 5000) / 10.0);
    /* 0-10%: 100..104 and 200..204: p50 between 104 and 200 */
    NEAR(s->band[0].ph[AF_PHASE_step_us].p50, 152.0);
    assert_true(isnan(s->band[2].ph[AF_PHASE_step_us].p50));
    assert_int_equal(s->with_moves.steps, 3);
    assert_int_equal(s->without_moves.steps, NROWS - 3);
    assert_int_equal(s->all.ph[AF_PHASE_step_us].n, NROWS * NRANKS);
    /* coordinator: 50 µs everywhere against an all-reduce floor of 25 µs */
    NEAR(s->all.ph[AF_PHASE_coord_us].p50, 50.0);
    NEAR(s->coord_p50_over_allreduce, 2.0);
    NEAR(s->coord_mean_over_allreduce, 2.0);
    /* worst steps: step 16 on rank 0 (5000 µs, halo), then steps 20, 19, 18, 17 on rank 1 */
    assert_int_equal(s->nworst, 5);
    assert_int_equal(s->worst[0].step, 16);
    assert_int_equal(s->worst[0].rank, 0);
    assert_true(s->worst[0].step_us == 5000.0);
    assert_int_equal(s->worst[0].phase, AF_PHASE_halo_us);
    assert_int_equal(s->worst[0].state_step, 14);
    assert_int_equal(s->worst[0].counters[AF_COL_rollbacks], 1);
    assert_int_equal(s->worst[0].counters[AF_COL_replayed_steps], 2);
    assert_int_equal(s->worst[0].events[AF_EV_death], 3);
    assert_int_equal(s->worst[0].events[AF_EV_rollback], 1);
    for (int w = 1; w < 5; ++w) {
        assert_int_equal(s->worst[w].step, 21 - w);
        assert_int_equal(s->worst[w].rank, 1);
    }
    /* The text report names the sections and the figures. */
    char *text = text_report(s);
    const char *want[] = {"RUN",
                          "CORRECTNESS",
                          "CONTAINMENT",
                          "RECOVERY",
                          "LATENCY",
                          "STEP LATENCY BY BLACKOUT",
                          "WORST 5 STEPS",
                          "BITWISE EQUAL",
                          "synthetic",
                          "2 ranks on 2 hosts",
                          "step    16 (logical    14)",
                          "rollbacks 1",
                          "SILENT DATA CORRUPTION"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; ++i) {
        if (strstr(text, want[i]) == NULL) {
            print_message("missing '%s' in:\n%s", want[i], text);
        }
        assert_non_null(strstr(text, want[i]));
    }
    free(text);
    /* Every figure has a key, and the ones the docs promise are there. */
    af_figs_t f;
    af_figs_init(&f);
    assert_int_equal(af_summary_figures(s, &f), AF_OK);
    const af_fig_t *g = af_figs_find(&f, "latency.by_blackout.>=85%.step_us.p50");
    assert_non_null(g);
    NEAR(g->x, 215.5);
    g = af_figs_find(&f, "containment.detected_per_injected");
    assert_non_null(g);
    NEAR(g->x, 5.0 / 6.0);
    g = af_figs_find(&f, "latency.by_blackout.20-30%.step_us.p50");
    assert_non_null(g);
    assert_int_equal(g->kind, AF_FIG_NULL);
    assert_non_null(af_figs_find(&f, "worst_steps.#4.step"));
    assert_null(af_figs_find(&f, "worst_steps.#5.step"));
    assert_non_null(af_figs_find(&f, "missing"));
    af_figs_free(&f);
    unload(&l);
    unlink(path);
}

/* ---- seeded inconsistencies ---------------------------------------------------------------- */

static hid_t open_rw(const char *path)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    return f;
}

/* Writes one element of a 1-D (col < 0) or 2-D dataset. */
static void poke(const char *path, const char *dset, hsize_t row, int col, hid_t mtype,
                 const void *v)
{
    hid_t f = open_rw(path);
    hid_t d = H5Dopen2(f, dset, H5P_DEFAULT);
    assert_true(d >= 0);
    hid_t fs = H5Dget_space(d);
    hsize_t start[2] = {row, (hsize_t)(col < 0 ? 0 : col)};
    hsize_t count[2] = {1, 1};
    assert_true(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) >= 0);
    hid_t ms = H5Screate_simple(col < 0 ? 1 : 2, count, NULL);
    assert_true(H5Dwrite(d, mtype, ms, fs, H5P_DEFAULT, v) >= 0);
    H5Sclose(ms);
    H5Sclose(fs);
    H5Dclose(d);
    H5Fclose(f);
}

static void poke_i64(const char *path, const char *dset, hsize_t row, int64_t v)
{
    poke(path, dset, row, -1, H5T_NATIVE_INT64, &v);
}

static void poke_f64(const char *path, const char *dset, hsize_t row, int col, double v)
{
    poke(path, dset, row, col, H5T_NATIVE_DOUBLE, &v);
}

static void attr_i64(const char *path, const char *obj, const char *name, int64_t v)
{
    hid_t f = open_rw(path);
    if (H5Aexists_by_name(f, obj, name, H5P_DEFAULT) > 0) {
        H5Adelete_by_name(f, obj, name, H5P_DEFAULT);
    }
    hid_t s = H5Screate(H5S_SCALAR);
    hid_t a =
        H5Acreate_by_name(f, obj, name, H5T_STD_I64LE, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(a >= 0);
    assert_true(H5Awrite(a, H5T_NATIVE_INT64, &v) >= 0);
    H5Aclose(a);
    H5Sclose(s);
    H5Fclose(f);
}

static void attr_str(const char *path, const char *obj, const char *name, const char *v)
{
    hid_t f = open_rw(path);
    if (H5Aexists_by_name(f, obj, name, H5P_DEFAULT) > 0) {
        H5Adelete_by_name(f, obj, name, H5P_DEFAULT);
    }
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    hid_t s = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate_by_name(f, obj, name, t, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(a >= 0);
    assert_true(H5Awrite(a, t, &v) >= 0);
    H5Aclose(a);
    H5Sclose(s);
    H5Tclose(t);
    H5Fclose(f);
}

static void attr_del(const char *path, const char *obj, const char *name)
{
    hid_t f = open_rw(path);
    assert_true(H5Adelete_by_name(f, obj, name, H5P_DEFAULT) >= 0);
    H5Fclose(f);
}

static void unlink_obj(const char *path, const char *obj)
{
    hid_t f = open_rw(path);
    assert_true(H5Ldelete(f, obj, H5P_DEFAULT) >= 0);
    H5Fclose(f);
}

/* Replaces dset by a fixed-size 1-D dataset of n values of type ftype. */
static void replace_1d(const char *path, const char *dset, hid_t ftype, hid_t mtype, const void *v,
                       hsize_t n)
{
    hid_t f = open_rw(path);
    if (H5Lexists(f, dset, H5P_DEFAULT) > 0) {
        assert_true(H5Ldelete(f, dset, H5P_DEFAULT) >= 0);
    }
    hid_t s = H5Screate_simple(1, &n, NULL);
    hid_t d = H5Dcreate2(f, dset, ftype, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(d >= 0);
    assert_true(H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
    H5Dclose(d);
    H5Sclose(s);
    H5Fclose(f);
}

/* Rewrites event i's kind. */
static void event_kind(const char *path, hsize_t i, const char *kind)
{
    af_logfile_t lf;
    char err[256];
    assert_int_equal(af_logfile_open(&lf, path, err, sizeof err), AF_OK);
    int64_t n = 0;
    assert_int_equal(af_logfile_events_count(&lf, &n), AF_OK);
    af_event_row_t *ev = calloc((size_t)n, sizeof *ev);
    assert_non_null(ev);
    assert_int_equal(af_logfile_read_events(&lf, ev, (size_t)n), AF_OK);
    af_logfile_close(&lf);
    snprintf(ev[i].kind, sizeof ev[i].kind, "%s", kind);
    hid_t f = open_rw(path);
    hid_t d = H5Dopen2(f, "/events", H5P_DEFAULT);
    hid_t t = H5Dget_type(d);
    hid_t mt = H5Tget_native_type(t, H5T_DIR_ASCEND);
    /* The file type is the writer's, whose layout is af_event_row_t's. */
    assert_int_equal(H5Tget_size(mt), sizeof(af_event_row_t));
    assert_true(H5Dwrite(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, ev) >= 0);
    H5Tclose(mt);
    H5Tclose(t);
    H5Dclose(d);
    H5Fclose(f);
    free(ev);
}

/* Rewrites event i's detail. */
static void event_detail(const char *path, hsize_t i, int64_t detail)
{
    af_logfile_t lf;
    char err[256];
    assert_int_equal(af_logfile_open(&lf, path, err, sizeof err), AF_OK);
    int64_t n = 0;
    assert_int_equal(af_logfile_events_count(&lf, &n), AF_OK);
    af_event_row_t *ev = calloc((size_t)n, sizeof *ev);
    assert_non_null(ev);
    assert_int_equal(af_logfile_read_events(&lf, ev, (size_t)n), AF_OK);
    af_logfile_close(&lf);
    ev[i].detail = detail;
    hid_t f = open_rw(path);
    hid_t d = H5Dopen2(f, "/events", H5P_DEFAULT);
    hid_t t = H5Dget_type(d);
    hid_t mt = H5Tget_native_type(t, H5T_DIR_ASCEND);
    assert_int_equal(H5Tget_size(mt), sizeof(af_event_row_t));
    assert_true(H5Dwrite(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, ev) >= 0);
    H5Tclose(mt);
    H5Tclose(t);
    H5Dclose(d);
    H5Fclose(f);
    free(ev);
}

/* Rewrites row i of /interruptions: its cause (when cause >= 0) and its hours (when finite). */
static void intr_poke(const char *path, hsize_t i, int64_t cause, double hours)
{
    af_logfile_t lf;
    char err[256];
    assert_int_equal(af_logfile_open(&lf, path, err, sizeof err), AF_OK);
    int64_t n = 0;
    assert_int_equal(af_logfile_intr_count(&lf, &n), AF_OK);
    af_intr_row_t *rows = calloc((size_t)n, sizeof *rows);
    assert_non_null(rows);
    assert_int_equal(af_logfile_read_intr(&lf, rows, (size_t)n), AF_OK);
    af_logfile_close(&lf);
    if (cause >= 0) {
        rows[i].cause = cause;
    }
    if (isfinite(hours)) {
        rows[i].sim_hours = hours;
    }
    hid_t f = open_rw(path);
    hid_t d = H5Dopen2(f, "/interruptions", H5P_DEFAULT);
    hid_t mt = (hid_t)af_log_intr_type();
    assert_true(H5Dwrite(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) >= 0);
    H5Tclose(mt);
    H5Dclose(d);
    H5Fclose(f);
    free(rows);
}

/* Replaces /events by a compound without its 'detail' field. */
static void events_without_detail(const char *path)
{
    hid_t f = open_rw(path);
    assert_true(H5Ldelete(f, "/events", H5P_DEFAULT) >= 0);
    typedef struct {
        int64_t step;
        char kind[16];
    } short_event_t;
    hid_t str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, 16);
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(short_event_t));
    H5Tinsert(t, "step", HOFFSET(short_event_t, step), H5T_NATIVE_INT64);
    H5Tinsert(t, "kind", HOFFSET(short_event_t, kind), str);
    hsize_t n = 1;
    hid_t s = H5Screate_simple(1, &n, NULL);
    hid_t d = H5Dcreate2(f, "/events", t, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(d >= 0);
    short_event_t e = {4, "drain"};
    assert_true(H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, &e) >= 0);
    H5Dclose(d);
    H5Sclose(s);
    H5Tclose(t);
    H5Tclose(str);
    H5Fclose(f);
}

/* Replaces a /ranks phase by a steps x (ranks - 1) dataset. */
static void ranks_wrong_shape(const char *path, const char *dset)
{
    hid_t f = open_rw(path);
    assert_true(H5Ldelete(f, dset, H5P_DEFAULT) >= 0);
    hsize_t dims[2] = {NROWS, NRANKS - 1};
    hid_t s = H5Screate_simple(2, dims, NULL);
    hid_t d = H5Dcreate2(f, dset, H5T_IEEE_F64LE, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(d >= 0);
    double v[NROWS * (NRANKS - 1)] = {0};
    assert_true(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
    H5Dclose(d);
    H5Sclose(s);
    H5Fclose(f);
}

typedef enum defect {
    D_ROOT_ATTR_MISSING,
    D_ROOT_ATTR_TYPE,
    D_CAPACITY_FORMULA,
    D_HOSTNAMES,
    D_COLUMN_TYPE,
    D_COLUMN_LENGTH,
    D_COLUMN_UNKNOWN,
    D_NEGATIVE_COUNTER,
    D_HEALTH_SUM,
    D_DEAD_DECREASES,
    D_BLACKOUT_NOT_DEAD_FRACTION,
    D_STATE_STEP,
    D_RANKS_SHAPE,
    D_RANKS_MISSING,
    D_RANKS_NEGATIVE,
    D_RANKS_UNITS,
    D_CALIBRATION_P50,
    D_EVENTS_FIELD,
    D_EVENTS_KIND,
    D_EVENTS_COUNT,
    D_EVENTS_CAUSE,
    D_INTR_MISSING,
    D_INTR_ROW,
    D_INTR_HOURS,
    D_UNITS_LENGTH,
    D_UNITS_CAUSE,
    D_FINAL_TOTAL,
    D_FINAL_EXIT_CODE,
    D_FINAL_CHECKSUMS,
    D_FINAL_STATE_SHAPE,
    D_FINAL_MAX_BLACKOUT,
    D_NDEFECTS
} defect_t;

static const struct {
    const char *name;
    int violations;    /* exactly this many (0: at least one) */
    const char *where; /* the line must start with this path */
    const char *what;  /* and say this */
} DEFECTS[D_NDEFECTS] = {
    [D_ROOT_ATTR_MISSING] = {"root attr missing", 1, "/@mpi_version", "missing"},
    [D_ROOT_ATTR_TYPE] = {"root attr type", 1, "/@seed", "expected a 64-bit signed integer"},
    [D_CAPACITY_FORMULA] = {"capacity formula", 2, "/@capacity", "next_pow2"},
    [D_HOSTNAMES] = {"hostnames", 1, "/@hostnames", "one per rank"},
    [D_COLUMN_TYPE] = {"column type", 0, "/steps/fenced", "64-bit signed integer"},
    [D_COLUMN_LENGTH] = {"column length", 0, "/steps/mass", "rows"},
    [D_COLUMN_UNKNOWN] = {"unknown column", 1, "/steps/colour", "not in the schema"},
    [D_NEGATIVE_COUNTER] = {"negative counter", 0, "/steps/moves_retry[4]", "negative"},
    [D_HEALTH_SUM] = {"health sum", 1, "/steps[6]", "healthy + fading + dead"},
    [D_DEAD_DECREASES] = {"dead decreases", 0, "/steps/dead_units[17]", "never recovers"},
    [D_BLACKOUT_NOT_DEAD_FRACTION] = {"blackout", 1, "/steps/blackout_frac[3]", "dead_units"},
    [D_STATE_STEP] = {"state step", 1, "/steps/state_step[8]", "expected 9"},
    [D_RANKS_SHAPE] = {"ranks shape", 3, "/ranks/halo_us", "expected 20 x 2"},
    [D_RANKS_MISSING] = {"ranks missing", 1, "/ranks/log_us", "missing dataset"},
    [D_RANKS_NEGATIVE] = {"ranks negative", 1, "/ranks/moves_us[5]", "finite time >= 0"},
    [D_RANKS_UNITS] = {"ranks units", 1, "/ranks/kernel_us@units", "microseconds"},
    [D_CALIBRATION_P50] = {"calibration", 1, "/calibration/allreduce8_us@p50", "samples give"},
    [D_EVENTS_FIELD] = {"events field", 1, "/events", "field 'block' missing"},
    [D_EVENTS_KIND] = {"events kind", 2, "/events[0]", "kind 'teleport'"},
    [D_EVENTS_COUNT] = {"events count", 2, "/events", "'restore' events"},
    /* (and /interruptions, right, no longer matches the damaged /events) */
    [D_EVENTS_CAUSE] = {"events cause", 2, "/events[11]", "an interrupt of cause 3"},
    [D_INTR_MISSING] = {"interruptions missing", 1, "/interruptions", "missing dataset"},
    [D_INTR_ROW] = {"interruptions row", 1, "/interruptions[2]", "/events gives step 11 cause 0"},
    [D_INTR_HOURS] = {"interruptions hours", 1, "/interruptions[4]", "sim_hours 123"},
    [D_UNITS_LENGTH] = {"units length", 1, "/units/age_hours", "expected 8 values"},
    [D_UNITS_CAUSE] = {"units cause", 2, "/units/cause[7]", "alive iff never dead"},
    [D_FINAL_TOTAL] = {"final total", 1, "/final@fenced_total", "sums to 5"},
    [D_FINAL_EXIT_CODE] = {"exit code", 1, "/final@exit_code", "expected 0"},
    [D_FINAL_CHECKSUMS] = {"checksums", 1, "/final@state_checksum", "bitwise_equal = 1"},
    [D_FINAL_STATE_SHAPE] = {"final state", 1, "/final/state", "expected 32 values"},
    [D_FINAL_MAX_BLACKOUT] = {"max blackout", 1, "/final@max_blackout", "peaks at"},
};

static void seed_defect(const char *path, defect_t d)
{
    switch (d) {
    case D_ROOT_ATTR_MISSING:
        attr_del(path, "/", "mpi_version");
        break;
    case D_ROOT_ATTR_TYPE:
        attr_str(path, "/", "seed", "42");
        break;
    case D_CAPACITY_FORMULA: /* and state_bytes_static, which follows from it */
        attr_i64(path, "/", "capacity", 4);
        break;
    case D_HOSTNAMES:
        attr_str(path, "/", "hostnames", "node1");
        break;
    case D_COLUMN_TYPE: {
        double v[NROWS] = {0};
        replace_1d(path, "/steps/fenced", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, v, NROWS);
        break;
    }
    case D_COLUMN_LENGTH: {
        double v[NROWS - 1];
        for (int i = 0; i < NROWS - 1; ++i) {
            v[i] = 0.5;
        }
        replace_1d(path, "/steps/mass", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, v, NROWS - 1);
        break;
    }
    case D_COLUMN_UNKNOWN: {
        int64_t v[NROWS] = {0};
        replace_1d(path, "/steps/colour", H5T_STD_I64LE, H5T_NATIVE_INT64, v, NROWS);
        break;
    }
    case D_NEGATIVE_COUNTER:
        poke_i64(path, "/steps/moves_retry", 4, -1);
        break;
    case D_HEALTH_SUM:
        poke_i64(path, "/steps/healthy_units", 6, 3);
        break;
    case D_DEAD_DECREASES:
        poke_i64(path, "/steps/dead_units", 17, 6);
        poke_i64(path, "/steps/healthy_units", 17, 1);
        poke_f64(path, "/steps/blackout_frac", 17, -1, 6.0 / 8.0);
        break;
    case D_BLACKOUT_NOT_DEAD_FRACTION:
        poke_f64(path, "/steps/blackout_frac", 3, -1, 0.25);
        break;
    case D_STATE_STEP:
        poke_i64(path, "/steps/state_step", 8, 10);
        break;
    case D_RANKS_SHAPE:
        ranks_wrong_shape(path, "/ranks/halo_us");
        break;
    case D_RANKS_MISSING:
        unlink_obj(path, "/ranks/log_us");
        break;
    case D_RANKS_NEGATIVE:
        poke_f64(path, "/ranks/moves_us", 5, 1, -67.5);
        break;
    case D_RANKS_UNITS:
        attr_str(path, "/ranks/kernel_us", "units", "ms");
        break;
    case D_CALIBRATION_P50:
        attr_del(path, "/calibration/allreduce8_us", "p50");
        {
            hid_t f = open_rw(path);
            hid_t s = H5Screate(H5S_SCALAR);
            hid_t a = H5Acreate_by_name(f, "/calibration/allreduce8_us", "p50", H5T_IEEE_F64LE, s,
                                        H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
            double v = 99.0;
            assert_true(H5Awrite(a, H5T_NATIVE_DOUBLE, &v) >= 0);
            H5Aclose(a);
            H5Sclose(s);
            H5Fclose(f);
        }
        break;
    case D_EVENTS_FIELD:
        events_without_detail(path);
        break;
    case D_EVENTS_KIND: /* a drain fewer, too */
        event_kind(path, 0, "teleport");
        break;
    case D_EVENTS_COUNT:
        event_kind(path, 6, "retry"); /* the restore of step 11 becomes a retry */
        break;
    case D_EVENTS_CAUSE: /* the software interrupt said to be a device loss */
        event_detail(path, 11, AF_INTR_device);
        break;
    case D_INTR_MISSING:
        unlink_obj(path, "/interruptions");
        break;
    case D_INTR_ROW: /* device 1's wear-out at step 11 said sudden */
        intr_poke(path, 2, AF_INTR_sudden, NAN);
        break;
    case D_INTR_HOURS:
        intr_poke(path, 4, -1, 123.0);
        break;
    case D_UNITS_LENGTH: {
        double v[UNITS - 1] = {0};
        replace_1d(path, "/units/age_hours", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, v, UNITS - 1);
        break;
    }
    case D_UNITS_CAUSE: /* an alive unit said dead: also one dead unit too many */
        poke_i64(path, "/units/cause", 7, 2);
        break;
    case D_FINAL_TOTAL:
        attr_i64(path, "/final", "fenced_total", 6);
        break;
    case D_FINAL_EXIT_CODE:
        attr_i64(path, "/final", "exit_code", 3);
        break;
    case D_FINAL_CHECKSUMS:
        attr_str(path, "/final", "state_checksum", "00112233445566fe");
        break;
    case D_FINAL_STATE_SHAPE: {
        double v[BLOCKS * BLOCK_LEN - 1] = {0};
        replace_1d(path, "/final/state", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, v,
                   BLOCKS * BLOCK_LEN - 1);
        break;
    }
    case D_FINAL_MAX_BLACKOUT: {
        hid_t f = open_rw(path);
        H5Adelete_by_name(f, "/final", "max_blackout", H5P_DEFAULT);
        hid_t s = H5Screate(H5S_SCALAR);
        hid_t a = H5Acreate_by_name(f, "/final", "max_blackout", H5T_IEEE_F64LE, s, H5P_DEFAULT,
                                    H5P_DEFAULT, H5P_DEFAULT);
        double v = 0.5;
        assert_true(H5Awrite(a, H5T_NATIVE_DOUBLE, &v) >= 0);
        H5Aclose(a);
        H5Sclose(s);
        H5Fclose(f);
        break;
    }
    default:
        fail();
    }
}

static void test_check_catches_every_seeded_inconsistency(void **state)
{
    (void)state;
    for (int d = 0; d < D_NDEFECTS; ++d) {
        char path[64];
        temp_path(path, sizeof path, "defect");
        write_log(path);
        seed_defect(path, (defect_t)d);
        char *text = NULL;
        int bad = check_log(path, &text);
        print_message("%-18s %d: %s", DEFECTS[d].name, bad, text);
        if (DEFECTS[d].violations > 0) {
            assert_int_equal(bad, DEFECTS[d].violations);
        } else {
            assert_true(bad >= 1);
        }
        /* Some line starts with the path and says what is wrong. */
        int found = 0;
        for (char *line = strtok(text, "\n"); line != NULL && !found; line = strtok(NULL, "\n")) {
            found = strncmp(line, DEFECTS[d].where, strlen(DEFECTS[d].where)) == 0 &&
                    strstr(line, DEFECTS[d].what) != NULL;
        }
        if (!found) {
            print_message("%s: no line '%s ... %s'\n", DEFECTS[d].name, DEFECTS[d].where,
                          DEFECTS[d].what);
        }
        assert_true(found);
        free(text);
        /* Whatever is wrong, the report still computes (and says what it could not). */
        loaded_t l;
        load(&l, path);
        char *report = text_report(&l.sum);
        assert_non_null(strstr(report, "RUN"));
        free(report);
        unload(&l);
        unlink(path);
    }
}

/* What a killed run leaves: /final without attributes, no /final/state, /units empty (the
 * writer creates the groups at the start and fills /units at the end). */
static void strip_final(const char *path)
{
    hid_t f = open_rw(path);
    hid_t g = H5Gopen2(f, "/final", H5P_DEFAULT);
    char name[128];
    while (H5Aget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, 0, name, sizeof name,
                              H5P_DEFAULT) > 0) {
        assert_true(H5Adelete(g, name) >= 0);
    }
    H5Gclose(g);
    assert_true(H5Ldelete(f, "/final/state", H5P_DEFAULT) >= 0);
    assert_true(H5Ldelete(f, "/units", H5P_DEFAULT) >= 0);
    g = H5Gcreate2(f, "/units", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT); /* created empty */
    assert_true(g >= 0);
    H5Gclose(g);
    H5Fclose(f);
}

static void test_killed_run_is_reported_as_exactly_that(void **state)
{
    (void)state;
    char path[64];
    temp_path(path, sizeof path, "killed");
    write_log(path);
    strip_final(path);
    char *text = NULL;
    int bad = check_log(path, &text);
    print_message("%s", text);
    assert_int_equal(bad, 1);
    assert_true(strncmp(text, "/final@exit_reason: missing: the run did not finish", 51) == 0);
    assert_non_null(strstr(text, "20 steps"));
    free(text);
    loaded_t l;
    load(&l, path);
    char *report = text_report(&l.sum);
    assert_non_null(strstr(report, "UNKNOWN: the run did not finish"));
    assert_non_null(strstr(report, "/final@exit_reason: missing"));
    assert_int_equal(l.sum.steps_logical, PLANNED); /* from the last row */
    free(report);
    unload(&l);
    unlink(path);
}

static void test_partial_logs_report_what_is_missing(void **state)
{
    (void)state;
    const char *drops[] = {
        "/ranks", "/steps/blackout_frac", "/events", "/calibration", "/steps", "/units", "/final"};
    const char *notes[] = {"/ranks: missing",
                           "/steps/blackout_frac: missing",
                           "/events: missing",
                           "/calibration/allreduce8_us@p50: missing",
                           "/steps: missing",
                           "/units/cause: missing",
                           "/final@exit_reason: missing"};
    for (size_t i = 0; i < sizeof drops / sizeof drops[0]; ++i) {
        char path[64];
        temp_path(path, sizeof path, "partial");
        write_log(path);
        unlink_obj(path, drops[i]);
        loaded_t l;
        load(&l, path);
        int noted = 0;
        for (int k = 0; k < l.run.nmissing; ++k) {
            noted |= strstr(l.run.missing[k], notes[i]) != NULL;
        }
        if (!noted) {
            print_message("without %s: no note '%s'\n", drops[i], notes[i]);
        }
        assert_true(noted);
        char *report = text_report(&l.sum);
        assert_non_null(strstr(report, "INCOMPLETE LOG"));
        assert_non_null(strstr(report, notes[i]));
        free(report);
        af_figs_t f;
        af_figs_init(&f);
        assert_int_equal(af_summary_figures(&l.sum, &f), AF_OK);
        char *json = capture_json(&f);
        assert_non_null(strstr(json, "\"missing\": ["));
        free(json);
        af_figs_free(&f);
        if (strcmp(drops[i], "/ranks") == 0) {
            assert_false(l.sum.have_latency);
            assert_int_equal(l.sum.nworst, 0);
        }
        unload(&l);
        /* --check names it too. */
        char *text = NULL;
        assert_true(check_log(path, &text) >= 1);
        assert_non_null(strstr(text, drops[i]));
        free(text);
        unlink(path);
    }
}

/* The run's /interruptions is what the report counts; without it (an older log, or one cut
 * or damaged) the report derives the same from /events and says why, in one line. */
static void test_interruptions_come_from_the_table_or_from_the_events(void **state)
{
    (void)state;
    char path[64];
    temp_path(path, sizeof path, "intr");
    write_log(path);
    loaded_t l;
    load(&l, path);
    assert_int_equal(l.run.nmissing, 0);
    assert_true(l.run.intr_from_table);
    assert_int_equal(l.sum.interruptions, 7);
    unload(&l);
    /* Damaged: a row's cause beyond the list. The same counts, from /events. */
    intr_poke(path, 3, 99, NAN);
    load(&l, path);
    assert_false(l.run.intr_from_table);
    assert_int_equal(l.run.nmissing, 1);
    assert_non_null(strstr(l.run.missing[0], "/interruptions[3]: an unknown cause"));
    assert_int_equal(l.sum.interruptions, 7);
    assert_int_equal(l.sum.intr_by_cause[AF_INTR_wearout], 5);
    assert_true(l.run.intr[6].sim_hours == 180.0); /* the hours of its step's row */
    unload(&l);
    /* A table the events do not give is used, and said. */
    intr_poke(path, 3, AF_INTR_node, NAN);
    load(&l, path);
    assert_true(l.run.intr_from_table);
    assert_int_equal(l.sum.intr_by_cause[AF_INTR_node], 1);
    assert_int_equal(l.run.nmissing, 1);
    assert_non_null(strstr(l.run.missing[0], "first difference at row 3"));
    unload(&l);
    /* Gone (an older log): derived, and said from schema 5 on. */
    unlink_obj(path, "/interruptions");
    load(&l, path);
    assert_false(l.run.intr_from_table);
    assert_int_equal(l.sum.interruptions, 7);
    assert_int_equal(l.run.nmissing, 1);
    assert_non_null(strstr(l.run.missing[0], "/interruptions: missing"));
    unload(&l);
    unlink(path);
}

/* Student's t at 0.975, which the ensemble's interval of the mean takes: the table's values
 * (1, 2, 10, 30 degrees of freedom: 12.706, 4.303, 2.228, 2.042), the expansion past 30 against
 * the quantiles of R's qt(0.975, df) to 1e-3 (31: 2.0395, 40: 2.0211, 60: 2.0003, 120: 1.9799,
 * 1000: 1.9623), falling with df towards the normal 1.95996, and no value for df < 1. */
static void test_student_t975_matches_known_quantiles(void **state)
{
    (void)state;
    assert_true(af_student_t975(1) == 12.706);
    assert_true(af_student_t975(2) == 4.303);
    assert_true(af_student_t975(10) == 2.228);
    assert_true(af_student_t975(30) == 2.042);
    const struct {
        int df;
        double t;
    } known[] = {{31, 2.0395}, {40, 2.0211}, {60, 2.0003}, {120, 1.9799}, {1000, 1.9623}};
    double last = af_student_t975(30);
    for (size_t k = 0; k < sizeof known / sizeof known[0]; ++k) {
        double t = af_student_t975(known[k].df);
        assert_true(fabs(t - known[k].t) < 1e-3);
        assert_true(t < last && t > 1.959964);
        last = t;
    }
    assert_true(isnan(af_student_t975(0)));
    assert_true(isnan(af_student_t975(-3)));
}

/* Garwood's exact Poisson interval against scipy.stats.chi2.ppf (lower: ppf(0.025, 2n) / 2,
 * upper: ppf(0.975, 2n + 2) / 2), and the chi-square quantile and incomplete gamma under it. */
static void test_poisson_interval_matches_known_values(void **state)
{
    (void)state;
    const struct {
        int64_t n;
        double lo, hi;
    } known[] = {{0, 0.0, 3.6888794541139354},
                 {1, 0.025317807984289876, 5.571643390938898},
                 {2, 0.24220927854396496, 7.22468766772396},
                 {5, 1.6234863901184207, 11.66833207932267},
                 {10, 4.7953886961324335, 18.39035604201778},
                 {19, 11.43924116436673, 29.67085357158559},
                 {100, 81.36399125092314, 121.62679379242638},
                 {447, 406.516837748162, 490.4234982661356},
                 {10000, 9804.952467260184, 10197.951624661473}};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; ++i) {
        double lo = -1;
        double hi = -1;
        af_poisson_interval(known[i].n, 0.95, &lo, &hi);
        assert_true(fabs(lo - known[i].lo) <= 1e-10 * known[i].hi);
        assert_true(fabs(hi - known[i].hi) <= 1e-10 * known[i].hi);
    }
    assert_true(fabs(af_chi2_quantile(0.95, 1.0) - 3.841458820694124) < 1e-10);
    assert_true(fabs(af_chi2_quantile(0.5, 10.0) - 9.34181776559197) < 1e-10);
    assert_true(fabs(af_chi2_quantile(0.001, 3.0) - 0.024297585815692732) < 1e-12);
    assert_true(fabs(af_gamma_p(2.5, 1.7) - 0.36143007689620493) < 1e-14);
    assert_true(fabs(af_gamma_p(100.0, 90.0) - 0.15822098918643007) < 1e-12);
    /* Outside their domains: NAN, never a loop or a crash. */
    double lo = 0;
    double hi = 0;
    af_poisson_interval(-1, 0.95, &lo, &hi);
    assert_true(isnan(lo) && isnan(hi));
    assert_true(isnan(af_chi2_quantile(0.0, 3.0)) && isnan(af_chi2_quantile(0.5, -1.0)));
    assert_true(isnan(af_gamma_p(-1.0, 1.0)) && af_gamma_p(3.0, 0.0) == 0.0);
}

/* The record beside a run: its counts scaled to the run by each cause's grain (200 of the
 * Llama 3 record's 1,296 hours; 4 devices of one a node against its 16,384 GPUs on 2,048 nodes),
 * the run's counts with their intervals, and whether each record count is inside. */
static void test_record_sits_beside_the_run_scaled_by_grain(void **state)
{
    (void)state;
    assert_null(af_record_find("none"));
    assert_null(af_record_find("llama3"));
    const af_record_t *rec = af_record_find("llama3-405b");
    assert_non_null(rec);
    int64_t sum = 0;
    for (int c = 0; c < AF_NINTR; ++c) {
        sum += rec->counts[c] > 0 ? rec->counts[c] : 0;
    }
    assert_int_equal(sum, 419);
    assert_int_equal(rec->total, 419);
    /* HBM3 (72) is the memory domain's, not the whole-device losses'. */
    assert_int_equal(rec->counts[AF_INTR_hbm], 72);
    assert_int_equal(rec->counts[AF_INTR_device], 148 + 17 + 6);
    char path[64];
    temp_path(path, sizeof path, "record");
    write_log(path);
    loaded_t l;
    load(&l, path);
    assert_null(l.sum.record); /* the synthetic scenario names none */
    snprintf(l.run.record, sizeof l.run.record, "llama3-405b");
    assert_int_equal(af_summary_compute(&l.sum, &l.run), AF_OK);
    const af_summary_t *s = &l.sum;
    assert_ptr_equal(s->record, rec);
    NEAR(s->record_scale, 200.0 / 1296.0);
    assert_false(s->rec[AF_INTR_wearout].have); /* not in the record */
    /* software: 54 x 200 / 1296 = 8.33 expected, 1 seen: outside [0.0253, 5.57] */
    assert_true(s->rec[AF_INTR_software].have);
    NEAR(s->rec[AF_INTR_software].expected, 54.0 * 200.0 / 1296.0);
    assert_int_equal(s->rec[AF_INTR_software].measured, 1);
    assert_false(s->rec[AF_INTR_software].inside);
    /* sdc strikes devices: by GPU-hours, 6 x (200 x 4) / (1296 x 16384) = 2.26e-4 expected
     * (by hours alone it was 0.93), 1 seen: outside [0.0253, 5.57] */
    NEAR(s->rec[AF_INTR_sdc].expected, 6.0 * 200.0 * 4.0 / (1296.0 * 16384.0));
    assert_false(s->rec[AF_INTR_sdc].inside);
    /* network strikes nodes: by node-hours, 35 x (200 x 4) / (1296 x 2048) */
    NEAR(s->rec[AF_INTR_network].expected, 35.0 * 200.0 * 4.0 / (1296.0 * 2048.0));
    NEAR(s->record_grain_scale[AF_GRAIN_DEVICE], 200.0 * 4.0 / (1296.0 * 16384.0));
    NEAR(s->record_grain_scale[AF_GRAIN_NODE], 200.0 * 4.0 / (1296.0 * 2048.0));
    /* all: the job-grain causes by hours, (54 + 7 + 2) x 200 / 1296 = 9.722, the node-grain
     * ones (node 46, network 35) by node-hours, 81 x 800 / (1296 x 2048) = 0.0244, the
     * device-grain ones (sudden 19, device 171, sdc 6, hbm 72, link 7) by GPU-hours,
     * 275 x 800 / (1296 x 16384) = 0.0104: 9.757 expected, 7 seen: inside [2.81, 14.42]
     * (by hours alone it was 64.7, outside) */
    NEAR(s->rec[AF_NINTR].expected, 63.0 * 200.0 / 1296.0 + 81.0 * 800.0 / (1296.0 * 2048.0) +
                                        275.0 * 800.0 / (1296.0 * 16384.0));
    assert_int_equal(s->rec[AF_NINTR].measured, 7);
    assert_true(s->rec[AF_NINTR].inside);
    char *report = text_report(&l.sum);
    assert_non_null(strstr(report, "THE RECORD   llama3-405b: "));
    assert_non_null(
        strstr(report, "by grain, job x 0.1543, node-hours x 0.0003014, GPU-hours x 3.768e-05"));
    free(report);
    af_figs_t f;
    af_figs_init(&f);
    assert_int_equal(af_summary_figures(&l.sum, &f), AF_OK);
    char *json = capture_json(&f);
    assert_non_null(strstr(json, "\"name\": \"llama3-405b\""));
    assert_non_null(strstr(json, "\"record\": 8.33"));
    free(json);
    af_figs_free(&f);
    unload(&l);
    unlink(path);
}

/* The report's timeline takes a device out once: struck again while out, a loss takes none;
 * struck again after a spare took its place (replace_seconds later, while spares last), it
 * takes one again. A run in memory: 4 devices, 2 a node, one spare node (2 devices), a spare
 * in service 10 h after the loss it replaces; window 100 h. Losses: device 1 at 1 h (a spare,
 * back at 11 h), device 1 at 5 h (out: none), device 1 at 20 h (the spare's place: one, the
 * second spare, back at 30 h), node 0 at 40 h (devices 0 and 1: both in service, two out, no
 * spare left), device 0 at 50 h (out for good: none), an hbm fault at 60 h (none). */
static void test_goodput_takes_a_device_out_once(void **state)
{
    (void)state;
    static af_run_t run;
    memset(&run, 0, sizeof run);
    double hours[2] = {50.0, 100.0};
    run.nrows = 2;
    run.col[AF_COL_sim_hours] = hours;
    run.devices.ok = 1;
    run.devices.v = 4;
    run.devices_per_node = 2;
    af_goodput_defaults(&run.goodput);
    run.goodput.spare_nodes = 1;
    run.goodput.replace_s = 36000.0;
    af_intr_row_t rows[6] = {
        {1, 50.0, AF_INTR_device, 1, 0, 1.0},    {1, 50.0, AF_INTR_sudden, 1, 0, 5.0},
        {1, 50.0, AF_INTR_device, 1, 0, 20.0},   {1, 50.0, AF_INTR_node, -1, 0, 40.0},
        {2, 100.0, AF_INTR_wearout, 0, 0, 50.0}, {2, 100.0, AF_INTR_hbm, 2, 1, 60.0}};
    run.have_intr = 1;
    run.intr_timed = 1;
    run.nintr = 6;
    run.intr = rows;
    static af_summary_t s;
    assert_int_equal(af_summary_compute(&s, &run), AF_OK);
    assert_true(s.have_goodput);
    assert_int_equal(s.goodput_hw, 5);
    assert_int_equal(s.goodput_inplace, 1);
    assert_int_equal(s.goodput_hw_devices, 4); /* 1 + 0 + 1 + 2 + 0 */
    af_replay_timeline_t tl;
    assert_int_equal(af_summary_goodput_timeline(&s, &tl), AF_OK);
    const int64_t lost[6] = {1, 0, 1, 2, 0, 0};
    for (int k = 0; k < 6; ++k) {
        assert_int_equal(tl.intr[k].devices_lost, lost[k]);
        assert_int_equal(tl.intr[k].kind, AF_REPLAY_HARDWARE);
        assert_true(tl.intr[k].t_s == rows[k].time_h * 3600.0);
    }
    free((void *)tl.intr);
    free((void *)tl.pace);
}

/* The [goodput] keys and the replay of a history with no interruption (analysis/goodput.h). */
static void test_goodput_keys_and_an_untroubled_history(void **state)
{
    (void)state;
    af_goodput_params_t g;
    af_goodput_defaults(&g);
    assert_true(g.step_s == 10.0 && g.checkpoint_s == 60.0 && g.restart_s == 600.0 &&
                g.shrink_s == 2.0 && g.repartition_s == 30.0 && g.replica_s == 1.0 &&
                g.detect_s == 1.0 && g.remap_s == 10.0 && g.replace_s == 3600.0 &&
                g.spare_nodes == 0);
    /* The [goodput] section of a resolved scenario, keys it lacks left alone. */
    af_goodput_parse(&g, "[scenario]\nstep_seconds = 99\n\n[goodput]\nstep_seconds = 4.5\n"
                         "restart_seconds = 120\nspare_nodes = 3\nreplace_seconds = 7200\n"
                         "remap_seconds = 5\n\n[event.1]\nstep = 3\n");
    assert_true(g.step_s == 4.5 && g.restart_s == 120.0 && g.checkpoint_s == 60.0 &&
                g.spare_nodes == 3 && g.replace_s == 7200.0 && g.remap_s == 5.0);
    af_goodput_parse(&g, "no such section");
    assert_true(g.step_s == 4.5);
    af_replay_params_t p;
    af_goodput_replay_params(&g, 8, &p);
    assert_true(p.restart_s == 120.0 && p.spare_nodes == 3 && p.devices_per_node == 8 &&
                p.replace_s == 7200.0 && p.remap_s == 5.0 && p.step_s == 4.5);
    /* No interruption: every policy keeps the whole window, no interval is needed. */
    af_replay_timeline_t tl = {.window_s = 3.6e6, .devices = 16};
    af_goodput_t out;
    assert_int_equal(af_goodput_replay(&tl, &p, &out), AF_OK);
    for (int k = 0; k < AF_REPLAY_NPOLICY; ++k) {
        assert_true(out.pol[k].ettr == 1.0);
        assert_true(out.pol[k].young_ettr == 1.0 && out.pol[k].daly_ettr == 1.0);
        assert_true(isinf(out.pol[k].young_s) && isinf(out.pol[k].daly_s));
        assert_true(out.pol[k].at.checkpoints == 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_percentiles_match_hand_computed_values),
        cmocka_unit_test(test_goodput_keys_and_an_untroubled_history),
        cmocka_unit_test(test_goodput_takes_a_device_out_once),
        cmocka_unit_test(test_interruptions_come_from_the_table_or_from_the_events),
        cmocka_unit_test(test_poisson_interval_matches_known_values),
        cmocka_unit_test(test_student_t975_matches_known_quantiles),
        cmocka_unit_test(test_record_sits_beside_the_run_scaled_by_grain),
        cmocka_unit_test(test_stats_summary_of_a_known_sample),
        cmocka_unit_test(test_blackout_bands),
        cmocka_unit_test(test_json_nests_dotted_keys_and_arrays),
        cmocka_unit_test(test_ratio_is_defined_only_for_numbers_over_non_zero),
        cmocka_unit_test(test_synthetic_log_is_valid),
        cmocka_unit_test(test_figures_of_a_known_log),
        cmocka_unit_test(test_check_catches_every_seeded_inconsistency),
        cmocka_unit_test(test_killed_run_is_reported_as_exactly_that),
        cmocka_unit_test(test_partial_logs_report_what_is_missing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
