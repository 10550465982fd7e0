/* The client side of a long-lived cell: one connection per request to the
 * cell's init (serve.c). Captured output is read here, bounded, keeping
 * head and tail. */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#include "../common/capture.h"
#include "cell_priv.h"
#include "cgroup.h"
#include "copy.h"
#include "internal.h"
#include "proto.h"
#include "sigpipe.h"
#include "tty.h"

_Static_assert(sizeof(((struct cell *)0)->token) == PROTO_TOKEN_LEN, "token sizes");

static int connect_cell(const struct cell *c, struct sc_err *err)
{
	if (!c->have_token)
		return sc_fail(err, EACCES, "cannot read the token of cell '%s' (only its creator can)",
			       c->name);
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	if (sc_path(addr.sun_path, sizeof(addr.sun_path), "%s/sock", c->dir) < 0)
		return sc_fail(err, ENAMETOOLONG, "socket path of cell %s", c->name);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return sc_fail(err, errno, "socket");
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		int e = errno;
		close(fd);
		if (e == ECONNREFUSED || e == ENOENT)
			return sc_fail(err, 0, "cell '%s' is not running (see 'sandcell ps')", c->name);
		return sc_fail(err, e, "connect to cell '%s'", c->name);
	}
	return fd;
}

static bool add_len(size_t *total, const char *str)
{
	*total += strlen(str ? str : "") + 1;
	return *total <= PROTO_MAX_REQ;
}

/* The request message: the header, then the strings. Returns a malloc'd
 * buffer of exactly *len bytes (sized to the request: no 128 KiB mapping
 * per request in a many-threaded batch), or NULL with errno E2BIG or
 * ENOMEM. */
static char *pack(const struct cell *c, struct proto_req *h, char *const *argv,
		  const char *const *env, const char *path, size_t *len)
{
	size_t total = sizeof(*h);
	memcpy(h->token, c->token, sizeof(h->token));
	h->argc = h->envc = 0;
	for (size_t i = 0; argv && argv[i]; i++, h->argc++)
		if (h->argc >= PROTO_MAX_ARGS || !add_len(&total, argv[i]))
			goto too_big;
	for (size_t i = 0; env && env[i]; i++, h->envc++)
		if (h->envc >= CELL_MAX_ENV || !add_len(&total, env[i]))
			goto too_big;
	if (!add_len(&total, path))
		goto too_big;
	char *buf = malloc(total);
	if (!buf)
		return NULL;
	size_t off = sizeof(*h);
	for (uint32_t i = 0; i < h->argc; i++)
		off += (size_t)(stpcpy(buf + off, argv[i]) - (buf + off)) + 1;
	for (uint32_t i = 0; i < h->envc; i++)
		off += (size_t)(stpcpy(buf + off, env[i]) - (buf + off)) + 1;
	strcpy(buf + off, path ? path : "");
	h->data_len = (uint32_t)(total - sizeof(*h));
	memcpy(buf, h, sizeof(*h));
	*len = total;
	return buf;
too_big:
	errno = E2BIG;
	return NULL;
}

static int send_request(int sock, const char *buf, size_t len, const int *fds, int nfds,
			struct sc_err *err)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	union {
		char b[CMSG_SPACE(sizeof(int) * 3)];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	if (nfds > 0) {
		msg.msg_control = u.b;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	if (sendmsg(sock, &msg, MSG_NOSIGNAL) != (ssize_t)len)
		return sc_fail(err, errno, "send the request to the cell");
	return 0;
}

static int recv_rsp(int sock, struct proto_rsp *r)
{
	ssize_t n;
	do
		n = recv(sock, r, sizeof(*r), 0);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(*r))
		return -1;
	r->text[sizeof(r->text) - 1] = '\0';
	return 0;
}

static int rsp_error(const struct cell *c, const struct proto_rsp *r, struct sc_err *err)
{
	return sc_fail(err, 0, "cell '%s': %s", c->name, r->text);
}

/* Connect and send a packed request (with fds to pass, if any): the
 * socket to read the answer from, or -1. */
static int send_to_cell(const struct cell *c, const char *buf, size_t len, const int *fds,
			int nfds, struct sc_err *err)
{
	int sock = connect_cell(c, err);
	if (sock < 0)
		return -1;
	if (send_request(sock, buf, len, fds, nfds, err) < 0) {
		close(sock);
		return -1;
	}
	return sock;
}

/* A request of a header only, answered by one record of kind `want`. */
static int simple_request(struct cell *c, struct proto_req *h, uint32_t want, struct proto_rsp *r,
			  struct sc_err *err)
{
	size_t len;
	_cleanup_free_ char *buf = pack(c, h, NULL, NULL, NULL, &len);
	if (!buf)
		return sc_fail(err, errno, "request");
	_cleanup_fd_ int sock = send_to_cell(c, buf, len, NULL, 0, err);
	if (sock < 0)
		return -1;
	if (recv_rsp(sock, r) < 0)
		return sc_fail(err, 0, "cell '%s' did not answer", c->name);
	if (r->kind != want)
		return rsp_error(c, r, err);
	return 0;
}

int rt_query_info(struct cell *c, unsigned *nprocs, unsigned *nexecs, struct sc_err *err)
{
	struct proto_req h = {.kind = REQ_INFO};
	struct proto_rsp r;
	if (simple_request(c, &h, RSP_INFO, &r, err) < 0)
		return -1;
	*nprocs = r.nprocs;
	*nexecs = r.nexecs;
	return 0;
}

int rt_query_disk(struct cell *c, uint64_t *used, uint64_t *size, struct sc_err *err)
{
	struct proto_req h = {.kind = REQ_INFO};
	struct proto_rsp r;
	unsigned long long u, s;
	*used = *size = 0;
	if (simple_request(c, &h, RSP_INFO, &r, err) < 0)
		return -1;
	r.text[sizeof(r.text) - 1] = '\0';
	if (sscanf(r.text, "disk %llu %llu", &u, &s) == 2 && u <= s) {
		*used = u;
		*size = s;
	}
	return 0;
}

/* A request init answers with n (1 or 2) fds: into fds, or -1. */
static int query_fds(struct cell *c, uint32_t kind, int *fds, size_t n, const char *what,
		     struct sc_err *err)
{
	struct proto_req h = {.kind = kind};
	size_t len;
	_cleanup_free_ char *buf = pack(c, &h, NULL, NULL, NULL, &len);
	if (!buf)
		return sc_fail(err, errno, "request");
	_cleanup_fd_ int sock = send_to_cell(c, buf, len, NULL, 0, err);
	if (sock < 0)
		return -1;
	struct proto_rsp r;
	struct iovec iov = {.iov_base = &r, .iov_len = sizeof(r)};
	union {
		char b[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b,
			     .msg_controllen = sizeof(u.b)};
	ssize_t got;
	do
		got = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (got < 0 && errno == EINTR);
	if (got != (ssize_t)sizeof(r))
		return sc_fail(err, 0, "cell '%s' did not answer", c->name);
	r.text[sizeof(r.text) - 1] = '\0';
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	size_t nfds = 0;
	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
	    cm->cmsg_len >= CMSG_LEN(0))
		nfds = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
	int got_fds[2] = {-1, -1};
	if (nfds > 0 && nfds <= 2) /* more would not fit: the kernel closes them */
		memcpy(got_fds, CMSG_DATA(cm), nfds * sizeof(int));
	if (r.kind != RSP_EXIT || nfds != n || (msg.msg_flags & MSG_CTRUNC)) {
		for (size_t i = 0; i < 2; i++)
			sc_closep(&got_fds[i]);
		return r.kind == RSP_ERROR ? rsp_error(c, &r, err)
					   : sc_fail(err, 0, "cell '%s' sent no %s", c->name, what);
	}
	memcpy(fds, got_fds, n * sizeof(int));
	return 0;
}

int rt_query_state_fd(struct cell *c, struct sc_err *err)
{
	int fd;
	return query_fds(c, REQ_STATE_FD, &fd, 1, "state", err) < 0 ? -1 : fd;
}

int rt_query_namespaces(struct cell *c, int fds[2], struct sc_err *err)
{
	return query_fds(c, REQ_NAMESPACES, fds, 2, "namespaces", err);
}

int cell_prestart_end(struct cell *c, struct sc_err *err)
{
	struct proto_req h = {.kind = REQ_PRESTART_END};
	struct proto_rsp r;
	return simple_request(c, &h, RSP_EXIT, &r, err);
}

int cell_set_memory_limit(struct cell *c, uint64_t bytes, struct sc_err *err)
{
	if (!bytes)
		return sc_fail(err, EINVAL, "a memory limit of 0 bytes");
	if (c->info.cgroup[0])
		return rt_cgroup_set_memory(c->info.cgroup, c->name, bytes, err);
	/* the rlimit stand-in, as the cell was made: its init sets it for
	 * the commands it starts */
	struct proto_req h = {.kind = REQ_SET_MEMORY, .max_size = bytes};
	struct proto_rsp r;
	return simple_request(c, &h, RSP_EXIT, &r, err);
}

struct exec_io {
	int rd[2];
	struct capture cap[2];
	struct rt_tty tty; /* req->tty: the command's pty */
	struct rt_tty_in tin; /* no pty: a terminal on stdin, relayed */
	int winch;         /* req->tty: SIGWINCH as a signalfd, or -1 */
	int cancel;        /* readable: give up the command (-1: none) */
	bool cancelled;
	const struct cell_exec_req *req; /* its on_output */
};

/* A captured stream's next piece: into the result and to the caller's
 * hook. The buffer is per call: many threads run commands at once. */
static void take_output(struct exec_io *io, int k)
{
	char buf[65536];
	ssize_t n = read(io->rd[k], buf, sizeof(buf));
	if (n > 0) {
		sc_capture_add(&io->cap[k], buf, (size_t)n);
		if (io->req->on_output)
			io->req->on_output(io->req->output_ctx, k + 1, buf, (size_t)n);
	} else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
		sc_closep(&io->rd[k]);
	}
}

/* The pty's output, for a caller that takes it as stream 1. */
static void tty_output(void *ctx, const char *d, size_t n)
{
	const struct exec_io *io = ctx;
	io->req->on_output(io->req->output_ctx, 1, d, n);
}

/* The caller's window size changed: the command's pty takes it (the
 * kernel then tells the command's foreground process group). */
static void take_winch(struct exec_io *io)
{
	struct signalfd_siginfo si;
	while (read(io->winch, &si, sizeof(si)) == (ssize_t)sizeof(si))
		;
	rt_tty_winch(&io->tty);
}

/* exec -t: SIGWINCH as a signalfd, blocked in this thread until the
 * command is done (old gets the mask to put back). */
static int catch_winch(sigset_t *old)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGWINCH);
	if (pthread_sigmask(SIG_BLOCK, &set, old) != 0)
		return -1;
	int fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (fd < 0)
		pthread_sigmask(SIG_SETMASK, old, NULL);
	return fd;
}

/* Wait for the exit record while draining the capture pipes. Once it has
 * come, what the command wrote is already in the pipes: read what is there
 * and stop, for a process it left in the background may hold them open
 * (and write on) for as long as the cell lives. */
static int exec_wait(int sock, struct exec_io *io, double deadline, struct proto_rsp *r,
		     bool *have)
{
	*have = false;
	double drain_until = 0;
	for (;;) {
		struct pollfd p[9];
		int n = 0, isock = -1, i0 = -1, i1 = -1, itty = -1, icancel = -1, itin = -1;
		if (*have)
			rt_tty_in_close(&io->tin); /* the terminal is the user's again */
		if (io->tin.wr >= 0) {
			itin = n;
			n += rt_tty_in_poll_add(&io->tin, p + n);
		}
		if (!*have)
			p[isock = n++] = (struct pollfd){.fd = sock, .events = POLLIN};
		if (!*have && io->cancel >= 0)
			p[icancel = n++] = (struct pollfd){.fd = io->cancel, .events = POLLIN};
		if (io->rd[0] >= 0)
			p[i0 = n++] = (struct pollfd){.fd = io->rd[0], .events = POLLIN};
		if (io->rd[1] >= 0)
			p[i1 = n++] = (struct pollfd){.fd = io->rd[1], .events = POLLIN};
		if (*have && io->tty.master >= 0) {
			/* the command is done; a process it left may keep the pty */
			rt_tty_drain(&io->tty, 200);
			rt_tty_close(&io->tty);
		}
		if (io->tty.master >= 0) {
			itty = n;
			n += rt_tty_poll_add(&io->tty, p + n);
		}
		int iwinch = -1;
		if (io->tty.master >= 0 && io->winch >= 0)
			p[iwinch = n++] = (struct pollfd){.fd = io->winch, .events = POLLIN};
		if (n == 0)
			return 0;
		int timeout = -1;
		double left = 0;
		if (*have) {
			if (drain_until == 0)
				drain_until = sc_now() + 1.0; /* a background writer's bound */
			if (sc_now() >= drain_until)
				return 0;
			timeout = 0;
		} else if (deadline > 0) {
			/* init enforces the timeout; this is a backstop, 5 s after
			 * it (a far one: look again within the hour) */
			left = deadline + 5 - sc_now();
			timeout = left <= 0 ? 0 : left < 3600 ? (int)(left * 1000) + 1 : 3600000;
		}
		int rc = poll(p, (nfds_t)n, timeout);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc == 0 && *have)
			return 0; /* nothing more is waiting */
		if (rc == 0 && left > 3600)
			continue;
		if (rc <= 0)
			return -1;
		if (icancel >= 0 && p[icancel].revents) {
			/* closing the socket (the caller's) kills the command */
			io->cancelled = true;
			return -1;
		}
		if (isock >= 0 && p[isock].revents) {
			if (recv_rsp(sock, r) < 0)
				return -1;
			*have = true;
			if (r->kind != RSP_EXIT)
				return 0;
		}
		if (i0 >= 0 && p[i0].revents)
			take_output(io, 0);
		if (i1 >= 0 && p[i1].revents)
			take_output(io, 1);
		if (itty >= 0)
			rt_tty_poll_done(&io->tty, p + itty);
		if (itin >= 0)
			rt_tty_in_poll_done(&io->tin, p + itin);
		if (iwinch >= 0 && p[iwinch].revents)
			take_winch(io);
	}
}

/* The command's stdio: the pty's slave (-t), else what the caller gave
 * (a terminal guarded, rt_tty_guard_stdio), /dev/null for no stdin, and
 * a pipe read into the capture for each stream to capture. fds[k] is
 * what the cell gets, ours[k] what this side opened for it. */
static int exec_stdio(const struct cell_exec_req *req, struct exec_io *io, int fds[3], int ours[3],
		      sigset_t *oldmask, struct sc_err *err)
{
	if (req->tty) {
		fds[0] = fds[1] = fds[2] = io->tty.slave;
		io->winch = catch_winch(oldmask); /* -1: sizes are not followed */
	} else if (rt_tty_guard_stdio(fds, ours, &io->tin, err) < 0) {
		return -1;
	}
	if (fds[0] < 0 && (fds[0] = ours[0] = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
		return sc_fail(err, errno, "open /dev/null");
	uint64_t limit = req->output_limit ? req->output_limit : CELL_DEFAULT_OUTPUT;
	for (int k = 0; k < 2; k++) {
		if (fds[k + 1] >= 0)
			continue;
		int p[2];
		if (pipe2(p, O_CLOEXEC) < 0)
			return sc_fail(err, errno, "pipe");
		sc_capture_init(&io->cap[k], limit);
		io->rd[k] = p[0];
		fds[k + 1] = ours[k + 1] = p[1];
	}
	return 0;
}

/* The result of a command init reported as ended. */
static void exec_result(struct cell_result *res, const struct proto_rsp *r, const struct exec_io *io,
			double t0)
{
	if (r->timed_out) {
		res->timed_out = true;
		res->exit_code = CELL_EXIT_TIMEOUT;
		res->signal = SIGKILL;
		res->limit_hit = "timeout";
	} else {
		rt_result_from_wait(res, r->status);
	}
	res->cpu_s = (double)r->cpu_us / 1e6;
	res->peak_memory = r->maxrss_kb * 1024;
	res->prestarted = r->prestarted != 0;
	res->wall_s = sc_now() - t0;
	sc_capture_result(&io->cap[0], &res->out, &res->out_len, &res->out_truncated);
	sc_capture_result(&io->cap[1], &res->err, &res->err_len, &res->err_truncated);
}

int cell_exec(struct cell *c, const struct cell_exec_req *req, struct cell_result *res,
	      struct sc_err *err)
{
	memset(res, 0, sizeof(*res));
	if (!req->argv || !req->argv[0])
		return sc_fail(err, 0, "no command to run");
	if (rt_state_paused(c->dir))
		return sc_fail(err, EBUSY, "cell '%s' is paused: resume it first", c->name);
	double t0 = sc_now();
	struct proto_req h = {.kind = REQ_EXEC,
			      .timeout_ms = rt_proto_timeout_ms(req->timeout_s),
			      .flags = (req->has_user ? PROTO_EXEC_USER : 0) |
				       (req->prestarted ? PROTO_EXEC_PRESTARTED : 0),
			      .uid = req->uid,
			      .gid = req->gid};
	size_t len;
	_cleanup_free_ char *buf = pack(c, &h, req->argv, req->env, req->cwd, &len);
	if (!buf && errno == E2BIG)
		return sc_fail(err, E2BIG, "command line and environment too long for cell '%s'", c->name);
	if (!buf)
		return sc_fail(err, errno, "request");
	struct exec_io io = {.rd = {-1, -1}, .winch = -1, .req = req,
			     .cancel = req->has_cancel ? req->cancel_fd : -1};
	sigset_t oldmask;
	int fds[3] = {req->stdin_fd, req->stdout_fd, req->stderr_fd}, ours[3] = {-1, -1, -1};
	int rc = -1;
	_cleanup_fd_ int sock = -1;
	rt_tty_init(&io.tty);
	rt_tty_in_init(&io.tin);
	if (req->tty && req->stdout_fd < 0 && !req->on_output)
		return sc_fail(err, EINVAL, "a pty's output cannot be captured (-t with --json)");
	if (req->tty && rt_tty_open_in(&io.tty, c->info.pid, req->stdin_fd, req->stdout_fd, err) < 0)
		return -1;
	if (req->tty && req->stdout_fd < 0) {
		io.tty.sink = tty_output;
		io.tty.sink_ctx = &io;
	}
	if (req->tty && req->on_pty)
		req->on_pty(req->output_ctx, io.tty.master);
	if (exec_stdio(req, &io, fds, ours, &oldmask, err) < 0)
		goto out;
	uint64_t kills = rt_cgroup_memory_kills(c->info.cgroup);
	if ((sock = send_to_cell(c, buf, len, fds, 3, err)) < 0)
		goto out;
	for (int k = 0; k < 3; k++)
		sc_closep(&ours[k]);
	sc_closep(&io.tty.slave);
	struct proto_rsp r;
	bool have;
	if (exec_wait(sock, &io, req->timeout_s > 0 ? t0 + req->timeout_s : 0, &r, &have) < 0 || !have) {
		if (io.cancelled) {
			sc_fail(err, ECANCELED, "the command in cell '%s' was cancelled", c->name);
			goto out;
		}
		sc_fail(err, 0, "cell '%s' went away during the command (its init died?)", c->name);
		goto out;
	}
	if (r.kind != RSP_EXIT) {
		rsp_error(c, &r, err);
		goto out;
	}
	exec_result(res, &r, &io, t0);
	/* The cell's memory limit killed while the command ran, and it failed:
	 * what `run` reports from its cgroup at the end, for this command
	 * (the killed one may be a process it waited for: a session's
	 * interpreter). */
	if (!res->limit_hit && res->exit_code != 0 &&
	    rt_cgroup_memory_kills(c->info.cgroup) > kills)
		res->limit_hit = "memory";
	rc = 0;
out:
	for (int k = 0; k < 3; k++)
		sc_closep(&ours[k]);
	for (int k = 0; k < 2; k++) {
		sc_closep(&io.rd[k]);
		sc_capture_free(&io.cap[k]);
	}
	rt_tty_close(&io.tty);
	rt_tty_in_close(&io.tin);
	if (io.winch >= 0) {
		close(io.winch);
		pthread_sigmask(SIG_SETMASK, &oldmask, NULL);
	}
	return rc;
}

/* A request whose worker in the cell moves data through one end of a
 * pipe while `ours` works the other end here. */
struct pipe_job {
	uint32_t kind, flags;
	const char *path;
	uint64_t max_size;
	double timeout_s;   /* 0: none */
	bool cell_reads;    /* the worker reads the pipe (we write) */
	int (*ours)(int fd, void *ctx, struct sc_err *err);
	void *ctx;
	const char *what;   /* for messages: "the copy" */
};

static int send_pipe_request(struct cell *c, const struct pipe_job *j, int theirs,
			     struct sc_err *err)
{
	struct proto_req h = {.kind = j->kind, .flags = j->flags, .max_size = j->max_size,
			      .timeout_ms = rt_proto_timeout_ms(j->timeout_s)};
	size_t len;
	_cleanup_free_ char *buf = pack(c, &h, NULL, NULL, j->path, &len);
	if (!buf)
		return sc_fail(err, errno == E2BIG ? ENAMETOOLONG : errno, "cell path");
	return send_to_cell(c, buf, len, &theirs, 1, err);
}

/* The worker's end, once our side of its pipe is closed: *wstatus, or -1
 * for an error the cell reports (RSP_ERROR), the cell going away or the
 * worker's timeout. ours_first: we failed first and say why ourselves
 * (the cell only saw the stream end), so only its status is read. */
static int wait_pipe_job(const struct cell *c, int sock, const char *what, bool ours_first,
			 int *wstatus, struct sc_err *err)
{
	struct proto_rsp r;
	for (;;) {
		if (recv_rsp(sock, &r) < 0) {
			if (ours_first)
				return 0;
			return sc_fail(err, 0, "cell '%s' went away during %s", c->name, what);
		}
		if (r.kind == RSP_ERROR && !ours_first)
			return rsp_error(c, &r, err);
		if (r.kind == RSP_EXIT)
			break;
	}
	if (r.timed_out && !ours_first)
		return sc_fail(err, ETIMEDOUT, "cell '%s': %s timed out", c->name, what);
	*wstatus = r.status;
	return 0;
}

/* Run the job; *wstatus is the worker's wait status. An error the cell
 * reports (RSP_ERROR) wins over ours, ours over the worker's status. */
static int run_pipe_job(struct cell *c, const struct pipe_job *j, int *wstatus, struct sc_err *err)
{
	int p[2];
	/* REQ_CONNECT's worker relays both ways: a stream socket pair */
	if ((j->kind == REQ_CONNECT ? socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p)
				    : pipe2(p, O_CLOEXEC)) < 0)
		return sc_fail(err, errno, "pipe");
	int theirs = j->cell_reads ? p[0] : p[1];
	_cleanup_fd_ int mine = j->cell_reads ? p[1] : p[0];
	_cleanup_fd_ int sock = send_pipe_request(c, j, theirs, err);
	close(theirs);
	if (sock < 0)
		return -1;
	struct sc_err local = {0};
	struct rt_sigpipe_guard g;
	rt_sigpipe_block(&g);
	int rc = j->ours(mine, j->ctx, &local);
	rt_sigpipe_restore(&g);
	sc_closep(&mine);
	/* Where we send and fail of our own accord (the size limit, a file
	 * we cannot read), the cell only saw the stream end: ours says why. */
	bool ours_first = rc < 0 && j->cell_reads && local.errnum != EPIPE;
	if (wait_pipe_job(c, sock, j->what, ours_first, wstatus, err) < 0)
		return -1;
	if (rc < 0)
		return sc_err_set(err, local.errnum, local.msg);
	return 0;
}

static int worker_succeeded(const struct cell *c, int wstatus, const char *what, struct sc_err *err)
{
	if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0)
		return sc_fail(err, 0, "cell '%s': %s failed", c->name, what);
	return 0;
}

struct copy_ctx {
	int dir_fd; /* host_path is relative to it (AT_FDCWD: as given) */
	const char *host_path;
	uint64_t max_size;
	unsigned recv_flags;
	const struct sc_log *log;
};

static int send_host_tree(int fd, void *ctx, struct sc_err *err)
{
	const struct copy_ctx *x = ctx;
	return rt_copy_send(fd, x->dir_fd, x->host_path, x->max_size, err);
}

static int receive_host_tree(int fd, void *ctx, struct sc_err *err)
{
	const struct copy_ctx *x = ctx;
	return rt_copy_receive(fd, x->host_path, x->max_size, COPY_STRIP_SPECIAL | x->recv_flags,
			       x->log, err);
}

/* How long a copy may take before init kills its worker (whose end of
 * the pipe closing ends ours): a process of the cell can stop the worker,
 * and nothing must wait on the cell forever. Five minutes, and a second
 * more per MiB the copy may move. */
static double copy_timeout(uint64_t max_size)
{
	return 300.0 + (double)max_size / (1024.0 * 1024.0);
}

/* A copy: the cell's side runs in a worker of init, ours here. */
static int copy_request_at(struct cell *c, uint32_t kind, uint32_t flags, const char *cell_path,
			   int dir_fd, const char *host_path, uint64_t max_size, unsigned out_flags,
			   const struct sc_log *log, struct sc_err *err)
{
	if (!cell_path || cell_path[0] != '/')
		return sc_fail(err, 0, "the cell path must be absolute, got '%.200s'", cell_path ? cell_path : "");
	struct copy_ctx x = {.dir_fd = dir_fd, .host_path = host_path, .max_size = max_size, .log = log,
			     .recv_flags = out_flags & CELL_COPY_KEEP_LINKS ? COPY_KEEP_LINKS : 0};
	struct pipe_job j = {.kind = kind, .flags = flags, .path = cell_path, .max_size = max_size,
			     .cell_reads = kind == REQ_COPY_IN, .timeout_s = copy_timeout(max_size),
			     .ours = kind == REQ_COPY_IN ? send_host_tree : receive_host_tree,
			     .ctx = &x, .what = "the copy"};
	int wstatus;
	if (run_pipe_job(c, &j, &wstatus, err) < 0)
		return -1;
	return worker_succeeded(c, wstatus, j.what, err);
}

int cell_export_layer(struct cell *c, uint64_t max_size,
		      int (*consume)(int fd, void *ctx, struct sc_err *err), void *ctx,
		      struct sc_err *err)
{
	struct pipe_job j = {.kind = REQ_LAYER_OUT, .path = "", .max_size = max_size,
			     .timeout_s = copy_timeout(max_size),
			     .ours = consume, .ctx = ctx, .what = "exporting its writable layer"};
	int wstatus;
	if (run_pipe_job(c, &j, &wstatus, err) < 0)
		return -1;
	return worker_succeeded(c, wstatus, j.what, err);
}

/* A file operation's worker exits with 0 or an errno value. */
static int file_status(const struct cell *c, int wstatus, const char *what, const char *path,
		       struct sc_err *err)
{
	if (!WIFEXITED(wstatus))
		return sc_fail(err, 0, "cell '%s': %s %.200s: killed by signal %d", c->name, what,
			       path, WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : 0);
	int e = WEXITSTATUS(wstatus);
	if (e == 0)
		return 0;
	if (e == EINVAL) {
		/* the message says why; errnum still tells the caller EINVAL */
		sc_fail(err, 0, "%s %.200s: not a regular file", what, path);
		if (err)
			err->errnum = e;
		return -1;
	}
	return sc_fail(err, e, "%s %.200s", what, path);
}

struct read_ctx {
	char *buf;
	size_t len, cap, limit; /* limit: max + 1 */
};

/* Read the worker's bytes, at most limit (it sends no more). */
static int read_all_of(int fd, void *ctx, struct sc_err *err)
{
	struct read_ctx *x = ctx;
	for (;;) {
		if (x->len == x->cap) {
			if (x->cap >= x->limit)
				return 0;
			size_t cap = x->cap ? x->cap * 2 : 16384;
			if (cap > x->limit)
				cap = x->limit;
			char *nb = realloc(x->buf, cap + 1);
			if (!nb)
				return sc_fail(err, ENOMEM, "read buffer");
			x->buf = nb;
			x->cap = cap;
		}
		ssize_t n = read(fd, x->buf + x->len, x->cap - x->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sc_fail(err, errno, "read the file's contents");
		if (n == 0)
			return 0;
		x->len += (size_t)n;
	}
}

int cell_read_file(struct cell *c, const char *cell_path, size_t max, double timeout_s,
		   struct cell_file *out, struct sc_err *err)
{
	memset(out, 0, sizeof(*out));
	if (max >= SIZE_MAX / 2)
		return sc_fail(err, EINVAL, "read: bound too large");
	struct read_ctx x = {.limit = max + 1};
	struct pipe_job j = {.kind = REQ_FILE_READ, .path = cell_path, .max_size = max,
			     .timeout_s = timeout_s, .ours = read_all_of, .ctx = &x, .what = "read"};
	int wstatus;
	if (run_pipe_job(c, &j, &wstatus, err) < 0 ||
	    file_status(c, wstatus, "cannot read", cell_path, err) < 0) {
		free(x.buf);
		return -1;
	}
	if (!x.buf && !(x.buf = malloc(1)))
		return sc_fail(err, ENOMEM, "read buffer");
	out->truncated = x.len > max;
	out->len = out->truncated ? max : x.len;
	out->data = x.buf;
	out->data[out->len] = '\0';
	return 0;
}

struct write_ctx {
	const void *data;
	size_t len;
};

static int write_all_of(int fd, void *ctx, struct sc_err *err)
{
	const struct write_ctx *x = ctx;
	/* EPIPE: the worker refused (e.g. the file exists); its status says why */
	if (sc_write_all(fd, x->data, x->len) < 0 && errno != EPIPE)
		return sc_fail(err, errno, "send the file's contents");
	return 0;
}

int cell_write_file(struct cell *c, const char *cell_path, const void *data, size_t len,
		    unsigned flags, double timeout_s, struct sc_err *err)
{
	struct write_ctx x = {.data = data, .len = len};
	struct pipe_job j = {.kind = REQ_FILE_WRITE, .path = cell_path, .max_size = len,
			     .flags = (flags & CELL_FILE_CREATE ? PROTO_FILE_CREATE : 0) |
				      (flags & CELL_FILE_EXEC ? PROTO_FILE_EXEC : 0) |
				      (flags & CELL_FILE_REPLACE ? PROTO_FILE_REPLACE : 0),
			     .timeout_s = timeout_s, .cell_reads = true, .ours = write_all_of,
			     .ctx = &x, .what = "write"};
	int wstatus;
	if (run_pipe_job(c, &j, &wstatus, err) < 0)
		return -1;
	return file_status(c, wstatus, flags & CELL_FILE_CREATE ? "cannot create" : "cannot write",
			   cell_path, err);
}

static int copy_request(struct cell *c, uint32_t kind, uint32_t flags, const char *cell_path,
			const char *host_path, uint64_t max_size, unsigned out_flags,
			const struct sc_log *log, struct sc_err *err)
{
	return copy_request_at(c, kind, flags, cell_path, AT_FDCWD, host_path, max_size, out_flags,
			       log, err);
}

int cell_copy_in_at(struct cell *c, int dir_fd, const char *name, const char *cell_path,
		    uint64_t max_size, struct sc_err *err)
{
	return copy_request_at(c, REQ_COPY_IN, PROTO_COPY_AS_DEST, cell_path, dir_fd, name, max_size,
			       0, NULL, err);
}

int cell_copy_in(struct cell *c, const char *host_path, const char *cell_path, uint64_t max_size,
		 struct sc_err *err)
{
	return copy_request(c, REQ_COPY_IN, 0, cell_path, host_path, max_size, 0, NULL, err);
}

int cell_copy_in_as(struct cell *c, const char *host_path, const char *cell_path,
		    uint64_t max_size, struct sc_err *err)
{
	return copy_request(c, REQ_COPY_IN, PROTO_COPY_AS_DEST, cell_path, host_path, max_size, 0,
			    NULL, err);
}

int cell_copy_out(struct cell *c, const char *cell_path, const char *host_path, uint64_t max_size,
		  struct sc_err *err)
{
	return cell_copy_out_flags(c, cell_path, host_path, max_size, 0, NULL, err);
}

int cell_copy_out_flags(struct cell *c, const char *cell_path, const char *host_path,
			uint64_t max_size, unsigned flags, const struct sc_log *log,
			struct sc_err *err)
{
	return copy_request(c, REQ_COPY_OUT, 0, cell_path, host_path, max_size, flags, log, err);
}

struct exchange_ctx {
	const void *req;
	size_t len;
	struct read_ctx answer;
};

static int exchange(int fd, void *ctx, struct sc_err *err)
{
	struct exchange_ctx *x = ctx;
	/* EPIPE: the worker is gone (nothing listened); its status says why */
	if (sc_write_all(fd, x->req, x->len) < 0 && errno != EPIPE)
		return sc_fail(err, errno, "send the request");
	shutdown(fd, SHUT_WR);
	struct sc_err local = {0};
	if (read_all_of(fd, &x->answer, &local) == 0)
		return 0;
	/* reset: the worker left with our bytes unread (nothing listened);
	 * its status says why */
	if (local.errnum == ECONNRESET)
		return 0;
	*err = local;
	return -1;
}

/* A failed connect's errno (the worker's exit code) as the caller's error. */
static int port_failure(const struct cell *c, uint16_t port, int wstatus, struct sc_err *err)
{
	int e = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : EIO;
	if (e == 0)
		return 0;
	if (e == ECONNREFUSED)
		return sc_fail(err, e, "nothing listens on port %u in cell '%s'", port, c->name);
	return sc_fail(err, e, "connect to port %u in cell '%s'", port, c->name);
}

int cell_port_exchange(struct cell *c, uint16_t port, const void *req, size_t len, size_t max,
		       double timeout_s, struct cell_file *out, struct sc_err *err)
{
	memset(out, 0, sizeof(*out));
	if (port == 0 || max >= SIZE_MAX / 2)
		return sc_fail(err, EINVAL, "port exchange: bad port or bound");
	struct exchange_ctx x = {.req = req, .len = len, .answer = {.limit = max + 1}};
	struct pipe_job j = {.kind = REQ_CONNECT, .path = "", .max_size = port,
			     .timeout_s = timeout_s, .ours = exchange, .ctx = &x,
			     .what = "the connection"};
	int wstatus;
	if (run_pipe_job(c, &j, &wstatus, err) < 0) {
		free(x.answer.buf);
		return -1;
	}
	if (port_failure(c, port, wstatus, err) < 0) {
		free(x.answer.buf);
		return -1;
	}
	if (!x.answer.buf && !(x.answer.buf = malloc(1)))
		return sc_fail(err, ENOMEM, "answer buffer");
	out->truncated = x.answer.len > max;
	out->len = out->truncated ? max : x.answer.len;
	out->data = x.answer.buf;
	out->data[out->len] = '\0';
	return 0;
}

struct cell_port_conn {
	const struct cell *c;
	uint16_t port;
	int fd;   /* ours: the worker relays it to the port */
	int sock; /* the request's: the worker's end comes on it */
};

int cell_port_open(struct cell *c, uint16_t port, double timeout_s, struct cell_port_conn **out,
		   struct sc_err *err)
{
	*out = NULL;
	if (port == 0)
		return sc_fail(err, EINVAL, "port connection: port 0");
	struct cell_port_conn *pc = calloc(1, sizeof(*pc));
	if (!pc)
		return sc_fail(err, ENOMEM, "port connection");
	int p[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) < 0) {
		free(pc);
		return sc_fail(err, errno, "socketpair");
	}
	struct pipe_job j = {.kind = REQ_CONNECT, .path = "", .max_size = port,
			     .timeout_s = timeout_s, .what = "the connection"};
	pc->sock = send_pipe_request(c, &j, p[1], err);
	close(p[1]);
	if (pc->sock < 0) {
		close(p[0]);
		free(pc);
		return -1;
	}
	*pc = (struct cell_port_conn){.c = c, .port = port, .fd = p[0], .sock = pc->sock};
	*out = pc;
	return 0;
}

int cell_port_conn_fd(const struct cell_port_conn *pc)
{
	return pc->fd;
}

int cell_port_close(struct cell_port_conn *pc, struct sc_err *err)
{
	if (!pc)
		return 0;
	close(pc->fd);
	int wstatus = 0, rc = wait_pipe_job(pc->c, pc->sock, "the connection", false, &wstatus, err);
	if (rc == 0)
		rc = port_failure(pc->c, pc->port, wstatus, err);
	close(pc->sock);
	free(pc);
	return rc;
}
