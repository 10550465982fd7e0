/* Base64 encoding and decoding (see base64.h). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "base64.h"

char *sc_base64_encode(const void *data, size_t n, size_t *out_len)
{
	static const char ALPHABET[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *p = data;
	if (n > (SIZE_MAX - 1) / 4 * 3 - 3)
		return NULL;
	char *out = malloc((n + 2) / 3 * 4 + 1), *w = out;
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) |
			     (i + 2 < n ? p[i + 2] : 0);
		*w++ = ALPHABET[v >> 18 & 63];
		*w++ = ALPHABET[v >> 12 & 63];
		*w++ = i + 1 < n ? ALPHABET[v >> 6 & 63] : '=';
		*w++ = i + 2 < n ? ALPHABET[v & 63] : '=';
	}
	*w = '\0';
	if (out_len)
		*out_len = (size_t)(w - out);
	return out;
}

/* The 6-bit value of c in either alphabet, -1 outside them. */
static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

int sc_base64_decode(const char *s, size_t len, char **out, size_t *out_len)
{
	*out = NULL;
	*out_len = 0;
	char *buf = malloc(len / 4 * 3 + 3);
	if (!buf) {
		errno = ENOMEM;
		return -1;
	}
	size_t o = 0, chars = 0;
	unsigned acc = 0;
	int bits = 0;
	for (size_t i = 0; i < len && s[i] != '='; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v')
			continue;
		int v = b64_value(c);
		if (v < 0)
			goto bad;
		chars++;
		acc = (acc << 6 | (unsigned)v) & 0xffffff;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			buf[o++] = (char)(acc >> bits & 0xff);
		}
	}
	if (chars % 4 == 1)
		goto bad; /* six bits cannot make a byte */
	buf[o] = '\0';
	*out = buf;
	*out_len = o;
	return 0;
bad:
	free(buf);
	errno = EINVAL;
	return -1;
}
