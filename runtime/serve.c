/* PID 1 of a long-lived cell: serves requests on the cell's socket, one
 * per connection — run a command with the client's stdio, copy a stream
 * in or out, report status. A client that goes away takes its command
 * with it; a request's timeout kills the command's process group. What a
 * command leaves in the background when it ends normally lives on until
 * the cell ends. */
#include <dirent.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/wait.h>

#include "../common/tarwrite.h"
#include "cellpath.h"
#include "channel.h"
#include "copy.h"
#include "fileops.h"
#include "internal.h"
#include "proto.h"

#define MAX_CONNS 1024

_Static_assert(sizeof(((struct cell_plan *)0)->token) == PROTO_TOKEN_LEN, "token sizes");

struct conn {
	int fd;
	pid_t pid;       /* >0 while its command or worker runs */
	double deadline; /* 0: none */
	bool timed_out;
	bool gone;       /* the client hung up: nobody to answer */
	bool peer_ok;    /* SO_PEERCRED showed the creator's uid */
	bool prestarted; /* its command runs in a pre-started interpreter's process */
};

struct server {
	const struct cell_plan *plan;
	int listen_fd, sig_fd;
	uid_t peer_uid; /* the only uid (as seen in the cell) allowed to connect */
	uint8_t token[PROTO_TOKEN_LEN]; /* every request must carry it */
	uint64_t memory; /* REQ_SET_MEMORY: later commands' memory rlimit, 0: the plan's */
	uint64_t ignored_sigs; /* the plan's, and what this init ignores itself */
	struct conn conns[MAX_CONNS];
	size_t nconns;
};

static void send_rsp(int fd, const struct proto_rsp *r)
{
	(void)send(fd, r, sizeof(*r), MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* The answer with n (1 or 2) fds passed along. */
static void send_rsp_fds(int fd, const struct proto_rsp *r, const int *pass, size_t n)
{
	struct iovec iov = {.iov_base = (void *)r, .iov_len = sizeof(*r)};
	union {
		char b[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b,
			     .msg_controllen = CMSG_SPACE(n * sizeof(int))};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(n * sizeof(int));
	memcpy(CMSG_DATA(c), pass, n * sizeof(int));
	(void)sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static void send_error(int fd, const char *fmt, const char *arg)
{
	struct proto_rsp r = {.kind = RSP_ERROR};
	snprintf(r.text, sizeof(r.text), fmt, arg);
	send_rsp(fd, &r);
}

static void drop_conn(struct server *s, size_t i)
{
	if (s->conns[i].fd >= 0)
		close(s->conns[i].fd);
	s->conns[i] = s->conns[--s->nconns];
}

static unsigned count_processes(void)
{
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	unsigned n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] >= '1' && e->d_name[0] <= '9')
			n++;
	closedir(d);
	return n;
}

static int recv_request(int fd, char *buf, struct proto_request *q)
{
	int flags;
	ssize_t n = rt_chan_recvmsg(fd, buf, PROTO_MAX_REQ, 3, q->fds, 3, &q->nfds, &flags);
	if (n < 0 || (flags & (MSG_TRUNC | MSG_CTRUNC)))
		return -1;
	return rt_proto_decode_request(buf, (size_t)n, q);
}

static void close_request_fds(struct proto_request *q)
{
	for (int k = 0; k < q->nfds; k++)
		close(q->fds[k]);
	q->nfds = 0;
}

static void child_reset_signals(void)
{
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

/* The cell's environment with the request's entries added or replacing. */
static const char *const *merge_env(const struct cell_spec *spec, const struct proto_request *q)
{
	static const char *merged[2 * CELL_MAX_ENV + 1];
	size_t n = 0;
	for (size_t i = 0; i < spec->nenv; i++)
		merged[n++] = spec->env[i];
	for (uint32_t k = 0; k < q->h.envc; k++) {
		const char *eq = strchr(q->env[k], '=');
		size_t klen = eq ? (size_t)(eq - q->env[k]) + 1 : strlen(q->env[k]);
		size_t i = 0;
		while (i < n && strncmp(merged[i], q->env[k], klen) != 0)
			i++;
		merged[i] = q->env[k];
		if (i == n)
			n++;
	}
	merged[n] = NULL;
	return merged;
}

static pid_t start_exec(const struct server *s, const struct proto_request *q)
{
	const struct cell_spec *spec = s->plan->spec;
	const char *const *env = merge_env(spec, q);
	rt_oom_command(s->plan, true);
	pid_t pid = vfork();
	if (pid != 0) {
		rt_oom_command(s->plan, false);
		return pid;
	}
	const char *cwd = q->path[0] ? q->path : spec->workdir;
	/* the mask is cleared by rt_exec_command, just before exec */
	setsid();
	for (int k = 0; k < 3; k++)
		if (q->fds[k] != k && dup2(q->fds[k], k) < 0)
			_exit(CELL_EXIT_INTERNAL);
	/* exec -t: stdin is the command's own pty (the host keeps its
	 * terminal), and becomes its controlling terminal */
	if (isatty(0))
		(void)ioctl(0, TIOCSCTTY, 0);
	bool own = q->h.flags & PROTO_EXEC_USER;
	uint32_t uid = own ? q->h.uid : spec->has_user ? spec->uid : 0;
	uint32_t gid = own ? q->h.gid : spec->has_user ? spec->gid : 0;
	if (rt_exec_become(uid || gid, uid, gid) < 0) {
		char line[200];
		int n = snprintf(line, sizeof(line), "sandcell: cannot run as %u:%u in the cell: %s\n",
				 uid, gid, strerror(errno));
		(void)sc_write_all(2, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
		_exit(CELL_EXIT_INTERNAL);
	}
	if (rt_cellpath_chdir(cwd) < 0) {
		char line[600];
		int n = snprintf(line, sizeof(line), "sandcell: cannot change to %.200s in the cell: %s\n",
				 cwd, strerror(errno));
		(void)sc_write_all(2, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
		_exit(CELL_EXIT_INTERNAL);
	}
	rt_apply_command_limits_mem(s->plan, s->memory);
	rt_lockdown_close_fds(3);
	rt_exec_command(s->plan->tramp_fd, s->ignored_sigs, q->argv, env);
	int e = errno;
	char line[600];
	int n = snprintf(line, sizeof(line), CELL_EXEC_FAILED_FMT, q->argv[0],
			 strerror(e));
	(void)sc_write_all(2, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
	_exit(rt_exec_failure_status(e));
}

/* An exec that asked for it, run by the cell's pre-started interpreter
 * when that takes it (runtime/zygote.c): not as another user, not on a
 * terminal, and not with a memory rlimit other than the one the
 * interpreter was started with. 0: start it the usual way. */
static pid_t start_prestarted(const struct server *s, const struct proto_request *q)
{
	const struct cell_spec *spec = s->plan->spec;
	if (!(q->h.flags & PROTO_EXEC_PRESTARTED) || (q->h.flags & PROTO_EXEC_USER) ||
	    (s->plan->use_rlimits && s->memory) || isatty(q->fds[0]) || isatty(q->fds[1]) ||
	    isatty(q->fds[2]))
		return 0;
	const char *cwd = q->path[0] ? q->path : spec->workdir;
	return rt_zygote_exec(q->argv, merge_env(spec, q), cwd, q->fds);
}

/* A worker for a request that moves data through the one fd it passed:
 * copies, file reads and writes, the layer export. */
static pid_t start_worker(const struct server *s, const struct proto_request *q, int conn_fd)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	child_reset_signals();
	if (rt_exec_become(false, 0, 0) < 0)
		_exit(1);
	/* Nothing but the request's fds (and, to export it, the writable
	 * layer): no fd of init's is left for a path to lead through. */
	int keep[] = {q->fds[0], conn_fd, q->h.kind == REQ_LAYER_OUT ? s->plan->layer_fd : -1};
	rt_close_fds_except(keep, SC_ARRAY_LEN(keep));
	/* file operations report an errno value as their exit code */
	if (q->h.kind == REQ_FILE_READ)
		_exit(rt_fileop_read(q->fds[0], q->path, q->h.max_size));
	if (q->h.kind == REQ_FILE_WRITE)
		_exit(rt_fileop_write(q->fds[0], q->path, q->h.max_size, q->h.flags));
	if (q->h.kind == REQ_CONNECT)
		_exit(rt_port_relay(q->fds[0], (uint16_t)q->h.max_size));
	struct sc_err err = {0};
	struct tarw_opts tar = {.overlay = true, .max_bytes = q->h.max_size};
	int rc;
	if (q->h.kind == REQ_COPY_IN)
		rc = rt_copy_receive(q->fds[0], q->path, q->h.max_size,
				  COPY_DEST_IN_CELL | COPY_KEEP_LINKS | COPY_STRIP_SPECIAL |
				  (q->h.flags & PROTO_COPY_AS_DEST ? COPY_AS_DEST : 0), NULL, &err);
	else if (q->h.kind == REQ_COPY_OUT)
		rc = rt_copy_send_cell(q->fds[0], q->path, q->h.max_size, &err);
	else if (s->plan->layer_fd < 0)
		rc = sc_fail(&err, 0, "the cell runs the host image, whose writable layer cannot be "
				      "committed; make the cell with --image NAME");
	else
		rc = sc_tarw_tree(q->fds[0], s->plan->layer_fd, &tar, &err);
	if (rc < 0)
		send_error(conn_fd, "%.440s", err.msg);
	_exit(rc < 0 ? 1 : 0);
}

/* An exec as a user the cell does not map is answered with why. */
static bool user_unmapped(const struct server *s, const struct proto_request *q, int fd)
{
	if (!(q->h.flags & PROTO_EXEC_USER))
		return false;
	struct idmap map = {.count = s->plan->id_count, .range = s->plan->range_map};
	struct sc_err err = {0};
	if (rt_user_check_map(q->h.uid, q->h.gid, &map, &err) == 0)
		return false;
	send_error(fd, "%.440s", err.msg);
	return true;
}

static bool takes_path_and_fd(uint32_t kind)
{
	return kind == REQ_COPY_IN || kind == REQ_COPY_OUT || kind == REQ_FILE_READ ||
	       kind == REQ_FILE_WRITE;
}

static void handle_request(struct server *s, size_t i)
{
	static char buf[PROTO_MAX_REQ];
	static struct proto_request q;
	struct conn *c = &s->conns[i];
	memset(&q.h, 0, sizeof(q.h));
	if (recv_request(c->fd, buf, &q) < 0) {
		send_error(c->fd, "%s", "malformed request");
		close_request_fds(&q);
		drop_conn(s, i);
		return;
	}
	pid_t pid = 0;
	if (!c->peer_ok || !rt_proto_token_equal(q.h.token, s->token)) {
		/* not the creator: another uid, or one that could not read the
		 * token file */
		send_error(c->fd, "%s", "permission denied: this cell belongs to another user");
		close_request_fds(&q);
		drop_conn(s, i);
		return;
	}
	if (q.h.kind == REQ_INFO) {
		struct proto_rsp r = {.kind = RSP_INFO, .nprocs = count_processes(),
				      .nexecs = (uint32_t)s->nconns - 1};
		/* the root: the cell's tmpfs, or an overlay, which answers for
		 * its upper layer's filesystem (the same tmpfs) */
		struct statfs fs;
		if (statfs("/", &fs) == 0)
			snprintf(r.text, sizeof(r.text), "disk %llu %llu",
				 (unsigned long long)(fs.f_blocks - fs.f_bfree) * (unsigned long long)fs.f_bsize,
				 (unsigned long long)fs.f_blocks * (unsigned long long)fs.f_bsize);
		send_rsp(c->fd, &r);
	} else if (q.h.kind == REQ_STATE_FD && q.nfds == 0) {
		/* only to the creator (token checked above): it is the host
		 * side of the cell, which reads the files as the cell is held
		 * still */
		struct proto_rsp r = {.kind = RSP_EXIT};
		if (s->plan->state_fd < 0)
			send_error(c->fd, "%s", "this cell keeps no writable state to fork");
		else
			send_rsp_fds(c->fd, &r, &s->plan->state_fd, 1);
	} else if (q.h.kind == REQ_NAMESPACES && q.nfds == 0) {
		/* only to the creator (token checked above), which renews the
		 * cell in them */
		struct proto_rsp r = {.kind = RSP_EXIT};
		if (s->plan->ns_fds[0] < 0 || s->plan->ns_fds[1] < 0)
			send_error(c->fd, "%s", "this cell's init has no fds of its namespaces");
		else
			send_rsp_fds(c->fd, &r, s->plan->ns_fds, 2);
	} else if (q.h.kind == REQ_PRESTART_END && q.nfds == 0) {
		rt_zygote_end();
		struct proto_rsp r = {.kind = RSP_EXIT};
		send_rsp(c->fd, &r);
	} else if (q.h.kind == REQ_SET_MEMORY && q.nfds == 0 && q.h.max_size) {
		s->memory = q.h.max_size;
		struct proto_rsp r = {.kind = RSP_EXIT};
		send_rsp(c->fd, &r);
	} else if (q.h.kind == REQ_EXEC && q.nfds == 3 && q.h.argc >= 1) {
		if (!user_unmapped(s, &q, c->fd)) {
			pid = start_prestarted(s, &q);
			c->prestarted = pid > 0;
			if (pid <= 0)
				pid = start_exec(s, &q);
		}
	} else if (q.nfds == 1 && ((takes_path_and_fd(q.h.kind) && q.path[0]) ||
				   q.h.kind == REQ_LAYER_OUT ||
				   (q.h.kind == REQ_CONNECT && q.h.max_size >= 1 &&
				    q.h.max_size <= 65535))) {
		pid = start_worker(s, &q, c->fd);
	} else {
		send_error(c->fd, "%s", "malformed request");
	}
	if (pid < 0)
		send_error(c->fd, "cannot start: %s", strerror(errno));
	close_request_fds(&q);
	if (pid > 0) {
		c->pid = pid;
		c->deadline = q.h.timeout_ms ? sc_now() + q.h.timeout_ms / 1000.0 : 0;
		return;
	}
	drop_conn(s, i);
}

static void accept_client(struct server *s)
{
	int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	if (s->nconns >= MAX_CONNS) {
		send_error(fd, "%s", "too many requests in flight");
		close(fd);
		return;
	}
	/* A stranger is turned away once its request is read: closing with
	 * it unread would reset the connection and lose the answer. */
	struct ucred cred;
	socklen_t len = sizeof(cred);
	bool peer_ok = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
		       cred.uid == s->peer_uid;
	s->conns[s->nconns++] = (struct conn){.fd = fd, .peer_ok = peer_ok};
}

static void reap(struct server *s)
{
	struct signalfd_siginfo si;
	while (read(s->sig_fd, &si, sizeof(si)) > 0)
		;
	for (;;) {
		int status;
		struct rusage ru;
		pid_t pid = wait4(-1, &status, WNOHANG, &ru);
		if (pid <= 0)
			return;
		for (size_t i = 0; i < s->nconns; i++) {
			struct conn *c = &s->conns[i];
			if (c->pid != pid)
				continue;
			/* What the command left in the background lives on (as
			 * under docker exec) until the cell ends; only a timeout or
			 * a client that went away ends the whole group (above). */
			if (!c->gone) {
				struct proto_rsp r = {
					.kind = RSP_EXIT, .status = status, .timed_out = c->timed_out,
					.prestarted = c->prestarted,
					.cpu_us = (uint64_t)ru.ru_utime.tv_sec * 1000000 + (uint64_t)ru.ru_utime.tv_usec +
						  (uint64_t)ru.ru_stime.tv_sec * 1000000 + (uint64_t)ru.ru_stime.tv_usec,
					.maxrss_kb = (uint64_t)ru.ru_maxrss};
				send_rsp(c->fd, &r);
			}
			drop_conn(s, i);
			break;
		}
	}
}

static int next_timeout_ms(struct server *s)
{
	double now = sc_now(), soonest = 0;
	for (size_t i = 0; i < s->nconns; i++) {
		struct conn *c = &s->conns[i];
		if (c->pid <= 0 || c->deadline <= 0 || c->timed_out)
			continue;
		if (c->deadline <= now) {
			c->timed_out = true;
			kill(-c->pid, SIGKILL);
			kill(c->pid, SIGKILL);
			continue;
		}
		if (soonest == 0 || c->deadline < soonest)
			soonest = c->deadline;
	}
	if (soonest <= 0)
		return -1;
	/* a far deadline: wake up within the hour and look again */
	double ms = (soonest - now) * 1000 + 1;
	return ms < 3600000 ? (int)ms : 3600000;
}

static void serve_loop(struct server *s)
{
	static struct pollfd p[MAX_CONNS + 2];
	for (;;) {
		int timeout = next_timeout_ms(s);
		size_t n = 0;
		p[n++] = (struct pollfd){.fd = s->sig_fd, .events = POLLIN};
		p[n++] = (struct pollfd){.fd = s->listen_fd, .events = s->nconns < MAX_CONNS ? POLLIN : 0};
		for (size_t i = 0; i < s->nconns; i++)
			p[n++] = (struct pollfd){.fd = s->conns[i].gone ? -1 : s->conns[i].fd,
						 .events = s->conns[i].pid > 0 ? POLLRDHUP : POLLIN};
		if (poll(p, n, timeout) < 0 && errno != EINTR)
			_exit(CELL_EXIT_INTERNAL);
		/* Walk connections from the end: handling one may move the last. */
		for (size_t i = s->nconns; i-- > 0;) {
			short ev = p[i + 2].revents;
			struct conn *c = &s->conns[i];
			if (!ev || c->gone)
				continue;
			if (c->pid > 0) {
				/* The client went away: its command goes too. */
				c->gone = true;
				kill(-c->pid, SIGKILL);
				kill(c->pid, SIGKILL);
				close(c->fd);
				c->fd = -1;
			} else {
				handle_request(s, i);
			}
		}
		if (p[0].revents)
			reap(s);
		if (p[1].revents)
			accept_client(s);
	}
}

static uid_t overflow_uid(void)
{
	char buf[32];
	int fd = open("/proc/sys/kernel/overflowuid", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 65534;
	buf[n] = '\0';
	return (uid_t)strtoul(buf, NULL, 10);
}

uid_t rt_serve_peer_uid(const struct cell_plan *plan)
{
	/* The creator as this user namespace sees it: root for a rootless
	 * caller (mapped to 0); unmapped, hence the overflow uid, for a root
	 * caller, whose socket directory only root can enter. */
	return plan->range_map ? overflow_uid() : 0;
}

/* The lowest address of this process's [stack] mapping, or 0. */
static uintptr_t stack_low_end(void)
{
	char maps[16384];
	struct sc_err ignored;
	if (sc_read_small(AT_FDCWD, "/proc/self/maps", 0, maps, sizeof(maps), &ignored) < 0)
		return 0;
	char *tag = strstr(maps, " [stack]\n");
	if (!tag)
		return 0;
	char *line = tag;
	while (line > maps && line[-1] != '\n')
		line--;
	return (uintptr_t)strtoull(line, NULL, 16);
}

/* A long-lived init is a clone of its creator (the CLI, a pool worker):
 * it holds every page the creator had dirtied, some of them dead here —
 * the stack below this frame, the heap's freed chunks. Each idle cell
 * would carry them (about 40 of its 340 KiB of anonymous memory), so give
 * them back. Below the stack pointer nothing is live; a page used again
 * later faults in zeroed. */
static void shed_creator_memory(void)
{
	(void)malloc_trim(0);
	long page = sysconf(_SC_PAGESIZE);
	if (page <= 0)
		return;
	volatile char here;
	uintptr_t sp = (uintptr_t)&here & ~((uintptr_t)page - 1);
	uintptr_t low = stack_low_end();
	uintptr_t keep = 4 * (uintptr_t)page; /* this frame and the calls it makes */
	if (low && sp > low + keep)
		(void)madvise((void *)low, sp - keep - low, MADV_DONTNEED);
}

void rt_init_serve(const struct cell_plan *plan, uid_t peer_uid)
{
	shed_creator_memory();
	struct server *s = calloc(1, sizeof(*s));
	if (!s)
		_exit(CELL_EXIT_INTERNAL);
	s->plan = plan;
	s->listen_fd = plan->serve_fd;
	s->peer_uid = peer_uid;
	memcpy(s->token, plan->token, sizeof(s->token));
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL);
	s->ignored_sigs = plan->ignored_sigs;
	rt_ignore_signal(&s->ignored_sigs, SIGPIPE);
	s->sig_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (s->sig_fd < 0)
		_exit(CELL_EXIT_INTERNAL);
	serve_loop(s);
	_exit(0);
}
