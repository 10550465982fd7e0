/* libFuzzer target for model replies: the input is a reply body; the first
 * byte picks the API (even: OpenAI chat completions, odd: Anthropic
 * Messages). Parsing either fills a bounded reply or fails with one line;
 * the error-message extractor is run on the same bytes. */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/llm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	const struct llm_ops *ops = data[0] & 1 ? &llm_anthropic_ops : &llm_openai_ops;
	const char *body = (const char *)data + 1;
	size_t len = size - 1;
	char msg[400];
	llm_error_message(body, len, "sk-fuzz-secret", msg, sizeof(msg));
	if (strlen(msg) >= sizeof(msg) || strchr(msg, '\n'))
		abort();

	struct agent_config cfg = {0};
	struct llm m = {.ops = ops, .cfg = &cfg, .url = "http://fuzz", .messages = cJSON_CreateArray()};
	cJSON *root = cJSON_ParseWithLength(body, len);
	if (root && m.messages) {
		struct llm_reply r = {0};
		struct sc_err err = {0};
		if (ops->parse(&m, root, &r, &err) == 0) {
			if (!r.content || !r.reasoning || !r.finish_reason || r.ncalls > LLM_MAX_TOOL_CALLS ||
			    r.input_tokens > LLM_MAX_TOKENS || r.output_tokens > LLM_MAX_TOKENS ||
			    strlen(r.content) > LLM_MAX_TEXT * 4)
				abort();
			for (size_t i = 0; i < r.ncalls; i++)
				if (!r.calls[i].id || !r.calls[i].name || !r.calls[i].arguments ||
				    (!r.calls[i].args && !r.calls[i].args_error))
					abort();
			/* the history the next request would send */
			char *h = cJSON_PrintUnformatted(m.messages);
			free(h);
		} else if (!err.msg[0]) {
			abort();
		}
		llm_reply_free(&r);
	}
	cJSON_Delete(root);
	cJSON_Delete(m.messages);
	return 0;
}
