/* See sbuf.h. */
#include "sbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool sbuf_reserve(struct sc_sbuf *b, size_t extra)
{
	if (b->oom)
		return false;
	if (b->len + extra + 1 <= b->cap)
		return true;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + extra + 1) {
		if (cap > ((size_t)-1) / 2) {
			b->oom = true;
			return false;
		}
		cap *= 2;
	}
	char *n = realloc(b->s, cap);
	if (!n) {
		b->oom = true;
		return false;
	}
	b->s = n;
	b->cap = cap;
	return true;
}

void sc_sbuf_add(struct sc_sbuf *b, const char *s, size_t len)
{
	if (!sbuf_reserve(b, len))
		return;
	if (len)
		memcpy(b->s + b->len, s, len);
	b->len += len;
	b->s[b->len] = '\0';
}

void sc_sbuf_adds(struct sc_sbuf *b, const char *s) { sc_sbuf_add(b, s, strlen(s)); }

void sc_sbuf_printf(struct sc_sbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !sbuf_reserve(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

char *sc_sbuf_take(struct sc_sbuf *b)
{
	if (b->oom) {
		sc_sbuf_free(b);
		return NULL;
	}
	if (!b->s)
		sc_sbuf_add(b, "", 0);
	char *s = b->s;
	*b = (struct sc_sbuf){0};
	return s;
}

void sc_sbuf_free(struct sc_sbuf *b)
{
	free(b->s);
	*b = (struct sc_sbuf){0};
}
