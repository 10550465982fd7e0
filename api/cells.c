/* The cells of POST /cells: the table (under the server's mutex), create,
 * list, delete, a request's handle on one, and its Python session. */
#include <string.h>
#include <sys/random.h>

#include "e2b_priv.h"

struct api_cell *api_cell_find_locked(struct api *a, const char *id)
{
	for (size_t i = 0; i < a->ncells; i++)
		if (a->cells[i].id[0] && !strcmp(a->cells[i].id, id))
			return &a->cells[i];
	return NULL;
}

struct cell *api_pool_take(struct api *a, const char *route, struct api_response *resp)
{
	return api_pool_take_from(a, a->pool, route, resp);
}

struct cell *api_pool_take_from(struct api *a, struct cell_pool *pool, const char *route,
				struct api_response *resp)
{
	struct cell *c;
	struct sc_err err = {0};
	double t0 = sc_now();
	bool ready = false;
	if (cell_pool_acquire_how(pool, &c, &ready, &err) < 0) {
		if (route)
			sc_log(&a->cfg.log, SC_LOG_WARN, "%s: %s", route, err.msg);
		api_errorf(resp, 503, "no cell ready: %s", err.msg);
		return NULL;
	}
	api_metrics_cell_start(&a->metrics, ready, sc_now() - t0);
	/* a pre-started interpreter serves /run_code only: any other user of
	 * the cell sees only its own processes */
	if (a->prep.prestart && !(route && !strcmp(route, "run_code")))
		(void)cell_prestart_end(c, &err);
	return c;
}

struct cell *api_cell_drop_locked(struct api *a, size_t i)
{
	struct cell *c = a->cells[i].handle;
	api_e2b_free(a->cells[i].e2b);
	free(a->cells[i].volumes);
	if (!a->cfg.ephemeral)
		api_record_drop(a->cells[i].id);
	a->cells[i] = a->cells[a->ncells - 1];
	memset(&a->cells[a->ncells - 1], 0, sizeof(a->cells[0]));
	a->ncells--;
	return c;
}

int api_net_log_open(const struct api *a, const struct cell *c)
{
	return a->lim.network ? cell_egress_log_open(c, true, NULL) : -1;
}

static void cell_json(FILE *f, const struct api_cell *c, double now)
{
	fputs("{\"id\":", f);
	api_json_string(f, c->id, strlen(c->id));
	fprintf(f, ",\"age_s\":%.3f,\"idle_s\":%.3f,\"idle_timeout_s\":%.3f,\"busy\":%u}",
		now - c->created, c->busy ? 0.0 : now - c->last_used, c->idle_s, c->busy);
}

/* A slot in the table, reserved before the (slow) acquire; false: full. */
bool api_slot_reserve(struct api *a)
{
	pthread_mutex_lock(&a->mu);
	bool full = a->ncells >= a->cfg.max_cells;
	if (!full)
		a->ncells++; /* the slot is ours; filled or given back */
	pthread_mutex_unlock(&a->mu);
	return !full;
}

void api_slot_fill(struct api *a, const struct api_cell *nc)
{
	pthread_mutex_lock(&a->mu);
	size_t slot = a->ncells - 1;
	for (size_t i = 0; i < a->ncells; i++)
		if (!a->cells[i].id[0]) {
			slot = i;
			break;
		}
	a->cells[slot] = *nc;
	pthread_mutex_unlock(&a->mu);
}

void api_slot_give_back(struct api *a)
{
	pthread_mutex_lock(&a->mu);
	/* the last empty one goes */
	for (size_t i = a->ncells; i-- > 0;)
		if (!a->cells[i].id[0]) {
			a->cells[i] = a->cells[a->ncells - 1];
			memset(&a->cells[a->ncells - 1], 0, sizeof(a->cells[0]));
			break;
		}
	a->ncells--;
	pthread_mutex_unlock(&a->mu);
}

bool api_cell_new_id(const struct api *a, char *id)
{
	unsigned char rnd[API_ID_HEX_LEN / 2];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return false;
	/* NODE-HEX: a load balancer routes by the node part (node.c) */
	size_t k = (size_t)snprintf(id, API_ID_LEN + 1, "%s-", a->node);
	for (size_t i = 0; i < sizeof(rnd) && k + 2 < API_ID_LEN + 1; i++, k += 2)
		snprintf(id + k, 3, "%02x", rnd[i]);
	return true;
}

struct api_volume_mount *api_volumes_dup(const struct api_volume_mount *vs, size_t n)
{
	struct api_volume_mount *copy = calloc(n, sizeof(*copy));
	if (copy)
		memcpy(copy, vs, n * sizeof(*copy));
	return copy;
}

/* A new cell from the pool, as asked (its id, memory); -1 with resp. */
static int cell_make(struct api *a, const struct api_cell_new *want, struct api_cell *nc,
		     struct api_response *resp)
{
	if (!api_cell_new_id(a, nc->id)) {
		api_response_error(resp, 500, "getrandom failed");
		return -1;
	}
	struct sc_err err = {0};
	struct cell_pool *pool = api_image_pool(a, want->image, nc->image, resp);
	struct cell *c = pool ? api_pool_take_from(a, pool, NULL, resp) : NULL;
	if (!c)
		return -1;
	if (api_op_memory(c, &a->lim, want->memory_mb, &err) < 0) {
		cell_pool_release(pool, c);
		api_errorf(resp, 422, "memory_limit_MB cannot be enforced: %.400s", err.msg);
		return -1;
	}
	if (api_op_volumes(c, want->volumes, want->nvolumes, &err) < 0) {
		cell_pool_release(pool, c);
		api_errorf(resp, err.errnum == ENOENT ? 404 : err.errnum == ENOTSUP ? 501 : 422,
			   "volume_mounts: %.400s", err.msg);
		return -1;
	}
	if (want->nvolumes &&
	    !(nc->volumes = api_volumes_dup(want->volumes, want->nvolumes))) {
		cell_pool_release(pool, c);
		api_response_error(resp, 500, "out of memory");
		return -1;
	}
	nc->nvolumes = want->nvolumes;
	snprintf(nc->name, sizeof(nc->name), "%s", cell_name(c));
	nc->handle = c;
	nc->created = nc->last_used = sc_now();
	nc->idle_s = want->idle_s;
	nc->memory_mb = want->memory_mb;
	nc->has_user = want->has_user;
	nc->uid = want->uid;
	nc->gid = want->gid;
	/* the record first, then the pool lets go of the cell: a kill in
	 * between leaves a record of a cell the pool's workers remove, which
	 * the next server drops (restart.c) */
	if (!a->cfg.ephemeral &&
	    (api_record_write(a, nc, &err) < 0 || cell_pool_keep(pool, c, &err) < 0)) {
		api_record_drop(nc->id);
		cell_pool_release(pool, c);
		free(nc->volumes);
		api_errorf(resp, 500, "cannot keep the cell: %.400s", err.msg);
		return -1;
	}
	return 0;
}

int api_cells_add(struct api *a, const struct api_cell_new *want, struct api_e2b *e2b,
		  struct api_cell *out, struct api_response *resp)
{
	if (!api_slot_reserve(a)) {
		api_errorf(resp, 429, "at most %zu cells at once (DELETE one)", a->cfg.max_cells);
		return -1;
	}
	struct api_cell nc = {0};
	if (cell_make(a, want, &nc, resp) < 0) {
		api_slot_give_back(a);
		return -1;
	}
	nc.e2b = e2b;
	/* a restarted server adopts /cells cells, not E2B sandboxes: their
	 * access tokens and deadlines are the old server's alone */
	if (e2b && !a->cfg.ephemeral)
		api_record_drop(nc.id);
	*out = nc;
	api_slot_fill(a, &nc);
	return 0;
}

void api_cells_create(struct api *a, const struct api_call *call, struct api_response *resp)
{
	struct api_bad bad;
	struct api_cell_new want;
	cJSON *j = api_req_object(call->req->body, call->req->body_len, true, &bad);
	if (!j || api_parse_cell_new(j, &a->lim, a->cfg.cell_idle_s, &want, &bad) < 0) {
		api_refuse(resp, &bad);
		cJSON_Delete(j);
		return;
	}
	cJSON_Delete(j);
	struct api_cell nc;
	if (api_cells_add(a, &want, NULL, &nc, resp) < 0)
		return;
	struct api_jbuf jb;
	if (!api_jb_open(&jb)) {
		api_response_error(resp, 500, "out of memory");
		return;
	}
	cell_json(jb.f, &nc, nc.created);
	api_jb_send(&jb, resp, 201);
}

void api_cells_list(struct api *a, const struct api_call *call, struct api_response *resp)
{
	(void)call;
	struct api_jbuf jb;
	if (!api_jb_open(&jb)) {
		api_response_error(resp, 500, "out of memory");
		return;
	}
	double now = sc_now();
	fputs("{\"cells\":[", jb.f);
	pthread_mutex_lock(&a->mu);
	size_t k = 0;
	for (size_t i = 0; i < a->ncells; i++) {
		if (!a->cells[i].id[0])
			continue;
		if (k++)
			fputc(',', jb.f);
		cell_json(jb.f, &a->cells[i], now);
	}
	pthread_mutex_unlock(&a->mu);
	fputs("]}", jb.f);
	api_jb_send(&jb, resp, 200);
}

void api_cells_delete(struct api *a, const struct api_call *call, struct api_response *resp)
{
	struct cell *c = NULL;
	pthread_mutex_lock(&a->mu);
	struct api_cell *e = api_cell_find_locked(a, call->id);
	bool changing = e && e->changing;
	if (e && !changing)
		c = api_cell_drop_locked(a, (size_t)(e - a->cells));
	pthread_mutex_unlock(&a->mu);
	if (changing) {
		api_response_error(resp, 409, "a fork, checkpoint or rollback of the cell is under "
					      "way: DELETE it after that");
		return;
	}
	if (!c) {
		api_response_error(resp, 404, "no such cell");
		return;
	}
	cell_pool_release(a->pool, c);
	struct api_jbuf jb;
	if (!api_jb_open(&jb)) {
		api_response_error(resp, 500, "out of memory");
		return;
	}
	fputs("{\"id\":", jb.f);
	api_json_string(jb.f, call->id, strlen(call->id));
	fputs(",\"deleted\":true}", jb.f);
	api_jb_send(&jb, resp, 200);
}

/* Cells serve many connections at once, one handle per thread: the
 * request's is a copy of the one kept since the create, so no file is
 * read on the way to the cell. */
int api_cell_begin(struct api *a, const char *id, struct cell **out, struct api_response *resp)
{
	struct api_cell copy;
	return api_cell_begin_entry(a, id, out, &copy, resp);
}

int api_cell_begin_entry(struct api *a, const char *id, struct cell **out, struct api_cell *copy,
			 struct api_response *resp)
{
	struct sc_err err = {0};
	pthread_mutex_lock(&a->mu);
	struct api_cell *e = api_cell_find_locked(a, id);
	bool found = e != NULL, rolling = found && e->rolling;
	bool alive = found && !rolling && cell_is_alive(e->handle);
	int rc = alive ? cell_dup(e->handle, out, &err) : -1;
	if (rc == 0) {
		e->busy++;
		*copy = *e;
	}
	pthread_mutex_unlock(&a->mu);
	if (!found)
		api_response_error(resp, 404, "no such cell");
	else if (rolling)
		api_response_error(resp, 409, "the cell is being rolled back: try again");
	else if (!alive)
		api_response_error(resp, 410, "the cell is gone (its init died): DELETE it");
	else if (rc < 0)
		api_errorf(resp, 500, "%s", err.msg);
	return rc;
}

void api_cell_end(struct api *a, const char *id, struct cell *c)
{
	cell_close(c);
	pthread_mutex_lock(&a->mu);
	struct api_cell *e = api_cell_find_locked(a, id);
	if (e) {
		if (e->busy)
			e->busy--;
		e->last_used = sc_now();
	}
	pthread_mutex_unlock(&a->mu);
}

/* Requests on other cells never wait for an install (which may take as
 * long as the cell makes it). */
int api_cell_session(struct api *a, const char *id, struct cell *c, struct sc_err *err)
{
	pthread_mutex_lock(&a->mu);
	struct api_cell *e;
	while ((e = api_cell_find_locked(a, id)) && e->session_starting)
		pthread_cond_wait(&a->session_cv, &a->mu);
	bool ready = e && e->session;
	if (e && !ready)
		e->session_starting = true;
	pthread_mutex_unlock(&a->mu);
	if (!e)
		return sc_fail(err, ENOENT, "the cell was deleted");
	if (ready)
		return 0;
	int rc = lang_session_install(c, lang_find("python"), err);
	pthread_mutex_lock(&a->mu);
	if ((e = api_cell_find_locked(a, id))) {
		e->session_starting = false;
		e->session = rc == 0;
		/* an adopting server must not start a second interpreter */
		struct sc_err ignored;
		if (rc == 0 && !a->cfg.ephemeral && api_record_write(a, e, &ignored) < 0)
			sc_log(&a->cfg.log, SC_LOG_WARN, "cell %s: %s", id, ignored.msg);
	}
	pthread_cond_broadcast(&a->session_cv);
	pthread_mutex_unlock(&a->mu);
	return rc;
}
