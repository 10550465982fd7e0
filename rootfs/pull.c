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
#include <sys/file.h>
#include <sys/stat.h>

#include "../common/http.h"
#include "../common/parse.h"
#include "internal.h"

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

static const char ACCEPT_MANIFESTS[] =
	"application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, "
	"application/vnd.docker.distribution.manifest.list.v2+json, "
	"application/vnd.docker.distribution.manifest.v2+json";

/* Fetch a manifest or index (or a config blob) into memory, verifying the
 * digest when one is known. */
static int get_json(struct registry *hp, const char *base, const char *repo, const char *kind,
		    const char *ref, const char *digest, struct sc_http_resp *r, struct sc_err *err)
{
	char url[1024];
	*r = (struct sc_http_resp){0};
	if (sc_path(url, sizeof(url), "%s/v2/%s/%s/%s", base, repo, kind, ref) < 0)
		return sc_fail(err, 0, "URL too long");
	struct reg_req q = {.url = url, .accept = !strcmp(kind, "manifests") ? ACCEPT_MANIFESTS : NULL,
			    .max = OCI_JSON_MAX};
	if (rootfs_reg_request(hp, &q, r, err) < 0)
		return -1;
	if (r->status != 200)
		return rootfs_reg_status_error(hp, r, url, err);
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
	const struct registry *lead; /* authenticated: its token and credentials */
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

/* The blob's .partial file, opened and locked (flock) into *fd: 1; or 0
 * when the blob is stored already. Another pull of the same blob (another
 * process, or an image with the layer twice) holds the lock while it
 * downloads; after it, the blob is there, or the .partial we opened was
 * renamed or removed meanwhile and a fresh one is opened. */
static int open_partial(const char *final, const char *partial, uint64_t size, int *fd,
			struct sc_err *err)
{
	for (int tries = 0; tries < 8; tries++) {
		struct stat sb, now;
		if (stat(final, &sb) == 0 && (uint64_t)sb.st_size == size)
			return 0;
		int f = open(partial, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (f < 0)
			return sc_fail(err, errno, "open %s", partial);
		int rc;
		while ((rc = flock(f, LOCK_EX)) < 0 && errno == EINTR)
			;
		/* still the .partial (not renamed into the blob, not removed)? */
		if (rc == 0 && fstat(f, &sb) == 0 && stat(partial, &now) == 0 &&
		    sb.st_ino == now.st_ino && sb.st_dev == now.st_dev) {
			if (stat(final, &now) == 0 && (uint64_t)now.st_size == size) {
				close(f);
				return 0;
			}
			*fd = f;
			return 1;
		}
		int e = errno;
		close(f);
		if (rc < 0)
			return sc_fail(err, e, "lock %s", partial);
	}
	return sc_fail(err, EAGAIN, "%s: another pull keeps replacing it", partial);
}

static int download_blob(struct registry *hp, struct fetch_all *f, size_t i, struct sc_err *err)
{
	const struct oci_desc *d = &f->man->layers[i];
	const struct sc_log *progress = &f->serial;
	char final[4096], partial[4096], url[1024];
	struct stat sb;
	if (blob_file_path(f->st, d->digest, false, final, sizeof(final)) < 0 ||
	    blob_file_path(f->st, d->digest, true, partial, sizeof(partial)) < 0 ||
	    sc_path(url, sizeof(url), "%s/v2/%s/blobs/%s", f->base, f->ref->repo, d->digest) < 0)
		return sc_fail(err, ENAMETOOLONG, "blob path");
	if (d->size > f->max)
		return sc_fail(err, 0, "layer %s is %llu bytes, more than --max-size", d->digest,
			       (unsigned long long)d->size);
	_cleanup_fd_ int fd = -1;
	int got = open_partial(final, partial, d->size, &fd, err);
	if (got < 0)
		return -1;
	if (got == 0) {
		sc_log(progress, SC_LOG_PROGRESS, "layer %.19s: already downloaded", d->digest);
		meter_set(f, i, d->size, false, true);
		return 0; /* verified again when it is unpacked */
	}
	if (fstat(fd, &sb) < 0)
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
		struct reg_req q = {.url = url, .dl = &dl};
		int rc = rootfs_reg_request(hp, &q, &r, err);
		sc_http_resp_free(&r);
		if (rc < 0)
			return -1;
		if (r.status != 200 && r.status != 206)
			return rootfs_reg_status_error(hp, &r, url, err);
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
	struct registry hp;
	struct sc_err err = {0};
	int rc = rootfs_reg_init(&hp, f->lead->insecure, &err);
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
	rootfs_reg_free(&hp);
	return NULL;
}

/* Every layer of man into the store's blobs, PULL_PARALLEL at once. */
static int fetch_layers(const struct registry *lead, struct store *st, const char *base,
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
static int resolve_manifest(struct registry *hp, const char *base, const struct ref *ref,
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
	if (o->insecure && !rootfs_reg_is_loopback(ref.host))
		return sc_fail(err, 0, "--insecure is only allowed for registries on loopback, not %s", ref.host);
	char platform[64], base[300];
	if (o->platform)
		snprintf(platform, sizeof(platform), "%s", o->platform);
	else
		rootfs_host_platform(platform, sizeof(platform));
	snprintf(base, sizeof(base), "%s://%s", o->insecure ? "http" : "https", ref.host);
	uint64_t max = o->limits.max_size ? o->limits.max_size : ROOTFS_DEFAULT_MAX_SIZE;

	struct registry hp;
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
	if (rootfs_reg_open(&hp, &ref, o->insecure, false, o->creds_file, err) < 0)
		goto out;
	if (rootfs_store_open(&st, data_root, err) < 0)
		goto out;
	if (resolve_manifest(&hp, base, &ref, platform, man, digest, err) < 0) {
		/* a registry of one's own on loopback often speaks plain
		 * HTTP: a failure with no HTTP status says how to reach it */
		if (!o->insecure && rootfs_reg_is_loopback(ref.host) && err && !strstr(err->msg, "(HTTP ")) {
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
	/* Another pull of the image made its layer meanwhile, and removed
	 * the blobs we were unpacking: the layer is there, use it. */
	if (rc < 0 && !have && stat(path, &sb) == 0) {
		struct sc_err again = {0};
		rc = rootfs_image_make(&st, in_use, &w, &src, &o->limits, &m, rep, &again);
		sc_closep(&ctx.fd);
		if (rc == 0)
			*err = again;
	}
	if (rc == 0)
		remove_blobs(&st, man);
out:
	sc_http_resp_free(&r);
	rootfs_store_work_end(&w);
	rootfs_store_close(&st);
	rootfs_reg_free(&hp);
out_free:
	if (cfg)
		rootfs_oci_config_free(cfg);
	rootfs_manifest_free(&m);
	free(man);
	free(cfg);
	return rc;
}
