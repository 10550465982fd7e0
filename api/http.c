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
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../common/dl.h"
#include "../common/parse.h"
#include "api.h"

/* ---- the library, resolved at run time ---- */

struct mhd_dl {
	__typeof__(MHD_start_daemon) *start_daemon;
	__typeof__(MHD_stop_daemon) *stop_daemon;
	__typeof__(MHD_quiesce_daemon) *quiesce_daemon;
	__typeof__(MHD_lookup_connection_value) *lookup;
	__typeof__(MHD_create_response_from_buffer) *response_from_buffer;
	__typeof__(MHD_add_response_header) *add_header;
	__typeof__(MHD_queue_response) *queue_response;
	__typeof__(MHD_destroy_response) *destroy_response;
	__typeof__(MHD_get_connection_info) *connection_info;
	__typeof__(MHD_create_response_from_callback) *response_from_callback;
};

static struct mhd_dl mhd;

static const struct sc_dl_sym mhd_syms[] = {
	{"MHD_start_daemon", (void **)&mhd.start_daemon},
	{"MHD_stop_daemon", (void **)&mhd.stop_daemon},
	{"MHD_quiesce_daemon", (void **)&mhd.quiesce_daemon},
	{"MHD_lookup_connection_value", (void **)&mhd.lookup},
	{"MHD_create_response_from_buffer", (void **)&mhd.response_from_buffer},
	{"MHD_add_response_header", (void **)&mhd.add_header},
	{"MHD_queue_response", (void **)&mhd.queue_response},
	{"MHD_destroy_response", (void **)&mhd.destroy_response},
	{"MHD_get_connection_info", (void **)&mhd.connection_info},
	{"MHD_create_response_from_callback", (void **)&mhd.response_from_callback},
};

static struct sc_dl mhd_lib = {
	.sonames = {"libmicrohttpd.so.12"},
	.what = "libmicrohttpd",
	.package = "libmicrohttpd12",
	.syms = mhd_syms,
	.nsyms = SC_ARRAY_LEN(mhd_syms),
	SC_DL_STATE,
};

/* ---- options and the listener ---- */

void api_http_opts_init(struct api_http_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->listen = "127.0.0.1:8080";
	o->connection_timeout_s = 30;
	o->head_timeout_s = 10;
	o->request_deadline_s = 60;
	o->max_header = 32768;
	o->max_connections = 256;
	o->drain_s = 30;
}

struct listen_addr {
	bool unix_socket;
	struct sockaddr_storage ss;
	socklen_t len;
	bool loopback;
};

static int parse_listen(const char *s, struct listen_addr *la, struct sc_err *err)
{
	memset(la, 0, sizeof(*la));
	if (!strncmp(s, "unix:", 5)) {
		struct sockaddr_un *un = (struct sockaddr_un *)&la->ss;
		const char *p = s + 5;
		if (p[0] != '/' || strlen(p) >= sizeof(un->sun_path))
			return sc_fail(err, 0, "--listen unix:PATH needs an absolute path of at most %zu bytes",
				       sizeof(un->sun_path) - 1);
		un->sun_family = AF_UNIX;
		memcpy(un->sun_path, p, strlen(p) + 1);
		la->len = sizeof(*un);
		la->unix_socket = true;
		la->loopback = true;
		return 0;
	}
	char host[256];
	const char *colon = strrchr(s, ':');
	if (!colon || colon == s || strlen(colon + 1) == 0 || (size_t)(colon - s) >= sizeof(host))
		return sc_fail(err, 0, "--listen %.100s: expected HOST:PORT, [V6]:PORT or unix:PATH", s);
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	if (host[0] == '[') {
		size_t n = strlen(host);
		if (n < 3 || host[n - 1] != ']')
			return sc_fail(err, 0, "--listen %.100s: bad [V6] address", s);
		memmove(host, host + 1, n - 2);
		host[n - 2] = '\0';
	}
	uint64_t port;
	if (sc_parse_uint(colon + 1, 0, 65535, &port) < 0)
		return sc_fail(err, 0, "--listen %.100s: bad port", s);
	struct addrinfo hints = {.ai_flags = AI_PASSIVE | AI_NUMERICSERV, .ai_socktype = SOCK_STREAM};
	if (strcmp(host, "localhost") != 0)
		hints.ai_flags |= AI_NUMERICHOST;
	struct addrinfo *ai = NULL;
	char portbuf[8];
	snprintf(portbuf, sizeof(portbuf), "%u", (unsigned)port);
	int rc = getaddrinfo(!strcmp(host, "localhost") ? "127.0.0.1" : host, portbuf, &hints, &ai);
	if (rc != 0 || !ai)
		return sc_fail(err, 0, "--listen %.100s: %s (give a numeric address)", s,
			       gai_strerror(rc));
	memcpy(&la->ss, ai->ai_addr, ai->ai_addrlen);
	la->len = ai->ai_addrlen;
	freeaddrinfo(ai);
	if (la->ss.ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)&la->ss;
		la->loopback = (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	} else if (la->ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&la->ss;
		la->loopback = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
	}
	return 0;
}

int api_http_check(const struct api_config *cfg, const struct api_http_opts *o, struct sc_err *err)
{
	struct listen_addr la;
	if (parse_listen(o->listen, &la, err) < 0)
		return -1;
	bool tls = o->tls_cert || o->tls_key;
	if (tls && !(o->tls_cert && o->tls_key))
		return sc_fail(err, 0, "TLS needs both --tls-cert and --tls-key");
	if (!la.unix_socket && !cfg->token)
		return sc_fail(err, 0,
			       "a TCP listener needs a token (--token-file FILE); or listen on unix:PATH");
	if (!la.loopback && !tls && !o->insecure_plaintext)
		return sc_fail(err, 0,
			       "listening on %.100s (not loopback) needs --tls-cert and --tls-key, "
			       "or --insecure-plaintext",
			       o->listen);
	return 0;
}

static void addr_string(const struct sockaddr *sa, char *out, size_t size)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
		snprintf(out, size, "%s:%u", ip, ntohs(in->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
		snprintf(out, size, "[%s]:%u", ip, ntohs(in6->sin6_port));
	} else {
		snprintf(out, size, "unix");
	}
}

/* A listening socket: a unix socket of mode 0600 (a stale one is replaced,
 * a live one refused), or TCP (port 0: the kernel picks). */
static int open_listener(const struct listen_addr *la, char *shown, size_t shown_size,
			 struct sc_err *err)
{
	int fd = socket(la->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return sc_fail(err, errno, "socket");
	if (la->unix_socket) {
		const struct sockaddr_un *un = (const struct sockaddr_un *)&la->ss;
		struct stat st;
		if (lstat(un->sun_path, &st) == 0) {
			if (!S_ISSOCK(st.st_mode)) {
				close(fd);
				return sc_fail(err, EEXIST, "%s exists and is not a socket", un->sun_path);
			}
			int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
			bool live = probe >= 0 && connect(probe, (const struct sockaddr *)un, la->len) == 0;
			if (probe >= 0)
				close(probe);
			if (live) {
				close(fd);
				return sc_fail(err, EADDRINUSE, "%s: another server listens there", un->sun_path);
			}
			unlink(un->sun_path);
		}
		mode_t old = umask(0177); /* before any thread: the mode is 0600 from the start */
		int rc = bind(fd, (const struct sockaddr *)un, la->len);
		umask(old);
		if (rc < 0) {
			int e = errno;
			close(fd);
			return sc_fail(err, e, "bind %s", un->sun_path);
		}
		snprintf(shown, shown_size, "unix:%s", un->sun_path);
	} else {
		int one = 1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, (const struct sockaddr *)&la->ss, la->len) < 0) {
			int e = errno;
			close(fd);
			return sc_fail(err, e, "bind");
		}
		struct sockaddr_storage got;
		socklen_t gl = sizeof(got);
		if (getsockname(fd, (struct sockaddr *)&got, &gl) < 0) {
			int e = errno;
			close(fd);
			return sc_fail(err, e, "getsockname");
		}
		addr_string((const struct sockaddr *)&got, shown, shown_size);
	}
	if (listen(fd, 128) < 0) {
		int e = errno;
		close(fd);
		return sc_fail(err, e, "listen");
	}
	return fd;
}

/* ---- requests ---- */

#define API_REFUSED_BODY 65536 /* bytes of a refused request's body read anyway */
#define HTTP_REPORT_EVERY 10.0 /* seconds between the slow-client summaries */
#define HTTP_MHD_LOG_MAX 5     /* MHD's messages logged per HTTP_REPORT_EVERY */

enum conn_phase { CONN_HEAD, CONN_BODY, CONN_BUSY };

/* One connection, from MHD's STARTED notification to its CLOSED one. */
struct conn {
	struct conn *prev, *next;
	int fd;
	bool has_peer;
	unsigned char peer[16];  /* IPv4 address, or IPv6 /64 (8 bytes) */
	enum conn_phase phase;
	double since;            /* when the phase began */
	double deadline;         /* 0: none */
	bool cut;                /* shut down by us, closing */
	bool over;               /* accepted over a limit: 503 at its head */
};

struct server {
	struct api *a;
	const struct api_http_opts *o;
	const struct sc_log *log;
	size_t per_peer;
	atomic_bool stopping;
	atomic_size_t body_bytes; /* request bodies held (their buffers) */
	size_t body_budget;
	pthread_mutex_t mu;       /* guards the table and the counts below */
	struct conn *conns;
	size_t live;              /* entries not cut */
	bool accept_over;         /* on_accept's word for the next STARTED */
	size_t cut_head, cut_body, evicted, refused, mhd_logged, mhd_dropped;
	double report_at;
};

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

static double mono_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ---- the connection table: deadlines and per-peer room ---- */

/* The peer a connection counts against: an IPv4 address (also when
 * mapped into IPv6), an IPv6 /64 (what one host gets to itself); none
 * for a unix socket. */
static bool peer_key(const struct sockaddr *sa, unsigned char key[16])
{
	memset(key, 0, 16);
	if (!sa)
		return false;
	if (sa->sa_family == AF_INET) {
		memcpy(key, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return true;
	}
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		if (IN6_IS_ADDR_V4MAPPED(a6)) {
			memcpy(key, a6->s6_addr + 12, 4);
		} else {
			memcpy(key, a6->s6_addr, 8);
			key[15] = 6; /* never equal to an IPv4 key */
		}
		return true;
	}
	return false;
}

/* Drop c (under mu): its thread sees the end of its socket and MHD closes
 * it. shutdown(), not close(): the fd is MHD's until CLOSED. */
static void conn_cut_locked(struct server *s, struct conn *c)
{
	if (c->cut)
		return;
	(void)shutdown(c->fd, SHUT_RDWR);
	c->cut = true;
	s->live--;
}

/* The connection waiting longest for a head (of peer `key`, or any when
 * key is NULL), or NULL. */
static struct conn *oldest_waiting_locked(struct server *s, const unsigned char *key)
{
	struct conn *best = NULL;
	for (struct conn *c = s->conns; c; c = c->next)
		if (!c->cut && c->phase == CONN_HEAD && (!key || (c->has_peer && !memcmp(c->peer, key, 16))) &&
		    (!best || c->since < best->since))
			best = c;
	return best;
}

/* MHD's accept policy: room for one more connection of this peer, made by
 * dropping the oldest one still waiting for its head; with none, the new
 * one is over (answered 503 and closed). MHD calls this and then, for the
 * same connection, on_connection's STARTED, both from its listening
 * thread. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
	(void)addrlen;
	struct server *s = cls;
	unsigned char key[16];
	bool has_peer = peer_key(addr, key), over = false;
	pthread_mutex_lock(&s->mu);
	if (has_peer) {
		size_t n = 0;
		for (struct conn *c = s->conns; c; c = c->next)
			n += !c->cut && c->has_peer && !memcmp(c->peer, key, 16);
		if (n >= s->per_peer) {
			struct conn *v = oldest_waiting_locked(s, key);
			if (v)
				conn_cut_locked(s, v);
			over = !v;
			s->evicted += v != NULL;
		}
	}
	if (!over && s->live >= s->o->max_connections) {
		struct conn *v = oldest_waiting_locked(s, NULL);
		if (v)
			conn_cut_locked(s, v);
		over = !v;
		s->evicted += v != NULL;
	}
	s->refused += over;
	s->accept_over = over;
	pthread_mutex_unlock(&s->mu);
	return MHD_YES;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct server *s = cls;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *fi =
			mhd.connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		const union MHD_ConnectionInfo *ai =
			mhd.connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		struct conn *c = fi ? calloc(1, sizeof(*c)) : NULL;
		if (!c)
			return; /* not watched: MHD's own timeout still applies */
		c->fd = fi->connect_fd;
		c->has_peer = peer_key(ai ? ai->client_addr : NULL, c->peer);
		c->phase = CONN_HEAD;
		c->since = mono_now();
		c->deadline = c->since + s->o->head_timeout_s;
		pthread_mutex_lock(&s->mu);
		c->over = s->accept_over;
		s->accept_over = false;
		c->next = s->conns;
		if (s->conns)
			s->conns->prev = c;
		s->conns = c;
		s->live++;
		pthread_mutex_unlock(&s->mu);
		*socket_context = c;
	} else if (code == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
		struct conn *c = *socket_context;
		pthread_mutex_lock(&s->mu);
		if (c->prev)
			c->prev->next = c->next;
		else
			s->conns = c->next;
		if (c->next)
			c->next->prev = c->prev;
		if (!c->cut)
			s->live--;
		pthread_mutex_unlock(&s->mu);
		free(c);
		*socket_context = NULL;
	}
}

/* The connection's phase is now `phase`, to end within limit_s (0: no
 * limit); true when it was accepted over a limit. */
static bool conn_phase(struct server *s, struct MHD_Connection *conn, enum conn_phase phase,
		       double limit_s)
{
	const union MHD_ConnectionInfo *ci =
		mhd.connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn *c = ci ? ci->socket_context : NULL;
	if (!c)
		return false;
	pthread_mutex_lock(&s->mu);
	c->phase = phase;
	c->since = mono_now();
	c->deadline = limit_s > 0 ? c->since + limit_s : 0;
	bool over = c->over;
	pthread_mutex_unlock(&s->mu);
	return over;
}

/* From the main loop, a few times a second: drop the connections past
 * their deadline; now and then, one line about what was dropped. */
static void conns_tick(struct server *s)
{
	double now = mono_now();
	size_t head = 0, body = 0, evicted = 0, refused = 0, mhd_dropped = 0;
	pthread_mutex_lock(&s->mu);
	for (struct conn *c = s->conns; c; c = c->next)
		if (!c->cut && c->deadline > 0 && now > c->deadline) {
			conn_cut_locked(s, c);
			*(c->phase == CONN_HEAD ? &s->cut_head : &s->cut_body) += 1;
		}
	if (now >= s->report_at) {
		head = s->cut_head, body = s->cut_body, evicted = s->evicted, refused = s->refused;
		mhd_dropped = s->mhd_dropped;
		s->cut_head = s->cut_body = s->evicted = s->refused = 0;
		s->mhd_logged = s->mhd_dropped = 0;
		s->report_at = now + HTTP_REPORT_EVERY;
	}
	pthread_mutex_unlock(&s->mu);
	if (head || body || evicted || refused)
		sc_log(s->log, SC_LOG_WARN,
		       "http: in the last %.0f s, %zu connections dropped for a request head not in "
		       "within %g s, %zu for a body not in within %g s, %zu dropped while still "
		       "waiting for a head to make room for new ones, %zu answered 503 for want of "
		       "one (a peer at --max-connections-per-peer %zu or the server at "
		       "--max-connections %zu)",
		       HTTP_REPORT_EVERY, head, s->o->head_timeout_s, body, s->o->request_deadline_s,
		       evicted, refused, s->per_peer, s->o->max_connections);
	if (mhd_dropped)
		sc_log(s->log, SC_LOG_WARN, "http: %zu more messages of libmicrohttpd not shown",
		       mhd_dropped);
}

static const char *lookup_query(void *ctx, const char *name)
{
	return mhd.lookup(ctx, MHD_GET_ARGUMENT_KIND, name);
}

static const char *lookup_header(void *ctx, const char *name)
{
	return mhd.lookup(ctx, MHD_HEADER_KIND, name);
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
			mhd.connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		mr = NULL;
		if (b) {
			*b = (struct stream_box){r->stream, r->stream_free, r->stream_ctx,
						 ci ? ci->connect_fd : -1, &st->out_len};
			mr = mhd.response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, b,
							stream_done);
			if (mr)
				r->stream = NULL; /* stream_done frees it */
			else
				free(b);
		}
	} else if (r->body && r->body_len) {
		mr = mhd.response_from_buffer(r->body_len, r->body, MHD_RESPMEM_MUST_FREE);
		if (mr)
			r->body = NULL; /* MHD frees it */
	} else {
		mr = mhd.response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	}
	if (!mr) {
		api_response_free(r);
		return MHD_NO;
	}
	mhd.add_header(mr, "Content-Type", r->content_type ? r->content_type : "application/json");
	for (size_t i = 0; i < r->nheaders; i++)
		mhd.add_header(mr, r->headers[i].name, r->headers[i].value);
	/* no second request on a connection that had no token (nor while
	 * stopping, nor on one over a limit) */
	if (r->status == 401 || st->close)
		mhd.add_header(mr, "Connection", "close");
	st->status = r->status;
	st->out_len = r->body_len;
	st->answered = true;
	enum MHD_Result rc = mhd.queue_response(conn, (unsigned)r->status, mr);
	mhd.destroy_response(mr);
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

/* SandboxFusion's clients retry a 504 on /run_code; the other routes say
 * 503. Both carry Retry-After. */
static int busy_status(const char *url)
{
	return !strcmp(url, "/run_code") || !strcmp(url, "/v1/run_code") ? 504 : 503;
}

static bool is_ping(const char *method, const char *url)
{
	return (!strcmp(method, "GET") || !strcmp(method, "HEAD")) &&
	       (!strcmp(url, "/v1/ping") || !strcmp(url, "/ping"));
}

static const char *given_token(struct MHD_Connection *conn)
{
	const char *h = mhd.lookup(conn, MHD_HEADER_KIND, "Authorization");
	if (h && !strncasecmp(h, "Bearer ", 7)) {
		h += 7;
		while (*h == ' ')
			h++;
		return h;
	}
	return mhd.lookup(conn, MHD_GET_ARGUMENT_KIND, "token");
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
		bool over = conn_phase(s, conn, CONN_BODY, s->o->request_deadline_s);
		const char *cl = mhd.lookup(conn, MHD_HEADER_KIND, "Content-Length");
		uint64_t n = 0;
		if (cl && (sc_parse_uint(cl, 0, UINT64_MAX, &n) < 0 || n > cfg->max_body)) {
			char msg[128];
			snprintf(msg, sizeof(msg), "a request body of at most %zu bytes", cfg->max_body);
			return early(conn, st, 413, msg);
		}
		/* /v1/ping is a health probe's (a kubelet's httpGet cannot
		 * carry a secret): answered without a token, but a token
		 * given must be the right one. */
		const char *tok = given_token(conn);
		st->ping = is_ping(method, url);
		if (atomic_load(&s->stopping)) {
			st->close = true;
			st->pending = 503;
			st->pending_msg = "the server is stopping";
		} else if (over) {
			st->close = true;
			st->pending = busy_status(url);
			st->pending_msg = "too many connections from your address (or to the server): "
					  "retry";
		} else if (st->ping ? tok && !api_token_ok(s->a, tok) : !api_token_ok(s->a, tok)) {
			st->pending = 401;
			st->pending_msg = "a token is required (Authorization: Bearer TOKEN)";
		} else if (!st->ping && api_in_flight(s->a) >= cfg->max_concurrency) {
			/* full now: say so before the body comes (the slot
			 * itself is taken once the body is in) */
			st->pending = busy_status(url);
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
			return early(conn, st, busy_status(url), "the server is busy: retry");
		st->gated = true;
	}
	conn_phase(s, conn, CONN_BUSY, 0);
	char peer[80] = "unix";
	const union MHD_ConnectionInfo *ci = mhd.connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (ci && ci->client_addr)
		addr_string(ci->client_addr, peer, sizeof(peer));
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
	conn_phase(s, conn, CONN_HEAD, s->o->connection_timeout_s + s->o->head_timeout_s);
	char peer[80] = "unix";
	const union MHD_ConnectionInfo *ci = mhd.connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (ci && ci->client_addr)
		addr_string(ci->client_addr, peer, sizeof(peer));
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

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct server *s = cls;
	const struct sc_log *log = s->log;
	/* a flood of connections must not become a flood of lines */
	pthread_mutex_lock(&s->mu);
	bool shown = s->mhd_logged < HTTP_MHD_LOG_MAX;
	*(shown ? &s->mhd_logged : &s->mhd_dropped) += 1;
	pthread_mutex_unlock(&s->mu);
	if (!shown)
		return;
	char msg[SC_ERR_MAX];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	size_t n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	sc_log(log, SC_LOG_WARN, "http: %s", msg);
}

int api_http_serve(struct api *a, const struct api_http_opts *o, atomic_int *stop,
		   struct sc_err *err)
{
	if (api_http_check(api_get_config(a), o, err) < 0 || sc_dl_load(&mhd_lib, err) < 0)
		return -1;
	struct listen_addr la;
	if (parse_listen(o->listen, &la, err) < 0)
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
	int lfd = open_listener(&la, shown, sizeof(shown), err);
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
	s.report_at = mono_now() + HTTP_REPORT_EVERY;
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
	d = mhd.start_daemon(flags | (cert ? MHD_USE_TLS : 0), 0, on_accept, &s, on_request, &s,
			     MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, (void *)&s,
			     MHD_OPTION_LISTEN_SOCKET, (MHD_socket)lfd,
			     MHD_OPTION_CONNECTION_LIMIT, (unsigned)mhd_limit,
			     MHD_OPTION_CONNECTION_TIMEOUT, timeout,
			     MHD_OPTION_CONNECTION_MEMORY_LIMIT, o->max_header,
			     MHD_OPTION_NOTIFY_COMPLETED, on_completed, &s,
			     MHD_OPTION_NOTIFY_CONNECTION, on_connection, &s,
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
		conns_tick(&s);
		if (ticks % 4 == 0)
			api_tick(a);
	}
	/* Drain: no new connections, no new requests (503); let the requests
	 * in flight finish, then end what still runs, which answers at once
	 * (stop_daemon waits for every connection's thread). */
	atomic_store(&s.stopping, true);
	mhd.quiesce_daemon(d);
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
		conns_tick(&s);
	}
	/* also what comes in now (a body that was still arriving) */
	api_cancel(a);
	mhd.stop_daemon(d);
	s.report_at = 0; /* what was dropped since the last summary */
	conns_tick(&s);
	pthread_mutex_destroy(&s.mu);
	close(lfd);
	if (la.unix_socket)
		unlink(((const struct sockaddr_un *)&la.ss)->sun_path);
	free(cert);
	free(key);
	return 0;
}
