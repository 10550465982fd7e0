/* Namespace escapes: unshare, setns, nested user namespaces.
 * usage: escape_ns unshare|setns|userns HOST_ONLY_PATH */
#include "attack.h"

#include <sched.h>
#include <signal.h>
#include <linux/sched.h>
#include <sys/wait.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

static const struct {
	const char *name;
	unsigned long flag;
} NS_FLAGS[] = {
	{"CLONE_NEWUSER", CLONE_NEWUSER}, {"CLONE_NEWNS", CLONE_NEWNS},
	{"CLONE_NEWNET", CLONE_NEWNET},	  {"CLONE_NEWPID", CLONE_NEWPID},
	{"CLONE_NEWUTS", CLONE_NEWUTS},	  {"CLONE_NEWIPC", CLONE_NEWIPC},
	{"CLONE_NEWCGROUP", CLONE_NEWCGROUP}, {"CLONE_NEWTIME", CLONE_NEWTIME},
};
#define NFLAGS (sizeof(NS_FLAGS) / sizeof(NS_FLAGS[0]))

static void case_unshare(int argc, char **argv)
{
	(void)argc;
	for (size_t i = 0; i < NFLAGS; i++) {
		attempt("unshare(%s)", NS_FLAGS[i].name);
		expect_fail(unshare((int)NS_FLAGS[i].flag));
	}
	attempt("unshare(all namespace flags at once)");
	unsigned long all = 0;
	for (size_t i = 0; i < NFLAGS; i++)
		all |= NS_FLAGS[i].flag;
	expect_fail(unshare((int)all));
	probe_host_path(argv[1]);
}

static void case_setns(int argc, char **argv)
{
	(void)argc;
	static const char *const kinds[] = {"mnt", "net", "user", "pid", "uts", "ipc", "cgroup", "time"};
	static const char *const whose[] = {"1", "self"};
	for (size_t w = 0; w < 2; w++)
		for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
			char path[64];
			snprintf(path, sizeof(path), "/proc/%s/ns/%s", whose[w], kinds[i]);
			attempt("setns(open(%s))", path);
			int fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0) {
				blocked_errno(errno);
				continue;
			}
			expect_fail(setns(fd, 0));
			close(fd);
		}
	attempt("setns(pidfd_open(1), every namespace)");
	int pfd = (int)syscall(SYS_pidfd_open, 1, 0);
	if (pfd < 0)
		blocked_errno(errno);
	else
		expect_fail(setns(pfd, CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID |
					       CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWCGROUP));
	probe_host_path(argv[1]);
}

/* A nested user namespace would give the attacker a full set of
 * capabilities again, over new namespaces of its own. */
static void case_userns(int argc, char **argv)
{
	(void)argc;
	attempt("unshare(CLONE_NEWUSER)");
	expect_fail(unshare(CLONE_NEWUSER));

	static const unsigned long variants[] = {
		CLONE_NEWUSER, CLONE_NEWUSER | CLONE_NEWNS, CLONE_NEWUSER | (1UL << 32),
		CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET,
	};
	for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
		attempt("clone(0x%lx | SIGCHLD)", variants[i]);
		long pid = syscall(SYS_clone, variants[i] | SIGCHLD, 0, NULL, NULL, 0);
		if (pid == 0)
			_exit(0);
		expect_fail(pid);
		if (pid > 0)
			waitpid((pid_t)pid, NULL, 0);
	}
	attempt("clone3(CLONE_NEWUSER)");
	struct clone_args ca = {.flags = CLONE_NEWUSER, .exit_signal = SIGCHLD};
	long pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0)
		_exit(0);
	expect_fail(pid);
	if (pid > 0)
		waitpid((pid_t)pid, NULL, 0);

	attempt("raise user.max_user_namespaces");
	int fd = open("/proc/sys/user/max_user_namespaces", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		blocked_errno(errno);
	else
		expect_fail(write(fd, "100000\n", 7));
	probe_host_path(argv[1]);
}

int main(int argc, char **argv)
{
	static const struct attack_case cases[] = {
		{"unshare", case_unshare},
		{"setns", case_setns},
		{"userns", case_userns},
		{NULL, NULL},
	};
	return attack_main(cases, argc, argv);
}
