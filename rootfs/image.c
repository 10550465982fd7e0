/* Opening, listing and removing images. rootfs_image_open is on the cell
 * start path: one small JSON file is read, nothing is locked. */
#include <string.h>
#include <sys/stat.h>

#include "../common/parse.h"
#include "internal.h"

int rootfs_image_open(const char *data_root, const char *name, struct rootfs_image *out,
		      struct sc_err *err)
{
	memset(out, 0, sizeof(*out));
	if (!name || !strcmp(name, "host")) {
		snprintf(out->name, sizeof(out->name), "host");
		return 0;
	}
	if (!sc_valid_name(name))
		return sc_fail(err, 0, "bad image name '%.64s'", name);
	struct image_manifest m;
	if (rootfs_manifest_load(data_root, name, &m, err) < 0)
		return -1;
	snprintf(out->name, sizeof(out->name), "%s", name);
	int rc = 0;
	for (size_t i = 0; i < m.nlayers && rc == 0; i++) {
		char path[4096];
		struct stat st;
		if (sc_path(path, sizeof(path), "%s/layers/%s", data_root, m.layers[i]) < 0)
			rc = sc_fail(err, ENAMETOOLONG, "image '%s': layer path", name);
		else if (lstat(path, &st) < 0)
			rc = sc_fail(err, errno, "image '%s': layer %s", name, path);
		else if (!S_ISDIR(st.st_mode))
			rc = sc_fail(err, ENOTDIR, "image '%s': layer %s", name, path);
		else if (!(out->layers[out->nlayers++] = strdup(path)))
			rc = sc_fail(err, ENOMEM, "image '%s'", name);
	}
	if (rc == 0) {
		out->idmap = !m.shifted && geteuid() == 0;
		out->env = steal_ptr(&m.env);
		out->workdir = steal_ptr(&m.workdir);
		out->user = steal_ptr(&m.user);
		out->entrypoint = steal_ptr(&m.entrypoint);
		out->cmd = steal_ptr(&m.cmd);
		rootfs_image_note_use(data_root, name);
	}
	rootfs_manifest_free(&m);
	if (rc < 0) {
		sc_err_hint(err, "remove and rebuild the image");
		rootfs_image_free(out);
	}
	return rc;
}

void rootfs_image_free(struct rootfs_image *img)
{
	for (size_t i = 0; i < img->nlayers; i++)
		free(img->layers[i]);
	rootfs_strv_free(img->env);
	rootfs_strv_free(img->entrypoint);
	rootfs_strv_free(img->cmd);
	free(img->workdir);
	free(img->user);
	memset(img, 0, sizeof(*img));
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct rootfs_image_info *)a)->name,
		      ((const struct rootfs_image_info *)b)->name);
}

int rootfs_image_list(const char *data_root, struct rootfs_image_info **out, size_t *n,
		      struct sc_err *err)
{
	*out = NULL;
	*n = 0;
	char **names = rootfs_store_list_names(data_root, err);
	if (!names)
		return -1;
	size_t count = 0;
	while (names[count])
		count++;
	struct rootfs_image_info *list = calloc(count ? count : 1, sizeof(*list));
	if (!list) {
		rootfs_strv_free(names);
		return sc_fail(err, ENOMEM, "list images");
	}
	size_t k = 0;
	for (size_t i = 0; i < count; i++) {
		struct image_manifest m;
		if (rootfs_manifest_load(data_root, names[i], &m, NULL) < 0)
			continue; /* half-written or foreign files are not images */
		struct rootfs_image_info *it = &list[k++];
		snprintf(it->name, sizeof(it->name), "%s", m.name);
		snprintf(it->id, sizeof(it->id), "%s", m.layers[0]);
		it->nlayers = m.nlayers;
		it->size = m.size;
		snprintf(it->created, sizeof(it->created), "%s", m.created);
		it->source = steal_ptr(&m.source);
		it->env = steal_ptr(&m.env);
		it->entrypoint = steal_ptr(&m.entrypoint);
		it->cmd = steal_ptr(&m.cmd);
		it->workdir = steal_ptr(&m.workdir);
		it->user = steal_ptr(&m.user);
		it->labels = steal_ptr(&m.labels);
		rootfs_manifest_free(&m);
	}
	rootfs_strv_free(names);
	qsort(list, k, sizeof(*list), by_name);
	*out = list;
	*n = k;
	return 0;
}

void rootfs_image_list_free(struct rootfs_image_info *list, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(list[i].source);
		rootfs_strv_free(list[i].env);
		rootfs_strv_free(list[i].entrypoint);
		rootfs_strv_free(list[i].cmd);
		free(list[i].workdir);
		free(list[i].user);
		rootfs_strv_free(list[i].labels);
		free(list[i].used_by);
	}
	free(list);
}

int rootfs_image_remove(const char *data_root, const struct rootfs_in_use *in_use, const char *name,
			struct sc_err *err)
{
	if (!strcmp(name, "host"))
		return sc_fail(err, 0, "the host image is built in and cannot be removed");
	if (!sc_valid_name(name))
		return sc_fail(err, 0, "bad image name '%.64s'", name);
	struct image_manifest m;
	if (rootfs_manifest_load(data_root, name, &m, err) < 0)
		return -1;
	rootfs_manifest_free(&m);
	struct store st;
	if (rootfs_store_open(&st, data_root, err) < 0 || rootfs_store_lock(&st, err) < 0) {
		rootfs_store_close(&st);
		return -1;
	}
	int rc = -1;
	char path[sizeof(st.root) + 128], who[256];
	if (rootfs_store_image_in_use(in_use, name, who, sizeof(who))) {
		sc_fail(err, 0, "image '%s' is used by cell '%s' (remove the cell first: sandcell rm %s)",
			name, who, who);
		goto out;
	}
	snprintf(path, sizeof(path), "%s/images/%s.json", st.root, name);
	if (unlink(path) < 0) {
		sc_fail(err, errno, "remove %s", path);
		goto out;
	}
	rootfs_store_forget_use(st.root, name);
	rc = rootfs_store_gc_layers(&st, err);
out:
	rootfs_store_unlock(&st);
	rootfs_store_close(&st);
	return rc;
}
