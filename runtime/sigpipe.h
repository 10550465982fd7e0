/* Private to runtime/: a write to a pipe the cell closed must fail with
 * EPIPE, not kill us. The SIGPIPE of a write goes to the writing thread, so
 * blocking it in this thread only, and taking one that came while blocked,
 * changes nothing for other threads (unlike toggling the process-wide
 * handler). */
#pragma once
#include <signal.h>
#include <stdbool.h>

struct rt_sigpipe_guard {
	sigset_t old;
	bool was_pending;
};

void rt_sigpipe_block(struct rt_sigpipe_guard *g);
void rt_sigpipe_restore(struct rt_sigpipe_guard *g);
