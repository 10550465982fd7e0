#include "tarwrite.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#define BLOCK 512

struct writer {
	int fd;
	const struct tarw_opts *o;
	uint64_t data;
	struct sc_err *err;
};

/* size-1 octal digits and a NUL, as ustar wants; values too large for the
 * field (files of 8 GiB and more) are refused by the callers. */
static void octal(char *field, size_t size, uint64_t v)
{
	for (size_t i = size - 1; i-- > 0; v >>= 3)
		field[i] = (char)('0' + (v & 7));
	field[size - 1] = '\0';
}

static int put(struct writer *w, const void *buf, size_t len)
{
	if (sc_write_all(w->fd, buf, len) < 0)
		return sc_fail(w->err, errno, "write the tar stream");
	return 0;
}

static int pad(struct writer *w, uint64_t len)
{
	static const char zeros[BLOCK];
	size_t n = (size_t)((BLOCK - len % BLOCK) % BLOCK);
	return n ? put(w, zeros, n) : 0;
}

/* The ustar magic and the header's checksum (summed with its own field
 * as spaces). */
static void seal_header(char h[BLOCK])
{
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	memset(h + 148, ' ', 8);
	unsigned sum = 0;
	for (int i = 0; i < BLOCK; i++)
		sum += (unsigned char)h[i];
	snprintf(h + 148, 8, "%06o", sum);
}

/* A pax extended header carrying a long path and/or link target. */
static int put_pax(struct writer *w, const char *path, const char *link)
{
	char body[2 * SC_PATH_BUF];
	size_t used = 0;
	const char *keys[2] = {"path", "linkpath"}, *vals[2] = {path, link};
	for (int k = 0; k < 2; k++) {
		if (!vals[k])
			continue;
		size_t base = strlen(keys[k]) + strlen(vals[k]) + 3; /* ' ' '=' '\n' */
		size_t len = base + 1;
		while (len != base + (size_t)snprintf(NULL, 0, "%zu", len))
			len = base + (size_t)snprintf(NULL, 0, "%zu", len);
		int n = snprintf(body + used, sizeof(body) - used, "%zu %s=%s\n", len, keys[k], vals[k]);
		if (n < 0 || (size_t)n >= sizeof(body) - used)
			return sc_fail(w->err, ENAMETOOLONG, "tar: path too long");
		used += (size_t)n;
	}
	char h[BLOCK] = {0};
	snprintf(h, 100, "PaxHeaders/entry");
	octal(h + 100, 8, 0644);
	octal(h + 108, 8, 0);
	octal(h + 116, 8, 0);
	octal(h + 124, 12, used);
	octal(h + 136, 12, 0);
	h[156] = 'x';
	seal_header(h);
	if (put(w, h, BLOCK) < 0 || put(w, body, used) < 0)
		return -1;
	return pad(w, used);
}

static uint32_t unshift(uint32_t id, uint32_t offset)
{
	return id >= offset ? id - offset : 0;
}

static int put_header(struct writer *w, const char *path, const struct stat *st, char type,
		      uint64_t size, const char *link)
{
	bool long_path = strlen(path) >= 100, long_link = link && strlen(link) >= 100;
	if ((long_path || long_link) &&
	    put_pax(w, long_path ? path : NULL, long_link ? link : NULL) < 0)
		return -1;
	char h[BLOCK] = {0};
	memcpy(h, path, long_path ? 99 : strlen(path));
	octal(h + 100, 8, st ? (st->st_mode & 07777) : 0644);
	octal(h + 108, 8, st ? unshift(st->st_uid, w->o->uid_offset) : 0);
	octal(h + 116, 8, st ? unshift(st->st_gid, w->o->gid_offset) : 0);
	octal(h + 124, 12, size);
	octal(h + 136, 12, st ? (uint64_t)st->st_mtime : 0);
	h[156] = type;
	if (st && (type == '3' || type == '4')) {
		octal(h + 329, 8, major(st->st_rdev));
		octal(h + 337, 8, minor(st->st_rdev));
	}
	if (link)
		memcpy(h + 157, link, long_link ? 99 : strlen(link));
	seal_header(h);
	return put(w, h, BLOCK);
}

static int put_file(struct writer *w, int dir, const char *name, const char *path,
		    const struct stat *st)
{
	/* The entry may have turned into a FIFO since it was looked at: open
	 * without blocking, then judge what was opened. */
	int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return sc_fail(w->err, errno, "open %s", path);
	struct stat now;
	if (fstat(fd, &now) < 0 || !S_ISREG(now.st_mode)) {
		close(fd);
		return sc_fail(w->err, 0, "%s changed into something other than a regular file", path);
	}
	st = &now;
	uint64_t size = (uint64_t)st->st_size;
	if (size >= (1ULL << 33)) {
		close(fd);
		return sc_fail(w->err, EFBIG, "%s: files of 8 GiB and more are not supported", path);
	}
	w->data += size;
	if (w->o->max_bytes && w->data > w->o->max_bytes) {
		close(fd);
		return sc_fail(w->err, 0, "more than %llu bytes to write", (unsigned long long)w->o->max_bytes);
	}
	int rc = put_header(w, path, st, '0', size, NULL);
	char buf[65536];
	uint64_t left = size;
	while (rc == 0 && left > 0) {
		size_t want = left < sizeof(buf) ? (size_t)left : sizeof(buf);
		ssize_t n = read(fd, buf, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = sc_fail(w->err, errno, "read %s", path);
			break;
		}
		if (n == 0) { /* the file shrank: keep the announced size */
			memset(buf, 0, want);
			n = (ssize_t)want;
		}
		rc = put(w, buf, (size_t)n);
		left -= (uint64_t)n;
	}
	close(fd);
	return rc < 0 ? -1 : pad(w, size);
}

static bool is_opaque(int dir_fd)
{
	char v[8];
	static const char *const names[] = {"user.overlay.opaque", "trusted.overlay.opaque"};
	for (size_t i = 0; i < SC_ARRAY_LEN(names); i++) {
		ssize_t n = fgetxattr(dir_fd, names[i], v, sizeof(v));
		if (n == 1 && v[0] == 'y')
			return true;
	}
	return false;
}

static int put_tree(struct writer *w, int dir, const char *prefix, int depth);

static int put_entry(struct writer *w, int dir, const char *name, const char *path, int depth)
{
	struct stat st;
	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return sc_fail(w->err, errno, "%s", path);
	if (S_ISREG(st.st_mode))
		return put_file(w, dir, name, path, &st);
	if (S_ISLNK(st.st_mode)) {
		char target[4096];
		ssize_t n = readlinkat(dir, name, target, sizeof(target) - 1);
		if (n < 0)
			return sc_fail(w->err, errno, "readlink %s", path);
		target[n] = '\0';
		return put_header(w, path, &st, '2', 0, target);
	}
	if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0) && w->o->overlay) {
		/* an overlayfs whiteout: NAME was deleted */
		char wh[SC_PATH_BUF];
		const char *slash = strrchr(path, '/');
		int n = slash ? snprintf(wh, sizeof(wh), "%.*s/.wh.%s", (int)(slash - path), path, slash + 1)
			      : snprintf(wh, sizeof(wh), ".wh.%s", path);
		if (n < 0 || (size_t)n >= sizeof(wh))
			return sc_fail(w->err, ENAMETOOLONG, "tar: path too long");
		return put_header(w, wh, NULL, '0', 0, NULL);
	}
	/* FIFOs and device nodes are written as such: the reader decides (an
	 * image keeps FIFOs and says which device nodes it skipped) */
	if (S_ISFIFO(st.st_mode))
		return put_header(w, path, &st, '6', 0, NULL);
	if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
		return put_header(w, path, &st, S_ISCHR(st.st_mode) ? '3' : '4', 0, NULL);
	if (!S_ISDIR(st.st_mode))
		return 0; /* sockets: tar has no type for them, and a socket is not data */
	if (depth > 256)
		return sc_fail(w->err, 0, "directories nested too deep at %s", path);
	char dpath[SC_PATH_BUF];
	if (sc_path(dpath, sizeof(dpath), "%s/", path) < 0)
		return sc_fail(w->err, ENAMETOOLONG, "tar: path too long");
	if (put_header(w, dpath, &st, '5', 0, NULL) < 0)
		return -1;
	int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return sc_fail(w->err, errno, "open %s", path);
	int rc = 0;
	if (w->o->overlay && is_opaque(fd)) {
		char opq[SC_PATH_BUF];
		if (sc_path(opq, sizeof(opq), "%s/.wh..wh..opq", path) < 0)
			rc = sc_fail(w->err, ENAMETOOLONG, "tar: path too long");
		else
			rc = put_header(w, opq, NULL, '0', 0, NULL);
	}
	if (rc == 0)
		rc = put_tree(w, fd, path, depth + 1);
	close(fd);
	return rc;
}

static int put_tree(struct writer *w, int dir, const char *prefix, int depth)
{
	int fd = dup(dir);
	if (fd < 0)
		return sc_fail(w->err, errno, "dup");
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return sc_fail(w->err, errno, "opendir");
	}
	rewinddir(d);
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char path[SC_PATH_BUF];
		if (sc_path(path, sizeof(path), "%s%s%s", prefix, *prefix ? "/" : "", e->d_name) < 0) {
			rc = sc_fail(w->err, ENAMETOOLONG, "tar: path too long");
			break;
		}
		rc = put_entry(w, dirfd(d), e->d_name, path, depth);
	}
	closedir(d);
	return rc;
}

int sc_tarw_tree(int out_fd, int dir_fd, const struct tarw_opts *o, struct sc_err *err)
{
	struct writer w = {.fd = out_fd, .o = o, .err = err};
	int rc = put_tree(&w, dir_fd, "", 0);
	if (rc < 0)
		return -1;
	static const char end[2 * BLOCK];
	return put(&w, end, sizeof(end));
}
