#include "capture.h"
#include "sc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int sc_capture_init(struct capture *c, size_t limit)
{
	memset(c, 0, sizeof(*c));
	c->limit = limit;
	size_t head_cap = limit / 2;
	c->tail_cap = limit - head_cap;
	c->head = malloc(head_cap + 1);
	c->tail = malloc(c->tail_cap + 1);
	if (!c->head || !c->tail) {
		sc_capture_free(c);
		return -1;
	}
	return 0;
}

void sc_capture_add(struct capture *c, const char *data, size_t len)
{
	c->total += len;
	size_t head_cap = c->limit / 2;
	size_t to_head = head_cap - c->head_len;
	if (to_head > len)
		to_head = len;
	memcpy(c->head + c->head_len, data, to_head);
	c->head_len += to_head;
	data += to_head;
	len -= to_head;
	if (len == 0 || c->tail_cap == 0)
		return;
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

bool sc_capture_truncated(const struct capture *c) { return c->total > c->limit; }

char *sc_capture_take(const struct capture *c, size_t *len)
{
	size_t n = c->head_len + c->tail_len;
	char *out = malloc(n + 1);
	if (!out)
		return NULL;
	memcpy(out, c->head, c->head_len);
	size_t start = c->tail_len < c->tail_cap ? 0 : c->tail_pos;
	size_t first = c->tail_len < c->tail_cap ? c->tail_len : c->tail_cap - start;
	memcpy(out + c->head_len, c->tail + start, first);
	memcpy(out + c->head_len + first, c->tail, c->tail_len - first);
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
	if (!c->head)
		return;
	*out = sc_capture_take(c, len);
	*truncated = sc_capture_truncated(c);
}
