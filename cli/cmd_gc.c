#include <string.h>

#include "cli.h"

static const char GC_HELP[] =
	"usage: sandcell gc [--root DIR]\n"
	"\n"
	"Remove what crashed cells left behind: state directories of cells whose\n"
	"init is gone, their cgroups and on-disk layers; and the inits of cells whose\n"
	"state directory was deleted by hand (killed, with their processes). Running\n"
	"cells are kept.\n";

int cmd_gc(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--root") && i + 1 < argc) {
			cell_set_root(argv[++i]);
		} else if (cli_is_help(argv[i])) {
			fputs(GC_HELP, stdout);
			return 0;
		} else {
			cli_error("gc: unexpected argument '%.64s'", argv[i]);
			return CLI_EXIT_USAGE;
		}
	}
	size_t removed = 0;
	struct sc_err err = {0};
	int rc = cell_gc(&removed, &err);
	printf("removed %zu stale cell%s\n", removed, removed == 1 ? "" : "s");
	return rc < 0 ? cli_fail(&err) : 0;
}
