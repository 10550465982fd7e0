/* SIGPIPE held off one thread's writes (see sigpipe.h). */
#include "sigpipe.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>

static bool sigpipe_pending(void)
{
	sigset_t p;
	return sigpending(&p) == 0 && sigismember(&p, SIGPIPE) == 1;
}

void rt_sigpipe_block(struct rt_sigpipe_guard *g)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	g->was_pending = sigpipe_pending();
	pthread_sigmask(SIG_BLOCK, &set, &g->old);
}

void rt_sigpipe_restore(struct rt_sigpipe_guard *g)
{
	if (!g->was_pending && sigpipe_pending()) {
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGPIPE);
		struct timespec zero = {0};
		while (sigtimedwait(&set, NULL, &zero) < 0 && errno == EINTR)
			;
	}
	pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}
