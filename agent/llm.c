/* The part of the model client both APIs share: endpoint and headers, the
 * request/retry loop. (The parsing helpers the APIs use are in
 * llm_parse.c, a leaf: the APIs call it, not back into this file.) */
#include "llm.h"

#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "retry.h"
#include "text.h"

char *llm_endpoint(enum agent_api api, const char *base)
{
	struct sc_sbuf b = {0};
	size_t len = strlen(base);
	while (len && base[len - 1] == '/')
		len--;
	sc_sbuf_add(&b, base, len);
	if (api == AGENT_API_OPENAI)
		sc_sbuf_adds(&b, "/chat/completions");
	else if (len >= 3 && !memcmp(base + len - 3, "/v1", 3))
		sc_sbuf_adds(&b, "/messages");
	else
		sc_sbuf_adds(&b, "/v1/messages");
	return sc_sbuf_take(&b);
}

uint64_t llm_token_count(const cJSON *usage, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(usage, key);
	if (!cJSON_IsNumber(v) || !(v->valuedouble > 0)) /* NaN too */
		return 0;
	if (v->valuedouble >= (double)LLM_MAX_TOKENS)
		return LLM_MAX_TOKENS;
	return (uint64_t)v->valuedouble;
}

static cJSON *function_schema(const char *name, const char *description, cJSON *params)
{
	cJSON *t = cJSON_CreateObject(), *f = cJSON_AddObjectToObject(t, "function");
	cJSON_AddStringToObject(t, "type", "function");
	cJSON_AddStringToObject(f, "name", name);
	cJSON_AddStringToObject(f, "description", description);
	cJSON_AddItemToObject(f, "parameters", params);
	return t;
}

static cJSON *prop(cJSON *props, const char *name, const char *type, const char *description)
{
	cJSON *p = cJSON_AddObjectToObject(props, name);
	cJSON_AddStringToObject(p, "type", type);
	cJSON_AddStringToObject(p, "description", description);
	return p;
}

static cJSON *params_object(cJSON **props, const char *const *required, size_t nreq)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "type", "object");
	*props = cJSON_AddObjectToObject(o, "properties");
	cJSON *req = cJSON_AddArrayToObject(o, "required");
	for (size_t i = 0; i < nreq; i++)
		cJSON_AddItemToArray(req, cJSON_CreateString(required[i]));
	return o;
}

cJSON *llm_tool_schemas(void)
{
	cJSON *tools = cJSON_CreateArray(), *props;
	static const char *const bash_req[] = {"command"};
	cJSON *p = params_object(&props, bash_req, 1);
	prop(props, "command", "string",
	     "The bash command to run, e.g. `python3 solve.py` or `pip install numpy`. "
	     "Each call starts a new bash process in /testbed: files persist between "
	     "calls, shell state (cd, variables) does not.");
	cJSON_AddItemToArray(
		tools, function_schema("execute_bash",
				       "Execute a bash command on the Linux machine and return its "
				       "exit code, stdout and stderr. Long outputs are shortened to "
				       "their first and last lines; long-running commands are killed "
				       "after a timeout.",
				       p));

	static const char *const ed_req[] = {"command", "path"};
	p = params_object(&props, ed_req, 2);
	cJSON *cmd = prop(props, "command", "string",
			  "One of: view, create, str_replace, insert.");
	cJSON *en = cJSON_AddArrayToObject(cmd, "enum");
	for (const char *const *c = (const char *const[]){"view", "create", "str_replace", "insert", NULL};
	     *c; c++)
		cJSON_AddItemToArray(en, cJSON_CreateString(*c));
	prop(props, "path", "string", "Absolute path of the file or directory, e.g. /testbed/solve.py.");
	prop(props, "file_text", "string", "For create: the content of the new file.");
	prop(props, "old_str", "string",
	     "For str_replace: the exact text to replace; it must occur exactly once in the file.");
	prop(props, "new_str", "string",
	     "For str_replace: the replacement text (empty to delete). For insert: the text to insert.");
	prop(props, "insert_line", "integer",
	     "For insert: new_str is inserted after this line (0 inserts at the top).");
	cJSON *vr = prop(props, "view_range", "array",
			 "For view of a file: [start, end] line numbers, 1-based and inclusive; "
			 "end -1 means to the end of the file.");
	cJSON_AddStringToObject(cJSON_AddObjectToObject(vr, "items"), "type", "integer");
	cJSON_AddItemToArray(
		tools,
		function_schema("str_replace_editor",
				"View, create and edit files. view shows a file with line numbers "
				"(like cat -n) or lists a directory two levels deep; create writes a "
				"new file (parent directories are made; an existing file is never "
				"overwritten); str_replace replaces old_str, which must occur exactly "
				"once, with new_str; insert adds new_str after line insert_line.",
				p));

	p = params_object(&props, NULL, 0);
	cJSON_AddItemToArray(
		tools, function_schema("submit",
				       "Finish the task. Call it once the final answer is in "
				       "/testbed/answer.txt and any output files are in /testbed/output.",
				       p));
	return tools;
}

static bool header_safe(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

int llm_add_header(struct llm *m, const char *prefix, const char *value)
{
	if (m->nheaders == LLM_MAX_HEADERS)
		return -1;
	struct sc_sbuf b = {0};
	sc_sbuf_adds(&b, prefix);
	sc_sbuf_adds(&b, value);
	char *line = sc_sbuf_take(&b);
	if (!line)
		return -1;
	m->headers[m->nheaders++] = line;
	return 0;
}

/* libcurl's progress callback asks this while a request is in flight. */
static bool abort_raised(void *ctx)
{
	const atomic_bool *flag = ctx;
	return flag && atomic_load(flag);
}

int llm_init(struct llm *m, const struct agent_config *cfg, const char *system_prompt,
	     bool tools, const atomic_bool *abort_flag, struct sc_err *err)
{
	*m = (struct llm){0};
	m->cfg = cfg;
	m->ops = cfg->api == AGENT_API_ANTHROPIC ? &llm_anthropic_ops : &llm_openai_ops;
	m->deadline = 1e300;
	if (cfg->extra_body && *cfg->extra_body) {
		m->extra_body = cJSON_Parse(cfg->extra_body);
		if (!cJSON_IsObject(m->extra_body)) {
			cJSON_Delete(m->extra_body);
			m->extra_body = NULL;
			return sc_fail(err, 0, "--extra-body: expected a JSON object, e.g. "
					       "'{\"chat_template_kwargs\":{\"enable_thinking\":false}}'");
		}
	}
	if (cfg->api_key && !header_safe(cfg->api_key))
		return sc_fail(err, 0, "the API key contains control characters");
	m->url = llm_endpoint(cfg->api, cfg->base_url ? cfg->base_url : m->ops->default_base);
	if (!m->url || strncmp(m->url, "http", 4))
		return sc_fail(err, 0, "--base-url: expected an http:// or https:// URL");
	m->system = cJSON_CreateString(system_prompt);
	m->messages = cJSON_CreateArray();
	m->tools = tools ? llm_tool_schemas() : NULL;
	if (sc_http_init(&m->http, err) < 0)
		return -1;
	m->abort_flag = abort_flag;
	m->http.should_abort = abort_raised;
	m->http.abort_ctx = (void *)abort_flag;
	/* no Expect: 100-continue round trip for large bodies */
	if (llm_add_header(m, "Content-Type: ", "application/json") < 0 ||
	    llm_add_header(m, "Expect:", "") < 0 || m->ops->add_auth(m, err) < 0)
		return err->msg[0] ? -1 : sc_fail(err, ENOMEM, "HTTP headers");
	return 0;
}

void llm_free(struct llm *m)
{
	for (size_t i = 0; i < m->nheaders; i++) {
		explicit_bzero(m->headers[i], strlen(m->headers[i])); /* the key */
		free(m->headers[i]);
	}
	sc_http_free(&m->http);
	free(m->url);
	cJSON_Delete(m->extra_body);
	cJSON_Delete(m->system);
	cJSON_Delete(m->messages);
	cJSON_Delete(m->tools);
	*m = (struct llm){0};
}

void llm_reply_free(struct llm_reply *r)
{
	free(r->content);
	free(r->reasoning);
	free(r->finish_reason);
	for (size_t i = 0; i < r->ncalls; i++) {
		free(r->calls[i].id);
		free(r->calls[i].name);
		free(r->calls[i].arguments);
		free(r->calls[i].args_error);
		cJSON_Delete(r->calls[i].args);
	}
	cJSON_Delete(r->message);
	*r = (struct llm_reply){0};
}

static double jitter(void)
{
	uint32_t u = 0;
	if (getrandom(&u, sizeof(u), GRND_NONBLOCK) != sizeof(u))
		u = (uint32_t)(sc_now() * 1e6);
	return (u % 1000000) / 1e6;
}

/* Sleep s seconds in short slices so an interrupt is seen; false when
 * interrupted. */
static bool nap(double s, const atomic_bool *abort_flag)
{
	double until = sc_now() + s;
	for (;;) {
		if (abort_flag && atomic_load(abort_flag))
			return false;
		double left = until - sc_now();
		if (left <= 0)
			return true;
		if (left > 0.05)
			left = 0.05;
		struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)(left * 1e9)};
		nanosleep(&ts, NULL);
	}
}

static char *request_body(struct llm *m, size_t *len)
{
	cJSON *req = m->ops->request(m);
	if (!req)
		return NULL;
	for (cJSON *e = m->extra_body ? m->extra_body->child : NULL; e; e = e->next) {
		cJSON *copy = cJSON_Duplicate(e, true);
		if (!copy)
			continue;
		if (cJSON_GetObjectItemCaseSensitive(req, e->string))
			cJSON_ReplaceItemInObjectCaseSensitive(req, e->string, copy);
		else
			cJSON_AddItemToObject(req, e->string, copy);
	}
	char *body = cJSON_PrintUnformatted(req);
	cJSON_Delete(req);
	if (body)
		*len = strlen(body);
	return body;
}

static const char *failure_name(enum sc_http_failure f)
{
	switch (f) {
	case SC_HTTP_CONNECT:
		return "cannot connect";
	case SC_HTTP_TIMEOUT:
		return "timed out";
	case SC_HTTP_TOO_LARGE:
		return "reply too large";
	case SC_HTTP_ABORTED:
		return "interrupted";
	default:
		return "connection failed";
	}
}

/* A 2xx reply: JSON with the API's shape, else a clear error. */
static int parse_reply(struct llm *m, const struct sc_http_resp *resp, struct llm_reply *r,
		       struct sc_err *err)
{
	cJSON *root = cJSON_ParseWithLength(resp->body, resp->len);
	/* the one place replies are decoded: valid UTF-8 and no key in any
	 * string from here on (the raw body was blanked already; this catches
	 * a key that JSON escapes spelled differently) */
	agent_json_scrub(root, m->cfg->api_key);
	if (!root) {
		char ex[300];
		llm_excerpt(resp->body, resp->len, ex, sizeof(ex));
		return sc_fail(err, 0, "the model server's reply is not valid JSON (HTTP %ld, %zu bytes): %s",
			       resp->status, resp->len, ex);
	}
	int rc = m->ops->parse(m, root, r, err);
	cJSON_Delete(root);
	if (rc < 0)
		llm_reply_free(r);
	return rc;
}

/* The server's wait hint: the larger of retry-after-ms and Retry-After
 * (converted to seconds, then capped), -1 when none. */
static double retry_after_of(const struct sc_http_resp *r)
{
	return agent_retry_after_hint(r->retry_after, r->retry_after_ms, time(NULL));
}

/* Not an outcome: the attempt failed in a way another attempt may mend. */
#define LLM_AGAIN (-1)

/* A 2xx reply decoded into r: LLM_REPLY, or LLM_FAILED with err. */
static int take_reply(struct llm *m, const struct sc_http_resp *resp, unsigned attempt,
		      double retry_after, struct llm_reply *r, struct sc_err *err)
{
	int rc = parse_reply(m, resp, r, err);
	if (rc < 0 && m->sink.failure)
		m->sink.failure(m->sink.arg, attempt, resp, retry_after, err ? err->msg : "");
	r->latency_s = resp->latency_s;
	r->http_status = resp->status;
	r->attempt = attempt;
	return rc < 0 ? LLM_FAILED : LLM_REPLY;
}

/* What a reply other than 2xx says, for the error message. */
static void http_error_text(const struct llm *m, const struct sc_http_resp *resp, char *last,
			    size_t size)
{
	char msg[400];
	llm_error_message(resp->body, resp->len, m->cfg->api_key, msg, sizeof(msg));
	char where[sizeof(resp->location) * 4];
	agent_text_escape_controls(resp->location, strlen(resp->location), where, sizeof(where));
	if (resp->status >= 300 && resp->status < 400)
		snprintf(last, size,
			 "HTTP %ld, a redirect to %.300s, which is not followed: "
			 "point --base-url at the server's real address",
			 resp->status, where[0] ? where : "(no Location header)");
	else
		snprintf(last, size, "HTTP %ld: %s", resp->status, msg);
}

/* Send the request once, with at most `left` seconds; the body of the
 * reply has the key blanked. */
static void send_request(struct llm *m, const char *body, size_t len, unsigned attempt,
			 double left, struct sc_http_resp *resp, struct sc_err *herr)
{
	const struct agent_config *cfg = m->cfg;
	double timeout = cfg->request_timeout_s > 0 && cfg->request_timeout_s < left
				 ? cfg->request_timeout_s
				 : left;
	if (m->sink.request)
		m->sink.request(m->sink.arg, attempt, len);
	struct sc_http_req req = {.url = m->url,
				  .headers = (const char *const *)m->headers,
				  .body = body,
				  .body_len = len,
				  .user_agent = "sandcell-agent",
				  .timeout_s = timeout,
				  .keepalive = true,
				  .compressed = true};
	sc_http_perform(&m->http, &req, resp, herr);
	/* a server may echo the key back: blank it before any of the
	 * body is parsed, quoted or logged */
	if (resp->body)
		agent_text_redact(resp->body, resp->len, cfg->api_key);
}

/* One attempt: an outcome, or LLM_AGAIN with the reason in last (which
 * holds SC_ERR_MAX bytes) and the server's wait hint in *retry_after. */
static int one_attempt(struct llm *m, const char *body, size_t len, unsigned attempt, double left,
		       struct llm_reply *r, char *last, double *retry_after, struct sc_err *err)
{
	struct sc_http_resp resp;
	struct sc_err herr = {0};
	send_request(m, body, len, attempt, left, &resp, &herr);
	*retry_after = retry_after_of(&resp);
	int out = LLM_AGAIN;
	bool retry = false;
	if (resp.failure == SC_HTTP_SETUP) {
		if (err)
			*err = herr;
		out = LLM_FAILED;
	} else if (resp.failure == SC_HTTP_ABORTED) {
		out = LLM_INTERRUPTED;
	} else if (resp.failure) {
		snprintf(last, SC_ERR_MAX, "%s: %.400s", failure_name(resp.failure), herr.msg);
		retry = resp.failure != SC_HTTP_TOO_LARGE;
	} else if (resp.status >= 200 && resp.status < 300) {
		out = take_reply(m, &resp, attempt, *retry_after, r, err);
	} else {
		http_error_text(m, &resp, last, SC_ERR_MAX);
		retry = agent_retry_status(resp.status);
	}
	if (out == LLM_AGAIN) {
		agent_text_redact(last, strlen(last), m->cfg->api_key);
		if (m->sink.failure)
			m->sink.failure(m->sink.arg, attempt, &resp, *retry_after, last);
	}
	sc_http_resp_free(&resp);
	if (out == LLM_AGAIN && !retry) {
		sc_fail(err, 0, "the model server refused the request (%s): %s", m->url, last);
		out = LLM_FAILED;
	}
	return out;
}

/* After a failed attempt: LLM_AGAIN once the pause before the next is
 * over, or the outcome when there is to be no next one. */
static int pause_before_retry(struct llm *m, unsigned attempt, double retry_after,
			      const char *last, struct sc_err *err)
{
	const struct agent_config *cfg = m->cfg;
	unsigned attempts = cfg->attempts ? cfg->attempts : 1;
	if (sc_now() >= m->deadline)
		return LLM_OUT_OF_TIME;
	if (attempt >= attempts) {
		sc_fail(err, 0, "no reply from the model server at %s after %u attempts; last: %s",
			m->url, attempts, last);
		return LLM_FAILED;
	}
	double delay = agent_retry_delay_s(attempt, cfg->retry_base_ms, retry_after, jitter());
	if (sc_now() + delay >= m->deadline) {
		nap(m->deadline - sc_now(), m->abort_flag);
		return LLM_OUT_OF_TIME;
	}
	if (!nap(delay, m->abort_flag))
		return LLM_INTERRUPTED;
	return LLM_AGAIN;
}

enum llm_outcome llm_complete(struct llm *m, struct llm_reply *r, struct sc_err *err)
{
	const atomic_bool *abort_flag = m->abort_flag;
	size_t len = 0;
	_cleanup_free_ char *body = request_body(m, &len);
	*r = (struct llm_reply){0};
	if (!body) {
		sc_fail(err, ENOMEM, "cannot build the model request");
		return LLM_FAILED;
	}
	char last[SC_ERR_MAX] = "";
	for (unsigned attempt = 1;; attempt++) {
		if (abort_flag && atomic_load(abort_flag))
			return LLM_INTERRUPTED;
		double left = m->deadline - sc_now(), retry_after;
		if (left <= 0)
			return LLM_OUT_OF_TIME;
		int out = one_attempt(m, body, len, attempt, left, r, last, &retry_after, err);
		if (out == LLM_AGAIN)
			out = pause_before_retry(m, attempt, retry_after, last, err);
		if (out != LLM_AGAIN)
			return (enum llm_outcome)out;
	}
}
