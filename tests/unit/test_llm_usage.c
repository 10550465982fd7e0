/* Hostile model replies. Token counts in model replies are hostile numbers: 1e300, infinity,
 * negative, fractional. Each reply's count must come out as a bounded
 * integer (no undefined float-to-integer conversion, no wrapping sum). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "agent/llm.h"

/* Parse json as ops would; the history the reply joined, printed, into
 * *history when wanted. */
static void parse_history(const struct llm_ops *ops, const char *json, struct llm_reply *r,
			  char **history)
{
	static struct agent_config cfg;
	struct llm m = {.ops = ops, .cfg = &cfg, .url = "http://x", .messages = cJSON_CreateArray()};
	cJSON *root = cJSON_Parse(json);
	assert_non_null(root);
	struct sc_err err = {0};
	*r = (struct llm_reply){0};
	assert_int_equal(ops->parse(&m, root, r, &err), 0);
	cJSON_Delete(root);
	if (history)
		*history = cJSON_PrintUnformatted(m.messages);
	cJSON_Delete(m.messages);
}

static void parse(const struct llm_ops *ops, const char *json, struct llm_reply *r)
{
	parse_history(ops, json, r, NULL);
}

#define OPENAI(usage)                                                                              \
	"{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"hi\"},"                  \
	"\"finish_reason\":\"stop\"}],\"usage\":" usage "}"
#define ANTHROPIC(usage)                                                                           \
	"{\"type\":\"message\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}],"                 \
	"\"stop_reason\":\"end_turn\",\"usage\":" usage "}"

static void test_openai_huge(void **state)
{
	struct llm_reply r;
	parse(&llm_openai_ops, OPENAI("{\"prompt_tokens\":1e300,\"completion_tokens\":1e19}"), &r);
	assert_true(r.input_tokens == LLM_MAX_TOKENS);
	assert_true(r.output_tokens == LLM_MAX_TOKENS);
	llm_reply_free(&r);
	parse(&llm_openai_ops, OPENAI("{\"prompt_tokens\":1e999,\"completion_tokens\":-5}"), &r);
	assert_true(r.input_tokens == LLM_MAX_TOKENS); /* cJSON reads 1e999 as infinity */
	assert_true(r.output_tokens == 0);
	llm_reply_free(&r);
	parse(&llm_openai_ops, OPENAI("{\"prompt_tokens\":12.9,\"completion_tokens\":\"7\"}"), &r);
	assert_true(r.input_tokens == 12);
	assert_true(r.output_tokens == 0);
	llm_reply_free(&r);
}

static void test_anthropic_sum(void **state)
{
	struct llm_reply r;
	/* each part near the 64-bit limit: the sum must not wrap */
	parse(&llm_anthropic_ops,
	      ANTHROPIC("{\"input_tokens\":1.8e19,\"cache_read_input_tokens\":1.8e19,"
			"\"cache_creation_input_tokens\":1e300,\"output_tokens\":1e300}"),
	      &r);
	assert_true(r.input_tokens == LLM_MAX_TOKENS);
	assert_true(r.output_tokens == LLM_MAX_TOKENS);
	llm_reply_free(&r);
	parse(&llm_anthropic_ops,
	      ANTHROPIC("{\"input_tokens\":7,\"cache_read_input_tokens\":100,"
			"\"cache_creation_input_tokens\":3,\"output_tokens\":2}"),
	      &r);
	assert_true(r.input_tokens == 110);
	assert_true(r.output_tokens == 2);
	llm_reply_free(&r);
}

/* A tool_use block without "input" (found by fuzz_llm: the object made for
 * it leaked): the call gets empty arguments and the history an object. */
static void test_anthropic_tool_use_without_input(void **state)
{
	struct llm_reply r;
	char *h = NULL;
	parse_history(&llm_anthropic_ops,
		      "{\"type\":\"message\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t1\","
		      "\"name\":\"submit\"}],\"stop_reason\":\"tool_use\"}",
		      &r, &h);
	assert_int_equal(r.ncalls, 1);
	assert_non_null(r.calls[0].args);
	assert_non_null(h);
	assert_non_null(strstr(h, "\"id\":\"t1\",\"name\":\"submit\",\"input\":{}"));
	free(h);
	llm_reply_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_openai_huge),
		cmocka_unit_test(test_anthropic_sum),
		cmocka_unit_test(test_anthropic_tool_use_without_input),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
