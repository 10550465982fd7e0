/* POST /cells/{id}/exec: a command in a cell of POST /cells, answered
 * whole (the result of `run --json`) or, with Accept:
 * application/x-ndjson, streamed (stream.c): one event per chunk of
 * output, then the result. The server's stop, or a streaming client that
 * goes away, cancels the command (cell_exec's cancel fd: its init kills
 * it). */
#include <stdlib.h>
#include <string.h>

#include "api_priv.h"
#include "ops.h"

/* An exec that failed: stopped by the server's end (503), its cell
 * deleted or its init dead meanwhile (410, as for a request that finds it
 * so), else 500. */
static void exec_error(struct api *a, const char *id, struct cell *c, const struct sc_err *err,
		       struct api_response *resp)
{
	pthread_mutex_lock(&a->mu);
	bool listed = api_cell_find_locked(a, id) != NULL, stopping = a->cancelled;
	pthread_mutex_unlock(&a->mu);
	if (stopping) /* cancelled, or its cell removed first */
		api_response_error(resp, 503, "the server is stopping: the command was stopped");
	else if (!listed)
		api_response_error(resp, 410, "the cell was deleted while the command ran");
	else if (!cell_is_alive(c))
		api_response_error(resp, 410, "the cell is gone (its init died): DELETE it");
	else
		api_errorf(resp, 500, "exec: %s", err->msg);
}

/* One exec, whole or streamed; owns what it points to. */
struct exec_job {
	struct api *a;
	char id[API_ID_LEN + 1];
	struct cell *c;      /* the request's handle (api_cell_begin) */
	cJSON *j;            /* the strings x points to */
	struct api_exec x;
	int net_log;         /* the cell's egress log at its end, -1: none */
};

static void exec_job_free(void *ctx)
{
	struct exec_job *e = ctx;
	sc_closep(&e->net_log);
	api_cell_end(e->a, e->id, e->c);
	api_exec_free(&e->x);
	cJSON_Delete(e->j);
	free(e);
}

/* The result as a JSON object (without a newline), malloc'd, or NULL. */
static char *result_json(const struct cell_result *res, size_t *len)
{
	struct api_jbuf jb;
	if (!api_jb_open(&jb))
		return NULL;
	api_json_cell_result(jb.f, res);
	char *s = api_jb_close(&jb);
	*len = jb.len;
	return s;
}

/* The result in the server's metrics: its limit, its egress. */
static void exec_count(struct api *a, const struct cell_result *res)
{
	api_metrics_limit_hit(&a->metrics, res->limit_hit);
	if (res->network)
		api_metrics_egress(&a->metrics, res->network->allowed, res->network->denied);
}

static void exec_job_stream(struct api_stream *s, void *ctx)
{
	struct exec_job *e = ctx;
	struct cell_result res;
	struct sc_err err = {0};
	e->x.req.has_cancel = true;
	e->x.req.cancel_fd = api_stream_cancel_fd(s);
	e->x.req.on_output = api_stream_on_output;
	e->x.req.output_ctx = s;
	if (api_op_exec(e->c, &e->x, &res, &err) < 0) {
		api_stream_error(s, err.msg);
		return;
	}
	/* the output went out as events: the result's stdout, stderr are empty */
	struct cell_result shown = res;
	shown.out = shown.err = NULL;
	shown.out_len = shown.err_len = 0;
	shown.out_truncated = api_stream_truncated(s, 0);
	shown.err_truncated = api_stream_truncated(s, 1);
	shown.network = res.network = api_net_summary_since(e->net_log);
	exec_count(e->a, &res);
	size_t len;
	_cleanup_free_ char *obj = result_json(&shown, &len);
	if (obj)
		api_stream_result(s, obj, len);
	else
		api_stream_error(s, "out of memory");
	cell_result_free(&res);
}

static void exec_job_whole(void *ctx, struct api_response *resp)
{
	struct exec_job *e = ctx;
	struct cell_result res;
	struct sc_err err = {0};
	e->x.req.has_cancel = true;
	e->x.req.cancel_fd = e->a->stop_pipe[0];
	if (api_op_exec(e->c, &e->x, &res, &err) < 0) {
		exec_error(e->a, e->id, e->c, &err, resp);
		return;
	}
	res.network = api_net_summary_since(e->net_log);
	exec_count(e->a, &res);
	struct api_jbuf jb;
	if (api_jb_open(&jb)) {
		api_json_cell_result(jb.f, &res);
		api_jb_send(&jb, resp, 200);
	} else {
		api_response_error(resp, 500, "out of memory");
	}
	cell_result_free(&res);
}

/* The request's trace context as the command's TRACEPARENT, unless the
 * request's env sets one itself (or has no room left). */
static void trace_env(const struct api_request *req, struct api_exec *x)
{
	if (!req->traceparent || x->nenv >= CELL_MAX_ENV)
		return;
	for (size_t i = 0; i < x->nenv; i++)
		if (!strncmp(x->env[i], "TRACEPARENT=", 12))
			return;
	char *kv = malloc(12 + strlen(req->traceparent) + 1);
	if (!kv)
		return;
	strcpy(kv, "TRACEPARENT=");
	strcat(kv, req->traceparent);
	x->env[x->nenv] = x->envbuf[x->nenv] = kv;
	x->nenv++;
	x->env[x->nenv] = NULL;
	x->req.env = x->env;
}

/* A command without "user" runs as its cell's (from the create), if any. */
static void default_user(struct api *a, struct exec_job *e)
{
	if (e->x.req.has_user)
		return;
	pthread_mutex_lock(&a->mu);
	const struct api_cell *c = api_cell_find_locked(a, e->id);
	if (c && c->has_user) {
		e->x.req.has_user = true;
		e->x.req.uid = c->uid;
		e->x.req.gid = c->gid;
	}
	pthread_mutex_unlock(&a->mu);
}

void api_cells_exec(struct api *a, const struct api_call *call, struct api_response *resp)
{
	struct api_bad bad;
	struct exec_job *e = api_job_alloc(sizeof(*e), resp);
	if (!e)
		return;
	e->a = a;
	e->net_log = -1;
	e->j = api_call_body(call, e->id, &bad);
	if (!e->j || api_parse_exec(e->j, &API_EXEC_HTTP, &a->lim, &e->x, &bad) < 0) {
		api_refuse(resp, &bad);
		cJSON_Delete(e->j);
		free(e);
		return;
	}
	if (api_cell_begin(a, e->id, &e->c, resp) < 0) {
		api_exec_free(&e->x);
		cJSON_Delete(e->j);
		free(e);
		return;
	}
	default_user(a, e);
	trace_env(call->req, &e->x);
	e->net_log = api_net_log_open(a, e->c);
	static const struct api_job_ops ops = {exec_job_stream, exec_job_whole, exec_job_free};
	uint64_t limit = e->x.req.output_limit ? e->x.req.output_limit : CELL_DEFAULT_OUTPUT;
	api_stream_begin(a, call->req, resp, limit, &ops, e);
}
