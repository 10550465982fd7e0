/* Unit tests for sandcell batch's pure logic: every scorer, the checker's
 * verdict, pass@k, task lines, shards and ids, results.jsonl compaction,
 * and the conversation export. */
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "batch/batch_priv.h"

/* ---- exact / contains ---- */

static void test_exact(void **state)
{
	assert_true(batch_score_exact("  Paris\n", "Paris") == 1);
	assert_true(batch_score_exact("paris", "Paris") == 0);
	assert_true(batch_score_exact("Paris.", "Paris") == 0);
	assert_true(batch_score_exact("", "") == 1);
	assert_true(batch_score_exact(NULL, "x") == 0);
	assert_true(batch_score_exact("a b", "a  b") == 0);
}

static void test_contains(void **state)
{
	assert_true(batch_score_contains("The capital is Paris, of course", " Paris ") == 1);
	assert_true(batch_score_contains("The capital is paris", "Paris") == 0);
	assert_true(batch_score_contains("anything", "  ") == 0); /* empty expected never matches */
	assert_true(batch_score_contains(NULL, "x") == 0);
}

/* ---- numeric ---- */

static void test_numeric_parse(void **state)
{
	double v;
	assert_true(batch_score_parse_number(" 42 ", &v) && v == 42);
	assert_true(batch_score_parse_number("1,000,000", &v) && v == 1e6);
	assert_true(batch_score_parse_number("$3.50", &v) && v == 3.5);
	assert_true(batch_score_parse_number("-2.5e3", &v) && v == -2500);
	assert_true(batch_score_parse_number("3/4", &v) && v == 0.75);
	assert_true(batch_score_parse_number("\\frac{1}{8}", &v) && v == 0.125);
	assert_true(batch_score_parse_number("-\\frac{3}{2}", &v) && v == -1.5);
	assert_true(batch_score_parse_number("50%", &v) && v == 50);
	assert_false(batch_score_parse_number("0x10", &v));
	assert_false(batch_score_parse_number("inf", &v));
	assert_false(batch_score_parse_number("nan", &v));
	assert_false(batch_score_parse_number("1/0", &v));
	assert_false(batch_score_parse_number("twelve", &v));
	assert_false(batch_score_parse_number("\\frac{1}{2}+3", &v));
	assert_true(batch_score_last_number("x = 3, so the answer is 17.", &v) && v == 17);
	assert_true(batch_score_last_number("we get -4 here", &v) && v == -4);
	assert_true(batch_score_last_number("total 1,234 apples", &v) && v == 1234);
	assert_true(batch_score_last_number("ratio 2/3", &v) && fabs(v - 2.0 / 3) < 1e-12);
	assert_false(batch_score_last_number("no numbers here", &v));
	assert_true(batch_score_last_number("version2 costs 5", &v) && v == 5); /* digits in words skipped */
	/* a run of digits longer than any number is skipped whole, even when an
	 * exponent reaches the end of the reader's buffer (found by fuzz_score) */
	char longnum[400];
	memset(longnum, '1', sizeof(longnum));
	memcpy(longnum, "0.75e-5", 7);
	memcpy(longnum + 126, "e-4", 3);
	snprintf(longnum + 300, sizeof(longnum) - 300, " then 7");
	assert_true(batch_score_last_number(longnum, &v) && v == 7);
	longnum[300] = '\0';
	assert_false(batch_score_last_number(longnum, &v));
}

static void test_numeric_score(void **state)
{
	assert_true(batch_score_numeric("3.14159", "3.1416", 1e-4) == 1);
	assert_true(batch_score_numeric("3.14159", "3.1416", 1e-6) == 0);
	assert_true(batch_score_numeric("The answer is 42.", "42", 1e-6) == 1);
	assert_true(batch_score_numeric("42", "43", 1e-6) == 0);
	assert_true(batch_score_numeric("1,000", "1000", 0) == 1);
	assert_true(batch_score_numeric("so \\boxed{12} and then 99", "12", 1e-6) == 1);
	assert_true(batch_score_numeric("0", "0", 1e-6) == 1);
	assert_true(batch_score_numeric("0.0000001", "0", 1e-6) == 0);
	assert_true(batch_score_numeric("0.5", "1/2", 1e-9) == 1);
	assert_true(batch_score_numeric("no number", "1", 1e-6) == 0);
	assert_true(batch_score_numeric("5", "not a number", 1e-6) == 0);
	assert_true(batch_score_numeric(NULL, "1", 1e-6) == 0);
}

/* ---- choice ---- */

static unsigned letters_of(const char *s, char *out)
{
	bool l[26];
	unsigned n = batch_score_choice_letters(s, l), k = 0;
	for (int i = 0; i < 26; i++)
		if (l[i])
			out[k++] = (char)('A' + i);
	out[k] = '\0';
	return n;
}

static void test_choice_letters(void **state)
{
	char buf[27];
	assert_int_equal(letters_of("B", buf), 1), assert_string_equal(buf, "B");
	assert_int_equal(letters_of("(C)", buf), 1), assert_string_equal(buf, "C");
	assert_int_equal(letters_of("A, C", buf), 2), assert_string_equal(buf, "AC");
	assert_int_equal(letters_of("AC", buf), 2), assert_string_equal(buf, "AC");
	assert_int_equal(letters_of("**D**", buf), 1), assert_string_equal(buf, "D");
	assert_int_equal(letters_of("A and D", buf), 2), assert_string_equal(buf, "AD");
	assert_int_equal(letters_of("The answer is (B) because it is larger.", buf), 1);
	assert_string_equal(buf, "B");
	assert_int_equal(letters_of("Answer: A, C", buf), 2), assert_string_equal(buf, "AC");
	assert_int_equal(letters_of("I think option D is right", buf), 1), assert_string_equal(buf, "D");
	assert_int_equal(letters_of("clearly (E) wins", buf), 1), assert_string_equal(buf, "E");
	assert_int_equal(letters_of("\\boxed{B}", buf), 1), assert_string_equal(buf, "B");
	assert_int_equal(letters_of("I do not know", buf), 0);
	assert_int_equal(letters_of("", buf), 0);
	assert_int_equal(letters_of("ABA", buf), 0); /* a letter twice: not a set of choices */
}

static void test_choice_score(void **state)
{
	assert_true(batch_score_choice("The answer is (B)", "B") == 1);
	assert_true(batch_score_choice("A", "B") == 0);
	assert_true(batch_score_choice("A, C", "C,A") == 1);
	/* F1 of {A,C} against {A,C,D}: precision 1, recall 2/3 */
	assert_true(fabs(batch_score_choice("A, C", "A,C,D") - 0.8) < 1e-12);
	assert_true(fabs(batch_score_choice("A, B", "A") - 2.0 / 3) < 1e-12);
	assert_true(batch_score_choice("nothing", "A") == 0);
	assert_true(batch_score_choice(NULL, "A") == 0);
}

/* ---- boxed ---- */

/* got (a string to free) is want */
static void assert_str_took(char *got, const char *want)
{
	assert_string_equal(got, want);
	free(got);
}

static void test_boxed_extract(void **state)
{
	assert_str_took(batch_score_boxed_extract("first \\boxed{1} then \\boxed{\\frac{1}{2}} end"),
			"\\frac{1}{2}");
	assert_str_took(batch_score_boxed_extract("$\\boxed 7$"), "7");
	assert_str_took(batch_score_boxed_extract("\\fbox{x+1}"), "x+1");
	assert_null(batch_score_boxed_extract("no box"));
	assert_null(batch_score_boxed_extract("\\boxed{unbalanced"));
}

static void test_math_normalize(void **state)
{
	assert_str_took(batch_score_math_normalize(" $\\dfrac{1}{2}$ "), "\\frac{1}{2}");
	assert_str_took(batch_score_math_normalize("\\left( 1, 2 \\right)"), "(1,2)");
	assert_str_took(batch_score_math_normalize("x = 5."), "5");
	assert_str_took(batch_score_math_normalize("\\text{12 apples}"), "12apples");
	assert_str_took(batch_score_math_normalize("90^\\circ"), "90");
	assert_str_took(batch_score_math_normalize("1,000"), "1000");
}

static void test_boxed_score(void **state)
{
	assert_true(batch_score_boxed("so the result is \\boxed{\\dfrac{1}{2}}.", "\\frac{1}{2}") == 1);
	assert_true(batch_score_boxed("\\boxed{0.5}", "\\frac{1}{2}") == 1);
	assert_true(batch_score_boxed("\\boxed{\\frac12}", "0.5") == 1);
	assert_true(batch_score_boxed("\\boxed{(1, 2)}", "(1,2)") == 1);
	assert_true(batch_score_boxed("\\boxed{3}", "\\boxed{3}") == 1);
	assert_true(batch_score_boxed("\\boxed{4}", "3") == 0);
	assert_true(batch_score_boxed("the last box counts: \\boxed{3} \\boxed{4}", "4") == 1);
	assert_true(batch_score_boxed("5", "5") == 1); /* no box: the whole answer */
	assert_true(batch_score_boxed("\\boxed{x^2+1}", "x^{2}+1") == 0); /* no symbolic algebra */
	assert_true(batch_score_boxed(NULL, "1") == 0);
	assert_true(batch_score_boxed("\\boxed{}", "") == 0);
}

static void test_score_answer_dispatch(void **state)
{
	struct batch_scorer s = {.kind = BATCH_SCORER_NUMERIC, .tolerance = 0.01};
	assert_true(batch_score_answer(&s, "1.005", "1") == 1);
	s.kind = BATCH_SCORER_COMMAND;
	assert_true(batch_score_answer(&s, "1", "1") < 0);
	enum batch_scorer_kind k;
	assert_int_equal(batch_scorer_kind_parse("boxed", &k), 0);
	assert_int_equal(k, BATCH_SCORER_BOXED);
	assert_int_equal(batch_scorer_kind_parse("fuzzy", &k), -1);
	assert_string_equal(batch_scorer_name(BATCH_SCORER_CHOICE), "choice");
}

/* ---- command scorer's verdict ---- */

static void test_checker_verdict(void **state)
{
	assert_true(batch_score_from_checker(0, "", 0) == 1);
	assert_true(batch_score_from_checker(1, NULL, 0) == 0);
	const char *out = "checking...\n0.25\n\n";
	assert_true(batch_score_from_checker(1, out, strlen(out)) == 0.25); /* printed score wins */
	out = "7\n";
	assert_true(batch_score_from_checker(0, out, strlen(out)) == 1); /* clamped */
	out = "-3";
	assert_true(batch_score_from_checker(0, out, strlen(out)) == 0);
	out = "all good\n";
	assert_true(batch_score_from_checker(0, out, strlen(out)) == 1);
	assert_true(batch_score_from_checker(2, out, strlen(out)) == 0);
	out = "nan\n";
	assert_true(batch_score_from_checker(0, out, strlen(out)) == 1);
}

/* ---- pass@k ---- */

static void test_pass_at_k(void **state)
{
	assert_true(fabs(batch_pass_at_k(4, 1, 1) - 0.25) < 1e-12);
	assert_true(fabs(batch_pass_at_k(4, 1, 2) - 0.5) < 1e-12);  /* 1 - C(3,2)/C(4,2) */
	assert_true(batch_pass_at_k(4, 0, 4) == 0);
	assert_true(batch_pass_at_k(4, 1, 4) == 1);
	assert_true(batch_pass_at_k(5, 4, 2) == 1);
	assert_true(fabs(batch_pass_at_k(16, 3, 8) - (1 - 1287.0 / 12870)) < 1e-12);
	assert_true(isnan(batch_pass_at_k(2, 1, 3)));
}

/* ---- tasks ---- */

static int parse(const char *line, struct batch_task *t, char *why)
{
	return batch_task_parse(line, strlen(line), "/", t, why, 300);
}

static void test_task_lines(void **state)
{
	struct batch_task t;
	char why[300];
	assert_int_equal(parse("{\"id\":\"x1\",\"problem\":\"p\",\"answer\":42,\"subject\":\"alg\","
			       "\"metadata\":{\"level\":3},\"scorer\":{\"type\":\"numeric\",\"tolerance\":0.01}}",
			       &t, why), 0);
	assert_string_equal(t.id, "x1");
	assert_string_equal(t.expected, "42");
	assert_true(t.has_scorer && t.scorer.kind == BATCH_SCORER_NUMERIC && t.scorer.tolerance == 0.01);
	assert_non_null(cJSON_GetObjectItem(t.extra, "subject"));
	assert_null(cJSON_GetObjectItem(t.extra, "metadata"));
	assert_non_null(t.metadata);
	assert_true(t.hash == batch_hash("x1"));
	batch_task_free(&t);

	assert_int_equal(parse("{\"id\":7,\"problem\":\"p\",\"answer\":[\"A\",\"C\"]}", &t, why), 0);
	assert_string_equal(t.id, "7");
	assert_string_equal(t.expected, "A,C");
	batch_task_free(&t);

	assert_int_equal(parse("{\"id\":\"x\",\"problem\":\"p\",\"scorer\":{\"type\":\"command\","
			       "\"command\":\"test -s answer.txt\",\"timeout\":5}}", &t, why), 0);
	assert_true(t.scorer.kind == BATCH_SCORER_COMMAND && t.scorer.timeout_s == 5);
	assert_string_equal(t.scorer.command, "test -s answer.txt");
	batch_task_free(&t);

	assert_int_equal(parse("{\"id\":\"i\",\"problem\":\"p\",\"image\":\"ghcr.io/o/env:1\"}", &t, why), 0);
	assert_string_equal(t.image, "ghcr.io/o/env:1");
	assert_null(cJSON_GetObjectItem(t.extra, "image")); /* not an extra field */
	batch_task_free(&t);
	assert_int_equal(parse("{\"id\":\"i\",\"problem\":\"p\",\"image\":\"a b\"}", &t, why), -1);
	assert_non_null(strstr(why, "\"image\""));
	assert_int_equal(parse("{\"id\":\"i\",\"problem\":\"p\",\"image\":3}", &t, why), -1);
	assert_int_equal(parse("{\"id\":\"i\",\"problem\":\"p\",\"store_image\":\"x\"}", &t, why), -1);
	assert_non_null(strstr(why, "reserved"));

	assert_int_equal(parse("not json", &t, why), -1);
	assert_non_null(strstr(why, "JSON"));
	/* a NUL would cut the id ("nul\\u0000two" taken for "nul"): refused */
	assert_int_equal(parse("{\"id\":\"nul\\u0000two\",\"problem\":\"p\"}", &t, why), -1);
	assert_non_null(strstr(why, "NUL"));
	/* a backslash, then the text u0000, is no NUL */
	assert_int_equal(parse("{\"id\":\"a\\\\u0000\",\"problem\":\"p\"}", &t, why), 0);
	assert_string_equal(t.id, "a\\u0000");
	batch_task_free(&t);
	assert_int_equal(parse("{\"id\":\"esc\\u001b[2J\",\"problem\":\"p\"}", &t, why), -1);
	assert_non_null(strstr(why, "control"));
	assert_int_equal(parse("[1,2]", &t, why), -1);
	assert_int_equal(parse("{\"problem\":\"p\"}", &t, why), -1);
	assert_non_null(strstr(why, "id"));
	assert_int_equal(parse("{\"id\":\"x\"}", &t, why), -1);
	assert_non_null(strstr(why, "problem"));
	assert_int_equal(parse("{\"id\":\"x\",\"problem\":\"p\",\"status\":\"ok\"}", &t, why), -1);
	assert_non_null(strstr(why, "reserved"));
	assert_int_equal(parse("{\"id\":\"x\",\"problem\":\"p\",\"scorer\":\"fuzzy\"}", &t, why), -1);
	assert_int_equal(parse("{\"id\":\"x\",\"problem\":\"p\",\"input_dir\":\"/nonexistent/dir\"}", &t, why), -1);
	assert_non_null(strstr(why, "input_dir"));
	assert_int_equal(parse("{\"id\":\"a\\nb\",\"problem\":\"p\"}", &t, why), -1);
	assert_int_equal(parse("{\"id\":1.5,\"problem\":\"p\"}", &t, why), -1);
}

static void test_task_setup(void **state)
{
	struct batch_task t;
	char why[300];
	assert_int_equal(parse("{\"id\":\"s\",\"problem\":\"p\",\"setup\":\"pip install x\"}", &t, why), 0);
	assert_non_null(t.setup);
	assert_string_equal(t.setup->command, "pip install x");
	assert_true(t.setup->nfiles == 0 && t.setup->timeout_s == BATCH_DEFAULT_SETUP_TIMEOUT);
	assert_null(cJSON_GetObjectItem(t.extra, "setup"));
	batch_task_free(&t);

	assert_int_equal(parse("{\"id\":\"s\",\"problem\":\"p\",\"setup\":{\"files\":{\"a/b.txt\":\"hi\","
			       "\"/etc/x.conf\":\"\"},\"timeout\":30}}", &t, why), 0);
	assert_null(t.setup->command);
	assert_int_equal(t.setup->nfiles, 2);
	assert_string_equal(t.setup->files[0].path, "/testbed/a/b.txt");
	assert_string_equal(t.setup->files[0].data, "hi");
	assert_string_equal(t.setup->files[1].path, "/etc/x.conf");
	assert_int_equal(t.setup->files[1].len, 0);
	assert_true(t.setup->timeout_s == 30);
	batch_task_free(&t);

	static const char *const bad[] = {
		"{\"id\":\"s\",\"problem\":\"p\",\"setup\":\"\"}",
		"{\"id\":\"s\",\"problem\":\"p\",\"setup\":{}}",
		"{\"id\":\"s\",\"problem\":\"p\",\"setup\":3}",
		"{\"id\":\"s\",\"problem\":\"p\",\"setup\":{\"command\":\"x\",\"env\":1}}",
		"{\"id\":\"s\",\"problem\":\"p\",\"setup\":{\"files\":{\"../x\":\"a\"}}}",
		"{\"id\":\"s\",\"problem\":\"p\",\"setup\":{\"files\":{\"a//b\":\"a\"}}}",
		"{\"id\":\"s\",\"problem\":\"p\",\"setup\":{\"files\":{\"/a/./b\":\"a\"}}}",
		"{\"id\":\"s\",\"problem\":\"p\",\"setup\":{\"files\":{\"a\":3}}}",
		"{\"id\":\"s\",\"problem\":\"p\",\"setup\":{\"files\":[\"a\"]}}",
		"{\"id\":\"s\",\"problem\":\"p\",\"setup\":{\"command\":\"x\",\"timeout\":0}}",
		"{\"id\":\"s\",\"problem\":\"p\",\"setup_s\":1}",
		"{\"id\":\"s\",\"problem\":\"p\",\"group\":1}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i], &t, why), -1);
		assert_true(strstr(why, "setup") || strstr(why, "reserved"));
	}
}

static void test_shards_and_names(void **state)
{
	unsigned i, n;
	assert_int_equal(batch_shard_parse("0/4", &i, &n), 0);
	assert_true(i == 0 && n == 4);
	assert_int_equal(batch_shard_parse("3/4", &i, &n), 0);
	assert_int_equal(batch_shard_parse("4/4", &i, &n), -1);
	assert_int_equal(batch_shard_parse("-1/4", &i, &n), -1);
	assert_int_equal(batch_shard_parse("1/0", &i, &n), -1);
	assert_int_equal(batch_shard_parse("1", &i, &n), -1);
	assert_int_equal(batch_shard_parse("1/2x", &i, &n), -1);
	/* the hash is fixed forever: shards must not move between versions */
	assert_true(batch_hash("") == 0xcbf29ce484222325ULL);
	assert_true(batch_hash("a") == 0xaf63dc4c8601ec8cULL);

	struct sc_err err = {0};
	unsetenv("JOB_COMPLETION_INDEX");
	setenv("SLURM_ARRAY_TASK_ID", "5", 1);
	setenv("SLURM_ARRAY_TASK_COUNT", "4", 1);
	setenv("SLURM_ARRAY_TASK_MIN", "2", 1);
	unsetenv("SLURM_ARRAY_TASK_STEP");
	assert_int_equal(batch_shard_from_env(0, &i, &n, &err), 1);
	assert_true(i == 3 && n == 4);
	setenv("SLURM_ARRAY_TASK_ID", "6", 1);
	assert_int_equal(batch_shard_from_env(0, &i, &n, &err), -1);
	unsetenv("SLURM_ARRAY_TASK_ID");
	unsetenv("SLURM_ARRAY_TASK_COUNT");
	unsetenv("SLURM_ARRAY_TASK_MIN");
	assert_int_equal(batch_shard_from_env(0, &i, &n, &err), 0);
	setenv("JOB_COMPLETION_INDEX", "2", 1);
	assert_int_equal(batch_shard_from_env(0, &i, &n, &err), -1);
	assert_non_null(strstr(err.msg, "--shards"));
	assert_int_equal(batch_shard_from_env(3, &i, &n, &err), 1);
	assert_true(i == 2 && n == 3);
	assert_int_equal(batch_shard_from_env(2, &i, &n, &err), -1);
	unsetenv("JOB_COMPLETION_INDEX");

	char name[160];
	batch_safe_name("aime-2024_07.x", name, sizeof(name));
	assert_string_equal(name, "aime-2024_07.x");
	batch_safe_name("../etc/passwd", name, sizeof(name));
	assert_null(strchr(name, '/'));
	assert_true(strncmp(name, "..", 2) != 0);
	char other[160];
	batch_safe_name("a/b", name, sizeof(name));
	batch_safe_name("a_b", other, sizeof(other));
	assert_string_not_equal(name, other);
	batch_safe_name("..", name, sizeof(name));
	assert_string_not_equal(name, "..");
	/* an id spelled like another id's mapped name gets a name of its own */
	batch_safe_name("x/y", name, sizeof(name));
	batch_safe_name(name, other, sizeof(other));
	assert_string_not_equal(name, other);
	batch_safe_name("build-0123456789abcdeg", name, sizeof(name)); /* not hex: kept */
	assert_string_equal(name, "build-0123456789abcdeg");
}

/* ---- results.jsonl ---- */

static void write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static char *read_text(const char *path)
{
	static char buf[8192];
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n < 0 ? 0 : n] = '\0';
	return buf;
}

static void test_results_compact(void **state)
{
	char dir[] = "/tmp/test-batch-XXXXXX", path[400], old[256];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/results.jsonl", dir);
	snprintf(old, sizeof(old), "%s/superseded.jsonl", dir);
	write_text(path,
		   "{\"id\":\"a\",\"repeat\":0,\"status\":\"submitted\",\"score\":1}\n"
		   "{\"id\":\"b\",\"repeat\":0,\"status\":\"error\",\"score\":0}\n"
		   "garbage\n"
		   "{\"id\":\"a\",\"repeat\":1,\"status\":\"max_steps\",\"score\":0}\n"
		   "{\"id\":\"c\",\"repeat\":0,\"status\":\"submitted\",\"score\":1}\n"
		   "{\"id\":\"c\",\"repeat\":0,\"status\":\"submitted\",\"score\":0.5}\n"
		   "{\"id\":\"d\",\"repeat\":0,\"sta");
	/* a reader sees complete lines, the later line of an attempt winning */
	struct batch_records rs = {0};
	struct sc_err err = {0};
	assert_int_equal(batch_results_read(dir, &rs, &err), 0);
	assert_int_equal(rs.n, 4);
	for (size_t i = 0; i < rs.n; i++)
		if (!strcmp(rs.v[i].id, "c"))
			assert_true(rs.v[i].score == 0.5);
	batch_records_free(&rs);

	struct batch_compact_stats st;
	assert_int_equal(batch_results_compact(dir, false, &rs, &st, &err), 0);
	assert_int_equal(rs.n, 4);
	assert_true(st.partial);
	assert_int_equal(st.invalid, 1);
	assert_int_equal(st.duplicate, 1);
	batch_records_free(&rs);
	const char *now = read_text(path);
	assert_null(strstr(now, "garbage"));
	assert_null(strstr(now, "\"d\""));
	assert_null(strstr(now, "\"score\":1}\n{\"id\":\"c\",\"repeat\":0,\"status\":\"submitted\",\"score\":0.5"));
	assert_non_null(strstr(now, "\"score\":0.5"));
	assert_true(now[strlen(now) - 1] == '\n');
	assert_non_null(strstr(read_text(old), "garbage"));

	/* --retry-errors: error lines move out */
	assert_int_equal(batch_results_compact(dir, true, &rs, &st, &err), 0);
	assert_int_equal(rs.n, 3);
	assert_int_equal(st.superseded, 1);
	batch_records_free(&rs);
	assert_null(strstr(read_text(path), "\"b\""));
	assert_non_null(strstr(read_text(old), "\"b\""));

	/* nothing to change: the file is left as it is */
	struct stat before, after;
	stat(path, &before);
	assert_int_equal(batch_results_compact(dir, true, &rs, &st, &err), 0);
	batch_records_free(&rs);
	stat(path, &after);
	assert_true(before.st_ino == after.st_ino);

	/* an append is one whole line */
	int fd = open(path, O_WRONLY | O_APPEND);
	assert_int_equal(batch_results_append(fd, "{\"id\":\"e\",\"repeat\":0,\"status\":\"submitted\"}", 43, &err), 0);
	close(fd);
	assert_int_equal(batch_results_read(dir, &rs, &err), 0);
	assert_int_equal(rs.n, 4);
	batch_records_free(&rs);

	/* summaries merge shard directories */
	char shard[300];
	snprintf(shard, sizeof(shard), "%s/shard-1-of-2", dir);
	mkdir(shard, 0755);
	snprintf(path, sizeof(path), "%s/results.jsonl", shard);
	write_text(path, "{\"id\":\"z\",\"repeat\":0,\"status\":\"submitted\",\"score\":1}\n"
			 "{\"id\":\"a\",\"repeat\":0,\"status\":\"submitted\",\"score\":0}\n");
	const char *dirs[] = {dir};
	size_t expected;
	assert_int_equal(batch_collect_into(dirs, 1, &rs, &expected, &err), 0);
	assert_int_equal(rs.n, 5); /* a/0 once: the shard's line, read last, wins */
	struct batch_summary s;
	batch_summarize(&rs, &s);
	assert_int_equal(s.attempts, 5);
	assert_int_equal(s.errors, 0);
	assert_int_equal(s.max_steps, 1);
	batch_records_free(&rs);

	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

static void push_line(struct batch_records *rs, const char *line)
{
	struct batch_record r;
	assert_int_equal(batch_record_parse(line, strlen(line), &r), 0);
	assert_int_equal(batch_records_push(rs, &r), 0);
}

/* Each setup once, however many attempts were forked from it; a group
 * set up twice (resumed) counts both. */
static void test_summary_setups(void **state)
{
	struct batch_records rs = {0};
	push_line(&rs, "{\"id\":\"a\",\"repeat\":0,\"status\":\"submitted\",\"group\":0,\"setup_s\":2,\"setup_run\":\"p-1\"}");
	push_line(&rs, "{\"id\":\"a\",\"repeat\":1,\"status\":\"submitted\",\"group\":0,\"setup_s\":2,\"setup_run\":\"p-1\"}");
	push_line(&rs, "{\"id\":\"a\",\"repeat\":2,\"status\":\"submitted\",\"group\":0,\"setup_s\":3,\"setup_run\":\"p-2\"}");
	push_line(&rs, "{\"id\":\"b\",\"repeat\":0,\"status\":\"error\",\"group\":0,\"setup_s\":0.5,\"setup_run\":\"p-1\"}");
	push_line(&rs, "{\"id\":\"c\",\"repeat\":0,\"status\":\"submitted\",\"setup_s\":9}");
	push_line(&rs, "{\"id\":\"d\",\"repeat\":0,\"status\":\"submitted\",\"group\":-1,\"setup_s\":-4}");
	assert_int_equal(rs.v[4].group, -1);
	assert_int_equal(rs.v[5].group, -1);
	assert_null(rs.v[4].setup_run);
	struct batch_summary s;
	batch_summarize(&rs, &s);
	assert_int_equal(s.grouped, 4);
	assert_int_equal(s.setups, 3);
	assert_true(fabs(s.setup_total_s - 5.5) < 1e-9 && s.setup_max_s == 3);
	batch_records_free(&rs);
}

static void test_keyset(void **state)
{
	struct batch_keyset s = {0};
	char id[32];
	for (int i = 0; i < 5000; i++) {
		snprintf(id, sizeof(id), "task-%d", i);
		assert_int_equal(batch_keyset_add(&s, id, (unsigned)(i % 7)), 0);
	}
	assert_int_equal(s.set.n, 5000);
	assert_true(batch_keyset_has(&s, "task-77", 0));
	assert_false(batch_keyset_has(&s, "task-77", 1));
	assert_false(batch_keyset_has(&s, "task-5000", 2));
	batch_keyset_add(&s, "task-77", 0);
	assert_int_equal(s.set.n, 5000);
	batch_keyset_free(&s);
}

/* ---- export ---- */

static void test_conversation_anthropic(void **state)
{
	const char *text =
		"{\"api\":\"anthropic\",\"system\":\"sys\",\"tools\":[{\"name\":\"execute_bash\","
		"\"description\":\"d\",\"input_schema\":{\"type\":\"object\"}}],\"messages\":["
		"{\"role\":\"user\",\"content\":\"<problem>p</problem>\"},"
		"{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"t\"},"
		"{\"type\":\"text\",\"text\":\"run it\"},{\"type\":\"tool_use\",\"id\":\"tu1\","
		"\"name\":\"execute_bash\",\"input\":{\"command\":\"ls\"}}]},"
		"{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"tu1\","
		"\"content\":\"a.txt\"},{\"type\":\"text\",\"text\":\"Steps remaining: 3\"}]}]}";
	cJSON *conv = cJSON_Parse(text), *tools = NULL;
	cJSON *m = batch_conversation_openai(conv, &tools);
	assert_non_null(m);
	assert_int_equal(cJSON_GetArraySize(m), 5);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(m, 0), "role")->valuestring, "system");
	cJSON *a = cJSON_GetArrayItem(m, 2);
	assert_string_equal(cJSON_GetObjectItem(a, "role")->valuestring, "assistant");
	assert_string_equal(cJSON_GetObjectItem(a, "content")->valuestring, "run it");
	cJSON *tc = cJSON_GetArrayItem(cJSON_GetObjectItem(a, "tool_calls"), 0);
	assert_string_equal(cJSON_GetObjectItem(tc, "id")->valuestring, "tu1");
	cJSON *fn = cJSON_GetObjectItem(tc, "function");
	assert_string_equal(cJSON_GetObjectItem(fn, "arguments")->valuestring, "{\"command\":\"ls\"}");
	cJSON *t = cJSON_GetArrayItem(m, 3);
	assert_string_equal(cJSON_GetObjectItem(t, "role")->valuestring, "tool");
	assert_string_equal(cJSON_GetObjectItem(t, "tool_call_id")->valuestring, "tu1");
	assert_string_equal(cJSON_GetObjectItem(t, "content")->valuestring, "a.txt");
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(m, 4), "role")->valuestring, "user");
	cJSON *f = cJSON_GetObjectItem(cJSON_GetArrayItem(tools, 0), "function");
	assert_string_equal(cJSON_GetObjectItem(f, "name")->valuestring, "execute_bash");
	assert_non_null(cJSON_GetObjectItem(f, "parameters"));
	cJSON_Delete(m);
	cJSON_Delete(tools);
	cJSON_Delete(conv);
}

static void test_conversation_openai(void **state)
{
	const char *text =
		"{\"api\":\"openai\",\"system\":\"sys\",\"tools\":[],\"messages\":["
		"{\"role\":\"user\",\"content\":\"p\"},"
		"{\"role\":\"assistant\",\"content\":\"\",\"reasoning_content\":\"hidden\","
		"\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"submit\","
		"\"arguments\":\"{}\"}}]},"
		"{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"ok\"}]}";
	cJSON *conv = cJSON_Parse(text), *tools = NULL;
	cJSON *m = batch_conversation_openai(conv, &tools);
	assert_int_equal(cJSON_GetArraySize(m), 4);
	cJSON *a = cJSON_GetArrayItem(m, 2);
	assert_null(cJSON_GetObjectItem(a, "reasoning_content"));
	assert_non_null(cJSON_GetObjectItem(a, "tool_calls"));
	cJSON_Delete(m);
	cJSON_Delete(tools);
	cJSON_Delete(conv);
	cJSON *empty = cJSON_Parse("{}");
	assert_null(batch_conversation_openai(empty, NULL));
	cJSON_Delete(empty);

	/* calls after a submit in the same turn were never answered: dropped */
	text = "{\"api\":\"openai\",\"system\":\"sys\",\"tools\":[],\"messages\":["
	       "{\"role\":\"user\",\"content\":\"p\"},"
	       "{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":["
	       "{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"submit\",\"arguments\":\"{}\"}},"
	       "{\"id\":\"c2\",\"type\":\"function\",\"function\":{\"name\":\"execute_bash\",\"arguments\":\"{}\"}}]},"
	       "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"ok\"},"
	       "{\"role\":\"assistant\",\"content\":\"late\",\"tool_calls\":["
	       "{\"id\":\"c3\",\"type\":\"function\",\"function\":{\"name\":\"execute_bash\",\"arguments\":\"{}\"}}]},"
	       "{\"role\":\"tool\",\"tool_call_id\":\"zz\",\"content\":\"orphan\"}]}";
	conv = cJSON_Parse(text);
	m = batch_conversation_openai(conv, &tools);
	assert_int_equal(cJSON_GetArraySize(m), 5);
	a = cJSON_GetArrayItem(m, 2);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(a, "tool_calls")), 1);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(a, "tool_calls"), 0),
						"id")->valuestring, "c1");
	a = cJSON_GetArrayItem(m, 4);
	assert_string_equal(cJSON_GetObjectItem(a, "content")->valuestring, "late");
	assert_null(cJSON_GetObjectItem(a, "tool_calls"));
	cJSON_Delete(m);
	cJSON_Delete(tools);
	cJSON_Delete(conv);
}

/* SWE rows: pytest's -rA summary read per test, SWE-bench's image names,
 * and the verdict. */
static void test_swe(void **state)
{
	(void)state;
	const char *out = "tests/a.py::t1 PASSED\n"
			  "=== short test summary info ===\n"
			  "PASSED tests/a.py::t1\n"
			  "FAILED tests/a.py::t2 - AssertionError: x\n"
			  "XFAIL tests/a.py::t3 - reason\n"
			  "PASSED tests/a.py::t10\n"
			  "ERROR tests/b.py::t4\r\n"
			  "PASSED tests/a.py::t[1 - 2]\n";
	size_t n = strlen(out);
	assert_true(batch_swe_test_passed(out, n, "tests/a.py::t1"));
	assert_false(batch_swe_test_passed(out, n, "tests/a.py::t2"));
	assert_true(batch_swe_test_passed(out, n, "tests/a.py::t3"));   /* xfail counts */
	assert_false(batch_swe_test_passed(out, n, "tests/b.py::t4"));
	assert_false(batch_swe_test_passed(out, n, "tests/a.py::t5"));  /* not named */
	assert_true(batch_swe_test_passed(out, n, "tests/a.py::t[1 - 2]"));
	assert_false(batch_swe_test_passed(out, n, "tests/a.py::t[1")); /* a prefix is not it */

	char img[BATCH_MAX_IMAGE + 1];
	assert_int_equal(batch_swe_image_name("swebench/sweb.eval.x86_64.{swebench_id}:latest",
					      "Django__django-11099", img, sizeof(img)), 0);
	assert_string_equal(img, "swebench/sweb.eval.x86_64.django_1776_django-11099:latest");
	assert_int_equal(batch_swe_image_name("r/{instance_id}", "a__b", img, sizeof(img)), 0);
	assert_string_equal(img, "r/a__b");
	assert_int_equal(batch_swe_image_name("x {instance_id}", "a", img, sizeof(img)), -1);

	struct batch_task t;
	char why[400];
	const char *row = "{\"instance_id\": \"a__b-1\", \"problem_statement\": \"p\", "
			  "\"test_patch\": \"\", \"FAIL_TO_PASS\": \"[\\\"tests/a.py::t2\\\"]\", "
			  "\"PASS_TO_PASS\": [\"tests/a.py::t1\"], \"patch\": \"gold\"}";
	assert_int_equal(batch_swe_task_parse(row, strlen(row), "img/{instance_id}", &t, why,
					      sizeof(why)), 0);
	assert_string_equal(t.id, "a__b-1");
	assert_string_equal(t.image, "img/a__b-1");
	assert_int_equal(t.scorer.kind, BATCH_SCORER_SWE);
	assert_int_equal(t.swe->n_f2p, 1);
	bool resolved;
	cJSON *v = batch_swe_verdict(t.swe, 1, out, n, 0, &resolved);
	assert_false(resolved); /* t2 failed */
	cJSON_Delete(v);
	const char *fixed = "PASSED tests/a.py::t1\nPASSED tests/a.py::t2\n";
	v = batch_swe_verdict(t.swe, 1, fixed, strlen(fixed), 0, &resolved);
	assert_true(resolved); /* the tests decide, not pytest's exit status */
	cJSON_Delete(v);
	batch_task_free(&t);
	const char *bad = "{\"instance_id\": \"x\", \"problem_statement\": \"p\", \"test_patch\": \"\", "
			  "\"FAIL_TO_PASS\": [\"test_x (m.C)\"]}";
	assert_int_equal(batch_swe_task_parse(bad, strlen(bad), NULL, &t, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "eval_script"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact),
		cmocka_unit_test(test_contains),
		cmocka_unit_test(test_numeric_parse),
		cmocka_unit_test(test_numeric_score),
		cmocka_unit_test(test_choice_letters),
		cmocka_unit_test(test_choice_score),
		cmocka_unit_test(test_boxed_extract),
		cmocka_unit_test(test_math_normalize),
		cmocka_unit_test(test_boxed_score),
		cmocka_unit_test(test_score_answer_dispatch),
		cmocka_unit_test(test_checker_verdict),
		cmocka_unit_test(test_pass_at_k),
		cmocka_unit_test(test_task_lines),
		cmocka_unit_test(test_task_setup),
		cmocka_unit_test(test_summary_setups),
		cmocka_unit_test(test_shards_and_names),
		cmocka_unit_test(test_results_compact),
		cmocka_unit_test(test_keyset),
		cmocka_unit_test(test_swe),
		cmocka_unit_test(test_conversation_anthropic),
		cmocka_unit_test(test_conversation_openai),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
