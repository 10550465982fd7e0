/* See http.h: the one libcurl client. */
#include "http.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "curl_dl.h"

/* One transfer's state, on the stack of sc_http_perform. */
struct xfer {
	const struct sc_http *c;
	const struct sc_http_req *req;
	struct sc_http_resp *resp;
	size_t cap, max;
	uint64_t base; /* download: file offset of the first byte of this body */
	uint64_t written;
	int write_errno;
	int64_t range_start; /* of a 206's Content-Range, -1 none */
	uint64_t sent;       /* upload: the next byte to send */
	int read_errno;      /* upload: the fd could not be read */
	bool too_large, write_failed, no_memory, bad_range;
};

ssize_t sc_http_header_value(const char *line, size_t len, const char *name, char *out,
			     size_t outsize)
{
	size_t nlen = strlen(name);
	if (len <= nlen || strncasecmp(line, name, nlen) || line[nlen] != ':' || !outsize)
		return -1;
	const char *v = line + nlen + 1, *end = line + len;
	while (v < end && isspace((unsigned char)*v))
		v++;
	while (end > v && isspace((unsigned char)end[-1]))
		end--;
	size_t vlen = (size_t)(end - v), n = vlen < outsize ? vlen : outsize - 1;
	memcpy(out, v, n);
	out[n] = '\0';
	return (ssize_t)vlen;
}

static void clear_headers(struct sc_http_resp *r)
{
	r->content_type[0] = r->www_authenticate[0] = '\0';
	r->retry_after[0] = r->retry_after_ms[0] = r->location[0] = '\0';
	r->location_cut = false;
}

/* "HTTP/1.1 200 OK": the status, 0 when there is none. */
static long status_of(const char *line, size_t len)
{
	const char *sp = memchr(line, ' ', len), *end = line + len;
	long code = 0;
	if (!sp)
		return 0;
	for (const char *p = sp + 1; p < end && p < sp + 4 && *p >= '0' && *p <= '9'; p++)
		code = code * 10 + (*p - '0');
	return code;
}

static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
	struct xfer *x = arg;
	struct sc_http_resp *r = x->resp;
	size_t len = size * n;
	if (len >= 5 && !strncmp(data, "HTTP/", 5)) {
		/* a new response (after a redirect or a 100): forget the last one */
		clear_headers(r);
		x->range_start = -1;
		r->status = status_of(data, len);
		r->len = 0;
		if (r->body)
			r->body[0] = '\0';
		return len;
	}
	char v[sizeof(r->retry_after)];
	if (sc_http_header_value(data, len, "Content-Range", v, sizeof(v)) >= 0) {
		/* "bytes START-END/SIZE" */
		char *end;
		errno = 0;
		unsigned long long start = strncmp(v, "bytes ", 6) ? 0 : strtoull(v + 6, &end, 10);
		if (!strncmp(v, "bytes ", 6) && v[6] >= '0' && v[6] <= '9' && !errno && *end == '-' &&
		    start <= INT64_MAX)
			x->range_start = (int64_t)start;
		return len;
	}
	if (sc_http_header_value(data, len, "Content-Type", r->content_type,
				 sizeof(r->content_type)) >= 0 ||
	    sc_http_header_value(data, len, "WWW-Authenticate", r->www_authenticate,
				 sizeof(r->www_authenticate)) >= 0)
		return len;
	ssize_t vlen = sc_http_header_value(data, len, "Location", r->location, sizeof(r->location));
	if (vlen >= 0) {
		r->location_cut = (size_t)vlen >= sizeof(r->location);
		return len;
	}
	vlen = sc_http_header_value(data, len, "Retry-After-Ms", v, sizeof(v));
	if (vlen >= 0) {
		if ((size_t)vlen < sizeof(v))
			memcpy(r->retry_after_ms, v, (size_t)vlen + 1);
		return len;
	}
	vlen = sc_http_header_value(data, len, "Retry-After", v, sizeof(v));
	if (vlen >= 0 && (size_t)vlen < sizeof(v))
		memcpy(r->retry_after, v, (size_t)vlen + 1);
	return len;
}

static int pwrite_all(int fd, const char *p, size_t n, uint64_t off)
{
	while (n) {
		ssize_t w = pwrite(fd, p, n, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

static size_t to_file(struct xfer *x, const char *data, size_t n)
{
	const struct sc_http_download *d = x->req->download;
	if (x->resp->status == 200 && x->base && !x->written) {
		/* The server ignored the range: start the file over. */
		if (ftruncate(d->fd, 0) < 0) {
			x->write_errno = errno;
			x->write_failed = true;
			return 0;
		}
		x->base = 0;
	}
	if (x->resp->status == 206 && !x->written && x->range_start != (int64_t)x->base) {
		x->bad_range = true; /* not the part that was asked for */
		return 0;
	}
	uint64_t at = x->base + x->written;
	if (at + n > d->limit || at + n < at) {
		x->too_large = true;
		return 0;
	}
	if (pwrite_all(d->fd, data, n, at) < 0) {
		x->write_errno = errno ? errno : EIO;
		x->write_failed = true;
		return 0;
	}
	x->written += n;
	if (d->on_data)
		d->on_data(d->ctx, at, data, n);
	return n;
}

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct xfer *x = arg;
	struct sc_http_resp *r = x->resp;
	size_t len = size * n;
	if (x->req->download && r->status >= 200 && r->status < 300)
		return to_file(x, data, len);
	if (len > x->max - r->len) {
		x->too_large = true;
		return 0; /* makes libcurl fail the transfer */
	}
	if (r->len + len + 1 > x->cap) {
		size_t cap = x->cap ? x->cap : 16384;
		while (cap < r->len + len + 1)
			cap *= 2;
		char *b = realloc(r->body, cap);
		if (!b) {
			x->no_memory = true;
			return 0;
		}
		r->body = b;
		x->cap = cap;
	}
	memcpy(r->body + r->len, data, len);
	r->len += len;
	r->body[r->len] = '\0';
	return len;
}

/* An upload's bytes, from the fd at x->sent on. */
static size_t on_read(char *buf, size_t size, size_t n, void *arg)
{
	struct xfer *x = arg;
	const struct sc_http_upload *u = x->req->upload;
	size_t want = size * n;
	if (x->sent >= u->size)
		return 0;
	if (want > u->size - x->sent)
		want = (size_t)(u->size - x->sent);
	ssize_t got;
	do
		got = pread(u->fd, buf, want, (off_t)x->sent);
	while (got < 0 && errno == EINTR);
	if (got <= 0) {
		x->read_errno = got < 0 ? errno : EIO; /* shorter than its size */
		return CURL_READFUNC_ABORT;
	}
	x->sent += (uint64_t)got;
	return (size_t)got;
}

/* libcurl rewinds an upload to send it again (a redirect, an auth retry). */
static int on_seek(void *arg, curl_off_t offset, int origin)
{
	struct xfer *x = arg;
	if (origin != SEEK_SET || offset < 0 || (uint64_t)offset > x->req->upload->size)
		return CURL_SEEKFUNC_CANTSEEK;
	x->sent = (uint64_t)offset;
	return CURL_SEEKFUNC_OK;
}

static int on_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	const struct sc_http *h = arg;
	return h->should_abort && h->should_abort(h->abort_ctx) ? 1 : 0;
}

int sc_http_init(struct sc_http *c, struct sc_err *err)
{
	*c = (struct sc_http){0};
	c->curl = sc_curl_load(err);
	if (!c->curl)
		return -1;
	c->h = c->curl->easy_init();
	if (!c->h)
		return sc_fail(err, ENOMEM, "curl_easy_init");
	return 0;
}

void sc_http_free(struct sc_http *c)
{
	if (c->h)
		c->curl->easy_cleanup(c->h);
	c->h = NULL;
}

void sc_http_resp_free(struct sc_http_resp *resp)
{
	free(resp->body);
	resp->body = NULL;
	resp->len = 0;
}

static enum sc_http_failure classify(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_SSL_CONNECT_ERROR:
		return SC_HTTP_CONNECT;
	case CURLE_OPERATION_TIMEDOUT:
		return SC_HTTP_TIMEOUT;
	case CURLE_ABORTED_BY_CALLBACK:
		return SC_HTTP_ABORTED;
	default:
		return SC_HTTP_TRANSFER;
	}
}

/* Seconds to libcurl's milliseconds: 0 stays "none", anything positive is
 * at least 1 ms, and huge values (a deadline of 1e300) are capped. */
static long to_ms(double s)
{
	if (!(s > 0))
		return 0;
	if (s > 1e7) /* ~115 days */
		s = 1e7;
	long ms = (long)(s * 1000);
	return ms > 0 ? ms : 1;
}

/* Set the options of one request on the (reset) handle; false when libcurl
 * refused one. */
static bool set_options(const struct sc_http *c, const struct sc_http_req *req,
			struct curl_slist *hdrs, struct xfer *x, char *errbuf)
{
	const struct curl_dl *cu = c->curl;
	CURL *h = c->h;
	const char *protos = req->https_only ? "https" : "http,https";
	long timeout_ms = to_ms(req->timeout_s);
	long connect_ms = req->connect_timeout_s > 0 ? to_ms(req->connect_timeout_s) : 30000;
	if (timeout_ms && timeout_ms < connect_ms)
		connect_ms = timeout_ms;
	int bad = 0;
#define SET(opt, val) (bad |= cu->easy_setopt(h, opt, val) != CURLE_OK)
	SET(CURLOPT_URL, req->url);
	SET(CURLOPT_PROTOCOLS_STR, protos);
	SET(CURLOPT_NOSIGNAL, 1L);
	SET(CURLOPT_USERAGENT, req->user_agent ? req->user_agent : "sandcell");
	SET(CURLOPT_HTTPHEADER, hdrs);
	SET(CURLOPT_WRITEFUNCTION, on_body);
	SET(CURLOPT_WRITEDATA, x);
	SET(CURLOPT_HEADERFUNCTION, on_header);
	SET(CURLOPT_HEADERDATA, x);
	SET(CURLOPT_ERRORBUFFER, errbuf);
	SET(CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
	if (timeout_ms)
		SET(CURLOPT_TIMEOUT_MS, timeout_ms);
	if (req->body) {
		SET(CURLOPT_POST, 1L);
		SET(CURLOPT_POSTFIELDS, req->body);
		SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
	} else if (req->upload) {
		SET(CURLOPT_UPLOAD, 1L);
		SET(CURLOPT_READFUNCTION, on_read);
		SET(CURLOPT_READDATA, x);
		SET(CURLOPT_SEEKFUNCTION, on_seek);
		SET(CURLOPT_SEEKDATA, x);
		SET(CURLOPT_INFILESIZE_LARGE, (curl_off_t)req->upload->size);
	}
	if (req->method && !strcmp(req->method, "HEAD"))
		SET(CURLOPT_NOBODY, 1L);
	else if (req->method)
		SET(CURLOPT_CUSTOMREQUEST, req->method);
	if (req->max_redirects) {
		SET(CURLOPT_FOLLOWLOCATION, 1L);
		SET(CURLOPT_MAXREDIRS, (long)req->max_redirects);
		SET(CURLOPT_REDIR_PROTOCOLS_STR, protos);
	}
	if (req->low_speed_time_s) {
		SET(CURLOPT_LOW_SPEED_LIMIT, 1L);
		SET(CURLOPT_LOW_SPEED_TIME, (long)req->low_speed_time_s);
	}
	if (req->keepalive)
		SET(CURLOPT_TCP_KEEPALIVE, 1L);
	if (req->compressed)
		SET(CURLOPT_ACCEPT_ENCODING, "");
	/* A Range header rather than CURLOPT_RESUME_FROM: libcurl refuses a
	 * 200 to the latter, and a server that ignores ranges must restart the
	 * file, not fail it for good. */
	char range[32];
	if (req->download && req->download->offset) {
		snprintf(range, sizeof(range), "%llu-", (unsigned long long)req->download->offset);
		SET(CURLOPT_RANGE, range);
	}
	if (c->should_abort) {
		SET(CURLOPT_NOPROGRESS, 0L);
		SET(CURLOPT_XFERINFOFUNCTION, on_progress);
		SET(CURLOPT_XFERINFODATA, (void *)c);
	}
#undef SET
	return !bad;
}

static void limit_text(size_t max, char *out, size_t size)
{
	if (max >= (1U << 20) && max % (1U << 20) == 0)
		snprintf(out, size, "%zu MiB", max >> 20);
	else
		snprintf(out, size, "%zu bytes", max);
}

int sc_http_perform(struct sc_http *c, const struct sc_http_req *req, struct sc_http_resp *resp,
		    struct sc_err *err)
{
	const struct curl_dl *cu = c->curl;
	*resp = (struct sc_http_resp){.reason = ""};
	struct xfer x = {.c = c, .req = req, .resp = resp,
			 .max = req->max_body ? req->max_body : SC_HTTP_MAX_BODY,
			 .base = req->download ? req->download->offset : 0,
			 .range_start = -1};
	if (req->download && x.base > req->download->limit) {
		resp->failure = SC_HTTP_TOO_LARGE;
		return sc_fail(err, 0, "the download is already larger than expected");
	}
	struct curl_slist *hdrs = NULL;
	size_t nh = 0;
	for (const char *const *p = req->headers; p && *p; p++, nh++) {
		struct curl_slist *l = nh < SC_HTTP_MAX_HEADERS ? cu->slist_append(hdrs, *p) : NULL;
		if (!l) {
			cu->slist_free_all(hdrs);
			resp->failure = SC_HTTP_SETUP;
			return sc_fail(err, nh < SC_HTTP_MAX_HEADERS ? ENOMEM : 0,
				       "cannot set up the HTTP request headers");
		}
		hdrs = l;
	}
	char errbuf[CURL_ERROR_SIZE] = "";
	cu->easy_reset(c->h); /* keeps the connection cache */
	if (!set_options(c, req, hdrs, &x, errbuf)) {
		cu->easy_reset(c->h);
		cu->slist_free_all(hdrs);
		resp->failure = SC_HTTP_SETUP;
		return sc_fail(err, 0, "cannot set up the HTTP request (libcurl too old?)");
	}
	double t0 = sc_now();
	CURLcode rc = cu->easy_perform(c->h);
	resp->latency_s = sc_now() - t0;
	long status = 0;
	if (cu->easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK && status)
		resp->status = status;
	/* no pointer into this stack frame stays in the handle */
	cu->easy_reset(c->h);
	cu->slist_free_all(hdrs);
	if (req->download)
		resp->file_size = x.base + x.written;
	if (rc != CURLE_OK) {
		resp->reason = cu->easy_strerror(rc);
		char lim[48];
		if (x.too_large) {
			resp->failure = SC_HTTP_TOO_LARGE;
			if (req->download && resp->status >= 200 && resp->status < 300)
				return sc_fail(err, 0, "the download is larger than %llu bytes",
					       (unsigned long long)req->download->limit);
			limit_text(x.max, lim, sizeof(lim));
			return sc_fail(err, 0, "response body larger than %s", lim);
		}
		if (x.write_failed) {
			resp->failure = SC_HTTP_WRITE;
			return sc_fail(err, x.write_errno, "cannot write the download");
		}
		if (x.read_errno) {
			resp->failure = SC_HTTP_WRITE;
			return sc_fail(err, x.read_errno, "cannot read the upload");
		}
		resp->failure = classify(rc);
		if (x.no_memory)
			return sc_fail(err, ENOMEM, "HTTP response");
		if (x.bad_range)
			return sc_fail(err, 0, "the server sent a part other than the one asked for");
		return sc_fail(err, 0, "%s", errbuf[0] ? errbuf : resp->reason);
	}
	if (!resp->body && !(resp->body = calloc(1, 1))) {
		resp->failure = SC_HTTP_SETUP;
		return sc_fail(err, ENOMEM, "HTTP response");
	}
	return 0;
}
