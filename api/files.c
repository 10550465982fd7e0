/* GET and PUT /cells/{id}/files?path=P: one file's bytes (at most
 * API_MAX_FILE), or a directory as a tar (tar.c): GET of a directory, PUT
 * with Content-Type: application/x-tar. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api_priv.h"
#include "ops.h"

static bool is_tar_type(const struct api_request *req)
{
	const char *h = req->header ? req->header(req->ctx, "Content-Type") : NULL;
	return h && !strncasecmp(h, "application/x-tar", 17) && (!h[17] || h[17] == ';' || h[17] == ' ');
}

/* The cell path of ?path=, and the request's handle on the cell; -1 with
 * resp. */
static int files_begin(struct api *a, const struct api_call *call, char path[API_CELL_PATH],
		       struct cell **c, struct api_response *resp)
{
	const struct api_request *req = call->req;
	const char *p = req->query ? req->query(req->ctx, "path") : NULL;
	if (!api_cell_path(p, path, API_CELL_PATH)) {
		api_response_error(resp, 400, "path: a cell path without '..' (?path=/testbed/x)");
		return -1;
	}
	if (!strcmp(req->method, "PUT") && req->body_len > API_MAX_FILE) {
		api_errorf(resp, 413, "a file of at most %u bytes", API_MAX_FILE);
		return -1;
	}
	return api_cell_begin(a, call->id, c, resp);
}

void api_files_get(struct api *a, const struct api_call *call, struct api_response *resp)
{
	char path[API_CELL_PATH];
	struct cell *c;
	if (files_begin(a, call, path, &c, resp) < 0)
		return;
	struct cell_file f;
	struct sc_err err = {0};
	int rc = cell_read_file(c, path, API_MAX_FILE, API_FILE_TIMEOUT, &f, &err);
	if (rc < 0 && err.errnum == EISDIR) {
		api_tar_get(a, c, path, resp);
	} else if (rc < 0) {
		int st = err.errnum == ENOENT				   ? 404
			 : (err.errnum == EISDIR || err.errnum == EINVAL) ? 400
			 : err.errnum == EACCES				   ? 403
									   : 500;
		api_errorf(resp, st, "%s", err.msg);
	} else if (f.truncated) {
		free(f.data);
		api_errorf(resp, 413, "the file is larger than %u bytes", API_MAX_FILE);
	} else {
		api_set_body(resp, 200, "application/octet-stream", f.data, f.len);
	}
	api_cell_end(a, call->id, c);
}

void api_files_put(struct api *a, const struct api_call *call, struct api_response *resp)
{
	const struct api_request *req = call->req;
	char path[API_CELL_PATH];
	struct cell *c;
	if (files_begin(a, call, path, &c, resp) < 0)
		return;
	struct sc_err err = {0};
	if (is_tar_type(req)) {
		api_tar_put(a, c, path, req, resp);
	} else if (api_op_write_file(c, path, req->body, req->body_len, &err) < 0) {
		api_errorf(resp, err.errnum == EISDIR || err.errnum == EINVAL ? 400 : 500, "%s",
			   err.msg);
	} else {
		struct api_jbuf jb;
		if (api_jb_open(&jb)) {
			fputs("{\"path\":", jb.f);
			api_json_string(jb.f, path, strlen(path));
			fprintf(jb.f, ",\"size\":%zu}", req->body_len);
			api_jb_send(&jb, resp, 200);
		} else {
			api_response_error(resp, 500, "out of memory");
		}
	}
	api_cell_end(a, call->id, c);
}
