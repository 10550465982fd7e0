/* The checked extractor: applies tar layers to one directory tree.
 *
 * Archives are hostile. Every entry path is normalised and refused when it
 * is absolute or has a ".." component; every parent directory is opened
 * with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), so nothing is ever
 * written through a symlink or outside the tree; files are created with
 * O_EXCL | O_NOFOLLOW after removing what was there; hard links must name
 * an existing non-directory inside the tree. Device nodes are skipped,
 * setuid/setgid bits stripped, and the uncompressed size and the number of
 * entries are bounded. Symlink targets are stored as they are: they are
 * resolved inside the cell, never here.
 *
 * Layers are flattened: OCI whiteouts (".wh.NAME", ".wh..wh..opq") delete
 * what earlier layers made, as the OCI image spec describes. */
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/strset.h"
#include "internal.h"

#define NAME_MAX_LEN 255
#define DEPTH_MAX 256
#define COPY_BUF (256 * 1024)
#define WH_PREFIX ".wh."
#define WH_OPAQUE ".wh..wh..opq"

/* ---- the extractor ---- */

struct dirmode {
	char *path;
	uint32_t mode, uid, gid;
	int64_t mtime;
};

struct extractor {
	int root;
	struct extract_limits lim;
	struct idshift ids;
	struct extract_stats st;
	uint64_t bytes_done; /* uncompressed bytes of finished layers */
	struct stream *in;
	bool whiteouts;
	struct sc_strset layer; /* paths made by the current layer */
	struct sc_strset dirs_seen; /* path -> index in dirs */
	struct dirmode *dirs;
	size_t ndirs, capdirs;
	uint8_t *buf;
};

struct extractor *rootfs_extractor_new(int root_fd, const struct extract_limits *lim,
				const struct idshift *ids, struct sc_err *err)
{
	struct extractor *x = calloc(1, sizeof(*x));
	if (!x || !(x->buf = malloc(COPY_BUF))) {
		free(x);
		sc_fail(err, ENOMEM, "extractor");
		return NULL;
	}
	x->root = root_fd;
	x->lim = *lim;
	x->ids = *ids;
	return x;
}

void rootfs_extractor_free(struct extractor *x)
{
	if (!x)
		return;
	sc_strset_free(&x->layer);
	sc_strset_free(&x->dirs_seen);
	for (size_t i = 0; i < x->ndirs; i++)
		free(x->dirs[i].path);
	free(x->dirs);
	free(x->buf);
	free(x);
}

uint64_t rootfs_extractor_bytes(const struct extractor *x)
{
	return x->bytes_done + (x->in ? x->in->data_bytes : 0);
}

static uint32_t shift_id(const struct idshift *s, uint32_t id, uint32_t start)
{
	/* Ids beyond the range become the range's "nobody". */
	if (id >= s->count)
		id = s->count > 65534 ? 65534 : s->count - 1;
	return start + id;
}

static int set_owner(struct extractor *x, int dir, const char *name, int fd, uint32_t uid,
		     uint32_t gid, struct sc_err *err)
{
	if (!x->ids.chown)
		return 0;
	uid_t u = shift_id(&x->ids, uid, x->ids.uid_start);
	gid_t g = shift_id(&x->ids, gid, x->ids.gid_start);
	int rc = fd >= 0 ? fchown(fd, u, g) : fchownat(dir, name, u, g, AT_SYMLINK_NOFOLLOW);
	return rc < 0 ? sc_fail(err, errno, "chown %s", name) : 0;
}

int rootfs_member_path(const char *in, bool absolute_ok, char *out, size_t size,
		       struct sc_err *err)
{
	const char *p = in;
	if (*p == '/' && !absolute_ok)
		return sc_fail(err, 0, "refused: the archive has an absolute path '%.200s'", in);
	while (*p == '/')
		p++;
	size_t used = 0, depth = 0;
	while (*p) {
		const char *end = strchrnul(p, '/');
		size_t len = (size_t)(end - p);
		if (len == 2 && p[0] == '.' && p[1] == '.')
			return sc_fail(err, 0, "refused: the archive has a '..' path '%.200s'", in);
		if (len > NAME_MAX_LEN)
			return sc_fail(err, 0, "refused: a name longer than %d bytes in '%.200s'",
				       NAME_MAX_LEN, in);
		if (len && !(len == 1 && p[0] == '.')) {
			if (++depth > DEPTH_MAX || used + len + 2 > size)
				return sc_fail(err, 0, "refused: path too deep or too long '%.200s'", in);
			if (used)
				out[used++] = '/';
			memcpy(out + used, p, len);
			used += len;
		}
		p = *end ? end + 1 : end;
	}
	out[used] = '\0';
	return 0;
}

static int openat2_beneath(int root, const char *path, int flags)
{
	return sc_openat_beneath(root, path[0] ? path : ".", flags, 0, SC_BENEATH_NO_XDEV);
}

static int mark_made(struct extractor *x, const char *path, struct sc_err *err)
{
	if (!x->whiteouts)
		return 0;
	char buf[TAR_PATH_MAX];
	snprintf(buf, sizeof(buf), "%s", path);
	/* The path and its parents count as made by this layer. */
	for (;;) {
		bool added;
		if (!sc_strset_put(&x->layer, buf, 0, &added))
			return sc_fail(err, ENOMEM, "extract");
		char *slash = strrchr(buf, '/');
		if (!added || !slash)
			return 0;
		*slash = '\0';
	}
}

/* Open directory `rel` of the tree (O_PATH), creating missing parts when
 * create is set. Never follows a symlink. */
static int open_dir(struct extractor *x, const char *rel, bool create, struct sc_err *err)
{
	int fd = openat2_beneath(x->root, rel, O_PATH | O_DIRECTORY);
	if (fd >= 0 || errno != ENOENT || !create) {
		if (fd < 0 && errno != ENOENT)
			sc_fail(err, errno == ELOOP || errno == EXDEV || errno == ENOTDIR ? 0 : errno,
				"refused: '%.200s' is a symlink or not a directory (an archive may not "
				"write through links)", rel);
		else if (fd < 0)
			sc_fail(err, errno, "open %.200s", rel);
		return fd;
	}
	char part[TAR_PATH_MAX];
	snprintf(part, sizeof(part), "%s", rel);
	int cur = dup(x->root);
	if (cur < 0)
		return sc_fail(err, errno, "dup");
	for (char *p = part; *p;) {
		char *end = strchrnul(p, '/');
		bool last = !*end;
		*end = '\0';
		int next = openat(cur, p, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 && errno == ENOENT) {
			if (mkdirat(cur, p, 0755) < 0 ||
			    set_owner(x, cur, p, -1, 0, 0, err) < 0) {
				int e = errno;
				close(cur);
				return sc_fail(err, e, "mkdir %.200s", rel);
			}
			next = openat(cur, p, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (next >= 0)
				x->st.files++;
		}
		int e = errno;
		close(cur);
		if (next < 0)
			return sc_fail(err, e == ELOOP || e == ENOTDIR ? 0 : e,
				       "refused: a parent of '%.200s' is a symlink or not a directory", rel);
		cur = next;
		if (last)
			break;
		*end = '/';
		p = end + 1;
	}
	if (mark_made(x, rel, err) < 0) {
		close(cur);
		return -1;
	}
	return cur;
}

/* Clear the way for a new entry `name` in dir; keeps an existing
 * directory when keep_dir (returns 1 then). */
static int clear_slot(int dir, const char *name, bool keep_dir, struct sc_err *err)
{
	struct stat st;
	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : sc_fail(err, errno, "stat %s", name);
	if (S_ISDIR(st.st_mode)) {
		if (keep_dir)
			return 1;
		return sc_remove_tree_at(dir, name, err);
	}
	if (unlinkat(dir, name, 0) < 0)
		return sc_fail(err, errno, "replace %s", name);
	return 0;
}

static void split(char *path, const char **parent, const char **base)
{
	char *slash = strrchr(path, '/');
	if (slash) {
		*slash = '\0';
		*parent = path;
		*base = slash + 1;
	} else {
		*parent = "";
		*base = path;
	}
}

static uint32_t safe_mode(struct extractor *x, uint32_t mode, bool dir)
{
	if (mode & 06000)
		x->st.stripped_setid++;
	return mode & (dir ? 01777u : 0777u);
}

static int set_time(int dir, const char *name, int fd, int64_t mtime)
{
	struct timespec ts[2] = {{.tv_sec = mtime}, {.tv_sec = mtime}};
	return fd >= 0 ? futimens(fd, ts) : utimensat(dir, name, ts, AT_SYMLINK_NOFOLLOW);
}

static int write_file(struct extractor *x, struct tar_reader *t, int dir, const char *name,
		      const struct tar_entry *e, struct sc_err *err)
{
	uint64_t left = x->lim.max_bytes - rootfs_extractor_bytes(x);
	if (x->lim.max_bytes && e->size > left)
		return sc_fail(err, 0, "the archive unpacks to more than %llu bytes (the --max-size limit)",
			       (unsigned long long)x->lim.max_bytes);
	_cleanup_fd_ int fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return sc_fail(err, errno, "create %.200s", e->path);
	ssize_t n;
	while ((n = rootfs_tar_read(t, x->buf, COPY_BUF, err)) > 0)
		if (sc_write_all(fd, x->buf, (size_t)n) < 0)
			return sc_fail(err, errno, "write %.200s", e->path);
	if (n < 0)
		return -1;
	if (set_owner(x, dir, name, fd, e->uid, e->gid, err) < 0)
		return -1;
	if (fchmod(fd, safe_mode(x, e->mode, false)) < 0)
		return sc_fail(err, errno, "chmod %.200s", e->path);
	(void)set_time(dir, name, fd, e->mtime);
	x->st.bytes += e->size;
	return 0;
}

static int remember_dir(struct extractor *x, const char *path, const struct tar_entry *e,
			struct sc_err *err)
{
	bool added;
	size_t *slot = sc_strset_put(&x->dirs_seen, path, x->ndirs, &added);
	if (!slot)
		return sc_fail(err, ENOMEM, "extract");
	struct dirmode d = {.mode = safe_mode(x, e->mode, true), .uid = e->uid, .gid = e->gid,
			    .mtime = e->mtime};
	if (!added) {
		d.path = x->dirs[*slot].path;
		x->dirs[*slot] = d;
		return 0;
	}
	if (x->ndirs == x->capdirs) {
		size_t cap = x->capdirs ? x->capdirs * 2 : 256;
		struct dirmode *n = realloc(x->dirs, cap * sizeof(*n));
		if (!n)
			return sc_fail(err, ENOMEM, "extract");
		x->dirs = n;
		x->capdirs = cap;
	}
	if (!(d.path = strdup(path)))
		return sc_fail(err, ENOMEM, "extract");
	x->dirs[x->ndirs++] = d;
	return 0;
}

static int make_dir(struct extractor *x, int dir, const char *name, const char *path,
		    const struct tar_entry *e, struct sc_err *err)
{
	int rc = clear_slot(dir, name, true, err);
	if (rc < 0)
		return -1;
	/* Owner-writable until rootfs_extractor_finish sets the archive's mode. */
	if (rc == 0 && mkdirat(dir, name, 0700) < 0)
		return sc_fail(err, errno, "mkdir %.200s", path);
	return remember_dir(x, path, e, err);
}

static int make_hardlink(struct extractor *x, int dir, const char *name, const char *path,
			 const struct tar_entry *e, struct sc_err *err)
{
	char target[TAR_PATH_MAX];
	if (rootfs_member_path(e->link, false, target, sizeof(target), err) < 0)
		return -1;
	if (!target[0] || !strcmp(target, path))
		return sc_fail(err, 0, "refused: hard link '%.200s' to '%.200s'", e->path, e->link);
	const char *tparent, *tbase;
	split(target, &tparent, &tbase);
	_cleanup_fd_ int tdir = openat2_beneath(x->root, tparent, O_PATH | O_DIRECTORY);
	struct stat st;
	if (tdir < 0 || fstatat(tdir, tbase, &st, AT_SYMLINK_NOFOLLOW) < 0 || S_ISDIR(st.st_mode))
		return sc_fail(err, 0, "refused: hard link '%.200s' to '%.200s', which is not a file "
			       "in the archive", e->path, e->link);
	if (clear_slot(dir, name, false, err) < 0)
		return -1;
	if (linkat(tdir, tbase, dir, name, 0) < 0)
		return sc_fail(err, errno, "hard link %.200s", e->path);
	return 0;
}

static int make_special(struct extractor *x, int dir, const char *name, const struct tar_entry *e,
			struct sc_err *err)
{
	if (clear_slot(dir, name, false, err) < 0)
		return -1;
	int rc = e->type == TAR_SYMLINK ? symlinkat(e->link, dir, name)
					: mkfifoat(dir, name, safe_mode(x, e->mode, false));
	if (rc < 0)
		return sc_fail(err, errno, "create %.200s", e->path);
	if (set_owner(x, dir, name, -1, e->uid, e->gid, err) < 0)
		return -1;
	(void)set_time(dir, name, -1, e->mtime);
	return 0;
}

/* ".wh..wh..opq" in dir: hide what earlier layers put there. */
static int apply_opaque(struct extractor *x, const char *parent, struct sc_err *err)
{
	_cleanup_fd_ int pfd = open_dir(x, parent, true, err);
	if (pfd < 0)
		return -1;
	_cleanup_dir_ DIR *d = sc_opendir_at(pfd);
	if (!d)
		return sc_fail(err, errno, "read %.200s", parent);
	char **doomed = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	struct dirent *de;
	char child[TAR_PATH_MAX];
	while (rc == 0 && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (sc_path(child, sizeof(child), "%s%s%s", parent, parent[0] ? "/" : "", de->d_name) < 0)
			continue;
		if (sc_strset_find(&x->layer, child))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			char **m = realloc(doomed, cap * sizeof(*m));
			if (!m) {
				rc = sc_fail(err, ENOMEM, "extract");
				break;
			}
			doomed = m;
		}
		if (!(doomed[n] = strdup(de->d_name)))
			rc = sc_fail(err, ENOMEM, "extract");
		else
			n++;
	}
	for (size_t i = 0; i < n; i++) {
		if (rc == 0)
			rc = sc_remove_tree_at(dirfd(d), doomed[i], err);
		free(doomed[i]);
	}
	free(doomed);
	return rc;
}

static int apply_whiteout(struct extractor *x, const char *parent, const char *base,
			  struct sc_err *err)
{
	if (!strcmp(base, WH_OPAQUE))
		return apply_opaque(x, parent, err);
	const char *victim = base + strlen(WH_PREFIX);
	if (!victim[0] || !strcmp(victim, ".") || !strcmp(victim, "..") || strchr(victim, '/'))
		return sc_fail(err, 0, "refused: bad whiteout '%.200s'", base);
	char path[TAR_PATH_MAX];
	if (sc_path(path, sizeof(path), "%s%s%s", parent, parent[0] ? "/" : "", victim) < 0)
		return sc_fail(err, ENAMETOOLONG, "whiteout");
	/* A whiteout hides lower layers only, never its own layer's files. */
	if (sc_strset_find(&x->layer, path))
		return 0;
	_cleanup_fd_ int pfd = openat2_beneath(x->root, parent, O_PATH | O_DIRECTORY);
	if (pfd < 0)
		return 0; /* nothing below to hide */
	return sc_remove_tree_at(pfd, victim, err);
}

static int apply_entry(struct extractor *x, struct tar_reader *t, struct tar_entry *e,
		       struct sc_err *err)
{
	char path[TAR_PATH_MAX];
	if (rootfs_member_path(e->path, false, path, sizeof(path), err) < 0)
		return -1;
	if (!path[0]) {
		if (e->type != TAR_DIR)
			return sc_fail(err, 0, "refused: a non-directory entry for the root '%.200s'", e->path);
		return remember_dir(x, "", e, err);
	}
	char split_buf[TAR_PATH_MAX];
	memcpy(split_buf, path, strlen(path) + 1);
	const char *parent, *base;
	split(split_buf, &parent, &base);
	if (x->whiteouts && !strncmp(base, WH_PREFIX, strlen(WH_PREFIX)))
		return apply_whiteout(x, parent, base, err);
	if (e->type == TAR_CHAR || e->type == TAR_BLOCK) {
		if (++x->st.skipped_devices <= SKIPPED_SHOWN)
			sc_log(x->lim.log, SC_LOG_WARN,
			       "skipped the %s device node %.200s: images do not carry devices "
			       "(a cell gets its /dev from the runtime)",
			       e->type == TAR_CHAR ? "character" : "block", e->path);
		return 0;
	}
	if (e->type == TAR_OTHER)
		return 0;
	if (e->type == TAR_SYMLINK && !e->link[0])
		return sc_fail(err, 0, "refused: symlink '%.200s' with an empty target", e->path);
	_cleanup_fd_ int dir = open_dir(x, parent, true, err);
	if (dir < 0)
		return -1;
	if (mark_made(x, path, err) < 0)
		return -1;
	x->st.files++;
	switch (e->type) {
	case TAR_FILE:
		if (clear_slot(dir, base, false, err) < 0)
			return -1;
		return write_file(x, t, dir, base, e, err);
	case TAR_DIR:
		return make_dir(x, dir, base, path, e, err);
	case TAR_HARDLINK:
		return make_hardlink(x, dir, base, path, e, err);
	default:
		return make_special(x, dir, base, e, err);
	}
}

int rootfs_extractor_mkdirs(struct extractor *x, const char *path, struct sc_err *err)
{
	char rel[TAR_PATH_MAX];
	if (rootfs_member_path(path[0] == '/' ? path + 1 : path, false, rel, sizeof(rel), err) < 0)
		return -1;
	int fd = open_dir(x, rel, true, err);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

int rootfs_extractor_layer(struct extractor *x, struct stream *in, bool whiteouts, bool drain,
		    struct sc_err *err)
{
	if (x->lim.max_bytes) {
		if (x->bytes_done >= x->lim.max_bytes)
			return sc_fail(err, 0, "the archive unpacks to more than %llu bytes (the --max-size limit)",
				       (unsigned long long)x->lim.max_bytes);
		in->max_data = x->lim.max_bytes - x->bytes_done;
	}
	x->in = in;
	x->whiteouts = whiteouts;
	sc_strset_free(&x->layer);
	struct tar_reader t;
	rootfs_tar_init(&t, in);
	struct tar_entry *e = malloc(sizeof(*e));
	if (!e)
		return sc_fail(err, ENOMEM, "extract");
	int rc;
	uint64_t entries = 0;
	while ((rc = rootfs_tar_next(&t, e, err)) > 0) {
		if (x->lim.max_files && ++entries + x->st.files > x->lim.max_files) {
			rc = sc_fail(err, 0, "the archive has more than %llu entries (the --max-files limit)",
				     (unsigned long long)x->lim.max_files);
			break;
		}
		if ((rc = apply_entry(x, &t, e, err)) < 0)
			break;
	}
	free(e);
	/* The digest covers the whole stream, trailing blocks included. */
	if (rc == 0 && drain)
		rc = rootfs_stream_drain(in, err);
	x->bytes_done += in->data_bytes;
	x->in = NULL;
	sc_strset_free(&x->layer);
	return rc < 0 ? -1 : 0;
}

static int depth_of(const char *p)
{
	int d = p[0] ? 1 : 0;
	for (; *p; p++)
		d += *p == '/';
	return d;
}

static int deeper_first(const void *a, const void *b)
{
	const struct dirmode *x = a, *y = b;
	return depth_of(y->path) - depth_of(x->path);
}

int rootfs_extractor_finish(struct extractor *x, struct extract_stats *st, struct sc_err *err)
{
	if (!sc_strset_find(&x->dirs_seen, "")) {
		/* No entry for the root: a plain 0755 directory owned by root. */
		struct tar_entry root = {.type = TAR_DIR, .mode = 0755, .mtime = INT64_MIN};
		if (remember_dir(x, "", &root, err) < 0)
			return -1;
	}
	/* Children first: a parent's final mode may forbid writing into it. */
	qsort(x->dirs, x->ndirs, sizeof(*x->dirs), deeper_first);
	for (size_t i = 0; i < x->ndirs; i++) {
		const struct dirmode *d = &x->dirs[i];
		_cleanup_fd_ int fd = openat2_beneath(x->root, d->path, O_RDONLY | O_DIRECTORY);
		if (fd < 0)
			continue; /* replaced or deleted by a later layer */
		if (set_owner(x, -1, d->path, fd, d->uid, d->gid, err) < 0)
			return -1;
		/* Keep the owner's rwx on the layer root so the store can manage it. */
		uint32_t mode = d->path[0] ? d->mode : (d->mode | 0700);
		if (fchmod(fd, mode) < 0)
			return sc_fail(err, errno, "chmod %.200s", d->path);
		if (d->mtime != INT64_MIN)
			(void)set_time(-1, "", fd, d->mtime);
	}
	if (st)
		*st = x->st;
	return 0;
}

int rootfs_tar_unpack(int dir_fd, int tar_fd, uint64_t max_bytes, uint64_t max_files,
		      uint64_t *files, struct sc_err *err)
{
	struct extract_limits lim = {.max_bytes = max_bytes, .max_files = max_files};
	struct idshift ids = {.chown = false};
	struct stream s;
	if (rootfs_stream_open(&s, tar_fd, 0, UINT64_MAX, max_bytes, err) < 0)
		return -1;
	struct extractor *x = rootfs_extractor_new(dir_fd, &lim, &ids, err);
	if (!x) {
		rootfs_stream_close(&s);
		return -1;
	}
	struct extract_stats st = {0};
	int rc = rootfs_extractor_layer(x, &s, false, false, err);
	if (rc == 0)
		rc = rootfs_extractor_finish(x, &st, err);
	rootfs_extractor_free(x);
	rootfs_stream_close(&s);
	if (rc == 0 && files)
		*files = st.files;
	return rc;
}
