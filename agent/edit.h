/* The text operations behind str_replace_editor, on file contents held in
 * memory. Pure: reading and writing the file happens in the cell. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "text.h"

#define EDIT_SNIPPET_LINES 4

/* Number of lines: newlines, plus one for a last line without one. */
size_t agent_edit_line_count(const char *s, size_t len);

/* Non-overlapping occurrences of needle (nlen > 0) in hay. */
size_t agent_edit_count(const char *hay, size_t hlen, const char *needle, size_t nlen);

/* Replace the one occurrence of old with new. Returns the new contents and
 * the 1-based line where the replacement starts; NULL when out of memory. */
char *agent_edit_replace(const char *s, size_t len, const char *old, size_t olen, const char *new,
		   size_t nlen, size_t *out_len, size_t *line);

/* Insert text after line `after` (0 = at the top; must be <= line count).
 * The inserted text becomes whole lines. NULL when out of memory. */
char *agent_edit_insert(const char *s, size_t len, size_t after, const char *text, size_t tlen,
		  size_t *out_len);

/* Append lines [first, last] (1-based, inclusive, last clamped to the line
 * count) of s to b, each as "%6zu\t<line>\n" like `cat -n`. */
void agent_edit_number_lines(struct sc_sbuf *b, const char *s, size_t len, size_t first, size_t last);

/* Check a view_range against a file of `lines` lines: start in [1, lines],
 * end == -1 or in [start, lines]. On error, fills msg and returns -1. */
int agent_edit_check_range(long start, long end, size_t lines, char *msg, size_t msgsize);
