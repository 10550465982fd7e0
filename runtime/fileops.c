/* The cell side of reading and writing one regular file: what an editor
 * needs, without starting a shell, test, mkdir, dirname and cat in the
 * cell for each view or edit. Runs in a worker process of the cell's init,
 * with the cell's credentials (root of the cell, no capabilities) and its
 * filesystem view; paths resolve in the cell's root (cellpath.h), as they
 * would for a command there, but never through a magic link.
 * Each returns 0 or an errno value, which becomes the worker's exit code. */
#include <fcntl.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>

#include "cellpath.h"
#include "fileops.h"

/* Move up to `want` bytes from in to out; returns bytes moved or -1.
 * sendfile/splice first (no copy through this process), plain
 * read/write where the filesystem supports neither. */
static ssize_t move_bytes(int in, int out, size_t want, bool from_pipe)
{
	ssize_t n;
	do
		n = from_pipe ? splice(in, NULL, out, NULL, want, 0) : sendfile(out, in, NULL, want);
	while (n < 0 && errno == EINTR);
	if (n >= 0 || (errno != EINVAL && errno != ENOSYS))
		return n;
	char buf[8192];
	do
		n = read(in, buf, want < sizeof(buf) ? want : sizeof(buf));
	while (n < 0 && errno == EINTR);
	if (n > 0 && sc_write_all(out, buf, (size_t)n) < 0)
		return -1;
	return n;
}

int rt_fileop_read(int out, const char *path, uint64_t max)
{
	/* O_NONBLOCK: a FIFO at the path must not hang the worker; what was
	 * opened is judged by fstat, so there is no window between a look
	 * and the open */
	_cleanup_fd_ int fd = rt_cellpath_open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
	struct stat st;
	if (fd < 0 && errno == ENXIO) /* a socket */
		return EINVAL;
	if (fd < 0 || fstat(fd, &st) < 0)
		return errno;
	if (S_ISDIR(st.st_mode))
		return EISDIR;
	if (!S_ISREG(st.st_mode))
		return EINVAL;
	/* One byte past max tells the reader that the file is larger. */
	uint64_t left = max + 1;
	while (left > 0) {
		ssize_t n = move_bytes(fd, out, left < (1u << 20) ? (size_t)left : (1u << 20), false);
		if (n < 0)
			return errno;
		if (n == 0)
			break;
		left -= (uint64_t)n;
	}
	return 0;
}

static int open_for_write(const char *path, unsigned flags)
{
	if (flags & PROTO_FILE_CREATE) {
		/* O_EXCL: an existing entry, a symlink included, is EEXIST */
		char leaf[NAME_MAX + 1];
		_cleanup_fd_ int dir = rt_cellpath_open_parent(path, 0755, leaf);
		if (dir < 0)
			return -1;
		int fd = openat(dir, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC,
				flags & PROTO_FILE_EXEC ? 0755 : 0644);
		if (fd >= 0 || errno != EEXIST || !(flags & PROTO_FILE_REPLACE))
			return fd;
		/* there already: replaced as without PROTO_FILE_CREATE */
	}
	int fd = rt_cellpath_open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY, 0);
	if (fd < 0 && errno == ENXIO) /* a socket, or a FIFO nobody reads */
		errno = EINVAL;
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	if (ftruncate(fd, 0) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int rt_fileop_write(int in, const char *path, uint64_t max, unsigned flags)
{
	_cleanup_fd_ int fd = open_for_write(path, flags);
	if (fd < 0)
		return errno;
	uint64_t total = 0;
	for (;;) {
		ssize_t n = move_bytes(in, fd, 1u << 20, true);
		if (n < 0)
			return errno;
		if (n == 0)
			break;
		total += (uint64_t)n;
		if (total > max)
			return EFBIG;
	}
	if (close(steal_fd(&fd)) < 0)
		return errno;
	return 0;
}
