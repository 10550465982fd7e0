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
	bool force, help;
};
#define RM(member) CLI_FIELD(struct rm_args, member)

static const struct cli_option RM_OPTIONS[] = {
	{"--force", "-f", CLI_FLAG, RM(force), .usage = "-f, --force",
	 .help = "also a cell that is running a command"},
	CLI_ROOT_OPTION,
	{"--help", "-h", CLI_FLAG, RM(help), .help = "this help", .usage = "-h, --help"},
	{0},
};

int cmd_rm(int argc, char **argv)
{
	struct rm_args a = {0};
	_cleanup_free_ const char **names = calloc((size_t)(argc > 0 ? argc : 1), sizeof(*names));
	int n = 0;
	if (!names) {
		cli_error("rm: out of memory");
		return CLI_EXIT_USAGE;
	}
	for (int i = 1; i < argc; i++) {
		int r = cli_parse_option(RM_OPTIONS, &a, argc, argv, &i);
		if (r < 0)
			return CLI_EXIT_USAGE;
		if (a.help) {
			_cleanup_free_ char *h = cli_options_help(RM_OPTIONS, 22);
			printf(RM_HELP, h ? h : "");
			return 0;
		}
		if (r == 1)
			continue;
		if (argv[i][0] == '-') {
			cli_error("rm: unknown option '%.64s'", argv[i]);
			return CLI_EXIT_USAGE;
		}
		names[n++] = argv[i];
	}
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
