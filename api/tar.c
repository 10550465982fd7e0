/* A directory as a tar stream (GET/PUT /cells/{id}/files).
 *
 * Through a private (0700) directory on the host: GET copies the cell's
 * directory out with the runtime's copy (links out of the tree are left
 * out, nothing is followed) and writes it as tar (common/tarwrite.c); PUT
 * unpacks the body with rootfs's checked extractor (no absolute or ".."
 * names) and copies the tree in. Both are bounded by the cell's disk
 * limit (API_MAX_TAR when it has none).
 *
 * The directory is under the data root's serve-tmp/ (on disk, beside the
 * images; not $TMPDIR nor the state root, often small tmpfs), flock'ed by
 * the server for as long as it uses it: one nobody holds was left by a
 * server that died (SIGKILL), and api_gc (`sandcell gc`) removes it. A
 * shared lock on serve-tmp/ while one is made (exclusive for gc) keeps gc
 * from taking it between its mkdtemp and its lock. No message a client
 * gets names it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/tarwrite.h"
#include "../rootfs/rootfs.h"
#include "api_priv.h"

#define API_MAX_TAR (1ull << 30)
#define API_TAR_MAX_ENTRIES 100000 /* entries of a PUT tar */

static uint64_t tar_bound(const struct api *a)
{
	uint64_t d = a->cfg.spec->limits.disk;
	return d && d < API_MAX_TAR ? d : API_MAX_TAR;
}

#define API_SCRATCH "serve-tmp"

static int scratch_parent(char *out, size_t size, struct sc_err *err)
{
	if (sc_path(out, size, "%s/" API_SCRATCH, cell_data_root()) < 0)
		return sc_fail(err, ENAMETOOLONG, "the data directory's path is too long");
	return cell_ensure_private_dir(out, err);
}

/* A new locked directory (its path into out, its fd returned), or -1. */
static int tar_tmpdir(char *out, size_t size, struct sc_err *err)
{
	char parent[PATH_MAX - 32];
	if (scratch_parent(parent, sizeof(parent), err) < 0)
		return -1;
	_cleanup_fd_ int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0)
		return sc_fail(err, errno, "open %s", parent);
	while (flock(pfd, LOCK_SH) < 0)
		if (errno != EINTR)
			return sc_fail(err, errno, "lock %s", parent);
	if (sc_path(out, size, "%s/files-XXXXXX", parent) < 0 || !mkdtemp(out))
		return sc_fail(err, errno, "mkdtemp in %s", parent);
	int fd = open(out, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		rmdir(out);
		return sc_fail(err, e, "lock %s", out);
	}
	return fd; /* pfd's shared lock goes with it */
}

static void tar_tmpdir_end(const char *path, int fd)
{
	sc_remove_tree_path(path, NULL);
	close(fd);
}

int api_gc(size_t *removed, struct sc_err *err)
{
	*removed = 0;
	char parent[PATH_MAX];
	if (sc_path(parent, sizeof(parent), "%s/" API_SCRATCH, cell_data_root()) < 0)
		return sc_fail(err, ENAMETOOLONG, "the data directory's path is too long");
	int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0)
		return errno == ENOENT ? 0 : sc_fail(err, errno, "open %s", parent);
	DIR *d = fdopendir(pfd);
	if (!d) {
		close(pfd);
		return sc_fail(err, errno, "read %s", parent);
	}
	while (flock(pfd, LOCK_EX) < 0 && errno == EINTR)
		;
	int rc = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "files-", 6) != 0)
			continue;
		_cleanup_fd_ int fd = openat(pfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0)
			continue; /* a running server's */
		if (sc_remove_tree_at(pfd, e->d_name, rc < 0 ? NULL : err) == 0)
			++*removed;
		else if (rc == 0) /* the first failure is the one reported */
			rc = sc_err_wrap(err, "%s", parent);
	}
	closedir(d); /* and the lock */
	return rc;
}

/* msg without the host path of a temporary tree (whatever follows it up
 * to a space, quote or colon goes too): a client is never told where the
 * server keeps things. */
static void scrub_path(char *msg, size_t size, const char *path)
{
	char out[SC_ERR_MAX];
	size_t o = 0, n = strlen(path);
	const char *p = msg, *hit;
	while (n && (hit = strstr(p, path))) {
		int w = snprintf(out + o, sizeof(out) - o, "%.*s(a temporary copy)", (int)(hit - p), p);
		if (w > 0)
			o = o + (size_t)w < sizeof(out) ? o + (size_t)w : sizeof(out) - 1;
		for (p = hit + n; *p && !strchr(" :'\"", *p); p++)
			;
	}
	snprintf(out + o, sizeof(out) - o, "%s", p);
	snprintf(msg, size, "%s", out);
}

struct fd_stream {
	int fd;
};

static ssize_t fd_stream_read(void *ctx, char *buf, size_t max, int client_fd)
{
	(void)client_fd;
	struct fd_stream *s = ctx;
	for (;;) {
		ssize_t n = read(s->fd, buf, max);
		if (n < 0 && errno == EINTR)
			continue;
		return n > 0 ? n : n == 0 ? API_STREAM_END : API_STREAM_ERROR;
	}
}

static void fd_stream_free(void *ctx)
{
	struct fd_stream *s = ctx;
	close(s->fd);
	free(s);
}

/* A request's temporary copy: the locked directory and the tree in it. */
struct tar_tmp {
	char dir[PATH_MAX];
	char tree[PATH_MAX + 8];
	int fd; /* the directory's, locked; -1: none */
};

static void tar_tmp_end(struct tar_tmp *t)
{
	if (t->fd >= 0)
		tar_tmpdir_end(t->dir, t->fd);
	t->fd = -1;
}
#define _cleanup_tar_tmp_ __attribute__((cleanup(tar_tmp_end)))

/* Make t: 0, or -1 with resp answered (500; what failed goes to the
 * log, never to the client). */
static int tar_begin(struct api *a, struct tar_tmp *t, struct api_response *resp)
{
	struct sc_err err = {0};
	t->fd = tar_tmpdir(t->dir, sizeof(t->dir), &err);
	if (t->fd < 0) {
		sc_log(&a->cfg.log, SC_LOG_WARN, "files: a temporary directory: %s", err.msg);
		api_response_error(resp, 500, "the server cannot make a temporary copy (see its log)");
		return -1;
	}
	snprintf(t->tree, sizeof(t->tree), "%s/t", t->dir);
	return 0;
}

/* An unnamed read-write file in dir, or -1 (errno). */
static int tar_tmpfile(const char *dir)
{
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
		char path[PATH_MAX + 8]; /* no O_TMPFILE here (overlayfs before 6.6) */
		snprintf(path, sizeof(path), "%s/tar", dir);
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0)
			unlink(path);
	}
	return fd;
}

/* Answer 200 with the tar in *fd (read from where it stands); the answer
 * takes the fd (*fd = -1). */
static void answer_tar(struct api_response *resp, int *fd)
{
	struct fd_stream *fs = malloc(sizeof(*fs));
	if (!fs) {
		api_response_error(resp, 500, "out of memory");
		return;
	}
	fs->fd = steal_fd(fd);
	resp->status = 200;
	resp->content_type = "application/x-tar";
	resp->stream = fd_stream_read;
	resp->stream_free = fd_stream_free;
	resp->stream_ctx = fs;
}

void api_tar_get(struct api *a, struct cell *c, const char *path, struct api_response *resp)
{
	_cleanup_tar_tmp_ struct tar_tmp t = {.fd = -1};
	if (tar_begin(a, &t, resp) < 0)
		return;
	struct sc_err err = {0};
	uint64_t max = tar_bound(a);
	if (cell_copy_out_flags(c, path, t.tree, max, 0, &a->cfg.log, &err) < 0) {
		scrub_path(err.msg, sizeof(err.msg), t.dir);
		api_errorf(resp, err.errnum == ENOENT ? 404 : err.errnum == EFBIG ? 413 : 500, "%s", err.msg);
		return;
	}
	_cleanup_fd_ int dfd = open(t.tree, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0 && (errno == ELOOP || errno == ENOTDIR || errno == ENOENT)) {
		/* path, a directory when followed, was copied as what it is: a
		 * link (kept, or left out for pointing out of the tree) */
		api_errorf(resp, 400,
		       "%.200s is a symbolic link to a directory: a directory is sent as a tar by "
		       "its own path only (ask for the directory the link points to)",
		       path);
		return;
	}
	_cleanup_fd_ int out = dfd < 0 ? -1 : tar_tmpfile(t.dir);
	if (dfd < 0 || out < 0) {
		api_errorf(resp, 500, "a temporary copy: %s", strerror(errno));
		return;
	}
	struct tarw_opts o = {.max_bytes = max};
	if (sc_tarw_tree(out, dfd, &o, &err) < 0 || lseek(out, 0, SEEK_SET) < 0) {
		if (!err.msg[0])
			snprintf(err.msg, sizeof(err.msg), "%s", strerror(errno));
		scrub_path(err.msg, sizeof(err.msg), t.dir);
		api_errorf(resp, 500, "tar: %s", err.msg);
		return;
	}
	answer_tar(resp, &out);
}

void api_tar_put(struct api *a, struct cell *c, const char *path, const struct api_request *req,
		 struct api_response *resp)
{
	_cleanup_tar_tmp_ struct tar_tmp t = {.fd = -1};
	if (tar_begin(a, &t, resp) < 0)
		return;
	struct sc_err err = {0};
	uint64_t files = 0, max = tar_bound(a);
	_cleanup_fd_ int dfd = -1, in = -1;
	if (mkdir(t.tree, 0700) < 0 ||
	    (dfd = open(t.tree, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    (in = sc_memfd_of("tar", req->body, req->body_len, NULL)) < 0) {
		api_errorf(resp, 500, "a temporary copy: %s", strerror(errno));
		return;
	}
	if (rootfs_tar_unpack(dfd, in, max, API_TAR_MAX_ENTRIES, &files, &err) < 0) {
		scrub_path(err.msg, sizeof(err.msg), t.dir);
		api_errorf(resp, 400, "the tar is refused: %s", err.msg);
		return;
	}
	if (cell_copy_in_as(c, t.tree, path, max, &err) < 0) {
		scrub_path(err.msg, sizeof(err.msg), t.dir);
		api_errorf(resp, err.errnum == EFBIG || err.errnum == ENOSPC || err.errnum == EDQUOT ? 413 : 500,
		       "%s", err.msg);
		return;
	}
	struct api_jbuf jb;
	if (!api_jb_open(&jb)) {
		api_response_error(resp, 500, "out of memory");
		return;
	}
	fputs("{\"path\":", jb.f);
	api_json_string(jb.f, path, strlen(path));
	fprintf(jb.f, ",\"size\":%zu,\"entries\":%llu}", req->body_len, (unsigned long long)files);
	api_jb_send(&jb, resp, 200);
}
