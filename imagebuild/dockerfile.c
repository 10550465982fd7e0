/* `image build --dockerfile`: the Dockerfile subset built with cells.
 * rootfs/ parses; here each RUN runs in a cell of the image so far, and a
 * RUN's or COPY's writable layer is committed (rootfs_image_derive) as an
 * intermediate image, which the next step starts from. The final image
 * shares the last intermediate's layer; intermediates are removed as soon
 * as the next one exists, and all of them on failure. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/parse.h"
#include "imagebuild.h"

#define DF_MAX_VARS 256

struct df_state {
	const struct imagebuild_req *b;
	struct rootfs_dockerfile df;
	struct rootfs_config cfg;
	char **args;     /* ARG KEY=VALUE in force, NULL-terminated or NULL */
	char base[64];   /* FROM */
	char cur[64];    /* the image the next step starts from */
	bool cur_ours;   /* cur is an intermediate image */
	bool need_workdir; /* WORKDIR not made in the image yet */
	unsigned step, layers;
	int ctx_fd;
	struct sc_err *err;
};

static const char *strv_get(char *const *v, const char *key)
{
	size_t n = strlen(key);
	for (; v && *v; v++)
		if (!strncmp(*v, key, n) && (*v)[n] == '=')
			return *v + n + 1;
	return NULL;
}

/* Set KEY=VALUE in a NULL-terminated malloc'd array (replacing KEY). */
static int strv_set(char ***v, const char *key, const char *val, struct sc_err *err)
{
	size_t n = 0, klen = strlen(key), vlen = strlen(val);
	char *kv = malloc(klen + vlen + 2);
	if (!kv)
		return sc_fail(err, ENOMEM, "env");
	snprintf(kv, klen + vlen + 2, "%s=%s", key, val);
	for (char **p = *v; p && *p; p++, n++)
		if (!strncmp(*p, key, klen) && (*p)[klen] == '=') {
			free(*p);
			*p = kv;
			return 0;
		}
	if (n >= DF_MAX_VARS) {
		free(kv);
		return sc_fail(err, 0, "more than %d variables", DF_MAX_VARS);
	}
	char **nv = realloc(*v, (n + 2) * sizeof(*nv));
	if (!nv) {
		free(kv);
		return sc_fail(err, ENOMEM, "env");
	}
	nv[n] = kv;
	nv[n + 1] = NULL;
	*v = nv;
	return 0;
}

/* ENV first, then ARG (Docker's order). */
static const char *lookup(void *ctx, const char *name)
{
	struct df_state *s = ctx;
	const char *v = strv_get(s->cfg.env, name);
	return v ? v : strv_get(s->args, name);
}

static size_t strv_len(char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

#define AT(s, in) sc_err_wrap((s)->err, "%s:%u", (s)->b->file, (in)->line)

static int words(struct df_state *s, const struct rootfs_df_instr *in, char ***out)
{
	if (in->exec_form) {
		*out = rootfs_strv_dup(in->argv);
		return *out ? 0 : sc_fail(s->err, ENOMEM, "words");
	}
	if (rootfs_df_words(in->text, lookup, s, out, s->err) < 0)
		return AT(s, in);
	return 0;
}

static bool valid_key(const char *k, size_t n)
{
	if (!n || n > 255)
		return false;
	for (size_t i = 0; i < n; i++)
		if (k[i] == '=' || k[i] == ' ' || (unsigned char)k[i] < 0x20)
			return false;
	return true;
}

/* ENV and LABEL: KEY=VALUE pairs, or ENV's old `KEY VALUE...`. */
static int set_pairs(struct df_state *s, const struct rootfs_df_instr *in, char ***into)
{
	char **w;
	if (words(s, in, &w) < 0)
		return -1;
	int rc = 0;
	size_t n = strv_len(w);
	if (n >= 1 && !strchr(w[0], '=') && in->op == ROOTFS_DF_ENV) {
		/* ENV KEY VALUE: the rest of the words, joined by spaces */
		size_t len = 1;
		for (size_t i = 1; i < n; i++)
			len += strlen(w[i]) + 1;
		char *val = calloc(1, len);
		for (size_t i = 1; val && i < n; i++) {
			if (i > 1)
				strcat(val, " ");
			strcat(val, w[i]);
		}
		if (!val)
			rc = sc_fail(s->err, ENOMEM, "ENV");
		else if (n < 2 || !valid_key(w[0], strlen(w[0])))
			rc = (sc_fail(s->err, 0, "ENV takes KEY=VALUE or KEY VALUE"), AT(s, in));
		else
			rc = strv_set(into, w[0], val, s->err);
		free(val);
	} else {
		for (size_t i = 0; i < n && rc == 0; i++) {
			char *eq = strchr(w[i], '=');
			if (!eq || !valid_key(w[i], (size_t)(eq - w[i]))) {
				rc = (sc_fail(s->err, 0, "%s takes KEY=VALUE pairs, got '%.40s'",
					      rootfs_df_op_name(in->op), w[i]), AT(s, in));
				break;
			}
			*eq = '\0';
			rc = strv_set(into, w[i], eq + 1, s->err);
		}
	}
	rootfs_strv_free(w);
	return rc;
}

static int set_arg(struct df_state *s, const struct rootfs_df_instr *in)
{
	char **w;
	if (words(s, in, &w) < 0)
		return -1;
	char *eq = strchr(w[0], '=');
	if (eq)
		*eq = '\0';
	int rc;
	const char *given = strv_get(s->b->build_args, w[0]);
	if (!valid_key(w[0], strlen(w[0])))
		rc = (sc_fail(s->err, 0, "ARG takes NAME or NAME=DEFAULT"), AT(s, in));
	else if (given || eq)
		rc = strv_set(&s->args, w[0], given ? given : eq + 1, s->err);
	else
		rc = 0; /* declared without a value: unset */
	rootfs_strv_free(w);
	return rc;
}

/* A path in the image: absolute, or relative to the working directory. */
static int image_path(struct df_state *s, const char *p, char *out, size_t size)
{
	const char *wd = s->cfg.workdir ? s->cfg.workdir : "/";
	int rc = p[0] == '/' ? sc_path(out, size, "%s", p)
			     : sc_path(out, size, "%s%s%s", wd, wd[strlen(wd) - 1] == '/' ? "" : "/", p);
	if (rc < 0)
		return sc_fail(s->err, ENAMETOOLONG, "path '%.80s'", p);
	return 0;
}

static int set_workdir(struct df_state *s, const struct rootfs_df_instr *in)
{
	char **w;
	if (words(s, in, &w) < 0)
		return -1;
	char path[PATH_MAX];
	int rc = image_path(s, w[0], path, sizeof(path));
	rootfs_strv_free(w);
	if (rc < 0)
		return AT(s, in);
	free(s->cfg.workdir);
	if (!(s->cfg.workdir = strdup(path)))
		return sc_fail(s->err, ENOMEM, "WORKDIR");
	s->need_workdir = true;
	return 0;
}

static int set_user(struct df_state *s, const struct rootfs_df_instr *in)
{
	char **w;
	if (words(s, in, &w) < 0)
		return -1;
	free(s->cfg.user);
	s->cfg.user = strdup(w[0]);
	rootfs_strv_free(w);
	return s->cfg.user ? 0 : sc_fail(s->err, ENOMEM, "USER");
}

/* CMD and ENTRYPOINT: the exec form as written, the shell form by sh -c. */
static int set_command(struct df_state *s, const struct rootfs_df_instr *in)
{
	char **v;
	if (in->exec_form) {
		v = rootfs_strv_dup(in->argv);
	} else {
		char *sh[] = {"/bin/sh", "-c", in->text, NULL};
		v = rootfs_strv_dup(sh);
	}
	if (!v)
		return sc_fail(s->err, ENOMEM, "%s", rootfs_df_op_name(in->op));
	if (v && !v[0]) {
		free(v);
		v = NULL;
	}
	if (in->op == ROOTFS_DF_CMD) {
		rootfs_strv_free(s->cfg.cmd);
		s->cfg.cmd = v;
	} else {
		/* as Docker: a new ENTRYPOINT drops the base image's CMD */
		rootfs_strv_free(s->cfg.entrypoint);
		rootfs_strv_free(s->cfg.cmd);
		s->cfg.cmd = NULL;
		s->cfg.entrypoint = v;
	}
	return 0;
}

/* ---- steps that make a layer ---- */

struct step_cell {
	struct cell_spec spec;
	struct rootfs_image img;
	const char *dirs[4];
	char cell_name[64];
	struct cell *cell;
};

static void step_cell_end(struct step_cell *c)
{
	if (c->cell)
		(void)cell_destroy(c->cell, NULL);
	c->cell = NULL;
	rootfs_image_free(&c->img);
}

static int step_cell_start(struct df_state *s, struct step_cell *c, bool with_args,
			   const char *extra_dir)
{
	memset(c, 0, sizeof(*c));
	c->spec = *s->b->spec;
	if (rootfs_image_open(cell_data_root(), s->cur, &c->img, s->err) < 0)
		return -1;
	cell_spec_set_layers(&c->spec, &c->img);
	c->spec.image_name = s->cur;
	c->spec.argv = NULL;
	c->spec.die_with_creator = true;
	c->spec.upper_dir = NULL;
	c->spec.stdin_fd = -1;
	c->spec.stdout_fd = c->spec.stderr_fd = s->b->out_fd;
	c->spec.tty = false;
	c->spec.has_user = false; /* a RUN's user is its exec's (USER) */
	for (char **e = with_args ? s->args : NULL; e && *e; e++)
		if (cell_spec_setenv(&c->spec, *e, s->err) < 0)
			return -1;
	for (char **e = s->cfg.env; e && *e; e++)
		if (cell_spec_setenv(&c->spec, *e, s->err) < 0)
			return -1;
	c->spec.workdir = s->cfg.workdir ? s->cfg.workdir : "/";
	size_t nd = 0;
	c->dirs[nd++] = c->spec.workdir;
	if (extra_dir)
		c->dirs[nd++] = extra_dir;
	c->dirs[nd] = NULL;
	c->spec.make_dirs = c->dirs;
	snprintf(c->cell_name, sizeof(c->cell_name), "dfbuild-%d-%u", (int)getpid(), s->step);
	return cell_create(&c->spec, c->cell_name, &c->cell, s->err);
}

struct commit_arg {
	struct df_state *s;
	const char *next;
	struct rootfs_report rep;
};

static int into_next(int fd, void *ctx, struct sc_err *err)
{
	struct commit_arg *a = ctx;
	char source[PATH_MAX + 16];
	snprintf(source, sizeof(source), "dockerfile:%s", a->s->b->file);
	return rootfs_image_derive(cell_data_root(), a->s->b->in_use, a->s->cur, a->next, source, fd,
				   &a->s->cfg, a->s->b->lim, &a->rep, err);
}

static void drop_intermediate(struct df_state *s)
{
	if (s->cur_ours)
		(void)rootfs_image_remove(cell_data_root(), s->b->in_use, s->cur, NULL);
	s->cur_ours = false;
}

/* The cell's writable layer on top of cur becomes the next intermediate. */
static int step_commit(struct df_state *s, struct step_cell *c)
{
	char next[64];
	snprintf(next, sizeof(next), "dfbuild-%d-%u", (int)getpid(), s->step);
	uint64_t max = s->b->lim && s->b->lim->max_size ? s->b->lim->max_size : ROOTFS_DEFAULT_MAX_SIZE;
	struct commit_arg a = {.s = s, .next = next};
	if (cell_export_layer(c->cell, max, into_next, &a, s->err) < 0) {
		/* the image may exist when the cell's side failed after it */
		(void)rootfs_image_remove(cell_data_root(), s->b->in_use, next, NULL);
		return -1;
	}
	step_cell_end(c);
	drop_intermediate(s);
	snprintf(s->cur, sizeof(s->cur), "%s", next);
	s->cur_ours = true;
	s->need_workdir = false;
	s->layers++;
	return 0;
}

/* USER (this file's, or the base image's) for a RUN: resolved in the
 * image so far. Ids this caller's cells cannot map (a rootless cell maps
 * only 0) leave the RUN to the cell's root, with a warning. */
static int run_user(struct df_state *s, const struct step_cell *c, struct cell_exec_req *req)
{
	if (cell_resolve_user(s->cfg.user, c->spec.layers, c->spec.nlayers, &req->uid, &req->gid,
			      s->err) < 0)
		return sc_err_wrap(s->err, "USER %.64s", s->cfg.user);
	struct sc_err why = {0};
	if (cell_user_check(req->uid, req->gid, &why) < 0) {
		sc_log(s->b->log, SC_LOG_WARN, "USER %.64s: %s; RUN runs as the cell's root",
		       s->cfg.user, why.msg);
		return 0;
	}
	req->has_user = true;
	return 0;
}

static int do_run(struct df_state *s, const struct rootfs_df_instr *in)
{
	char *sh[] = {"/bin/sh", "-c", in->text, NULL};
	char *const *argv = in->exec_form ? in->argv : sh;
	if (!argv[0])
		return (sc_fail(s->err, 0, "RUN needs a command"), AT(s, in));
	struct step_cell c;
	int rc = step_cell_start(s, &c, true, NULL);
	if (rc == 0) {
		/* the cells' --timeout (or the policy's) bounds each RUN */
		struct cell_exec_req req = {.argv = argv, .stdin_fd = -1, .stdout_fd = s->b->out_fd,
					    .stderr_fd = s->b->out_fd,
					    .timeout_s = s->b->spec->limits.timeout_s};
		struct cell_result res = {0};
		/* USER (this file's, or the base image's) applies to RUN */
		if (s->cfg.user && run_user(s, &c, &req) < 0)
			rc = -1;
		if (rc == 0)
			rc = cell_exec(c.cell, &req, &res, s->err);
		if (rc == 0 && res.timed_out)
			rc = sc_fail(s->err, 0, "RUN %.80s%s: timed out after %gs (--timeout)", in->text,
				     strlen(in->text) > 80 ? "..." : "", req.timeout_s);
		else if (rc == 0 && res.exit_code != 0)
			rc = sc_fail(s->err, 0, "RUN %.80s%s: failed with status %d", in->text,
				     strlen(in->text) > 80 ? "..." : "", res.exit_code);
		cell_result_free(&res);
	}
	if (rc == 0)
		rc = step_commit(s, &c);
	step_cell_end(&c);
	return rc < 0 ? AT(s, in) : 0;
}

/* Open a COPY source beneath the context: its parent directory (no
 * symlink anywhere on the way, no ".." out) and its last component. */
static int open_source(struct df_state *s, const char *src, int *parent, char *name, size_t size,
		       struct stat *st)
{
	char rel[PATH_MAX];
	const char *p = src;
	while (*p == '/')
		p++; /* "/x" is the context's x, as Docker has it */
	if (sc_path(rel, sizeof(rel), "%s", *p ? p : ".") < 0)
		return sc_fail(s->err, ENAMETOOLONG, "source '%.80s'", src);
	size_t len = strlen(rel);
	while (len > 1 && rel[len - 1] == '/')
		rel[--len] = '\0';
	if (!strcmp(rel, ".") || !strcmp(rel, "./"))
		return sc_fail(s->err, 0, "COPY of the whole context is not supported (name what to copy)");
	char *slash = strrchr(rel, '/');
	const char *base = slash ? slash + 1 : rel;
	if (!strcmp(base, "..") || !strcmp(base, "."))
		return sc_fail(s->err, 0, "%s: outside the build context", src);
	if (slash)
		*slash = '\0';
	*parent = slash ? sc_openat_beneath(s->ctx_fd, rel, O_PATH | O_DIRECTORY | O_CLOEXEC, 0, 0)
			: fcntl(s->ctx_fd, F_DUPFD_CLOEXEC, 3);
	if (*parent < 0) {
		if (errno == EXDEV)
			return sc_fail(s->err, 0, "%s: outside the build context", src);
		if (errno == ELOOP)
			return sc_fail(s->err, 0, "%s: goes through a symlink (not followed in the build context)", src);
		return sc_fail(s->err, errno, "%s", src);
	}
	snprintf(name, size, "%s", base);
	if (fstatat(*parent, name, st, AT_SYMLINK_NOFOLLOW) < 0) {
		int e = errno;
		sc_closep(parent);
		return sc_fail(s->err, e, "%s", src);
	}
	if (S_ISLNK(st->st_mode)) {
		sc_closep(parent);
		return sc_fail(s->err, 0, "%s is a symlink (not followed in the build context)", src);
	}
	return 0;
}

static bool looks_like_archive(const char *p)
{
	static const char *const ext[] = {".tar", ".tar.gz", ".tgz", ".tar.xz", ".txz", ".tar.bz2",
					  ".tbz2", ".tar.zst"};
	size_t n = strlen(p);
	for (size_t i = 0; i < SC_ARRAY_LEN(ext); i++) {
		size_t e = strlen(ext[i]);
		if (n > e && !strcmp(p + n - e, ext[i]))
			return true;
	}
	return false;
}

static int copy_one(struct df_state *s, struct step_cell *c, const struct rootfs_df_instr *in,
		    const char *src, const char *dest, bool into_dir)
{
	if (strpbrk(src, "*?["))
		return sc_fail(s->err, 0, "%s: wildcards are not supported", src);
	if (strstr(src, "://"))
		return sc_fail(s->err, 0, "%s of a URL is not supported", rootfs_df_op_name(in->op));
	if (in->op == ROOTFS_DF_ADD && looks_like_archive(src))
		return sc_fail(s->err, 0, "ADD of an archive (unpacked by Docker) is not supported; "
					  "COPY it and RUN tar");
	int parent = -1;
	char name[NAME_MAX + 1], target[PATH_MAX];
	struct stat st;
	if (open_source(s, src, &parent, name, sizeof(name), &st) < 0)
		return -1;
	int rc;
	if (!S_ISDIR(st.st_mode) && into_dir)
		rc = sc_path(target, sizeof(target), "%s%s%s", dest,
			     dest[strlen(dest) - 1] == '/' ? "" : "/", name);
	else
		rc = sc_path(target, sizeof(target), "%s", dest);
	if (rc < 0)
		rc = sc_fail(s->err, ENAMETOOLONG, "destination");
	else
		rc = cell_copy_in_at(c->cell, parent, name, target,
				   s->b->lim && s->b->lim->max_size ? s->b->lim->max_size
								    : ROOTFS_DEFAULT_MAX_SIZE,
				   s->err);
	close(parent);
	return rc;
}

static int do_copy(struct df_state *s, const struct rootfs_df_instr *in)
{
	char **w;
	if (words(s, in, &w) < 0)
		return -1;
	size_t n = strv_len(w);
	char dest[PATH_MAX], dir[PATH_MAX];
	int rc = n < 2 ? sc_fail(s->err, 0, "%s needs a source and a destination",
				 rootfs_df_op_name(in->op))
		       : image_path(s, w[n - 1], dest, sizeof(dest));
	size_t dl = rc == 0 ? strlen(dest) : 0;
	while (dl > 2 && dest[dl - 1] == '.' && dest[dl - 2] == '/')
		dest[--dl] = '\0'; /* "DIR/." is "DIR/" */
	bool into_dir = rc == 0 && dest[dl - 1] == '/';
	if (rc == 0 && n > 2 && !into_dir)
		rc = sc_fail(s->err, 0, "with several sources the destination must end in '/'");
	/* the directory the sources go into (or the file's parent) is made first */
	if (rc == 0) {
		snprintf(dir, sizeof(dir), "%s", dest);
		char *slash = strrchr(dir, '/');
		if (!into_dir && slash)
			*(slash == dir ? slash + 1 : slash) = '\0';
	}
	struct step_cell c = {0};
	if (rc == 0)
		rc = step_cell_start(s, &c, false, dir);
	for (size_t i = 0; rc == 0 && i + 1 < n; i++)
		rc = copy_one(s, &c, in, w[i], dest, into_dir);
	if (rc == 0)
		rc = step_commit(s, &c);
	step_cell_end(&c);
	rootfs_strv_free(w);
	return rc < 0 ? AT(s, in) : 0;
}

/* ---- the build ---- */

/* FROM scratch: an empty intermediate image to start from. */
static int from_scratch(struct df_state *s)
{
	snprintf(s->cur, sizeof(s->cur), "dfbuild-%d-0", (int)getpid());
	if (rootfs_image_empty(cell_data_root(), s->b->in_use, s->cur, "scratch", s->err) < 0)
		return -1;
	s->cur_ours = true;
	return 0;
}

static int do_from(struct df_state *s, const struct rootfs_df_instr *in)
{
	char **w;
	if (words(s, in, &w) < 0)
		return -1;
	int rc = 0;
	if (!strcmp(w[0], "host"))
		rc = sc_fail(s->err, 0, "FROM host is not supported: the host image is not stored; a "
				       "build starts from a stored image (made by image build, import, "
				       "pull or commit) or scratch");
	else if (!strcmp(w[0], "scratch"))
		rc = from_scratch(s);
	else if (!sc_valid_name(w[0]))
		rc = sc_fail(s->err, 0, "FROM: bad image name '%.64s' (a sandcell image name, see "
				       "'sandcell image ls')", w[0]);
	else
		snprintf(s->base, sizeof(s->base), "%s", w[0]);
	rootfs_strv_free(w);
	if (rc == 0 && !s->cur_ours) {
		snprintf(s->cur, sizeof(s->cur), "%s", s->base);
		rc = rootfs_image_config(cell_data_root(), s->base, &s->cfg, s->err);
	}
	return rc < 0 ? AT(s, in) : 0;
}

static int do_instr(struct df_state *s, const struct rootfs_df_instr *in)
{
	switch (in->op) {
	case ROOTFS_DF_FROM: return do_from(s, in);
	case ROOTFS_DF_RUN: return do_run(s, in);
	case ROOTFS_DF_COPY:
	case ROOTFS_DF_ADD: return do_copy(s, in);
	case ROOTFS_DF_ENV: return set_pairs(s, in, &s->cfg.env);
	case ROOTFS_DF_LABEL: return set_pairs(s, in, &s->cfg.labels);
	case ROOTFS_DF_ARG: return set_arg(s, in);
	case ROOTFS_DF_WORKDIR: return set_workdir(s, in);
	case ROOTFS_DF_USER: return set_user(s, in);
	case ROOTFS_DF_CMD:
	case ROOTFS_DF_ENTRYPOINT: return set_command(s, in);
	}
	return sc_fail(s->err, 0, "internal error: instruction %d", (int)in->op);
}

/* A WORKDIR given after the last layer: made by an empty step. */
static int make_workdir(struct df_state *s)
{
	struct step_cell c;
	int rc = step_cell_start(s, &c, false, NULL);
	if (rc == 0)
		rc = step_commit(s, &c);
	step_cell_end(&c);
	return rc;
}

static int read_dockerfile(struct df_state *s)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	struct sc_err e = {0};
	if (sc_read_small_alloc(AT_FDCWD, s->b->file, SC_READ_REGULAR, ROOTFS_DF_MAX_SIZE, &text, &len,
				&e) < 0)
		return sc_fail(s->err, 0, "Dockerfile: %s", e.msg);
	return rootfs_df_parse(text, len, s->b->file, &s->df, s->err);
}

static int build_steps(struct df_state *s)
{
	for (size_t i = 0; i < s->df.n; i++) {
		const struct rootfs_df_instr *in = &s->df.v[i];
		s->step = (unsigned)i + 1;
		sc_log(s->b->log, SC_LOG_INFO, "step %u/%zu: %s %.120s", s->step, s->df.n,
		       rootfs_df_op_name(in->op), in->text);
		if (do_instr(s, in) < 0)
			return -1;
	}
	s->step++;
	if (s->need_workdir && make_workdir(s) < 0)
		return -1;
	return 0;
}

/* Intermediates of builds whose process is gone (killed by a signal). */
static void sweep_stale_intermediates(const struct imagebuild_req *b)
{
	struct rootfs_image_info *list;
	size_t n;
	if (rootfs_image_list(cell_data_root(), &list, &n, NULL) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		int pid, used = 0;
		unsigned step;
		if (sscanf(list[i].name, "dfbuild-%d-%u%n", &pid, &step, &used) != 2 ||
		    list[i].name[used] || pid <= 0 || pid == getpid())
			continue;
		if (kill(pid, 0) < 0 && errno == ESRCH)
			(void)rootfs_image_remove(cell_data_root(), b->in_use, list[i].name, NULL);
	}
	rootfs_image_list_free(list, n);
}

int imagebuild_dockerfile(const struct imagebuild_req *b, struct imagebuild_result *res,
			  struct sc_err *err)
{
	double t0 = sc_now();
	memset(res, 0, sizeof(*res));
	if (!sc_valid_name(b->name) || !strcmp(b->name, "host"))
		return sc_fail(err, 0, "bad image name '%.64s' (letters, digits, '.', '_', '-'; not 'host')",
			       b->name);
	struct df_state s = {.b = b, .err = err, .ctx_fd = -1};
	int rc = read_dockerfile(&s);
	if (rc == 0)
		sweep_stale_intermediates(b);
	if (rc == 0 && (s.ctx_fd = open(b->context, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		rc = sc_fail(err, errno, "build context %s", b->context);
	if (rc == 0)
		rc = build_steps(&s);
	if (rc == 0) {
		char source[PATH_MAX + 16];
		snprintf(source, sizeof(source), "dockerfile:%s", b->file);
		rc = rootfs_image_derive(cell_data_root(), b->in_use, s.cur, b->name, source, -1, &s.cfg,
					 b->lim, &res->rep, err);
	}
	drop_intermediate(&s);
	res->steps = (unsigned)s.df.n;
	res->layers = s.layers;
	res->seconds = sc_now() - t0;
	sc_closep(&s.ctx_fd);
	rootfs_config_free(&s.cfg);
	rootfs_strv_free(s.args);
	rootfs_df_free(&s.df);
	return rc;
}
