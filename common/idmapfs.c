/* The probe behind common/idmapfs.h: a throwaway user namespace with the
 * cells' map, and an idmapped clone of the data directory onto it. The
 * clone is never attached anywhere, so nothing is left mounted. */
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "idmapfs.h"

static bool kernel_takes_idmapped_lowers(struct sc_err *why)
{
	struct utsname u;
	unsigned major = 0, minor = 0;
	if (uname(&u) < 0 || sscanf(u.release, "%u.%u", &major, &minor) != 2) {
		sc_fail(why, 0, "cannot read the kernel version");
		return false;
	}
	if (major * 1000 + minor < 5019) {
		sc_fail(why, 0, "Linux %.64s: overlayfs takes idmapped layers from 5.19", u.release);
		return false;
	}
	return true;
}

static int write_map(pid_t pid, const char *which, uint32_t start, uint32_t count)
{
	char path[64], map[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, which);
	int n = snprintf(map, sizeof(map), "0 %u %u\n", start, count);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = write(fd, map, (size_t)n) == n ? 0 : -1;
	close(fd);
	return rc;
}

/* A child in a new user namespace mapped like a cell; returns its userns fd. */
static int throwaway_userns(uint32_t uid_start, uint32_t gid_start, uint32_t count,
			    struct sc_err *why)
{
	int ready[2], hold[2];
	if (pipe2(ready, O_CLOEXEC) < 0)
		return sc_fail(why, errno, "pipe");
	if (pipe2(hold, O_CLOEXEC) < 0) {
		close(ready[0]);
		close(ready[1]);
		return sc_fail(why, errno, "pipe");
	}
	pid_t pid = fork();
	if (pid == 0) {
		char c = unshare(CLONE_NEWUSER) == 0 ? 'u' : 'x';
		close(hold[1]);
		if (write(ready[1], &c, 1) != 1)
			_exit(1);
		ssize_t n = read(hold[0], &c, 1); /* until the parent has what it needs */
		_exit(n < 0 ? 1 : 0);
	}
	close(ready[1]);
	close(hold[0]);
	int userns = -1;
	char c = 0;
	if (pid < 0) {
		sc_fail(why, errno, "fork");
	} else if (read(ready[0], &c, 1) != 1 || c != 'u') {
		sc_fail(why, 0, "cannot make a user namespace");
	} else if (write_map(pid, "uid_map", uid_start, count) < 0 ||
		   write_map(pid, "gid_map", gid_start, count) < 0) {
		sc_fail(why, errno, "cannot write a user namespace's id map");
	} else {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
		userns = open(path, O_RDONLY | O_CLOEXEC);
		if (userns < 0)
			sc_fail(why, errno, "open %s", path);
	}
	close(ready[0]);
	close(hold[1]);
	if (pid > 0)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	return userns;
}

int sc_idmap_layers_supported(const char *dir, uint32_t uid_start, uint32_t gid_start,
			      uint32_t count, struct sc_err *why)
{
	const char *env = getenv(SC_IDMAP_ENV);
	if (env && !strcmp(env, "0")) {
		sc_fail(why, 0, "%s=0 asks for shifted layers", SC_IDMAP_ENV);
		return 0;
	}
	if (geteuid() != 0) {
		sc_fail(why, 0, "only root callers' cells map a range");
		return 0;
	}
	if (!kernel_takes_idmapped_lowers(why))
		return 0;
	int userns = throwaway_userns(uid_start, gid_start, count, why);
	if (userns < 0)
		return 0;
	int tree = (int)open_tree(AT_FDCWD, dir, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	int ok = 0;
	if (tree < 0) {
		sc_fail(why, errno, "open_tree %.200s", dir);
	} else {
		struct mount_attr attr = {.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY,
					  .userns_fd = (uint64_t)userns};
		if (mount_setattr(tree, "", AT_EMPTY_PATH, &attr, sizeof(attr)) == 0)
			ok = 1;
		else
			sc_fail(why, errno, "the filesystem of %.200s has no idmapped mounts", dir);
		close(tree);
	}
	close(userns);
	return ok;
}
