/* agefence launch: what the launcher (srun, mpirun) and Slurm say about this launch, compared
 * with what MPI says, before any work is done. Everything here reads the process environment
 * only: no MPI, no CUDA, no allocation, so it can be called on every rank at start-up and
 * tested with setenv()/unsetenv(). README.md ("Running on a cluster") describes the launches it
 * accepts. */
#ifndef AF_LAUNCH_H
#define AF_LAUNCH_H

#include <stddef.h>
#include <stdint.h>

#include "../../common/af_result.h"

/* Checks that the launch is what the user meant. Call it on every rank once the configuration
 * is known (cuda_requested comes from it) and before the log is created; `world_size` is
 * MPI_COMM_WORLD's size, `local_size` the number of ranks on this node, `gpus_visible` the
 * GPUs this rank sees (af_cuda_visible_devices(); -1: not asked), `cuda_requested` 1 when
 * backend.compute = cuda. Returns AF_OK, or AF_ERR_USAGE with one line for the user in err
 * (also set with af_error_set), naming the likely cause and the fix:
 *   - the Slurm step or allocation has a task count (SLURM_STEP_NUM_TASKS for a task that srun
 *     started, else SLURM_NTASKS, else SLURM_NPROCS) that differs from world_size: typically
 *     an MPI without Slurm's PMI support (srun without --mpi=pmix), where each of N tasks
 *     starts as its own one-rank job, or agefence started in a batch script without a
 *     launcher. Ranks started by mpirun/mpiexec (Open MPI's OMPI_COMM_WORLD_SIZE or Hydra's
 *     MPI_LOCALNRANKS set) are not checked: their -np is the user's choice. AGEFENCE_LAUNCH_CHECK=0
 *     in the environment skips this check.
 *   - cuda_requested, and more ranks on this node than GPUs visible: one GPU per rank, bound by
 *     node-local rank (the line says when Slurm's --gpus-per-task is the cause), unless
 *     `share_gpu` (backend.share_gpu = on) lets the node's ranks share the GPUs it has; with
 *     no GPU visible at all it fails either way. Whether share_gpu goes with the other
 *     [backend] keys is af_backend_decide's question (sim/io/backend.h), asked later.
 * Never fails otherwise; a variable that is absent or not a number is not checked. */
af_result_t af_launch_check(int world_size, int local_size, int gpus_visible, int cuda_requested,
                            int share_gpu, char *err, size_t errlen);

/* Checks that the launcher and the MPI library agree on the size of the launch. Call it on every
 * rank right after MPI_Init, before anything collective that could be misread (the log's
 * creation): `world_size` is MPI_COMM_WORLD's size, `mpi_library` the library's name
 * (af_world_library). The size the launcher started is read from OMPI_COMM_WORLD_SIZE (Open
 * MPI's mpirun) and PMI_SIZE (MPICH's and Intel MPI's Hydra, srun --mpi=pmi2); when one is set
 * and differs from world_size, the binary was started by another MPI's launcher, which makes
 * N one-rank jobs (each its own rank 0, all writing the same log): AF_ERR_USAGE with one line
 * in err (and af_error_set), "the launcher started N ranks (VAR=N) but the MPI library sees a
 * world of M: agefence was built with X's MPI; launch with X's mpiexec". Every process sees
 * the problem alone, so each reports it. AGEFENCE_LAUNCH_CHECK=0 skips it, as the others. */
af_result_t af_launch_check_launcher(int world_size, const char *mpi_library, char *err,
                                     size_t errlen);

/* The launch as Slurm describes it, for the log's root attributes. Strings are empty and
 * numbers -1 where Slurm (or the launcher) does not say. */
typedef struct af_launch_info {
    int under_slurm;          /* 1 when SLURM_JOB_ID (or SLURM_JOBID) is set */
    char job_id[32];          /* SLURM_JOB_ID: "1234" */
    char job_name[128];       /* SLURM_JOB_NAME */
    char cluster[64];         /* SLURM_CLUSTER_NAME */
    char partition[64];       /* SLURM_JOB_PARTITION */
    char nodelist[1024];      /* SLURM_JOB_NODELIST in Slurm's compressed form: "gpu[01-04]";
                                 a longer list ends in "..." */
    char tasks_per_node[128]; /* the step's (srun) or else the job's: "4(x2)", "3,2" */
    int64_t ntasks;           /* tasks of the step (srun) or else of the job */
    int64_t nnodes;           /* nodes of the step (srun) or else of the job */
    char launcher[16];        /* "srun", "mpirun", or "" (no launcher, or one not recognised) */
} af_launch_info_t;

/* 1 when progress belongs on this process's stderr: it is a terminal, or Open MPI's mpirun
 * started this process on its own node (OMPI_COMM_WORLD_SIZE set, mpirun the parent) and
 * mpirun's stderr is a terminal. Open MPI gives its ranks a pipe as stderr and copies what
 * they write to its own, so isatty(2) alone never sees the user's terminal under mpirun; the
 * parent's stderr is read through /proc/PPID/fd/2 (opened write-only, never as a controlling
 * terminal, and closed at once). 0 otherwise: srun, Hydra, a rank on another node. */
int af_launch_stderr_terminal(void);

/* Fills *info from the environment. */
void af_launch_info(af_launch_info_t *info);

/* One line: "slurm_job_id=1234, slurm_job_name=agefence, slurm_nodelist=gpu[01-02],
 * slurm_ntasks=8, slurm_tasks_per_node=4(x2), slurm_nnodes=2, launcher=srun", or "" when not
 * under Slurm. Always NUL-terminated when n > 0. */
void af_launch_describe(char *out, size_t n);

#endif
