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
	"  --keep-links          copied out, keep every symlink as it is\n"
	"  --max-size SIZE       refuse to copy more than SIZE bytes (default 1G)\n"
	"  --root DIR            state root (or SANDCELL_ROOT)\n"
	"  -h, --help            this help\n";

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
	uint64_t max_size = 1ULL << 30;
	unsigned out_flags = 0;
	char *args[2];
	int nargs = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (cli_is_help(a)) {
			fputs(CP_HELP, stdout);
			return 0;
		} else if (!strcmp(a, "--max-size") && i + 1 < argc) {
			if (sc_parse_size(argv[++i], &max_size) < 0 || !max_size) {
				cli_error("--max-size: expected a size like 100M, got '%.64s'", argv[i]);
				return CLI_EXIT_USAGE;
			}
		} else if (!strcmp(a, "--keep-links")) {
			out_flags |= CELL_COPY_KEEP_LINKS;
		} else if (!strcmp(a, "--root") && i + 1 < argc) {
			cell_set_root(argv[++i]);
		} else if (a[0] == '-' && a[1]) {
			cli_error("cp: unknown option '%.64s' (see 'sandcell cp --help')", a);
			return CLI_EXIT_USAGE;
		} else if (nargs < 2) {
			args[nargs++] = argv[i];
		} else {
			cli_error("cp: too many arguments");
			return CLI_EXIT_USAGE;
		}
	}
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
	int rc = into ? cell_copy_in(cell, args[0], cell_path, max_size, &err)
		      : cell_copy_out_flags(cell, cell_path, args[1], max_size, out_flags, &log, &err);
	cell_close(cell);
	return rc < 0 ? cli_fail(&err) : 0;
}
