#include "stop.h"

#include <signal.h>
#include <string.h>

static volatile sig_atomic_t af_stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    af_stop_requested = 1;
}

int af_stop_flag(void)
{
    return af_stop_requested != 0;
}

void af_stop_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}
