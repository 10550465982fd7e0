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

void api_tar_get(struct api *a, struct cell *c, const char *path, struct api_response *resp)
{
	char tmp[PATH_MAX], tree[PATH_MAX + 8];
	struct sc_err err = {0};
	int tfd = tar_tmpdir(tmp, sizeof(tmp), &err);
	if (tfd < 0) {
		sc_log(&a->cfg.log, SC_LOG_WARN, "files: a temporary directory: %s", err.msg);
		api_response_error(resp, 500, "the server cannot make a temporary copy (see its log)");
		return;
	}
	snprintf(tree, sizeof(tree), "%s/t", tmp);
	int out = -1, dfd = -1;
	uint64_t max = tar_bound(a);
	if (cell_copy_out_flags(c, path, tree, max, 0, &a->cfg.log, &err) < 0) {
		scrub_path(err.msg, sizeof(err.msg), tmp);
		api_errorf(resp, err.errnum == ENOENT ? 404 : err.errnum == EFBIG ? 413 : 500, "%s", err.msg);
		goto out;
	}
	dfd = open(tree, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0 && (errno == ELOOP || errno == ENOTDIR || errno == ENOENT)) {
		/* path, a directory when followed, was copied as what it is: a
		 * link (kept, or left out for pointing out of the tree) */
		api_errorf(resp, 400,
		       "%.200s is a symbolic link to a directory: a directory is sent as a tar by "
		       "its own path only (ask for the directory the link points to)",
		       path);
		goto out;
	}
	out = dfd < 0 ? -1 : open(tmp, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (dfd >= 0 && out < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
		char tarpath[PATH_MAX + 8]; /* no O_TMPFILE here (overlayfs before 6.6) */
		snprintf(tarpath, sizeof(tarpath), "%s/tar", tmp);
		out = open(tarpath, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (out >= 0)
			unlink(tarpath);
	}
	if (dfd < 0 || out < 0) {
		api_errorf(resp, 500, "a temporary copy: %s", strerror(errno));
		goto out;
	}
	struct tarw_opts o = {.max_bytes = max};
	if (sc_tarw_tree(out, dfd, &o, &err) < 0 || lseek(out, 0, SEEK_SET) < 0) {
		if (!err.msg[0])
			snprintf(err.msg, sizeof(err.msg), "%s", strerror(errno));
		scrub_path(err.msg, sizeof(err.msg), tmp);
		api_errorf(resp, 500, "tar: %s", err.msg);
		goto out;
	}
	struct fd_stream *fs = malloc(sizeof(*fs));
	if (!fs) {
		api_response_error(resp, 500, "out of memory");
		goto out;
	}
	fs->fd = out;
	out = -1;
	resp->status = 200;
	resp->content_type = "application/x-tar";
	resp->stream = fd_stream_read;
	resp->stream_free = fd_stream_free;
	resp->stream_ctx = fs;
out:
	if (dfd >= 0)
		close(dfd);
	if (out >= 0)
		close(out);
	tar_tmpdir_end(tmp, tfd);
}

void api_tar_put(struct api *a, struct cell *c, const char *path, const struct api_request *req,
		 struct api_response *resp)
{
	char tmp[PATH_MAX], tree[PATH_MAX + 8];
	struct sc_err err = {0};
	int tfd = tar_tmpdir(tmp, sizeof(tmp), &err);
	if (tfd < 0) {
		sc_log(&a->cfg.log, SC_LOG_WARN, "files: a temporary directory: %s", err.msg);
		api_response_error(resp, 500, "the server cannot make a temporary copy (see its log)");
		return;
	}
	snprintf(tree, sizeof(tree), "%s/t", tmp);
	int in = -1, dfd = -1;
	uint64_t files = 0, max = tar_bound(a);
	if (mkdir(tree, 0700) < 0 ||
	    (dfd = open(tree, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    (in = sc_memfd_of("tar", req->body, req->body_len, NULL)) < 0) {
		api_errorf(resp, 500, "a temporary copy: %s", strerror(errno));
		goto out;
	}
	if (rootfs_tar_unpack(dfd, in, max, 100000, &files, &err) < 0) {
		scrub_path(err.msg, sizeof(err.msg), tmp);
		api_errorf(resp, 400, "the tar is refused: %s", err.msg);
		goto out;
	}
	if (cell_copy_in_as(c, tree, path, max, &err) < 0) {
		scrub_path(err.msg, sizeof(err.msg), tmp);
		api_errorf(resp, err.errnum == EFBIG || err.errnum == ENOSPC || err.errnum == EDQUOT ? 413 : 500,
		       "%s", err.msg);
		goto out;
	}
	struct api_jbuf jb;
	if (!api_jb_open(&jb)) {
		api_response_error(resp, 500, "out of memory");
		goto out;
	}
	fputs("{\"path\":", jb.f);
	api_json_string(jb.f, path, strlen(path));
	fprintf(jb.f, ",\"size\":%zu,\"entries\":%llu}", req->body_len, (unsigned long long)files);
	api_jb_send(&jb, resp, 200);
out:
	if (dfd >= 0)
		close(dfd);
	if (in >= 0)
		close(in);
	tar_tmpdir_end(tmp, tfd);
}
