/* Unit tests: policy_load_deferred gives the same filter as the full
 * parse, from the cache or not, and still refuses what the full parse
 * refuses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "policy/policy.h"

static char dir[128];

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/sc-deferred.XXXXXX");
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int teardown(void **state)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static const char *write_doc(const char *name, const char *text)
{
	static char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

static void same_filter_as(const char *name_or_file, bool deferred)
{
	struct policy eager, lazy;
	struct policy_filter a, b, c;
	struct sc_err err = {0};
	assert_int_equal(policy_load(name_or_file, &eager, &err), 0);
	assert_int_equal(policy_load_deferred(name_or_file, &lazy, &err), 0);
	assert_int_equal(lazy.seccomp_pending, deferred);
	assert_int_equal(lazy.seccomp == NULL, deferred);
	assert_int_equal(policy_compile_filter(&eager, NULL, &a, &err), 0);
	assert_int_equal(policy_compile_filter(&lazy, dir, &b, &err), 0); /* miss */
	assert_int_equal(policy_compile_filter(&lazy, dir, &c, &err), 0); /* hit */
	assert_true(a.count > 0);
	assert_int_equal(a.count, b.count);
	assert_int_equal(b.count, c.count);
	assert_memory_equal(a.insns, b.insns, a.count * 8);
	assert_memory_equal(b.insns, c.insns, b.count * 8);
	policy_filter_free(&a);
	policy_filter_free(&b);
	policy_filter_free(&c);
	policy_free(&eager);
	policy_free(&lazy);
}

static void same_filter(const char *name_or_file) { same_filter_as(name_or_file, true); }

static void test_builtins(void **state)
{
	same_filter("default");
	same_filter("strict");
	struct policy p;
	struct sc_err err = {0};
	assert_int_equal(policy_load_deferred("strict", &p, &err), 0);
	assert_true(p.no_writable_binds);
	assert_int_equal(p.limits.pids, 64);
	policy_free(&p);
}

static void test_member_positions(void **state)
{
	same_filter(write_doc("first.json",
			      "{\"seccomp\": {\"default_action\": \"allow\", \"deny\": [{\"names\": [\"mount\"], \"errno\": \"EPERM\"}]},"
			      " \"hostname\": \"h1\"}"));
	same_filter(write_doc("last.json",
			      "{\"hostname\": \"h1\", \"seccomp\": {\"default_action\": \"allow\","
			      " \"deny\": [{\"names\": [\"mount\"], \"errno\": \"EPERM\"}]}}"));
	same_filter(write_doc("only.json",
			      "{\"seccomp\": {\"default_action\": \"allow\", \"deny\": [{\"names\": [\"mount\"], \"errno\": \"EPERM\"}]}}"));
	same_filter(write_doc("missing.json", "{\"hostname\": \"h1\"}"));
	same_filter(write_doc("strings.json",
			      "{\"description\": \"a } brace and \\\"quote\\\" [\", \"seccomp\":"
			      " {\"default_action\": \"allow\", \"deny\": [{\"names\": [\"mount\"], \"errno\": \"EPERM\"}]}}"));
}

static void test_null_and_escaped(void **state)
{
	struct policy p;
	struct policy_filter f;
	struct sc_err err = {0};
	assert_int_equal(policy_load_deferred(write_doc("null.json", "{\"seccomp\": null}"), &p, &err), 0);
	assert_false(p.seccomp_pending);
	assert_int_equal(policy_compile_filter(&p, dir, &f, &err), 0);
	assert_int_equal(f.count, 0);
	policy_free(&p);
	/* An escaped key is not cut out by the scanner: the full parse takes it. */
	same_filter_as(write_doc("escaped.json",
			      "{\"secc\\u006fmp\": {\"default_action\": \"allow\", \"deny\": [{\"names\": [\"mount\"], \"errno\": \"EPERM\"}]}}"),
		       false);
}

static void test_errors_still_refused(void **state)
{
	struct policy p;
	struct policy_filter f;
	struct sc_err err = {0};
	/* An unknown syscall is found when the text is compiled... */
	const char *bad = write_doc("bad.json",
				    "{\"seccomp\": {\"default_action\": \"allow\", \"deny\": [\"bogus_call\"]}}");
	assert_int_equal(policy_load_deferred(bad, &p, &err), 0);
	assert_int_equal(policy_compile_filter(&p, dir, &f, &err), -1);
	assert_non_null(strstr(err.msg, "seccomp.deny[0]"));
	assert_non_null(strstr(err.msg, "bogus_call"));
	/* ...every time: nothing was cached for it. */
	assert_int_equal(policy_compile_filter(&p, dir, &f, &err), -1);
	policy_free(&p);
	/* Errors outside seccomp come with their path, and duplicates too. */
	assert_int_equal(policy_load_deferred(write_doc("lim.json", "{\"limits\": {\"memory\": \"lots\"},"
								  " \"seccomp\": null}"),
					      &p, &err),
			 -1);
	assert_non_null(strstr(err.msg, "limits.memory"));
	assert_int_equal(policy_load_deferred(write_doc("dup.json", "{\"seccomp\": null, \"seccomp\": null}"),
					      &p, &err),
			 -1);
	assert_int_equal(policy_load_deferred(write_doc("syntax.json", "{\"hostname\": \"h\", \"seccomp\": {]}"),
					      &p, &err) == 0 &&
				 policy_compile_filter(&p, dir, &f, &err) == 0,
			 0);
	policy_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_builtins, setup, teardown),
		cmocka_unit_test_setup_teardown(test_member_positions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_null_and_escaped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors_still_refused, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
