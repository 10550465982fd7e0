/* The HTTP transport: libmicrohttpd (one thread per connection, so a
 * handler may block for as long as its program runs), loaded with dlopen
 * when `serve` starts: no other command loads it (or GnuTLS under it).
 *
 * A request: the first call checks the token, the declared body size and
 * whether the concurrency gate is full before any body byte is read (401,
 * 413, 503 are answered at once, and MHD closes the connection after
 * them); the body is gathered up to max_body; the last call takes a
 * concurrency slot and hands it to api_handle. A slot is held only while
 * a request runs, never while its body trickles in; /v1/ping takes none.
 *
 * Slow clients. MHD's connection timeout is an idle timeout, which each
 * byte resets, so the transport keeps its own table of connections (MHD's
 * connection notifications) with a deadline per phase: the head within
 * head_timeout_s of the accept (or of the last answer, plus
 * connection_timeout_s, on a kept-alive connection), the body within
 * request_deadline_s of the head. The main loop's tick shuts down (never
 * closes: MHD owns the fd until its CLOSED notification, taken under the
 * same lock) a connection past its deadline. At the accept, a peer (an
 * IPv4 address, an IPv6 /64) at max_connections_per_peer, or the server at
 * max_connections, makes room by dropping its oldest connection that is
 * still waiting for a head; with none (all busy), the new one is answered
 * 503 (504 on /run_code) at its head and closed (and while it waits for
 * its head, it is the one the next new connection drops). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../common/dl.h"
#include "../common/parse.h"
#include "http_priv.h"

/* ---- the library, resolved at run time ---- */

struct mhd_dl api_mhd;

static const struct sc_dl_sym mhd_syms[] = {
	{"MHD_start_daemon", (void **)&api_mhd.start_daemon},
	{"MHD_stop_daemon", (void **)&api_mhd.stop_daemon},
	{"MHD_quiesce_daemon", (void **)&api_mhd.quiesce_daemon},
	{"MHD_lookup_connection_value", (void **)&api_mhd.lookup},
	{"MHD_create_response_from_buffer", (void **)&api_mhd.response_from_buffer},
	{"MHD_add_response_header", (void **)&api_mhd.add_header},
	{"MHD_queue_response", (void **)&api_mhd.queue_response},
	{"MHD_destroy_response", (void **)&api_mhd.destroy_response},
	{"MHD_get_connection_info", (void **)&api_mhd.connection_info},
	{"MHD_create_response_from_callback", (void **)&api_mhd.response_from_callback},
};

static struct sc_dl mhd_lib = {
	.sonames = {"libmicrohttpd.so.12"},
	.what = "libmicrohttpd",
	.package = "libmicrohttpd12",
	.syms = mhd_syms,
	.nsyms = SC_ARRAY_LEN(mhd_syms),
	SC_DL_STATE,
};

/* ---- requests ---- */

#define API_REFUSED_BODY 65536 /* bytes of a refused request's body read anyway */

struct req_state {
	struct timespec start;
	char *body;
	size_t len, cap;
	bool gated;        /* holds a concurrency slot */
	bool ping;         /* /v1/ping: no slot, no token needed */
	bool close;        /* close the connection after the answer */
	bool answered;
	int pending;       /* an error to answer once the (small) body is read */
	const char *pending_msg;
	int status;
	size_t out_len;
	char method[16];
	char path[256];
};

static double since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

static const char *lookup_query(void *ctx, const char *name)
{
	return api_mhd.lookup(ctx, MHD_GET_ARGUMENT_KIND, name);
}

static const char *lookup_header(void *ctx, const char *name)
{
	return api_mhd.lookup(ctx, MHD_HEADER_KIND, name);
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

static enum MHD_Result send_response(struct MHD_Connection *conn, struct req_state *st,
				     struct api_response *r)
{
	struct MHD_Response *mr;
	if (r->stream) {
		struct stream_box *b = calloc(1, sizeof(*b));
		const union MHD_ConnectionInfo *ci =
			api_mhd.connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		mr = NULL;
		if (b) {
			*b = (struct stream_box){r->stream, r->stream_free, r->stream_ctx,
						 ci ? ci->connect_fd : -1, &st->out_len};
			mr = api_mhd.response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, b,
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
	return send_response(conn, st, &r);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct server *s = cls;
	const struct api_config *cfg = api_get_config(s->a);
	struct req_state *st = *con_cls;
	if (!st) {
		st = calloc(1, sizeof(*st));
		if (!st)
			return MHD_NO;
		*con_cls = st;
		clock_gettime(CLOCK_MONOTONIC, &st->start);
		snprintf(st->method, sizeof(st->method), "%s", method);
		snprintf(st->path, sizeof(st->path), "%s", url);
		/* Before any body byte: how much, who, and is there room. */
		bool over = api_http_conn_phase(s, conn, CONN_BODY, s->o->request_deadline_s);
		const char *cl = api_mhd.lookup(conn, MHD_HEADER_KIND, "Content-Length");
		uint64_t n = 0;
		if (cl && (sc_parse_uint(cl, 0, UINT64_MAX, &n) < 0 || n > cfg->max_body)) {
			char msg[128];
			snprintf(msg, sizeof(msg), "a request body of at most %zu bytes", cfg->max_body);
			return early(conn, st, 413, msg);
		}
		/* the routes' word on the token and the pings (answered
		 * without one, but a token given must be the right one) */
		struct api_request head = {.method = method, .path = url, .query = lookup_query,
					   .header = lookup_header, .ctx = conn};
		const char *tok = api_given_token(&head);
		st->ping = api_route_is_open(method, url);
		if (atomic_load(&s->stopping)) {
			st->close = true;
			st->pending = 503;
			st->pending_msg = "the server is stopping";
		} else if (over) {
			st->close = true;
			st->pending = api_busy_status(url);
			st->pending_msg = "too many connections from your address (or to the server): "
					  "retry";
		} else if (st->ping ? tok && !api_token_ok(s->a, tok) : !api_token_ok(s->a, tok)) {
			st->pending = 401;
			st->pending_msg = "a token is required (Authorization: Bearer TOKEN)";
		} else if (!st->ping && api_in_flight(s->a) >= cfg->max_concurrency) {
			/* full now: say so before the body comes (the slot
			 * itself is taken once the body is in) */
			st->pending = api_busy_status(url);
			st->pending_msg = "the server is busy: retry";
		} else {
			return MHD_YES;
		}
		/* Refused. A small body is read (and dropped) first so that the
		 * client, still sending it, gets the answer; a large one is not
		 * read at all: answer now, and MHD closes the connection. */
		if (n > API_REFUSED_BODY)
			return early(conn, st, st->pending, st->pending_msg);
		return MHD_YES;
	}
	if (*upload_size && st->pending) {
		st->len += *upload_size; /* dropped */
		*upload_size = 0;
		return st->len > API_REFUSED_BODY ? MHD_NO : MHD_YES;
	}
	if (st->pending) {
		size_t dropped = st->len;
		enum MHD_Result rc = early(conn, st, st->pending, st->pending_msg);
		st->len = dropped;
		return rc;
	}
	if (*upload_size) {
		if (since(&st->start) > s->o->request_deadline_s)
			return MHD_NO; /* too slow: drop the connection */
		size_t add = *upload_size;
		if (st->len + add > cfg->max_body)
			return MHD_NO; /* a chunked body over the limit: drop it */
		if (st->len + add + 1 > st->cap) {
			size_t cap = st->cap ? st->cap : 4096;
			while (cap < st->len + add + 1)
				cap *= 2;
			/* bodies still coming hold no slot: their memory is
			 * bounded instead (the server is full: drop it) */
			size_t more = cap - st->cap;
			if (atomic_fetch_add(&s->body_bytes, more) + more > s->body_budget) {
				atomic_fetch_sub(&s->body_bytes, more);
				return MHD_NO;
			}
			char *nb = realloc(st->body, cap);
			if (!nb) {
				atomic_fetch_sub(&s->body_bytes, more);
				return MHD_NO;
			}
			st->body = nb;
			st->cap = cap;
		}
		memcpy(st->body + st->len, upload, add);
		st->len += add;
		st->body[st->len] = '\0';
		*upload_size = 0;
		return MHD_YES;
	}
	if (!st->ping) {
		if (!api_enter(s->a))
			return early(conn, st, api_busy_status(url), "the server is busy: retry");
		st->gated = true;
	}
	api_http_conn_phase(s, conn, CONN_BUSY, 0);
	char peer[80] = "unix";
	const union MHD_ConnectionInfo *ci = api_mhd.connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (ci && ci->client_addr)
		api_http_addr_string(ci->client_addr, peer, sizeof(peer));
	struct api_request req = {
		.method = method,
		.path = url,
		.query = lookup_query,
		.header = lookup_header,
		.ctx = conn,
		.body = st->body ? st->body : "",
		.body_len = st->len,
		.peer = peer,
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
	return send_response(conn, st, &r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
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
	/* kept alive: the next head within the idle time, and then some */
	api_http_conn_phase(s, conn, CONN_HEAD, s->o->connection_timeout_s + s->o->head_timeout_s);
	char peer[80] = "unix";
	const union MHD_ConnectionInfo *ci = api_mhd.connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (ci && ci->client_addr)
		api_http_addr_string(ci->client_addr, peer, sizeof(peer));
	/* The path as JSON (it came from the network), cut until the line
	 * fits in one log message (a cut character becomes U+FFFD). */
	char *pj = NULL;
	for (size_t n = strlen(st->path);; n = n * 2 / 3) {
		size_t pl = 0;
		free(pj);
		pj = NULL;
		FILE *f = open_memstream(&pj, &pl);
		if (!f)
			break;
		api_json_string(f, st->path, n);
		if (fclose(f) != 0) {
			free(pj);
			pj = NULL;
			break;
		}
		if (pl <= 200 || n == 0)
			break;
	}
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	sc_log(s->log, SC_LOG_INFO,
	       "{\"ts\":%lld.%03ld,\"peer\":\"%s\",\"method\":\"%.15s\",\"path\":%s,"
	       "\"status\":%d,\"bytes_in\":%zu,\"bytes_out\":%zu,\"ms\":%.1f,\"completed\":%s}",
	       (long long)now.tv_sec, now.tv_nsec / 1000000, peer,
	       strspn(st->method, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") == strlen(st->method) ? st->method : "?",
	       pj ? pj : "\"?\"", st->answered ? st->status : 0, st->len, st->out_len,
	       since(&st->start) * 1000.0,
	       toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "true" : "false");
	free(pj);
	free(st->body);
	free(st);
}

int api_http_serve(struct api *a, const struct api_http_opts *o, atomic_int *stop,
		   struct sc_err *err)
{
	if (api_http_check(api_get_config(a), o, err) < 0 || sc_dl_load(&mhd_lib, err) < 0)
		return -1;
	struct listen_addr la;
	if (api_http_parse_listen(o->listen, &la, err) < 0)
		return -1;
	char *cert = NULL, *key = NULL;
	if (o->tls_cert) {
		if (sc_read_small_alloc(AT_FDCWD, o->tls_cert, 0, 1 << 20, &cert, NULL, err) < 0)
			return sc_err_wrap(err, "--tls-cert");
		if (sc_read_small_alloc(AT_FDCWD, o->tls_key, 0, 1 << 20, &key, NULL, err) < 0) {
			free(cert);
			return sc_err_wrap(err, "--tls-key");
		}
	}
	char shown[160];
	int lfd = api_http_open_listener(&la, shown, sizeof(shown), err);
	if (lfd < 0) {
		free(cert);
		free(key);
		return sc_err_wrap(err, "--listen %.100s", o->listen);
	}
	const struct api_config *cfg = api_get_config(a);
	struct server s = {.a = a, .o = o, .log = &cfg->log};
	s.per_peer = o->max_connections_per_peer ? o->max_connections_per_peer
						 : (o->max_connections + 1) / 2;
	/* bodies being received: what the concurrency gate bounded when it
	 * was taken at the head, twice over */
	s.body_budget = cfg->max_body > SIZE_MAX / 2 / cfg->max_concurrency
				? SIZE_MAX / 2
				: 2 * cfg->max_concurrency * cfg->max_body;
	s.report_at = sc_now() + HTTP_REPORT_EVERY;
	pthread_mutex_init(&s.mu, NULL);
	/* poll(), not select(): no FD_SETSIZE bound on a connection's fd (a
	 * server with a raised RLIMIT_NOFILE and many connections and cells
	 * has fds above 1024), and no fd_set copied per wait */
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
			 MHD_USE_POLL | MHD_USE_ITC | MHD_USE_ERROR_LOG;
	unsigned timeout = o->connection_timeout_s >= 1 ? (unsigned)o->connection_timeout_s : 1;
	/* MHD's own limit is above ours by the connections dropped and not
	 * yet closed (on_accept keeps the live ones to max_connections) */
	size_t mhd_limit = o->max_connections + o->max_connections / 8 + 16;
	struct MHD_Daemon *d;
	struct MHD_OptionItem tls[] = {{MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)cert},
				       {MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)key},
				       {MHD_OPTION_END, 0, NULL}};
	d = api_mhd.start_daemon(flags | (cert ? MHD_USE_TLS : 0), 0, api_http_on_accept, &s, on_request, &s,
			     MHD_OPTION_EXTERNAL_LOGGER, api_http_on_mhd_log, (void *)&s,
			     MHD_OPTION_LISTEN_SOCKET, (MHD_socket)lfd,
			     MHD_OPTION_CONNECTION_LIMIT, (unsigned)mhd_limit,
			     MHD_OPTION_CONNECTION_TIMEOUT, timeout,
			     MHD_OPTION_CONNECTION_MEMORY_LIMIT, o->max_header,
			     MHD_OPTION_NOTIFY_COMPLETED, on_completed, &s,
			     MHD_OPTION_NOTIFY_CONNECTION, api_http_on_connection, &s,
			     MHD_OPTION_ARRAY, cert ? tls : tls + 2, MHD_OPTION_END);
	if (!d) {
		pthread_mutex_destroy(&s.mu);
		close(lfd);
		if (la.unix_socket)
			unlink(((const struct sockaddr_un *)&la.ss)->sun_path);
		free(cert);
		free(key);
		return sc_fail(err, 0, "cannot start the HTTP server on %s (TLS files valid?)", shown);
	}
	if (o->on_listen)
		o->on_listen(o->on_listen_ctx, shown);
	for (unsigned ticks = 1; !atomic_load(stop); ticks++) {
		struct timespec ts = {0, 250 * 1000000};
		nanosleep(&ts, NULL);
		api_http_conns_tick(&s);
		if (ticks % 4 == 0)
			api_tick(a);
	}
	/* Drain: no new connections, no new requests (503); let the requests
	 * in flight finish, then end what still runs, which answers at once
	 * (stop_daemon waits for every connection's thread). */
	atomic_store(&s.stopping, true);
	api_mhd.quiesce_daemon(d);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	bool cancelled = false;
	while (api_in_flight(a) > 0) {
		if (!cancelled && since(&t0) >= o->drain_s) {
			sc_log(s.log, SC_LOG_WARN,
			       "%zu requests still run after --drain-timeout %g s: stopping them",
			       api_in_flight(a), o->drain_s);
			api_cancel(a);
			cancelled = true;
		} else if (cancelled && since(&t0) >= o->drain_s + 10) {
			break; /* their answers are not sent: stop_daemon drops them */
		}
		struct timespec ts = {0, 50 * 1000000};
		nanosleep(&ts, NULL);
		api_http_conns_tick(&s);
	}
	/* also what comes in now (a body that was still arriving) */
	api_cancel(a);
	api_mhd.stop_daemon(d);
	s.report_at = 0; /* what was dropped since the last summary */
	api_http_conns_tick(&s);
	pthread_mutex_destroy(&s.mu);
	close(lfd);
	if (la.unix_socket)
		unlink(((const struct sockaddr_un *)&la.ss)->sun_path);
	free(cert);
	free(key);
	return 0;
}
