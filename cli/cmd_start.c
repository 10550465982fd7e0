/* sandcell start: a --persist cell whose init died, started again on the
 * files it kept, made as it was created (its note) with the options given
 * here on top. */
#include <string.h>

#include "ports.h"

static const char START_HELP[] =
	"usage: sandcell start [OPTIONS] NAME\n"
	"\n"
	"Start again a long-lived cell made with --persist whose init died\n"
	"('sandcell ps' shows it as gone: the host rebooted, or it was killed):\n"
	"a fresh init on the files the cell kept, with the options it was\n"
	"created with. -v binds and -p ports are not kept: give them again.\n"
	"Options given here replace the kept ones. A cell that runs, or one\n"
	"made without --persist (its files went with its init), is refused.\n"
	"\n"
	"Options (those of 'sandcell create'):\n"
	"%s%s";

/* What the dead cell had that start does not bring back by itself. */
static void warn_not_kept(const char *name, const struct cli_ports *ports,
			  const struct cli_cell_opts *given)
{
	struct cell_status st;
	struct sc_err ignored;
	if (cell_status_get(name, &st, &ignored) < 0)
		return;
	if (st.nports && !ports->n)
		cli_warn("cell '%s' had %zu published port(s): give -p again to publish them", name,
			 st.nports);
	if (st.nvolumes && !given->nbinds)
		cli_warn("cell '%s' had volume %s bound: give -v again to bind it", name,
			 st.volumes[0]);
}

static int start_cell(const char *name, struct cli_cell_opts *opts, const struct cli_made_like *like,
		      const struct cli_ports *ports)
{
	_cleanup_cli_cell_ struct cli_cell built;
	if (cli_cell_build(&built, opts) < 0)
		return CLI_EXIT_USAGE;
	built.spec.note = like->note;
	built.spec.note_len = like->len;
	int rc = cli_ports_open(ports, &built.spec);
	if (rc != 0)
		return rc;
	struct cell *cell;
	struct sc_err err = {0};
	rc = cell_start_again(name, &built.spec, &cell, &err);
	cell_ports_close(built.spec.ports, built.spec.nports);
	if (rc < 0)
		return cli_fail(&err);
	printf("%s\n", cell_name(cell));
	cell_close(cell);
	return 0;
}

int cmd_start(int argc, char **argv)
{
	_cleanup_cli_cell_opts_ struct cli_cell_opts opts = {0};
	struct cli_ports ports = {0};
	struct cli_made_like like = {0};
	const struct cli_table tables[] = {{CLI_CELL_OPTIONS, &opts, 0}, {CLI_PORT_OPTIONS, &ports, 0}};
	const char *name = NULL;
	const struct cli_command cmd = {.name = "start", .help = START_HELP, .tables = tables,
					.ntables = SC_ARRAY_LEN(tables), .operands = &name,
					.max_operands = 1};
	int n;
	int done = cli_parse_args(&cmd, argc, argv, &n, NULL);
	if (done >= 0)
		return done;
	if (!name) {
		cli_error("start: no cell name given (usage: sandcell start [OPTIONS] NAME)");
		return CLI_EXIT_USAGE;
	}
	warn_not_kept(name, &ports, &opts);
	/* again, the cell's kept options under ours: its note, then ours */
	cli_cell_opts_free(&opts);
	memset(&opts, 0, sizeof(opts));
	memset(&ports, 0, sizeof(ports));
	int rc = cli_cell_opts_of(name, &opts, &like);
	if (rc == 0) {
		done = cli_parse_args(&cmd, argc, argv, &n, NULL);
		rc = done >= 0 ? done : start_cell(name, &opts, &like, &ports);
	}
	cli_made_like_free(&like);
	return rc;
}
