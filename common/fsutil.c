/* Filesystem helpers shared by modules. */
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "sc.h"

static int remove_tree_at(int dir, const char *name, int depth)
{
	if (depth > 512)
		return -1;
	int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == EACCES) {
		/* e.g. overlayfs's work/work, created mode 000 */
		if (fchmodat(dir, name, 0700, 0) == 0)
			fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0)
		return unlinkat(dir, name, 0) == 0 || errno == ENOENT ? 0 : -1;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	struct dirent *e;
	int rc = 0;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (e->d_type == DT_DIR || e->d_type == DT_UNKNOWN) {
			if (remove_tree_at(dirfd(d), e->d_name, depth + 1) < 0)
				rc = -1;
		} else if (unlinkat(dirfd(d), e->d_name, 0) < 0 && errno != ENOENT) {
			rc = -1;
		}
	}
	closedir(d);
	if (unlinkat(dir, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		rc = -1;
	return rc;
}

int sc_remove_tree(const char *path)
{
	return remove_tree_at(AT_FDCWD, path, 0);
}

int sc_mkdir_p(const char *path, mode_t mode, struct sc_err *err)
{
	char buf[4096];
	if (sc_path(buf, sizeof(buf), "%s", path) < 0)
		return sc_fail(err, ENAMETOOLONG, "%.200s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return sc_fail(err, errno, "cannot create %s", buf);
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return sc_fail(err, errno, "cannot create %s", buf);
	return 0;
}
