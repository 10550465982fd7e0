/* Published ports: the host listeners (made by the caller, in the host's
 * network namespace) and the relay that serves them from inside the cell.
 *
 * The relay is one process forked by init once the cell is locked down:
 * it holds the listeners and nothing else (no stdio, no init socket), and
 * copies bytes both ways between each accepted host connection and a
 * connection to 127.0.0.1:cell_port made in the cell's own network
 * namespace, passing each side's EOF on as shutdown(SHUT_WR). Memory is
 * bounded: RT_PORTS_MAX_CONNS connections of two RT_PORTS_BUF buffers. */
#include "ports.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- host side: the listeners ---- */

static int bind_failure(const struct cell_port *p, int e, struct sc_err *err)
{
	if (e == EADDRINUSE)
		return sc_fail(err, e, "host port %s:%u is already in use (publish another, or 0 "
				       "for a free one)", p->host_addr, p->host_port);
	if (e == EACCES && p->host_port < 1024)
		return sc_fail(err, e, "host port %u is privileged (below 1024): only root may "
				       "publish it (or lower net.ipv4.ip_unprivileged_port_start)",
			       p->host_port);
	if (e == EADDRNOTAVAIL)
		return sc_fail(err, e, "host address %s is not an address of this host",
			       p->host_addr);
	return sc_fail(err, e, "listen on host port %s:%u", p->host_addr, p->host_port);
}

static int listen_one(struct cell_port *p, struct sc_err *err)
{
	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof(ss));
	struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
	socklen_t len;
	if (inet_pton(AF_INET, p->host_addr, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons(p->host_port);
		len = sizeof(*v4);
	} else if (inet_pton(AF_INET6, p->host_addr, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons(p->host_port);
		len = sizeof(*v6);
	} else {
		return sc_fail(err, EINVAL, "bad host address '%.60s': a numeric IPv4 or IPv6 "
					    "address", p->host_addr);
	}
	_cleanup_fd_ int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return sc_fail(err, errno, "socket for host port %u", p->host_port);
	int one = 1;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss.ss_family == AF_INET6)
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) < 0)
		return bind_failure(p, errno, err);
	if (listen(fd, 128) < 0)
		return sc_fail(err, errno, "listen on host port %s:%u", p->host_addr, p->host_port);
	len = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return sc_fail(err, errno, "the port of host address %s", p->host_addr);
	p->host_port = ntohs(ss.ss_family == AF_INET ? v4->sin_port : v6->sin6_port);
	p->fd = steal_fd(&fd);
	return 0;
}

int cell_ports_listen(struct cell_port *ports, size_t n, struct sc_err *err)
{
	for (size_t i = 0; i < n; i++)
		ports[i].fd = -1;
	for (size_t i = 0; i < n; i++) {
		if (listen_one(&ports[i], err) < 0) {
			cell_ports_close(ports, n);
			return -1;
		}
	}
	return 0;
}

void cell_ports_close(struct cell_port *ports, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sc_closep(&ports[i].fd);
}

/* ---- in the cell: the relay ---- */

struct half {
	char *buf;
	size_t off, len;
	bool eof;  /* the source said EOF */
	bool shut; /* ... and it was passed on (shutdown(SHUT_WR)) */
};

struct conn {
	int host, cell; /* -1: slot free */
	bool connecting;
	struct half up, down; /* host -> cell, cell -> host */
};

static void conn_close(struct conn *c)
{
	close(c->host);
	close(c->cell);
	free(c->up.buf);
	memset(c, 0, sizeof(*c));
	c->host = c->cell = -1;
}

static int connect_cell(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	return fd;
}

/* One accept on listener l: a free slot gets the connection and its
 * buffers, else (or when the cell's port refuses) it is closed. */
static void accept_one(int l, uint16_t cell_port, struct conn *conns, size_t *nconns)
{
	int h = accept4(l, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (h < 0)
		return;
	struct conn *c = NULL;
	for (size_t i = 0; i < RT_PORTS_MAX_CONNS && !c; i++)
		if (conns[i].host < 0)
			c = &conns[i];
	char *buf = c ? malloc(2 * RT_PORTS_BUF) : NULL;
	int cell = buf ? connect_cell(cell_port) : -1;
	if (cell < 0) {
		free(buf);
		close(h);
		return;
	}
	c->host = h;
	c->cell = cell;
	c->connecting = true;
	c->up.buf = buf;
	c->down.buf = buf + RT_PORTS_BUF;
	(*nconns)++;
}

/* One buffer's worth from src to dst without blocking: 1 when it all
 * went (there may be more), 0 when a side would block, -1 when the
 * connection is broken. */
static int pump_once(int src, int dst, struct half *h)
{
	if (h->len == 0 && !h->eof) {
		ssize_t n = recv(src, h->buf, RT_PORTS_BUF, 0);
		if (n > 0) {
			h->off = 0;
			h->len = (size_t)n;
		} else if (n == 0) {
			h->eof = true;
		} else {
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		}
	}
	while (h->len > 0) {
		ssize_t n = send(dst, h->buf + h->off, h->len, MSG_NOSIGNAL);
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		h->off += (size_t)n;
		h->len -= (size_t)n;
	}
	if (h->eof && !h->shut) {
		(void)shutdown(dst, SHUT_WR);
		h->shut = true;
	}
	return !h->eof;
}

/* Moves what can move from src to dst, up to 8 buffers (then the other
 * connections get their turn); -1 when the connection is broken. */
static int pump(int src, int dst, struct half *h)
{
	for (int i = 0; i < 8; i++) {
		int rc = pump_once(src, dst, h);
		if (rc <= 0)
			return rc;
	}
	return 0;
}

static void conn_step(struct conn *c, bool failed, size_t *nconns)
{
	if (failed)
		goto broken;
	if (c->connecting) {
		int e = 0;
		socklen_t len = sizeof(e);
		if (getsockopt(c->cell, SOL_SOCKET, SO_ERROR, &e, &len) < 0 || e != 0)
			goto broken;
		struct pollfd p = {.fd = c->cell, .events = POLLOUT};
		if (poll(&p, 1, 0) <= 0)
			return;
		c->connecting = false;
	}
	if (pump(c->host, c->cell, &c->up) < 0 || pump(c->cell, c->host, &c->down) < 0)
		goto broken;
	if (!(c->up.shut && c->down.shut))
		return;
broken:
	conn_close(c);
	(*nconns)--;
}

static short host_events(const struct conn *c)
{
	return (short)((!c->up.eof && c->up.len == 0 ? POLLIN : 0) | (c->down.len ? POLLOUT : 0));
}

static short cell_events(const struct conn *c)
{
	if (c->connecting)
		return POLLOUT;
	return (short)((!c->down.eof && c->down.len == 0 ? POLLIN : 0) | (c->up.len ? POLLOUT : 0));
}

static _Noreturn void relay_main(const struct cell_port *ports, size_t nports)
{
	static struct conn conns[RT_PORTS_MAX_CONNS];
	static struct pollfd pfd[CELL_MAX_PORTS + 2 * RT_PORTS_MAX_CONNS];
	static size_t slot_of[2 * RT_PORTS_MAX_CONNS];
	size_t nconns = 0;
	for (size_t i = 0; i < RT_PORTS_MAX_CONNS; i++)
		conns[i].host = conns[i].cell = -1;
	for (;;) {
		size_t n = 0;
		for (size_t i = 0; i < nports; i++)
			pfd[n++] = (struct pollfd){.fd = ports[i].fd,
						   .events = nconns < RT_PORTS_MAX_CONNS ? POLLIN : 0};
		for (size_t i = 0; i < RT_PORTS_MAX_CONNS; i++) {
			if (conns[i].host < 0)
				continue;
			slot_of[n - nports] = i;
			pfd[n++] = (struct pollfd){.fd = conns[i].host, .events = host_events(&conns[i])};
			slot_of[n - nports] = i;
			pfd[n++] = (struct pollfd){.fd = conns[i].cell, .events = cell_events(&conns[i])};
		}
		if (poll(pfd, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		for (size_t i = nports; i < n; i += 2) {
			short ev = pfd[i].revents | pfd[i + 1].revents;
			if (ev && conns[slot_of[i - nports]].host >= 0)
				conn_step(&conns[slot_of[i - nports]], ev & POLLERR, &nconns);
		}
		for (size_t i = 0; i < nports; i++)
			if (pfd[i].revents & POLLIN)
				accept_one(ports[i].fd, ports[i].cell_port, conns, &nconns);
	}
}

int rt_ports_start_relay(const struct cell_plan *plan, struct sc_err *err)
{
	const struct cell_spec *spec = plan->spec;
	if (spec->nports == 0)
		return 0;
	/* under the cell's seccomp filter now: a policy that allows no TCP
	 * socket (strict) would leave a relay that drops every connection */
	int probe = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (probe < 0)
		return sc_fail(err, errno, "-p: the cell's policy allows no TCP sockets (its "
					   "seccomp filter), so no port can be relayed into it");
	close(probe);
	pid_t pid = fork();
	if (pid < 0)
		return sc_fail(err, errno, "fork the port relay");
	if (pid == 0) {
		prctl(PR_SET_NAME, "sandcell-relay");
		signal(SIGPIPE, SIG_IGN);
		/* not even the setid capabilities init keeps for commands */
		if (rt_exec_become(false, 0, 0) < 0)
			_exit(1);
		/* the listeners only: not the command's stdio (whose EOF the
		 * host waits for), not init's socket or channels */
		int keep[CELL_MAX_PORTS];
		for (size_t i = 0; i < spec->nports; i++)
			keep[i] = spec->ports[i].fd;
		rt_close_fds_except(keep, spec->nports);
		close(0);
		close(1);
		close(2);
		relay_main(spec->ports, spec->nports);
	}
	for (size_t i = 0; i < spec->nports; i++)
		close(spec->ports[i].fd);
	return 0;
}
