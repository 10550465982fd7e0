/* cgpeek: run inside a cell under --memory; try everything an unprivileged
 * program can to reach the cell's own memory.max and raise it: a nested
 * user + cgroup + mount namespace and a fresh cgroup2 mount there. Prints what it saw; exits 1 when it raised a limit, 0 when it
 * could not. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, text, strlen(text)) < 0)
			perror(path);
		close(fd);
	}
}

static int try_raise(const char *path)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		printf("open %s: %s\n", path, strerror(errno));
		return 0;
	}
	ssize_t n = write(fd, "max", 3);
	int e = errno;
	close(fd);
	if (n == 3) {
		printf("RAISED %s\n", path);
		return 1;
	}
	printf("write %s: %s\n", path, strerror(e));
	return 0;
}

int main(void)
{
	char map[64];
	unsigned uid = getuid(), gid = getgid();
	int raised = 0;
	/* the cell's own view first: /sys/fs/cgroup, if anything is there */
	raised |= try_raise("/sys/fs/cgroup/memory.max");
	if (unshare(CLONE_NEWUSER) < 0) {
		printf("unshare(user): %s\n", strerror(errno));
		return raised;
	}
	write_file("/proc/self/setgroups", "deny");
	snprintf(map, sizeof(map), "0 %u 1", uid);
	write_file("/proc/self/uid_map", map);
	snprintf(map, sizeof(map), "0 %u 1", gid);
	write_file("/proc/self/gid_map", map);
	if (unshare(CLONE_NEWNS | CLONE_NEWCGROUP) < 0) {
		printf("unshare(mount, cgroup): %s\n", strerror(errno));
		return raised;
	}
	mkdir("/tmp/cg", 0755);
	if (mount("cgroup2", "/tmp/cg", "cgroup2", 0, NULL) < 0) {
		printf("mount cgroup2: %s\n", strerror(errno));
		return raised;
	}
	printf("mounted cgroup2 in a nested namespace\n");
	/* the mount's root is the cell's cgroup namespace root */
	raised |= try_raise("/tmp/cg/memory.max");
	raised |= try_raise("/tmp/cg/pids.max");
	return raised;
}
