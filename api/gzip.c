/* gzip bodies (RFC 1952) for the file routes: a request body sent with
 * Content-Encoding: gzip is inflated with a cap on what it may become (a
 * small body may inflate to gigabytes), and a response is deflated for a
 * client whose Accept-Encoding takes gzip. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "api_priv.h"

#define GZIP_WBITS (16 + MAX_WBITS) /* a gzip header and trailer only */

int api_gunzip(const char *in, size_t len, size_t max, char **out, size_t *out_len)
{
	*out = NULL;
	*out_len = 0;
	z_stream z = {0};
	if (inflateInit2(&z, GZIP_WBITS) != Z_OK)
		return 500;
	size_t cap = len < 65536 ? 65536 : len * 2, used = 0;
	if (cap > max + 1)
		cap = max + 1;
	char *buf = malloc(cap + 1);
	int st = buf ? 0 : 500, zr = Z_OK;
	z.next_in = (Bytef *)in;
	while (!st && zr != Z_STREAM_END) {
		if (used == cap) { /* full: grow, or it is over max */
			size_t more = cap * 2 > max + 1 ? max + 1 : cap * 2;
			char *nb = more > cap ? realloc(buf, more + 1) : NULL;
			if (!nb) {
				st = more > cap ? 500 : 413;
				break;
			}
			buf = nb;
			cap = more;
		}
		/* zlib counts in uInt: feed and take at most 1 GiB at a time */
		size_t left_in = len - (size_t)((const char *)z.next_in - in);
		z.avail_in = (uInt)(left_in < (1u << 30) ? left_in : (1u << 30));
		z.next_out = (Bytef *)buf + used;
		z.avail_out = (uInt)(cap - used < (1u << 30) ? cap - used : (1u << 30));
		size_t before = z.avail_out;
		zr = inflate(&z, Z_NO_FLUSH);
		used += before - z.avail_out;
		if (zr == Z_BUF_ERROR && z.avail_in == 0 && used < cap)
			st = 400; /* the body ends before the gzip stream does */
		else if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR)
			st = zr == Z_MEM_ERROR ? 500 : 400;
	}
	if (!st && used > max)
		st = 413;
	/* one gzip member, and nothing after it */
	if (!st && (const char *)z.next_in != in + len)
		st = 400;
	inflateEnd(&z);
	if (st) {
		free(buf);
		return st;
	}
	buf[used] = '\0';
	*out = buf;
	*out_len = used;
	return 0;
}

bool api_gzip(const char *in, size_t len, char **out, size_t *out_len)
{
	*out = NULL;
	z_stream z = {0};
	if (len > (1u << 30) || deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, GZIP_WBITS, 8,
					     Z_DEFAULT_STRATEGY) != Z_OK)
		return false;
	uLong cap = deflateBound(&z, (uLong)len);
	char *buf = malloc(cap);
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	z.next_out = (Bytef *)buf;
	z.avail_out = (uInt)cap;
	bool ok = buf && deflate(&z, Z_FINISH) == Z_STREAM_END;
	*out_len = cap - z.avail_out;
	deflateEnd(&z);
	if (!ok) {
		free(buf);
		return false;
	}
	*out = buf;
	return true;
}

bool api_accepts_gzip(const char *accept_encoding)
{
	/* "gzip", "deflate, gzip;q=1.0", "*": gzip unless its q is 0 */
	const char *p = accept_encoding;
	while (p && *p) {
		p += strspn(p, " \t,");
		size_t n = strcspn(p, " \t,;");
		bool named = (n == 4 && !strncasecmp(p, "gzip", 4)) || (n == 1 && *p == '*');
		const char *end = p + strcspn(p, ",");
		if (named) {
			const char *q = strchr(p, ';');
			if (!q || q > end)
				return true;
			q += 1 + strspn(q + 1, " \t");
			if (strncasecmp(q, "q=", 2))
				return true;
			return strtod(q + 2, NULL) > 0;
		}
		p = end;
	}
	return false;
}
