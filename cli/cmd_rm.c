#include <string.h>

#include "cli.h"

static const char RM_HELP[] =
	"usage: sandcell rm [-f] [--root DIR] NAME...\n"
	"\n"
	"Stop and remove long-lived cells: every process, mount, cgroup and file\n"
	"of theirs. A cell running a command is refused unless -f.\n";

int cmd_rm(int argc, char **argv)
{
	bool force = false;
	int rc = 0, names = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-f") || !strcmp(argv[i], "--force")) {
			force = true;
		} else if (!strcmp(argv[i], "--root") && i + 1 < argc) {
			cell_set_root(argv[++i]);
		} else if (cli_is_help(argv[i])) {
			fputs(RM_HELP, stdout);
			return 0;
		} else if (argv[i][0] == '-') {
			cli_error("rm: unknown option '%.64s'", argv[i]);
			return CLI_EXIT_USAGE;
		}
	}
	for (int i = 1; i < argc; i++) {
		if (argv[i][0] == '-') {
			if (!strcmp(argv[i], "--root"))
				i++;
			continue;
		}
		names++;
		struct sc_err err = {0};
		if (cell_remove(argv[i], force, &err) < 0)
			rc = cli_fail(&err);
	}
	if (!names) {
		cli_error("rm: no cell named (usage: sandcell rm [-f] NAME...)");
		return CLI_EXIT_USAGE;
	}
	return rc;
}
