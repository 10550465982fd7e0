/* OpenAI-compatible chat completions with tools: OpenAI, vLLM, SGLang,
 * llama.cpp server, Ollama, OpenRouter. */
#include <stdio.h>
#include <string.h>

#include "llm.h"
#include "text.h"
#include "../common/jsonget.h"

static int openai_auth(struct llm *m, struct sc_err *err)
{
	const char *key = m->cfg->api_key;
	if (!key || !*key)
		return 0; /* local servers usually need none */
	if (llm_add_header(m, "Authorization: Bearer ", key) < 0)
		return sc_fail(err, ENOMEM, "HTTP headers");
	return 0;
}

static cJSON *openai_request(struct llm *m)
{
	const struct agent_config *cfg = m->cfg;
	cJSON *req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "model", cfg->model);
	cJSON *msgs = cJSON_AddArrayToObject(req, "messages");
	if (m->system->valuestring && *m->system->valuestring) { /* "": no system message */
		cJSON *sys = cJSON_CreateObject();
		cJSON_AddStringToObject(sys, "role", "system");
		cJSON_AddItemReferenceToObject(sys, "content", m->system);
		cJSON_AddItemToArray(msgs, sys);
	}
	for (cJSON *e = m->messages->child; e; e = e->next)
		cJSON_AddItemReferenceToArray(msgs, e);
	if (m->tools)
		cJSON_AddItemReferenceToObject(req, "tools", m->tools);
	if (cfg->temperature >= 0)
		cJSON_AddNumberToObject(req, "temperature", cfg->temperature);
	if (cfg->max_tokens > 0)
		cJSON_AddNumberToObject(req, "max_tokens", (double)cfg->max_tokens);
	return req;
}

/* content is a string, null, or (some servers) a list of {type:text,text} parts */
static char *content_text(const cJSON *c)
{
	if (cJSON_IsString(c))
		return llm_strndup_capped(c->valuestring, LLM_MAX_TEXT);
	struct sc_sbuf b = {0};
	if (cJSON_IsArray(c))
		for (const cJSON *p = c->child; p; p = p->next) {
			const char *t = sc_json_str(p, "text");
			if (t && b.len < LLM_MAX_TEXT)
				sc_sbuf_adds(&b, t);
		}
	char *s = sc_sbuf_take(&b);
	char *clean = s ? llm_strndup_capped(s, LLM_MAX_TEXT) : NULL;
	free(s);
	return clean;
}

static int parse_call(struct llm *m, const cJSON *tc, struct llm_tool_call *call,
		      struct sc_err *err)
{
	const cJSON *fn = cJSON_GetObjectItemCaseSensitive(tc, "function");
	const char *name = sc_json_str(fn, "name");
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
	const char *id = sc_json_str(tc, "id");
	char idbuf[48];
	if (!id || !*id) {
		snprintf(idbuf, sizeof(idbuf), "call_sandcell_%u", ++m->tool_ids);
		id = idbuf;
	}
	call->id = llm_strndup_capped(id, 256);
	call->name = llm_strndup_capped(name ? name : "", 256);
	if (cJSON_IsString(args)) {
		llm_set_arguments(call, args->valuestring, strlen(args->valuestring));
		return call->arguments ? 0 : sc_fail(err, ENOMEM, "tool call");
	} else if (cJSON_IsObject(args)) { /* some servers send the object itself */
		_cleanup_free_ char *text = cJSON_PrintUnformatted(args);
		if (!text)
			return sc_fail(err, ENOMEM, "tool call");
		llm_set_arguments(call, text, strlen(text));
		return call->arguments ? 0 : sc_fail(err, ENOMEM, "tool call");
	} else {
		call->arguments = strdup(args && !cJSON_IsNull(args) ? "<not a string>" : "");
	}
	if (!call->id || !call->name || !call->arguments)
		return sc_fail(err, ENOMEM, "tool call");
	if (!strcmp(call->arguments, "<not a string>"))
		call->args_error = strdup("the arguments are neither a JSON string nor an object");
	else
		llm_parse_arguments(call);
	return 0;
}

/* The assistant message as it goes back into the history. */
static cJSON *history_message(const struct llm_reply *r)
{
	cJSON *msg = cJSON_CreateObject();
	cJSON_AddStringToObject(msg, "role", "assistant");
	cJSON_AddStringToObject(msg, "content", r->content);
	if (r->reasoning[0])
		cJSON_AddStringToObject(msg, "reasoning_content", r->reasoning);
	if (r->ncalls) {
		cJSON *tcs = cJSON_AddArrayToObject(msg, "tool_calls");
		for (size_t i = 0; i < r->ncalls; i++) {
			cJSON *tc = cJSON_CreateObject(), *fn;
			cJSON_AddStringToObject(tc, "id", r->calls[i].id);
			cJSON_AddStringToObject(tc, "type", "function");
			fn = cJSON_AddObjectToObject(tc, "function");
			cJSON_AddStringToObject(fn, "name", r->calls[i].name);
			cJSON_AddStringToObject(fn, "arguments", r->calls[i].arguments);
			cJSON_AddItemToArray(tcs, tc);
		}
	}
	return msg;
}

static int openai_parse(struct llm *m, const cJSON *root, struct llm_reply *r, struct sc_err *err)
{
	const cJSON *choices = cJSON_GetObjectItemCaseSensitive(root, "choices");
	const cJSON *choice = cJSON_IsArray(choices) ? choices->child : NULL;
	const cJSON *msg = cJSON_GetObjectItemCaseSensitive(choice, "message");
	if (!cJSON_IsObject(msg)) {
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "error");
		if (e) {
			_cleanup_free_ char *text = cJSON_PrintUnformatted(e);
			char msgtext[400];
			llm_error_message(text ? text : "", text ? strlen(text) : 0, m->cfg->api_key, msgtext, sizeof(msgtext));
			return sc_fail(err, 0, "the model server replied with an error: %s", msgtext);
		}
		return sc_fail(err, 0, "the model server's reply has no choices[0].message "
				       "(is %s an OpenAI-compatible chat completions endpoint?)",
			       m->url);
	}
	r->content = content_text(cJSON_GetObjectItemCaseSensitive(msg, "content"));
	const char *reasoning = sc_json_str(msg, "reasoning_content");
	if (!reasoning)
		reasoning = sc_json_str(msg, "reasoning"); /* OpenRouter, Ollama */
	r->reasoning = llm_strndup_capped(reasoning, LLM_MAX_TEXT);
	const char *fr = sc_json_str(choice, "finish_reason");
	r->finish_reason = llm_strndup_capped(fr, 64);
	if (!r->content || !r->reasoning || !r->finish_reason)
		return sc_fail(err, ENOMEM, "model reply");
	const cJSON *tcs = cJSON_GetObjectItemCaseSensitive(msg, "tool_calls");
	for (const cJSON *tc = cJSON_IsArray(tcs) ? tcs->child : NULL; tc; tc = tc->next) {
		if (r->ncalls == LLM_MAX_TOOL_CALLS) { /* run the first ones, say so */
			r->dropped_calls++;
			continue;
		}
		if (parse_call(m, tc, &r->calls[r->ncalls++], err) < 0)
			return -1;
	}
	const cJSON *usage = cJSON_GetObjectItemCaseSensitive(root, "usage");
	r->input_tokens = llm_token_count(usage, "prompt_tokens");
	r->output_tokens = llm_token_count(usage, "completion_tokens");
	r->message = history_message(r);
	if (!r->message)
		return sc_fail(err, ENOMEM, "model reply");
	/* the reply joins the history (which owns its own copy) */
	cJSON_AddItemToArray(m->messages, cJSON_Duplicate(r->message, true));
	return 0;
}

static int add_text_message(struct llm *m, const char *role, const char *text)
{
	cJSON *msg = cJSON_CreateObject();
	if (!msg)
		return -1;
	cJSON_AddStringToObject(msg, "role", role);
	cJSON_AddStringToObject(msg, "content", text);
	cJSON_AddItemToArray(m->messages, msg);
	return 0;
}

static int openai_add_user(struct llm *m, const char *text)
{
	return add_text_message(m, "user", text);
}

static int openai_add_tool_result(struct llm *m, const struct llm_tool_call *call,
				  const char *text, bool is_error)
{
	cJSON *msg = cJSON_CreateObject();
	if (!msg)
		return -1;
	cJSON_AddStringToObject(msg, "role", "tool");
	cJSON_AddStringToObject(msg, "tool_call_id", call->id);
	cJSON_AddStringToObject(msg, "content", text);
	cJSON_AddItemToArray(m->messages, msg);
	return 0;
}

static int openai_append_note(struct llm *m, const char *text)
{
	int n = cJSON_GetArraySize(m->messages);
	cJSON *last = n ? cJSON_GetArrayItem(m->messages, n - 1) : NULL;
	const char *role = sc_json_str(last, "role");
	cJSON *content = cJSON_GetObjectItemCaseSensitive(last, "content");
	if (!role || !strcmp(role, "assistant") || !cJSON_IsString(content))
		return add_text_message(m, "user", text);
	struct sc_sbuf b = {0};
	sc_sbuf_adds(&b, content->valuestring);
	sc_sbuf_adds(&b, "\n");
	sc_sbuf_adds(&b, text);
	_cleanup_free_ char *s = sc_sbuf_take(&b);
	if (!s)
		return -1;
	cJSON_ReplaceItemInObjectCaseSensitive(last, "content", cJSON_CreateString(s));
	return 0;
}

const struct llm_ops llm_openai_ops = {
	.name = "openai",
	.default_base = "https://api.openai.com/v1",
	.base_env = "OPENAI_BASE_URL",
	.key_env = "OPENAI_API_KEY",
	.add_auth = openai_auth,
	.request = openai_request,
	.parse = openai_parse,
	.add_user = openai_add_user,
	.add_tool_result = openai_add_tool_result,
	.append_note = openai_append_note,
};
