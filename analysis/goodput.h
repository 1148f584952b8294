/* agefence-report: the goodput of recovery policies on one run's failure history.
 *
 * The effective training time ratio (ETTR) is useful time over wall time. The useful time is
 * the run's service, T = sim_hours x 3600 s (a fleet that never failed would have trained all
 * of it); each policy adds its own losses to it:
 *   remap               what agefence did in the run: the steps every block replayed (global
 *                       rollbacks), for each step that replayed blocks alone the mean number
 *                       of steps they replayed (the synchronous job waits for them), and the
 *                       measured extra time of the steps with moves over the quiet steps'
 *                       median, all in steps of step_s;
 *   shrink_rebuild      per interruption, a communicator shrink, a repartition of the lost
 *                       share and the step in flight: shrink_s + repartition_s + step_s;
 *   checkpoint_restart  checkpoints every tau = sqrt(2 checkpoint_s M) (Young's interval for
 *                       the run's own mean time between interruptions M = T / n), each costing
 *                       checkpoint_s, and per interruption half an interval of lost work and a
 *                       restart: wall = T (1 + checkpoint_s / tau) + n (tau / 2 + restart_s).
 * Job-level interruptions (a software bug, the network, an NCCL watchdog timeout, a silent data
 * corruption, a dependency: common/log_schema.h) lose no hardware, but the job's processes or
 * its state are gone: nothing is there to remap or shrink away. remap and shrink_rebuild
 * therefore keep checkpoints for them alone, at Young's interval for the mean time between
 * job-level interruptions, and pay for each of them what checkpoint_restart pays (half an
 * interval and a restart); their hardware losses they recover as above. checkpoint_restart
 * treats every interruption alike. With no job-level interruption remap and shrink_rebuild keep
 * no checkpoint. A device memory error (cause hbm) is not job-level: remap restores the device's
 * blocks in place (its cost is in the run's lost steps), shrink_rebuild pays it as a hardware
 * interruption.
 * With no interruption every ratio is 1 (and no checkpoint is needed). */
#ifndef AF_GOODPUT_H
#define AF_GOODPUT_H

#include <stdint.h>

typedef struct af_goodput_params {
    double step_s;
    double checkpoint_s;
    double restart_s;
    double shrink_s;
    double repartition_s;
} af_goodput_params_t;

/* The [goodput] keys' built-in defaults (sim/config.c). */
void af_goodput_defaults(af_goodput_params_t *p);
/* The [goodput] section of a resolved scenario's text (the log's /@config); keys it lacks keep
 * what p holds. */
void af_goodput_parse(af_goodput_params_t *p, const char *config_text);

/* job: the job-level interruptions; *job_interval_s gets their checkpoint interval (0 with
 * none). shrink's hardware: the interruptions that lost hardware. */
double af_goodput_remap(double useful_s, double lost_steps, int64_t job,
                        const af_goodput_params_t *p, double *job_interval_s);
double af_goodput_shrink(double useful_s, int64_t hardware, int64_t job,
                         const af_goodput_params_t *p, double *job_interval_s);
/* *interval_s gets tau (0 with no interruption). */
double af_goodput_checkpoint(double useful_s, int64_t interruptions, const af_goodput_params_t *p,
                             double *interval_s);

#endif
