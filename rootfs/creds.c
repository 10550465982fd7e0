/* Registry credentials, from the files `docker login` and `podman login`
 * write: {"auths": {"HOST": {"auth": base64("user:password")}}}, or
 * "username"/"password", or an "identitytoken" (an OAuth2 refresh token).
 * Nothing read here is ever logged or put in an error: messages name the
 * file and the registry only. */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "../common/base64.h"
#include "internal.h"

#define CREDS_FILE_MAX (1U << 20)

/* "https://index.docker.io/v1/" -> "index.docker.io"; a path after the
 * host (podman keys may name a repository) is dropped. */
static void key_host(const char *key, char *out, size_t size)
{
	if (!strncmp(key, "https://", 8))
		key += 8;
	else if (!strncmp(key, "http://", 7))
		key += 7;
	size_t n = strcspn(key, "/");
	if (n >= size)
		n = size - 1;
	memcpy(out, key, n);
	out[n] = '\0';
}

static bool is_docker_hub(const char *h)
{
	return !strcmp(h, "registry-1.docker.io") || !strcmp(h, "index.docker.io") ||
	       !strcmp(h, "docker.io");
}

static bool key_matches(const char *key, const char *host)
{
	char h[256];
	key_host(key, h, sizeof(h));
	return !strcmp(h, host) || (is_docker_hub(h) && is_docker_hub(host));
}

/* "user:password" in base64, checked: it decodes, has a ':' and a user. */
static int basic_from_auth(const char *auth, struct registry_creds *c)
{
	_cleanup_free_ char *plain = NULL;
	size_t len;
	if (strlen(auth) >= sizeof(c->basic) || sc_base64_decode(auth, strlen(auth), &plain, &len) < 0)
		return -1;
	char *colon = memchr(plain, ':', len);
	int rc = colon && colon != plain && !memchr(plain, '\0', len) ? 0 : -1;
	if (rc == 0) {
		_cleanup_free_ char *enc = sc_base64_encode(plain, len, NULL);
		if (!enc || strlen(enc) >= sizeof(c->basic))
			rc = -1;
		else
			snprintf(c->basic, sizeof(c->basic), "%s", enc);
		if (enc)
			explicit_bzero(enc, strlen(enc));
	}
	explicit_bzero(plain, len);
	return rc;
}

static int basic_from_pair(const char *user, const char *pass, struct registry_creds *c)
{
	size_t ul = strlen(user), pl = strlen(pass);
	if (!ul || strchr(user, ':') || ul + pl + 2 > sizeof(c->basic) / 4 * 3)
		return -1;
	char pair[sizeof(c->basic)];
	memcpy(pair, user, ul);
	pair[ul] = ':';
	memcpy(pair + ul + 1, pass, pl + 1);
	_cleanup_free_ char *enc = sc_base64_encode(pair, ul + 1 + pl, NULL);
	explicit_bzero(pair, sizeof(pair));
	if (!enc)
		return -1;
	snprintf(c->basic, sizeof(c->basic), "%s", enc);
	explicit_bzero(enc, strlen(enc));
	return 0;
}

static const char *str_item(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
	return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

/* One "auths" entry into c: 1 when it holds credentials, 0 when it holds
 * none (a credential helper keeps them), -1 when it is malformed. */
static int entry_creds(const cJSON *e, struct registry_creds *c)
{
	const char *auth = str_item(e, "auth"), *user = str_item(e, "username"),
		   *pass = str_item(e, "password"), *idt = str_item(e, "identitytoken");
	if (idt) {
		if (strlen(idt) >= sizeof(c->identity_token) || strpbrk(idt, "\r\n&"))
			return -1;
		snprintf(c->identity_token, sizeof(c->identity_token), "%s", idt);
	}
	if (auth && basic_from_auth(auth, c) < 0)
		return -1;
	if (!auth && user && basic_from_pair(user, pass ? pass : "", c) < 0)
		return -1;
	return c->basic[0] || c->identity_token[0] ? 1 : 0;
}

static int creds_from_json(const char *text, size_t len, const char *file, const char *host,
			   struct registry_creds *c, struct sc_err *err)
{
	cJSON *j = cJSON_ParseWithLength(text, len);
	if (!cJSON_IsObject(j)) {
		cJSON_Delete(j);
		return sc_fail(err, 0, "%s: not a JSON object (a docker config.json or auth.json)", file);
	}
	int rc = 0;
	const cJSON *auths = cJSON_GetObjectItemCaseSensitive(j, "auths"), *e;
	if (!cJSON_IsObject(auths))
		auths = NULL;
	cJSON_ArrayForEach(e, auths)
	{
		if (!e->string || !key_matches(e->string, host) || !cJSON_IsObject(e))
			continue;
		rc = entry_creds(e, c);
		if (rc != 0)
			break;
	}
	if (rc < 0)
		sc_fail(err, 0, "%s: the entry for %s is malformed (\"auth\" must be base64 of "
			"USER:PASSWORD)", file, host);
	if (rc == 0 && (cJSON_GetObjectItemCaseSensitive(j, "credsStore") ||
			cJSON_GetObjectItemCaseSensitive(j, "credHelpers")))
		snprintf(c->note, sizeof(c->note), "credential helpers (credsStore, credHelpers) in %.120s "
			 "are not used", file);
	cJSON_Delete(j);
	if (rc == 1)
		snprintf(c->source, sizeof(c->source), "%s", file);
	return rc;
}

static int creds_from_file(const char *file, bool must_exist, const char *host,
			   struct registry_creds *c, struct sc_err *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	struct sc_err e = {0};
	if (sc_read_small_alloc(AT_FDCWD, file, SC_READ_REGULAR, CREDS_FILE_MAX, &text, &len, &e) < 0) {
		if (!must_exist && e.errnum == ENOENT)
			return 0;
		return sc_fail(err, 0, "registry credentials: %s", e.msg);
	}
	int rc = creds_from_json(text, len, file, host, c, err);
	explicit_bzero(text, len);
	return rc;
}

/* Where `podman login` and `docker login` keep them, in the order they
 * are tried. */
static size_t default_files(char files[][SC_PATH_BUF], size_t max)
{
	size_t n = 0;
	const char *v;
	if ((v = getenv("REGISTRY_AUTH_FILE")) && v[0] && n < max)
		snprintf(files[n++], SC_PATH_BUF, "%s", v);
	if ((v = getenv("XDG_RUNTIME_DIR")) && v[0] && n < max)
		snprintf(files[n++], SC_PATH_BUF, "%s/containers/auth.json", v);
	if ((v = getenv("DOCKER_CONFIG")) && v[0] && n < max)
		snprintf(files[n++], SC_PATH_BUF, "%s/config.json", v);
	else if ((v = getenv("HOME")) && v[0] && n < max)
		snprintf(files[n++], SC_PATH_BUF, "%s/.docker/config.json", v);
	return n;
}

int rootfs_creds_find(const char *file, const char *host, struct registry_creds *c,
		      struct sc_err *err)
{
	memset(c, 0, sizeof(*c));
	if (file)
		return creds_from_file(file, true, host, c, err);
	char files[4][SC_PATH_BUF];
	size_t n = default_files(files, 4);
	for (size_t i = 0; i < n; i++) {
		int rc = creds_from_file(files[i], false, host, c, err);
		if (rc != 0)
			return rc;
	}
	return 0;
}

void rootfs_creds_clear(struct registry_creds *c)
{
	explicit_bzero(c, sizeof(*c));
}
