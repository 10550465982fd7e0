/* The code interpreter's contexts (@e2b/code-interpreter's
 * createCodeContext, listCodeContexts, restartCodeContext,
 * removeCodeContext): each one a Python interpreter of its own in the
 * sandbox's cell, beside the sandbox's own session (the context
 * "default"): lang's session under another key (lang_session_req's
 * context), started by its first run. A sandbox has at most
 * API_E2B_MAX_CONTEXTS. Create runs os.chdir(cwd) in the new one;
 * restart ends its interpreter (the session's supervisor starts a fresh
 * one) and goes to its cwd again (the default context too, which is not
 * removed); remove ends its supervisor's process group, so that nothing
 * of it is left running. A context of JavaScript, TypeScript, R or bash
 * has no interpreter (each of its runs is a program of its own,
 * e2b_code.c): it is its cwd and its count. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "e2b_priv.h"

#define CONTEXT_RUN_TIMEOUT 60.0
/* the worker exits: its supervisor forks a fresh one (state lost) */
static const char RESTART_PY[] = "import os\nos._exit(0)\n";
/* the worker's group (the supervisor, which started a session of its
 * own, and its workers) killed once the worker's exit was told */
static const char REMOVE_PY[] = "import os, signal, time\n_sup = os.getppid()\n"
				"if os.fork() == 0:\n    time.sleep(0.5)\n"
				"    os.killpg(_sup, signal.SIGKILL)\n    os._exit(0)\nos._exit(0)\n";

int api_e2b_code_run(struct api *a, const char *id, const char *context, const char *src,
		     struct lang_result *res, struct sc_err *err)
{
	struct cell *c;
	struct api_response inner = {0};
	if (api_cell_begin(a, id, &c, &inner) < 0) {
		api_response_free(&inner);
		return sc_fail(err, ENOENT, "the sandbox's cell is gone");
	}
	struct lang_session_req q;
	lang_session_req_init(&q);
	q.source = src;
	q.source_len = strlen(src);
	q.timeout_s = CONTEXT_RUN_TIMEOUT;
	q.context = context;
	q.has_cancel = true;
	q.cancel_fd = a->stop_pipe[0];
	int rc = api_cell_session(a, id, c, err);
	if (rc == 0)
		rc = lang_session_run_in(c, &q, res, err);
	api_cell_end(a, id, c);
	return rc;
}

/* "import os\nos.chdir(<cwd as a JSON string, which Python reads too>)" */
static char *chdir_py(const char *cwd)
{
	struct api_jbuf jb;
	if (!api_jb_open(&jb))
		return NULL;
	fputs("import os\nos.chdir(", jb.f);
	api_json_string(jb.f, cwd, strlen(cwd));
	fputs(")\n", jb.f);
	return api_jb_close(&jb);
}

/* Run src in context ctx; false with why (the run's stderr's last line). */
static bool context_run(struct api *a, const char *id, const char *ctx, const char *src,
			bool must_succeed, char *why, size_t size)
{
	struct lang_result res;
	struct sc_err err = {0};
	if (api_e2b_code_run(a, id, ctx, src, &res, &err) < 0) {
		snprintf(why, size, "%.*s", (int)(size ? size - 1 : 0), err.msg);
		return false;
	}
	bool ok = !must_succeed || res.status == LANG_SUCCESS;
	if (!ok) {
		size_t n = res.run.err_len;
		while (n && res.run.err[n - 1] == '\n')
			n--;
		size_t start = n;
		while (start && res.run.err[start - 1] != '\n')
			start--;
		snprintf(why, size, "%.*s", (int)(n - start > 300 ? 300 : n - start),
			 res.run.err ? res.run.err + start : "failed");
	}
	lang_result_free(&res);
	return ok;
}

static void put_context(FILE *f, const char *ctx_id, const struct lang_def *l, const char *cwd)
{
	fprintf(f, "{\"id\":\"%s\",\"language\":\"%s\",\"cwd\":", ctx_id, l ? l->name : "python");
	api_json_string(f, cwd, strlen(cwd));
	fputc('}', f);
}

static void reply_json(struct api_jbuf *jb, struct api_response *resp)
{
	char *t = api_jb_close(jb);
	if (t)
		api_set_body(resp, 200, "application/json", t, jb->len);
	else
		api_e2b_error(resp, 500, "out of memory");
}

/* The body of a create: {"language", "cwd"} -> its language (NULL:
 * Python) and cwd; false with resp. */
static bool create_body(const struct api_request *req, const struct lang_def **l,
			char cwd[API_E2B_CONTEXT_CWD], struct api_response *resp)
{
	struct api_bad bad;
	cJSON *j = api_req_object(req->body, req->body_len, true, &bad);
	const char *lang = NULL, *dir = NULL;
	char path[API_CELL_PATH];
	bool ok = j && api_req_str(j, "language", &lang, &bad) && api_req_str(j, "cwd", &dir, &bad);
	if (!ok)
		api_e2b_error(resp, 400, "%s", bad.msg);
	else if (!api_e2b_code_language(lang, l, resp))
		ok = false;
	else if (!api_e2b_path(dir ? dir : API_E2B_HOME, path) || strlen(path) >= API_E2B_CONTEXT_CWD)
		ok = false, api_e2b_error(resp, 400, "cwd: a path without '..', under %d bytes",
					  API_E2B_CONTEXT_CWD);
	else
		memcpy(cwd, path, strlen(path) + 1); /* checked to fit */
	cJSON_Delete(j);
	return ok;
}

/* A new context's place in sandbox id's list; false when it is full. */
static bool context_add(struct api *a, const char *id, const char *ctx_id,
			const struct lang_def *l, const char *cwd)
{
	pthread_mutex_lock(&a->mu);
	struct api_cell *c = api_cell_find_locked(a, id);
	struct api_e2b *e = c ? c->e2b : NULL;
	bool ok = e && e->ncontexts < API_E2B_MAX_CONTEXTS;
	if (ok) {
		struct api_e2b_context *x = &e->contexts[e->ncontexts++];
		snprintf(x->id, sizeof(x->id), "%s", ctx_id);
		x->lang = l;
		snprintf(x->cwd, sizeof(x->cwd), "%s", cwd);
		x->executions = 0;
	}
	pthread_mutex_unlock(&a->mu);
	return ok;
}

/* Take context ctx_id out of sandbox id's list (remove), or copy its cwd
 * (cwd not NULL: a restart, which sets its count to 0); false when it
 * has none such. */
static bool context_find(struct api *a, const char *id, const char *ctx_id, bool remove,
			 char cwd[API_E2B_CONTEXT_CWD], const struct lang_def **l)
{
	bool found = false;
	pthread_mutex_lock(&a->mu);
	struct api_cell *c = api_cell_find_locked(a, id);
	struct api_e2b *e = c ? c->e2b : NULL;
	for (size_t i = 0; e && i < e->ncontexts && !found; i++) {
		if (strcmp(e->contexts[i].id, ctx_id) != 0)
			continue;
		found = true;
		*l = e->contexts[i].lang;
		if (cwd) { /* a restart: its count begins again */
			snprintf(cwd, API_E2B_CONTEXT_CWD, "%s", e->contexts[i].cwd);
			e->contexts[i].executions = 0;
		}
		if (remove)
			e->contexts[i] = e->contexts[--e->ncontexts];
	}
	pthread_mutex_unlock(&a->mu);
	return found;
}

void api_e2b_context_create(struct api *a, const struct api_call *call, struct api_response *resp)
{
	char id[API_ID_LEN + 1], cwd[API_E2B_CONTEXT_CWD], ctx_id[API_E2B_CONTEXT_ID + 1];
	unsigned char rnd[API_E2B_CONTEXT_ID / 2];
	const struct lang_def *l;
	if (!api_e2b_code_auth(a, call->req, id, resp) || !create_body(call->req, &l, cwd, resp))
		return;
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		api_e2b_error(resp, 500, "no randomness for a context id");
		return;
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(ctx_id + 2 * i, 3, "%02x", rnd[i]);
	if (!context_add(a, id, ctx_id, l, cwd)) {
		api_e2b_error(resp, 429, "a sandbox has at most %d code contexts", API_E2B_MAX_CONTEXTS);
		return;
	}
	char why[400];
	_cleanup_free_ char *py = l ? NULL : chdir_py(cwd);
	if (!l && (!py || !context_run(a, id, ctx_id, py, true, why, sizeof(why)))) {
		(void)context_run(a, id, ctx_id, REMOVE_PY, false, why, sizeof(why));
		context_find(a, id, ctx_id, true, NULL, &l);
		api_e2b_error(resp, 400, "the context's interpreter in %s: %s", cwd,
			      py ? why : "out of memory");
		return;
	}
	struct api_jbuf jb;
	if (!api_jb_open(&jb)) {
		api_e2b_error(resp, 500, "out of memory");
		return;
	}
	put_context(jb.f, ctx_id, l, cwd);
	reply_json(&jb, resp);
}

void api_e2b_context_list(struct api *a, const struct api_call *call, struct api_response *resp)
{
	char id[API_ID_LEN + 1];
	struct api_jbuf jb;
	if (!api_e2b_code_auth(a, call->req, id, resp))
		return;
	if (!api_jb_open(&jb)) {
		api_e2b_error(resp, 500, "out of memory");
		return;
	}
	fputc('[', jb.f);
	put_context(jb.f, API_E2B_DEFAULT_CONTEXT, NULL, API_E2B_HOME);
	pthread_mutex_lock(&a->mu);
	struct api_cell *c = api_cell_find_locked(a, id);
	for (size_t i = 0; c && c->e2b && i < c->e2b->ncontexts; i++) {
		fputc(',', jb.f);
		put_context(jb.f, c->e2b->contexts[i].id, c->e2b->contexts[i].lang,
			    c->e2b->contexts[i].cwd);
	}
	pthread_mutex_unlock(&a->mu);
	fputc(']', jb.f);
	reply_json(&jb, resp);
}

void api_e2b_context_remove(struct api *a, const struct api_call *call, struct api_response *resp)
{
	char id[API_ID_LEN + 1], why[400];
	const struct lang_def *l;
	if (!api_e2b_code_auth(a, call->req, id, resp))
		return;
	if (!context_find(a, id, call->tag, true, NULL, &l)) {
		api_e2b_error(resp, 404, "no code context %.64s in the sandbox", call->tag);
		return;
	}
	if (!l) /* a one-shot language's context has no interpreter */
		(void)context_run(a, id, call->tag, REMOVE_PY, false, why, sizeof(why));
	api_set_body(resp, 204, "application/json", NULL, 0);
}

void api_e2b_context_restart(struct api *a, const struct api_call *call, struct api_response *resp)
{
	char id[API_ID_LEN + 1], cwd[API_E2B_CONTEXT_CWD], why[400];
	const struct lang_def *l;
	if (!api_e2b_code_auth(a, call->req, id, resp))
		return;
	if (!strcmp(call->tag, API_E2B_DEFAULT_CONTEXT)) { /* the sandbox's own: its cwd as it was */
		if (!context_run(a, id, NULL, RESTART_PY, false, why, sizeof(why)))
			api_e2b_error(resp, 500, "restarting the context: %s", why);
		else
			api_set_body(resp, 204, "application/json", NULL, 0);
		return;
	}
	if (!context_find(a, id, call->tag, false, cwd, &l)) {
		api_e2b_error(resp, 404, "no code context %.64s in the sandbox", call->tag);
		return;
	}
	if (l) { /* nothing kept: its count begins again */
		api_set_body(resp, 204, "application/json", NULL, 0);
		return;
	}
	_cleanup_free_ char *py = chdir_py(cwd);
	if (!context_run(a, id, call->tag, RESTART_PY, false, why, sizeof(why)) || !py ||
	    !context_run(a, id, call->tag, py, true, why, sizeof(why))) {
		api_e2b_error(resp, 500, "restarting the context: %s", py ? why : "out of memory");
		return;
	}
	api_set_body(resp, 204, "application/json", NULL, 0);
}
