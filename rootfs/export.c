/* `image export`: a stored image as one tar that is both an OCI image
 * layout (oci-layout, index.json, blobs/sha256/) and a `docker save`
 * archive (manifest.json naming the same blobs), so that skopeo, podman
 * and docker load it, and `image import` takes it back. Each stored layer
 * becomes an uncompressed layer tar (OCI whiteouts for overlay ones, the
 * owners as the image has them); the config carries the image's env,
 * workdir, user, entrypoint, cmd and labels. Built in a store work
 * directory (removed after, or by the next store operation when killed),
 * then written out as one tar. */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/parse.h"
#include "../common/tarwrite.h"
#include "internal.h"
#include "sha256.h"

#define MT_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define MT_CONFIG "application/vnd.oci.image.config.v1+json"
#define MT_LAYER "application/vnd.oci.image.layer.v1.tar"

struct blob {
	char hex[SHA256_HEX_LEN + 1];
	uint64_t size;
};

/* The file `tmp` in dir (size bytes) hashed and renamed to
 * blobs/sha256/HEX. */
static int seal_blob(int dir, const char *tmp, int fd, struct blob *b, struct sc_err *err)
{
	struct sha256 h;
	char buf[65536];
	rootfs_sha256_init(&h);
	b->size = 0;
	for (;;) {
		ssize_t n = pread(fd, buf, sizeof(buf), (off_t)b->size);
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

static int json_blob(int dir, cJSON *j, struct blob *b, struct sc_err *err)
{
	_cleanup_free_ char *text = cJSON_PrintUnformatted(j);
	if (!text)
		return sc_fail(err, ENOMEM, "export");
	_cleanup_fd_ int fd = open_tmp(dir, "blob.tmp", err);
	if (fd < 0)
		return -1;
	if (sc_write_all(fd, text, strlen(text)) < 0)
		return sc_fail(err, errno, "write blob.tmp");
	return seal_blob(dir, "blob.tmp", fd, b, err);
}

static int json_file(int dir, const char *name, cJSON *j, struct sc_err *err)
{
	_cleanup_free_ char *text = cJSON_PrintUnformatted(j);
	if (!text)
		return sc_fail(err, ENOMEM, "export");
	_cleanup_fd_ int fd = open_tmp(dir, name, err);
	if (fd < 0)
		return -1;
	return sc_write_all(fd, text, strlen(text)) < 0 ? sc_fail(err, errno, "write %s", name) : 0;
}

/* Stored layer `id` as a layer tar blob. */
static int layer_blob(const char *data_root, const struct image_manifest *m, const char *id, int dir,
		      struct blob *b, struct sc_err *err)
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
	if (sc_tarw_tree(fd, src, &o, err) < 0)
		return -1;
	return seal_blob(dir, "layer.tmp", fd, b, err);
}

static cJSON *strv_json(char **v)
{
	cJSON *a = cJSON_CreateArray();
	for (; v && *v && a; v++)
		cJSON_AddItemToArray(a, cJSON_CreateString(*v));
	return a;
}

static cJSON *desc_json(const char *media, const struct blob *b)
{
	char digest[80];
	snprintf(digest, sizeof(digest), "sha256:%.64s", b->hex);
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "mediaType", media);
	cJSON_AddStringToObject(d, "digest", digest);
	cJSON_AddNumberToObject(d, "size", (double)b->size);
	return d;
}

/* The image config: platform, defaults, and the layers' diff_ids. */
static cJSON *config_json(const struct image_manifest *m, const struct blob *layers, size_t n)
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
	if (m->labels) {
		cJSON *l = cJSON_CreateObject();
		for (char **kv = m->labels; *kv; kv++) {
			const char *eq = strchr(*kv, '=');
			if (!eq)
				continue;
			char key[256];
			snprintf(key, sizeof(key), "%.*s", (int)(eq - *kv), *kv);
			cJSON_AddStringToObject(l, key, eq + 1);
		}
		cJSON_AddItemToObject(c, "Labels", l);
	}
	cJSON_AddItemToObject(j, "config", c);
	cJSON_AddStringToObject(r, "type", "layers");
	cJSON *ids = cJSON_AddArrayToObject(r, "diff_ids");
	for (size_t i = 0; i < n; i++) {
		char digest[80];
		snprintf(digest, sizeof(digest), "sha256:%.64s", layers[i].hex);
		cJSON_AddItemToArray(ids, cJSON_CreateString(digest));
	}
	cJSON_AddItemToObject(j, "rootfs", r);
	return j;
}

/* index.json, oci-layout and manifest.json for the manifest and config. */
static int layout_files(int dir, const char *name, const struct blob *manifest,
			const struct blob *config, const struct blob *layers, size_t n,
			struct sc_err *err)
{
	char tag[128];
	snprintf(tag, sizeof(tag), "%s:latest", name);
	cJSON *index = cJSON_CreateObject();
	cJSON_AddNumberToObject(index, "schemaVersion", 2);
	cJSON_AddStringToObject(index, "mediaType", "application/vnd.oci.image.index.v1+json");
	cJSON *d = desc_json(MT_MANIFEST, manifest), *ann = cJSON_CreateObject();
	cJSON_AddStringToObject(ann, "org.opencontainers.image.ref.name", "latest");
	cJSON_AddStringToObject(ann, "io.containerd.image.name", tag);
	cJSON_AddItemToObject(d, "annotations", ann);
	cJSON_AddItemToArray(cJSON_AddArrayToObject(index, "manifests"), d);
	cJSON *layout = cJSON_CreateObject();
	cJSON_AddStringToObject(layout, "imageLayoutVersion", "1.0.0");
	cJSON *docker = cJSON_CreateArray(), *e = cJSON_CreateObject();
	char path[128];
	snprintf(path, sizeof(path), "blobs/sha256/%.64s", config->hex);
	cJSON_AddStringToObject(e, "Config", path);
	cJSON_AddItemToArray(cJSON_AddArrayToObject(e, "RepoTags"), cJSON_CreateString(tag));
	cJSON *ls = cJSON_AddArrayToObject(e, "Layers");
	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "blobs/sha256/%.64s", layers[i].hex);
		cJSON_AddItemToArray(ls, cJSON_CreateString(path));
	}
	cJSON_AddItemToArray(docker, e);
	int rc = json_file(dir, "index.json", index, err) < 0 ||
			 json_file(dir, "oci-layout", layout, err) < 0 ||
			 json_file(dir, "manifest.json", docker, err) < 0
		 ? -1 : 0;
	cJSON_Delete(index);
	cJSON_Delete(layout);
	cJSON_Delete(docker);
	return rc;
}

/* The layout of image m in dir: layers bottom first, config, manifest. */
static int build_layout(const char *data_root, const char *name, const struct image_manifest *m, int dir,
			struct sc_err *err)
{
	struct blob layers[ROOTFS_MAX_LAYERS], config, manifest;
	if (mkdirat(dir, "blobs", 0755) < 0 || mkdirat(dir, "blobs/sha256", 0755) < 0)
		return sc_fail(err, errno, "mkdir blobs");
	for (size_t i = 0; i < m->nlayers; i++)
		if (layer_blob(data_root, m, m->layers[m->nlayers - 1 - i], dir, &layers[i], err) < 0)
			return -1;
	cJSON *cfg = config_json(m, layers, m->nlayers);
	int rc = json_blob(dir, cfg, &config, err);
	cJSON_Delete(cfg);
	if (rc < 0)
		return -1;
	cJSON *man = cJSON_CreateObject();
	cJSON_AddNumberToObject(man, "schemaVersion", 2);
	cJSON_AddStringToObject(man, "mediaType", MT_MANIFEST);
	cJSON_AddItemToObject(man, "config", desc_json(MT_CONFIG, &config));
	cJSON *ls = cJSON_AddArrayToObject(man, "layers");
	for (size_t i = 0; i < m->nlayers; i++)
		cJSON_AddItemToArray(ls, desc_json(MT_LAYER, &layers[i]));
	rc = json_blob(dir, man, &manifest, err);
	cJSON_Delete(man);
	if (rc < 0)
		return -1;
	return layout_files(dir, name, &manifest, &config, layers, m->nlayers, err);
}

int rootfs_image_export(const char *data_root, const char *name, int out_fd, struct sc_err *err)
{
	if (!sc_valid_name(name) || !strcmp(name, "host"))
		return sc_fail(err, 0, "'%.64s' is not a stored image (the host image cannot be exported)",
			       name);
	struct image_manifest m;
	if (rootfs_manifest_load(data_root, name, &m, err) < 0)
		return -1;
	struct store st = {.lock_fd = -1};
	struct store_work w = {.dir_fd = -1};
	int rc = -1;
	if (rootfs_store_open(&st, data_root, err) == 0 && rootfs_store_work_begin(&st, &w, err) == 0 &&
	    build_layout(data_root, name, &m, w.dir_fd, err) == 0) {
		struct tarw_opts o = {.uid_offset = geteuid(), .gid_offset = getegid()};
		rc = sc_tarw_tree(out_fd, w.dir_fd, &o, err);
	}
	rootfs_store_work_end(&w);
	rootfs_store_close(&st);
	rootfs_manifest_free(&m);
	return rc;
}
