/* libFuzzer target for the init's request decoder (runtime/proto.c): the
 * input is one SOCK_SEQPACKET message as a client in the cell's user could
 * send it. A decoded request's strings must all lie inside the message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/proto.h"

static struct proto_request q; /* ~36 KiB of pointers */

static void inside(const char *s, const char *msg, size_t len)
{
	if (!s || s < msg || s >= msg + len || !memchr(s, '\0', (size_t)(msg + len - s)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > PROTO_MAX_REQ)
		return 0;
	char *msg = malloc(size ? size : 1);
	if (!msg)
		abort();
	memcpy(msg, data, size);
	memset(&q, 0, sizeof(q));
	if (rt_proto_decode_request(msg, size, &q) == 0) {
		if (q.h.argc > PROTO_MAX_ARGS || q.h.envc > CELL_MAX_ENV)
			abort();
		for (uint32_t i = 0; i < q.h.argc; i++)
			inside(q.argv[i], msg, size);
		for (uint32_t i = 0; i < q.h.envc; i++)
			inside(q.env[i], msg, size);
		inside(q.path, msg, size);
		if (q.argv[q.h.argc] || q.env[q.h.envc])
			abort();
	}
	free(msg);
	return 0;
}
