/* net/proxy.c: the egress proxy. One thread per connection (at most
 * max_conns), each: read the head, check the name before any lookup,
 * resolve (or take the hosts entry), refuse non-public addresses, for
 * CONNECT read the ClientHello and check its SNI, connect to exactly the
 * checked address, relay with bounded buffers and an idle timeout, log. */
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "net.h"

#define RELAY_BUF (64 * 1024)
#define MAX_ADDRS 16
#define REFUSE_SEND_MS 1000      /* to send a refusal to the client */
#define WAIT_SLICE_MS 60000      /* poll()'s longest wait: ms must fit an int */
#define FD_SHORTAGE_PAUSE_MS 50  /* out of fds: let connections end */
#define CONN_STACK (512 * 1024)  /* a connection thread's (getaddrinfo needs room) */

struct proxy {
	const struct net_proxy_config *cfg;
	unsigned max_conns;
	int head_ms, idle_ms, connect_ms;
	pthread_mutex_t mu; /* guards active, sum and log writes */
	pthread_cond_t idle;
	unsigned active;
	struct net_summary *sum;
	uint64_t logged, log_max;
	bool log_full;
};

struct conn {
	struct proxy *p;
	int fd;
	char host[NET_NAME_MAX + 1]; /* for the log: what was asked */
	uint16_t port;
	uint64_t up, down;
	struct sockaddr_storage addrs[MAX_ADDRS];
	socklen_t addrlens[MAX_ADDRS];
	size_t naddrs;
};

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void record(struct proxy *p, const char *host, uint16_t port, enum net_verdict v,
		   const char *reason, uint64_t up, uint64_t down)
{
	struct net_decision d = {.time = wall_now(), .cell = p->cfg->cell, .host = host,
				 .port = port, .verdict = v, .reason = reason,
				 .up = up, .down = down};
	char line[1024];
	int n = net_decision_json(&d, line, sizeof(line));
	pthread_mutex_lock(&p->mu);
	if (n > 0 && p->cfg->log_fd >= 0 && !p->log_full) {
		if (p->logged + (uint64_t)n > p->log_max) {
			/* A cell must not fill the host's disk with refusals. */
			struct net_decision full = {.time = d.time, .cell = d.cell, .host = "",
						    .verdict = NET_ERROR,
						    .reason = "decision log full: no more lines"};
			n = net_decision_json(&full, line, sizeof(line));
			p->log_full = true;
		}
		if (n > 0 && sc_write_all(p->cfg->log_fd, line, (size_t)n) == 0)
			p->logged += (uint64_t)n;
	}
	if (p->sum)
		net_summary_add(p->sum, v, host, reason);
	pthread_mutex_unlock(&p->mu);
}

static void send_all(int fd, const void *buf, size_t len, int timeout_ms)
{
	const char *b = buf;
	int64_t deadline = mono_ms() + timeout_ms;
	while (len) {
		ssize_t n = send(fd, b, len, MSG_NOSIGNAL);
		if (n > 0) {
			b += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			int64_t left = deadline - mono_ms();
			struct pollfd pf = {fd, POLLOUT, 0};
			if (left <= 0 || poll(&pf, 1, (int)left) <= 0)
				return;
			continue;
		}
		return;
	}
}

/* An error answer to the client and its log line. */
static void refuse(struct conn *c, int code, const char *reason)
{
	const char *text = code == 403 ? "Forbidden" : code == 503 ? "Service Unavailable"
				       : code == 502 ? "Bad Gateway" : "Bad Request";
	char body[256], resp[512];
	int bl = snprintf(body, sizeof(body), "sandcell egress: %s\n", reason);
	int rl = snprintf(resp, sizeof(resp),
			  "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nConnection: close\r\n"
			  "Content-Length: %d\r\n\r\n%s",
			  code, text, bl, body);
	/* logged before the answer: whoever reads the log after the client
	 * saw the refusal finds it there */
	record(c->p, c->host, c->port, code == 502 ? NET_ERROR : NET_DENY, reason, 0, 0);
	if (rl > 0 && (size_t)rl < sizeof(resp))
		send_all(c->fd, resp, (size_t)rl, REFUSE_SEND_MS);
}

/* Wait for fd to be ready for `events` until deadline (monotonic ms), also
 * watching stop_fd. 1 ready, 0 timed out or stopped, -1 error. */
static int wait_fd(struct proxy *p, int fd, short events, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - mono_ms();
		if (left <= 0)
			return 0;
		struct pollfd pf[2] = {{fd, events, 0}, {p->cfg->stop_fd, POLLIN, 0}};
		int r = poll(pf, 2, (int)(left > WAIT_SLICE_MS ? WAIT_SLICE_MS : left));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (pf[1].revents)
			return 0;
		if (pf[0].revents)
			return 1;
	}
}

/* Read more into buf (cap bytes) before deadline. Bytes read, 0 on EOF,
 * -1 on error/timeout/stop. */
static ssize_t read_more(struct proxy *p, int fd, char *buf, size_t cap, int64_t deadline)
{
	for (;;) {
		ssize_t n = recv(fd, buf, cap, 0);
		if (n >= 0)
			return n;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -1;
		if (wait_fd(p, fd, POLLIN, deadline) <= 0)
			return -1;
	}
}

/* The hosts entry's address as c's one address (c->addrs zeroed). */
static void use_host_entry(struct conn *c, const struct net_host *h)
{
	if (h->family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&c->addrs[0];
		sin->sin_family = AF_INET;
		sin->sin_port = htons(c->port);
		memcpy(&sin->sin_addr, h->addr, 4);
		c->addrlens[0] = sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&c->addrs[0];
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(c->port);
		memcpy(&sin6->sin6_addr, h->addr, 16);
		c->addrlens[0] = sizeof(*sin6);
	}
	c->naddrs = 1;
}

/* c's addresses: the hosts entry, else every address the name resolves
 * to, all public. NULL, or why not (in reason). */
static const char *resolve(struct conn *c, char *reason, size_t rsize)
{
	const struct net_rules *r = c->p->cfg->rules;
	const struct net_host *h = net_rules_find_host(r, c->host);
	memset(c->addrs, 0, sizeof(c->addrs));
	if (h) {
		use_host_entry(c, h);
		return NULL;
	}
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				 .ai_protocol = IPPROTO_TCP, .ai_flags = AI_ADDRCONFIG};
	struct addrinfo *res = NULL;
	int rc = getaddrinfo(c->host, NULL, &hints, &res);
	if (rc != 0) {
		snprintf(reason, rsize, "cannot resolve: %s", gai_strerror(rc));
		return reason;
	}
	c->naddrs = 0;
	const char *bad = NULL;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		if ((ai->ai_family != AF_INET && ai->ai_family != AF_INET6) ||
		    ai->ai_addrlen > sizeof(c->addrs[0]))
			continue;
		const char *cls = net_addr_class(ai->ai_addr);
		if (cls) {
			bad = cls;
			break;
		}
		if (c->naddrs < MAX_ADDRS) {
			memcpy(&c->addrs[c->naddrs], ai->ai_addr, ai->ai_addrlen);
			c->addrlens[c->naddrs] = (socklen_t)ai->ai_addrlen;
			if (ai->ai_family == AF_INET)
				((struct sockaddr_in *)&c->addrs[c->naddrs])->sin_port = htons(c->port);
			else
				((struct sockaddr_in6 *)&c->addrs[c->naddrs])->sin6_port = htons(c->port);
			c->naddrs++;
		}
	}
	freeaddrinfo(res);
	/* One non-public answer refuses the name: a mixed answer is how DNS
	 * rebinding reaches the host's own network. */
	if (bad) {
		snprintf(reason, rsize, "resolves to a %s address (map it in hosts to allow)", bad);
		return reason;
	}
	if (c->naddrs == 0) {
		snprintf(reason, rsize, "cannot resolve: no address");
		return reason;
	}
	return NULL;
}

/* Connect to one of the checked addresses; the fd or -1 (reason set). */
static int connect_out(struct conn *c, char *reason, size_t rsize)
{
	int last = 0;
	for (size_t i = 0; i < c->naddrs; i++) {
		int fd = socket(c->addrs[i].ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
				IPPROTO_TCP);
		if (fd < 0) {
			last = errno;
			continue;
		}
		int rc = connect(fd, (struct sockaddr *)&c->addrs[i], c->addrlens[i]);
		if (rc < 0 && errno == EINPROGRESS) {
			int w = wait_fd(c->p, fd, POLLOUT, mono_ms() + c->p->connect_ms);
			int soerr = 0;
			socklen_t sl = sizeof(soerr);
			if (w == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0) {
				rc = soerr ? -1 : 0;
				errno = soerr;
			} else {
				rc = -1;
				errno = ETIMEDOUT;
			}
		}
		if (rc == 0) {
			int one = 1;
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			return fd;
		}
		last = errno;
		close(fd);
	}
	snprintf(reason, rsize, "connect: %s", strerror(last ? last : ECONNREFUSED));
	return -1;
}

struct dir {
	int from, to;
	char *buf;
	size_t len, off;
	uint64_t cap;   /* bytes still to take from `from` */
	uint64_t *count;
	bool eof, done, half_close;
};

static int dir_step(struct dir *d, short from_rev, short to_rev)
{
	if (d->len > d->off && (to_rev & (POLLOUT | POLLERR | POLLHUP))) {
		ssize_t n = send(d->to, d->buf + d->off, d->len - d->off, MSG_NOSIGNAL);
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -1;
		if (n > 0)
			d->off += (size_t)n;
		if (d->off == d->len)
			d->off = d->len = 0;
	}
	if (!d->eof && d->len == 0 && (from_rev & (POLLIN | POLLHUP | POLLERR))) {
		size_t want = RELAY_BUF;
		if (d->cap < want)
			want = (size_t)d->cap;
		ssize_t n = recv(d->from, d->buf, want, 0);
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -1;
		if (n == 0)
			d->eof = true;
		if (n > 0) {
			d->len = (size_t)n;
			d->cap -= (uint64_t)n;
			*d->count += (uint64_t)n;
		}
	}
	if (d->cap == 0 && !d->eof) {
		d->eof = true;
		d->half_close = false;
	}
	if (d->eof && d->len == 0 && !d->done) {
		if (d->half_close)
			shutdown(d->to, SHUT_WR);
		d->done = true;
	}
	return 0;
}

/* Relay until both directions end, an error, idle timeout or stop.
 * up_cap bounds what the client may send (plain HTTP: the body). */
static void relay(struct conn *c, int up_fd, uint64_t up_cap)
{
	char *bufs = malloc(2 * RELAY_BUF);
	if (!bufs)
		return;
	struct dir up = {c->fd, up_fd, bufs, 0, 0, up_cap, &c->up, false, false, true};
	struct dir down = {up_fd, c->fd, bufs + RELAY_BUF, 0, 0, UINT64_MAX, &c->down,
			   false, false, true};
	if (up_cap == 0)
		up.eof = up.done = true;
	while (!(up.done && down.done)) {
		struct pollfd pf[3] = {{c->fd, 0, 0}, {up_fd, 0, 0}, {c->p->cfg->stop_fd, POLLIN, 0}};
		if (!up.eof && up.len == 0)
			pf[0].events |= POLLIN;
		if (down.len > down.off)
			pf[0].events |= POLLOUT;
		if (!down.eof && down.len == 0)
			pf[1].events |= POLLIN;
		if (up.len > up.off)
			pf[1].events |= POLLOUT;
		int r = poll(pf, 3, c->p->idle_ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || pf[2].revents)
			break;
		if (dir_step(&up, pf[0].revents, pf[1].revents) < 0 ||
		    dir_step(&down, pf[1].revents, pf[0].revents) < 0)
			break;
		/* the client went away entirely: nothing more to deliver */
		if ((pf[0].revents & (POLLERR)) && !(pf[0].revents & POLLIN))
			break;
	}
	free(bufs);
}

/* Read the request's head within head_ms into head (NET_HEAD_MAX bytes,
 * *have of them read) and parse it: 0 with req filled and c's host and
 * port set, or -1 once refused or logged. */
static int read_head(struct conn *c, char *head, size_t *have, struct net_request *req)
{
	struct proxy *p = c->p;
	int64_t deadline = mono_ms() + p->head_ms;
	const char *why = NULL;
	int rc = 0;
	while (rc == 0) {
		ssize_t n = read_more(p, c->fd, head + *have, NET_HEAD_MAX - *have, deadline);
		if (n <= 0) {
			c->host[0] = '\0';
			record(p, "", 0, NET_DENY, n == 0 ? "closed before a request" :
				     "no request in time", 0, 0);
			return -1;
		}
		*have += (size_t)n;
		rc = net_parse_head(head, *have, req, &why);
	}
	snprintf(c->host, sizeof(c->host), "%s", req->host);
	c->port = req->port;
	if (rc < 0) {
		refuse(c, 400, why);
		return -1;
	}
	return 0;
}

/* The name against the allowlist, then its addresses (all public, or a
 * hosts entry) into c: 0, or -1 once refused (403). */
static int check_destination(struct conn *c, const struct net_request *req)
{
	if (!net_rules_allows(c->p->cfg->rules, req->host, req->port)) {
		refuse(c, 403, "not in allowlist");
		return -1;
	}
	char reason[160];
	const char *why = resolve(c, reason, sizeof(reason));
	if (why) {
		refuse(c, 403, why);
		return -1;
	}
	return 0;
}

/* CONNECT: say 200, then read the ClientHello (with a head_ms of its own,
 * whatever the lookup took; what came after the head counts) and check
 * that its server name is the CONNECT host. The hello (malloc'd, *len
 * bytes, to be sent on), or NULL once logged. */
static char *read_hello(struct conn *c, const struct net_request *req, const char *head,
			size_t have, size_t *len)
{
	struct proxy *p = c->p;
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	send_all(c->fd, ok, sizeof(ok) - 1, p->head_ms);
	int64_t deadline = mono_ms() + p->head_ms;
	char *hello = malloc(NET_HELLO_MAX);
	if (!hello)
		return NULL;
	size_t n = have - req->head_len;
	if (n > NET_HELLO_MAX)
		n = NET_HELLO_MAX;
	memcpy(hello, head + req->head_len, n);
	char sni[NET_NAME_MAX + 1];
	const char *why = NULL;
	int s;
	while ((s = net_tls_sni((uint8_t *)hello, n, sni, &why)) == 0) {
		ssize_t got = n < NET_HELLO_MAX
				      ? read_more(p, c->fd, hello + n, NET_HELLO_MAX - n, deadline)
				      : -1;
		if (got <= 0) {
			why = "no TLS ClientHello in time";
			s = -1;
			break;
		}
		n += (size_t)got;
	}
	char reason[160];
	if (s > 0 && strcmp(sni, req->host) != 0) {
		snprintf(reason, sizeof(reason), "TLS server name '%.64s' is not the CONNECT host",
			 sni);
		why = reason;
		s = -1;
	}
	if (s < 0) {
		record(p, c->host, c->port, NET_DENY, why, 0, 0);
		free(hello);
		return NULL;
	}
	*len = n;
	return hello;
}

/* Send upstream what the client sent past the head: the ClientHello, or
 * the rewritten head and what of the body was read with it. Returns what
 * the client may still send (the rest of a plain request's body). */
static uint64_t send_first(struct conn *c, int up_fd, const struct net_request *req,
			   const char *head, size_t have, const char *hello, size_t hello_len)
{
	int ms = c->p->idle_ms;
	if (req->kind == NET_REQ_CONNECT) {
		send_all(up_fd, hello, hello_len, ms);
		c->up += hello_len;
		return UINT64_MAX;
	}
	send_all(up_fd, req->fwd, req->fwd_len, ms);
	size_t extra = have - req->head_len;
	if (extra > req->body_len)
		extra = (size_t)req->body_len;
	send_all(up_fd, head + req->head_len, extra, ms);
	c->up += req->fwd_len + extra;
	return req->body_len - extra;
}

static void serve_conn(struct conn *c)
{
	struct proxy *p = c->p;
	char head[NET_HEAD_MAX];
	size_t have = 0;
	_cleanup_free_ struct net_request *req = malloc(sizeof(*req));
	if (!req || read_head(c, head, &have, req) < 0 || check_destination(c, req) < 0)
		return;
	char *hello = NULL;
	size_t hello_len = 0;
	if (req->kind == NET_REQ_CONNECT && !(hello = read_hello(c, req, head, have, &hello_len)))
		return;
	char reason[160];
	int up_fd = connect_out(c, reason, sizeof(reason));
	if (up_fd < 0) {
		if (req->kind == NET_REQ_HTTP)
			refuse(c, 502, reason);
		else
			record(p, c->host, c->port, NET_ERROR, reason, 0, 0);
		free(hello);
		return;
	}
	record(p, c->host, c->port, NET_ALLOW, "allowed", 0, 0);
	uint64_t up_cap = send_first(c, up_fd, req, head, have, hello, hello_len);
	free(hello);
	relay(c, up_fd, up_cap);
	close(up_fd);
	record(p, c->host, c->port, NET_CLOSE, "closed", c->up, c->down);
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;
	struct proxy *p = c->p;
	serve_conn(c);
	close(c->fd);
	free(c);
	pthread_mutex_lock(&p->mu);
	p->active--;
	pthread_cond_broadcast(&p->idle);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

static void refuse_busy(struct proxy *p, int fd)
{
	struct conn c = {.p = p, .fd = fd};
	refuse(&c, 503, "too many connections");
	close(fd);
}

/* A connection's own thread, within max_conns; refused (503) when over
 * it, or when the thread cannot start. */
static void start_conn(struct proxy *p, const pthread_attr_t *attr, int fd)
{
	pthread_mutex_lock(&p->mu);
	bool busy = p->active >= p->max_conns;
	if (!busy)
		p->active++;
	pthread_mutex_unlock(&p->mu);
	if (busy) {
		refuse_busy(p, fd);
		return;
	}
	struct conn *c = calloc(1, sizeof(*c));
	pthread_t t;
	if (c) {
		c->p = p;
		c->fd = fd;
	}
	if (!c || pthread_create(&t, attr, conn_main, c) != 0) {
		free(c);
		pthread_mutex_lock(&p->mu);
		p->active--;
		pthread_mutex_unlock(&p->mu);
		refuse_busy(p, fd);
	}
}

/* An accept4 error (errno) that passes: the connection went, or the host
 * is short of fds or memory for now (out of fds: wait for some to end). */
static bool accept_error_passes(void)
{
	int e = errno;
	if (e == EMFILE || e == ENFILE) {
		poll(NULL, 0, FD_SHORTAGE_PAUSE_MS);
		return true;
	}
	return e == EINTR || e == EAGAIN || e == ECONNABORTED || e == ENOBUFS || e == ENOMEM;
}

/* Accept until stop_fd is readable: 0, or -1 when the listener fails. */
static int accept_loop(struct proxy *p, const pthread_attr_t *attr, struct sc_err *err)
{
	const struct net_proxy_config *cfg = p->cfg;
	for (;;) {
		struct pollfd pf[2] = {{cfg->listen_fd, POLLIN, 0}, {cfg->stop_fd, POLLIN, 0}};
		int r = poll(pf, 2, -1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return sc_fail(err, errno, "egress proxy: poll");
		if (pf[1].revents)
			return 0;
		if (pf[0].revents & (POLLERR | POLLNVAL))
			return sc_fail(err, 0, "egress proxy: the listening socket failed");
		int fd = accept4(cfg->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd >= 0)
			start_conn(p, attr, fd);
		else if (!accept_error_passes())
			return sc_fail(err, errno, "egress proxy: accept");
	}
}

int net_proxy_serve(const struct net_proxy_config *cfg, struct net_summary *sum,
		    struct sc_err *err)
{
	if (!cfg || !cfg->rules || cfg->listen_fd < 0 || cfg->stop_fd < 0)
		return sc_fail(err, EINVAL, "egress proxy: missing listener, rules or stop fd");
	struct proxy p = {.cfg = cfg, .sum = sum};
	p.max_conns = cfg->max_conns ? cfg->max_conns : NET_PROXY_MAX_CONNS;
	p.head_ms = cfg->head_timeout_ms > 0 ? cfg->head_timeout_ms : NET_HEAD_TIMEOUT_MS;
	p.idle_ms = cfg->idle_timeout_ms > 0 ? cfg->idle_timeout_ms : NET_IDLE_TIMEOUT_MS;
	p.connect_ms = cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms : NET_CONNECT_TIMEOUT_MS;
	p.log_max = cfg->log_max ? cfg->log_max : NET_LOG_MAX;
	if (sum)
		memset(sum, 0, sizeof(*sum));
	pthread_mutex_init(&p.mu, NULL);
	pthread_cond_init(&p.idle, NULL);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, CONN_STACK);
	int ret = accept_loop(&p, &attr, err);
	pthread_mutex_lock(&p.mu);
	while (p.active > 0)
		pthread_cond_wait(&p.idle, &p.mu);
	pthread_mutex_unlock(&p.mu);
	pthread_attr_destroy(&attr);
	pthread_cond_destroy(&p.idle);
	pthread_mutex_destroy(&p.mu);
	return ret;
}
