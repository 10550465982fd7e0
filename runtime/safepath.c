#include "safepath.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

int rt_safepath_open(int root_fd, const char *path, bool want_dir, bool create,
		  struct sc_err *err)
{
	if (path[0] != '/' || strlen(path) >= 4096)
		return sc_fail(err, 0, "cell path '%.200s' must be absolute", path);
	char buf[4096];
	strcpy(buf, path);
	int dir = dup(root_fd);
	if (dir < 0)
		return sc_fail(err, errno, "dup");
	char *save = NULL;
	char *next = strtok_r(buf + 1, "/", &save);
	if (!next) {
		/* the root itself */
		return dir;
	}
	while (next) {
		char *after = strtok_r(NULL, "/", &save);
		bool last = after == NULL;
		if (!strcmp(next, "..") || !strcmp(next, ".")) {
			close(dir);
			return sc_fail(err, 0, "cell path '%.200s' must not contain . or ..", path);
		}
		bool dir_here = !last || want_dir;
		if (create && dir_here && mkdirat(dir, next, 0755) < 0 && errno != EEXIST) {
			int e = errno;
			close(dir);
			return sc_fail(err, e, "create %s in the cell", path);
		}
		if (create && !dir_here) {
			int f = sc_openat_beneath(dir, next, O_CREAT | O_WRONLY | O_NOFOLLOW, 0644, 0);
			if (f < 0 && errno != EISDIR && errno != ELOOP) {
				int e = errno;
				close(dir);
				return sc_fail(err, e, "create %s in the cell", path);
			}
			if (f >= 0)
				close(f);
		}
		int fd = sc_openat_beneath(dir, next, O_PATH | (dir_here ? O_DIRECTORY : 0), 0, 0);
		int e = errno;
		close(dir);
		if (fd < 0) {
			if (e == ELOOP || e == EXDEV)
				return sc_fail(err, 0, "cell path %s is or passes through a symlink; refusing it", path);
			return sc_fail(err, e, "open %s in the cell", path);
		}
		dir = fd;
		next = after;
	}
	struct stat st;
	if (fstat(dir, &st) == 0 && !want_dir && S_ISDIR(st.st_mode)) {
		close(dir);
		return sc_fail(err, 0, "cell path %s is a directory but the host side is a file", path);
	}
	return dir;
}
