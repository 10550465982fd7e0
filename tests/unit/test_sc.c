/* common/sc.c: the error idiom (sc_fail, sc_err_wrap, sc_err_hint) and the
 * log sink. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "common/sc.h"

static void wrap_puts_context_in_front(void **state)
{
	struct sc_err err = {0};
	sc_fail(&err, ENOENT, "open %s", "/x/layer");
	assert_int_equal(sc_err_wrap(&err, "image '%s'", "deb"), -1);
	assert_string_equal(err.msg, "image 'deb': open /x/layer: No such file or directory");
	assert_int_equal(err.errnum, ENOENT);
}

static void wrap_of_empty_error_is_the_context(void **state)
{
	struct sc_err err = {0};
	sc_err_wrap(&err, "cell %s", "a");
	assert_string_equal(err.msg, "cell a");
	assert_int_equal(err.errnum, 0);
}

static void wrap_and_fail_accept_null(void **state)
{
	assert_int_equal(sc_err_wrap(NULL, "x %d", 1), -1);
	assert_int_equal(sc_fail(NULL, EIO, "y"), -1);
	sc_err_hint(NULL, "z");
}

static void wrap_truncates_within_bounds(void **state)
{
	struct sc_err err = {0};
	char big[SC_ERR_MAX * 2];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	sc_fail(&err, 0, "%s", big);
	sc_err_wrap(&err, "%s", big);
	assert_int_equal(strlen(err.msg), SC_ERR_MAX - 1);
	sc_fail(&err, 0, "inner");
	sc_err_wrap(&err, "%s", big);
	assert_int_equal(strlen(err.msg), SC_ERR_MAX - 1);
}

struct seen {
	int n;
	enum sc_log_level level;
	char msg[SC_ERR_MAX];
};

static void record(void *ctx, enum sc_log_level level, const char *msg)
{
	struct seen *s = ctx;
	s->n++;
	s->level = level;
	snprintf(s->msg, sizeof(s->msg), "%s", msg);
}

static void log_reaches_the_sink(void **state)
{
	struct seen s = {0};
	struct sc_log log = {record, &s};
	sc_log(&log, SC_LOG_WARN, "limits weaker: %s", "rlimit");
	assert_int_equal(s.n, 1);
	assert_int_equal(s.level, SC_LOG_WARN);
	assert_string_equal(s.msg, "limits weaker: rlimit");
	sc_log(NULL, SC_LOG_WARN, "dropped");
	struct sc_log none = {NULL, NULL};
	sc_log(&none, SC_LOG_WARN, "dropped");
	assert_int_equal(s.n, 1);
}

static void set_copies_the_message_as_it_is(void **state)
{
	(void)state;
	struct sc_err err = {0};
	assert_int_equal(sc_err_set(&err, EPERM, "mount /proc: Operation not permitted"), -1);
	assert_string_equal(err.msg, "mount /proc: Operation not permitted");
	assert_int_equal(err.errnum, EPERM);
	assert_int_equal(sc_err_set(NULL, EPERM, "x"), -1);
	assert_int_equal(sc_err_set(&err, 0, NULL), -1);
	assert_string_equal(err.msg, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(wrap_puts_context_in_front),
		cmocka_unit_test(wrap_of_empty_error_is_the_context),
		cmocka_unit_test(wrap_and_fail_accept_null),
		cmocka_unit_test(wrap_truncates_within_bounds),
		cmocka_unit_test(log_reaches_the_sink),
		cmocka_unit_test(set_copies_the_message_as_it_is),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
