/* Base64 encoding (see base64.h). */
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
