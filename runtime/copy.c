#include "copy.h"

#include <dirent.h>
#include <fcntl.h>
#include <libgen.h>
#include <string.h>
#include <sys/stat.h>

#include "cellpath.h"

/* REC_SKIP: an entry that is not copied (a FIFO, socket or device), sent
 * so that the receiving side can say so. */
enum { REC_DIR = 'D', REC_FILE = 'F', REC_LINK = 'L', REC_SKIP = 'S', REC_END = 'E' };

struct rec {
	uint8_t type;
	uint8_t pad[3];
	uint32_t mode;
	uint64_t size;
	uint32_t pathlen;
	uint32_t pad2;
};

struct sender {
	int fd;
	uint64_t sent, max;
	size_t entries;
	struct sc_err *err;
};

static int send_rec(struct sender *s, int type, uint32_t mode, uint64_t size, const char *path)
{
	struct rec r = {.type = (uint8_t)type, .mode = mode, .size = size,
			.pathlen = (uint32_t)strlen(path)};
	if (++s->entries > COPY_MAX_ENTRIES)
		return sc_fail(s->err, 0, "too many entries to copy (at most %d)", COPY_MAX_ENTRIES);
	if (sc_write_all(s->fd, &r, sizeof(r)) < 0 || sc_write_all(s->fd, path, r.pathlen) < 0)
		return sc_fail(s->err, errno, "copy stream");
	return 0;
}

static int send_file(struct sender *s, int dir, const char *name, const char *path,
		     const struct stat *st)
{
	/* The path may have turned into a FIFO or device since it was
	 * looked at: open without blocking, then judge the opened file. */
	_cleanup_fd_ int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return sc_fail(s->err, errno, "open %s", path);
	struct stat now;
	if (fstat(fd, &now) < 0)
		return sc_fail(s->err, errno, "%s", path);
	if (!S_ISREG(now.st_mode))
		return sc_fail(s->err, 0, "%s changed into something other than a regular file during the copy",
			       path);
	st = &now;
	uint64_t size = (uint64_t)st->st_size;
	if (s->sent + size > s->max)
		return sc_fail(s->err, 0, "copy exceeds the size limit of %llu bytes at %s",
			       (unsigned long long)s->max, path);
	s->sent += size;
	if (send_rec(s, REC_FILE, st->st_mode & 07777, size, path) < 0)
		return -1;
	char buf[65536];
	uint64_t left = size;
	while (left > 0) {
		size_t want = left < sizeof(buf) ? (size_t)left : sizeof(buf);
		ssize_t n = read(fd, buf, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sc_fail(s->err, errno, "read %s", path);
		if (n == 0) { /* the file shrank: pad to the announced size */
			memset(buf, 0, want);
			n = (ssize_t)want;
		}
		if (sc_write_all(s->fd, buf, (size_t)n) < 0)
			return sc_fail(s->err, errno, "copy stream");
		left -= (uint64_t)n;
	}
	return 0;
}

static int send_entry(struct sender *s, int dir, const char *name, const char *path, int depth);

static int send_dir(struct sender *s, int dir, const char *name, const char *path,
		    const struct stat *st, int depth)
{
	if (depth > 256)
		return sc_fail(s->err, 0, "directories nested too deep at %s", path);
	int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return sc_fail(s->err, errno, "open %s", path);
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return sc_fail(s->err, errno, "open %s", path);
	}
	int rc = send_rec(s, REC_DIR, st->st_mode & 07777, 0, path);
	struct dirent *e;
	while (rc == 0 && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char child[COPY_MAX_PATH];
		if (sc_path(child, sizeof(child), "%s/%s", path, e->d_name) < 0) {
			rc = sc_fail(s->err, ENAMETOOLONG, "path under %s", path);
			break;
		}
		rc = send_entry(s, dirfd(d), e->d_name, child, depth + 1);
	}
	closedir(d);
	return rc;
}

static int send_entry(struct sender *s, int dir, const char *name, const char *path, int depth)
{
	struct stat st;
	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return sc_fail(s->err, errno, "%s", path);
	if (S_ISREG(st.st_mode))
		return send_file(s, dir, name, path, &st);
	if (S_ISDIR(st.st_mode))
		return send_dir(s, dir, name, path, &st, depth);
	if (S_ISLNK(st.st_mode)) {
		char target[COPY_MAX_PATH];
		ssize_t n = readlinkat(dir, name, target, sizeof(target) - 1);
		if (n < 0)
			return sc_fail(s->err, errno, "readlink %s", path);
		if (send_rec(s, REC_LINK, 0777, (uint64_t)n, path) < 0 ||
		    sc_write_all(s->fd, target, (size_t)n) < 0)
			return sc_fail(s->err, errno, "copy stream");
		return 0;
	}
	/* devices, fifos and sockets are not copied; the receiver says so */
	return send_rec(s, REC_SKIP, st.st_mode & S_IFMT, 0, path);
}

static int send_top(struct sender *s, int parent, const char *name)
{
	if (send_entry(s, parent, name, name, 0) < 0)
		return -1;
	return send_rec(s, REC_END, 0, 0, "");
}

int rt_copy_send(int fd, int dir_fd, const char *path, uint64_t max_size, struct sc_err *err)
{
	struct sender s = {.fd = fd, .max = max_size, .err = err};
	char buf[COPY_MAX_PATH];
	if (sc_path(buf, sizeof(buf), "%s", path) < 0)
		return sc_fail(err, ENAMETOOLONG, "path too long");
	size_t len = strlen(buf);
	while (len > 1 && buf[len - 1] == '/')
		buf[--len] = '\0';
	char *base = strrchr(buf, '/');
	const char *name = base ? base + 1 : buf;
	if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
		return sc_fail(err, 0, "cannot copy '%s': name a file or directory", path);
	_cleanup_fd_ int parent = -1;
	if (base) {
		*base = '\0';
		parent = openat(dir_fd, base == buf ? "/" : buf, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (parent < 0)
			return sc_fail(err, errno, "%s", path);
	}
	return send_top(&s, parent >= 0 ? parent : dir_fd, name);
}

int rt_copy_send_cell(int fd, const char *path, uint64_t max_size, struct sc_err *err)
{
	struct sender s = {.fd = fd, .max = max_size, .err = err};
	char name[NAME_MAX + 1];
	_cleanup_fd_ int parent = rt_cellpath_open_parent(path, 0, name);
	if (parent < 0 && errno == EINVAL)
		return sc_fail(err, 0, "cannot copy '%.200s': name a file or directory", path);
	if (parent < 0)
		return sc_fail(err, errno, "%.200s", path);
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return sc_fail(err, 0, "cannot copy '%.200s': name a file or directory", path);
	return send_top(&s, parent, name);
}

/* ---- receiving ---- */

static bool valid_stream_path(const char *p)
{
	if (!*p || p[0] == '/')
		return false;
	for (const char *c = p; *c;) {
		const char *slash = strchr(c, '/');
		size_t n = slash ? (size_t)(slash - c) : strlen(c);
		if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		c += n;
		if (*c == '/')
			c++;
	}
	return true;
}

struct receiver {
	int fd;
	int top_parent;       /* directory the top entry is created in */
	char top_name[256];   /* name of the top entry (renamed per cp rules) */
	uint64_t got, max;
	bool strip, keep_links;
	size_t skipped;         /* FIFOs, sockets and devices left out */
	size_t dropped;         /* symlinks left out: they point outside */
	char first_dropped[160];
	const struct sc_log *log;
	struct sc_err *err;
};

/* Does a symlink at `rel` (top entry first) with this target stay inside
 * the copied tree? The target's leading ".." walk up through the real
 * directories the receiver made, so they are counted exactly; a ".." after
 * a name could follow another link, so it is refused. Absolute targets and
 * a top entry that is itself a link point outside. */
static bool link_stays_inside(const char *rel, const char *target)
{
	if (target[0] == '/')
		return false;
	long depth = -1; /* the directory holding the link: the top is 0 */
	for (const char *c = rel; *c; c++)
		if (*c == '/')
			depth++;
	if (depth < 0)
		return false;
	bool named = false;
	for (const char *c = target; *c;) {
		const char *slash = strchr(c, '/');
		size_t n = slash ? (size_t)(slash - c) : strlen(c);
		if (n == 2 && c[0] == '.' && c[1] == '.') {
			if (named || --depth < 0)
				return false;
		} else if (n > 0 && !(n == 1 && c[0] == '.')) {
			named = true;
		}
		c += n;
		if (*c == '/')
			c++;
	}
	return true;
}

/* A short printable form for a message (no control bytes, one line). */
static void shown_text(char *out, size_t size, const char *in)
{
	size_t k = 0;
	for (; *in && k + 1 < size; in++)
		out[k++] = (unsigned char)*in < 0x20 || *in == 0x7f ? '?' : *in;
	out[k] = '\0';
}

/* Open the parent directory of `rel` beneath the top parent, following no
 * symlink; *leaf points at the last component. */
static int open_parent(struct receiver *r, char *rel, char **leaf)
{
	char *slash = strrchr(rel, '/');
	if (!slash) {
		*leaf = rel;
		return dup(r->top_parent);
	}
	*slash = '\0';
	*leaf = slash + 1;
	int fd = sc_openat_beneath(r->top_parent, rel, O_PATH | O_DIRECTORY, 0, 0);
	*slash = '/';
	return fd;
}

static mode_t recv_mode(struct receiver *r, uint32_t mode)
{
	return r->strip ? (mode & 0777) : (mode & 07777);
}

static int recv_file(struct receiver *r, int dir, const char *leaf, const char *shown,
		     const struct rec *h)
{
	if (r->got + h->size > r->max)
		return sc_fail(r->err, 0, "copy exceeds the size limit of %llu bytes at %s",
			       (unsigned long long)r->max, shown);
	r->got += h->size;
	/* O_NONBLOCK, then the opened file's type: a FIFO or device in the
	 * way must not hang the copy or be written to (truncation waits
	 * until the file is known to be regular). */
	_cleanup_fd_ int fd = openat(dir, leaf, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY |
					      O_NONBLOCK, 0600);
	struct stat st;
	if (fd < 0 && errno == ENXIO)
		return sc_fail(r->err, 0, "create %s: a FIFO is in the way", shown);
	if (fd < 0)
		return sc_fail(r->err, errno, "create %s", shown);
	if (fstat(fd, &st) < 0)
		return sc_fail(r->err, errno, "create %s", shown);
	if (!S_ISREG(st.st_mode))
		return sc_fail(r->err, 0, "create %s: something other than a regular file is in the way",
			       shown);
	if (ftruncate(fd, 0) < 0)
		return sc_fail(r->err, errno, "truncate %s", shown);
	char buf[65536];
	uint64_t left = h->size;
	int rc = 0;
	while (left > 0 && rc == 0) {
		size_t want = left < sizeof(buf) ? (size_t)left : sizeof(buf);
		ssize_t n = read(r->fd, buf, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			rc = sc_fail(r->err, n < 0 ? errno : 0, "copy stream ended early");
		else if (sc_write_all(fd, buf, (size_t)n) < 0)
			rc = sc_fail(r->err, errno, "write %s", shown);
		else
			left -= (uint64_t)n;
	}
	if (rc == 0 && fchmod(fd, recv_mode(r, h->mode)) < 0)
		rc = sc_fail(r->err, errno, "chmod %s", shown);
	if (rc < 0)
		unlinkat(dir, leaf, 0); /* no partial file left behind (a full disk) */
	return rc;
}

static int recv_link(struct receiver *r, int dir, const char *leaf, const char *shown,
		     const struct rec *h)
{
	char target[COPY_MAX_PATH];
	if (h->size == 0 || h->size >= sizeof(target))
		return sc_fail(r->err, 0, "bad symlink in the copy stream at %s", shown);
	ssize_t got = sc_read_all(r->fd, target, (size_t)h->size);
	if (got != (ssize_t)h->size)
		return sc_fail(r->err, got < 0 ? errno : 0, "copy stream ended early");
	target[h->size] = '\0';
	if (memchr(target, '\0', (size_t)h->size))
		return sc_fail(r->err, 0, "bad symlink in the copy stream at %s", shown);
	if (!r->keep_links && !link_stays_inside(shown, target)) {
		if (r->dropped++ == 0) {
			char a[64], b[64];
			shown_text(a, sizeof(a), shown);
			shown_text(b, sizeof(b), target);
			snprintf(r->first_dropped, sizeof(r->first_dropped), "%s -> %s", a, b);
		}
		return 0;
	}
	struct stat st;
	if (fstatat(dir, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode))
		unlinkat(dir, leaf, 0);
	if (symlinkat(target, dir, leaf) < 0)
		return sc_fail(r->err, errno, "symlink %s", shown);
	return 0;
}

static int recv_entry(struct receiver *r, const struct rec *h, char *path)
{
	if (!valid_stream_path(path))
		return sc_fail(r->err, 0, "refusing path '%.200s' in the copy stream", path);
	/* The first component is the top entry: replace it by our name. */
	char rel[COPY_MAX_PATH + 256];
	const char *rest = strchr(path, '/');
	if (sc_path(rel, sizeof(rel), "%s%s", r->top_name, rest ? rest : "") < 0)
		return sc_fail(r->err, ENAMETOOLONG, "path too long");
	char *leaf;
	_cleanup_fd_ int dir = open_parent(r, rel, &leaf);
	if (dir < 0)
		return sc_fail(r->err, errno, "open the directory of %s%s", rel,
			       errno == ELOOP ? " (a symlink is in the way)" : "");
	switch (h->type) {
	case REC_DIR: {
		if (mkdirat(dir, leaf, 0700) < 0 && errno != EEXIST)
			return sc_fail(r->err, errno, "mkdir %s", rel);
		_cleanup_fd_ int d = sc_openat_beneath(dir, leaf, O_RDONLY | O_DIRECTORY, 0, 0);
		if (d < 0)
			return sc_fail(r->err, errno, "open %s", rel);
		if (fchmod(d, recv_mode(r, h->mode) | 0700) < 0)
			return sc_fail(r->err, errno, "chmod %s", rel);
		return 0;
	}
	case REC_FILE:
		return recv_file(r, dir, leaf, rel, h);
	case REC_LINK:
		return recv_link(r, dir, leaf, rel, h);
	case REC_SKIP: {
		/* one line each, up to a bound (a cell can make a million) */
		if (r->skipped++ < COPY_MAX_SKIP_LINES) {
			char shown[200];
			shown_text(shown, sizeof(shown), rel);
			uint32_t t = h->mode & S_IFMT;
			sc_log(r->log, SC_LOG_WARN, "left out %s: %s", shown,
			       t == S_IFIFO ? "a FIFO" : t == S_IFSOCK ? "a socket" :
			       t == S_IFCHR || t == S_IFBLK ? "a device" : "not a file, directory or symlink");
		}
		return 0;
	}
	default:
		return sc_fail(r->err, 0, "bad record in the copy stream");
	}
}

/* dest on the host: the caller's own path, resolved as given. */
static int set_top_host(struct receiver *r, const char *dest, bool as_dest)
{
	struct stat st;
	char buf[COPY_MAX_PATH];
	if (sc_path(buf, sizeof(buf), "%s", dest) < 0)
		return sc_fail(r->err, ENAMETOOLONG, "destination too long");
	if (!as_dest && stat(buf, &st) == 0 && S_ISDIR(st.st_mode)) {
		r->top_parent = open(buf, O_PATH | O_DIRECTORY | O_CLOEXEC);
		r->top_name[0] = '\0'; /* keep the sender's name */
	} else {
		char dcopy[COPY_MAX_PATH], bcopy[COPY_MAX_PATH];
		strcpy(dcopy, buf);
		strcpy(bcopy, buf);
		const char *base = basename(bcopy);
		if (!*base || !strcmp(base, ".") || !strcmp(base, "..") || strlen(base) >= sizeof(r->top_name))
			return sc_fail(r->err, 0, "bad destination %s", dest);
		snprintf(r->top_name, sizeof(r->top_name), "%s", base);
		r->top_parent = open(dirname(dcopy), O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	if (r->top_parent < 0)
		return sc_fail(r->err, errno, "destination %s", dest);
	return 0;
}

/* dest in the cell, by a worker of its init: resolved in the cell's root. */
static int set_top_cell(struct receiver *r, const char *dest, bool as_dest)
{
	if (!as_dest) {
		r->top_parent = rt_cellpath_open(dest, O_PATH | O_DIRECTORY, 0);
		if (r->top_parent >= 0) {
			r->top_name[0] = '\0'; /* keep the sender's name */
			return 0;
		}
	}
	char leaf[NAME_MAX + 1];
	r->top_parent = rt_cellpath_open_parent(dest, 0, leaf);
	if (r->top_parent < 0 || !strcmp(leaf, ".") || !strcmp(leaf, "..") ||
	    strlen(leaf) >= sizeof(r->top_name))
		return sc_fail(r->err, r->top_parent < 0 && errno != EINVAL ? errno : 0,
			       "destination %.200s", dest);
	snprintf(r->top_name, sizeof(r->top_name), "%s", leaf);
	return 0;
}

int rt_copy_receive(int fd, const char *dest, uint64_t max_size, unsigned flags,
		    const struct sc_log *log, struct sc_err *err)
{
	struct receiver r = {.fd = fd, .top_parent = -1, .max = max_size,
			     .strip = flags & COPY_STRIP_SPECIAL,
			     .keep_links = flags & COPY_KEEP_LINKS, .log = log, .err = err};
	int top = (flags & COPY_DEST_IN_CELL) ? set_top_cell(&r, dest, flags & COPY_AS_DEST)
					      : set_top_host(&r, dest, flags & COPY_AS_DEST);
	if (top < 0)
		return -1;
	int rc = 0;
	for (size_t n = 0; rc == 0; n++) {
		struct rec h;
		char path[COPY_MAX_PATH];
		if (n > COPY_MAX_ENTRIES) {
			rc = sc_fail(err, 0, "too many entries in the copy stream");
			break;
		}
		ssize_t got = sc_read_all(fd, &h, sizeof(h));
		if (got != (ssize_t)sizeof(h)) {
			rc = sc_fail(err, got < 0 ? errno : 0, "copy stream ended early");
			break;
		}
		if (h.type == REC_END)
			break;
		if (h.pathlen == 0 || h.pathlen >= sizeof(path)) {
			rc = sc_fail(err, 0, "bad path length in the copy stream");
			break;
		}
		got = sc_read_all(fd, path, h.pathlen);
		if (got != (ssize_t)h.pathlen) {
			rc = sc_fail(err, got < 0 ? errno : 0, "copy stream ended early");
			break;
		}
		path[h.pathlen] = '\0';
		if (memchr(path, '\0', h.pathlen)) {
			rc = sc_fail(err, 0, "bad path in the copy stream");
			break;
		}
		if (!r.top_name[0]) { /* into a directory: keep the sender's top name */
			const char *slash = strchr(path, '/');
			size_t len = slash ? (size_t)(slash - path) : strlen(path);
			if (len == 0 || len >= sizeof(r.top_name)) {
				rc = sc_fail(err, 0, "bad path in the copy stream");
				break;
			}
			memcpy(r.top_name, path, len);
			r.top_name[len] = '\0';
		}
		rc = recv_entry(&r, &h, path);
	}
	sc_closep(&r.top_parent);
	if (r.skipped > COPY_MAX_SKIP_LINES)
		sc_log(log, SC_LOG_WARN, "left out %zu more FIFOs, sockets or devices",
		       r.skipped - COPY_MAX_SKIP_LINES);
	if (r.dropped)
		sc_log(log, SC_LOG_WARN,
		       "left out %zu symlink%s pointing outside the copied tree (%s)", r.dropped,
		       r.dropped == 1 ? "" : "s", r.first_dropped);
	return rc;
}
