/* agefence-report DIR: the ensemble as text, as figures (--json) and as CSV (--plots); the
 * figures themselves are analysis/ensemble.c's (see ensemble.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ensemble.h"
#include "summary.h"

/* ---- output ------------------------------------------------------------------------------- */

static const af_replay_policy_t ORDER[AF_REPLAY_NPOLICY] = {
    AF_REPLAY_CHECKPOINT_RESTART, AF_REPLAY_REMAP, AF_REPLAY_SHRINK_REBUILD};

void af_ensemble_text(const af_ensemble_t *e, FILE *out)
{
    int64_t smin = INT64_MAX;
    int64_t smax = INT64_MIN;
    for (int i = 0; i < e->nmembers; ++i) {
        smin = e->members[i].seed < smin ? e->members[i].seed : smin;
        smax = e->members[i].seed > smax ? e->members[i].seed : smax;
    }
    fprintf(out, "agefence ensemble report: %s\n", e->dir);
    fprintf(out, "  scenario     '%s', %d members (seeds %lld to %lld)", e->scenario,
            e->nmembers / e->ncosts, (long long)smin, (long long)smax);
    if (e->ngrid > 0) {
        fprintf(out, ", grid over %s%s%s", e->grid[0], e->ngrid > 1 ? " and " : "",
                e->ngrid > 1 ? e->grid[1] : "");
    }
    fprintf(out, "\n");
    if (e->set[0] != '\0') {
        fprintf(out,
                "  costs        %s (--set): every member's history replayed at these costs, not "
                "its scenario's\n",
                e->set);
    }
    if (e->cost_grid >= 0) {
        fprintf(out,
                "  cost grid    %s (--grid): every member's history replayed once a value, one "
                "group a value, nothing simulated again\n",
                e->grid[e->cost_grid]);
    }
    if (e->nleft > 0) {
        fprintf(out,
                "  left out     %d member%s that did not finish %s window, in no group "
                "(--with-unfinished takes them in):\n",
                e->nleft, e->nleft == 1 ? "" : "s", e->nleft == 1 ? "its" : "their");
        for (int i = 0; i < e->nleft; ++i) {
            const af_ensemble_left_t *l = &e->left[i];
            fprintf(out, "    %s: %s", l->path,
                    l->exit_reason[0] != '\0' ? l->exit_reason
                                              : "no /final (killed, or still running?)");
            if (l->step >= 0) {
                fprintf(out, " at step %lld", (long long)l->step);
                if (l->steps_planned > 0) {
                    fprintf(out, " of %lld", (long long)l->steps_planned);
                }
            }
            fprintf(out, "\n");
        }
    }
    if (e->nunfinished > 0) {
        fprintf(
            out, "  unfinished   %d member%s taken in by --with-unfinished, %s window cut short:\n",
            e->nunfinished, e->nunfinished == 1 ? "" : "s", e->nunfinished == 1 ? "its" : "their");
        for (int i = 0; i < e->nmembers; ++i) {
            const af_ensemble_member_t *m = &e->members[i];
            if (m->unfinished) {
                fprintf(out, "    %s: %s at step %lld of %lld\n", m->path,
                        m->exit_reason[0] != '\0' ? m->exit_reason : "no /final",
                        (long long)m->step, (long long)m->steps_planned);
            }
        }
    }
    fprintf(out, "  goodput      ETTR by replay (docs/goodput.md): per member at the intervals "
                 "searched on its own history; 'chosen' is one interval for every member of "
                 "the group, the one its mean is highest at\n");
    for (int g = 0; g < e->ngroups; ++g) {
        const af_ensemble_group_t *G = &e->groups[g];
        fprintf(out, "\nGROUP");
        for (int k = 0; k < e->ngrid; ++k) {
            fprintf(out, "%s %s = %s", k > 0 ? "," : "", e->grid[k], G->values[k]);
        }
        fprintf(out, "%s %d members, %lld devices, %.6g simulated hours\n", e->ngrid > 0 ? ":" : "",
                G->n, (long long)G->devices, G->sim_hours);
        fprintf(out, "  %-19s %7s %17s %7s %7s %7s %8s %8s   %s\n", "policy", "mean",
                "95% of the mean", "p5", "p50", "p95", "Young's", "Daly's",
                "chosen intervals: mean");
        const double W = G->sim_hours * 3600.0;
        for (int k = 0; k < AF_REPLAY_NPOLICY; ++k) {
            const af_ensemble_policy_t *P = &G->pol[ORDER[k]];
            char ci[48];
            char a[48];
            char b[48];
            const double xs[2] = {P->best_tau_s, P->best_rho_s};
            const int hours = af_goodput_hours(xs, ORDER[k] == AF_REPLAY_REMAP ? 2 : 1, W);
            if (isfinite(P->ci_lo)) {
                snprintf(ci, sizeof ci, "%.4f-%.4f", P->ci_lo, P->ci_hi);
            } else {
                snprintf(ci, sizeof ci, "- (1 member)");
            }
            fprintf(out, "  %-19s %7.4f %17s %7.4f %7.4f %7.4f %8.4f %8.4f   checkpoints %s",
                    af_replay_policy_name(ORDER[k]), P->mean, ci, P->p5, P->p50, P->p95,
                    P->young_mean, P->daly_mean,
                    af_goodput_interval_text(a, sizeof a, P->best_tau_s, W, hours));
            if (ORDER[k] == AF_REPLAY_REMAP) {
                fprintf(out, ", replicas %s",
                        af_goodput_interval_text(b, sizeof b, P->best_rho_s, W, hours));
            }
            fprintf(out, ": %.4f\n", P->best_mean);
        }
        fprintf(out, "  interruptions per member: mean [95%% interval]");
        int rec = isfinite(G->record[AF_NINTR]);
        if (rec) {
            fprintf(out, " against the record '%s' scaled (inside?)", e->record);
        }
        fprintf(out, "\n   ");
        for (int c = 0; c <= AF_NINTR; ++c) {
            if (c < AF_NINTR && G->intr_mean[c] == 0 && !isfinite(G->record[c])) {
                continue;
            }
            fprintf(out, " %s %.4g [%.4g, %.4g]", c < AF_NINTR ? af_intr_names[c] : "all",
                    G->intr_mean[c], G->intr_lo[c], G->intr_hi[c]);
            if (isfinite(G->record[c])) {
                int in = G->record[c] >= G->intr_lo[c] && G->record[c] <= G->intr_hi[c];
                fprintf(out, " %.4g %s", G->record[c], in ? "yes" : "NO");
            }
            fprintf(out, ";");
        }
        fprintf(out, "\n");
    }
    if (e->ngroups > 1) {
        fprintf(out, "\nMEAN ETTR ACROSS THE GRID\n  %-28s", e->grid[0]);
        for (int k = 0; k < AF_REPLAY_NPOLICY; ++k) {
            fprintf(out, " %19s", af_replay_policy_name(ORDER[k]));
        }
        fprintf(out, "\n");
        for (int g = 0; g < e->ngroups; ++g) {
            char label[160];
            snprintf(label, sizeof label, "%s%s%s", e->groups[g].values[0],
                     e->ngrid > 1 ? ", " : "", e->ngrid > 1 ? e->groups[g].values[1] : "");
            fprintf(out, "  %-28s", label);
            for (int k = 0; k < AF_REPLAY_NPOLICY; ++k) {
                fprintf(out, " %19.4f", e->groups[g].pol[ORDER[k]].mean);
            }
            fprintf(out, "\n");
        }
    }
}

af_result_t af_ensemble_figures(const af_ensemble_t *e, af_figs_t *f)
{
    af_figs_str(f, 0, "agefence-ensemble/1", "format");
    af_figs_str(f, 0, e->dir, "ensemble.dir");
    af_figs_str(f, 0, e->scenario, "ensemble.scenario");
    af_figs_int(f, 0, e->nmembers / e->ncosts, "ensemble.members");
    for (int k = 0; k < e->ngrid; ++k) {
        af_figs_str(f, 0, e->grid[k], "ensemble.grid.#%d", k);
    }
    if (e->ngrid == 0) {
        af_figs_empty_array(f, 0, "ensemble.grid");
    }
    if (e->set[0] != '\0') {
        af_figs_str(f, 0, e->set, "ensemble.set");
    } else {
        af_figs_null(f, 0, "ensemble.set");
    }
    if (e->cost_grid >= 0) {
        af_figs_str(f, 0, e->grid[e->cost_grid], "ensemble.cost_grid");
    } else {
        af_figs_null(f, 0, "ensemble.cost_grid");
    }
    af_figs_int(f, 0, e->nleft, "ensemble.left_out");
    af_figs_int(f, 0, e->nunfinished, "ensemble.unfinished_taken_in");
    for (int i = 0; i < e->nleft; ++i) {
        const af_ensemble_left_t *l = &e->left[i];
        const char *base = strrchr(l->path, '/');
        af_figs_str(f, 0, base != NULL ? base + 1 : l->path, "left_out.#%d.file", i);
        if (l->exit_reason[0] != '\0') {
            af_figs_str(f, 0, l->exit_reason, "left_out.#%d.exit_reason", i);
        } else {
            af_figs_null(f, 0, "left_out.#%d.exit_reason", i);
        }
        af_figs_int(f, 0, l->step, "left_out.#%d.step", i);
        af_figs_int(f, 0, l->steps_planned, "left_out.#%d.steps_planned", i);
    }
    if (e->nleft == 0) {
        af_figs_empty_array(f, 0, "left_out");
    }
    for (int g = 0; g < e->ngroups; ++g) {
        const af_ensemble_group_t *G = &e->groups[g];
        /* a value as the scenario gives it: a number where it is one */
        for (int k = 0; k < e->ngrid; ++k) {
            char *end = NULL;
            double v = strtod(G->values[k], &end);
            if (end != G->values[k] && *end == '\0' && isfinite(v)) {
                af_figs_real(f, 0, v, "groups.#%d.values.#%d", g, k);
            } else {
                af_figs_str(f, 0, G->values[k], "groups.#%d.values.#%d", g, k);
            }
        }
        if (e->ngrid == 0) {
            af_figs_empty_array(f, 0, "groups.#%d.values", g);
        }
        af_figs_int(f, 0, G->n, "groups.#%d.members", g);
        af_figs_int(f, 0, G->devices, "groups.#%d.devices", g);
        af_figs_real(f, 0, G->sim_hours, "groups.#%d.sim_hours", g);
        for (int k = 0; k < AF_REPLAY_NPOLICY; ++k) {
            const af_ensemble_policy_t *P = &G->pol[k];
            const char *n = af_replay_policy_name((af_replay_policy_t)k);
            af_figs_real(f, 0, P->mean, "groups.#%d.goodput.%s.mean", g, n);
            af_figs_real(f, 0, P->ci_lo, "groups.#%d.goodput.%s.ci_low", g, n);
            af_figs_real(f, 0, P->ci_hi, "groups.#%d.goodput.%s.ci_high", g, n);
            af_figs_real(f, 0, P->sd, "groups.#%d.goodput.%s.sd", g, n);
            af_figs_real(f, 0, P->p5, "groups.#%d.goodput.%s.p5", g, n);
            af_figs_real(f, 0, P->p50, "groups.#%d.goodput.%s.p50", g, n);
            af_figs_real(f, 0, P->p95, "groups.#%d.goodput.%s.p95", g, n);
            af_figs_real(f, 0, P->young_mean, "groups.#%d.goodput.%s.young_mean", g, n);
            af_figs_real(f, 0, P->daly_mean, "groups.#%d.goodput.%s.daly_mean", g, n);
            af_figs_real(f, 0, P->best_tau_s, "groups.#%d.goodput.%s.chosen.interval_s", g, n);
            if (k == AF_REPLAY_REMAP) {
                af_figs_real(f, 0, P->best_rho_s, "groups.#%d.goodput.%s.chosen.replica_interval_s",
                             g, n);
            }
            af_figs_real(f, 0, P->best_mean, "groups.#%d.goodput.%s.chosen.mean", g, n);
        }
        for (int c = 0; c <= AF_NINTR; ++c) {
            const char *n = c < AF_NINTR ? af_intr_names[c] : "all";
            af_figs_real(f, 0, G->intr_mean[c], "groups.#%d.interruptions.%s.mean", g, n);
            af_figs_real(f, 0, G->intr_lo[c], "groups.#%d.interruptions.%s.ci_low", g, n);
            af_figs_real(f, 0, G->intr_hi[c], "groups.#%d.interruptions.%s.ci_high", g, n);
            af_figs_real(f, 0, G->record[c], "groups.#%d.interruptions.%s.record", g, n);
        }
    }
    for (int i = 0; i < e->nmembers; ++i) {
        const af_ensemble_member_t *m = &e->members[i];
        const char *base = strrchr(m->path, '/');
        af_figs_str(f, 0, base != NULL ? base + 1 : m->path, "members.#%d.file", i);
        af_figs_int(f, 0, m->seed, "members.#%d.seed", i);
        af_figs_int(f, 0, m->group, "members.#%d.group", i);
        af_figs_bool(f, 0, m->unfinished, "members.#%d.unfinished", i);
        for (int k = 0; k < AF_REPLAY_NPOLICY; ++k) {
            af_figs_real(f, 0, m->ettr[k], "members.#%d.ettr.%s", i,
                         af_replay_policy_name((af_replay_policy_t)k));
        }
    }
    return f->oom ? AF_ERR_NOMEM : AF_OK;
}

af_result_t af_ensemble_csv(const af_ensemble_t *e, FILE *out)
{
    fprintf(out, "group,%s%s%sseed,devices,remap,shrink_rebuild,checkpoint_restart\n",
            e->ngrid > 0 ? "grid0," : "", e->ngrid > 1 ? "grid1," : "", "");
    for (int i = 0; i < e->nmembers; ++i) {
        const af_ensemble_member_t *m = &e->members[i];
        const af_ensemble_group_t *G = &e->groups[m->group];
        fprintf(out, "%d,", m->group);
        for (int k = 0; k < e->ngrid; ++k) {
            fprintf(out, "%s,", G->values[k]);
        }
        fprintf(out, "%lld,%lld,%.17g,%.17g,%.17g\n", (long long)m->seed, (long long)G->devices,
                m->ettr[AF_REPLAY_REMAP], m->ettr[AF_REPLAY_SHRINK_REBUILD],
                m->ettr[AF_REPLAY_CHECKPOINT_RESTART]);
    }
    return ferror(out) ? AF_ERR_IO : AF_OK;
}
