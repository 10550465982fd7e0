/* cell_run: a one-shot cell. Starts it, then relays output, signals and
 * the timeout until the cell is gone. */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "../common/capture.h"
#include "egress.h"
#include "start.h"
#include "tty.h"

static const int RELAYED[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};

struct run_io {
	int out_rd, err_rd; /* capture pipes, -1 when passed through */
	struct capture out, err;
	struct rt_tty tty;  /* spec->tty: the cell's pty */
	struct rt_tty_in tin; /* no pty: a terminal on stdin, relayed */
	int guard[3];       /* stand-ins for the caller's terminal (no pty) */
};

static int make_capture(int *rd, int *wr, struct capture *cap, uint64_t limit, struct sc_err *err)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return sc_fail(err, errno, "pipe");
	*rd = p[0];
	*wr = p[1];
	sc_capture_init(cap, limit);
	return 0;
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
	if (read(r->sigfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
		return;
	/* with a pty, the kernel tells the command's process group */
	if (si.ssi_signo == SIGWINCH && r->io->tty.master >= 0) {
		rt_tty_winch(&r->io->tty);
		return;
	}
	syscall(SYS_pidfd_send_signal, r->pidfd, (int)si.ssi_signo, NULL, 0);
}

/* Relay until init has exited and every output pipe is at EOF. */
static void relay_loop(struct relay *r)
{
	for (;;) {
		struct pollfd p[9];
		int n = 0, ipid = -1, ist = -1, iout = -1, ierr = -1, isig = -1, itty = -1;
		int itin = -1;
		if (r->exited)
			rt_tty_in_close(&r->io->tin); /* the terminal is the user's again */
		if (!r->exited)
			p[ipid = n++] = (struct pollfd){.fd = r->pidfd, .events = POLLIN};
		if (r->status_rd >= 0)
			p[ist = n++] = (struct pollfd){.fd = r->status_rd, .events = POLLIN};
		if (r->io->out_rd >= 0)
			p[iout = n++] = (struct pollfd){.fd = r->io->out_rd, .events = POLLIN};
		if (r->io->err_rd >= 0)
			p[ierr = n++] = (struct pollfd){.fd = r->io->err_rd, .events = POLLIN};
		if (r->exited && r->status_rd < 0 && r->io->out_rd < 0 && r->io->err_rd < 0) {
			/* every process of the cell is gone: what is left on the pty */
			rt_tty_drain(&r->io->tty, 200);
			return;
		}
		if (!r->exited && r->io->tty.master >= 0) {
			itty = n;
			n += rt_tty_poll_add(&r->io->tty, p + n);
		}
		if (!r->exited && r->io->tin.wr >= 0) {
			itin = n;
			n += rt_tty_in_poll_add(&r->io->tin, p + n);
		}
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
			sc_capture_read_fd(&r->io->out, &r->io->out_rd);
		if (ierr >= 0 && p[ierr].revents)
			sc_capture_read_fd(&r->io->err, &r->io->err_rd);
		if (isig >= 0 && p[isig].revents)
			relay_signal(r);
		if (itty >= 0)
			rt_tty_poll_done(&r->io->tty, p + itty);
		if (itin >= 0)
			rt_tty_in_poll_done(&r->io->tin, p + itin);
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
		rt_result_from_wait(res, r->msg.value);
		return 0;
	}
	if (r->have_msg && r->msg.kind == CELL_MSG_ERROR) {
		r->msg.text[sizeof(r->msg.text) - 1] = '\0';
		return sc_err_set(err, r->msg.value, r->msg.text);
	}
	if (WIFSIGNALED(wstatus))
		return sc_fail(err, 0, "the cell's init was killed by signal %d", WTERMSIG(wstatus));
	return sc_fail(err, 0, "the cell's init exited with status %d before the command ran",
		       WEXITSTATUS(wstatus));
}

static int prepare_io(const struct cell_spec *spec, struct run_io *io, int stdio[3],
		      struct sc_err *err)
{
	uint64_t limit = spec->limits.output ? spec->limits.output : CELL_DEFAULT_OUTPUT;
	io->out_rd = io->err_rd = -1;
	if (spec->tty) {
		/* the cell makes the pty in its own devpts (child.c) */
		if (spec->stdout_fd < 0)
			return sc_fail(err, EINVAL, "a pty's output cannot be captured (-t with --json)");
		return 0;
	}
	stdio[0] = spec->stdin_fd;
	stdio[1] = spec->stdout_fd;
	stdio[2] = spec->stderr_fd;
	if (rt_tty_guard_stdio(stdio, io->guard, &io->tin, err) < 0)
		return -1;
	if (spec->stdout_fd < 0 && make_capture(&io->out_rd, &stdio[1], &io->out, limit, err) < 0)
		return -1;
	if (spec->stderr_fd < 0 && make_capture(&io->err_rd, &stdio[2], &io->err, limit, err) < 0)
		return -1;
	return 0;
}

static void warn_weak_limits(const struct cell_spec *spec, const struct cell_cgroup *cg,
			     struct cell_result *res)
{
	char warning[512];
	/* only limits the user asked for; the defaults fall back silently */
	struct policy_limits asked = spec->limits;
	asked.memory = policy_limit_value(asked.memory, 0);
	asked.pids = policy_limit_value(asked.pids, 0);
	const struct policy_limits *l = &asked;
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
	res->warning = strdup(warning); /* NULL on ENOMEM: only the warning is lost */
}

/* Starts the cell on stdio with its egress and its pty; the cell is
 * killed when the egress or the pty cannot be set up. */
static int start_cell(struct rt_start *st, struct egress_run *egress, struct run_io *io,
		      const struct cell_spec *spec, const char *cell_id, const int stdio[3],
		      struct sc_err *err)
{
	st->host_only[0] = io->tin.wr;
	st->host_only[1] = io->tin.term;
	if (rt_start(st, spec, cell_id, stdio, err) < 0)
		return -1;
	if ((st->egress_fd >= 0 &&
	     rt_egress_run_start(egress, spec, steal_fd(&st->egress_fd), cell_id, err) < 0) ||
	    (spec->tty &&
	     rt_tty_adopt(&io->tty, steal_fd(&st->tty_master), spec->stdin_fd, spec->stdout_fd, err) < 0)) {
		rt_start_kill(st);
		return -1;
	}
	return 0;
}

/* Our copies of the capture pipes' write ends (and of the pty's slave)
 * must go, or EOF never comes. */
static void close_write_ends(const struct cell_spec *spec, struct run_io *io, int stdio[3])
{
	sc_closep(&io->tty.slave);
	for (int k = 0; k < 3; k++)
		sc_closep(&io->guard[k]);
	if (spec->stdout_fd < 0)
		sc_closep(&stdio[1]);
	if (spec->stderr_fd < 0)
		sc_closep(&stdio[2]);
}

static void close_io(const struct cell_spec *spec, struct run_io *io, int stdio[3])
{
	sc_closep(&io->out_rd);
	sc_closep(&io->err_rd);
	close_write_ends(spec, io, stdio);
	sc_capture_free(&io->out);
	sc_capture_free(&io->err);
	rt_tty_close(&io->tty);
	rt_tty_in_close(&io->tin);
}

/* Relays output and signals until the command has ended (or the timeout
 * from t0), then fills res: status, egress, times, cgroup, output. */
static int relay_and_collect(struct rt_start *st, struct egress_run *egress, struct run_io *io,
			     const struct cell_spec *spec, int sigfd, double t0,
			     struct cell_result *res, struct sc_err *err)
{
	struct relay r = {.pidfd = st->pidfd, .status_rd = steal_fd(&st->status_rd), .sigfd = sigfd,
			  .io = io};
	if (spec->limits.timeout_s > 0)
		r.deadline = t0 + spec->limits.timeout_s;
	relay_loop(&r);
	sc_closep(&r.status_rd);
	rt_egress_run_finish(egress, res);
	int rc = finish(&r, st->pid, res, err);
	st->pid = 0;
	res->wall_s = sc_now() - t0;
	if (st->cg.active)
		rt_cgroup_collect(&st->cg, res);
	sc_capture_result(&io->out, &res->out, &res->out_len, &res->out_truncated);
	sc_capture_result(&io->err, &res->err, &res->err_len, &res->err_truncated);
	return rc;
}

int cell_run(const struct cell_spec *spec, struct cell_result *res, struct sc_err *err)
{
	memset(res, 0, sizeof(*res));
	if (!spec->argv || !spec->argv[0])
		return sc_fail(err, 0, "no command to run");
	double t0 = sc_now();
	struct rt_start st;
	struct run_io io = {.out_rd = -1, .err_rd = -1, .guard = {-1, -1, -1}};
	rt_tty_init(&io.tty);
	rt_tty_in_init(&io.tin);
	int stdio[3] = {-1, -1, -1}, rc = -1;
	_cleanup_fd_ int sigfd = -1;
	sigset_t oldmask;
	bool signals_blocked = false;
	char cell_id[64];
	struct egress_run egress;
	rt_egress_run_init(&egress);
	snprintf(cell_id, sizeof(cell_id), "run-%d-%lx", (int)getpid(), (unsigned long)(t0 * 1e6));
	rt_start_init(&st);

	if (prepare_io(spec, &io, stdio, err) < 0)
		goto out;
	if ((sigfd = block_relayed_signals(&oldmask, err)) < 0)
		goto out;
	signals_blocked = true;
	if (start_cell(&st, &egress, &io, spec, cell_id, stdio, err) < 0)
		goto out;
	warn_weak_limits(spec, &st.cg, res);
	close_write_ends(spec, &io, stdio);
	rc = relay_and_collect(&st, &egress, &io, spec, sigfd, t0, res, err);
out:
	rt_egress_run_finish(&egress, NULL);
	if (rc < 0)
		cell_result_free(res); /* on failure res holds nothing to free */
	rt_start_cleanup(&st);
	if (signals_blocked)
		sigprocmask(SIG_SETMASK, &oldmask, NULL);
	close_io(spec, &io, stdio);
	return rc;
}

void cell_result_free(struct cell_result *res)
{
	free(res->out);
	free(res->err);
	free(res->warning);
	res->out = res->err = NULL;
	res->warning = NULL;
	free(res->network);
	res->network = NULL;
}
