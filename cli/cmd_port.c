#include <string.h>

#include "ports.h"

static const char PORT_HELP[] =
	"usage: sandcell port [--json] [--root DIR] NAME\n"
	"\n"
	"List the ports published into long-lived cell NAME with 'create -p':\n"
	"one line per port, CELLPORT/tcp -> HOSTADDR:HOSTPORT (with --json, an\n"
	"array of {host_addr, host_port, cell_port, protocol}).\n"
	"\n"
	"Options:\n"
	"%s";

struct port_args {
	bool json;
};

static const struct cli_option PORT_OPTIONS[] = {
	{"--json", NULL, CLI_FLAG, CLI_FIELD(struct port_args, json), .help = "print JSON"},
	CLI_ROOT_OPTION,
	CLI_HELP_OPTION,
	{0},
};

int cmd_port(int argc, char **argv)
{
	struct port_args a = {0};
	const char *name = NULL;
	const struct cli_table tables[] = {{PORT_OPTIONS, &a, 0}};
	const struct cli_command cmd = {.name = "port", .help = PORT_HELP, .tables = tables,
					.ntables = 1, .operands = &name, .max_operands = 1};
	int n;
	int done = cli_parse_args(&cmd, argc, argv, &n, NULL);
	if (done >= 0)
		return done;
	if (!name) {
		cli_error("port: no cell name given (usage: sandcell port [--json] NAME)");
		return CLI_EXIT_USAGE;
	}
	struct cell_status st;
	struct sc_err err = {0};
	if (cell_status_get(name, &st, &err) < 0)
		return cli_fail(&err);
	if (a.json) {
		cli_ports_json(stdout, st.ports, st.nports);
		fputc('\n', stdout);
	} else {
		cli_ports_print(stdout, st.ports, st.nports);
	}
	return 0;
}
