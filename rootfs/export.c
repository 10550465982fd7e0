/* `image export`: a stored image as one tar that is both an OCI image
 * layout (oci-layout, index.json, blobs/sha256/) and a `docker save`
 * archive (manifest.json naming the same blobs), so that skopeo, podman
 * and docker load it, and `image import` takes it back. The blobs are
 * ociwrite.c's, with uncompressed layer tars. Built in a store work
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

static int json_file(int dir, const char *name, cJSON *j, struct sc_err *err)
{
	_cleanup_free_ char *text = cJSON_PrintUnformatted(j);
	if (!text)
		return sc_fail(err, ENOMEM, "export");
	_cleanup_fd_ int fd = openat(dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return sc_fail(err, errno, "create %s", name);
	return sc_write_all(fd, text, strlen(text)) < 0 ? sc_fail(err, errno, "write %s", name) : 0;
}

/* index.json, oci-layout and manifest.json for the manifest and config. */
static int layout_files(int dir, const char *name, const struct oci_blob *manifest,
			const struct oci_blob *config, const struct oci_blob *layers, size_t n,
			struct sc_err *err)
{
	char tag[128];
	snprintf(tag, sizeof(tag), "%s:latest", name);
	cJSON *index = cJSON_CreateObject();
	cJSON_AddNumberToObject(index, "schemaVersion", 2);
	cJSON_AddStringToObject(index, "mediaType", "application/vnd.oci.image.index.v1+json");
	cJSON *d = rootfs_oci_desc_json(OCI_MT_MANIFEST, manifest), *ann = cJSON_CreateObject();
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

/* The layout of image m in dir: its blobs (plain layer tars), index.json,
 * oci-layout and manifest.json. */
static int build_layout(const char *data_root, const char *name, const struct image_manifest *m, int dir,
			struct sc_err *err)
{
	struct oci_image_blobs *b = malloc(sizeof(*b));
	if (!b)
		return sc_fail(err, ENOMEM, "export");
	int rc = rootfs_image_blobs(data_root, m, dir, false, b, err);
	if (rc == 0)
		rc = layout_files(dir, name, &b->manifest, &b->config, b->layers, b->nlayers, err);
	free(b);
	return rc;
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
