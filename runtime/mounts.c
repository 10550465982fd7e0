/* Root assembly, inside the cell's namespaces: a size-limited tmpfs holds
 * the new root and the overlays' writable layers; the image is mounted over
 * it read-only; then /proc, /dev, binds, and pivot_root. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "internal.h"
#include "safepath.h"
#include "snapshot.h"

/* Where the cell's tmpfs is mounted in the cell's private mount namespace.
 * Host paths under it are hidden afterwards, so everything the cell needs
 * from the host is opened before (image layers and binds as fds). */
#define BASE "/tmp"
#define ROOT BASE "/r"

/* Host directories of the built-in image, each an overlay lower layer. */
static const char *const HOST_DIRS[] = {"usr", "etc", "opt"};
/* Top-level names that merged-/usr hosts make symlinks (else overlays). */
static const char *const USR_LINKS[] = {"bin", "sbin", "lib", "lib32", "lib64", "libx32"};
/* Host secrets hidden from the host image. */
static const char *const MASKED_FILES[] = {"/etc/shadow", "/etc/gshadow", "/etc/shadow-",
					   "/etc/gshadow-", "/etc/sudoers"};
static const char *const MASKED_DIRS[] = {"/etc/sudoers.d"};

/* 1/cmdline: init is a copy of the host process that made the cell, and
 * its command line (paths, options) is the host's business. */
static const char *const PROC_MASK_FILES[] = {"kcore",	    "keys",	    "latency_stats",
					      "timer_list", "timer_stats", "sched_debug",
					      "interrupts", "1/cmdline"};
static const char *const PROC_MASK_DIRS[] = {"acpi", "asound", "scsi"};
static const char *const PROC_RO[] = {"bus", "fs", "irq", "sys", "sysrq-trigger"};
static const char *const DEV_NODES[] = {"null", "zero", "full", "random", "urandom", "tty"};

static int do_mount(const char *src, const char *dst, const char *type, unsigned long flags,
		    const char *data, struct sc_err *err)
{
	if (mount(src, dst, type, flags, data) < 0) {
		const char *what = type ? type : src ? src : "remount";
		const char *where = strncmp(dst, ROOT, strlen(ROOT)) ? dst : dst + strlen(ROOT);
		return sc_fail(err, errno, "cannot mount %s on %s", what, where);
	}
	return 0;
}

static int make_dir(const char *path, mode_t mode, struct sc_err *err)
{
	if (mkdir(path, mode) < 0 && errno != EEXIST)
		return sc_fail(err, errno, "mkdir %s", path);
	if (mode & 07000 && chmod(path, mode) < 0)
		return sc_fail(err, errno, "chmod %s", path);
	return 0;
}

static int make_file(const char *path, struct sc_err *err)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return sc_fail(err, errno, "create %s", path);
	close(fd);
	return 0;
}

static int mount_base(const struct cell_spec *spec, struct sc_err *err)
{
	char opts[64];
	snprintf(opts, sizeof(opts), "size=%llu,mode=0755", (unsigned long long)spec->limits.disk);
	if (mount("tmpfs", BASE, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		return sc_fail(err, errno, "cannot mount the cell's tmpfs");
	if (make_dir(ROOT, 0755, err) || make_dir(BASE "/u", 0755, err) ||
	    make_dir(BASE "/w", 0755, err))
		return -1;
	return 0;
}

/* The writable layer lives on the cell's tmpfs, or for a persistent cell in
 * the directory the parent opened for us (fd, so /tmp may hide its path). */
static int mount_overlay(const struct cell_plan *plan, const char *lower, const char *name,
			 const char *target, struct sc_err *err)
{
	char upper[128], work[128], opts[8192];
	int rc;
	if (plan->upper_fd >= 0)
		rc = sc_path(upper, sizeof(upper), "/proc/self/fd/%d/upper/%s", plan->upper_fd, name) |
		     sc_path(work, sizeof(work), "/proc/self/fd/%d/work/%s", plan->upper_fd, name);
	else
		rc = sc_path(upper, sizeof(upper), BASE "/u/%s", name) |
		     sc_path(work, sizeof(work), BASE "/w/%s", name);
	if (rc < 0)
		return sc_fail(err, errno, "overlay path for %s", name);
	if (make_dir(upper, 0755, err) || make_dir(work, 0755, err) || make_dir(target, 0755, err))
		return -1;
	if (sc_path(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s,userxattr", lower, upper, work) < 0)
		return sc_fail(err, errno, "overlay options for %s", name);
	if (mount("overlay", target, "overlay", MS_NOSUID | MS_NODEV, opts) < 0) {
		sc_fail(err, errno, "cannot mount overlay on /%s", name);
		sc_err_hint(err, "kernel < 5.11? run 'sandcell doctor'");
		return -1;
	}
	return 0;
}

static int mask_path(const char *path, bool dir, struct sc_err *err)
{
	struct stat st;
	if (lstat(path, &st) < 0 || S_ISLNK(st.st_mode))
		return 0;
	if (dir != !!S_ISDIR(st.st_mode))
		return 0;
	const char *src = dir ? BASE "/empty" : "/dev/null";
	if (mount(src, path, NULL, MS_BIND, NULL) < 0)
		return sc_fail(err, errno, "cannot mask %s", path);
	if (mount(NULL, path, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  NULL) < 0)
		return sc_fail(err, errno, "cannot make %s read-only", path);
	return 0;
}

static int mask_host_secrets(struct sc_err *err)
{
	char path[512];
	for (size_t i = 0; i < SC_ARRAY_LEN(MASKED_FILES); i++)
		if (sc_path(path, sizeof(path), ROOT "%s", MASKED_FILES[i]) == 0 &&
		    mask_path(path, false, err) < 0)
			return -1;
	for (size_t i = 0; i < SC_ARRAY_LEN(MASKED_DIRS); i++)
		if (sc_path(path, sizeof(path), ROOT "%s", MASKED_DIRS[i]) == 0 &&
		    mask_path(path, true, err) < 0)
			return -1;
	DIR *d = opendir(ROOT "/etc/ssh");
	if (!d)
		return 0;
	struct dirent *e;
	int rc = 0;
	while (rc == 0 && (e = readdir(d))) {
		size_t n = strlen(e->d_name);
		bool key = (n > 4 && !strcmp(e->d_name + n - 4, "_key")) ||
			   strstr(e->d_name, "_key.") != NULL;
		if (key && sc_path(path, sizeof(path), ROOT "/etc/ssh/%s", e->d_name) == 0)
			rc = mask_path(path, false, err);
	}
	closedir(d);
	return rc;
}

/* The snapshot layers' directories `sub` (e.g. "upper/usr"), top first,
 * each followed by ':', into buf at *used; a layer without it is left
 * out. They go above the image's layers: a whiteout or opaque marker in
 * one keeps hiding what it hid below. */
static int add_snapshot_lowers(const struct cell_plan *plan, const char *sub, char *buf,
			       size_t size, size_t *used, struct sc_err *err)
{
	for (size_t i = 0; i < plan->nsnaps; i++) {
		struct stat st;
		if (fstatat(plan->snap_fds[i], sub, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			continue;
		int n = snprintf(buf + *used, size - *used, "/proc/self/fd/%d/%s:", plan->snap_fds[i], sub);
		if (n < 0 || (size_t)n >= size - *used)
			return sc_fail(err, 0, "too many snapshot layers");
		*used += (size_t)n;
	}
	return 0;
}

/* lower (a host dir or image layers) under the snapshot layers' `sub`. */
static int snapshot_lower(const struct cell_plan *plan, const char *sub, const char *lower,
			  char *buf, size_t size, struct sc_err *err)
{
	size_t used = 0;
	buf[0] = '\0';
	if (add_snapshot_lowers(plan, sub, buf, size, &used, err) < 0)
		return -1;
	if (sc_path(buf + used, size - used, "%s", lower) < 0)
		return sc_fail(err, 0, "too many layers");
	return 0;
}

/* Whether path is a symlink to target already. */
static bool same_link(const char *path, const char *target)
{
	char have[256];
	ssize_t n = readlink(path, have, sizeof(have) - 1);
	if (n < 0)
		return false;
	have[n] = '\0';
	return !strcmp(have, target);
}

static int mount_host_image(const struct cell_plan *plan, struct sc_err *err)
{
	char target[256], lower[64], link[64], lowers[4096], sub[64];
	for (size_t i = 0; i < SC_ARRAY_LEN(HOST_DIRS); i++) {
		snprintf(lower, sizeof(lower), "/%s", HOST_DIRS[i]);
		snprintf(target, sizeof(target), ROOT "/%s", HOST_DIRS[i]);
		if (access(lower, F_OK) < 0) {
			if (make_dir(target, 0755, err))
				return -1;
			continue;
		}
		snprintf(sub, sizeof(sub), "upper/%s", HOST_DIRS[i]);
		if (snapshot_lower(plan, sub, lower, lowers, sizeof(lowers), err) < 0 ||
		    mount_overlay(plan, lowers, HOST_DIRS[i], target, err) < 0)
			return -1;
	}
	for (size_t i = 0; i < SC_ARRAY_LEN(USR_LINKS); i++) {
		snprintf(lower, sizeof(lower), "/%s", USR_LINKS[i]);
		snprintf(target, sizeof(target), ROOT "/%s", USR_LINKS[i]);
		struct stat st;
		if (lstat(lower, &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			ssize_t n = readlink(lower, link, sizeof(link) - 1);
			if (n <= 0)
				continue;
			link[n] = '\0';
			/* a fork's root has it from its parent already, a
			 * persistent root from its last start */
			if (symlink(link, target) < 0 && (errno != EEXIST || !same_link(target, link)))
				return sc_fail(err, errno, "symlink /%s", USR_LINKS[i]);
		} else if (S_ISDIR(st.st_mode)) {
			snprintf(sub, sizeof(sub), "upper/%s", USR_LINKS[i]);
			if (snapshot_lower(plan, sub, lower, lowers, sizeof(lowers), err) < 0 ||
			    mount_overlay(plan, lowers, USR_LINKS[i], target, err) < 0)
				return -1;
		}
	}
	return mask_host_secrets(err);
}

/* The host image's root directory: on the cell's tmpfs, or for a
 * persistent cell on disk. pivot_root needs it to be a mount point. */
static int mount_host_root(const struct cell_plan *plan, struct sc_err *err)
{
	if (plan->nsnaps > 0) {
		/* a fork: the snapshot's root (its files, then what an
		 * earlier fork kept in upper/root) under a writable layer */
		char lowers[4096];
		size_t used = 0;
		lowers[0] = '\0';
		for (size_t i = 0; i < plan->nsnaps; i++) {
			struct cell_plan one = *plan;
			one.nsnaps = 1;
			one.snap_fds[0] = plan->snap_fds[i];
			if (add_snapshot_lowers(&one, "upper/root", lowers, sizeof(lowers), &used, err) < 0 ||
			    add_snapshot_lowers(&one, "root", lowers, sizeof(lowers), &used, err) < 0)
				return -1;
		}
		if (used == 0)
			return sc_fail(err, ENOENT, "the snapshot layer has no root");
		lowers[used - 1] = '\0'; /* the last ':' */
		return mount_overlay(plan, lowers, "root", ROOT, err);
	}
	if (plan->upper_fd < 0)
		return do_mount(ROOT, ROOT, NULL, MS_BIND, NULL, err);
	char src[64];
	snprintf(src, sizeof(src), "/proc/self/fd/%d/root", plan->upper_fd);
	if (make_dir(src, 0755, err) < 0)
		return -1;
	return do_mount(src, ROOT, NULL, MS_BIND, NULL, err);
}

/* An idmapped layer clone from the parent is a detached mount, which
 * overlayfs does not take as a lower dir: attach it on the cell's tmpfs
 * first (in the cell's mount namespace only). */
static int attach_layer(const struct cell_plan *plan, size_t i, char *path, size_t size,
			struct sc_err *err)
{
	snprintf(path, size, BASE "/l%zu", i);
	if (make_dir(path, 0555, err) < 0)
		return -1;
	if (move_mount(plan->lower_fds[i], "", AT_FDCWD, path, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return sc_fail(err, errno, "attach image layer %zu", i);
	return 0;
}

/* A long-lived cell keeps its writable layer reachable after pivot_root,
 * for commit: through a detached bind mount of the layer alone, whose
 * root ".." cannot climb above. An fd of the directory itself would be an
 * fd into the host's filesystem (a persistent cell's layer is on disk)
 * that /proc/self/fd/N/.. leads out of. */
static int keep_layer(struct cell_plan *plan, struct sc_err *err)
{
	char upper[128];
	if (plan->upper_fd >= 0)
		snprintf(upper, sizeof(upper), "/proc/self/fd/%d/upper/root", plan->upper_fd);
	else
		snprintf(upper, sizeof(upper), BASE "/u/root");
	if (make_dir(BASE "/layer", 0700, err) < 0 ||
	    do_mount(upper, BASE "/layer", NULL, MS_BIND, NULL, err) < 0)
		return -1;
	plan->layer_fd = open(BASE "/layer", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (plan->layer_fd < 0)
		return sc_fail(err, errno, "open the writable layer");
	if (umount2(BASE "/layer", MNT_DETACH) < 0)
		return sc_fail(err, errno, "detach the writable layer's mount");
	return 0;
}

static int mount_layers(struct cell_plan *plan, struct sc_err *err)
{
	char lower[8192], path[64];
	size_t used = 0;
	lower[0] = '\0';
	if (add_snapshot_lowers(plan, "upper/root", lower, sizeof(lower), &used, err) < 0)
		return -1;
	for (size_t i = 0; i < plan->nlowers; i++) {
		if (plan->idmap_layers && attach_layer(plan, i, path, sizeof(path), err) < 0)
			return -1;
		if (!plan->idmap_layers)
			snprintf(path, sizeof(path), "/proc/self/fd/%d", plan->lower_fds[i]);
		int n = snprintf(lower + used, sizeof(lower) - used, "%s%s", i ? ":" : "", path);
		if (n < 0 || (size_t)n >= sizeof(lower) - used)
			return sc_fail(err, 0, "too many image layers");
		used += (size_t)n;
	}
	if (mount_overlay(plan, lower, "root", ROOT, err) < 0)
		return -1;
	return plan->serve ? keep_layer(plan, err) : 0;
}

static int make_skeleton(struct sc_err *err)
{
	static const struct {
		const char *path;
		mode_t mode;
	} dirs[] = {
		{ROOT "/root", 0700}, {ROOT "/home", 0755},  {ROOT "/tmp", 01777},
		{ROOT "/testbed", 0755}, {ROOT "/proc", 0555}, {ROOT "/dev", 0755},
		{ROOT "/var", 0755},  {ROOT "/var/tmp", 01777}, {ROOT "/run", 0755},
		{ROOT "/mnt", 0755}, /* SandboxFusion's programs write there */
	};
	for (size_t i = 0; i < SC_ARRAY_LEN(dirs); i++)
		if (make_dir(dirs[i].path, dirs[i].mode, err) < 0)
			return -1;
	return 0;
}

static int mount_proc(struct sc_err *err)
{
	char path[128];
	if (do_mount("proc", ROOT "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL, err) < 0)
		return -1;
	for (size_t i = 0; i < SC_ARRAY_LEN(PROC_MASK_FILES); i++) {
		snprintf(path, sizeof(path), ROOT "/proc/%s", PROC_MASK_FILES[i]);
		if (mask_path(path, false, err) < 0)
			return -1;
	}
	for (size_t i = 0; i < SC_ARRAY_LEN(PROC_MASK_DIRS); i++) {
		snprintf(path, sizeof(path), ROOT "/proc/%s", PROC_MASK_DIRS[i]);
		if (mask_path(path, true, err) < 0)
			return -1;
	}
	for (size_t i = 0; i < SC_ARRAY_LEN(PROC_RO); i++) {
		snprintf(path, sizeof(path), ROOT "/proc/%s", PROC_RO[i]);
		if (access(path, F_OK) < 0)
			continue;
		if (do_mount(path, path, NULL, MS_BIND | MS_REC, NULL, err) < 0 ||
		    do_mount(NULL, path, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
			     NULL, err) < 0)
			return -1;
	}
	return 0;
}

static int mount_dev(struct sc_err *err)
{
	char src[64], dst[128];
	for (size_t i = 0; i < SC_ARRAY_LEN(DEV_NODES); i++) {
		snprintf(src, sizeof(src), "/dev/%s", DEV_NODES[i]);
		snprintf(dst, sizeof(dst), ROOT "/dev/%s", DEV_NODES[i]);
		if (make_file(dst, err) < 0 ||
		    do_mount(src, dst, NULL, MS_BIND, NULL, err) < 0)
			return -1;
	}
	if (make_dir(ROOT "/dev/pts", 0755, err) || make_dir(ROOT "/dev/shm", 01777, err))
		return -1;
	if (do_mount("devpts", ROOT "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
		     "newinstance,ptmxmode=0666,mode=0620", err) < 0)
		return -1;
	static const char *const links[][2] = {
		{"pts/ptmx", ROOT "/dev/ptmx"},      {"/proc/self/fd", ROOT "/dev/fd"},
		{"/proc/self/fd/0", ROOT "/dev/stdin"}, {"/proc/self/fd/1", ROOT "/dev/stdout"},
		{"/proc/self/fd/2", ROOT "/dev/stderr"},
	};
	for (size_t i = 0; i < SC_ARRAY_LEN(links); i++)
		if (symlink(links[i][0], links[i][1]) < 0 && errno != EEXIST)
			return sc_fail(err, errno, "symlink %s", links[i][1]);
	return 0;
}

static int mount_binds(const struct cell_plan *plan, struct sc_err *err)
{
	const struct cell_spec *spec = plan->spec;
	if (spec->nbinds == 0)
		return 0;
	_cleanup_fd_ int root = open(ROOT, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return sc_fail(err, errno, "open the cell root");
	for (size_t i = 0; i < spec->nbinds; i++) {
		const struct cell_bind *b = &spec->binds[i];
		bool is_dir = true;
		if (b->host) {
			struct stat st;
			if (fstat(plan->bind_fds[i], &st) < 0)
				return sc_fail(err, errno, "stat bind source %s", b->host);
			is_dir = S_ISDIR(st.st_mode);
		}
		_cleanup_fd_ int target = rt_safepath_open(root, b->cell, is_dir, true, err);
		if (target < 0)
			return -1;
		if (!b->host) {
			char opts[64], path[64];
			snprintf(opts, sizeof(opts), "size=%llu,mode=0755",
				 (unsigned long long)(b->size ? b->size : 64ULL << 20));
			snprintf(path, sizeof(path), "/proc/self/fd/%d", target);
			if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
				return sc_fail(err, errno, "cannot mount a tmpfs on %s", b->cell);
			continue;
		}
		if (move_mount(plan->bind_fds[i], "", target, "",
			       MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
			return sc_fail(err, errno, "cannot bind %s on %s", b->host, b->cell);
	}
	return 0;
}

static int pivot_into_root(struct sc_err *err)
{
	if (chdir(ROOT) < 0)
		return sc_fail(err, errno, "chdir to the cell root");
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		return sc_fail(err, errno, "pivot_root");
	if (umount2(".", MNT_DETACH) < 0)
		return sc_fail(err, errno, "detach the old root");
	if (chdir("/") < 0)
		return sc_fail(err, errno, "chdir /");
	return 0;
}

/* Open image layers and the on-disk writable layer before the cell's tmpfs
 * may hide their paths; overlayfs is then given /proc/self/fd/N. */
static int open_layers(struct cell_plan *plan, struct sc_err *err)
{
	const struct cell_spec *spec = plan->spec;
	for (size_t i = 0; !plan->idmap_layers && i < spec->nlayers; i++) {
		int fd = open(spec->layers[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return sc_fail(err, errno, "image layer %s", spec->layers[i]);
		plan->lower_fds[plan->nlowers++] = fd;
	}
	if (spec->upper_dir) {
		plan->upper_fd = open(spec->upper_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (plan->upper_fd < 0)
			return sc_fail(err, errno, "writable layer %s", spec->upper_dir);
	}
	for (size_t i = 0; i < plan->nsnaps; i++) {
		char path[SC_PATH_BUF];
		if (rt_snapshot_tree_path(plan->snap_ids[i], path, sizeof(path)) < 0)
			return sc_fail(err, ENAMETOOLONG, "snapshot layer");
		plan->snap_fds[i] = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (plan->snap_fds[i] < 0)
			return sc_fail(err, errno, "snapshot layer %s", path);
	}
	return 0;
}

/* A long-lived cell's init keeps all of its writable state reachable for
 * fork and checkpoint: a detached clone of the tmpfs (or of the
 * persistent directory), whose root ".." cannot climb above. */
static int keep_state(struct cell_plan *plan, struct sc_err *err)
{
	char src[64];
	if (plan->upper_fd >= 0)
		snprintf(src, sizeof(src), "/proc/self/fd/%d", plan->upper_fd);
	else
		snprintf(src, sizeof(src), BASE);
	plan->state_fd = (int)open_tree(AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (plan->state_fd < 0)
		return sc_fail(err, errno, "keep the writable state");
	return 0;
}

int rt_mount_root(struct cell_plan *plan, struct sc_err *err)
{
	const struct cell_spec *spec = plan->spec;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return sc_fail(err, errno, "make / private");
	if (open_layers(plan, err) < 0)
		return -1;
	if (mount_base(spec, err) < 0 || make_dir(BASE "/empty", 0555, err) < 0)
		return -1;
	int rc = plan->host_image ? mount_host_root(plan, err) : mount_layers(plan, err);
	if (rc == 0 && plan->host_image)
		rc = mount_host_image(plan, err);
	if (rc < 0 || make_skeleton(err) < 0 || mount_proc(err) < 0 || mount_dev(err) < 0 ||
	    mount_binds(plan, err) < 0 || (plan->serve && keep_state(plan, err) < 0))
		return -1;
	return pivot_into_root(err);
}
