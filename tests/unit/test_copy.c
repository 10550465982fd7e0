/* Unit tests: the copy stream's receiving side refuses hostile streams and
 * never writes outside its destination. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/copy.h"

struct rec {
	uint8_t type;
	uint8_t pad[3];
	uint32_t mode;
	uint64_t size;
	uint32_t pathlen;
	uint32_t pad2;
};

static char dir[256];

static void put(FILE *f, char type, uint32_t mode, const char *path, const char *data, size_t n)
{
	struct rec r = {.type = (uint8_t)type, .mode = mode, .size = n, .pathlen = (uint32_t)strlen(path)};
	fwrite(&r, sizeof(r), 1, f);
	fwrite(path, 1, strlen(path), f);
	if (n)
		fwrite(data, 1, n, f);
}

static void end(FILE *f) { put(f, 'E', 0, "", NULL, 0); }

/* Feed a stream built by `build` to rt_copy_receive into dir/dest. */
static int receive(void (*build)(FILE *), const char *dest, uint64_t max, struct sc_err *err)
{
	FILE *f = tmpfile();
	build(f);
	fflush(f);
	int fd = dup(fileno(f));
	lseek(fd, 0, SEEK_SET);
	fclose(f);
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, dest);
	int rc = rt_copy_receive(fd, path, max, COPY_STRIP_SPECIAL | COPY_KEEP_LINKS, NULL, err);
	close(fd);
	return rc;
}

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/sc-copy-test.XXXXXX");
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int teardown(void **state)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void good_tree(FILE *f)
{
	put(f, 'D', 0755, "top", NULL, 0);
	put(f, 'F', 04755, "top/a.txt", "hello", 5);
	put(f, 'D', 0700, "top/sub", NULL, 0);
	put(f, 'L', 0777, "top/sub/link", "/etc/passwd", 11);
	end(f);
}

static void test_good_tree(void **state)
{
	struct sc_err err = {0};
	assert_int_equal(receive(good_tree, "copy", 1 << 20, &err), 0);
	char p[600], buf[16] = {0};
	snprintf(p, sizeof(p), "%s/copy/a.txt", dir);
	int fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf)), 5);
	close(fd);
	assert_string_equal(buf, "hello");
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07000, 0); /* setuid stripped */
	snprintf(p, sizeof(p), "%s/copy/sub/link", dir);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
}

static void traversal(FILE *f)
{
	put(f, 'D', 0755, "top", NULL, 0);
	put(f, 'F', 0644, "top/../../escaped", "x", 1);
	end(f);
}

static void absolute(FILE *f)
{
	put(f, 'F', 0644, "/tmp/sc-copy-abs", "x", 1);
	end(f);
}

static void through_symlink(FILE *f)
{
	put(f, 'D', 0755, "top", NULL, 0);
	put(f, 'L', 0777, "top/link", "/tmp", 4);
	put(f, 'F', 0644, "top/link/sc-copy-planted", "x", 1);
	end(f);
}

static void too_big(FILE *f)
{
	char data[4096] = {0};
	put(f, 'F', 0644, "big", data, sizeof(data));
	end(f);
}

static void truncated(FILE *f)
{
	struct rec r = {.type = 'F', .size = 100, .pathlen = 3};
	fwrite(&r, sizeof(r), 1, f);
	fwrite("abc", 1, 3, f);
	fwrite("short", 1, 5, f);
}

static void bad_pathlen(FILE *f)
{
	struct rec r = {.type = 'F', .size = 0, .pathlen = 100000};
	fwrite(&r, sizeof(r), 1, f);
}

static void test_hostile_streams(void **state)
{
	struct sc_err err = {0};
	assert_int_equal(receive(traversal, "t1", 1 << 20, &err), -1);
	assert_non_null(strstr(err.msg, "refusing path"));
	char p[600];
	snprintf(p, sizeof(p), "%s/../escaped", dir);
	assert_int_equal(access(p, F_OK), -1);

	assert_int_equal(receive(absolute, "t2", 1 << 20, &err), -1);
	assert_int_equal(access("/tmp/sc-copy-abs", F_OK), -1);

	assert_int_equal(receive(through_symlink, "t3", 1 << 20, &err), -1);
	assert_int_equal(access("/tmp/sc-copy-planted", F_OK), -1);

	assert_int_equal(receive(too_big, "t4", 1000, &err), -1);
	assert_non_null(strstr(err.msg, "size limit"));

	assert_int_equal(receive(truncated, "t5", 1 << 20, &err), -1);
	assert_int_equal(receive(bad_pathlen, "t6", 1 << 20, &err), -1);
}

static void test_existing_symlink_not_followed(void **state)
{
	/* A symlink already at the destination is replaced, not written through. */
	char victim[600], link[600];
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	FILE *v = fopen(victim, "w");
	fputs("untouched", v);
	fclose(v);
	snprintf(link, sizeof(link), "%s/into", dir);
	mkdir(link, 0755);
	snprintf(link, sizeof(link), "%s/into/top", dir);
	mkdir(link, 0755);
	snprintf(link, sizeof(link), "%s/into/top/a.txt", dir);
	assert_int_equal(symlink(victim, link), 0);
	struct sc_err err = {0};
	assert_int_equal(receive(good_tree, "into", 1 << 20, &err), -1);
	char buf[32] = {0};
	int fd = open(victim, O_RDONLY);
	assert_true(read(fd, buf, sizeof(buf)) > 0);
	close(fd);
	assert_string_equal(buf, "untouched");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_good_tree, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_streams, setup, teardown),
		cmocka_unit_test_setup_teardown(test_existing_symlink_not_followed, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
