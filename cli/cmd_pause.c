/* sandcell pause / resume: hold a long-lived cell's processes still and
 * let them go on (runtime/pause.c). */
#include <stdlib.h>

#include "cli.h"

static const char PAUSE_HELP[] =
	"usage: sandcell pause [--root DIR] NAME...\n"
	"\n"
	"Pause long-lived cells: every process of the cell but its init is held\n"
	"still (SIGSTOP), its processes and memory kept, until 'sandcell resume\n"
	"NAME'.\n"
	"A paused cell runs no new command (exec is refused) and is not forked\n"
	"or checkpointed; its files can still be copied. A cell paused already\n"
	"is an error.\n"
	"\n"
	"Options:\n"
	"%s";

static const char RESUME_HELP[] =
	"usage: sandcell resume [--root DIR] NAME...\n"
	"\n"
	"Resume paused cells: their processes go on where they were held. A\n"
	"cell that is not paused is an error.\n"
	"\n"
	"Options:\n"
	"%s";

static const struct cli_option PAUSE_OPTIONS[] = {
	CLI_ROOT_OPTION,
	CLI_HELP_OPTION,
	{0},
};

static int each_cell(const char *verb, const char *help, int (*fn)(struct cell *, struct sc_err *),
		     int argc, char **argv)
{
	_cleanup_free_ const char **names = calloc((size_t)(argc > 0 ? argc : 1), sizeof(*names));
	if (!names) {
		cli_error("%s: out of memory", verb);
		return CLI_EXIT_USAGE;
	}
	const struct cli_table tables[] = {{PAUSE_OPTIONS, NULL, 0}};
	const struct cli_command cmd = {.name = verb, .help = help, .tables = tables,
					.ntables = 1, .operands = names, .max_operands = argc};
	int n;
	int done = cli_parse_args(&cmd, argc, argv, &n, NULL);
	if (done >= 0)
		return done;
	if (!n) {
		cli_error("%s: no cell named (usage: sandcell %s NAME...)", verb, verb);
		return CLI_EXIT_USAGE;
	}
	int rc = 0;
	for (int k = 0; k < n; k++) {
		struct sc_err err = {0};
		struct cell *c;
		if (cell_open(names[k], &c, &err) < 0) {
			rc = cli_fail(&err);
			continue;
		}
		if (fn(c, &err) < 0)
			rc = cli_fail(&err);
		cell_close(c);
	}
	return rc;
}

int cmd_pause(int argc, char **argv)
{
	return each_cell("pause", PAUSE_HELP, cell_pause, argc, argv);
}

int cmd_resume(int argc, char **argv)
{
	return each_cell("resume", RESUME_HELP, cell_resume, argc, argv);
}
