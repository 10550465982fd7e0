#include <string.h>

#include "cli.h"

static const char CREATE_HELP[] =
	"usage: sandcell create [OPTIONS] NAME\n"
	"\n"
	"Start a long-lived cell named NAME and return at once; run commands in\n"
	"it with 'sandcell exec', copy files with 'sandcell cp', remove it with\n"
	"'sandcell rm'. Files written in the cell persist between commands.\n"
	"\n"
	"Options:\n"
	"%s"
	"  --persist             keep the writable layer on disk (not in memory)\n"
	"  -h, --help            this help\n";

int cmd_create(int argc, char **argv)
{
	_cleanup_cli_cell_opts_ struct cli_cell_opts opts = {0};
	bool persist = false;
	const char *name = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (cli_is_help(a)) {
			printf(CREATE_HELP, cli_cell_opts_help());
			return 0;
		}
		if (!strcmp(a, "--persist")) {
			persist = true;
			continue;
		}
		if (!strcmp(a, "--") && !name && i + 1 < argc) {
			/* the name follows, whatever it looks like; nothing after */
			name = argv[++i];
			if (i + 1 < argc) {
				cli_error("create: unexpected argument after the name (see 'sandcell create --help')");
				return CLI_EXIT_USAGE;
			}
			continue;
		}
		int r = cli_cell_opts_parse(&opts, argc, argv, &i);
		if (r < 0)
			return CLI_EXIT_USAGE;
		if (r == 1)
			continue;
		if (a[0] == '-' || name) {
			cli_error("create: unexpected argument '%.64s' (see 'sandcell create --help')", a);
			return CLI_EXIT_USAGE;
		}
		name = a;
	}
	if (!name) {
		cli_error("create: no cell name given (usage: sandcell create [OPTIONS] NAME)");
		return CLI_EXIT_USAGE;
	}
	_cleanup_cli_cell_ struct cli_cell built;
	if (cli_cell_build(&built, &opts) < 0)
		return CLI_EXIT_USAGE;
	if (persist)
		built.spec.upper_dir = "persist";
	struct cell *cell;
	struct sc_err err = {0};
	if (cell_create(&built.spec, name, &cell, &err) < 0)
		return cli_fail(&err);
	printf("%s\n", cell_name(cell));
	cell_close(cell);
	return 0;
}
