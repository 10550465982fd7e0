/* sandcell batch export: training data from finished attempts. Each
 * attempt's conversation.json (the wire conversation of its API) becomes
 * OpenAI chat messages with tool calls. */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "../agent/text.h"
#include "batch_priv.h"
#include "../common/jsonget.h"

#define CONVERSATION_MAX (256U << 20)

static cJSON *message(const char *role, const char *content)
{
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "role", role);
	cJSON_AddStringToObject(m, "content", content ? content : "");
	return m;
}

/* An OpenAI message keeps only the fields fine-tuning accepts. */
static cJSON *openai_message(const cJSON *m)
{
	static const char *const keep[] = {"role", "content", "tool_calls", "tool_call_id", "name"};
	cJSON *o = cJSON_CreateObject();
	for (size_t i = 0; i < SC_ARRAY_LEN(keep); i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, keep[i]);
		if (v)
			cJSON_AddItemToObject(o, keep[i], cJSON_Duplicate(v, true));
	}
	return o;
}

/* The text of an Anthropic content value (a string or text blocks). */
static void add_text(cJSON *c, char **acc)
{
	const char *t = cJSON_IsString(c) ? c->valuestring : sc_json_str(c, "text");
	if (!t)
		return;
	char *joined = NULL;
	if (asprintf(&joined, "%s%s%s", *acc ? *acc : "", *acc && **acc ? "\n" : "", t) >= 0) {
		free(*acc);
		*acc = joined;
	}
}

static void anthropic_message(cJSON *out, const cJSON *m)
{
	const char *role = sc_json_str(m, "role");
	const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
	if (!role)
		return;
	if (cJSON_IsString(content)) {
		cJSON_AddItemToArray(out, message(role, content->valuestring));
		return;
	}
	char *text = NULL;
	cJSON *calls = NULL;
	for (const cJSON *b = content ? content->child : NULL; b; b = b->next) {
		const char *type = sc_json_str(b, "type");
		if (!type)
			continue;
		if (!strcmp(type, "text")) {
			add_text((cJSON *)b, &text);
		} else if (!strcmp(type, "tool_use")) {
			if (!calls)
				calls = cJSON_CreateArray();
			cJSON *tc = cJSON_CreateObject(), *fn;
			cJSON_AddStringToObject(tc, "id", sc_json_str(b, "id") ? sc_json_str(b, "id") : "");
			cJSON_AddStringToObject(tc, "type", "function");
			fn = cJSON_AddObjectToObject(tc, "function");
			cJSON_AddStringToObject(fn, "name", sc_json_str(b, "name") ? sc_json_str(b, "name") : "");
			char *args = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(b, "input"));
			cJSON_AddStringToObject(fn, "arguments", args ? args : "{}");
			free(args);
			cJSON_AddItemToArray(calls, tc);
		} else if (!strcmp(type, "tool_result")) {
			char *res = NULL;
			const cJSON *c = cJSON_GetObjectItemCaseSensitive(b, "content");
			if (cJSON_IsArray(c)) {
				for (const cJSON *x = c->child; x; x = x->next)
					add_text((cJSON *)x, &res);
			} else if (c) {
				add_text((cJSON *)c, &res);
			}
			cJSON *tm = message("tool", res);
			cJSON_AddStringToObject(tm, "tool_call_id",
						sc_json_str(b, "tool_use_id") ? sc_json_str(b, "tool_use_id") : "");
			cJSON_AddItemToArray(out, tm);
			free(res);
		}
		/* thinking blocks are not part of the chat format */
	}
	if (!strcmp(role, "assistant")) {
		cJSON *a = message("assistant", text);
		if (calls)
			cJSON_AddItemToObject(a, "tool_calls", calls);
		cJSON_AddItemToArray(out, a);
	} else if (text) {
		cJSON_AddItemToArray(out, message(role, text));
		cJSON_Delete(calls);
	} else {
		cJSON_Delete(calls);
	}
	free(text);
}

static cJSON *openai_tools(const cJSON *tools, bool anthropic)
{
	if (!cJSON_IsArray(tools))
		return cJSON_CreateArray();
	if (!anthropic)
		return cJSON_Duplicate(tools, true);
	cJSON *out = cJSON_CreateArray();
	for (const cJSON *t = tools->child; t; t = t->next) {
		cJSON *o = cJSON_CreateObject(), *fn;
		cJSON_AddStringToObject(o, "type", "function");
		fn = cJSON_AddObjectToObject(o, "function");
		cJSON_AddStringToObject(fn, "name", sc_json_str(t, "name") ? sc_json_str(t, "name") : "");
		cJSON_AddStringToObject(fn, "description",
					sc_json_str(t, "description") ? sc_json_str(t, "description") : "");
		const cJSON *schema = cJSON_GetObjectItemCaseSensitive(t, "input_schema");
		cJSON_AddItemToObject(fn, "parameters", schema ? cJSON_Duplicate(schema, true)
							       : cJSON_CreateObject());
		cJSON_AddItemToArray(out, o);
	}
	return out;
}

/* Every tool call that stays needs its tool message: a call that was never
 * answered (after a submit in the same turn, or cut off by the episode's
 * deadline) is dropped from its turn, and a tool message that answers no
 * call of the turn before it goes too. */
static void drop_unanswered(cJSON *out)
{
	for (cJSON *m = out->child; m; m = m->next) {
		const char *role = sc_json_str(m, "role");
		cJSON *calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
		if (!role || strcmp(role, "assistant"))
			continue;
		/* the tool messages that follow this turn */
		cJSON *first_tool = m->next, *after = m->next;
		while (after && sc_json_str(after, "role") && !strcmp(sc_json_str(after, "role"), "tool"))
			after = after->next;
		for (cJSON *c = cJSON_IsArray(calls) ? calls->child : NULL, *next; c; c = next) {
			next = c->next;
			const char *id = sc_json_str(c, "id");
			bool answered = false;
			for (cJSON *t = first_tool; id && t != after && !answered; t = t->next)
				answered = sc_json_str(t, "tool_call_id") && !strcmp(sc_json_str(t, "tool_call_id"), id);
			if (!answered)
				cJSON_Delete(cJSON_DetachItemViaPointer(calls, c));
		}
		if (calls && cJSON_GetArraySize(calls) == 0)
			cJSON_DeleteItemFromObjectCaseSensitive(m, "tool_calls");
		calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
		for (cJSON *t = first_tool, *next; t != after; t = next) {
			next = t->next;
			const char *tid = sc_json_str(t, "tool_call_id");
			bool known = false;
			for (cJSON *c = calls ? calls->child : NULL; tid && c && !known; c = c->next)
				known = sc_json_str(c, "id") && !strcmp(sc_json_str(c, "id"), tid);
			if (!known)
				cJSON_Delete(cJSON_DetachItemViaPointer(out, t));
		}
	}
}

cJSON *batch_conversation_openai(const cJSON *conv, cJSON **tools_out)
{
	const char *api = sc_json_str(conv, "api");
	const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(conv, "messages");
	if (!api || !cJSON_IsArray(msgs))
		return NULL;
	bool anthropic = !strcmp(api, "anthropic");
	cJSON *out = cJSON_CreateArray();
	const char *system = sc_json_str(conv, "system");
	if (system)
		cJSON_AddItemToArray(out, message("system", system));
	for (const cJSON *m = msgs->child; m; m = m->next) {
		if (anthropic)
			anthropic_message(out, m);
		else
			cJSON_AddItemToArray(out, openai_message(m));
	}
	drop_unanswered(out);
	if (tools_out)
		*tools_out = openai_tools(cJSON_GetObjectItemCaseSensitive(conv, "tools"), anthropic);
	return out;
}

cJSON *batch_load_conversation(const struct batch_record *r, size_t max)
{
	char path[8400];
	if (!r->dir || !r->run || strstr(r->dir, "..") || r->dir[0] == '/' ||
	    sc_path(path, sizeof(path), "%s/%s/conversation.json", r->run, r->dir) < 0)
		return NULL;
	_cleanup_free_ char *buf = NULL;
	size_t n = 0;
	if (sc_read_small_alloc(AT_FDCWD, path, SC_READ_NOFOLLOW | SC_READ_REGULAR, max,
				&buf, &n, NULL) < 0)
		return NULL;
	return cJSON_ParseWithLength(buf, n);
}

static void copy_field(cJSON *dst, const cJSON *src, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(src, k);
	cJSON_AddItemToObject(dst, k, v ? cJSON_Duplicate(v, true) : cJSON_CreateNull());
}

static cJSON *rl_line(const struct batch_record *r, cJSON *messages, cJSON *tools)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", r->id);
	cJSON_AddNumberToObject(o, "repeat", r->repeat);
	cJSON_AddStringToObject(o, "data_source", "sandcell");
	/* the prompt: system and the first user message */
	cJSON *prompt = cJSON_AddArrayToObject(o, "prompt");
	int k = 0;
	for (cJSON *m = messages->child; m && k < 2; m = m->next, k++) {
		const char *role = sc_json_str(m, "role");
		if (!role || (strcmp(role, "system") && strcmp(role, "user")))
			break;
		cJSON_AddItemToArray(prompt, cJSON_Duplicate(m, true));
		if (!strcmp(role, "user"))
			break;
	}
	cJSON_AddItemToObject(o, "messages", messages);
	cJSON_AddItemToObject(o, "tools", tools);
	cJSON_AddNumberToObject(o, "reward", r->scored ? r->score : 0);
	cJSON *rm = cJSON_AddObjectToObject(o, "reward_model");
	cJSON_AddStringToObject(rm, "style", "rule");
	const cJSON *exp = cJSON_GetObjectItemCaseSensitive(r->json, "expected");
	cJSON_AddItemToObject(rm, "ground_truth", exp ? cJSON_Duplicate(exp, true) : cJSON_CreateNull());
	cJSON *info = cJSON_AddObjectToObject(o, "extra_info");
	static const char *const fields[] = {"status", "answer", "score", "scorer", "steps",
					     "input_tokens", "output_tokens", "wall_s", "mode",
					     "metadata"};
	for (size_t i = 0; i < SC_ARRAY_LEN(fields); i++)
		copy_field(info, r->json, fields[i]);
	return o;
}

#define PATCH_MAX (16U << 20)

/* The model a run directory's batch.json names, or "sandcell". */
static char *run_model(const char *run)
{
	char path[SC_PATH_BUF];
	_cleanup_free_ char *buf = NULL;
	size_t n = 0;
	cJSON *j = NULL;
	if (run && sc_path(path, sizeof(path), "%s/batch.json", run) == 0 &&
	    sc_read_small_alloc(AT_FDCWD, path, SC_READ_NOFOLLOW | SC_READ_REGULAR, 1U << 20, &buf,
				&n, NULL) == 0)
		j = cJSON_ParseWithLength(buf, n);
	const char *m = sc_json_str(j, "model");
	char *out = strdup(m && *m ? m : "sandcell");
	cJSON_Delete(j);
	return out;
}

/* A SWE attempt's line; NULL when it left no patch.diff. */
static cJSON *prediction(const struct batch_record *r)
{
	char path[8400];
	if (!r->dir || !r->run || strstr(r->dir, "..") || r->dir[0] == '/' ||
	    sc_path(path, sizeof(path), "%s/%s/patch.diff", r->run, r->dir) < 0)
		return NULL;
	_cleanup_free_ char *patch = NULL;
	size_t n = 0;
	if (sc_read_small_alloc(AT_FDCWD, path, SC_READ_NOFOLLOW | SC_READ_REGULAR, PATCH_MAX, &patch,
				&n, NULL) < 0)
		return NULL;
	_cleanup_free_ char *model = run_model(r->run);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "instance_id", r->id);
	cJSON_AddStringToObject(o, "model_name_or_path", model ? model : "sandcell");
	cJSON_AddStringToObject(o, "model_patch", patch);
	cJSON_AddNumberToObject(o, "repeat", r->repeat);
	return o;
}

/* An sft or rl line of one attempt; NULL when its conversation is
 * missing or too short. */
static cJSON *conversation_line(const struct batch_record *r, enum batch_export_format fmt)
{
	cJSON *conv = batch_load_conversation(r, CONVERSATION_MAX);
	cJSON *tools = NULL;
	cJSON *msgs = conv ? batch_conversation_openai(conv, &tools) : NULL;
	cJSON_Delete(conv);
	if (!msgs || cJSON_GetArraySize(msgs) < 2) {
		cJSON_Delete(msgs);
		cJSON_Delete(tools);
		return NULL;
	}
	if (fmt == BATCH_EXPORT_RL)
		return rl_line(r, msgs, tools);
	cJSON *line = cJSON_CreateObject();
	cJSON_AddItemToObject(line, "messages", msgs);
	cJSON_AddItemToObject(line, "tools", tools);
	return line;
}

long batch_export(const struct batch_records *rs, enum batch_export_format fmt, FILE *f,
		  size_t *skipped, struct sc_err *err)
{
	long lines = 0;
	*skipped = 0;
	for (size_t i = 0; i < rs->n; i++) {
		const struct batch_record *r = &rs->v[i];
		if (fmt == BATCH_EXPORT_SFT && !(r->scored && r->score >= 1.0 - 1e-9))
			continue;
		cJSON *line = fmt == BATCH_EXPORT_PREDICTIONS ? prediction(r) : conversation_line(r, fmt);
		if (!line) {
			(*skipped)++;
			continue;
		}
		agent_json_scrub(line, NULL); /* valid UTF-8, whatever the files held */
		char *text = cJSON_PrintUnformatted(line);
		cJSON_Delete(line);
		if (!text)
			return sc_fail(err, ENOMEM, "export");
		int ok = fprintf(f, "%s\n", text);
		free(text);
		if (ok < 0)
			return sc_fail(err, errno, "cannot write the export");
		lines++;
	}
	if (fflush(f) != 0)
		return sc_fail(err, errno, "cannot write the export");
	return lines;
}
