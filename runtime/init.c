/* PID 1 of a cell: starts the command, reaps every orphan, forwards the
 * signals the host side sends, and reports the command's wait status. */
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>

#include "internal.h"

static volatile pid_t command_pid;

static void forward_signal(int sig)
{
	if (command_pid > 0)
		kill(command_pid, sig);
}

static const int FORWARDED[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};

static void install_forwarding(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = forward_signal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < SC_ARRAY_LEN(FORWARDED); i++)
		sigaction(FORWARDED[i], &sa, NULL);
}

static void start_command(const struct cell_plan *plan)
{
	const struct cell_spec *spec = plan->spec;
	/* its own pty (run -t): a session of its own with the pty as its
	 * controlling terminal, so that ^C and window sizes reach it */
	if (spec->tty) {
		setsid();
		(void)ioctl(0, TIOCSCTTY, 0);
	}
	bool as_user = spec->has_user && (spec->uid || spec->gid);
	if (rt_exec_become(as_user, spec->uid, spec->gid) < 0) {
		char line[200];
		int n = snprintf(line, sizeof(line), "sandcell: cannot run as %u:%u in the cell: %s\n",
				 spec->uid, spec->gid, strerror(errno));
		if (n > 0)
			(void)sc_write_all(2, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
		_exit(CELL_EXIT_INTERNAL);
	}
	rt_apply_command_limits(plan);
	rt_lockdown_close_fds(3);
	rt_exec_command(plan->tramp_fd, plan->ignored_sigs, spec->argv, spec->env);
	int e = errno;
	char line[600];
	int n = snprintf(line, sizeof(line), CELL_EXEC_FAILED_FMT, spec->argv[0],
			 strerror(e));
	if (n > 0)
		(void)sc_write_all(2, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
	_exit(rt_exec_failure_status(e));
}

void rt_init_run_once(const struct cell_plan *plan)
{
	/* vfork: no page tables to copy; the child only closes fds and execs. */
	rt_oom_command(plan, true);
	pid_t pid = vfork();
	if (pid != 0)
		rt_oom_command(plan, false);
	if (pid < 0) {
		struct sc_err err;
		sc_fail(&err, errno, "start the command");
		rt_child_die(plan, &err);
	}
	if (pid == 0)
		start_command(plan);
	command_pid = pid;
	install_forwarding();
	/* The command owns the stdio now: EOF on the host side must mean
	 * that every process of the cell has let go of it. */
	close(0);
	close(1);
	close(2);
	for (;;) {
		int status;
		pid_t done = waitpid(-1, &status, 0);
		if (done < 0) {
			if (errno == EINTR)
				continue;
			_exit(CELL_EXIT_INTERNAL);
		}
		if (done == pid) {
			rt_child_send(plan->status_fd, CELL_MSG_EXIT, status, NULL);
			_exit(0);
		}
	}
}
