/* OCI and Docker image JSON: indexes, manifests, configs, digests and
 * chain ids. Shared by import (archives) and pull (registries). All input
 * is hostile: sizes and counts are bounded, digests validated. */
#include <cjson/cJSON.h>
#include <string.h>
#include <sys/utsname.h>

#include "internal.h"

bool rootfs_digest_valid(const char *d)
{
	if (strncmp(d, "sha256:", 7) != 0 || strlen(d) != 7 + SHA256_HEX_LEN)
		return false;
	for (const char *p = d + 7; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

bool rootfs_media_is_index(const char *mt)
{
	return !strcmp(mt, "application/vnd.oci.image.index.v1+json") ||
	       !strcmp(mt, "application/vnd.docker.distribution.manifest.list.v2+json");
}

bool rootfs_media_is_manifest(const char *mt)
{
	return !strcmp(mt, "application/vnd.oci.image.manifest.v1+json") ||
	       !strcmp(mt, "application/vnd.docker.distribution.manifest.v2+json");
}

void rootfs_host_platform(char *out, size_t size)
{
	static const char *const map[][2] = {
		{"x86_64", "amd64"}, {"aarch64", "arm64"}, {"armv7l", "arm"},
		{"i686", "386"},     {"ppc64le", "ppc64le"}, {"s390x", "s390x"},
		{"riscv64", "riscv64"},
	};
	struct utsname u;
	const char *arch = "amd64";
	if (uname(&u) == 0)
		for (size_t i = 0; i < SC_ARRAY_LEN(map); i++)
			if (!strcmp(u.machine, map[i][0]))
				arch = map[i][1];
	snprintf(out, size, "linux/%s", arch);
}

static int parse_descriptor(const cJSON *j, struct oci_desc *d, struct sc_err *err)
{
	memset(d, 0, sizeof(*d));
	const cJSON *digest = cJSON_GetObjectItemCaseSensitive(j, "digest");
	const cJSON *size = cJSON_GetObjectItemCaseSensitive(j, "size");
	const cJSON *mt = cJSON_GetObjectItemCaseSensitive(j, "mediaType");
	if (!cJSON_IsString(digest) || !rootfs_digest_valid(digest->valuestring))
		return sc_fail(err, 0, "a descriptor without a valid sha256 digest");
	snprintf(d->digest, sizeof(d->digest), "%s", digest->valuestring);
	if (cJSON_IsNumber(size) && size->valuedouble >= 0 && size->valuedouble < 1e15)
		d->size = (uint64_t)size->valuedouble;
	else
		return sc_fail(err, 0, "descriptor %s has no valid size", d->digest);
	if (cJSON_IsString(mt) && strlen(mt->valuestring) < sizeof(d->media_type))
		snprintf(d->media_type, sizeof(d->media_type), "%s", mt->valuestring);
	return 0;
}

static bool platform_matches(const cJSON *p, const char *want)
{
	const cJSON *os = cJSON_GetObjectItemCaseSensitive(p, "os");
	const cJSON *arch = cJSON_GetObjectItemCaseSensitive(p, "architecture");
	if (!cJSON_IsString(os) || !cJSON_IsString(arch))
		return false;
	char have[128];
	snprintf(have, sizeof(have), "%s/%s", os->valuestring, arch->valuestring);
	return !strcmp(have, want);
}

int rootfs_oci_pick_from_index(const char *text, size_t len, const char *platform,
			struct oci_desc *out, struct sc_err *err)
{
	cJSON *j = cJSON_ParseWithLength(text, len);
	if (!j)
		return sc_fail(err, 0, "the image index is not valid JSON");
	int rc = -1;
	const cJSON *ms = cJSON_GetObjectItemCaseSensitive(j, "manifests");
	const cJSON *it, *first = NULL, *match = NULL;
	if (!cJSON_IsArray(ms) || cJSON_GetArraySize(ms) == 0 || cJSON_GetArraySize(ms) > 1024) {
		sc_fail(err, 0, "the image index lists no manifests");
		goto out;
	}
	cJSON_ArrayForEach(it, ms)
	{
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(it, "platform");
		if (!first)
			first = it;
		if (!match && cJSON_IsObject(p) && platform_matches(p, platform))
			match = it;
	}
	/* An index without platforms (e.g. an OCI layout's index.json of one
	 * image) means its first entry. */
	if (!match) {
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(first, "platform");
		if (cJSON_IsObject(p)) {
			sc_fail(err, 0, "the image has no %s variant", platform);
			goto out;
		}
		match = first;
	}
	rc = parse_descriptor(match, out, err);
out:
	cJSON_Delete(j);
	return rc;
}

int rootfs_oci_parse_manifest(const char *text, size_t len, struct oci_manifest *m, struct sc_err *err)
{
	memset(m, 0, sizeof(*m));
	cJSON *j = cJSON_ParseWithLength(text, len);
	if (!j)
		return sc_fail(err, 0, "the image manifest is not valid JSON");
	int rc = -1;
	const cJSON *mt = cJSON_GetObjectItemCaseSensitive(j, "mediaType");
	const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(j, "config");
	const cJSON *layers = cJSON_GetObjectItemCaseSensitive(j, "layers");
	const cJSON *it;
	if (cJSON_IsString(mt) && rootfs_media_is_index(mt->valuestring)) {
		m->is_index = true;
		rc = 0;
		goto out;
	}
	if (cJSON_GetObjectItemCaseSensitive(j, "manifests")) {
		m->is_index = true;
		rc = 0;
		goto out;
	}
	if (!cJSON_IsObject(cfg) || parse_descriptor(cfg, &m->config, err) < 0) {
		if (!cJSON_IsObject(cfg))
			sc_fail(err, 0, "the image manifest has no config (schema 1 manifests are not supported)");
		goto out;
	}
	if (!cJSON_IsArray(layers) || cJSON_GetArraySize(layers) > OCI_MAX_LAYERS) {
		sc_fail(err, 0, "the image manifest must list at most %d layers", OCI_MAX_LAYERS);
		goto out;
	}
	cJSON_ArrayForEach(it, layers)
	{
		if (parse_descriptor(it, &m->layers[m->nlayers], err) < 0)
			goto out;
		if (strstr(m->layers[m->nlayers].media_type, "nondistributable") ||
		    strstr(m->layers[m->nlayers].media_type, "foreign"))
			{
				sc_fail(err, 0, "foreign (non-distributable) layers are not supported");
				goto out;
			}
		m->nlayers++;
	}
	rc = 0;
out:
	cJSON_Delete(j);
	return rc;
}

static int strv_field(const cJSON *c, const char *key, bool env, char ***out)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(c, key);
	*out = NULL;
	if (!cJSON_IsArray(a))
		return 0;
	int n = cJSON_GetArraySize(a);
	if (n <= 0 || n > 256)
		return 0;
	char **v = calloc((size_t)n + 1, sizeof(*v));
	if (!v)
		return -1;
	size_t k = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, a)
	{
		if (!cJSON_IsString(it) || strlen(it->valuestring) > 32768)
			continue;
		if (env && !rootfs_env_entry_valid(it->valuestring))
			continue;
		if (!(v[k++] = strdup(it->valuestring))) {
			rootfs_strv_free(v);
			return -1;
		}
	}
	*out = v;
	return 0;
}

int rootfs_oci_parse_config(const char *text, size_t len, struct oci_config *c, struct sc_err *err)
{
	memset(c, 0, sizeof(*c));
	cJSON *j = cJSON_ParseWithLength(text, len);
	if (!j)
		return sc_fail(err, 0, "the image config is not valid JSON");
	int rc = -1;
	const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(j, "config");
	const cJSON *rootfs = cJSON_GetObjectItemCaseSensitive(j, "rootfs");
	const cJSON *ids = rootfs ? cJSON_GetObjectItemCaseSensitive(rootfs, "diff_ids") : NULL;
	const cJSON *it;
	if (cJSON_IsObject(cfg)) {
		const cJSON *wd = cJSON_GetObjectItemCaseSensitive(cfg, "WorkingDir");
		if (cJSON_IsString(wd) && wd->valuestring[0] == '/' && strlen(wd->valuestring) < 4096)
			c->workdir = strdup(wd->valuestring);
		if (strv_field(cfg, "Env", true, &c->env) < 0 ||
		    strv_field(cfg, "Entrypoint", false, &c->entrypoint) < 0 ||
		    strv_field(cfg, "Cmd", false, &c->cmd) < 0) {
			sc_fail(err, ENOMEM, "image config");
			goto out;
		}
	}
	if (!cJSON_IsArray(ids) || cJSON_GetArraySize(ids) > OCI_MAX_LAYERS) {
		sc_fail(err, 0, "the image config has no rootfs.diff_ids");
		goto out;
	}
	cJSON_ArrayForEach(it, ids)
	{
		if (!cJSON_IsString(it) || !rootfs_digest_valid(it->valuestring)) {
			sc_fail(err, 0, "the image config has a bad diff_id");
			goto out;
		}
		snprintf(c->diff_ids[c->ndiff_ids++], sizeof(c->diff_ids[0]), "%s", it->valuestring);
	}
	rc = 0;
out:
	cJSON_Delete(j);
	if (rc < 0)
		rootfs_oci_config_free(c);
	return rc;
}

void rootfs_oci_config_free(struct oci_config *c)
{
	rootfs_strv_free(c->env);
	rootfs_strv_free(c->entrypoint);
	rootfs_strv_free(c->cmd);
	free(c->workdir);
	memset(c, 0, sizeof(*c));
}

void rootfs_oci_chain_id(char diff_ids[][OCI_DIGEST_LEN], size_t n, char *out, size_t size)
{
	/* ChainID(L0) = DiffID(L0); ChainID(Ln) = sha256(ChainID(Ln-1) + " " + DiffID(Ln)). */
	char chain[OCI_DIGEST_LEN];
	snprintf(chain, sizeof(chain), "%s", n ? diff_ids[0] : "");
	for (size_t i = 1; i < n; i++) {
		struct sha256 h;
		char hex[SHA256_HEX_LEN + 1];
		rootfs_sha256_init(&h);
		rootfs_sha256_update(&h, chain, strlen(chain));
		rootfs_sha256_update(&h, " ", 1);
		rootfs_sha256_update(&h, diff_ids[i], strlen(diff_ids[i]));
		rootfs_sha256_final_hex(&h, hex);
		snprintf(chain, sizeof(chain), "sha256:%s", hex);
	}
	snprintf(out, size, "sha256-%s", chain + 7);
}

bool rootfs_stream_digest_is(struct stream *s, bool raw, const char *digest)
{
	struct sha256 h = raw ? s->raw_hash : s->data_hash;
	char hex[SHA256_HEX_LEN + 1];
	rootfs_sha256_final_hex(&h, hex);
	return strlen(digest) == 7 + SHA256_HEX_LEN && !strcmp(digest + 7, hex);
}

void rootfs_image_defaults_from_config(struct image_manifest *m, struct oci_config *c)
{
	m->env = steal_ptr(&c->env);
	m->workdir = steal_ptr(&c->workdir);
	m->entrypoint = steal_ptr(&c->entrypoint);
	m->cmd = steal_ptr(&c->cmd);
}
