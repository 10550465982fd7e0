/* Base64 (RFC 4648): the one encoder and the one decoder. */
#pragma once
#include <stddef.h>

/* n bytes of p as a malloc'd, NUL-terminated base64 string (NULL when out
 * of memory); *out_len (may be NULL) gets its length. */
char *sc_base64_encode(const void *p, size_t n, size_t *out_len);

/* The len bytes of s decoded into a malloc'd buffer (*out, NUL-terminated
 * for convenience; the data may hold NULs), *out_len bytes long. Both
 * alphabets are read (standard "+/" and URL-safe "-_"), ASCII whitespace
 * is skipped, padding may be left out, and the first '=' ends the data
 * (what follows it is not read, as Python's b64decode does). A byte
 * outside the alphabet, or a last group of one character (6 bits, less
 * than a byte), is an error: -1 with errno EINVAL (ENOMEM when out of
 * memory), *out NULL. Pure, thread-safe. */
int sc_base64_decode(const char *s, size_t len, char **out, size_t *out_len);
