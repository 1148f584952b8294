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

double af_goodput_remap(double useful_s, double lost_steps, const af_goodput_params_t *p)
{
    return ettr(useful_s, lost_steps * p->step_s);
}

double af_goodput_shrink(double useful_s, int64_t n, const af_goodput_params_t *p)
{
    return ettr(useful_s, (double)n * (p->shrink_s + p->repartition_s + p->step_s));
}

double af_goodput_checkpoint(double useful_s, int64_t n, const af_goodput_params_t *p,
                             double *interval_s)
{
    *interval_s = 0.0;
    if (n <= 0 || !(useful_s > 0)) {
        return useful_s > 0 ? 1.0 : NAN;
    }
    double mtbi = useful_s / (double)n;
    double tau = sqrt(2.0 * p->checkpoint_s * mtbi);
    *interval_s = tau;
    double wall = useful_s + (tau > 0 ? useful_s * p->checkpoint_s / tau : 0.0) +
                  (double)n * (0.5 * tau + p->restart_s);
    return useful_s / wall;
}
