/* `image pull`: a client of the OCI distribution API (Docker registry v2).
 * libcurl is reached through common/http.h (dlopen'ed, never linked): the
 * sandcell binary's start is the hot path.
 *
 * Manifest (and index: the host's platform is picked), config and layer
 * blobs are fetched and each is checked against its sha256 digest; layers
 * also against the config's diff_ids. Anonymous bearer tokens are fetched
 * when the registry answers 401 with a Bearer challenge. Layer blobs are
 * downloaded to blobs/ in the store, resumed from a .partial file after an
 * interruption, skipped when complete, and removed once the image is made. */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "../common/http.h"
#include "../common/parse.h"
#include "internal.h"

#define TOKEN_MAX 16384
#define HEADER_MAX 4096

static bool repo_valid(const char *r)
{
	if (!r[0] || strlen(r) > 255 || r[0] == '/' || r[strlen(r) - 1] == '/' || strstr(r, "//"))
		return false;
	for (const char *p = r; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || strchr("._-/", *p)))
			return false;
	return !strstr(r, "..");
}

/* 1 to max letters, digits and the characters of extra. */
static bool chars_valid(const char *s, size_t max, const char *extra)
{
	if (!s[0] || strlen(s) > max)
		return false;
	for (const char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      strchr(extra, *p)))
			return false;
	return true;
}

static bool tag_valid(const char *t) { return chars_valid(t, 128, "._-"); }
static bool host_valid(const char *h) { return chars_valid(h, 253, ".-:[]"); }

int rootfs_parse_ref(const char *in, struct ref *r, struct sc_err *err)
{
	memset(r, 0, sizeof(*r));
	char buf[600];
	if (strlen(in) >= sizeof(buf))
		return sc_fail(err, 0, "image reference too long");
	snprintf(buf, sizeof(buf), "%s", in);
	char *at = strchr(buf, '@');
	if (at) {
		*at = '\0';
		if (!rootfs_digest_valid(at + 1))
			return sc_fail(err, 0, "bad digest in '%.200s' (expected @sha256:<64 hex digits>)", in);
		snprintf(r->digest, sizeof(r->digest), "%s", at + 1);
	}
	char *name = buf, *slash = strchr(buf, '/');
	if (slash && (memchr(buf, '.', (size_t)(slash - buf)) || memchr(buf, ':', (size_t)(slash - buf)) ||
		      !strncmp(buf, "localhost/", 10))) {
		*slash = '\0';
		snprintf(r->host, sizeof(r->host), "%.255s", buf);
		name = slash + 1;
	} else {
		snprintf(r->host, sizeof(r->host), "registry-1.docker.io");
	}
	if (!strcmp(r->host, "docker.io") || !strcmp(r->host, "index.docker.io"))
		snprintf(r->host, sizeof(r->host), "registry-1.docker.io");
	char *colon = strrchr(name, ':');
	if (colon && !strchr(colon, '/')) {
		*colon = '\0';
		snprintf(r->tag, sizeof(r->tag), "%.129s", colon + 1);
	} else {
		snprintf(r->tag, sizeof(r->tag), "latest");
	}
	if (!strcmp(r->host, "registry-1.docker.io") && !strchr(name, '/'))
		snprintf(r->repo, sizeof(r->repo), "library/%.200s", name);
	else
		snprintf(r->repo, sizeof(r->repo), "%.255s", name);
	if (!host_valid(r->host) || !repo_valid(r->repo) || !tag_valid(r->tag))
		return sc_fail(err, 0, "bad image reference '%.200s' (expected [HOST[:PORT]/]REPO[:TAG|@sha256:DIGEST], repository in lowercase)", in);
	return 0;
}

static bool host_is_loopback(const char *host)
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

/* ---- HTTP (common/http.h) ---- */

struct http {
	struct sc_http http;
	bool insecure;
	char token[TOKEN_MAX];
	const char *scope_repo;
	const char *host;           /* the registry, for messages */
	bool have_creds;
	bool send_basic;            /* the registry asked for Basic: every request */
	struct registry_creds creds;
};

static int http_init(struct http *hp, bool insecure, struct sc_err *err)
{
	memset(hp, 0, sizeof(*hp));
	hp->insecure = insecure;
	return sc_http_init(&hp->http, err);
}

static void http_free(struct http *hp)
{
	sc_http_free(&hp->http);
	explicit_bzero(hp->token, sizeof(hp->token));
	rootfs_creds_clear(&hp->creds);
}

/* The Authorization line for a request to the registry: the bearer token,
 * else Basic credentials once the registry asked for them, else none. */
static const char *registry_auth(const struct http *hp, char *line, size_t size)
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
static void creds_hint(const struct http *hp, char *out, size_t size)
{
	if (hp->have_creds)
		snprintf(out, size, "the credentials from %.200s were refused", hp->creds.source);
	else
		snprintf(out, size, "log in with `docker login` or `podman login`, or give --creds-file%s%.192s",
			 hp->creds.note[0] ? "; " : "", hp->creds.note);
}

/* One request (a POST when post is not NULL, as a form); auth is an
 * Authorization line or NULL. A body goes to memory (at most max bytes),
 * or a 2xx body to dl when there is one. */
static int http_once(struct http *hp, const char *url, const char *accept, const char *post,
		     const struct sc_http_download *dl, size_t max, const char *auth,
		     struct sc_http_resp *r, struct sc_err *err)
{
	char accept_line[512];
	const char *hdrs[4];
	size_t n = 0;
	if (accept) {
		snprintf(accept_line, sizeof(accept_line), "Accept: %s", accept);
		hdrs[n++] = accept_line;
	}
	if (auth)
		hdrs[n++] = auth;
	if (post)
		hdrs[n++] = "Content-Type: application/x-www-form-urlencoded";
	hdrs[n] = NULL;
	struct sc_http_req req = {.url = url,
				  .headers = hdrs,
				  .body = post,
				  .body_len = post ? strlen(post) : 0,
				  .https_only = !hp->insecure,
				  .max_redirects = 5,
				  .connect_timeout_s = 30,
				  .low_speed_time_s = 60,
				  .max_body = max,
				  .download = dl};
	const char *method = post ? "POST" : "GET";
	int rc = sc_http_perform(&hp->http, &req, r, err);
	if (rc == 0)
		return 0;
	switch (r->failure) {
	case SC_HTTP_TOO_LARGE:
		return sc_fail(err, 0, "%s %s: the response is larger than expected", method, url);
	case SC_HTTP_WRITE:
	case SC_HTTP_SETUP:
		return sc_err_wrap(err, "%s %s", method, url);
	default:
		/* Errors after a 4xx/5xx status are reported by the caller. */
		if (r->status >= 400)
			return 0;
		return sc_fail(err, 0, "%s %s: %s", method, url, r->reason);
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
static int token_request(struct http *hp, const char *realm, const char *es, const char *esc,
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
		int rc = http_once(hp, realm, "application/json", form, NULL, 65536, NULL, r, err);
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
	int rc = http_once(hp, url, "application/json", NULL, NULL, 65536, a, r, err);
	explicit_bzero(auth, sizeof(auth));
	return rc;
}

static int fetch_token(struct http *hp, const char *challenge, struct sc_err *err)
{
	char realm[1024], service[1024], scope[1024];
	if (rootfs_pull_parse_challenge(challenge, realm, service, scope, sizeof(realm)) < 0)
		return sc_fail(err, 0, "the registry wants authentication this client does not support "
			       "(%.100s)", challenge);
	if (strncmp(realm, "https://", 8) != 0 && !(hp->insecure && !strncmp(realm, "http://", 7)))
		return sc_fail(err, 0, "the registry's token service '%.200s' is not https", realm);
	if (!scope[0])
		snprintf(scope, sizeof(scope), "repository:%s:pull", hp->scope_repo);
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
static int authenticate(struct http *hp, const char *challenge, struct sc_err *err)
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

/* A GET to the registry, answering one 401 challenge (Basic or Bearer). */
static int http_get(struct http *hp, const char *url, const char *accept,
		    const struct sc_http_download *dl, size_t max, struct sc_http_resp *r,
		    struct sc_err *err)
{
	char auth[TOKEN_MAX + 64];
	int rc = http_once(hp, url, accept, NULL, dl, max, registry_auth(hp, auth, sizeof(auth)), r, err);
	if (rc == 0 && r->status == 401 && r->www_authenticate[0]) {
		char challenge[HEADER_MAX];
		snprintf(challenge, sizeof(challenge), "%s", r->www_authenticate);
		if (authenticate(hp, challenge, err) < 0) {
			rc = -1;
		} else if (dl && r->file_size != dl->offset) {
			rc = sc_fail(err, 0, "GET %s: data before authentication", url);
		} else {
			/* Start the response over. */
			sc_http_resp_free(r);
			rc = http_once(hp, url, accept, NULL, dl, max, registry_auth(hp, auth, sizeof(auth)),
				       r, err);
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

static int status_error(const struct http *hp, const struct sc_http_resp *r, const char *what,
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
			       hp->have_creds ? "" : " (logged-in pulls have higher limits)");
	}
	return sc_fail(err, 0, "%s: HTTP %ld%s%s", what, r->status, msg[0] ? ": " : "", msg);
}

static const char ACCEPT_MANIFESTS[] =
	"application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, "
	"application/vnd.docker.distribution.manifest.list.v2+json, "
	"application/vnd.docker.distribution.manifest.v2+json";

/* Fetch a manifest or index (or a config blob) into memory, verifying the
 * digest when one is known. */
static int get_json(struct http *hp, const char *base, const char *repo, const char *kind,
		    const char *ref, const char *digest, struct sc_http_resp *r, struct sc_err *err)
{
	char url[1024];
	*r = (struct sc_http_resp){0};
	if (sc_path(url, sizeof(url), "%s/v2/%s/%s/%s", base, repo, kind, ref) < 0)
		return sc_fail(err, 0, "URL too long");
	if (http_get(hp, url, !strcmp(kind, "manifests") ? ACCEPT_MANIFESTS : NULL, NULL,
		     OCI_JSON_MAX, r, err) < 0)
		return -1;
	if (r->status != 200)
		return status_error(hp, r, url, err);
	if (!r->body || !r->len)
		return sc_fail(err, 0, "%s: empty response", url);
	if (digest) {
		char hex[SHA256_HEX_LEN + 1];
		rootfs_sha256_hex(r->body, r->len, hex);
		if (strcmp(hex, digest + 7) != 0)
			return sc_fail(err, 0, "%s does not match its digest %s", url, digest);
	}
	return 0;
}

/* ---- blobs on disk ---- */

static int blob_file_path(struct store *st, const char *digest, bool partial, char *out, size_t size)
{
	return sc_path(out, size, "%s/blobs/sha256-%s%s", st->root, digest + 7, partial ? ".partial" : "");
}

#define HASH_CHUNK (256 * 1024)

static int hash_prefix(int fd, uint64_t len, struct sha256 *h)
{
	_cleanup_free_ char *buf = malloc(HASH_CHUNK);
	if (!buf)
		return -1;
	uint64_t off = 0;
	while (off < len) {
		ssize_t n = pread(fd, buf, len - off < HASH_CHUNK ? (size_t)(len - off) : HASH_CHUNK, (off_t)off);
		if (n <= 0)
			return -1;
		rootfs_sha256_update(h, buf, (size_t)n);
		off += (uint64_t)n;
	}
	return 0;
}

/* ---- the layers at once ---- */

/* Layers downloaded at once: a registry serves each blob from its own
 * connection, and one slow blob no longer holds up the others. */
#define PULL_PARALLEL 4
/* The meter is told at most this often while bytes arrive. */
#define METER_INTERVAL 0.1

struct fetch_all {
	pthread_mutex_t mu;
	size_t next;
	const struct oci_manifest *man;
	const struct http *lead; /* authenticated: its token and credentials */
	struct store *st;
	const char *base;
	const struct ref *ref;
	uint64_t max;
	const struct sc_log *progress; /* the caller's: called under mu */
	struct sc_log serial;          /* what the workers log through */
	/* the caller's meter (or NULL) and its figures, under mu */
	const struct rootfs_pull_meter *meter;
	struct rootfs_pull_figures fig;
	struct rootfs_pull_layer *layers; /* fig.layer, writable */
	size_t *slot;                     /* man's layer i: layers[slot[i]] */
	double start, told;
	bool failed;
	struct sc_err err;
};

static void serial_log(void *ctx, enum sc_log_level level, const char *msg)
{
	struct fetch_all *f = ctx;
	pthread_mutex_lock(&f->mu);
	sc_log(f->progress, level, "%s", msg);
	pthread_mutex_unlock(&f->mu);
}

/* Under mu: the figures to the meter, when it is due (or always). */
static void meter_tell(struct fetch_all *f, bool always)
{
	double now = sc_now();
	if (!f->meter || (!always && now - f->told < METER_INTERVAL))
		return;
	f->told = now;
	f->fig.seconds = now - f->start;
	f->fig.bytes_done = 0;
	f->fig.layers_done = 0;
	for (size_t j = 0; j < f->fig.nlayers; j++) {
		f->fig.bytes_done += f->layers[j].done;
		f->fig.layers_done += f->layers[j].done == f->layers[j].size;
	}
	f->meter->fn(f->meter->ctx, &f->fig);
}

/* Layer i has done bytes (from a download, or on disk: not this pull's). */
static void meter_set(struct fetch_all *f, size_t i, uint64_t done, bool downloaded, bool always)
{
	if (!f->meter)
		return;
	pthread_mutex_lock(&f->mu);
	struct rootfs_pull_layer *l = &f->layers[f->slot[i]];
	if (downloaded && done > l->done)
		f->fig.bytes_now += done - l->done;
	l->done = done;
	l->started = true;
	meter_tell(f, always);
	pthread_mutex_unlock(&f->mu);
}

/* Whether layer i's blob is an earlier layer's too (images repeat empty
 * layers): one thread downloads it, the others would share its file. */
static size_t first_of(const struct oci_manifest *man, size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (!strcmp(man->layers[j].digest, man->layers[i].digest))
			return j;
	return i;
}

/* The meter's figures: each distinct layer once, none done yet. */
static int meter_begin(struct fetch_all *f)
{
	size_t n = f->man->nlayers, k = 0;
	f->start = f->told = sc_now();
	if (!f->meter)
		return 0;
	f->layers = calloc(n, sizeof(*f->layers));
	f->slot = calloc(n, sizeof(*f->slot));
	if (!f->layers || !f->slot)
		return -1;
	for (size_t i = 0; i < n; i++) {
		size_t j = first_of(f->man, i);
		if (j < i) {
			f->slot[i] = f->slot[j];
			continue;
		}
		f->slot[i] = k;
		snprintf(f->layers[k].digest, sizeof(f->layers[k].digest), "%.19s", f->man->layers[i].digest);
		f->layers[k].size = f->man->layers[i].size;
		f->fig.bytes += f->layers[k].size;
		k++;
	}
	f->fig.layer = f->layers;
	f->fig.nlayers = k;
	return 0;
}

/* A downloaded chunk: hashed (one at offset 0 starts the file over), and
 * counted for the meter. */
struct chunk_ctx {
	struct sha256 h;
	struct fetch_all *f;
	size_t i;
};

static void on_chunk(void *ctx, uint64_t offset, const void *data, size_t n)
{
	struct chunk_ctx *c = ctx;
	if (offset == 0)
		rootfs_sha256_init(&c->h);
	rootfs_sha256_update(&c->h, data, n);
	meter_set(c->f, c->i, offset + n, true, false);
}

static int download_blob(struct http *hp, struct fetch_all *f, size_t i, struct sc_err *err)
{
	const struct oci_desc *d = &f->man->layers[i];
	const struct sc_log *progress = &f->serial;
	char final[4096], partial[4096], url[1024];
	struct stat sb;
	if (blob_file_path(f->st, d->digest, false, final, sizeof(final)) < 0 ||
	    blob_file_path(f->st, d->digest, true, partial, sizeof(partial)) < 0 ||
	    sc_path(url, sizeof(url), "%s/v2/%s/blobs/%s", f->base, f->ref->repo, d->digest) < 0)
		return sc_fail(err, ENAMETOOLONG, "blob path");
	if (stat(final, &sb) == 0 && (uint64_t)sb.st_size == d->size) {
		sc_log(progress, SC_LOG_PROGRESS, "layer %.19s: already downloaded", d->digest);
		meter_set(f, i, d->size, false, true);
		return 0; /* verified again when it is unpacked */
	}
	if (d->size > f->max)
		return sc_fail(err, 0, "layer %s is %llu bytes, more than --max-size", d->digest,
			       (unsigned long long)d->size);
	_cleanup_fd_ int fd = open(partial, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || fstat(fd, &sb) < 0)
		return sc_fail(err, errno, "open %s", partial);
	uint64_t have = (uint64_t)sb.st_size;
	struct chunk_ctx c = {.f = f, .i = i};
	rootfs_sha256_init(&c.h);
	if (have > d->size || hash_prefix(fd, have, &c.h) < 0) {
		have = 0;
		rootfs_sha256_init(&c.h);
	}
	if (ftruncate(fd, (off_t)have) < 0 || lseek(fd, (off_t)have, SEEK_SET) < 0)
		return sc_fail(err, errno, "prepare %s", partial);
	sc_log(progress, SC_LOG_PROGRESS, "layer %.19s: %s %.1f MB", d->digest,
	       have ? "resuming" : "downloading", (double)d->size / 1e6);
	meter_set(f, i, have, false, true);
	if (have < d->size) {
		struct sc_http_download dl = {
			.fd = fd, .offset = have, .limit = d->size, .on_data = on_chunk, .ctx = &c};
		struct sc_http_resp r;
		int rc = http_get(hp, url, NULL, &dl, 65536, &r, err);
		sc_http_resp_free(&r);
		if (rc < 0)
			return -1;
		if (r.status != 200 && r.status != 206)
			return status_error(hp, &r, url, err);
		have = r.file_size; /* from 0 when the server sent everything again */
	}
	char hex[SHA256_HEX_LEN + 1];
	rootfs_sha256_final_hex(&c.h, hex);
	if (have != d->size || strcmp(hex, d->digest + 7) != 0) {
		(void)unlink(partial);
		return sc_fail(err, 0, "layer %s: the download does not match its size or digest", d->digest);
	}
	if (fsync(fd) < 0 || rename(partial, final) < 0)
		return sc_fail(err, errno, "store %s", final);
	meter_set(f, i, d->size, false, true);
	return 0;
}

static void *fetch_worker(void *arg)
{
	struct fetch_all *f = arg;
	struct http hp;
	struct sc_err err = {0};
	int rc = http_init(&hp, f->lead->insecure, &err);
	if (rc == 0) {
		/* the lead's state: its token, credentials and what they answer */
		struct sc_http own = hp.http;
		hp = *f->lead;
		hp.http = own;
	}
	for (;;) {
		pthread_mutex_lock(&f->mu);
		bool stop = f->failed || f->next >= f->man->nlayers || rc < 0;
		size_t i = f->next++;
		pthread_mutex_unlock(&f->mu);
		if (stop)
			break;
		if (first_of(f->man, i) < i)
			continue;
		rc = download_blob(&hp, f, i, &err);
	}
	pthread_mutex_lock(&f->mu);
	if (rc < 0 && !f->failed) {
		f->failed = true;
		f->err = err;
	}
	pthread_mutex_unlock(&f->mu);
	http_free(&hp);
	return NULL;
}

/* Every layer of man into the store's blobs, PULL_PARALLEL at once. */
static int fetch_layers(const struct http *lead, struct store *st, const char *base,
			const struct ref *ref, const struct oci_manifest *man, uint64_t max,
			const struct rootfs_pull_opts *o, struct sc_err *err)
{
	struct fetch_all f = {.man = man, .lead = lead, .st = st, .base = base, .ref = ref,
			      .max = max, .progress = o->log, .meter = o->meter};
	f.serial = (struct sc_log){.fn = o->log ? serial_log : NULL, .ctx = &f};
	if (meter_begin(&f) < 0) {
		free(f.layers);
		free(f.slot);
		return sc_fail(err, ENOMEM, "pull");
	}
	pthread_mutex_init(&f.mu, NULL);
	pthread_t th[PULL_PARALLEL];
	size_t n = 0, want = man->nlayers < PULL_PARALLEL ? man->nlayers : PULL_PARALLEL;
	for (; n < want; n++)
		if (pthread_create(&th[n], NULL, fetch_worker, &f) != 0)
			break;
	if (n == 0) /* no thread: this one does it all */
		fetch_worker(&f);
	for (size_t i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	pthread_mutex_destroy(&f.mu);
	if (!f.failed && f.meter) {
		f.fig.final = true;
		meter_tell(&f, true);
	}
	free(f.layers);
	free(f.slot);
	if (f.failed) {
		*err = f.err;
		return -1;
	}
	return 0;
}

/* ---- the layers as a layer_source ---- */

struct pull_ctx {
	struct store *st;
	const struct oci_manifest *man;
	struct oci_config *cfg;
	int fd;
};

static int pull_open(void *ctx, size_t i, struct stream *s, struct sc_err *err)
{
	struct pull_ctx *c = ctx;
	char path[4096];
	if (blob_file_path(c->st, c->man->layers[i].digest, false, path, sizeof(path)) < 0)
		return sc_fail(err, ENAMETOOLONG, "blob path");
	c->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (c->fd < 0)
		return sc_fail(err, errno, "open %s", path);
	return rootfs_stream_open(s, c->fd, 0, UINT64_MAX, 0, err);
}

static int pull_close(void *ctx, size_t i, struct stream *s, struct sc_err *err)
{
	struct pull_ctx *c = ctx;
	sc_closep(&c->fd);
	const char *digest = c->man->layers[i].digest;
	if (!rootfs_stream_digest_is(s, true, digest)) {
		char path[4096];
		if (blob_file_path(c->st, digest, false, path, sizeof(path)) == 0)
			(void)unlink(path);
		return sc_fail(err, 0, "layer %s does not match its digest (removed; pull again)", digest);
	}
	if (!rootfs_stream_digest_is(s, false, c->cfg->diff_ids[i]))
		return sc_fail(err, 0, "layer %s does not match diff_id %s in the image config", digest,
			       c->cfg->diff_ids[i]);
	return 0;
}

static void remove_blobs(struct store *st, const struct oci_manifest *man)
{
	char path[4096];
	for (size_t i = 0; i < man->nlayers; i++)
		if (blob_file_path(st, man->layers[i].digest, false, path, sizeof(path)) == 0)
			(void)unlink(path);
}

/* Resolve REF to an image manifest: tag or digest, through an index. */
static int resolve_manifest(struct http *hp, const char *base, const struct ref *ref,
			    const char *platform, struct oci_manifest *man, char *digest_out,
			    struct sc_err *err)
{
	struct sc_http_resp r;
	const char *want = ref->digest[0] ? ref->digest : NULL;
	if (get_json(hp, base, ref->repo, "manifests", want ? want : ref->tag, want, &r, err) < 0) {
		sc_http_resp_free(&r);
		return -1;
	}
	for (int depth = 0;; depth++) {
		rootfs_sha256_hex(r.body, r.len, digest_out + 7);
		memcpy(digest_out, "sha256:", 7);
		if (rootfs_oci_parse_manifest(r.body, r.len, man, err) < 0)
			break;
		if (!man->is_index) {
			sc_http_resp_free(&r);
			return 0;
		}
		struct oci_desc d;
		if (depth > 4 || rootfs_oci_pick_from_index(r.body, r.len, platform, &d, err) < 0) {
			if (depth > 4)
				sc_fail(err, 0, "image indexes nested too deeply");
			break;
		}
		sc_http_resp_free(&r);
		if (get_json(hp, base, ref->repo, "manifests", d.digest, d.digest, &r, err) < 0)
			break;
	}
	sc_http_resp_free(&r);
	return -1;
}

int rootfs_image_pull(const char *data_root, const struct rootfs_in_use *in_use, const char *refstr,
		      const char *name, const struct rootfs_pull_opts *o,
		      struct rootfs_report *rep, struct sc_err *err)
{
	if (!sc_valid_name(name) || !strcmp(name, "host"))
		return sc_fail(err, 0, "bad image name '%.64s' (letters, digits, '.', '_', '-'; not 'host')", name);
	struct ref ref;
	if (rootfs_parse_ref(refstr, &ref, err) < 0)
		return -1;
	if (o->insecure && !host_is_loopback(ref.host))
		return sc_fail(err, 0, "--insecure is only allowed for registries on loopback, not %s", ref.host);
	char platform[64], base[300];
	if (o->platform)
		snprintf(platform, sizeof(platform), "%s", o->platform);
	else
		rootfs_host_platform(platform, sizeof(platform));
	snprintf(base, sizeof(base), "%s://%s", o->insecure ? "http" : "https", ref.host);
	uint64_t max = o->limits.max_size ? o->limits.max_size : ROOTFS_DEFAULT_MAX_SIZE;

	struct http hp;
	struct store st = {.lock_fd = -1};
	struct store_work w = {.dir_fd = -1};
	struct oci_manifest *man = calloc(1, sizeof(*man));
	struct oci_config *cfg = calloc(1, sizeof(*cfg));
	struct image_manifest m = {0};
	struct sc_http_resp r = {0};
	int rc = -1;
	char digest[OCI_DIGEST_LEN] = "";
	if (!man || !cfg) {
		sc_fail(err, ENOMEM, "pull");
		goto out_free;
	}
	if (http_init(&hp, o->insecure, err) < 0)
		goto out_free;
	hp.scope_repo = ref.repo;
	hp.host = ref.host;
	int found = rootfs_creds_find(o->creds_file, ref.host, &hp.creds, err);
	if (found < 0)
		goto out;
	hp.have_creds = found == 1;
	if (rootfs_store_open(&st, data_root, err) < 0)
		goto out;
	if (resolve_manifest(&hp, base, &ref, platform, man, digest, err) < 0) {
		/* a registry of one's own on loopback often speaks plain
		 * HTTP: a failure with no HTTP status says how to reach it */
		if (!o->insecure && host_is_loopback(ref.host) && err && !strstr(err->msg, "(HTTP ")) {
			char was[SC_ERR_MAX];
			snprintf(was, sizeof(was), "%s", err->msg);
			snprintf(err->msg, sizeof(err->msg), "%.300s (a plain-HTTP registry on "
				 "loopback? pull with --insecure; run, create, batch: --pull-insecure)",
				 was);
		}
		goto out;
	}
	if (get_json(&hp, base, ref.repo, "blobs", man->config.digest, man->config.digest, &r, err) < 0 ||
	    rootfs_oci_parse_config(r.body, r.len, cfg, err) < 0)
		goto out;
	if (cfg->ndiff_ids != man->nlayers || man->nlayers == 0) {
		sc_fail(err, 0, "the manifest lists %zu layers but the config %zu diff_ids", man->nlayers,
			cfg->ndiff_ids);
		goto out;
	}
	char id[80], path[4096];
	rootfs_oci_chain_id(cfg->diff_ids, man->nlayers, id, sizeof(id));
	struct stat sb;
	bool have = sc_path(path, sizeof(path), "%s/layers/%s", st.root, id) == 0 && stat(path, &sb) == 0;
	if (!have && fetch_layers(&hp, &st, base, &ref, man, max, o, err) < 0)
		goto out;
	if (rootfs_store_work_begin(&st, &w, err) < 0)
		goto out;
	struct pull_ctx ctx = {.st = &st, .man = man, .cfg = cfg, .fd = -1};
	struct layer_source src = {.open = pull_open, .close = pull_close, .ctx = &ctx,
				   .nlayers = man->nlayers, .whiteouts = true, .layer_id = id};
	snprintf(m.name, sizeof(m.name), "%s", name);
	size_t need = strlen(ref.host) + strlen(ref.repo) + strlen(ref.tag) + 100;
	if ((m.source = malloc(need)))
		snprintf(m.source, need, "pull:%s/%s:%s@%s", ref.host, ref.repo, ref.tag, digest);
	rootfs_image_defaults_from_config(&m, cfg);
	rc = rootfs_image_make(&st, in_use, &w, &src, &o->limits, &m, rep, err);
	sc_closep(&ctx.fd);
	if (rc == 0)
		remove_blobs(&st, man);
out:
	sc_http_resp_free(&r);
	rootfs_store_work_end(&w);
	rootfs_store_close(&st);
	http_free(&hp);
out_free:
	if (cfg)
		rootfs_oci_config_free(cfg);
	rootfs_manifest_free(&m);
	free(man);
	free(cfg);
	return rc;
}
