/* The Anthropic Messages API: tool_use / tool_result content blocks, the
 * system prompt beside the messages, thinking blocks as reasoning. */
#include <stdio.h>
#include <string.h>

#include "llm.h"
#include "text.h"
#include "../common/jsonget.h"

#define ANTHROPIC_VERSION "2023-06-01"
#define ANTHROPIC_DEFAULT_MAX_TOKENS 4096

static int anthropic_auth(struct llm *m, struct sc_err *err)
{
	if (llm_add_header(m, "anthropic-version: ", ANTHROPIC_VERSION) < 0)
		return sc_fail(err, ENOMEM, "HTTP headers");
	const char *key = m->cfg->api_key;
	if (key && *key && llm_add_header(m, "x-api-key: ", key) < 0)
		return sc_fail(err, ENOMEM, "HTTP headers");
	return 0;
}

/* Anthropic wants {name, description, input_schema}. */
static cJSON *anthropic_tools(const cJSON *openai_tools)
{
	cJSON *out = cJSON_CreateArray();
	for (const cJSON *t = openai_tools->child; t; t = t->next) {
		const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
		cJSON *a = cJSON_CreateObject();
		cJSON_AddItemToObject(a, "name", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(fn, "name"), true));
		cJSON_AddItemToObject(a, "description",
				      cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(fn, "description"), true));
		cJSON_AddItemToObject(a, "input_schema",
				      cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(fn, "parameters"), true));
		cJSON_AddItemToArray(out, a);
	}
	return out;
}

static cJSON *anthropic_request(struct llm *m)
{
	const struct agent_config *cfg = m->cfg;
	/* (no tools at all in vanilla mode) */
	if (m->tools && !cJSON_GetObjectItemCaseSensitive(m->tools->child, "input_schema")) {
		cJSON *t = anthropic_tools(m->tools);
		cJSON_Delete(m->tools);
		m->tools = t;
	}
	cJSON *req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "model", cfg->model);
	cJSON_AddNumberToObject(req, "max_tokens",
				cfg->max_tokens > 0 ? (double)cfg->max_tokens : ANTHROPIC_DEFAULT_MAX_TOKENS);
	if (m->system->valuestring && *m->system->valuestring) /* "": none */
		cJSON_AddItemReferenceToObject(req, "system", m->system);
	cJSON_AddItemReferenceToObject(req, "messages", m->messages);
	if (m->tools)
		cJSON_AddItemReferenceToObject(req, "tools", m->tools);
	if (cfg->temperature >= 0)
		cJSON_AddNumberToObject(req, "temperature", cfg->temperature);
	return req;
}

static int parse_tool_use(struct llm *m, cJSON *block, struct llm_tool_call *call,
			  struct sc_err *err)
{
	const char *id = sc_json_str(block, "id"), *name = sc_json_str(block, "name");
	char idbuf[48];
	if (!id || !*id) {
		snprintf(idbuf, sizeof(idbuf), "toolu_sandcell_%u", ++m->tool_ids);
		id = idbuf;
		cJSON_DeleteItemFromObjectCaseSensitive(block, "id");
		cJSON_AddStringToObject(block, "id", id);
	}
	call->id = llm_strndup_capped(id, 256);
	call->name = llm_strndup_capped(name ? name : "", 256);
	cJSON *input = cJSON_GetObjectItemCaseSensitive(block, "input");
	if (cJSON_IsObject(input)) {
		call->arguments = cJSON_PrintUnformatted(input);
		if (call->arguments && strlen(call->arguments) > LLM_MAX_TEXT) {
			_cleanup_free_ char *big = call->arguments;
			call->arguments = NULL;
			llm_set_arguments(call, big, strlen(big));
			cJSON *obj = cJSON_CreateObject();
			if (obj && !cJSON_ReplaceItemInObjectCaseSensitive(block, "input", obj))
				cJSON_Delete(obj);
		} else {
			call->args = cJSON_Duplicate(input, true);
		}
	} else {
		_cleanup_free_ char *text = cJSON_IsString(input) ? strdup(input->valuestring)
					   : (input ? cJSON_PrintUnformatted(input) : strdup(""));
		if (text)
			llm_set_arguments(call, text, strlen(text));
		/* what goes back into the history must be an object */
		cJSON *obj = call->args ? cJSON_Duplicate(call->args, true) : cJSON_CreateObject();
		if (obj && !cJSON_ReplaceItemInObjectCaseSensitive(block, "input", obj))
			cJSON_AddItemToObject(block, "input", obj); /* there was none */
	}
	if (!call->id || !call->name || !call->arguments)
		return sc_fail(err, ENOMEM, "tool call");
	return 0;
}

static int anthropic_parse(struct llm *m, const cJSON *root, struct llm_reply *r,
			   struct sc_err *err)
{
	const char *type = sc_json_str(root, "type");
	if (type && !strcmp(type, "error")) {
		_cleanup_free_ char *text = cJSON_PrintUnformatted(root);
		char msg[400];
		llm_error_message(text ? text : "", text ? strlen(text) : 0, m->cfg->api_key, msg, sizeof(msg));
		return sc_fail(err, 0, "the model server replied with an error: %s", msg);
	}
	const cJSON *content = cJSON_GetObjectItemCaseSensitive(root, "content");
	if (!cJSON_IsArray(content))
		return sc_fail(err, 0, "the model server's reply has no content array "
				       "(is %s an Anthropic Messages endpoint?)",
			       m->url);
	cJSON *blocks = cJSON_Duplicate(content, true);
	if (!blocks)
		return sc_fail(err, ENOMEM, "model reply");
	r->message = cJSON_CreateObject();
	cJSON_AddStringToObject(r->message, "role", "assistant");
	cJSON_AddItemToObject(r->message, "content", blocks);
	struct sc_sbuf text = {0}, thinking = {0};
	for (cJSON *b = blocks->child, *next; b; b = next) {
		next = b->next;
		const char *bt = sc_json_str(b, "type");
		if (!bt)
			continue;
		if (!strcmp(bt, "text") && sc_json_str(b, "text")) {
			if (text.len)
				sc_sbuf_adds(&text, "\n");
			if (text.len < LLM_MAX_TEXT)
				sc_sbuf_adds(&text, sc_json_str(b, "text"));
		} else if (!strcmp(bt, "thinking") && sc_json_str(b, "thinking")) {
			if (thinking.len < LLM_MAX_TEXT)
				sc_sbuf_adds(&thinking, sc_json_str(b, "thinking"));
		} else if (!strcmp(bt, "tool_use")) {
			if (r->ncalls == LLM_MAX_TOOL_CALLS) {
				/* not run: out of the history too (a tool_use needs its
				 * tool_result); the loop tells the model */
				r->dropped_calls++;
				cJSON_Delete(cJSON_DetachItemViaPointer(blocks, b));
				continue;
			}
			if (parse_tool_use(m, b, &r->calls[r->ncalls++], err) < 0) {
				sc_sbuf_free(&text);
				sc_sbuf_free(&thinking);
				return -1;
			}
		}
	}
	_cleanup_free_ char *t = sc_sbuf_take(&text), *th = sc_sbuf_take(&thinking);
	r->content = llm_strndup_capped(t, LLM_MAX_TEXT);
	r->reasoning = llm_strndup_capped(th, LLM_MAX_TEXT);
	r->finish_reason = llm_strndup_capped(sc_json_str(root, "stop_reason"), 64);
	if (!r->content || !r->reasoning || !r->finish_reason)
		return sc_fail(err, ENOMEM, "model reply");
	const cJSON *usage = cJSON_GetObjectItemCaseSensitive(root, "usage");
	/* each part is at most LLM_MAX_TOKENS, so the sum cannot wrap */
	uint64_t in = llm_token_count(usage, "input_tokens") +
		      llm_token_count(usage, "cache_read_input_tokens") +
		      llm_token_count(usage, "cache_creation_input_tokens");
	r->input_tokens = in < LLM_MAX_TOKENS ? in : LLM_MAX_TOKENS;
	r->output_tokens = llm_token_count(usage, "output_tokens");
	/* An assistant turn with no blocks is refused by the API; leave it out
	 * (the reminder that follows joins the previous user turn). */
	if (cJSON_GetArraySize(blocks) > 0)
		cJSON_AddItemToArray(m->messages, cJSON_Duplicate(r->message, true));
	return 0;
}

/* The content array of the last message when it is a user turn, else a new
 * user turn's. */
static cJSON *user_blocks(struct llm *m)
{
	int n = cJSON_GetArraySize(m->messages);
	cJSON *last = n ? cJSON_GetArrayItem(m->messages, n - 1) : NULL;
	const char *role = sc_json_str(last, "role");
	cJSON *content = cJSON_GetObjectItemCaseSensitive(last, "content");
	if (role && !strcmp(role, "user") && cJSON_IsArray(content))
		return content;
	cJSON *msg = cJSON_CreateObject();
	if (!msg)
		return NULL;
	cJSON_AddStringToObject(msg, "role", "user");
	content = cJSON_AddArrayToObject(msg, "content");
	cJSON_AddItemToArray(m->messages, msg);
	return content;
}

static int anthropic_add_user(struct llm *m, const char *text)
{
	cJSON *blocks = user_blocks(m), *b = cJSON_CreateObject();
	if (!blocks || !b) {
		cJSON_Delete(b);
		return -1;
	}
	cJSON_AddStringToObject(b, "type", "text");
	cJSON_AddStringToObject(b, "text", text);
	cJSON_AddItemToArray(blocks, b);
	return 0;
}

static int anthropic_add_tool_result(struct llm *m, const struct llm_tool_call *call,
				     const char *text, bool is_error)
{
	cJSON *blocks = user_blocks(m), *b = cJSON_CreateObject();
	if (!blocks || !b) {
		cJSON_Delete(b);
		return -1;
	}
	cJSON_AddStringToObject(b, "type", "tool_result");
	cJSON_AddStringToObject(b, "tool_use_id", call->id);
	cJSON_AddStringToObject(b, "content", text);
	if (is_error)
		cJSON_AddBoolToObject(b, "is_error", true);
	cJSON_AddItemToArray(blocks, b);
	return 0;
}

static int anthropic_append_note(struct llm *m, const char *text)
{
	return anthropic_add_user(m, text);
}

const struct llm_ops llm_anthropic_ops = {
	.name = "anthropic",
	.default_base = "https://api.anthropic.com",
	.base_env = "ANTHROPIC_BASE_URL",
	.key_env = "ANTHROPIC_API_KEY",
	.add_auth = anthropic_auth,
	.request = anthropic_request,
	.parse = anthropic_parse,
	.add_user = anthropic_add_user,
	.add_tool_result = anthropic_add_tool_result,
	.append_note = anthropic_append_note,
};
