#include "jitter.h"

#include <hdf5.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int af_jitter_is_bench(const af_logfile_t *lf, char *bench, size_t n)
{
    char kind[64];
    if (af_logfile_attr_str(lf, "/", "kind", kind, sizeof kind) != AF_OK ||
        strcmp(kind, "agefence bench") != 0) {
        return 0;
    }
    if (af_logfile_attr_str(lf, "/", "benchmark", bench, n) != AF_OK) {
        snprintf(bench, n, "?");
    }
    return 1;
}

typedef struct names {
    char v[AF_JITTER_MAX][32];
    int n;
    int overflow;
} names_t;

static herr_t collect(hid_t g, const char *name, const H5L_info_t *info, void *data)
{
    (void)g;
    (void)info;
    names_t *ns = data;
    const char *pre = "period_us.";
    if (strncmp(name, pre, strlen(pre)) != 0) {
        return 0;
    }
    if (ns->n == AF_JITTER_MAX || strlen(name + strlen(pre)) >= sizeof ns->v[0]) {
        ns->overflow = 1;
        return 0;
    }
    snprintf(ns->v[ns->n++], sizeof ns->v[0], "%s", name + strlen(pre));
    return 0;
}

/* Reads a series whole (malloc'ed). */
static af_result_t read_raw(const af_logfile_t *lf, const char *path, double **out, size_t *n)
{
    int rank = 0;
    int64_t dims[2] = {0, 0};
    AF_CHECK(af_logfile_shape(lf, path, &rank, dims));
    if (rank != 1) {
        return AF_ERR_IO;
    }
    double *v = malloc(sizeof(double) * (size_t)(dims[0] > 0 ? dims[0] : 1));
    if (v == NULL) {
        return AF_ERR_NOMEM;
    }
    af_result_t rc = af_logfile_read_f64(lf, path, v, (size_t)dims[0]);
    if (rc != AF_OK) {
        free(v);
        return rc;
    }
    *out = v;
    *n = (size_t)dims[0];
    return AF_OK;
}

static af_result_t read_series(const af_logfile_t *lf, const char *path, af_stats_t *st)
{
    double *v = NULL;
    size_t n = 0;
    AF_CHECK(read_raw(lf, path, &v, &n));
    af_result_t rc = af_stats_compute(v, n, st);
    free(v);
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a;
    double y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Off first, then the gamma settings, then the quantile settings, each ascending. */
static int cmp_rows(const void *a, const void *b)
{
    const af_jitter_row_t *x = a;
    const af_jitter_row_t *y = b;
    int kx = x->gamma < 0 && x->quantile < 0 ? 0 : x->quantile < 0 ? 1 : 2;
    int ky = y->gamma < 0 && y->quantile < 0 ? 0 : y->quantile < 0 ? 1 : 2;
    if (kx != ky) {
        return kx - ky;
    }
    double vx = kx == 2 ? x->quantile : x->gamma;
    double vy = ky == 2 ? y->quantile : y->gamma;
    return (vx > vy) - (vx < vy);
}

/* The offline bound of each quantile row from pacing off's raw periods. */
static af_result_t derive_bounds(af_jitter_t *j, const af_logfile_t *lf)
{
    double *v = NULL;
    size_t n = 0;
    AF_CHECK(read_raw(lf, "/series/period_us.off", &v, &n)); /* row 0 is off */
    qsort(v, n, sizeof v[0], cmp_double);
    const af_stats_t *off = &j->row[0].period;
    for (int i = 1; i < j->n; ++i) {
        af_jitter_row_t *r = &j->row[i];
        if (r->quantile < 0 || n == 0) {
            continue;
        }
        long k = (long)ceil(r->quantile * (double)n) - 1;
        double deadline = v[k < 0 ? 0 : k >= (long)n ? (long)n - 1 : k];
        double s = 0;
        for (size_t t = 0; t < n; ++t) {
            s += v[t] > deadline ? v[t] : deadline;
        }
        double mean = s / (double)n;
        double ss = 0;
        for (size_t t = 0; t < n; ++t) {
            double d = (v[t] > deadline ? v[t] : deadline) - mean;
            ss += d * d;
        }
        double sd = n > 1 ? sqrt(ss / (double)(n - 1)) : 0.0;
        r->bound_sd_reduction = off->sd > 0 ? 1.0 - sd / off->sd : NAN;
        r->bound_mean_cost = off->mean > 0 ? mean / off->mean - 1.0 : NAN;
    }
    free(v);
    return AF_OK;
}

af_result_t af_jitter_load(af_jitter_t *j, const af_logfile_t *lf, const char *path, char *err,
                           size_t errlen)
{
    memset(j, 0, sizeof *j);
    names_t ns;
    memset(&ns, 0, sizeof ns);
    hid_t g = H5Gopen2((hid_t)lf->file, "/series", H5P_DEFAULT);
    if (g < 0) {
        snprintf(err, errlen, "%s: bench results without /series", path);
        return AF_ERR_USAGE;
    }
    hsize_t idx = 0;
    herr_t it = H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, &idx, collect, &ns);
    H5Gclose(g);
    if (it < 0 || ns.overflow) {
        snprintf(err, errlen, "%s: /series cannot be listed (or holds over %d settings)", path,
                 AF_JITTER_MAX);
        return AF_ERR_USAGE;
    }
    for (int i = 0; i < ns.n; ++i) {
        af_jitter_row_t *r = &j->row[j->n];
        snprintf(r->name, sizeof r->name, "%s", ns.v[i]);
        char *end = NULL;
        r->gamma = -1;
        r->quantile = -1;
        r->bound_sd_reduction = NAN;
        r->bound_mean_cost = NAN;
        if (strcmp(r->name, "off") == 0) {
        } else if (r->name[0] == 'g' && (r->gamma = strtod(r->name + 1, &end), *end == '\0') &&
                   r->gamma >= 0) {
        } else if (r->name[0] == 'q' && (r->quantile = strtod(r->name + 1, &end), *end == '\0') &&
                   r->quantile > 0 && r->quantile < 1) {
        } else {
            snprintf(err, errlen, "%s: /series/period_us.%s: not a pacing setting", path, r->name);
            return AF_ERR_USAGE;
        }
        char p[96];
        snprintf(p, sizeof p, "/series/period_us.%s", r->name);
        af_result_t rc = read_series(lf, p, &r->period);
        snprintf(p, sizeof p, "/series/sink_us.%s", r->name);
        if (rc == AF_OK) {
            rc = read_series(lf, p, &r->sink);
        }
        if (rc != AF_OK) {
            snprintf(err, errlen, "%s: %s: unreadable", path, p);
            return rc == AF_ERR_NOMEM ? rc : AF_ERR_USAGE;
        }
        j->n++;
    }
    qsort(j->row, (size_t)j->n, sizeof j->row[0], cmp_rows);
    if (j->n == 0 || j->row[0].gamma >= 0 || j->row[0].quantile >= 0 || j->row[0].period.n == 0) {
        snprintf(err, errlen, "%s: jitter results without samples of pacing off", path);
        return AF_ERR_USAGE;
    }
    const af_stats_t *off = &j->row[0].period;
    for (int i = 0; i < j->n; ++i) {
        af_jitter_row_t *r = &j->row[i];
        r->sd_reduction = off->sd > 0 ? 1.0 - r->period.sd / off->sd : NAN;
        r->mean_cost = off->mean > 0 ? r->period.mean / off->mean - 1.0 : NAN;
        r->p99_ratio = off->p99 > 0 ? r->period.p99 / off->p99 : NAN;
    }
    af_result_t rc = derive_bounds(j, lf);
    if (rc != AF_OK) {
        snprintf(err, errlen, "%s: /series/period_us.off: unreadable", path);
        return rc == AF_ERR_NOMEM ? rc : AF_ERR_USAGE;
    }
    return AF_OK;
}

static void row_label(const af_jitter_row_t *r, char *out, size_t n)
{
    if (r->quantile >= 0) {
        snprintf(out, n, "q=%g", r->quantile);
    } else if (r->gamma >= 0) {
        snprintf(out, n, "gamma=%g", r->gamma);
    } else {
        snprintf(out, n, "off");
    }
}

void af_jitter_text(const af_jitter_t *j, const char *path, FILE *out)
{
    fprintf(out, "PACING TRADE-OFF  %s (agefence bench jitter): rank 0's step period in µs\n",
            path);
    fprintf(out, "  %-9s %7s %9s %9s %9s %9s %10s %10s %9s %10s %10s %10s\n", "setting", "steps",
            "mean", "p50", "p99", "sd", "sd vs off", "mean cost", "p99/off", "sink mean",
            "bound sd", "bound mean");
    int best = -1;
    for (int i = 0; i < j->n; ++i) {
        const af_jitter_row_t *r = &j->row[i];
        char name[40];
        row_label(r, name, sizeof name);
        if (i == 0) {
            fprintf(out, "  %-9s %7zu %9.1f %9.1f %9.1f %9.1f %10s %10s %9s %10.1f %10s %10s\n",
                    name, r->period.n, r->period.mean, r->period.p50, r->period.p99, r->period.sd,
                    "-", "-", "-", r->sink.mean, "-", "-");
            continue;
        }
        fprintf(out, "  %-9s %7zu %9.1f %9.1f %9.1f %9.1f %+9.1f%% %+9.1f%% %9.2f %10.1f", name,
                r->period.n, r->period.mean, r->period.p50, r->period.p99, r->period.sd,
                -100.0 * r->sd_reduction, 100.0 * r->mean_cost, r->p99_ratio, r->sink.mean);
        if (isnan(r->bound_sd_reduction)) {
            fprintf(out, " %10s %10s\n", "-", "-");
        } else {
            fprintf(out, " %+9.1f%% %+9.1f%%\n", -100.0 * r->bound_sd_reduction,
                    100.0 * r->bound_mean_cost);
        }
        if (r->sd_reduction >= 0.85 && (best < 0 || r->mean_cost < j->row[best].mean_cost)) {
            best = i;
        }
    }
    fprintf(out, "  bound: every unpaced (off) period padded to a fixed deadline at the setting's "
                 "quantile of them\n");
    char name[40];
    if (best >= 0) {
        row_label(&j->row[best], name, sizeof name);
        fprintf(out,
                "  an 85%% reduction of the period's sd: reached; cheapest at %s, mean %+.1f%%\n",
                name, 100.0 * j->row[best].mean_cost);
    } else {
        int most = -1;
        for (int i = 1; i < j->n; ++i) {
            if (most < 0 || j->row[i].sd_reduction > j->row[most].sd_reduction) {
                most = i;
            }
        }
        if (most > 0) {
            row_label(&j->row[most], name, sizeof name);
            fprintf(out,
                    "  an 85%% reduction of the period's sd: not reached; the most, %.1f%%, at "
                    "%s for a mean %+.1f%%\n",
                    100.0 * j->row[most].sd_reduction, name, 100.0 * j->row[most].mean_cost);
        }
    }
}
