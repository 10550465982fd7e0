/* /cells/{id}/ports/{port}/REST: HTTP to a port on the cell's own
 * loopback, behind the server's token. The request is sent on as
 * HTTP/1.0 with Connection: close (so the answer ends when the cell's
 * server closes and is never chunked), with its method, path, body and
 * its query (without ?token=) and the headers an application reads (not
 * Authorization: the server's token stays here); the answer's status, Content-Type and body come
 * back. One worker of the cell's init makes the connection
 * (cell_port_exchange): the cell needs no network. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api_priv.h"
#include "request.h"

#define PROXY_MAX_ANSWER (64u << 20)
#define PROXY_TIMEOUT 60.0
#define PROXY_HEAD_MAX 16384
#define PROXY_QUERY_MAX 8192

static const char *const FORWARDED[] = {"Content-Type", "Accept", "Accept-Language",
					"Cookie", "User-Agent", "If-None-Match",
					"If-Modified-Since", "Range", "X-Requested-With"};

bool api_proxy_path(const char *path, char *id, unsigned *port, const char **rest)
{
	if (strncmp(path, "/cells/", 7) != 0)
		return false;
	const char *s = path + 7;
	size_t n = strcspn(s, "/"), node_len;
	if (n > API_ID_LEN || !api_id_parse(s, n, &node_len) || strncmp(s + n, "/ports/", 7) != 0)
		return false;
	const char *p = s + n + 7;
	size_t digits = strspn(p, "0123456789");
	if (digits == 0 || digits > 5 || (p[digits] && p[digits] != '/'))
		return false;
	unsigned long v = strtoul(p, NULL, 10);
	if (v == 0 || v > 65535)
		return false;
	memcpy(id, s, n);
	id[n] = '\0';
	*port = (unsigned)v;
	*rest = p[digits] ? p + digits : "/";
	return true;
}

static char *build_request(const struct api_request *req, unsigned port, const char *rest,
			   const char *query, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	if (!f)
		return NULL;
	fprintf(f, "%s %s%s%s HTTP/1.0\r\nHost: 127.0.0.1:%u\r\nConnection: close\r\n",
		req->method, rest, query[0] ? "?" : "", query, port);
	for (size_t i = 0; i < SC_ARRAY_LEN(FORWARDED) && req->header; i++) {
		const char *v = req->header(req->ctx, FORWARDED[i]);
		if (v && !strpbrk(v, "\r\n"))
			fprintf(f, "%s: %s\r\n", FORWARDED[i], v);
	}
	if (req->body_len || strcmp(req->method, "GET") != 0)
		fprintf(f, "Content-Length: %zu\r\n", req->body_len);
	fputs("\r\n", f);
	if (req->body_len)
		fwrite(req->body, 1, req->body_len, f);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* A header value fit to send on: printable ASCII and tabs only (a
 * cell's server may put a bare \n or a NUL in it). */
static bool header_value_ok(const char *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (((unsigned char)v[i] < 0x20 && v[i] != '\t') || (unsigned char)v[i] >= 0x7f)
			return false;
	return true;
}

/* The answer's status line and head: its status, Content-Type (into
 * resp->hbuf) and where the body starts; false for what is not HTTP. The
 * answer is the cell's: read within its length only (it may hold NULs). */
static bool parse_answer(const char *a, size_t len, struct api_response *resp, int *status,
			 size_t *body_at)
{
	size_t lim = len < PROXY_HEAD_MAX ? len : PROXY_HEAD_MAX;
	const char *end = memmem(a, lim, "\r\n\r\n", 4);
	/* "HTTP/1.x SSS" at least */
	if (!end || end - a < 12 || memcmp(a, "HTTP/1.", 7) != 0 || a[8] != ' ')
		return false;
	int st = 0;
	for (int i = 9; i < 12; i++) {
		if (a[i] < '0' || a[i] > '9')
			return false;
		st = st * 10 + (a[i] - '0');
	}
	if (st < 100 || st > 599 || (end - a > 12 && a[12] != ' ' && a[12] != '\r'))
		return false;
	*status = st;
	*body_at = (size_t)(end - a) + 4;
	snprintf(resp->hbuf, sizeof(resp->hbuf), "application/octet-stream");
	const char *head_end = end + 2; /* through the last line's \r\n */
	const char *l = memmem(a, (size_t)(head_end - a), "\r\n", 2) + 2;
	while (l < head_end) {
		const char *nl = memmem(l, (size_t)(head_end - l), "\r\n", 2);
		if (!nl)
			break;
		size_t n = (size_t)(nl - l);
		if (n > 13 && !strncasecmp(l, "Content-Type:", 13)) {
			const char *v = l + 13;
			while (v < nl && (*v == ' ' || *v == '\t'))
				v++;
			size_t vn = (size_t)(nl - v);
			if (vn > 0 && vn < sizeof(resp->hbuf) && header_value_ok(v, vn))
				snprintf(resp->hbuf, sizeof(resp->hbuf), "%.*s", (int)vn, v);
		}
		l = nl + 2;
	}
	return true;
}

void api_ports_proxy(struct api *a, const struct api_call *call, unsigned port, const char *rest,
		     struct api_response *resp)
{
	for (const char *q = rest; *q; q++)
		if ((unsigned char)*q <= ' ' || *q == 0x7f) {
			api_response_error(resp, 400, "the path holds a space or a control character");
			return;
		}
	char query[PROXY_QUERY_MAX] = "";
	if (call->req->query_string &&
	    !call->req->query_string(call->req->ctx, query, sizeof(query))) {
		api_response_error(resp, 414, "the query string is longer than 8 KiB");
		return;
	}
	struct cell *c;
	if (api_cell_begin(a, call->id, &c, resp) < 0)
		return;
	size_t len;
	char *rq = build_request(call->req, port, rest, query, &len);
	if (!rq) {
		api_cell_end(a, call->id, c);
		api_response_error(resp, 500, "out of memory");
		return;
	}
	struct cell_file ans;
	struct sc_err err = {0};
	int rc = cell_port_exchange(c, (uint16_t)port, rq, len, PROXY_MAX_ANSWER,
				    api_timeout(&a->lim, 0, PROXY_TIMEOUT), &ans, &err);
	free(rq);
	api_cell_end(a, call->id, c);
	if (rc < 0) {
		api_errorf(resp, 502, "%.400s", err.msg);
		return;
	}
	int status;
	size_t body_at;
	if (ans.truncated || !parse_answer(ans.data, ans.len, resp, &status, &body_at)) {
		free(ans.data);
		api_errorf(resp, 502, ans.truncated ? "the answer from port %u is larger than 64 MiB"
						    : "port %u did not answer HTTP",
			   port);
		return;
	}
	memmove(ans.data, ans.data + body_at, ans.len - body_at);
	api_set_body(resp, status, resp->hbuf, ans.data, ans.len - body_at);
}
