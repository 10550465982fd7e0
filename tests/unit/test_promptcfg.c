/* agent/promptcfg.c: the reference harness's YAML prompt configs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "agent/promptcfg.h"

static void test_replace_plain(void **state)
{
	char *s = agent_prompt_replace("a {x} b {x} {{x}} {y}", "x", "1");
	assert_string_equal(s, "a 1 b 1 {1} {y}");
	free(s);
	s = agent_prompt_replace("none", "x", "long value");
	assert_string_equal(s, "none");
	free(s);
}

static void test_format(void **state)
{
	const char *const k[] = {"problem_statement"}, *const v[] = {"x {{y}} {problem_statement}"};
	char *s = agent_prompt_format("P: {problem_statement} \\boxed{{}} {other} }} {", k, v, 1);
	/* one pass: the value is not rendered again; unknown names stay */
	assert_string_equal(s, "P: x {{y}} {problem_statement} \\boxed{} {other} } {");
	free(s);
	static const char y[] = "system_prompt: \"A {{}} {command_docs}{demo}B\"\n"
				"instance_prompt: \"{problem_statement}\"\n";
	struct agent_prompt_config pc;
	struct sc_err err = {0};
	assert_int_equal(agent_prompt_config_parse("c.yaml", y, strlen(y), &pc, &err), 0);
	assert_string_equal(pc.system_prompt, "A {} B");
	agent_prompt_config_free(&pc);
}

static void test_typos(void **state)
{
	char buf[48];
	assert_false(agent_prompt_find_typo("\\frac{a}{b} {{answer}} {problem_statement}", buf,
					    sizeof(buf)));
	assert_true(agent_prompt_find_typo("see {input_dri}", buf, sizeof(buf)));
	assert_string_equal(buf, "input_dri");
	assert_true(agent_prompt_find_typo("{Problem_Statement}", buf, sizeof(buf)));
}

static void test_parse(void **state)
{
	static const char y[] = "system_prompt: |-\n  out {output_dir} in {input_dir}\n"
				"instance_prompt: \"{problem_statement} at {working_dir}\"\n"
				"output_dir: /o\n";
	struct agent_prompt_config pc;
	struct sc_err err = {0};
	assert_int_equal(agent_prompt_config_parse("c.yaml", y, strlen(y), &pc, &err), 0);
	assert_string_equal(pc.system_prompt, "out /o in /testbed/input");
	assert_string_equal(pc.instance_prompt, "{problem_statement} at /testbed");
	assert_string_equal(pc.answer_path, "/o/answer.txt");
	agent_prompt_config_free(&pc);
}

static void fails(const char *y, const char *word)
{
	struct agent_prompt_config pc;
	struct sc_err err = {0};
	assert_int_equal(agent_prompt_config_parse("c.yaml", y, strlen(y), &pc, &err), -1);
	assert_non_null(strstr(err.msg, word));
	assert_null(strchr(err.msg, '\n'));
	assert_null(pc.system_prompt);
}

static void test_errors(void **state)
{
	fails("system_prompt: x\n", "no instance_prompt");
	fails("instance_prompt: x\n", "no system_prompt");
	fails("system_prompt: [x\n", "not YAML");
	fails("- x\n", "not a YAML mapping");
	fails("system_prompt: x\ninstance_prompt: y\noutput_dir: rel\n", "output_dir");
	fails("system_prompt: x\ninstance_prompt: y\ninput_dir: /a/../b\n", "input_dir");
	fails("system_prompt: [a]\ninstance_prompt: y\n", "system_prompt is not a string");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replace_plain),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_typos),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
