/* common/base64.c's decoder (the encoder's round trip too) and
 * common/jsonget.c's strict member reads: what a client's request is read
 * with. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/base64.h"
#include "common/jsonget.h"

static cJSON *obj(const char *json)
{
	cJSON *j = cJSON_Parse(json);
	assert_non_null(j);
	return j;
}

static void expect_b64(const char *in, const char *out, size_t out_len)
{
	char *d;
	size_t n;
	assert_int_equal(sc_base64_decode(in, strlen(in), &d, &n), 0);
	assert_int_equal(n, out_len);
	assert_memory_equal(d, out, out_len);
	assert_int_equal(d[n], '\0');
	free(d);
}

static void expect_b64_bad(const char *in)
{
	char *d = (char *)1;
	size_t n = 7;
	errno = 0;
	assert_int_equal(sc_base64_decode(in, strlen(in), &d, &n), -1);
	assert_int_equal(errno, EINVAL);
	assert_null(d);
	assert_int_equal(n, 0);
}

static void test_base64_decode(void **state)
{
	(void)state;
	expect_b64("", "", 0);
	expect_b64("=", "", 0);
	expect_b64("aGk=", "hi", 2);
	expect_b64("aGk", "hi", 2);                 /* padding may be left out */
	expect_b64("aG k=\n", "hi", 2);             /* whitespace skipped */
	expect_b64(" a\tG\r\nk \v\f", "hi", 2);
	expect_b64("aGk=garbage!", "hi", 2);        /* the first '=' ends the data */
	expect_b64("aGk==", "hi", 2);
	expect_b64("aGVsbG8=", "hello", 5);
	expect_b64("+/+/", "\xfb\xff\xbf", 3);       /* both alphabets */
	expect_b64("-_-_", "\xfb\xff\xbf", 3);
	expect_b64("AAAA", "\0\0\0", 3);            /* NULs are data */
	expect_b64_bad("A");                        /* six bits: not a byte */
	expect_b64_bad("aGkxA");
	expect_b64_bad("aG*k");
	expect_b64_bad("aGk\x80");
	expect_b64_bad("a.Gk");
	/* a NUL inside the given length is not data either */
	char *d;
	size_t n;
	assert_int_equal(sc_base64_decode("aG\0k", 4, &d, &n), -1);
}

static void test_base64_round_trip(void **state)
{
	(void)state;
	unsigned char buf[67];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(i * 37 + 11);
	for (size_t len = 0; len <= sizeof(buf); len++) {
		size_t elen, dlen;
		char *e = sc_base64_encode(buf, len, &elen), *d;
		assert_non_null(e);
		assert_int_equal(elen % 4, 0);
		assert_int_equal(sc_base64_decode(e, elen, &d, &dlen), 0);
		assert_int_equal(dlen, len);
		assert_memory_equal(d, buf, len);
		free(d);
		free(e);
	}
}

static void test_json_opt(void **state)
{
	(void)state;
	cJSON *j = obj("{\"s\":\"x\",\"n\":2.5,\"z\":null,\"b\":true,\"big\":1e999}");
	const char *s;
	double d;
	assert_true(sc_json_opt_str(j, "s", &s) && !strcmp(s, "x"));
	assert_true(sc_json_opt_str(j, "absent", &s) && !s);
	assert_true(sc_json_opt_str(j, "z", &s) && !s);
	assert_false(sc_json_opt_str(j, "n", &s));
	assert_null(s);
	assert_true(sc_json_opt_num(j, "n", 1, &d) && d == 2.5);
	assert_true(sc_json_opt_num(j, "absent", 7, &d) && d == 7);
	assert_true(sc_json_opt_num(j, "z", 7, &d) && d == 7);
	assert_false(sc_json_opt_num(j, "b", 7, &d));
	assert_false(sc_json_opt_num(j, "big", 7, &d)); /* infinity */
	assert_true(d == 7);
	cJSON_Delete(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_base64_decode),
		cmocka_unit_test(test_base64_round_trip),
		cmocka_unit_test(test_json_opt),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
