/* runtime/user.c: --user values (UID[:GID] and names from an image's
 * /etc/passwd and /etc/group, read beneath its layers without following a
 * symlink). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/cell.h"

static void numbers_and_the_default_gid(void **state)
{
	(void)state;
	uint32_t u = 9, g = 9;
	struct sc_err err = {0};
	assert_int_equal(cell_parse_user("1000", &u, &g, &err), 0);
	assert_int_equal(u, 1000);
	assert_int_equal(g, 1000);
	assert_int_equal(cell_parse_user("0", &u, &g, &err), 0);
	assert_int_equal(u, 0);
	assert_int_equal(g, 0);
	assert_int_equal(cell_parse_user("7:8", &u, &g, &err), 0);
	assert_int_equal(u, 7);
	assert_int_equal(g, 8);
	assert_int_equal(cell_parse_user("4294967294", &u, &g, &err), 0);
	assert_int_equal(u, 4294967294u);
}

static void bad_values_are_refused(void **state)
{
	(void)state;
	uint32_t u, g;
	struct sc_err err = {0};
	const char *bad[] = {"", ":", "1:", ":1", "1:2:3", "-1", "+1", " 1", "1 ", "abc",
			     "4294967295", "99999999999", "1:4294967295", "0x10"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(cell_parse_user(bad[i], &u, &g, &err), -1);
		assert_int_equal(err.errnum, EINVAL);
		assert_non_null(strstr(err.msg, "expected UID"));
	}
	assert_int_equal(cell_parse_user(NULL, &u, &g, &err), -1);
}

static void put(const char *dir, const char *rel, const char *text)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void names_come_from_the_top_layer_that_has_the_file(void **state)
{
	(void)state;
	char top[] = "/tmp/sc-user-top.XXXXXX", low[] = "/tmp/sc-user-low.XXXXXX";
	assert_non_null(mkdtemp(top));
	assert_non_null(mkdtemp(low));
	char p[512];
	snprintf(p, sizeof(p), "%s/etc", top);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/etc", low);
	assert_int_equal(mkdir(p, 0755), 0);
	put(low, "etc/passwd", "root:x:0:0::/root:/bin/sh\napp:x:1000:1000::/home/app:/bin/sh\n");
	put(low, "etc/group", "root:x:0:\nstaff:x:50:\n");
	put(top, "etc/passwd", "root:x:0:0::/root:/bin/sh\nweb:x:33:34::/var/www:/bin/false\n");
	const char *layers[] = {top, low};
	uint32_t u = 0, g = 0;
	struct sc_err err = {0};
	assert_int_equal(cell_resolve_user("web", layers, 2, &u, &g, &err), 0);
	assert_int_equal(u, 33);
	assert_int_equal(g, 34);
	/* the top layer's passwd replaces the lower's: app is gone */
	assert_int_equal(cell_resolve_user("app", layers, 2, &u, &g, &err), -1);
	assert_int_equal(err.errnum, ENOENT);
	assert_non_null(strstr(err.msg, "not in the image's /etc/passwd"));
	/* a group name from the lower layer's group (the top has none) */
	assert_int_equal(cell_resolve_user("web:staff", layers, 2, &u, &g, &err), 0);
	assert_int_equal(u, 33);
	assert_int_equal(g, 50);
	assert_int_equal(cell_resolve_user("1000:staff", layers, 2, &u, &g, &err), 0);
	assert_int_equal(u, 1000);
	assert_int_equal(g, 50);
	assert_int_equal(cell_resolve_user("12:13", layers, 2, &u, &g, &err), 0);
	assert_int_equal(g, 13);
	assert_int_equal(cell_resolve_user("we/b", layers, 2, &u, &g, &err), -1);
	assert_int_equal(err.errnum, EINVAL);
	/* a symlinked /etc/passwd (to the host's, say) is not followed, and
	 * hides the lower layer's as it does in the cell */
	snprintf(p, sizeof(p), "%s/etc/passwd", top);
	unlink(p);
	assert_int_equal(symlink("/etc/passwd", p), 0);
	assert_int_equal(cell_resolve_user("root", layers, 2, &u, &g, &err), -1);
	assert_int_equal(err.errnum, ENOENT);
	/* nor a symlinked /etc: root is in the host's passwd, not found here */
	char cmd[1200];
	snprintf(cmd, sizeof(cmd), "rm -rf %s/etc && ln -s /etc %s/etc", top, top);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(cell_resolve_user("root", layers, 2, &u, &g, &err), -1);
	/* without the top layer, the lower one's */
	assert_int_equal(cell_resolve_user("app", layers + 1, 1, &u, &g, &err), 0);
	assert_int_equal(u, 1000);
	snprintf(cmd, sizeof(cmd), "rm -rf %s %s", top, low);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(numbers_and_the_default_gid),
		cmocka_unit_test(bad_values_are_refused),
		cmocka_unit_test(names_come_from_the_top_layer_that_has_the_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
