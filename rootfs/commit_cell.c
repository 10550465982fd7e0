/* `sandcell commit`: a cell's writable layer (a tar stream with OCI
 * whiteouts, made inside the cell) applied on top of the cell's image
 * becomes a new flattened image. The base tree is streamed as a tar by a
 * child process, so both go through the same checked extractor. */
#include <fcntl.h>
#include <sys/mman.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "../common/parse.h"
#include "../common/tarwrite.h"
#include "internal.h"
#include "sha256.h"

struct commit_ctx {
	int base_rd;    /* tar of the base tree */
	pid_t base_pid; /* writing it */
	int diff_fd;    /* tar of the cell's writable layer */
};

static int commit_open(void *ctx, size_t i, struct stream *s, struct sc_err *err)
{
	struct commit_ctx *c = ctx;
	return rootfs_stream_open(s, i == 0 ? c->base_rd : c->diff_fd, 0, UINT64_MAX, 0, err);
}

static int commit_close(void *ctx, size_t i, struct stream *s, struct sc_err *err)
{
	struct commit_ctx *c = ctx;
	if (i != 0)
		return 0;
	int status;
	while (waitpid(c->base_pid, &status, 0) < 0 && errno == EINTR)
		;
	c->base_pid = -1;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return sc_fail(err, 0, "could not read the base image's tree");
	return 0;
}

static pid_t stream_base(const char *data_root, const struct image_manifest *m, int *rd,
			 struct sc_err *err)
{
	char path[PATH_MAX];
	if (sc_path(path, sizeof(path), "%s/layers/%s", data_root, m->layers[0]) < 0)
		return sc_fail(err, ENAMETOOLONG, "layer path");
	int dir = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir < 0)
		return sc_fail(err, errno, "%s", path);
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		close(dir);
		return sc_fail(err, errno, "pipe");
	}
	pid_t pid = fork();
	if (pid < 0) {
		close(dir);
		close(p[0]);
		close(p[1]);
		return sc_fail(err, errno, "fork");
	}
	if (pid == 0) {
		close(p[0]);
		signal(SIGPIPE, SIG_DFL);
		/* Owners as the cell sees them: the extractor shifts them back. */
		struct tarw_opts o = {.uid_offset = m->shifted ? m->uid_start : 0,
				      .gid_offset = m->shifted ? m->gid_start : 0};
		struct sc_err e;
		_exit(sc_tarw_tree(p[1], dir, &o, &e) < 0 ? 1 : 0);
	}
	close(dir);
	close(p[1]);
	*rd = p[0];
	return pid;
}

/* Commit layers are not shared: a fresh id from the base, name and time. */
static void fresh_id(const char *base_id, const char *name, char *out, size_t size)
{
	struct sha256 h;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	char seed[256];
	int n = snprintf(seed, sizeof(seed), "%s %s %lld.%09ld %d", base_id, name, (long long)ts.tv_sec,
			 ts.tv_nsec, (int)getpid());
	rootfs_sha256_init(&h);
	rootfs_sha256_update(&h, seed, (size_t)n);
	char hex[SHA256_HEX_LEN + 1];
	rootfs_sha256_final_hex(&h, hex);
	snprintf(out, size, "sha256-%s", hex);
}

static void config_into(struct image_manifest *m, const struct rootfs_config *c)
{
	m->env = rootfs_strv_dup(c->env);
	m->workdir = c->workdir ? strdup(c->workdir) : NULL;
	m->entrypoint = rootfs_strv_dup(c->entrypoint);
	m->cmd = rootfs_strv_dup(c->cmd);
	m->user = c->user ? strdup(c->user) : NULL;
	m->labels = rootfs_strv_dup(c->labels);
}

int rootfs_image_derive(const char *data_root, const struct rootfs_in_use *in_use, const char *base,
			const char *name, const char *source, int diff_fd,
			const struct rootfs_config *cfg, const struct rootfs_limits *lim,
			struct rootfs_report *rep, struct sc_err *err)
{
	if (!sc_valid_name(name) || !strcmp(name, "host"))
		return sc_fail(err, 0, "bad image name '%.64s' (letters, digits, '.', '_', '-'; not 'host')", name);
	if (!base || !strcmp(base, "host"))
		return sc_fail(err, 0, "the host image is not stored; a new image needs a stored base "
				       "image (one from image build, import, pull or commit)");
	struct image_manifest bm = {0}, m = {0};
	if (rootfs_manifest_load(data_root, base, &bm, err) < 0)
		return -1;
	int rc = -1;
	struct store st;
	struct store_work w = {.dir_fd = -1};
	struct commit_ctx ctx = {.base_rd = -1, .base_pid = -1, .diff_fd = diff_fd};
	char id[80];
	if (bm.nlayers != 1) {
		sc_fail(err, 0, "image '%s' has %zu layers; a new image needs a flattened base", base,
			bm.nlayers);
		goto out_manifest;
	}
	if (rootfs_store_open(&st, data_root, err) < 0)
		goto out_manifest;
	if (rootfs_store_work_begin(&st, &w, err) < 0)
		goto out;
	if (diff_fd >= 0) {
		if ((ctx.base_pid = stream_base(st.root, &bm, &ctx.base_rd, err)) < 0)
			goto out;
		fresh_id(bm.layers[0], name, id, sizeof(id));
	} else {
		snprintf(id, sizeof(id), "%s", bm.layers[0]); /* the same tree, shared */
	}
	snprintf(m.name, sizeof(m.name), "%s", name);
	config_into(&m, cfg);
	m.source = source ? strdup(source) : NULL;
	struct layer_source src = {.open = commit_open, .close = commit_close, .ctx = &ctx,
				   .nlayers = 2, .whiteouts = true, .layer_id = id};
	rc = rootfs_image_make(&st, in_use, &w, &src, lim, &m, rep, err);
out:
	if (ctx.base_pid > 0) {
		kill(ctx.base_pid, SIGKILL);
		waitpid(ctx.base_pid, NULL, 0);
	}
	sc_closep(&ctx.base_rd);
	rootfs_store_work_end(&w);
	rootfs_store_close(&st);
out_manifest:
	rootfs_manifest_free(&bm);
	rootfs_manifest_free(&m);
	return rc;
}

int rootfs_image_config(const char *data_root, const char *name, struct rootfs_config *out,
			struct sc_err *err)
{
	memset(out, 0, sizeof(*out));
	if (!name || !strcmp(name, "host"))
		return 0; /* no stored defaults */
	struct image_manifest m;
	if (rootfs_manifest_load(data_root, name, &m, err) < 0)
		return -1;
	out->env = steal_ptr(&m.env);
	out->workdir = steal_ptr(&m.workdir);
	out->entrypoint = steal_ptr(&m.entrypoint);
	out->cmd = steal_ptr(&m.cmd);
	out->user = steal_ptr(&m.user);
	out->labels = steal_ptr(&m.labels);
	rootfs_manifest_free(&m);
	return 0;
}

void rootfs_config_free(struct rootfs_config *c)
{
	rootfs_strv_free(c->env);
	free(c->workdir);
	rootfs_strv_free(c->entrypoint);
	rootfs_strv_free(c->cmd);
	free(c->user);
	rootfs_strv_free(c->labels);
	memset(c, 0, sizeof(*c));
}

int rootfs_image_commit(const char *data_root, const struct rootfs_in_use *in_use, const char *base,
			const char *name, const char *cell, int diff_fd,
			const struct rootfs_limits *lim, struct rootfs_report *rep, struct sc_err *err)
{
	if (!base || !strcmp(base, "host"))
		return sc_fail(err, 0, "cell '%s' runs the host image, which is not stored; commit needs a "
				       "cell made with --image NAME", cell);
	struct rootfs_config cfg;
	if (rootfs_image_config(data_root, base, &cfg, err) < 0)
		return -1;
	char source[256];
	snprintf(source, sizeof(source), "commit:%.100s@%.64s", cell, base);
	int rc = rootfs_image_derive(data_root, in_use, base, name, source, diff_fd, &cfg, lim, rep, err);
	rootfs_config_free(&cfg);
	return rc;
}

/* An empty tree: a tar stream of just its end-of-archive blocks. */
static int empty_open(void *ctx, size_t i, struct stream *s, struct sc_err *err)
{
	int fd = *(int *)ctx;
	return rootfs_stream_open(s, fd, 0, UINT64_MAX, 0, err);
}

static int empty_close(void *ctx, size_t i, struct stream *s, struct sc_err *err)
{
	return 0;
}

int rootfs_image_empty(const char *data_root, const struct rootfs_in_use *in_use, const char *name,
		       const char *source, struct sc_err *err)
{
	if (!sc_valid_name(name) || !strcmp(name, "host"))
		return sc_fail(err, 0, "bad image name '%.64s'", name);
	static const char zeros[1024];
	_cleanup_fd_ int fd = memfd_create("empty-layer", MFD_CLOEXEC);
	if (fd < 0 || sc_write_all(fd, zeros, sizeof(zeros)) < 0 || lseek(fd, 0, SEEK_SET) < 0)
		return sc_fail(err, errno, "an empty layer");
	struct store st;
	struct store_work w = {.dir_fd = -1};
	struct image_manifest m = {0};
	int rc = -1;
	if (rootfs_store_open(&st, data_root, err) < 0)
		goto out;
	if (rootfs_store_work_begin(&st, &w, err) < 0)
		goto out;
	snprintf(m.name, sizeof(m.name), "%s", name);
	m.source = source ? strdup(source) : NULL;
	struct layer_source src = {.open = empty_open, .close = empty_close, .ctx = &fd, .nlayers = 1,
				   .no_drain = true};
	rc = rootfs_image_make(&st, in_use, &w, &src, NULL, &m, NULL, err);
out:
	rootfs_store_work_end(&w);
	rootfs_store_close(&st);
	rootfs_manifest_free(&m);
	return rc;
}
