/* agefence stop requests: SIGINT and SIGTERM ask every rank to finish the step it is in. The
 * handler only sets a flag; the step's exchange carries it to every rank (sim/step.c), so all
 * ranks stop after the same step. */
#ifndef AF_STOP_H
#define AF_STOP_H

/* Installs the handlers of SIGINT and SIGTERM (once per run). */
void af_stop_install(void);

/* 1 once SIGINT or SIGTERM arrived in this process. */
int af_stop_flag(void);

#endif
