/* gzip bodies (api/gzip.c): what a client's Content-Encoding: gzip may
 * inflate to, what is refused, and which Accept-Encoding takes gzip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/api_priv.h"

static void test_round_trip(void **state)
{
	(void)state;
	char in[5000];
	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (char)(i * 7 + 3);
	char *z, *back;
	size_t zlen, blen;
	assert_true(api_gzip(in, sizeof(in), &z, &zlen));
	assert_int_equal((unsigned char)z[0], 0x1f); /* gzip's magic */
	assert_int_equal((unsigned char)z[1], 0x8b);
	assert_int_equal(api_gunzip(z, zlen, sizeof(in), &back, &blen), 0);
	assert_int_equal(blen, sizeof(in));
	assert_memory_equal(back, in, sizeof(in));
	free(back);
	/* exactly max is allowed, one byte less is not */
	assert_int_equal(api_gunzip(z, zlen, sizeof(in) - 1, &back, &blen), 413);
	assert_null(back);
	/* cut anywhere: refused, never a short file */
	for (size_t cut = 0; cut < zlen; cut += 97)
		assert_int_equal(api_gunzip(z, cut, sizeof(in), &back, &blen), 400);
	/* bytes after the stream: refused */
	char *more = malloc(zlen + 3);
	memcpy(more, z, zlen);
	memcpy(more + zlen, "xyz", 3);
	assert_int_equal(api_gunzip(more, zlen + 3, sizeof(in), &back, &blen), 400);
	free(more);
	free(z);
	/* not gzip at all (a zlib stream, plain text) */
	assert_int_equal(api_gunzip("hello", 5, 100, &back, &blen), 400);
	/* empty */
	char *e;
	size_t elen;
	assert_true(api_gzip("", 0, &e, &elen));
	assert_int_equal(api_gunzip(e, elen, 0, &back, &blen), 0);
	assert_int_equal(blen, 0);
	free(back);
	free(e);
}

static void test_bomb(void **state)
{
	(void)state;
	/* 64 MiB of zeros deflate to ~64 KB; inflating stops past max */
	size_t n = 64u << 20;
	char *zeros = calloc(1, n), *z, *back;
	size_t zlen, blen;
	assert_true(api_gzip(zeros, n, &z, &zlen));
	free(zeros);
	assert_true(zlen < n / 500);
	assert_int_equal(api_gunzip(z, zlen, 1u << 20, &back, &blen), 413);
	assert_null(back);
	free(z);
}

static void test_accepts(void **state)
{
	(void)state;
	static const char *const yes[] = {"gzip", "GZIP", "deflate, gzip", "gzip;q=0.5", "br, gzip ; q=1",
					  "*", "identity, *;q=0.1", "x-foo,gzip"};
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		assert_true(api_accepts_gzip(yes[i]));
	static const char *const no[] = {NULL, "", "identity", "deflate", "gzip;q=0", "gzip; q=0.0",
					 "*;q=0", "gzipx", "xgzip", "br"};
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		assert_false(api_accepts_gzip(no[i]));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_bomb),
		cmocka_unit_test(test_accepts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
