/* Private to runtime/: per-cell cgroup v2 leaves, and the rlimit fallback
 * decision when the host has no usable cgroup v2 controllers. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cell.h"

struct cell_cgroup {
	bool active;       /* a leaf exists and holds the limits */
	int dir_fd;        /* O_RDONLY|O_DIRECTORY fd of the leaf the cell's init
			      goes into (CLONE_INTO_CGROUP): <path>/cell */
	char path[4096];   /* absolute path of the cell's cgroup (limits, stats) */
	char why[256];     /* when !active: why not (warn only if limits were asked) */
};

/* Create a leaf for one cell and write its limits (memory.max +
 * memory.swap.max=0, pids.max, cpu.max). When the host cannot (no cgroup v2,
 * no delegation, controllers missing), returns 0 with cg->active=false and
 * cg->why set, unless spec->require_cgroups, which makes it an error. */
int rt_cgroup_create(struct cell_cgroup *cg, const char *cell_id,
		  const struct cell_spec *spec, const struct policy_limits *limits,
		  struct sc_err *err);
/* After the cell ended: memory.peak, cpu.stat usage, and whether the
 * memory or pids limit was hit (memory.events oom, pids.events max). */
void rt_cgroup_collect(struct cell_cgroup *cg, struct cell_result *res);
/* cgroup.kill (or kill every pid in cgroup.procs), wait until empty, rmdir. */
int rt_cgroup_destroy(struct cell_cgroup *cg, struct sc_err *err);
/* Remove the cell cgroups a killed sandcell left behind: children of
 * <base>/sandcell with no process in them, made more than a minute ago
 * (younger ones may belong to a cell being started). Returns how many were
 * removed, or -1. */
int rt_cgroup_gc(struct sc_err *err);
