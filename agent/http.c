#include "http.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "retry.h"

struct sink {
	struct http_response *resp;
	size_t cap;
	bool too_large;
};

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct sink *s = arg;
	struct http_response *r = s->resp;
	size_t len = size * n;
	if (r->len + len > HTTP_MAX_BODY) {
		s->too_large = true;
		return 0; /* makes curl fail the transfer */
	}
	if (r->len + len + 1 > s->cap) {
		size_t cap = s->cap ? s->cap : 16384;
		while (cap < r->len + len + 1)
			cap *= 2;
		char *b = realloc(r->body, cap);
		if (!b)
			return 0;
		r->body = b;
		s->cap = cap;
	}
	memcpy(r->body + r->len, data, len);
	r->len += len;
	r->body[r->len] = '\0';
	return len;
}

/* Header "Name: value" when name matches (case-insensitive): the trimmed
 * value copied into out. */
static bool header_value(const char *line, size_t len, const char *name, char *out,
			 size_t outsize)
{
	size_t nlen = strlen(name);
	if (len <= nlen || strncasecmp(line, name, nlen) || line[nlen] != ':')
		return false;
	const char *v = line + nlen + 1, *end = line + len;
	while (v < end && isspace((unsigned char)*v))
		v++;
	while (end > v && isspace((unsigned char)end[-1]))
		end--;
	size_t vlen = (size_t)(end - v);
	if (vlen >= outsize)
		return false;
	memcpy(out, v, vlen);
	out[vlen] = '\0';
	return true;
}

static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
	struct http_response *r = arg;
	size_t len = size * n;
	char v[96];
	if (len >= 5 && !strncmp(data, "HTTP/", 5)) {
		r->retry_after_s = -1; /* a new response (e.g. after 100-continue) */
	} else if (header_value(data, len, "retry-after-ms", v, sizeof(v))) {
		double d = agent_retry_after_parse(v, time(NULL));
		if (d >= 0)
			r->retry_after_s = d / 1000.0;
	} else if (header_value(data, len, "retry-after", v, sizeof(v))) {
		double d = agent_retry_after_parse(v, time(NULL));
		if (d >= 0 && r->retry_after_s < 0)
			r->retry_after_s = d;
	}
	return len;
}

static int on_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	const atomic_bool *flag = arg;
	return flag && atomic_load(flag) ? 1 : 0;
}

int http_client_init(struct http_client *c, struct sc_err *err)
{
	*c = (struct http_client){0};
	c->curl = curl_dl_load(err);
	if (!c->curl)
		return -1;
	c->h = c->curl->easy_init();
	if (!c->h)
		return sc_fail(err, ENOMEM, "curl_easy_init");
	return 0;
}

void http_client_free(struct http_client *c)
{
	if (c->h)
		c->curl->easy_cleanup(c->h);
	c->h = NULL;
}

static enum http_failure classify(CURLcode rc, bool too_large)
{
	if (too_large)
		return HTTP_TOO_LARGE;
	switch (rc) {
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_SSL_CONNECT_ERROR:
		return HTTP_CONNECT;
	case CURLE_OPERATION_TIMEDOUT:
		return HTTP_TIMEOUT;
	case CURLE_ABORTED_BY_CALLBACK:
		return HTTP_ABORTED;
	default:
		return HTTP_TRANSFER;
	}
}

int http_post(struct http_client *c, const char *url, const struct curl_slist *headers,
	      const char *body, size_t len, double timeout_s, struct http_response *resp,
	      struct sc_err *err)
{
	const struct curl_dl *cu = c->curl;
	CURL *h = c->h;
	struct sink sink = {.resp = resp};
	char errbuf[CURL_ERROR_SIZE] = "";
	*resp = (struct http_response){.retry_after_s = -1};
	long timeout_ms = timeout_s > 0 ? (long)(timeout_s * 1000) : 0;
	if (timeout_ms <= 0 && timeout_s > 0)
		timeout_ms = 1;
	long connect_ms = timeout_ms && timeout_ms < 30000 ? timeout_ms : 30000;

	cu->easy_reset(h); /* keeps the connection cache */
	int bad = 0;
	bad |= cu->easy_setopt(h, CURLOPT_URL, url);
	bad |= cu->easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	bad |= cu->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	bad |= cu->easy_setopt(h, CURLOPT_POST, 1L);
	bad |= cu->easy_setopt(h, CURLOPT_POSTFIELDS, body);
	bad |= cu->easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	bad |= cu->easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	bad |= cu->easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	bad |= cu->easy_setopt(h, CURLOPT_WRITEDATA, &sink);
	bad |= cu->easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	bad |= cu->easy_setopt(h, CURLOPT_HEADERDATA, resp);
	bad |= cu->easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	bad |= cu->easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	bad |= cu->easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
	bad |= cu->easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	bad |= cu->easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
	bad |= cu->easy_setopt(h, CURLOPT_USERAGENT, "sandcell-agent");
	bad |= cu->easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	bad |= cu->easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
	bad |= cu->easy_setopt(h, CURLOPT_XFERINFODATA, (void *)c->abort_flag);
	/* Expect: 100-continue would cost a round trip on every large body */
	if (bad)
		return sc_fail(err, 0, "cannot set up the HTTP request (libcurl too old?)");

	double t0 = sc_now();
	CURLcode rc = cu->easy_perform(h);
	resp->latency_s = sc_now() - t0;
	if (rc != CURLE_OK) {
		resp->failure = classify(rc, sink.too_large);
		if (resp->failure == HTTP_TOO_LARGE)
			snprintf(resp->error, sizeof(resp->error),
				 "response body larger than %u MiB", HTTP_MAX_BODY >> 20);
		else
			snprintf(resp->error, sizeof(resp->error), "%s",
				 errbuf[0] ? errbuf : cu->easy_strerror(rc));
		return 0;
	}
	cu->easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->status);
	if (!resp->body) {
		resp->body = calloc(1, 1);
		if (!resp->body)
			return sc_fail(err, ENOMEM, "HTTP response");
	}
	return 0;
}

void http_response_free(struct http_response *resp)
{
	free(resp->body);
	resp->body = NULL;
	resp->len = 0;
}
