/* A command's limits, set in its own process before exec. A leaf shared by
 * the one-shot init and the exec server. */
#include <stdio.h>

#include "internal.h"

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
