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

#include "cell_priv.h"
#include "cgroup_probe.h"
#include "state.h"

#define CG_SUBTREE "sandcell"
#define CG_SELF_LEAF "sandcell-self"
#define CG_CELL_LEAF "cell"
#define CG_MAX_DEPTH 32
#define CG_DRAIN_TIMEOUT_S 10.0
/* younger cgroups may belong to a cell being started right now */
#define CG_GC_MIN_AGE_S 60.0

ssize_t rt_cg_read_at(int dfd, const char *name, char *buf, size_t size)
{
	return sc_read_small(dfd, name, SC_READ_NOFOLLOW, buf, size, NULL);
}
#define read_at rt_cg_read_at
#define write_at rt_cg_write_at

int rt_cg_write_at(int dfd, const char *name, const char *val)
{
	_cleanup_fd_ int fd = openat(dfd, name, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	/* cgroup files take one write; a short one would be a partial value */
	ssize_t n = write(fd, val, strlen(val));
	if (n < 0)
		return -1;
	if ((size_t)n != strlen(val)) {
		errno = EIO;
		return -1;
	}
	return 0;
}

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

/* The host's cgroup setup, probed once per process (mountinfo, our own
 * cgroup, the controllers): a pool worker or a batch makes many cells,
 * and the answer does not change under it. Moving ourselves into our
 * leaf (move_self_to_leaf) keeps it true: that step is idempotent. */
const struct cg_host *rt_cg_host(void)
{
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	static struct cg_host h;
	static pid_t probed_by;
	pthread_mutex_lock(&mu);
	if (probed_by != getpid()) {
		rt_cgroup_host_status(&h);
		probed_by = getpid();
	}
	pthread_mutex_unlock(&mu);
	return &h;
}

/* The v2 leaf: 0 made, 1 not possible here (cg->why says why), -1 error. */
static int v2_create(struct cell_cgroup *cg, const struct cg_host *h, const char *cell_id,
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
		sc_err_hint(err, cg->path);
		unlinkat(sub, cell_id, AT_REMOVEDIR);
		return -1;
	}
	cg->active = true;
	cg->why[0] = '\0';
	return 0;
}

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

int rt_cgroup_create(struct cell_cgroup *cg, const char *cell_id,
		  const struct cell_spec *spec, const struct policy_limits *limits,
		  struct sc_err *err)
{
	memset(cg, 0, sizeof(*cg));
	cg->dir_fd = -1;
	if (!rt_cg_valid_leaf_name(cell_id))
		return sc_fail(err, EINVAL, "bad cell id '%.64s' for a cgroup", cell_id);
	const struct cg_host *h = rt_cg_host();
	int rc = v1_instead(h) ? rt_cg1_create(cg, h, cell_id, limits, err)
			       : v2_create(cg, h, cell_id, limits, err);
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
	if (cg.v1) {
		rt_cg1_join(&cg);
		return;
	}
	_cleanup_fd_ int dfd = open(cg.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0 || (mkdirat(dfd, "egress", 0755) < 0 && errno != EEXIST))
		return;
	(void)write_at(dfd, "egress/cgroup.procs", "0");
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

void rt_cgroup_collect(struct cell_cgroup *cg, struct cell_result *res)
{
	char buf[2048];
	uint64_t v;
	if (!cg->active)
		return;
	if (cg->v1) {
		rt_cg1_collect(cg, res);
		return;
	}
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

/* rmdir, retrying briefly while the last exits settle. */
int rt_cg_rmdir_at(int parent, const char *name)
{
	for (int i = 0; unlinkat(parent, name, AT_REMOVEDIR) < 0; i++) {
		if (errno == ENOENT)
			return 0;
		if (errno != EBUSY || i >= 200)
			return -1;
		struct timespec ts = {0, 5 * 1000 * 1000};
		nanosleep(&ts, NULL);
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

int rt_cgroup_destroy(struct cell_cgroup *cg, struct sc_err *err)
{
	if (cg->dir_fd >= 0)
		close(cg->dir_fd);
	cg->dir_fd = -1;
	if (!cg->active)
		return 0;
	cg->active = false;
	if (cg->v1)
		return rt_cg1_destroy(cg, err);
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

bool rt_cg_stale(int parent, const char *name)
{
	struct stat st;
	struct timespec now, boot;
	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
		return false;
	clock_gettime(CLOCK_REALTIME, &now);
	clock_gettime(CLOCK_BOOTTIME, &boot);
	if ((double)(now.tv_sec - st.st_mtim.tv_sec) >= CG_GC_MIN_AGE_S)
		return true;
	/* Younger: it may belong to a cell being started right now, unless
	 * the sandcell process that made it is gone (a killed `run`). */
	long pid = rt_cg_leaf_creator(name);
	if (pid <= 0)
		return false;
	uint64_t ticks = rt_state_pid_starttime((pid_t)pid);
	if (ticks == 0)
		return true; /* gone, or a zombie */
	/* alive: the creator only if it started before the cgroup was made */
	long hz = sysconf(_SC_CLK_TCK);
	double started = (double)(now.tv_sec - boot.tv_sec) + (double)ticks / (double)(hz > 0 ? hz : 100);
	return started > (double)st.st_mtim.tv_sec + 2.0;
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

int rt_cg_open_subtree(const char *mount)
{
	char dir[PATH_MAX];
	if (!mount[0] || sc_path(dir, sizeof(dir), "%s/" CG_SUBTREE, mount) < 0)
		return errno = ENOENT, -1;
	return open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
}

int rt_cgroup_remove_dead(const char *name)
{
	if (!sc_valid_name(name))
		return 0;
	const struct cg_host *h = rt_cg_host();
	int removed = rt_cg1_remove_dead(h, name);
	_cleanup_fd_ int sub = rt_cg_open_subtree(h->base);
	if (sub >= 0 && unpopulated(sub, name) && remove_tree(sub, name, 0) == 0)
		removed = 1;
	return removed;
}

int rt_cgroup_gc(struct sc_err *err)
{
	_cleanup_free_ struct cg_host *h = malloc(sizeof(*h));
	if (!h)
		return sc_fail(err, ENOMEM, "cgroup probe");
	rt_cgroup_host_status(h);
	int removed = rt_cg1_gc(h);
	_cleanup_fd_ int sub = rt_cg_open_subtree(h->base);
	if (sub < 0)
		return errno == ENOENT ? removed
				       : sc_fail(err, errno, "cannot open %s/" CG_SUBTREE, h->base);
	int fd = dup(sub);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return sc_fail(err, errno, "cannot list %s/" CG_SUBTREE, h->base);
	}
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_type == DT_DIR && e->d_name[0] != '.')
			removed += gc_one(sub, e->d_name);
	closedir(d);
	return removed;
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

int cell_set_memory_limit(struct cell *c, uint64_t bytes, struct sc_err *err)
{
	if (!bytes)
		return sc_fail(err, EINVAL, "a memory limit of 0 bytes");
	if (!c->info.cgroup[0]) /* the rlimit stand-in, as the cell was made */
		return rt_set_command_memory(c, bytes, err);
	if (!strncmp(c->info.cgroup, RT_CG_V1_PREFIX, strlen(RT_CG_V1_PREFIX)))
		return rt_cg1_set_memory(c->info.cgroup, bytes, err);
	_cleanup_fd_ int dfd = open(c->info.cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0)
		return sc_fail(err, errno, "open the cgroup of cell %s", c->name);
	char val[32];
	snprintf(val, sizeof(val), "%llu", (unsigned long long)bytes);
	if (write_at(dfd, "memory.max", val) < 0)
		return sc_fail(err, errno == ENOENT ? ENOTSUP : errno,
			       "cannot set memory.max of cell %s (made without a memory limit?)", c->name);
	if (write_at(dfd, "memory.swap.max", "0") < 0 && errno != ENOENT)
		return sc_fail(err, errno, "cannot set memory.swap.max of cell %s", c->name);
	return 0;
}
