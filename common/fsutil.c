/* Filesystem helpers shared by modules. */
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "sc.h"

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
		return errno == ENOENT ? 0 : sc_fail(err, errno, "open %s to remove it", name);
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
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		/* after a failure, go on removing but keep the first message */
		struct sc_err *first = rc == 0 ? err : NULL;
		if (e->d_type == DT_DIR || e->d_type == DT_UNKNOWN) {
			if (remove_at(dirfd(d), e->d_name, depth + 1, first) < 0)
				rc = -1;
		} else if (unlinkat(dirfd(d), e->d_name, 0) < 0 && errno != ENOENT) {
			rc = sc_fail(first, errno, "remove %s", e->d_name);
		}
	}
	closedir(d);
	if (unlinkat(dir, name, AT_REMOVEDIR) < 0 && errno != ENOENT && rc == 0)
		rc = sc_fail(err, errno, "remove directory %s", name);
	return rc;
}

int sc_remove_tree_at(int dir, const char *name, struct sc_err *err)
{
	return remove_at(dir, name, 0, err);
}

int sc_remove_tree_path(const char *path, struct sc_err *err)
{
	char parent[4096];
	if (sc_path(parent, sizeof(parent), "%s", path) < 0)
		return sc_fail(err, ENAMETOOLONG, "remove %.200s", path);
	char *slash = strrchr(parent, '/');
	if (!slash)
		return remove_at(AT_FDCWD, path, 0, err);
	if (!slash[1])
		return sc_fail(err, EINVAL, "remove %s: not a path to an entry", path);
	*slash = '\0';
	_cleanup_fd_ int dir = open(parent[0] ? parent : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return errno == ENOENT ? 0 : sc_fail(err, errno, "open %s", parent);
	return remove_at(dir, slash + 1, 0, err);
}

int sc_remove_tree(const char *path)
{
	return sc_remove_tree_path(path, NULL);
}

/* ---- small files ---- */

static int check_kind(int fd, const char *name, unsigned flags, struct stat *st,
		      struct sc_err *err)
{
	if (fstat(fd, st) < 0)
		return sc_fail(err, errno, "stat %s", name);
	if ((flags & SC_READ_REGULAR) && !S_ISREG(st->st_mode))
		return sc_fail(err, EINVAL, "%s is not a regular file", name);
	return 0;
}

ssize_t sc_read_small_fd(int fd, const char *name, unsigned flags, char *buf, size_t size,
			 struct sc_err *err)
{
	struct stat st;
	if (size == 0)
		return sc_fail(err, EINVAL, "read %s", name);
	if ((flags & SC_READ_REGULAR) && check_kind(fd, name, flags, &st, err) < 0)
		return -1;
	ssize_t n = sc_read_all(fd, buf, size - 1);
	if (n < 0)
		return sc_fail(err, errno, "read %s", name);
	buf[n] = '\0';
	if ((flags & SC_READ_WHOLE) && (size_t)n == size - 1) {
		char more;
		ssize_t m;
		do
			m = read(fd, &more, 1);
		while (m < 0 && errno == EINTR);
		if (m > 0)
			return sc_fail(err, EFBIG, "%s is larger than %zu bytes", name, size - 1);
	}
	return n;
}

static int open_small(int dirfd, const char *path, unsigned flags, struct sc_err *err)
{
	int fd = openat(dirfd, path,
			O_RDONLY | O_CLOEXEC | O_NOCTTY | ((flags & SC_READ_NOFOLLOW) ? O_NOFOLLOW : 0));
	return fd < 0 ? sc_fail(err, errno, "open %s", path) : fd;
}

ssize_t sc_read_small(int dirfd, const char *path, unsigned flags, char *buf, size_t size,
		      struct sc_err *err)
{
	_cleanup_fd_ int fd = open_small(dirfd, path, flags, err);
	return fd < 0 ? -1 : sc_read_small_fd(fd, path, flags, buf, size, err);
}

int sc_read_small_alloc_fd(int fd, const char *name, unsigned flags, size_t max, char **out,
			   size_t *len, struct sc_err *err)
{
	struct stat st;
	if (check_kind(fd, name, flags, &st, err) < 0)
		return -1;
	/* a regular file says its size; anything else may have up to max */
	size_t cap = max;
	if (S_ISREG(st.st_mode)) {
		if ((uint64_t)st.st_size > max)
			return sc_fail(err, EFBIG, "%s is larger than %zu bytes", name, max);
		cap = (size_t)st.st_size;
	}
	_cleanup_free_ char *buf = malloc(cap + 2);
	if (!buf)
		return sc_fail(err, ENOMEM, "read %s", name);
	ssize_t n = sc_read_all(fd, buf, S_ISREG(st.st_mode) ? cap : cap + 1);
	if (n < 0)
		return sc_fail(err, errno, "read %s", name);
	if ((size_t)n > max)
		return sc_fail(err, EFBIG, "%s is larger than %zu bytes", name, max);
	buf[n] = '\0';
	if (len)
		*len = (size_t)n;
	*out = steal_ptr(&buf);
	return 0;
}

int sc_read_small_alloc(int dirfd, const char *path, unsigned flags, size_t max, char **out,
			size_t *len, struct sc_err *err)
{
	_cleanup_fd_ int fd = open_small(dirfd, path, flags, err);
	return fd < 0 ? -1 : sc_read_small_alloc_fd(fd, path, flags, max, out, len, err);
}

/* ---- resolution beneath a directory ---- */

int sc_openat_beneath(int dir_fd, const char *path, int flags, mode_t mode, unsigned how)
{
	struct open_how oh = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.mode = (flags & O_CREAT) ? mode : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
			   ((how & SC_BENEATH_NO_XDEV) ? RESOLVE_NO_XDEV : 0),
	};
	return (int)syscall(SYS_openat2, dir_fd, path, &oh, sizeof(oh));
}

int sc_create_beneath(int dir_fd, const char *rel)
{
	_cleanup_free_ char *copy = strdup(rel);
	int dir = copy ? dup(dir_fd) : -1;
	char *p = copy;
	for (char *slash; dir >= 0 && (slash = strchr(p, '/')); p = slash + 1) {
		*slash = '\0';
		int sub = mkdirat(dir, p, 0755) < 0 && errno != EEXIST
				  ? -1
				  : openat(dir, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int e = errno;
		close(dir);
		dir = sub;
		errno = e;
	}
	if (dir < 0)
		return -1;
	int fd = openat(dir, p, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	int e = errno;
	close(dir);
	errno = e;
	return fd;
}

int sc_openat_in_root(int root_fd, const char *path, int flags, mode_t mode)
{
	struct open_how oh = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.mode = (flags & O_CREAT) ? mode : 0,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	return (int)syscall(SYS_openat2, root_fd, path, &oh, sizeof(oh));
}

DIR *sc_opendir_at(int dirfd)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d && fd >= 0) {
		int e = errno;
		close(fd);
		errno = e;
	}
	return d;
}

void sc_closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
	*d = NULL;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int sc_dir_names_sorted(int dirfd, size_t max, char ***names, size_t *n, bool *more)
{
	*names = NULL;
	*n = 0;
	_cleanup_dir_ DIR *d = sc_opendir_at(dirfd);
	if (!d)
		return -1;
	size_t cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (*n >= max) {
			if (more)
				*more = true;
			break;
		}
		if (*n == cap) {
			cap = cap ? cap * 2 : 32;
			char **grown = realloc(*names, cap * sizeof(**names));
			if (!grown)
				break;
			*names = grown;
		}
		if (!((*names)[*n] = strdup(e->d_name)))
			break;
		(*n)++;
	}
	if (*n)
		qsort(*names, *n, sizeof(**names), cmp_names);
	return 0;
}

void sc_dir_names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int sc_memfd_of(const char *what, const void *data, size_t len, struct sc_err *err)
{
	_cleanup_fd_ int fd = memfd_create(what, MFD_CLOEXEC);
	if (fd < 0)
		return sc_fail(err, errno, "memfd for %s", what);
	if ((len && sc_write_all(fd, data, len) < 0) || lseek(fd, 0, SEEK_SET) < 0)
		return sc_fail(err, errno, "write %s", what);
	return steal_fd(&fd);
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
