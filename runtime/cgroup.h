/* Private to runtime/: per-cell cgroups (a cgroup v2 leaf; for root
 * callers on v1 and hybrid hosts, a cgroup in each v1 hierarchy), and the
 * rlimit fallback decision when the host has neither. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cell.h"

/* What a saved cgroup path (the info file's cgroup=) starts with when it
 * lists a cell's v1 cgroups. */
#define RT_CG_V1_PREFIX "v1:"

struct cell_cgroup {
	bool active;       /* a leaf exists and holds the limits */
	bool v1;           /* cgroup v1: rt_cgroup_attach moves the cell in */
	int dir_fd;        /* v2: O_RDONLY|O_DIRECTORY fd of the leaf the cell's
			      init goes into (CLONE_INTO_CGROUP): <path>/cell */
	char path[4096];   /* v2: absolute path of the cell's cgroup (limits,
			      stats); v1: "v1:" and the cell's cgroup in each
			      hierarchy, ':'-separated. The info file keeps it. */
	char why[256];     /* when !active: why not (warn only if limits were asked) */
};

/* Which mechanism a cell with these controllers' limits gets here. */
enum rt_cg_mech { RT_CG_NONE, RT_CG_V1, RT_CG_V2 };
enum rt_cg_mech rt_cgroup_mechanism(unsigned need);

/* Create a leaf for one cell and write its limits (memory.max +
 * memory.swap.max=0, pids.max, cpu.max). When the host cannot (no cgroup v2,
 * no delegation, controllers missing), returns 0 with cg->active=false and
 * cg->why set, unless spec->require_cgroups, which makes it an error. */
int rt_cgroup_create(struct cell_cgroup *cg, const char *cell_id,
		  const struct cell_spec *spec, const struct policy_limits *limits,
		  struct sc_err *err);
/* v1 has no CLONE_INTO_CGROUP: move the new cell's init (not yet
 * released) into its cgroups. Nothing to do for v2. */
int rt_cgroup_attach(const struct cell_cgroup *cg, pid_t pid, struct sc_err *err);
/* A cell_cgroup for teardown from a saved path (the info file). */
void rt_cgroup_from_saved(struct cell_cgroup *cg, const char *saved);
/* The calling process joins a cell's cgroup (the egress helper): v2 in a
 * leaf of its own next to the cell's, v1 in the cell's cgroups. Best
 * effort. */
void rt_cgroup_join(const char *saved);
/* After the cell ended: memory.peak, cpu.stat usage, and whether the
 * memory or pids limit was hit (memory.events oom, pids.events max). */
void rt_cgroup_collect(struct cell_cgroup *cg, struct cell_result *res);
/* The memory the cell's cgroup (saved) charges now, and the page cache of
 * it: false when it has no memory cgroup. */
bool rt_cgroup_memory_now(const char *saved, uint64_t *bytes, uint64_t *cache);
/* While the cell lives: how often its memory limit ended in a kill so far
 * (v2: memory.events "oom"; v1: oom_kill once usage reached the limit),
 * for the cell whose info file saved this cgroup path ("": none, 0). A
 * command that failed while the count went up was killed by the limit. */
uint64_t rt_cgroup_memory_kills(const char *saved);
/* Set the memory limit of the cell whose cgroup was saved as `saved`
 * (cell_set_memory_limit, for cells with a cgroup). */
/* A renewed cell's peak counters back to 0 where the kernel lets them be
 * (v1's max_usage_in_bytes and failcnt; v2's memory.peak is reset only
 * for the fd that wrote it, so it stays). */
void rt_cgroup_reset_peaks(const char *saved);
int rt_cgroup_set_memory(const char *saved, const char *name, uint64_t bytes, struct sc_err *err);
/* cgroup.kill (or kill every pid in cgroup.procs), wait until empty, rmdir. */
int rt_cgroup_destroy(struct cell_cgroup *cg, struct sc_err *err);
/* Remove the cell cgroups a killed sandcell left behind: children of
 * <base>/sandcell with no process in them, made more than a minute ago
 * (younger ones may belong to a cell being started). Returns how many were
 * removed, or -1. */
int rt_cgroup_gc(struct sc_err *err);
/* The empty cgroups of the cell `name` whose init is known to be dead (gc
 * killed it): removed now, not a minute later. 1 when any was removed. */
int rt_cgroup_remove_dead(const char *name);

/* ---- the backends and what they share (cgroup_util.c) ----
 * cgroup.c dispatches to cgroup_v2.c (rt_cg2_) or cgroup_v1.c (rt_cg1_);
 * neither calls the dispatcher, and both use cgroup_util.c. */
#define CG_SUBTREE "sandcell" /* <base>/sandcell holds the cell cgroups */
struct cg_host;
const struct cg_host *rt_cg_host(void); /* probed once per process */
int rt_cg_write_at(int dfd, const char *name, const char *val);
ssize_t rt_cg_read_at(int dfd, const char *name, char *buf, size_t size);
int rt_cg_rmdir_at(int parent, const char *name);
/* <mount>/sandcell, where cell cgroups are: an fd, or -1 with errno
 * (ENOENT: none made yet, or mount is ""). */
int rt_cg_open_subtree(const char *mount);
/* Would gc remove this empty cell cgroup: older than a minute, or made by
 * a sandcell process that is gone? */
bool rt_cg_stale(int parent, const char *name);
int rt_cg1_create(struct cell_cgroup *cg, const struct cg_host *h, const char *cell_id,
		  const struct policy_limits *limits, struct sc_err *err);
int rt_cg1_attach(const struct cell_cgroup *cg, pid_t pid, struct sc_err *err);
void rt_cg1_collect(const struct cell_cgroup *cg, struct cell_result *res);
bool rt_cg1_memory_now(const struct cell_cgroup *cg, uint64_t *bytes, uint64_t *cache);
uint64_t rt_cg1_memory_kills(const struct cell_cgroup *cg);
int rt_cg1_destroy(const struct cell_cgroup *cg, struct sc_err *err);
void rt_cg1_join(const struct cell_cgroup *cg);
/* A new memory limit for a live v1 cell (saved: its "v1:DIR:DIR..." record). */
int rt_cg1_set_memory(const char *saved, uint64_t bytes, struct sc_err *err);
void rt_cg1_reset_peaks(const char *saved);
int rt_cg1_gc(const struct cg_host *h);
/* The v2 leaf: 0 made, 1 not possible here (cg->why says why), -1 error. */
int rt_cg2_create(struct cell_cgroup *cg, const struct cg_host *h, const char *cell_id,
		  const struct policy_limits *limits, struct sc_err *err);
void rt_cg2_join(const struct cell_cgroup *cg);
void rt_cg2_collect(const struct cell_cgroup *cg, struct cell_result *res);
bool rt_cg2_memory_now(const struct cell_cgroup *cg, uint64_t *bytes, uint64_t *cache);
uint64_t rt_cg2_memory_kills(const struct cell_cgroup *cg);
int rt_cg2_destroy(const struct cell_cgroup *cg, struct sc_err *err);
int rt_cg2_remove_dead(const struct cg_host *h, const char *name);
/* Cell cgroups gc may remove (rt_cg_stale, empty): how many were, or -1. */
int rt_cg2_gc(const struct cg_host *h, struct sc_err *err);
int rt_cg2_set_memory(const char *path, const char *cell, uint64_t bytes, struct sc_err *err);
int rt_cg1_remove_dead(const struct cg_host *h, const char *name);
