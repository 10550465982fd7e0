/* The machine's floor for a cold cell, for scripts/bench.sh: the least a
 * sandbox start can do — clone into user, mount, pid, net, uts, ipc and
 * cgroup namespaces, map the caller to root, mount a tmpfs and one overlay
 * of /usr over it, exec /bin/true from it, wait. No /proc, /dev, masks,
 * pivot_root, loopback, capabilities, seccomp or init. Run as a command
 * (one start per run, as `sandcell run` is measured); with `-n N -j J` it
 * starts N of them from J processes and prints starts per second.
 * usage: floor [-n N -j J] */
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NS_FLAGS                                                                                   \
	(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWIPC |  \
	 CLONE_NEWCGROUP)

static void write_file(pid_t pid, const char *name, const char *text)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, text, strlen(text)) < 0) {
		perror(path);
		exit(1);
	}
	close(fd);
}

static void child(int go)
{
	char c;
	if (read(go, &c, 1) != 1 || setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)
		_exit(120);
	/* /tmp of the new mount namespace: nothing leaks to the host */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tmpfs", "/tmp", "tmpfs", 0, "size=64m") < 0 || mkdir("/tmp/u", 0755) < 0 ||
	    mkdir("/tmp/w", 0755) < 0 || mkdir("/tmp/r", 0755) < 0 ||
	    mount("overlay", "/tmp/r", "overlay", 0,
		  "lowerdir=/usr,upperdir=/tmp/u,workdir=/tmp/w,userxattr") < 0)
		_exit(121);
	execl("/tmp/r/bin/true", "true", (char *)NULL);
	_exit(127);
}

static int one_start(void)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	struct clone_args args = {.flags = NS_FLAGS, .exit_signal = SIGCHLD};
	pid_t pid = (pid_t)syscall(SYS_clone3, &args, sizeof(args));
	if (pid < 0)
		return -1;
	if (pid == 0) {
		close(p[1]);
		child(p[0]);
	}
	close(p[0]);
	char map[64];
	snprintf(map, sizeof(map), "0 %d 1\n", (int)geteuid());
	write_file(pid, "uid_map", map);
	write_file(pid, "setgroups", "deny");
	snprintf(map, sizeof(map), "0 %d 1\n", (int)getegid());
	write_file(pid, "gid_map", map);
	if (write(p[1], "g", 1) != 1)
		return -1;
	close(p[1]);
	int st;
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	int n = 1, jobs = 1;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "-n"))
			n = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "-j"))
			jobs = atoi(argv[i + 1]);
	}
	if (n <= 1 && jobs <= 1)
		return one_start() == 0 ? 0 : 1;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int j = 0; j < jobs; j++) {
		if (fork() == 0) {
			for (int i = j; i < n; i += jobs)
				if (one_start() < 0)
					_exit(1);
			_exit(0);
		}
	}
	int bad = 0, st;
	while (wait(&st) > 0)
		bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("%.1f\n", n / s);
	return bad;
}
