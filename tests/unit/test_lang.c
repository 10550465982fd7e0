/* Unit tests for lang/'s pure parts: the table and its aliases, the
 * availability probe over root directories, the Java class name, the
 * status names and the request checks. */
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

#include "lang/lang.h"

static void test_find(void **state)
{
	(void)state;
	assert_string_equal(lang_find("python")->name, "python");
	assert_string_equal(lang_find("nodejs")->name, "javascript");
	assert_string_equal(lang_find("R")->name, "r");
	assert_string_equal(lang_find("CPP")->name, "cpp");
	assert_string_equal(lang_find("golang")->name, "go");
	assert_string_equal(lang_find("kotlin_script")->name, "kotlin_script");
	assert_string_equal(lang_find("rkt")->name, "racket");
	assert_string_equal(lang_find("scala")->name, "scala");
	assert_null(lang_find("cobol"));
	assert_null(lang_find(""));
	assert_null(lang_find(NULL));
	size_t n;
	const struct lang_def *t = lang_table(&n);
	assert_int_equal(n, 25);
	for (size_t i = 0; i < n; i++)
		assert_ptr_equal(lang_find(t[i].name), &t[i]);
}

static void java(const char *src, const char *want)
{
	char cls[64];
	lang_java_class(src, strlen(src), cls, sizeof(cls));
	assert_string_equal(cls, want);
}

static void test_java_class(void **state)
{
	(void)state;
	java("public class Hello { }", "Hello");
	java("class A {}\npublic final class B {}", "B");
	java("class Only { }", "Only");
	java("// no classes here", "Main");
	java("", "Main");
	java("public class 9bad {}", "Main");
	java("int subclass = 1; public class X$1 {}", "X$1");
	char big[200];
	memset(big, 'a', sizeof(big));
	memcpy(big, "public class ", 13);
	big[sizeof(big) - 1] = '\0';
	char cls[16];
	lang_java_class(big, strlen(big), cls, sizeof(cls));
	assert_string_equal(cls, "Main"); /* too long for out: the default */
}

static void scala(const char *src, const char *want)
{
	char obj[64];
	lang_scala_object(src, strlen(src), obj, sizeof(obj));
	assert_string_equal(obj, want);
}

/* SandboxFusion's find_scala_classname: the first object's name */
static void test_scala_object(void **state)
{
	(void)state;
	scala("object HelloWorld {\n  def main(args: Array[String]) = {}\n}", "HelloWorld");
	scala("    object Main extends App {\n  foo()\n}", "Main");
	scala("case class P(x: Int)\nobject Runner{ }", "Runner");
	scala("val objects = 1\nobject  Tab\tX", "Tab");
	scala("// nothing", "Main");
	scala("object 9x {}", "Main");
	scala("", "Main");
}

static void test_available(void **state)
{
	(void)state;
	char root[] = "/tmp/sc-test-lang.XXXXXX";
	assert_non_null(mkdtemp(root));
	char p[256];
	snprintf(p, sizeof(p), "%s/usr", root);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/usr/bin", root);
	assert_int_equal(mkdir(p, 0755), 0);
	const char *roots[] = {root};
	const struct lang_def *py = lang_find("python"), *java_l = lang_find("java");
	assert_false(lang_available(py, roots, 1));
	snprintf(p, sizeof(p), "%s/usr/bin/python3", root);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fclose(f);
	assert_true(lang_available(py, roots, 1));
	/* java needs both javac and java; a link counts */
	snprintf(p, sizeof(p), "%s/usr/bin/java", root);
	assert_int_equal(symlink("/nonexistent/java", p), 0);
	assert_false(lang_available(java_l, roots, 1));
	char q[256];
	snprintf(q, sizeof(q), "%s/usr/bin/javac", root);
	assert_int_equal(symlink("/nonexistent/javac", q), 0);
	assert_true(lang_available(java_l, roots, 1));
	unlink(q);
	unlink(p);
	snprintf(p, sizeof(p), "%s/usr/bin/python3", root);
	unlink(p);
	snprintf(p, sizeof(p), "%s/usr/bin", root);
	rmdir(p);
	snprintf(p, sizeof(p), "%s/usr", root);
	rmdir(p);
	rmdir(root);
}

static void test_names_and_checks(void **state)
{
	(void)state;
	assert_string_equal(lang_status_name(LANG_SUCCESS), "Success");
	assert_string_equal(lang_status_name(LANG_FAILED), "Failed");
	assert_string_equal(lang_status_name(LANG_SANDBOX_ERROR), "SandboxError");
	assert_string_equal(lang_exec_status_name(LANG_EXEC_FINISHED), "Finished");
	assert_string_equal(lang_exec_status_name(LANG_EXEC_TIME_LIMIT), "TimeLimitExceeded");
	assert_string_equal(lang_exec_status_name(LANG_EXEC_ERROR), "Error");

	/* bad requests fail before any cell is touched (c is never used) */
	struct lang_run_req req;
	lang_run_req_init(&req);
	struct lang_result res;
	struct sc_err err = {0};
	assert_int_equal(lang_run_in(NULL, &req, &res, &err), -1);
	assert_non_null(strstr(err.msg, "no language"));
	req.lang = lang_find("python");
	req.source = "x";
	req.source_len = LANG_MAX_SOURCE + 1;
	assert_int_equal(lang_run_in(NULL, &req, &res, &err), -1);
	assert_non_null(strstr(err.msg, "larger than the limit"));
	req.source_len = 1;
	req.workdir = "relative";
	assert_int_equal(lang_run_in(NULL, &req, &res, &err), -1);
	assert_non_null(strstr(err.msg, "not absolute"));
	lang_result_free(&res);
}

static void test_library_names(void **state)
{
	(void)state;
	assert_true(lang_library_name_ok("numpy"));
	assert_true(lang_library_name_ok("numpy==1.26.4"));
	assert_true(lang_library_name_ok("@types/node"));
	assert_true(lang_library_name_ok("scikit-learn>=1.2"));
	assert_false(lang_library_name_ok(""));
	assert_false(lang_library_name_ok("-e"));           /* an option to the tool */
	assert_false(lang_library_name_ok("--index-url=x"));
	assert_false(lang_library_name_ok("a;b"));
	assert_false(lang_library_name_ok("a b"));
	assert_false(lang_library_name_ok("a\nb"));
	char longname[200];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_false(lang_library_name_ok(longname));
	longname[LANG_MAX_LIBRARY_NAME - 1] = '\0';
	assert_true(lang_library_name_ok(longname));
	longname[LANG_MAX_LIBRARY_NAME - 1] = 'a';
	longname[LANG_MAX_LIBRARY_NAME] = '\0';
	assert_false(lang_library_name_ok(longname));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_java_class),
		cmocka_unit_test(test_scala_object),
		cmocka_unit_test(test_available),
		cmocka_unit_test(test_names_and_checks),
		cmocka_unit_test(test_library_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
