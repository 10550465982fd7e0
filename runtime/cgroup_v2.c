/* Per-cell cgroups: <base>/sandcell/<cell_id> holds the limits and
 * <base>/sandcell/<cell_id>/cell the processes, where <base> is the subtree
 * delegated to us (see cgroup_probe.c). Controllers are enabled once per
 * level; the "sandcell" and <cell_id> levels never hold processes, so the
 * no-internal-processes rule cannot bite.
 *
 * Why the extra "cell" level: the cell's cgroup namespace is rooted at it, so
 * the limit files one level up are outside anything the cell can mount or
 * name, even when the cell's root is the file owner (a rootless caller) and
 * the host mounted cgroup2 without nsdelegate. */
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

#include "cgroup_probe.h"

#define CG_SELF_LEAF "sandcell-self"
#define CG_CELL_LEAF "cell"
#define CG_MAX_DEPTH 32
#define CG_DRAIN_TIMEOUT_S 10.0

#define read_at rt_cg_read_at
#define write_at rt_cg_write_at

static unsigned controllers_for(const struct policy_limits *l)
{
	return (l->memory ? CG_CTRL_MEMORY : 0) | (l->pids ? CG_CTRL_PIDS : 0) |
	       (l->cpus > 0 ? CG_CTRL_CPU : 0);
}

/* v2 cannot give this cell a cgroup: say why (rlimits take over, unless
 * the caller required cgroups). */
static int no_v2(struct cell_cgroup *cg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int no_v2(struct cell_cgroup *cg, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cg->why, sizeof(cg->why), fmt, ap);
	va_end(ap);
	return 1;
}

/* Enable `want` in dfd's cgroup.subtree_control; returns what is enabled
 * afterwards. errno is left from the last failed write. */
static unsigned enable_controllers(int dfd, unsigned want)
{
	static const struct {
		unsigned bit;
		const char *op;
	} ops[] = {{CG_CTRL_MEMORY, "+memory"}, {CG_CTRL_PIDS, "+pids"}, {CG_CTRL_CPU, "+cpu"}};
	char buf[512];
	if (read_at(dfd, "cgroup.subtree_control", buf, sizeof(buf)) < 0)
		return 0;
	unsigned have = rt_cg_parse_controllers(buf);
	int saved = 0;
	for (size_t i = 0; i < SC_ARRAY_LEN(ops); i++) {
		if (!(want & ops[i].bit) || (have & ops[i].bit))
			continue;
		if (write_at(dfd, "cgroup.subtree_control", ops[i].op) == 0)
			have |= ops[i].bit;
		else
			saved = errno;
	}
	errno = saved;
	return have;
}

/* Move this process into <dir>/sandcell-self so that <dir> has no
 * processes of its own and may enable controllers for its children. */
static int move_self_to_leaf(int dfd)
{
	char pid[32];
	if (mkdirat(dfd, CG_SELF_LEAF, 0755) < 0 && errno != EEXIST)
		return -1;
	_cleanup_fd_ int leaf = openat(dfd, CG_SELF_LEAF, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (leaf < 0)
		return -1;
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	return write_at(leaf, "cgroup.procs", pid);
}

static int write_limits(int dfd, const struct policy_limits *l, struct sc_err *err)
{
	char val[64];
	if (l->memory) {
		snprintf(val, sizeof(val), "%llu", (unsigned long long)l->memory);
		if (write_at(dfd, "memory.max", val) < 0)
			return sc_fail(err, errno, "cannot set memory.max to %s", val);
		/* without swap accounting (swapaccount=0) the file is absent */
		if (write_at(dfd, "memory.swap.max", "0") < 0 && errno != ENOENT)
			return sc_fail(err, errno, "cannot set memory.swap.max to 0");
	}
	if (l->pids) {
		snprintf(val, sizeof(val), "%llu", (unsigned long long)l->pids);
		if (write_at(dfd, "pids.max", val) < 0)
			return sc_fail(err, errno, "cannot set pids.max to %s", val);
	}
	if (l->cpus > 0) {
		if (rt_cg_format_cpu_max(l->cpus, val, sizeof(val)) < 0)
			return sc_fail(err, EINVAL, "bad cpu count %g", l->cpus);
		if (write_at(dfd, "cpu.max", val) < 0)
			return sc_fail(err, errno, "cannot set cpu.max to '%s'", val);
	}
	return 0;
}

/* In the new <cell_id> directory: write the limits, make the "cell" leaf
 * and return its fd for CLONE_INTO_CGROUP (O_RDONLY, not O_PATH: every
 * kernel with CLONE_INTO_CGROUP takes it). */
static int make_cell_leaf(int sub, const char *cell_id, const struct policy_limits *l,
			  struct sc_err *err)
{
	_cleanup_fd_ int lim = openat(sub, cell_id, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (lim < 0)
		return sc_fail(err, errno, "cannot open the new cgroup");
	if (write_limits(lim, l, err) < 0)
		return -1;
	if (mkdirat(lim, CG_CELL_LEAF, 0755) < 0)
		return sc_fail(err, errno, "cannot create the cell's leaf cgroup");
	int fd = openat(lim, CG_CELL_LEAF, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		int e = errno;
		unlinkat(lim, CG_CELL_LEAF, AT_REMOVEDIR);
		return sc_fail(err, e, "cannot open the cell's leaf cgroup");
	}
	return fd;
}

int rt_cg2_create(struct cell_cgroup *cg, const struct cg_host *h, const char *cell_id,
		     const struct policy_limits *limits, struct sc_err *err)
{
	if (!h->base[0] || !(h->delegated & CG_CTRL_ALL))
		return no_v2(cg, "%s", h->why);

	unsigned need = controllers_for(limits);
	unsigned want = h->delegated & CG_CTRL_ALL;
	char names[64];
	if (need & ~want) {
		rt_cg_ctrl_names(need & ~want, names, sizeof(names));
		return no_v2(cg, "cgroup v2 controller(s) %s not delegated at %.150s", names, h->base);
	}

	_cleanup_fd_ int base = open(h->base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (base < 0)
		return no_v2(cg, "cannot open %.180s: %s", h->base, strerror(errno));
	if (h->base_is_own && move_self_to_leaf(base) < 0)
		return no_v2(cg, "cannot move sandcell into %.150s/" CG_SELF_LEAF ": %s", h->base,
			     strerror(errno));
	unsigned got = enable_controllers(base, want);
	if (need & ~got) {
		rt_cg_ctrl_names(need & ~got, names, sizeof(names));
		return no_v2(cg, "cannot enable %s in %.150s: %s%s", names, h->base, strerror(errno),
			     errno == EBUSY ? " (it has processes of its own)" : "");
	}

	if (mkdirat(base, CG_SUBTREE, 0755) < 0 && errno != EEXIST)
		return no_v2(cg, "cannot create %.150s/" CG_SUBTREE ": %s", h->base, strerror(errno));
	_cleanup_fd_ int sub = openat(base, CG_SUBTREE, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (sub < 0)
		return no_v2(cg, "cannot open %.150s/" CG_SUBTREE ": %s", h->base, strerror(errno));
	got = enable_controllers(sub, want);
	if (need & ~got) {
		rt_cg_ctrl_names(need & ~got, names, sizeof(names));
		return no_v2(cg, "cannot enable %s in %.150s/" CG_SUBTREE ": %s", names, h->base,
			     strerror(errno));
	}

	if (sc_path(cg->path, sizeof(cg->path), "%s/" CG_SUBTREE "/%s", h->base, cell_id) < 0)
		return sc_fail(err, errno, "cgroup path for %s", cell_id);
	if (mkdirat(sub, cell_id, 0755) < 0) {
		if (errno == EEXIST)
			return sc_fail(err, EEXIST, "cgroup %s already exists", cg->path);
		return no_v2(cg, "cannot create %.200s: %s", cg->path, strerror(errno));
	}
	cg->dir_fd = make_cell_leaf(sub, cell_id, limits, err);
	if (cg->dir_fd < 0) {
		sc_err_wrap(err, "cgroup %s", cg->path);
		unlinkat(sub, cell_id, AT_REMOVEDIR);
		return -1;
	}
	cg->active = true;
	cg->why[0] = '\0';
	return 0;
}

/* Read a file of the limits level (memory.peak etc. are hierarchical). */
static ssize_t read_limits_file(const struct cell_cgroup *cg, const char *name, char *buf,
				size_t size)
{
	char path[PATH_MAX];
	if (sc_path(path, sizeof(path), "%s/%s", cg->path, name) < 0)
		return -1;
	return read_at(AT_FDCWD, path, buf, size);
}

/* Call fn on each child cgroup of dfd (a cell may have made its own). */
static int for_each_child(int dfd, int depth, int (*fn)(int parent, const char *name, int depth))
{
	if (depth > CG_MAX_DEPTH) {
		errno = ELOOP;
		return -1;
	}
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	int rc = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_type != DT_DIR || !strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fn(dfd, e->d_name, depth + 1) < 0)
			rc = -1;
	}
	closedir(d);
	return rc;
}

static void kill_procs_in(int dfd)
{
	char buf[65536];
	if (read_at(dfd, "cgroup.procs", buf, sizeof(buf)) <= 0)
		return;
	char *save = NULL;
	for (char *t = strtok_r(buf, "\n", &save); t; t = strtok_r(NULL, "\n", &save)) {
		char *end;
		long pid = strtol(t, &end, 10);
		if (*end == '\0' && pid > 1)
			kill((pid_t)pid, SIGKILL);
	}
}

static int kill_procs_below(int parent, const char *name, int depth)
{
	_cleanup_fd_ int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	kill_procs_in(fd);
	return for_each_child(fd, depth, kill_procs_below);
}

/* cgroup.kill (5.14+) kills the whole subtree at once. Before it: freeze,
 * SIGKILL every listed process at every level, thaw (a frozen fork bomb
 * cannot outrun the loop). */
static void kill_all(int dfd)
{
	if (write_at(dfd, "cgroup.kill", "1") == 0)
		return;
	bool frozen = write_at(dfd, "cgroup.freeze", "1") == 0;
	kill_procs_in(dfd);
	for_each_child(dfd, 0, kill_procs_below);
	if (frozen)
		write_at(dfd, "cgroup.freeze", "0");
}

static bool populated(int events_fd)
{
	char buf[512];
	uint64_t v;
	ssize_t n = pread(events_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return rt_cg_parse_keyed(buf, "populated", &v) == 0 && v != 0;
}

/* Kill everything and wait (bounded) until cgroup.events says empty; it
 * counts the whole subtree. */
static int drain(int dfd)
{
	_cleanup_fd_ int ev = openat(dfd, "cgroup.events", O_RDONLY | O_CLOEXEC);
	if (ev < 0)
		return -1;
	double deadline = sc_now() + CG_DRAIN_TIMEOUT_S;
	kill_all(dfd);
	while (populated(ev)) {
		if (sc_now() > deadline) {
			errno = EBUSY;
			return -1;
		}
		/* cgroup.events signals changes with POLLPRI */
		struct pollfd p = {.fd = ev, .events = POLLPRI};
		poll(&p, 1, 50);
		kill_all(dfd);
	}
	return 0;
}

static int remove_tree(int parent, const char *name, int depth)
{
	_cleanup_fd_ int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	if (for_each_child(fd, depth, remove_tree) < 0)
		return -1;
	return rt_cg_rmdir_at(parent, name);
}

/* No process in the v2 cell cgroup parent/name (it exists). */
static bool unpopulated(int parent, const char *name)
{
	char buf[256];
	uint64_t v;
	_cleanup_fd_ int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	return fd >= 0 && read_at(fd, "cgroup.events", buf, sizeof(buf)) > 0 &&
	       rt_cg_parse_keyed(buf, "populated", &v) == 0 && v == 0;
}

static int gc_one(int parent, const char *name)
{
	if (!rt_cg_stale(parent, name) || !unpopulated(parent, name))
		return 0;
	return remove_tree(parent, name, 0) == 0 ? 1 : 0;
}

void rt_cg2_join(const struct cell_cgroup *cg)
{
	_cleanup_fd_ int dfd = open(cg->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0 || (mkdirat(dfd, "egress", 0755) < 0 && errno != EEXIST))
		return;
	(void)write_at(dfd, "egress/cgroup.procs", "0");
}

bool rt_cg2_memory_now(const struct cell_cgroup *cg, uint64_t *bytes, uint64_t *cache)
{
	char buf[8192];
	if (read_limits_file(cg, "memory.current", buf, sizeof(buf)) <= 0)
		return false;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(buf, &end, 10);
	if (errno || end == buf)
		return false;
	*bytes = v;
	if (read_limits_file(cg, "memory.stat", buf, sizeof(buf)) <= 0 ||
	    rt_cg_parse_keyed(buf, "file", cache) < 0)
		*cache = 0;
	return true;
}

void rt_cg2_collect(const struct cell_cgroup *cg, struct cell_result *res)
{
	char buf[2048];
	uint64_t v;
	if (read_limits_file(cg, "memory.peak", buf, sizeof(buf)) > 0) {
		char *end;
		errno = 0;
		unsigned long long peak = strtoull(buf, &end, 10);
		if (errno == 0 && end != buf)
			res->peak_memory = peak;
	}
	if (read_limits_file(cg, "cpu.stat", buf, sizeof(buf)) > 0 &&
	    rt_cg_parse_keyed(buf, "usage_usec", &v) == 0)
		res->cpu_s = (double)v / 1e6;
	if (res->limit_hit)
		return;
	/* "oom" counts allocations that failed at this cgroup's limit;
	 * "oom_kill" would also count a host-wide OOM kill, not our limit. */
	if (read_limits_file(cg, "memory.events", buf, sizeof(buf)) > 0 &&
	    rt_cg_parse_keyed(buf, "oom", &v) == 0 && v > 0) {
		res->limit_hit = "memory";
		return;
	}
	if (read_limits_file(cg, "pids.events", buf, sizeof(buf)) > 0 &&
	    rt_cg_parse_keyed(buf, "max", &v) == 0 && v > 0)
		res->limit_hit = "pids";
}

uint64_t rt_cg2_memory_kills(const struct cell_cgroup *cg)
{
	char buf[2048];
	uint64_t v;
	/* "oom", as rt_cg2_collect reads it: at this cgroup's limit */
	if (read_limits_file(cg, "memory.events", buf, sizeof(buf)) > 0 &&
	    rt_cg_parse_keyed(buf, "oom", &v) == 0)
		return v;
	return 0;
}

int rt_cg2_destroy(const struct cell_cgroup *cg, struct sc_err *err)
{
	_cleanup_fd_ int lim = open(cg->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (lim < 0)
		return errno == ENOENT ? 0 : sc_fail(err, errno, "cannot open cgroup %s", cg->path);
	if (drain(lim) < 0)
		return sc_fail(err, errno, "processes left in cgroup %s", cg->path);
	/* the cell's name is the last component of its path */
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s", cg->path);
	char *slash = strrchr(parent, '/');
	if (!slash || slash == parent)
		return sc_fail(err, EINVAL, "odd cgroup path %s", cg->path);
	*slash = '\0';
	_cleanup_fd_ int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0 || remove_tree(pfd, slash + 1, 0) < 0)
		return sc_fail(err, errno, "cannot remove cgroup %s", cg->path);
	return 0;
}

int rt_cg2_remove_dead(const struct cg_host *h, const char *name)
{
	_cleanup_fd_ int sub = rt_cg_open_subtree(h->base);
	return sub >= 0 && unpopulated(sub, name) && remove_tree(sub, name, 0) == 0;
}

int rt_cg2_gc(const struct cg_host *h, struct sc_err *err)
{
	_cleanup_fd_ int sub = rt_cg_open_subtree(h->base);
	if (sub < 0)
		return errno == ENOENT ? 0 : sc_fail(err, errno, "cannot open %s/" CG_SUBTREE, h->base);
	_cleanup_dir_ DIR *d = sc_opendir_at(sub);
	if (!d)
		return sc_fail(err, errno, "cannot list %s/" CG_SUBTREE, h->base);
	int removed = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_type == DT_DIR && e->d_name[0] != '.')
			removed += gc_one(sub, e->d_name);
	return removed;
}

int rt_cg2_set_memory(const char *path, const char *cell, uint64_t bytes, struct sc_err *err)
{
	_cleanup_fd_ int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0)
		return sc_fail(err, errno, "open the cgroup of cell %s", cell);
	char val[32];
	snprintf(val, sizeof(val), "%llu", (unsigned long long)bytes);
	if (write_at(dfd, "memory.max", val) < 0)
		return sc_fail(err, errno == ENOENT ? ENOTSUP : errno,
			       "cannot set memory.max of cell %s (made without a memory limit?)", cell);
	if (write_at(dfd, "memory.swap.max", "0") < 0 && errno != ENOENT)
		return sc_fail(err, errno, "cannot set memory.swap.max of cell %s", cell);
	return 0;
}
