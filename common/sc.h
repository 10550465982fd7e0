/* sandcell common helpers: the error type and cleanup attributes.
 * Every module uses these; nothing here touches the OS beyond close/free. */
#pragma once
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <stdlib.h>
#include <unistd.h>

#define SC_ERR_MAX 512

/* An error with context, filled by the function that failed. */
struct sc_err {
	int errnum;           /* errno, or 0 when not an OS error */
	char msg[SC_ERR_MAX]; /* "what failed: why" */
};

/* Fill err (may be NULL) with a formatted message; when errnum != 0,
 * ": strerror(errnum)" is appended. Always returns -1. */
int sc_fail(struct sc_err *err, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Append a hint (" (hint)") to an existing error message. */
void sc_err_hint(struct sc_err *err, const char *hint);

/* Close *fd if open and mark it closed (-1); keeps errno. */
static inline void sc_closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
		*fd = -1;
	}
}
static inline void sc_freep(void *p) { free(*(void **)p); }
static inline void sc_fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

#define _cleanup_fd_ __attribute__((cleanup(sc_closep)))
#define _cleanup_free_ __attribute__((cleanup(sc_freep)))
#define _cleanup_fclose_ __attribute__((cleanup(sc_fclosep)))

/* Hand ownership on: return the value and leave the source empty. */
static inline int steal_fd(int *fd)
{
	int v = *fd;
	*fd = -1;
	return v;
}
#define steal_ptr(pp)                                                          \
	({                                                                     \
		__typeof__(*(pp)) _v = *(pp);                                  \
		*(pp) = NULL;                                                  \
		_v;                                                            \
	})

#define SC_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Bounded path formatting: fails (returns -1, errno=ENAMETOOLONG) on truncation. */
int sc_path(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Write all / read all with EINTR handling. */
int sc_write_all(int fd, const void *buf, size_t len);
ssize_t sc_read_all(int fd, void *buf, size_t len);

/* Write a small string to a file (e.g. /proc/PID/uid_map). */
int sc_write_file(const char *path, const char *data, struct sc_err *err);

/* Remove a directory tree without following symlinks (common/fsutil.c). */
int sc_remove_tree(const char *path);
/* mkdir -p (common/fsutil.c). */
int sc_mkdir_p(const char *path, mode_t mode, struct sc_err *err);

/* Monotonic clock in seconds. */
double sc_now(void);
