/* dropuid UID GID CMD [ARG...]: become UID/GID with no supplementary groups
 * and exec CMD. The VM test's stand-in for setpriv --reuid, which busybox
 * lacks. Built statically by scripts/vm-test.sh. */
#define _GNU_SOURCE
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: dropuid UID GID CMD [ARG...]\n");
		return 2;
	}
	uid_t uid = (uid_t)strtoul(argv[1], NULL, 10);
	gid_t gid = (gid_t)strtoul(argv[2], NULL, 10);
	if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 ||
	    setresuid(uid, uid, uid) < 0) {
		perror("dropuid");
		return 1;
	}
	if (getuid() != uid || geteuid() != uid) {
		fprintf(stderr, "dropuid: still uid %u\n", (unsigned)geteuid());
		return 1;
	}
	execvp(argv[3], argv + 3);
	perror(argv[3]);
	return 127;
}
