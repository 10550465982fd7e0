/* net/head.c: the request head a client sends its proxy. Two forms only:
 *   CONNECT host:port HTTP/1.x            (then TLS; SNI checked later)
 *   METHOD http://host[:port]/path HTTP/1.x with Host equal to host[:port]
 * Everything is bounded by NET_HEAD_MAX; CRLF line ends only, no obs-fold,
 * no control bytes, no Transfer-Encoding. */
#include <string.h>
#include <strings.h>

#include "net.h"

#define MAX_HEADERS 100
#define HTTP_PORT 80          /* an http:// URL's port when it names none */
#define MAX_LENGTH_DIGITS 15  /* of a Content-Length (under 10^15: no overflow) */

static int refuse(const char **why, const char *msg)
{
	if (why)
		*why = msg;
	return -1;
}

static bool is_tchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* The end of the head: the offset after "\r\n\r\n", 0 when absent. */
static size_t head_end(const char *buf, size_t len)
{
	for (size_t i = 3; i < len; i++)
		if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' && buf[i - 3] == '\r')
			return i + 1;
	return 0;
}

static int parse_port(const char *s, size_t len, uint16_t *out)
{
	if (len == 0 || len > 5)
		return -1;
	unsigned v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v == 0 || v > 65535)
		return -1;
	*out = (uint16_t)v;
	return 0;
}

/* The raw bytes asked for (cut to the bound), for the log only. */
static void raw_host(const char *s, size_t len, char host[NET_NAME_MAX + 1])
{
	if (len > NET_NAME_MAX)
		len = NET_NAME_MAX;
	memcpy(host, s, len);
	host[len] = '\0';
}

/* "host[:port]" of len bytes; port defaults to dflt when has no ':'.
 * On success host is the normalised name; on failure it holds the raw
 * text asked for (for the log), and *why says what is wrong. */
static int parse_authority(const char *s, size_t len, uint16_t dflt, bool need_port,
			   char host[NET_NAME_MAX + 1], uint16_t *port, const char **why)
{
	raw_host(s, len, host);
	if (len > 0 && s[0] == '[')
		return refuse(why, "IP literals are not allowed");
	if (memchr(s, '@', len))
		return refuse(why, "user information in the URL is not allowed");
	const char *colon = memchr(s, ':', len);
	size_t nlen = colon ? (size_t)(colon - s) : len;
	if (colon && memchr(colon + 1, ':', len - nlen - 1))
		return refuse(why, "IP literals are not allowed");
	const char *nwhy = NULL;
	char norm[NET_NAME_MAX + 1];
	if (sc_net_name_norm(s, nlen, norm, &nwhy) < 0)
		return refuse(why, nwhy);
	memcpy(host, norm, strlen(norm) + 1);
	if (!colon) {
		if (need_port)
			return refuse(why, "CONNECT needs host:port");
		*port = dflt;
		return 0;
	}
	if (parse_port(colon + 1, len - nlen - 1, port) < 0)
		return refuse(why, "bad port");
	return 0;
}

static int append(struct net_request *req, const char *s, size_t n)
{
	if (req->fwd_len + n >= sizeof(req->fwd))
		return -1;
	memcpy(req->fwd + req->fwd_len, s, n);
	req->fwd_len += n;
	req->fwd[req->fwd_len] = '\0';
	return 0;
}

static bool name_is(const char *name, size_t nlen, const char *want)
{
	return nlen == strlen(want) && strncasecmp(name, want, nlen) == 0;
}

/* Headers a proxy must not pass on (hop-by-hop, or for the proxy). */
static bool hop_by_hop(const char *name, size_t nlen)
{
	static const char *const drop[] = {"connection", "proxy-connection", "keep-alive",
					   "proxy-authorization", "proxy-authenticate", "te",
					   "trailer", "upgrade"};
	for (size_t i = 0; i < SC_ARRAY_LEN(drop); i++)
		if (name_is(name, nlen, drop[i]))
			return true;
	return false;
}

int net_parse_head(const char *buf, size_t len, struct net_request *req, const char **why)
{
	memset(req, 0, offsetof(struct net_request, fwd));
	req->fwd[0] = '\0';
	req->fwd_len = 0;
	size_t end = head_end(buf, len < NET_HEAD_MAX ? len : NET_HEAD_MAX);
	if (!end) {
		if (len < NET_HEAD_MAX)
			return 0;
		return refuse(why, "request head too long");
	}
	req->head_len = end;

	/* request line */
	const char *line = buf;
	const char *eol = memchr(line, '\r', end);
	if (eol[1] != '\n')
		return refuse(why, "bad request line");
	size_t llen = (size_t)(eol - line);
	const char *sp1 = memchr(line, ' ', llen);
	if (!sp1 || sp1 == line)
		return refuse(why, "bad request line");
	const char *sp2 = memchr(sp1 + 1, ' ', llen - (size_t)(sp1 + 1 - line));
	if (!sp2 || sp2 == sp1 + 1)
		return refuse(why, "bad request line");
	size_t mlen = (size_t)(sp1 - line);
	const char *target = sp1 + 1;
	size_t tlen = (size_t)(sp2 - target);
	const char *ver = sp2 + 1;
	size_t vlen = (size_t)(eol - ver);
	for (size_t i = 0; i < mlen; i++)
		if (!is_tchar(line[i]))
			return refuse(why, "bad request line");
	for (size_t i = 0; i < tlen; i++)
		if ((unsigned char)target[i] <= ' ' || (unsigned char)target[i] >= 0x7f)
			return refuse(why, "bad request line");
	if (!(vlen == 8 && (memcmp(ver, "HTTP/1.1", 8) == 0 || memcmp(ver, "HTTP/1.0", 8) == 0)))
		return refuse(why, "only HTTP/1.0 and HTTP/1.1 are spoken");

	const char *path = NULL;
	size_t plen = 0;
	if (name_is(line, mlen, "CONNECT") && memcmp(line, "CONNECT", 7) == 0) {
		req->kind = NET_REQ_CONNECT;
		if (parse_authority(target, tlen, 0, true, req->host, &req->port, why) < 0)
			return -1;
	} else {
		req->kind = NET_REQ_HTTP;
		if (tlen >= 8 && strncasecmp(target, "https://", 8) == 0)
			return refuse(why, "https:// URLs go through CONNECT");
		if (!(tlen >= 7 && strncasecmp(target, "http://", 7) == 0))
			return refuse(why, "a proxy request needs an absolute http:// URL");
		const char *auth = target + 7;
		size_t alen = 0;
		while (7 + alen < tlen && auth[alen] != '/' && auth[alen] != '?' && auth[alen] != '#')
			alen++;
		if (parse_authority(auth, alen, HTTP_PORT, false, req->host, &req->port, why) < 0)
			return -1;
		path = auth + alen;
		plen = tlen - 7 - alen;
		if (plen && path[0] == '#')
			plen = 0;
		if (append(req, line, mlen) < 0 || append(req, " ", 1) < 0)
			return refuse(why, "request head too long");
		if ((plen == 0 || path[0] != '/') && append(req, "/", 1) < 0)
			return refuse(why, "request head too long");
		if (append(req, path, plen) < 0 || append(req, " HTTP/1.1\r\n", 11) < 0)
			return refuse(why, "request head too long");
	}

	/* headers */
	size_t nheaders = 0;
	bool have_host = false, have_len = false;
	const char *p = eol + 2;
	const char *stop = buf + end - 2; /* the final CRLF */
	while (p < stop) {
		const char *e = memchr(p, '\r', (size_t)(stop - p) + 1);
		if (!e || e[1] != '\n')
			return refuse(why, "bad header line");
		if (++nheaders > MAX_HEADERS)
			return refuse(why, "too many headers");
		const char *colon = memchr(p, ':', (size_t)(e - p));
		if (!colon || colon == p)
			return refuse(why, "bad header line");
		size_t nlen = (size_t)(colon - p);
		for (size_t i = 0; i < nlen; i++)
			if (!is_tchar(p[i]))
				return refuse(why, "bad header line");
		const char *v = colon + 1;
		for (const char *q = v; q < e; q++)
			if (((unsigned char)*q < ' ' && *q != '\t') || *q == 0x7f)
				return refuse(why, "control bytes in a header");
		const char *ve = e;
		while (v < ve && (*v == ' ' || *v == '\t'))
			v++;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		size_t vl = (size_t)(ve - v);

		if (req->kind == NET_REQ_HTTP) {
			if (name_is(p, nlen, "transfer-encoding"))
				return refuse(why, "Transfer-Encoding in a request is not supported");
			if (name_is(p, nlen, "host")) {
				char h[NET_NAME_MAX + 1];
				uint16_t hp = 0;
				const char *hwhy = NULL;
				if (have_host)
					return refuse(why, "more than one Host header");
				have_host = true;
				if (parse_authority(v, vl, HTTP_PORT, false, h, &hp, &hwhy) < 0 ||
				    strcmp(h, req->host) != 0 || hp != req->port)
					return refuse(why, "Host header differs from the URL's host");
			}
			if (name_is(p, nlen, "content-length")) {
				uint64_t n = 0;
				if (have_len || vl == 0 || vl > MAX_LENGTH_DIGITS)
					return refuse(why, "bad Content-Length");
				for (size_t i = 0; i < vl; i++) {
					if (v[i] < '0' || v[i] > '9')
						return refuse(why, "bad Content-Length");
					n = n * 10 + (uint64_t)(v[i] - '0');
				}
				have_len = true;
				req->body_len = n;
			}
			if (!hop_by_hop(p, nlen) &&
			    (append(req, p, (size_t)(e - p)) < 0 || append(req, "\r\n", 2) < 0))
				return refuse(why, "request head too long");
		}
		p = e + 2;
	}
	if (req->kind == NET_REQ_HTTP) {
		if (!have_host)
			return refuse(why, "no Host header");
		if (append(req, "Connection: close\r\n\r\n", 21) < 0)
			return refuse(why, "request head too long");
	}
	return 1;
}
