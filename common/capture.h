/* A bounded output capture that keeps the head and the tail of a stream. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The buffers grow as output comes: most commands print little, and a
 * limit's worth of memory set aside per stream and per exec cost more
 * than the command (allocations of limit/2 grew and trimmed the heap on
 * every exec of a server). The head grows by doubling up to limit/2; the
 * tail ring is made whole the first time output goes past the head. */
struct capture {
	char *head;       /* the first limit/2 bytes */
	size_t head_len;
	size_t head_size; /* allocated */
	char *tail;       /* ring of the last limit - limit/2 bytes (NULL until needed) */
	size_t tail_cap;
	size_t tail_pos;  /* next write position in the ring */
	size_t tail_len;
	uint64_t total;   /* bytes seen */
	size_t limit;
	bool ready;       /* set up (sc_capture_init) and not freed */
	bool lost;        /* output dropped for want of memory: reported as cut */
};

/* Nothing is allocated before output comes. */
void sc_capture_init(struct capture *c, size_t limit);
void sc_capture_add(struct capture *c, const char *data, size_t len);
bool sc_capture_truncated(const struct capture *c);
/* A newly allocated NUL-terminated copy of what was kept (head + tail);
 * *len gets its length. */
char *sc_capture_take(const struct capture *c, size_t *len);
void sc_capture_free(struct capture *c);
/* Read once from *fd into c; at EOF or an error *fd is closed and set to -1. */
void sc_capture_read_fd(struct capture *c, int *fd);
/* What was kept, for a result: *out (malloc'd, or left alone when c was
 * never set up), its length and whether the stream was cut. */
void sc_capture_result(const struct capture *c, char **out, size_t *len, bool *truncated);
