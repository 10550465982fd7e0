/* Unit tests for the agent's pure logic: observation truncation, UTF-8
 * sanitising, the editor's text operations, Retry-After and backoff, the
 * endpoint URLs, parsing of both APIs' replies, and that an episode obeys
 * the caller's cancel flag and sends its messages to the caller's sink. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/edit.h"
#include "agent/llm.h"
#include "agent/retry.h"
#include "agent/text.h"
#include "agent/tools.h"

static char *numbered_lines(size_t n)
{
	struct sc_sbuf b = {0};
	for (size_t i = 1; i <= n; i++)
		sc_sbuf_printf(&b, "%zu\n", i);
	return sc_sbuf_take(&b);
}

static void test_truncate_lines(void **state)
{
	char *in = numbered_lines(500);
	char *out = agent_text_truncate_lines(in, strlen(in), 80, 40, 40);
	assert_non_null(strstr(out, "1\n2\n"));
	assert_non_null(strstr(out, "\n40\n[... 420 lines cut"));
	assert_non_null(strstr(out, "lines ...]\n461\n"));
	assert_null(strstr(out, "\n41\n"));
	assert_null(strstr(out, "\n460\n"));
	assert_int_equal(agent_edit_line_count(out, strlen(out)), 81);
	free(in);
	free(out);

	/* exactly 80 lines: untouched */
	in = numbered_lines(80);
	out = agent_text_truncate_lines(in, strlen(in), 80, 40, 40);
	assert_string_equal(in, out);
	free(in);
	free(out);

	/* a last line without a newline counts as a line */
	in = numbered_lines(81);
	in[strlen(in) - 1] = '\0';
	out = agent_text_truncate_lines(in, strlen(in), 80, 40, 40);
	assert_non_null(strstr(out, "[... 1 lines cut"));
	assert_non_null(strstr(out, "\n81"));
	assert_int_equal(out[strlen(out) - 1], '1');
	free(in);
	free(out);
}

static void test_sanitize(void **state)
{
	size_t len;
	char in[] = "ok\0bin\xff\xfe caf\xc3\xa9 \xe2\x82"; /* NUL, bad bytes, é, cut € */
	char *out = agent_text_sanitize(in, sizeof(in) - 1, &len);
	assert_int_equal(strlen(out), len);
	assert_string_equal(out, "ok\xEF\xBF\xBD" "bin\xEF\xBF\xBD\xEF\xBF\xBD caf\xc3\xa9 "
				 "\xEF\xBF\xBD\xEF\xBF\xBD");
	free(out);
	/* overlong encodings and surrogates are invalid too */
	out = agent_text_sanitize("\xc0\xaf\xed\xa0\x80", 5, &len);
	assert_null(strchr(out, '\xc0'));
	assert_null(strchr(out, '\xed'));
	free(out);
}

static void test_cap_middle(void **state)
{
	char buf[1000];
	memset(buf, 'a', sizeof(buf));
	memcpy(buf + 990, "TAILTAIL!!", 10);
	char *out = agent_text_cap_middle(buf, sizeof(buf), 100);
	assert_non_null(strstr(out, "[... 900 characters cut ...]"));
	assert_non_null(strstr(out, "TAILTAIL!!"));
	free(out);
	/* never splits a UTF-8 sequence */
	const char *e = "\xc3\xa9\xc3\xa9\xc3\xa9";
	assert_int_equal(agent_text_utf8_prefix(e, 6, 3), 2);
	assert_int_equal(agent_text_utf8_prefix(e, 6, 4), 4);
	assert_int_equal(agent_text_utf8_prefix(e, 6, 10), 6);
	/* a sequence cut off at the end is dropped, a whole one kept */
	assert_int_equal(agent_text_utf8_whole(e, 6), 6);
	assert_int_equal(agent_text_utf8_whole(e, 5), 4);
	assert_int_equal(agent_text_utf8_whole("a\xe2\x82", 3), 1);
	assert_int_equal(agent_text_utf8_whole("a\xf0\x9f\x98\x80", 5), 5);
	assert_int_equal(agent_text_utf8_whole("a\x80\x80", 3), 3);
	assert_int_equal(agent_text_utf8_whole("", 0), 0);
}

static void test_redact(void **state)
{
	char s[] = "key sk-abcdefgh1234 and again sk-abcdefgh1234.";
	assert_int_equal(agent_text_redact(s, strlen(s), "sk-abcdefgh1234"), 2);
	assert_null(strstr(s, "sk-abcdefgh1234"));
	assert_non_null(strstr(s, "***************"));
	char t[] = "short keys are left alone: abc";
	assert_int_equal(agent_text_redact(t, strlen(t), "abc"), 0);
	assert_int_equal(agent_text_redact(t, strlen(t), NULL), 0);
}

static void test_edit_count_replace(void **state)
{
	const char *s = "a = 1\nb = 2\na = 1\n";
	assert_int_equal(agent_edit_count(s, strlen(s), "a = 1", 5), 2);
	assert_int_equal(agent_edit_count(s, strlen(s), "b = 2", 5), 1);
	assert_int_equal(agent_edit_count(s, strlen(s), "zzz", 3), 0);
	assert_int_equal(agent_edit_count("aaaa", 4, "aa", 2), 2); /* non-overlapping */
	size_t len, line;
	char *out = agent_edit_replace(s, strlen(s), "b = 2", 5, "B = 22\nC = 3", 12, &len, &line);
	assert_string_equal(out, "a = 1\nB = 22\nC = 3\na = 1\n");
	assert_int_equal(len, strlen(out));
	assert_int_equal(line, 2);
	free(out);
	out = agent_edit_replace(s, strlen(s), "b = 2\n", 6, "", 0, &len, &line);
	assert_string_equal(out, "a = 1\na = 1\n");
	free(out);
}

static void test_edit_insert(void **state)
{
	size_t len;
	char *out = agent_edit_insert("l1\nl2\n", 6, 0, "top", 3, &len);
	assert_string_equal(out, "top\nl1\nl2\n");
	free(out);
	out = agent_edit_insert("l1\nl2\n", 6, 1, "mid\nmid2\n", 9, &len);
	assert_string_equal(out, "l1\nmid\nmid2\nl2\n");
	free(out);
	out = agent_edit_insert("l1\nl2\n", 6, 2, "end", 3, &len);
	assert_string_equal(out, "l1\nl2\nend\n");
	free(out);
	/* after a last line without a newline */
	out = agent_edit_insert("l1\nl2", 5, 2, "end", 3, &len);
	assert_string_equal(out, "l1\nl2\nend\n");
	free(out);
	out = agent_edit_insert("", 0, 0, "only", 4, &len);
	assert_string_equal(out, "only\n");
	free(out);
	assert_int_equal(agent_edit_line_count("", 0), 0);
	assert_int_equal(agent_edit_line_count("x", 1), 1);
	assert_int_equal(agent_edit_line_count("x\n", 2), 1);
	assert_int_equal(agent_edit_line_count("x\n\n", 3), 2);
}

static void test_edit_view(void **state)
{
	struct sc_sbuf b = {0};
	const char *s = "one\ntwo\nthree\n";
	agent_edit_number_lines(&b, s, strlen(s), 2, 3);
	assert_string_equal(b.s, "     2\ttwo\n     3\tthree\n");
	sc_sbuf_free(&b);
	agent_edit_number_lines(&b, "a\nb", 3, 1, 99);
	assert_string_equal(b.s, "     1\ta\n     2\tb\n");
	sc_sbuf_free(&b);

	char msg[300];
	assert_int_equal(agent_edit_check_range(1, -1, 3, msg, sizeof(msg)), 0);
	assert_int_equal(agent_edit_check_range(2, 3, 3, msg, sizeof(msg)), 0);
	assert_int_equal(agent_edit_check_range(0, 2, 3, msg, sizeof(msg)), -1);
	assert_non_null(strstr(msg, "from 1 to 3"));
	assert_int_equal(agent_edit_check_range(4, -1, 3, msg, sizeof(msg)), -1);
	assert_int_equal(agent_edit_check_range(3, 2, 3, msg, sizeof(msg)), -1);
	assert_int_equal(agent_edit_check_range(1, 4, 3, msg, sizeof(msg)), -1);
	assert_int_equal(agent_edit_check_range(1, -2, 3, msg, sizeof(msg)), -1);
}

static void test_retry_after(void **state)
{
	time_t now = 1700000000; /* Tue, 14 Nov 2023 22:13:20 GMT */
	assert_true(agent_retry_after_parse("1", now) == 1.0);
	assert_true(agent_retry_after_parse(" 2.5 ", now) == 2.5);
	assert_true(agent_retry_after_parse("0", now) == 0.0);
	assert_true(agent_retry_after_parse("Tue, 14 Nov 2023 22:13:50 GMT", now) == 30.0);
	assert_true(agent_retry_after_parse("Tue, 14 Nov 2023 22:00:00 GMT", now) == 0.0);
	assert_true(agent_retry_after_parse("99999", now) == RETRY_MAX_AFTER_S);
	assert_true(agent_retry_after_parse("soon", now) < 0);
	assert_true(agent_retry_after_parse("-3", now) < 0);
	assert_true(agent_retry_after_parse("", now) < 0);
	assert_true(agent_retry_after_parse(NULL, now) < 0);
	assert_true(agent_retry_after_parse("1e999", now) < 0);
	/* both headers: ms converted before the cap, the larger wins, neither hides the other */
	assert_true(agent_retry_after_hint("", "1500", now) == 1.5);
	assert_true(agent_retry_after_hint(NULL, "5000", now) == 5.0);
	assert_true(agent_retry_after_hint("3", "", now) == 3.0);
	assert_true(agent_retry_after_hint("3", "1500", now) == 3.0);
	assert_true(agent_retry_after_hint("1", "4000", now) == 4.0);
	assert_true(agent_retry_after_hint("2", "soon", now) == 2.0);
	assert_true(agent_retry_after_hint("", "999999999", now) == RETRY_MAX_AFTER_S);
	assert_true(agent_retry_after_hint("", "", now) < 0);
	assert_true(agent_retry_after_hint(NULL, NULL, now) < 0);
}

static void test_backoff(void **state)
{
	/* base 1000 ms, doubling, jitter scales into [1/2, 1] */
	assert_true(agent_retry_backoff_s(1, 1000, 0.0) == 0.5);
	assert_true(agent_retry_backoff_s(1, 1000, 0.999999) > 0.99);
	assert_true(agent_retry_backoff_s(2, 1000, 0.0) == 1.0);
	assert_true(agent_retry_backoff_s(3, 1000, 0.0) == 2.0);
	assert_true(agent_retry_backoff_s(4, 1000, 0.5) == 6.0);
	assert_true(agent_retry_backoff_s(50, 1000, 0.999999) <= RETRY_MAX_BACKOFF_S);
	assert_true(agent_retry_backoff_s(50, 1000, 0.0) == RETRY_MAX_BACKOFF_S / 2);
	assert_true(agent_retry_backoff_s(1, 0, 0.5) == 0.0);
	/* Retry-After wins over the backoff */
	assert_true(agent_retry_delay_s(1, 10, 3.0, 0.5) == 3.0);
	assert_true(agent_retry_delay_s(1, 1000, -1, 0.0) == 0.5);
	assert_true(agent_retry_status(429));
	assert_true(agent_retry_status(500));
	assert_true(agent_retry_status(503));
	assert_true(agent_retry_status(529));
	assert_false(agent_retry_status(400));
	assert_false(agent_retry_status(401));
	assert_false(agent_retry_status(404));
	assert_false(agent_retry_status(200));
}

static void test_endpoints(void **state)
{
	char *u = llm_endpoint(AGENT_API_OPENAI, "http://127.0.0.1:8000/v1/");
	assert_string_equal(u, "http://127.0.0.1:8000/v1/chat/completions");
	free(u);
	u = llm_endpoint(AGENT_API_ANTHROPIC, "https://api.anthropic.com");
	assert_string_equal(u, "https://api.anthropic.com/v1/messages");
	free(u);
	u = llm_endpoint(AGENT_API_ANTHROPIC, "http://h:1/v1");
	assert_string_equal(u, "http://h:1/v1/messages");
	free(u);
}

static void test_arguments(void **state)
{
	struct llm_tool_call c = {.arguments = "{\"command\": \"ls\"}"};
	llm_parse_arguments(&c);
	assert_non_null(c.args);
	assert_null(c.args_error);
	cJSON_Delete(c.args);
	c = (struct llm_tool_call){.arguments = ""};
	llm_parse_arguments(&c);
	assert_true(cJSON_IsObject(c.args)); /* "" means no arguments */
	cJSON_Delete(c.args);
	c = (struct llm_tool_call){.arguments = "{\"command\": \"ls"};
	llm_parse_arguments(&c);
	assert_null(c.args);
	assert_string_equal(c.args_error, "the arguments are not valid JSON");
	free(c.args_error);
	c = (struct llm_tool_call){.arguments = "[1, 2]"};
	llm_parse_arguments(&c);
	assert_null(c.args);
	assert_string_equal(c.args_error, "the arguments are not a JSON object");
	free(c.args_error);
}

static void test_error_message(void **state)
{
	char out[200];
	const char *b = "{\"error\": {\"message\": \"Incorrect API key\", \"type\": \"x\"}}";
	llm_error_message(b, strlen(b), NULL, out, sizeof(out));
	assert_string_equal(out, "Incorrect API key");
	b = "{\"detail\": \"Not Found\"}";
	llm_error_message(b, strlen(b), NULL, out, sizeof(out));
	assert_string_equal(out, "Not Found");
	b = "<html>\nBad Gateway</html>";
	llm_error_message(b, strlen(b), NULL, out, sizeof(out));
	assert_string_equal(out, "'<html> Bad Gateway</html>'");
	/* a key with a quote in it, echoed in a message longer than the cut:
	 * blanked on the decoded value, before the cut */
	b = "{\"error\": {\"message\": \"@@PAD@@Incorrect API key provided: Bearer sk-a\\\"b\\\\cdefgh1234\"}}";
	char body[1200];
	char pad[300];
	memset(pad, 'x', 260);
	pad[260] = '\0';
	snprintf(body, sizeof(body), "%.*s%s%s", (int)(strstr(b, "@@PAD@@") - b), b, pad,
		 strstr(b, "@@PAD@@") + 7);
	char big[400];
	llm_error_message(body, strlen(body), "sk-a\"b\\cdefgh1234", big, sizeof(big));
	assert_null(strstr(big, "sk-a"));
	llm_error_message(body, strlen(body), NULL, big, sizeof(big));
	assert_non_null(strstr(big, "sk-a")); /* the control: the cut falls inside the key */
	assert_null(strstr(big, "1234"));
}

static void test_json_scrub(void **state)
{
	const char *key = "sk-q\"u\\ote-12345";
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "a", "echo: Bearer sk-q\"u\\ote-12345 end");
	cJSON_AddStringToObject(o, "bad\xff", "raw \xff\xfe bytes");
	cJSON *arr = cJSON_AddArrayToObject(o, "list");
	cJSON_AddItemToArray(arr, cJSON_CreateString("sk-q\"u\\ote-12345"));
	/* tool call arguments: JSON text in a string, the key escaped in it */
	cJSON_AddStringToObject(o, "arguments", "{\"command\":\"echo sk-q\\\"u\\\\ote-12345\"}");
	agent_json_scrub(o, key);
	assert_null(strstr(cJSON_GetObjectItem(o, "arguments")->valuestring, "ote-12345"));
	char *text = cJSON_PrintUnformatted(o);
	assert_null(strstr(text, "ote-12345"));
	assert_non_null(strstr(text, "Bearer ****"));
	assert_null(strchr(text, '\xff'));
	assert_non_null(strstr(text, "raw \xEF\xBF\xBD\xEF\xBF\xBD bytes"));
	assert_non_null(strstr(text, "\"bad\xEF\xBF\xBD\""));
	free(text);
	cJSON_Delete(o);
}

static void test_escape_controls(void **state)
{
	char out[64];
	const char *s = "a\x1b[2Jb\nc\x7f\xc2\x9b" "1m\xc3\xa9";
	agent_text_escape_controls(s, strlen(s), out, sizeof(out));
	assert_string_equal(out, "a\\x1b[2Jb c\\x7f\\x9b1m\xc3\xa9");
	char small[4];
	agent_text_escape_controls("ab\xc3\xa9", 4, small, sizeof(small));
	assert_string_equal(small, "ab");
}

static void parse_with(const struct llm_ops *ops, const char *json, struct llm_reply *r,
		       int expect_rc, struct llm *m)
{
	static struct agent_config cfg = {.model = "m"};
	*m = (struct llm){.ops = ops, .cfg = &cfg, .url = "http://x", .messages = cJSON_CreateArray()};
	cJSON *root = cJSON_Parse(json);
	assert_non_null(root);
	struct sc_err err = {0};
	*r = (struct llm_reply){0};
	assert_int_equal(ops->parse(m, root, r, &err), expect_rc);
	cJSON_Delete(root);
}

static void test_openai_parse(void **state)
{
	struct llm m;
	struct llm_reply r;
	parse_with(&llm_openai_ops,
		   "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":null,"
		   "\"reasoning_content\":\"think\",\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\","
		   "\"function\":{\"name\":\"execute_bash\",\"arguments\":\"{\\\"command\\\":\\\"ls\\\"}\"}},"
		   "{\"type\":\"function\",\"function\":{\"name\":\"submit\",\"arguments\":\"{bad\"}}]},"
		   "\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":3}}",
		   &r, 0, &m);
	assert_string_equal(r.content, "");
	assert_string_equal(r.reasoning, "think");
	assert_int_equal(r.ncalls, 2);
	assert_string_equal(r.calls[0].id, "c1");
	assert_string_equal(r.calls[0].name, "execute_bash");
	assert_non_null(r.calls[0].args);
	assert_non_null(r.calls[1].id); /* made up when missing */
	assert_null(r.calls[1].args);
	assert_non_null(r.calls[1].args_error);
	assert_int_equal(r.input_tokens, 12);
	assert_int_equal(r.output_tokens, 3);
	/* the reply joined the history, with the made-up id */
	assert_int_equal(cJSON_GetArraySize(m.messages), 1);
	char *h = cJSON_PrintUnformatted(m.messages);
	assert_non_null(strstr(h, r.calls[1].id));
	free(h);
	llm_reply_free(&r);
	cJSON_Delete(m.messages);

	parse_with(&llm_openai_ops, "{\"id\":\"x\",\"choices\":[]}", &r, -1, &m);
	llm_reply_free(&r);
	cJSON_Delete(m.messages);
	parse_with(&llm_openai_ops, "{\"error\":{\"message\":\"overloaded\"}}", &r, -1, &m);
	llm_reply_free(&r);
	cJSON_Delete(m.messages);
}

static void test_anthropic_parse(void **state)
{
	struct llm m;
	struct llm_reply r;
	parse_with(&llm_anthropic_ops,
		   "{\"type\":\"message\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"hmm\","
		   "\"signature\":\"s\"},{\"type\":\"text\",\"text\":\"Let me run it.\"},"
		   "{\"type\":\"tool_use\",\"id\":\"tu1\",\"name\":\"execute_bash\",\"input\":{\"command\":\"ls\"}},"
		   "{\"type\":\"tool_use\",\"id\":\"tu2\",\"name\":\"execute_bash\",\"input\":\"{oops\"}],"
		   "\"stop_reason\":\"tool_use\",\"usage\":{\"input_tokens\":7,\"output_tokens\":2}}",
		   &r, 0, &m);
	assert_string_equal(r.content, "Let me run it.");
	assert_string_equal(r.reasoning, "hmm");
	assert_int_equal(r.ncalls, 2);
	assert_non_null(r.calls[0].args);
	assert_null(r.calls[1].args);
	assert_non_null(r.calls[1].args_error);
	assert_int_equal(r.input_tokens, 7);
	/* what goes back carries an object input and the thinking block */
	char *h = cJSON_PrintUnformatted(m.messages);
	assert_non_null(strstr(h, "\"id\":\"tu2\",\"name\":\"execute_bash\",\"input\":{}"));
	assert_non_null(strstr(h, "\"signature\":\"s\""));
	free(h);
	/* tool results and the step note share one user turn */
	llm_anthropic_ops.add_tool_result(&m, &r.calls[0], "out", false);
	llm_anthropic_ops.add_tool_result(&m, &r.calls[1], "bad", true);
	llm_anthropic_ops.append_note(&m, "Steps remaining: 3");
	assert_int_equal(cJSON_GetArraySize(m.messages), 2);
	h = cJSON_PrintUnformatted(cJSON_GetArrayItem(m.messages, 1));
	assert_non_null(strstr(h, "\"tool_use_id\":\"tu2\",\"content\":\"bad\",\"is_error\":true"));
	assert_non_null(strstr(h, "{\"type\":\"text\",\"text\":\"Steps remaining: 3\"}]"));
	free(h);
	llm_reply_free(&r);
	cJSON_Delete(m.messages);

	parse_with(&llm_anthropic_ops,
		   "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}",
		   &r, -1, &m);
	llm_reply_free(&r);
	cJSON_Delete(m.messages);
}

static void test_openai_history(void **state)
{
	static struct agent_config cfg = {.model = "m"};
	struct llm m = {.ops = &llm_openai_ops, .cfg = &cfg, .messages = cJSON_CreateArray()};
	struct llm_tool_call c = {.id = "c9"};
	llm_openai_ops.add_user(&m, "<problem>x</problem>");
	llm_openai_ops.append_note(&m, "Steps remaining: 5");
	llm_openai_ops.add_tool_result(&m, &c, "Exit code: 0", false);
	llm_openai_ops.append_note(&m, "Steps remaining: 4");
	char *h = cJSON_PrintUnformatted(m.messages);
	assert_string_equal(h, "[{\"role\":\"user\",\"content\":\"<problem>x</problem>\\nSteps remaining: 5\"},"
			       "{\"role\":\"tool\",\"tool_call_id\":\"c9\",\"content\":\"Exit code: 0\\nSteps "
			       "remaining: 4\"}]");
	free(h);
	cJSON_Delete(m.messages);
}

static void test_bash_observation(void **state)
{
	char *out = numbered_lines(200);
	struct cell_result res = {.exit_code = 3, .out = out, .out_len = strlen(out),
				  .err = "oops\n", .err_len = 5};
	char *obs = agent_tool_bash_observation(&res, 120);
	assert_true(strncmp(obs, "Exit code: 3\n[stdout]\n1\n", 24) == 0);
	assert_non_null(strstr(obs, "[... 120 lines cut"));
	assert_non_null(strstr(obs, "\n200\n[stderr]\noops"));
	assert_int_equal(obs[strlen(obs) - 1], 's');
	free(obs);
	free(out);

	struct cell_result to = {.exit_code = 124, .timed_out = true, .signal = 9};
	obs = agent_tool_bash_observation(&to, 2);
	assert_non_null(strstr(obs, "timed out after 2 seconds"));
	assert_non_null(strstr(obs, "(no output)"));
	free(obs);
}

/* ---- agent_run_vanilla: the caller's cancel flag and log sink ---- */

struct captured {
	unsigned n;
	char first[SC_ERR_MAX];
};

static void capture(void *ctx, enum sc_log_level level, const char *msg)
{
	struct captured *c = ctx;
	if (!c->n++)
		snprintf(c->first, sizeof(c->first), "%s", msg);
}

static void episode_config(struct agent_config *cfg, char *dir, size_t size, const char *name)
{
	char tmpl[] = "/tmp/sc-agent-test.XXXXXX";
	assert_non_null(mkdtemp(tmpl));
	snprintf(dir, size, "%s/%s", tmpl, name);
	agent_config_init(cfg);
	cfg->model = "m";
	cfg->problem = "p";
	cfg->base_url = "http://127.0.0.1:1/v1"; /* nothing listens there */
	cfg->attempts = 1;
	cfg->retry_base_ms = 0;
	cfg->out_dir = dir;
}

static void remove_parent(const char *dir)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%.*s'", (int)(strrchr(dir, '/') - dir), dir);
	assert_int_equal(system(cmd), 0);
}

static void test_cancel_flag_ends_the_episode(void **state)
{
	struct agent_config cfg;
	char dir[256];
	episode_config(&cfg, dir, sizeof(dir), "cancelled");
	atomic_bool cancel = true; /* raised before the first step: no request */
	struct captured log = {0};
	cfg.cancel = &cancel;
	cfg.log = (struct sc_log){.fn = capture, .ctx = &log};
	struct agent_result res;
	struct sc_err err = {0};
	assert_int_equal(agent_run_vanilla(&cfg, &res, &err), 0);
	assert_int_equal(res.status, AGENT_ERROR);
	assert_string_equal(res.error, "interrupted by a signal");
	assert_int_equal(res.steps, 0);
	assert_int_equal(log.n, 0);
	agent_result_free(&res);
	remove_parent(dir);
}

static void test_messages_go_to_the_sink(void **state)
{
	struct agent_config cfg;
	char dir[256];
	episode_config(&cfg, dir, sizeof(dir), "unreachable");
	struct captured log = {0};
	cfg.log = (struct sc_log){.fn = capture, .ctx = &log};
	struct agent_result res;
	struct sc_err err = {0};
	assert_int_equal(agent_run_vanilla(&cfg, &res, &err), 0);
	assert_int_equal(res.status, AGENT_ERROR);
	assert_int_equal(res.steps, 1);
	assert_true(log.n >= 1);
	assert_non_null(strstr(log.first, "agent: step 1: model request attempt 1 failed"));
	agent_result_free(&res);
	remove_parent(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_truncate_lines), cmocka_unit_test(test_sanitize),
		cmocka_unit_test(test_cap_middle),     cmocka_unit_test(test_redact),
		cmocka_unit_test(test_edit_count_replace), cmocka_unit_test(test_edit_insert),
		cmocka_unit_test(test_edit_view),      cmocka_unit_test(test_retry_after),
		cmocka_unit_test(test_backoff),        cmocka_unit_test(test_endpoints),
		cmocka_unit_test(test_arguments),      cmocka_unit_test(test_error_message), cmocka_unit_test(test_json_scrub),
		cmocka_unit_test(test_escape_controls),
		cmocka_unit_test(test_openai_parse),   cmocka_unit_test(test_anthropic_parse),
		cmocka_unit_test(test_openai_history), cmocka_unit_test(test_bash_observation),
		cmocka_unit_test(test_cancel_flag_ends_the_episode),
		cmocka_unit_test(test_messages_go_to_the_sink),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
