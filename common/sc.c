#include "sc.h"

#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>

int sc_fail(struct sc_err *err, int errnum, const char *fmt, ...)
{
	if (!err)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		err->msg[0] = '\0';
	size_t len = strnlen(err->msg, sizeof(err->msg));
	if (errnum && len < sizeof(err->msg) - 1)
		snprintf(err->msg + len, sizeof(err->msg) - len, ": %s",
			 strerror(errnum));
	err->errnum = errnum;
	return -1;
}

void sc_err_hint(struct sc_err *err, const char *hint)
{
	if (!err)
		return;
	size_t len = strnlen(err->msg, sizeof(err->msg));
	if (len < sizeof(err->msg) - 1)
		snprintf(err->msg + len, sizeof(err->msg) - len, " (%s)", hint);
}

int sc_path(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= size) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

int sc_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

ssize_t sc_read_all(int fd, void *buf, size_t len)
{
	char *p = buf;
	size_t got = 0;
	while (got < len) {
		ssize_t n = read(fd, p + got, len - got);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

int sc_write_file(const char *path, const char *data, struct sc_err *err)
{
	_cleanup_fd_ int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return sc_fail(err, errno, "open %s", path);
	if (sc_write_all(fd, data, strlen(data)) < 0)
		return sc_fail(err, errno, "write %s", path);
	return 0;
}

double sc_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
