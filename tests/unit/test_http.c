/* The HTTP client (common/http.c) against a real server on loopback: a
 * child process that answers each path with a canned response. Memory
 * bodies and their bound, a POST, the captured headers, a download that
 * resumes (206) and one the server restarts (200), the download's bound,
 * and the abort callback. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "common/http.h"

static pid_t server_pid;
static char base[64];

static void reply(int c, const char *req)
{
	char big[100000 + 200];
	const char *r;
	if (!strncmp(req, "GET /small ", 11)) {
		r = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n"
		    "Connection: close\r\n\r\nhello";
	} else if (!strncmp(req, "GET /big ", 9)) {
		int n = snprintf(big, sizeof(big), "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n"
						   "Connection: close\r\n\r\n");
		memset(big + n, 'x', 100000);
		big[n + 100000] = '\0';
		r = big;
	} else if (!strncmp(req, "GET /busy ", 10)) {
		r = "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 7\r\nretry-after-ms: 1500\r\n"
		    "WWW-Authenticate: Bearer realm=\"https://auth/token\",service=\"reg\"\r\n"
		    "Content-Length: 4\r\nConnection: close\r\n\r\nbusy";
	} else if (!strncmp(req, "GET /range ", 11) && strstr(req, "\r\nRange: bytes=3-\r\n")) {
		r = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 3-7/8\r\nContent-Length: 5\r\n"
		    "Connection: close\r\n\r\ndefgh";
	} else if (!strncmp(req, "GET /range ", 11) || !strncmp(req, "GET /norange ", 13)) {
		r = "HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\nabcdefgh";
	} else if (!strncmp(req, "HEAD /small ", 12)) {
		r = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nLocation: /v2/x?a=1\r\n"
		    "Connection: close\r\n\r\n";
	} else if (!strncmp(req, "GET /longloc ", 13)) {
		int n = snprintf(big, sizeof(big), "HTTP/1.1 202 Accepted\r\nLocation: /");
		memset(big + n, 'l', 3000);
		snprintf(big + n + 3000, sizeof(big) - (size_t)n - 3000,
			 "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
		r = big;
	} else if (!strncmp(req, "POST /echo ", 11) || !strncmp(req, "PUT /echo ", 10)) {
		const char *body = strstr(req, "\r\n\r\n");
		body = body ? body + 4 : "";
		snprintf(big, sizeof(big),
			 "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
			 "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
			 strlen(body), body);
		r = big;
	} else if (!strncmp(req, "GET /slow ", 10)) {
		r = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\nx";
		sc_write_all(c, r, strlen(r));
		pause(); /* never finishes; killed at teardown */
		return;
	} else {
		r = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
	}
	sc_write_all(c, r, strlen(r));
}

static void serve(int s)
{
	for (;;) {
		int c = accept(s, NULL, NULL);
		if (c < 0)
			_exit(1);
		char req[8192];
		size_t len = 0;
		/* headers, then a POST's body by its Content-Length */
		for (;;) {
			ssize_t n = read(c, req + len, sizeof(req) - 1 - len);
			if (n <= 0)
				break;
			len += (size_t)n;
			req[len] = '\0';
			const char *end = strstr(req, "\r\n\r\n"), *cl = strstr(req, "Content-Length: ");
			if (end && (!cl || cl > end || (size_t)(end + 4 - req) + strtoul(cl + 16, NULL, 10) <= len))
				break;
		}
		req[len] = '\0';
		reply(c, req);
		close(c);
	}
}

static int setup(void **state)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s, 16) < 0 ||
	    getsockname(s, (struct sockaddr *)&a, &alen) < 0)
		return -1;
	snprintf(base, sizeof(base), "http://127.0.0.1:%u", ntohs(a.sin_port));
	server_pid = fork();
	if (server_pid < 0)
		return -1;
	if (server_pid == 0)
		serve(s);
	close(s);
	return 0;
}

static int teardown(void **state)
{
	if (server_pid > 0) {
		kill(server_pid, SIGKILL);
		waitpid(server_pid, NULL, 0);
	}
	return 0;
}

static void url(char *out, size_t size, const char *path)
{
	snprintf(out, size, "%s%s", base, path);
}

static void test_header_value(void **state)
{
	char v[8];
	const char *l = "Retry-After:  12 \r\n";
	assert_int_equal(sc_http_header_value(l, strlen(l), "retry-after", v, sizeof(v)), 2);
	assert_string_equal(v, "12");
	assert_int_equal(sc_http_header_value(l, strlen(l), "Retry-After-Ms", v, sizeof(v)), -1);
	l = "Content-Type: application/json\r\n";
	assert_int_equal(sc_http_header_value(l, strlen(l), "content-type", v, sizeof(v)), 16);
	assert_string_equal(v, "applica"); /* cut to fit */
	l = "X: 1\r\n";
	assert_int_equal(sc_http_header_value(l, strlen(l), "X-Long", v, sizeof(v)), -1);
}

static void test_memory_bodies(void **state)
{
	struct sc_http c;
	struct sc_err err = {0};
	char u[128];
	assert_int_equal(sc_http_init(&c, &err), 0);
	struct sc_http_resp r;

	url(u, sizeof(u), "/small");
	assert_int_equal(sc_http_perform(&c, &(struct sc_http_req){.url = u}, &r, &err), 0);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.len, 5);
	assert_string_equal(r.body, "hello");
	assert_string_equal(r.content_type, "text/plain");
	sc_http_resp_free(&r);

	url(u, sizeof(u), "/big");
	assert_int_equal(sc_http_perform(&c, &(struct sc_http_req){.url = u, .max_body = 1000}, &r, &err), -1);
	assert_int_equal(r.failure, SC_HTTP_TOO_LARGE);
	assert_string_equal(err.msg, "response body larger than 1000 bytes");
	sc_http_resp_free(&r);

	url(u, sizeof(u), "/busy");
	assert_int_equal(sc_http_perform(&c, &(struct sc_http_req){.url = u}, &r, &err), 0);
	assert_int_equal(r.status, 429);
	assert_string_equal(r.body, "busy");
	assert_string_equal(r.retry_after, "7");
	assert_string_equal(r.retry_after_ms, "1500");
	assert_string_equal(r.www_authenticate, "Bearer realm=\"https://auth/token\",service=\"reg\"");
	sc_http_resp_free(&r);

	url(u, sizeof(u), "/echo");
	const char *const hdrs[] = {"Content-Type: application/json", "Expect:", NULL};
	struct sc_http_req post = {.url = u, .headers = hdrs, .body = "{\"a\":1}", .body_len = 7};
	assert_int_equal(sc_http_perform(&c, &post, &r, &err), 0);
	assert_int_equal(r.status, 201);
	assert_string_equal(r.body, "{\"a\":1}");
	assert_string_equal(r.content_type, "application/json");
	sc_http_resp_free(&r);

	/* HEAD: the headers only */
	url(u, sizeof(u), "/small");
	assert_int_equal(sc_http_perform(&c, &(struct sc_http_req){.url = u, .method = "HEAD"}, &r, &err), 0);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.len, 0);
	assert_string_equal(r.location, "/v2/x?a=1");
	assert_false(r.location_cut);
	sc_http_resp_free(&r);

	/* a Location longer than its field is flagged, not silently cut */
	url(u, sizeof(u), "/longloc");
	assert_int_equal(sc_http_perform(&c, &(struct sc_http_req){.url = u}, &r, &err), 0);
	assert_int_equal(r.status, 202);
	assert_true(r.location_cut);
	sc_http_resp_free(&r);

	/* PUT of a file's bytes, from its start (not the fd's offset) */
	char path[] = "/tmp/sc-http-put.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(sc_write_all(fd, "put-body-1234", 13), 0);
	struct sc_http_upload up = {.fd = fd, .size = 10};
	url(u, sizeof(u), "/echo");
	struct sc_http_req put = {.url = u, .method = "PUT", .upload = &up, .headers = hdrs};
	assert_int_equal(sc_http_perform(&c, &put, &r, &err), 0);
	assert_int_equal(r.status, 201);
	assert_string_equal(r.body, "put-body-1");
	sc_http_resp_free(&r);
	up.size = 20; /* the file is shorter than said: an error, not a hang */
	assert_int_equal(sc_http_perform(&c, &put, &r, &err), -1);
	assert_int_equal(r.failure, SC_HTTP_WRITE);
	sc_http_resp_free(&r);
	close(fd);

	/* https only: a plain http URL is refused before any request */
	url(u, sizeof(u), "/small");
	assert_int_equal(sc_http_perform(&c, &(struct sc_http_req){.url = u, .https_only = true}, &r, &err), -1);
	assert_int_not_equal(r.failure, SC_HTTP_OK);
	sc_http_resp_free(&r);
	sc_http_free(&c);
}

struct seen {
	uint64_t first_offset;
	size_t chunks, bytes;
};

static void on_data(void *ctx, uint64_t offset, const void *data, size_t n)
{
	struct seen *s = ctx;
	if (!s->chunks++)
		s->first_offset = offset;
	s->bytes += n;
}

static void file_is(int fd, const char *want)
{
	char buf[64] = "";
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	assert_true(n >= 0);
	buf[n] = '\0';
	assert_string_equal(buf, want);
}

static void test_downloads(void **state)
{
	struct sc_http c;
	struct sc_err err = {0};
	char u[128];
	assert_int_equal(sc_http_init(&c, &err), 0);
	struct sc_http_resp r;
	int fd = memfd_create("dl", MFD_CLOEXEC);
	assert_true(fd >= 0);

	/* resumed: the server honours the range */
	assert_int_equal(pwrite(fd, "abc", 3, 0), 3);
	struct seen s = {0};
	struct sc_http_download dl = {.fd = fd, .offset = 3, .limit = 8, .on_data = on_data, .ctx = &s};
	url(u, sizeof(u), "/range");
	assert_int_equal(sc_http_perform(&c, &(struct sc_http_req){.url = u, .download = &dl}, &r, &err), 0);
	assert_int_equal(r.status, 206);
	assert_int_equal(r.file_size, 8);
	assert_int_equal(s.first_offset, 3);
	assert_int_equal(s.bytes, 5);
	file_is(fd, "abcdefgh");
	sc_http_resp_free(&r);

	/* restarted: the server sends everything again */
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(pwrite(fd, "XYZ", 3, 0), 3);
	s = (struct seen){0};
	url(u, sizeof(u), "/norange");
	assert_int_equal(sc_http_perform(&c, &(struct sc_http_req){.url = u, .download = &dl}, &r, &err), 0);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.file_size, 8);
	assert_int_equal(s.first_offset, 0);
	file_is(fd, "abcdefgh");
	sc_http_resp_free(&r);

	/* bounded */
	assert_int_equal(ftruncate(fd, 0), 0);
	dl = (struct sc_http_download){.fd = fd, .limit = 5};
	assert_int_equal(sc_http_perform(&c, &(struct sc_http_req){.url = u, .download = &dl}, &r, &err), -1);
	assert_int_equal(r.failure, SC_HTTP_TOO_LARGE);
	sc_http_resp_free(&r);

	/* an error status goes to memory, the file stays as it was */
	assert_int_equal(ftruncate(fd, 0), 0);
	dl = (struct sc_http_download){.fd = fd, .limit = 100};
	url(u, sizeof(u), "/busy");
	assert_int_equal(sc_http_perform(&c, &(struct sc_http_req){.url = u, .download = &dl}, &r, &err), 0);
	assert_int_equal(r.status, 429);
	assert_string_equal(r.body, "busy");
	file_is(fd, "");
	sc_http_resp_free(&r);
	close(fd);
	sc_http_free(&c);
}

static bool always(void *ctx)
{
	(*(int *)ctx)++;
	return true;
}

static void test_abort(void **state)
{
	struct sc_http c;
	struct sc_err err = {0};
	char u[128];
	int asked = 0;
	assert_int_equal(sc_http_init(&c, &err), 0);
	c.should_abort = always;
	c.abort_ctx = &asked;
	struct sc_http_resp r;
	url(u, sizeof(u), "/slow"); /* never completes: only the callback ends it */
	assert_int_equal(sc_http_perform(&c, &(struct sc_http_req){.url = u}, &r, &err), -1);
	assert_int_equal(r.failure, SC_HTTP_ABORTED);
	assert_true(asked > 0);
	sc_http_resp_free(&r);
	sc_http_free(&c);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_value),
		cmocka_unit_test(test_memory_bodies),
		cmocka_unit_test(test_downloads),
		cmocka_unit_test(test_abort), /* last: the server is stuck afterwards */
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
