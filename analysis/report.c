/* agefence-report: offline analysis of a run's log (no MPI needed).
 *   agefence-report RUN.h5                   the one-screen report
 *   agefence-report --json RUN.h5            the same figures as one JSON object
 *   agefence-report --compare OTHER RUN.h5   two runs side by side with OTHER/RUN ratios
 *   agefence-report --plots DIR RUN.h5       the report, and PNG figures in DIR
 *   agefence-report --check RUN.h5           validate against the log schema
 *   agefence-report --attr OBJ NAME RUN.h5   print one attribute (for scripts)
 *   agefence-report --same OTHER RUN.h5      are they the same run? (exit 0 yes, 1 no)
 *   agefence-report [--plots DIR] JITTER.h5  the pacing trade-off of `agefence bench jitter`
 *   agefence-report [--json] [--plots DIR] ENSEMBLE_DIR   an ensemble's members together
 * Exit status: 0 ok, 1 schema violations (--check), runs that differ (--same) or an internal
 * error, 2 bad input. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/af_result.h"
#include "ensemble.h"
#include "figures.h"
#include "jitter.h"
#include "logread.h"
#include "plots.h"
#include "record.h"
#include "rundata.h"
#include "same.h"
#include "summary.h"
#include "textreport.h"

static void usage(FILE *f)
{
    fprintf(
        f, "usage: agefence-report [--json] [--plots DIR] [--set goodput.KEY=V]... RUN.h5\n"
           "                                   report of a run\n"
           "       agefence-report --compare OTHER.h5 [--json] RUN.h5\n"
           "                                   RUN and OTHER side by side, ratios OTHER/RUN\n"
           "       agefence-report --check RUN.h5    validate against the log schema\n"
           "       agefence-report --attr OBJ NAME RUN.h5   print one attribute\n"
           "       agefence-report --same OTHER.h5 RUN.h5\n"
           "                                   did OTHER compute exactly what RUN did? (/steps,\n"
           "                                   /events, /units, /final; not timings or launch)\n"
           "       agefence-report [--plots DIR] JITTER.h5\n"
           "                                   the pacing trade-off of agefence bench jitter\n"
           "       agefence-report [--json] [--plots DIR] [--set goodput.KEY=V]...\n"
           "                       [--grid goodput.KEY=v1,v2,...] ENSEMBLE_DIR\n"
           "                                   an ensemble: every log of the directory, runs of\n"
           "                                   one scenario with other seeds (and the keys of\n"
           "                                   ENSEMBLE_DIR/grid), gathered\n"
           "options: --json      the figures as one JSON object (docs/report.md, '--json',\n"
           "                     lists the keys)\n"
           "         --plots DIR PNG figures of RUN in DIR (needs Python 3 with h5py and\n"
           "                     matplotlib; without them the report is printed alone)\n"
           "         --record NAME  the run's interruptions beside a published record's (none,\n"
           "                     or llama3-405b), instead of the one its scenario.record names\n"
           "         --with-unfinished  an ensemble takes in members that did not finish their\n"
           "                     window (left out and listed without it), named as such\n"
           "         --set goodput.KEY=VALUE  replay the history at this cost instead of the\n"
           "                     scenario's (repeatable; the [goodput] keys of agefence config\n"
           "                     --keys); nothing is simulated again\n"
           "         --grid goodput.KEY=v1,v2,...  an ensemble: every member replayed at each\n"
           "                     value, one group a value\n"
           "environment: AGEFENCE_PYTHON    the Python of --plots [the first of /usr/bin/python3\n"
           "                                and python3 on PATH with h5py and matplotlib]\n"
           "             AGEFENCE_PLOTS_PY  the plotting script [plots.py beside the binary, else\n"
           "                                " AF_PLOTS_REL " from its folder]\n"
           "exit status: 0 ok, 1 the file breaks the schema (--check), the runs differ\n"
           "             (--same) or an internal error,\n"
           "             2 bad input (arguments, a missing, unreadable or foreign file)\n");
}

/* A loaded run: its file, data and figures. */
typedef struct loaded {
    af_logfile_t lf;
    af_run_t run;
    af_summary_t sum;
    af_figs_t figs;
    int open;
} loaded_t;

/* agefence-report --record NAME: the record to set the runs beside, instead of the one their
 * scenario names ("none": no record). NULL: each run's own. */
static const char *record_override = NULL;

/* agefence-report --with-unfinished DIR: members that did not finish their window join the
 * ensemble's groups, named as such (analysis/ensemble.h). */
static int take_unfinished = 0;

/* agefence-report --set goodput.KEY=VALUE (repeatable): the costs a log's or an ensemble's
 * history is replayed at instead of its scenario's [goodput] keys (they change no simulated
 * history, so nothing is simulated again). */
enum { MAX_SET = 16, MAX_COST = 64 };
static const char *cost_set[MAX_SET];
static int ncost_set = 0;

/* agefence-report --grid goodput.KEY=v1,v2,... DIR: one group a value. */
static char cost_key[64];
static char cost_text[4096];
static const char *cost_values[MAX_COST];
static int ncost = 0;

/* Parses --grid's goodput.KEY=v1,v2,...: each value checked as --set checks it, none twice. */
static int parse_cost_grid(const char *spec)
{
    const char *eq = strchr(spec, '=');
    if (eq == NULL || strncmp(spec, "goodput.", 8) != 0 || (size_t)(eq - spec) >= sizeof cost_key ||
        strlen(eq + 1) >= sizeof cost_text) {
        fprintf(stderr,
                "agefence-report: --grid '%s': expected goodput.KEY=v1,v2,... (the report's "
                "grid is over [goodput] keys; scripts/ensemble.sh --grid over the others)\n",
                spec);
        return 0;
    }
    snprintf(cost_key, sizeof cost_key, "%.*s", (int)(eq - spec), spec);
    snprintf(cost_text, sizeof cost_text, "%s", eq + 1);
    for (char *v = cost_text, *next = NULL; v != NULL; v = next) {
        next = strchr(v, ',');
        if (next != NULL) {
            *next++ = '\0';
        }
        char one[sizeof cost_key + sizeof cost_text + 1];
        snprintf(one, sizeof one, "%s=%s", cost_key, v);
        af_goodput_params_t scratch;
        af_goodput_defaults(&scratch);
        if (*v == '\0' || af_goodput_set(&scratch, one) != AF_OK) {
            fprintf(stderr, "agefence-report: --grid '%s': %s\n", spec,
                    *v == '\0' ? "an empty value" : af_error_message());
            return 0;
        }
        for (int k = 0; k < ncost; ++k) {
            if (strcmp(cost_values[k], v) == 0) {
                fprintf(stderr, "agefence-report: --grid '%s': the value '%s' is given twice\n",
                        spec, v);
                return 0;
            }
        }
        if (ncost == MAX_COST) {
            fprintf(stderr, "agefence-report: --grid '%s': at most %d values\n", spec, MAX_COST);
            return 0;
        }
        cost_values[ncost++] = v;
    }
    return 1;
}

/* mkdir -p dir: 0, or -1 with errno. */
static int make_dir(const char *dir)
{
    char p[4096];
    if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *c = p + 1; *c != '\0'; ++c) {
        if (*c == '/') {
            *c = '\0';
            if (mkdir(p, 0777) != 0 && errno != EEXIST) {
                return -1;
            }
            *c = '/';
        }
    }
    return mkdir(p, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

/* --plots: the goodput over time that plots.py draws (goodput.png), computed here by the
 * report's own replay (af_summary_goodput_csv) into DIR/goodput_over_time.csv. When it cannot
 * be written, one line says why and the other figures are still made (plots.py skips this one). */
static void write_goodput_series(const af_summary_t *sum, const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/goodput_over_time.csv", dir);
    if (make_dir(dir) != 0) {
        fprintf(stderr, "agefence-report: goodput over time skipped: %s: %s\n", dir,
                strerror(errno));
        return;
    }
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "agefence-report: goodput over time skipped: %s: %s\n", path,
                strerror(errno));
        return;
    }
    af_result_t r = af_summary_goodput_csv(sum, f);
    if (fclose(f) != 0 && r == AF_OK) {
        r = AF_ERR_IO;
        af_error_set("%s: %s", path, strerror(errno));
    }
    if (r != AF_OK) {
        fprintf(stderr, "agefence-report: goodput over time skipped: %s\n", af_error_message());
        remove(path);
    }
}

static int load(loaded_t *l, const char *path)
{
    char err[700];
    memset(l, 0, sizeof *l);
    af_figs_init(&l->figs);
    if (af_logfile_open(&l->lf, path, err, sizeof err) != AF_OK) {
        fprintf(stderr, "agefence-report: %s\n", err);
        return AF_EXIT_USAGE;
    }
    l->open = 1;
    af_result_t rc = af_run_load(&l->run, &l->lf);
    if (record_override != NULL) {
        snprintf(l->run.record, sizeof l->run.record, "%s", record_override);
    }
    /* the costs asked offline (checked when parsed: no error here) */
    for (int k = 0; rc == AF_OK && k < ncost_set; ++k) {
        rc = af_goodput_set(&l->run.goodput, cost_set[k]);
        size_t n = strlen(l->run.goodput_set);
        snprintf(l->run.goodput_set + n, sizeof l->run.goodput_set - n, "%s%s", k > 0 ? ", " : "",
                 cost_set[k]);
    }
    if (rc != AF_OK || af_summary_compute(&l->sum, &l->run) != AF_OK ||
        af_summary_figures(&l->sum, &l->figs) != AF_OK) {
        fprintf(stderr, "agefence-report: %s: out of memory\n", path);
        return AF_EXIT_ERROR;
    }
    return AF_EXIT_OK;
}

static void unload(loaded_t *l)
{
    af_figs_free(&l->figs);
    af_run_free(&l->run);
    if (l->open) {
        af_logfile_close(&l->lf);
    }
    l->open = 0;
}

static int attr_mode(const char *path, const char *obj, const char *name)
{
    af_logfile_t lf;
    char err[700];
    if (af_logfile_open(&lf, path, err, sizeof err) != AF_OK) {
        fprintf(stderr, "agefence-report: %s\n", err);
        return AF_EXIT_USAGE;
    }
    int rc = AF_EXIT_OK;
    static char s[65536];
    int64_t i = 0;
    double d = 0;
    if (af_logfile_attr_str(&lf, obj, name, s, sizeof s) == AF_OK) {
        printf("%s\n", s);
    } else if (af_logfile_attr_i64(&lf, obj, name, &i) == AF_OK &&
               af_logfile_attr_f64(&lf, obj, name, &d) == AF_OK && d == (double)i) {
        printf("%lld\n", (long long)i);
    } else if (af_logfile_attr_f64(&lf, obj, name, &d) == AF_OK) {
        printf("%.17g\n", d);
    } else {
        fprintf(stderr, "agefence-report: %s: no attribute %s@%s\n", path, obj, name);
        rc = AF_EXIT_USAGE;
    }
    af_logfile_close(&lf);
    return rc;
}

/* The results of a benchmark rather than a run's log: 1 when path is one (handled here, *rc
 * set), 0 when it is not (or cannot be opened: the run path reports that). */
static int bench_mode(const char *path, int json, const char *other, const char *plots, int *rc)
{
    af_logfile_t lf;
    char err[700];
    char bench[64];
    if (af_logfile_open(&lf, path, err, sizeof err) != AF_OK) {
        return 0;
    }
    if (!af_jitter_is_bench(&lf, bench, sizeof bench)) {
        af_logfile_close(&lf);
        return 0;
    }
    *rc = AF_EXIT_OK;
    if (strcmp(bench, "sdc") == 0 && plots != NULL && !json && other == NULL) {
        /* The detectors' figures are the bench's own table (and /ratios); the report draws
         * them. */
        printf("agefence-report: %s: results of agefence bench sdc (figures: its table and "
               "/ratios)\n",
               path);
        fflush(stdout);
        if (af_plots_run(path, plots, stderr) == AF_PLOTS_FAILED) {
            *rc = AF_EXIT_ERROR;
        }
    } else if (strcmp(bench, "jitter") != 0 || json || other != NULL) {
        fprintf(stderr,
                "agefence-report: %s: results of agefence bench %s, not a run's log: the report "
                "reads bench files of jitter, as text (with --plots), and of sdc with --plots\n",
                path, bench);
        *rc = AF_EXIT_USAGE;
    } else {
        af_jitter_t *j = malloc(sizeof *j);
        af_result_t r = j != NULL ? af_jitter_load(j, &lf, path, err, sizeof err) : AF_ERR_NOMEM;
        if (r == AF_OK) {
            af_jitter_text(j, path, stdout);
            fflush(stdout);
            if (plots != NULL && af_plots_run(path, plots, stderr) == AF_PLOTS_FAILED) {
                *rc = AF_EXIT_ERROR;
            }
        } else {
            fprintf(stderr, "agefence-report: %s\n", r == AF_ERR_NOMEM ? "out of memory" : err);
            *rc = r == AF_ERR_NOMEM ? AF_EXIT_ERROR : AF_EXIT_USAGE;
        }
        free(j);
    }
    af_logfile_close(&lf);
    return 1;
}

static int check_mode(const char *path)
{
    af_logfile_t lf;
    char err[700];
    if (af_logfile_open(&lf, path, err, sizeof err) != AF_OK) {
        fprintf(stderr, "agefence-report: %s\n", err);
        return AF_EXIT_USAGE;
    }
    int bad = af_logfile_check(&lf, stdout);
    if (bad) {
        printf("%s: %d schema violation%s\n", path, bad, bad == 1 ? "" : "s");
    } else {
        printf("%s: valid agefence log (schema %lld)\n", path, (long long)lf.schema_version);
        /* A valid log of a run that committed corruptions: the log is right, the run is not. */
        int64_t sdc = 0;
        int64_t harmful = 0;
        if (af_logfile_attr_i64(&lf, "/final", "sdc_undetected_total", &sdc) == AF_OK && sdc > 0) {
            af_logfile_attr_i64(&lf, "/final", "sdc_harmful_total", &harmful);
            /* The workload may erase what was committed (docs/corruption.md, "Accounting"):
             * the verdict says whether the final state kept it. */
            int64_t equal = 0;
            af_logfile_attr_i64(&lf, "/final", "bitwise_equal", &equal);
            printf("%s: the run committed %lld corruptions no detector saw (%lld harmful): %s\n",
                   path, (long long)sdc, (long long)harmful,
                   equal == 1 ? "the workload erased them (its final state is the reference's)"
                              : "its final state is not the reference's");
        }
    }
    af_logfile_close(&lf);
    return bad ? AF_EXIT_ERROR : AF_EXIT_OK;
}

/* agefence-report DIR: the ensemble of a directory of logs (analysis/ensemble.h). */
static int ensemble_mode(const char *dir, int json, const char *plots)
{
    af_ensemble_t e;
    af_ensemble_opts_t opt = {.record = record_override,
                              .take_unfinished = take_unfinished,
                              .set = cost_set,
                              .nset = ncost_set,
                              .cost_key = ncost > 0 ? cost_key : NULL,
                              .cost_values = cost_values,
                              .ncost = ncost};
    af_result_t r = af_ensemble_load(&e, dir, &opt);
    if (r != AF_OK) {
        fprintf(stderr, "agefence-report: %s\n", af_error_message());
        af_ensemble_free(&e);
        return r == AF_ERR_USAGE ? AF_EXIT_USAGE : AF_EXIT_ERROR;
    }
    int rc = AF_EXIT_OK;
    if (json) {
        af_figs_t f;
        af_figs_init(&f);
        if (af_ensemble_figures(&e, &f) != AF_OK) {
            fprintf(stderr, "agefence-report: out of memory\n");
            rc = AF_EXIT_ERROR;
        } else {
            af_figs_json(&f, stdout, 0);
        }
        af_figs_free(&f);
    } else {
        af_ensemble_text(&e, stdout);
    }
    fflush(stdout);
    if (rc == AF_EXIT_OK && plots != NULL) {
        char path[4200];
        snprintf(path, sizeof path, "%s/ensemble.csv", plots);
        FILE *f = make_dir(plots) == 0 ? fopen(path, "w") : NULL;
        if (f == NULL || af_ensemble_csv(&e, f) != AF_OK) {
            fprintf(stderr, "agefence-report: %s: %s\n", path, strerror(errno));
            rc = AF_EXIT_ERROR;
        }
        if (f != NULL && fclose(f) != 0 && rc == AF_EXIT_OK) {
            fprintf(stderr, "agefence-report: %s: %s\n", path, strerror(errno));
            rc = AF_EXIT_ERROR;
        }
        if (rc == AF_EXIT_OK && af_plots_run(path, plots, stderr) == AF_PLOTS_FAILED) {
            rc = AF_EXIT_ERROR;
        }
    }
    af_ensemble_free(&e);
    return rc;
}

int main(int argc, char **argv)
{
    int check = 0;
    int json = 0;
    const char *obj = NULL;
    const char *name = NULL;
    const char *other = NULL;
    const char *same = NULL;
    const char *plots = NULL;
    const char *path = NULL;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return AF_EXIT_OK;
        } else if (strcmp(a, "--check") == 0) {
            check = 1;
        } else if (strcmp(a, "--json") == 0) {
            json = 1;
        } else if (strcmp(a, "--attr") == 0) {
            if (i + 2 >= argc) {
                fprintf(stderr, "agefence-report: --attr needs OBJ and NAME\n");
                return AF_EXIT_USAGE;
            }
            obj = argv[++i];
            name = argv[++i];
        } else if (strcmp(a, "--with-unfinished") == 0) {
            take_unfinished = 1;
        } else if (strcmp(a, "--set") == 0) {
            af_goodput_params_t scratch;
            af_goodput_defaults(&scratch);
            if (i + 1 >= argc || af_goodput_set(&scratch, argv[i + 1]) != AF_OK) {
                fprintf(stderr, "agefence-report: --set %s\n",
                        i + 1 < argc ? af_error_message() : "needs goodput.KEY=VALUE");
                return AF_EXIT_USAGE;
            }
            if (ncost_set == MAX_SET) {
                fprintf(stderr, "agefence-report: --set: at most %d\n", MAX_SET);
                return AF_EXIT_USAGE;
            }
            cost_set[ncost_set++] = argv[++i];
        } else if (strcmp(a, "--grid") == 0) {
            if (i + 1 >= argc || ncost > 0) {
                fprintf(stderr, "agefence-report: --grid %s\n",
                        i + 1 < argc ? "given twice: one goodput key a report (a second grid "
                                       "key goes in DIR/grid)"
                                     : "needs goodput.KEY=v1,v2,...");
                return AF_EXIT_USAGE;
            }
            if (!parse_cost_grid(argv[++i])) {
                return AF_EXIT_USAGE;
            }
        } else if (strcmp(a, "--record") == 0) {
            if (i + 1 >= argc ||
                (strcmp(argv[i + 1], "none") != 0 && af_record_find(argv[i + 1]) == NULL)) {
                fprintf(stderr, "agefence-report: --record '%s': expected none or one of %s\n",
                        i + 1 < argc ? argv[i + 1] : "", af_record_names());
                return AF_EXIT_USAGE;
            }
            record_override = argv[++i];
        } else if (strcmp(a, "--same") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "agefence-report: --same needs a log to compare with\n");
                return AF_EXIT_USAGE;
            }
            same = argv[++i];
        } else if (strcmp(a, "--compare") == 0 || strcmp(a, "--plots") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "agefence-report: %s needs %s\n", a,
                        a[2] == 'c' ? "a log to compare with" : "a folder");
                return AF_EXIT_USAGE;
            }
            *(a[2] == 'c' ? &other : &plots) = argv[++i];
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "agefence-report: unknown option '%s' (agefence-report --help)\n", a);
            return AF_EXIT_USAGE;
        } else if (path == NULL) {
            path = a;
        } else {
            fprintf(stderr,
                    "agefence-report: more than one log given ('%s'; --compare OTHER "
                    "compares two)\n",
                    a);
            return AF_EXIT_USAGE;
        }
    }
    if (path == NULL) {
        fprintf(stderr, "agefence-report: no log given (agefence-report --help)\n");
        return AF_EXIT_USAGE;
    }
    if ((check || obj != NULL || same != NULL) &&
        (json || other != NULL || plots != NULL || check + (obj != NULL) + (same != NULL) > 1)) {
        fprintf(stderr,
                "agefence-report: --check, --attr and --same go alone (agefence-report --help)\n");
        return AF_EXIT_USAGE;
    }
    if (plots != NULL &&
        (af_plots_check_env(stderr) != 0 || af_plots_check_dir(plots, stderr) != 0)) {
        return AF_EXIT_USAGE;
    }
    if ((ncost_set > 0 || ncost > 0) && (same != NULL || check || obj != NULL)) {
        fprintf(stderr, "agefence-report: --set and --grid re-cost a goodput: not with --same, "
                        "--check or --attr\n");
        return AF_EXIT_USAGE;
    }
    struct stat pst;
    if (ncost > 0 && !(stat(path, &pst) == 0 && S_ISDIR(pst.st_mode))) {
        fprintf(stderr,
                "agefence-report: --grid %s: one group a value needs an ensemble directory; for "
                "one log, --set %s=VALUE\n",
                cost_key, cost_key);
        return AF_EXIT_USAGE;
    }
    if (same != NULL) {
        return af_same_run(same, path, stdout);
    }
    if (check) {
        return check_mode(path);
    }
    if (obj != NULL) {
        return attr_mode(path, obj, name);
    }

    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        if (check || obj != NULL || same != NULL || other != NULL) {
            fprintf(stderr,
                    "agefence-report: %s: a directory, read as an ensemble: it takes "
                    "--json, --plots, --record, --with-unfinished, --set and --grid only\n",
                    path);
            return AF_EXIT_USAGE;
        }
        return ensemble_mode(path, json, plots);
    }

    int brc = 0;
    if (bench_mode(path, json, other, plots, &brc)) {
        return brc;
    }

    loaded_t a;
    loaded_t b;
    memset(&b, 0, sizeof b);
    af_figs_init(&b.figs);
    int rc = load(&a, path);
    if (rc == AF_EXIT_OK && other != NULL) {
        rc = load(&b, other);
    }
    if (rc == AF_EXIT_OK) {
        if (other != NULL && json) {
            if (af_figs_compare_json(&a.figs, &b.figs, stdout) != AF_OK) {
                fprintf(stderr, "agefence-report: out of memory\n");
                rc = AF_EXIT_ERROR;
            }
        } else if (other != NULL) {
            printf("agefence-report --compare\n  RUN    %s\n  OTHER  %s\n", path, other);
            af_figs_compare_text(&a.figs, &b.figs, stdout);
        } else if (json) {
            af_figs_json(&a.figs, stdout, 0);
        } else {
            af_report_text(&a.sum, stdout);
        }
        fflush(stdout);
    }
    if (rc == AF_EXIT_OK && plots != NULL) {
        write_goodput_series(&a.sum, plots);
        if (af_plots_run(path, plots, stderr) == AF_PLOTS_FAILED) {
            rc = AF_EXIT_ERROR;
        }
    }
    unload(&b);
    unload(&a);
    return rc;
}
