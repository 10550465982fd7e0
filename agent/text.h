/* Text helpers for what goes to the model and to disk (the growable
 * buffer is common/sbuf.h): UTF-8 sanitising, head+tail line truncation, character caps. Pure. */
#pragma once
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "../common/sbuf.h"

/* A copy of s[0..len) that is valid UTF-8 without NUL bytes: invalid
 * sequences and NULs become U+FFFD. */
char *agent_text_sanitize(const char *s, size_t len, size_t *out_len);

/* When s has more than max_lines lines, keep the first `head` and the last
 * `tail` lines with one line between them saying how many were cut.
 * Returns a new string. */
char *agent_text_truncate_lines(const char *s, size_t len, size_t max_lines, size_t head,
			  size_t tail);

/* Longest prefix of s[0..len) of at most max bytes that does not split a
 * UTF-8 sequence. */
size_t agent_text_utf8_prefix(const char *s, size_t len, size_t max);

/* The length of s[0..len) without a UTF-8 sequence cut off at its end
 * (a lead byte followed by fewer continuation bytes than it announces). */
size_t agent_text_utf8_whole(const char *s, size_t len);

/* When s is longer than max bytes, keep head and tail parts (cut on UTF-8
 * boundaries) joined by a note saying how many characters were cut. */
char *agent_text_cap_middle(const char *s, size_t len, size_t max);

/* Replace every occurrence of secret (when at least 8 bytes) in s, in place,
 * with '*'; returns how many were found. */
size_t agent_text_redact(char *s, size_t len, const char *secret);

/* Make every string in the tree v (values and keys, v's siblings and
 * children) valid UTF-8 and blank out the secret in each, in place, on the
 * raw values: the one pass for what leaves the process as JSON. */
typedef struct cJSON cJSON;
void agent_json_scrub(cJSON *v, const char *secret);

/* s[0..len) for a terminal: \n \r \t become spaces, every other control
 * character (C0, DEL, C1) is shown as \xHH, cut on a UTF-8 boundary to fit
 * outsize (always NUL-terminated). */
void agent_text_escape_controls(const char *s, size_t len, char *out, size_t outsize);
