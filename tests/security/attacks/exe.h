/* The CVE-2019-5736 pattern: reach the runtime's own binary through
 * /proc/PID/exe and change it, so that the next host-side run of it runs
 * the attacker's code. Shared by exe.c and exe_preload.c. */
#ifndef SC_ATTACK_EXE_H
#define SC_ATTACK_EXE_H

#include "attack.h"

#include <sys/xattr.h>

/* Every way to change the file behind a magic link such as /proc/1/exe:
 * its bytes (open for writing, directly or by reopening an O_PATH fd;
 * truncate) and its metadata (mode, times, extended attributes). A
 * successful change is visible from the host. */
static __attribute__((unused)) void attack_exe_path(const char *path)
{
	struct stat st;
	int have_st = stat(path, &st) == 0;

	attempt("open(%s, O_WRONLY)", path);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	expect_fail(fd);
	if (fd >= 0) {
		if (have_st)
			(void)!pwrite(fd, "#escaped", 8, st.st_size);
		close(fd);
	}
	attempt("open(%s, O_RDWR)", path);
	fd = open(path, O_RDWR | O_CLOEXEC);
	expect_fail(fd);
	if (fd >= 0)
		close(fd);

	attempt("open(%s, O_PATH), reopen /proc/self/fd/N for writing", path);
	int pfd = open(path, O_PATH | O_CLOEXEC);
	if (pfd < 0) {
		blocked_errno(errno);
	} else {
		char via[64];
		snprintf(via, sizeof(via), "/proc/self/fd/%d", pfd);
		fd = open(via, O_WRONLY | O_CLOEXEC);
		expect_fail(fd);
		if (fd >= 0)
			close(fd);
		close(pfd);
	}

	attempt("truncate(%s) to its own size", path);
	expect_fail(truncate(path, have_st ? st.st_size : 0));

	attempt("chmod(%s) adding the sticky bit", path);
	expect_fail(chmod(path, (have_st ? st.st_mode & 07777 : 0755) | S_ISVTX));

	attempt("utimensat(%s) to the epoch", path);
	struct timespec epoch[2] = {{0, 0}, {0, 0}};
	expect_fail(utimensat(AT_FDCWD, path, epoch, 0));

	attempt("setxattr(%s, user.sandcell-attack)", path);
	expect_fail(setxattr(path, "user.sandcell-attack", "1", 1, 0));

	attempt("chown(%s, 0, 0)", path);
	expect_fail(chown(path, 0, 0));
}

#endif
