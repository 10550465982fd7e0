/* /cells/{id}/ports/{port}/REST: HTTP to a port on the cell's own
 * loopback, behind the server's token. The request is sent on as
 * HTTP/1.0 with Connection: close (so the answer ends when the cell's
 * server closes and is never chunked), with its method, path, body and
 * its query (without ?token=) and the headers an application reads (not
 * Authorization: the server's token stays here); the answer's status, Content-Type and body come
 * back. One worker of the cell's init makes the connection
 * (cell_port_exchange): the cell needs no network. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "api_priv.h"
#include "request.h"

#define PROXY_MAX_ANSWER (64u << 20)
#define PROXY_TIMEOUT 60.0
#define PROXY_HEAD_MAX 16384
#define PROXY_QUERY_MAX 8192
#define PROXY_UPGRADE_MAX_S (6 * 3600.0) /* a WebSocket through the proxy lasts at most this */

static const char *const FORWARDED[] = {"Content-Type", "Accept", "Accept-Language",
					"User-Agent", "If-None-Match", "If-Modified-Since",
					"Range", "X-Requested-With"};
#define PROXY_COOKIE_MAX 8192

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

/* What a WebSocket's opening handshake adds, and what of the cell's 101
 * goes back (RFC 6455, 4.1 and 4.2.2). */
static const char *const UPGRADE_FORWARDED[] = {"Upgrade", "Sec-WebSocket-Key",
						"Sec-WebSocket-Version", "Sec-WebSocket-Protocol",
						"Sec-WebSocket-Extensions", "Origin"};
static const char *const UPGRADE_ANSWERED[] = {"Upgrade", "Sec-WebSocket-Accept",
					       "Sec-WebSocket-Protocol",
					       "Sec-WebSocket-Extensions"};

static void forward_headers(FILE *f, const struct api_request *req, const char *const *names,
			    size_t n)
{
	for (size_t i = 0; i < n && req->header; i++) {
		const char *v = req->header(req->ctx, names[i]);
		if (v && !strpbrk(v, "\r\n"))
			fprintf(f, "%s: %s\r\n", names[i], v);
	}
}

/* upgrade: HTTP/1.1 with the handshake's headers (the connection stays);
 * else HTTP/1.0 and Connection: close. */
static char *build_request(const struct api_request *req, unsigned port, const char *rest,
			   const char *query, bool upgrade, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	if (!f)
		return NULL;
	fprintf(f, "%s %s%s%s HTTP/1.%d\r\nHost: 127.0.0.1:%u\r\nConnection: %s\r\n",
		req->method, rest, query[0] ? "?" : "", query, upgrade, port,
		upgrade ? "Upgrade" : "close");
	forward_headers(f, req, FORWARDED, SC_ARRAY_LEN(FORWARDED));
	/* the cell's own cookies, not the port token's (portaccess.c) */
	const char *cookies = req->header ? req->header(req->ctx, "Cookie") : NULL;
	char theirs[PROXY_COOKIE_MAX];
	api_port_cookies_without_ours(cookies, theirs, sizeof(theirs));
	if (theirs[0] && !strpbrk(theirs, "\r\n"))
		fprintf(f, "Cookie: %s\r\n", theirs);
	if (upgrade)
		forward_headers(f, req, UPGRADE_FORWARDED, SC_ARRAY_LEN(UPGRADE_FORWARDED));
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

/* The value of header `name` in the head [head, end) (its lines end in
 * \r\n) into out, if it is there, fits and is fit to send on. */
static bool head_value(const char *head, const char *end, const char *name, char *out,
		       size_t size)
{
	size_t nl_len = strlen(name);
	const char *l = memmem(head, (size_t)(end - head), "\r\n", 2);
	for (l = l ? l + 2 : end; l < end;) {
		const char *nl = memmem(l, (size_t)(end - l), "\r\n", 2);
		if (!nl)
			break;
		if ((size_t)(nl - l) > nl_len && l[nl_len] == ':' && !strncasecmp(l, name, nl_len)) {
			const char *v = l + nl_len + 1;
			while (v < nl && (*v == ' ' || *v == '\t'))
				v++;
			size_t vn = (size_t)(nl - v);
			if (vn == 0 || vn >= size || !header_value_ok(v, vn))
				return false;
			memcpy(out, v, vn);
			out[vn] = '\0';
			return true;
		}
		l = nl + 2;
	}
	return false;
}

/* The answer's status line and head: its status, Content-Type (into
 * resp->hbuf) and where the body starts; false for what is not HTTP (or
 * not all of its head yet). The answer is the cell's: read within its
 * length only (it may hold NULs). */
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
	if (!head_value(a, end + 2, "Content-Type", resp->hbuf, sizeof(resp->hbuf)))
		snprintf(resp->hbuf, sizeof(resp->hbuf), "application/octet-stream");
	return true;
}

/* The cell's whole answer (ans, taken) as ours. */
static void answer_with(struct api_response *resp, struct cell_file *ans, unsigned port)
{
	int status;
	size_t body_at;
	if (ans->truncated || !parse_answer(ans->data, ans->len, resp, &status, &body_at)) {
		free(ans->data);
		api_errorf(resp, 502, ans->truncated ? "the answer from port %u is larger than 64 MiB"
						     : "port %u did not answer HTTP",
			   port);
		return;
	}
	memmove(ans->data, ans->data + body_at, ans->len - body_at);
	api_set_body(resp, status, resp->hbuf, ans->data, ans->len - body_at);
}

/* Does the client ask to switch to another protocol (a WebSocket)? */
static bool wants_upgrade(const struct api_request *req)
{
	if (strcmp(req->method, "GET") != 0 || !req->header || !req->header(req->ctx, "Upgrade"))
		return false;
	const char *conn = req->header(req->ctx, "Connection");
	for (const char *t = conn; t && *t;) {
		t += strspn(t, " \t,");
		size_t n = strcspn(t, " \t,");
		if (n == 7 && !strncasecmp(t, "upgrade", 7))
			return true;
		t += n;
	}
	return false;
}

/* A switch in progress: the cell's connection and the 101's headers. */
struct upgrade {
	struct api *a;
	char id[API_ID_LEN + 1];
	struct cell *c;
	struct cell_port_conn *pc;
	char *answer; /* the cell's head and what followed it */
	char values[SC_ARRAY_LEN(UPGRADE_ANSWERED)][512];
};

static void upgrade_done(void *ctx)
{
	struct upgrade *u = ctx;
	struct sc_err ignored = {0};
	cell_port_close(u->pc, &ignored);
	api_cell_end(u->a, u->id, u->c);
	free(u->answer);
	free(u);
}

bool api_send_all(int fd, const char *buf, size_t n, double deadline, const atomic_bool *stop)
{
	while (n > 0) {
		ssize_t w = send(fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			buf += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return false;
		if (stop && atomic_load(stop))
			return false;
		double left = deadline > 0 ? deadline - sc_now() : 0.25;
		struct pollfd p = {.fd = fd, .events = POLLOUT};
		if (left <= 0 || (poll(&p, 1, (int)(left * 1000) + 1) == 0 && deadline > 0))
			return false;
	}
	return true;
}

/* More of the cell's answer into u->answer (*len bytes of *cap in it)
 * until its head is in (or, for an answer that is no switch, until it
 * ends or passes PROXY_MAX_ANSWER), within the deadline. */
static void read_answer(struct upgrade *u, double deadline, bool to_end, size_t *len,
			size_t *cap)
{
	int fd = cell_port_conn_fd(u->pc);
	for (;;) {
		size_t head_part = *len < PROXY_HEAD_MAX ? *len : PROXY_HEAD_MAX;
		if (!to_end && (memmem(u->answer, head_part, "\r\n\r\n", 4) ||
				*len >= PROXY_HEAD_MAX))
			return;
		if (*len == *cap) {
			char *nb = *cap > PROXY_MAX_ANSWER ? NULL : realloc(u->answer, *cap * 2 + 1);
			if (!nb)
				return; /* past the bound: the caller says so */
			u->answer = nb;
			*cap *= 2;
		}
		double left = deadline - sc_now();
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (left <= 0 || poll(&p, 1, (int)(left * 1000) + 1) <= 0)
			return;
		ssize_t n = recv(fd, u->answer + *len, *cap - *len, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0)
			return;
		*len += (size_t)n;
	}
}

/* The 101 as ours: the cell's handshake headers, and the relay. */
static void answer_switch(struct upgrade *u, struct api_response *resp, size_t len,
			  size_t body_at)
{
	const char *end = memmem(u->answer, body_at, "\r\n\r\n", 4);
	for (size_t i = 0; i < SC_ARRAY_LEN(UPGRADE_ANSWERED); i++)
		if (head_value(u->answer, end + 2, UPGRADE_ANSWERED[i], u->values[i],
			       sizeof(u->values[i])))
			api_add_header(resp, UPGRADE_ANSWERED[i], u->values[i]);
	resp->status = 101;
	resp->upgrade = true;
	resp->upgrade_fd = cell_port_conn_fd(u->pc);
	resp->upgrade_pre = u->answer + body_at;
	resp->upgrade_pre_len = len - body_at;
	resp->upgrade_done = upgrade_done;
	resp->upgrade_ctx = u;
}

static void proxy_upgrade(struct upgrade *u, unsigned port, const char *rq, size_t rq_len,
			  double timeout, struct api_response *resp)
{
	struct sc_err err = {0};
	double deadline = sc_now() + timeout;
	if (cell_port_open(u->c, (uint16_t)port, PROXY_UPGRADE_MAX_S, &u->pc, &err) < 0) {
		api_errorf(resp, 502, "%.400s", err.msg);
		upgrade_done(u);
		return;
	}
	size_t cap = 4096, len = 0;
	u->answer = malloc(cap + 1);
	if (u->answer && api_send_all(cell_port_conn_fd(u->pc), rq, rq_len, deadline, NULL))
		read_answer(u, deadline, false, &len, &cap);
	int status;
	size_t body_at;
	if (len > 0 && parse_answer(u->answer, len, resp, &status, &body_at) && status == 101) {
		answer_switch(u, resp, len, body_at);
		return;
	}
	if (len > 0) {
		/* no switch: the rest of an ordinary answer */
		read_answer(u, deadline, true, &len, &cap);
		u->answer[len] = '\0';
		struct cell_file ans = {.data = u->answer, .len = len,
					.truncated = len > PROXY_MAX_ANSWER};
		u->answer = NULL;
		answer_with(resp, &ans, port);
		(void)cell_port_close(u->pc, &err);
	} else if (cell_port_close(u->pc, &err) < 0) {
		api_errorf(resp, 502, "%.400s", err.msg);
	} else {
		api_errorf(resp, 502, "port %u answered nothing within %.0f s", port, timeout);
	}
	u->pc = NULL; /* closed */
	upgrade_done(u);
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
	bool upgrade = wants_upgrade(call->req);
	size_t len;
	_cleanup_free_ char *rq = build_request(call->req, port, rest, query, upgrade, &len);
	if (!rq) {
		api_response_error(resp, 500, "out of memory");
		return;
	}
	struct cell *c;
	if (api_cell_begin(a, call->id, &c, resp) < 0)
		return;
	double timeout = api_timeout(&a->lim, 0, PROXY_TIMEOUT);
	if (upgrade) {
		struct upgrade *u = calloc(1, sizeof(*u));
		if (!u) {
			api_cell_end(a, call->id, c);
			api_response_error(resp, 500, "out of memory");
			return;
		}
		*u = (struct upgrade){.a = a, .c = c};
		snprintf(u->id, sizeof(u->id), "%s", call->id);
		proxy_upgrade(u, port, rq, len, timeout, resp);
		return;
	}
	struct cell_file ans;
	struct sc_err err = {0};
	int rc = cell_port_exchange(c, (uint16_t)port, rq, len, PROXY_MAX_ANSWER, timeout, &ans,
				    &err);
	api_cell_end(a, call->id, c);
	if (rc < 0) {
		api_errorf(resp, 502, "%.400s", err.msg);
		return;
	}
	answer_with(resp, &ans, port);
}
