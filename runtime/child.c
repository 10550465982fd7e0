/* The post-clone child: becomes root of the cell's user namespace, builds
 * the root, locks itself down and turns into the cell's PID 1. */
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "cellpath.h"
#include "channel.h"
#include "egress.h"
#include "ports.h"
#include "internal.h"
#include "landlock.h"

/* Wait for the parent's go; it may carry bind mount fds and then idmapped
 * layer clones (root callers, whose binds and layers the parent prepares
 * with host privileges). */
static int wait_for_go(struct cell_plan *plan, struct sc_err *err)
{
	char byte;
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	union {
		char buf[CMSG_SPACE(sizeof(int) * (CELL_MAX_BINDS + CELL_MAX_LAYERS))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf)};
	const struct cell_spec *spec = plan->spec;
	size_t nbinds = plan->range_map ? spec->nbinds : 0;
	size_t nlayers = plan->idmap_layers ? spec->nlayers : 0;
	ssize_t n;
	do
		n = recvmsg(plan->sync_fd, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n != 1)
		_exit(CELL_EXIT_INTERNAL); /* the parent is gone */
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	size_t nfds = 0;
	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
		nfds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
	if (nfds && nfds != nbinds + nlayers)
		return sc_fail(err, 0, "got %zu mount fds, expected %zu", nfds, nbinds + nlayers);
	if (nlayers && (nfds == 0 || (msg.msg_flags & MSG_CTRUNC)))
		return sc_fail(err, 0, "the parent sent no image layers");
	if (nfds) {
		memcpy(plan->bind_fds, CMSG_DATA(c), nbinds * sizeof(int));
		memcpy(plan->lower_fds, (const int *)(const void *)CMSG_DATA(c) + nbinds,
		       nlayers * sizeof(int));
		plan->nlowers = nlayers;
	}
	return 0;
}

/* Rootless callers: clone the bind sources here, with the caller's own
 * access rights, before the cell's tmpfs hides anything. */
static int open_binds_here(struct cell_plan *plan, struct sc_err *err)
{
	const struct cell_spec *spec = plan->spec;
	for (size_t i = 0; i < spec->nbinds; i++) {
		const struct cell_bind *b = &spec->binds[i];
		if (!b->host || plan->bind_fds[i] >= 0)
			continue;
		int fd = open_tree(AT_FDCWD, b->host, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
		if (fd < 0)
			return sc_fail(err, errno, "cannot bind %s", b->host);
		if (b->readonly) {
			struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
							      MOUNT_ATTR_NODEV};
			if (mount_setattr(fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr)) < 0)
				return sc_fail(err, errno, "cannot make %s read-only", b->host);
		}
		plan->bind_fds[i] = fd;
	}
	return 0;
}

/* Die with the parent. Armed again after each change of credentials: the
 * kernel clears the parent-death signal when the effective uid or gid
 * changes, which it does for root callers (the cell's root is an
 * unprivileged host id). A parent that died before the signal was armed
 * again has closed its end of the go channel (its files close before its
 * children are told): then die now. */
static void die_with_parent(const struct cell_plan *plan)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		_exit(CELL_EXIT_INTERNAL);
	struct pollfd pfd = {.fd = plan->sync_fd, .events = POLLRDHUP};
	int n;
	do
		n = poll(&pfd, 1, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0 || (pfd.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL)))
		_exit(CELL_EXIT_INTERNAL);
}

/* Raw syscalls, never glibc's setresgid/setresuid/setgroups: those apply
 * the change to every thread glibc knows of, and after a raw clone3 its
 * list still holds the creator's other threads, which do not exist here.
 * One that was being started at the clone is waited for forever (seen in
 * a pool worker, whose TSan build starts a thread of its own). */
static int become_cell_root(const struct cell_plan *plan, struct sc_err *err)
{
	if (syscall(SYS_setresgid, 0, 0, 0) < 0 || syscall(SYS_setresuid, 0, 0, 0) < 0)
		return sc_fail(err, errno, "become root of the cell's user namespace");
	/* Drop the caller's supplementary groups where setgroups is allowed
	 * (root callers); elsewhere they are pinned by setgroups=deny. */
	(void)syscall(SYS_setgroups, 0, NULL);
	die_with_parent(plan);
	return 0;
}

extern char **environ;

/* The field'th space-separated field (1-based) of /proc/self/stat into
 * *out; false when the line has no such field. */
static bool stat_field(const char *stat, size_t len, int field, unsigned long *out)
{
	const char *p = memrchr(stat, ')', len); /* comm may hold spaces */
	if (!p)
		return false;
	const char *end = stat + len;
	for (int f = 2; p < end; p++)
		if (*p == ' ' && ++f == field) {
			char *e;
			errno = 0;
			*out = strtoul(p + 1, &e, 10);
			return e != p + 1 && errno == 0 && (*e == ' ' || *e == '\n' || *e == '\0');
		}
	return false;
}

/* This process's /proc/self/stat line into buf (one read: the kernel
 * answers it whole), its length, or 0 when unreadable. */
static size_t read_own_stat(char *buf, size_t size)
{
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n;
	do
		n = read(fd, buf, size - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return (size_t)n;
}

/* The host's environment (API keys among it) must not live on in the
 * cell's init: /proc/<init>/environ shows the strings the kernel placed at
 * exec, wherever environ points now, so blank that whole range in place,
 * and any string environ points to elsewhere. The cell's commands get
 * their environment from the spec, never from ours. No malloc here: the
 * parent may have been multi-threaded. */
static void scrub_environment(const char *stat, size_t n)
{
	for (char **e = environ; e && *e; e++)
		memset(*e, 0, strlen(*e));
	environ = NULL;
	unsigned long start, end;
	if (n && stat_field(stat, n, 50, &start) && stat_field(stat, n, 51, &end) && start &&
	    end > start && end - start < (64UL << 20))
		memset((void *)start, 0, end - start);
}

/* The signals ignored from the start (the caller's, inherited through
 * clone): 1-31 from field 33 of stat (sigignore; the kernel shows only
 * those), the real-time ones as the parent probed them. Unknown: all, so
 * that commands reset every one. */
static uint64_t inherited_ignored(const char *stat, size_t n, uint64_t realtime)
{
	unsigned long ign;
	if (!n || !stat_field(stat, n, 33, &ign))
		return RT_SIGS_ALL;
	return ((uint64_t)ign & 0x7fffffffu) | (realtime & ~UINT64_C(0x7fffffff));
}

/* Long-lived cells: tell the creator we are ready and wait for its word
 * before outliving it (until then we die with it). */
static void serve_when_released(const struct cell_plan *plan, uid_t peer_uid)
{
	rt_child_send(plan->status_fd, CELL_MSG_READY, 0, NULL);
	char byte;
	ssize_t n;
	do
		n = read(plan->sync_fd, &byte, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1)
		_exit(CELL_EXIT_INTERNAL);
	if (!plan->spec->die_with_creator)
		prctl(PR_SET_PDEATHSIG, 0);
	rt_child_send(plan->status_fd, CELL_MSG_DETACHED, 0, NULL);
	close(plan->sync_fd);
	close(plan->status_fd);
	rt_init_serve(plan, peer_uid);
}

/* On cgroup v1 the parent moves the cell into its cgroups while the setup
 * runs (the first move waits for an RCU grace period: ~10 ms on a kernel
 * of HZ=250). Until its word comes nothing may be forked or run: the
 * setup's own allocations are the only ones charged outside the cell. */
static void wait_for_cgroup(const struct cell_plan *plan)
{
	if (!plan->await_cgroup)
		return;
	char byte = 0;
	ssize_t n;
	do
		n = read(plan->sync_fd, &byte, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1 || byte != 'a')
		_exit(CELL_EXIT_INTERNAL); /* the parent is gone */
}

/* run -t: a pty of the cell's own devpts (so that `tty` names it) on
 * 0/1/2; its master goes to the host side, which relays it. */
static int open_own_pty(const struct cell_plan *plan, struct sc_err *err)
{
	if (!plan->spec->tty)
		return 0;
	_cleanup_fd_ int m = open("/dev/pts/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m < 0)
		return sc_fail(err, errno, "open the cell's /dev/pts/ptmx");
	int unlock = 0;
	if (ioctl(m, TIOCSPTLCK, &unlock) < 0)
		return sc_fail(err, errno, "unlock the cell's pty");
	int s = ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY);
	if (s < 0)
		return sc_fail(err, errno, "open the cell's pty");
	for (int k = 0; k < 3; k++)
		if (dup2(s, k) < 0)
			return sc_fail(err, errno, "the pty as stdio");
	if (s > 2)
		close(s);
	if (rt_chan_send_fd(plan->sync_fd, RT_CHAN_TAG_PTY, m) < 0)
		return sc_fail(err, errno, "hand the pty to the host side");
	return 0;
}

/* After pivot_root: the paths resolve in the cell's own root. */
static int make_spec_dirs(const struct cell_spec *spec, struct sc_err *err)
{
	for (const char *const *d = spec->make_dirs; d && *d; d++)
		if (rt_cellpath_mkdir_p(*d, 0755) < 0)
			return sc_fail(err, errno, "cannot create %.200s in the cell", *d);
	return 0;
}

static int make_seed_file(const struct cell_seed_file *f, struct sc_err *err)
{
	if (!f->path || f->path[0] != '/')
		return sc_fail(err, EINVAL, "seed file '%.200s': not an absolute path",
			       f->path ? f->path : "");
	char leaf[NAME_MAX + 1];
	_cleanup_fd_ int dir = rt_cellpath_open_parent(f->path, 0755, leaf);
	if (dir < 0)
		return sc_fail(err, errno, "seed file %.200s", f->path);
	/* what the image has there is replaced, never through a link, and a
	 * FIFO does not block (O_NONBLOCK: ENXIO) */
	_cleanup_fd_ int fd = openat(dir, leaf, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK |
							O_NOCTTY | O_CLOEXEC,
				     0644);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return sc_fail(err, errno, "seed file %.200s", f->path);
	if (!S_ISREG(st.st_mode))
		return sc_fail(err, EINVAL, "seed file %.200s: not a regular file in the image", f->path);
	if (sc_write_all(fd, f->data, f->len) < 0 || fchmod(fd, 0644) < 0)
		return sc_fail(err, errno, "seed file %.200s", f->path);
	return 0;
}

static int make_seed_files(const struct cell_spec *spec, struct sc_err *err)
{
	for (size_t i = 0; i < spec->nseed_files; i++)
		if (make_seed_file(&spec->seed_files[i], err) < 0)
			return -1;
	return 0;
}

/* Everything the caller had open when it cloned us (its HTTP listener and
 * clients, a shell's fds, a library user's files) is closed before any
 * cell code runs: only stdio and the plan's own fds stay. Closing before
 * exec is not enough, because a long-lived init never execs. */
static void close_inherited_fds(const struct cell_plan *plan)
{
	int keep[4 + CELL_MAX_LAYERS + CELL_MAX_BINDS + CELL_MAX_PORTS + 16];
	size_t n = 0;
	int fixed[] = {plan->status_fd, plan->sync_fd, plan->serve_fd, plan->upper_fd};
	for (size_t i = 0; i < SC_ARRAY_LEN(fixed); i++)
		keep[n++] = fixed[i];
	for (size_t i = 0; i < plan->nlowers; i++)
		keep[n++] = plan->lower_fds[i];
	for (size_t i = 0; i < plan->nsnaps; i++)
		keep[n++] = plan->snap_fds[i];
	for (size_t i = 0; i < plan->spec->nbinds && i < CELL_MAX_BINDS; i++)
		keep[n++] = plan->bind_fds[i];
	for (size_t i = 0; i < plan->spec->nports && i < CELL_MAX_PORTS; i++)
		keep[n++] = plan->spec->ports[i].fd;
	rt_close_fds_except(keep, n);
}

/* The host-side fds the root was assembled from (image layers, bind
 * sources, a persistent cell's directory) are closed as soon as the root
 * stands, before any path in the cell is resolved: through
 * /proc/self/fd/N/.. they would lead out of it. */
static void close_host_fds(struct cell_plan *plan)
{
	for (size_t i = 0; i < plan->spec->nbinds && i < CELL_MAX_BINDS; i++)
		sc_closep(&plan->bind_fds[i]);
	for (size_t i = 0; i < plan->nlowers; i++)
		sc_closep(&plan->lower_fds[i]);
	plan->nlowers = 0;
	sc_closep(&plan->upper_fd);
	for (size_t i = 0; i < plan->nsnaps; i++)
		sc_closep(&plan->snap_fds[i]);
}

/* After no_new_privs, before seccomp (which may refuse the landlock
 * calls): every later process of the cell inherits the domain. */
static int restrict_with_landlock(const struct cell_plan *plan, struct sc_err *err)
{
	const struct cell_spec *spec = plan->spec;
	if (spec->require_landlock && spec->landlock.no_filesystem)
		return sc_fail(err, 0, "--require-landlock: the policy turns Landlock's "
				       "filesystem rules off (\"landlock\" in the policy)");
	/* the proxy, and the published ports for the relay: connecting to
	 * them reaches only the cell's own loopback (its netns has lo only) */
	int ports[1 + CELL_MAX_PORTS];
	size_t n = 0;
	if (spec->egress)
		ports[n++] = NET_PROXY_PORT;
	for (size_t i = 0; i < spec->nports && i < CELL_MAX_PORTS; i++)
		ports[n++] = spec->ports[i].cell_port;
	int abi = rt_landlock_restrict(&spec->landlock, plan->layer_fd, ports, n, err);
	if (abi < 0)
		return -1;
	if (abi == 0 && spec->require_landlock)
		return sc_fail(err, ENOSYS, "--require-landlock: this kernel has no usable "
					    "Landlock (needs Linux >= 5.19 with landlock in its "
					    "lsm= list; run 'sandcell doctor')");
	return 0;
}

void rt_child_main(struct cell_plan *plan)
{
	struct sc_err err = {0};
	sigset_t all;
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	die_with_parent(plan);
	close_inherited_fds(plan);
	char stat[2048];
	size_t n = read_own_stat(stat, sizeof(stat));
	plan->ignored_sigs = inherited_ignored(stat, n, plan->ignored_sigs);
	scrub_environment(stat, n);
	if (wait_for_go(plan, &err) < 0 || become_cell_root(plan, &err) < 0 ||
	    open_binds_here(plan, &err) < 0)
		rt_child_die(plan, &err);
	const struct cell_spec *spec = plan->spec;
	if (sethostname(spec->hostname, strlen(spec->hostname)) < 0) {
		sc_fail(&err, errno, "set hostname");
		rt_child_die(plan, &err);
	}
	int mounted = rt_mount_root(plan, &err);
	close_host_fds(plan);
	if (mounted < 0 || make_spec_dirs(spec, &err) < 0 ||
	    make_seed_files(spec, &err) < 0 ||
	    rt_net_loopback_up(&err) < 0 || rt_egress_child_listen(plan, &err) < 0 ||
	    open_own_pty(plan, &err) < 0)
		rt_child_die(plan, &err);
	if (setsid() < 0) {
		sc_fail(&err, errno, "setsid");
		rt_child_die(plan, &err);
	}
	if (plan->use_trampoline && (plan->tramp_fd = rt_exec_trampoline_create()) < 0) {
		sc_fail(&err, errno, "create the exec trampoline");
		rt_child_die(plan, &err);
	}
	rt_oom_open(plan); /* before init stops being dumpable */
	if (plan->serve) {
		plan->ns_fds[0] = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
		plan->ns_fds[1] = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	}
	if (rt_lockdown_init_process(plan, &err) < 0 || restrict_with_landlock(plan, &err) < 0)
		rt_child_die(plan, &err);
	if (rt_cellpath_chdir(spec->workdir) < 0) {
		sc_fail(&err, errno, "working directory %s", spec->workdir);
		rt_child_die(plan, &err);
	}
	uid_t peer_uid = plan->serve ? rt_serve_peer_uid(plan) : 0;
	wait_for_cgroup(plan);
	if (!plan->serve)
		close(plan->sync_fd);
	if (rt_lockdown_apply_filter(spec->filter, &err) < 0 ||
	    rt_ports_start_relay(plan, &err) < 0)
		rt_child_die(plan, &err);
	if (plan->serve)
		serve_when_released(plan, peer_uid);
	rt_init_run_once(plan);
}
