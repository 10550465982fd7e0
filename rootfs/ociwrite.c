/* A stored image as OCI blobs in a directory (blobs/sha256/HEX): a layer
 * tar per stored layer (OCI whiteouts for overlay ones, the owners as the
 * image has them), plain or gzip-compressed, the config (the image's env,
 * workdir, user, entrypoint, cmd and labels, and the layers' diff_ids) and
 * the image manifest. `image export` writes them into a layout, `image
 * push` sends them to a registry. */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/tarwrite.h"
#include "internal.h"

#define IO_CHUNK 65536

/* The file `tmp` in dir (open as fd) hashed and renamed to
 * blobs/sha256/HEX. */
static int seal_blob(int dir, const char *tmp, int fd, struct oci_blob *b, struct sc_err *err)
{
	struct sha256 h;
	_cleanup_free_ char *buf = malloc(IO_CHUNK);
	if (!buf)
		return sc_fail(err, ENOMEM, "hash %s", tmp);
	rootfs_sha256_init(&h);
	b->size = 0;
	for (;;) {
		ssize_t n = pread(fd, buf, IO_CHUNK, (off_t)b->size);
		if (n < 0)
			return sc_fail(err, errno, "read %s", tmp);
		if (n == 0)
			break;
		rootfs_sha256_update(&h, buf, (size_t)n);
		b->size += (uint64_t)n;
	}
	rootfs_sha256_final_hex(&h, b->hex);
	char name[128];
	snprintf(name, sizeof(name), "blobs/sha256/%.64s", b->hex);
	if (renameat(dir, tmp, dir, name) < 0)
		return sc_fail(err, errno, "store %s", name);
	return 0;
}

static int open_tmp(int dir, const char *tmp, struct sc_err *err)
{
	int fd = openat(dir, tmp, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	return fd < 0 ? sc_fail(err, errno, "create %s", tmp) : fd;
}

static int json_blob(int dir, cJSON *j, struct oci_blob *b, struct sc_err *err)
{
	_cleanup_free_ char *text = cJSON_PrintUnformatted(j);
	if (!text)
		return sc_fail(err, ENOMEM, "image blobs");
	_cleanup_fd_ int fd = open_tmp(dir, "blob.tmp", err);
	if (fd < 0)
		return -1;
	if (sc_write_all(fd, text, strlen(text)) < 0)
		return sc_fail(err, errno, "write blob.tmp");
	return seal_blob(dir, "blob.tmp", fd, b, err);
}

/* Deflate what z holds into out (flushing at the end when finish). */
static int deflate_out(z_stream *z, int out, bool finish, unsigned char *buf, struct sc_err *err)
{
	int zr;
	do {
		z->next_out = buf;
		z->avail_out = IO_CHUNK;
		zr = deflate(z, finish ? Z_FINISH : Z_NO_FLUSH);
		if (zr == Z_STREAM_ERROR)
			return sc_fail(err, 0, "gzip: %s", z->msg ? z->msg : "deflate failed");
		if (sc_write_all(out, buf, IO_CHUNK - z->avail_out) < 0)
			return sc_fail(err, errno, "write layer.gz.tmp");
	} while (z->avail_out == 0 || (finish && zr != Z_STREAM_END));
	return 0;
}

/* in (size bytes) gzip-compressed into out. The gzip header has no name
 * and no time: the same layer compresses to the same blob every time, so a
 * registry recognises it. */
static int gzip_fd(int in, uint64_t size, int out, struct sc_err *err)
{
	z_stream z = {0};
	_cleanup_free_ unsigned char *ibuf = malloc(IO_CHUNK), *obuf = malloc(IO_CHUNK);
	if (!ibuf || !obuf || deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
					   Z_DEFAULT_STRATEGY) != Z_OK)
		return sc_fail(err, ENOMEM, "gzip");
	int rc = 0;
	for (uint64_t off = 0; rc == 0 && off < size;) {
		ssize_t n = pread(in, ibuf, IO_CHUNK, (off_t)off);
		if (n <= 0) {
			rc = sc_fail(err, n < 0 ? errno : EIO, "read layer.tmp");
			break;
		}
		off += (uint64_t)n;
		z.next_in = ibuf;
		z.avail_in = (uInt)n;
		rc = deflate_out(&z, out, false, obuf, err);
	}
	if (rc == 0)
		rc = deflate_out(&z, out, true, obuf, err);
	deflateEnd(&z);
	return rc;
}

/* layer.tmp (its diff_id sealed in d) compressed into blob b. */
static int gzip_blob(int dir, struct oci_blob *d, struct oci_blob *b, struct sc_err *err)
{
	char name[128];
	snprintf(name, sizeof(name), "blobs/sha256/%.64s", d->hex);
	_cleanup_fd_ int in = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0)
		return sc_fail(err, errno, "open %s", name);
	_cleanup_fd_ int out = open_tmp(dir, "layer.gz.tmp", err);
	if (out < 0 || gzip_fd(in, d->size, out, err) < 0)
		return -1;
	/* the plain tar is not part of the image */
	if (unlinkat(dir, name, 0) < 0)
		return sc_fail(err, errno, "remove %s", name);
	return seal_blob(dir, "layer.gz.tmp", out, b, err);
}

/* Stored layer `id` as a layer tar blob d, and when gzip, compressed as
 * blob b (else b is d). */
static int layer_blob(const char *data_root, const struct image_manifest *m, const char *id, int dir,
		      bool gzip, struct oci_blob *d, struct oci_blob *b, struct sc_err *err)
{
	char path[4096];
	if (sc_path(path, sizeof(path), "%s/layers/%s", data_root, id) < 0)
		return sc_fail(err, ENAMETOOLONG, "layer path");
	_cleanup_fd_ int src = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (src < 0)
		return sc_fail(err, errno, "open layer %s", path);
	_cleanup_fd_ int fd = open_tmp(dir, "layer.tmp", err);
	if (fd < 0)
		return -1;
	/* the owners as the image has them: a root caller's shifted layers
	 * are moved back by the range's start; a rootless caller's files are
	 * its own, which is the image's root */
	uid_t me = geteuid();
	struct tarw_opts o = {.overlay = true,
			      .uid_offset = m->shifted ? m->uid_start : me,
			      .gid_offset = m->shifted ? m->gid_start : (me ? getegid() : 0)};
	if (sc_tarw_tree(fd, src, &o, err) < 0 || seal_blob(dir, "layer.tmp", fd, d, err) < 0)
		return -1;
	if (!gzip) {
		*b = *d;
		return 0;
	}
	return gzip_blob(dir, d, b, err);
}

static cJSON *strv_json(char **v)
{
	cJSON *a = cJSON_CreateArray();
	for (; v && *v && a; v++)
		cJSON_AddItemToArray(a, cJSON_CreateString(*v));
	return a;
}

cJSON *rootfs_oci_desc_json(const char *media, const struct oci_blob *b)
{
	char digest[80];
	snprintf(digest, sizeof(digest), "sha256:%.64s", b->hex);
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "mediaType", media);
	cJSON_AddStringToObject(d, "digest", digest);
	cJSON_AddNumberToObject(d, "size", (double)b->size);
	return d;
}

static cJSON *labels_json(char **labels)
{
	cJSON *l = cJSON_CreateObject();
	for (char **kv = labels; l && *kv; kv++) {
		const char *eq = strchr(*kv, '=');
		if (!eq)
			continue;
		char key[256];
		snprintf(key, sizeof(key), "%.*s", (int)(eq - *kv), *kv);
		cJSON_AddStringToObject(l, key, eq + 1);
	}
	return l;
}

/* The image config: platform, defaults, and the layers' diff_ids. */
static cJSON *config_json(const struct image_manifest *m, const struct oci_blob *diff, size_t n)
{
	char platform[64];
	rootfs_host_platform(platform, sizeof(platform));
	const char *arch = strchr(platform, '/');
	cJSON *j = cJSON_CreateObject(), *c = cJSON_CreateObject(), *r = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "architecture", arch ? arch + 1 : "amd64");
	cJSON_AddStringToObject(j, "os", "linux");
	if (m->created[0])
		cJSON_AddStringToObject(j, "created", m->created);
	if (m->env)
		cJSON_AddItemToObject(c, "Env", strv_json(m->env));
	if (m->entrypoint)
		cJSON_AddItemToObject(c, "Entrypoint", strv_json(m->entrypoint));
	if (m->cmd)
		cJSON_AddItemToObject(c, "Cmd", strv_json(m->cmd));
	if (m->workdir)
		cJSON_AddStringToObject(c, "WorkingDir", m->workdir);
	if (m->user)
		cJSON_AddStringToObject(c, "User", m->user);
	if (m->labels)
		cJSON_AddItemToObject(c, "Labels", labels_json(m->labels));
	cJSON_AddItemToObject(j, "config", c);
	cJSON_AddStringToObject(r, "type", "layers");
	cJSON *ids = cJSON_AddArrayToObject(r, "diff_ids");
	for (size_t i = 0; i < n; i++) {
		char digest[80];
		snprintf(digest, sizeof(digest), "sha256:%.64s", diff[i].hex);
		cJSON_AddItemToArray(ids, cJSON_CreateString(digest));
	}
	cJSON_AddItemToObject(j, "rootfs", r);
	return j;
}

static int manifest_blob(int dir, struct oci_image_blobs *b, struct sc_err *err)
{
	cJSON *man = cJSON_CreateObject();
	cJSON_AddNumberToObject(man, "schemaVersion", 2);
	cJSON_AddStringToObject(man, "mediaType", OCI_MT_MANIFEST);
	cJSON_AddItemToObject(man, "config", rootfs_oci_desc_json(OCI_MT_CONFIG, &b->config));
	cJSON *ls = cJSON_AddArrayToObject(man, "layers");
	for (size_t i = 0; i < b->nlayers; i++)
		cJSON_AddItemToArray(ls, rootfs_oci_desc_json(b->gzip ? OCI_MT_LAYER_GZIP : OCI_MT_LAYER,
							      &b->layers[i]));
	int rc = json_blob(dir, man, &b->manifest, err);
	cJSON_Delete(man);
	return rc;
}

int rootfs_image_blobs(const char *data_root, const struct image_manifest *m, int dir, bool gzip,
		       struct oci_image_blobs *b, struct sc_err *err)
{
	memset(b, 0, sizeof(*b));
	b->gzip = gzip;
	b->nlayers = m->nlayers;
	if (mkdirat(dir, "blobs", 0755) < 0 || mkdirat(dir, "blobs/sha256", 0755) < 0)
		return sc_fail(err, errno, "mkdir blobs");
	for (size_t i = 0; i < m->nlayers; i++)
		if (layer_blob(data_root, m, m->layers[m->nlayers - 1 - i], dir, gzip, &b->diff_ids[i],
			       &b->layers[i], err) < 0)
			return -1;
	cJSON *cfg = config_json(m, b->diff_ids, m->nlayers);
	int rc = json_blob(dir, cfg, &b->config, err);
	cJSON_Delete(cfg);
	return rc < 0 ? -1 : manifest_blob(dir, b, err);
}
