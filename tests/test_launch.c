/* Unit tests of sim/io/launch.c: the launch checks and the Slurm description of a launch, driven
 * by the environment variables srun, sbatch and mpirun set (as seen on Slurm 22.05 with Open
 * MPI 4.1: tests/slurm.sh runs the real thing). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim/io/launch.h"

/* Every variable launch.c reads; each test starts with none of them set. */
static const char *const vars[] = {
    "SLURM_JOB_ID",
    "SLURM_JOBID",
    "SLURM_JOB_NAME",
    "SLURM_CLUSTER_NAME",
    "SLURM_JOB_PARTITION",
    "SLURM_JOB_NODELIST",
    "SLURM_NODELIST",
    "SLURM_NTASKS",
    "SLURM_NPROCS",
    "SLURM_TASKS_PER_NODE",
    "SLURM_STEP_ID",
    "SLURM_STEPID",
    "SLURM_STEP_NUM_TASKS",
    "SLURM_STEP_NUM_NODES",
    "SLURM_STEP_TASKS_PER_NODE",
    "SLURM_JOB_NUM_NODES",
    "SLURM_NNODES",
    "SLURM_GPUS_PER_TASK",
    "OMPI_COMM_WORLD_SIZE",
    "MPI_LOCALNRANKS",
    "AGEFENCE_LAUNCH_CHECK",
    "PMI_SIZE",
};

static int clear_env(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; ++i) {
        unsetenv(vars[i]);
    }
    af_error_clear();
    return 0;
}

static void set(const char *name, const char *value)
{
    assert_int_equal(setenv(name, value, 1), 0);
}

/* What srun sets in every task of `srun -n NTASKS` in job 4242 on one node "vm". */
static void srun_step(const char *ntasks)
{
    set("SLURM_JOB_ID", "4242");
    set("SLURM_JOBID", "4242");
    set("SLURM_JOB_NAME", "agefence");
    set("SLURM_JOB_NODELIST", "vm");
    set("SLURM_NODELIST", "vm");
    set("SLURM_NTASKS", ntasks);
    set("SLURM_NPROCS", ntasks);
    set("SLURM_TASKS_PER_NODE", ntasks);
    set("SLURM_STEP_ID", "0");
    set("SLURM_STEPID", "0");
    set("SLURM_STEP_NUM_TASKS", ntasks);
    set("SLURM_STEP_NUM_NODES", "1");
    set("SLURM_STEP_TASKS_PER_NODE", ntasks);
    set("SLURM_JOB_NUM_NODES", "1");
    set("SLURM_NNODES", "1");
}

/* What a batch script's shell (and anything it starts without srun) has in `sbatch -n NTASKS`. */
static void batch_shell(const char *ntasks)
{
    set("SLURM_JOB_ID", "4243");
    set("SLURM_JOB_NAME", "agefence");
    set("SLURM_JOB_NODELIST", "gpu[01-02]");
    set("SLURM_NTASKS", ntasks);
    set("SLURM_NPROCS", ntasks);
    set("SLURM_TASKS_PER_NODE", "4(x2)");
    set("SLURM_JOB_NUM_NODES", "2");
}

static void assert_contains(const char *s, const char *part)
{
    if (strstr(s, part) == NULL) {
        fail_msg("\"%s\" does not contain \"%s\"", s, part);
    }
}

static void test_outside_slurm_any_size_is_fine(void **state)
{
    (void)state;
    char err[600] = "x";
    for (int n = 1; n <= 5; ++n) {
        assert_int_equal(af_launch_check(n, n, -1, 0, 0, err, sizeof err), AF_OK);
        assert_string_equal(err, "");
    }
    char d[64] = "x";
    af_launch_describe(d, sizeof d);
    assert_string_equal(d, "");
    af_launch_info_t li;
    af_launch_info(&li);
    assert_int_equal(li.under_slurm, 0);
    assert_int_equal(li.ntasks, -1);
    assert_string_equal(li.launcher, "");
}

static void test_srun_step_matching_world(void **state)
{
    (void)state;
    srun_step("4");
    char err[600];
    assert_int_equal(af_launch_check(4, 4, -1, 0, 0, err, sizeof err), AF_OK);
}

/* srun without PMIx for Open MPI: N tasks, each MPI_COMM_WORLD of size 1. */
static void test_srun_tasks_as_singletons(void **state)
{
    (void)state;
    srun_step("2");
    char err[600];
    assert_int_equal(af_launch_check(1, 1, -1, 0, 0, err, sizeof err), AF_ERR_USAGE);
    assert_contains(err, "srun started 2 tasks but MPI sees 1 rank:");
    assert_contains(err, "one-rank job");
    assert_contains(err, "srun --mpi=pmix");
    assert_contains(err, "mpirun -np $SLURM_NTASKS");
    assert_null(strchr(err, '\n'));
    assert_string_equal(af_error_message(), err);
}

static void test_srun_step_count_wins_over_allocation(void **state)
{
    (void)state;
    /* `srun -n 2` inside `sbatch -n 4`: the step's count is what MPI must see. */
    srun_step("2");
    set("SLURM_TASKS_PER_NODE", "4");
    char err[600];
    assert_int_equal(af_launch_check(2, 2, -1, 0, 0, err, sizeof err), AF_OK);
    assert_int_equal(af_launch_check(4, 4, -1, 0, 0, err, sizeof err), AF_ERR_USAGE);
    assert_contains(err, "srun started 2 tasks but MPI sees 4 ranks");
}

/* agefence run straight from a batch script of 2 tasks: a singleton. */
static void test_batch_without_launcher(void **state)
{
    (void)state;
    batch_shell("2");
    char err[600];
    assert_int_equal(af_launch_check(1, 1, -1, 0, 0, err, sizeof err), AF_ERR_USAGE);
    assert_contains(err, "allocation has 2 tasks (SLURM_NTASKS) but agefence runs as 1 rank");
    assert_contains(err, "srun --mpi=pmix");
    assert_int_equal(af_launch_check(2, 2, -1, 0, 0, err, sizeof err), AF_OK);
}

static void test_nprocs_when_no_ntasks(void **state)
{
    (void)state;
    set("SLURM_JOB_ID", "7");
    set("SLURM_NPROCS", "3");
    char err[600];
    assert_int_equal(af_launch_check(2, 2, -1, 0, 0, err, sizeof err), AF_ERR_USAGE);
    assert_contains(err, "3 tasks (SLURM_NPROCS)");
    assert_int_equal(af_launch_check(3, 3, -1, 0, 0, err, sizeof err), AF_OK);
}

/* mpirun inside the allocation: its -np is the user's choice, whatever SLURM_NTASKS says. */
static void test_mpirun_inside_allocation_not_checked(void **state)
{
    (void)state;
    batch_shell("8");
    set("OMPI_COMM_WORLD_SIZE", "2");
    char err[600];
    assert_int_equal(af_launch_check(2, 2, -1, 0, 0, err, sizeof err), AF_OK);
    unsetenv("OMPI_COMM_WORLD_SIZE");
    set("MPI_LOCALNRANKS", "2"); /* MPICH / Intel MPI Hydra */
    assert_int_equal(af_launch_check(2, 2, -1, 0, 0, err, sizeof err), AF_OK);
    unsetenv("MPI_LOCALNRANKS");
    assert_int_equal(af_launch_check(2, 2, -1, 0, 0, err, sizeof err), AF_ERR_USAGE);
}

static void test_check_can_be_skipped(void **state)
{
    (void)state;
    srun_step("4");
    set("AGEFENCE_LAUNCH_CHECK", "0");
    char err[600];
    assert_int_equal(af_launch_check(1, 1, -1, 0, 0, err, sizeof err), AF_OK);
    set("AGEFENCE_LAUNCH_CHECK", "1");
    assert_int_equal(af_launch_check(1, 1, -1, 0, 0, err, sizeof err), AF_ERR_USAGE);
}

static void test_unparsable_counts_are_not_checked(void **state)
{
    (void)state;
    const char *bad[] = {"", "abc", "4x", "-2", "0", "99999999999999999999999"};
    char err[600];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        clear_env(NULL);
        set("SLURM_JOB_ID", "1");
        set("SLURM_NTASKS", bad[i]);
        assert_int_equal(af_launch_check(3, 3, -1, 0, 0, err, sizeof err), AF_OK);
    }
}

static void test_gpus_only_checked_for_cuda(void **state)
{
    (void)state;
    char err[600];
    /* cpu: any number of ranks per node, GPUs or not. */
    assert_int_equal(af_launch_check(8, 8, 1, 0, 0, err, sizeof err), AF_OK);
    assert_int_equal(af_launch_check(8, 8, 0, 0, 0, err, sizeof err), AF_OK);
    /* cuda with one GPU per rank, or more GPUs than ranks; -1: not asked. */
    assert_int_equal(af_launch_check(4, 4, 4, 1, 0, err, sizeof err), AF_OK);
    assert_int_equal(af_launch_check(4, 2, 8, 1, 0, err, sizeof err), AF_OK);
    assert_int_equal(af_launch_check(4, 4, -1, 1, 0, err, sizeof err), AF_OK);
}

static void test_more_ranks_than_gpus(void **state)
{
    (void)state;
    char err[600];
    assert_int_equal(af_launch_check(4, 4, 2, 1, 0, err, sizeof err), AF_ERR_USAGE);
    assert_contains(err, "4 ranks on this node but 2 GPUs visible");
    assert_contains(err, "slots=2");
    assert_int_equal(af_launch_check(1, 1, 0, 1, 0, err, sizeof err), AF_ERR_USAGE);
    assert_contains(err, "backend.compute = cuda, but no GPU is visible on this node");
    assert_null(strstr(err, "at most 0"));
    srun_step("4");
    assert_int_equal(af_launch_check(4, 4, 2, 1, 0, err, sizeof err), AF_ERR_USAGE);
    assert_contains(err, "--gpus-per-node=4");
    assert_null(strstr(err, "--gpus-per-task"));
}

/* backend.share_gpu = on: the node's ranks share the GPUs it has (rank r on GPU r mod G), so
 * more ranks than GPUs pass the launch check; no GPU at all still fails, with or without it,
 * and without share_gpu the same launch is refused and the refusal names the key. */
static void test_share_gpu_allows_more_ranks(void **state)
{
    (void)state;
    char err[600];
    assert_int_equal(af_launch_check(4, 4, 1, 1, 1, err, sizeof err), AF_OK);
    assert_string_equal(err, "");
    assert_int_equal(af_launch_check(3, 3, 2, 1, 1, err, sizeof err), AF_OK);
    assert_int_equal(af_launch_check(2, 2, 1, 1, 0, err, sizeof err), AF_ERR_USAGE);
    assert_contains(err, "2 ranks on this node but 1 GPU visible");
    assert_contains(err, "backend.share_gpu = on");
    assert_int_equal(af_launch_check(2, 2, 0, 1, 1, err, sizeof err), AF_ERR_USAGE);
    assert_contains(err, "no GPU is visible on this node");
    /* Under Slurm too: share_gpu is the user's choice, whatever the allocation gives. */
    srun_step("4");
    assert_int_equal(af_launch_check(4, 4, 1, 1, 1, err, sizeof err), AF_OK);
    /* The task count is still checked first. */
    assert_int_equal(af_launch_check(2, 2, 1, 1, 1, err, sizeof err), AF_ERR_USAGE);
    assert_contains(err, "srun started 4 tasks");
}

static void test_gpus_per_task_named(void **state)
{
    (void)state;
    srun_step("4");
    set("SLURM_GPUS_PER_TASK", "1");
    char err[600];
    assert_int_equal(af_launch_check(4, 4, 1, 1, 0, err, sizeof err), AF_ERR_USAGE);
    assert_contains(err, "each sees 1 GPU:");
    assert_contains(err, "--gpus-per-task");
    assert_contains(err, "--gpus-per-node=4");
    assert_contains(err, "NCCL");
}

/* A task count mismatch is reported before a GPU shortage. */
static void test_tasks_checked_first(void **state)
{
    (void)state;
    srun_step("2");
    char err[600];
    assert_int_equal(af_launch_check(1, 1, 0, 1, 0, err, sizeof err), AF_ERR_USAGE);
    assert_contains(err, "srun started 2 tasks");
}

static void test_short_error_buffer(void **state)
{
    (void)state;
    srun_step("2");
    char err[16];
    memset(err, 'x', sizeof err);
    assert_int_equal(af_launch_check(1, 1, -1, 0, 0, err, sizeof err), AF_ERR_USAGE);
    assert_int_equal(strlen(err), sizeof err - 1);
    assert_int_equal(af_launch_check(1, 1, -1, 0, 0, NULL, 0), AF_ERR_USAGE);
}

static void test_info_srun_step(void **state)
{
    (void)state;
    srun_step("3");
    set("SLURM_CLUSTER_NAME", "fleet");
    set("SLURM_JOB_PARTITION", "gpu");
    set("SLURM_TASKS_PER_NODE", "4"); /* the job's: the step's 3 wins */
    af_launch_info_t li;
    af_launch_info(&li);
    assert_int_equal(li.under_slurm, 1);
    assert_string_equal(li.job_id, "4242");
    assert_string_equal(li.job_name, "agefence");
    assert_string_equal(li.cluster, "fleet");
    assert_string_equal(li.partition, "gpu");
    assert_string_equal(li.nodelist, "vm");
    assert_string_equal(li.tasks_per_node, "3");
    assert_int_equal(li.ntasks, 3);
    assert_int_equal(li.nnodes, 1);
    assert_string_equal(li.launcher, "srun");
    char d[300];
    af_launch_describe(d, sizeof d);
    assert_string_equal(d, "slurm_job_id=4242, slurm_job_name=agefence, slurm_nodelist=vm, "
                           "slurm_ntasks=3, slurm_tasks_per_node=3, slurm_nnodes=1, "
                           "launcher=srun");
}

static void test_info_mpirun_in_batch(void **state)
{
    (void)state;
    batch_shell("8");
    set("OMPI_COMM_WORLD_SIZE", "8");
    af_launch_info_t li;
    af_launch_info(&li);
    assert_string_equal(li.job_id, "4243");
    assert_string_equal(li.nodelist, "gpu[01-02]");
    assert_string_equal(li.tasks_per_node, "4(x2)");
    assert_int_equal(li.ntasks, 8);
    assert_int_equal(li.nnodes, 2);
    assert_string_equal(li.launcher, "mpirun");
    assert_string_equal(li.cluster, "");
    char d[300];
    af_launch_describe(d, sizeof d);
    assert_string_equal(d, "slurm_job_id=4243, slurm_job_name=agefence, "
                           "slurm_nodelist=gpu[01-02], slurm_ntasks=8, "
                           "slurm_tasks_per_node=4(x2), slurm_nnodes=2, launcher=mpirun");
}

static void test_info_old_names_and_no_launcher(void **state)
{
    (void)state;
    set("SLURM_JOBID", "99");
    set("SLURM_NODELIST", "n1");
    set("SLURM_NNODES", "1");
    af_launch_info_t li;
    af_launch_info(&li);
    assert_string_equal(li.job_id, "99");
    assert_string_equal(li.nodelist, "n1");
    assert_int_equal(li.nnodes, 1);
    assert_int_equal(li.ntasks, -1);
    assert_string_equal(li.launcher, "");
    char d[300];
    af_launch_describe(d, sizeof d);
    assert_string_equal(d, "slurm_job_id=99, slurm_job_name=, slurm_nodelist=n1, slurm_ntasks=, "
                           "slurm_tasks_per_node=, slurm_nnodes=1, launcher=none");
}

static void test_long_values_truncated(void **state)
{
    (void)state;
    char big[3000];
    memset(big, 'n', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    srun_step("2");
    set("SLURM_JOB_NODELIST", big);
    af_launch_info_t li;
    af_launch_info(&li);
    size_t len = strlen(li.nodelist);
    assert_int_equal(len, sizeof li.nodelist - 1);
    assert_string_equal(li.nodelist + len - 3, "...");
    char d[40];
    af_launch_describe(d, sizeof d);
    assert_int_equal(strlen(d), sizeof d - 1);
    assert_string_equal(d + sizeof d - 4, "...");
    af_launch_describe(d, 1);
    assert_string_equal(d, "");
}

/* Open MPI's mpiexec starting an MPICH build: four one-rank jobs, each told the launch has 4. */
static void test_other_mpis_launcher_is_refused(void **state)
{
    (void)state;
    char err[600] = "x";
    set("OMPI_COMM_WORLD_SIZE", "4");
    assert_int_equal(af_launch_check_launcher(1, "MPICH", err, sizeof err), AF_ERR_USAGE);
    assert_string_equal(err, "the launcher started 4 ranks (OMPI_COMM_WORLD_SIZE=4) but the MPI "
                             "library sees a world of 1: agefence was built with MPICH's MPI; "
                             "launch with MPICH's mpiexec (AGEFENCE_LAUNCH_CHECK=0 skips this "
                             "check)");
    assert_string_equal(af_error_message(), err);
    /* Hydra (PMI-1) starting an Open MPI build. */
    unsetenv("OMPI_COMM_WORLD_SIZE");
    set("PMI_SIZE", "2");
    assert_int_equal(af_launch_check_launcher(1, "Open MPI", err, sizeof err), AF_ERR_USAGE);
    assert_contains(err, "the launcher started 2 ranks (PMI_SIZE=2) but the MPI library sees a "
                         "world of 1: agefence was built with Open MPI's MPI; launch with Open "
                         "MPI's mpiexec");
    assert_null(strchr(err, '\n'));
    /* A library without a name still gets a line. */
    assert_int_equal(af_launch_check_launcher(3, NULL, err, sizeof err), AF_ERR_USAGE);
    assert_contains(err, "sees a world of 3: agefence was built with another MPI's MPI");
}

static void test_launcher_matching_the_library_passes(void **state)
{
    (void)state;
    char err[600] = "x";
    assert_int_equal(af_launch_check_launcher(3, "MPICH", err, sizeof err), AF_OK);
    assert_string_equal(err, "");
    set("OMPI_COMM_WORLD_SIZE", "3");
    set("PMI_SIZE", "3");
    assert_int_equal(af_launch_check_launcher(3, "Open MPI", err, sizeof err), AF_OK);
    assert_string_equal(err, "");
    /* A value that is not a count is not checked; the check can be skipped. */
    set("OMPI_COMM_WORLD_SIZE", "three");
    set("PMI_SIZE", "");
    assert_int_equal(af_launch_check_launcher(1, "MPICH", err, sizeof err), AF_OK);
    set("OMPI_COMM_WORLD_SIZE", "4");
    set("AGEFENCE_LAUNCH_CHECK", "0");
    assert_int_equal(af_launch_check_launcher(1, "MPICH", err, sizeof err), AF_OK);
    unsetenv("AGEFENCE_LAUNCH_CHECK");
    assert_int_equal(af_launch_check_launcher(1, "MPICH", err, sizeof err), AF_ERR_USAGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_outside_slurm_any_size_is_fine, clear_env),
        cmocka_unit_test_setup(test_srun_step_matching_world, clear_env),
        cmocka_unit_test_setup(test_srun_tasks_as_singletons, clear_env),
        cmocka_unit_test_setup(test_srun_step_count_wins_over_allocation, clear_env),
        cmocka_unit_test_setup(test_batch_without_launcher, clear_env),
        cmocka_unit_test_setup(test_nprocs_when_no_ntasks, clear_env),
        cmocka_unit_test_setup(test_mpirun_inside_allocation_not_checked, clear_env),
        cmocka_unit_test_setup(test_other_mpis_launcher_is_refused, clear_env),
        cmocka_unit_test_setup(test_launcher_matching_the_library_passes, clear_env),
        cmocka_unit_test_setup(test_check_can_be_skipped, clear_env),
        cmocka_unit_test_setup(test_unparsable_counts_are_not_checked, clear_env),
        cmocka_unit_test_setup(test_gpus_only_checked_for_cuda, clear_env),
        cmocka_unit_test_setup(test_more_ranks_than_gpus, clear_env),
        cmocka_unit_test_setup(test_share_gpu_allows_more_ranks, clear_env),
        cmocka_unit_test_setup(test_gpus_per_task_named, clear_env),
        cmocka_unit_test_setup(test_tasks_checked_first, clear_env),
        cmocka_unit_test_setup(test_short_error_buffer, clear_env),
        cmocka_unit_test_setup(test_info_srun_step, clear_env),
        cmocka_unit_test_setup(test_info_mpirun_in_batch, clear_env),
        cmocka_unit_test_setup(test_info_old_names_and_no_launcher, clear_env),
        cmocka_unit_test_setup(test_long_values_truncated, clear_env),
    };
    return cmocka_run_group_tests_name("launch", tests, NULL, NULL);
}
