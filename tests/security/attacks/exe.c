/* CVE-2019-5736: overwrite the runtime's binary through /proc/PID/exe.
 * usage: exe self|pid1|all
 *        exe heldfd FD ESCAPED  (run by exe_preload.so: FD is an O_PATH fd
 *                                on the binary the preloaded process ran) */
#include "exe.h"

#include <dirent.h>

static void case_self(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	attack_exe_path("/proc/self/exe");
}

static void case_pid1(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	char target[512];
	attempt("readlink(/proc/1/exe)");
	ssize_t n = readlink("/proc/1/exe", target, sizeof(target) - 1);
	if (n < 0)
		blocked_errno(errno);
	else
		blocked("readable but only a name: %.*s", (int)n, target);
	attack_exe_path("/proc/1/exe");
}

/* Every process of the cell: a command started by sandcell, or forked
 * from it before its exec, points its exe at the host binary. */
static void case_all(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	DIR *d = opendir("/proc");
	if (!d)
		setup_failed("opendir /proc");
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] >= '1' && e->d_name[0] <= '9') {
			char path[300];
			snprintf(path, sizeof(path), "/proc/%s/exe", e->d_name);
			attack_exe_path(path);
		}
	closedir(d);
}

static void case_heldfd(int argc, char **argv)
{
	if (argc < 3)
		setup_failed("heldfd FD ESCAPED");
	if (atoi(argv[2]))
		attack_escaped = 1;
	char via[64];
	snprintf(via, sizeof(via), "/proc/self/fd/%d", atoi(argv[1]));
	/* The preloaded process has exec'd this program, so no process of the
	 * cell runs the host binary anymore: only busy-text protection by the
	 * host side, or the lack of permission, can stop a write now. */
	attack_exe_path(via);
}

int main(int argc, char **argv)
{
	static const struct attack_case cases[] = {
		{"self", case_self},
		{"pid1", case_pid1},
		{"all", case_all},
		{"heldfd", case_heldfd},
		{NULL, NULL},
	};
	return attack_main(cases, argc, argv);
}
