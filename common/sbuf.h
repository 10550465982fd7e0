/* A growable NUL-terminated string. Out of memory is remembered (oom)
 * and later additions are dropped, so a builder checks once, at the end
 * (sc_sbuf_take returns NULL). Pure: no hidden state. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

struct sc_sbuf {
	char *s;    /* NUL-terminated once anything was added */
	size_t len;
	size_t cap;
	bool oom;   /* an allocation failed; contents are incomplete */
};

void sc_sbuf_add(struct sc_sbuf *b, const char *s, size_t len);
void sc_sbuf_adds(struct sc_sbuf *b, const char *s);
void sc_sbuf_printf(struct sc_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Take the string (never NULL unless out of memory); b is reset. */
char *sc_sbuf_take(struct sc_sbuf *b);
void sc_sbuf_free(struct sc_sbuf *b);
