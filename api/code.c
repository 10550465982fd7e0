/* Code: POST /run_code (SandboxFusion's, in a pool cell used once), and
 * POST /cells/{id}/run (any language in a kept cell: files stay between
 * runs, state does not) and /cells/{id}/code (Python in a session kept in
 * the cell, started by the first call). Each answers lang's result in
 * SandboxFusion's shape; /run and /code stream it (stream.c) with Accept:
 * application/x-ndjson. Every run takes the server's stop (or, streamed,
 * its client going away) as its cancel. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "api_priv.h"
#include "ops.h"

/* The result as a JSON object (no newline), plus the egress decisions of
 * the run ("network", as `run --json` has them) when there are any;
 * malloc'd, or NULL. */
static char *lang_result_json(const struct api *a, const struct lang_result *res, bool session,
			      const struct net_summary *net, size_t *len)
{
	char nj[4096];
	struct api_jbuf jb;
	if (!api_jb_open(&jb))
		return NULL;
	api_json_lang_result(jb.f, res, a->cfg.pod_name, session);
	char *s = api_jb_close(&jb);
	*len = jb.len;
	if (!s || !net || net_summary_json(net, nj, sizeof(nj)) <= 0 || jb.len < 2)
		return s;
	struct api_jbuf both;
	if (!api_jb_open(&both)) {
		free(s);
		return NULL;
	}
	fwrite(s, 1, jb.len - 1, both.f); /* without its '}' */
	fprintf(both.f, ",\"network\":%s}", nj);
	free(s);
	s = api_jb_close(&both);
	*len = both.len;
	return s;
}

/* 200 with the result (500 when it cannot be held). */
static void send_lang_result(struct api *a, struct api_response *resp,
			     const struct lang_result *res, bool session,
			     const struct net_summary *net)
{
	size_t len;
	char *s = lang_result_json(a, res, session, net, &len);
	char *body = s ? realloc(s, len + 2) : NULL;
	if (!body) {
		free(s);
		api_response_error(resp, 500, "out of memory");
		return;
	}
	body[len] = '\n';
	body[len + 1] = '\0';
	api_set_body(resp, 200, "application/json", body, len + 1);
}

static void sandbox_error(struct api *a, struct api_response *resp, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void sandbox_error(struct api *a, struct api_response *resp, const char *fmt, ...)
{
	struct lang_result r;
	memset(&r, 0, sizeof(r));
	r.status = LANG_SANDBOX_ERROR;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r.message, sizeof(r.message), fmt, ap);
	va_end(ap);
	send_lang_result(a, resp, &r, false, NULL);
}

/* ---- /run_code ---- */

/* The request's trace context as the program's TRACEPARENT (compile and
 * run steps), as exec hands it to commands. */
static void run_trace(struct api_run *r, const struct api_request *req)
{
	if (!req->traceparent || strlen(req->traceparent) + 13 > sizeof(r->trace_env))
		return;
	snprintf(r->trace_env, sizeof(r->trace_env), "TRACEPARENT=%s", req->traceparent);
	r->run.extra_env = r->trace_env;
}

/* r in a pool cell c: memory, files, the run. */
static void run_code_in(struct api *a, struct cell *c, struct api_run *r, struct api_response *resp)
{
	char why[SC_ERR_MAX];
	struct sc_err err = {0};
	struct lang_result res;
	if (api_op_memory(c, &a->lim, r->memory_mb, &err) < 0) {
		sandbox_error(a, resp, "memory_limit_MB cannot be enforced: %.400s", err.msg);
		return;
	}
	if (r->files && api_op_write_files(c, r->files, why, sizeof(why)) < 0) {
		sandbox_error(a, resp, "%s", why);
		return;
	}
	_cleanup_fd_ int net_log = api_net_log_open(a, c);
	if (api_op_run(c, r, false, &res, &err) < 0) {
		api_metrics_run_code(&a->metrics, r->lang, LANG_SANDBOX_ERROR);
		sandbox_error(a, resp, "%s", err.msg);
		return;
	}
	_cleanup_free_ struct net_summary *net = api_net_summary_since(net_log);
	api_metrics_run_code(&a->metrics, r->lang, (int)res.status);
	api_metrics_limit_hit(&a->metrics, res.limit_hit);
	if (res.run.prestarted)
		atomic_fetch_add_explicit(&a->metrics.run_code_prestarted, 1, memory_order_relaxed);
	if (net)
		api_metrics_egress(&a->metrics, net->allowed, net->denied);
	send_lang_result(a, resp, &res, false, net);
	lang_result_free(&res);
}

void api_run_code(struct api *a, const struct api_call *call, struct api_response *resp)
{
	struct api_bad bad;
	struct api_run r;
	cJSON *j = api_req_object(call->req->body, call->req->body_len, false, &bad);
	if (!j || api_parse_run(j, API_RUN_SANDBOXFUSION, &a->lim, NULL, &r, &bad) < 0) {
		api_refuse(resp, &bad);
		cJSON_Delete(j);
		return;
	}
	struct cell *c = api_pool_take(a, "run_code", resp);
	if (!c) {
		cJSON_Delete(j);
		return;
	}
	r.run.prepared = true; /* the pool's cells start with the support files (seeded) */
	r.run.prestarted = a->prep.prestart;
	run_trace(&r, call->req);
	r.run.has_cancel = true;
	r.run.cancel_fd = a->stop_pipe[0];
	pthread_mutex_lock(&a->mu);
	bool stopping = a->cancelled;
	pthread_mutex_unlock(&a->mu);
	atomic_fetch_add_explicit(&a->metrics.run_code_in_flight, 1, memory_order_relaxed);
	if (stopping)
		api_response_error(resp, 503, "the server is stopping");
	else
		run_code_in(a, c, &r, resp);
	atomic_fetch_sub_explicit(&a->metrics.run_code_in_flight, 1, memory_order_relaxed);
	cell_pool_release(a->pool, c); /* renewed (or removed), never reused as it is */
	cJSON_Delete(j);
}

/* ---- /cells/{id}/run and /cells/{id}/code ---- */

struct code_job {
	struct api *a;
	char id[API_ID_LEN + 1];
	struct cell *c;          /* the request's handle (api_cell_begin) */
	cJSON *j;                /* the strings r points to */
	bool session;
	struct api_run r;
	struct api_stream *s;    /* streamed: where the events go */
};

static void code_job_free(void *ctx)
{
	struct code_job *k = ctx;
	if (k->c)
		api_cell_end(k->a, k->id, k->c);
	cJSON_Delete(k->j);
	free(k);
}

static void code_event(void *ctx, const struct lang_event *ev)
{
	struct code_job *k = ctx;
	if (ev->type == LANG_EV_STDOUT || ev->type == LANG_EV_STDERR) {
		api_stream_output(k->s, ev->type == LANG_EV_STDERR, ev->data, ev->len);
	} else if (ev->type == LANG_EV_RESULT) { /* (plots come with the result) */
		size_t len;
		_cleanup_free_ char *obj = lang_result_json(k->a, ev->result, k->session, NULL, &len);
		if (obj)
			api_stream_result(k->s, obj, len);
		else
			api_stream_error(k->s, "out of memory");
	}
}

static void code_job_stream(struct api_stream *s, void *ctx)
{
	struct code_job *k = ctx;
	struct lang_result res;
	struct sc_err err = {0};
	k->s = s;
	k->r.run.sink = k->r.session.sink = (struct lang_sink){.fn = code_event, .ctx = k};
	k->r.run.stream = k->r.session.stream = true;
	k->r.run.has_cancel = k->r.session.has_cancel = true;
	k->r.run.cancel_fd = k->r.session.cancel_fd = api_stream_cancel_fd(s);
	if (api_op_run(k->c, &k->r, k->session, &res, &err) < 0) {
		api_stream_error(s, err.msg);
	} else {
		api_metrics_limit_hit(&k->a->metrics, res.limit_hit);
		lang_result_free(&res);
	}
}

static void code_job_whole(void *ctx, struct api_response *resp)
{
	struct code_job *k = ctx;
	struct lang_result res;
	struct sc_err err = {0};
	k->r.run.has_cancel = k->r.session.has_cancel = true;
	k->r.run.cancel_fd = k->r.session.cancel_fd = k->a->stop_pipe[0];
	if (api_op_run(k->c, &k->r, k->session, &res, &err) < 0) {
		api_errorf(resp, err.errnum == EINVAL ? 422 : 500, "%s", err.msg);
		return;
	}
	api_metrics_limit_hit(&k->a->metrics, res.limit_hit);
	send_lang_result(k->a, resp, &res, k->session, NULL);
	lang_result_free(&res);
}

static void cells_code(struct api *a, const struct api_call *call, bool session,
		       struct api_response *resp)
{
	struct api_bad bad;
	struct code_job *k = api_job_alloc(sizeof(*k), resp);
	if (!k)
		return;
	k->a = a;
	k->session = session;
	k->j = api_call_body(call, k->id, &bad);
	if (!k->j || api_parse_run(k->j, session ? API_RUN_SESSION : API_RUN_CELL, &a->lim, NULL,
				   &k->r, &bad) < 0) {
		api_refuse(resp, &bad);
		code_job_free(k);
		return;
	}
	/* every cell here came from the pool, whose cells start with the
	 * support files (seeded by their setup); what the cell's code did to
	 * them since is its own business, so they are not checked again on
	 * each run */
	k->r.run.prepared = true;
	run_trace(&k->r, call->req);
	if (api_cell_begin(a, k->id, &k->c, resp) < 0) {
		k->c = NULL;
		code_job_free(k);
		return;
	}
	struct sc_err err = {0};
	if (session && api_cell_session(a, k->id, k->c, &err) < 0) {
		api_errorf(resp, 500, "starting the session: %s", err.msg);
		code_job_free(k);
		return;
	}
	static const struct api_job_ops ops = {code_job_stream, code_job_whole, code_job_free};
	api_stream_begin(a, call->req, resp, 0, &ops, k);
}

void api_cells_run(struct api *a, const struct api_call *call, struct api_response *resp)
{
	cells_code(a, call, false, resp);
}

void api_cells_code(struct api *a, const struct api_call *call, struct api_response *resp)
{
	cells_code(a, call, true, resp);
}
