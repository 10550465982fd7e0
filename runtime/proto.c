/* The init's request decoder (proto.h), kept apart from the server so that
 * it can be tested and fuzzed on its own. Pure. */
#include "proto.h"

#include <string.h>

/* Split the strings after the header; every one must be NUL-terminated
 * inside the message. */
static int parse_strings(struct proto_request *q, char *data, size_t len)
{
	uint32_t want = q->h.argc + q->h.envc + 1;
	if (q->h.argc > PROTO_MAX_ARGS || q->h.envc > CELL_MAX_ENV)
		return -1;
	size_t off = 0;
	for (uint32_t k = 0; k < want; k++) {
		char *end = memchr(data + off, '\0', len - off);
		if (!end)
			return -1;
		char *str = data + off;
		if (k < q->h.argc)
			q->argv[k] = str;
		else if (k < q->h.argc + q->h.envc)
			q->env[k - q->h.argc] = str;
		else
			q->path = str;
		off = (size_t)(end - data) + 1;
	}
	q->argv[q->h.argc] = NULL;
	q->env[q->h.envc] = NULL;
	return off == len ? 0 : -1;
}

int rt_proto_decode_request(char *msg, size_t len, struct proto_request *q)
{
	if (len < sizeof(q->h))
		return -1;
	memcpy(&q->h, msg, sizeof(q->h));
	if (q->h.data_len != len - sizeof(q->h))
		return -1;
	return parse_strings(q, msg + sizeof(q->h), q->h.data_len);
}

bool rt_proto_token_equal(const uint8_t *a, const uint8_t *b)
{
	volatile uint8_t diff = 0;
	for (size_t i = 0; i < PROTO_TOKEN_LEN; i++)
		diff |= (uint8_t)(a[i] ^ b[i]);
	return diff == 0;
}

uint64_t rt_proto_timeout_ms(double seconds)
{
	if (!(seconds > 0))
		return 0;
	/* 2^53 ms (285,000 years): exact in a double, no wrap anywhere */
	double ms = seconds * 1000.0;
	if (!(ms < 9007199254740992.0))
		return UINT64_C(9007199254740992);
	uint64_t whole = (uint64_t)ms;
	if ((double)whole < ms)
		whole++;
	return whole ? whole : 1;
}
