/* E2B's code interpreter (@e2b/code-interpreter's runCode: POST /execute,
 * port 49999 of the sandbox) on sandcell's kept Python session of the
 * sandbox's cell (the one /cells/{id}/code uses: state kept between
 * calls, matplotlib figures as PNG). The answer is the NDJSON the SDK
 * reads: stdout and stderr, one result per plot, the value of the last
 * expression as the main result (the session prints it as "Out[N]: "),
 * an error with name, value and traceback, the execution count, and
 * end_of_execution. Python only. A run names its context (context_id,
 * e2b_contexts.c), or runs in the sandbox's own session. */
#include <stdlib.h>
#include <string.h>

#include "../common/base64.h"
#include "e2b_priv.h"

#define E2B_CODE_TIMEOUT 300.0 /* seconds, E2B's runCode default (then the cap) */

/* The session's "Out[N]: value" at the end of stdout: where it begins
 * (out + len when there is none), and N. */
static size_t out_marker(const char *out, size_t len, unsigned *n)
{
	for (size_t i = len; i-- > 0;) {
		if (i && out[i - 1] != '\n')
			continue;
		unsigned v;
		int used = 0;
		if (len - i > 6 && !strncmp(out + i, "Out[", 4) &&
		    sscanf(out + i, "Out[%u]: %n", &v, &used) == 1 && used > 0) {
			*n = v;
			return i;
		}
	}
	return len;
}

static void ndjson_text(FILE *f, const char *type, const char *d, size_t n)
{
	if (!n)
		return;
	fprintf(f, "{\"type\":\"%s\",\"text\":", type);
	api_json_string(f, d, n);
	fputs("}\n", f);
}

/* The traceback's last line "Name: value" as the error. */
static void ndjson_error(FILE *f, const char *err, size_t len)
{
	size_t end = len;
	while (end && (err[end - 1] == '\n' || err[end - 1] == ' '))
		end--;
	size_t start = end;
	while (start && err[start - 1] != '\n')
		start--;
	const char *line = err + start, *colon = memchr(line, ':', end - start);
	size_t nl = colon ? (size_t)(colon - line) : end - start;
	const char *value = colon ? colon + 1 + (colon + 1 < err + end && colon[1] == ' ') : err + end;
	fputs("{\"type\":\"error\",\"name\":", f);
	api_json_string(f, nl ? line : "Error", nl ? nl : 5);
	fputs(",\"value\":", f);
	api_json_string(f, value, (size_t)(err + end - value));
	fputs(",\"traceback\":", f);
	api_json_string(f, err, len);
	fputs("}\n", f);
}

static void ndjson_answer(FILE *f, const struct lang_result *res, unsigned count)
{
	const struct lang_exec *x = &res->run;
	unsigned n;
	size_t mark = out_marker(x->out, x->out_len, &n);
	/* the context's runs, as E2B counts them: the interpreter's own count
	 * has a context's setup runs (its cwd) in it too */
	n = count;
	ndjson_text(f, "stdout", x->out, mark);
	bool failed = x->return_code != 0;
	ndjson_text(f, "stderr", x->err, failed ? 0 : x->err_len);
	for (size_t i = 0; i < res->nplots; i++) {
		const struct lang_plot *p = &res->plots[i];
		fprintf(f, "{\"type\":\"result\",\"is_main_result\":false,\"%s\":",
			!strcmp(p->format, "png") ? "png" : "html");
		if (!strcmp(p->format, "png"))
			api_json_base64(f, (const unsigned char *)p->data, p->len);
		else
			api_json_string(f, p->data, p->len);
		fputs(",\"text\":\"<Figure>\"}\n", f);
	}
	if (mark < x->out_len) {
		const char *v = x->out + mark;
		size_t vl = x->out_len - mark;
		v += strcspn(v, ":") + 2; /* past "Out[N]: " */
		vl = (size_t)(x->out + x->out_len - v);
		while (vl && v[vl - 1] == '\n')
			vl--;
		fputs("{\"type\":\"result\",\"is_main_result\":true,\"text\":", f);
		api_json_string(f, v, vl);
		fputs("}\n", f);
	}
	if (failed)
		ndjson_error(f, x->err, x->err_len);
	fprintf(f, "{\"type\":\"number_of_executions\",\"execution_count\":%u}\n", n);
	fputs("{\"type\":\"end_of_execution\"}\n", f);
}

/* body -> the request layer's /cells/{id}/code body and its context_id
 * (ctx, "" for none); NULL with resp. */
static cJSON *code_body(const struct api_request *req, char ctx[API_E2B_CONTEXT_ID + 1],
			struct api_response *resp)
{
	struct api_bad bad;
	cJSON *j = api_req_object(req->body, req->body_len, false, &bad), *out = NULL;
	const char *code, *lang, *cid = NULL;
	if (!j || !api_req_str(j, "code", &code, &bad) || !api_req_str(j, "language", &lang, &bad) ||
	    !api_req_str(j, "context_id", &cid, &bad)) {
		api_e2b_error(resp, 400, "%s", bad.msg);
	} else if (cid && strlen(cid) > API_E2B_CONTEXT_ID) {
		api_e2b_error(resp, 404, "no code context %.64s in the sandbox", cid);
	} else if (!code) {
		api_e2b_error(resp, 400, "code: the code to run");
	} else if (lang && strcmp(lang, "python") && strcmp(lang, "py")) {
		api_e2b_error(resp, 400, "language: python is served (docs/e2b.md)");
	} else if ((out = cJSON_CreateObject())) {
		cJSON_AddStringToObject(out, "code", code);
		cJSON_AddNumberToObject(out, "timeout", E2B_CODE_TIMEOUT);
		snprintf(ctx, API_E2B_CONTEXT_ID + 1, "%s",
			 cid && strcmp(cid, API_E2B_DEFAULT_CONTEXT) ? cid : "");
	}
	cJSON_Delete(j);
	return out;
}

/* The count of sandbox id's runs in context ctx ("": its own session),
 * one more (more: a run went through); false when there is no such
 * context. */
static bool context_count(struct api *a, const char *id, const char *ctx, bool more,
			  unsigned *count)
{
	bool found = false;
	pthread_mutex_lock(&a->mu);
	struct api_cell *c = api_cell_find_locked(a, id);
	struct api_e2b *e = c ? c->e2b : NULL;
	unsigned *n = e && !ctx[0] ? &e->executions : NULL;
	for (size_t i = 0; e && ctx[0] && i < e->ncontexts && !n; i++)
		if (!strcmp(e->contexts[i].id, ctx))
			n = &e->contexts[i].executions;
	if (n) {
		found = true;
		*count = more ? ++*n : *n;
	}
	pthread_mutex_unlock(&a->mu);
	return found;
}

/* The NDJSON answer of a run that went through (rc 0), else the error. */
static void execute_answer(int rc, const struct lang_result *res, const struct sc_err *err,
			   unsigned count, struct api_response *resp)
{
	struct api_jbuf jb;
	if (rc < 0) {
		api_e2b_error(resp, 500, "%s", err->msg);
	} else if (api_jb_open(&jb)) {
		ndjson_answer(jb.f, res, count);
		char *t = api_jb_close(&jb);
		if (t)
			api_set_body(resp, 200, "application/x-ndjson", t, jb.len);
		else
			api_e2b_error(resp, 500, "out of memory");
	} else {
		api_e2b_error(resp, 500, "out of memory");
	}
}

void api_e2b_execute(struct api *a, const struct api_call *call, struct api_response *resp)
{
	char id[API_ID_LEN + 1], ctx[API_E2B_CONTEXT_ID + 1] = "";
	if (!api_e2b_code_auth(a, call->req, id, resp))
		return;
	cJSON *j = code_body(call->req, ctx, resp);
	if (!j)
		return;
	struct api_run r;
	struct api_bad bad;
	struct cell *c;
	struct api_response inner = {0};
	unsigned count = 0;
	if (api_parse_run(j, API_RUN_SESSION, &a->lim, NULL, &r, &bad) < 0) {
		api_e2b_error(resp, 400, "%s", bad.msg);
	} else if (!context_count(a, id, ctx, false, &count)) {
		api_e2b_error(resp, 404, "no code context %s in the sandbox", ctx);
	} else if (api_cell_begin(a, id, &c, &inner) < 0) {
		api_e2b_error(resp, 502, "the sandbox's cell is gone");
	} else {
		struct sc_err err = {0};
		struct lang_result res;
		r.session.has_cancel = true;
		r.session.cancel_fd = a->stop_pipe[0];
		r.session.context = ctx[0] ? ctx : NULL;
		int rc = api_cell_session(a, id, c, &err);
		if (rc == 0)
			rc = api_op_run(c, &r, true, &res, &err);
		api_cell_end(a, id, c);
		if (rc == 0)
			(void)context_count(a, id, ctx, true, &count);
		execute_answer(rc, &res, &err, count, resp);
		if (rc == 0)
			lang_result_free(&res);
	}
	api_response_free(&inner);
	cJSON_Delete(j);
}
