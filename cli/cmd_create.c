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
	_cleanup_cell_opts_ struct cell_opts opts = {0};
	bool persist = false;
	const char *name = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (cli_is_help(a)) {
			printf(CREATE_HELP, cell_opts_help());
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
		int r = cell_opts_parse(&opts, argc, argv, &i);
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
	struct cell_spec spec;
	struct policy pol = {0};
	struct policy_filter filter = {0};
	cell_spec_init(&spec);
	int rc = CLI_EXIT_USAGE;
	if (cell_opts_build(&opts, &pol, &filter, &spec) < 0)
		goto out;
	spec.image_name = opts.img.name;
	if (persist)
		spec.upper_dir = "persist";
	struct cell *cell;
	struct sc_err err = {0};
	if (cell_create(&spec, name, &cell, &err) < 0) {
		rc = cli_fail(&err);
		goto out;
	}
	printf("%s\n", cell_name(cell));
	cell_close(cell);
	rc = 0;
out:
	policy_filter_free(&filter);
	policy_free(&pol);
	cell_opts_free(&opts);
	return rc;
}
