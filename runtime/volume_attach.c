/* A volume mounted into a running cell (a server's pool cell, which was
 * made before the request that names the volume): the volume's directory
 * is cloned here as a detached mount (idmapped onto the cell's user
 * namespace for a root caller's writable mount, as start.c does for
 * binds), and a forked helper joins the cell's user and mount namespaces
 * through the init's pidfd, becomes the cell's root, makes the mount point
 * beneath the cell's root without following any symlink (safepath.c) and
 * attaches the clone there. The helper makes system calls only (no
 * malloc, no lock), so a multi-threaded server may fork it.
 *
 * Root only. An unprivileged caller can clone no mount of the host's
 * mount namespace (open_tree needs CAP_SYS_ADMIN over it), and cannot
 * join a running cell's namespaces either (its init is not dumpable:
 * setns through its pidfd fails with EPERM, measured on 6.18): its cells
 * get volumes only when they are made (cell_bind.volume). */
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "cell_priv.h"
#include "safepath.h"
#include "state.h"
#include "volume.h"

static int clone_volume(const char *src, bool readonly, pid_t pid, struct sc_err *err)
{
	_cleanup_fd_ int tree =
		open_tree(AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	if (tree < 0)
		return sc_fail(err, errno, "cannot clone %s", src);
	struct mount_attr attr = {.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
	_cleanup_fd_ int userns = -1;
	if (readonly) {
		attr.attr_set |= MOUNT_ATTR_RDONLY;
	} else if (geteuid() == 0) {
		char ns[64];
		snprintf(ns, sizeof(ns), "/proc/%d/ns/user", (int)pid);
		userns = open(ns, O_RDONLY | O_CLOEXEC);
		if (userns < 0)
			return sc_fail(err, errno, "open the cell's user namespace");
		attr.attr_set |= MOUNT_ATTR_IDMAP;
		attr.userns_fd = (uint64_t)userns;
	}
	if (mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr)) < 0)
		return sc_fail(err, errno, "cannot prepare %s for the cell", src);
	return steal_fd(&tree);
}

/* In the helper: join, then attach tree at path. Reports into *err. */
static int attach_in_cell(int pidfd, int tree, const char *path, struct sc_err *err)
{
	if (setns(pidfd, CLONE_NEWUSER | CLONE_NEWNS) < 0)
		return sc_fail(err, errno, "join the cell's namespaces");

	if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)
		return sc_fail(err, errno, "become the cell's root");
	/* setns into a mount namespace puts root and cwd at its root: the
	 * cell's, which pivot_root stacked on the namespace's first mount */
	_cleanup_fd_ int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return sc_fail(err, errno, "open the cell's root");
	_cleanup_fd_ int target = rt_safepath_open(root, path, true, true, err);
	if (target < 0)
		return -1;
	if (move_mount(tree, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		return sc_fail(err, errno, "cannot mount the volume on %s", path);
	return 0;
}

static int run_helper(int pidfd, int tree, const char *path, struct sc_err *err)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return sc_fail(err, errno, "pipe");
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		return sc_fail(err, e, "fork");
	}
	if (pid == 0) {
		struct sc_err cerr = {0};
		int rc = attach_in_cell(pidfd, tree, path, &cerr);
		if (rc < 0)
			(void)!write(p[1], &cerr, sizeof(cerr));
		_exit(rc < 0 ? 1 : 0);
	}
	close(p[1]);
	struct sc_err cerr = {0};
	ssize_t n = sc_read_all(p[0], &cerr, sizeof(cerr));
	close(p[0]);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (n == (ssize_t)sizeof(cerr)) {
		cerr.msg[sizeof(cerr.msg) - 1] = '\0';
		*err = cerr;
		return -1;
	}
	return sc_fail(err, EIO, "the mount helper failed (status %d)", status);
}

/* The cell's info gains volume=NAME (for ps and volume rm). */
static int record_volume(struct cell *c, const char *volume, struct sc_err *err)
{
	struct cell_info info;
	if (rt_state_read_info(c->dir, &info, err) < 0)
		return -1;
	if (info.nvolumes >= CELL_MAX_VOLUMES)
		return sc_fail(err, E2BIG, "at most %d volumes per cell", CELL_MAX_VOLUMES);
	snprintf(info.volumes[info.nvolumes++], sizeof(info.volumes[0]), "%s", volume);
	if (rt_state_write_info(c->dir, &info, err) < 0)
		return -1;
	c->info.nvolumes = info.nvolumes;
	memcpy(c->info.volumes, info.volumes, sizeof(info.volumes));
	return 0;
}

int cell_mount_volume(struct cell *c, const char *volume, const char *cell_path, bool readonly,
		      struct sc_err *err)
{
	char src[SC_PATH_BUF];
	if (cell_path[0] != '/')
		return sc_fail(err, EINVAL, "volume mount point '%.200s' must be absolute", cell_path);
	if (geteuid() != 0)
		return sc_fail(err, ENOTSUP,
			       "a volume can be added to a running cell only by root (run the server "
			       "as root, or give the volume when the cell is made: create -v)");
	if (!cell_is_alive(c))
		return sc_fail(err, ESRCH, "cell %s is not running", c->name);
	if (cell_volume_source(volume, src, sizeof(src), err) < 0)
		return -1;
	_cleanup_fd_ int tree = clone_volume(src, readonly, c->info.pid, err);
	if (tree >= 0 && !cell_is_alive(c)) /* its pid could have been reused */
		return sc_fail(err, ESRCH, "cell %s is not running", c->name);
	if (tree < 0 || run_helper(c->pidfd, tree, cell_path, err) < 0)
		return -1;
	return record_volume(c, volume, err);
}
