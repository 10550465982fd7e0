/* cell_run: the host side of a one-shot cell. Prepares everything, clones
 * the child into all namespaces, writes its id maps, releases it, then
 * relays output, signals and the timeout until the cell is gone. */
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "../common/capture.h"
#include "cgroup.h"
#include "internal.h"

#define CELL_NS_FLAGS                                                                          \
	(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWUTS |              \
	 CLONE_NEWIPC | CLONE_NEWCGROUP)

static const int RELAYED[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};

struct run_io {
	int out_rd, err_rd; /* capture pipes, -1 when passed through */
	struct capture out, err;
};

static void plan_close(struct cell_plan *plan)
{
	for (size_t i = 0; i < plan->nlowers; i++)
		sc_closep(&plan->lower_fds[i]);
	for (size_t i = 0; i < CELL_MAX_BINDS; i++)
		sc_closep(&plan->bind_fds[i]);
}

static int plan_open_layers(struct cell_plan *plan, struct sc_err *err)
{
	const struct cell_spec *spec = plan->spec;
	plan->host_image = spec->nlayers == 0;
	for (size_t i = 0; i < spec->nlayers; i++) {
		int fd = open(spec->layers[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return sc_fail(err, errno, "image layer %s", spec->layers[i]);
		/* The child names it /proc/self/fd/N; it must survive into it. */
		plan->lower_fds[plan->nlowers++] = fd;
	}
	for (size_t i = 0; i < spec->nbinds; i++) {
		if (spec->binds[i].host && access(spec->binds[i].host, F_OK) < 0)
			return sc_fail(err, errno, "bind source %s", spec->binds[i].host);
	}
	return 0;
}

/* Root callers: the parent clones each bind source with host rights; a
 * writable bind is idmapped onto the cell's user namespace so that the
 * cell's root (an unprivileged host id) may write it. */
static int parent_prepare_binds(struct cell_plan *plan, pid_t pid, struct sc_err *err)
{
	const struct cell_spec *spec = plan->spec;
	_cleanup_fd_ int userns = -1;
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
			if (userns < 0) {
				char path[64];
				snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
				userns = open(path, O_RDONLY | O_CLOEXEC);
				if (userns < 0)
					return sc_fail(err, errno, "open the cell's user namespace");
			}
			attr.attr_set |= MOUNT_ATTR_IDMAP;
			attr.userns_fd = (uint64_t)userns;
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

static int send_go(int sock, const int *fds, size_t nfds, struct sc_err *err)
{
	char byte = 'g';
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	union {
		char buf[CMSG_SPACE(sizeof(int) * CELL_MAX_BINDS)];
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

static int make_capture(int *rd, int *wr, struct capture *cap, uint64_t limit, struct sc_err *err)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return sc_fail(err, errno, "pipe");
	*rd = p[0];
	*wr = p[1];
	if (capture_init(cap, limit) < 0)
		return sc_fail(err, ENOMEM, "output buffer");
	return 0;
}

static void drain(int *fd, struct capture *cap)
{
	char buf[65536];
	ssize_t n = read(*fd, buf, sizeof(buf));
	if (n > 0) {
		capture_add(cap, buf, (size_t)n);
	} else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
		close(*fd);
		*fd = -1;
	}
}

struct relay {
	int pidfd, status_rd, sigfd;
	struct run_io *io;
	double deadline; /* 0: none */
	bool exited, timed_out;
	struct cell_msg msg;
	bool have_msg;
};

static void relay_status(struct relay *r)
{
	struct cell_msg m;
	ssize_t n = sc_read_all(r->status_rd, &m, sizeof(m));
	if (n == (ssize_t)sizeof(m)) {
		/* The last record wins only over READY; an error or exit stays. */
		if (!r->have_msg || r->msg.kind == CELL_MSG_READY) {
			r->msg = m;
			r->have_msg = true;
		}
		return;
	}
	close(r->status_rd);
	r->status_rd = -1;
}

static void relay_signal(struct relay *r)
{
	struct signalfd_siginfo si;
	if (read(r->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		syscall(SYS_pidfd_send_signal, r->pidfd, (int)si.ssi_signo, NULL, 0);
}

/* Relay until init has exited and every output pipe is at EOF. */
static void relay_loop(struct relay *r)
{
	for (;;) {
		struct pollfd p[5];
		int n = 0, ipid = -1, ist = -1, iout = -1, ierr = -1, isig = -1;
		if (!r->exited)
			p[ipid = n++] = (struct pollfd){.fd = r->pidfd, .events = POLLIN};
		if (r->status_rd >= 0)
			p[ist = n++] = (struct pollfd){.fd = r->status_rd, .events = POLLIN};
		if (r->io->out_rd >= 0)
			p[iout = n++] = (struct pollfd){.fd = r->io->out_rd, .events = POLLIN};
		if (r->io->err_rd >= 0)
			p[ierr = n++] = (struct pollfd){.fd = r->io->err_rd, .events = POLLIN};
		if (r->exited && r->status_rd < 0 && r->io->out_rd < 0 && r->io->err_rd < 0)
			return;
		if (!r->exited)
			p[isig = n++] = (struct pollfd){.fd = r->sigfd, .events = POLLIN};
		int timeout_ms = -1;
		if (r->deadline > 0 && !r->exited) {
			double left = r->deadline - sc_now();
			if (left <= 0) {
				r->timed_out = true;
				syscall(SYS_pidfd_send_signal, r->pidfd, SIGKILL, NULL, 0);
				r->deadline = 0;
				continue;
			}
			timeout_ms = (int)(left * 1000) + 1;
		}
		if (poll(p, (nfds_t)n, timeout_ms) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		if (ist >= 0 && p[ist].revents)
			relay_status(r);
		if (iout >= 0 && p[iout].revents)
			drain(&r->io->out_rd, &r->io->out);
		if (ierr >= 0 && p[ierr].revents)
			drain(&r->io->err_rd, &r->io->err);
		if (isig >= 0 && p[isig].revents)
			relay_signal(r);
		if (ipid >= 0 && p[ipid].revents)
			r->exited = true;
	}
}

static int block_relayed_signals(sigset_t *old, struct sc_err *err)
{
	sigset_t set;
	sigemptyset(&set);
	for (size_t i = 0; i < SC_ARRAY_LEN(RELAYED); i++)
		sigaddset(&set, RELAYED[i]);
	if (sigprocmask(SIG_BLOCK, &set, old) < 0)
		return sc_fail(err, errno, "block signals");
	int fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (fd < 0)
		return sc_fail(err, errno, "signalfd");
	return fd;
}

static void collect_output(struct run_io *io, struct cell_result *res)
{
	if (io->out.head) {
		res->out = capture_take(&io->out, &res->out_len);
		res->out_truncated = capture_truncated(&io->out);
		capture_free(&io->out);
	}
	if (io->err.head) {
		res->err = capture_take(&io->err, &res->err_len);
		res->err_truncated = capture_truncated(&io->err);
		capture_free(&io->err);
	}
}

static int finish(struct relay *r, pid_t pid, struct cell_result *res, struct sc_err *err)
{
	struct rusage ru;
	int wstatus = 0;
	while (wait4(pid, &wstatus, 0, &ru) < 0 && errno == EINTR)
		;
	res->cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
		     (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	res->peak_memory = (uint64_t)ru.ru_maxrss * 1024;
	if (r->timed_out) {
		res->timed_out = true;
		res->exit_code = CELL_EXIT_TIMEOUT;
		res->signal = SIGKILL;
		res->limit_hit = "timeout";
		return 0;
	}
	if (r->have_msg && r->msg.kind == CELL_MSG_EXIT) {
		result_from_wait(res, r->msg.value);
		return 0;
	}
	if (r->have_msg && r->msg.kind == CELL_MSG_ERROR) {
		r->msg.text[sizeof(r->msg.text) - 1] = '\0';
		err->errnum = r->msg.value;
		snprintf(err->msg, sizeof(err->msg), "%s", r->msg.text);
		return -1;
	}
	if (WIFSIGNALED(wstatus))
		return sc_fail(err, 0, "the cell's init was killed by signal %d", WTERMSIG(wstatus));
	return sc_fail(err, 0, "the cell's init exited with status %d before the command ran",
		       WEXITSTATUS(wstatus));
}

static int prepare_io(const struct cell_spec *spec, struct run_io *io, int *out_wr, int *err_wr,
		      struct sc_err *err)
{
	uint64_t limit = spec->limits.output ? spec->limits.output : CELL_DEFAULT_OUTPUT;
	io->out_rd = io->err_rd = -1;
	*out_wr = spec->stdout_fd;
	*err_wr = spec->stderr_fd;
	if (spec->stdout_fd < 0 && make_capture(&io->out_rd, out_wr, &io->out, limit, err) < 0)
		return -1;
	if (spec->stderr_fd < 0 && make_capture(&io->err_rd, err_wr, &io->err, limit, err) < 0)
		return -1;
	return 0;
}

/* In the child: put the cell's stdio on 0/1/2 before anything else. */
static void child_stdio(const struct cell_spec *spec, int out_wr, int err_wr)
{
	int in = spec->stdin_fd >= 0 ? spec->stdin_fd : open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (in != 0)
		dup2(in, 0);
	if (out_wr != 1)
		dup2(out_wr, 1);
	if (err_wr != 2)
		dup2(err_wr, 2);
}

static void warn_weak_limits(const struct cell_spec *spec, const struct cell_cgroup *cg,
			     struct cell_result *res)
{
	static char warning[512];
	const struct policy_limits *l = &spec->limits;
	if (cg->active || !(l->memory || l->pids || l->cpus > 0))
		return;
	snprintf(warning, sizeof(warning),
		 "limits are weaker than asked: %s; %s%s%s",
		 cg->why[0] ? cg->why : "no cgroup v2",
		 l->memory ? "--memory is enforced as RLIMIT_AS (address space, not resident memory), " : "",
		 l->pids ? "--pids as RLIMIT_NPROC of the cell's user namespace, " : "",
		 l->cpus > 0 ? (l->timeout_s > 0 ? "--cpus only as total CPU time (cpus x timeout)"
						 : "--cpus is not enforced")
			     : "no other limit is affected");
	res->warning = warning;
}

int cell_run(const struct cell_spec *spec, struct cell_result *res, struct sc_err *err)
{
	memset(res, 0, sizeof(*res));
	if (!spec->argv || !spec->argv[0])
		return sc_fail(err, 0, "no command to run");
	double t0 = sc_now();
	struct cell_plan plan = {.spec = spec, .status_fd = -1, .sync_fd = -1};
	for (size_t i = 0; i < CELL_MAX_BINDS; i++)
		plan.bind_fds[i] = -1;
	struct run_io io = {.out_rd = -1, .err_rd = -1};
	struct cell_cgroup cg = {.dir_fd = -1};
	struct idmap map;
	int rc = -1, out_wr = -1, err_wr = -1, status[2] = {-1, -1}, sync[2] = {-1, -1};
	_cleanup_fd_ int pidfd = -1, sigfd = -1;
	sigset_t oldmask;
	bool signals_blocked = false;
	char cell_id[64];
	snprintf(cell_id, sizeof(cell_id), "run-%d-%lx", (int)getpid(), (unsigned long)(t0 * 1e6));

	if (idmap_for_caller(&map, err) < 0 || plan_open_layers(&plan, err) < 0 ||
	    prepare_io(spec, &io, &out_wr, &err_wr, err) < 0)
		goto out;
	if (pipe2(status, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sync) < 0) {
		sc_fail(err, errno, "pipe");
		goto out;
	}
	if (cgroup_create(&cg, cell_id, spec, err) < 0)
		goto out;
	plan.use_rlimits = !cg.active;
	warn_weak_limits(spec, &cg, res);
	if ((sigfd = block_relayed_signals(&oldmask, err)) < 0)
		goto out;
	signals_blocked = true;

	plan.status_fd = status[1];
	plan.sync_fd = sync[1];
	pid_t pid = clone_cell(cg.active ? cg.dir_fd : -1, &pidfd);
	if (pid < 0) {
		sc_fail(err, errno, "cannot create the cell's namespaces");
		sc_err_hint(err, "are unprivileged user namespaces enabled? run 'sandcell doctor'");
		goto out;
	}
	if (pid == 0) {
		close(status[0]);
		close(sync[0]);
		child_stdio(spec, out_wr, err_wr);
		child_main(&plan);
	}
	sc_closep(&status[1]);
	sc_closep(&sync[1]);
	if (spec->stdout_fd < 0)
		sc_closep(&out_wr);
	if (spec->stderr_fd < 0)
		sc_closep(&err_wr);

	bool parent_binds = map.range && spec->nbinds > 0;
	if (idmap_write(pid, &map, err) < 0 ||
	    (parent_binds && parent_prepare_binds(&plan, pid, err) < 0) ||
	    send_go(sync[0], plan.bind_fds, parent_binds ? spec->nbinds : 0, err) < 0) {
		syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
		waitpid(pid, NULL, 0);
		goto out;
	}
	sc_closep(&sync[0]);

	struct relay r = {.pidfd = pidfd, .status_rd = status[0], .sigfd = sigfd, .io = &io};
	status[0] = -1;
	if (spec->limits.timeout_s > 0)
		r.deadline = t0 + spec->limits.timeout_s;
	relay_loop(&r);
	sc_closep(&r.status_rd);
	rc = finish(&r, pid, res, err);
	res->wall_s = sc_now() - t0;
	if (cg.active)
		cgroup_collect(&cg, res);
	collect_output(&io, res);
out:
	if (cg.active || cg.dir_fd >= 0) {
		struct sc_err ignored;
		cgroup_destroy(&cg, &ignored);
	}
	if (signals_blocked)
		sigprocmask(SIG_SETMASK, &oldmask, NULL);
	sc_closep(&status[0]);
	sc_closep(&status[1]);
	sc_closep(&sync[0]);
	sc_closep(&sync[1]);
	sc_closep(&io.out_rd);
	sc_closep(&io.err_rd);
	if (spec->stdout_fd < 0)
		sc_closep(&out_wr);
	if (spec->stderr_fd < 0)
		sc_closep(&err_wr);
	capture_free(&io.out);
	capture_free(&io.err);
	plan_close(&plan);
	return rc;
}

void cell_result_free(struct cell_result *res)
{
	free(res->out);
	free(res->err);
	res->out = res->err = NULL;
}
