/* common/subid.c: the one id range rule behind runtime/idmap.c (the cells'
 * map) and rootfs/idshift.c (the layers' owners). The two copies it
 * replaces disagreed on a "sandcell" entry that starts at 0: one refused
 * it (in dead code), the other fell back silently to 524288. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "common/subid.h"

static void no_files_is_the_default_range(void **state)
{
	(void)state;
	struct sc_subid_range r;
	struct sc_err err = {0};
	assert_int_equal(sc_subid_range_from(NULL, NULL, &r, &err), 0);
	assert_int_equal(r.uid_start, 524288);
	assert_int_equal(r.gid_start, 524288);
	assert_int_equal(r.count, 65536);
	/* a file without a sandcell entry, too */
	assert_int_equal(sc_subid_range_from("alice:100000:65536\n", "", &r, &err), 0);
	assert_int_equal(r.uid_start, 524288);
	assert_int_equal(r.count, 65536);
}

static void the_sandcell_entry_wins(void **state)
{
	(void)state;
	struct sc_subid_range r;
	struct sc_err err = {0};
	assert_int_equal(sc_subid_range_from("alice:100000:65536\nsandcell:200000:65536\n",
					     "sandcell:300000:65536\n", &r, &err),
			 0);
	assert_int_equal(r.uid_start, 200000);
	assert_int_equal(r.gid_start, 300000);
	assert_int_equal(r.count, 65536);
}

static void count_is_the_smaller_and_capped(void **state)
{
	(void)state;
	struct sc_subid_range r;
	struct sc_err err = {0};
	assert_int_equal(sc_subid_range_from("sandcell:200000:1000\n", "sandcell:300000:5000\n",
					     &r, &err),
			 0);
	assert_int_equal(r.count, 1000);
	assert_int_equal(sc_subid_range_from("sandcell:200000:1000000\n", NULL, &r, &err), 0);
	assert_int_equal(r.uid_start, 200000);
	assert_int_equal(r.gid_start, 524288);
	assert_int_equal(r.count, 65536);
}

/* The case the two copies disagreed on: refused, for uids and for gids,
 * never replaced by the default range. */
static void an_entry_at_zero_is_refused(void **state)
{
	(void)state;
	struct sc_subid_range r;
	struct sc_err err = {0};
	assert_int_equal(sc_subid_range_from("sandcell:0:65536\n", NULL, &r, &err), -1);
	assert_non_null(strstr(err.msg, "/etc/subuid starts at 0"));
	memset(&err, 0, sizeof(err));
	assert_int_equal(sc_subid_range_from(NULL, "root:0:1\nsandcell:000:65536\n", &r, &err), -1);
	assert_non_null(strstr(err.msg, "/etc/subgid starts at 0"));
	/* another name's entry at 0 is not ours */
	assert_int_equal(sc_subid_range_from("root:0:65536\n", NULL, &r, NULL), 0);
	assert_int_equal(r.uid_start, 524288);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(no_files_is_the_default_range),
		cmocka_unit_test(the_sandcell_entry_wins),
		cmocka_unit_test(count_is_the_smaller_and_capped),
		cmocka_unit_test(an_entry_at_zero_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
