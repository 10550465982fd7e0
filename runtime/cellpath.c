#include "cellpath.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/sc.h"

static int open_root(void)
{
	/* "/" is this process's root, which the cell cannot replace */
	return open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
}

int rt_cellpath_open(const char *path, int flags, mode_t mode)
{
	int root = open_root();
	if (root < 0)
		return -1;
	int fd = sc_openat_in_root(root, path, flags, mode);
	int e = errno;
	close(root);
	errno = e;
	return fd;
}

static int fail_closing(int fd, int e)
{
	if (fd >= 0)
		close(fd);
	errno = e;
	return -1;
}

/* The directory buf names, each missing component made (mkdirat in the
 * directory resolved so far, then the prefix resolved again in the root,
 * so a link made meanwhile is followed only as the cell would follow it). */
static int open_dirs(char *buf, mode_t make_mode)
{
	int dir = open_root();
	if (dir < 0)
		return -1;
	size_t len = strlen(buf);
	for (size_t i = 0; i < len;) {
		while (i < len && buf[i] == '/')
			i++;
		if (i == len)
			break;
		size_t start = i;
		while (i < len && buf[i] != '/')
			i++;
		char saved = buf[i];
		buf[i] = '\0';
		int fd = rt_cellpath_open(buf, O_PATH | O_DIRECTORY, 0);
		if (fd < 0 && errno == ENOENT && make_mode) {
			if (mkdirat(dir, buf + start, make_mode) < 0 && errno != EEXIST)
				return fail_closing(dir, errno);
			fd = rt_cellpath_open(buf, O_PATH | O_DIRECTORY, 0);
		}
		buf[i] = saved;
		if (fd < 0)
			return fail_closing(dir, errno);
		close(dir);
		dir = fd;
	}
	return dir;
}

int rt_cellpath_open_parent(const char *path, mode_t make_mode, char leaf[NAME_MAX + 1])
{
	char buf[CELLPATH_MAX];
	size_t len = strlen(path);
	if (len >= sizeof(buf))
		return fail_closing(-1, ENAMETOOLONG);
	memcpy(buf, path, len + 1);
	while (len > 0 && buf[len - 1] == '/')
		buf[--len] = '\0';
	char *slash = strrchr(buf, '/');
	char *name = slash ? slash + 1 : buf;
	size_t nlen = strlen(name);
	if (nlen == 0)
		return fail_closing(-1, EINVAL);
	if (nlen > NAME_MAX)
		return fail_closing(-1, ENAMETOOLONG);
	memcpy(leaf, name, nlen + 1);
	*name = '\0';
	return open_dirs(buf, make_mode);
}

int rt_cellpath_mkdir_p(const char *path, mode_t mode)
{
	char buf[CELLPATH_MAX];
	size_t len = strlen(path);
	if (len >= sizeof(buf))
		return fail_closing(-1, ENAMETOOLONG);
	memcpy(buf, path, len + 1);
	int fd = open_dirs(buf, mode);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

int rt_cellpath_chdir(const char *path)
{
	int fd = rt_cellpath_open(path, O_PATH | O_DIRECTORY, 0);
	if (fd < 0)
		return -1;
	int rc = fchdir(fd);
	return rc < 0 ? fail_closing(fd, errno) : (close(fd), 0);
}
