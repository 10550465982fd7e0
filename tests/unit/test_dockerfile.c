/* Unit tests for the Dockerfile parser (rootfs/dockerfile.c): instructions,
 * continuations and comments, exec and shell forms, words and variables,
 * the refusals with FILE:LINE, and the bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "rootfs/rootfs.h"

static int parse(const char *text, struct rootfs_dockerfile *df, struct sc_err *err)
{
	return rootfs_df_parse(text, strlen(text), "Dockerfile", df, err);
}

static void assert_refused(const char *text, const char *msg)
{
	struct rootfs_dockerfile df;
	struct sc_err err = {0};
	assert_int_equal(parse(text, &df, &err), -1);
	if (!strstr(err.msg, msg))
		fail_msg("expected '%s' in '%s'", msg, err.msg);
	assert_int_equal(df.n, 0);
	assert_null(df.v);
}

static void test_instructions(void **state)
{
	(void)state;
	struct rootfs_dockerfile df;
	struct sc_err err = {0};
	const char *text = "# syntax comment\n"
			   "ARG BASE=tiny\n"
			   "from ${BASE}\n"
			   "\n"
			   "RUN apt-get update && \\\n"
			   "    # a comment inside\n"
			   "    apt-get install -y x\n"
			   "CMD [\"/bin/sh\", \"-c\", \"echo hi\"]\n"
			   "ENTRYPOINT [not json\n"
			   "RUN [\"echo\"] && rm -rf /x\n"
			   "COPY a b/\r\n"
			   "RUN last \\";
	assert_int_equal(parse(text, &df, &err), 0);
	assert_int_equal(df.n, 8);
	assert_int_equal(df.v[0].op, ROOTFS_DF_ARG);
	assert_int_equal(df.v[1].op, ROOTFS_DF_FROM);
	assert_int_equal(df.v[1].line, 3);
	assert_string_equal(df.v[1].text, "${BASE}");
	assert_int_equal(df.v[2].op, ROOTFS_DF_RUN);
	assert_int_equal(df.v[2].line, 5);
	assert_false(df.v[2].exec_form);
	assert_string_equal(df.v[2].text, "apt-get update &&     apt-get install -y x");
	assert_true(df.v[3].exec_form);
	assert_string_equal(df.v[3].argv[0], "/bin/sh");
	assert_string_equal(df.v[3].argv[2], "echo hi");
	assert_null(df.v[3].argv[3]);
	assert_false(df.v[4].exec_form); /* not JSON: the shell form */
	assert_false(df.v[5].exec_form); /* JSON, then more: the shell form */
	assert_string_equal(df.v[5].text, "[\"echo\"] && rm -rf /x");
	assert_string_equal(df.v[4].text, "[not json");
	assert_string_equal(df.v[6].text, "a b/");
	assert_int_equal(df.v[7].line, 12);
	assert_string_equal(df.v[7].text, "last ");
	assert_string_equal(rootfs_df_op_name(df.v[3].op), "CMD");
	rootfs_df_free(&df);
}

static void test_refusals(void **state)
{
	(void)state;
	assert_refused("FROM a\nHEALTHCHECK CMD true\n", "Dockerfile:2: HEALTHCHECK is not supported");
	assert_refused("FROM a\nonbuild RUN x\n", "Dockerfile:2: ONBUILD is not supported");
	assert_refused("FROM a AS b\n", "Dockerfile:1: FROM ... AS (multi-stage build) is not supported");
	assert_refused("FROM a\nFROM b\n", "Dockerfile:2: a second FROM");
	assert_refused("FROM a\nCOPY --from=b /x /y\n", "Dockerfile:2: COPY --from is not supported");
	assert_refused("FROM a\nRUN --mount=type=cache x\n", "Dockerfile:2: RUN --mount is not supported");
	assert_refused("FROM --platform=x a\n", "Dockerfile:1: FROM --platform is not supported");
	assert_refused("FROM a\nRUN <<EOF\necho\nEOF\n", "Dockerfile:2: RUN with a heredoc");
	assert_refused("FROM a\nCOPY <<-\"X\" /f\n", "Dockerfile:2: COPY with a heredoc");
	assert_refused("FROM a\nFOO bar\n", "Dockerfile:2: unknown instruction 'FOO'");
	assert_refused("FROM a\n=x\n", "Dockerfile:2: expected an instruction");
	assert_refused("RUN x\nFROM a\n", "Dockerfile:1: RUN before FROM");
	assert_refused("# nothing\n", "no FROM instruction");
	assert_refused("FROM a\nRUN\n", "Dockerfile:2: RUN needs arguments");
	assert_refused("FROM a\nCOPY x\n", "Dockerfile:2: COPY needs a source and a destination");
	assert_refused("FROM a\nCOPY [\"x\"]\n", "Dockerfile:2: COPY needs a source");
	assert_refused("FROM a\nWORKDIR a b\n", "Dockerfile:2: WORKDIR takes one argument");
	assert_refused("FROM a\nLABEL novalue\n", "Dockerfile:2: LABEL takes KEY=VALUE");
	assert_refused("FROM a\nENV A=\"unterminated\n", "Dockerfile:2: ENV: unterminated double quote");
	assert_refused("FROM a\nENV A=${B\n", "Dockerfile:2: ENV: bad variable reference");
	assert_refused("FROM a b\n", "Dockerfile:1: FROM takes one image name");
	/* "<<<" is a here-string of the shell, not a heredoc */
	struct rootfs_dockerfile df;
	assert_int_equal(parse("FROM a\nRUN cat <<<\"x\" && echo $((1<<2))\n", &df, NULL), 0);
	rootfs_df_free(&df);
}

static void test_bounds(void **state)
{
	(void)state;
	size_t big = ROOTFS_DF_MAX_SIZE + 1;
	char *text = malloc(big + 1);
	assert_non_null(text);
	memset(text, '#', big);
	text[big] = '\0';
	struct rootfs_dockerfile df;
	struct sc_err err = {0};
	assert_int_equal(rootfs_df_parse(text, big, "D", &df, &err), -1);
	assert_non_null(strstr(err.msg, "larger than"));
	/* one line over the bound */
	size_t n = ROOTFS_DF_MAX_LINE + 20;
	memcpy(text, "FROM a\nRUN ", 11);
	memset(text + 11, 'x', n);
	assert_int_equal(rootfs_df_parse(text, 11 + n, "D", &df, &err), -1);
	assert_non_null(strstr(err.msg, "D:2: line longer than"));
	/* continuations adding up past it */
	size_t off = 7;
	memcpy(text, "FROM a\n", 7);
	for (int i = 0; i < 40; i++) {
		memcpy(text + off, "RUN ", 4);
		memset(text + off + 4, 'y', 2000);
		memcpy(text + off + 2004, "\\\n", 2);
		off += 2006;
	}
	assert_int_equal(rootfs_df_parse(text, off, "D", &df, &err), -1);
	assert_non_null(strstr(err.msg, "D:2: instruction longer than"));
	/* too many instructions */
	off = 0;
	for (int i = 0; i <= ROOTFS_DF_MAX_INSTR; i++) {
		memcpy(text + off, i ? "RUN x\n" : "FROM a\n", i ? 6 : 7);
		off += i ? 6 : 7;
	}
	assert_int_equal(rootfs_df_parse(text, off, "D", &df, &err), -1);
	assert_non_null(strstr(err.msg, "more than 1000 instructions"));
	/* NUL bytes */
	assert_int_equal(rootfs_df_parse("FROM a\0b", 8, "D", &df, &err), -1);
	assert_non_null(strstr(err.msg, "NUL"));
	free(text);
}

static const char *vars(void *ctx, const char *name)
{
	(void)ctx;
	if (!strcmp(name, "A"))
		return "one two";
	if (!strcmp(name, "EMPTY"))
		return "";
	return NULL;
}

static void test_words(void **state)
{
	(void)state;
	char **w;
	assert_int_equal(rootfs_df_words("K=\"v 1\" 'lit $A' $A ${A}x \\$A a\\ b \"q\\\"q\" ${UNSET:-dflt} "
					 "${A:+alt} ${EMPTY:-e} x${UNSET}y $ end",
					 vars, NULL, &w, NULL),
			 0);
	/* as Docker: a value is not split into words again */
	const char *want[] = {"K=v 1", "lit $A", "one two", "one twox", "$A", "a b", "q\"q",
			      "dflt", "alt", "e", "xy", "$", "end"};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_non_null(w[i]);
		assert_string_equal(w[i], want[i]);
	}
	assert_null(w[sizeof(want) / sizeof(want[0])]);
	rootfs_strv_free(w);
	assert_int_equal(rootfs_df_words("   ", NULL, NULL, &w, NULL), 0);
	assert_null(w[0]);
	rootfs_strv_free(w);
	struct sc_err err = {0};
	assert_int_equal(rootfs_df_words("'open", NULL, NULL, &w, &err), -1);
	assert_non_null(strstr(err.msg, "unterminated single quote"));
	assert_null(w);
	/* too many words */
	char many[2 * (ROOTFS_DF_MAX_WORDS + 1) + 1];
	for (int i = 0; i < ROOTFS_DF_MAX_WORDS + 1; i++)
		memcpy(many + 2 * i, "x ", 2);
	many[sizeof(many) - 1] = '\0';
	assert_int_equal(rootfs_df_words(many, NULL, NULL, &w, &err), -1);
	assert_non_null(strstr(err.msg, "more than"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_instructions),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_words),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
