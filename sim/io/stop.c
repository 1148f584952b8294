#include "stop.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t af_stop_requested;
/* The signal that asked first (SIGINT, SIGTERM, or the launcher's SIGCONT). */
static volatile sig_atomic_t af_stop_signo;
/* The parent process when it is Open MPI's launcher (mpirun or its orted) and SIGCONT opens
 * its terminate sequence; 0 otherwise. */
static volatile pid_t af_stop_launcher_pid;

static void on_signal(int sig, siginfo_t *si, void *ctx)
{
    (void)ctx;
    if (sig == SIGCONT && (af_stop_launcher_pid == 0 || si == NULL || si->si_code != SI_USER ||
                           si->si_pid != af_stop_launcher_pid)) {
        return; /* a job-control resume, or a SIGCONT from anyone else */
    }
    if (!af_stop_requested) {
        af_stop_signo = sig;
    }
    af_stop_requested = 1;
}

int af_stop_flag(void)
{
    return af_stop_requested != 0;
}

int af_stop_signal(void)
{
    return af_stop_signo;
}

/* Open MPI's mpirun (and its orted on other nodes) ends a job it was asked to end (SIGINT or
 * SIGTERM to mpirun: Ctrl-C; a rank's non-zero exit; MPI_Abort) by sending every rank
 * SIGCONT, then SIGTERM odls_base_sigkill_timeout seconds later (1 s by default), then
 * SIGKILL as long again after that. Taking its SIGCONT as the stop request gives the clean
 * stop both intervals. It sets OMPI_COMM_WORLD_SIZE in every process it starts. With
 * orte_forward_job_control on, it also forwards Ctrl-Z and the SIGCONT of `fg`, which must
 * not stop the run: SIGCONT is then not taken. */
static pid_t open_mpi_launcher(void)
{
    const char *size = getenv("OMPI_COMM_WORLD_SIZE");
    if (size == NULL || size[0] == '\0') {
        return 0;
    }
    const char *jc = getenv("OMPI_MCA_orte_forward_job_control");
    if (jc != NULL && jc[0] != '\0' && strcmp(jc, "0") != 0 && strcmp(jc, "false") != 0 &&
        strcmp(jc, "no") != 0) {
        return 0;
    }
    pid_t parent = getppid();
    return parent > 1 ? parent : 0;
}

void af_stop_install(void)
{
    af_stop_launcher_pid = open_mpi_launcher();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (af_stop_launcher_pid != 0) {
        sigaction(SIGCONT, &sa, NULL);
    }
}
