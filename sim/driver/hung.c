/* agefence run: the end of a run whose step hung (the watchdog, run.step_timeout). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../fabric/fabric.h"
#include "../io/log.h"
#include "run_internal.h"

/* The watchdog fired (run.step_timeout): a wait of the step passed its deadline, so some rank
 * did not arrive. Every rank that timed out takes the census (fabric/fabric.h); rank 0, when
 * it is there, ends the log with /final@exit_reason = hung naming the ranks that did not
 * arrive and the step, says so, and ends the launch with exit status 8 (the stopped ranks with
 * it). Without rank 0 no /final can be written: the lowest rank that is there says so and ends
 * the launch. Never returns (run_internal.h). */
void af_run_end_hung(af_run_state_t *r)
{
    af_fabric_t *f = r->s.fab;
    const double timeout_s = r->s.cfg.step_timeout_s;
    /* The ranks that are there time out within a step's skew of each other: they wait for each
     * other up to the timeout itself, between 1 and 5 s. */
    double grace_s = timeout_s < 1.0 ? 1.0 : timeout_s > 5.0 ? 5.0 : timeout_s;
    const int n = f->size;
    uint8_t *arrived = calloc((size_t)n, 1); /* the run is ending: not af_alloc's to count */
    int64_t step = r->s.tick;
    char missing[200] = "";
    int n_missing = 0;
    int first_live = 0;
    int late = 0;
    if (arrived == NULL ||
        af_fabric_hung_census(f, r->s.tick, grace_s * 1e6, arrived, &step, &late) != AF_OK) {
        fprintf(stderr, "agefence: rank %d: the watchdog's census failed: %s\n", f->rank,
                af_error_message());
        af_world_abort(AF_EXIT_HUNG);
    }
    /* Counted out by the others (stopped, then continued while the launch ends): this rank did
     * not arrive in time, whatever it heard since. */
    arrived[f->rank] = late ? 0 : 1;
    for (int q = n - 1; q >= 0; --q) {
        first_live = arrived[q] ? q : first_live;
    }
    for (int q = 0; q < n; ++q) {
        if (!arrived[q]) {
            size_t at = strlen(missing);
            if (at + 16 < sizeof missing) {
                snprintf(missing + at, sizeof missing - at, "%s%d", n_missing ? "," : "", q);
            } else if (at + 4 < sizeof missing && missing[at - 1] != '.') {
                snprintf(missing + at, sizeof missing - at, ",...");
            }
            n_missing++;
        }
    }
    const char *who = n_missing > 0 ? missing : "none (every rank timed out)";
    if (f->rank == 0) {
        int64_t rows = -1;
        if (r->slog.log != NULL) {
            rows = af_log_rows(r->slog.log);
            af_log_attr_str(r->slog.log, "/final", "exit_reason", "hung");
            af_log_attr_i64(r->slog.log, "/final", "exit_code", AF_EXIT_HUNG);
            af_log_attr_i64(r->slog.log, "/final", "steps_completed", rows);
            af_log_attr_i64(r->slog.log, "/final", "hung_step", step);
            af_log_attr_str(r->slog.log, "/final", "hung_ranks", n_missing > 0 ? missing : "");
            af_log_attr_f64(r->slog.log, "/final", "step_timeout_s", timeout_s);
            af_log_close(&r->slog.log);
        }
        fprintf(stderr,
                "agefence: hung: step %lld did not complete within run.step_timeout = %g s; "
                "ranks that did not arrive: %s; the log holds %lld steps and says so "
                "(/final@exit_reason = hung); exit status %d\n",
                (long long)step, timeout_s, who, (long long)rows, AF_EXIT_HUNG);
        af_fabric_hung_word(f, arrived);
    } else if (arrived[0]) {
        /* Rank 0 writes the log and ends the launch: no word of this rank's, and no end of the
         * launch before the log is closed (up to 30 s for it). */
        af_fabric_hung_wait_word(f, 30e6);
    } else if (f->rank == first_live) {
        /* Rank 0 is told it was counted out, should it go on while the launch ends. */
        uint8_t *to = calloc((size_t)n, 1);
        if (to != NULL) {
            to[0] = 1;
            af_fabric_hung_word(f, to);
            free(to);
        }
        fprintf(stderr,
                "agefence: rank %d: hung: step %lld did not complete within run.step_timeout = "
                "%g s; ranks that did not arrive: %s. Rank 0 writes the log and is among them, "
                "so no /final could be written: the log holds the steps of its last flush; "
                "exit status %d\n",
                f->rank, (long long)step, timeout_s, who, AF_EXIT_HUNG);
    }
    fflush(stderr);
    free(arrived);
    if (f->rank != 0) {
        /* The launcher forwards a rank's last lines only while the launch lives: a moment for
         * them before it ends. */
        af_wait_us(500e3);
    }
    af_world_abort(AF_EXIT_HUNG);
    exit(AF_EXIT_HUNG);
}
