/* agefence-report DIR: an ensemble of runs of one scenario, read from a directory of logs
 * (scripts/ensemble.sh or configs/slurm/agefence-ensemble.sbatch write one). The members differ
 * in scenario.seed only, and in the keys DIR/grid names (one section.key a line, at most two):
 * members that share the grid's values form a group. Per group and policy: the ETTR searched on
 * each member's history, its mean, the mean's 95% interval (Student's t, cut to [0, 1]), p5,
 * p50 and p95; the
 * intervals that maximise the group's mean ETTR (one interval for every member: the setting to
 * choose), beside the ETTR at the members' Young's and Daly's intervals; interruptions by cause
 * per member against the record the scenario names (Garwood's interval of the group's total over
 * its members). Figures are functions of the logs and their scenarios; nothing of the machine's
 * clock enters, and the order the members were run in or how they were spread over ranks does
 * not change them (the members are taken in the order of their seeds, whatever their files are
 * called). */
#ifndef AF_ENSEMBLE_H
#define AF_ENSEMBLE_H

#include <stdint.h>
#include <stdio.h>

#include "../common/af_result.h"
#include "../common/log_schema.h"
#include "figures.h"
#include "goodput.h"

#define AF_ENSEMBLE_MAX_GRID 2

/* What the ensemble keeps of one member (its log is closed after reading). */
typedef struct af_ensemble_member {
    char path[1024];
    int64_t seed;
    int group;
    int unfinished;                       /* taken in by af_ensemble_opts_t.take_unfinished */
    char exit_reason[64];                 /* /final@exit_reason ("" without /final) */
    int64_t step, steps_planned;          /* the steps it simulated (-1: unknown), of its plan */
    double ettr[AF_REPLAY_NPOLICY];       /* searched on its own history */
    double young_ettr[AF_REPLAY_NPOLICY]; /* at its Young's intervals */
    double daly_ettr[AF_REPLAY_NPOLICY];  /* at its Daly's intervals */
    double daly_s[AF_REPLAY_NPOLICY];     /* its Daly checkpoint interval (INFINITY: none) */
    double daly_replica_s;                /* remap's Daly replica interval */
    double young_s[AF_REPLAY_NPOLICY];    /* its Young checkpoint interval (INFINITY: none) */
    double young_replica_s;               /* remap's Young replica interval */
    double interval_s[AF_REPLAY_NPOLICY]; /* the checkpoint interval searched on its history */
    double replica_interval_s;            /* remap's, searched on its history */
    int64_t interruptions;
    int64_t by_cause[AF_NINTR];
    double expected[AF_NINTR + 1]; /* the record's count scaled to it (NaN: no record) */
    double gpu_hours;              /* devices x simulated hours */
    af_replay_timeline_t tl;       /* its timeline (owned) */
    af_replay_params_t params;
} af_ensemble_member_t;

typedef struct af_ensemble_policy {
    double mean, ci_lo, ci_hi, p5, p50, p95, sd;
    double young_mean, daly_mean;  /* the mean ETTR at each member's Young's / Daly's intervals */
    double best_tau_s, best_rho_s; /* one interval for every member (rho: remap) */
    double best_mean;              /* the group's mean ETTR there */
} af_ensemble_policy_t;

typedef struct af_ensemble_group {
    char values[AF_ENSEMBLE_MAX_GRID][64]; /* the grid keys' values */
    int n;                                 /* members */
    af_ensemble_policy_t pol[AF_REPLAY_NPOLICY];
    double intr_mean[AF_NINTR + 1]; /* interruptions per member by cause, [AF_NINTR] all */
    double intr_lo[AF_NINTR + 1], intr_hi[AF_NINTR + 1];
    double record[AF_NINTR + 1]; /* the record's count scaled to a member (NaN: none) */
    int64_t devices;
    double sim_hours;
} af_ensemble_group_t;

/* What af_ensemble_load takes besides the directory. */
typedef struct af_ensemble_opts {
    const char *record;     /* as --record (NULL: the scenario's own) */
    int take_unfinished;    /* --with-unfinished: members that did not finish join, named so */
    const char *const *set; /* nset "goodput.KEY=VALUE" (--set): every member re-costed */
    int nset;
    /* --grid goodput.KEY=v1,v2,...: each member replayed once a value, one group a value (a
     * grid key beside DIR/grid's, at most AF_ENSEMBLE_MAX_GRID in all); NULL: none */
    const char *cost_key;
    const char *const *cost_values;
    int ncost;
} af_ensemble_opts_t;

/* A member left out: it did not finish its window (no /final, or stopped by a signal, an error
 * or the watchdog). */
typedef struct af_ensemble_left {
    char path[1024];
    char exit_reason[64]; /* "" without /final */
    int64_t step, steps_planned;
} af_ensemble_left_t;

typedef struct af_ensemble {
    char dir[1024];
    char scenario[128];
    char record[32];
    int ngrid;
    char grid[AF_ENSEMBLE_MAX_GRID][96];
    int cost_grid; /* the index of the --grid goodput key in grid (-1: none) */
    int ncosts;    /* its values (1 without): e->members holds each file once a value */
    char set[512]; /* the --set costs, as given ("": none) */
    int nmembers;  /* member files x ncosts */
    af_ensemble_member_t *members;
    int nleft; /* members left out, in name order */
    af_ensemble_left_t *left;
    int nunfinished; /* members that did not finish, taken in (take_unfinished) */
    int ngroups;
    af_ensemble_group_t *groups;
} af_ensemble_t;

/* Reads every *.h5 of dir and computes the ensemble's figures. Only whole runs join a group:
 * a member whose log has /final with exit reason completed, mismatch, leaked or
 * capacity_exhausted (its history ran to its end: the fleet running out is part of it); the
 * others (no /final, signal, error, no_progress) are left out and listed, unless
 * opt->take_unfinished. Bad input is AF_ERR_USAGE with one line naming the file
 * (af_error_message): no log in dir, a file that is not a readable agefence log, a member
 * without a goodput, a member of another scenario than the others (the odd one is named, beside
 * one of the majority), two members of one history (the same scenario, seed and build: a copy;
 * both named), no whole member, a bad DIR/grid; AF_ERR_NOMEM. opt may be NULL (the defaults).
 * af_ensemble_free releases it, also after a failure. */
af_result_t af_ensemble_load(af_ensemble_t *e, const char *dir, const af_ensemble_opts_t *opt);
void af_ensemble_free(af_ensemble_t *e);

/* The ensemble as text (agefence-report DIR) and as figures (--json). */
void af_ensemble_text(const af_ensemble_t *e, FILE *out);
af_result_t af_ensemble_figures(const af_ensemble_t *e, af_figs_t *f);
/* One CSV row per member (--plots): group values, seed and the three ETTRs. */
af_result_t af_ensemble_csv(const af_ensemble_t *e, FILE *out);

/* The 0.975 quantile of Student's t with df degrees of freedom (a table to 30, then an
 * expansion in 1/df good to 1e-3). */
double af_student_t975(int df);

#endif
