/* common/fsutil.c: the one small-file reader, the one openat2-beneath
 * helper and the one tree removal, on a real temporary directory. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/sc.h"

static char dir[] = "/tmp/sc-fsutil-XXXXXX";
static int dfd = -1;

static void put(const char *name, const char *text)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(sc_write_all(fd, text, strlen(text)), 0);
	close(fd);
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(dir))
		return -1;
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return dfd < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	close(dfd);
	return sc_remove_tree(dir);
}

static void read_small_bounds_and_kinds(void **state)
{
	(void)state;
	struct sc_err err = {0};
	char buf[8];
	put("f", "0123456789");
	assert_int_equal(sc_read_small(dfd, "f", 0, buf, sizeof(buf), &err), 7);
	assert_string_equal(buf, "0123456");
	assert_int_equal(sc_read_small(dfd, "f", SC_READ_WHOLE, buf, sizeof(buf), &err), -1);
	assert_int_equal(err.errnum, EFBIG);
	char big[64];
	assert_int_equal(sc_read_small(dfd, "f", SC_READ_WHOLE, big, sizeof(big), &err), 10);
	assert_int_equal(symlinkat("f", dfd, "link"), 0);
	assert_int_equal(sc_read_small(dfd, "link", SC_READ_NOFOLLOW, big, sizeof(big), &err), -1);
	assert_int_equal(err.errnum, ELOOP);
	assert_int_equal(mkdirat(dfd, "d", 0755), 0);
	assert_int_equal(sc_read_small(dfd, "d", SC_READ_REGULAR, big, sizeof(big), &err), -1);
	assert_int_equal(err.errnum, EINVAL);
	assert_int_equal(sc_read_small(dfd, "missing", 0, big, sizeof(big), &err), -1);
	assert_int_equal(err.errnum, ENOENT);
	assert_int_equal(sc_read_small(dfd, "missing", 0, big, sizeof(big), NULL), -1);
}

static void read_small_alloc_bounds(void **state)
{
	(void)state;
	struct sc_err err = {0};
	char *text = NULL;
	size_t len = 0;
	put("g", "hello");
	assert_int_equal(sc_read_small_alloc(dfd, "g", SC_READ_REGULAR, 5, &text, &len, &err), 0);
	assert_string_equal(text, "hello");
	assert_int_equal(len, 5);
	free(text);
	text = NULL;
	assert_int_equal(sc_read_small_alloc(dfd, "g", SC_READ_REGULAR, 4, &text, &len, &err), -1);
	assert_int_equal(err.errnum, EFBIG);
	assert_null(text);
	/* not a regular file: read up to max + 1 to tell */
	int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(sc_read_small_alloc_fd(fd, "/dev/zero", 0, 100, &text, &len, &err), -1);
	assert_int_equal(err.errnum, EFBIG);
	close(fd);
}

static void openat_beneath_stays_beneath(void **state)
{
	(void)state;
	put("h", "x");
	assert_int_equal(mkdirat(dfd, "sub", 0755), 0);
	assert_int_equal(symlinkat("../h", dfd, "sub/up"), 0);
	int sub = openat(dfd, "sub", O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(sub >= 0);
	errno = 0;
	assert_int_equal(sc_openat_beneath(sub, "../h", O_RDONLY, 0, 0), -1);
	assert_int_equal(errno, EXDEV);
	assert_int_equal(sc_openat_beneath(sub, "up", O_RDONLY, 0, 0), -1);
	assert_int_equal(errno, ELOOP);
	int fd = sc_openat_beneath(dfd, "h", O_RDONLY, 0, 0);
	assert_true(fd >= 0);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	close(sub);
}

/* Parents are made; a symlink, as a parent or as the file, is refused. */
static void create_beneath_makes_parents_follows_no_link(void **state)
{
	(void)state;
	int fd = sc_create_beneath(dfd, "a/b/c.txt");
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "hi", 2), 2);
	close(fd);
	char buf[8] = {0};
	int r = openat(dfd, "a/b/c.txt", O_RDONLY | O_CLOEXEC);
	assert_int_equal(read(r, buf, sizeof(buf)), 2);
	assert_string_equal(buf, "hi");
	close(r);
	fd = sc_create_beneath(dfd, "a/b/c.txt"); /* again: truncated */
	assert_true(fd >= 0);
	close(fd);
	struct stat st;
	assert_int_equal(fstatat(dfd, "a/b/c.txt", &st, 0), 0);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(mkdirat(dfd, "elsewhere", 0755), 0);
	assert_int_equal(symlinkat("elsewhere", dfd, "dirlink"), 0);
	assert_int_equal(sc_create_beneath(dfd, "dirlink/x"), -1);
	assert_int_equal(errno, ENOTDIR); /* O_DIRECTORY | O_NOFOLLOW on a link */
	assert_int_equal(fstatat(dfd, "elsewhere/x", &st, AT_SYMLINK_NOFOLLOW), -1);
	assert_int_equal(symlinkat("elsewhere/y", dfd, "filelink"), 0);
	assert_int_equal(sc_create_beneath(dfd, "filelink"), -1);
	assert_int_equal(errno, ELOOP);
	assert_int_equal(fstatat(dfd, "elsewhere/y", &st, AT_SYMLINK_NOFOLLOW), -1);
}

/* Read-only and mode-000 directories of ours go; a symlink is removed,
 * never followed: what it points at survives. */
static void remove_tree_is_symlink_safe(void **state)
{
	(void)state;
	put("keep", "precious");
	assert_int_equal(mkdirat(dfd, "t", 0755), 0);
	assert_int_equal(mkdirat(dfd, "t/ro", 0755), 0);
	assert_int_equal(mkdirat(dfd, "t/ro/closed", 0755), 0);
	put("t/ro/closed/file", "x");
	put("t/ro/file", "y");
	assert_int_equal(symlinkat("../../keep", dfd, "t/ro/to_keep"), 0);
	assert_int_equal(mkdirat(dfd, "outside", 0755), 0);
	put("outside/file", "z");
	char target[4200];
	snprintf(target, sizeof(target), "%s/outside", dir);
	assert_int_equal(symlinkat(target, dfd, "t/dirlink"), 0);
	assert_int_equal(fchmodat(dfd, "t/ro/closed", 0, 0), 0);
	assert_int_equal(fchmodat(dfd, "t/ro", 0555, 0), 0);
	struct sc_err err = {0};
	int rc = sc_remove_tree_at(dfd, "t", &err);
	assert_int_equal(rc, 0);
	struct stat st;
	assert_int_equal(fstatat(dfd, "t", &st, AT_SYMLINK_NOFOLLOW), -1);
	assert_int_equal(fstatat(dfd, "keep", &st, 0), 0);
	assert_int_equal(fstatat(dfd, "outside/file", &st, 0), 0);
	assert_int_equal((int)(st.st_mode & 07777), 0644);
	assert_int_equal(fstatat(dfd, "outside", &st, 0), 0);
	assert_int_equal((int)(st.st_mode & 07777), 0755);
	/* missing is not a failure */
	assert_int_equal(sc_remove_tree_at(dfd, "t", &err), 0);
}

/* In-root resolution: links resolve as under a chroot at dfd (absolute
 * targets and ".." stay inside), a magic link is refused, and an fd the
 * resolving process holds (to a directory outside the root) is no way out. */
static void openat_in_root_stays_in_root(void **state)
{
	(void)state;
	assert_int_equal(mkdirat(dfd, "root", 0755), 0);
	int root = openat(dfd, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(root >= 0);
	assert_int_equal(mkdirat(root, "sub", 0755), 0);
	put("outside", "host");
	int sfd = openat(root, "sub", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int in = openat(sfd, "f", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(in >= 0);
	assert_int_equal(sc_write_all(in, "cell", 4), 0);
	close(in);
	close(sfd);
	assert_int_equal(symlinkat("/sub", root, "abs"), 0);
	assert_int_equal(symlinkat("../../../../sub", root, "up"), 0);

	char buf[16] = {0};
	int fd = sc_openat_in_root(root, "abs/f", O_RDONLY, 0);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf) - 1), 4);
	assert_string_equal(buf, "cell");
	close(fd);
	fd = sc_openat_in_root(root, "/up/f", O_RDONLY, 0);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(sc_openat_in_root(root, "../outside", O_RDONLY, 0), -1);
	assert_int_equal(errno, ENOENT);
	/* a magic link (where the root has a /proc: here the host's own
	 * root): dfd leads to "outside", which the path must not reach */
	int host_root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	char magic[64];
	snprintf(magic, sizeof(magic), "/proc/self/fd/%d/outside", dfd);
	assert_int_equal(sc_openat_in_root(host_root, magic, O_RDONLY, 0), -1);
	assert_int_equal(errno, ELOOP);
	assert_int_equal(sc_openat_in_root(host_root, "/proc/self/cwd", O_PATH, 0), -1);
	assert_int_equal(errno, ELOOP);
	close(host_root);
	close(root);
	assert_int_equal(sc_remove_tree_at(dfd, "root", NULL), 0);
	assert_int_equal(unlinkat(dfd, "outside", 0), 0);
}

static void dir_names_sorted_and_bounded(void **state)
{
	(void)state;
	assert_int_equal(mkdirat(dfd, "ls", 0755), 0);
	int ls = openat(dfd, "ls", O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(ls >= 0);
	const char *mk[] = {"b", "a", "c"};
	for (size_t i = 0; i < 3; i++)
		close(openat(ls, mk[i], O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	char **names;
	size_t n;
	bool more = false;
	assert_int_equal(sc_dir_names_sorted(ls, 10, &names, &n, &more), 0);
	assert_int_equal(n, 3);
	assert_false(more);
	assert_string_equal(names[0], "a");
	assert_string_equal(names[2], "c");
	sc_dir_names_free(names, n);
	assert_int_equal(sc_dir_names_sorted(ls, 2, &names, &n, &more), 0);
	assert_int_equal(n, 2);
	assert_true(more);
	sc_dir_names_free(names, n);
	close(ls);
	assert_int_equal(sc_remove_tree_at(dfd, "ls", NULL), 0);
	assert_int_equal(sc_dir_names_sorted(dfd, 10, &names, &n, NULL) < 0 ? -1 : 0, 0);
	sc_dir_names_free(names, n);
}

static void memfd_of_holds_the_bytes(void **state)
{
	(void)state;
	int fd = sc_memfd_of("test", "hello", 5, NULL);
	assert_true(fd >= 0);
	char buf[8] = {0};
	assert_int_equal(read(fd, buf, sizeof(buf)), 5);
	assert_string_equal(buf, "hello");
	close(fd);
	fd = sc_memfd_of("empty", NULL, 0, NULL);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf)), 0);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(read_small_bounds_and_kinds),
		cmocka_unit_test(read_small_alloc_bounds),
		cmocka_unit_test(openat_beneath_stays_beneath),
		cmocka_unit_test(openat_in_root_stays_in_root),
		cmocka_unit_test(dir_names_sorted_and_bounded),
		cmocka_unit_test(memfd_of_holds_the_bytes),
		cmocka_unit_test(remove_tree_is_symlink_safe),
		cmocka_unit_test(create_beneath_makes_parents_follows_no_link),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
