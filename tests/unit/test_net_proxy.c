/* net/proxy.c over real sockets on loopback: a fixture server started
 * here, the proxy in a thread, clients that speak CONNECT and plain HTTP.
 * "Trusted" names reach the fixture through the hosts map, so nothing
 * leaves the machine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <arpa/inet.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include "net/net.h"

/* ---- the fixture: accepts, reads until a blank line or `want` bytes,
 * keeps what it got, answers "pong\n", closes ---- */
struct fixture {
	int lfd, stop[2];
	uint16_t port;
	pthread_t t;
	atomic_int conns;
	pthread_mutex_t mu;
	char got[8192];
	size_t got_len;
	size_t want;       /* read this many bytes, else: */
	const char *until; /* read until this appears (NULL: a blank line) */
};

static void *fixture_main(void *arg)
{
	struct fixture *f = arg;
	for (;;) {
		struct pollfd pf[2] = {{f->lfd, POLLIN, 0}, {f->stop[0], POLLIN, 0}};
		if (poll(pf, 2, -1) < 0 || pf[1].revents)
			break;
		int fd = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		atomic_fetch_add(&f->conns, 1);
		char buf[8192];
		size_t n = 0;
		while (n < sizeof(buf)) {
			ssize_t r = read(fd, buf + n, sizeof(buf) - n);
			if (r <= 0)
				break;
			n += (size_t)r;
			const char *u = f->until ? f->until : "\r\n\r\n";
			if (f->want ? n >= f->want : memmem(buf, n, u, strlen(u)) != NULL)
				break;
		}
		pthread_mutex_lock(&f->mu);
		memcpy(f->got, buf, n);
		f->got_len = n;
		pthread_mutex_unlock(&f->mu);
		(void)!write(fd, "pong\n", 5);
		close(fd);
	}
	return NULL;
}

static int listen_loopback(uint16_t *port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(fd, 16), 0);
	socklen_t sl = sizeof(sin);
	getsockname(fd, (struct sockaddr *)&sin, &sl);
	*port = ntohs(sin.sin_port);
	return fd;
}

/* ---- the proxy under test ---- */
struct env {
	struct fixture fx;
	struct net_rules rules;
	struct net_proxy_config cfg;
	struct net_summary sum;
	int stop[2], logp[2];
	uint16_t pport;
	pthread_t t;
	int rc;
	struct sc_err err;
};

static void *proxy_main(void *arg)
{
	struct env *e = arg;
	e->rc = net_proxy_serve(&e->cfg, &e->sum, &e->err);
	return NULL;
}

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));
	struct sc_err err = {0};
	pthread_mutex_init(&e->fx.mu, NULL);
	assert_int_equal(pipe2(e->fx.stop, O_CLOEXEC), 0);
	e->fx.lfd = listen_loopback(&e->fx.port);
	assert_int_equal(pthread_create(&e->fx.t, NULL, fixture_main, &e->fx), 0);

	net_rules_init(&e->rules);
	char entry[64];
	snprintf(entry, sizeof(entry), "fixture.test:%u", e->fx.port);
	assert_int_equal(net_rules_allow(&e->rules, entry, &err), 0);
	snprintf(entry, sizeof(entry), "*.fixture.test:%u", e->fx.port);
	assert_int_equal(net_rules_allow(&e->rules, entry, &err), 0);
	snprintf(entry, sizeof(entry), "localhost:%u", e->fx.port);
	assert_int_equal(net_rules_allow(&e->rules, entry, &err), 0);
	snprintf(entry, sizeof(entry), "other.test:%u", e->fx.port);
	assert_int_equal(net_rules_allow(&e->rules, entry, &err), 0);
	assert_int_equal(net_rules_host(&e->rules, "fixture.test", "127.0.0.1", &err), 0);
	assert_int_equal(net_rules_host(&e->rules, "a.fixture.test", "127.0.0.1", &err), 0);
	assert_int_equal(net_rules_host(&e->rules, "other.test", "127.0.0.1", &err), 0);

	assert_int_equal(pipe2(e->stop, O_CLOEXEC), 0);
	assert_int_equal(pipe2(e->logp, O_CLOEXEC), 0);
	e->cfg.rules = &e->rules;
	e->cfg.cell = "c1";
	e->cfg.listen_fd = listen_loopback(&e->pport);
	e->cfg.log_fd = e->logp[1];
	e->cfg.stop_fd = e->stop[0];
	e->cfg.max_conns = 2;
	assert_int_equal(pthread_create(&e->t, NULL, proxy_main, e), 0);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;
	close(e->stop[1]);
	pthread_join(e->t, NULL);
	close(e->fx.stop[1]);
	pthread_join(e->fx.t, NULL);
	close(e->cfg.listen_fd);
	close(e->fx.lfd);
	close(e->stop[0]);
	close(e->logp[0]);
	close(e->logp[1]);
	close(e->fx.stop[0]);
	free(e);
	return 0;
}

/* Stop the proxy and return its log lines as a cJSON array. */
static cJSON *stop_and_log(struct env *e)
{
	assert_int_equal(write(e->stop[1], "x", 1), 1);
	pthread_join(e->t, NULL);
	e->t = pthread_self();
	assert_int_equal(e->rc, 0);
	close(e->stop[1]);
	e->stop[1] = open("/dev/null", O_WRONLY | O_CLOEXEC);
	/* restart nothing: teardown joins a finished thread no more */
	static char buf[65536];
	fcntl(e->logp[0], F_SETFL, O_NONBLOCK);
	ssize_t n = read(e->logp[0], buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	cJSON *arr = cJSON_CreateArray();
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		cJSON *j = cJSON_Parse(line);
		assert_non_null(j);
		cJSON_AddItemToArray(arr, j);
	}
	return arr;
}

static const char *field(cJSON *arr, int i, const char *name)
{
	cJSON *j = cJSON_GetObjectItem(cJSON_GetArrayItem(arr, i), name);
	assert_non_null(j);
	return cJSON_IsString(j) ? j->valuestring : "";
}

static int dial(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	return fd;
}

static void say(int fd, const void *s, size_t n) { assert_int_equal(write(fd, s, n), (ssize_t)n); }

/* Everything until EOF. */
static size_t slurp(int fd, char *buf, size_t size)
{
	size_t n = 0;
	ssize_t r;
	while (n < size - 1 && (r = read(fd, buf + n, size - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = '\0';
	return n;
}

/* Read exactly the 200 line of a CONNECT. */
static void expect_established(int fd)
{
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	char buf[sizeof(ok)];
	size_t n = 0;
	while (n < sizeof(ok) - 1) {
		ssize_t r = read(fd, buf + n, sizeof(ok) - 1 - n);
		assert_true(r > 0);
		n += (size_t)r;
	}
	assert_memory_equal(buf, ok, sizeof(ok) - 1);
}

static size_t client_hello(uint8_t *out, const char *name)
{
	size_t l = strlen(name);
	uint8_t body[600];
	size_t n = 0;
	body[n++] = 3, body[n++] = 3;
	memset(body + n, 7, 32), n += 32;
	body[n++] = 0;
	body[n++] = 0, body[n++] = 2, body[n++] = 0x13, body[n++] = 0x01;
	body[n++] = 1, body[n++] = 0;
	size_t elen = 9 + l;
	body[n++] = (uint8_t)(elen >> 8), body[n++] = (uint8_t)elen;
	body[n++] = 0, body[n++] = 0, body[n++] = (uint8_t)((l + 5) >> 8), body[n++] = (uint8_t)(l + 5);
	body[n++] = (uint8_t)((l + 3) >> 8), body[n++] = (uint8_t)(l + 3), body[n++] = 0;
	body[n++] = (uint8_t)(l >> 8), body[n++] = (uint8_t)l;
	memcpy(body + n, name, l), n += l;
	size_t m = 0;
	out[m++] = 0x16, out[m++] = 3, out[m++] = 1;
	out[m++] = (uint8_t)((n + 4) >> 8), out[m++] = (uint8_t)(n + 4);
	out[m++] = 1, out[m++] = 0, out[m++] = (uint8_t)(n >> 8), out[m++] = (uint8_t)n;
	memcpy(out + m, body, n);
	return m + n;
}

static void connect_allowed_relays_both_ways(void **state)
{
	struct env *e = *state;
	uint8_t hello[700];
	size_t hl = client_hello(hello, "Fixture.Test");
	e->fx.want = hl;
	int fd = dial(e->pport);
	char req[128];
	int n = snprintf(req, sizeof(req), "CONNECT fixture.test:%u HTTP/1.1\r\nHost: x\r\n\r\n",
			 e->fx.port);
	say(fd, req, (size_t)n);
	expect_established(fd);
	say(fd, hello, hl);
	char buf[256];
	assert_int_equal(slurp(fd, buf, sizeof(buf)), 5);
	assert_string_equal(buf, "pong\n");
	close(fd);
	assert_int_equal(atomic_load(&e->fx.conns), 1);
	assert_int_equal(e->fx.got_len, hl);
	assert_memory_equal(e->fx.got, hello, hl);

	cJSON *log = stop_and_log(e);
	/* the decision when it is made, the byte counts when it closes */
	assert_int_equal(cJSON_GetArraySize(log), 2);
	assert_string_equal(field(log, 0, "verdict"), "allow");
	assert_string_equal(field(log, 0, "host"), "fixture.test");
	assert_string_equal(field(log, 0, "cell"), "c1");
	assert_string_equal(field(log, 1, "verdict"), "close");
	assert_string_equal(field(log, 1, "host"), "fixture.test");
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(log, 1), "up")->valueint, (int)hl);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(log, 1), "down")->valueint, 5);
	assert_int_equal(e->sum.allowed, 1);
	assert_int_equal(e->sum.ndenied, 0);
	cJSON_Delete(log);
}

/* One refused request: the answer starts with `status`, the fixture saw
 * nothing, the log says `reason`. */
static void expect_refused(struct env *e, const void *req, size_t len, const char *status,
			   const char *reason)
{
	int fd = dial(e->pport);
	say(fd, req, len);
	char buf[1024];
	slurp(fd, buf, sizeof(buf));
	close(fd);
	if (status && strncmp(buf, status, strlen(status)) != 0)
		fail_msg("answer '%.60s', want '%s'", buf, status);
	cJSON *log = stop_and_log(e);
	assert_int_equal(cJSON_GetArraySize(log), 1);
	assert_string_equal(field(log, 0, "verdict"), "deny");
	if (!strstr(field(log, 0, "reason"), reason))
		fail_msg("reason '%s', want '%s'", field(log, 0, "reason"), reason);
	assert_int_equal(atomic_load(&e->fx.conns), 0);
	assert_int_equal(e->sum.denied, 1);
	cJSON_Delete(log);
}

static void connect_denied_name(void **state)
{
	struct env *e = *state;
	char req[128];
	int n = snprintf(req, sizeof(req), "CONNECT denied.test:%u HTTP/1.1\r\n\r\n", e->fx.port);
	expect_refused(e, req, (size_t)n, "HTTP/1.1 403", "not in allowlist");
	assert_string_equal(e->sum.denied_list[0].host, "denied.test");
}

static void connect_wrong_port(void **state)
{
	struct env *e = *state;
	expect_refused(e, "CONNECT fixture.test:443 HTTP/1.1\r\n\r\n",
		       sizeof("CONNECT fixture.test:443 HTTP/1.1\r\n\r\n") - 1, "HTTP/1.1 403",
		       "not in allowlist");
}

static void connect_ip_literal(void **state)
{
	struct env *e = *state;
	char req[128];
	int n = snprintf(req, sizeof(req), "CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\n", e->fx.port);
	expect_refused(e, req, (size_t)n, "HTTP/1.1 400", "IP literal");
	char want[64];
	snprintf(want, sizeof(want), "127.0.0.1:%u", e->fx.port);
	assert_string_equal(e->sum.denied_list[0].host, want);
}

static void name_resolving_to_loopback_refused(void **state)
{
	struct env *e = *state;
	char req[128];
	int n = snprintf(req, sizeof(req), "CONNECT localhost:%u HTTP/1.1\r\n\r\n", e->fx.port);
	expect_refused(e, req, (size_t)n, "HTTP/1.1 403", "loopback");
}

static void sni_mismatch_refused(void **state)
{
	struct env *e = *state;
	uint8_t msg[1024];
	int n = snprintf((char *)msg, sizeof(msg), "CONNECT other.test:%u HTTP/1.1\r\n\r\n",
			 e->fx.port);
	/* the ClientHello in the same write as the head, naming another host */
	size_t hl = client_hello(msg + n, "fixture.test");
	expect_refused(e, msg, (size_t)n + hl, "HTTP/1.1 200", "is not the CONNECT host");
}

static void connect_without_tls_refused(void **state)
{
	struct env *e = *state;
	char req[128];
	int n = snprintf(req, sizeof(req), "CONNECT fixture.test:%u HTTP/1.1\r\n\r\nSSH-2.0-x\r\n",
			 e->fx.port);
	expect_refused(e, req, (size_t)n, "HTTP/1.1 200", "not a TLS handshake");
}

static void plain_http_forwarded_in_origin_form(void **state)
{
	struct env *e = *state;
	int fd = dial(e->pport);
	char req[256];
	int n = snprintf(req, sizeof(req),
			 "GET http://a.fixture.test:%u/simple/?x HTTP/1.1\r\nHost: a.fixture.test:%u\r\n"
			 "Proxy-Connection: keep-alive\r\n\r\n",
			 e->fx.port, e->fx.port);
	say(fd, req, (size_t)n);
	char buf[256];
	slurp(fd, buf, sizeof(buf));
	close(fd);
	assert_string_equal(buf, "pong\n");
	char want[256];
	snprintf(want, sizeof(want),
		 "GET /simple/?x HTTP/1.1\r\nHost: a.fixture.test:%u\r\nConnection: close\r\n\r\n",
		 e->fx.port);
	assert_int_equal(e->fx.got_len, strlen(want));
	assert_memory_equal(e->fx.got, want, strlen(want));
	cJSON *log = stop_and_log(e);
	assert_string_equal(field(log, 0, "verdict"), "allow");
	cJSON_Delete(log);
}

static void plain_http_host_mismatch(void **state)
{
	struct env *e = *state;
	char req[256];
	int n = snprintf(req, sizeof(req),
			 "GET http://fixture.test:%u/ HTTP/1.1\r\nHost: denied.test:%u\r\n\r\n",
			 e->fx.port, e->fx.port);
	expect_refused(e, req, (size_t)n, "HTTP/1.1 400", "Host header differs");
}

static void plain_http_second_request_not_forwarded(void **state)
{
	/* one request per connection: after the declared body, nothing more
	 * from the client reaches the upstream */
	struct env *e = *state;
	int fd = dial(e->pport);
	char req[512];
	int n = snprintf(req, sizeof(req),
			 "POST http://fixture.test:%u/ HTTP/1.1\r\nHost: fixture.test:%u\r\n"
			 "Content-Length: 4\r\n\r\nbody"
			 "GET http://fixture.test:%u/ HTTP/1.1\r\nHost: other.test\r\n\r\n",
			 e->fx.port, e->fx.port, e->fx.port);
	e->fx.until = "body";
	say(fd, req, (size_t)n);
	char buf[256];
	slurp(fd, buf, sizeof(buf));
	close(fd);
	assert_string_equal(buf, "pong\n");
	assert_non_null(memmem(e->fx.got, e->fx.got_len, "\r\n\r\nbody", 8));
	assert_null(memmem(e->fx.got, e->fx.got_len, "other.test", 10));
	/* what went upstream is the rewritten head and the 4-byte body */
	char fwd[256];
	int fl = snprintf(fwd, sizeof(fwd),
			  "POST / HTTP/1.1\r\nHost: fixture.test:%u\r\nContent-Length: 4\r\n"
			  "Connection: close\r\n\r\n",
			  e->fx.port);
	cJSON *log = stop_and_log(e);
	assert_string_equal(field(log, 0, "verdict"), "allow");
	assert_string_equal(field(log, 1, "verdict"), "close");
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(log, 1), "up")->valueint, fl + 4);
	cJSON_Delete(log);
}

/* Stop the proxy and start it again with other bounds. */
static void restart(struct env *e, int head_timeout_ms, uint64_t log_max)
{
	assert_int_equal(write(e->stop[1], "x", 1), 1);
	pthread_join(e->t, NULL);
	char drain[256];
	while (read(e->stop[0], drain, sizeof(drain)) == sizeof(drain))
		;
	e->cfg.head_timeout_ms = head_timeout_ms;
	e->cfg.log_max = log_max;
	assert_int_equal(pthread_create(&e->t, NULL, proxy_main, e), 0);
}

static void restart_with_cap(struct env *e, unsigned cap)
{
	assert_int_equal(write(e->stop[1], "x", 1), 1);
	pthread_join(e->t, NULL);
	char drain[256];
	while (read(e->stop[0], drain, sizeof(drain)) == sizeof(drain))
		;
	e->cfg.max_conns = cap;
	assert_int_equal(pthread_create(&e->t, NULL, proxy_main, e), 0);
}

static void garbage_head(void **state)
{
	struct env *e = *state;
	expect_refused(e, "\x16\x03\x01\x00\x05hello\r\n\r\n", sizeof("\x16\x03\x01\x00\x05hello\r\n\r\n") - 1, "HTTP/1.1 400", "bad request line");
}

static void slow_head_is_cut(void **state)
{
	/* a client that never finishes its head is closed after the head
	 * timeout (no answer), and the proxy serves others meanwhile */
	struct env *e = *state;
	restart(e, 300, 0);
	int slow = dial(e->pport);
	say(slow, "CONNECT fixture.test:", 21);
	char buf[64];
	assert_int_equal(read(slow, buf, sizeof(buf)), 0); /* EOF: the proxy gave up */
	close(slow);
	cJSON *log = stop_and_log(e);
	assert_int_equal(cJSON_GetArraySize(log), 1);
	assert_string_equal(field(log, 0, "reason"), "no request in time");
	assert_int_equal(atomic_load(&e->fx.conns), 0);
	cJSON_Delete(log);
}

static void slow_client_hello_is_cut(void **state)
{
	struct env *e = *state;
	restart(e, 300, 0);
	int fd = dial(e->pport);
	char req[128];
	int n = snprintf(req, sizeof(req), "CONNECT fixture.test:%u HTTP/1.1\r\n\r\n\x16\x03", e->fx.port);
	say(fd, req, (size_t)n);
	expect_established(fd);
	char buf[64];
	assert_int_equal(read(fd, buf, sizeof(buf)), 0);
	close(fd);
	cJSON *log = stop_and_log(e);
	assert_string_equal(field(log, 0, "reason"), "no TLS ClientHello in time");
	assert_int_equal(atomic_load(&e->fx.conns), 0);
	cJSON_Delete(log);
}

static void connection_cap(void **state)
{
	struct env *e = *state;
	char req[128];
	int n = snprintf(req, sizeof(req), "CONNECT fixture.test:%u HTTP/1.1\r\n\r\n", e->fx.port);
	int a = dial(e->pport), b = dial(e->pport);
	say(a, req, (size_t)n);
	say(b, req, (size_t)n);
	/* both are served (cap 2) and now wait for a ClientHello */
	expect_established(a);
	expect_established(b);
	int c = dial(e->pport);
	char buf[512];
	slurp(c, buf, sizeof(buf));
	close(c);
	assert_true(strncmp(buf, "HTTP/1.1 503", 12) == 0);
	/* stop ends the waiting connections too */
	cJSON *log = stop_and_log(e);
	close(a);
	close(b);
	int busy = 0;
	for (int i = 0; i < cJSON_GetArraySize(log); i++)
		busy += strcmp(field(log, i, "reason"), "too many connections") == 0;
	assert_int_equal(busy, 1);
	assert_int_equal(cJSON_GetArraySize(log), 3);
	assert_int_equal(atomic_load(&e->fx.conns), 0);
	cJSON_Delete(log);
}

struct client_arg {
	struct env *e;
	int ok;
};

static void *client_main(void *arg)
{
	struct client_arg *a = arg;
	uint8_t hello[700];
	size_t hl = client_hello(hello, "fixture.test");
	int fd = dial(a->e->pport);
	char req[128];
	int n = snprintf(req, sizeof(req), "CONNECT fixture.test:%u HTTP/1.1\r\n\r\n", a->e->fx.port);
	/* head and ClientHello in one write: the fixture reads until `want` */
	char msg[1024];
	memcpy(msg, req, (size_t)n);
	memcpy(msg + n, hello, hl);
	if (write(fd, msg, (size_t)n + hl) != (ssize_t)((size_t)n + hl))
		return NULL;
	char buf[256];
	size_t got = 0;
	ssize_t r;
	while (got < sizeof(buf) - 1 && (r = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
		got += (size_t)r;
	buf[got] = '\0';
	a->ok = strstr(buf, "200 Connection established\r\n\r\npong\n") != NULL;
	close(fd);
	return NULL;
}

static void concurrent_connections(void **state)
{
	/* many clients at once (below the cap): every one relayed, every
	 * decision logged and counted once */
	struct env *e = *state;
	uint8_t hello[700];
	e->fx.want = client_hello(hello, "fixture.test");
	restart_with_cap(e, 64);
	enum { N = 24 };
	pthread_t t[N];
	struct client_arg a[N];
	for (int i = 0; i < N; i++) {
		a[i] = (struct client_arg){e, 0};
		assert_int_equal(pthread_create(&t[i], NULL, client_main, &a[i]), 0);
	}
	for (int i = 0; i < N; i++) {
		pthread_join(t[i], NULL);
		assert_true(a[i].ok);
	}
	cJSON *log = stop_and_log(e);
	assert_int_equal(cJSON_GetArraySize(log), 2 * N);
	int allows = 0, closes = 0;
	for (int i = 0; i < 2 * N; i++) {
		allows += !strcmp(field(log, i, "verdict"), "allow");
		closes += !strcmp(field(log, i, "verdict"), "close");
	}
	assert_int_equal(allows, N);
	assert_int_equal(closes, N);
	assert_int_equal(e->sum.allowed, N);
	assert_int_equal(atomic_load(&e->fx.conns), N);
	cJSON_Delete(log);
}

static void log_is_bounded(void **state)
{
	struct env *e = *state;
	restart(e, 0, 300); /* a tiny log bound */
	for (int i = 0; i < 5; i++) {
		int fd = dial(e->pport);
		say(fd, "CONNECT denied.test:443 HTTP/1.1\r\n\r\n", 37);
		char buf[512];
		slurp(fd, buf, sizeof(buf));
		close(fd);
	}
	cJSON *log = stop_and_log(e);
	int n = cJSON_GetArraySize(log);
	assert_true(n >= 2 && n < 5);
	assert_string_equal(field(log, n - 1, "reason"), "decision log full: no more lines");
	/* the summary still counts every refusal */
	assert_int_equal(e->sum.denied, 5);
	cJSON_Delete(log);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(connect_allowed_relays_both_ways, setup, teardown),
		cmocka_unit_test_setup_teardown(connect_denied_name, setup, teardown),
		cmocka_unit_test_setup_teardown(connect_wrong_port, setup, teardown),
		cmocka_unit_test_setup_teardown(connect_ip_literal, setup, teardown),
		cmocka_unit_test_setup_teardown(name_resolving_to_loopback_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(sni_mismatch_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(connect_without_tls_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(plain_http_forwarded_in_origin_form, setup, teardown),
		cmocka_unit_test_setup_teardown(plain_http_host_mismatch, setup, teardown),
		cmocka_unit_test_setup_teardown(plain_http_second_request_not_forwarded, setup, teardown),
		cmocka_unit_test_setup_teardown(garbage_head, setup, teardown),
		cmocka_unit_test_setup_teardown(slow_head_is_cut, setup, teardown),
		cmocka_unit_test_setup_teardown(slow_client_hello_is_cut, setup, teardown),
		cmocka_unit_test_setup_teardown(connection_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(log_is_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(concurrent_connections, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
