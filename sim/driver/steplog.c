/* agefence driver: the step log (DESIGN "One step", 6) — rank 0's rows of /events and
 * /interruptions within a step, and the log phase: every rank batches its payload, the batch
 * is gathered to rank 0 every flush_interval steps, and rank 0 writes its /steps rows and the
 * live metrics. The bottom of the driver: it calls only sim/io. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/af_alloc.h"
#include "../../common/af_time.h"
#include "../../common/log_schema.h"
#include "../../fabric/fabric.h"
#include "../../kernels/kernels.h"
#include "../io/backend.h"
#include "../io/config.h"
#include "../io/launch.h"
#include "../io/version.h"
#include "../plan/placement.h"
#include "run_internal.h"
#include "../io/stop.h"

/* Rank 0: appends one event row of this step. */
static void log_row(af_run_state_t *r, af_event_row_t *e, const char *kind)
{
    e->step = r->s.tick;
    /* The kind, cut to the field and ended (the rest of the row was zeroed): what snprintf
     * would write, without bringing printf's code into every step that logs an event. */
    size_t n = strlen(kind);
    n = n < sizeof e->kind - 1 ? n : sizeof e->kind - 1;
    memcpy(e->kind, kind, n);
    e->kind[n] = '\0';
    if (af_log_event(r->slog.log, e) != AF_OK) {
        /* The run goes on (the steps are still logged); the loss is counted into /final and the
         * summary, and said once here. */
        if (r->slog.event_log_errors++ == 0) {
            fprintf(stderr,
                    "agefence: rank 0: the log lost an event (step %lld, %s): %s; further losses "
                    "are counted in /final@event_log_errors\n",
                    (long long)r->s.tick, kind, af_error_message());
        }
    }
}

void af_step_event(af_run_state_t *r, const char *kind, int64_t block, int64_t from_slot,
                   int64_t to_slot, int64_t detail)
{
    if (r->slog.log == NULL) {
        return;
    }
    af_event_row_t e;
    memset(&e, 0, sizeof e);
    e.block = block;
    const af_placement_t *p = &r->s.pl;
    e.from_device = from_slot >= 0 ? af_slot_device(p, from_slot) : -1;
    e.from_unit = from_slot >= 0 ? af_slot_unit(p, from_slot) % p->units : -1;
    e.from_slot = from_slot >= 0 ? from_slot % p->capacity : -1;
    e.to_device = to_slot >= 0 ? af_slot_device(p, to_slot) : -1;
    e.to_unit = to_slot >= 0 ? af_slot_unit(p, to_slot) % p->units : -1;
    e.to_slot = to_slot >= 0 ? to_slot % p->capacity : -1;
    e.detail = detail;
    log_row(r, &e, kind);
}

/* Rank 0: one row of /interruptions in this step (its hours: those the step ends at, as its
 * /steps row says; a step whose plan found the capacity exhausted stops before it serves its
 * hours, so its row keeps the previous step's), at time_h as the model drew it. Called from
 * af_plan(), after plan.exhausted. */
static void log_intr_row(af_run_state_t *r, int cause, int64_t device, int64_t node, double time_h)
{
    double hours =
        r->prog.sim_hours + (r->health.plan.exhausted ? 0.0 : r->s.cfg.sim_hours_per_step);
    af_intr_row_t row = {r->s.tick, hours, cause, device, node, time_h};
    if (af_log_interruption(r->slog.log, &row) != AF_OK && r->slog.event_log_errors++ == 0) {
        fprintf(stderr,
                "agefence: rank 0: the log lost an interruption (step %lld): %s; further losses "
                "are counted in /final@event_log_errors\n",
                (long long)r->s.tick, af_error_message());
    }
}

/* The interruption cause (AF_INTR_*) of a death. */
static int death_intr_cause(const af_health_change_t *c)
{
    int link = c->cause == AF_CAUSE_LINK || c->cause == AF_CAUSE_LINK_DOWN;
    return c->cause == AF_CAUSE_DEVICE     ? AF_INTR_device
           : c->cause == AF_CAUSE_NODE     ? AF_INTR_node
           : link                          ? AF_INTR_link
           : c->cause == AF_CAUSE_SCRIPTED ? AF_INTR_scripted
           : c->cause == AF_CAUSE_SUDDEN   ? AF_INTR_sudden
                                           : AF_INTR_wearout;
}

/* Rank 0: the interruption the death ch[i] makes, unless the step counted it already: one per
 * node lost, per device lost, and per device whose units died of one other cause (the grouping
 * agefence-report applies to /events, analysis/interrupts.h). Its time is the earliest of the
 * deaths it counts: the model's changes are by ascending unit, so those of one device follow
 * ch[i] (those of a node's units all carry the node's loss time). */
void af_log_death_interruption(af_run_state_t *r, const af_health_change_t *ch, int64_t i,
                               int64_t n)
{
    const int64_t dpn = r->s.cfg.devices_per_node;
    const af_health_change_t *c = &ch[i];
    const int64_t dev = c->unit / r->s.U;
    int cause = death_intr_cause(c);
    if (cause == AF_INTR_node) {
        if (r->health.intr_node_tick[dev / dpn] == r->s.tick) {
            return;
        }
        r->health.intr_node_tick[dev / dpn] = r->s.tick;
    } else {
        /* One word a device (step and causes): one line of the fleet's tables per death. */
        const uint64_t now = (uint64_t)(r->s.tick + 1) << 16;
        uint64_t memo = r->health.intr_dev_memo[dev];
        memo = (memo & ~UINT64_C(0xffff)) == now ? memo : now;
        if (memo & (UINT64_C(1) << cause)) {
            return;
        }
        r->health.intr_dev_memo[dev] = memo | (UINT64_C(1) << cause);
    }
    double time_h = c->time_h;
    for (int64_t j = i + 1; j < n && ch[j].unit / r->s.U == dev; ++j) {
        if (ch[j].state != AF_FADING && death_intr_cause(&ch[j]) == cause &&
            ch[j].time_h < time_h) {
            time_h = ch[j].time_h;
        }
    }
    log_intr_row(r, cause, cause == AF_INTR_node ? -1 : dev, dev / dpn, time_h);
}

/* Rank 0: a job-level interruption's event: from_device is the device it struck, or the first
 * device of the node it struck, or -1 (the job); detail is its cause (AF_INTR_*). */
void af_log_interrupt(af_run_state_t *r, const af_jobintr_hit_t *x)
{
    if (r->slog.log == NULL) {
        return;
    }
    af_event_row_t e;
    memset(&e, 0, sizeof e);
    e.block = -1;
    e.from_device = x->device >= 0 ? x->device
                    : x->node >= 0 ? x->node * r->s.cfg.devices_per_node
                                   : -1;
    e.from_unit = e.from_slot = e.to_device = e.to_unit = e.to_slot = -1;
    e.detail = x->cause;
    log_row(r, &e, "interrupt");
    log_intr_row(r, x->cause, x->device, x->node, x->time_h);
}

/* Rank 0: the rows of `n` buffered steps get every rank's counters and phase times (gathered
 * into r->slog.all, rank-major) and go to the log, which then writes and commits them. */
static af_result_t write_rows(af_run_state_t *r, int64_t n)
{
    const int R = r->s.world.size;
    const int64_t cap = r->s.cfg.flush_interval + 1;
    for (int64_t k = 0; k < n; ++k) {
        af_step_row_t *row = &r->slog.rows[k];
        for (int q = 0; q < R; ++q) {
            const af_payload_t *p = &r->slog.all[(size_t)q * (size_t)cap + (size_t)k];
            row->corrupt_injected += p->count[CNT_INJECTED];
            row->corrupt_detected += p->count[CNT_DETECTED];
            row->fenced += p->count[CNT_FENCED];
            row->retried += p->count[CNT_RETRIED];
            row->sdc_undetected += p->count[CNT_SDC];
            row->sdc_harmful += p->count[CNT_SDC_HARMFUL];
            row->corrupt_harmful += p->count[CNT_HARMFUL];
            row->detected_finite += p->count[CNT_DET_FINITE];
            row->detected_abft += p->count[CNT_DET_ABFT];
            row->detected_twin += p->count[CNT_DET_TWIN];
            row->abft_false_alarms += p->count[CNT_ABFT_FALSE];
            row->twins += p->count[CNT_TWINS];
            row->unverified_commits += p->count[CNT_UNVERIFIED];
            row->allocs_after_init += p->count[CNT_ALLOCS];
            row->halo_bytes += p->count[CNT_HALO_BYTES];
            row->replica_log_bytes += p->count[CNT_LOG_BYTES];
            row->comms_after_init += p->count[CNT_COMMS];
            for (int ph = 0; ph < AF_NPHASES; ++ph) {
                r->slog.phases[ph * R + q] = p->phase[ph];
            }
        }
        r->tally.sdc_total += row->sdc_undetected;
        r->slog.totals.corrupt_injected += row->corrupt_injected;
        r->slog.totals.corrupt_detected += row->corrupt_detected;
        r->slog.totals.fenced += row->fenced;
        r->slog.totals.retried += row->retried;
        r->slog.totals.unverified_commits += row->unverified_commits;
        r->slog.totals.sdc_harmful += row->sdc_harmful;
        r->slog.totals.corrupt_harmful += row->corrupt_harmful;
        r->slog.totals.detected_finite += row->detected_finite;
        r->slog.totals.detected_abft += row->detected_abft;
        r->slog.totals.detected_twin += row->detected_twin;
        r->slog.totals.abft_false_alarms += row->abft_false_alarms;
        r->slog.totals.quarantined_units += row->quarantined_units;
        r->slog.totals.twins += row->twins;
        r->slog.totals.moves_drain += row->moves_drain;
        r->slog.totals.moves_restore += row->moves_restore;
        r->slog.totals.moves_retry += row->moves_retry;
        r->slog.totals.rollbacks += row->rollbacks;
        r->slog.totals.replayed_steps += row->replayed_steps;
        r->slog.totals.replayed_blocks += row->replayed_blocks;
        r->slog.totals.replayed_block_steps += row->replayed_block_steps;
        /* Cumulative per rank, summed over the ranks: the last row holds the run's totals. */
        r->slog.totals.allocs_after_init = row->allocs_after_init;
        r->slog.totals.comms_after_init = row->comms_after_init;
        AF_CHECK(af_log_append(r->slog.log, row, r->slog.phases));
        r->slog.flushed_step = row->step;
    }
    /* The log's writer thread writes and commits them; the step goes on (it waits only for
     * the writer's previous batch, inside log_us). */
    return af_log_submit(r->slog.log);
}

/* The log phase. Every rank keeps its per-step payloads in a batch; rank 0 keeps the rows it
 * can fill alone (health, moves, diagnostics). Every flush_interval steps (and at the end) one
 * gather brings the batch to rank 0, which completes the rows and writes them, so a step costs
 * the log a few stores, not a collective. A step's own step_us and log_us are known only at
 * the next step: the newest entry waits for them. */
af_result_t af_step_log(af_run_state_t *r, int final)
{
    const int64_t cap = r->s.cfg.flush_interval + 1;
    if (r->slog.n_batch > 0) {
        af_payload_t *last = &r->slog.batch[r->slog.n_batch - 1];
        last->phase[AF_PHASE_step_us] = r->slog.prev_step_us;
        last->phase[AF_PHASE_log_us] = r->slog.prev_log_us;
        last->phase[AF_PHASE_sink_us] = r->thr.prev_sink_us;
    }
    if (!final) {
        r->s.mine.count[CNT_ALLOCS] = af_alloc_after_seal();
        r->s.mine.count[CNT_COMMS] = af_alloc_comms_after_seal();
        r->slog.batch[r->slog.n_batch] = r->s.mine;
        if (r->s.world.rank == 0) {
            af_step_row_t *row = &r->slog.rows[r->slog.n_batch];
            memset(row, 0, sizeof *row);
            row->step = r->s.tick;
            row->state_step = r->s.state_step;
            row->sim_hours = r->prog.sim_hours;
            row->mass = r->halo.mass_now;
            row->energy = r->halo.energy_now;
            row->dead_units = r->health.plan.dead;
            row->fading_units = r->health.plan.fading;
            row->straggler_units = r->thr.straggler_healthy;
            row->slow_units = r->thr.slow_units;
            row->healthy_units =
                r->s.units - r->health.plan.dead - r->health.plan.fading - r->thr.straggler_healthy;
            row->blackout_frac = (double)r->health.plan.dead / (double)r->s.units;
            row->moves_drain = r->tally.n_drain;
            row->moves_restore = r->tally.n_restore;
            row->moves_retry = r->tally.n_retry_moves;
            row->retried = r->tally.n_retry_moves;
            row->rollbacks = r->rc.rep.n_rollbacks;
            row->replayed_steps = r->rc.rep.n_replayed;
            row->replayed_blocks = r->tally.n_replayed_blocks;
            row->replayed_block_steps = r->tally.n_replayed_block_steps;
            row->nonfinite_leaked = r->tally.n_leaked;
            row->quarantined_units = r->rc.det.n_quarantined;
        }
        r->slog.n_batch++;
    }
    /* Complete entries: all but the newest, or all of them at the end. */
    int64_t complete = final ? r->slog.n_batch : r->slog.n_batch - 1;
    if (complete == 0 || (!final && complete < r->s.cfg.flush_interval)) {
        return AF_OK;
    }
    AF_CHECK(r->s.fab->ops->gather(r->s.fab, r->slog.batch, sizeof(af_payload_t) * (size_t)cap,
                                   r->slog.all, 0));
    if (r->s.world.rank == 0) {
        AF_CHECK(write_rows(r, complete));
        if (!final) {
            r->slog.rows[0] = r->slog.rows[complete];
        }
    }
    if (!final) {
        r->slog.batch[0] = r->slog.batch[complete];
    }
    r->slog.n_batch -= complete;
    return AF_OK;
}

/* ---- the run's root attributes and hostnames (rank 0 writes, at start-up) ---------------- */

af_result_t af_steplog_root_attrs(af_run_state_t *r)
{
    af_log_t *log = r->slog.log;
    char buf[256];
    size_t len = af_config_format(&r->s.cfg, NULL, 0);
    char *text = malloc(len + 1);
    if (text == NULL) {
        return AF_ERR_NOMEM;
    }
    af_config_format(&r->s.cfg, text, len + 1);
    af_result_t rc = af_log_attr_str(log, "/", "config", text);
    free(text);
    AF_CHECK(rc);
    AF_CHECK(af_log_attr_i64(log, "/", "schema_version", AF_SCHEMA_VERSION));
    AF_CHECK(af_log_attr_str(log, "/", "agefence_version", af_version));
    AF_CHECK(af_log_attr_str(log, "/", "git_revision", af_git_revision));
    AF_CHECK(af_log_attr_str(log, "/", "scenario", r->s.cfg.name));
    AF_CHECK(af_log_attr_i64(log, "/", "seed", r->s.cfg.seed));
    AF_CHECK(af_log_attr_i64(log, "/", "ranks", r->s.world.size));
    AF_CHECK(af_log_attr_i64(log, "/", "devices", r->s.D));
    AF_CHECK(af_log_attr_i64(log, "/", "units_per_device", r->s.cfg.units_per_device));
    AF_CHECK(af_log_attr_i64(log, "/", "blocks", r->s.B));
    AF_CHECK(af_log_attr_i64(log, "/", "block_len", r->s.T));
    AF_CHECK(af_log_attr_str(log, "/", "workload", r->s.wl->name));
    {
        af_wl_config_t wc = af_config_workload(&r->s.cfg);
        AF_CHECK(af_log_attr_i64(log, "/", "workload_dim", r->s.wl->features(&wc)));
    }
    AF_CHECK(af_log_attr_i64(log, "/", "capacity", r->s.pl.capacity));
    AF_CHECK(af_log_attr_i64(log, "/", "steps_planned", r->s.cfg.steps));
    AF_CHECK(af_log_attr_f64(log, "/", "max_blackout", r->s.cfg.max_blackout));
    AF_CHECK(af_log_attr_str(log, "/", "compute_backend", r->s.k->ops->name));
    AF_CHECK(af_log_attr_str(log, "/", "fabric_backend",
                             r->s.nccl != NULL ? r->s.nccl->ops->name : r->s.fab->ops->name));
    AF_CHECK(af_log_attr_str(log, "/", "backend_choice", r->graph.backend_why));
    AF_CHECK(af_log_attr_str(log, "/", "step_graph", r->graph.why));
    AF_CHECK(af_log_attr_str(log, "/", "kernel_path", r->s.k->path != NULL ? r->s.k->path : "?"));
    af_launch_info_t li;
    af_launch_info(&li);
    AF_CHECK(af_log_attr_str(log, "/", "launcher", li.launcher));
    AF_CHECK(af_log_attr_str(log, "/", "slurm_job_id", li.job_id));
    AF_CHECK(af_log_attr_str(log, "/", "slurm_job_name", li.job_name));
    AF_CHECK(af_log_attr_str(log, "/", "slurm_nodelist", li.nodelist));
    AF_CHECK(af_log_attr_str(log, "/", "slurm_tasks_per_node", li.tasks_per_node));
    AF_CHECK(af_log_attr_i64(log, "/", "slurm_ntasks", li.ntasks));
    AF_CHECK(af_log_attr_i64(log, "/", "slurm_nnodes", li.nnodes));
    AF_CHECK(af_log_attr_str(log, "/", "device_versions", af_device_versions()));
    af_iso_time(buf, sizeof buf);
    AF_CHECK(af_log_attr_str(log, "/", "start_time", buf));
    af_world_versions(buf, sizeof buf);
    AF_CHECK(af_log_attr_str(log, "/", "mpi_version", buf));
    /* The machine rank 0 ran on, for judging its timings. */
    AF_CHECK(af_log_attr_i64(log, "/host", "cores", sysconf(_SC_NPROCESSORS_ONLN)));
    AF_CHECK(af_log_attr_str(log, "/host", "mpi_version", buf));
    AF_CHECK(af_log_attr_str(log, "/host", "device_versions", af_device_versions()));
    double load[3] = {0, 0, 0};
    if (getloadavg(load, 3) > 0) {
        AF_CHECK(af_log_attr_f64(log, "/host", "loadavg_1min_before", load[0]));
        /* Rewritten in place at the end (sim/io/log.h): NaN in the log of a run that did not
         * finish. */
        AF_CHECK(af_log_attr_f64(log, "/host", "loadavg_1min_after", NAN));
    }
    /* Memory of the static layout vs a fault-free one (two buffers per block, no spare slots). */
    double slots = (double)r->s.D * (double)r->s.cfg.units_per_device * (double)r->s.pl.capacity;
    AF_CHECK(af_log_attr_f64(log, "/", "state_bytes_static",
                             slots * 2.0 * (double)r->s.T * sizeof(double)));
    AF_CHECK(af_log_attr_f64(log, "/", "state_bytes_fault_free",
                             (double)r->s.B * 2.0 * (double)r->s.T * sizeof(double)));
    /* What the ranks really hold for it: a pooled backend's buffers (two slots a block at
     * most, af_shard_pool_slots), else every slot's. It depends on the number of ranks. */
    double held = 0;
    for (int q = 0; q < r->s.world.size; ++q) {
        int64_t lo = 0;
        int64_t hi = 0;
        af_rank_devices(r->s.D, r->s.world.size, q, &lo, &hi);
        int64_t local = (hi - lo) * r->s.cfg.units_per_device * r->s.pl.capacity;
        held +=
            r->s.k->ops->release_slot != NULL ? af_shard_pool_slots(local, r->s.B) : (double)local;
    }
    AF_CHECK(af_log_attr_f64(log, "/", "state_bytes_held",
                             held * 2.0 * (double)r->s.T * sizeof(double)));
    return AF_OK;
}

af_result_t af_steplog_hostnames(af_run_state_t *r)
{
    char *names = NULL;
    if (r->s.world.rank == 0) {
        names = malloc((size_t)r->s.world.size * 64);
        if (names == NULL) {
            return AF_ERR_NOMEM;
        }
    }
    af_result_t rc = af_world_hostnames(&r->s.world, names);
    if (rc == AF_OK && r->s.world.rank == 0) {
        size_t cap = (size_t)r->s.world.size * 65 + 1;
        char *joined = malloc(cap);
        if (joined == NULL) {
            free(names);
            return AF_ERR_NOMEM;
        }
        joined[0] = '\0';
        size_t at = 0;
        for (int i = 0; i < r->s.world.size; ++i) {
            at += (size_t)snprintf(joined + at, cap - at, "%s%.*s", i ? "," : "", 63,
                                   names + (size_t)i * 64);
        }
        rc = af_log_attr_str(r->slog.log, "/", "hostnames", joined);
        free(joined);
    }
    free(names);
    return rc;
}
