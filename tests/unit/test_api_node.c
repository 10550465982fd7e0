/* Node names and cell ids (api/node.c): what a server gives out and
 * accepts, and what a load balancer's rule can rely on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/api_priv.h"

static void test_node_name(void **state)
{
	(void)state;
	static const char *const good[] = {"a", "n1", "sandcell-0", "0", "abcdefghijklmnopqrstuvwxyz012345"};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_true(api_node_name_ok(good[i]));
	static const char *const bad[] = {
		NULL, "", "-a", "a-", "A", "host.example", "a_b", "a b", "a/b", "..",
		"abcdefghijklmnopqrstuvwxyz0123456", /* 33 */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(api_node_name_ok(bad[i]));
}

static bool id_ok(const char *s, size_t *k)
{
	return api_id_parse(s, strlen(s), k);
}

static void test_id_parse(void **state)
{
	(void)state;
	size_t k = 99;
	assert_true(id_ok("n1-0123456789abcdef", &k));
	assert_int_equal(k, 2);
	/* a node name with dashes: the node part is all before the last one */
	assert_true(id_ok("sandcell-12-0123456789abcdef", &k));
	assert_int_equal(k, 11);
	assert_true(id_ok("0123456789abcdef", &k)); /* the bare shape, no node */
	assert_int_equal(k, 0);
	assert_true(id_ok("abcdefghijklmnopqrstuvwxyz012345-0123456789abcdef", &k));
	assert_int_equal(k, 32);
	static const char *const bad[] = {
		"", "-0123456789abcdef", "n1-0123456789abcde", "n1-0123456789ABCDEF",
		"n1_0123456789abcdef", "N1-0123456789abcdef", "n1--0123456789abcdef",
		"n.1-0123456789abcdef", "n1-0123456789abcdef0", "0123456789abcdef0",
		"abcdefghijklmnopqrstuvwxyz0123456-0123456789abcdef", "../-0123456789abcdef",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(id_ok(bad[i], &k));
	assert_int_equal(API_ID_LEN, 49); /* a DNS label (<= 63) */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_node_name),
		cmocka_unit_test(test_id_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
