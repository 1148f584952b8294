#include "goodput.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void af_goodput_defaults(af_goodput_params_t *p)
{
    p->step_s = 10.0;
    p->checkpoint_s = 60.0;
    p->restart_s = 600.0;
    p->shrink_s = 2.0;
    p->repartition_s = 30.0;
}

void af_goodput_parse(af_goodput_params_t *p, const char *text)
{
    const char *at = text != NULL ? strstr(text, "\n[goodput]\n") : NULL;
    if (at == NULL) {
        return;
    }
    at += strlen("\n[goodput]\n");
    static const char *const keys[] = {"step_seconds", "checkpoint_seconds", "restart_seconds",
                                       "shrink_seconds", "repartition_seconds"};
    double *dst[] = {&p->step_s, &p->checkpoint_s, &p->restart_s, &p->shrink_s, &p->repartition_s};
    /* key = value lines up to the next section */
    while (*at != '\0' && *at != '[') {
        const char *end = strchr(at, '\n');
        size_t len = end != NULL ? (size_t)(end - at) : strlen(at);
        char line[256];
        if (len < sizeof line) {
            memcpy(line, at, len);
            line[len] = '\0';
            for (size_t k = 0; k < sizeof keys / sizeof keys[0]; ++k) {
                size_t kl = strlen(keys[k]);
                double v = 0;
                if (strncmp(line, keys[k], kl) == 0 && sscanf(line + kl, " = %lf", &v) == 1 &&
                    isfinite(v) && v >= 0) {
                    *dst[k] = v;
                }
            }
        }
        if (end == NULL) {
            break;
        }
        at = end + 1;
    }
}

static double ettr(double useful_s, double lost_s)
{
    return useful_s > 0 ? useful_s / (useful_s + (lost_s > 0 ? lost_s : 0.0)) : NAN;
}

/* What checkpoints for n interruptions cost over the useful time: a checkpoint every tau
 * (Young's interval for the mean time between them), and per interruption half an interval of
 * lost work and a restart. *interval_s gets tau (0 with none). */
static double checkpoint_loss(double useful_s, int64_t n, const af_goodput_params_t *p,
                              double *interval_s)
{
    *interval_s = 0.0;
    if (n <= 0 || !(useful_s > 0)) {
        return 0.0;
    }
    double tau = sqrt(2.0 * p->checkpoint_s * (useful_s / (double)n));
    *interval_s = tau;
    return (tau > 0 ? useful_s * p->checkpoint_s / tau : 0.0) +
           (double)n * (0.5 * tau + p->restart_s);
}

double af_goodput_remap(double useful_s, double lost_steps, int64_t job,
                        const af_goodput_params_t *p, double *job_interval_s)
{
    double ck = checkpoint_loss(useful_s, job, p, job_interval_s);
    return ettr(useful_s, lost_steps * p->step_s + ck);
}

double af_goodput_shrink(double useful_s, int64_t hardware, int64_t job,
                         const af_goodput_params_t *p, double *job_interval_s)
{
    double ck = checkpoint_loss(useful_s, job, p, job_interval_s);
    return ettr(useful_s, (double)hardware * (p->shrink_s + p->repartition_s + p->step_s) + ck);
}

double af_goodput_checkpoint(double useful_s, int64_t n, const af_goodput_params_t *p,
                             double *interval_s)
{
    *interval_s = 0.0;
    if (n <= 0 || !(useful_s > 0)) {
        return useful_s > 0 ? 1.0 : NAN;
    }
    double loss = checkpoint_loss(useful_s, n, p, interval_s);
    return useful_s / (useful_s + loss);
}
