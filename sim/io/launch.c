/* agefence launch checks and the Slurm description of a launch (launch.h). */
#include "launch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The variable's value, or NULL when it is unset or empty. */
static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' ? v : NULL;
}

/* The first of two names that is set. */
static const char *env2(const char *a, const char *b)
{
    const char *v = env(a);
    return v != NULL ? v : env(b);
}

/* A positive integer from the environment, or -1 when unset or not one. */
static int64_t env_count(const char *name)
{
    const char *v = env(name);
    if (v == NULL) {
        return -1;
    }
    errno = 0;
    char *end = NULL;
    long long x = strtoll(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || x < 1) {
        return -1;
    }
    return (int64_t)x;
}

/* Copies src into dst (n bytes); a value that does not fit ends in "...". */
static void copy_str(char *dst, size_t n, const char *src)
{
    if (n == 0) {
        return;
    }
    if (src == NULL) {
        dst[0] = '\0';
        return;
    }
    size_t len = strlen(src);
    if (len < n) {
        memcpy(dst, src, len + 1);
        return;
    }
    memcpy(dst, src, n - 1);
    dst[n - 1] = '\0';
    if (n > 4) {
        memcpy(dst + n - 4, "...", 3);
    }
}

/* Which launcher started this process. Open MPI's mpirun sets OMPI_COMM_WORLD_SIZE in every
 * process it starts (srun's direct launch does not, even after MPI_Init); MPICH's and Intel
 * MPI's Hydra set MPI_LOCALNRANKS. srun sets the step variables in every task of a step; a
 * batch script's own shell has no step id. */
static const char *launcher(void)
{
    if (env("OMPI_COMM_WORLD_SIZE") != NULL || env("MPI_LOCALNRANKS") != NULL) {
        return "mpirun";
    }
    if (env2("SLURM_STEP_ID", "SLURM_STEPID") != NULL && env("SLURM_STEP_NUM_TASKS") != NULL) {
        return "srun";
    }
    return "";
}

static af_result_t usage_error(char *err, size_t errlen, const char *msg)
{
    if (err != NULL && errlen > 0) {
        snprintf(err, errlen, "%s", msg);
    }
    af_error_set("%s", msg);
    return AF_ERR_USAGE;
}

/* The task count check (launch.h). */
static af_result_t check_tasks(int world_size, char *err, size_t errlen)
{
    const char *skip = env("AGEFENCE_LAUNCH_CHECK");
    if (skip != NULL && strcmp(skip, "0") == 0) {
        return AF_OK;
    }
    const char *how = launcher();
    if (strcmp(how, "mpirun") == 0) {
        return AF_OK;
    }
    char msg[600];
    const char *fix = "launch with `srun --mpi=pmix agefence run ...` (see "
                      "srun --mpi=list) or with `mpirun -np $SLURM_NTASKS agefence run ...` "
                      "inside the allocation (AGEFENCE_LAUNCH_CHECK=0 skips this check)";
    if (strcmp(how, "srun") == 0) {
        int64_t want = env_count("SLURM_STEP_NUM_TASKS");
        if (want > 0 && want != world_size) {
            snprintf(msg, sizeof msg, "srun started %lld tasks but MPI sees %d rank%s: %s; %s",
                     (long long)want, world_size, world_size == 1 ? "" : "s",
                     world_size == 1 ? "the MPI library did not get Slurm's process "
                                       "information (srun without a matching --mpi plugin), "
                                       "so every task runs as its own one-rank job"
                                     : "the step and MPI disagree on the launch",
                     fix);
            return usage_error(err, errlen, msg);
        }
        return AF_OK;
    }
    const char *var = "SLURM_NTASKS";
    int64_t want = env_count(var);
    if (want < 0) {
        var = "SLURM_NPROCS";
        want = env_count(var);
    }
    if (want > 0 && want != world_size) {
        snprintf(msg, sizeof msg,
                 "the Slurm allocation has %lld tasks (%s) but agefence runs as %d rank%s: it "
                 "was started without srun or mpirun, or by an MPI launcher it does not "
                 "recognise; %s",
                 (long long)want, var, world_size, world_size == 1 ? "" : "s", fix);
        return usage_error(err, errlen, msg);
    }
    return AF_OK;
}

af_result_t af_launch_check_launcher(int world_size, const char *mpi_library, char *err,
                                     size_t errlen)
{
    if (err != NULL && errlen > 0) {
        err[0] = '\0';
    }
    const char *skip = env("AGEFENCE_LAUNCH_CHECK");
    if (skip != NULL && strcmp(skip, "0") == 0) {
        return AF_OK;
    }
    /* Open MPI's launcher, then a PMI-1 one: the two a binary of the other family meets. */
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; ++i) {
        int64_t want = env_count(vars[i]);
        if (want > 0 && want != world_size) {
            const char *x =
                mpi_library != NULL && mpi_library[0] != '\0' ? mpi_library : "another MPI";
            char msg[600];
            snprintf(msg, sizeof msg,
                     "the launcher started %lld ranks (%s=%lld) but the MPI library sees a world "
                     "of %d: agefence was built with %s's MPI; launch with %s's mpiexec "
                     "(AGEFENCE_LAUNCH_CHECK=0 skips this check)",
                     (long long)want, vars[i], (long long)want, world_size, x, x);
            return usage_error(err, errlen, msg);
        }
    }
    return AF_OK;
}

/* The GPU check (launch.h). */
static af_result_t check_gpus(int local_size, int gpus_visible, int cuda_requested, int share_gpu,
                              char *err, size_t errlen)
{
    if (!cuda_requested || gpus_visible < 0 || local_size <= gpus_visible) {
        return AF_OK;
    }
    /* backend.share_gpu = on: rank r drives GPU r mod the GPUs visible (sim/io/backend.c), so
     * any number of ranks may share them, as long as there is one. */
    if (share_gpu && gpus_visible > 0) {
        return AF_OK;
    }
    char msg[600];
    const char *plural = gpus_visible == 1 ? "" : "s";
    if (gpus_visible == 0) {
        snprintf(msg, sizeof msg,
                 "backend.compute = cuda, but no GPU is visible on this node (CUDA reports none): "
                 "run where GPUs are, or use backend.compute = cpu or auto");
    } else if (env("SLURM_GPUS_PER_TASK") != NULL) {
        snprintf(msg, sizeof msg,
                 "backend.compute = cuda: %d ranks on this node but each sees %d GPU%s: Slurm's "
                 "--gpus-per-task gives every task a private view of its own GPU, which breaks "
                 "agefence's binding by node-local rank and NCCL's peer paths; request "
                 "--gpus-per-node=%d (one GPU per task on the node) instead",
                 local_size, gpus_visible, plural, local_size);
    } else if (env2("SLURM_JOB_ID", "SLURM_JOBID") != NULL) {
        snprintf(msg, sizeof msg,
                 "backend.compute = cuda: %d ranks on this node but %d GPU%s visible: every rank "
                 "needs its own GPU (bound by node-local rank); request --gpus-per-node=%d, or "
                 "at most %d tasks per node (--ntasks-per-node), or backend.compute = cpu",
                 local_size, gpus_visible, plural, local_size, gpus_visible);
    } else {
        snprintf(msg, sizeof msg,
                 "backend.compute = cuda: %d ranks on this node but %d GPU%s visible: every rank "
                 "needs its own GPU (bound by node-local rank); start at most %d ranks per node "
                 "(a hostfile's slots=%d), let them share it (backend.share_gpu = on with "
                 "backend.fabric = mpi), or use backend.compute = cpu",
                 local_size, gpus_visible, plural, gpus_visible, gpus_visible);
    }
    return usage_error(err, errlen, msg);
}

af_result_t af_launch_check(int world_size, int local_size, int gpus_visible, int cuda_requested,
                            int share_gpu, char *err, size_t errlen)
{
    if (err != NULL && errlen > 0) {
        err[0] = '\0';
    }
    af_result_t rc = check_tasks(world_size, err, errlen);
    if (rc != AF_OK) {
        return rc;
    }
    return check_gpus(local_size, gpus_visible, cuda_requested, share_gpu, err, errlen);
}

void af_launch_info(af_launch_info_t *info)
{
    memset(info, 0, sizeof *info);
    info->ntasks = -1;
    info->nnodes = -1;
    const char *job = env2("SLURM_JOB_ID", "SLURM_JOBID");
    const char *how = launcher();
    copy_str(info->launcher, sizeof info->launcher, how);
    if (job == NULL) {
        return;
    }
    info->under_slurm = 1;
    copy_str(info->job_id, sizeof info->job_id, job);
    copy_str(info->job_name, sizeof info->job_name, env("SLURM_JOB_NAME"));
    copy_str(info->cluster, sizeof info->cluster, env("SLURM_CLUSTER_NAME"));
    copy_str(info->partition, sizeof info->partition, env("SLURM_JOB_PARTITION"));
    copy_str(info->nodelist, sizeof info->nodelist, env2("SLURM_JOB_NODELIST", "SLURM_NODELIST"));
    /* A task of an srun step describes the step; anything else (mpirun inside the
     * allocation, a batch shell) the job. */
    const int step = strcmp(how, "srun") == 0;
    const char *tpn = step ? env("SLURM_STEP_TASKS_PER_NODE") : NULL;
    copy_str(info->tasks_per_node, sizeof info->tasks_per_node,
             tpn != NULL ? tpn : env("SLURM_TASKS_PER_NODE"));
    info->ntasks = step ? env_count("SLURM_STEP_NUM_TASKS") : -1;
    if (info->ntasks < 0) {
        info->ntasks = env_count("SLURM_NTASKS");
    }
    if (info->ntasks < 0) {
        info->ntasks = env_count("SLURM_NPROCS");
    }
    info->nnodes = step ? env_count("SLURM_STEP_NUM_NODES") : -1;
    if (info->nnodes < 0) {
        info->nnodes = env_count("SLURM_JOB_NUM_NODES");
    }
    if (info->nnodes < 0) {
        info->nnodes = env_count("SLURM_NNODES");
    }
}

void af_launch_describe(char *out, size_t n)
{
    if (n == 0) {
        return;
    }
    out[0] = '\0';
    af_launch_info_t li;
    af_launch_info(&li);
    if (!li.under_slurm) {
        return;
    }
    char ntasks[24] = "";
    char nnodes[24] = "";
    if (li.ntasks > 0) {
        snprintf(ntasks, sizeof ntasks, "%lld", (long long)li.ntasks);
    }
    if (li.nnodes > 0) {
        snprintf(nnodes, sizeof nnodes, "%lld", (long long)li.nnodes);
    }
    int len = snprintf(out, n,
                       "slurm_job_id=%s, slurm_job_name=%s, slurm_nodelist=%s, slurm_ntasks=%s, "
                       "slurm_tasks_per_node=%s, slurm_nnodes=%s, launcher=%s",
                       li.job_id, li.job_name, li.nodelist, ntasks, li.tasks_per_node, nnodes,
                       li.launcher[0] != '\0' ? li.launcher : "none");
    if (len >= 0 && (size_t)len >= n && n > 4) {
        memcpy(out + n - 4, "...", 4);
    }
}

int af_launch_stderr_terminal(void)
{
    if (isatty(STDERR_FILENO)) {
        return 1;
    }
    if (env("OMPI_COMM_WORLD_SIZE") == NULL) {
        return 0;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/fd/2", (long)getppid());
    int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        return 0;
    }
    int tty = isatty(fd);
    close(fd);
    return tty;
}
