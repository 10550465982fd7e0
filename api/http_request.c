/* The HTTP transport's requests (see http.c's head for the rules): the
 * first call checks the head, the body is gathered within its budget and
 * deadline, the last call runs the request and queues its answer; one
 * log line when the request completes. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/parse.h"
#include "http_priv.h"

#define API_REFUSED_BODY 65536 /* bytes of a refused request's body read anyway */
#define HTTP_BODY_FIRST_CAP 4096 /* a body's first buffer; doubled as it grows */
#define HTTP_STREAM_BLOCK 16384 /* bytes MHD asks of a streamed body at once */
#define HTTP_LOG_PATH_MAX 200  /* bytes of a request's path (as JSON) in its log line */

struct req_state {
	double start; /* sc_now() */
	char *body;
	size_t len, cap;
	bool gated;        /* holds a concurrency slot */
	bool ping;         /* /v1/ping: no slot, no token needed */
	bool ungated;      /* takes no slot (pings, /metrics) */
	bool close;        /* close the connection after the answer */
	bool answered;
	int pending;       /* an error to answer once the (small) body is read */
	const char *pending_msg;
	int status;
	size_t out_len;
	char method[16];
	char path[256];
	bool traced;       /* trace holds the request's trace context */
	struct api_trace trace;
	const char *node;  /* the server's node name, X-Sandcell-Node of every answer */
	struct upgrade_box *upgrade; /* a 101's relay, until MHD's handler claims it */
	bool switched;     /* the protocol switch happened: the relay has the socket */
};

static const char *lookup_query(void *ctx, const char *name)
{
	return api_mhd.lookup(ctx, MHD_GET_ARGUMENT_KIND, name);
}

static const char *lookup_header(void *ctx, const char *name)
{
	return api_mhd.lookup(ctx, MHD_HEADER_KIND, name);
}

struct qs_build {
	char *buf;
	size_t size, len;
	bool over;
};

static void qs_put(struct qs_build *q, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	for (const unsigned char *c = (const unsigned char *)s; c && *c && !q->over; c++) {
		bool plain = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
			     (*c >= '0' && *c <= '9') || strchr("-._~", *c);
		size_t need = plain ? 1 : 3;
		if (q->len + need >= q->size) {
			q->over = true;
			return;
		}
		if (plain) {
			q->buf[q->len++] = (char)*c;
		} else {
			q->buf[q->len++] = '%';
			q->buf[q->len++] = hex[*c >> 4];
			q->buf[q->len++] = hex[*c & 15];
		}
	}
	q->buf[q->len] = '\0';
}

static void qs_raw(struct qs_build *q, char c)
{
	if (q->over || q->len + 1 >= q->size) {
		q->over = true;
		return;
	}
	q->buf[q->len++] = c;
	q->buf[q->len] = '\0';
}

static enum MHD_Result qs_each(void *cls, enum MHD_ValueKind kind, const char *key,
			       const char *value)
{
	(void)kind;
	struct qs_build *q = cls;
	if (!key || !strcmp(key, "token")) /* the server's, not the cell's */
		return MHD_YES;
	if (q->len)
		qs_raw(q, '&');
	qs_put(q, key);
	if (value) {
		qs_raw(q, '=');
		qs_put(q, value);
	}
	return MHD_YES;
}

static bool query_string(void *ctx, char *buf, size_t size)
{
	if (size == 0)
		return false;
	struct qs_build q = {.buf = buf, .size = size};
	buf[0] = '\0';
	api_mhd.get_values(ctx, MHD_GET_ARGUMENT_KIND, qs_each, &q);
	return !q.over;
}

/* A streamed body: the api's stream, called from the connection's thread
 * (one per connection, so it may block), with the client's socket. */
struct stream_box {
	ssize_t (*fn)(void *ctx, char *buf, size_t max, int client_fd);
	void (*free_fn)(void *ctx);
	void *ctx;
	int client_fd;
	size_t *out_len;
};

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	struct stream_box *b = cls;
	ssize_t n = b->fn(b->ctx, buf, max, b->client_fd);
	if (n == API_STREAM_END)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (n < 0)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	*b->out_len += (size_t)n;
	return n;
}

static void stream_done(void *cls)
{
	struct stream_box *b = cls;
	b->free_fn(b->ctx);
	free(b);
}

static enum MHD_Result send_response(struct server *s, struct MHD_Connection *conn,
				     struct req_state *st, struct api_response *r)
{
	struct MHD_Response *mr;
	if (r->upgrade) {
		mr = api_http_upgrade_response(s, r, &st->upgrade, &st->switched);
	} else if (r->stream) {
		struct stream_box *b = calloc(1, sizeof(*b));
		const union MHD_ConnectionInfo *ci =
			api_mhd.connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		mr = NULL;
		if (b) {
			*b = (struct stream_box){r->stream, r->stream_free, r->stream_ctx,
						 ci ? ci->connect_fd : -1, &st->out_len};
			mr = api_mhd.response_from_callback(MHD_SIZE_UNKNOWN, HTTP_STREAM_BLOCK, stream_read, b,
							stream_done);
			if (mr)
				r->stream = NULL; /* stream_done frees it */
			else
				free(b);
		}
	} else if (r->body && r->body_len) {
		mr = api_mhd.response_from_buffer(r->body_len, r->body, MHD_RESPMEM_MUST_FREE);
		if (mr)
			r->body = NULL; /* MHD frees it */
	} else {
		mr = api_mhd.response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	}
	if (!mr) {
		api_response_free(r);
		return MHD_NO;
	}
	api_mhd.add_header(mr, "Content-Type", r->content_type ? r->content_type : "application/json");
	for (size_t i = 0; i < r->nheaders; i++)
		api_mhd.add_header(mr, r->headers[i].name, r->headers[i].value);
	/* no second request on a connection that had no token (nor while
	 * stopping, nor on one over a limit) */
	if (r->status == 401 || st->close)
		api_mhd.add_header(mr, "Connection", "close");
	if (st->traced)
		api_mhd.add_header(mr, "traceparent", st->trace.traceparent);
	/* which server answered, behind a balancer (docs/scale-out.md) */
	if (st->node)
		api_mhd.add_header(mr, "X-Sandcell-Node", st->node);
	st->status = r->status;
	st->out_len = r->body_len;
	st->answered = true;
	enum MHD_Result rc = api_mhd.queue_response(conn, (unsigned)r->status, mr);
	api_mhd.destroy_response(mr);
	api_response_free(r);
	return rc;
}

static enum MHD_Result early(struct MHD_Connection *conn, struct req_state *st, int status,
			     const char *detail)
{
	struct api_response r = {0};
	api_response_error(&r, status, detail);
	return send_response(NULL, conn, st, &r);
}

/* The client's address as logged: "127.0.0.1:PORT", "[::1]:PORT" or
 * "unix". */
static void conn_peer(struct MHD_Connection *conn, char *out, size_t size)
{
	const union MHD_ConnectionInfo *ci =
		api_mhd.connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (ci && ci->client_addr)
		api_http_addr_string(ci->client_addr, out, size);
	else
		snprintf(out, size, "unix");
}

static struct req_state *req_state_new(const char *method, const char *url)
{
	struct req_state *st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	st->start = sc_now();
	snprintf(st->method, sizeof(st->method), "%s", method);
	snprintf(st->path, sizeof(st->path), "%s", url);
	return st;
}

/* Whether a request may go on, from its head alone: if not, the answer
 * it gets goes into st->pending and st->pending_msg (the server
 * stopping, the connection over a limit, the token, a full gate). */
static void head_verdict(struct server *s, struct MHD_Connection *conn, struct req_state *st,
			 const char *method, const char *url, bool over)
{
	/* the routes' word on the token and the pings (answered without
	 * one, but a token given must be the right one) */
	struct api_request head = {.method = method, .path = url, .query = lookup_query,
				   .header = lookup_header, .ctx = conn};
	st->ping = api_route_is_open(method, url);
	st->ungated = st->ping || api_route_is_ungated(method, url);
	if (atomic_load(&s->stopping)) {
		st->close = true;
		st->pending = 503;
		st->pending_msg = "the server is stopping";
	} else if (over) {
		st->close = true;
		st->pending = api_busy_status(url);
		st->pending_msg = "too many connections from your address (or to the server): "
				  "retry";
	} else if (!api_request_authorized(s->a, &head)) {
		st->pending = 401;
		st->pending_msg = "a token is required (Authorization: Bearer TOKEN)";
	} else if (!st->ungated && api_in_flight(s->a) >= api_get_config(s->a)->max_concurrency) {
		/* full now: say so before the body comes (the slot itself
		 * is taken once the body is in) */
		st->pending = api_busy_status(url);
		st->pending_msg = "the server is busy: retry";
	}
}

/* The first call, before any body byte: how much, who, and is there
 * room. */
static enum MHD_Result req_head(struct server *s, struct MHD_Connection *conn,
				struct req_state *st, const char *method, const char *url)
{
	const struct api_config *cfg = api_get_config(s->a);
	bool over = api_http_conn_phase(s, conn, CONN_BODY, s->o->request_deadline_s);
	const char *cl = api_mhd.lookup(conn, MHD_HEADER_KIND, "Content-Length");
	uint64_t n = 0;
	if (cl && (sc_parse_uint(cl, 0, UINT64_MAX, &n) < 0 || n > cfg->max_body)) {
		char msg[128];
		snprintf(msg, sizeof(msg), "a request body of at most %zu bytes", cfg->max_body);
		return early(conn, st, 413, msg);
	}
	head_verdict(s, conn, st, method, url, over);
	/* Refused. A small body is read (and dropped) first so that the
	 * client, still sending it, gets the answer; a large one is not read
	 * at all: answer now, and MHD closes the connection. */
	if (st->pending && n > API_REFUSED_BODY)
		return early(conn, st, st->pending, st->pending_msg);
	return MHD_YES;
}

/* A refused request's (small) body: counted and dropped, then the
 * refusal. */
static enum MHD_Result req_refused_body(struct MHD_Connection *conn, struct req_state *st,
					size_t *upload_size)
{
	if (*upload_size) {
		st->len += *upload_size; /* dropped */
		*upload_size = 0;
		return st->len > API_REFUSED_BODY ? MHD_NO : MHD_YES;
	}
	size_t dropped = st->len;
	enum MHD_Result rc = early(conn, st, st->pending, st->pending_msg);
	st->len = dropped;
	return rc;
}

/* Room for `need` bytes in st->body: 0, or -1 (drop the connection).
 * Bodies still coming hold no slot: their memory is bounded instead, by
 * the server's body budget (spent: the server is full). */
static int body_reserve(struct server *s, struct req_state *st, size_t need)
{
	if (need <= st->cap)
		return 0;
	size_t cap = st->cap ? st->cap : HTTP_BODY_FIRST_CAP;
	while (cap < need)
		cap *= 2;
	size_t more = cap - st->cap;
	if (atomic_fetch_add(&s->body_bytes, more) + more > s->body_budget) {
		atomic_fetch_sub(&s->body_bytes, more);
		return -1;
	}
	char *nb = realloc(st->body, cap);
	if (!nb) {
		atomic_fetch_sub(&s->body_bytes, more);
		return -1;
	}
	st->body = nb;
	st->cap = cap;
	return 0;
}

/* A piece of the body, within the deadline and max_body. */
static enum MHD_Result req_body(struct server *s, struct req_state *st, const char *upload,
				size_t *upload_size)
{
	if (sc_now() - st->start > s->o->request_deadline_s)
		return MHD_NO; /* too slow: drop the connection */
	size_t add = *upload_size;
	if (st->len + add > api_get_config(s->a)->max_body)
		return MHD_NO; /* a chunked body over the limit: drop it */
	if (body_reserve(s, st, st->len + add + 1) < 0)
		return MHD_NO;
	memcpy(st->body + st->len, upload, add);
	st->len += add;
	st->body[st->len] = '\0';
	*upload_size = 0;
	return MHD_YES;
}

/* The whole request is in: take a slot (not for a ping or a scrape), run
 * it, answer. */
static enum MHD_Result req_run(struct server *s, struct MHD_Connection *conn,
			       struct req_state *st, const char *method, const char *url)
{
	if (!st->ungated) {
		if (!api_enter(s->a))
			return early(conn, st, api_busy_status(url), "the server is busy: retry");
		st->gated = true;
	}
	api_http_conn_phase(s, conn, CONN_BUSY, 0);
	char peer[80];
	conn_peer(conn, peer, sizeof(peer));
	struct api_request req = {
		.method = method,
		.path = url,
		.query = lookup_query,
		.header = lookup_header,
		.query_string = query_string,
		.ctx = conn,
		.body = st->body ? st->body : "",
		.body_len = st->len,
		.peer = peer,
		.traceparent = st->traced ? st->trace.traceparent : NULL,
	};
	struct api_response r;
	api_handle(s->a, &req, &r);
	/* The slot goes back before the answer is queued: a client that has
	 * its answer may send the next request at once and must find it free.
	 * A streamed answer keeps it until on_completed. */
	if (st->gated && !r.stream) {
		api_leave(s->a);
		st->gated = false;
	}
	return send_response(s, conn, st, &r);
}

enum MHD_Result api_http_on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	(void)version;
	struct server *s = cls;
	struct req_state *st = *con_cls;
	if (!st) {
		st = req_state_new(method, url);
		if (!st)
			return MHD_NO;
		st->traced = api_trace_begin(api_mhd.lookup(conn, MHD_HEADER_KIND, "traceparent"),
					     &st->trace);
		st->node = api_get_config(s->a)->node_name;
		*con_cls = st;
		return req_head(s, conn, st, method, url);
	}
	if (st->pending)
		return req_refused_body(conn, st, upload_size);
	if (*upload_size)
		return req_body(s, st, upload, upload_size);
	return req_run(s, conn, st, method, url);
}

/* The path as JSON (it came from the network), cut until the line fits in
 * one log message (a cut character becomes U+FFFD); malloc'd, or NULL. */
static char *path_json(const char *path)
{
	char *pj = NULL;
	for (size_t n = strlen(path);; n = n * 2 / 3) {
		size_t pl = 0;
		free(pj);
		pj = NULL;
		FILE *f = open_memstream(&pj, &pl);
		if (!f)
			break;
		api_json_string(f, path, n);
		if (fclose(f) != 0) {
			free(pj);
			pj = NULL;
			break;
		}
		if (pl <= HTTP_LOG_PATH_MAX || n == 0)
			break;
	}
	return pj;
}

static void log_request(struct server *s, struct MHD_Connection *conn,
			const struct req_state *st, bool completed)
{
	char peer[80];
	conn_peer(conn, peer, sizeof(peer));
	_cleanup_free_ char *pj = path_json(st->path);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	sc_log(s->log, SC_LOG_INFO,
	       "{\"ts\":%lld.%03ld,\"peer\":\"%s\",\"method\":\"%.15s\",\"path\":%s,"
	       "\"status\":%d,\"bytes_in\":%zu,\"bytes_out\":%zu,\"ms\":%.1f,\"completed\":%s,"
	       "\"trace_id\":\"%s\",\"span_id\":\"%s\"}",
	       (long long)now.tv_sec, now.tv_nsec / 1000000, peer,
	       strspn(st->method, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") == strlen(st->method) ? st->method : "?",
	       pj ? pj : "\"?\"", st->answered ? st->status : 0, st->len, st->out_len,
	       (sc_now() - st->start) * 1000.0, completed ? "true" : "false", st->trace.trace_id,
	       st->trace.span_id);
}

void api_http_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct server *s = cls;
	struct req_state *st = *con_cls;
	if (!st)
		return;
	*con_cls = NULL;
	if (st->gated)
		api_leave(s->a);
	atomic_fetch_sub(&s->body_bytes, st->cap);
	api_http_upgrade_abandon(st->upgrade);
	/* kept alive: the next head within the idle time, and then some; a
	 * switched one is the relay's, with no deadline */
	if (st->switched)
		api_http_conn_phase(s, conn, CONN_BUSY, 0);
	else
		api_http_conn_phase(s, conn, CONN_HEAD,
				    s->o->connection_timeout_s + s->o->head_timeout_s);
	api_metrics_request(&s->a->metrics, api_route_index(st->method, st->path),
			    st->answered ? st->status : 0, sc_now() - st->start);
	log_request(s, conn, st, toe == MHD_REQUEST_TERMINATED_COMPLETED_OK);
	free(st->body);
	free(st);
}

