/* The HTTP transport's connection table (MHD's connection notifications):
 * a deadline per phase of each connection, room per peer, and the main
 * loop's tick that drops a connection past its deadline. See http.c's
 * head for the rules. */
#include <netinet/in.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "http_priv.h"


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
enum MHD_Result api_http_on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
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

void api_http_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct server *s = cls;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *fi =
			api_mhd.connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		const union MHD_ConnectionInfo *ai =
			api_mhd.connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		struct conn *c = fi ? calloc(1, sizeof(*c)) : NULL;
		if (!c)
			return; /* not watched: MHD's own timeout still applies */
		c->fd = fi->connect_fd;
		c->has_peer = peer_key(ai ? ai->client_addr : NULL, c->peer);
		c->phase = CONN_HEAD;
		c->since = sc_now();
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

bool api_http_conn_phase(struct server *s, struct MHD_Connection *conn, enum conn_phase phase,
			 double limit_s)
{
	const union MHD_ConnectionInfo *ci =
		api_mhd.connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn *c = ci ? ci->socket_context : NULL;
	if (!c)
		return false;
	pthread_mutex_lock(&s->mu);
	c->phase = phase;
	c->since = sc_now();
	c->deadline = limit_s > 0 ? c->since + limit_s : 0;
	bool over = c->over;
	pthread_mutex_unlock(&s->mu);
	return over;
}

void api_http_conns_tick(struct server *s)
{
	double now = sc_now();
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


void api_http_on_mhd_log(void *cls, const char *fmt, va_list ap)
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

