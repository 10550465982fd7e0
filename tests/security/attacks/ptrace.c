/* Tracing and reading other processes: PID 1 of the cell (a fork of
 * sandcell, which holds the cell's secrets: its fds, its memory) and a
 * sibling. usage: ptrace pid1|sibling */
#include "attack.h"

#include <signal.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <linux/kcmp.h>

/* Only PID 1's /proc files are secret: a sibling is ours to read. */
static void trace_pid(pid_t pid, int files_too)
{
	attempt("ptrace(PTRACE_ATTACH, %d)", pid);
	if (expect_fail(ptrace(PTRACE_ATTACH, pid, NULL, NULL)) == 0)
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
	attempt("ptrace(PTRACE_SEIZE, %d)", pid);
	if (expect_fail(ptrace(PTRACE_SEIZE, pid, NULL, NULL)) == 0)
		ptrace(PTRACE_DETACH, pid, NULL, NULL);

	char buf[64];
	struct iovec local = {.iov_base = buf, .iov_len = sizeof(buf)};
	struct iovec remote = {.iov_base = (void *)0x400000, .iov_len = sizeof(buf)};
	attempt("process_vm_readv(%d)", pid);
	expect_fail(process_vm_readv(pid, &local, 1, &remote, 1, 0));
	attempt("process_vm_writev(%d)", pid);
	expect_fail(process_vm_writev(pid, &local, 1, &remote, 1, 0));

	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	attempt("pidfd_getfd(pidfd of %d, fd 3)", pid);
	if (pfd < 0)
		blocked_errno(errno);
	else
		expect_fail(syscall(SYS_pidfd_getfd, pfd, 3, 0));
	attempt("kcmp(self, %d, KCMP_VM)", pid);
	expect_fail(syscall(SYS_kcmp, getpid(), pid, KCMP_VM, 0, 0));

	if (!files_too)
		return;
	static const char *const files[] = {"mem", "environ", "maps", "auxv", "stack", "syscall"};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/%s", pid, files[i]);
		attempt("read %s", path);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			blocked_errno(errno);
			continue;
		}
		char b[256];
		ssize_t n = read(fd, b, sizeof(b));
		if (n > 0)
			escaped("read %zd bytes", n);
		else if (n == 0)
			blocked("read 0 bytes");
		else
			blocked_errno(errno);
		close(fd);
	}
	attempt("open /proc/%d/fd", pid);
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	expect_fail(open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

static void case_pid1(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	trace_pid(1, 1);
	attempt("ptrace(PTRACE_TRACEME) then exec");
	expect_fail(ptrace(PTRACE_TRACEME, 0, NULL, NULL));
}

static void case_sibling(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	pid_t child = fork();
	if (child < 0)
		setup_failed("fork");
	if (child == 0) {
		for (;;)
			pause();
	}
	trace_pid(child, 0);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}

int main(int argc, char **argv)
{
	static const struct attack_case cases[] = {
		{"pid1", case_pid1},
		{"sibling", case_sibling},
		{NULL, NULL},
	};
	return attack_main(cases, argc, argv);
}
