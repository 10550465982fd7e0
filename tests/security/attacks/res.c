/* Resources and the host's processes.
 * usage: res forkbomb LIMIT [MARKER] | membomb LIMIT_MB [MARKER] | fds | kill PID | setuid |
 *        orphan MARKER
 * (MARKER: a word in the command line the test looks for on the host) */
#include "attack.h"

#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>

/* Every process forks as fast as it can, forever; each new one reports
 * itself through a pipe. The first process counts them: more than LIMIT
 * alive at once means the limit did not hold. It stops counting (but the
 * bomb goes on until sandcell's --timeout) once no new process appeared
 * for two seconds, or after 2000 processes (bounded even if it escapes). */
static void case_forkbomb(int argc, char **argv)
{
	long limit = argc > 1 ? atol(argv[1]) : 64;
	int p[2];
	if (pipe(p) < 0)
		setup_failed("pipe");
	attempt("fork bomb (limit %ld processes)", limit);
	pid_t first = fork();
	if (first < 0)
		setup_failed("fork");
	if (first == 0) {
		close(p[0]);
		for (;;) {
			pid_t c = fork();
			if (c == 0) {
				(void)!write(p[1], "+", 1);
				continue;
			}
			if (c < 0) {
				struct timespec ts = {0, 1000000};
				nanosleep(&ts, NULL);
			}
		}
	}
	close(p[1]);
	long seen = 1;
	for (;;) {
		struct timeval tv = {2, 0};
		fd_set rd;
		FD_ZERO(&rd);
		FD_SET(p[0], &rd);
		if (select(p[0] + 1, &rd, NULL, NULL, &tv) <= 0)
			break;
		char buf[256];
		ssize_t n = read(p[0], buf, sizeof(buf));
		if (n <= 0)
			break;
		seen += n;
		if (seen > 2000)
			break;
	}
	/* +2: this process and the cell's init count against the limit too. */
	if (seen + 2 > limit)
		escaped("%ld processes started", seen);
	else
		blocked("fork failed after %ld processes (EAGAIN)", seen);
	fflush(stdout);
	if (seen > 2000) {
		kill(-getpgrp(), SIGKILL);
		return;
	}
	for (;;)
		pause();
}

/* Allocate and touch memory until it fails; more than LIMIT_MB (+ 32 MB
 * of slack for the program itself) is an escape. Bounded at 4 GiB. It
 * ends once an allocation fails, as a program out of memory would. */
static void case_membomb(int argc, char **argv)
{
	long limit = argc > 1 ? atol(argv[1]) : 256;
	long got = 0;
	attempt("memory bomb (limit %ld MB)", limit);
	for (; got < 4096; got++) {
		char *m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
		if (m == MAP_FAILED)
			break;
		memset(m, 0xa5, 1 << 20);
	}
	int e = errno;
	if (got > limit + 32)
		escaped("allocated and touched %ld MB", got);
	else
		blocked("mmap failed after %ld MB: %s", got, errname(e));
}

/* Only 0, 1 and 2 may be open: the host side opened more before starting
 * sandcell (a host file for writing, a directory). */
static void case_fds(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	attempt("find inherited fds beyond 0-2");
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		setup_failed("opendir /proc/self/fd");
	int mine = dirfd(d), extra = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		int fd = atoi(e->d_name);
		if (fd <= 2 || fd == mine)
			continue;
		char path[64], target[256];
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		ssize_t n = readlink(path, target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = '\0';
		printf("  fd %d -> %s\n", fd, target);
		(void)!write(fd, "from-the-cell\n", 14);
		extra++;
	}
	closedir(d);
	if (extra)
		escaped("%d inherited fds", extra);
	else
		blocked("only 0, 1, 2");
	for (int fd = 3; fd < 64; fd++) {
		if (fcntl(fd, F_GETFD) >= 0) {
			attempt("use fd %d", fd);
			escaped("fd %d is open", fd);
		}
	}
}

static void case_kill(int argc, char **argv)
{
	if (argc < 2)
		setup_failed("kill PID");
	pid_t pid = (pid_t)atoi(argv[1]);
	attempt("kill(%d, SIGKILL) (a host process)", pid);
	expect_fail(kill(pid, SIGKILL));
	attempt("pidfd_open(%d) and pidfd_send_signal", pid);
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd < 0)
		blocked_errno(errno);
	else
		expect_fail(syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0));
	attempt("kill(-%d, SIGKILL) (its process group)", pid);
	expect_fail(kill(-pid, SIGKILL));
	/* kill(-1) reaches every process we may signal: in the cell, only the
	 * cell's own (and never init). Afterwards the test checks the host. */
	attempt("kill(-1, SIGKILL) (everything this process may signal)");
	signal(SIGKILL, SIG_DFL);
	long r = kill(-1, SIGKILL);
	if (r < 0)
		blocked_errno(errno);
	else
		blocked("sent, to the cell's own processes only (the test checks the host)");
}

/* A setuid-root program does not give root's powers back: root of the
 * cell has no capabilities (and cannot change its uid), no_new_privs is
 * set, and the securebits keep root from regaining capabilities on exec. */
static void report_privileges(const char *who)
{
	uid_t r, e, s;
	getresuid(&r, &e, &s);
	FILE *f = fopen("/proc/self/status", "re");
	char line[256], capeff[64] = "?", capprm[64] = "?";
	while (f && fgets(line, sizeof(line), f)) {
		sscanf(line, "CapEff:\t%63s", capeff);
		sscanf(line, "CapPrm:\t%63s", capprm);
	}
	if (f)
		fclose(f);
	attempt("%s: check uids and capabilities", who);
	if (strcmp(capeff, "0000000000000000") || strcmp(capprm, "0000000000000000"))
		escaped("CapEff %s CapPrm %s", capeff, capprm);
	else
		blocked("uid %u/%u/%u, no capabilities", r, e, s);
}

static void case_setuid(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	attempt("no_new_privs is set");
	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1)
		blocked("yes");
	else
		escaped("no_new_privs is off");
	attempt("make a setuid-root copy of this program");
	int in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	int out = open("/tmp/suid", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (in < 0 || out < 0)
		setup_failed("copy /proc/self/exe");
	char buf[65536];
	ssize_t n;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			setup_failed("write /tmp/suid");
	close(in);
	close(out);
	if (chown("/tmp/suid", 0, 0) < 0 || chmod("/tmp/suid", 04755) < 0)
		setup_failed("chmod 4755 /tmp/suid");
	blocked("made (harmless alone)");
	attempt("setresuid(1000) to run the setuid program as another user");
	if (setresgid(1000, 1000, 1000) == 0 && setresuid(1000, 1000, 1000) == 0)
		blocked("done (the setuid program must still gain nothing)");
	else
		blocked_errno(errno);
	pid_t c = fork();
	if (c == 0) {
		execl("/tmp/suid", "suid", "suidchild", (char *)NULL);
		_exit(3);
	}
	int st;
	waitpid(c, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) > 1)
		setup_failed("the setuid copy did not run (status %d)", st);
	if (WEXITSTATUS(st) == 1)
		attack_escaped = 1;
	/* The host's setuid-root programs: their owner is not mapped in the
	 * cell, so the kernel ignores the bit. */
	static const char *const host_suid[] = {"/usr/bin/su", "/usr/bin/passwd", "/usr/bin/mount"};
	for (size_t i = 0; i < sizeof(host_suid) / sizeof(host_suid[0]); i++) {
		struct stat st;
		if (stat(host_suid[i], &st) < 0 || !(st.st_mode & S_ISUID))
			continue;
		attempt("the host's setuid-root %s is owned by root of the cell", host_suid[i]);
		if (st.st_uid == 0)
			escaped("owner uid 0 in the cell");
		else
			blocked("owner uid %u (unmapped)", st.st_uid);
	}
}

static void case_suidchild(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	uid_t r, e, s;
	getresuid(&r, &e, &s);
	attempt("setuid-root program started by uid %u: effective uid", r);
	if (r != 0 && (e == 0 || s == 0))
		escaped("euid %u suid %u", e, s);
	else
		blocked("euid %u", e);
	report_privileges("setuid-root program");
}

/* A daemon that double-forks, starts a new session, ignores every
 * signal it can, and tries to outlive the cell; MARKER is in its argv so
 * the test can see it on the host while the cell runs (this process waits
 * three seconds before it ends the cell) and look for it afterwards. */
static void case_orphan(int argc, char **argv)
{
	if (argc < 2)
		setup_failed("orphan MARKER");
	attempt("double-fork a daemon that ignores signals (%s)", argv[1]);
	pid_t c = fork();
	if (c == 0) {
		setsid();
		if (fork() == 0) {
			for (int s = 1; s < 65; s++)
				signal(s, SIG_IGN);
			execl("/proc/self/exe", "res", "sleeper", argv[1], (char *)NULL);
			_exit(1);
		}
		_exit(0);
	}
	waitpid(c, NULL, 0);
	blocked("started; the test checks that it is gone with the cell");
	sleep(15); /* long enough for the host to see it on a slow machine */
}

static void case_sleeper(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	static const struct attack_case cases[] = {
		{"forkbomb", case_forkbomb}, {"membomb", case_membomb},
		{"fds", case_fds},	     {"kill", case_kill},
		{"setuid", case_setuid},     {"suidchild", case_suidchild},
		{"orphan", case_orphan},     {"sleeper", case_sleeper},
		{NULL, NULL},
	};
	return attack_main(cases, argc, argv);
}
