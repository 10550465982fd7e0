/* envd's REST /files: GET ?path= a file's bytes, POST ?path= one file as
 * application/octet-stream or files as multipart/form-data (each part's
 * filename its path when ?path= is not given). The same calls as GET/PUT
 * /cells/{id}/files (cell_read_file, api_op_write_file: beneath the
 * cell, at most API_MAX_FILE bytes); errors in envd's shape
 * {"code", "message"} (404: the SDK's NotFoundError). gzip as the SDK's
 * `gzip: true` asks: a POST body with Content-Encoding: gzip is inflated
 * (to at most API_MAX_FILE bytes), a GET answered gzipped to a client
 * whose Accept-Encoding takes it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "e2b_priv.h"

#define E2B_MAX_PARTS 64
#define E2B_MAX_BOUNDARY 70 /* RFC 2046 */

static int errno_status(int e)
{
	return e == ENOENT ? 404 : e == EISDIR || e == EINVAL || e == ENOTDIR ? 400
	       : e == EACCES || e == EPERM ? 403 : e == ENOSPC || e == EDQUOT ? 507 : 500;
}

/* The sandbox, ?path= (relative: under API_E2B_HOME; required unless
 * may_omit) and a handle on the cell; -1 with resp. */
static int files_begin(struct api *a, const struct api_call *call, char id[API_ID_LEN + 1],
		       char path[API_CELL_PATH], bool may_omit, struct cell **c,
		       struct api_response *resp)
{
	const struct api_request *req = call->req;
	if (!api_e2b_envd_auth(a, req, id, true, resp))
		return -1;
	const char *p = req->query ? req->query(req->ctx, "path") : NULL;
	path[0] = '\0';
	if ((p || !may_omit) && !api_e2b_path(p, path)) {
		api_e2b_error(resp, 400, "path: a path without '..' (relative: under " API_E2B_HOME
					 ")");
		return -1;
	}
	struct api_response inner = {0};
	if (api_cell_begin(a, id, c, &inner) < 0) {
		api_e2b_error(resp, 502, "the sandbox's cell is gone");
		api_response_free(&inner);
		return -1;
	}
	return 0;
}

void api_e2b_files_get(struct api *a, const struct api_call *call, struct api_response *resp)
{
	char id[API_ID_LEN + 1], path[API_CELL_PATH];
	struct cell *c;
	if (files_begin(a, call, id, path, false, &c, resp) < 0)
		return;
	struct cell_file f;
	struct sc_err err = {0};
	int rc = cell_read_file(c, path, API_MAX_FILE, API_FILE_TIMEOUT, &f, &err);
	api_cell_end(a, id, c);
	if (rc < 0) {
		api_e2b_error(resp, errno_status(err.errnum), "%s", err.msg);
		return;
	}
	if (f.truncated) {
		free(f.data);
		api_e2b_error(resp, 413, "the file is larger than %u bytes", API_MAX_FILE);
		return;
	}
	const struct api_request *req = call->req;
	const char *ae = req->header ? req->header(req->ctx, "Accept-Encoding") : NULL;
	char *z;
	size_t zlen;
	if (api_accepts_gzip(ae) && api_gzip(f.data, f.len, &z, &zlen)) {
		free(f.data);
		api_set_body(resp, 200, "application/octet-stream", z, zlen);
		api_add_header(resp, "Content-Encoding", "gzip");
	} else {
		api_set_body(resp, 200, "application/octet-stream", f.data, f.len);
	}
	api_add_header(resp, "Vary", "Accept-Encoding");
}

/* One written file into the answer's list. */
static void put_written(FILE *f, const char *path, bool first)
{
	const char *slash = strrchr(path, '/');
	if (!first)
		fputc(',', f);
	fputs("{\"name\":", f);
	api_json_string(f, slash ? slash + 1 : path, strlen(slash ? slash + 1 : path));
	fputs(",\"type\":\"file\",\"path\":", f);
	api_json_string(f, path, strlen(path));
	fputc('}', f);
}

/* multipart/form-data's boundary from the Content-Type, into b. */
static bool boundary_of(const char *ct, char b[E2B_MAX_BOUNDARY + 3])
{
	const char *p = ct ? strcasestr(ct, "boundary=") : NULL;
	if (!p)
		return false;
	p += 9;
	bool quoted = *p == '"';
	p += quoted;
	size_t n = strcspn(p, quoted ? "\"" : "; \t");
	if (!n || n > E2B_MAX_BOUNDARY)
		return false;
	b[0] = b[1] = '-';
	memcpy(b + 2, p, n);
	b[n + 2] = '\0';
	return true;
}

/* A part's filename (its Content-Disposition's) into out; false: none. */
static bool part_filename(const char *head, size_t len, char *out, size_t size)
{
	char h[2048];
	snprintf(h, sizeof(h), "%.*s", (int)(len < sizeof(h) - 1 ? len : sizeof(h) - 1), head);
	const char *p = strcasestr(h, "filename=\"");
	if (!p)
		return false;
	p += 10;
	size_t n = strcspn(p, "\"");
	if (!n || n >= size)
		return false;
	memcpy(out, p, n);
	out[n] = '\0';
	return true;
}

/* Each part of a multipart body (of Content-Type ct) written into c; the
 * answer's list into f. 0, or an HTTP status with why. */
static int write_parts(struct cell *c, const char *ct, const char *body, size_t len,
		       const char *qpath, FILE *f, char *why, size_t why_size)
{
	char b[E2B_MAX_BOUNDARY + 3];
	if (!boundary_of(ct, b))
		return snprintf(why, why_size, "multipart/form-data without a boundary"), 400;
	size_t bl = strlen(b), nparts = 0;
	const char *end = body + len;
	const char *p = memmem(body, len, b, bl);
	while (p && p + bl + 2 <= end && memcmp(p + bl, "--", 2)) {
		const char *head = p + bl + 2; /* past the CRLF */
		const char *hend = memmem(head, (size_t)(end - head), "\r\n\r\n", 4);
		if (!hend)
			break;
		const char *data = hend + 4;
		const char *next = memmem(data, (size_t)(end - data), b, bl);
		if (!next || next - data < 2 || ++nparts > E2B_MAX_PARTS)
			return snprintf(why, why_size, "a malformed multipart body (or over %d parts)",
					E2B_MAX_PARTS), 400;
		char name[API_CELL_PATH], path[API_CELL_PATH];
		bool named = part_filename(head, (size_t)(hend - head), name, sizeof(name));
		if (!qpath[0] && (!named || !api_e2b_path(name, path)))
			return snprintf(why, why_size, "a part without a usable filename"), 400;
		struct sc_err err = {0};
		const char *dst = qpath[0] ? qpath : path;
		if (api_op_write_file(c, dst, data, (size_t)(next - 2 - data), &err) < 0)
			return snprintf(why, why_size, "%s", err.msg), errno_status(err.errnum);
		put_written(f, dst, nparts == 1);
		p = next;
	}
	if (!nparts)
		return snprintf(why, why_size, "a multipart body without a file"), 400;
	return 0;
}

void api_e2b_files_post(struct api *a, const struct api_call *call, struct api_response *resp)
{
	const struct api_request *req = call->req;
	char id[API_ID_LEN + 1], path[API_CELL_PATH], why[SC_ERR_MAX];
	const char *ct = req->header ? req->header(req->ctx, "Content-Type") : NULL;
	const char *ce = req->header ? req->header(req->ctx, "Content-Encoding") : NULL;
	bool octet = ct && !strncasecmp(ct, "application/octet-stream", 24);
	bool gzipped = ce && (!strcasecmp(ce, "gzip") || !strcasecmp(ce, "x-gzip"));
	if (ce && strcasecmp(ce, "identity") && !gzipped) {
		api_e2b_error(resp, 415, "Content-Encoding %.32s is not served: send the bytes as "
					 "they are, or gzip", ce);
		return;
	}
	if (!octet && !(ct && !strncasecmp(ct, "multipart/form-data", 19))) {
		api_e2b_error(resp, 415, "application/octet-stream or multipart/form-data");
		return;
	}
	if (req->body_len > API_MAX_FILE) {
		api_e2b_error(resp, 413, "a file of at most %u bytes", API_MAX_FILE);
		return;
	}
	struct cell *c;
	if (files_begin(a, call, id, path, !octet, &c, resp) < 0)
		return;
	/* (inflated only for a caller with the sandbox's access token) */
	_cleanup_free_ char *inflated = NULL;
	const char *body = req->body;
	size_t len = req->body_len;
	int zst = gzipped ? api_gunzip(body, len, API_MAX_FILE, &inflated, &len) : 0;
	if (zst) {
		api_cell_end(a, id, c);
		if (zst == 413)
			api_e2b_error(resp, 413, "the gzip body inflates to more than %u bytes",
				      API_MAX_FILE);
		else
			api_e2b_error(resp, zst, "%s", zst == 400 ? "the body is not one whole gzip stream"
							   : "out of memory");
		return;
	}
	if (gzipped)
		body = inflated;
	struct api_jbuf jb;
	if (!api_jb_open(&jb)) {
		api_cell_end(a, id, c);
		api_e2b_error(resp, 500, "out of memory");
		return;
	}
	fputc('[', jb.f);
	int st = 0;
	struct sc_err err = {0};
	if (!octet) {
		st = write_parts(c, ct, body, len, path, jb.f, why, sizeof(why));
	} else if (api_op_write_file(c, path, body, len, &err) < 0) {
		st = errno_status(err.errnum);
		snprintf(why, sizeof(why), "%s", err.msg);
	} else {
		put_written(jb.f, path, true);
	}
	api_cell_end(a, id, c);
	fputc(']', jb.f);
	if (st) {
		free(api_jb_close(&jb));
		api_e2b_error(resp, st, "%s", why);
		return;
	}
	api_jb_send(&jb, resp, 200);
}
