/* Fork, checkpoints and rollback of a cell of the table (POST
 * /cells/{id}/fork, /cells/{id}/checkpoints[/{tag}], /cells/{id}/rollback).
 * cell_fork, cell_checkpoint and cell_rollback clone: a threaded server
 * may not call them, so the pool's workers do (cell_pool_fork...), with
 * the pool's spec, while the request's thread waits. One such change at
 * a time per cell (e->changing); a rollback also waits for no other
 * request on the cell and lets none begin, as it replaces the cell. */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "api_priv.h"
#include "ops.h"

/* Mark cell id changing (rolling: also rolling, and only when no request
 * is on it); *e a copy of its entry. -1 with resp (404, 409, 410). */
static int change_begin(struct api *a, const char *id, bool rolling, struct api_cell *copy,
			struct api_response *resp)
{
	pthread_mutex_lock(&a->mu);
	struct api_cell *e = api_cell_find_locked(a, id);
	int status = 0;
	bool busy = false;
	if (!e) {
		status = 404;
	} else if (e->changing || (rolling && e->busy)) {
		status = 409;
		busy = !e->changing;
	} else if (!cell_is_alive(e->handle)) {
		status = 410;
	}
	if (!status) {
		e->changing = true;
		e->rolling = rolling;
		*copy = *e;
	}
	pthread_mutex_unlock(&a->mu);
	if (status == 404)
		api_response_error(resp, 404, "no such cell");
	else if (status == 409)
		api_response_error(resp, 409, busy ? "the cell has requests running: roll back when "
						     "they ended"
					      : "a fork, checkpoint or rollback of the cell is under way");
	else if (status == 410)
		api_response_error(resp, 410, "the cell is gone (its init died): DELETE it");
	return status ? -1 : 0;
}

static void change_end(struct api *a, const char *id)
{
	pthread_mutex_lock(&a->mu);
	struct api_cell *e = api_cell_find_locked(a, id);
	if (e) {
		e->changing = e->rolling = false;
		e->last_used = sc_now();
	}
	pthread_mutex_unlock(&a->mu);
}

/* The status of a worker's error: a bad or taken tag, no such one. */
static int err_status(const struct sc_err *err)
{
	return err->errnum == ENOENT ? 404 : err->errnum == EEXIST ? 409
		: err->errnum == EINVAL ? 422 : 500;
}

/* A cell made for entry e (its child, or it again after a rollback) set
 * up as e's was at create: its memory limit and its volumes. */
static int made_like(struct api *a, const struct api_cell *e, struct cell *c, struct sc_err *err)
{
	if (api_op_memory(c, &a->lim, e->memory_mb, err) < 0)
		return sc_err_wrap(err, "the memory limit");
	if (api_op_volumes(c, e->volumes, e->nvolumes, err) < 0)
		return sc_err_wrap(err, "volume_mounts");
	return 0;
}

/* A cell adopted by a restarted server with volumes mounted: where they
 * are is not known, and a copy without them would pass for whole. */
static bool refuse_unknown_volumes(const struct api_cell *e, struct api_response *resp)
{
	if (e->volumes_unknown)
		api_response_error(resp, 409, "the cell has volumes this server does not know the "
					      "mount points of (it was adopted at a restart): it "
					      "cannot be forked or rolled back");
	return e->volumes_unknown;
}

/* ---- fork ---- */

/* The parent's /code session's runs again in the child nc (a session of
 * the server's, so its marker and history came with the files). */
static void child_replay(struct api_fork_child *k, struct api_cell *nc)
{
	nc->session = lang_session_replay(nc->handle, &k->replay) >= 0;
}

/* A child's cell name: a name of the server's pool (API_POOL_PREFIX-PID-:
 * restart.c adopts or removes such cells), made unique by its id. */
static void child_name(const struct api *a, struct api_fork_child *k)
{
	const char *hex = k->id + strlen(a->node) + 1;
	snprintf(k->name, sizeof(k->name), "%s-%d-f-%.16s", a->cfg.ephemeral ? "pool" : API_POOL_PREFIX,
		 (int)getpid(), hex);
}

/* Child k given up: its cell and what its entry held. */
static void child_drop(struct api *a, struct api_cell *nc, struct api_fork_child *k, const char *why,
		       const char *detail)
{
	cell_pool_release(a->pool, nc->handle);
	free(nc->volumes);
	api_e2b_free(nc->e2b);
	snprintf(k->err, sizeof(k->err), "%s%.400s", why, detail);
}

/* Made child k into the table as the parent's kind (its user, idle
 * timeout, memory limit, volumes; e2b: a sandbox), recorded (not a
 * sandbox: as POST /e2b's) and kept like POST /cells' cells. */
static void child_adopt(struct api *a, const struct api_cell *parent, bool replay,
			const struct api_e2b *e2b, struct api_fork_child *k)
{
	struct sc_err err = {0};
	struct api_cell nc = {0};
	if (cell_open(k->name, &nc.handle, &err) < 0) {
		snprintf(k->err, sizeof(k->err), "%s", err.msg);
		return;
	}
	snprintf(nc.id, sizeof(nc.id), "%s", k->id);
	snprintf(nc.name, sizeof(nc.name), "%s", k->name);
	nc.created = nc.last_used = sc_now();
	nc.idle_s = parent->idle_s;
	nc.has_user = parent->has_user;
	nc.uid = parent->uid;
	nc.gid = parent->gid;
	nc.memory_mb = parent->memory_mb;
	memcpy(nc.image, parent->image, sizeof(nc.image));
	nc.nvolumes = parent->nvolumes;
	if ((nc.nvolumes && !(nc.volumes = api_volumes_dup(parent->volumes, nc.nvolumes))) ||
	    (e2b && !(nc.e2b = api_e2b_copy(e2b)))) {
		child_drop(a, &nc, k, "out of memory", "");
		return;
	}
	if (made_like(a, parent, nc.handle, &err) < 0) {
		child_drop(a, &nc, k, "as its parent: ", err.msg);
		return;
	}
	if (replay && parent->session)
		child_replay(k, &nc);
	/* a restarted server adopts /cells cells, not E2B sandboxes */
	if (!a->cfg.ephemeral && ((!e2b && api_record_write(a, &nc, &err) < 0) ||
				  cell_pool_keep(a->pool, nc.handle, &err) < 0)) {
		api_record_drop(nc.id);
		child_drop(a, &nc, k, "cannot keep the cell: ", err.msg);
		return;
	}
	api_slot_fill(a, &nc);
	k->slot = false; /* filled */
}

/* Reserve a slot, an id and a name per child; the children that got one
 * into names (*n). */
static void children_plan(struct api *a, struct api_fork_child *kids, unsigned count,
			  const char **names, size_t *n)
{
	*n = 0;
	for (unsigned i = 0; i < count; i++) {
		struct api_fork_child *k = &kids[i];
		if (!api_slot_reserve(a)) {
			snprintf(k->err, sizeof(k->err), "at most %zu cells at once (DELETE one)",
				 a->cfg.max_cells);
			k->full = true;
			continue;
		}
		k->slot = true;
		if (!api_cell_new_id(a, k->id)) {
			snprintf(k->err, sizeof(k->err), "getrandom failed");
			continue;
		}
		child_name(a, k);
		names[(*n)++] = k->name;
	}
}

static void fork_answer(struct api_fork_child *kids, unsigned count, struct api_response *resp)
{
	struct api_jbuf jb;
	if (!api_jb_open(&jb)) {
		api_response_error(resp, 500, "out of memory");
		return;
	}
	fputs("{\"cells\":[", jb.f);
	for (unsigned i = 0; i < count; i++) {
		fputs(i ? ",{" : "{", jb.f);
		bool ok = !kids[i].err[0];
		fputs(ok ? "\"id\":" : "\"error\":", jb.f);
		const char *s = ok ? kids[i].id : kids[i].err;
		api_json_string(jb.f, s, strlen(s));
		if (ok)
			api_json_replay(jb.f, &kids[i].replay);
		fputc('}', jb.f);
	}
	fputs("]}", jb.f);
	api_jb_send(&jb, resp, 200);
}

/* The pool's worker forks; each child it made goes into the table. */
static void fork_run(struct api *a, const struct api_cell *parent, bool replay,
		     const struct api_e2b *e2b, struct api_fork_child *kids, unsigned count)
{
	const char *names[API_FORK_MAX];
	struct sc_err errs[API_FORK_MAX], err = {0};
	size_t n;
	children_plan(a, kids, count, names, &n);
	/* made of the parent's image's spec */
	struct api_response no_pool = {0};
	struct cell_pool *pool = n ? api_pool_of(a, parent, &no_pool) : NULL;
	int made = !n ? 0
		   : pool ? cell_pool_fork(pool, parent->name, names, n, errs, &err)
			  : sc_fail(&err, 0, "the pool of the cell's image '%s' cannot be made",
				    parent->image);
	api_response_free(&no_pool);
	if (made < 0)
		sc_log(&a->cfg.log, SC_LOG_WARN, "fork of %s: %s", parent->id, err.msg);
	for (unsigned i = 0, j = 0; i < count; i++) {
		struct api_fork_child *k = &kids[i];
		if (k->err[0] || !k->slot)
			continue;
		const struct sc_err *e = made < 0 ? &err : &errs[j];
		j++;
		if (e->msg[0])
			snprintf(k->err, sizeof(k->err), "%s", e->msg);
		else
			child_adopt(a, parent, replay, e2b, k);
	}
	for (unsigned i = 0; i < count; i++)
		if (kids[i].slot)
			api_slot_give_back(a);
}

void api_cells_fork(struct api *a, const struct api_call *call, struct api_response *resp)
{
	struct api_bad bad;
	unsigned count = 1;
	bool replay = false;
	cJSON *j = api_req_object(call->req->body, call->req->body_len, true, &bad);
	if (!j || api_parse_fork(j, &count, &replay, &bad) < 0) {
		api_refuse(resp, &bad);
		cJSON_Delete(j);
		return;
	}
	cJSON_Delete(j);
	struct api_fork_child *kids = calloc(count, sizeof(*kids));
	if (!kids)
		api_response_error(resp, 500, "out of memory");
	else if (api_fork_cells(a, call->id, count, replay, NULL, kids, resp) == 0)
		fork_answer(kids, count, resp);
	free(kids);
}

int api_fork_cells(struct api *a, const char *id, unsigned count, bool replay,
		   const struct api_e2b *e2b, struct api_fork_child *kids, struct api_response *resp)
{
	struct api_cell parent;
	if (change_begin(a, id, false, &parent, resp) < 0)
		return -1;
	int rc = refuse_unknown_volumes(&parent, resp) ? -1 : 0;
	if (rc == 0)
		fork_run(a, &parent, replay, e2b, kids, count);
	change_end(a, id);
	return rc;
}

/* ---- checkpoints ---- */

/* A tag for a checkpoint asked for without one: its time and 4 random
 * hex digits (ckpt-20260105-141516-1a2b). */
static void tag_generate(char tag[64])
{
	unsigned char r[2] = {0};
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	(void)!getrandom(r, sizeof(r), 0);
	snprintf(tag, 64, "ckpt-%04d%02d%02d-%02d%02d%02d-%02x%02x", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, r[0], r[1]);
}

static void tag_answer(const char *id, const char *tag, const char *what,
		       struct api_response *resp, int status)
{
	struct api_jbuf jb;
	if (!api_jb_open(&jb)) {
		api_response_error(resp, 500, "out of memory");
		return;
	}
	fputs("{\"id\":", jb.f);
	api_json_string(jb.f, id, strlen(id));
	fputs(",\"tag\":", jb.f);
	api_json_string(jb.f, tag, strlen(tag));
	if (what)
		fprintf(jb.f, ",\"%s\":true", what);
	fputc('}', jb.f);
	api_jb_send(&jb, resp, status);
}

/* The body's tag (required or not); -1 with resp. */
static int body_tag(const struct api_call *call, bool required, char tag[64],
		    struct api_response *resp)
{
	struct api_bad bad;
	cJSON *j = api_req_object(call->req->body, call->req->body_len, !required, &bad);
	int rc = j ? api_parse_tag(j, required, tag, &bad) : -1;
	cJSON_Delete(j);
	if (rc < 0)
		api_refuse(resp, &bad);
	return rc;
}

void api_checkpoints_create(struct api *a, const struct api_call *call, struct api_response *resp)
{
	char tag[64];
	struct api_cell e;
	if (body_tag(call, false, tag, resp) < 0 || change_begin(a, call->id, false, &e, resp) < 0)
		return;
	if (!tag[0])
		tag_generate(tag);
	struct sc_err err = {0};
	if (cell_pool_checkpoint(a->pool, e.name, tag, &err) < 0)
		api_errorf(resp, err_status(&err), "checkpoint: %.400s", err.msg);
	else
		tag_answer(call->id, tag, NULL, resp, 201);
	change_end(a, call->id);
}

/* The cell name of id (404 in resp when there is none). */
static bool cell_name_of(struct api *a, const char *id, char name[64], struct api_response *resp)
{
	pthread_mutex_lock(&a->mu);
	struct api_cell *e = api_cell_find_locked(a, id);
	if (e)
		snprintf(name, 64, "%s", e->name);
	pthread_mutex_unlock(&a->mu);
	if (!e)
		api_response_error(resp, 404, "no such cell");
	return e != NULL;
}

static int tag_cmp(const void *x, const void *y)
{
	return strcmp((const char *)x, (const char *)y);
}

void api_checkpoints_list(struct api *a, const struct api_call *call, struct api_response *resp)
{
	char name[64];
	if (!cell_name_of(a, call->id, name, resp))
		return;
	char(*tags)[64] = NULL;
	size_t n = 0;
	struct sc_err err = {0};
	struct api_jbuf jb;
	if (cell_checkpoint_list(name, &tags, &n, &err) < 0) {
		api_errorf(resp, 500, "checkpoints: %.400s", err.msg);
		return;
	}
	if (!api_jb_open(&jb)) {
		free(tags);
		api_response_error(resp, 500, "out of memory");
		return;
	}
	qsort(tags, n, sizeof(*tags), tag_cmp);
	fputs("{\"id\":", jb.f);
	api_json_string(jb.f, call->id, strlen(call->id));
	fputs(",\"checkpoints\":[", jb.f);
	for (size_t i = 0; i < n; i++) {
		fputs(i ? "," : "", jb.f);
		api_json_string(jb.f, tags[i], strnlen(tags[i], 63));
	}
	fputs("]}", jb.f);
	free(tags);
	api_jb_send(&jb, resp, 200);
}

void api_checkpoints_delete(struct api *a, const struct api_call *call, struct api_response *resp)
{
	char tag[64];
	struct api_bad bad;
	struct api_cell e;
	if (!api_tag_ok(call->tag, true, tag, &bad)) {
		api_refuse(resp, &bad);
		return;
	}
	if (change_begin(a, call->id, false, &e, resp) < 0)
		return;
	struct sc_err err = {0};
	if (cell_checkpoint_remove(e.name, tag, &err) < 0)
		api_errorf(resp, err_status(&err), "checkpoint: %.400s", err.msg);
	else
		tag_answer(call->id, tag, "deleted", resp, 200);
	change_end(a, call->id);
}

/* ---- rollback ---- */

/* The new cell under the entry's name: its handle in the table (the old
 * one closed), its memory limit and volumes again, no Python session (its interpreter
 * died with the old cell), recorded and kept again (the mark went with
 * the old cell). */
static int rollback_adopt(struct api *a, const struct api_cell *was, struct sc_err *err)
{
	struct cell *h, *old = NULL;
	const char *id = was->id;
	if (cell_open(was->name, &h, err) < 0)
		return -1;
	if (made_like(a, was, h, err) < 0) {
		cell_close(h);
		return -1;
	}
	pthread_mutex_lock(&a->mu);
	struct api_cell *e = api_cell_find_locked(a, id);
	int rc = 0;
	if (e) {
		old = e->handle;
		e->handle = h;
		e->session = false;
		if (!a->cfg.ephemeral && (api_record_write(a, e, err) < 0 ||
					  cell_pool_keep(a->pool, h, err) < 0))
			rc = -1;
	}
	pthread_mutex_unlock(&a->mu);
	cell_close(e ? old : h);
	return rc;
}

void api_cells_rollback(struct api *a, const struct api_call *call, struct api_response *resp)
{
	char tag[64];
	struct api_cell e;
	if (body_tag(call, true, tag, resp) < 0 || change_begin(a, call->id, true, &e, resp) < 0)
		return;
	struct sc_err err = {0};
	struct cell_pool *pool = NULL;
	if (refuse_unknown_volumes(&e, resp) || !(pool = api_pool_of(a, &e, resp)))
		; /* answered */
	else if (cell_pool_rollback(pool, e.name, tag, &err) < 0)
		api_errorf(resp, err_status(&err), "rollback: %.400s", err.msg);
	else if (rollback_adopt(a, &e, &err) < 0)
		api_errorf(resp, 500, "rollback: %.400s", err.msg);
	else
		tag_answer(call->id, tag, "rolled_back", resp, 200);
	change_end(a, call->id);
}
