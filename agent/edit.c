#include "edit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t agent_edit_line_count(const char *s, size_t len)
{
	size_t n = 0;
	for (const char *p = s; (p = memchr(p, '\n', (size_t)(s + len - p))); p++)
		n++;
	if (len && s[len - 1] != '\n')
		n++;
	return n;
}

size_t agent_edit_count(const char *hay, size_t hlen, const char *needle, size_t nlen)
{
	size_t n = 0;
	const char *p = hay, *end = hay + hlen;
	if (!nlen)
		return 0;
	while ((p = memmem(p, (size_t)(end - p), needle, nlen))) {
		n++;
		p += nlen;
	}
	return n;
}

static size_t count_newlines(const char *s, size_t len)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		n += s[i] == '\n';
	return n;
}

char *agent_edit_replace(const char *s, size_t len, const char *old, size_t olen, const char *new,
		   size_t nlen, size_t *out_len, size_t *line)
{
	const char *at = olen ? memmem(s, len, old, olen) : NULL;
	if (!at)
		return NULL;
	size_t pre = (size_t)(at - s);
	struct sc_sbuf b = {0};
	sc_sbuf_add(&b, s, pre);
	sc_sbuf_add(&b, new, nlen);
	sc_sbuf_add(&b, at + olen, len - pre - olen);
	*line = count_newlines(s, pre) + 1;
	*out_len = b.len;
	return sc_sbuf_take(&b);
}

char *agent_edit_insert(const char *s, size_t len, size_t after, const char *text, size_t tlen,
		  size_t *out_len)
{
	size_t off = 0, seen = 0;
	while (off < len && seen < after)
		if (s[off++] == '\n')
			seen++;
	struct sc_sbuf b = {0};
	sc_sbuf_add(&b, s, off);
	/* appending after a last line that has no newline: end it first */
	if (off > 0 && s[off - 1] != '\n')
		sc_sbuf_add(&b, "\n", 1);
	sc_sbuf_add(&b, text, tlen);
	if (tlen == 0 || text[tlen - 1] != '\n')
		sc_sbuf_add(&b, "\n", 1);
	sc_sbuf_add(&b, s + off, len - off);
	*out_len = b.len;
	return sc_sbuf_take(&b);
}

void agent_edit_number_lines(struct sc_sbuf *b, const char *s, size_t len, size_t first, size_t last)
{
	size_t lineno = 1;
	const char *p = s, *end = s + len;
	while (p < end && lineno <= last) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		if (lineno >= first) {
			sc_sbuf_printf(b, "%6zu\t", lineno);
			sc_sbuf_add(b, p, (size_t)(eol - p));
			sc_sbuf_add(b, "\n", 1);
		}
		lineno++;
		p = nl ? nl + 1 : end;
	}
}

int agent_edit_check_range(long start, long end, size_t lines, char *msg, size_t msgsize)
{
	if (start < 1 || (size_t)start > lines) {
		snprintf(msg, msgsize,
			 "Invalid view_range [%ld, %ld]: the first element must be a line number from 1 to %zu.",
			 start, end, lines);
		return -1;
	}
	if (end != -1 && (end < start || (size_t)end > lines)) {
		snprintf(msg, msgsize,
			 "Invalid view_range [%ld, %ld]: the second element must be -1 (to the end) or a line number from %ld to %zu.",
			 start, end, start, lines);
		return -1;
	}
	return 0;
}
