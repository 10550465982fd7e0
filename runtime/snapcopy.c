/* A cell's writable state copied into a snapshot tree, on the host side,
 * with the cell held still. Everything is kept that overlayfs and the
 * cell's programs can tell apart: type, mode (setuid too), owner, size,
 * contents, link targets, timestamps, extended attributes (overlayfs's
 * opaque marker among them), hard links within the tree, FIFOs and the
 * 0/0 character devices that are whiteouts. Nothing in the source is
 * followed: every name is opened with O_NOFOLLOW beneath its parent's fd,
 * so a symlink the cell made is copied as a symlink, never read through. */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include "snapshot.h"

#define COPY_MAX_DEPTH 256
#define COPY_MAX_ENTRIES (1u << 20)
#define XATTR_LIST_MAX_LEN 65536
#define XATTR_VALUE_MAX_LEN 65536

struct link_seen {
	dev_t dev;
	ino_t ino;
	char *path; /* relative to the destination root */
};

struct copy_job {
	int dst_root;       /* destination root (for linkat of hard links) */
	uint64_t bytes_left;
	size_t entries;
	struct link_seen *links;
	size_t nlinks, cap;
};

/* overlayfs's bookkeeping that names inodes of the source filesystem:
 * meaningless (and misleading) in another one. */
static bool skip_xattr(const char *name)
{
	return !strcmp(name, "user.overlay.origin") || !strcmp(name, "user.overlay.impure") ||
	       !strcmp(name, "user.overlay.nlink") || !strcmp(name, "user.overlay.uuid") ||
	       !strcmp(name, "security.selinux");
}

static int copy_xattrs(int src, int dst, const char *rel, struct sc_err *err)
{
	_cleanup_free_ char *list = malloc(XATTR_LIST_MAX_LEN);
	_cleanup_free_ char *val = malloc(XATTR_VALUE_MAX_LEN);
	if (!list || !val)
		return sc_fail(err, ENOMEM, "xattrs of %s", rel);
	ssize_t n = flistxattr(src, list, XATTR_LIST_MAX_LEN);
	if (n < 0)
		return errno == ENOTSUP ? 0 : sc_fail(err, errno, "list xattrs of %s", rel);
	for (ssize_t off = 0; off < n; off += (ssize_t)strlen(list + off) + 1) {
		const char *name = list + off;
		if (skip_xattr(name))
			continue;
		ssize_t len = fgetxattr(src, name, val, XATTR_VALUE_MAX_LEN);
		if (len < 0)
			return sc_fail(err, errno, "read xattr %s of %s", name, rel);
		if (fsetxattr(dst, name, val, (size_t)len, 0) < 0)
			return sc_fail(err, errno, "set xattr %s on %s", name, rel);
	}
	return 0;
}

/* Owner, then mode (a chown clears setuid), then times. */
static int copy_meta_fd(int fd, const struct stat *st, const char *rel, struct sc_err *err)
{
	if (fchown(fd, st->st_uid, st->st_gid) < 0)
		return sc_fail(err, errno, "chown %s", rel);
	if (fchmod(fd, st->st_mode & 07777) < 0)
		return sc_fail(err, errno, "chmod %s", rel);
	struct timespec t[2] = {st->st_atim, st->st_mtim};
	if (futimens(fd, t) < 0)
		return sc_fail(err, errno, "set times of %s", rel);
	return 0;
}

/* For what cannot be opened (symlinks, FIFOs, devices): by name. */
static int copy_meta_at(int dir, const char *name, const struct stat *st, const char *rel,
			struct sc_err *err)
{
	if (fchownat(dir, name, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW) < 0)
		return sc_fail(err, errno, "chown %s", rel);
	if (!S_ISLNK(st->st_mode) && fchmodat(dir, name, st->st_mode & 07777, 0) < 0)
		return sc_fail(err, errno, "chmod %s", rel);
	struct timespec t[2] = {st->st_atim, st->st_mtim};
	if (utimensat(dir, name, t, AT_SYMLINK_NOFOLLOW) < 0)
		return sc_fail(err, errno, "set times of %s", rel);
	return 0;
}

/* A second name of an inode already copied: a hard link to that copy. */
static int link_if_seen(struct copy_job *j, int dst_dir, const char *name, const struct stat *st,
			const char *rel, bool *done, struct sc_err *err)
{
	*done = false;
	if (st->st_nlink < 2)
		return 0;
	for (size_t i = 0; i < j->nlinks; i++) {
		if (j->links[i].dev != st->st_dev || j->links[i].ino != st->st_ino)
			continue;
		if (linkat(j->dst_root, j->links[i].path, dst_dir, name, 0) < 0)
			return sc_fail(err, errno, "hard link %s", rel);
		*done = true;
		return 0;
	}
	if (j->nlinks == j->cap) {
		size_t cap = j->cap ? j->cap * 2 : 64;
		struct link_seen *grown = realloc(j->links, cap * sizeof(*grown));
		if (!grown)
			return sc_fail(err, ENOMEM, "hard links");
		j->links = grown;
		j->cap = cap;
	}
	char *copy = strdup(rel);
	if (!copy)
		return sc_fail(err, ENOMEM, "hard links");
	j->links[j->nlinks++] = (struct link_seen){st->st_dev, st->st_ino, copy};
	return 0;
}

static int copy_data(int in, int out, uint64_t size, struct copy_job *j, const char *rel,
		     struct sc_err *err)
{
	if (size > j->bytes_left)
		return sc_fail(err, EFBIG, "%s: the cell's files are larger than the limit", rel);
	j->bytes_left -= size;
	uint64_t left = size;
	while (left > 0) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, left, 0);
		if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP))
			break;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sc_fail(err, errno, "copy %s", rel);
		if (n == 0)
			return 0; /* shrank: the cell is held still, so it cannot */
		left -= (uint64_t)n;
	}
	char buf[65536];
	while (left > 0) {
		ssize_t n = read(in, buf, left < sizeof(buf) ? left : sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sc_fail(err, errno, "read %s", rel);
		if (n == 0)
			break;
		if (sc_write_all(out, buf, (size_t)n) < 0)
			return sc_fail(err, errno, "write %s", rel);
		left -= (uint64_t)n;
	}
	return 0;
}

static int copy_regular(struct copy_job *j, int src_dir, int dst_dir, const char *name,
			const struct stat *st, const char *rel, struct sc_err *err)
{
	_cleanup_fd_ int in = openat(src_dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (in < 0)
		return sc_fail(err, errno, "open %s", rel);
	_cleanup_fd_ int out = openat(dst_dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				      0600);
	if (out < 0)
		return sc_fail(err, errno, "create %s", rel);
	if (copy_data(in, out, (uint64_t)st->st_size, j, rel, err) < 0 ||
	    copy_xattrs(in, out, rel, err) < 0)
		return -1;
	return copy_meta_fd(out, st, rel, err);
}

static int copy_dir(struct copy_job *j, int src, int dst, const char *rel, unsigned depth,
		    struct sc_err *err);

static int copy_entry(struct copy_job *j, int src_dir, int dst_dir, const char *name,
		      const char *rel, unsigned depth, struct sc_err *err)
{
	struct stat st;
	if (fstatat(src_dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return sc_fail(err, errno, "stat %s", rel);
	if (++j->entries > COPY_MAX_ENTRIES)
		return sc_fail(err, EFBIG, "the cell holds more than %u files", COPY_MAX_ENTRIES);
	bool linked;
	if (!S_ISDIR(st.st_mode) && link_if_seen(j, dst_dir, name, &st, rel, &linked, err) < 0)
		return -1;
	if (!S_ISDIR(st.st_mode) && linked)
		return 0;
	if (S_ISREG(st.st_mode))
		return copy_regular(j, src_dir, dst_dir, name, &st, rel, err);
	if (S_ISDIR(st.st_mode)) {
		if (depth >= COPY_MAX_DEPTH)
			return sc_fail(err, ELOOP, "%s: directories nested too deep", rel);
		if (mkdirat(dst_dir, name, 0700) < 0)
			return sc_fail(err, errno, "mkdir %s", rel);
		_cleanup_fd_ int s = openat(src_dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		_cleanup_fd_ int d = openat(dst_dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (s < 0 || d < 0)
			return sc_fail(err, errno, "open %s", rel);
		if (copy_dir(j, s, d, rel, depth + 1, err) < 0 || copy_xattrs(s, d, rel, err) < 0)
			return -1;
		return copy_meta_fd(d, &st, rel, err);
	}
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(src_dir, name, target, sizeof(target) - 1);
		if (n < 0)
			return sc_fail(err, errno, "readlink %s", rel);
		target[n] = '\0';
		if (symlinkat(target, dst_dir, name) < 0)
			return sc_fail(err, errno, "symlink %s", rel);
	} else if (S_ISFIFO(st.st_mode) ||
		   (S_ISCHR(st.st_mode) && major(st.st_rdev) == 0 && minor(st.st_rdev) == 0)) {
		/* a FIFO, or a whiteout (which anyone may make) */
		if (mknodat(dst_dir, name, st.st_mode & S_IFMT, st.st_rdev) < 0)
			return sc_fail(err, errno, "mknod %s", rel);
	} else {
		return 0; /* sockets and devices: nothing a cell can make or keep */
	}
	return copy_meta_at(dst_dir, name, &st, rel, err);
}

static int copy_dir(struct copy_job *j, int src, int dst, const char *rel, unsigned depth,
		    struct sc_err *err)
{
	char **names;
	size_t n;
	bool more = false;
	if (sc_dir_names_sorted(src, COPY_MAX_ENTRIES, &names, &n, &more) < 0)
		return sc_fail(err, errno, "read directory %s", rel);
	int rc = more ? sc_fail(err, EFBIG, "%s: too many entries", rel) : 0;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		char sub[PATH_MAX];
		if (sc_path(sub, sizeof(sub), "%s%s%s", rel, rel[0] ? "/" : "", names[i]) < 0)
			rc = sc_fail(err, ENAMETOOLONG, "path under %s", rel);
		else
			rc = copy_entry(j, src, dst, names[i], sub, depth, err);
	}
	sc_dir_names_free(names, n);
	return rc;
}

/* src_name under src_dir (a directory, or missing: an empty one) becomes
 * dst_name under dst_dir with the same contents. */
static int copy_top(struct copy_job *j, int src_dir, const char *src_name, int dst_dir,
		    const char *dst_name, const char *rel, struct sc_err *err)
{
	if (mkdirat(dst_dir, dst_name, 0755) < 0)
		return sc_fail(err, errno, "mkdir %s", rel);
	_cleanup_fd_ int d = openat(dst_dir, dst_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d < 0)
		return sc_fail(err, errno, "open %s", rel);
	_cleanup_fd_ int s = openat(src_dir, src_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s < 0)
		return errno == ENOENT ? 0 : sc_fail(err, errno, "open the cell's %s", src_name);
	struct stat st;
	if (fstat(s, &st) < 0)
		return sc_fail(err, errno, "stat the cell's %s", src_name);
	int saved = j->dst_root;
	j->dst_root = d;
	int rc = copy_dir(j, s, d, "", 0, err);
	j->dst_root = saved;
	for (size_t i = 0; i < j->nlinks; i++)
		free(j->links[i].path);
	j->nlinks = 0; /* links never cross overlays: the next starts afresh */
	if (rc < 0 || copy_xattrs(s, d, rel, err) < 0)
		return -1;
	return copy_meta_fd(d, &st, rel, err);
}

/* The overlays' upper dirs, one per overlay, each a hard-link world of
 * its own (links never cross overlays). */
static int copy_uppers(struct copy_job *j, int state_fd, const char *src_name, int tree,
		       struct sc_err *err)
{
	if (mkdirat(tree, "upper", 0755) < 0)
		return sc_fail(err, errno, "mkdir upper");
	_cleanup_fd_ int up = openat(tree, "upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_fd_ int su = openat(state_fd, src_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (up < 0 || su < 0)
		return sc_fail(err, errno, "open the writable layers");
	char **names;
	size_t n;
	if (sc_dir_names_sorted(su, 256, &names, &n, NULL) < 0)
		return sc_fail(err, errno, "read the writable layers");
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		struct stat st;
		if (fstatat(su, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			continue;
		rc = copy_top(j, su, names[i], up, names[i], names[i], err);
	}
	sc_dir_names_free(names, n);
	return rc;
}

int rt_snapshot_fill(const char *id, int state_fd, bool persist, uint64_t max_bytes,
		     struct sc_err *err)
{
	char path[SC_PATH_BUF];
	if (rt_snapshot_tree_path(id, path, sizeof(path)) < 0)
		return sc_fail(err, ENAMETOOLONG, "snapshot path");
	_cleanup_fd_ int tree = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tree < 0)
		return sc_fail(err, errno, "open %s", path);
	struct copy_job j = {.bytes_left = max_bytes};
	/* a persistent cell keeps root/ and upper/; the tmpfs r/ and u/ */
	int rc = copy_top(&j, state_fd, persist ? "root" : "r", tree, "root", "root", err);
	if (rc == 0)
		rc = copy_uppers(&j, state_fd, persist ? "upper" : "u", tree, err);
	for (size_t i = 0; i < j.nlinks; i++)
		free(j.links[i].path);
	free(j.links);
	return rc;
}
