/* agefence-report: the goodput of recovery policies on one run's failure history, by replay
 * (analysis/replay.h, docs/goodput.md). The effective training time ratio (ETTR) of a policy is
 * the useful work it keeps over the run's window W (its simulated hours), replayed on the run's
 * interruptions at their drawn times with the [goodput] keys of the run's scenario. For each
 * policy the report gives the ETTR at the intervals that maximise it on this history (searched:
 * checkpoint_restart's and shrink_rebuild's checkpoint interval; remap's checkpoint interval for
 * the job-level interruptions and its replica interval for the hardware losses), and the ETTR
 * at Young's and at Daly's intervals for the history's mean time between the interruptions each
 * interval guards against. Nothing of the simulating machine's clock enters: the figures are a
 * function of the log and the scenario. */
#ifndef AF_GOODPUT_H
#define AF_GOODPUT_H

#include <stddef.h>
#include <stdint.h>

#include "../common/af_result.h"
#include "replay.h"

/* The [goodput] keys (common/goodput_keys.h names them: step_seconds, checkpoint_seconds, ...;
 * each field is the table's). */
typedef struct af_goodput_params {
    double step_s;
    double checkpoint_s;
    double restart_s;
    double shrink_s;
    double repartition_s;
    double replica_s;
    double detect_s;
    double remap_s;
    double replace_s;
    int64_t spare_nodes;
} af_goodput_params_t;

/* The [goodput] keys' built-in defaults (common/goodput_keys.h). */
void af_goodput_defaults(af_goodput_params_t *p);
/* The [goodput] section of a resolved scenario's text (the log's /@config); keys it lacks, or
 * values outside the table's bounds, keep what p holds. */
void af_goodput_parse(af_goodput_params_t *p, const char *config_text);
/* One "goodput.KEY=VALUE" (agefence-report --set) into p, checked as the config checks it (the
 * key exists, the value a number, an integer for spare_nodes, within the table's bounds).
 * AF_ERR_USAGE with one line naming the assignment and what is wrong (af_error_message). */
af_result_t af_goodput_set(af_goodput_params_t *p, const char *assignment);

/* The replay's parameters for g on a fleet of devices_per_node devices a node; tau_s and rho_s
 * infinite (no write). */
void af_goodput_replay_params(const af_goodput_params_t *g, int64_t devices_per_node,
                              af_replay_params_t *p);

/* One policy's goodput on a timeline. Intervals are seconds of work, the searched ones whole
 * multiples of step_s; INFINITY where the history has none of the interruptions an interval
 * guards against (no write needed), the window W where one interval over the whole window did
 * best (no write in the window).
 * replica_* are remap's; NaN for the other policies. */
typedef struct af_goodput_policy {
    double ettr;                     /* at the searched intervals: at.ettr */
    double interval_s;               /* the searched checkpoint interval */
    double replica_interval_s;       /* remap: the searched replica interval */
    af_replay_result_t at;           /* what the policy did at the searched intervals */
    double mtbi_s;                   /* W over the interruptions the checkpoint interval guards */
    double replica_mtbi_s;           /* remap: W over the hardware faults */
    double young_s, young_replica_s; /* Young's sqrt(2 delta M) for each interval, as computed */
    double daly_s, daly_replica_s;   /* Daly's higher-order interval for each, as computed */
    /* The whole steps each rounds to (af_replay_whole_steps: W where that reaches the window,
     * or nothing needs guarding), and the ETTR there: what a user can set. */
    double young_steps_s, young_replica_steps_s, young_ettr;
    double daly_steps_s, daly_replica_steps_s, daly_ettr;
    /* The capacity rule's share: capacity_bound when the lost capacity is more than every
     * other loss together (af_goodput_capacity_bound); spared_ettr the ETTR at the same
     * intervals with spare_nodes = af_goodput_t.spares_for_all, on the timeline those spares
     * give (a device back in service can be lost again): the caller's, who builds timelines
     * (analysis/summary.c); NaN where not computed or the spares are there already. */
    int capacity_bound;
    double spared_ettr;
} af_goodput_policy_t;

typedef struct af_goodput {
    af_goodput_policy_t pol[AF_REPLAY_NPOLICY]; /* by af_replay_policy_t */
    int64_t spares_for_all; /* the spare nodes that take back every device lost in [0, W), on
                               the timeline with spares enough (0: not computed) */
} af_goodput_t;

/* 1 when a result's lost capacity exceeds its lost work, writes and recoveries together. */
int af_goodput_capacity_bound(const af_replay_result_t *r);

/* The starting points of a search (af_replay_optimise) for one history or a group: Daly's pair
 * (the reference on a tie), Young's pair, the two mixed pairs, each interval alone with the
 * other writing nothing in the window W, and no write at all. A policy with one level passes
 * NaN for the replica intervals. Returns the count. */
enum { AF_GOODPUT_NCAND = 9 };
int af_goodput_candidates(double young_s, double young_rho_s, double daly_s, double daly_rho_s,
                          double W, double cand[AF_GOODPUT_NCAND][2]);

/* Replays every policy on tl with p (tau_s and rho_s ignored): Young's and Daly's intervals
 * rounded to whole steps of p->step_s, and the search over whole steps from them
 * (af_replay_optimise: remap's two intervals together), so the searched ETTR is never below
 * Young's or Daly's. Errors as af_replay_run. */
af_result_t af_goodput_replay(const af_replay_timeline_t *tl, const af_replay_params_t *p,
                              af_goodput_t *out);

/* The ETTR of policy on tl with p at the intervals tau_s (and rho_s): for a window cut short
 * (the goodput over time). Errors as af_replay_run. */
af_result_t af_goodput_at(const af_replay_timeline_t *tl, const af_replay_params_t *p,
                          af_replay_policy_t policy, double tau_s, double rho_s,
                          af_replay_result_t *out);

/* The unit of a line of intervals: 1 (hours) when every x[i] below the window W is 10 h or
 * more, else 0 (seconds), so that one line never mixes them. */
int af_goodput_hours(const double *x, int n, double W);
/* An interval as the reports say it, in the line's unit: "996 s" (hours: "21.2 h"), "none
 * needed" where nothing needs guarding against (x infinite), "none in the window" where one
 * interval over the whole window W did best (no write); af_goodput_interval_text with "every "
 * before a number. Return buf. */
const char *af_goodput_duration_text(char *buf, size_t n, double x, double W, int hours);
const char *af_goodput_interval_text(char *buf, size_t n, double x, double W, int hours);

#endif
