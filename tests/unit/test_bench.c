/* batch/bench.c: benchmark folders of the LLM-in-Sandbox harness — the
 * data path, problems as tasks, input files staged beneath a directory,
 * and the helper's verdict line. */
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "batch/batch_priv.h"

static char tmp[256];

static void put(const char *rel, const char *text)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", tmp, rel);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	snprintf(tmp, sizeof(tmp), "/tmp/test_bench.XXXXXX");
	assert_non_null(mkdtemp(tmp));
	char p[512];
	snprintf(p, sizeof(p), "%s/demo", tmp);
	assert_int_equal(mkdir(p, 0755), 0);
	return 0;
}

static int teardown(void **state)
{
	sc_remove_tree(tmp);
	return 0;
}

static unsigned bad_lines[16], nbad;
static void note_bad(void *arg, unsigned line, const char *why)
{
	if (nbad < 16)
		bad_lines[nbad++] = line;
}

static void test_result_line(void **state)
{
	const char out[] = "SANDCELL-RESULT {\"score\": 0.1}\nprinted SANDCELL-RESULT {\"score\": 9}\n"
			   "\nSANDCELL-RESULT {\"score\": 0.5}\n";
	cJSON *v = batch_bench_parse_result(out, strlen(out));
	assert_non_null(v);
	assert_true(cJSON_GetObjectItem(v, "score")->valuedouble == 0.5);
	cJSON_Delete(v);
	const char junk[] = "SANDCELL-RESULT [1]\n";
	assert_null(batch_bench_parse_result(junk, strlen(junk)));
	assert_null(batch_bench_parse_result("nothing\n", 8));
	const char cut[] = "\nSANDCELL-RESULT {\"score\": 1";
	assert_null(batch_bench_parse_result(cut, strlen(cut)));
}

static void test_data_path(void **state)
{
	char *out = NULL, dir[300];
	struct sc_err err = {0};
	snprintf(dir, sizeof(dir), "%s/demo", tmp);
	put("demo/config.yaml", "dataset: json\ndata_files: demo/data.json\n"
				"system_prompt: s\ninstance_prompt: i\n");
	assert_int_equal(batch_benchmark_data_path(dir, NULL, &out, &err), 0);
	char real[PATH_MAX], want[PATH_MAX + 32];
	assert_non_null(realpath(tmp, real));
	snprintf(want, sizeof(want), "%s/demo/data.json", real);
	assert_string_equal(out, want); /* relative to the folder's parent */
	free(out);
	put("demo/config.yaml", "dataset: \"org/bench\"\nconfig: math\n"
				"system_prompt: s\ninstance_prompt: i\n");
	assert_int_equal(batch_benchmark_data_path(dir, NULL, &out, &err), -1);
	assert_non_null(strstr(err.msg, "org/bench"));
	assert_non_null(strstr(err.msg, "--data FILE"));
	assert_int_equal(batch_benchmark_data_path(dir, "/x/given.jsonl", &out, &err), 0);
	assert_string_equal(out, "/x/given.jsonl");
	free(out);
}

static void test_load(void **state)
{
	put("d.json", "[{\"id\": 1, \"problem_statement\": \"p\", \"ground_truth\": 5,\n"
		      "  \"input_files\": \"{\\\"a/b.txt\\\": \\\"x\\\"}\"},\n"
		      " {\"id\": \"2\", \"problem_statement\": \"q\", \"ground_truth\": \"y\"},\n"
		      " {\"id\": \"3\", \"problem_statement\": \"q\"},\n"
		      " {\"id\": \"4\", \"problem_statement\": \"q\", \"ground_truth\": \"y\", "
		      "\"input_files\": {\"../up\": \"no\"}},\n"
		      " {\"id\": \"5\", \"problem_statement\": \"q\", \"ground_truth\": \"y\", "
		      "\"input_files\": {\"a/./b\": \"no\"}},\n"
		      " {\"id\": \"2\", \"problem_statement\": \"dup\", \"ground_truth\": \"y\"}]\n");
	char p[512];
	snprintf(p, sizeof(p), "%s/d.json", tmp);
	struct batch_tasks ts;
	struct sc_err err = {0};
	nbad = 0;
	assert_int_equal(batch_bench_load(p, &ts, note_bad, NULL, &err), 0);
	assert_int_equal(ts.n, 2);
	assert_int_equal(nbad, 4);
	assert_int_equal(bad_lines[0], 3); /* elements, from 1 */
	assert_int_equal(bad_lines[3], 6);
	assert_string_equal(ts.v[0].id, "1");
	assert_string_equal(ts.v[0].expected, "5");
	assert_int_equal(ts.v[0].scorer.kind, BATCH_SCORER_REWARD);
	assert_non_null(cJSON_GetObjectItem(ts.v[0].input_files, "a/b.txt"));
	assert_true(cJSON_IsNumber(cJSON_GetObjectItem(ts.v[0].record, "ground_truth")));

	char stage[600];
	snprintf(stage, sizeof(stage), "%s/stage", tmp);
	assert_int_equal(batch_bench_stage_inputs(&ts.v[0], stage, &err), 0);
	char f[700], buf[8] = "";
	snprintf(f, sizeof(f), "%s/a/b.txt", stage);
	int fd = open(f, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf)), 1);
	close(fd);
	assert_string_equal(buf, "x");
	batch_tasks_free(&ts);

	/* JSON Lines: numbered by line, blank lines skipped */
	put("d.jsonl", "{\"id\": \"a\", \"problem_statement\": \"p\", \"ground_truth\": null}\n\n"
		       "not json\n{\"id\": \"b\", \"problem_statement\": \"p\", \"ground_truth\": [1]}");
	snprintf(p, sizeof(p), "%s/d.jsonl", tmp);
	nbad = 0;
	assert_int_equal(batch_bench_load(p, &ts, note_bad, NULL, &err), 0);
	assert_int_equal(ts.n, 2);
	assert_int_equal(nbad, 1);
	assert_int_equal(bad_lines[0], 3);
	assert_null(ts.v[0].expected);
	assert_string_equal(ts.v[1].expected, "[1]");
	batch_tasks_free(&ts);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_result_line),
		cmocka_unit_test_setup_teardown(test_data_path, setup, teardown),
		cmocka_unit_test_setup_teardown(test_load, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
