/* envd's Filesystem service (filesystem.proto) over Connect, unary:
 * Stat, ListDir, MakeDir, Move, Remove. Each is a short fixed script run
 * inside the sandbox's cell as the request's user (argv, the paths as
 * arguments, never spliced into the script), so every path is the cell's
 * own and nothing on the host side follows a link the cell made; its
 * answer is find(1)'s -printf with NUL-separated fields. WatchDir is
 * e2b_watch.c's; the unary watcher calls (CreateWatcher ...) are not
 * served. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "e2b_priv.h"

#define FS_FIELDS 9 /* of FS_FORMAT, the path last */
#define FS_FORMAT "%y\\0%s\\0%m\\0%M\\0%u\\0%g\\0%T@\\0%l\\0%p\\0"
/* the scripts' own exit statuses */
#define FS_MISSING 3
#define FS_NOT_DIR 4
#define FS_EXISTS 5

static const char STAT_SH[] = "[ -e \"$1\" ] || [ -L \"$1\" ] || exit 3\n"
			      "exec find \"$1\" -maxdepth 0 -printf '" FS_FORMAT "'";
static const char LIST_SH[] = "[ -e \"$1\" ] || exit 3\n[ -d \"$1\" ] || exit 4\n"
			      "exec find -H \"$1\" -mindepth 1 -maxdepth \"$2\" -printf '" FS_FORMAT "'";
static const char MKDIR_SH[] = "[ -e \"$1\" ] || [ -L \"$1\" ] && exit 5\n"
			       "mkdir -p -- \"$1\" || exit 1\n"
			       "exec find \"$1\" -maxdepth 0 -printf '" FS_FORMAT "'";
static const char MOVE_SH[] = "[ -e \"$1\" ] || [ -L \"$1\" ] || exit 3\n"
			      "mv -T -- \"$1\" \"$2\" || exit 1\n"
			      "exec find \"$2\" -maxdepth 0 -printf '" FS_FORMAT "'";
static const char REMOVE_SH[] = "[ -e \"$1\" ] || [ -L \"$1\" ] || exit 3\nexec rm -rf -- \"$1\"";

/* A request's path members as cell paths; false with resp. */
static bool fs_path(const cJSON *j, const char *k, char out[API_CELL_PATH],
		    struct api_response *resp)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(j, k);
	if (!cJSON_IsString(p) || !api_e2b_path(p->valuestring, out)) {
		api_connect_error(resp, API_CONNECT_INVALID_ARGUMENT,
				  "%s: a path without '..' (relative: under " API_E2B_HOME ")", k);
		return false;
	}
	return true;
}

/* script with args in the sandbox; 0 and res, or -1 with resp. */
static int fs_run(struct api *a, const char *id, const struct api_request *req,
		  const char *script, const char *a1, const char *a2, struct cell_result *res,
		  struct api_response *resp)
{
	struct cell *c;
	struct api_response inner = {0};
	if (api_cell_begin(a, id, &c, &inner) < 0) {
		api_connect_error(resp, api_connect_code_of_status(inner.status),
				  "the sandbox's cell is gone");
		api_response_free(&inner);
		return -1;
	}
	char *argv[] = {"/bin/sh", "-c", (char *)script, "sh", (char *)a1, (char *)a2, NULL};
	struct cell_exec_req x = {.argv = argv, .timeout_s = API_FILE_TIMEOUT, .stdin_fd = -1,
				  .stdout_fd = -1, .stderr_fd = -1, .has_cancel = true,
				  .cancel_fd = a->stop_pipe[0], .output_limit = a->lim.output};
	api_e2b_user(req, &x.has_user, &x.uid, &x.gid);
	struct sc_err err = {0};
	int rc = cell_exec(c, &x, res, &err);
	api_cell_end(a, id, c);
	if (rc < 0) {
		api_connect_error(resp, API_CONNECT_INTERNAL, "%s", err.msg);
		return -1;
	}
	if (res->exit_code == 0 && !res->out_truncated)
		return 0;
	char why[300];
	snprintf(why, sizeof(why), "%.*s", (int)(res->err_len > 200 ? 200 : res->err_len),
		 res->err ? res->err : "");
	why[strcspn(why, "\n")] = '\0';
	if (res->out_truncated)
		api_connect_error(resp, API_CONNECT_RESOURCE_EXHAUSTED, "too many entries");
	else if (res->exit_code == FS_MISSING)
		api_connect_error(resp, API_CONNECT_NOT_FOUND, "%s: no such file or directory", a1);
	else if (res->exit_code == FS_NOT_DIR)
		api_connect_error(resp, API_CONNECT_INVALID_ARGUMENT, "%s: not a directory", a1);
	else if (res->exit_code == FS_EXISTS)
		api_connect_error(resp, API_CONNECT_ALREADY_EXISTS, "%s: already exists", a1);
	else if (strstr(why, "Permission denied"))
		api_connect_error(resp, API_CONNECT_PERMISSION_DENIED, "%s", why);
	else if (strstr(why, "No such file"))
		api_connect_error(resp, API_CONNECT_NOT_FOUND, "%s", why);
	else
		api_connect_error(resp, API_CONNECT_INTERNAL, "%s", why[0] ? why : "failed");
	cell_result_free(res);
	return -1;
}

static const char *file_type(const char *y)
{
	return !strcmp(y, "f")	 ? "FILE_TYPE_FILE"
	       : !strcmp(y, "d") ? "FILE_TYPE_DIRECTORY"
	       : !strcmp(y, "l") ? "FILE_TYPE_SYMLINK"
				 : "FILE_TYPE_UNSPECIFIED";
}

static void put_mtime(FILE *f, const char *t)
{
	/* the cell's listing says what it likes: a time within years 1970 to
	 * 9999, or the epoch (no float-to-integer overflow, no NaN) */
	double v = strtod(t, NULL);
	if (!(v >= 0 && v < 253402300800.0))
		v = 0;
	time_t s = (time_t)v;
	struct tm tm;
	char buf[40] = "1970-01-01T00:00:00";
	if (gmtime_r(&s, &tm))
		strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(f, "\"%s.%03dZ\"", buf, (int)((v - (double)s) * 1000) % 1000);
}

/* One record (FS_FIELDS strings) as an EntryInfo. */
static void put_entry(FILE *f, char *const *fl)
{
	const char *path = fl[8], *slash = strrchr(path, '/');
	const char *name = slash && slash[1] ? slash + 1 : path;
	fputs("{\"name\":", f);
	api_json_string(f, name, strlen(name));
	fprintf(f, ",\"type\":\"%s\",\"path\":", file_type(fl[0]));
	api_json_string(f, path, strlen(path));
	fprintf(f, ",\"size\":%lld,\"mode\":%lu,\"permissions\":", strtoll(fl[1], NULL, 10),
		strtoul(fl[2], NULL, 8));
	api_json_string(f, fl[3], strlen(fl[3]));
	fputs(",\"owner\":", f);
	api_json_string(f, fl[4], strlen(fl[4]));
	fputs(",\"group\":", f);
	api_json_string(f, fl[5], strlen(fl[5]));
	fputs(",\"modifiedTime\":", f);
	put_mtime(f, fl[6]);
	if (!strcmp(fl[0], "l")) {
		fputs(",\"symlinkTarget\":", f);
		api_json_string(f, fl[7], strlen(fl[7]));
	}
	fputc('}', f);
}

/* The records of find's output; each as put_entry, comma-separated.
 * Returns how many. */
static size_t put_entries(FILE *f, char *out, size_t len)
{
	char *fl[FS_FIELDS];
	size_t k = 0, n = 0;
	for (char *p = out, *end = out + len; p < end;) {
		char *z = memchr(p, '\0', (size_t)(end - p));
		if (!z)
			break;
		fl[k++] = p;
		p = z + 1;
		if (k == FS_FIELDS) {
			if (n++)
				fputc(',', f);
			put_entry(f, fl);
			k = 0;
		}
	}
	return n;
}

/* The common part: the sandbox, the body; j (to free) or NULL with resp. */
static cJSON *fs_begin(struct api *a, const struct api_call *call, char id[API_ID_LEN + 1],
		       struct api_response *resp)
{
	if (!api_e2b_envd_auth(a, call->req, id, false, resp))
		return NULL;
	struct api_bad bad;
	cJSON *j = api_req_object(call->req->body, call->req->body_len, true, &bad);
	if (!j)
		api_connect_error(resp, API_CONNECT_INVALID_ARGUMENT, "%s", bad.msg);
	return j;
}

/* Answer {"entry": the one record} / {"entries": [...]} / {}. */
static void answer(struct cell_result *res, const char *member, bool list,
		   struct api_response *resp)
{
	struct api_jbuf jb;
	if (!api_jb_open(&jb)) {
		cell_result_free(res);
		api_connect_error(resp, API_CONNECT_INTERNAL, "out of memory");
		return;
	}
	fputc('{', jb.f);
	if (member) {
		fprintf(jb.f, "\"%s\":%s", member, list ? "[" : "");
		size_t n = put_entries(jb.f, res->out ? res->out : "", res->out_len);
		if (!list && !n)
			fputs("null", jb.f);
		fputs(list ? "]" : "", jb.f);
	}
	fputc('}', jb.f);
	cell_result_free(res);
	api_connect_reply(&jb, resp);
}

static void one_path(struct api *a, const struct api_call *call, const char *script,
		     const char *member, struct api_response *resp)
{
	char id[API_ID_LEN + 1], path[API_CELL_PATH];
	cJSON *j = fs_begin(a, call, id, resp);
	bool ok = j && fs_path(j, "path", path, resp);
	cJSON_Delete(j);
	struct cell_result res;
	if (ok && fs_run(a, id, call->req, script, path, NULL, &res, resp) == 0)
		answer(&res, member, false, resp);
}

void api_e2b_fs_stat(struct api *a, const struct api_call *call, struct api_response *resp)
{
	one_path(a, call, STAT_SH, "entry", resp);
}

void api_e2b_fs_mkdir(struct api *a, const struct api_call *call, struct api_response *resp)
{
	one_path(a, call, MKDIR_SH, "entry", resp);
}

void api_e2b_fs_remove(struct api *a, const struct api_call *call, struct api_response *resp)
{
	one_path(a, call, REMOVE_SH, NULL, resp);
}

void api_e2b_fs_list(struct api *a, const struct api_call *call, struct api_response *resp)
{
	char id[API_ID_LEN + 1], path[API_CELL_PATH], depth[16];
	cJSON *j = fs_begin(a, call, id, resp);
	bool ok = j && fs_path(j, "path", path, resp);
	const cJSON *d = j ? cJSON_GetObjectItemCaseSensitive(j, "depth") : NULL;
	double dv = cJSON_IsNumber(d) ? d->valuedouble : 1;
	cJSON_Delete(j);
	if (!ok)
		return;
	if (!(dv >= 1 && dv <= 64)) {
		api_connect_error(resp, API_CONNECT_INVALID_ARGUMENT, "depth: 1 to 64");
		return;
	}
	snprintf(depth, sizeof(depth), "%d", (int)dv);
	struct cell_result res;
	if (fs_run(a, id, call->req, LIST_SH, path, depth, &res, resp) == 0)
		answer(&res, "entries", true, resp);
}

void api_e2b_fs_move(struct api *a, const struct api_call *call, struct api_response *resp)
{
	char id[API_ID_LEN + 1], src[API_CELL_PATH], dst[API_CELL_PATH];
	cJSON *j = fs_begin(a, call, id, resp);
	bool ok = j && fs_path(j, "source", src, resp) && fs_path(j, "destination", dst, resp);
	cJSON_Delete(j);
	struct cell_result res;
	if (ok && fs_run(a, id, call->req, MOVE_SH, src, dst, &res, resp) == 0)
		answer(&res, "entry", false, resp);
}
