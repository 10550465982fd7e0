/* sandcell common helpers: the error type and cleanup attributes.
 * Every module uses these; nothing here touches the OS beyond close/free. */
#pragma once
#include <errno.h>
#include <limits.h>
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

/* Fill err (may be NULL) with a message that already says everything (one
 * passed on from another process, e.g. the cell's init) and its errno;
 * nothing is appended. Always returns -1. Safe after fork. */
int sc_err_set(struct sc_err *err, int errnum, const char *msg);

/* Append a hint (" (hint)") to an existing error message. */
void sc_err_hint(struct sc_err *err, const char *hint);

/* Put context in front of an inner error: "image 'x': <inner message>".
 * err may be NULL; errnum is kept. Always returns -1, so a caller passes a
 * failure up with context in one line:
 *   if (open_image(name, &img, err) < 0)
 *           return sc_err_wrap(err, "image '%s'", name);
 * Safe after fork (no malloc). */
int sc_err_wrap(struct sc_err *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Where library code sends what it would otherwise print (warnings,
 * progress, notes): the caller decides, as crun's output handler does.
 * Library code never writes to stderr itself. A NULL sink or a sink with no
 * function drops messages. The function may be called from several threads
 * at once when the library documents so. */
enum sc_log_level { SC_LOG_ERROR, SC_LOG_WARN, SC_LOG_INFO, SC_LOG_PROGRESS };
struct sc_log {
	void (*fn)(void *ctx, enum sc_log_level level, const char *msg);
	void *ctx;
};
/* Format one message (bounded to SC_ERR_MAX bytes, no newline needed) and
 * hand it to the sink. */
void sc_log(const struct sc_log *log, enum sc_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

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
/* A directory stream over dirfd's directory with an offset of its own (a
 * dup would share dirfd's; dirfd may be O_PATH), or NULL with errno
 * (common/fsutil.c). _cleanup_dir_ closes it on every way out. */
struct __dirstream;
struct __dirstream *sc_opendir_at(int dirfd);
void sc_closedirp(struct __dirstream **d);
#define _cleanup_dir_ __attribute__((cleanup(sc_closedirp)))
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

/* The size of a buffer for a path sandcell builds: a root, state or cell
 * directory (up to PATH_MAX) joined with a few names of its own. Every
 * snprintf into one checks for truncation (sc_path, or by hand). */
#define SC_PATH_BUF (PATH_MAX + 512)

/* Built with a sanitizer that keeps its own idea of the stack (ASan,
 * TSan): code that switches stacks takes another way there. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SC_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SC_SANITIZED 1
#endif
#endif
#ifndef SC_SANITIZED
#define SC_SANITIZED 0
#endif

/* Bounded path formatting: fails (returns -1, errno=ENAMETOOLONG) on truncation. */
int sc_path(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Write all / read all with EINTR handling. */
int sc_write_all(int fd, const void *buf, size_t len);
ssize_t sc_read_all(int fd, void *buf, size_t len);

/* Write a small string to a file (e.g. /proc/PID/uid_map). */
int sc_write_file(const char *path, const char *data, struct sc_err *err);

/* Small files (common/fsutil.c): the one reader. */
#define SC_READ_NOFOLLOW 1u /* the last component must not be a symlink */
#define SC_READ_REGULAR 2u  /* anything but a regular file is an error (EINVAL) */
#define SC_READ_WHOLE 4u    /* a file that does not fit is an error (EFBIG), not cut */
/* Read an open fd (named `name` in messages) into buf, NUL-terminated:
 * at most size - 1 bytes. Returns the length, or -1 with err filled.
 * No malloc: usable after fork. */
ssize_t sc_read_small_fd(int fd, const char *name, unsigned flags, char *buf, size_t size,
			 struct sc_err *err);
/* The same for path, opened O_RDONLY|O_CLOEXEC relative to dirfd
 * (AT_FDCWD: the working directory, or an absolute path). */
ssize_t sc_read_small(int dirfd, const char *path, unsigned flags, char *buf, size_t size,
		      struct sc_err *err);
/* Into a malloc'd, NUL-terminated *out of at most max bytes (more is an
 * error, EFBIG); *len (may be NULL) gets the length. */
int sc_read_small_alloc_fd(int fd, const char *name, unsigned flags, size_t max, char **out,
			   size_t *len, struct sc_err *err);
int sc_read_small_alloc(int dirfd, const char *path, unsigned flags, size_t max, char **out,
			size_t *len, struct sc_err *err);

/* openat2(2) beneath dir_fd with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS (plus RESOLVE_NO_XDEV with SC_BENEATH_NO_XDEV):
 * nothing outside dir_fd and no symlink is ever followed. O_CLOEXEC is
 * added; mode is used only with O_CREAT. Returns an fd or -1 with errno. */
#define SC_BENEATH_NO_XDEV 1u
int sc_openat_beneath(int dir_fd, const char *path, int flags, mode_t mode, unsigned how);
/* openat2(2) with root_fd as the root: RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS.
 * Symlinks are followed as a process chrooted at root_fd would follow
 * them (absolute targets and ".." never leave root_fd), but never a
 * magic link (/proc/PID/fd/N, /proc/PID/root, /proc/PID/cwd), which leads
 * wherever the resolving process's fds lead. O_CLOEXEC is added. An fd
 * or -1 with errno. */
int sc_openat_in_root(int root_fd, const char *path, int flags, mode_t mode);
/* A new or truncated file rel (relative, '/'-separated) beneath dir_fd,
 * opened for writing (mode 0644 when made): its missing parents made
 * (0755), no symlink followed in any part. An fd or -1 with errno. */
int sc_create_beneath(int dir_fd, const char *rel);

/* Remove the tree `name` (a file, symlink or directory) under dir without
 * ever following a symlink (common/fsutil.c). Directories of ours that are
 * not writable or searchable (a rootless caller's read-only image dirs,
 * overlayfs's mode-000 work/work) are made so first, with the symlink-safe
 * calls (fchmod on the opened directory, fchmodat(AT_SYMLINK_NOFOLLOW)).
 * Removes what it can and reports the first failure; a missing entry is
 * not a failure. */
int sc_remove_tree_at(int dir, const char *name, struct sc_err *err);
/* The same for a path (its parent directories are trusted). */
int sc_remove_tree_path(const char *path, struct sc_err *err);
/* sc_remove_tree_path(path, NULL), for callers that do not report why. */
int sc_remove_tree(const char *path);
/* The names in dirfd's directory ("." and ".." left out), sorted
 * bytewise, read and closed before the caller walks them (so a recursive
 * walk holds one stream at a time): at most max, *more (may be NULL) set
 * when there were more; what was read is kept when memory runs out. 0, or
 * -1 with errno when the directory cannot be read. Free with
 * sc_dir_names_free. */
int sc_dir_names_sorted(int dirfd, size_t max, char ***names, size_t *n, bool *more);
void sc_dir_names_free(char **names, size_t n);
/* A memfd (O_CLOEXEC) holding the len bytes of data, its offset at 0: a
 * command's stdin or a helper's request (common/fsutil.c). An fd, or -1
 * with err filled ("what" names it). */
int sc_memfd_of(const char *what, const void *data, size_t len, struct sc_err *err);
/* mkdir -p (common/fsutil.c). */
int sc_mkdir_p(const char *path, mode_t mode, struct sc_err *err);

/* Monotonic clock in seconds. */
double sc_now(void);
