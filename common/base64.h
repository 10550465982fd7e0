/* Base64 (RFC 4648, with padding): the one encoder. */
#pragma once
#include <stddef.h>

/* n bytes of p as a malloc'd, NUL-terminated base64 string (NULL when out
 * of memory); *out_len (may be NULL) gets its length. */
char *sc_base64_encode(const void *p, size_t n, size_t *out_len);
