/* `image push`: a stored image to a registry over the OCI distribution API
 * (registry.c's client, the credentials and token flow of a pull, tokens
 * scoped push,pull). The blobs are ociwrite.c's, with gzip layers, built in
 * a store work directory. Each blob is checked with a HEAD and, when the
 * registry lacks it, sent whole: a POST opens an upload, a PUT to its
 * Location with ?digest= closes it. The manifest goes last, under the
 * tag, so a registry never holds a tag whose blobs are missing. */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/parse.h"
#include "internal.h"

struct pusher {
	struct registry hp;
	char base[300];      /* "https://HOST" */
	const struct ref *ref;
	char what[600];      /* "HOST: push to REPO", for messages */
	int dir;             /* the work directory's blobs */
	const struct sc_log *log;
};

/* 1 when the registry has blob hex, 0 when it does not. */
static int blob_present(struct pusher *p, const char *hex, struct sc_err *err)
{
	char url[1024];
	if (sc_path(url, sizeof(url), "%s/v2/%s/blobs/sha256:%s", p->base, p->ref->repo, hex) < 0)
		return sc_fail(err, 0, "URL too long");
	struct sc_http_resp r;
	struct reg_req q = {.method = "HEAD", .url = url};
	int rc = rootfs_reg_request(&p->hp, &q, &r, err);
	if (rc == 0 && r.status != 200 && r.status != 404)
		rc = rootfs_reg_status_error(&p->hp, &r, p->what, err);
	else if (rc == 0)
		rc = r.status == 200;
	sc_http_resp_free(&r);
	return rc;
}

/* Whether loc is printable, without blanks or a fragment. */
static bool location_usable(const char *loc)
{
	if (!loc[0])
		return false;
	for (const char *c = loc; *c; c++)
		if (*c <= 0x20 || *c >= 0x7f || *c == '#')
			return false;
	return true;
}

/* Whether absolute URL loc is on the registry itself (base, then the end
 * of the authority). */
static bool same_origin(const char *base, const char *loc)
{
	size_t n = strlen(base);
	return !strncmp(loc, base, n) && (loc[n] == '/' || loc[n] == '?' || loc[n] == '\0');
}

/* The URL that completes an upload: its Location (absolute, absolute on
 * the registry, or relative to the uploads URL) with the digest added to
 * its query. *elsewhere when it is on another host (no credentials go
 * there). */
int rootfs_push_upload_url(const char *base, const char *repo, const char *loc, const char *hex,
			   char *out, size_t size, bool *elsewhere)
{
	char prefix[600] = "";
	*elsewhere = false;
	if (!location_usable(loc))
		return -1;
	if (!strncmp(loc, "https://", 8) || !strncmp(loc, "http://", 7))
		*elsewhere = !same_origin(base, loc);
	else if (loc[0] == '/')
		snprintf(prefix, sizeof(prefix), "%s", base);
	else if (sc_path(prefix, sizeof(prefix), "%s/v2/%s/blobs/uploads/", base, repo) < 0)
		return -1;
	return sc_path(out, size, "%s%s%sdigest=sha256%%3A%s", prefix, loc, strchr(loc, '?') ? "&" : "?",
		       hex);
}

/* POST an upload: its Location, resolved, into url. */
static int upload_open(struct pusher *p, char *url, size_t size, bool *elsewhere, const char *hex,
		       struct sc_err *err)
{
	char post[1024];
	if (sc_path(post, sizeof(post), "%s/v2/%s/blobs/uploads/", p->base, p->ref->repo) < 0)
		return sc_fail(err, 0, "URL too long");
	struct sc_http_resp r;
	struct reg_req q = {.method = "POST", .url = post, .body = "", .body_len = 0};
	int rc = rootfs_reg_request(&p->hp, &q, &r, err);
	if (rc == 0 && r.status != 202)
		rc = rootfs_reg_status_error(&p->hp, &r, p->what, err);
	else if (rc == 0 && (r.location_cut ||
			     rootfs_push_upload_url(p->base, p->ref->repo, r.location, hex, url, size,
						    elsewhere) < 0))
		rc = sc_fail(err, 0, "%s: the registry's upload location is not usable (%zu bytes)",
			     p->what, strlen(r.location));
	sc_http_resp_free(&r);
	return rc;
}

/* Blob b (in the work directory) sent to the registry. */
static int upload_blob(struct pusher *p, const struct oci_blob *b, struct sc_err *err)
{
	char name[128], url[4096];
	bool elsewhere;
	snprintf(name, sizeof(name), "blobs/sha256/%.64s", b->hex);
	_cleanup_fd_ int fd = openat(p->dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return sc_fail(err, errno, "open %s", name);
	if (upload_open(p, url, sizeof(url), &elsewhere, b->hex, err) < 0)
		return -1;
	struct sc_http_upload up = {.fd = fd, .size = b->size};
	struct sc_http_resp r;
	struct reg_req q = {.method = "PUT", .url = url, .upload = &up,
			    .content_type = "application/octet-stream", .anonymous = elsewhere};
	int rc = rootfs_reg_request(&p->hp, &q, &r, err);
	if (rc == 0 && r.status != 201)
		rc = rootfs_reg_status_error(&p->hp, &r, p->what, err);
	sc_http_resp_free(&r);
	return rc;
}

/* One blob: checked, and sent unless the registry has it; recorded in out. */
static int push_blob(struct pusher *p, const struct oci_blob *b, bool config,
		     struct rootfs_push_blob *out, struct sc_err *err)
{
	const char *kind = config ? "config" : "layer";
	snprintf(out->digest, sizeof(out->digest), "sha256:%.64s", b->hex);
	out->size = b->size;
	out->config = config;
	int have = blob_present(p, b->hex, err);
	if (have < 0)
		return -1;
	if (have) {
		sc_log(p->log, SC_LOG_PROGRESS, "%s %.19s: already present", kind, out->digest);
		return 0;
	}
	sc_log(p->log, SC_LOG_PROGRESS, "%s %.19s: uploading %.1f MB", kind, out->digest,
	       (double)b->size / 1e6);
	if (upload_blob(p, b, err) < 0)
		return -1;
	out->pushed = true;
	return 0;
}

/* The manifest blob, last, under the tag. */
static int push_manifest(struct pusher *p, const struct oci_blob *b, struct sc_err *err)
{
	char name[128], url[1024];
	snprintf(name, sizeof(name), "blobs/sha256/%.64s", b->hex);
	if (sc_path(url, sizeof(url), "%s/v2/%s/manifests/%s", p->base, p->ref->repo, p->ref->tag) < 0)
		return sc_fail(err, 0, "URL too long");
	_cleanup_free_ char *text = NULL;
	size_t len;
	if (sc_read_small_alloc(p->dir, name, SC_READ_REGULAR, OCI_JSON_MAX, &text, &len, err) < 0)
		return -1;
	struct sc_http_resp r;
	struct reg_req q = {.method = "PUT", .url = url, .body = text, .body_len = len,
			    .content_type = OCI_MT_MANIFEST};
	int rc = rootfs_reg_request(&p->hp, &q, &r, err);
	if (rc == 0 && r.status != 201)
		rc = rootfs_reg_status_error(&p->hp, &r, p->what, err);
	sc_http_resp_free(&r);
	return rc;
}

/* Every layer, the config, then the manifest. */
static int push_all(struct pusher *p, const struct oci_image_blobs *b, struct rootfs_push_result *res,
		    struct sc_err *err)
{
	for (size_t i = 0; i < b->nlayers; i++) {
		if (push_blob(p, &b->layers[i], false, &res->blob[i], err) < 0)
			return -1;
		res->nblobs = i + 1;
	}
	if (push_blob(p, &b->config, true, &res->blob[b->nlayers], err) < 0)
		return -1;
	res->nblobs = b->nlayers + 1;
	if (push_manifest(p, &b->manifest, err) < 0)
		return -1;
	snprintf(res->digest, sizeof(res->digest), "sha256:%.64s", b->manifest.hex);
	return 0;
}

/* An error with no HTTP status from a loopback registry without
 * --insecure: it probably speaks plain HTTP. */
static void hint_insecure(const struct ref *ref, bool insecure, struct sc_err *err)
{
	if (insecure || !err || !rootfs_reg_is_loopback(ref->host) || strstr(err->msg, "(HTTP "))
		return;
	char was[SC_ERR_MAX];
	snprintf(was, sizeof(was), "%s", err->msg);
	snprintf(err->msg, sizeof(err->msg), "%.300s (a plain-HTTP registry on loopback? push with "
		 "--insecure)", was);
}

static int check_args(const char *name, const char *refstr, const struct rootfs_push_opts *o,
		      struct ref *ref, struct sc_err *err)
{
	if (!sc_valid_name(name) || !strcmp(name, "host"))
		return sc_fail(err, 0, "'%.64s' is not a stored image (the host image cannot be pushed)",
			       name);
	if (rootfs_parse_ref(refstr, ref, err) < 0)
		return -1;
	if (ref->digest[0])
		return sc_fail(err, 0, "push to a tag, not a digest ('%.200s')", refstr);
	if (o->insecure && !rootfs_reg_is_loopback(ref->host))
		return sc_fail(err, 0, "--insecure is only allowed for registries on loopback, not %s",
			       ref->host);
	return 0;
}

int rootfs_image_push(const char *data_root, const char *name, const char *refstr,
		      const struct rootfs_push_opts *o, struct rootfs_push_result *res,
		      struct sc_err *err)
{
	memset(res, 0, sizeof(*res));
	struct ref ref;
	struct image_manifest m;
	if (check_args(name, refstr, o, &ref, err) < 0 ||
	    rootfs_manifest_load(data_root, name, &m, err) < 0)
		return -1;
	snprintf(res->ref, sizeof(res->ref), "%s/%s:%s", ref.host, ref.repo, ref.tag);
	struct pusher *p = calloc(1, sizeof(*p));
	struct oci_image_blobs *b = malloc(sizeof(*b));
	struct store st = {.lock_fd = -1};
	struct store_work w = {.dir_fd = -1};
	int rc = -1;
	if (!p || !b) {
		sc_fail(err, ENOMEM, "push");
		goto out_free;
	}
	p->ref = &ref;
	p->log = o->log;
	snprintf(p->base, sizeof(p->base), "%s://%s", o->insecure ? "http" : "https", ref.host);
	snprintf(p->what, sizeof(p->what), "%s: push to %s", ref.host, ref.repo);
	if (rootfs_reg_open(&p->hp, &ref, o->insecure, true, o->creds_file, err) == 0 &&
	    rootfs_store_open(&st, data_root, err) == 0 && rootfs_store_work_begin(&st, &w, err) == 0 &&
	    rootfs_image_blobs(data_root, &m, w.dir_fd, true, b, err) == 0) {
		p->dir = w.dir_fd;
		rc = push_all(p, b, res, err);
		if (rc < 0)
			hint_insecure(&ref, o->insecure, err);
	}
	rootfs_store_work_end(&w);
	rootfs_store_close(&st);
	rootfs_reg_free(&p->hp);
out_free:
	free(p);
	free(b);
	rootfs_manifest_free(&m);
	return rc;
}
