#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char RM_HELP[] =
	"usage: sandcell rm [-f] [--root DIR] NAME...\n"
	"\n"
	"Stop and remove long-lived cells: every process, mount, cgroup and file\n"
	"of theirs. A cell running a command is refused unless -f.\n"
	"\n"
	"Options:\n"
	"%s";

struct rm_args {
	bool force;
};
#define RM(member) CLI_FIELD(struct rm_args, member)

static const struct cli_option RM_OPTIONS[] = {
	{"--force", "-f", CLI_FLAG, RM(force), .usage = "-f, --force",
	 .help = "also a cell that is running a command"},
	CLI_ROOT_OPTION,
	CLI_HELP_OPTION,
	{0},
};

int cmd_rm(int argc, char **argv)
{
	struct rm_args a = {0};
	_cleanup_free_ const char **names = calloc((size_t)(argc > 0 ? argc : 1), sizeof(*names));
	if (!names) {
		cli_error("rm: out of memory");
		return CLI_EXIT_USAGE;
	}
	const struct cli_table tables[] = {{RM_OPTIONS, &a, 0}};
	const struct cli_command cmd = {.name = "rm", .help = RM_HELP, .tables = tables,
					.ntables = 1, .operands = names, .max_operands = argc};
	int n;
	int done = cli_parse_args(&cmd, argc, argv, &n, NULL);
	if (done >= 0)
		return done;
	if (!n) {
		cli_error("rm: no cell named (usage: sandcell rm [-f] NAME...)");
		return CLI_EXIT_USAGE;
	}
	int rc = 0;
	for (int k = 0; k < n; k++) {
		struct sc_err err = {0};
		if (cell_remove(names[k], a.force, &err) < 0)
			rc = cli_fail(&err);
	}
	return rc;
}
