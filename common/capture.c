#include "capture.h"
#include "sc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void sc_capture_init(struct capture *c, size_t limit)
{
	memset(c, 0, sizeof(*c));
	c->limit = limit;
	c->tail_cap = limit - limit / 2;
	c->ready = true;
}

#define HEAD_FIRST 4096

/* Room for need bytes in the head (need <= limit/2). */
static bool head_room(struct capture *c, size_t need)
{
	if (need <= c->head_size)
		return true;
	size_t cap = c->limit / 2, size = c->head_size ? c->head_size : HEAD_FIRST;
	while (size < need && size < cap)
		size *= 2;
	if (size > cap)
		size = cap;
	char *p = realloc(c->head, size);
	if (!p)
		return false;
	c->head = p;
	c->head_size = size;
	return true;
}

void sc_capture_add(struct capture *c, const char *data, size_t len)
{
	c->total += len;
	size_t to_head = c->limit / 2 - c->head_len;
	if (to_head > len)
		to_head = len;
	if (to_head) {
		if (!head_room(c, c->head_len + to_head)) {
			c->lost = true;
			return;
		}
		memcpy(c->head + c->head_len, data, to_head);
		c->head_len += to_head;
		data += to_head;
		len -= to_head;
	}
	if (len == 0 || c->tail_cap == 0)
		return;
	if (!c->tail && !(c->tail = malloc(c->tail_cap))) {
		c->lost = true;
		return;
	}
	if (len >= c->tail_cap) {
		memcpy(c->tail, data + len - c->tail_cap, c->tail_cap);
		c->tail_pos = 0;
		c->tail_len = c->tail_cap;
		return;
	}
	size_t first = c->tail_cap - c->tail_pos;
	if (first > len)
		first = len;
	memcpy(c->tail + c->tail_pos, data, first);
	memcpy(c->tail, data + first, len - first);
	c->tail_pos = (c->tail_pos + len) % c->tail_cap;
	c->tail_len = c->tail_len + len > c->tail_cap ? c->tail_cap : c->tail_len + len;
}

bool sc_capture_truncated(const struct capture *c) { return c->total > c->limit || c->lost; }

char *sc_capture_take(const struct capture *c, size_t *len)
{
	size_t n = c->head_len + c->tail_len;
	char *out = malloc(n + 1);
	if (!out)
		return NULL;
	if (c->head_len)
		memcpy(out, c->head, c->head_len);
	if (c->tail_len) {
		size_t start = c->tail_len < c->tail_cap ? 0 : c->tail_pos;
		size_t first = c->tail_len < c->tail_cap ? c->tail_len : c->tail_cap - start;
		memcpy(out + c->head_len, c->tail + start, first);
		memcpy(out + c->head_len + first, c->tail, c->tail_len - first);
	}
	out[n] = '\0';
	if (len)
		*len = n;
	return out;
}

void sc_capture_free(struct capture *c)
{
	free(c->head);
	free(c->tail);
	c->head = c->tail = NULL;
	c->head_size = 0;
	c->ready = false;
}

void sc_capture_read_fd(struct capture *c, int *fd)
{
	char buf[65536];
	ssize_t n = read(*fd, buf, sizeof(buf));
	if (n > 0)
		sc_capture_add(c, buf, (size_t)n);
	else if (n == 0 || (errno != EINTR && errno != EAGAIN))
		sc_closep(fd);
}

void sc_capture_result(const struct capture *c, char **out, size_t *len, bool *truncated)
{
	if (!c->ready)
		return;
	*out = sc_capture_take(c, len);
	*truncated = sc_capture_truncated(c);
}
