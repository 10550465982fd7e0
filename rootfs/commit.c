/* Making an image: extract its layers into a work dir, move the tree into
 * layers/ under its content id and install the manifest, all or nothing.
 *
 * Layers are flattened: an image is one tree (one overlay lower dir),
 * named by the OCI chain id of its layers (or, for a build, the sha256 of
 * its tar stream). Images with the same layers share that tree. Keeping
 * each OCI layer as its own lower dir would need overlay whiteouts, which a
 * rootless caller cannot make (no mknod) without the kernel's newer
 * xattr whiteouts and a `userxattr` mount; a flat tree works everywhere. */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

/* A shared layer's size and owners (shifted or not) are those of an image
 * that has it already: the new image must be mounted as that tree is. */
static uint64_t size_of_layer(struct store *st, const char *id, struct idshift *ids)
{
	char **names = rootfs_store_list_names(st->root, NULL);
	uint64_t size = 0;
	bool found = false;
	for (char **n = names; n && *n && !found; n++) {
		struct image_manifest m;
		if (rootfs_manifest_load(st->root, *n, &m, NULL) < 0)
			continue;
		if (m.nlayers == 1 && !strcmp(m.layers[0], id)) {
			found = true;
			size = m.size;
			ids->shifted = m.shifted;
			ids->uid_start = m.uid_start;
			ids->gid_start = m.gid_start;
		}
		rootfs_manifest_free(&m);
	}
	rootfs_strv_free(names);
	return size;
}

static bool layer_exists(struct store *st, const char *id)
{
	char path[sizeof(st->root) + 128];
	struct stat sb;
	snprintf(path, sizeof(path), "%s/layers/%s", st->root, id);
	return lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int extract_all(struct store_work *w, const struct layer_source *src,
		       const struct extract_limits *el, const struct idshift *ids,
		       const struct image_manifest *m, char *id,
		       size_t id_size, struct extract_stats *stats, struct sc_err *err)
{
	if (mkdirat(w->dir_fd, "rootfs", 0700) < 0)
		return sc_fail(err, errno, "mkdir %s/rootfs", w->path);
	_cleanup_fd_ int root = openat(w->dir_fd, "rootfs", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (root < 0)
		return sc_fail(err, errno, "open %s/rootfs", w->path);
	struct extractor *x = rootfs_extractor_new(root, el, ids, err);
	if (!x)
		return -1;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < src->nlayers; i++) {
		struct stream s;
		if (src->open(src->ctx, i, &s, err) < 0) {
			rc = -1;
			break;
		}
		rc = rootfs_extractor_layer(x, &s, src->whiteouts, !src->no_drain, err);
		if (rc == 0)
			rc = src->close(src->ctx, i, &s, err);
		if (rc == 0 && !src->layer_id) {
			struct sha256 h = s.data_hash;
			char hex[SHA256_HEX_LEN + 1];
			rootfs_sha256_final_hex(&h, hex);
			snprintf(id, id_size, "sha256-%s", hex);
		}
		rootfs_stream_close(&s);
	}
	/* Docker creates a missing WORKDIR; so do we. */
	if (rc == 0 && m->workdir)
		rc = rootfs_extractor_mkdirs(x, m->workdir, err);
	if (rc == 0)
		rc = rootfs_extractor_finish(x, stats, err);
	if (rc == 0 && stats->skipped_devices > SKIPPED_SHOWN)
		sc_log(el->log, SC_LOG_WARN, "... and %llu more device nodes skipped",
		       (unsigned long long)(stats->skipped_devices - SKIPPED_SHOWN));
	rootfs_extractor_free(x);
	return rc;
}

int rootfs_image_make(struct store *st, const struct rootfs_in_use *in_use, struct store_work *w,
	       const struct layer_source *src, const struct rootfs_limits *lim,
	       struct image_manifest *m, struct rootfs_report *rep, struct sc_err *err)
{
	double t0 = sc_now();
	struct idshift ids;
	if (rootfs_idshift_for_caller(&ids, st->root, err) < 0)
		return -1;
	struct extract_limits el = {
		.max_bytes = lim && lim->max_size ? lim->max_size : ROOTFS_DEFAULT_MAX_SIZE,
		.max_files = lim && lim->max_files ? lim->max_files : ROOTFS_DEFAULT_MAX_FILES,
		.log = lim ? lim->log : NULL,
	};
	char id[80] = "";
	struct extract_stats stats = {0};
	bool have = false;
	if (src->layer_id) {
		snprintf(id, sizeof(id), "%s", src->layer_id);
		have = layer_exists(st, id);
	}
	if (!have && extract_all(w, src, &el, &ids, m, id, sizeof(id), &stats, err) < 0)
		return -1;
	if (!rootfs_layer_id_valid(id))
		return sc_fail(err, 0, "internal error: no layer id");

	if (rootfs_store_lock(st, err) < 0)
		return -1;
	int rc = -1;
	if (have && !layer_exists(st, id)) {
		sc_fail(err, 0, "layer %s was removed meanwhile; try again", id);
		goto out;
	}
	if (!have && rootfs_store_commit_layer(st, w, "rootfs", id, err) < 0)
		goto out;
	if (!(m->layers[0] = strdup(id))) {
		sc_fail(err, ENOMEM, "manifest");
		goto out;
	}
	m->nlayers = 1;
	m->size = have ? size_of_layer(st, id, &ids) : stats.bytes;
	m->shifted = ids.shifted;
	m->uid_start = ids.uid_start;
	m->gid_start = ids.gid_start;
	rootfs_iso8601_now(m->created);
	rc = rootfs_store_install(st, in_use, m, err);
out:
	rootfs_store_unlock(st);
	if (rc == 0 && rep) {
		memset(rep, 0, sizeof(*rep));
		snprintf(rep->id, sizeof(rep->id), "%s", id);
		rep->size = m->size;
		rep->files = stats.files;
		rep->skipped_devices = stats.skipped_devices;
		rep->stripped_setid = stats.stripped_setid;
		rep->shared = have;
		rep->seconds = sc_now() - t0;
	}
	return rc;
}
