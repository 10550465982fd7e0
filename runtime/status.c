#include <sys/wait.h>

#include "internal.h"

void rt_result_from_wait(struct cell_result *res, int wstatus)
{
	if (WIFEXITED(wstatus)) {
		res->exit_code = WEXITSTATUS(wstatus);
		res->signal = 0;
	} else if (WIFSIGNALED(wstatus)) {
		res->signal = WTERMSIG(wstatus);
		res->exit_code = 128 + res->signal;
	} else {
		res->exit_code = CELL_EXIT_INTERNAL;
	}
}
