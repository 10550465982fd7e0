/* The host side of starting a cell, shared by one-shot and long-lived
 * cells: prepare everything, clone the child into all namespaces (into its
 * cgroup), write its id maps, prepare root callers' binds, release it. */
#include <fcntl.h>
#include <poll.h>
#include <linux/sched.h>
#include <signal.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "../common/idmapfs.h"
#include "channel.h"
#include "egress.h"
#include "start.h"
#include "snapshot.h"

#define CELL_NS_FLAGS                                                                          \
	(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWUTS |              \
	 CLONE_NEWIPC | CLONE_NEWCGROUP)

static void plan_close(struct cell_plan *plan)
{
	for (size_t i = 0; i < plan->nlowers; i++)
		sc_closep(&plan->lower_fds[i]);
	for (size_t i = 0; i < CELL_MAX_BINDS; i++)
		sc_closep(&plan->bind_fds[i]);
	sc_closep(&plan->upper_fd);
	for (size_t i = 0; i < plan->nsnaps; i++)
		sc_closep(&plan->snap_fds[i]);
}

/* Check what the child will open: it opens layers itself, since overlayfs
 * takes only mounts of the mount namespace it is mounted in. */
static int plan_check_paths(struct cell_plan *plan, struct sc_err *err)
{
	const struct cell_spec *spec = plan->spec;
	plan->host_image = spec->nlayers == 0;
	for (size_t i = 0; i < spec->nlayers; i++)
		if (access(spec->layers[i], R_OK | X_OK) < 0)
			return sc_fail(err, errno, "image layer %s", spec->layers[i]);
	if (spec->upper_dir && access(spec->upper_dir, F_OK) < 0)
		return sc_fail(err, errno, "writable layer %s", spec->upper_dir);
	if (spec->snapshot) {
		char ids[RT_SNAP_MAX_DEPTH][RT_SNAP_ID_LEN];
		_Static_assert(sizeof(plan->snap_ids) == sizeof(ids), "snapshot chain sizes");
		if (rt_snapshot_chain(spec->snapshot, ids, &plan->nsnaps, err) < 0)
			return -1;
		memcpy(plan->snap_ids, ids, sizeof(ids));
	}
	for (size_t i = 0; i < spec->nbinds; i++) {
		if (spec->binds[i].host && access(spec->binds[i].host, F_OK) < 0)
			return sc_fail(err, errno, "bind source %s", spec->binds[i].host);
	}
	return 0;
}

static int open_userns(pid_t pid, int *userns, struct sc_err *err)
{
	if (*userns >= 0)
		return 0;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	*userns = open(path, O_RDONLY | O_CLOEXEC);
	if (*userns < 0)
		return sc_fail(err, errno, "open the cell's user namespace");
	return 0;
}

/* Root callers whose image keeps its own owners: the parent clones each
 * layer with host rights and idmaps the clone onto the cell's user
 * namespace, read-only. The clones are detached mounts: the child attaches
 * them in its own mount namespace, the host's table never has them. */
static int parent_prepare_layers(struct cell_plan *plan, pid_t pid, int *userns,
				 struct sc_err *err)
{
	const struct cell_spec *spec = plan->spec;
	if (open_userns(pid, userns, err) < 0)
		return -1;
	for (size_t i = 0; i < spec->nlayers; i++) {
		int fd = open_tree(AT_FDCWD, spec->layers[i],
				   OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW);
		if (fd < 0)
			return sc_fail(err, errno, "image layer %s", spec->layers[i]);
		plan->lower_fds[plan->nlowers++] = fd;
		struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
						      MOUNT_ATTR_NODEV | MOUNT_ATTR_IDMAP,
					  .userns_fd = (uint64_t)*userns};
		if (mount_setattr(fd, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0) {
			sc_fail(err, errno, "cannot show image layer %s to the cell through an idmapped mount",
				spec->layers[i]);
			sc_err_hint(err, "the data directory's filesystem may not support idmapped mounts: "
					 "import or build the image again with " SC_IDMAP_ENV "=0 (shifted layers); "
					 "see 'sandcell doctor'");
			return -1;
		}
	}
	return 0;
}

/* Root callers: the parent clones each bind source with host rights; a
 * writable bind is idmapped onto the cell's user namespace so that the
 * cell's root (an unprivileged host id) may write it. */
static int parent_prepare_binds(struct cell_plan *plan, pid_t pid, int *userns,
				struct sc_err *err)
{
	const struct cell_spec *spec = plan->spec;
	for (size_t i = 0; i < spec->nbinds; i++) {
		const struct cell_bind *b = &spec->binds[i];
		if (!b->host) {
			plan->bind_fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC); /* placeholder */
			continue;
		}
		int fd = open_tree(AT_FDCWD, b->host, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
		if (fd < 0)
			return sc_fail(err, errno, "cannot bind %s", b->host);
		plan->bind_fds[i] = fd;
		struct mount_attr attr = {.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
		if (b->readonly) {
			attr.attr_set |= MOUNT_ATTR_RDONLY;
		} else {
			if (open_userns(pid, userns, err) < 0)
				return -1;
			attr.attr_set |= MOUNT_ATTR_IDMAP;
			attr.userns_fd = (uint64_t)*userns;
		}
		if (mount_setattr(fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr)) < 0) {
			if (!b->readonly) {
				sc_fail(err, errno, "cannot make %s writable for the cell's root (an idmapped mount)",
					b->host);
				sc_err_hint(err, "its filesystem may not support idmapped mounts: add :ro, or run sandcell as a non-root user");
				return -1;
			}
			return sc_fail(err, errno, "cannot make %s read-only", b->host);
		}
	}
	return 0;
}

/* The go byte, with the parent's bind clones (nbinds) and then its layer
 * clones (nlayers), as the child expects them (child.c, wait_for_go). */
static int send_go(int sock, const struct cell_plan *plan, size_t nbinds, size_t nlayers,
		   struct sc_err *err)
{
	char byte = 'g';
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	int fds[CELL_MAX_BINDS + CELL_MAX_LAYERS];
	size_t nfds = nbinds + nlayers;
	memcpy(fds, plan->bind_fds, nbinds * sizeof(int));
	memcpy(fds + nbinds, plan->lower_fds, nlayers * sizeof(int));
	union {
		char buf[CMSG_SPACE(sizeof(int) * (CELL_MAX_BINDS + CELL_MAX_LAYERS))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	if (nfds) {
		memset(&u, 0, sizeof(u));
		msg.msg_control = u.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	if (sendmsg(sock, &msg, MSG_NOSIGNAL) != 1)
		return sc_fail(err, errno, "release the cell");
	return 0;
}

/* The setup's own error, when the child reported one before it died:
 * into err (and true). */
static bool child_error(int status_rd, struct sc_err *err)
{
	struct cell_msg m;
	if (rt_start_read_msg(status_rd, &m) < 0 || m.kind != CELL_MSG_ERROR)
		return false;
	sc_err_set(err, m.value, m.text);
	return true;
}

/* cgroup v1 has no CLONE_INTO_CGROUP: move the child while it sets up
 * (child.c, wait_for_cgroup), then tell it. When the setup failed first
 * (the child gone), its error is the one reported. */
static int attach_v1(struct rt_start *st, struct sc_err *err)
{
	if (rt_cgroup_attach(&st->cg, st->pid, err) == 0) {
		if (send(st->sync_fd, "a", 1, MSG_NOSIGNAL) == 1)
			return 0;
		sc_fail(err, errno, "release the cell");
	}
	rt_start_kill(st);
	(void)child_error(st->status_rd, err);
	return -1;
}

static pid_t clone_cell(int cgroup_fd, int *pidfd)
{
	struct clone_args args = {
		.flags = CELL_NS_FLAGS | CLONE_PIDFD,
		.pidfd = (uint64_t)(uintptr_t)pidfd,
		.exit_signal = SIGCHLD,
	};
	if (cgroup_fd >= 0) {
		args.flags |= CLONE_INTO_CGROUP;
		args.cgroup = (uint64_t)cgroup_fd;
	}
	return (pid_t)syscall(SYS_clone3, &args, sizeof(args));
}

/* A renewed cell's init: a helper joins the cell's user and network
 * namespaces (joining a user namespace changes a process for good, so
 * not the caller) and clones init into new others, as the caller's child
 * (CLONE_PARENT: the caller reaps it, and it dies with the caller until
 * released). The new init runs child(arg); it never returns. */
struct into_job {
	int userns, netns, cgroup_fd;
	void (*child)(void *);
	void *arg;
	pid_t pid;  /* out: init's, or -1 */
	int errnum; /* out */
};

static int into_helper(void *p)
{
	struct into_job *j = p;
	struct clone_args args = {
		.flags = (CELL_NS_FLAGS & ~(uint64_t)(CLONE_NEWUSER | CLONE_NEWNET)) | CLONE_PARENT,
	};
	if (j->cgroup_fd >= 0) {
		args.flags |= CLONE_INTO_CGROUP;
		args.cgroup = (uint64_t)j->cgroup_fd;
	}
	if (setns(j->userns, CLONE_NEWUSER) < 0 || setns(j->netns, CLONE_NEWNET) < 0) {
		j->errnum = errno;
		return 0;
	}
	pid_t pid = (pid_t)syscall(SYS_clone3, &args, sizeof(args));
	if (pid == 0)
		j->child(j->arg);
	j->pid = pid;
	j->errnum = pid < 0 ? errno : 0;
	return 0;
}

/* start_helper: 0 once the helper is done and reaped, or -1. */
#if SC_SANITIZED
/* Sanitizers keep their own idea of a process's stack, which a stack of
 * our own would break (ASan unpoisons from sp to the stack's top after a
 * vfork): a plain fork, whose page tables are copied. */
static int start_helper(struct into_job *j)
{
	pid_t h = fork();
	if (h == 0)
		_exit(into_helper(j));
	while (h > 0 && waitpid(h, NULL, 0) < 0 && errno == EINTR)
		;
	return h < 0 ? -1 : 0;
}
#else
/* init lives on this stack (its copy) for good: a main stack's size,
 * touched only as used, above a guard page */
#define INTO_STACK (8 * 1024 * 1024)
#define INTO_GUARD (64 * 1024)

/* The helper shares the caller's memory, and the caller waits for it
 * (vfork's way: no copy of the caller's page tables for a process that
 * only makes three calls); init runs on the helper's stack (its copy). */
static int start_helper(struct into_job *j)
{
	size_t size = INTO_GUARD + INTO_STACK;
	char *stack = mmap(NULL, size, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
	if (stack == MAP_FAILED)
		return -1;
	pid_t h = -1;
	if (mprotect(stack, INTO_GUARD, PROT_NONE) == 0)
		h = clone(into_helper, stack + size, CLONE_VM | CLONE_VFORK | SIGCHLD, j);
	int e = errno;
	if (h > 0) /* it is done (CLONE_VFORK): the stack is ours again */
		while (waitpid(h, NULL, 0) < 0 && errno == EINTR)
			;
	munmap(stack, size); /* init keeps its own copy */
	errno = e;
	return h < 0 ? -1 : 0;
}
#endif

static pid_t clone_cell_into(const struct into_job *job, int *pidfd)
{
	/* shared with a forked helper, which answers in it */
	struct into_job *j = mmap(NULL, sizeof(*j), PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (j == MAP_FAILED)
		return -1;
	*j = *job;
	j->pid = -1;
	j->errnum = EPIPE;
	int started = start_helper(j);
	int e = started < 0 ? errno : j->errnum ? j->errnum : EPIPE;
	pid_t pid = j->pid;
	munmap(j, sizeof(*j));
	if (started < 0 || pid <= 0)
		return errno = e, -1;
	/* the caller's child: its pid is not reused before the caller reaps it */
	*pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (*pidfd < 0) {
		e = errno;
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		return errno = e, -1;
	}
	return pid;
}

/* The renewed cell's cgroup, as it stands: v2's init goes into its leaf. */
static int reuse_cgroup(struct rt_start *st, struct sc_err *err)
{
	rt_cgroup_from_saved(&st->cg, st->reuse_cgroup ? st->reuse_cgroup : "");
	if (!st->cg.active || st->cg.v1)
		return 0;
	char leaf[SC_PATH_BUF];
	if (sc_path(leaf, sizeof(leaf), "%s/cell", st->cg.path) < 0)
		return sc_fail(err, ENAMETOOLONG, "cgroup %s", st->cg.path);
	st->cg.dir_fd = open(leaf, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (st->cg.dir_fd < 0)
		return sc_fail(err, errno, "open cgroup %s", leaf);
	return 0;
}

static void put_stdio(int in, int out, int errfd)
{
	int devnull = -1;
	if (in < 0 || out < 0 || errfd < 0)
		devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	in = in >= 0 ? in : devnull;
	out = out >= 0 ? out : devnull;
	errfd = errfd >= 0 ? errfd : devnull;
	if (in != 0)
		dup2(in, 0);
	if (out != 1)
		dup2(out, 1);
	if (errfd != 2)
		dup2(errfd, 2);
}

/* In the child: drop the host side's own fds, then put the cell's stdio
 * on 0/1/2 before anything else (and close where they came from: init
 * never execs, and must not keep a pipe's write end or a terminal). */
static void child_stdio(const int stdio[3], const int host_only[2])
{
	for (int i = 0; i < 2; i++)
		if (host_only[i] >= 0 && host_only[i] != stdio[0] && host_only[i] != stdio[1] &&
		    host_only[i] != stdio[2])
			close(host_only[i]);
	put_stdio(stdio[0], stdio[1], stdio[2]);
	for (int k = 0; k < 3; k++)
		if (stdio[k] > 2)
			close(stdio[k]);
}

/* The new init, from the clone on: the caller's ends of the channels
 * closed, the cell's stdio in place; never returns. */
struct child_start {
	struct rt_start *st;
	int status_rd, sync_rd;
	const int *stdio;
};

static void child_start_main(void *p)
{
	struct child_start *cs = p;
	close(cs->status_rd);
	close(cs->sync_rd);
	child_stdio(cs->stdio, cs->st->host_only);
	rt_child_main(&cs->st->plan);
}

void rt_start_init(struct rt_start *st)
{
	memset(st, 0, sizeof(*st));
	st->plan.status_fd = st->plan.sync_fd = st->plan.serve_fd = st->plan.upper_fd = -1;
	st->plan.layer_fd = st->plan.tramp_fd = st->plan.oom_fd = st->plan.state_fd = -1;
	st->plan.ns_fds[0] = st->plan.ns_fds[1] = -1;
	for (size_t i = 0; i < SC_ARRAY_LEN(st->plan.snap_fds); i++)
		st->plan.snap_fds[i] = -1;
	for (size_t i = 0; i < CELL_MAX_BINDS; i++)
		st->plan.bind_fds[i] = -1;
	st->pidfd = st->status_rd = st->sync_fd = st->egress_fd = st->tty_master = -1;
	st->host_only[0] = st->host_only[1] = -1;
	st->cg.dir_fd = -1;
	st->reuse_userns = st->reuse_netns = -1;
}

/* Whether a process of the cell could change the host's sandcell binary
 * if it ever ran it (e.g. through /proc/self/exe): it can when the file's
 * owner is mapped into the cell (a rootless caller owns its copy) or
 * others may write it. Then commands go through the exec trampoline. */
static bool binary_reachable(const struct idmap *map)
{
	struct stat sb;
	if (stat("/proc/self/exe", &sb) < 0)
		return true;
	bool owner_mapped = sb.st_uid >= map->uid_start && sb.st_uid - map->uid_start < map->count;
	return owner_mapped || (sb.st_mode & 022) != 0;
}

int rt_start(struct rt_start *st, const struct cell_spec *spec, const char *cell_id,
	       const int stdio[3], struct sc_err *err)
{
	struct cell_plan *plan = &st->plan;
	int status[2] = {-1, -1}, sync[2] = {-1, -1};
	_cleanup_fd_ int userns = -1;
	plan->spec = spec;
	if (rt_idmap_for_caller(&st->map, err) < 0 || plan_check_paths(plan, err) < 0)
		return -1;
	plan->range_map = st->map.range;
	plan->id_count = st->map.count;
	if (spec->has_user && rt_user_check_map(spec->uid, spec->gid, &st->map, err) < 0)
		return -1;
	plan->keep_setid = st->map.count > 1 &&
			   (plan->serve || (spec->has_user && (spec->uid || spec->gid)));
	plan->idmap_layers = st->map.range && spec->idmap_layers && spec->nlayers > 0;
	plan->use_trampoline = binary_reachable(&st->map);
	plan->ignored_sigs = rt_realtime_signals_ignored();
	if (pipe2(status, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sync) < 0) {
		sc_closep(&status[0]);
		sc_closep(&status[1]);
		return sc_fail(err, errno, "pipe");
	}
	st->status_rd = status[0];
	st->sync_fd = sync[0];
	/* A one-shot cell without limits needs no cgroup: its pid namespace
	 * is its cleanup, and rusage its accounting. */
	/* Every cell has a pids and a memory limit unless lifted (0). */
	struct policy_limits *l = &plan->limits;
	*l = spec->limits;
	l->pids = policy_limit_value(spec->limits.pids, POLICY_DEFAULT_PIDS);
	l->memory = policy_limit_value(spec->limits.memory, POLICY_DEFAULT_MEMORY);
	bool want_cgroup = l->memory || l->pids || l->cpus > 0 || spec->require_cgroups || plan->serve;
	bool renewing = st->reuse_userns >= 0;
	if (renewing ? reuse_cgroup(st, err) < 0
		     : want_cgroup && rt_cgroup_create(&st->cg, cell_id, spec, l, err) < 0)
		goto fail;
	plan->use_rlimits = !st->cg.active;
	/* The default memory ceiling only where a cgroup holds it: as an
	 * RLIMIT_AS stand-in it would stop programs that reserve address
	 * space (sanitizers, JVMs). An explicit --memory still applies. */
	if (plan->use_rlimits && !spec->limits.memory)
		l->memory = 0;
	plan->status_fd = status[1];
	plan->sync_fd = sync[1];
	plan->await_cgroup = st->cg.active && st->cg.v1;

	int cgroup_fd = st->cg.active ? st->cg.dir_fd : -1;
	struct child_start cs = {.st = st, .status_rd = status[0], .sync_rd = sync[0], .stdio = stdio};
	const struct into_job into = {.userns = st->reuse_userns, .netns = st->reuse_netns,
				      .cgroup_fd = cgroup_fd, .child = child_start_main, .arg = &cs};
	st->pid = renewing ? clone_cell_into(&into, &st->pidfd) : clone_cell(cgroup_fd, &st->pidfd);
	if (st->pid < 0) {
		sc_fail(err, errno, "cannot create the cell's namespaces");
		sc_err_hint(err, "are unprivileged user namespaces enabled? run 'sandcell doctor'");
		goto fail;
	}
	if (st->pid == 0)
		child_start_main(&cs);
	sc_closep(&status[1]);
	sc_closep(&sync[1]);
	plan->status_fd = plan->sync_fd = -1;

	bool parent_binds = st->map.range && spec->nbinds > 0;
	if ((!renewing && rt_idmap_write(st->pid, &st->map, err) < 0) ||
	    (parent_binds && parent_prepare_binds(plan, st->pid, &userns, err) < 0) ||
	    (plan->idmap_layers && parent_prepare_layers(plan, st->pid, &userns, err) < 0) ||
	    send_go(st->sync_fd, plan, parent_binds ? spec->nbinds : 0,
		    plan->idmap_layers ? spec->nlayers : 0, err) < 0 ||
	    (plan->await_cgroup && attach_v1(st, err) < 0) ||
	    (spec->egress && rt_start_recv_fd(st->sync_fd, st->status_rd, 60000, RT_CHAN_TAG_EGRESS,
					      "its egress proxy socket", &st->egress_fd, err) < 0) ||
	    (spec->tty && rt_start_recv_fd(st->sync_fd, st->status_rd, 60000, RT_CHAN_TAG_PTY,
					   "its pty", &st->tty_master, err) < 0)) {
		rt_start_kill(st);
		goto fail;
	}
	plan_close(plan);
	return 0;
fail:
	sc_closep(&status[1]);
	sc_closep(&sync[1]);
	return -1;
}

void rt_start_kill(struct rt_start *st)
{
	if (st->pid <= 0)
		return;
	syscall(SYS_pidfd_send_signal, st->pidfd, SIGKILL, NULL, 0);
	while (waitpid(st->pid, NULL, 0) < 0 && errno == EINTR)
		;
	st->pid = 0;
}

void rt_start_cleanup(struct rt_start *st)
{
	sc_closep(&st->pidfd);
	sc_closep(&st->status_rd);
	sc_closep(&st->sync_fd);
	sc_closep(&st->egress_fd);
	sc_closep(&st->tty_master);
	plan_close(&st->plan);
	if (st->cg.active || st->cg.dir_fd >= 0) {
		struct sc_err ignored;
		rt_cgroup_destroy(&st->cg, &ignored);
	}
}

int rt_start_read_msg(int fd, struct cell_msg *m)
{
	ssize_t n = sc_read_all(fd, m, sizeof(*m));
	if (n != (ssize_t)sizeof(*m))
		return -1;
	m->text[sizeof(m->text) - 1] = '\0';
	return 0;
}

int rt_start_recv_fd(int sync_fd, int status_rd, int timeout_ms, char tag, const char *what,
		     int *out, struct sc_err *err)
{
	*out = rt_chan_recv_fd(sync_fd, timeout_ms, tag);
	if (*out >= 0)
		return 0;
	if (errno == ETIMEDOUT)
		return sc_fail(err, 0, "the cell did not set up %s in %d s", what, timeout_ms / 1000);
	if (child_error(status_rd, err))
		return -1;
	return sc_fail(err, 0, "the cell did not hand over %s", what);
}
