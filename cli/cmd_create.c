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
	"%s%s";

struct create_args {
	bool persist, help;
};
#define CA(member) CLI_FIELD(struct create_args, member)

static const struct cli_option CREATE_OPTIONS[] = {
	{"--persist", NULL, CLI_FLAG, CA(persist),
	 .help = "keep the writable layer on disk (not in memory)"},
	{"--help", "-h", CLI_FLAG, CA(help), .help = "this help", .usage = "-h, --help"},
	{0},
};

int cmd_create(int argc, char **argv)
{
	_cleanup_cli_cell_opts_ struct cli_cell_opts opts = {0};
	struct create_args a = {0};
	struct cli_table tables[] = {{CREATE_OPTIONS, &a}, {CLI_CELL_OPTIONS, &opts}};
	const char *name = NULL;
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		if (!strcmp(arg, "--") && !name && i + 1 < argc) {
			/* the name follows, whatever it looks like; nothing after */
			name = argv[++i];
			if (i + 1 < argc) {
				cli_error("create: unexpected argument after the name (see 'sandcell create --help')");
				return CLI_EXIT_USAGE;
			}
			continue;
		}
		int r = cli_parse_options(tables, SC_ARRAY_LEN(tables), argc, argv, &i);
		if (r < 0)
			return CLI_EXIT_USAGE;
		if (a.help) {
			_cleanup_free_ char *h = cli_options_help(CREATE_OPTIONS, 22);
			printf(CREATE_HELP, cli_cell_opts_help(), h ? h : "");
			return 0;
		}
		if (r == 1)
			continue;
		if (arg[0] == '-' || name) {
			cli_error("create: unexpected argument '%.64s' (see 'sandcell create --help')", arg);
			return CLI_EXIT_USAGE;
		}
		name = arg;
	}
	if (!name) {
		cli_error("create: no cell name given (usage: sandcell create [OPTIONS] NAME)");
		return CLI_EXIT_USAGE;
	}
	_cleanup_cli_cell_ struct cli_cell built;
	if (cli_cell_build(&built, &opts) < 0)
		return CLI_EXIT_USAGE;
	if (a.persist)
		built.spec.upper_dir = "persist";
	struct cell *cell;
	struct sc_err err = {0};
	if (cell_create(&built.spec, name, &cell, &err) < 0)
		return cli_fail(&err);
	printf("%s\n", cell_name(cell));
	cell_close(cell);
	return 0;
}
