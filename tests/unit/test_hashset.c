/* common/hash.c and common/strset.c: FNV-1a against published vectors, the
 * string set's find/put/grow/free. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/hash.h"
#include "common/strset.h"

/* Test vectors of the FNV reference (Fowler/Noll/Vo, 64-bit FNV-1a). */
static void fnv1a_known_values(void **state)
{
	assert_true(sc_fnv1a64("") == 0xcbf29ce484222325ULL);
	assert_true(sc_fnv1a64("a") == 0xaf63dc4c8601ec8cULL);
	assert_true(sc_fnv1a64("foobar") == 0x85944171f73967e8ULL);
}

static void fnv1a_update_is_the_string_hash_in_pieces(void **state)
{
	uint64_t h = sc_fnv1a64_update(SC_FNV1A64_INIT, "foo", 3);
	h = sc_fnv1a64_update(h, "bar", 3);
	assert_true(h == sc_fnv1a64("foobar"));
	assert_true(sc_fnv1a64_update(SC_FNV1A64_INIT, "", 0) == SC_FNV1A64_INIT);
	/* bytes past a NUL count in the byte form */
	assert_true(sc_fnv1a64_update(SC_FNV1A64_INIT, "a\0b", 3) != sc_fnv1a64("a"));
}

static void strset_empty(void **state)
{
	struct sc_strset s = {0};
	assert_false(sc_strset_has(&s, "x"));
	assert_null(sc_strset_find(&s, ""));
	sc_strset_free(&s);
	sc_strset_free(&s);
}

static void strset_put_find_and_grow(void **state)
{
	struct sc_strset s = {0};
	char key[32];
	bool added;
	for (size_t i = 0; i < 10000; i++) {
		snprintf(key, sizeof(key), "path/%zu", i);
		size_t *v = sc_strset_put(&s, key, i * 3, &added);
		assert_non_null(v);
		assert_true(added);
	}
	assert_int_equal(s.n, 10000);
	assert_true(s.cap >= 2 * s.n); /* at most half full */
	for (size_t i = 0; i < 10000; i++) {
		snprintf(key, sizeof(key), "path/%zu", i);
		size_t *v = sc_strset_find(&s, key);
		assert_non_null(v);
		assert_int_equal(*v, i * 3);
	}
	assert_false(sc_strset_has(&s, "path/10000"));
	assert_false(sc_strset_has(&s, "path/"));
	/* a second put finds the first and keeps its value */
	size_t *v = sc_strset_put(&s, "path/7", 99, &added);
	assert_false(added);
	assert_int_equal(*v, 21);
	*v = 5;
	assert_int_equal(*sc_strset_find(&s, "path/7"), 5);
	assert_int_equal(s.n, 10000);
	sc_strset_free(&s);
	assert_int_equal(s.n, 0);
	assert_false(sc_strset_has(&s, "path/7"));
	/* reusable after free */
	assert_int_equal(sc_strset_add(&s, ""), 0);
	assert_true(sc_strset_has(&s, ""));
	assert_int_equal(s.n, 1);
	sc_strset_free(&s);
}

static void strset_keys_are_copied(void **state)
{
	struct sc_strset s = {0};
	char key[] = "abc";
	assert_int_equal(sc_strset_add(&s, key), 0);
	key[0] = 'x';
	assert_true(sc_strset_has(&s, "abc"));
	assert_false(sc_strset_has(&s, "xbc"));
	sc_strset_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fnv1a_known_values),
		cmocka_unit_test(fnv1a_update_is_the_string_hash_in_pieces),
		cmocka_unit_test(strset_empty),
		cmocka_unit_test(strset_put_find_and_grow),
		cmocka_unit_test(strset_keys_are_copied),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
