/* The HTTP transport's options and its listener: the address (TCP or a
 * unix socket), the checks before serving (a token on TCP, TLS off
 * loopback), the socket. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "../common/parse.h"
#include "http_priv.h"

void api_http_opts_init(struct api_http_opts *o)
{
	*o = (struct api_http_opts){
		.listen = API_HTTP_DEFAULT_LISTEN,
		.connection_timeout_s = API_HTTP_DEFAULT_CONNECTION_TIMEOUT,
		.head_timeout_s = API_HTTP_DEFAULT_HEAD_TIMEOUT,
		.request_deadline_s = API_HTTP_DEFAULT_REQUEST_DEADLINE,
		.max_header = API_HTTP_DEFAULT_MAX_HEADER,
		.max_connections = API_HTTP_DEFAULT_MAX_CONNECTIONS,
		.drain_s = API_HTTP_DEFAULT_DRAIN,
	};
}

int api_http_parse_listen(const char *s, struct listen_addr *la, struct sc_err *err)
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
	if (api_http_parse_listen(o->listen, &la, err) < 0)
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
	if (o->metrics_listen) {
		struct listen_addr ml;
		if (api_http_parse_listen(o->metrics_listen, &ml, err) < 0)
			return sc_err_wrap(err, "--metrics-listen");
		if (!ml.loopback && !o->metrics_public)
			return sc_fail(err, 0,
				       "--metrics-listen %.100s (not loopback) serves the metrics to anyone "
				       "who can reach it, without a token: add --metrics-public",
				       o->metrics_listen);
	}
	return 0;
}

void api_http_addr_string(const struct sockaddr *sa, char *out, size_t size)
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

int api_http_open_listener(const struct listen_addr *la, char *shown, size_t shown_size,
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
		api_http_addr_string((const struct sockaddr *)&got, shown, shown_size);
	}
	if (listen(fd, HTTP_LISTEN_BACKLOG) < 0) {
		int e = errno;
		close(fd);
		return sc_fail(err, e, "listen");
	}
	return fd;
}

