#include <string.h>

#include "ports.h"

static const char CREATE_HELP[] =
	"usage: sandcell create [OPTIONS] NAME\n"
	"\n"
	"Start a long-lived cell named NAME and return at once; run commands in\n"
	"it with 'sandcell exec', copy files with 'sandcell cp', remove it with\n"
	"'sandcell rm'. Files written in the cell persist between commands.\n"
	"\n"
	"Options:\n"
	"%s%s%s";

struct create_args {
	bool persist;
};
#define CA(member) CLI_FIELD(struct create_args, member)

static const struct cli_option CREATE_OPTIONS[] = {
	{"--persist", NULL, CLI_FLAG, CA(persist),
	 .help = "keep the writable layer on disk (not in memory)"},
	CLI_HELP_OPTION,
	{0},
};

int cmd_create(int argc, char **argv)
{
	_cleanup_cli_cell_opts_ struct cli_cell_opts opts = {0};
	struct create_args a = {0};
	struct cli_ports ports = {0};
	/* the common options first in the help */
	const struct cli_table tables[] = {
		{CLI_CELL_OPTIONS, &opts, 0}, {CLI_PORT_OPTIONS, &ports, 0}, {CREATE_OPTIONS, &a, 0}};
	const char *name = NULL;
	const struct cli_command cmd = {.name = "create", .help = CREATE_HELP, .tables = tables,
					.ntables = SC_ARRAY_LEN(tables), .operands = &name,
					.max_operands = 1, .flags = CLI_DASHDASH};
	int n;
	int done = cli_parse_args(&cmd, argc, argv, &n, NULL);
	if (done >= 0)
		return done;
	if (!name) {
		cli_error("create: no cell name given (usage: sandcell create [OPTIONS] NAME)");
		return CLI_EXIT_USAGE;
	}
	_cleanup_cli_cell_ struct cli_cell built;
	if (cli_cell_build(&built, &opts) < 0)
		return CLI_EXIT_USAGE;
	if (a.persist)
		built.spec.upper_dir = "persist";
	size_t note_len = 0;
	_cleanup_free_ char *note = cli_create_note(argc, argv, name, &note_len);
	if (!note) {
		cli_error("create: out of memory");
		return CLI_EXIT_USAGE;
	}
	built.spec.note = note;
	built.spec.note_len = note_len;
	int rc = cli_ports_open(&ports, &built.spec);
	if (rc != 0)
		return rc;
	struct cell *cell;
	struct sc_err err = {0};
	rc = cell_create(&built.spec, name, &cell, &err);
	/* the cell's relay holds the listeners now; ours go */
	cell_ports_close(built.spec.ports, built.spec.nports);
	if (rc < 0)
		return cli_fail(&err);
	printf("%s\n", cell_name(cell));
	cell_close(cell);
	return 0;
}
