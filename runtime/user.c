/* Who a cell's commands run as: UID[:GID] or a name from the image's
 * /etc/passwd, and whether those ids exist in the cell's user namespace. */
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"
#include "safepath.h"

#define USER_MAX_LEN 256
#define ID_FILE_MAX (1u << 20)

/* A message that says it all (no strerror appended), with errnum kept for
 * callers that classify it (EINVAL: a bad value). */
__attribute__((format(printf, 3, 4))) static int user_fail(struct sc_err *err, int e,
							  const char *fmt, ...)
{
	if (!err)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	err->errnum = e;
	return -1;
}

/* A decimal id below 2^32-1 ((uid_t)-1 means "no change" to the kernel). */
static bool parse_id(const char *s, size_t len, uint32_t *out)
{
	if (len == 0 || len > 10)
		return false;
	uint64_t v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v >= UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

static bool valid_name(const char *s, size_t len)
{
	if (len == 0 || len > 32)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
			  (i > 0 && ((c >= '0' && c <= '9') || c == '-' || c == '.'));
		if (!ok)
			return false;
	}
	return true;
}

int cell_parse_user(const char *s, uint32_t *uid, uint32_t *gid, struct sc_err *err)
{
	size_t len = s ? strnlen(s, USER_MAX_LEN) : 0;
	const char *colon = len ? memchr(s, ':', len) : NULL;
	size_t ulen = colon ? (size_t)(colon - s) : len;
	uint32_t u, g;
	if (len >= USER_MAX_LEN || !parse_id(s, ulen, &u) ||
	    (colon && !parse_id(colon + 1, len - ulen - 1, &g)))
		return user_fail(err, EINVAL, "expected UID or UID:GID (numbers), got '%.64s'",
			       s ? s : "");
	*uid = u;
	*gid = colon ? g : u;
	return 0;
}

/* The contents of /etc/<file> of the topmost layer that has it (or of the
 * host's /etc without layers), NUL-terminated, malloc'd; NULL when no
 * layer has it. Read beneath each layer with no symlink followed. */
static char *read_etc_file(const char *file, const char *const *layers, size_t nlayers,
			   struct sc_err *err)
{
	size_t n = nlayers ? nlayers : 1;
	for (size_t i = 0; i < n; i++) {
		const char *top = nlayers ? layers[i] : "/";
		_cleanup_fd_ int root = open(top, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (root < 0)
			return sc_fail(err, errno, "open image layer %s", top), NULL;
		/* Only a missing entry lets a lower layer show through; a
		 * symlink (never followed) or a whiteout hides it, as in the
		 * cell's overlay, where it would not be this layer's file. */
		struct sc_err why = {0};
		_cleanup_fd_ int etc = rt_safepath_open(root, "/etc", true, false, &why);
		if (etc < 0 && why.errnum == ENOENT)
			continue;
		if (etc < 0)
			return NULL;
		_cleanup_fd_ int fd = sc_openat_beneath(etc, file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0, 0);
		if (fd < 0 && errno == ENOENT)
			continue;
		if (fd < 0)
			return NULL;
		struct stat st;
		/* a whiteout (character device) or anything odd hides it */
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
			return NULL;
		if (st.st_size > (off_t)ID_FILE_MAX)
			return sc_fail(err, EFBIG, "the image's /etc/%s is larger than 1 MiB", file), NULL;
		char *buf = malloc((size_t)st.st_size + 1);
		if (!buf)
			return sc_fail(err, ENOMEM, "read /etc/%s", file), NULL;
		ssize_t got = sc_read_all(fd, buf, (size_t)st.st_size);
		if (got < 0) {
			free(buf);
			return sc_fail(err, errno, "read the image's /etc/%s", file), NULL;
		}
		buf[got] = '\0';
		return buf;
	}
	return NULL;
}

/* Field 3 (and 4, for passwd) of the line whose first field is name. */
static bool find_entry(const char *text, const char *name, size_t nlen, uint32_t *id,
		       uint32_t *gid)
{
	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t llen = end ? (size_t)(end - line) : strlen(line);
		if (llen > nlen && !strncmp(line, name, nlen) && line[nlen] == ':') {
			/* name:password:ID:GID:... */
			const char *f = memchr(line + nlen + 1, ':', llen - nlen - 1);
			const char *stop = line + llen;
			if (!f)
				return false;
			f++;
			const char *f_end = memchr(f, ':', (size_t)(stop - f));
			if (!f_end)
				f_end = stop;
			if (!parse_id(f, (size_t)(f_end - f), id))
				return false;
			if (!gid)
				return true;
			if (f_end == stop)
				return false;
			const char *g = f_end + 1;
			const char *g_end = memchr(g, ':', (size_t)(stop - g));
			return parse_id(g, (size_t)((g_end ? g_end : stop) - g), gid);
		}
		line = end ? end + 1 : NULL;
	}
	return false;
}

static int lookup(const char *file, const char *name, size_t nlen, const char *const *layers,
		  size_t nlayers, uint32_t *id, uint32_t *gid, struct sc_err *err)
{
	err->errnum = 0;
	err->msg[0] = '\0';
	_cleanup_free_ char *text = read_etc_file(file, layers, nlayers, err);
	if (!text && err->msg[0])
		return -1;
	if (!text || !find_entry(text, name, nlen, id, gid))
		return user_fail(err, ENOENT, "%s '%.*s' is not in the image's /etc/%s (give a number, "
					    "e.g. --user 1000:1000)",
			       gid ? "user" : "group", (int)nlen, name, file);
	return 0;
}

int cell_resolve_user(const char *s, const char *const *layers, size_t nlayers, uint32_t *uid,
		      uint32_t *gid, struct sc_err *err)
{
	size_t len = s ? strnlen(s, USER_MAX_LEN) : 0;
	if (len >= USER_MAX_LEN)
		return user_fail(err, EINVAL, "longer than %d characters", USER_MAX_LEN - 1);
	const char *colon = len ? memchr(s, ':', len) : NULL;
	size_t ulen = colon ? (size_t)(colon - s) : len;
	uint32_t u = 0, g = 0, pg = 0;
	bool u_num = parse_id(s, ulen, &u);
	if (!u_num && !valid_name(s, ulen))
		return user_fail(err, EINVAL, "expected UID[:GID] or NAME[:GROUP], got '%.64s'",
			       s ? s : "");
	if (!u_num && lookup("passwd", s, ulen, layers, nlayers, &u, &pg, err) < 0)
		return -1;
	if (!colon) {
		*uid = u;
		*gid = u_num ? u : pg;
		return 0;
	}
	const char *gs = colon + 1;
	size_t glen = len - ulen - 1;
	if (!parse_id(gs, glen, &g)) {
		if (!valid_name(gs, glen))
			return user_fail(err, EINVAL, "expected UID[:GID] or NAME[:GROUP], got '%.64s'", s);
		if (lookup("group", gs, glen, layers, nlayers, &g, NULL, err) < 0)
			return -1;
	}
	*uid = u;
	*gid = g;
	return 0;
}

int rt_user_check_map(uint32_t uid, uint32_t gid, const struct idmap *map, struct sc_err *err)
{
	char hint[160];
	if (map->range)
		snprintf(hint, sizeof(hint), "this cell maps ids 0 to %u; pick one of them",
			 map->count - 1);
	else
		snprintf(hint, sizeof(hint), "rootless cells map only 0; run sandcell as root for "
					     "a cell with a range of ids, or use --user 0");
	if (uid >= map->count) {
		user_fail(err, EINVAL, "uid %u is not mapped in this cell", uid);
		sc_err_hint(err, hint);
		return -1;
	}
	if (gid >= map->count) {
		user_fail(err, EINVAL, "gid %u is not mapped in this cell", gid);
		sc_err_hint(err, hint);
		return -1;
	}
	return 0;
}

int cell_user_check(uint32_t uid, uint32_t gid, struct sc_err *err)
{
	struct idmap map;
	if (rt_idmap_for_caller(&map, err) < 0)
		return -1;
	return rt_user_check_map(uid, gid, &map, err);
}
