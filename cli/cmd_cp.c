#include <string.h>

#include "../common/parse.h"
#include "cli.h"

static const char CP_HELP[] =
	"usage: sandcell cp [OPTIONS] HOSTPATH NAME:CELLPATH\n"
	"       sandcell cp [OPTIONS] NAME:CELLPATH HOSTPATH\n"
	"\n"
	"Copy a file or a directory tree into or out of the long-lived cell NAME.\n"
	"The cell path is resolved inside the cell; symlinks are copied as\n"
	"symlinks and never followed on the host. When the destination is an\n"
	"existing directory the copy lands inside it. Copied out, setuid and\n"
	"setgid bits are dropped, and so is every symlink whose target is\n"
	"absolute or leaves the copied tree (one line says so).\n"
	"\n"
	"Options:\n"
	"%s";

struct cp_args {
	uint64_t max_size;
	bool keep_links;
};
#define CA(member) CLI_FIELD(struct cp_args, member)

static const struct cli_option CP_OPTIONS[] = {
	{"--keep-links", NULL, CLI_FLAG, CA(keep_links),
	 .help = "copied out, keep every symlink as it is"},
	{"--max-size", NULL, CLI_SIZE, CA(max_size), .metavar = "SIZE",
	 .help = "refuse to copy more than SIZE bytes (default 1G)"},
	CLI_ROOT_OPTION,
	CLI_HELP_OPTION,
	{0},
};

/* "NAME:/path" → name and path; a host path has no "NAME:" prefix. */
static bool split_cell_arg(char *arg, char **name, char **path)
{
	char *colon = strchr(arg, ':');
	if (!colon || arg[0] == '/' || arg[0] == '.')
		return false;
	*colon = '\0';
	if (!sc_valid_name(arg)) {
		*colon = ':';
		return false;
	}
	*name = arg;
	*path = colon + 1;
	return true;
}

/* The runtime's lines, and the option that keeps the links it left out
 * (the runtime does not name options: other callers have none). */
struct cp_log {
	struct sc_log out;
};

static void cp_log(void *ctx, enum sc_log_level level, const char *msg)
{
	struct cp_log *cl = ctx;
	if (!strncmp(msg, "left out ", 9) && strstr(msg, " symlink"))
		sc_log(&cl->out, level, "%s; --keep-links keeps them", msg);
	else
		sc_log(&cl->out, level, "%s", msg);
}

int cmd_cp(int argc, char **argv)
{
	struct cp_args a = {.max_size = 1ULL << 30};
	char *args[2];
	const struct cli_table tables[] = {{CP_OPTIONS, &a, 0}};
	const struct cli_command cmd = {.name = "cp", .help = CP_HELP, .tables = tables, .ntables = 1,
					.operands = (const char **)args, .max_operands = 2,
					.flags = CLI_DASH_OPERAND};
	int nargs;
	int done = cli_parse_args(&cmd, argc, argv, &nargs, NULL);
	if (done >= 0)
		return done;
	if (nargs != 2) {
		cli_error("cp: usage: sandcell cp HOSTPATH NAME:CELLPATH | NAME:CELLPATH HOSTPATH");
		return CLI_EXIT_USAGE;
	}
	char *name, *cell_path;
	bool into = split_cell_arg(args[1], &name, &cell_path);
	if (!into && !split_cell_arg(args[0], &name, &cell_path)) {
		cli_error("cp: one side must be NAME:/path in a cell");
		return CLI_EXIT_USAGE;
	}
	struct cell *cell;
	struct sc_err err = {0};
	struct cli_log log_state = {0};
	struct cp_log cl = {cli_log_sink(&log_state)};
	struct sc_log log = {.fn = cp_log, .ctx = &cl};
	if (cell_open(name, &cell, &err) < 0)
		return cli_fail(&err);
	unsigned out_flags = a.keep_links ? CELL_COPY_KEEP_LINKS : 0;
	int rc = into ? cell_copy_in(cell, args[0], cell_path, a.max_size, &err)
		      : cell_copy_out_flags(cell, cell_path, args[1], a.max_size, out_flags, &log, &err);
	cell_close(cell);
	return rc < 0 ? cli_fail(&err) : 0;
}
