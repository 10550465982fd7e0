/* Who may reach a cell's ports through the server, and by which name.
 *
 * Two ways in: the path /cells/ID/ports/PORT/REST, and, with serve
 * --domain D, the host name PORT-ID.D (E2B's getHost(port)), whose whole
 * path goes to the port: every cell's port is then an origin of its own,
 * so a page in one cell cannot script another's or the API's.
 *
 * Either takes the server's token, or the cell's port token: an HMAC of
 * the cell id under the server's token, which opens that cell's ports
 * and nothing else (E2B's trafficAccessToken; header
 * e2b-traffic-access-token, ?token=, or the cookie). A browser that came
 * with ?token= gets the port token as an HttpOnly cookie, scoped to the
 * cell, so the page's own requests and WebSockets get in too; the cookie
 * is taken out of what the cell's server is sent. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../rootfs/rootfs.h"
#include "api_priv.h"

#define PORT_COOKIE "sandcell_port"

void api_port_token(const struct api *a, const char *id, char out[API_PORT_TOKEN_LEN + 1])
{
	static const char purpose[] = "sandcell port traffic:";
	char msg[sizeof(purpose) + API_ID_LEN + 1];
	int n = snprintf(msg, sizeof(msg), "%s%s", purpose, id);
	uint8_t h[32];
	const char *key = a->token ? a->token : "";
	rootfs_hmac_sha256(key, strlen(key), msg, (size_t)n, h);
	for (size_t i = 0; i < API_PORT_TOKEN_LEN / 2; i++)
		snprintf(out + 2 * i, 3, "%02x", h[i]);
}

/* The value of our cookie in a Cookie header ("a=1; sandcell_port=X"),
 * into out (false: none). */
static bool port_cookie(const char *cookies, char *out, size_t size)
{
	size_t nl = strlen(PORT_COOKIE);
	for (const char *c = cookies; c && *c;) {
		c += strspn(c, " ;");
		size_t n = strcspn(c, ";");
		if (n > nl && c[nl] == '=' && !strncmp(c, PORT_COOKIE, nl) && n - nl - 1 < size) {
			memcpy(out, c + nl + 1, n - nl - 1);
			out[n - nl - 1] = '\0';
			return true;
		}
		c += n;
	}
	return false;
}

void api_port_cookies_without_ours(const char *cookies, char *out, size_t size)
{
	size_t nl = strlen(PORT_COOKIE), len = 0;
	out[0] = '\0';
	for (const char *c = cookies; c && *c;) {
		c += strspn(c, " ;");
		size_t n = strcspn(c, ";");
		bool ours = n > nl && c[nl] == '=' && !strncmp(c, PORT_COOKIE, nl);
		if (n && !ours && len + n + 2 < size) {
			len += (size_t)snprintf(out + len, size - len, "%s%.*s", len ? "; " : "", (int)n, c);
		}
		c += n;
	}
}

bool api_domain_ok(const char *d)
{
	size_t n = strspn(d, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.");
	if (n == 0 || n > 200 || d[0] == '.' || d[n - 1] == '.' || strstr(d, ".."))
		return false;
	if (!d[n])
		return true;
	size_t digits = strspn(d + n + 1, "0123456789");
	return d[n] == ':' && digits > 0 && digits <= 5 && !d[n + 1 + digits] &&
	       strtoul(d + n + 1, NULL, 10) <= 65535;
}

/* "HOST[:PORT]" without its port, lower-cased, into out. */
static bool host_part(const char *h, char *out, size_t size)
{
	size_t n = strcspn(h, ":");
	if (n == 0 || n >= size)
		return false;
	for (size_t i = 0; i < n; i++)
		out[i] = (char)((h[i] >= 'A' && h[i] <= 'Z') ? h[i] - 'A' + 'a' : h[i]);
	out[n] = '\0';
	return true;
}

bool api_port_host(const struct api *a, const struct api_request *req, char *id, unsigned *port)
{
	const char *dom = a->cfg.domain;
	const char *h = dom && req->header ? req->header(req->ctx, "Host") : NULL;
	char host[256], want[256];
	if (!h || !host_part(h, host, sizeof(host)) || !host_part(dom, want, sizeof(want)))
		return false;
	char *dot = strchr(host, '.');
	if (!dot || strcmp(dot + 1, want) != 0)
		return false;
	*dot = '\0';
	/* PORT-ID: the port's digits, then the id (which may hold '-') */
	size_t digits = strspn(host, "0123456789"), node_len;
	const char *s = host + digits + 1;
	size_t n = strlen(s);
	if (digits == 0 || digits > 5 || host[digits] != '-' || n == 0 || n > API_ID_LEN ||
	    !api_id_parse(s, n, &node_len))
		return false;
	unsigned long v = strtoul(host, NULL, 10);
	if (v == 0 || v > 65535)
		return false;
	memcpy(id, s, n + 1);
	*port = (unsigned)v;
	return true;
}

bool api_port_request(const struct api *a, const struct api_request *req, char *id,
		      unsigned *port, const char **rest, bool *by_host)
{
	*by_host = api_port_host(a, req, id, port);
	if (*by_host) {
		*rest = req->path;
		return true;
	}
	return req->path && api_proxy_path(req->path, id, port, rest);
}

bool api_port_authorized(const struct api *a, const struct api_request *req, const char *id,
			 bool *by_query)
{
	*by_query = false;
	if (!a->token)
		return true;
	const char *tok = api_given_token(req);
	char mine[API_PORT_TOKEN_LEN + 1], cookie[API_PORT_TOKEN_LEN + 8];
	api_port_token(a, id, mine);
	bool ok = tok && (api_token_ok(a, tok) || api_secret_equal(mine, tok));
	if (ok) {
		const char *q = req->query ? req->query(req->ctx, "token") : NULL;
		*by_query = q && !strcmp(q, tok);
		return true;
	}
	const char *traffic = req->header ? req->header(req->ctx, "e2b-traffic-access-token") : NULL;
	if (api_secret_equal(mine, traffic))
		return true;
	const char *cookies = req->header ? req->header(req->ctx, "Cookie") : NULL;
	return port_cookie(cookies, cookie, sizeof(cookie)) && api_secret_equal(mine, cookie);
}

void api_port_set_cookie(const struct api *a, const char *id, bool by_host,
			 struct api_response *resp)
{
	char tok[API_PORT_TOKEN_LEN + 1];
	api_port_token(a, id, tok);
	snprintf(resp->cookie, sizeof(resp->cookie),
		 PORT_COOKIE "=%s; Path=%s%s%s; HttpOnly; SameSite=Lax", tok,
		 by_host ? "/" : "/cells/", by_host ? "" : id, by_host ? "" : "/");
	api_add_header(resp, "Set-Cookie", resp->cookie);
}
