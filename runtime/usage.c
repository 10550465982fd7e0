/* What a live cell uses now (cell_usage_get): for E2B's per-sandbox
 * metrics. From the host's /proc entries of the cell's processes, its
 * cgroup's files, and its init's statfs of the cell's root (init is ours:
 * no process of the cell answers). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cell_priv.h"
#include "cgroup.h"
#include "procs.h"

/* CPU time and resident pages of init and every process below it. */
static int sum_processes(pid_t init, double *cpu_s, uint64_t *rss, struct sc_err *err)
{
	pid_t *below;
	ssize_t n = rt_procs_below(init, &below, RT_PROCS_MAX, err);
	if (n < 0)
		return -1;
	uint64_t ticks = 0, pages = 0;
	for (ssize_t i = -1; i < n; i++) {
		struct rt_proc_stat st;
		if (!rt_proc_stat(i < 0 ? init : below[i], &st))
			continue; /* ended meanwhile: its time is its parent's now */
		ticks += st.utime + st.stime + st.cutime + st.cstime;
		pages += st.rss_pages;
	}
	free(below);
	long hz = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	*cpu_s = (double)ticks / (double)(hz > 0 ? hz : 100);
	*rss = pages * (uint64_t)(page > 0 ? page : 4096);
	return 0;
}

int cell_usage_get(struct cell *c, struct cell_usage *u, struct sc_err *err)
{
	*u = (struct cell_usage){0};
	if (!cell_is_alive(c))
		return sc_fail(err, ESRCH, "cell %s is not running", c->name);
	uint64_t rss;
	if (sum_processes(c->info.pid, &u->cpu_s, &rss, err) < 0)
		return -1;
	if (!rt_cgroup_memory_now(c->info.cgroup, &u->memory, &u->memory_cache)) {
		u->memory = rss;
		u->memory_cache = 0;
	}
	/* asked of init, in the cell: the host cannot always look through
	 * /proc/PID/root (init's memory may be the host user namespace's) */
	if (!c->info.persist_dir[0] && rt_query_disk(c, &u->disk, &u->disk_size, err) < 0)
		return -1;
	return 0;
}
