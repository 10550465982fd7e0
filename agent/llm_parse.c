/* Small parsing helpers for the API modules (openai.c, anthropic.c): capped
 * copies, tool-call arguments, the server's error message. A leaf file. */
#include <string.h>

#include "llm.h"
#include "text.h"

char *llm_strndup_capped(const char *s, size_t max)
{
	if (!s)
		s = "";
	size_t len = strnlen(s, max + 1);
	if (len > max)
		len = agent_text_utf8_prefix(s, len, max);
	return agent_text_sanitize(s, len, NULL);
}

void llm_parse_arguments(struct llm_tool_call *call)
{
	const char *a = call->arguments ? call->arguments : "";
	const char *p = a;
	while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
		p++;
	if (!*p) { /* servers send "" for a call without arguments */
		call->args = cJSON_CreateObject();
		return;
	}
	cJSON *v = cJSON_ParseWithLength(a, strlen(a));
	if (!v) {
		call->args_error = strdup("the arguments are not valid JSON");
		return;
	}
	if (!cJSON_IsObject(v)) {
		cJSON_Delete(v);
		call->args_error = strdup("the arguments are not a JSON object");
		return;
	}
	call->args = v;
}

void llm_set_arguments(struct llm_tool_call *call, const char *s, size_t len)
{
	if (len <= LLM_MAX_TEXT) {
		call->arguments = llm_strndup_capped(s, LLM_MAX_TEXT);
		if (call->arguments)
			llm_parse_arguments(call);
		return;
	}
	/* what goes back into the history: valid JSON, not the cut text */
	call->arguments = strdup("{}");
	if (asprintf(&call->args_error,
		     "the arguments are %zu bytes, more than the %u MiB a tool call may carry, "
		     "and were not read; write large content in parts (several create/insert "
		     "calls, or commands that append to a file)",
		     len, LLM_MAX_TEXT >> 20) < 0)
		call->args_error = NULL;
}

void llm_excerpt(const char *body, size_t len, char *out, size_t outsize)
{
	size_t n = agent_text_utf8_prefix(body, len, 200);
	_cleanup_free_ char *clean = agent_text_sanitize(body, n, NULL);
	snprintf(out, outsize, "'%s'%s", clean ? clean : "", n < len ? "..." : "");
	for (char *p = out; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
}

void llm_error_message(const char *body, size_t len, const char *secret, char *out,
		       size_t outsize)
{
	cJSON *root = cJSON_ParseWithLength(body, len);
	const char *msg = NULL;
	if (root) {
		cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "error");
		cJSON *m = cJSON_IsObject(e) ? cJSON_GetObjectItemCaseSensitive(e, "message") : NULL;
		if (cJSON_IsString(m))
			msg = m->valuestring;
		else if (cJSON_IsString(e))
			msg = e->valuestring;
		else if (cJSON_IsString(m = cJSON_GetObjectItemCaseSensitive(root, "message")))
			msg = m->valuestring;
		else if (cJSON_IsString(m = cJSON_GetObjectItemCaseSensitive(root, "detail")))
			msg = m->valuestring;
	}
	if (msg) {
		/* blanked before the cut: a cut key would leave its head */
		_cleanup_free_ char *whole = agent_text_sanitize(msg, strlen(msg), NULL);
		if (whole)
			agent_text_redact(whole, strlen(whole), secret);
		_cleanup_free_ char *clean = llm_strndup_capped(whole ? whole : "", 300);
		snprintf(out, outsize, "%s", clean ? clean : "");
		for (char *p = out; *p; p++)
			if (*p == '\n' || *p == '\r')
				*p = ' ';
	} else {
		llm_excerpt(body, len, out, outsize);
	}
	cJSON_Delete(root);
}
