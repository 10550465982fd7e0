/* The Connect protocol (connectrpc.com/docs/protocol), the part E2B's
 * SDKs speak to envd: JSON messages over HTTP/1.1. A unary call is a
 * plain JSON body both ways, an error a non-200 status with
 * {"code": "not_found", "message": ...}. A server-streaming call's
 * request and answer are envelopes: one flags byte, a 4-byte big-endian
 * length, the JSON message; the last envelope has flag 0x02 and holds
 * {} or {"error": {...}}. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "e2b_priv.h"

#define CONNECT_FLAG_END 0x02
#define CONNECT_FLAG_COMPRESSED 0x01

static const struct {
	const char *name;
	int status;
} CODES[] = {
	[API_CONNECT_CANCELED] = {"canceled", 499},
	[API_CONNECT_UNKNOWN] = {"unknown", 500},
	[API_CONNECT_INVALID_ARGUMENT] = {"invalid_argument", 400},
	[API_CONNECT_DEADLINE_EXCEEDED] = {"deadline_exceeded", 504},
	[API_CONNECT_NOT_FOUND] = {"not_found", 404},
	[API_CONNECT_ALREADY_EXISTS] = {"already_exists", 409},
	[API_CONNECT_PERMISSION_DENIED] = {"permission_denied", 403},
	[API_CONNECT_RESOURCE_EXHAUSTED] = {"resource_exhausted", 429},
	[API_CONNECT_UNIMPLEMENTED] = {"unimplemented", 501},
	[API_CONNECT_INTERNAL] = {"internal", 500},
	[API_CONNECT_UNAVAILABLE] = {"unavailable", 503},
	[API_CONNECT_UNAUTHENTICATED] = {"unauthenticated", 401},
	[API_CONNECT_FAILED_PRECONDITION] = {"failed_precondition", 400},
};

const char *api_connect_code_name(enum api_connect_code c)
{
	return CODES[c].name;
}

enum api_connect_code api_connect_code_of_status(int status)
{
	switch (status) {
	case 400:
	case 413:
	case 422:
		return API_CONNECT_INVALID_ARGUMENT;
	case 401:
		return API_CONNECT_UNAUTHENTICATED;
	case 403:
		return API_CONNECT_PERMISSION_DENIED;
	case 404:
	case 410:
		return API_CONNECT_NOT_FOUND;
	case 409:
		return API_CONNECT_ALREADY_EXISTS;
	case 429:
		return API_CONNECT_RESOURCE_EXHAUSTED;
	case 503:
		return API_CONNECT_UNAVAILABLE;
	case 504:
		return API_CONNECT_DEADLINE_EXCEEDED;
	default:
		return API_CONNECT_INTERNAL;
	}
}

static void error_object(FILE *f, enum api_connect_code c, const char *msg)
{
	fputs("{\"code\":", f);
	api_json_string(f, CODES[c].name, strlen(CODES[c].name));
	fputs(",\"message\":", f);
	api_json_string(f, msg, strlen(msg));
	fputc('}', f);
}

void api_connect_error(struct api_response *resp, enum api_connect_code c, const char *fmt, ...)
{
	char msg[SC_ERR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	struct api_jbuf jb;
	if (!api_jb_open(&jb)) {
		api_response_error(resp, 500, "out of memory");
		return;
	}
	error_object(jb.f, c, msg);
	char *t = api_jb_close(&jb);
	api_set_body(resp, t ? CODES[c].status : 500, "application/json", t, t ? jb.len : 0);
}

void api_connect_reply(struct api_jbuf *jb, struct api_response *resp)
{
	char *t = api_jb_close(jb);
	if (!t) {
		api_connect_error(resp, API_CONNECT_INTERNAL, "out of memory");
		return;
	}
	api_set_body(resp, 200, "application/json", t, jb->len);
}

cJSON *api_connect_stream_request(const struct api_request *req, struct api_response *resp)
{
	const unsigned char *b = (const unsigned char *)req->body;
	if (req->body_len < 5) {
		api_connect_error(resp, API_CONNECT_INVALID_ARGUMENT, "a streaming call's body is "
			"one enveloped message (application/connect+json)");
		return NULL;
	}
	size_t n = (size_t)b[1] << 24 | (size_t)b[2] << 16 | (size_t)b[3] << 8 | b[4];
	if (b[0] & CONNECT_FLAG_COMPRESSED) {
		api_connect_error(resp, API_CONNECT_UNIMPLEMENTED, "compressed messages are not served");
		return NULL;
	}
	if (b[0] != 0 || n != req->body_len - 5) {
		api_connect_error(resp, API_CONNECT_INVALID_ARGUMENT,
				  "the body must be one message of the length its envelope says");
		return NULL;
	}
	struct api_bad bad;
	cJSON *j = api_req_object(req->body + 5, n, true, &bad);
	if (!j)
		api_connect_error(resp, API_CONNECT_INVALID_ARGUMENT, "%s", bad.msg);
	return j;
}

unsigned char *api_connect_frame(bool end, const char *json, size_t len, size_t *out_len)
{
	if (len > 0xffffffffu)
		return NULL;
	unsigned char *m = malloc(len + 5);
	if (!m)
		return NULL;
	m[0] = end ? CONNECT_FLAG_END : 0;
	m[1] = (unsigned char)(len >> 24);
	m[2] = (unsigned char)(len >> 16);
	m[3] = (unsigned char)(len >> 8);
	m[4] = (unsigned char)len;
	memcpy(m + 5, json, len);
	*out_len = len + 5;
	return m;
}

bool api_connect_frame_is_end(const unsigned char *m, size_t len)
{
	return len >= 5 && (m[0] & CONNECT_FLAG_END);
}

void api_connect_send(struct api_stream *s, bool end, const char *json, size_t len)
{
	/* one write: a keepalive never lands inside a message */
	size_t n;
	_cleanup_free_ unsigned char *m = api_connect_frame(end, json, len, &n);
	if (m)
		api_stream_raw(s, m, n);
}

unsigned char *api_connect_error_frame(enum api_connect_code c, const char *msg, size_t *out_len)
{
	struct api_jbuf jb;
	if (!api_jb_open(&jb))
		return NULL;
	fputs("{\"error\":", jb.f);
	error_object(jb.f, c, msg);
	fputc('}', jb.f);
	_cleanup_free_ char *t = api_jb_close(&jb);
	return t ? api_connect_frame(true, t, jb.len, out_len) : NULL;
}

void api_connect_stream_error(struct api_response *resp, enum api_connect_code c, const char *fmt,
			      ...)
{
	char msg[SC_ERR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	size_t n;
	unsigned char *m = api_connect_error_frame(c, msg, &n);
	if (!m) {
		api_response_error(resp, 500, "out of memory");
		return;
	}
	api_set_body(resp, 200, "application/connect+json", (char *)m, n);
}

void api_connect_send_error(struct api_stream *s, enum api_connect_code c, const char *msg)
{
	size_t n;
	_cleanup_free_ unsigned char *m = api_connect_error_frame(c, msg, &n);
	if (m)
		api_stream_raw(s, m, n);
}
