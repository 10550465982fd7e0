/* W3C Trace Context (https://www.w3.org/TR/trace-context/), the part a
 * server needs: a request's `traceparent` read strictly (version 00 and
 * nothing else; lower-case hex; a trace id and a parent id not all
 * zeros), a new one when the request has none (or a bad one: treated as
 * absent), and the server's own span id, so that what it hands on (the
 * response's header, a command's TRACEPARENT) names the server's span
 * as the parent. Pure but for getrandom. */
#include <string.h>
#include <sys/random.h>

#include "api_priv.h"

static bool lower_hex(const char *s, size_t n, bool *all_zero)
{
	*all_zero = true;
	for (size_t i = 0; i < n; i++) {
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
		if (s[i] != '0')
			*all_zero = false;
	}
	return true;
}

bool api_trace_parse(const char *h, struct api_trace *t)
{
	bool zero;
	/* 00-<32 hex>-<16 hex>-<2 hex>: version 00 is exactly 55 bytes */
	if (!h || strlen(h) != API_TRACEPARENT_LEN || h[0] != '0' || h[1] != '0' || h[2] != '-' ||
	    h[35] != '-' || h[52] != '-')
		return false;
	if (!lower_hex(h + 3, 32, &zero) || zero)
		return false;
	if (!lower_hex(h + 36, 16, &zero) || zero)
		return false;
	if (!lower_hex(h + 53, 2, &zero))
		return false;
	memcpy(t->trace_id, h + 3, 32);
	t->trace_id[32] = '\0';
	memcpy(t->parent_id, h + 36, 16);
	t->parent_id[16] = '\0';
	memcpy(t->flags, h + 53, 2);
	t->flags[2] = '\0';
	return true;
}

static void hex(char *out, const unsigned char *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = '\0';
}

static bool all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

bool api_trace_begin(const char *header, struct api_trace *t)
{
	memset(t, 0, sizeof(*t));
	bool given = api_trace_parse(header, t);
	/* the span id and (when none was given) the trace id from one
	 * getrandom call: a syscall of a few microseconds on every request */
	unsigned char rnd[24];
	size_t need = given ? 8 : sizeof(rnd);
	for (int tries = 0;; tries++) {
		if (tries == 4 || getrandom(rnd, need, 0) != (ssize_t)need) {
			memset(t, 0, sizeof(*t));
			return false;
		}
		if (!all_zero(rnd, 8) && (given || !all_zero(rnd + 8, 16)))
			break;
	}
	t->given = given;
	if (!given) {
		hex(t->trace_id, rnd + 8, 16);
		/* sampled: the server records it (its log line) */
		memcpy(t->flags, "01", 3);
	}
	hex(t->span_id, rnd, 8);
	snprintf(t->traceparent, sizeof(t->traceparent), "00-%s-%s-%s", t->trace_id, t->span_id,
		 t->flags);
	return true;
}
