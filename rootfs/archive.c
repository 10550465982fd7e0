/* `image import`: a `docker save` archive (manifest.json + layer tars) or an
 * OCI image layout (oci-layout + index.json + blobs/), as a directory or a
 * tar file (gzip-compressed tars are unpacked to a work file first).
 * Digests are verified: blob digests for OCI layouts, each layer's
 * uncompressed digest against the config's diff_ids for both. */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/parse.h"
#include "internal.h"

#define MEMBERS_MAX 100000
#define LINK_HOPS 8

struct member {
	char *path;
	char *link; /* symlink or hard link target, NULL for files */
	bool hard;
	uint64_t off, size;
};

struct archive {
	int dir; /* an OCI layout directory, or -1 */
	int fd;  /* a tar file, or -1 */
	struct member *m;
	size_t n;
};

static void archive_close(struct archive *a)
{
	sc_closep(&a->dir);
	sc_closep(&a->fd);
	for (size_t i = 0; i < a->n; i++) {
		free(a->m[i].path);
		free(a->m[i].link);
	}
	free(a->m);
	a->m = NULL;
	a->n = 0;
}

/* A member's name as the archive's index names it: "./a/./b" and "/a/b"
 * -> "a/b"; false for "..", or for the top itself. */
static bool member_path(const char *in, char *out, size_t size)
{
	return rootfs_member_path(in, true, out, size, NULL) == 0 && out[0];
}

static int index_tar(struct archive *a, struct sc_err *err)
{
	struct stream s;
	if (rootfs_stream_open(&s, a->fd, 0, UINT64_MAX, 0, err) < 0)
		return -1;
	s.fast_skip = true;
	struct tar_reader t;
	rootfs_tar_init(&t, &s);
	struct tar_entry *e = malloc(sizeof(*e));
	size_t cap = 0;
	int rc = e ? 0 : sc_fail(err, ENOMEM, "archive index");
	char path[TAR_PATH_MAX], link[TAR_PATH_MAX];
	while (rc == 0 && (rc = rootfs_tar_next(&t, e, err)) > 0) {
		rc = 0;
		if (e->type != TAR_FILE && e->type != TAR_SYMLINK && e->type != TAR_HARDLINK)
			continue;
		if (!member_path(e->path, path, sizeof(path)))
			continue;
		link[0] = '\0';
		if (e->type == TAR_SYMLINK)
			snprintf(link, sizeof(link), "%s", e->link);
		else if (e->type == TAR_HARDLINK && !member_path(e->link, link, sizeof(link)))
			continue;
		if (a->n == MEMBERS_MAX) {
			rc = sc_fail(err, 0, "the archive has more than %d files", MEMBERS_MAX);
			break;
		}
		if (a->n == cap) {
			cap = cap ? cap * 2 : 64;
			struct member *m = realloc(a->m, cap * sizeof(*m));
			if (!m) {
				rc = sc_fail(err, ENOMEM, "archive index");
				break;
			}
			a->m = m;
		}
		struct member *m = &a->m[a->n];
		*m = (struct member){.path = strdup(path), .hard = e->type == TAR_HARDLINK,
				     .off = e->data_offset, .size = e->size};
		if (link[0] || e->type != TAR_FILE)
			m->link = strdup(link);
		a->n++;
		if (!m->path || (e->type != TAR_FILE && !m->link))
			rc = sc_fail(err, ENOMEM, "archive index");
	}
	free(e);
	rootfs_stream_close(&s);
	return rc < 0 ? -1 : 0;
}

static const struct member *find_member(const struct archive *a, const char *path, int hops)
{
	const struct member *found = NULL;
	/* The last entry of a name wins, as when tar extracts. */
	for (size_t i = 0; i < a->n; i++)
		if (!strcmp(a->m[i].path, path))
			found = &a->m[i];
	if (!found || !found->link)
		return found;
	if (hops >= LINK_HOPS)
		return NULL;
	char target[TAR_PATH_MAX], joined[TAR_PATH_MAX];
	if (found->hard) {
		snprintf(target, sizeof(target), "%s", found->link);
	} else {
		/* docker save links duplicate layers: "../HEX/layer.tar". */
		const char *slash = strrchr(found->path, '/');
		int dirlen = slash ? (int)(slash - found->path) : 0;
		if (found->link[0] == '/')
			snprintf(joined, sizeof(joined), "%s", found->link);
		else if (sc_path(joined, sizeof(joined), "%.*s/%s", dirlen, found->path, found->link) < 0)
			return NULL;
		/* Resolve ".." lexically, staying inside the archive. */
		char *parts[512];
		size_t np = 0;
		for (char *tok = strtok(joined, "/"); tok; tok = strtok(NULL, "/")) {
			if (!strcmp(tok, "."))
				continue;
			if (!strcmp(tok, "..")) {
				if (np == 0)
					return NULL;
				np--;
			} else if (np < SC_ARRAY_LEN(parts)) {
				parts[np++] = tok;
			} else {
				return NULL;
			}
		}
		size_t used = 0;
		target[0] = '\0';
		for (size_t i = 0; i < np; i++) {
			int w = snprintf(target + used, sizeof(target) - used, "%s%s", i ? "/" : "", parts[i]);
			if (w < 0 || (size_t)w >= sizeof(target) - used)
				return NULL;
			used += (size_t)w;
		}
	}
	return find_member(a, target, hops + 1);
}

static bool archive_has(const struct archive *a, const char *path)
{
	if (a->dir >= 0) {
		struct stat st;
		return fstatat(a->dir, path, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
	}
	return find_member(a, path, 0) != NULL;
}

/* An fd (owned by the caller) and the region of member `path`. */
static int open_member(const struct archive *a, const char *path, int *fd, uint64_t *off,
		       uint64_t *size, struct sc_err *err)
{
	if (a->dir >= 0) {
		int f = sc_openat_beneath(a->dir, path, O_RDONLY, 0, 0);
		struct stat st;
		if (f < 0)
			return sc_fail(err, errno, "the image layout lacks %s", path);
		if (fstat(f, &st) < 0 || !S_ISREG(st.st_mode)) {
			close(f);
			return sc_fail(err, 0, "%s in the image layout is not a file", path);
		}
		*fd = f;
		*off = 0;
		*size = (uint64_t)st.st_size;
		return 0;
	}
	const struct member *m = find_member(a, path, 0);
	if (!m)
		return sc_fail(err, 0, "the archive lacks %s", path);
	if ((*fd = dup(a->fd)) < 0)
		return sc_fail(err, errno, "dup");
	*off = m->off;
	*size = m->size;
	return 0;
}

static int read_member(const struct archive *a, const char *path, char **buf, size_t *len,
		       const char *digest, struct sc_err *err)
{
	int fd = -1;
	uint64_t off = 0, size = 0;
	if (open_member(a, path, &fd, &off, &size, err) < 0)
		return -1;
	int rc = -1;
	struct stream s;
	*buf = NULL;
	if (size > OCI_JSON_MAX) {
		sc_fail(err, 0, "%s is larger than %d bytes", path, OCI_JSON_MAX);
	} else if (rootfs_stream_open(&s, fd, off, size, 0, err) == 0) {
		char *b = malloc(size + 1);
		uint64_t got = 0;
		s.peeked = true; /* JSON: no compression sniffing */
		while (b && got < size) {
			ssize_t n = rootfs_stream_read(&s, b + got, (size_t)(size - got), err);
			if (n <= 0)
				break;
			got += (uint64_t)n;
		}
		if (!b) {
			sc_fail(err, ENOMEM, "read %s", path);
		} else if (got != size) {
			if (!err || !err->msg[0])
				sc_fail(err, 0, "%s is truncated", path);
			free(b);
		} else if (digest && !rootfs_stream_digest_is(&s, true, digest)) {
			sc_fail(err, 0, "%s does not match its digest %s", path, digest);
			free(b);
		} else {
			b[size] = '\0';
			*buf = b;
			*len = (size_t)size;
			rc = 0;
		}
		rootfs_stream_close(&s);
	}
	close(fd);
	return rc;
}

static void blob_path(const char *digest, char *out, size_t size)
{
	snprintf(out, size, "blobs/sha256/%s", digest + 7);
}

/* ---- the layers, as a layer_source ---- */

struct import_ctx {
	struct archive *a;
	char paths[OCI_MAX_LAYERS][TAR_PATH_MAX / 8];
	const char *raw_digests[OCI_MAX_LAYERS]; /* OCI: blob digests */
	struct oci_config cfg;
	int fds[OCI_MAX_LAYERS];
	uint64_t max;
	const struct sc_log *log;
};

static int layer_open(void *ctx, size_t i, struct stream *s, struct sc_err *err)
{
	struct import_ctx *c = ctx;
	uint64_t off = 0, size = 0;
	if (open_member(c->a, c->paths[i], &c->fds[i], &off, &size, err) < 0)
		return -1;
	return rootfs_stream_open(s, c->fds[i], off, size, 0, err);
}

static int layer_close(void *ctx, size_t i, struct stream *s, struct sc_err *err)
{
	struct import_ctx *c = ctx;
	sc_closep(&c->fds[i]);
	if (c->raw_digests[i] && !rootfs_stream_digest_is(s, true, c->raw_digests[i]))
		return sc_fail(err, 0, "layer %s does not match its digest", c->paths[i]);
	if (!rootfs_stream_digest_is(s, false, c->cfg.diff_ids[i]))
		return sc_fail(err, 0, "layer %s does not match diff_id %s in the image config",
			       c->paths[i], c->cfg.diff_ids[i]);
	return 0;
}

/* docker save: manifest.json = [{"Config": PATH, "Layers": [PATH...]}]. */
static int plan_docker(struct import_ctx *c, size_t *nlayers, struct sc_err *err)
{
	_cleanup_free_ char *text = NULL, *ctext = NULL;
	size_t len, clen;
	if (read_member(c->a, "manifest.json", &text, &len, NULL, err) < 0)
		return -1;
	cJSON *j = cJSON_ParseWithLength(text, len);
	const cJSON *img = cJSON_IsArray(j) ? cJSON_GetArrayItem(j, 0) : NULL;
	const cJSON *cfg = img ? cJSON_GetObjectItemCaseSensitive(img, "Config") : NULL;
	const cJSON *layers = img ? cJSON_GetObjectItemCaseSensitive(img, "Layers") : NULL;
	int rc = -1;
	char path[TAR_PATH_MAX];
	if (!cJSON_IsString(cfg) || !cJSON_IsArray(layers) ||
	    cJSON_GetArraySize(layers) > OCI_MAX_LAYERS) {
		sc_fail(err, 0, "manifest.json is not a docker save manifest");
		goto out;
	}
	if (cJSON_GetArraySize(j) > 1)
		sc_log(c->log, SC_LOG_WARN, "the archive holds %d images; importing the first",
		       cJSON_GetArraySize(j));
	if (!member_path(cfg->valuestring, path, sizeof(path))) {
		sc_fail(err, 0, "manifest.json names a bad config path");
		goto out;
	}
	if (read_member(c->a, path, &ctext, &clen, NULL, err) < 0 ||
	    rootfs_oci_parse_config(ctext, clen, &c->cfg, err) < 0)
		goto out;
	const cJSON *it;
	*nlayers = 0;
	cJSON_ArrayForEach(it, layers)
	{
		if (!cJSON_IsString(it) || !member_path(it->valuestring, c->paths[*nlayers],
							 sizeof(c->paths[0]))) {
			sc_fail(err, 0, "manifest.json names a bad layer path");
			goto out;
		}
		(*nlayers)++;
	}
	if (*nlayers != c->cfg.ndiff_ids) {
		sc_fail(err, 0, "manifest.json lists %zu layers but the config %zu diff_ids", *nlayers,
			c->cfg.ndiff_ids);
		goto out;
	}
	rc = 0;
out:
	cJSON_Delete(j);
	return rc;
}

/* OCI layout: index.json -> (index ->) manifest -> config + layers. */
static int plan_oci(struct import_ctx *c, struct oci_manifest *man, size_t *nlayers,
		    struct sc_err *err)
{
	char platform[64], path[256];
	rootfs_host_platform(platform, sizeof(platform));
	_cleanup_free_ char *text = NULL;
	size_t len;
	struct oci_desc d;
	if (read_member(c->a, "index.json", &text, &len, NULL, err) < 0 ||
	    rootfs_oci_pick_from_index(text, len, platform, &d, err) < 0)
		return -1;
	for (int depth = 0;; depth++) {
		free(steal_ptr(&text));
		blob_path(d.digest, path, sizeof(path));
		if (depth > 4)
			return sc_fail(err, 0, "image indexes nested too deeply");
		if (read_member(c->a, path, &text, &len, d.digest, err) < 0 ||
		    rootfs_oci_parse_manifest(text, len, man, err) < 0)
			return -1;
		if (!man->is_index)
			break;
		if (rootfs_oci_pick_from_index(text, len, platform, &d, err) < 0)
			return -1;
	}
	free(steal_ptr(&text));
	blob_path(man->config.digest, path, sizeof(path));
	if (read_member(c->a, path, &text, &len, man->config.digest, err) < 0 ||
	    rootfs_oci_parse_config(text, len, &c->cfg, err) < 0)
		return -1;
	if (man->nlayers != c->cfg.ndiff_ids)
		return sc_fail(err, 0, "the manifest lists %zu layers but the config %zu diff_ids",
			       man->nlayers, c->cfg.ndiff_ids);
	for (size_t i = 0; i < man->nlayers; i++) {
		blob_path(man->layers[i].digest, c->paths[i], sizeof(c->paths[0]));
		c->raw_digests[i] = man->layers[i].digest;
	}
	*nlayers = man->nlayers;
	return 0;
}

/* A gzip-compressed archive is unpacked into the work dir first. */
static int gunzip_to_work(int fd, struct store_work *w, uint64_t max, struct sc_err *err)
{
	int out = openat(w->dir_fd, "archive.tar", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0)
		return sc_fail(err, errno, "create %s/archive.tar", w->path);
	enum { BUF_SIZE = 256 * 1024 };
	_cleanup_free_ char *buf = malloc(BUF_SIZE);
	if (!buf) {
		close(out);
		return sc_fail(err, ENOMEM, "unpack %s/archive.tar", w->path);
	}
	struct stream s;
	ssize_t n = rootfs_stream_open(&s, fd, 0, UINT64_MAX, max, err);
	while (n == 0 && (n = rootfs_stream_read(&s, buf, BUF_SIZE, err)) > 0)
		n = sc_write_all(out, buf, (size_t)n) < 0
			    ? sc_fail(err, errno, "write %s/archive.tar", w->path)
			    : 0;
	rootfs_stream_close(&s);
	if (n < 0) {
		close(out);
		return -1;
	}
	return out;
}

static int archive_open(const char *file, struct store_work *w, uint64_t max, struct archive *a,
			struct sc_err *err)
{
	memset(a, 0, sizeof(*a));
	a->dir = a->fd = -1;
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return sc_fail(err, e, "open %s", file);
	}
	if (S_ISDIR(st.st_mode)) {
		a->dir = fd;
		return 0;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return sc_fail(err, 0, "%s is not a file or a directory", file);
	}
	unsigned char magic[2] = {0};
	if (pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
		int tar = gunzip_to_work(fd, w, max, err);
		close(fd);
		if (tar < 0)
			return -1;
		fd = tar;
	}
	a->fd = fd;
	if (index_tar(a, err) < 0) {
		sc_err_hint(err, "expected a docker save archive or an OCI image layout");
		return -1;
	}
	return 0;
}

int rootfs_image_import(const char *data_root, const struct rootfs_in_use *in_use, const char *file,
			const char *name, const struct rootfs_limits *lim,
			struct rootfs_report *rep, const struct sc_log *log, struct sc_err *err)
{
	if (!sc_valid_name(name) || !strcmp(name, "host"))
		return sc_fail(err, 0, "bad image name '%.64s' (letters, digits, '.', '_', '-'; not 'host')", name);
	struct store st;
	struct store_work w = {.dir_fd = -1};
	struct archive a = {.dir = -1, .fd = -1};
	struct import_ctx *c = calloc(1, sizeof(*c));
	struct oci_manifest *man = calloc(1, sizeof(*man));
	struct image_manifest m = {0};
	int rc = -1;
	uint64_t max = lim && lim->max_size ? lim->max_size : ROOTFS_DEFAULT_MAX_SIZE;
	if (!c || !man) {
		sc_fail(err, ENOMEM, "import");
		goto out_free;
	}
	for (size_t i = 0; i < OCI_MAX_LAYERS; i++)
		c->fds[i] = -1;
	if (rootfs_store_open(&st, data_root, err) < 0)
		goto out_free;
	if (rootfs_store_work_begin(&st, &w, err) < 0 || archive_open(file, &w, max, &a, err) < 0)
		goto out;
	c->a = &a;
	c->log = log;
	size_t nlayers = 0;
	const char *kind;
	if (archive_has(&a, "manifest.json")) {
		kind = "docker";
		if (plan_docker(c, &nlayers, err) < 0)
			goto out;
	} else if (archive_has(&a, "index.json")) {
		kind = "oci";
		if (plan_oci(c, man, &nlayers, err) < 0)
			goto out;
	} else {
		sc_fail(err, 0, "%s is neither a docker save archive (manifest.json) nor an OCI image "
			"layout (index.json)", file);
		goto out;
	}
	if (nlayers == 0) {
		sc_fail(err, 0, "the image has no layers");
		goto out;
	}
	char id[80];
	rootfs_oci_chain_id(c->cfg.diff_ids, nlayers, id, sizeof(id));
	struct layer_source src = {.open = layer_open, .close = layer_close, .ctx = c,
				   .nlayers = nlayers, .whiteouts = true, .layer_id = id};
	snprintf(m.name, sizeof(m.name), "%s", name);
	char abs[4096];
	if (!realpath(file, abs))
		snprintf(abs, sizeof(abs), "%s", file);
	size_t need = strlen(abs) + 32;
	if ((m.source = malloc(need)))
		snprintf(m.source, need, "import:%s:%s", kind, abs);
	rootfs_image_defaults_from_config(&m, &c->cfg);
	rc = rootfs_image_make(&st, in_use, &w, &src, lim, &m, rep, err);
out:
	for (size_t i = 0; i < OCI_MAX_LAYERS; i++)
		sc_closep(&c->fds[i]);
	archive_close(&a);
	rootfs_store_work_end(&w);
	rootfs_store_close(&st);
out_free:
	if (c)
		rootfs_oci_config_free(&c->cfg);
	rootfs_manifest_free(&m);
	free(c);
	free(man);
	return rc;
}
