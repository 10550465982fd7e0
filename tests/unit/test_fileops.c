/* cell_read_file / cell_write_file against a real long-lived cell: what
 * the agent's editor relies on (parents made, no overwrite on create,
 * errors by kind, bounded reads, no hang on a FIFO, binary data intact). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/sc.h"
#include "runtime/cell.h"

static char root[] = "/tmp/sc-fileops-XXXXXX";

/* The fixture's cell starts with this file (cell_spec.seed_files). */
static const char SEED_PATH[] = "/tmp/seeded/deep/s.bin";
static const char SEED_DATA[] = "seed\0with a NUL\n";

struct fixture {
	struct cell *cell;
};

static int run_in(struct cell *c, const char *script)
{
	char *argv[] = {"sh", "-c", (char *)script, NULL};
	struct cell_exec_req req = {.argv = argv, .cwd = "/testbed", .timeout_s = 20,
				    .stdin_fd = -1, .stdout_fd = -1, .stderr_fd = -1};
	struct cell_result res;
	struct sc_err err = {0};
	if (cell_exec(c, &req, &res, &err) < 0)
		return -1;
	int code = res.exit_code;
	cell_result_free(&res);
	return code;
}

static int setup(void **state)
{
	if (!mkdtemp(root))
		return -1;
	chmod(root, 0755);
	setenv("SANDCELL_ROOT", root, 1);
	struct fixture *f = calloc(1, sizeof(*f));
	struct cell_spec spec;
	cell_spec_init(&spec);
	struct cell_seed_file seed = {SEED_PATH, SEED_DATA, sizeof(SEED_DATA)};
	spec.seed_files = &seed;
	spec.nseed_files = 1;
	struct sc_err err = {0};
	if (cell_create(&spec, "fileops", &f->cell, &err) < 0) {
		fprintf(stderr, "cell_create: %s\n", err.msg);
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	struct sc_err err = {0};
	int rc = cell_destroy(f->cell, &err);
	free(f);
	sc_remove_tree(root);
	return rc;
}

static struct cell *cell_of(void **state)
{
	return ((struct fixture *)*state)->cell;
}

static void test_seed_files(void **state)
{
	struct cell *c = cell_of(state);
	struct sc_err err = {0};
	struct cell_file f;
	assert_int_equal(cell_read_file(c, SEED_PATH, 1 << 20, 10, &f, &err), 0);
	assert_int_equal(f.len, sizeof(SEED_DATA));
	assert_memory_equal(f.data, SEED_DATA, sizeof(SEED_DATA));
	free(f.data);
	assert_int_equal(run_in(c, "[ \"$(stat -c %a /tmp/seeded/deep/s.bin)\" = 644 ] && "
				   "[ \"$(stat -c %a /tmp/seeded/deep)\" = 755 ]"), 0);
	/* a relative path is refused, and the cell is not made */
	struct cell_spec spec;
	cell_spec_init(&spec);
	struct cell_seed_file bad = {"tmp/x", "x", 1};
	spec.seed_files = &bad;
	spec.nseed_files = 1;
	struct cell *other = NULL;
	assert_int_equal(cell_create(&spec, "badseed", &other, &err), -1);
	assert_non_null(strstr(err.msg, "not an absolute path"));
}

static void test_create_then_read(void **state)
{
	struct cell *c = cell_of(state);
	struct sc_err err = {0};
	const char text[] = "first line\nsecond\0with a NUL\n";
	assert_int_equal(cell_write_file(c, "/testbed/new/deep/f.txt", text, sizeof(text), CELL_FILE_CREATE,
					 10, &err), 0);
	struct cell_file f;
	assert_int_equal(cell_read_file(c, "/testbed/new/deep/f.txt", 1 << 20, 10, &f, &err), 0);
	assert_int_equal(f.len, sizeof(text));
	assert_false(f.truncated);
	assert_memory_equal(f.data, text, sizeof(text));
	free(f.data);
	/* a command in the cell sees the same file, with the usual mode */
	assert_int_equal(run_in(c, "[ \"$(stat -c %a new/deep/f.txt)\" = 644 ] && "
				   "[ \"$(head -n1 new/deep/f.txt)\" = 'first line' ]"), 0);
}

static void test_create_refuses_existing(void **state)
{
	struct cell *c = cell_of(state);
	struct sc_err err = {0};
	assert_int_equal(cell_write_file(c, "/testbed/once.txt", "a", 1, CELL_FILE_CREATE, 10, &err), 0);
	assert_int_equal(cell_write_file(c, "/testbed/once.txt", "bb", 2, CELL_FILE_CREATE, 10, &err), -1);
	assert_int_equal(err.errnum, EEXIST);
	/* a dangling symlink is an existing path too */
	assert_int_equal(run_in(c, "ln -s /nowhere dangling"), 0);
	assert_int_equal(cell_write_file(c, "/testbed/dangling", "x", 1, CELL_FILE_CREATE, 10, &err), -1);
	assert_int_equal(err.errnum, EEXIST);
	struct cell_file f;
	assert_int_equal(cell_read_file(c, "/testbed/once.txt", 100, 10, &f, &err), 0);
	assert_string_equal(f.data, "a");
	free(f.data);
}

static void test_replace(void **state)
{
	struct cell *c = cell_of(state);
	struct sc_err err = {0};
	assert_int_equal(run_in(c, "printf 'a long original text' > r.txt"), 0);
	assert_int_equal(cell_write_file(c, "/testbed/r.txt", "short", 5, 0, 10, &err), 0);
	assert_int_equal(run_in(c, "[ \"$(cat r.txt)\" = short ]"), 0);
	assert_int_equal(cell_write_file(c, "/testbed/missing.txt", "x", 1, 0, 10, &err), -1);
	assert_int_equal(err.errnum, ENOENT);
	assert_int_equal(cell_write_file(c, "/testbed", "x", 1, 0, 10, &err), -1);
	assert_true(err.errnum == EISDIR || err.errnum == EINVAL);
}

static void test_create_or_replace(void **state)
{
	struct cell *c = cell_of(state);
	struct sc_err err = {0};
	unsigned both = CELL_FILE_CREATE | CELL_FILE_REPLACE;
	assert_int_equal(cell_write_file(c, "/testbed/either/f", "one", 3, both, 10, &err), 0);
	assert_int_equal(cell_write_file(c, "/testbed/either/f", "2", 1, both, 10, &err), 0);
	struct cell_file f;
	assert_int_equal(cell_read_file(c, "/testbed/either/f", 100, 10, &f, &err), 0);
	assert_int_equal(f.len, 1);
	assert_memory_equal(f.data, "2", 1);
	free(f.data);
	/* a directory in the way is not replaced */
	assert_int_equal(cell_write_file(c, "/testbed/either", "x", 1, both, 10, &err), -1);
}

static void test_errors_by_kind(void **state)
{
	struct cell *c = cell_of(state);
	struct sc_err err = {0};
	struct cell_file f;
	assert_int_equal(cell_read_file(c, "/testbed/nope", 100, 10, &f, &err), -1);
	assert_int_equal(err.errnum, ENOENT);
	assert_int_equal(cell_read_file(c, "/testbed", 100, 10, &f, &err), -1);
	assert_int_equal(err.errnum, EISDIR);
	assert_int_equal(cell_read_file(c, "/dev/null", 100, 10, &f, &err), -1);
	assert_int_equal(err.errnum, EINVAL);
	/* a FIFO nobody writes: an error at once, not a hang */
	assert_int_equal(run_in(c, "mkfifo fifo"), 0);
	double t0 = sc_now();
	assert_int_equal(cell_read_file(c, "/testbed/fifo", 100, 10, &f, &err), -1);
	assert_int_equal(err.errnum, EINVAL);
	assert_int_equal(cell_write_file(c, "/testbed/fifo", "x", 1, 0, 10, &err), -1);
	assert_true(err.errnum == EINVAL || err.errnum == ENXIO);
	assert_true(sc_now() - t0 < 5);
	/* the cell's root has no capabilities: a mode-000 file is unreadable */
	assert_int_equal(run_in(c, "echo secret > locked && chmod 000 locked"), 0);
	assert_int_equal(cell_read_file(c, "/testbed/locked", 100, 10, &f, &err), -1);
	assert_int_equal(err.errnum, EACCES);
}

static void test_bounded_read(void **state)
{
	struct cell *c = cell_of(state);
	struct sc_err err = {0};
	assert_int_equal(run_in(c, "head -c 300000 /dev/zero | tr '\\0' x > big"), 0);
	struct cell_file f;
	assert_int_equal(cell_read_file(c, "/testbed/big", 1000, 10, &f, &err), 0);
	assert_true(f.truncated);
	assert_int_equal(f.len, 1000);
	assert_int_equal(f.data[999], 'x');
	assert_int_equal(f.data[1000], '\0');
	free(f.data);
	assert_int_equal(cell_read_file(c, "/testbed/big", 300000, 10, &f, &err), 0);
	assert_false(f.truncated);
	assert_int_equal(f.len, 300000);
	free(f.data);
}

int main(void)
{
	if (geteuid() != 0 && access("/proc/self/ns/user", R_OK) < 0)
		return 77;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seed_files),
		cmocka_unit_test(test_create_then_read),
		cmocka_unit_test(test_create_refuses_existing),
		cmocka_unit_test(test_replace),
		cmocka_unit_test(test_create_or_replace),
		cmocka_unit_test(test_errors_by_kind),
		cmocka_unit_test(test_bounded_read),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
