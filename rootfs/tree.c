/* Removing layer trees. Layers of a rootless caller keep their image's
 * modes (read-only directories included), so removal makes our own
 * directories writable first; symlinks are never followed. */
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

#define TREE_MAX_DEPTH 512

static int remove_at(int dir, const char *name, int depth, struct sc_err *err)
{
	if (unlinkat(dir, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return sc_fail(err, errno, "remove %s", name);
	if (depth > TREE_MAX_DEPTH)
		return sc_fail(err, ELOOP, "remove %s: tree too deep", name);
	int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == EACCES && fchmodat(dir, name, 0700, AT_SYMLINK_NOFOLLOW) == 0)
		fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return sc_fail(err, errno, "open %s to remove it", name);
	struct stat st;
	if (fstat(fd, &st) == 0 && (st.st_mode & 0700) != 0700)
		(void)fchmod(fd, (st.st_mode & 07777) | 0700);
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return sc_fail(err, errno, "read %s", name);
	}
	struct dirent *e;
	int rc = 0;
	while (rc == 0 && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (e->d_type == DT_DIR || e->d_type == DT_UNKNOWN)
			rc = remove_at(dirfd(d), e->d_name, depth + 1, err);
		else if (unlinkat(dirfd(d), e->d_name, 0) < 0 && errno != ENOENT)
			rc = sc_fail(err, errno, "remove %s", e->d_name);
	}
	closedir(d);
	if (rc == 0 && unlinkat(dir, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		rc = sc_fail(err, errno, "remove directory %s", name);
	return rc;
}

int tree_remove_at(int dir, const char *name, struct sc_err *err)
{
	return remove_at(dir, name, 0, err);
}

int tree_remove(const char *path, struct sc_err *err)
{
	char parent[4096];
	if (sc_path(parent, sizeof(parent), "%s", path) < 0)
		return sc_fail(err, ENAMETOOLONG, "remove %.200s", path);
	char *slash = strrchr(parent, '/');
	if (!slash || !slash[1])
		return sc_fail(err, EINVAL, "remove %s: not a path to an entry", path);
	*slash = '\0';
	_cleanup_fd_ int dir = open(parent[0] ? parent : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return errno == ENOENT ? 0 : sc_fail(err, errno, "open %s", parent);
	return remove_at(dir, slash + 1, 0, err);
}
