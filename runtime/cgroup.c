/* Per-cell cgroups, whichever the host has: the v2 backend
 * (cgroup_v2.c) where v2 is delegated, else for root callers on v1 and
 * hybrid hosts the v1 one (cgroup_v1.c), else none (rlimits take over). */
#include "cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cell_priv.h"
#include "cgroup_probe.h"

/* v2 where it is delegated; else, for root on a v1 or hybrid host, the v1
 * hierarchies. */
static bool v1_instead(const struct cg_host *h)
{
	return h->v1 && !(h->base[0] && (h->delegated & CG_CTRL_ALL));
}

enum rt_cg_mech rt_cgroup_mechanism(unsigned need)
{
	const struct cg_host *h = rt_cg_host();
	if (!v1_instead(h))
		return h->base[0] && !(need & ~(h->delegated & CG_CTRL_ALL)) ? RT_CG_V2 : RT_CG_NONE;
	return geteuid() == 0 && !(need & ~h->v1_writable) ? RT_CG_V1 : RT_CG_NONE;
}

/* Two state roots may hold cells of one name, and the cgroup hierarchy is
 * the host's: a cell's leaf is its id and a short hash of its state root
 * ("NAME.1a2b3c4d"), so that the two do not meet there. */
static bool scoped_leaf(char *out, size_t n, const char *cell_id)
{
	uint32_t h = 2166136261u; /* FNV-1a: disambiguation, not secrecy */
	for (const char *p = cell_state_root(); *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	int len = snprintf(out, n, "%s.%08x", cell_id, (unsigned)h);
	return len > 0 && (size_t)len < n && rt_cg_valid_leaf_name(out);
}

int rt_cgroup_create(struct cell_cgroup *cg, const char *cell_id,
		  const struct cell_spec *spec, const struct policy_limits *limits,
		  struct sc_err *err)
{
	memset(cg, 0, sizeof(*cg));
	cg->dir_fd = -1;
	char leaf[160];
	if (!scoped_leaf(leaf, sizeof(leaf), cell_id))
		return sc_fail(err, EINVAL, "bad cell id '%.64s' for a cgroup", cell_id);
	const struct cg_host *h = rt_cg_host();
	int rc = v1_instead(h) ? rt_cg1_create(cg, h, leaf, limits, err)
			       : rt_cg2_create(cg, h, leaf, limits, err);
	if (rc <= 0)
		return rc;
	cg->active = false;
	if (spec->require_cgroups)
		return sc_fail(err, 0,
			       "cgroup limits required, but %s: see docs/cgroups.md or run "
			       "'sandcell doctor' for the fix",
			       cg->why);
	return 0;
}

int rt_cgroup_attach(const struct cell_cgroup *cg, pid_t pid, struct sc_err *err)
{
	return cg->active && cg->v1 ? rt_cg1_attach(cg, pid, err) : 0;
}

void rt_cgroup_from_saved(struct cell_cgroup *cg, const char *saved)
{
	memset(cg, 0, sizeof(*cg));
	cg->dir_fd = -1;
	cg->active = saved[0] != '\0';
	cg->v1 = !strncmp(saved, RT_CG_V1_PREFIX, strlen(RT_CG_V1_PREFIX));
	snprintf(cg->path, sizeof(cg->path), "%s", saved);
}

void rt_cgroup_join(const char *saved)
{
	struct cell_cgroup cg;
	if (!saved || !saved[0])
		return;
	rt_cgroup_from_saved(&cg, saved);
	if (cg.v1)
		rt_cg1_join(&cg);
	else
		rt_cg2_join(&cg);
}

void rt_cgroup_reset_peaks(const char *saved)
{
	if (saved && !strncmp(saved, RT_CG_V1_PREFIX, strlen(RT_CG_V1_PREFIX)))
		rt_cg1_reset_peaks(saved);
}

void rt_cgroup_collect(struct cell_cgroup *cg, struct cell_result *res)
{
	if (!cg->active)
		return;
	if (cg->v1)
		rt_cg1_collect(cg, res);
	else
		rt_cg2_collect(cg, res);
}

bool rt_cgroup_memory_now(const char *saved, uint64_t *bytes, uint64_t *cache)
{
	if (!saved || !saved[0])
		return false;
	struct cell_cgroup cg;
	rt_cgroup_from_saved(&cg, saved);
	return cg.v1 ? rt_cg1_memory_now(&cg, bytes, cache) : rt_cg2_memory_now(&cg, bytes, cache);
}

uint64_t rt_cgroup_memory_kills(const char *saved)
{
	if (!saved || !saved[0])
		return 0;
	struct cell_cgroup cg;
	rt_cgroup_from_saved(&cg, saved);
	return cg.v1 ? rt_cg1_memory_kills(&cg) : rt_cg2_memory_kills(&cg);
}

int rt_cgroup_destroy(struct cell_cgroup *cg, struct sc_err *err)
{
	if (cg->dir_fd >= 0)
		close(cg->dir_fd);
	cg->dir_fd = -1;
	if (!cg->active)
		return 0;
	cg->active = false;
	return cg->v1 ? rt_cg1_destroy(cg, err) : rt_cg2_destroy(cg, err);
}

int rt_cgroup_remove_dead(const char *name)
{
	char leaf[160];
	if (!sc_valid_name(name) || !scoped_leaf(leaf, sizeof(leaf), name))
		return 0;
	const struct cg_host *h = rt_cg_host();
	int v1 = rt_cg1_remove_dead(h, leaf);
	int v2 = rt_cg2_remove_dead(h, leaf);
	return v1 || v2;
}

int rt_cgroup_gc(struct sc_err *err)
{
	_cleanup_free_ struct cg_host *h = malloc(sizeof(*h));
	if (!h)
		return sc_fail(err, ENOMEM, "cgroup probe");
	rt_cgroup_host_status(h);
	int v1 = rt_cg1_gc(h);
	int v2 = rt_cg2_gc(h, err);
	return v2 < 0 ? -1 : v1 + v2;
}

static enum cell_limit_how how_of(enum rt_cg_mech m)
{
	switch (m) {
	case RT_CG_V1:
		return CELL_LIMIT_CGROUP_V1;
	case RT_CG_V2:
		return CELL_LIMIT_CGROUP_V2;
	case RT_CG_NONE:
		break;
	}
	return CELL_LIMIT_RLIMIT;
}

void cell_limit_mechanisms(struct cell_limit_mechanisms *out)
{
	unsigned defaults = CG_CTRL_MEMORY | CG_CTRL_PIDS;
	out->memory = out->pids = how_of(rt_cgroup_mechanism(defaults));
	out->cpu = how_of(rt_cgroup_mechanism(defaults | CG_CTRL_CPU));
}

const char *cell_limit_how_name(enum cell_limit_how how)
{
	switch (how) {
	case CELL_LIMIT_CGROUP_V1:
		return "cgroup-v1";
	case CELL_LIMIT_CGROUP_V2:
		return "cgroup-v2";
	case CELL_LIMIT_RLIMIT:
		break;
	}
	return "rlimit";
}

int rt_cgroup_set_memory(const char *saved, const char *name, uint64_t bytes, struct sc_err *err)
{
	if (!strncmp(saved, RT_CG_V1_PREFIX, strlen(RT_CG_V1_PREFIX)))
		return rt_cg1_set_memory(saved, bytes, err);
	return rt_cg2_set_memory(saved, name, bytes, err);
}
