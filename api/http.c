/* The HTTP transport: libmicrohttpd (one thread per connection, so a
 * handler may block for as long as its program runs), loaded with dlopen
 * when `serve` starts: no other command loads it (or GnuTLS under it).
 *
 * A request: the first call checks the token, the declared body size and
 * whether the concurrency gate is full before any body byte is read (401,
 * 413, 503 are answered at once, and MHD closes the connection after
 * them); the body is gathered up to max_body; the last call takes a
 * concurrency slot and hands it to api_handle. A slot is held only while
 * a request runs, never while its body trickles in; /v1/ping and GET
 * /metrics (a scrape must get through when the server is full) take none.
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
#include "http_priv.h"

/* ---- the library, resolved at run time ---- */

struct mhd_dl api_mhd;

static const struct sc_dl_sym mhd_syms[] = {
	{"MHD_start_daemon", (void **)&api_mhd.start_daemon},
	{"MHD_stop_daemon", (void **)&api_mhd.stop_daemon},
	{"MHD_quiesce_daemon", (void **)&api_mhd.quiesce_daemon},
	{"MHD_lookup_connection_value", (void **)&api_mhd.lookup},
	{"MHD_get_connection_values", (void **)&api_mhd.get_values},
	{"MHD_create_response_from_buffer", (void **)&api_mhd.response_from_buffer},
	{"MHD_add_response_header", (void **)&api_mhd.add_header},
	{"MHD_queue_response", (void **)&api_mhd.queue_response},
	{"MHD_destroy_response", (void **)&api_mhd.destroy_response},
	{"MHD_get_connection_info", (void **)&api_mhd.connection_info},
	{"MHD_create_response_from_callback", (void **)&api_mhd.response_from_callback},
	{"MHD_create_response_for_upgrade", (void **)&api_mhd.response_for_upgrade},
	{"MHD_upgrade_action", (void **)&api_mhd.upgrade_action},
};

static struct sc_dl mhd_lib = {
	.sonames = {"libmicrohttpd.so.12"},
	.what = "libmicrohttpd",
	.package = "libmicrohttpd12",
	.syms = mhd_syms,
	.nsyms = SC_ARRAY_LEN(mhd_syms),
	SC_DL_STATE,
};

/* ---- serving ---- */

#define HTTP_TLS_FILE_MAX (1 << 20) /* bytes of --tls-cert, --tls-key */
#define HTTP_TICK_MS 250       /* the main loop's tick: deadlines */
#define HTTP_API_TICK_EVERY 4  /* ticks between api_tick calls */
#define HTTP_DRAIN_POLL_MS 50  /* while draining: how often to look */
#define HTTP_CANCEL_GRACE_S 10 /* after --drain-timeout's cancel: the last wait */

/* What api_http_serve holds from the start to the end. */
struct serve_res {
	struct listen_addr la;
	int lfd;
	char *cert, *key; /* PEM, or NULL */
	char shown[160];  /* the listener's address, as shown */
	struct listen_addr mla; /* --metrics-listen's, when given */
	int mfd;
	char mshown[160];
};

/* The address, the TLS files, the listening socket. */
static int serve_open(struct serve_res *r, const struct api_http_opts *o, struct sc_err *err)
{
	if (api_http_parse_listen(o->listen, &r->la, err) < 0)
		return -1;
	if (o->tls_cert) {
		if (sc_read_small_alloc(AT_FDCWD, o->tls_cert, 0, HTTP_TLS_FILE_MAX, &r->cert, NULL,
					err) < 0)
			return sc_err_wrap(err, "--tls-cert");
		if (sc_read_small_alloc(AT_FDCWD, o->tls_key, 0, HTTP_TLS_FILE_MAX, &r->key, NULL,
					err) < 0)
			return sc_err_wrap(err, "--tls-key");
	}
	r->lfd = api_http_open_listener(&r->la, r->shown, sizeof(r->shown), err);
	if (r->lfd < 0)
		return sc_err_wrap(err, "--listen %.100s", o->listen);
	if (!o->metrics_listen)
		return 0;
	if (api_http_parse_listen(o->metrics_listen, &r->mla, err) < 0)
		return -1;
	r->mfd = api_http_open_listener(&r->mla, r->mshown, sizeof(r->mshown), err);
	if (r->mfd < 0)
		return sc_err_wrap(err, "--metrics-listen %.100s", o->metrics_listen);
	return 0;
}

static void serve_close(struct serve_res *r)
{
	if (r->lfd >= 0) {
		close(r->lfd);
		if (r->la.unix_socket)
			unlink(((const struct sockaddr_un *)&r->la.ss)->sun_path);
	}
	if (r->mfd >= 0) {
		close(r->mfd);
		if (r->mla.unix_socket)
			unlink(((const struct sockaddr_un *)&r->mla.ss)->sun_path);
	}
	free(r->cert);
	free(r->key);
}

static void server_init(struct server *s, struct api *a, const struct api_http_opts *o)
{
	const struct api_config *cfg = api_get_config(a);
	*s = (struct server){.a = a, .o = o, .log = &cfg->log};
	s->per_peer = o->max_connections_per_peer ? o->max_connections_per_peer
						  : (o->max_connections + 1) / 2;
	/* bodies being received: what the concurrency gate bounded when it
	 * was taken at the head, twice over */
	s->body_budget = cfg->max_body > SIZE_MAX / 2 / cfg->max_concurrency
				 ? SIZE_MAX / 2
				 : 2 * cfg->max_concurrency * cfg->max_body;
	s->report_at = sc_now() + HTTP_REPORT_EVERY;
	pthread_mutex_init(&s->mu, NULL);
}

static struct MHD_Daemon *start_daemon(struct server *s, const struct serve_res *r)
{
	const struct api_http_opts *o = s->o;
	/* poll(), not select(): no FD_SETSIZE bound on a connection's fd (a
	 * server with a raised RLIMIT_NOFILE and many connections and cells
	 * has fds above 1024), and no fd_set copied per wait */
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
			 MHD_USE_POLL | MHD_USE_ITC | MHD_USE_ERROR_LOG | MHD_ALLOW_UPGRADE;
	unsigned timeout = o->connection_timeout_s >= 1 ? (unsigned)o->connection_timeout_s : 1;
	/* MHD's own limit is above ours by the connections dropped and not
	 * yet closed (on_accept keeps the live ones to max_connections) */
	size_t mhd_limit = o->max_connections + o->max_connections / 8 + 16;
	struct MHD_OptionItem tls[] = {{MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)r->cert},
				       {MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)r->key},
				       {MHD_OPTION_END, 0, NULL}};
	return api_mhd.start_daemon(flags | (r->cert ? MHD_USE_TLS : 0), 0, api_http_on_accept, s,
				    api_http_on_request, s,
				    MHD_OPTION_EXTERNAL_LOGGER, api_http_on_mhd_log, (void *)s,
				    MHD_OPTION_LISTEN_SOCKET, (MHD_socket)r->lfd,
				    MHD_OPTION_CONNECTION_LIMIT, (unsigned)mhd_limit,
				    MHD_OPTION_CONNECTION_TIMEOUT, timeout,
				    MHD_OPTION_CONNECTION_MEMORY_LIMIT, o->max_header,
				    MHD_OPTION_NOTIFY_COMPLETED, api_http_on_completed, s,
				    MHD_OPTION_NOTIFY_CONNECTION, api_http_on_connection, s,
				    MHD_OPTION_ARRAY, r->cert ? tls : tls + 2, MHD_OPTION_END);
}

/* ---- the metrics listener: GET /metrics, nothing else, no token ---- */

#define HTTP_METRICS_CONNECTIONS 16
#define HTTP_METRICS_TIMEOUT 10 /* seconds a scraper's connection may idle */

static enum MHD_Result metrics_answer(struct MHD_Connection *conn, unsigned status,
				      const char *type, char *body, size_t len)
{
	struct MHD_Response *mr =
		body ? api_mhd.response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE)
		     : api_mhd.response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	if (!mr) {
		free(body);
		return MHD_NO;
	}
	api_mhd.add_header(mr, "Content-Type", type);
	enum MHD_Result rc = api_mhd.queue_response(conn, status, mr);
	api_mhd.destroy_response(mr);
	return rc;
}

/* One thread polls every scraper's connection: a scrape renders in
 * microseconds and never waits on a cell. */
static enum MHD_Result metrics_on_request(void *cls, struct MHD_Connection *conn, const char *url,
					  const char *method, const char *version,
					  const char *upload, size_t *upload_size, void **con_cls)
{
	(void)version;
	(void)upload;
	struct server *s = cls;
	if (!*con_cls) { /* the head: wait for the (ignored) body */
		*con_cls = (void *)1;
		return MHD_YES;
	}
	if (*upload_size) {
		*upload_size = 0;
		return MHD_YES;
	}
	static const char text[] = "text/plain; charset=utf-8";
	if (strcmp(url, "/metrics") != 0)
		return metrics_answer(conn, 404, text, strdup("only /metrics here\n"),
				      strlen("only /metrics here\n"));
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return metrics_answer(conn, 405, text, strdup("GET /metrics\n"),
				      strlen("GET /metrics\n"));
	double t0 = sc_now();
	size_t len = 0;
	char *body = api_metrics_text(s->a, &len);
	enum MHD_Result rc =
		body ? metrics_answer(conn, 200, "text/plain; version=0.0.4; charset=utf-8", body, len)
		     : metrics_answer(conn, 500, text, NULL, 0);
	api_metrics_request(&s->a->metrics, api_route_index("GET", "/metrics"), body ? 200 : 500,
			    sc_now() - t0);
	return rc;
}

static struct MHD_Daemon *start_metrics_daemon(struct server *s, const struct serve_res *r)
{
	return api_mhd.start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC |
					    MHD_USE_ERROR_LOG,
				    0, NULL, NULL, metrics_on_request, s,
				    MHD_OPTION_EXTERNAL_LOGGER, api_http_on_mhd_log, (void *)s,
				    MHD_OPTION_LISTEN_SOCKET, (MHD_socket)r->mfd,
				    MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_METRICS_CONNECTIONS,
				    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_METRICS_TIMEOUT,
				    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384, MHD_OPTION_END);
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

/* Until *stop: the connections' deadlines, and the api's own tick. */
static void serve_until(struct server *s, const atomic_bool *stop)
{
	for (unsigned ticks = 1; !atomic_load(stop); ticks++) {
		sleep_ms(HTTP_TICK_MS);
		api_http_conns_tick(s);
		if (ticks % HTTP_API_TICK_EVERY == 0)
			api_tick(s->a);
	}
}

/* Drain: no new connections, no new requests (503); let the requests in
 * flight finish, then end what still runs, which answers at once
 * (stop_daemon waits for every connection's thread). */
static void drain(struct server *s, struct MHD_Daemon *d)
{
	atomic_store(&s->stopping, true);
	api_mhd.quiesce_daemon(d);
	double t0 = sc_now();
	bool cancelled = false;
	while (api_in_flight(s->a) > 0) {
		if (!cancelled && sc_now() - t0 >= s->o->drain_s) {
			sc_log(s->log, SC_LOG_WARN,
			       "%zu requests still run after --drain-timeout %g s: stopping them",
			       api_in_flight(s->a), s->o->drain_s);
			api_cancel(s->a);
			cancelled = true;
		} else if (cancelled && sc_now() - t0 >= s->o->drain_s + HTTP_CANCEL_GRACE_S) {
			break; /* their answers are not sent: stop_daemon drops them */
		}
		sleep_ms(HTTP_DRAIN_POLL_MS);
		api_http_conns_tick(s);
	}
	/* also what comes in now (a body that was still arriving) */
	api_cancel(s->a);
	/* the relays see s->stopping within their poll; MHD must not free a
	 * connection one still uses */
	while (atomic_load(&s->upgrades) > 0)
		sleep_ms(HTTP_DRAIN_POLL_MS);
	api_mhd.stop_daemon(d);
	s->report_at = 0; /* what was dropped since the last summary */
	api_http_conns_tick(s);
}

int api_http_serve(struct api *a, const struct api_http_opts *o,
		   const atomic_bool *stop, struct sc_err *err)
{
	if (api_http_check(api_get_config(a), o, err) < 0 || sc_dl_load(&mhd_lib, err) < 0)
		return -1;
	struct serve_res r = {.lfd = -1, .mfd = -1};
	if (serve_open(&r, o, err) < 0) {
		serve_close(&r);
		return -1;
	}
	struct server s;
	server_init(&s, a, o);
	/* a silent command's stream must outlive the idle timeout: a
	 * keepalive line at a third of it, at most every 10 s */
	double ka = o->connection_timeout_s / 3;
	a->stream_keepalive_ms = (int)((ka > 10 ? 10 : ka < 0.3 ? 0.3 : ka) * 1000);
	struct MHD_Daemon *d = start_daemon(&s, &r);
	if (!d) {
		pthread_mutex_destroy(&s.mu);
		serve_close(&r);
		return sc_fail(err, 0, "cannot start the HTTP server on %s (TLS files valid?)",
			       r.shown);
	}
	struct MHD_Daemon *md = NULL;
	if (r.mfd >= 0 && !(md = start_metrics_daemon(&s, &r))) {
		api_mhd.stop_daemon(d);
		pthread_mutex_destroy(&s.mu);
		serve_close(&r);
		return sc_fail(err, 0, "cannot start the metrics listener on %s", r.mshown);
	}
	if (o->on_listen)
		o->on_listen(o->on_listen_ctx, r.shown);
	if (md && o->on_metrics_listen)
		o->on_metrics_listen(o->on_listen_ctx, r.mshown);
	serve_until(&s, stop);
	if (md)
		api_mhd.stop_daemon(md);
	drain(&s, d);
	pthread_mutex_destroy(&s.mu);
	serve_close(&r);
	return 0;
}
