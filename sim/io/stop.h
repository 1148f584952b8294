/* agefence stop requests: SIGINT and SIGTERM ask every rank to finish the step it is in; so does
 * the SIGCONT with which Open MPI's launcher (mpirun, orted) opens its ending of a job (Ctrl-C
 * or SIGTERM to mpirun: SIGCONT, then SIGTERM and SIGKILL odls_base_sigkill_timeout seconds
 * apart), from the parent process of a rank it started. The handler only sets a flag; the
 * step's exchange carries it to every rank (sim/driver/step.c), so all ranks stop after the same
 * step. */
#ifndef AF_STOP_H
#define AF_STOP_H

/* Installs the handlers of SIGINT and SIGTERM, and of SIGCONT under Open MPI's launcher unless
 * it forwards job control (orte_forward_job_control: Ctrl-Z, then `fg`'s SIGCONT). Reads the
 * environment and the parent's pid: call it in the process the launcher started. */
void af_stop_install(void);

/* 1 once a stop request (above) arrived in this process. */
int af_stop_flag(void);

/* The signal that asked first in this process: SIGINT, SIGTERM, SIGCONT (the launcher's), or
 * 0 when none did (a rank stopped by another rank's request). */
int af_stop_signal(void);

#endif
