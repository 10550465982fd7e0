/* What a request does to a cell (ops.h). */
#include <stdlib.h>

#include "ops.h"

int api_op_memory(struct cell *c, const struct api_limits *l, double mb, struct sc_err *err)
{
	uint64_t want = api_memory_bytes(l, mb);
	if (!want || cell_set_memory_limit(c, want, err) == 0)
		return 0;
	return l->memory && l->memory <= want ? 0 : -1;
}

int api_op_volumes(struct cell *c, const struct api_volume_mount *vs, size_t n,
		   struct sc_err *err)
{
	for (size_t i = 0; i < n; i++)
		if (cell_mount_volume(c, vs[i].name, vs[i].path, vs[i].read_only, err) < 0)
			return -1;
	return 0;
}

int api_op_write_file(struct cell *c, const char *path, const void *data, size_t len,
		      struct sc_err *err)
{
	return cell_write_file(c, path, data, len, CELL_FILE_CREATE | CELL_FILE_REPLACE,
			       API_FILE_TIMEOUT, err);
}

int api_op_write_files(struct cell *c, const cJSON *files, char *why, size_t why_size)
{
	const cJSON *f;
	cJSON_ArrayForEach(f, files)
	{
		char path[API_CELL_PATH];
		char *data;
		size_t len;
		if (!api_file_entry(f, path, &data, &len, why, why_size))
			return -1;
		struct sc_err err = {0};
		int rc = api_op_write_file(c, path, data, len, &err);
		free(data);
		if (rc < 0) {
			snprintf(why, why_size, "files['%.200s']: %.250s", f->string, err.msg);
			return -1;
		}
	}
	return 0;
}

int api_op_stdin(const char *s, size_t len, struct sc_err *err)
{
	return s ? sc_memfd_of("stdin", s, len, err) : -1;
}

/* A request's stdin, when it has one, as the fd *fd (the caller closes
 * it) and in its request's slot; false when it could not be made. */
static bool stdin_open(const char *s, size_t len, int *fd, int *slot, struct sc_err *err)
{
	*fd = api_op_stdin(s, len, err);
	if (s) /* else the slot keeps the caller's fd (its own, or -1) */
		*slot = *fd;
	return !s || *fd >= 0;
}

int api_op_exec(struct cell *c, struct api_exec *x, struct cell_result *res, struct sc_err *err)
{
	_cleanup_fd_ int in = -1;
	if (!stdin_open(x->stdin_s, x->stdin_len, &in, &x->req.stdin_fd, err))
		return -1;
	int rc = cell_exec(c, &x->req, res, err);
	x->req.stdin_fd = -1; /* closed on the way out */
	return rc;
}

int api_op_run(struct cell *c, struct api_run *r, bool session, struct lang_result *res,
	       struct sc_err *err)
{
	if (session)
		return lang_session_run_in(c, &r->session, res, err);
	_cleanup_fd_ int in = -1;
	if (!stdin_open(r->stdin_s, r->stdin_len, &in, &r->run.stdin_fd, err))
		return -1;
	int rc = lang_run_in(c, &r->run, res, err);
	r->run.stdin_fd = -1; /* closed on the way out */
	return rc;
}
