/* envd's Filesystem.WatchDir: a stream of what changes in a directory of
 * the sandbox. One command per watch runs inside the cell, as the
 * request's user, for as long as the stream: a loop that lists the
 * directory (find -printf, one NUL-ended record per entry, an empty
 * record after each listing) every WATCH_PERIOD. The server keeps the
 * last listing, sorted by name, and turns the difference to the next
 * one into envd's events: create, write (a file's mtime or size
 * changed), remove, chmod (its mode changed); a rename is a remove and a
 * create, and what happens and is undone between two listings is not
 * seen. So the cell needs no inotify helper, and its files are read
 * only inside it (nothing on the host follows a link the cell made).
 * The listing is the cell's and treated as hostile: a listing of more
 * than WATCH_MAX_ENTRIES entries or WATCH_SNAP_MAX bytes, or a name
 * longer than WATCH_NAME_MAX, ends the stream (resource_exhausted). A
 * watch counts towards the sandbox's API_E2B_MAX_ATTACH streams; the
 * client's going away (the SDK's stop()) cancels the command. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "e2b_priv.h"

#define WATCH_SNAP_MAX (512u * 1024) /* bytes of one listing */
#define WATCH_MAX_ENTRIES 8192       /* entries of one listing */
#define WATCH_NAME_MAX 4096          /* bytes of a name (relative to the dir) */
#define WATCH_DEPTH_RECURSIVE "256"  /* find's -maxdepth for a recursive watch */
#define WATCH_KEEPALIVE_MS 1000
#define WATCH_MISSING 3 /* the script's exit statuses */
#define WATCH_NOT_DIR 4

/* $1 the directory, $2 the depth; the sleep is the cell's own program
 * (a fraction of a second: GNU's and busybox's sleep take it) */
static const char WATCH_SH[] = "[ -e \"$1\" ] || exit 3\n[ -d \"$1\" ] || exit 4\n"
			       "while :; do\n"
			       "find -H \"$1\" -mindepth 1 -maxdepth \"$2\" "
			       "-printf '%y\\t%T@\\t%s\\t%m\\t%P\\0' 2>/dev/null\n"
			       "printf '\\0'\nsleep 0.5\ndone";

struct wentry {
	const char *name;  /* relative to the watched directory */
	const char *stamp; /* "mtime\tsize": a change is a write */
	const char *mode;  /* octal: a change is a chmod */
	char type;         /* find's %y */
};

/* One listing: its bytes (owned; the entries point into them). */
struct snap {
	char *buf;
	size_t len;
	struct wentry *e;
	size_t n;
};

struct wjob {
	struct api *a;
	char id[API_ID_LEN + 1];
	struct cell *c;
	char path[API_CELL_PATH];
	bool recursive;
	struct cell_exec_req x;
	struct api_stream *s;
	struct snap old, cur; /* cur.buf: the listing being read, WATCH_SNAP_MAX */
	bool started;         /* the first listing is in: the start event went */
	enum api_connect_code fail_code;
	const char *fail;     /* why the stream ends (the command was cancelled) */
};

static void snap_free(struct snap *s)
{
	free(s->buf);
	free(s->e);
	*s = (struct snap){0};
}

static void wjob_free(void *ctx)
{
	struct wjob *w = ctx;
	if (w->c)
		api_cell_end(w->a, w->id, w->c);
	snap_free(&w->old);
	snap_free(&w->cur);
	api_e2b_attach_end(w->a, w->id);
	free(w);
}

static int wentry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct wentry *)a)->name, ((const struct wentry *)b)->name);
}

/* Split one record "y\tmtime\tsize\tmode\tname" (its tabs cut to NULs
 * but the stamp's) into e; false when it is not one. */
static bool parse_record(char *r, struct wentry *e)
{
	char *t1 = strchr(r, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
	char *t3 = t2 ? strchr(t2 + 1, '\t') : NULL, *t4 = t3 ? strchr(t3 + 1, '\t') : NULL;
	if (!t4 || t1 != r + 1 || !t4[1] || strlen(t4 + 1) > WATCH_NAME_MAX)
		return false;
	*t1 = *t3 = *t4 = '\0';
	*e = (struct wentry){.type = r[0], .stamp = t1 + 1, .mode = t3 + 1, .name = t4 + 1};
	return true;
}

/* cur.buf (records, the empty one that ends it left out) into cur.e,
 * sorted; false with w->fail. */
static bool snap_index(struct wjob *w)
{
	struct snap *s = &w->cur;
	size_t n = 0;
	for (size_t i = 0; i < s->len; i++)
		n += s->buf[i] == '\0';
	if (n > WATCH_MAX_ENTRIES) {
		w->fail_code = API_CONNECT_RESOURCE_EXHAUSTED;
		w->fail = "the directory has too many entries to watch";
		return false;
	}
	s->e = n ? malloc(n * sizeof(*s->e)) : NULL;
	if (n && !s->e) {
		w->fail_code = API_CONNECT_INTERNAL;
		w->fail = "out of memory";
		return false;
	}
	s->n = 0;
	for (char *p = s->buf, *next; p < s->buf + s->len; p = next) {
		next = p + strlen(p) + 1; /* before its tabs are cut */
		if (!parse_record(p, &s->e[s->n++])) {
			w->fail_code = API_CONNECT_RESOURCE_EXHAUSTED;
			w->fail = "the directory's listing has a name too long (or is not one)";
			return false;
		}
	}
	qsort(s->e, s->n, sizeof(*s->e), wentry_cmp);
	return true;
}

/* {"filesystem": {"name": name, "type": EVENT_TYPE_<type>}} */
static void send_event(struct wjob *w, const char *name, const char *type)
{
	struct api_jbuf jb;
	if (!api_jb_open(&jb))
		return;
	fputs("{\"filesystem\":{\"name\":", jb.f);
	api_json_string(jb.f, name, strlen(name));
	fprintf(jb.f, ",\"type\":\"EVENT_TYPE_%s\"}}", type);
	_cleanup_free_ char *t = api_jb_close(&jb);
	if (t)
		api_connect_send(w->s, false, t, jb.len);
}

static void diff_one(struct wjob *w, const struct wentry *o, const struct wentry *n)
{
	if (o->type != n->type) {
		send_event(w, o->name, "REMOVE");
		send_event(w, n->name, "CREATE");
		return;
	}
	/* a directory's mtime is its entries': their own events say it */
	if (n->type != 'd' && strcmp(o->stamp, n->stamp) != 0)
		send_event(w, n->name, "WRITE");
	if (strcmp(o->mode, n->mode) != 0)
		send_event(w, n->name, "CHMOD");
}

/* The events from old to cur (both sorted): a merge. */
static void snap_diff(struct wjob *w)
{
	size_t i = 0, j = 0;
	const struct snap *o = &w->old, *n = &w->cur;
	while (i < o->n || j < n->n) {
		int c = i == o->n ? 1 : j == n->n ? -1 : strcmp(o->e[i].name, n->e[j].name);
		if (c < 0)
			send_event(w, o->e[i++].name, "REMOVE");
		else if (c > 0)
			send_event(w, n->e[j++].name, "CREATE");
		else
			diff_one(w, &o->e[i++], &n->e[j++]);
	}
}

/* A whole listing is in cur: the start event (the first), or the
 * events since the last; cur becomes old. */
static void snap_done(struct wjob *w)
{
	if (!snap_index(w))
		return;
	if (!w->started) {
		w->started = true;
		api_connect_send(w->s, false, "{\"start\":{}}", strlen("{\"start\":{}}"));
	} else {
		snap_diff(w);
	}
	snap_free(&w->old);
	w->old = w->cur;
	w->cur = (struct snap){.buf = malloc(WATCH_SNAP_MAX)};
	if (!w->cur.buf) {
		w->fail_code = API_CONNECT_INTERNAL;
		w->fail = "out of memory";
	}
}

/* The command's stdout: records into cur, a listing at each empty one.
 * On a failure the command is cancelled (its stream's cancel). */
static void on_output(void *ctx, int stream, const char *d, size_t n)
{
	struct wjob *w = ctx;
	for (size_t i = 0; stream == 1 && i < n && !w->fail; i++) {
		struct snap *s = &w->cur;
		bool record_start = s->len == 0 || s->buf[s->len - 1] == '\0';
		if (d[i] == '\0' && record_start) {
			snap_done(w);
			continue;
		}
		if (s->len == WATCH_SNAP_MAX) {
			w->fail_code = API_CONNECT_RESOURCE_EXHAUSTED;
			w->fail = "the directory's listing is too long to watch";
			break;
		}
		s->buf[s->len++] = d[i];
	}
	if (w->fail)
		api_stream_kill(w->s);
}

/* How the command ended, as the stream's last frame. */
static void watch_end(struct wjob *w, int rc, const struct sc_err *err,
		      const struct cell_result *res)
{
	if (w->fail)
		api_connect_send_error(w->s, w->fail_code, w->fail);
	else if (rc < 0 && err->errnum == ECANCELED)
		api_connect_send_error(w->s, API_CONNECT_CANCELED, "the watch was stopped");
	else if (rc < 0)
		api_connect_send_error(w->s, API_CONNECT_UNAVAILABLE, err->msg);
	else if (res->timed_out)
		api_connect_send_error(w->s, API_CONNECT_DEADLINE_EXCEEDED,
				       "the watch's deadline (Connect-Timeout-Ms) has passed");
	else if (!w->started && res->exit_code == WATCH_MISSING)
		api_connect_send_error(w->s, API_CONNECT_NOT_FOUND, "directory not found");
	else if (!w->started && res->exit_code == WATCH_NOT_DIR)
		api_connect_send_error(w->s, API_CONNECT_INVALID_ARGUMENT, "not a directory");
	else
		api_connect_send_error(w->s, API_CONNECT_UNAVAILABLE,
				       "the watch's command in the sandbox ended");
}

static void wjob_stream(struct api_stream *s, void *ctx)
{
	struct wjob *w = ctx;
	w->s = s;
	char *argv[] = {"/bin/sh", "-c", (char *)WATCH_SH, "sh", w->path,
			w->recursive ? WATCH_DEPTH_RECURSIVE : "1", NULL};
	w->x.argv = argv;
	w->x.cancel_fd = api_stream_cancel_fd(s);
	struct cell_result res = {0};
	struct sc_err err = {0};
	int rc = cell_exec(w->c, &w->x, &res, &err);
	watch_end(w, rc, &err, &res);
	if (rc == 0)
		cell_result_free(&res);
}

/* A place among the sandbox's attached streams: false with resp. */
static bool watch_take(struct api *a, const char *id, struct api_response *resp)
{
	pthread_mutex_lock(&a->mu);
	struct api_cell *c = api_cell_find_locked(a, id);
	bool ok = c && c->e2b && c->e2b->nattach < API_E2B_MAX_ATTACH;
	if (ok)
		c->e2b->nattach++;
	pthread_mutex_unlock(&a->mu);
	if (!ok)
		api_connect_stream_error(resp, API_CONNECT_RESOURCE_EXHAUSTED,
					 "too many streams on the sandbox (%d at most)",
					 API_E2B_MAX_ATTACH);
	return ok;
}

/* WatchDirRequest -> w (path, recursive, the user); false with resp. */
static bool watch_parse(const struct api_call *call, struct wjob *w, struct api_response *resp)
{
	cJSON *j = api_connect_stream_request(call->req, resp);
	if (!j)
		return false;
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(j, "path");
	bool ok = cJSON_IsString(p) && api_e2b_path(p->valuestring, w->path);
	w->recursive = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "recursive"));
	cJSON_Delete(j);
	if (!ok) {
		api_connect_stream_error(resp, API_CONNECT_INVALID_ARGUMENT,
					 "path: a path without '..' (relative: under " API_E2B_HOME ")");
		return false;
	}
	w->x = (struct cell_exec_req){.timeout_s = api_e2b_deadline_s(call->req), .stdin_fd = -1,
				      .stdout_fd = -1, .stderr_fd = -1, .has_cancel = true,
				      .output_limit = 4096, .on_output = on_output,
				      .output_ctx = w};
	api_e2b_user(call->req, &w->x.has_user, &w->x.uid, &w->x.gid);
	return true;
}

void api_e2b_fs_watch(struct api *a, const struct api_call *call, struct api_response *resp)
{
	char id[API_ID_LEN + 1];
	if (!api_e2b_envd_auth(a, call->req, id, false, resp))
		return;
	struct wjob *w = api_job_alloc(sizeof(*w), resp);
	if (!w)
		return;
	w->a = a;
	snprintf(w->id, sizeof(w->id), "%s", id);
	if (!watch_parse(call, w, resp) || !watch_take(a, id, resp)) {
		free(w);
		return;
	}
	struct api_response inner = {0};
	w->cur.buf = malloc(WATCH_SNAP_MAX);
	if (!w->cur.buf || api_cell_begin(a, id, &w->c, &inner) < 0) {
		api_connect_stream_error(resp, w->cur.buf ? API_CONNECT_UNAVAILABLE : API_CONNECT_INTERNAL,
					 "%s", w->cur.buf ? "the sandbox's cell is gone" : "out of memory");
		api_response_free(&inner);
		w->c = NULL;
		wjob_free(w);
		return;
	}
	api_stream_start(a, resp, 0, wjob_stream, wjob_free, w);
	if (!resp->stream)
		return;
	resp->content_type = "application/connect+json";
	static const char KA[] = "\0\0\0\0\x10{\"keepalive\":{}}";
	api_stream_keepalive(resp->stream_ctx, KA, sizeof(KA) - 1, WATCH_KEEPALIVE_MS);
}
