/* The store's layout, its lock, work dirs, manifests and layer garbage
 * collection. Every change is made in a work dir and moved into place with
 * rename(2), under the store lock, so a failed or killed build, import or
 * pull leaves no half image behind. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>

#include "../common/parse.h"
#include "../common/subid.h"
#include "internal.h"

#define MANIFEST_MAX (1024 * 1024)
#define STRV_MAX 256
#define STR_MAX 32768

static const char *const SUBDIRS[] = {"images", "layers", "blobs", "tmp"};

/* A root caller's cells open their layers from inside their user
 * namespace, as the cell id range (runtime/mounts.c), so the data root and
 * layers/ must be traversable by the range's root group: root:GID 0710.
 * Other host users still cannot enter; images/, blobs/ and tmp/ stay 0700. */
static int grant_cells_traversal(struct store *st, struct sc_err *err)
{
	if (geteuid() != 0)
		return 0;
	/* also for idmapped layers: images stored shifted still need it */
	struct sc_subid_range ids;
	if (sc_subid_range(&ids, err) < 0)
		return -1;
	char path[sizeof(st->root) + 16];
	const char *dirs[] = {st->root, "layers"};
	for (size_t i = 0; i < SC_ARRAY_LEN(dirs); i++) {
		if (i)
			snprintf(path, sizeof(path), "%s/%s", st->root, dirs[i]);
		else
			snprintf(path, sizeof(path), "%s", st->root);
		_cleanup_fd_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		struct stat sb;
		if (fd < 0 || fstat(fd, &sb) < 0)
			return sc_fail(err, errno, "open %s", path);
		if (sb.st_uid != 0)
			continue;
		if ((sb.st_gid != ids.gid_start && fchown(fd, 0, ids.gid_start) < 0) ||
		    ((sb.st_mode & 07777) != 0710 && fchmod(fd, 0710) < 0))
			return sc_fail(err, errno, "let cells reach their layers in %s", path);
	}
	return 0;
}

int rootfs_store_open(struct store *st, const char *data_root, struct sc_err *err)
{
	memset(st, 0, sizeof(*st));
	st->lock_fd = -1;
	if (sc_path(st->root, sizeof(st->root), "%s", data_root) < 0)
		return sc_fail(err, ENAMETOOLONG, "data directory %.200s", data_root);
	char path[sizeof(st->root) + 32];
	for (size_t i = 0; i < SC_ARRAY_LEN(SUBDIRS); i++) {
		snprintf(path, sizeof(path), "%s/%s", st->root, SUBDIRS[i]);
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			return sc_fail(err, errno, "mkdir %s", path);
	}
	if (grant_cells_traversal(st, err) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/.lock", st->root);
	st->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (st->lock_fd < 0)
		return sc_fail(err, errno, "open %s", path);
	return 0;
}

void rootfs_store_close(struct store *st)
{
	sc_closep(&st->lock_fd);
}

int rootfs_store_lock(struct store *st, struct sc_err *err)
{
	while (flock(st->lock_fd, LOCK_EX) < 0)
		if (errno != EINTR)
			return sc_fail(err, errno, "lock the image store");
	return 0;
}

void rootfs_store_unlock(struct store *st)
{
	(void)flock(st->lock_fd, LOCK_UN);
}

/* Work dirs whose lock nobody holds were left by a crash. */
static void remove_stale_work(struct store *st)
{
	char path[sizeof(st->root) + 8];
	snprintf(path, sizeof(path), "%s/tmp", st->root);
	DIR *d = opendir(path);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "op-", 3) != 0)
			continue;
		_cleanup_fd_ int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0)
			continue;
		(void)sc_remove_tree_at(dirfd(d), e->d_name, NULL);
	}
	closedir(d);
}

int rootfs_store_work_begin(struct store *st, struct store_work *w, struct sc_err *err)
{
	memset(w, 0, sizeof(*w));
	w->lock_fd = w->dir_fd = -1;
	if (rootfs_store_lock(st, err) < 0)
		return -1;
	remove_stale_work(st);
	int rc = -1;
	if (sc_path(w->path, sizeof(w->path), "%s/tmp/op-XXXXXX", st->root) < 0) {
		sc_fail(err, ENAMETOOLONG, "work directory");
	} else if (!mkdtemp(w->path)) {
		sc_fail(err, errno, "mkdir %s", w->path);
	} else if ((w->dir_fd = open(w->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
		   flock(w->dir_fd, LOCK_EX | LOCK_NB) < 0) {
		sc_fail(err, errno, "lock %s", w->path);
	} else {
		rc = 0;
	}
	rootfs_store_unlock(st);
	return rc;
}

void rootfs_store_work_end(struct store_work *w)
{
	if (w->path[0] && w->dir_fd >= 0)
		(void)sc_remove_tree_path(w->path, NULL);
	sc_closep(&w->dir_fd);
	w->path[0] = '\0';
}

void rootfs_iso8601_now(char out[32])
{
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* ---- string arrays ---- */

void rootfs_strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

char **rootfs_strv_dup(char *const *v)
{
	if (!v)
		return NULL;
	size_t n = 0;
	while (v[n])
		n++;
	char **out = calloc(n + 1, sizeof(*out));
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!(out[i] = strdup(v[i]))) {
			rootfs_strv_free(out);
			return NULL;
		}
	return out;
}

/* ---- manifests ---- */

void rootfs_manifest_free(struct image_manifest *m)
{
	for (size_t i = 0; i < m->nlayers; i++)
		free(m->layers[i]);
	free(m->source);
	rootfs_strv_free(m->env);
	free(m->workdir);
	rootfs_strv_free(m->entrypoint);
	rootfs_strv_free(m->cmd);
	free(m->user);
	rootfs_strv_free(m->labels);
	memset(m, 0, sizeof(*m));
}

bool rootfs_layer_id_valid(const char *id)
{
	if (strncmp(id, "sha256-", 7) != 0 || strlen(id) != 7 + SHA256_HEX_LEN)
		return false;
	for (const char *p = id + 7; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

bool rootfs_env_entry_valid(const char *kv)
{
	const char *eq = strchr(kv, '=');
	if (!eq || eq == kv || strlen(kv) > STR_MAX)
		return false;
	for (const char *p = kv; p < eq; p++)
		if (*p == '\n' || *p == ' ' || *p < 0x20)
			return false;
	return true;
}

/* A JSON array of strings, bounded; NULL when absent or empty. */
static int strv_from_json(const cJSON *a, bool env, char ***out, struct sc_err *err)
{
	*out = NULL;
	if (!a || cJSON_IsNull(a))
		return 0;
	if (!cJSON_IsArray(a))
		return sc_fail(err, 0, "expected an array of strings");
	int n = cJSON_GetArraySize(a);
	if (n > STRV_MAX)
		return sc_fail(err, 0, "an array of %d strings (at most %d)", n, STRV_MAX);
	if (n == 0)
		return 0;
	char **v = calloc((size_t)n + 1, sizeof(*v));
	if (!v)
		return sc_fail(err, ENOMEM, "manifest");
	size_t k = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, a)
	{
		if (!cJSON_IsString(it) || strlen(it->valuestring) > STR_MAX) {
			rootfs_strv_free(v);
			return sc_fail(err, 0, "expected strings of at most %d bytes", STR_MAX);
		}
		if (env && !rootfs_env_entry_valid(it->valuestring))
			continue; /* not KEY=VALUE: dropped */
		if (!(v[k++] = strdup(it->valuestring))) {
			rootfs_strv_free(v);
			return sc_fail(err, ENOMEM, "manifest");
		}
	}
	*out = v;
	return 0;
}

static cJSON *strv_to_json(char *const *v)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; a && v && v[i]; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
	return a;
}

static int manifest_parse(const char *text, size_t len, const char *want_name,
			  struct image_manifest *m, struct sc_err *err)
{
	memset(m, 0, sizeof(*m));
	cJSON *j = cJSON_ParseWithLength(text, len);
	if (!j)
		return sc_fail(err, 0, "not valid JSON");
	int rc = -1;
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name");
	const cJSON *layers = cJSON_GetObjectItemCaseSensitive(j, "layers");
	const cJSON *workdir = cJSON_GetObjectItemCaseSensitive(j, "workdir");
	const cJSON *it;
	if (!cJSON_IsString(name) || !sc_valid_name(name->valuestring) ||
	    (want_name && strcmp(name->valuestring, want_name) != 0)) {
		sc_fail(err, 0, "bad or mismatched \"name\"");
		goto out;
	}
	snprintf(m->name, sizeof(m->name), "%s", name->valuestring);
	if (!cJSON_IsArray(layers) || cJSON_GetArraySize(layers) < 1 ||
	    cJSON_GetArraySize(layers) > ROOTFS_MAX_LAYERS) {
		sc_fail(err, 0, "\"layers\" must list 1 to %d layers", ROOTFS_MAX_LAYERS);
		goto out;
	}
	cJSON_ArrayForEach(it, layers)
	{
		if (!cJSON_IsString(it) || !rootfs_layer_id_valid(it->valuestring)) {
			sc_fail(err, 0, "bad layer id in \"layers\"");
			goto out;
		}
		if (!(m->layers[m->nlayers++] = strdup(it->valuestring))) {
			sc_fail(err, ENOMEM, "manifest");
			goto out;
		}
	}
	it = cJSON_GetObjectItemCaseSensitive(j, "created");
	if (cJSON_IsString(it))
		snprintf(m->created, sizeof(m->created), "%s", it->valuestring);
	it = cJSON_GetObjectItemCaseSensitive(j, "size");
	if (cJSON_IsNumber(it) && it->valuedouble >= 0)
		m->size = (uint64_t)it->valuedouble;
	it = cJSON_GetObjectItemCaseSensitive(j, "source");
	if (cJSON_IsString(it) && strlen(it->valuestring) < 4096)
		m->source = strdup(it->valuestring);
	if (cJSON_IsString(workdir)) {
		if (workdir->valuestring[0] != '/' || strlen(workdir->valuestring) >= 4096) {
			sc_fail(err, 0, "\"workdir\" must be an absolute path");
			goto out;
		}
		m->workdir = strdup(workdir->valuestring);
	}
	if (strv_from_json(cJSON_GetObjectItemCaseSensitive(j, "env"), true, &m->env, err) < 0 ||
	    strv_from_json(cJSON_GetObjectItemCaseSensitive(j, "entrypoint"), false, &m->entrypoint, err) < 0 ||
	    strv_from_json(cJSON_GetObjectItemCaseSensitive(j, "cmd"), false, &m->cmd, err) < 0 ||
	    strv_from_json(cJSON_GetObjectItemCaseSensitive(j, "labels"), true, &m->labels, err) < 0)
		goto out;
	it = cJSON_GetObjectItemCaseSensitive(j, "user");
	if (cJSON_IsString(it) && it->valuestring[0] && strlen(it->valuestring) < 256)
		m->user = strdup(it->valuestring);
	const cJSON *shift = cJSON_GetObjectItemCaseSensitive(j, "id_shift");
	if (cJSON_IsArray(shift) && cJSON_GetArraySize(shift) == 2) {
		m->shifted = true;
		m->uid_start = (uint32_t)cJSON_GetArrayItem(shift, 0)->valuedouble;
		m->gid_start = (uint32_t)cJSON_GetArrayItem(shift, 1)->valuedouble;
	}
	rc = 0;
out:
	cJSON_Delete(j);
	if (rc < 0)
		rootfs_manifest_free(m);
	return rc;
}

int rootfs_manifest_load(const char *data_root, const char *name, struct image_manifest *m,
		  struct sc_err *err)
{
	char path[4096], file[128];
	if (sc_path(path, sizeof(path), "%s/images", data_root) < 0)
		return sc_fail(err, ENAMETOOLONG, "data directory");
	snprintf(file, sizeof(file), "%s.json", name);
	_cleanup_fd_ int dir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	struct sc_err e = {0};
	if (dir < 0 || sc_read_small_alloc(dir, file, SC_READ_NOFOLLOW | SC_READ_REGULAR, MANIFEST_MAX, &text, &len, &e) < 0) {
		if (dir < 0 || e.errnum == ENOENT)
			return sc_fail(err, 0, "image '%s' not found (see 'sandcell image ls'; a "
				       "registry image is named with its tag, e.g. '%s:latest')",
				       name, name);
		return sc_fail(err, 0, "image '%s': %s", name, e.msg);
	}
	if (manifest_parse(text, len, name, m, &e) < 0)
		return sc_fail(err, 0, "image '%s': bad manifest %s/%s: %s", name, path, file, e.msg);
	return 0;
}

int rootfs_manifest_save(struct store *st, const struct image_manifest *m, struct sc_err *err)
{
	cJSON *j = cJSON_CreateObject();
	if (!j)
		return sc_fail(err, ENOMEM, "manifest");
	cJSON_AddStringToObject(j, "name", m->name);
	cJSON *layers = cJSON_AddArrayToObject(j, "layers");
	for (size_t i = 0; layers && i < m->nlayers; i++)
		cJSON_AddItemToArray(layers, cJSON_CreateString(m->layers[i]));
	cJSON_AddStringToObject(j, "created", m->created);
	cJSON_AddNumberToObject(j, "size", (double)m->size);
	cJSON_AddStringToObject(j, "source", m->source ? m->source : "");
	cJSON_AddItemToObject(j, "env", strv_to_json(m->env));
	if (m->workdir)
		cJSON_AddStringToObject(j, "workdir", m->workdir);
	cJSON_AddItemToObject(j, "entrypoint", strv_to_json(m->entrypoint));
	cJSON_AddItemToObject(j, "cmd", strv_to_json(m->cmd));
	if (m->user)
		cJSON_AddStringToObject(j, "user", m->user);
	if (m->labels)
		cJSON_AddItemToObject(j, "labels", strv_to_json(m->labels));
	if (m->shifted) {
		cJSON *s = cJSON_AddArrayToObject(j, "id_shift");
		cJSON_AddItemToArray(s, cJSON_CreateNumber(m->uid_start));
		cJSON_AddItemToArray(s, cJSON_CreateNumber(m->gid_start));
	}
	char *text = cJSON_Print(j);
	cJSON_Delete(j);
	if (!text)
		return sc_fail(err, ENOMEM, "manifest");
	char tmp[sizeof(st->root) + 128], final[sizeof(st->root) + 128];
	snprintf(tmp, sizeof(tmp), "%s/images/.%s.json.XXXXXX", st->root, m->name);
	snprintf(final, sizeof(final), "%s/images/%s.json", st->root, m->name);
	int fd = mkostemp(tmp, O_CLOEXEC);
	int rc = -1;
	if (fd < 0) {
		sc_fail(err, errno, "create %s", tmp);
	} else if (sc_write_all(fd, text, strlen(text)) < 0 || sc_write_all(fd, "\n", 1) < 0 ||
		   fchmod(fd, 0600) < 0 || fsync(fd) < 0) {
		sc_fail(err, errno, "write %s", tmp);
	} else if (rename(tmp, final) < 0) {
		sc_fail(err, errno, "rename %s", final);
	} else {
		rc = 0;
	}
	if (fd >= 0)
		close(fd);
	if (rc < 0)
		unlink(tmp);
	free(text);
	return rc;
}

/* ---- layers, installation, garbage collection ---- */

/* A root caller's layer stored with host root's ids (cells see it through
 * an idmapped mount, which needs no path walk of theirs) is closed to
 * every other uid, the cells' range included: layers/ lets the range's
 * group through (for shifted images), and an image's 1777 directories
 * would otherwise let the cells' host uid plant files there that every
 * later cell of the image sees. A shifted layer belongs to the range. */
static void seal_layer(int dir, const char *name)
{
	if (geteuid() != 0)
		return;
	_cleanup_fd_ int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat sb;
	if (fd >= 0 && fstat(fd, &sb) == 0 && sb.st_uid == 0 && (sb.st_mode & 07777) != 0700)
		(void)fchmod(fd, 0700);
}

int rootfs_store_commit_layer(struct store *st, struct store_work *w, const char *name, const char *id,
		       struct sc_err *err)
{
	char dst[sizeof(st->root) + 128];
	snprintf(dst, sizeof(dst), "%s/layers/%s", st->root, id);
	seal_layer(w->dir_fd, name);
	if (renameat(w->dir_fd, name, AT_FDCWD, dst) == 0)
		return 0;
	if (errno == EEXIST || errno == ENOTEMPTY)
		return 0; /* the same content is stored already: share it */
	return sc_fail(err, errno, "move the layer to %s", dst);
}

bool rootfs_store_image_in_use(const struct rootfs_in_use *in_use, const char *name, char *who,
			size_t who_size)
{
	return in_use && in_use->fn && in_use->fn(in_use->ctx, name, who, who_size);
}

/* Names of all manifests (NULL-terminated). */
static char **list_names(const char *data_root, struct sc_err *err)
{
	char path[4096];
	if (sc_path(path, sizeof(path), "%s/images", data_root) < 0) {
		sc_fail(err, ENAMETOOLONG, "data directory");
		return NULL;
	}
	size_t n = 0, cap = 16;
	char **v = calloc(cap + 1, sizeof(*v));
	DIR *d = opendir(path);
	if (!d) {
		if (errno != ENOENT) {
			free(v);
			sc_fail(err, errno, "open %s", path);
			return NULL;
		}
		return v;
	}
	struct dirent *e;
	while (v && (e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (e->d_name[0] == '.' || len < 6 || strcmp(e->d_name + len - 5, ".json") != 0)
			continue;
		char name[128];
		snprintf(name, sizeof(name), "%.*s", (int)(len - 5), e->d_name);
		if (!sc_valid_name(name))
			continue;
		if (n == cap) {
			cap *= 2;
			char **nv = realloc(v, (cap + 1) * sizeof(*v));
			if (!nv) {
				rootfs_strv_free(v);
				v = NULL;
				break;
			}
			v = nv;
		}
		v[n] = strdup(name);
		v[++n] = NULL;
	}
	closedir(d);
	if (!v)
		sc_fail(err, ENOMEM, "list images");
	return v;
}

char **rootfs_store_list_names(const char *data_root, struct sc_err *err)
{
	return list_names(data_root, err);
}

int rootfs_store_gc_layers(struct store *st, struct sc_err *err)
{
	char **names = list_names(st->root, err);
	if (!names)
		return -1;
	/* Referenced layer ids; an unreadable manifest keeps everything. */
	size_t nref = 0, cap = 64;
	char **refs = malloc(cap * sizeof(*refs));
	bool keep_all = !refs;
	for (char **n = names; !keep_all && *n; n++) {
		struct image_manifest m;
		if (rootfs_manifest_load(st->root, *n, &m, NULL) < 0) {
			keep_all = true;
			break;
		}
		for (size_t i = 0; i < m.nlayers; i++) {
			if (nref == cap) {
				char **r = realloc(refs, (cap *= 2) * sizeof(*refs));
				if (!r) {
					keep_all = true;
					break;
				}
				refs = r;
			}
			refs[nref++] = steal_ptr(&m.layers[i]);
		}
		rootfs_manifest_free(&m);
	}
	rootfs_strv_free(names);
	int rc = 0;
	char path[sizeof(st->root) + 16];
	snprintf(path, sizeof(path), "%s/layers", st->root);
	DIR *d = keep_all ? NULL : opendir(path);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (!rootfs_layer_id_valid(e->d_name))
			continue;
		bool used = false;
		for (size_t i = 0; i < nref && !used; i++)
			used = !strcmp(refs[i], e->d_name);
		if (!used && sc_remove_tree_at(dirfd(d), e->d_name, err) < 0)
			rc = -1;
		if (used) /* a store made by an earlier version too */
			seal_layer(dirfd(d), e->d_name);
	}
	if (d)
		closedir(d);
	for (size_t i = 0; i < nref; i++)
		free(refs[i]);
	free(refs);
	return rc;
}

int rootfs_store_install(struct store *st, const struct rootfs_in_use *in_use, const struct image_manifest *m,
		  struct sc_err *err)
{
	char who[256];
	if (rootfs_store_image_in_use(in_use, m->name, who, sizeof(who)))
		return sc_fail(err, 0, "image '%s' is used by cell '%s' (remove the cell first, or "
			       "choose another name)", m->name, who);
	if (rootfs_manifest_save(st, m, err) < 0)
		return -1;
	struct sc_err gc_err = {0};
	(void)rootfs_store_gc_layers(st, &gc_err); /* leftovers are retried next time */
	return 0;
}
