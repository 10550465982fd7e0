/* The registry client that pull and push share: requests to an OCI
 * distribution registry over common/http.h (libcurl, dlopen'ed), a 401's
 * challenge answered once (Basic with the caller's credentials, or a bearer
 * token from the registry's token service, for pull or for push and pull),
 * and a failed request's status said in one line. Credentials and tokens
 * never appear in a message. */
#include <cjson/cJSON.h>
#include <string.h>
#include <strings.h>

#include "../common/http.h"
#include "internal.h"

#define HEADER_MAX 4096

bool rootfs_reg_is_loopback(const char *host)
{
	char h[256];
	snprintf(h, sizeof(h), "%s", host);
	if (h[0] == '[') {
		char *end = strchr(h, ']');
		if (!end)
			return false;
		*end = '\0';
		return !strcmp(h + 1, "::1");
	}
	char *colon = strchr(h, ':');
	if (colon)
		*colon = '\0';
	return !strcmp(h, "localhost") || !strncmp(h, "127.", 4);
}

int rootfs_reg_init(struct registry *hp, bool insecure, struct sc_err *err)
{
	memset(hp, 0, sizeof(*hp));
	hp->insecure = insecure;
	return sc_http_init(&hp->http, err);
}

int rootfs_reg_open(struct registry *hp, const struct ref *ref, bool insecure, bool push,
		    const char *creds_file, struct sc_err *err)
{
	if (rootfs_reg_init(hp, insecure, err) < 0)
		return -1;
	hp->scope_repo = ref->repo;
	hp->host = ref->host;
	hp->push = push;
	int found = rootfs_creds_find(creds_file, ref->host, &hp->creds, err);
	hp->have_creds = found == 1;
	return found < 0 ? -1 : 0;
}

void rootfs_reg_free(struct registry *hp)
{
	sc_http_free(&hp->http);
	explicit_bzero(hp->token, sizeof(hp->token));
	rootfs_creds_clear(&hp->creds);
}

/* The Authorization line for a request to the registry: the bearer token,
 * else Basic credentials once the registry asked for them, else none. */
static const char *registry_auth(const struct registry *hp, char *line, size_t size)
{
	if (hp->token[0])
		snprintf(line, size, "Authorization: Bearer %s", hp->token);
	else if (hp->send_basic)
		snprintf(line, size, "Authorization: Basic %s", hp->creds.basic);
	else
		return NULL;
	return line;
}

/* " (hint)" for a refusal: where credentials came from, or how to give
 * them. */
static void creds_hint(const struct registry *hp, char *out, size_t size)
{
	if (hp->have_creds)
		snprintf(out, size, "the credentials from %.200s were refused", hp->creds.source);
	else
		snprintf(out, size, "log in with `docker login` or `podman login`, or give --creds-file%s%.192s",
			 hp->creds.note[0] ? "; " : "", hp->creds.note);
}

/* One request; auth is an Authorization line or NULL. A body goes to
 * memory (at most q->max bytes), or a 2xx body to q->dl when there is one. */
static int http_once(struct registry *hp, const struct reg_req *q, const char *auth,
		     struct sc_http_resp *r, struct sc_err *err)
{
	char accept_line[512], type_line[256];
	const char *hdrs[5];
	size_t n = 0;
	if (q->accept) {
		snprintf(accept_line, sizeof(accept_line), "Accept: %s", q->accept);
		hdrs[n++] = accept_line;
	}
	if (auth)
		hdrs[n++] = auth;
	if (q->content_type) {
		snprintf(type_line, sizeof(type_line), "Content-Type: %s", q->content_type);
		hdrs[n++] = type_line;
	}
	hdrs[n] = NULL;
	/* a push's POST and PUTs are not sent on elsewhere; a GET (a blob in
	 * other storage) and the token service's POST may be */
	bool follow = !q->method || !strcmp(q->method, "GET") || !strcmp(q->method, "HEAD");
	struct sc_http_req req = {.url = q->url,
				  .method = q->method,
				  .headers = hdrs,
				  .body = q->body,
				  .body_len = q->body_len,
				  .upload = q->upload,
				  .https_only = !hp->insecure,
				  .max_redirects = follow ? 5 : 0,
				  .connect_timeout_s = 30,
				  .low_speed_time_s = 60,
				  .max_body = q->max ? q->max : 65536,
				  .download = q->dl};
	const char *method = q->method ? q->method : q->body ? "POST" : "GET";
	int rc = sc_http_perform(&hp->http, &req, r, err);
	if (rc == 0)
		return 0;
	switch (r->failure) {
	case SC_HTTP_TOO_LARGE:
		return sc_fail(err, 0, "%s %s: the response is larger than expected", method, q->url);
	case SC_HTTP_WRITE:
	case SC_HTTP_SETUP:
		return sc_err_wrap(err, "%s %s", method, q->url);
	default:
		/* Errors after a 4xx/5xx status are reported by the caller. */
		if (r->status >= 400)
			return 0;
		return sc_fail(err, 0, "%s %s: %s", method, q->url, r->reason);
	}
}

/* Parse `Bearer realm="...",service="...",scope="..."`. */
int rootfs_pull_parse_challenge(const char *h, char *realm, char *service, char *scope, size_t size)
{
	realm[0] = service[0] = scope[0] = '\0';
	if (strncasecmp(h, "Bearer ", 7) != 0)
		return -1;
	const char *p = h + 7;
	while (*p) {
		while (*p == ' ' || *p == ',')
			p++;
		const char *eq = strchr(p, '=');
		if (!eq)
			break;
		size_t klen = (size_t)(eq - p);
		char *dst = (klen == 5 && !strncasecmp(p, "realm", 5))     ? realm
			    : (klen == 7 && !strncasecmp(p, "service", 7)) ? service
			    : (klen == 5 && !strncasecmp(p, "scope", 5))   ? scope
									   : NULL;
		p = eq + 1;
		size_t n = 0;
		if (*p == '"') {
			p++;
			while (*p && *p != '"') {
				if (dst && n + 1 < size)
					dst[n++] = *p;
				p++;
			}
			if (*p == '"')
				p++;
		} else {
			while (*p && *p != ',') {
				if (dst && n + 1 < size)
					dst[n++] = *p;
				p++;
			}
		}
		if (dst)
			dst[n] = '\0';
	}
	return realm[0] ? 0 : -1;
}

static void url_escape(const char *in, char *out, size_t size)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;
	for (const unsigned char *p = (const unsigned char *)in; *p && n + 4 < size; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		    strchr("-._~", *p)) {
			out[n++] = (char)*p;
		} else {
			out[n++] = '%';
			out[n++] = hex[*p >> 4];
			out[n++] = hex[*p & 15];
		}
	}
	out[n] = '\0';
}

/* The token request: a GET with Basic credentials when there are some, or
 * the OAuth2 refresh-token POST for an identity token (as docker does). */
static int token_request(struct registry *hp, const char *realm, const char *es, const char *esc,
			 struct sc_http_resp *r, struct sc_err *err)
{
	char url[4096], auth[sizeof(hp->creds.basic) + 32];
	if (hp->creds.identity_token[0]) {
		size_t need = strlen(es) + strlen(esc) + strlen(hp->creds.identity_token) + 128;
		_cleanup_free_ char *form = malloc(need);
		if (!form)
			return sc_fail(err, ENOMEM, "token request");
		snprintf(form, need, "grant_type=refresh_token&client_id=sandcell&service=%s&scope=%s"
			 "&refresh_token=%s", es, esc, hp->creds.identity_token);
		struct reg_req q = {.url = realm, .accept = "application/json", .body = form,
				    .body_len = strlen(form),
				    .content_type = "application/x-www-form-urlencoded"};
		int rc = http_once(hp, &q, NULL, r, err);
		explicit_bzero(form, strlen(form));
		return rc;
	}
	if (sc_path(url, sizeof(url), "%s%sservice=%s&scope=%s", realm, strchr(realm, '?') ? "&" : "?",
		    es, esc) < 0)
		return sc_fail(err, 0, "token URL too long");
	const char *a = NULL;
	if (hp->creds.basic[0]) {
		snprintf(auth, sizeof(auth), "Authorization: Basic %s", hp->creds.basic);
		a = auth;
	}
	struct reg_req q = {.url = url, .accept = "application/json"};
	int rc = http_once(hp, &q, a, r, err);
	explicit_bzero(auth, sizeof(auth));
	return rc;
}

static int fetch_token(struct registry *hp, const char *challenge, struct sc_err *err)
{
	char realm[1024], service[1024], scope[1024];
	if (rootfs_pull_parse_challenge(challenge, realm, service, scope, sizeof(realm)) < 0)
		return sc_fail(err, 0, "the registry wants authentication this client does not support "
			       "(%.100s)", challenge);
	if (strncmp(realm, "https://", 8) != 0 && !(hp->insecure && !strncmp(realm, "http://", 7)))
		return sc_fail(err, 0, "the registry's token service '%.200s' is not https", realm);
	/* a push asks for both whatever the challenge names: the first
	 * request (a HEAD of a blob) is challenged for pull only */
	if (!scope[0] || hp->push)
		snprintf(scope, sizeof(scope), "repository:%s:%s", hp->scope_repo,
			 hp->push ? "push,pull" : "pull");
	char es[3 * sizeof(service)], esc[3 * sizeof(scope)], hint[512];
	url_escape(service, es, sizeof(es));
	url_escape(scope, esc, sizeof(esc));
	struct sc_http_resp r;
	int rc = token_request(hp, realm, es, esc, &r, err);
	if (rc == 0 && r.status != 200) {
		creds_hint(hp, hint, sizeof(hint));
		if (r.status == 401 || r.status == 403)
			rc = sc_fail(err, 0, "%s: the token service refused access to %s (HTTP %ld): %s",
				     hp->host, hp->scope_repo, r.status, hint);
		else
			rc = sc_fail(err, 0, "%s: the token service answered HTTP %ld", hp->host, r.status);
	}
	if (rc == 0)
		rc = rootfs_pull_parse_token(r.body ? r.body : "", r.len, hp->token, sizeof(hp->token), err);
	sc_http_resp_free(&r);
	return rc;
}

/* A 401's challenge answered: Basic with the credentials (refused when
 * there are none, or they were sent already), Bearer with a token. */
static int authenticate(struct registry *hp, const char *challenge, struct sc_err *err)
{
	char hint[512];
	if (strncasecmp(challenge, "Basic", 5) != 0)
		return fetch_token(hp, challenge, err);
	creds_hint(hp, hint, sizeof(hint));
	if (!hp->have_creds || !hp->creds.basic[0] || hp->send_basic)
		return sc_fail(err, 0, "%s wants a user name and password (HTTP 401): %s", hp->host, hint);
	hp->send_basic = true;
	return 0;
}

int rootfs_pull_parse_token(const char *body, size_t len, char *out, size_t size, struct sc_err *err)
{
	cJSON *j = cJSON_ParseWithLength(body, len);
	const cJSON *t = j ? cJSON_GetObjectItemCaseSensitive(j, "token") : NULL;
	if (j && !cJSON_IsString(t))
		t = cJSON_GetObjectItemCaseSensitive(j, "access_token");
	int rc = 0;
	if (!cJSON_IsString(t) || strlen(t->valuestring) >= size || strpbrk(t->valuestring, "\r\n"))
		rc = sc_fail(err, 0, "the token service sent no usable token");
	else
		snprintf(out, size, "%s", t->valuestring);
	cJSON_Delete(j);
	return rc;
}

int rootfs_reg_request(struct registry *hp, const struct reg_req *q, struct sc_http_resp *r,
		       struct sc_err *err)
{
	char auth[TOKEN_MAX + 64];
	const char *a = q->anonymous ? NULL : registry_auth(hp, auth, sizeof(auth));
	int rc = http_once(hp, q, a, r, err);
	if (rc == 0 && r->status == 401 && r->www_authenticate[0] && !q->anonymous) {
		char challenge[HEADER_MAX];
		snprintf(challenge, sizeof(challenge), "%s", r->www_authenticate);
		if (authenticate(hp, challenge, err) < 0) {
			rc = -1;
		} else if (q->dl && r->file_size != q->dl->offset) {
			rc = sc_fail(err, 0, "GET %s: data before authentication", q->url);
		} else {
			/* Start the response over. */
			sc_http_resp_free(r);
			rc = http_once(hp, q, registry_auth(hp, auth, sizeof(auth)), r, err);
		}
	}
	explicit_bzero(auth, sizeof(auth));
	return rc;
}

/* The first message of a registry's JSON error body ({"errors": [{"code",
 * "message"}]}), printable ASCII only, cut to fit; "" when there is none. */
static void registry_message(const struct sc_http_resp *r, char *out, size_t size)
{
	out[0] = '\0';
	cJSON *j = r->body && r->len ? cJSON_ParseWithLength(r->body, r->len) : NULL;
	const cJSON *es = j ? cJSON_GetObjectItemCaseSensitive(j, "errors") : NULL;
	const cJSON *m = cJSON_IsArray(es) ? cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(es, 0), "message")
					   : NULL;
	if (cJSON_IsString(m)) {
		size_t n = 0;
		for (const char *p = m->valuestring; *p && n + 1 < size; p++)
			out[n++] = (*p >= 0x20 && *p < 0x7f) ? *p : '?';
		out[n] = '\0';
	}
	cJSON_Delete(j);
}

/* A 429's Retry-After as ", retry after 17 s" (seconds) or ", retry after
 * DATE"; "" when absent or not printable. */
static void retry_after_text(const struct sc_http_resp *r, char *out, size_t size)
{
	const char *v = r->retry_after;
	bool digits = v[0] != '\0', printable = v[0] != '\0';
	for (const char *p = v; *p; p++) {
		digits = digits && *p >= '0' && *p <= '9';
		printable = printable && *p >= 0x20 && *p < 0x7f;
	}
	if (printable)
		snprintf(out, size, ", retry after %s%s", v, digits ? " s" : "");
	else
		out[0] = '\0';
}

int rootfs_reg_status_error(const struct registry *hp, const struct sc_http_resp *r, const char *what,
			struct sc_err *err)
{
	char msg[200], hint[512], retry[128];
	registry_message(r, msg, sizeof(msg));
	if (r->status == 404)
		return sc_fail(err, 0, "%s: not found (HTTP 404)", what);
	if (r->status == 401 || r->status == 403) {
		creds_hint(hp, hint, sizeof(hint));
		return sc_fail(err, 0, "%s: access denied (HTTP %ld): %s", what, r->status, hint);
	}
	if (r->status == 429) {
		retry_after_text(r, retry, sizeof(retry));
		return sc_fail(err, 0, "%s: rate limited by the registry (HTTP 429%s): %s%s", hp->host,
			       retry, msg[0] ? msg : "too many requests, try again later",
			       hp->have_creds || hp->push ? "" : " (logged-in pulls have higher limits)");
	}
	return sc_fail(err, 0, "%s: HTTP %ld%s%s", what, r->status, msg[0] ? ": " : "", msg);
}

