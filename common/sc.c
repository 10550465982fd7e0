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

int sc_err_set(struct sc_err *err, int errnum, const char *msg)
{
	if (!err)
		return -1;
	snprintf(err->msg, sizeof(err->msg), "%s", msg ? msg : "");
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

int sc_err_wrap(struct sc_err *err, const char *fmt, ...)
{
	if (!err)
		return -1;
	char ctx[SC_ERR_MAX];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(ctx, sizeof(ctx), fmt, ap);
	va_end(ap);
	if (n < 0)
		ctx[0] = '\0';
	/* ctx + ": " + the inner message, cut to fit */
	size_t inner_len = strnlen(err->msg, sizeof(err->msg) - 1);
	size_t ctx_len = strnlen(ctx, sizeof(ctx) - 1);
	size_t room = sizeof(err->msg) - 1;
	size_t sep = inner_len ? 2 : 0;
	size_t head = ctx_len + sep < room ? ctx_len + sep : room;
	size_t keep = inner_len < room - head ? inner_len : room - head;
	memmove(err->msg + head, err->msg, keep);
	memcpy(err->msg, ctx, head < ctx_len ? head : ctx_len);
	if (head > ctx_len)
		memcpy(err->msg + ctx_len, ": ", head - ctx_len);
	err->msg[head + keep] = '\0';
	return -1;
}

void sc_log(const struct sc_log *log, enum sc_log_level level, const char *fmt, ...)
{
	if (!log || !log->fn)
		return;
	char msg[SC_ERR_MAX];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	log->fn(log->ctx, level, msg);
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
