/* Per-cell cgroups on cgroup v1 hierarchies, for root callers on v1-only
 * and hybrid hosts (where the controllers live in v1 and v2 has none):
 * <mount>/sandcell/<cell_id> in the memory, pids and cpu hierarchies.
 *
 * Differences from v2 that shape this file: there is no CLONE_INTO_CGROUP
 * (the parent writes the child's pid into each cgroup before it releases
 * the child), no cgroup.kill and no cgroup.events (teardown kills what
 * cgroup.procs lists until it is empty), and each hierarchy is its own
 * tree. The cell cannot touch its limits: the files belong to host root,
 * and the cell's root is an unprivileged host id (root callers only; a
 * rootless caller keeps the rlimit fallback). */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "cgroup_probe.h"

#define CG_SUBTREE "sandcell"
#define CG1_DRAIN_TIMEOUT_S 10.0

/* The cell's cgroup directories, from cg->path ("v1:DIR:DIR..."). */
struct cg1_dirs {
	size_t n;
	char dir[CG_NCTRL][PATH_MAX];
};

static int split_dirs(const char *saved, struct cg1_dirs *d)
{
	size_t plen = strlen(RT_CG_V1_PREFIX);
	d->n = 0;
	if (strncmp(saved, RT_CG_V1_PREFIX, plen))
		return -1;
	const char *p = saved + plen;
	while (*p && d->n < CG_NCTRL) {
		size_t len = strcspn(p, ":");
		if (len == 0 || len >= PATH_MAX || p[0] != '/')
			return -1;
		memcpy(d->dir[d->n], p, len);
		d->dir[d->n++][len] = '\0';
		p += len;
		if (*p == ':')
			p++;
	}
	return *p ? -1 : 0;
}

static int write_u64(int dfd, const char *name, unsigned long long v)
{
	char val[32];
	snprintf(val, sizeof(val), "%llu", v);
	return rt_cg_write_at(dfd, name, val);
}

int rt_cg1_set_memory(const char *saved, uint64_t bytes, struct sc_err *err)
{
	struct cg1_dirs d;
	if (split_dirs(saved, &d) < 0)
		return sc_fail(err, EINVAL, "a bad cgroup record '%.100s'", saved);
	for (size_t i = 0; i < d.n; i++) {
		_cleanup_fd_ int dfd = open(d.dir[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (dfd < 0 || faccessat(dfd, "memory.limit_in_bytes", F_OK, 0) < 0)
			continue;
		/* memsw may never be below the limit: lower the limit first, set
		 * memsw, then the limit again (for a raise) */
		(void)write_u64(dfd, "memory.limit_in_bytes", (unsigned long long)bytes);
		if (faccessat(dfd, "memory.memsw.limit_in_bytes", F_OK, 0) == 0 &&
		    write_u64(dfd, "memory.memsw.limit_in_bytes", (unsigned long long)bytes) < 0)
			return sc_fail(err, errno, "cannot set memory.memsw.limit_in_bytes in %s",
				       d.dir[i]);
		if (write_u64(dfd, "memory.limit_in_bytes", (unsigned long long)bytes) < 0)
			return sc_fail(err, errno, "cannot set memory.limit_in_bytes in %s", d.dir[i]);
		return 0;
	}
	return sc_fail(err, ENOTSUP, "the cell has no v1 memory cgroup");
}

void rt_cg1_reset_peaks(const char *saved)
{
	struct cg1_dirs d;
	if (split_dirs(saved, &d) < 0)
		return;
	for (size_t i = 0; i < d.n; i++) {
		_cleanup_fd_ int dfd = open(d.dir[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (dfd < 0)
			continue;
		static const char *const peaks[] = {"memory.max_usage_in_bytes", "memory.failcnt",
						    "memory.memsw.max_usage_in_bytes", "memory.memsw.failcnt"};
		for (size_t k = 0; k < SC_ARRAY_LEN(peaks); k++)
			if (faccessat(dfd, peaks[k], F_OK, 0) == 0)
				(void)write_u64(dfd, peaks[k], 0);
	}
}

/* The limits of the controllers in `ctrls` (those of this hierarchy). */
static int write_limits(int dfd, unsigned ctrls, const struct policy_limits *l, struct sc_err *err)
{
	if ((ctrls & CG_CTRL_MEMORY) && l->memory) {
		if (write_u64(dfd, "memory.limit_in_bytes", l->memory) < 0)
			return sc_fail(err, errno, "cannot set memory.limit_in_bytes to %llu",
				       (unsigned long long)l->memory);
		/* memory + swap at the same value: no swap beyond the limit
		 * (absent without swap accounting) */
		if (write_u64(dfd, "memory.memsw.limit_in_bytes", l->memory) < 0 && errno != ENOENT)
			return sc_fail(err, errno, "cannot set memory.memsw.limit_in_bytes");
	}
	if ((ctrls & CG_CTRL_PIDS) && l->pids && write_u64(dfd, "pids.max", l->pids) < 0)
		return sc_fail(err, errno, "cannot set pids.max to %llu", (unsigned long long)l->pids);
	if ((ctrls & CG_CTRL_CPU) && l->cpus > 0) {
		long long quota = rt_cg_cpu_quota_us(l->cpus);
		if (quota < 0)
			return sc_fail(err, EINVAL, "bad cpu count %g", l->cpus);
		if (write_u64(dfd, "cpu.cfs_period_us", RT_CG_CPU_PERIOD_US) < 0 ||
		    write_u64(dfd, "cpu.cfs_quota_us", (unsigned long long)quota) < 0)
			return sc_fail(err, errno, "cannot set cpu.cfs_quota_us to %lld", quota);
	}
	return 0;
}

/* mkdir <mount>/sandcell/<id> (and sandcell itself the first time). */
static int make_dir(const char *mount, const char *cell_id, char *dir, size_t size,
		    struct sc_err *err)
{
	char sub[PATH_MAX];
	if (sc_path(sub, sizeof(sub), "%s/" CG_SUBTREE, mount) < 0 ||
	    sc_path(dir, size, "%s/%s", sub, cell_id) < 0)
		return sc_fail(err, ENAMETOOLONG, "cgroup path under %s", mount);
	if (mkdir(dir, 0755) == 0)
		return 0;
	if (errno == ENOENT && (mkdir(sub, 0755) == 0 || errno == EEXIST) && mkdir(dir, 0755) == 0)
		return 0;
	if (errno == EEXIST)
		return sc_fail(err, EEXIST, "cgroup %s already exists", dir);
	return sc_fail(err, errno, "cannot create cgroup %s", dir);
}

int rt_cg1_create(struct cell_cgroup *cg, const struct cg_host *h, const char *cell_id,
		  const struct policy_limits *limits, struct sc_err *err)
{
	unsigned need = (limits->memory ? CG_CTRL_MEMORY : 0) | (limits->pids ? CG_CTRL_PIDS : 0) |
			(limits->cpus > 0 ? CG_CTRL_CPU : 0);
	char names[64];
	if (geteuid() != 0) {
		snprintf(cg->why, sizeof(cg->why), "%.180s; cgroup v1 is for root callers only", h->why);
		return 1;
	}
	if (need & ~h->v1_writable) {
		rt_cg_ctrl_names(need & ~h->v1_writable, names, sizeof(names));
		snprintf(cg->why, sizeof(cg->why), "%.150s; no writable cgroup v1 hierarchy for %.30s",
			 h->why, names);
		return 1;
	}
	/* pids also without a pids limit: teardown finds every process there */
	unsigned set = need | (h->v1_writable & CG_CTRL_PIDS);
	if (!set) {
		snprintf(cg->why, sizeof(cg->why), "%.180s; no cgroup v1 pids hierarchy", h->why);
		return 1;
	}
	/* One directory per hierarchy (controllers may share one). */
	const char *mounts[CG_NCTRL];
	unsigned ctrls[CG_NCTRL];
	size_t n = 0;
	for (unsigned bit = CG_CTRL_MEMORY; bit & CG_CTRL_ALL; bit <<= 1) {
		if (!(set & bit))
			continue;
		const char *m = h->v1_mount[CG_CTRL_INDEX(bit)];
		size_t i = 0;
		while (i < n && strcmp(mounts[i], m))
			i++;
		if (i == n) {
			mounts[n] = m;
			ctrls[n++] = 0;
		}
		ctrls[i] |= bit;
	}
	struct cg1_dirs made = {0};
	size_t used = (size_t)snprintf(cg->path, sizeof(cg->path), RT_CG_V1_PREFIX);
	for (size_t i = 0; i < n; i++) {
		char *dir = made.dir[made.n];
		if (make_dir(mounts[i], cell_id, dir, PATH_MAX, err) < 0)
			goto fail;
		made.n++;
		_cleanup_fd_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (dfd < 0) {
			sc_fail(err, errno, "cannot open cgroup %s", dir);
			goto fail;
		}
		if (write_limits(dfd, ctrls[i], limits, err) < 0) {
			sc_err_wrap(err, "cgroup %s", dir);
			goto fail;
		}
		int w = snprintf(cg->path + used, sizeof(cg->path) - used, "%s%s", i ? ":" : "", dir);
		if (w < 0 || (size_t)w >= sizeof(cg->path) - used || strchr(dir, ':')) {
			sc_fail(err, ENAMETOOLONG, "cgroup path %s", dir);
			goto fail;
		}
		used += (size_t)w;
	}
	cg->active = true;
	cg->v1 = true;
	cg->why[0] = '\0';
	return 0;
fail:
	for (size_t i = 0; i < made.n; i++)
		rmdir(made.dir[i]);
	cg->path[0] = '\0';
	return -1;
}

int rt_cg1_attach(const struct cell_cgroup *cg, pid_t pid, struct sc_err *err)
{
	struct cg1_dirs d;
	char val[32];
	if (split_dirs(cg->path, &d) < 0)
		return sc_fail(err, EINVAL, "odd cgroup path %.200s", cg->path);
	snprintf(val, sizeof(val), "%d", (int)pid);
	for (size_t i = 0; i < d.n; i++) {
		_cleanup_fd_ int dfd = open(d.dir[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (dfd < 0 || rt_cg_write_at(dfd, "cgroup.procs", val) < 0)
			return sc_fail(err, errno, "cannot move the cell into cgroup %s", d.dir[i]);
	}
	return 0;
}

static bool read_u64(int dfd, const char *name, uint64_t *out)
{
	char buf[64], *end;
	if (rt_cg_read_at(dfd, name, buf, sizeof(buf)) <= 0)
		return false;
	errno = 0;
	unsigned long long v = strtoull(buf, &end, 10);
	if (errno || end == buf)
		return false;
	*out = v;
	return true;
}

/* The limit at work: the OOM killer killed in this cgroup and usage had
 * reached the limit. oom_kill alone also counts a host-wide OOM kill;
 * failcnt (which would say "reached") is not kept by every kernel (6.x
 * leaves it at 0), so the peak within 1/16 of the limit says it (charges
 * come in batches). The kills so counted, or 0. */
static uint64_t memory_limit_kills(int dfd, uint64_t peak)
{
	char buf[512];
	uint64_t kills = 0, fails = 0, limit = 0;
	if (rt_cg_read_at(dfd, "memory.oom_control", buf, sizeof(buf)) <= 0 ||
	    rt_cg_parse_keyed(buf, "oom_kill", &kills) < 0 || kills == 0)
		return 0;
	bool reached = (read_u64(dfd, "memory.failcnt", &fails) && fails > 0) ||
		       (read_u64(dfd, "memory.memsw.failcnt", &fails) && fails > 0) ||
		       (read_u64(dfd, "memory.limit_in_bytes", &limit) && peak >= limit - limit / 16);
	return reached ? kills : 0;
}

static bool memory_limit_hit(int dfd, uint64_t peak)
{
	return memory_limit_kills(dfd, peak) > 0;
}

uint64_t rt_cg1_memory_kills(const struct cell_cgroup *cg)
{
	struct cg1_dirs d;
	uint64_t peak;
	if (split_dirs(cg->path, &d) < 0)
		return 0;
	for (size_t i = 0; i < d.n; i++) {
		_cleanup_fd_ int dfd = open(d.dir[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (dfd >= 0 && read_u64(dfd, "memory.max_usage_in_bytes", &peak))
			return memory_limit_kills(dfd, peak);
	}
	return 0;
}

bool rt_cg1_memory_now(const struct cell_cgroup *cg, uint64_t *bytes, uint64_t *cache)
{
	struct cg1_dirs d;
	char buf[8192];
	if (split_dirs(cg->path, &d) < 0)
		return false;
	for (size_t i = 0; i < d.n; i++) {
		_cleanup_fd_ int dfd = open(d.dir[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (dfd < 0 || !read_u64(dfd, "memory.usage_in_bytes", bytes))
			continue;
		/* total_: the cell's own cgroups below this one too */
		if (rt_cg_read_at(dfd, "memory.stat", buf, sizeof(buf)) <= 0 ||
		    rt_cg_parse_keyed(buf, "total_cache", cache) < 0)
			*cache = 0;
		return true;
	}
	return false;
}

void rt_cg1_collect(const struct cell_cgroup *cg, struct cell_result *res)
{
	struct cg1_dirs d;
	char buf[512];
	uint64_t v;
	if (split_dirs(cg->path, &d) < 0)
		return;
	const char *hit = NULL;
	for (size_t i = 0; i < d.n; i++) {
		_cleanup_fd_ int dfd = open(d.dir[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (dfd < 0)
			continue;
		if (read_u64(dfd, "memory.max_usage_in_bytes", &v)) {
			res->peak_memory = v;
			if (memory_limit_hit(dfd, v))
				hit = "memory";
		} else if (!hit && rt_cg_read_at(dfd, "pids.events", buf, sizeof(buf)) > 0 &&
			   rt_cg_parse_keyed(buf, "max", &v) == 0 && v > 0) {
			hit = "pids";
		}
	}
	if (!res->limit_hit)
		res->limit_hit = hit;
}

/* SIGKILL what cgroup.procs lists; false once it lists nothing. */
static bool kill_listed(int dfd)
{
	char buf[65536];
	ssize_t n = rt_cg_read_at(dfd, "cgroup.procs", buf, sizeof(buf));
	if (n <= 0)
		return false;
	bool any = false;
	char *save = NULL;
	for (char *t = strtok_r(buf, "\n", &save); t; t = strtok_r(NULL, "\n", &save)) {
		char *end;
		long pid = strtol(t, &end, 10);
		if (*end == '\0' && pid > 1) {
			kill((pid_t)pid, SIGKILL);
			any = true;
		}
	}
	return any;
}

/* Kill until every hierarchy's cgroup is empty (bounded), then rmdir. A
 * fork bomb cannot outrun it for long: killing its init ends the whole
 * pid namespace, and pids.max bounds it meanwhile. */
int rt_cg1_destroy(const struct cell_cgroup *cg, struct sc_err *err)
{
	struct cg1_dirs d;
	int fds[CG_NCTRL];
	if (split_dirs(cg->path, &d) < 0)
		return sc_fail(err, EINVAL, "odd cgroup path %.200s", cg->path);
	for (size_t i = 0; i < d.n; i++)
		fds[i] = open(d.dir[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	double deadline = sc_now() + CG1_DRAIN_TIMEOUT_S;
	int rc = 0;
	for (;;) {
		bool busy = false;
		for (size_t i = 0; i < d.n; i++)
			if (fds[i] >= 0 && kill_listed(fds[i]))
				busy = true;
		if (!busy)
			break;
		if (sc_now() > deadline) {
			rc = sc_fail(err, EBUSY, "processes left in cgroup %s", d.dir[0]);
			break;
		}
		struct timespec ts = {0, 2 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	for (size_t i = 0; i < d.n; i++) {
		if (fds[i] < 0)
			continue;
		close(fds[i]);
		if (rc == 0 && rt_cg_rmdir_at(AT_FDCWD, d.dir[i]) < 0)
			rc = sc_fail(err, errno, "cannot remove cgroup %s", d.dir[i]);
	}
	return rc;
}

void rt_cg1_join(const struct cell_cgroup *cg)
{
	struct cg1_dirs d;
	if (split_dirs(cg->path, &d) < 0)
		return;
	for (size_t i = 0; i < d.n; i++) {
		_cleanup_fd_ int dfd = open(d.dir[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (dfd >= 0)
			(void)rt_cg_write_at(dfd, "cgroup.procs", "0");
	}
}

/* No process in the v1 cell cgroup sub/name (it exists). */
static bool v1_empty(int sub, const char *name)
{
	char buf[64];
	_cleanup_fd_ int cfd = openat(sub, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	return cfd >= 0 && rt_cg_read_at(cfd, "cgroup.procs", buf, sizeof(buf)) == 0;
}

/* Empty cell cgroups of one hierarchy that gc may take. */
static int gc_hierarchy(const char *mount)
{
	_cleanup_fd_ int sub = rt_cg_open_subtree(mount);
	if (sub < 0)
		return 0;
	_cleanup_dir_ DIR *ls = sc_opendir_at(sub);
	if (!ls)
		return 0;
	int removed = 0;
	struct dirent *e;
	while ((e = readdir(ls))) {
		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		/* a cgroup with processes (or one we cannot read) stays */
		if (!v1_empty(sub, e->d_name) || !rt_cg_stale(sub, e->d_name))
			continue;
		if (rt_cg_rmdir_at(sub, e->d_name) == 0)
			removed++;
	}
	return removed;
}

int rt_cg1_remove_dead(const struct cg_host *h, const char *name)
{
	if (geteuid() != 0)
		return 0;
	int removed = 0;
	for (int i = 0; i < CG_NCTRL; i++) {
		_cleanup_fd_ int sub = rt_cg_open_subtree(h->v1_mount[i]);
		if (sub >= 0 && v1_empty(sub, name) && rt_cg_rmdir_at(sub, name) == 0)
			removed = 1;
	}
	return removed;
}

int rt_cg1_gc(const struct cg_host *h)
{
	if (geteuid() != 0)
		return 0;
	/* a cell has a cgroup in each hierarchy: count cells, not cgroups */
	int removed = 0;
	for (int i = 0; i < CG_NCTRL; i++) {
		if (!h->v1_mount[i][0])
			continue;
		bool seen = false; /* a hierarchy holding several controllers */
		for (int j = 0; j < i; j++)
			seen = seen || !strcmp(h->v1_mount[i], h->v1_mount[j]);
		int n = seen ? 0 : gc_hierarchy(h->v1_mount[i]);
		if (n > removed)
			removed = n;
	}
	return removed;
}
