/* A root caller's volume: an ext4 filesystem in a sparse image file of the
 * volume's size, loop-mounted on the host at the volume's data directory,
 * so that the kernel holds the size cap (writes past it fail with ENOSPC).
 * Its root directory belongs to host root (0:0): a root caller's cells see
 * a writable bind through an idmapped mount onto their user namespace
 * (start.c), where on-disk id N is the cell's id N, so every cell's root
 * owns it and the files cells write keep the same owners from cell to cell. */
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <linux/loop.h>

#include "volume.h"

static const char *const MKFS_PATHS[] = {"/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4",
					  "/usr/bin/mkfs.ext4"};

static int run_mkfs(const char *image, struct sc_err *err)
{
	const char *mkfs = NULL;
	for (size_t i = 0; i < SC_ARRAY_LEN(MKFS_PATHS) && !mkfs; i++)
		if (access(MKFS_PATHS[i], X_OK) == 0)
			mkfs = MKFS_PATHS[i];
	if (!mkfs)
		return sc_fail(err, ENOENT, "mkfs.ext4 not found (install e2fsprogs)");
	/* -m 0: no blocks kept for root, so the cap is what cells get */
	char *argv[] = {(char *)mkfs, "-q", "-F", "-m", "0", "-E", "root_owner=0:0", (char *)image, NULL};
	char *envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	pid_t pid;
	int rc = posix_spawn(&pid, mkfs, &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0)
		return sc_fail(err, rc, "run %s", mkfs);
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return sc_fail(err, errno, "wait for %s", mkfs);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return sc_fail(err, EIO, "%s %s failed (status %d)", mkfs, image, status);
	return 0;
}

int rt_volume_disk_make(const char *image, uint64_t size, struct sc_err *err)
{
	int fd = open(image, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return sc_fail(err, errno, "create %s", image);
	if (ftruncate(fd, (off_t)size) < 0) {
		int e = errno;
		close(fd);
		return sc_fail(err, e, "size %s", image);
	}
	close(fd);
	return run_mkfs(image, err);
}

/* A free loop device bound to image (detached again by the kernel when
 * the last mount of it goes: LO_FLAGS_AUTOCLEAR). Another process may take
 * the device between GET_FREE and CONFIGURE: then ask again. */
static int loop_attach(int image_fd, char *dev, size_t dev_size, struct sc_err *err)
{
	_cleanup_fd_ int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		return sc_fail(err, errno, "open /dev/loop-control");
	for (int attempt = 0; attempt < 16; attempt++) {
		int n = ioctl(ctl, LOOP_CTL_GET_FREE);
		if (n < 0)
			return sc_fail(err, errno, "find a free loop device");
		snprintf(dev, dev_size, "/dev/loop%d", n);
		int lfd = open(dev, O_RDWR | O_CLOEXEC);
		if (lfd < 0)
			return sc_fail(err, errno, "open %s", dev);
		struct loop_config cfg = {.fd = (uint32_t)image_fd};
		cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
		if (ioctl(lfd, LOOP_CONFIGURE, &cfg) == 0)
			return lfd;
		int e = errno;
		close(lfd);
		if (e != EBUSY)
			return sc_fail(err, e, "attach %s", dev);
	}
	return sc_fail(err, EBUSY, "no free loop device");
}

int rt_volume_disk_mount(const char *image, const char *dir, struct sc_err *err)
{
	_cleanup_fd_ int ifd = open(image, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (ifd < 0)
		return sc_fail(err, errno, "open %s", image);
	char dev[64];
	_cleanup_fd_ int lfd = loop_attach(ifd, dev, sizeof(dev), err);
	if (lfd < 0)
		return -1;
	if (mount(dev, dir, "ext4", MS_NOSUID | MS_NODEV, NULL) < 0)
		return sc_fail(err, errno, "mount %s (%s) on %s", image, dev, dir);
	return 0; /* closing lfd leaves the device to the mount (autoclear) */
}

bool rt_volume_is_mounted(const char *dir)
{
	struct statx sx;
	if (statx(AT_FDCWD, dir, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sx) < 0)
		return false;
	return (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
	       (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

int rt_volume_disk_unmount(const char *dir, struct sc_err *err)
{
	if (!rt_volume_is_mounted(dir))
		return 0;
	if (umount2(dir, UMOUNT_NOFOLLOW) < 0)
		return sc_fail(err, errno, "unmount %s", dir);
	return 0;
}
