/* A command's limits, set in its own process before exec. A leaf shared by
 * the one-shot init and the exec server. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "internal.h"

/* When the cell runs out of memory, the kernel's OOM killer must take a
 * command, never init, which reports what happened (in a sanitizer build
 * init shares its creator's large heap, looks bigger than the commands,
 * and was taken). So a command starts with the highest oom_score_adj, as
 * init's at the fork; init then returns to its own value, which any
 * process may do (it is not below the minimum). The file is opened while
 * init is dumpable, as a non-dumpable process's /proc files belong to the
 * host's root; a root caller's child lost that when its ids changed, and
 * gets it back for the open: no process of the cell exists yet, and
 * rt_lockdown_init_process takes it away right after. On the host too,
 * sandboxed code goes first. */
void rt_oom_open(struct cell_plan *plan)
{
	if (prctl(PR_GET_DUMPABLE) != 1)
		(void)prctl(PR_SET_DUMPABLE, 1);
	plan->oom_fd = open("/proc/self/oom_score_adj", O_RDWR | O_CLOEXEC);
	ssize_t n = plan->oom_fd >= 0 ? pread(plan->oom_fd, plan->oom_base, sizeof(plan->oom_base) - 1, 0)
				      : -1;
	if (n <= 0) {
		sc_closep(&plan->oom_fd);
		return;
	}
	plan->oom_base[n] = '\0';
}

void rt_oom_command(const struct cell_plan *plan, bool forking)
{
	if (plan->oom_fd < 0)
		return;
	const char *v = forking ? "1000" : plan->oom_base;
	(void)!pwrite(plan->oom_fd, v, strlen(v), 0);
}

/* The command's limits are set here, not in init: an rlimit stand-in for a
 * memory limit must not starve init itself. */
void rt_apply_command_limits(const struct cell_plan *plan)
{
	rt_apply_command_limits_mem(plan, 0);
}

void rt_apply_command_limits_mem(const struct cell_plan *plan, uint64_t memory)
{
	struct sc_err err;
	struct policy_limits l = plan->limits;
	if (memory)
		l.memory = memory;
	if (rt_lockdown_rlimits(&l, !plan->use_rlimits, &err) < 0) {
		char line[600];
		int n = snprintf(line, sizeof(line), "sandcell: %s\n", err.msg);
		(void)sc_write_all(2, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
		_exit(CELL_EXIT_INTERNAL);
	}
}
