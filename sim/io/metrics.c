#include "metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/af_alloc.h"
#include "../../common/percentile.h"
#include "version.h"

#define METRICS_CAP 16384

/* A label value with \, " and newlines escaped, as the exposition format wants. */
static void escape(char *out, size_t n, const char *v)
{
    size_t j = 0;
    for (size_t i = 0; v[i] != '\0' && j + 3 < n; ++i) {
        char c = v[i];
        if (c == '\\' || c == '"') {
            out[j++] = '\\';
            out[j++] = c;
        } else if (c == '\n') {
            out[j++] = '\\';
            out[j++] = 'n';
        } else {
            out[j++] = c;
        }
    }
    out[j] = '\0';
}

/* Writes buf[0..len) to m->tmp and renames it over m->path: 0, or errno (the temporary file
 * removed). */
static int write_atomically(const af_metrics_t *m, size_t len)
{
    int fd = open(m->tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0 && write(fd, m->buf, len) == (ssize_t)len && close(fd) == 0 &&
        rename(m->tmp, m->path) == 0) {
        return 0;
    }
    int e = errno;
    if (fd >= 0) {
        unlink(m->tmp);
    }
    return e;
}

af_result_t af_metrics_check_path(const char *path)
{
    char tmp[700];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        af_error_set("metrics.textfile = '%s': cannot write it: %s", path, strerror(errno));
        return AF_ERR_USAGE;
    }
    close(fd);
    unlink(tmp);
    return AF_OK;
}

af_result_t af_metrics_open(af_metrics_t *m, const char *path, const char *scenario,
                            const char *compute, const char *fabric, int ranks)
{
    memset(m, 0, sizeof *m);
    if (strlen(path) >= sizeof m->path) {
        af_error_set("metrics.textfile: a path of at most %zu characters", sizeof m->path - 1);
        return AF_ERR_USAGE;
    }
    snprintf(m->path, sizeof m->path, "%s", path);
    snprintf(m->tmp, sizeof m->tmp, "%s.%ld.tmp", path, (long)getpid());
    char sc[160];
    char job[96];
    escape(sc, sizeof sc, scenario);
    const char *j = getenv("SLURM_JOB_ID");
    if (j == NULL) {
        j = getenv("SLURM_JOBID");
    }
    if (j != NULL && j[0] != '\0') {
        escape(job, sizeof job, j);
        snprintf(m->labels, sizeof m->labels, "job=\"%s\",scenario=\"%s\"", job, sc);
    } else {
        snprintf(m->labels, sizeof m->labels, "scenario=\"%s\"", sc);
    }
    snprintf(m->info, sizeof m->info, "version=\"%s\",compute=\"%s\",fabric=\"%s\",ranks=\"%d\"",
             af_version, compute, fabric, ranks);
    m->cap = METRICS_CAP;
    m->buf = af_alloc(m->cap);
    if (m->buf == NULL) {
        return AF_ERR_NOMEM;
    }
    /* The first file, now: a bad path stops the run before it starts. */
    af_metrics_view_t v;
    memset(&v, 0, sizeof v);
    v.exit_code = -1;
    int e = write_atomically(m, af_metrics_format(m, &v, m->buf, m->cap));
    if (e != 0) {
        af_error_set("metrics.textfile = '%s': cannot write it: %s", path, strerror(e));
        af_free(m->buf);
        m->buf = NULL;
        return AF_ERR_USAGE;
    }
    return AF_OK;
}

void af_metrics_step(af_metrics_t *m, double period_us, double sink_us, double throttle_us)
{
    m->window[m->n % AF_METRICS_WINDOW] = period_us * 1e-6;
    m->n++;
    m->period_sum += period_us * 1e-6;
    m->sink_s += sink_us * 1e-6;
    m->throttle_s += throttle_us * 1e-6;
}

typedef struct emit {
    char *out;
    size_t size;
    size_t n;
} emit_t;

static void put(emit_t *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(emit_t *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(e->size > e->n ? e->out + e->n : NULL, e->size > e->n ? e->size - e->n : 0,
                      fmt, ap);
    va_end(ap);
    if (w > 0) {
        e->n += (size_t)w;
    }
}

static void head(emit_t *e, const char *name, const char *type, const char *help)
{
    put(e, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void gauge(emit_t *e, const af_metrics_t *m, const char *name, const char *help, double v)
{
    head(e, name, "gauge", help);
    put(e, "%s{%s} %.17g\n", name, m->labels, v);
}

static void counter(emit_t *e, const af_metrics_t *m, const char *name, const char *help, double v)
{
    head(e, name, "counter", help);
    put(e, "%s{%s} %.17g\n", name, m->labels, v);
}

size_t af_metrics_format(af_metrics_t *m, const af_metrics_view_t *v, char *out, size_t size)
{
    emit_t e = {out, size, 0};
    const char *L = m->labels;
    head(&e, "agefence_info", "gauge", "The run's version, backends and ranks (value 1).");
    put(&e, "agefence_info{%s,%s} 1\n", L, m->info);
    gauge(&e, m, "agefence_running", "1 while the run goes on, 0 once it has finished.",
          v->finished ? 0 : 1);
    gauge(&e, m, "agefence_exit_code", "The run's exit status (-1 while it runs).",
          v->finished ? v->exit_code : -1);
    gauge(&e, m, "agefence_step", "Executed steps so far (replays after a rollback count).",
          (double)v->step);
    gauge(&e, m, "agefence_state_step", "Logical step of the committed state.",
          (double)v->state_step);
    gauge(&e, m, "agefence_steps_planned", "Logical steps the scenario runs.",
          (double)v->steps_planned);

    /* Step period: quantiles over the last AF_METRICS_WINDOW steps, sum and count over all. */
    int64_t w = m->n < AF_METRICS_WINDOW ? m->n : AF_METRICS_WINDOW;
    memcpy(m->sorted, m->window, sizeof(double) * (size_t)w);
    af_sort_doubles(m->sorted, (size_t)w);
    head(&e, "agefence_step_period_seconds", "summary",
         "Rank 0's step period, start to start (quantiles over the last 1024 steps).");
    static const double qs[] = {0.5, 0.9, 0.99};
    for (int i = 0; i < 3; ++i) {
        double q = w > 0 ? af_percentile_sorted(m->sorted, (size_t)w, qs[i] * 100.0) : NAN;
        put(&e, "agefence_step_period_seconds{%s,quantile=\"%g\"} %.17g\n", L, qs[i], q);
    }
    put(&e, "agefence_step_period_seconds_sum{%s} %.17g\n", L, m->period_sum);
    put(&e, "agefence_step_period_seconds_count{%s} %lld\n", L, (long long)m->n);

    gauge(&e, m, "agefence_blackout_ratio", "Dead units over all units after the last step.",
          v->blackout);
    gauge(&e, m, "agefence_blackout_max_ratio", "Largest blackout so far.", v->max_blackout);
    head(&e, "agefence_units", "gauge",
         "Units by state after the last step (straggler: declared slow, still healthy).");
    put(&e, "agefence_units{%s,state=\"healthy\"} %lld\n", L, (long long)v->healthy);
    put(&e, "agefence_units{%s,state=\"fading\"} %lld\n", L, (long long)v->fading);
    put(&e, "agefence_units{%s,state=\"dead\"} %lld\n", L, (long long)v->dead);
    put(&e, "agefence_units{%s,state=\"straggler\"} %lld\n", L, (long long)v->straggler);
    gauge(&e, m, "agefence_slow_units", "Live units running slower than nominal (throttled).",
          (double)v->slow);

    counter(&e, m, "agefence_corruptions_injected_total",
            "Corrupted output elements injected (summed over ranks up to counters_step).",
            (double)v->injected);
    counter(&e, m, "agefence_corruptions_detected_total",
            "Injected corruptions caught (up to counters_step).", (double)v->detected);
    counter(&e, m, "agefence_fenced_total",
            "Slot results fenced by containment (up to "
            "counters_step).",
            (double)v->fenced);
    counter(&e, m, "agefence_retried_total",
            "Blocks recomputed within their step (up to "
            "counters_step).",
            (double)v->retried);
    counter(&e, m, "agefence_sdc_undetected_total",
            "Finite corruptions committed (up to counters_step).", (double)v->sdc);
    gauge(&e, m, "agefence_counters_step",
          "Last step of the per-rank counters above (they arrive with each log flush).",
          (double)v->counters_step);
    counter(&e, m, "agefence_nonfinite_leaked_total", "NaN/Inf values committed to state.",
            (double)v->leaked);
    head(&e, "agefence_moves_total", "counter", "Block moves by kind.");
    put(&e, "agefence_moves_total{%s,kind=\"drain\"} %lld\n", L, (long long)v->drains);
    put(&e, "agefence_moves_total{%s,kind=\"restore\"} %lld\n", L, (long long)v->restores);
    put(&e, "agefence_moves_total{%s,kind=\"retry\"} %lld\n", L, (long long)v->retry_moves);
    counter(&e, m, "agefence_rollbacks_total", "Coordinated rollbacks to the replica step.",
            (double)v->rollbacks);
    counter(&e, m, "agefence_replayed_steps_total", "Steps recomputed because of rollbacks.",
            (double)v->replayed);
    counter(&e, m, "agefence_sink_seconds_total", "Rank 0's pacing waits.", m->sink_s);
    counter(&e, m, "agefence_throttle_seconds_total", "Rank 0's modelled throttling delays.",
            m->throttle_s);
    return e.n;
}

void af_metrics_write(af_metrics_t *m, const af_metrics_view_t *v)
{
    if (m->buf == NULL) {
        return;
    }
    size_t len = af_metrics_format(m, v, m->buf, m->cap);
    const char *why = NULL;
    if (len >= m->cap) {
        why = "the metrics text outgrew its buffer";
    } else {
        int e = write_atomically(m, len);
        why = e != 0 ? strerror(e) : NULL;
    }
    if (why != NULL && !m->warned) {
        m->warned = 1;
        fprintf(stderr,
                "agefence: metrics.textfile '%s': cannot rewrite it (%s); the run goes on\n",
                m->path, why);
    }
}

void af_metrics_close(af_metrics_t *m)
{
    af_free(m->buf);
    m->buf = NULL;
}
