/* Unit tests of the HDF5 log: the writer (sim/io/log.h) produces a file that the reader and
 * schema checker (analysis/logread.h) accept, every seeded inconsistency is caught, bad files
 * are refused with one line naming the path, af_percentile_sorted follows numpy's linear
 * interpolation, and af_lower_bound_i32 finds what a scan finds. */
#include "sim/io/log.h"
#include "common/log_schema.h"
#include "common/percentile.h"
#include "analysis/logread.h"
#include "analysis/rundata.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NRANKS    3
#define NROWS     11
#define DEVICES   4
#define UNITS     2
#define BLOCKS    8
#define BLOCK_LEN 5

/* What to get wrong in a log that is otherwise complete and consistent. */
typedef enum defect {
    DEFECT_NONE = 0,
    DEFECT_STEP_GAP, /* steps 1..5, 7, ...: not contiguous */
    DEFECT_DETECTED_GT_INJECTED,
    DEFECT_BLACKOUT_ABOVE_ONE,
    DEFECT_STEPS_COMPLETED, /* /final@steps_completed != rows */
    DEFECT_NO_EXIT_REASON,  /* killed before /final was written */
    DEFECT_SCHEMA_99,
    DEFECT_KILLED, /* SIGKILL after the first flush: write_log never returns (run it in a child) */
    DEFECT_ENERGY_INF,  /* /steps/energy[8] = inf with no corruption committed before */
    DEFECT_INTR_TIME,   /* /interruptions[1]: time_h after its step's hours */
    VARIANT_SDC_ENERGY, /* not a defect: a finite corruption committed at row 6 (detect =
                           finite), whose square overflows the energy at row 8 */
} defect_t;

/* A fresh temporary file name under /tmp (the file exists, empty). */
static void temp_path(char *path, size_t n, const char *tag)
{
    snprintf(path, n, "/tmp/af_test_logread_%s_XXXXXX", tag);
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
}

static void write_log(const char *path, defect_t defect)
{
    af_log_t *log = NULL;
    assert_int_equal(af_log_create(&log, path, NRANKS, 4), AF_OK);
    assert_non_null(log);
    const char *root_str[][2] = {{"agefence_version", "0.1.0"},
                                 {"git_revision", "c0dc240"},
                                 {"config", "[scenario]\nsteps = 11\n"},
                                 {"scenario", "test"},
                                 {"compute_backend", "cpu"},
                                 {"fabric_backend", "mpi"},
                                 {"hostnames", "a,b,c"},
                                 {"start_time", "2026-01-01T00:00:00Z"},
                                 {"mpi_version", "test MPI"}};
    for (size_t i = 0; i < sizeof root_str / sizeof root_str[0]; ++i) {
        assert_int_equal(af_log_attr_str(log, "/", root_str[i][0], root_str[i][1]), AF_OK);
    }
    assert_int_equal(af_log_attr_i64(log, "/", "schema_version",
                                     defect == DEFECT_SCHEMA_99 ? 99 : AF_SCHEMA_VERSION),
                     AF_OK);
    assert_int_equal(af_log_attr_i64(log, "/", "seed", 42), AF_OK);
    assert_int_equal(af_log_attr_i64(log, "/", "ranks", NRANKS), AF_OK);
    assert_int_equal(af_log_attr_i64(log, "/", "devices", DEVICES), AF_OK);
    assert_int_equal(af_log_attr_i64(log, "/", "units_per_device", UNITS), AF_OK);
    assert_int_equal(af_log_attr_i64(log, "/", "blocks", BLOCKS), AF_OK);
    assert_int_equal(af_log_attr_i64(log, "/", "block_len", BLOCK_LEN), AF_OK);
    assert_int_equal(af_log_attr_i64(log, "/", "capacity", 2), AF_OK);
    assert_int_equal(af_log_attr_i64(log, "/", "steps_planned", NROWS), AF_OK);
    /* capacity 2 = next_pow2(ceil(8 blocks / (8 units x (1 - 0.5)))) */
    assert_int_equal(af_log_attr_f64(log, "/", "max_blackout", 0.5), AF_OK);
    assert_int_equal(af_log_attr_f64(log, "/", "state_bytes_static",
                                     DEVICES * UNITS * 2.0 * 2.0 * BLOCK_LEN * 8.0),
                     AF_OK);
    assert_int_equal(
        af_log_attr_f64(log, "/", "state_bytes_fault_free", BLOCKS * 2.0 * BLOCK_LEN * 8.0), AF_OK);

    const double samples[] = {3.0, 1.0, 2.0, 4.0};
    assert_int_equal(af_log_calibration(log, "timer_floor_us", samples, 4), AF_OK);
    assert_int_equal(af_log_calibration(log, "allreduce8_us", samples, 4), AF_OK);
    assert_int_equal(af_log_attr_i64(log, "/calibration", "warmup_iterations", 0), AF_OK);
    assert_int_equal(af_log_attr_i64(log, "/host", "cores", 2), AF_OK);
    assert_int_equal(af_log_attr_f64(log, "/host", "loadavg_1min_after", NAN), AF_OK);
    /* As sim/driver/run.c does before the first step: crash-consistent from here on. */
    assert_int_equal(af_log_begin(log), AF_OK);
    assert_int_equal(access(path, F_OK), 0);

    af_step_row_t tot;
    memset(&tot, 0, sizeof tot);
    double max_blackout = 0.0;
    for (int r = 0; r < NROWS; ++r) {
        af_step_row_t row;
        memset(&row, 0, sizeof row);
        row.step = r + 1;
        row.state_step = r + 1;
        if (defect == DEFECT_STEP_GAP && r >= 5) {
            row.step = r + 2;
        }
        row.sim_hours = 30.0 * (r + 1);
        row.mass = 0.5 + 1e-3 * r;
        row.energy = 0.25;
        row.dead_units = r / 4;
        row.fading_units = 1;
        row.healthy_units = DEVICES * UNITS - row.dead_units - row.fading_units;
        row.blackout_frac = (double)row.dead_units / (DEVICES * UNITS);
        if (defect == DEFECT_BLACKOUT_ABOVE_ONE && r == 7) {
            row.blackout_frac = 1.5;
        }
        row.corrupt_injected = r % 3;
        row.corrupt_detected = r % 3;
        if (defect == DEFECT_DETECTED_GT_INJECTED && r == 4) {
            row.corrupt_detected = row.corrupt_injected + 1;
        }
        row.detected_abft = row.corrupt_detected; /* by the mass balance */
        row.fenced = row.corrupt_detected;
        row.retried = row.fenced;
        if (defect == VARIANT_SDC_ENERGY && r == 6) {
            row.corrupt_injected++;
            row.sdc_undetected = 1;
        }
        if ((defect == DEFECT_ENERGY_INF || defect == VARIANT_SDC_ENERGY) && r == 8) {
            row.energy = INFINITY;
        }
        tot.sdc_undetected += row.sdc_undetected;
        row.moves_drain = r == 2; /* the drain event of step 3 */
        tot.corrupt_injected += row.corrupt_injected;
        tot.corrupt_detected += row.corrupt_detected;
        tot.detected_abft += row.detected_abft;
        tot.fenced += row.fenced;
        tot.retried += row.retried;
        tot.moves_drain += row.moves_drain;
        max_blackout = row.blackout_frac > max_blackout ? row.blackout_frac : max_blackout;
        double phases[AF_NPHASES * NRANKS];
        for (int p = 0; p < AF_NPHASES; ++p) {
            for (int k = 0; k < NRANKS; ++k) {
                phases[p * NRANKS + k] = 100.0 * r + 10.0 * p + k;
            }
        }
        assert_int_equal(af_log_append(log, &row, phases), AF_OK);
        /* The events of the step, logged during it as sim/driver/health.c does: the drain of step
         * 3; dead_units = row / 4, so units 0 and 1 die in steps 5 and 9. */
        af_event_row_t ev;
        memset(&ev, 0, sizeof ev);
        if (row.step == 3) {
            snprintf(ev.kind, sizeof ev.kind, "drain");
            ev.step = 3;
            ev.block = 1;
            ev.to_device = 1;
            ev.to_slot = 1;
            assert_int_equal(af_log_event(log, &ev), AF_OK);
        } else if (row.step == 5 || row.step == 9) {
            snprintf(ev.kind, sizeof ev.kind, "death");
            ev.step = row.step;
            ev.block = ev.from_slot = ev.to_device = ev.to_unit = ev.to_slot = -1;
            ev.from_device = 0;
            ev.from_unit = row.step == 9;
            ev.detail = 1;
            assert_int_equal(af_log_event(log, &ev), AF_OK);
            /* and its interruption, as the run writes it: a wear-out death on device 0, a
             * quarter of an hour before the step's end */
            af_intr_row_t ir = {row.step, row.sim_hours,       AF_INTR_wearout, 0,
                                0,        row.sim_hours - 0.25};
            if (defect == DEFECT_INTR_TIME && row.step == 9) {
                ir.time_h = row.sim_hours + 0.25;
            }
            assert_int_equal(af_log_interruption(log, &ir), AF_OK);
        }
        if (r == 6) {
            assert_int_equal(af_log_flush(log), AF_OK);
        }
        if (defect == DEFECT_KILLED && r == 9) {
            /* Rows 8-10 are buffered, and the file is still open for (SWMR) writing. */
            kill(getpid(), SIGKILL);
        }
    }
    assert_int_equal(af_log_rows(log), NROWS);
    assert_int_equal(af_log_flush(log), AF_OK);

    /* /units, as sim/driver/verdict.c writes them at the end */
    int64_t iv[DEVICES * UNITS];
    double fv[DEVICES * UNITS];
    for (int u = 0; u < DEVICES * UNITS; ++u) {
        fv[u] = 100.0 + u;
    }
    assert_int_equal(af_log_write_f64(log, "/units/lifetime_hours", fv, DEVICES * UNITS), AF_OK);
    assert_int_equal(af_log_write_f64(log, "/units/age_hours", fv, DEVICES * UNITS), AF_OK);
    assert_int_equal(af_log_write_f64(log, "/units/temperature_K", fv, DEVICES * UNITS), AF_OK);
    for (int u = 0; u < DEVICES * UNITS; ++u) {
        iv[u] = u < 2 ? 5 + 4 * u : -1;
    }
    assert_int_equal(af_log_write_i64(log, "/units/death_step", iv, DEVICES * UNITS), AF_OK);
    assert_int_equal(af_log_write_i64(log, "/units/fade_step", iv, DEVICES * UNITS), AF_OK);
    for (int u = 0; u < DEVICES * UNITS; ++u) {
        iv[u] = u < 2;
    }
    assert_int_equal(af_log_write_i64(log, "/units/cause", iv, DEVICES * UNITS), AF_OK);
    for (int u = 0; u < DEVICES * UNITS; ++u) {
        iv[u] = u / UNITS;
    }
    assert_int_equal(af_log_write_i64(log, "/units/device", iv, DEVICES * UNITS), AF_OK);
    for (int u = 0; u < DEVICES * UNITS; ++u) {
        iv[u] = u % UNITS;
    }
    assert_int_equal(af_log_write_i64(log, "/units/unit", iv, DEVICES * UNITS), AF_OK);
    for (int u = 0; u < DEVICES * UNITS; ++u) {
        iv[u] = u == 3; /* one silent unit */
    }
    assert_int_equal(af_log_write_i64(log, "/units/silent", iv, DEVICES * UNITS), AF_OK);
    for (int u = 0; u < DEVICES * UNITS; ++u) {
        iv[u] = u == 3 ? 2 : -1; /* the silent one was quarantined at step 2 */
    }
    assert_int_equal(af_log_write_i64(log, "/units/quarantined_step", iv, DEVICES * UNITS), AF_OK);
    for (int u = 0; u < DEVICES * UNITS; ++u) {
        iv[u] = u == 3 ? 1 : -1; /* it first corrupted a result at step 1 */
    }
    assert_int_equal(af_log_write_i64(log, "/units/first_corrupt_step", iv, DEVICES * UNITS),
                     AF_OK);
    assert_int_equal(af_log_attr_str(log, "/units", "cause_codes", "0 alive, 1 wear-out"), AF_OK);

    double state[BLOCKS * BLOCK_LEN];
    for (int i = 0; i < BLOCKS * BLOCK_LEN; ++i) {
        state[i] = sin(0.1 * i);
    }
    assert_int_equal(af_log_write_f64(log, "/final/state", state, BLOCKS * BLOCK_LEN), AF_OK);
    if (defect != DEFECT_NO_EXIT_REASON) {
        assert_int_equal(af_log_attr_str(log, "/final", "exit_reason", "completed"), AF_OK);
    }
    assert_int_equal(af_log_attr_i64(log, "/final", "steps_completed",
                                     defect == DEFECT_STEPS_COMPLETED ? NROWS + 1 : NROWS),
                     AF_OK);
    assert_int_equal(af_log_attr_i64(log, "/final", "bitwise_equal", 1), AF_OK);
    assert_int_equal(af_log_attr_str(log, "/final", "state_checksum", "0123456789abcdef"), AF_OK);
    assert_int_equal(af_log_attr_str(log, "/final", "reference_checksum", "0123456789abcdef"),
                     AF_OK);
    /* The rest of what sim/driver/verdict.c's af_write_final writes, consistent with the rows. */
    const struct {
        const char *name;
        int64_t v;
    } fin[] = {{"exit_code", 0},
               {"state_step", NROWS},
               {"nonfinite_leaked_total", 0},
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
               {"moves_restore_total", 0},
               {"moves_retry_total", 0},
               {"rollbacks_total", 0},
               {"replayed_steps_total", 0},
               {"replayed_blocks_total", 0},
               {"replayed_block_steps_total", 0}};
    for (size_t i = 0; i < sizeof fin / sizeof fin[0]; ++i) {
        assert_int_equal(af_log_attr_i64(log, "/final", fin[i].name, fin[i].v), AF_OK);
    }
    assert_int_equal(af_log_attr_f64(log, "/final", "mass_initial", 0.5), AF_OK);
    assert_int_equal(af_log_attr_f64(log, "/final", "mass_final", 0.5), AF_OK);
    assert_int_equal(af_log_attr_f64(log, "/final", "sim_hours", 30.0 * NROWS), AF_OK);
    assert_int_equal(af_log_attr_f64(log, "/final", "max_blackout", max_blackout), AF_OK);
    assert_int_equal(af_log_attr_str(log, "/final", "end_time", "2026-01-01T00:01:00Z"), AF_OK);
    assert_int_equal(af_log_attr_f64(log, "/host", "loadavg_1min_after", 0.5), AF_OK);
    assert_int_equal(af_log_close(&log), AF_OK);
    assert_null(log);
}

/* The number of object-header chunks of obj in the file at path (opened with SWMR read access
 * when a killed writer left it marked as open for writing). */
static unsigned header_chunks(const char *path, const char *obj)
{
    hid_t f = -1;
    H5E_BEGIN_TRY
    {
        f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    }
    H5E_END_TRY;
    if (f < 0) {
        f = H5Fopen(path, H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, H5P_DEFAULT);
    }
    assert_true(f >= 0);
    hid_t o = H5Oopen(f, obj, H5P_DEFAULT);
    assert_true(o >= 0);
    H5O_info_t info;
    assert_true(H5Oget_info2(o, &info, H5O_INFO_HDR) >= 0);
    H5Oclose(o);
    H5Fclose(f);
    return info.hdr.nchunks;
}

/* Writes the log of DEFECT_KILLED in a child process, which SIGKILLs itself mid-run. */
static void write_killed_log(const char *path)
{
    fflush(NULL);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        write_log(path, DEFECT_KILLED);
        _exit(0); /* not reached */
    }
    int status = 0;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

/* Runs the checker on path; returns the number of violations and leaves their text in out. */
static int check_log(const char *path, char *out, size_t n)
{
    af_logfile_t lf;
    char err[512] = "";
    af_result_t rc = af_logfile_open(&lf, path, err, sizeof err);
    if (rc != AF_OK) {
        print_message("%s\n", err);
    }
    assert_int_equal(rc, AF_OK);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    int bad = af_logfile_check(&lf, f);
    fclose(f);
    snprintf(out, n, "%s", buf ? buf : "");
    free(buf);
    af_logfile_close(&lf);
    return bad;
}

static void test_complete_consistent_log_has_no_violations(void **state)
{
    (void)state;
    char path[64];
    temp_path(path, sizeof path, "valid");
    write_log(path, DEFECT_NONE);
    char text[4096];
    int bad = check_log(path, text, sizeof text);
    if (bad != 0) {
        print_message("%s", text);
    }
    assert_int_equal(bad, 0);
    assert_string_equal(text, "");
    unlink(path);
}

static void test_reader_returns_what_the_writer_wrote(void **state)
{
    (void)state;
    char path[64];
    temp_path(path, sizeof path, "readback");
    write_log(path, DEFECT_NONE);
    af_logfile_t lf;
    char err[512];
    assert_int_equal(af_logfile_open(&lf, path, err, sizeof err), AF_OK);
    assert_int_equal(lf.schema_version, AF_SCHEMA_VERSION);
    char s[256];
    assert_int_equal(af_logfile_attr_str(&lf, "/", "config", s, sizeof s), AF_OK);
    assert_string_equal(s, "[scenario]\nsteps = 11\n");
    assert_int_equal(af_logfile_attr_str(&lf, "/final", "exit_reason", s, sizeof s), AF_OK);
    assert_string_equal(s, "completed");
    int64_t v = 0;
    assert_int_equal(af_logfile_attr_i64(&lf, "/", "ranks", &v), AF_OK);
    assert_int_equal(v, NRANKS);
    assert_int_equal(af_logfile_attr_i64(&lf, "/", "no_such_attr", &v), AF_ERR_IO);
    double p50 = 0;
    assert_int_equal(af_logfile_attr_f64(&lf, "/calibration/timer_floor_us", "p50", &p50), AF_OK);
    assert_true(p50 == 2.5);

    int rank = 0;
    int64_t dims[2];
    assert_int_equal(af_logfile_shape(&lf, "/steps/step", &rank, dims), AF_OK);
    assert_int_equal(rank, 1);
    assert_int_equal(dims[0], NROWS);
    assert_int_equal(af_logfile_shape(&lf, "/ranks/kernel_us", &rank, dims), AF_OK);
    assert_int_equal(rank, 2);
    assert_int_equal(dims[0], NROWS);
    assert_int_equal(dims[1], NRANKS);
    assert_int_equal(af_logfile_shape(&lf, "/steps/no_such_column", &rank, dims), AF_ERR_IO);

    int64_t steps[NROWS];
    double mass[NROWS];
    assert_int_equal(af_logfile_read_i64(&lf, "/steps/step", steps, NROWS), AF_OK);
    assert_int_equal(af_logfile_read_f64(&lf, "/steps/mass", mass, NROWS), AF_OK);
    for (int r = 0; r < NROWS; ++r) {
        assert_int_equal(steps[r], r + 1);
        assert_true(mass[r] == 0.5 + 1e-3 * r);
    }
    /* Phase times: step x rank, row r rank k of phase p = 100 r + 10 p + k. */
    double kernel[NROWS * NRANKS];
    assert_int_equal(af_logfile_read_f64(&lf, "/ranks/kernel_us", kernel, NROWS * NRANKS), AF_OK);
    for (int r = 0; r < NROWS; ++r) {
        for (int k = 0; k < NRANKS; ++k) {
            assert_true(kernel[r * NRANKS + k] == 100.0 * r + 10.0 * AF_PHASE_kernel_us + k);
        }
    }
    /* A read with the wrong element count is refused rather than overrunning. */
    assert_int_equal(af_logfile_read_i64(&lf, "/steps/step", steps, NROWS - 1), AF_ERR_IO);
    /* The interruptions, each at its time as written. */
    int64_t ni = 0;
    assert_int_equal(af_logfile_intr_count(&lf, &ni), AF_OK);
    assert_int_equal(ni, 2);
    assert_int_equal(af_logfile_intr_timed(&lf), 1);
    af_intr_row_t ir[2];
    assert_int_equal(af_logfile_read_intr(&lf, ir, 2), AF_OK);
    for (int i = 0; i < 2; ++i) {
        assert_int_equal(ir[i].step, i == 0 ? 5 : 9);
        assert_true(ir[i].time_h == ir[i].sim_hours - 0.25);
    }
    af_logfile_close(&lf);
    unlink(path);
}

/* A log written before /interruptions had time_h (the same table less that field) reads: its
 * rows' time_h is their step's hours, af_logfile_intr_timed says so, the checker finds nothing
 * wrong, and the report's data names it once. */
static void test_interruptions_without_time_h_read_at_their_steps_hours(void **state)
{
    (void)state;
    char path[64];
    temp_path(path, sizeof path, "notime");
    write_log(path, DEFECT_NONE);
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    hid_t d = H5Dopen2(f, "/interruptions", H5P_DEFAULT);
    assert_true(d >= 0);
    af_intr_row_t was[2];
    hid_t full = (hid_t)af_log_intr_type();
    assert_true(H5Dread(d, full, H5S_ALL, H5S_ALL, H5P_DEFAULT, was) >= 0);
    /* Its cause names move to the old table with it. */
    hid_t an = H5Aopen(d, "cause_names", H5P_DEFAULT);
    assert_true(an >= 0);
    hid_t at = H5Aget_type(an);
    char *names = NULL;
    assert_true(H5Aread(an, at, &names) >= 0);
    H5Aclose(an);
    H5Dclose(d);
    assert_true(H5Ldelete(f, "/interruptions", H5P_DEFAULT) >= 0);
    hid_t old = H5Tcreate(H5T_COMPOUND, 40);
    H5Tinsert(old, "step", 0, H5T_STD_I64LE);
    H5Tinsert(old, "sim_hours", 8, H5T_IEEE_F64LE);
    H5Tinsert(old, "cause", 16, H5T_STD_I64LE);
    H5Tinsert(old, "device", 24, H5T_STD_I64LE);
    H5Tinsert(old, "node", 32, H5T_STD_I64LE);
    hsize_t dims[1] = {2};
    hsize_t maxd[1] = {H5S_UNLIMITED};
    hsize_t chunk[1] = {256};
    hid_t sp = H5Screate_simple(1, dims, maxd);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, chunk);
    d = H5Dcreate2(f, "/interruptions", old, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Pclose(dcpl);
    assert_true(d >= 0);
    assert_true(H5Dwrite(d, full, H5S_ALL, H5S_ALL, H5P_DEFAULT, was) >= 0);
    hid_t as = H5Screate(H5S_SCALAR);
    an = H5Acreate2(d, "cause_names", at, as, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(an >= 0 && H5Awrite(an, at, &names) >= 0);
    H5free_memory(names);
    H5Aclose(an);
    H5Sclose(as);
    H5Tclose(at);
    H5Sclose(sp);
    H5Tclose(old);
    H5Tclose(full);
    H5Dclose(d);
    H5Fclose(f);

    af_logfile_t lf;
    char err[512];
    assert_int_equal(af_logfile_open(&lf, path, err, sizeof err), AF_OK);
    assert_int_equal(af_logfile_intr_timed(&lf), 0);
    af_intr_row_t ir[2];
    memset(ir, 0xff, sizeof ir);
    assert_int_equal(af_logfile_read_intr(&lf, ir, 2), AF_OK);
    for (int i = 0; i < 2; ++i) {
        assert_int_equal(ir[i].step, was[i].step);
        assert_int_equal(ir[i].cause, AF_INTR_wearout);
        assert_true(ir[i].sim_hours == was[i].sim_hours);
        assert_true(ir[i].time_h == was[i].sim_hours);
    }
    af_run_t run;
    assert_int_equal(af_run_load(&run, &lf), AF_OK);
    assert_int_equal(run.intr_from_table, 1);
    assert_int_equal(run.intr_timed, 0);
    assert_int_equal(run.nintr, 2);
    int said = 0;
    for (int i = 0; i < run.nmissing; ++i) {
        said += strstr(run.missing[i], "no time_h") != NULL;
    }
    assert_int_equal(said, 1);
    af_run_free(&run);
    af_logfile_close(&lf);
    char text[4096];
    int bad = check_log(path, text, sizeof text);
    print_message("notime: %d violation(s): %s\n", bad, text);
    assert_int_equal(bad, 0);
    unlink(path);
}

/* Writes a log with one defect and asserts the checker reports it, naming `where`. */
static void assert_defect_caught(defect_t defect, const char *tag, const char *where)
{
    char path[64];
    temp_path(path, sizeof path, tag);
    write_log(path, defect);
    char text[4096];
    int bad = check_log(path, text, sizeof text);
    print_message("%s: %d violation(s): %s", tag, bad, text);
    assert_int_equal(bad, 1); /* that defect, and nothing else */
    assert_non_null(strstr(text, where));
    unlink(path);
}

static void test_non_contiguous_step_is_a_violation(void **state)
{
    (void)state;
    assert_defect_caught(DEFECT_STEP_GAP, "gap", "/steps/step[5]");
}

static void test_interruption_time_outside_its_step_is_a_violation(void **state)
{
    (void)state;
    assert_defect_caught(DEFECT_INTR_TIME, "intrtime", "/interruptions[1]: time_h");
}

static void test_detected_above_injected_is_a_violation(void **state)
{
    (void)state;
    assert_defect_caught(DEFECT_DETECTED_GT_INJECTED, "detected", "/steps/corrupt_detected[4]");
}

static void test_blackout_fraction_above_one_is_a_violation(void **state)
{
    (void)state;
    assert_defect_caught(DEFECT_BLACKOUT_ABOVE_ONE, "blackout", "/steps/blackout_frac[7]");
}

static void test_steps_completed_differing_from_rows_is_a_violation(void **state)
{
    (void)state;
    assert_defect_caught(DEFECT_STEPS_COMPLETED, "completed", "/final@steps_completed");
}

static void test_nonfinite_energy_is_a_violation(void **state)
{
    (void)state;
    assert_defect_caught(DEFECT_ENERGY_INF, "energy", "/steps/energy[8]: inf");
}

/* A flipped exponent bit that stays finite gets through detect = finite, and its square can
 * overflow the energy: after committed SDC a non-finite energy is what happened, not a defect
 * of the log. */
static void test_nonfinite_energy_after_committed_sdc_is_no_violation(void **state)
{
    (void)state;
    char path[64];
    temp_path(path, sizeof path, "sdcenergy");
    write_log(path, VARIANT_SDC_ENERGY);
    char text[4096];
    int bad = check_log(path, text, sizeof text);
    print_message("sdcenergy: %d violation(s): %s", bad, text);
    assert_int_equal(bad, 0);
    unlink(path);
}

static void test_missing_exit_reason_is_a_violation(void **state)
{
    (void)state;
    assert_defect_caught(DEFECT_NO_EXIT_REASON, "noexit", "/final@exit_reason");
}

/* The end of a run changes the root group and /host in place: the links to /final and /units
 * go into room the writer made for them in the root group's object header, and
 * /host@loadavg_1min_after (a placeholder until then) is rewritten where it is, so that each of
 * those commits is a single write (sim/io/log.h). A finished log has no more header chunks there
 * than one killed mid-run. */
static void test_end_of_run_changes_object_headers_in_place(void **state)
{
    (void)state;
    char done[64];
    char killed[64];
    temp_path(done, sizeof done, "inplace");
    temp_path(killed, sizeof killed, "inplace_killed");
    write_log(done, DEFECT_NONE);
    write_killed_log(killed);
    assert_int_equal(header_chunks(done, "/"), header_chunks(killed, "/"));
    assert_int_equal(header_chunks(done, "/host"), header_chunks(killed, "/host"));
    unlink(done);
    unlink(killed);
}

/* A writer killed with SIGKILL after its first flush leaves a file still marked as open for
 * SWMR writing: the reader opens it, reads the 7 committed rows (not the buffered ones), and
 * the checker says exactly that the run did not finish. */
static void test_killed_writer_leaves_a_readable_log_of_its_committed_rows(void **state)
{
    (void)state;
    char path[64];
    temp_path(path, sizeof path, "killed");
    write_killed_log(path);
    /* Plain read access is refused: the file says it is open for writing. */
    H5E_BEGIN_TRY
    {
        hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
        assert_true(f < 0);
    }
    H5E_END_TRY;
    af_logfile_t lf;
    char err[512] = "";
    assert_int_equal(af_logfile_open(&lf, path, err, sizeof err), AF_OK);
    assert_true(lf.live);
    assert_false(lf.finished);
    assert_int_equal(lf.rows_limit, 7);
    int rank = 0;
    int64_t dims[2] = {0, 0};
    assert_int_equal(af_logfile_shape(&lf, "/steps/step", &rank, dims), AF_OK);
    assert_int_equal(dims[0], 7);
    int64_t step[7];
    assert_int_equal(af_logfile_read_i64(&lf, "/steps/step", step, 7), AF_OK);
    for (int i = 0; i < 7; ++i) {
        assert_int_equal(step[i], i + 1);
    }
    af_logfile_close(&lf);
    char text[4096];
    int bad = check_log(path, text, sizeof text);
    print_message("%s", text);
    assert_int_equal(bad, 1);
    assert_non_null(strstr(text, "/final@exit_reason: missing: the run did not finish"));
    assert_non_null(strstr(text, "holds the 7 steps"));
    unlink(path);
}

/* Opening path must fail with AF_ERR_USAGE and one line naming the path. */
static void assert_open_refused(const char *path, const char *fragment)
{
    af_logfile_t lf;
    char err[1024] = "";
    af_result_t rc = af_logfile_open(&lf, path, err, sizeof err);
    print_message("%s\n", err);
    assert_int_equal(rc, AF_ERR_USAGE);
    assert_non_null(strstr(err, path));
    assert_null(strchr(err, '\n'));
    if (fragment != NULL) {
        assert_non_null(strstr(err, fragment));
    }
    assert_int_equal(lf.file, -1);
    af_logfile_close(&lf); /* harmless after a failed open */
}

static void test_missing_file_is_refused_naming_the_path(void **state)
{
    (void)state;
    assert_open_refused("/tmp/af_test_logread_no_such_dir/run.h5", "cannot open");
}

static void test_text_file_is_refused_as_not_hdf5(void **state)
{
    (void)state;
    char path[64];
    temp_path(path, sizeof path, "text");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("step,mass\n1,0.5\n2,0.5\n", f);
    fclose(f);
    assert_open_refused(path, "not an HDF5 file");
    unlink(path);
}

/* Copies the first n bytes of src to a new temporary file. */
static void truncated_copy(const char *src, long n, char *dst, size_t dstlen)
{
    temp_path(dst, dstlen, "trunc");
    FILE *in = fopen(src, "rb");
    FILE *out = fopen(dst, "wb");
    assert_non_null(in);
    assert_non_null(out);
    char *buf = malloc((size_t)n);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, in), (size_t)n);
    assert_int_equal(fwrite(buf, 1, (size_t)n, out), (size_t)n);
    free(buf);
    fclose(in);
    fclose(out);
}

static void test_truncated_logs_are_refused_naming_the_path(void **state)
{
    (void)state;
    char path[64];
    temp_path(path, sizeof path, "full");
    write_log(path, DEFECT_NONE);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    assert_true(size > 200);
    const long cuts[] = {100, size / 2};
    for (int i = 0; i < 2; ++i) {
        char cut[64];
        truncated_copy(path, cuts[i], cut, sizeof cut);
        print_message("truncated to %ld of %ld bytes: ", cuts[i], size);
        assert_open_refused(cut, NULL);
        unlink(cut);
    }
    unlink(path);
}

static void test_hdf5_file_that_is_not_an_agefence_log_is_refused(void **state)
{
    (void)state;
    char path[64];
    temp_path(path, sizeof path, "foreign");
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(file >= 0);
    hsize_t dims[1] = {4};
    hid_t space = H5Screate_simple(1, dims, NULL);
    hid_t d = H5Dcreate2(file, "temperature", H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT,
                         H5P_DEFAULT);
    assert_true(d >= 0);
    const double v[4] = {1, 2, 3, 4};
    assert_true(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
    H5Dclose(d);
    H5Sclose(space);
    H5Fclose(file);
    assert_open_refused(path, "not an agefence log");
    unlink(path);
}

static void test_newer_schema_version_is_refused_naming_the_path(void **state)
{
    (void)state;
    char path[64];
    temp_path(path, sizeof path, "schema99");
    write_log(path, DEFECT_SCHEMA_99);
    assert_open_refused(path, "99");
    unlink(path);
}

static void test_percentile_follows_numpy_linear_interpolation(void **state)
{
    (void)state;
    const double v[] = {1.0, 2.0, 3.0, 4.0};
    assert_true(af_percentile_sorted(v, 4, 50) == 2.5);
    assert_true(fabs(af_percentile_sorted(v, 4, 90) - 3.7) < 1e-12);
    assert_true(fabs(af_percentile_sorted(v, 4, 10) - 1.3) < 1e-12);
    assert_true(af_percentile_sorted(v, 4, 0) == 1.0);
    assert_true(af_percentile_sorted(v, 4, 100) == 4.0);
    /* numpy.percentile([10, 20, 30, 40, 50], [25, 10, 99]) = [20, 14, 49.6]. */
    const double w[] = {10, 20, 30, 40, 50};
    assert_true(fabs(af_percentile_sorted(w, 5, 25) - 20.0) < 1e-12);
    assert_true(fabs(af_percentile_sorted(w, 5, 10) - 14.0) < 1e-12);
    assert_true(fabs(af_percentile_sorted(w, 5, 99) - 49.6) < 1e-12);
    /* One element: every percentile is that element. */
    const double one[] = {7.25};
    assert_true(af_percentile_sorted(one, 1, 0) == 7.25);
    assert_true(af_percentile_sorted(one, 1, 50) == 7.25);
    assert_true(af_percentile_sorted(one, 1, 100) == 7.25);
    /* af_sort_doubles then percentile, on unsorted input. */
    double u[] = {4.0, 1.0, 3.0, 2.0};
    af_sort_doubles(u, 4);
    assert_true(u[0] == 1.0 && u[1] == 2.0 && u[2] == 3.0 && u[3] == 4.0);
    assert_true(af_percentile_sorted(u, 4, 50) == 2.5);
}

/* af_lower_bound_i32 against a linear scan, on sorted lists with repeats, every probe from
 * below the first value to above the last, and the empty list. */
static void test_lower_bound_finds_the_first_not_below(void **state)
{
    (void)state;
    assert_int_equal(af_lower_bound_i32(NULL, 0, 5), 0);
    int32_t v[64];
    uint32_t x = 12345u;
    for (int n = 1; n <= 64; ++n) {
        for (int i = 0; i < n; ++i) {
            x = x * 1664525u + 1013904223u;
            v[i] = (int32_t)(x >> 27); /* 0..31: repeats */
        }
        af_sort_i32(v, (size_t)n);
        for (int64_t probe = -2; probe <= 34; ++probe) {
            int64_t want = 0;
            while (want < n && v[want] < probe) {
                want++;
            }
            assert_int_equal(af_lower_bound_i32(v, n, probe), want);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_complete_consistent_log_has_no_violations),
        cmocka_unit_test(test_reader_returns_what_the_writer_wrote),
        cmocka_unit_test(test_interruptions_without_time_h_read_at_their_steps_hours),
        cmocka_unit_test(test_interruption_time_outside_its_step_is_a_violation),
        cmocka_unit_test(test_non_contiguous_step_is_a_violation),
        cmocka_unit_test(test_detected_above_injected_is_a_violation),
        cmocka_unit_test(test_blackout_fraction_above_one_is_a_violation),
        cmocka_unit_test(test_steps_completed_differing_from_rows_is_a_violation),
        cmocka_unit_test(test_nonfinite_energy_is_a_violation),
        cmocka_unit_test(test_nonfinite_energy_after_committed_sdc_is_no_violation),
        cmocka_unit_test(test_missing_exit_reason_is_a_violation),
        cmocka_unit_test(test_end_of_run_changes_object_headers_in_place),
        cmocka_unit_test(test_killed_writer_leaves_a_readable_log_of_its_committed_rows),
        cmocka_unit_test(test_missing_file_is_refused_naming_the_path),
        cmocka_unit_test(test_text_file_is_refused_as_not_hdf5),
        cmocka_unit_test(test_truncated_logs_are_refused_naming_the_path),
        cmocka_unit_test(test_hdf5_file_that_is_not_an_agefence_log_is_refused),
        cmocka_unit_test(test_newer_schema_version_is_refused_naming_the_path),
        cmocka_unit_test(test_percentile_follows_numpy_linear_interpolation),
        cmocka_unit_test(test_lower_bound_finds_the_first_not_below),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
