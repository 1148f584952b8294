#include "interrupts.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int64_t af_intr_derive(const af_event_row_t *ev, int64_t nev, int64_t devices_per_node,
                       af_intr_row_t *out)
{
    const int64_t per_node = devices_per_node > 0 ? devices_per_node : 1;
    int64_t n = 0;
    int64_t first = 0; /* the first row of the current step */
    int64_t step = INT64_MIN;
    for (int64_t e = 0; e < nev; ++e) {
        const af_event_row_t *x = &ev[e];
        if (x->step != step) {
            step = x->step;
            first = n;
        }
        if (strcmp(x->kind, "interrupt") == 0) {
            if (x->detail < AF_INTR_FIRST_JOB || x->detail > AF_INTR_hbm) {
                continue;
            }
            int grain = af_intr_grain[x->detail];
            int64_t at = x->from_device;
            af_intr_row_t r = {x->step, NAN, x->detail, -1, -1, NAN};
            if (at >= 0 && grain == AF_GRAIN_DEVICE) {
                r.device = at;
                r.node = at / per_node;
            } else if (at >= 0 && grain == AF_GRAIN_NODE) {
                r.node = at / per_node;
            }
            out[n++] = r;
            continue;
        }
        int death = strcmp(x->kind, "death") == 0;
        int sudden = strcmp(x->kind, "sudden") == 0;
        if (!death && !sudden) {
            continue;
        }
        int cause = x->detail == 4                     ? AF_INTR_device
                    : x->detail == 5                   ? AF_INTR_node
                    : x->detail == 8 || x->detail == 9 ? AF_INTR_link
                    : x->detail == 3                   ? AF_INTR_scripted
                    : sudden                           ? AF_INTR_sudden
                                                       : AF_INTR_wearout;
        af_intr_row_t r = {x->step, NAN, cause, x->from_device, -1, NAN};
        if (cause == AF_INTR_node) {
            r.device = -1;
            r.node = x->from_device >= 0 ? x->from_device / per_node : -1;
        } else {
            r.node = x->from_device >= 0 ? x->from_device / per_node : -1;
        }
        /* Once a step per group: the rows of this step so far (a step's deaths are few; a
         * device's or node's units come one after the other). */
        int known = 0;
        for (int64_t i = n - 1; i >= first && !known; --i) {
            known = out[i].cause == r.cause && out[i].device == r.device && out[i].node == r.node;
        }
        if (!known) {
            out[n++] = r;
        }
    }
    return n;
}
