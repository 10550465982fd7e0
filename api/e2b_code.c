/* E2B's code interpreter (@e2b/code-interpreter's runCode: POST /execute,
 * port 49999 of the sandbox) on sandcell's kept Python session of the
 * sandbox's cell (the one /cells/{id}/code uses: state kept between
 * calls, matplotlib figures as PNG). The answer is the NDJSON the SDK
 * reads: stdout and stderr, one result per plot, the value of the last
 * expression as the main result (the session prints it as "Out[N]: "),
 * an error with name, value and traceback, the execution count, and
 * end_of_execution. A run names its context (context_id,
 * e2b_contexts.c), or runs in the sandbox's own session. JavaScript,
 * TypeScript, R and bash have no kept session in sandcell (lang/): each
 * of their runs is a fresh program (lang_run_in) in the sandbox's cell,
 * in the context's cwd, with its source in a directory of the server's
 * (not the user's), so nothing is kept between two runs but files. */
#include <stdlib.h>
#include <string.h>

#include "../common/base64.h"
#include "e2b_priv.h"

#define E2B_CODE_TIMEOUT 300.0 /* seconds, E2B's runCode default (then the cap) */
#define E2B_RUN_DIR "/tmp/.sandcell/e2b" /* a one-shot run's sources: DIR/CONTEXT */

/* The languages runCode serves: Python in the kept session, these one
 * run each (E2B's names and lang's aliases find them). */
static const char *const ONE_SHOT[] = {"javascript", "typescript", "r", "bash"};

bool api_e2b_code_language(const char *name, const struct lang_def **out,
			   struct api_response *resp)
{
	*out = NULL;
	if (!name || !strcmp(name, "python") || !strcmp(name, "py"))
		return true;
	const struct lang_def *l = lang_find(name);
	for (size_t i = 0; l && i < SC_ARRAY_LEN(ONE_SHOT); i++)
		if (!strcmp(l->name, ONE_SHOT[i])) {
			*out = l;
			return true;
		}
	if (l && !strcmp(l->name, "python"))
		return true;
	api_e2b_error(resp, 400,
		      "language %.64s is not served: python (state kept between runs), "
		      "javascript, typescript, r and bash (each run a fresh program) (docs/e2b.md)",
		      name);
	return false;
}

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

/* Where the last line of text that is not blank starts and ends. */
static void last_line(const char *text, size_t len, size_t *start, size_t *end)
{
	*end = len;
	while (*end && (text[*end - 1] == '\n' || text[*end - 1] == ' '))
		(*end)--;
	*start = *end;
	while (*start && text[*start - 1] != '\n')
		(*start)--;
}

/* The traceback's last line "Name: value" as the error. */
static void ndjson_error(FILE *f, const char *err, size_t len)
{
	size_t start, end;
	last_line(err, len, &start, &end);
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

/* A one-shot run's error: the first "NameError: value" line of its
 * stderr (err, len: JavaScript's), else "Error" and the last line (R's,
 * bash's), and all of stderr as the traceback. */
static void ndjson_error_one_shot(FILE *f, const struct lang_result *res, const char *err,
				  size_t len)
{
	const struct lang_exec *x = res->compile.present && res->compile.return_code ? &res->compile
										   : &res->run;
	const char *name = "Error", *value = NULL;
	size_t name_len = 5, value_len = 0;
	char why[128];
	for (size_t i = 0; i < len && !value;) {
		const char *line = err + i, *nl = memchr(line, '\n', len - i);
		size_t ll = nl ? (size_t)(nl - line) : len - i;
		size_t id = 0;
		while (id < ll && (line[id] == '_' || line[id] == '.' ||
				   ((line[id] | 32) >= 'a' && (line[id] | 32) <= 'z') ||
				   (id && line[id] >= '0' && line[id] <= '9')))
			id++;
		if (id < ll && line[id] == ':' && id >= 5 &&
		    (!memcmp(line + id - 5, "Error", 5) || (id >= 9 && !memcmp(line + id - 9, "Exception", 9)))) {
			name = line, name_len = id;
			value = line + id + 1 + (id + 1 < ll && line[id + 1] == ' ');
			value_len = (size_t)(line + ll - value);
		}
		i += ll + 1;
	}
	if (!value) {
		size_t start, end;
		last_line(err, len, &start, &end);
		value = err + start;
		value_len = end - start;
	}
	if (res->status == LANG_SANDBOX_ERROR) {
		name = "SandboxError", name_len = 12;
		value = res->message, value_len = strlen(res->message);
	} else if (x->status == LANG_EXEC_TIME_LIMIT) {
		name = "TimeoutError", name_len = 12;
		value = "the code ran past its timeout and was killed", value_len = strlen(value);
	} else if (!value_len) {
		int n = snprintf(why, sizeof(why), "exit status %d", x->return_code);
		value = why, value_len = n > 0 ? (size_t)n : 0;
	}
	fputs("{\"type\":\"error\",\"name\":", f);
	api_json_string(f, name, name_len);
	fputs(",\"value\":", f);
	api_json_string(f, value, value_len);
	fputs(",\"traceback\":", f);
	api_json_string(f, err, len);
	fputs("}\n", f);
}

static void ndjson_plots(FILE *f, const struct lang_result *res)
{
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
}

/* What a run is: its context ("": the sandbox's own), its language
 * (NULL: Python, in the kept session), the cwd of a one-shot run, and
 * its count. */
struct exec_target {
	char ctx[API_E2B_CONTEXT_ID + 1];
	const struct lang_def *lang;
	char cwd[API_E2B_CONTEXT_CWD];
	unsigned count;
};

/* body -> the request layer's body of the run ({code, timeout}; a
 * one-shot run's language and workdir come later), its context_id and
 * language in t; NULL with resp. */
static cJSON *code_body(const struct api_request *req, struct exec_target *t,
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
	} else if (!api_e2b_code_language(lang, &t->lang, resp)) {
		/* answered */
	} else if ((out = cJSON_CreateObject())) {
		cJSON_AddStringToObject(out, "code", code);
		cJSON_AddNumberToObject(out, "timeout", E2B_CODE_TIMEOUT);
		snprintf(t->ctx, sizeof(t->ctx), "%s",
			 cid && strcmp(cid, API_E2B_DEFAULT_CONTEXT) ? cid : "");
	}
	cJSON_Delete(j);
	return out;
}

/* Sandbox id's context t->ctx ("": its own session): its count (one
 * more: a run went through), and for a context its language and cwd;
 * false when there is no such context. */
static bool context_lookup(struct api *a, const char *id, struct exec_target *t, bool more)
{
	bool found = false;
	pthread_mutex_lock(&a->mu);
	struct api_cell *c = api_cell_find_locked(a, id);
	struct api_e2b *e = c ? c->e2b : NULL;
	unsigned *n = e && !t->ctx[0] ? &e->executions : NULL;
	for (size_t i = 0; e && t->ctx[0] && i < e->ncontexts && !n; i++)
		if (!strcmp(e->contexts[i].id, t->ctx)) {
			n = &e->contexts[i].executions;
			t->lang = e->contexts[i].lang;
			snprintf(t->cwd, sizeof(t->cwd), "%s", e->contexts[i].cwd);
		}
	if (n) {
		found = true;
		t->count = more ? ++*n : *n;
	}
	pthread_mutex_unlock(&a->mu);
	return found;
}

/* A one-shot run's source: a first line's prefix that goes to the
 * context's cwd (on the code's first line, so that an error's line
 * numbers are the code's), then the code. NULL: out of memory. */
static char *one_shot_source(const struct lang_def *l, const char *cwd, const char *code)
{
	struct api_jbuf jb;
	if (!api_jb_open(&jb))
		return NULL;
	if (!strcmp(l->name, "bash")) {
		fputs("cd -- '", jb.f);
		for (const char *p = cwd; *p; p++)
			*p == '\'' ? fputs("'\\''", jb.f) : fputc(*p, jb.f);
		fputs("' || exit 1; ", jb.f);
	} else { /* a JSON string is a JavaScript and an R string too */
		fputs(!strcmp(l->name, "r") ? "setwd(" : "process.chdir(", jb.f);
		api_json_string(jb.f, cwd, strlen(cwd));
		fputs("); ", jb.f);
	}
	fputs(code, jb.f);
	return api_jb_close(&jb);
}

/* j (code_body's) as a one-shot run's body: its language, its source
 * with the cd, its work directory (the context's own under
 * E2B_RUN_DIR); false: out of memory. */
static bool one_shot_body(cJSON *j, const struct exec_target *t)
{
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(j, "code");
	_cleanup_free_ char *src = one_shot_source(t->lang, t->cwd, code->valuestring);
	char dir[sizeof(E2B_RUN_DIR) + API_E2B_CONTEXT_ID + 8];
	snprintf(dir, sizeof(dir), "%s/%s", E2B_RUN_DIR, t->ctx[0] ? t->ctx : API_E2B_DEFAULT_CONTEXT);
	return src && cJSON_ReplaceItemInObjectCaseSensitive(j, "code", cJSON_CreateString(src)) &&
	       cJSON_AddStringToObject(j, "language", t->lang->name) &&
	       cJSON_AddStringToObject(j, "workdir", dir);
}

/* A run's stdout or stderr: all of it (up to the output limit), and how
 * much of it went out as events. */
struct out_buf {
	char *d;
	size_t len, cap, sent;
	size_t seen;            /* len when sendable last looked */
	bool held;              /* a line of the session's "Out[N]: " is held
				 * (with all after it) until the run ends */
};

struct exec_job {
	struct api *a;
	char id[API_ID_LEN + 1];
	struct cell *c;         /* the request's handle (api_cell_begin) */
	cJSON *j;               /* the strings r points to */
	struct api_run r;
	struct exec_target t;
	struct api_stream *s;
	struct out_buf o[2];    /* stdout, stderr */
	size_t limit;           /* bytes of each kept */
};

static void exec_job_free(void *ctx)
{
	struct exec_job *k = ctx;
	if (k->c)
		api_cell_end(k->a, k->id, k->c);
	cJSON_Delete(k->j);
	free(k->o[0].d);
	free(k->o[1].d);
	free(k);
}

/* One line of the answer (an open jbuf's NDJSON) into the stream. */
static void send_lines(struct exec_job *k, struct api_jbuf *jb)
{
	_cleanup_free_ char *t = api_jb_close(jb);
	if (t)
		api_stream_raw(k->s, t, jb->len);
}

static void send_text(struct exec_job *k, int which, size_t upto)
{
	struct out_buf *b = &k->o[which];
	struct api_jbuf jb;
	if (upto <= b->sent || !api_jb_open(&jb))
		return;
	ndjson_text(jb.f, which ? "stderr" : "stdout", b->d + b->sent, upto - b->sent);
	b->sent = upto;
	send_lines(k, &jb);
}

/* Does a line that begins at p (n bytes so far) begin, or may it still
 * begin, with the session's "Out["? */
static bool maybe_out_line(const char *p, size_t n)
{
	return !memcmp(p, "Out[", n < 4 ? n : 4);
}

/* What of b may go out now: its whole lines (E2B's interpreter sends
 * its output in such pieces, not a print's text and its newline apart),
 * up to the first that is (or may become) the session's Out[N] (held:
 * that line and all after it wait for the end). */
static size_t sendable(struct out_buf *b, bool session_stdout)
{
	if (b->held)
		return b->sent;
	size_t end = b->sent, p = b->sent;
	/* what the last call saw has no newline after sent, and its line
	 * starts but the last 3 bytes' were decided: not scanned again */
	if (b->seen > p + 3)
		p = b->seen - 3;
	b->seen = b->len;
	for (; p < b->len; p++) {
		if (session_stdout && (!p || b->d[p - 1] == '\n') &&
		    maybe_out_line(b->d + p, b->len - p)) {
			b->held = b->len - p >= 4; /* "Out[" whole: held for good */
			break;
		}
		if (b->d[p] == '\n')
			end = p + 1;
	}
	return end;
}

static void exec_event(void *ctx, const struct lang_event *ev)
{
	struct exec_job *k = ctx;
	if (ev->type != LANG_EV_STDOUT && ev->type != LANG_EV_STDERR)
		return; /* plots and the result: at the end */
	int which = ev->type == LANG_EV_STDERR;
	struct out_buf *b = &k->o[which];
	size_t n = ev->len;
	if (n > k->limit - b->len)
		n = k->limit - b->len; /* past the output limit: dropped */
	if (!n)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n)
			cap *= 2;
		char *d = realloc(b->d, cap);
		if (!d)
			return;
		b->d = d;
		b->cap = cap;
	}
	memcpy(b->d + b->len, ev->data, n);
	b->len += n;
	send_text(k, which, sendable(b, which == 0 && !k->t.lang));
}

/* The end of the answer: what was held of the output, the plots, the
 * main result (the session's Out[N]), the error, the count. */
static void exec_end(struct exec_job *k, const struct lang_result *res)
{
	struct out_buf *out = &k->o[0], *err = &k->o[1];
	unsigned n;
	/* (a run that failed has no value: an Out[ line is its own output) */
	bool value = !k->t.lang && res->run.return_code == 0;
	size_t mark = value ? out_marker(out->d ? out->d : "", out->len, &n) : out->len;
	if (mark < out->sent)
		mark = out->len; /* (an Out[ that went out already: not the value) */
	send_text(k, 0, mark);
	send_text(k, 1, err->len);
	struct api_jbuf jb;
	if (!api_jb_open(&jb))
		return;
	ndjson_plots(jb.f, res);
	if (mark < out->len) {
		const char *v = out->d + mark;
		v += strcspn(v, ":") + 2; /* past "Out[N]: " (out_marker found both) */
		size_t vl = (size_t)(out->d + out->len - v);
		while (vl && v[vl - 1] == '\n')
			vl--;
		fputs("{\"type\":\"result\",\"is_main_result\":true,\"text\":", jb.f);
		api_json_string(jb.f, v, vl);
		fputs("}\n", jb.f);
	}
	if (k->t.lang && res->status != LANG_SUCCESS)
		ndjson_error_one_shot(jb.f, res, err->d ? err->d : "", err->len);
	else if (!k->t.lang && res->run.return_code != 0)
		ndjson_error(jb.f, err->d ? err->d : "", err->len);
	fprintf(jb.f, "{\"type\":\"number_of_executions\",\"execution_count\":%u}\n", k->t.count);
	fputs("{\"type\":\"end_of_execution\"}\n", jb.f);
	send_lines(k, &jb);
}

/* A run that could not be made (the session would not start, the cell
 * went): an error in the answer, which began already. */
static void exec_fail(struct exec_job *k, const char *msg)
{
	send_text(k, 0, k->o[0].len);
	send_text(k, 1, k->o[1].len);
	struct api_jbuf jb;
	if (!api_jb_open(&jb))
		return;
	fputs("{\"type\":\"error\",\"name\":\"SandboxError\",\"value\":", jb.f);
	api_json_string(jb.f, msg, strlen(msg));
	fputs(",\"traceback\":", jb.f);
	api_json_string(jb.f, msg, strlen(msg));
	fputs("}\n{\"type\":\"end_of_execution\"}\n", jb.f);
	send_lines(k, &jb);
}

/* The run, on the stream's thread: its output as it comes (the SDK's
 * onStdout and onStderr), then the end. */
static void exec_job_stream(struct api_stream *s, void *ctx)
{
	struct exec_job *k = ctx;
	struct api_run *r = &k->r;
	k->s = s;
	r->session.sink = r->run.sink = (struct lang_sink){.fn = exec_event, .ctx = k};
	r->session.stream = r->run.stream = true;
	r->session.has_cancel = r->run.has_cancel = true;
	r->session.cancel_fd = r->run.cancel_fd = api_stream_cancel_fd(s);
	r->session.context = k->t.ctx[0] ? k->t.ctx : NULL;
	r->run.prepared = true; /* the pools' cells start with the support files */
	struct sc_err err = {0};
	struct lang_result res;
	int rc = k->t.lang ? 0 : api_cell_session(k->a, k->id, k->c, &err);
	if (rc == 0)
		rc = api_op_run(k->c, r, !k->t.lang, &res, &err);
	if (rc < 0) {
		exec_fail(k, err.msg);
		return;
	}
	(void)context_lookup(k->a, k->id, &k->t, true);
	exec_end(k, &res);
	lang_result_free(&res);
}

void api_e2b_execute(struct api *a, const struct api_call *call, struct api_response *resp)
{
	struct exec_job *k = api_job_alloc(sizeof(*k), resp);
	if (!k)
		return;
	k->a = a;
	k->t = (struct exec_target){.cwd = API_E2B_HOME};
	struct api_bad bad;
	struct api_response inner = {0};
	if (!api_e2b_code_auth(a, call->req, k->id, resp) || !(k->j = code_body(call->req, &k->t, resp))) {
		/* answered */
	} else if (!context_lookup(a, k->id, &k->t, false)) {
		api_e2b_error(resp, 404, "no code context %s in the sandbox", k->t.ctx);
	} else if (k->t.lang && !one_shot_body(k->j, &k->t)) {
		api_e2b_error(resp, 500, "out of memory");
	} else if (api_parse_run(k->j, k->t.lang ? API_RUN_CELL : API_RUN_SESSION, &a->lim, NULL,
				 &k->r, &bad) < 0) {
		api_e2b_error(resp, 400, "%s", bad.msg);
	} else if (api_cell_begin(a, k->id, &k->c, &inner) < 0) {
		k->c = NULL;
		api_e2b_error(resp, 502, "the sandbox's cell is gone");
	} else {
		k->limit = k->r.run.output_limit ? k->r.run.output_limit : CELL_DEFAULT_OUTPUT;
		api_response_free(&inner);
		api_stream_start(a, resp, 0, exec_job_stream, exec_job_free, k);
		return; /* the stream owns k */
	}
	api_response_free(&inner);
	exec_job_free(k);
}
