/* Filesystem escapes: mount, umount, pivot_root, chroot+fchdir.
 * usage: escape_fs mount|umount|pivot_root|chroot HOST_ONLY_PATH */
#include "attack.h"

#include <linux/mount.h>
#include <sys/mount.h>

#define MARK "sc-attack-mount"

static void try_mount(const char *src, const char *dst, const char *type, unsigned long flags)
{
	attempt("mount(%s, %s, %s, 0x%lx)", src ? src : "NULL", dst, type ? type : "NULL", flags);
	expect_fail(mount(src, dst, type, flags, NULL));
}

static void case_mount(int argc, char **argv)
{
	(void)argc;
	mkdir("/tmp/m", 0755);
	try_mount(MARK, "/tmp/m", "tmpfs", 0);
	try_mount("proc", "/tmp/m", "proc", 0);
	try_mount("sysfs", "/tmp/m", "sysfs", 0);
	try_mount("/", "/tmp/m", NULL, MS_BIND | MS_REC);
	try_mount(NULL, "/proc/sys", NULL, MS_REMOUNT | MS_BIND);
	try_mount(NULL, "/attacks", NULL, MS_REMOUNT | MS_BIND);
	try_mount(NULL, "/", NULL, MS_SHARED | MS_REC);

	attempt("fsopen(tmpfs) (new mount API)");
	int fs = (int)syscall(SYS_fsopen, "tmpfs", 0);
	expect_fail(fs);
	if (fs >= 0) {
		syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "source", MARK, 0);
		syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0);
		int m = (int)syscall(SYS_fsmount, fs, 0, 0);
		if (m >= 0)
			syscall(SYS_move_mount, m, "", AT_FDCWD, "/tmp/m", MOVE_MOUNT_F_EMPTY_PATH);
	}
	attempt("open_tree(/, OPEN_TREE_CLONE) and move_mount");
	int t = (int)syscall(SYS_open_tree, AT_FDCWD, "/", OPEN_TREE_CLONE | AT_RECURSIVE);
	expect_fail(t);
	if (t >= 0)
		syscall(SYS_move_mount, t, "", AT_FDCWD, "/tmp/m", MOVE_MOUNT_F_EMPTY_PATH);

	attempt("mount_setattr(/attacks) clearing read-only");
	struct mount_attr attr = {.attr_clr = MOUNT_ATTR_RDONLY};
	expect_fail(syscall(SYS_mount_setattr, AT_FDCWD, "/attacks", 0, &attr, sizeof(attr)));

	attempt("write into the read-only bind /attacks");
	expect_fail(open("/attacks/sc-attack-written", O_WRONLY | O_CREAT, 0644));
	probe_host_path(argv[1]);
}

static void case_umount(int argc, char **argv)
{
	(void)argc;
	static const char *const targets[] = {"/proc/keys", "/proc/sys", "/attacks", "/dev/pts",
					      "/proc", "/"};
	for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
		attempt("umount2(%s, MNT_DETACH)", targets[i]);
		expect_fail(umount2(targets[i], MNT_DETACH));
	}
	probe_host_path(argv[1]);
}

static void case_pivot_root(int argc, char **argv)
{
	(void)argc;
	mkdir("/tmp/old", 0755);
	attempt("pivot_root(\".\", \".\") in /");
	if (chdir("/") < 0)
		setup_failed("chdir /");
	expect_fail(syscall(SYS_pivot_root, ".", "."));
	attempt("pivot_root(/tmp, /tmp/old)");
	expect_fail(syscall(SYS_pivot_root, "/tmp", "/tmp/old"));
	probe_host_path(argv[1]);
}

static void case_chroot(int argc, char **argv)
{
	(void)argc;
	mkdir("/tmp/jail", 0755);
	int root = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		setup_failed("open /");
	attempt("chroot(/tmp/jail)");
	expect_fail(chroot("/tmp/jail"));
	/* The classic escape: keep a directory fd outside the new root, walk
	 * up from it, and chroot to whatever is there. */
	attempt("fchdir(fd outside the jail), chdir(..) x64, chroot(.)");
	if (fchdir(root) < 0)
		setup_failed("fchdir");
	for (int i = 0; i < 64; i++)
		(void)!chdir("..");
	expect_fail(chroot("."));
	attempt("walk up from /proc/1/root/../../..");
	char p[4096];
	snprintf(p, sizeof(p), "/proc/1/root/../../../../..%s", argv[1] ? argv[1] : "/");
	struct stat st;
	if (stat(p, &st) == 0)
		escaped("%s is visible", p);
	else
		blocked_errno(errno);
	probe_host_path(argv[1]);
}

int main(int argc, char **argv)
{
	static const struct attack_case cases[] = {
		{"mount", case_mount},
		{"umount", case_umount},
		{"pivot_root", case_pivot_root},
		{"chroot", case_chroot},
		{NULL, NULL},
	};
	return attack_main(cases, argc, argv);
}
