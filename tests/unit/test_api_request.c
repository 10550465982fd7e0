/* The request layer (api/request.c): bad types, bounds, clamps, cell
 * paths with "..", SandboxFusion's files, and what each parser fills in
 * (common/base64.c and common/jsonget.c's strict reads: test_base64.c);
 * and the string encoder of every answer (api/json.c), and what a stream
 * holds back of a cut UTF-8 character (common/utf8.c, api/stream.c). */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/request.h"
#include "common/utf8.h"

static const struct api_limits LIM = {
	.max_timeout_s = 300, .memory = 512ull << 20, .output = 1 << 20, .image = "host"};

static cJSON *obj(const char *json)
{
	cJSON *j = cJSON_Parse(json);
	assert_non_null(j);
	return j;
}

/* ---- typed reads ---- */

static void test_req_typed(void **state)
{
	(void)state;
	cJSON *j = obj("{\"s\":\"x\",\"n\":2.5,\"z\":null,\"b\":true,\"big\":1e999}");
	const char *s;
	double d;
	struct api_bad bad;
	assert_false(api_req_str(j, "n", &s, &bad));
	assert_int_equal(bad.status, 422);
	assert_string_equal(bad.field, "n");
	assert_string_equal(bad.msg, "n: a string");
	assert_false(api_req_num(j, "s", 0, &d, &bad));
	assert_string_equal(bad.msg, "s: a number");
	const cJSON *v;
	assert_false(api_req_typed(j, "s", cJSON_Array, "a list", &v, &bad));
	assert_string_equal(bad.msg, "s: a list");
	assert_true(api_req_typed(j, "b", cJSON_True | cJSON_False, "a boolean", &v, &bad) && v);
	assert_true(api_req_typed(j, "z", cJSON_Array, "a list", &v, &bad) && !v);
	cJSON_Delete(j);
}

static void test_req_object(void **state)
{
	(void)state;
	struct api_bad bad;
	cJSON *j = api_req_object("", 0, true, &bad);
	assert_true(cJSON_IsObject(j));
	cJSON_Delete(j);
	assert_null(api_req_object("", 0, false, &bad));
	assert_int_equal(bad.status, 422);
	assert_null(api_req_object("[1]", 3, false, &bad));
	assert_string_equal(bad.msg, "the body must be a JSON object");
	assert_null(api_req_object("{\"a\":", 5, false, &bad));
	assert_int_equal(bad.status, 422);
	/* the length is the bound, not a NUL */
	j = api_req_object("{}garbage", 2, false, &bad);
	assert_non_null(j);
	cJSON_Delete(j);
}

/* ---- values ---- */

static void test_cell_path(void **state)
{
	(void)state;
	char out[API_CELL_PATH];
	assert_true(api_cell_path("x", out, sizeof(out)));
	assert_string_equal(out, "/testbed/x");
	assert_true(api_cell_path("/a/b", out, sizeof(out)));
	assert_string_equal(out, "/a/b");
	assert_true(api_cell_path("a/..b/...", out, sizeof(out)));
	assert_true(api_cell_path("//x//.", out, sizeof(out)));
	assert_false(api_cell_path("..", out, sizeof(out)));
	assert_false(api_cell_path("../x", out, sizeof(out)));
	assert_false(api_cell_path("a/../b", out, sizeof(out)));
	assert_false(api_cell_path("/a/..", out, sizeof(out)));
	assert_false(api_cell_path("/a//..//b", out, sizeof(out)));
	assert_false(api_cell_path("", out, sizeof(out)));
	assert_false(api_cell_path(NULL, out, sizeof(out)));
	char longp[LANG_MAX_PATH + 1];
	memset(longp, 'a', sizeof(longp) - 1);
	longp[LANG_MAX_PATH] = '\0';
	assert_false(api_cell_path(longp, out, sizeof(out))); /* LANG_MAX_PATH bytes */
	longp[LANG_MAX_PATH - 1] = '\0';
	assert_true(api_cell_path(longp, out, sizeof(out))); /* one less, made absolute */
	assert_int_equal(strlen(out), strlen("/testbed/") + LANG_MAX_PATH - 1);
	assert_false(api_cell_path("x", out, 10));          /* does not fit */
}

static void test_timeout_clamp(void **state)
{
	(void)state;
	assert_true(api_timeout(&LIM, 0, 30) == 30);
	assert_true(api_timeout(&LIM, -5, 30) == 30);
	assert_true(api_timeout(&LIM, NAN, 30) == 30);
	assert_true(api_timeout(&LIM, 2.5, 30) == 2.5);
	assert_true(api_timeout(&LIM, 1e9, 30) == 300);
	assert_true(api_timeout(&LIM, 0, 1000) == 300); /* a default is capped too */
	struct api_limits none = LIM;
	none.max_timeout_s = 0;                          /* no cap */
	assert_true(api_timeout(&none, 1e9, 30) == 1e9);
}

static void test_memory_clamp(void **state)
{
	(void)state;
	assert_int_equal(api_memory_bytes(&LIM, -1), 0);
	assert_int_equal(api_memory_bytes(&LIM, 0), 0);
	assert_int_equal(api_memory_bytes(&LIM, NAN), 0);
	assert_int_equal(api_memory_bytes(&LIM, 0.001), API_MEMORY_MIN);
	assert_int_equal(api_memory_bytes(&LIM, 64), 64ull << 20);
	assert_int_equal(api_memory_bytes(&LIM, 4096), 512ull << 20); /* the server's */
	assert_int_equal(api_memory_bytes(&LIM, 1e300), 512ull << 20);
	struct api_limits none = LIM;
	none.memory = 0;
	assert_int_equal(api_memory_bytes(&none, 4096), 4096ull << 20);
	assert_int_equal(api_memory_bytes(&none, API_MEMORY_HUGE_MB), 1ull << 63);
	assert_int_equal(api_memory_bytes(&none, 1e300), 1ull << 63);
}

static void test_image_and_user(void **state)
{
	(void)state;
	struct api_bad bad;
	assert_true(api_image_ok(&LIM, NULL, &bad));
	assert_true(api_image_ok(&LIM, "host", &bad));
	assert_false(api_image_ok(&LIM, "other", &bad));
	assert_string_equal(bad.field, "image");
	assert_non_null(strstr(bad.msg, "'host'"));
	bool has;
	uint32_t uid = 9, gid = 9;
	cJSON *j = obj("{\"user\":\"0\",\"bad\":\"x:y\",\"num\":5}");
	assert_true(api_req_user(j, &has, &uid, &gid, &bad) && has && uid == 0 && gid == 0);
	cJSON_Delete(j);
	j = obj("{\"user\":\"root!\"}");
	assert_false(api_req_user(j, &has, &uid, &gid, &bad));
	assert_non_null(strstr(bad.msg, "user: expected UID"));
	cJSON_Delete(j);
	j = obj("{\"user\":0}");
	assert_false(api_req_user(j, &has, &uid, &gid, &bad));
	cJSON_Delete(j);
	j = obj("{}");
	assert_true(api_req_user(j, &has, &uid, &gid, &bad) && !has);
	cJSON_Delete(j);
}

static void test_libraries(void **state)
{
	(void)state;
	const char *libs[LANG_MAX_LIBRARIES];
	size_t n;
	struct api_bad bad;
	cJSON *j = obj("{\"l\":[\"numpy==2.0\",\"pandas\"],\"s\":\"numpy\",\"f\":[\"-rf\"],"
		       "\"n\":[1]}");
	assert_true(api_req_libraries(j, "l", libs, &n, &bad));
	assert_int_equal(n, 2);
	assert_string_equal(libs[0], "numpy==2.0");
	assert_true(api_req_libraries(j, "absent", libs, &n, &bad) && n == 0);
	assert_false(api_req_libraries(j, "s", libs, &n, &bad));
	assert_false(api_req_libraries(j, "f", libs, &n, &bad)); /* an option, not a name */
	assert_false(api_req_libraries(j, "n", libs, &n, &bad));
	cJSON_Delete(j);
	cJSON *many = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(many, "l");
	for (int i = 0; i <= LANG_MAX_LIBRARIES; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateString("x"));
	assert_false(api_req_libraries(many, "l", libs, &n, &bad));
	assert_int_equal(bad.status, 422);
	cJSON_Delete(many);
}

static void test_file_entry(void **state)
{
	(void)state;
	cJSON *j = obj("{\"a/b.txt\":\"aGk=\",\"../x\":\"aGk=\",\"n\":5,\"bad\":\"***\"}");
	char path[API_CELL_PATH], why[256], *data;
	size_t len;
	const cJSON *f = j->child;
	assert_true(api_file_entry(f, path, &data, &len, why, sizeof(why)));
	assert_string_equal(path, "/testbed/a/b.txt");
	assert_int_equal(len, 2);
	assert_memory_equal(data, "hi", 2);
	free(data);
	f = f->next;
	assert_false(api_file_entry(f, path, &data, &len, why, sizeof(why)));
	assert_non_null(strstr(why, "bad path"));
	f = f->next;
	assert_false(api_file_entry(f, path, &data, &len, why, sizeof(why)));
	assert_non_null(strstr(why, "base64 string"));
	f = f->next;
	assert_false(api_file_entry(f, path, &data, &len, why, sizeof(why)));
	assert_non_null(strstr(why, "not base64"));
	assert_null(data);
	cJSON_Delete(j);
}

/* ---- code ---- */

static int run(const char *json, enum api_run_kind kind, struct api_run *r, struct api_bad *bad,
	       cJSON **keep)
{
	*keep = obj(json);
	return api_parse_run(*keep, kind, &LIM, NULL, r, bad);
}

static void test_parse_run_defaults(void **state)
{
	(void)state;
	struct api_run r;
	struct api_bad bad;
	cJSON *j;
	/* SandboxFusion's: 10 s each, python */
	assert_int_equal(run("{\"code\":\"print(1)\"}", API_RUN_SANDBOXFUSION, &r, &bad, &j), 0);
	assert_string_equal(r.lang->name, "python");
	assert_true(r.run.run_timeout_s == API_SF_TIMEOUT_DEFAULT);
	assert_true(r.run.compile_timeout_s == API_SF_TIMEOUT_DEFAULT);
	assert_true(r.memory_mb == -1);
	assert_int_equal(r.run.output_limit, LIM.output);
	assert_null(r.run.workdir);
	assert_null(r.stdin_s);
	cJSON_Delete(j);
	/* ours: 30 s; the compile gets at least as long as the run */
	assert_int_equal(run("{\"code\":\"x\"}", API_RUN_CELL, &r, &bad, &j), 0);
	assert_true(r.run.run_timeout_s == API_TIMEOUT_DEFAULT);
	assert_true(r.session.timeout_s == API_TIMEOUT_DEFAULT);
	assert_true(r.run.compile_timeout_s == LANG_DEFAULT_COMPILE_TIMEOUT);
	cJSON_Delete(j);
	assert_int_equal(run("{\"code\":\"x\",\"timeout\":120}", API_RUN_CELL, &r, &bad, &j), 0);
	assert_true(r.run.run_timeout_s == 120 && r.run.compile_timeout_s == 120);
	cJSON_Delete(j);
	assert_int_equal(run("{\"code\":\"x\",\"timeout\":120,\"run_timeout\":5,"
			     "\"compile_timeout\":7}", API_RUN_CELL, &r, &bad, &j), 0);
	assert_true(r.run.run_timeout_s == 5 && r.run.compile_timeout_s == 7);
	cJSON_Delete(j);
	/* SandboxFusion has no "timeout"; every timeout is cut to the cap */
	assert_int_equal(run("{\"code\":\"x\",\"timeout\":120,\"run_timeout\":1e6,"
			     "\"compile_timeout\":-1}", API_RUN_SANDBOXFUSION, &r, &bad, &j), 0);
	assert_true(r.run.run_timeout_s == 300 && r.run.compile_timeout_s == 10);
	cJSON_Delete(j);
}

static void test_parse_run_members(void **state)
{
	(void)state;
	struct api_run r;
	struct api_bad bad;
	cJSON *j;
	assert_int_equal(run("{\"code\":\"x\",\"language\":\"cpp\",\"stdin\":\"1 2\","
			     "\"workdir\":\"w\",\"libraries\":[\"a\"],\"clear_plots\":true}",
			     API_RUN_CELL, &r, &bad, &j), 0);
	assert_string_equal(r.lang->name, "cpp");
	assert_string_equal(r.stdin_s, "1 2");
	assert_int_equal(r.stdin_len, 3);
	assert_string_equal(r.run.workdir, "/testbed/w");
	assert_ptr_equal(r.run.workdir, r.workdir);
	assert_int_equal(r.run.nlibraries, 1);
	assert_int_equal(r.session.nlibraries, 1);
	assert_true(r.session.clear_plots);
	assert_false(r.run.has_network);
	cJSON_Delete(j);
	assert_int_equal(run("{\"code\":\"x\",\"files\":{\"a\":\"aGk=\"},\"fetch_files\":[\"o\"],"
			     "\"memory_limit_MB\":64}", API_RUN_SANDBOXFUSION, &r, &bad, &j), 0);
	assert_non_null(r.files);
	assert_int_equal(r.run.nfetch, 1);
	assert_string_equal(r.run.fetch[0], "o");
	assert_true(r.memory_mb == 64);
	cJSON_Delete(j);
	/* a member of the other vocabulary is not read */
	assert_int_equal(run("{\"code\":\"x\",\"workdir\":\"../x\",\"libraries\":7}",
			     API_RUN_SANDBOXFUSION, &r, &bad, &j), 0);
	assert_null(r.run.workdir);
	cJSON_Delete(j);
	/* the caller's default language (an MCP session's) */
	j = obj("{\"code\":\"x\"}");
	assert_int_equal(api_parse_run(j, API_RUN_CELL, &LIM, lang_find("javascript"), &r, &bad), 0);
	assert_string_equal(r.lang->name, "javascript");
	cJSON_Delete(j);
}

static void expect_run_bad(const char *json, enum api_run_kind kind, int status,
			   const char *field)
{
	struct api_run r;
	struct api_bad bad;
	cJSON *j;
	assert_int_equal(run(json, kind, &r, &bad, &j), -1);
	assert_int_equal(bad.status, status);
	assert_string_equal(bad.field, field);
	assert_non_null(strstr(bad.msg, field));
	assert_null(strchr(bad.msg, '\n'));
	cJSON_Delete(j);
}

static void test_parse_run_refused(void **state)
{
	(void)state;
	expect_run_bad("{}", API_RUN_CELL, 422, "code");
	expect_run_bad("{\"code\":5}", API_RUN_SANDBOXFUSION, 422, "code");
	expect_run_bad("{\"code\":null}", API_RUN_CELL, 422, "code");
	expect_run_bad("{\"code\":\"x\",\"language\":1}", API_RUN_CELL, 422, "language");
	expect_run_bad("{\"code\":\"x\",\"language\":\"cobol-77\"}", API_RUN_SANDBOXFUSION, 422,
		       "language");
	expect_run_bad("{\"code\":\"x\",\"stdin\":[]}", API_RUN_CELL, 422, "stdin");
	expect_run_bad("{\"code\":\"x\",\"timeout\":\"5\"}", API_RUN_CELL, 422, "timeout");
	expect_run_bad("{\"code\":\"x\",\"run_timeout\":true}", API_RUN_SANDBOXFUSION, 422,
		       "run_timeout");
	expect_run_bad("{\"code\":\"x\",\"compile_timeout\":{}}", API_RUN_CELL, 422,
		       "compile_timeout");
	expect_run_bad("{\"code\":\"x\",\"memory_limit_MB\":\"1G\"}", API_RUN_SANDBOXFUSION, 422,
		       "memory_limit_MB");
	expect_run_bad("{\"code\":\"x\",\"files\":[]}", API_RUN_SANDBOXFUSION, 422, "files");
	expect_run_bad("{\"code\":\"x\",\"fetch_files\":\"o\"}", API_RUN_SANDBOXFUSION, 422,
		       "fetch_files");
	expect_run_bad("{\"code\":\"x\",\"fetch_files\":[1]}", API_RUN_SANDBOXFUSION, 422,
		       "fetch_files");
	expect_run_bad("{\"code\":\"x\",\"workdir\":\"a/../../etc\"}", API_RUN_CELL, 422, "workdir");
	expect_run_bad("{\"code\":\"x\",\"clear_plots\":1}", API_RUN_SESSION, 422, "clear_plots");
	expect_run_bad("{\"code\":\"x\",\"libraries\":\"a\"}", API_RUN_CELL, 422, "libraries");
	expect_run_bad("{\"code\":\"x\",\"language\":\"cpp\"}", API_RUN_SESSION, 422, "language");
	/* 33 paths to fetch */
	cJSON *j = obj("{\"code\":\"x\"}"), *arr = cJSON_AddArrayToObject(j, "fetch_files");
	for (int i = 0; i <= LANG_MAX_FETCH; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateString("o"));
	struct api_run r;
	struct api_bad bad;
	assert_int_equal(api_parse_run(j, API_RUN_SANDBOXFUSION, &LIM, NULL, &r, &bad), -1);
	assert_string_equal(bad.field, "fetch_files");
	cJSON_Delete(j);
	/* a source over LANG_MAX_SOURCE: 413 (SandboxFusion's is lang's to refuse) */
	char *big = malloc(LANG_MAX_SOURCE + 2);
	memset(big, 'x', LANG_MAX_SOURCE + 1);
	big[LANG_MAX_SOURCE + 1] = '\0';
	j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "code", big);
	assert_int_equal(api_parse_run(j, API_RUN_CELL, &LIM, NULL, &r, &bad), -1);
	assert_int_equal(bad.status, 413);
	assert_int_equal(api_parse_run(j, API_RUN_SANDBOXFUSION, &LIM, NULL, &r, &bad), 0);
	cJSON_Delete(j);
	free(big);
}

/* ---- exec ---- */

static void test_parse_exec(void **state)
{
	(void)state;
	struct api_exec x;
	struct api_bad bad;
	cJSON *j = obj("{\"cmd\":\"echo hi\",\"cwd\":\"sub\",\"env\":{\"A\":\"1\",\"B\":\"x y\"},"
		       "\"stdin\":\"in\",\"timeout\":1e9}");
	assert_int_equal(api_parse_exec(j, &API_EXEC_HTTP, &LIM, &x, &bad), 0);
	assert_string_equal(x.req.argv[0], "/bin/sh");
	assert_string_equal(x.req.argv[1], "-c");
	assert_string_equal(x.req.argv[2], "echo hi");
	assert_null(x.req.argv[3]);
	assert_string_equal(x.req.cwd, "/testbed/sub");
	assert_string_equal(x.req.env[0], "A=1");
	assert_string_equal(x.req.env[1], "B=x y");
	assert_null(x.req.env[2]);
	assert_string_equal(x.stdin_s, "in");
	assert_true(x.req.timeout_s == 300);
	assert_int_equal(x.req.output_limit, LIM.output);
	assert_int_equal(x.req.stdin_fd, -1);
	assert_int_equal(x.req.stdout_fd, -1);
	assert_false(x.req.has_user);
	api_exec_free(&x);
	cJSON_Delete(j);
	j = obj("{\"command\":\"ls\",\"user\":\"0\"}");
	assert_int_equal(api_parse_exec(j, &API_EXEC_MCP, &LIM, &x, &bad), 0);
	assert_string_equal(x.req.argv[0], "bash");
	assert_null(x.req.env);
	assert_null(x.req.cwd);
	assert_true(x.req.timeout_s == API_TIMEOUT_DEFAULT);
	assert_true(x.req.has_user);
	api_exec_free(&x);
	cJSON_Delete(j);
	j = obj("{\"argv\":[\"/bin/echo\",\"a b\"]}");
	assert_int_equal(api_parse_exec(j, &API_EXEC_HTTP, &LIM, &x, &bad), 0);
	assert_string_equal(x.req.argv[1], "a b");
	assert_null(x.req.argv[2]);
	api_exec_free(&x);
	cJSON_Delete(j);
}

static void expect_exec_bad(const char *json, const struct api_exec_style *st, const char *field)
{
	struct api_exec x;
	struct api_bad bad;
	cJSON *j = obj(json);
	assert_int_equal(api_parse_exec(j, st, &LIM, &x, &bad), -1);
	assert_int_equal(bad.status, 422);
	assert_string_equal(bad.field, field);
	assert_int_equal(x.nenv, 0); /* nothing left to free */
	cJSON_Delete(j);
}

static void test_parse_exec_refused(void **state)
{
	(void)state;
	expect_exec_bad("{}", &API_EXEC_HTTP, "cmd");
	expect_exec_bad("{\"command\":\"ls\"}", &API_EXEC_HTTP, "cmd");   /* MCP's word */
	expect_exec_bad("{\"cmd\":\"ls\"}", &API_EXEC_MCP, "command");
	expect_exec_bad("{\"cmd\":\"ls\",\"argv\":[\"ls\"]}", &API_EXEC_HTTP, "cmd"); /* both */
	expect_exec_bad("{\"argv\":\"ls\"}", &API_EXEC_HTTP, "cmd");
	expect_exec_bad("{\"argv\":[]}", &API_EXEC_HTTP, "cmd");
	expect_exec_bad("{\"argv\":[\"ls\",1]}", &API_EXEC_HTTP, "argv");
	expect_exec_bad("{\"cmd\":7}", &API_EXEC_HTTP, "cmd");
	expect_exec_bad("{\"cmd\":\"ls\",\"cwd\":\"/a/../..\"}", &API_EXEC_HTTP, "cwd");
	expect_exec_bad("{\"cmd\":\"ls\",\"cwd\":5}", &API_EXEC_HTTP, "cwd");
	expect_exec_bad("{\"cmd\":\"ls\",\"timeout\":\"1\"}", &API_EXEC_HTTP, "timeout");
	expect_exec_bad("{\"cmd\":\"ls\",\"env\":[\"A=1\"]}", &API_EXEC_HTTP, "env");
	expect_exec_bad("{\"cmd\":\"ls\",\"env\":{\"A\":\"1\",\"B\":2}}", &API_EXEC_HTTP, "env");
	expect_exec_bad("{\"cmd\":\"ls\",\"env\":{\"A\":\"1\",\"B=C\":\"2\"}}", &API_EXEC_HTTP, "env");
	expect_exec_bad("{\"cmd\":\"ls\",\"env\":{\"A\":\"1\"},\"user\":\"x:y:z\"}", &API_EXEC_HTTP,
			"user");
	/* argv: at most API_MAX_ARGV */
	cJSON *j = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(j, "argv");
	for (int i = 0; i <= API_MAX_ARGV; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateString("a"));
	struct api_exec x;
	struct api_bad bad;
	assert_int_equal(api_parse_exec(j, &API_EXEC_HTTP, &LIM, &x, &bad), -1);
	assert_string_equal(bad.field, "argv");
	cJSON_DeleteItemFromArray(arr, 0);
	assert_int_equal(api_parse_exec(j, &API_EXEC_HTTP, &LIM, &x, &bad), 0);
	assert_null(x.req.argv[API_MAX_ARGV]);
	cJSON_Delete(j);
}

static void test_parse_cell_new(void **state)
{
	(void)state;
	struct api_cell_new c;
	struct api_bad bad;
	cJSON *j = obj("{}");
	assert_int_equal(api_parse_cell_new(j, &LIM, 600, &c, &bad), 0);
	assert_true(c.idle_s == 600 && c.memory_mb == -1 && !c.has_user);
	cJSON_Delete(j);
	j = obj("{\"idle_timeout\":1e9,\"memory_limit_MB\":64,\"image\":\"host\"}");
	assert_int_equal(api_parse_cell_new(j, &LIM, 600, &c, &bad), 0);
	assert_true(c.idle_s == 600 && c.memory_mb == 64);
	cJSON_Delete(j);
	j = obj("{\"idle_timeout\":-3}");
	assert_int_equal(api_parse_cell_new(j, &LIM, 600, &c, &bad), 0);
	assert_true(c.idle_s == 600);
	cJSON_Delete(j);
	j = obj("{\"image\":\"debian\"}");
	assert_int_equal(api_parse_cell_new(j, &LIM, 600, &c, &bad), -1);
	assert_string_equal(bad.field, "image");
	cJSON_Delete(j);
	j = obj("{\"idle_timeout\":\"1\"}");
	assert_int_equal(api_parse_cell_new(j, &LIM, 600, &c, &bad), -1);
	assert_string_equal(bad.field, "idle_timeout");
	cJSON_Delete(j);
}

static void test_parse_fork(void **state)
{
	(void)state;
	static const struct {
		const char *json;
		int rc;
		unsigned count;
	} cases[] = {
		{"{}", 0, 1},		   {"{\"count\":null}", 0, 1}, {"{\"count\":3}", 0, 3},
		{"{\"count\":100}", 0, 100}, {"{\"count\":0}", -1, 0},    {"{\"count\":101}", -1, 0},
		{"{\"count\":-1}", -1, 0},   {"{\"count\":1.5}", -1, 0},  {"{\"count\":1e300}", -1, 0},
		{"{\"count\":\"2\"}", -1, 0},
	};
	for (size_t i = 0; i < SC_ARRAY_LEN(cases); i++) {
		struct api_bad bad;
		unsigned count = 7;
		bool replay = true;
		cJSON *j = obj(cases[i].json);
		assert_int_equal(api_parse_fork(j, &count, &replay, &bad), cases[i].rc);
		if (cases[i].rc == 0)
			assert_false(replay);
		if (cases[i].rc == 0)
			assert_int_equal(count, cases[i].count);
		else
			assert_true(bad.status == 422 && !strcmp(bad.field, "count"));
		cJSON_Delete(j);
	}
}

static void test_parse_fork_replay(void **state)
{
	(void)state;
	static const struct {
		const char *json;
		int rc;
		bool replay;
	} cases[] = {
		{"{\"replay_sessions\":true}", 0, true},
		{"{\"replay_sessions\":false,\"count\":2}", 0, false},
		{"{\"replay_sessions\":1}", -1, false},
		{"{\"replay_sessions\":\"yes\"}", -1, false},
	};
	for (size_t i = 0; i < SC_ARRAY_LEN(cases); i++) {
		struct api_bad bad;
		unsigned count;
		bool replay = !cases[i].replay;
		cJSON *j = obj(cases[i].json);
		assert_int_equal(api_parse_fork(j, &count, &replay, &bad), cases[i].rc);
		if (cases[i].rc == 0)
			assert_int_equal(replay, cases[i].replay);
		else
			assert_true(bad.status == 422 && !strcmp(bad.field, "replay_sessions"));
		cJSON_Delete(j);
	}
}

static void test_parse_tag(void **state)
{
	(void)state;
	char tag[64];
	struct api_bad bad;
	cJSON *j = obj("{}");
	assert_int_equal(api_parse_tag(j, false, tag, &bad), 0);
	assert_string_equal(tag, "");
	assert_int_equal(api_parse_tag(j, true, tag, &bad), -1);
	assert_string_equal(bad.field, "tag");
	cJSON_Delete(j);
	j = obj("{\"tag\":\"t1.a_b-c\"}");
	assert_int_equal(api_parse_tag(j, true, tag, &bad), 0);
	assert_string_equal(tag, "t1.a_b-c");
	cJSON_Delete(j);
	static const char *bad_tags[] = {"", "-x", ".x", "a b", "../x", "a/b",
		"x123456789012345678901234567890123456789012345678901234567890123"};
	for (size_t i = 0; i < SC_ARRAY_LEN(bad_tags); i++) {
		assert_false(api_tag_ok(bad_tags[i], true, tag, &bad));
		assert_int_equal(bad.status, 422);
	}
	assert_true(api_tag_ok(NULL, false, tag, &bad));
	j = obj("{\"tag\":5}");
	assert_int_equal(api_parse_tag(j, false, tag, &bad), -1);
	cJSON_Delete(j);
}

/* ---- the string encoder every answer uses ---- */

static void expect_json(const char *in, size_t n, const char *out)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	api_json_string(f, in, n);
	assert_int_equal(fclose(f), 0);
	assert_string_equal(buf, out);
	free(buf);
}

static void test_json_string(void **state)
{
	(void)state;
	expect_json("", 0, "\"\"");
	expect_json("plain text", 10, "\"plain text\"");
	expect_json("a\"b\\c/", 6, "\"a\\\"b\\\\c/\"");
	expect_json("\n\r\t\x01\x7f", 5, "\"\\n\\r\\t\\u0001\\u007f\"");
	expect_json("x\0y", 3, "\"x\\u0000y\"");
	expect_json("h\xc3\xa9!", 4, "\"h\xc3\xa9!\"");          /* UTF-8 passes */
	expect_json("\xc3(\xff", 3, "\"\\ufffd(\\ufffd\"");     /* broken: U+FFFD */
	expect_json("\xe2\x82", 2, "\"\\ufffd\\ufffd\"");        /* cut short */
	expect_json(NULL, 0, "\"\"");
}

/* ---- a stream's hold-back ---- */

static void test_utf8_unfinished(void **state)
{
	(void)state;
	const unsigned char *u = (const unsigned char *)"a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";
	assert_int_equal(sc_utf8_unfinished(u, 0), 0);
	assert_int_equal(sc_utf8_unfinished(u, 1), 0);  /* "a" */
	assert_int_equal(sc_utf8_unfinished(u, 2), 1);  /* lead of a 2-byte char */
	assert_int_equal(sc_utf8_unfinished(u, 3), 0);  /* U+00E9 whole */
	assert_int_equal(sc_utf8_unfinished(u, 5), 2);  /* 2 of U+20AC's 3 */
	assert_int_equal(sc_utf8_unfinished(u, 6), 0);
	assert_int_equal(sc_utf8_unfinished(u, 9), 3);  /* 3 of U+1F600's 4 */
	assert_int_equal(sc_utf8_unfinished(u, 10), 0);
	/* stray continuation bytes, bytes that lead nothing: nothing held */
	assert_int_equal(sc_utf8_unfinished((const unsigned char *)"\x80\x80\x80\x80", 4), 0);
	assert_int_equal(sc_utf8_unfinished((const unsigned char *)"a\xff", 2), 0);
	/* a lead byte is enough (what it leads is judged when encoded) */
	assert_int_equal(sc_utf8_unfinished((const unsigned char *)"\xc0", 1), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_req_typed),
		cmocka_unit_test(test_req_object),
		cmocka_unit_test(test_cell_path),
		cmocka_unit_test(test_timeout_clamp),
		cmocka_unit_test(test_memory_clamp),
		cmocka_unit_test(test_image_and_user),
		cmocka_unit_test(test_libraries),
		cmocka_unit_test(test_file_entry),
		cmocka_unit_test(test_parse_run_defaults),
		cmocka_unit_test(test_parse_run_members),
		cmocka_unit_test(test_parse_run_refused),
		cmocka_unit_test(test_parse_exec),
		cmocka_unit_test(test_parse_exec_refused),
		cmocka_unit_test(test_parse_cell_new),
		cmocka_unit_test(test_parse_fork),
		cmocka_unit_test(test_parse_fork_replay),
		cmocka_unit_test(test_parse_tag),
		cmocka_unit_test(test_json_string),
		cmocka_unit_test(test_utf8_unfinished),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
