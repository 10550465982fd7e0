/* Published ports on the command line (cli/ports.c): the -p rows of run
 * and create, and `sandcell port` (cli/cmd_port.c). */
#pragma once
#include "cli.h"

struct cli_ports {
	const char *specs[CELL_MAX_PORTS]; /* [HOSTADDR:]HOSTPORT:CELLPORT as given */
	size_t n;
	bool any_address; /* --publish-any-address */
};

extern const struct cli_option CLI_PORT_OPTIONS[];

/* Parse one -p value into p (host_addr defaults to 127.0.0.1): 0, or -1
 * after a one-line error. Pure. */
int cli_port_parse(const char *v, bool any_address, struct cell_port *p);
/* Whether -p value v asked for a free port (HOSTPORT 0). */
bool cli_port_was_free(const char *v);
/* Fill spec->ports from o and make their host listeners: 0, or the exit
 * status (125) after a one-line error. */
int cli_ports_open(const struct cli_ports *o, struct cell_spec *spec);
/* One line per port: "CELLPORT/tcp -> HOSTADDR:HOSTPORT". */
void cli_ports_print(FILE *f, const struct cell_port *ports, size_t n);
/* A JSON array of {"host_addr","host_port","cell_port"}. */
void cli_ports_json(FILE *f, const struct cell_port *ports, size_t n);

int cmd_port(int argc, char **argv);
