/* A tar reader: POSIX ustar, pax extended headers ('x'; 'g' is ignored),
 * GNU long names ('L', 'K') and base-256 numbers. Everything read is
 * treated as hostile: fields are bounded, numbers range-checked, checksums
 * verified; names are returned raw and checked by the extractor. */
#include <string.h>

#include "internal.h"

#define BLOCK 512
#define PAX_MAX (1024 * 1024)

void rootfs_tar_init(struct tar_reader *t, struct stream *in)
{
	memset(t, 0, sizeof(*t));
	t->in = in;
}

static int read_exact(struct tar_reader *t, void *buf, size_t len, struct sc_err *err)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = rootfs_stream_read(t->in, (char *)buf + got, len - got, err);
		if (n < 0)
			return -1;
		if (n == 0)
			return sc_fail(err, 0, "the tar archive is truncated");
		got += (size_t)n;
	}
	t->offset += len;
	return 0;
}

static int skip(struct tar_reader *t, uint64_t len, struct sc_err *err)
{
	if (rootfs_stream_skip(t->in, len, err) < 0)
		return -1;
	t->offset += len;
	return 0;
}

/* Octal (NUL/space padded) or base-256 (high bit of the first byte). */
static int parse_num(const char *f, size_t len, uint64_t max, uint64_t *out)
{
	const unsigned char *p = (const unsigned char *)f;
	uint64_t v = 0;
	if (p[0] & 0x80) {
		if (p[0] == 0xff)
			return -1; /* negative */
		v = p[0] & 0x7f;
		for (size_t i = 1; i < len; i++) {
			if (v > (UINT64_MAX >> 8))
				return -1;
			v = v << 8 | p[i];
		}
	} else {
		size_t i = 0;
		while (i < len && p[i] == ' ')
			i++;
		for (; i < len && p[i] >= '0' && p[i] <= '7'; i++) {
			if (v > (UINT64_MAX >> 3))
				return -1;
			v = v << 3 | (uint64_t)(p[i] - '0');
		}
		if (i < len && p[i] != ' ' && p[i] != '\0')
			return -1;
	}
	if (v > max)
		return -1;
	*out = v;
	return 0;
}

static bool checksum_ok(const unsigned char *h)
{
	uint64_t want;
	if (parse_num((const char *)h + 148, 8, UINT32_MAX, &want) < 0)
		return false;
	uint64_t usum = 0;
	int64_t ssum = 0;
	for (int i = 0; i < BLOCK; i++) {
		unsigned char c = (i >= 148 && i < 156) ? ' ' : h[i];
		usum += c;
		ssum += (signed char)c;
	}
	return usum == want || (uint64_t)ssum == want;
}

static void copy_field(char *dst, const char *src, size_t len)
{
	size_t n = strnlen(src, len);
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* Values from pax and GNU headers that override the next entry's. */
struct overrides {
	bool has_path, has_link, has_size, has_uid, has_gid, has_mtime;
	char path[TAR_PATH_MAX], link[TAR_PATH_MAX];
	uint64_t size, uid, gid;
	int64_t mtime;
};

static int read_long_name(struct tar_reader *t, uint64_t size, char *dst, struct sc_err *err)
{
	if (size == 0 || size >= TAR_PATH_MAX)
		return sc_fail(err, 0, "tar: a long name of %llu bytes (at most %d)",
			       (unsigned long long)size, TAR_PATH_MAX - 1);
	if (read_exact(t, dst, (size_t)size, err) < 0)
		return -1;
	dst[size] = '\0';
	if (strlen(dst) != size && strlen(dst) != size - 1)
		return sc_fail(err, 0, "tar: a long name contains a NUL byte");
	return skip(t, (BLOCK - size % BLOCK) % BLOCK, err);
}

static int pax_value(struct overrides *o, const char *key, const char *val, size_t vlen,
		     struct sc_err *err)
{
	bool is_path = !strcmp(key, "path"), is_link = !strcmp(key, "linkpath");
	if (is_path || is_link) {
		if (vlen == 0 || vlen >= TAR_PATH_MAX || memchr(val, '\0', vlen))
			return sc_fail(err, 0, "tar: bad pax %s (empty, too long or with NUL)", key);
		char *dst = is_path ? o->path : o->link;
		memcpy(dst, val, vlen);
		dst[vlen] = '\0';
		*(is_path ? &o->has_path : &o->has_link) = true;
		return 0;
	}
	char num[32];
	if (vlen == 0 || vlen >= sizeof(num))
		return 0;
	memcpy(num, val, vlen);
	num[vlen] = '\0';
	char *end;
	if (!strcmp(key, "size") || !strcmp(key, "uid") || !strcmp(key, "gid")) {
		errno = 0;
		unsigned long long v = strtoull(num, &end, 10);
		if (errno || *end || num[0] == '-')
			return sc_fail(err, 0, "tar: bad pax %s '%s'", key, num);
		if (!strcmp(key, "size"))
			o->size = v, o->has_size = true;
		else if (v > UINT32_MAX)
			return sc_fail(err, 0, "tar: pax %s %llu out of range", key, v);
		else if (!strcmp(key, "uid"))
			o->uid = v, o->has_uid = true;
		else
			o->gid = v, o->has_gid = true;
	} else if (!strcmp(key, "mtime")) {
		errno = 0;
		long long v = strtoll(num, &end, 10); /* fraction ignored */
		if (errno == 0 && (*end == '\0' || *end == '.'))
			o->mtime = v, o->has_mtime = true;
	}
	return 0;
}

static int read_pax(struct tar_reader *t, uint64_t size, struct overrides *o, struct sc_err *err)
{
	if (size > PAX_MAX)
		return sc_fail(err, 0, "tar: a pax header of %llu bytes (at most %d)",
			       (unsigned long long)size, PAX_MAX);
	_cleanup_free_ char *buf = malloc(size + 1);
	if (!buf)
		return sc_fail(err, ENOMEM, "tar: pax header");
	if (read_exact(t, buf, (size_t)size, err) < 0 ||
	    skip(t, (BLOCK - size % BLOCK) % BLOCK, err) < 0)
		return -1;
	buf[size] = '\0';
	size_t pos = 0;
	while (pos < size) {
		/* "LEN KEY=VALUE\n", LEN counting the whole record. */
		size_t len = 0, i = pos;
		while (i < size && buf[i] >= '0' && buf[i] <= '9' && len < PAX_MAX)
			len = len * 10 + (size_t)(buf[i++] - '0');
		if (i >= size || buf[i] != ' ' || len <= i - pos + 1 || len > size - pos ||
		    buf[pos + len - 1] != '\n')
			return sc_fail(err, 0, "tar: malformed pax header");
		char *rec = buf + i + 1, *end = buf + pos + len - 1;
		char *eq = memchr(rec, '=', (size_t)(end - rec));
		if (!eq)
			return sc_fail(err, 0, "tar: malformed pax record");
		*eq = '\0';
		if (pax_value(o, rec, eq + 1, (size_t)(end - eq - 1), err) < 0)
			return -1;
		pos += len;
	}
	return 0;
}

static enum tar_type type_of(char flag, const char *name)
{
	switch (flag) {
	case '0':
	case '\0':
	case '7':
		/* Pre-POSIX archives mark directories by a trailing slash. */
		return (name[0] && name[strlen(name) - 1] == '/') ? TAR_DIR : TAR_FILE;
	case '1':
		return TAR_HARDLINK;
	case '2':
		return TAR_SYMLINK;
	case '3':
		return TAR_CHAR;
	case '4':
		return TAR_BLOCK;
	case '5':
	case 'D':
		return TAR_DIR;
	case '6':
		return TAR_FIFO;
	default:
		return TAR_OTHER;
	}
}

int rootfs_tar_next(struct tar_reader *t, struct tar_entry *e, struct sc_err *err)
{
	/* Skip what the caller left of the previous entry. */
	if ((t->left || t->pad) && skip(t, t->left + t->pad, err) < 0)
		return -1;
	t->left = t->pad = 0;
	struct overrides o;
	memset(&o, 0, sizeof(o));
	for (int headers = 0; headers < 16; headers++) {
		unsigned char h[BLOCK];
		if (read_exact(t, h, BLOCK, err) < 0)
			return -1;
		static const unsigned char zero[BLOCK];
		if (!memcmp(h, zero, BLOCK))
			return 0; /* end of archive (the rest is drained by the caller) */
		if (!checksum_ok(h))
			return sc_fail(err, 0, "tar: bad header checksum at offset %llu (not a tar archive?)",
				       (unsigned long long)(t->offset - BLOCK));
		uint64_t size;
		if (parse_num((char *)h + 124, 12, INT64_MAX, &size) < 0)
			return sc_fail(err, 0, "tar: bad size field");
		char flag = (char)h[156];
		if (flag == 'x' && o.has_size)
			return sc_fail(err, 0, "tar: two pax headers for one entry");
		if (flag == 'x' || flag == 'g') {
			if (flag == 'x' ? read_pax(t, size, &o, err) < 0
					: skip(t, size + (BLOCK - size % BLOCK) % BLOCK, err) < 0)
				return -1;
			continue;
		}
		if (flag == 'L' || flag == 'K') {
			if (read_long_name(t, size, flag == 'L' ? o.path : o.link, err) < 0)
				return -1;
			if (flag == 'L' && !o.has_path)
				o.has_path = true;
			else if (flag == 'K' && !o.has_link)
				o.has_link = true;
			continue;
		}
		if (flag == 'S' || flag == 'M')
			return sc_fail(err, 0, "tar: GNU sparse or multi-volume entries are not supported");
		memset(e, 0, sizeof(*e));
		bool posix = !memcmp(h + 257, "ustar\0", 6);
		if (o.has_path) {
			snprintf(e->path, sizeof(e->path), "%s", o.path);
		} else {
			char name[101], prefix[156];
			copy_field(name, (char *)h, 100);
			copy_field(prefix, posix ? (char *)h + 345 : "", 155);
			if (prefix[0])
				snprintf(e->path, sizeof(e->path), "%s/%s", prefix, name);
			else
				snprintf(e->path, sizeof(e->path), "%s", name);
		}
		if (o.has_link)
			snprintf(e->link, sizeof(e->link), "%s", o.link);
		else
			copy_field(e->link, (char *)h + 157, 100);
		uint64_t mode, uid, gid, mtime;
		if (parse_num((char *)h + 100, 8, 07777777, &mode) < 0 ||
		    parse_num((char *)h + 108, 8, UINT32_MAX, &uid) < 0 ||
		    parse_num((char *)h + 116, 8, UINT32_MAX, &gid) < 0 ||
		    parse_num((char *)h + 136, 12, INT64_MAX, &mtime) < 0)
			return sc_fail(err, 0, "tar: bad numeric field in '%.200s'", e->path);
		e->type = type_of(flag, e->path);
		e->mode = (uint32_t)mode & 07777;
		e->size = o.has_size ? o.size : size;
		e->uid = (uint32_t)(o.has_uid ? o.uid : uid);
		e->gid = (uint32_t)(o.has_gid ? o.gid : gid);
		e->mtime = o.has_mtime ? o.mtime : (int64_t)mtime;
		/* Links, directories and devices carry no content. */
		if (e->type == TAR_HARDLINK || e->type == TAR_SYMLINK || e->type == TAR_DIR ||
		    e->type == TAR_CHAR || e->type == TAR_BLOCK || e->type == TAR_FIFO) {
			if (e->type != TAR_DIR || flag != 'D')
				e->size = 0;
		}
		e->data_offset = t->offset;
		t->left = e->size;
		t->pad = (BLOCK - e->size % BLOCK) % BLOCK;
		return 1;
	}
	return sc_fail(err, 0, "tar: too many extended headers for one entry");
}

ssize_t rootfs_tar_read(struct tar_reader *t, void *buf, size_t len, struct sc_err *err)
{
	if (len > t->left)
		len = (size_t)t->left;
	if (len == 0)
		return 0;
	ssize_t n = rootfs_stream_read(t->in, buf, len, err);
	if (n < 0)
		return -1;
	if (n == 0)
		return sc_fail(err, 0, "the tar archive is truncated");
	t->left -= (uint64_t)n;
	t->offset += (uint64_t)n;
	return n;
}
