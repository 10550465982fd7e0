#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "ports.h"

static const char RUN_HELP[] =
	"usage: sandcell run [OPTIONS] [--] CMD [ARG...]\n"
	"       sandcell run [OPTIONS] --image NAME\n"
	"\n"
	"Run CMD in a fresh one-shot cell and exit with its status: 128+N when\n"
	"killed by signal N, 124 on --timeout, 125 when sandcell failed, 126 when\n"
	"CMD cannot be executed, 127 when it is not found. stdin is passed through;\n"
	"a terminal never enters the cell: with -t CMD gets a pty of its own, without\n"
	"it CMD reads a pipe that sandcell fills with what you type (^D ends it).\n"
	"Without CMD, the image's ENTRYPOINT and CMD run, as Docker runs them\n"
	"(its WORKDIR, ENV and USER apply to any command); a CMD given replaces\n"
	"both.\n"
	"\n"
	"Options:\n"
	"%s%s%s";

struct run_args {
	bool json, tty;
	const char *net_log;
};
#define RA(member) CLI_FIELD(struct run_args, member)

static const struct cli_option RUN_OPTIONS[] = {
	{"--tty", "-t", CLI_FLAG, RA(tty), .usage = "-t, --tty",
	 .help = "give CMD a pty of its own (relayed; the default when\n"
		 "stdin and stdout are a terminal, never with --json)"},
	{"--json", NULL, CLI_FLAG, RA(json),
	 .help = "capture stdout/stderr and print one JSON object:\n"
		 "exit_code, signal, timed_out, stdout, stderr,\n"
		 "truncated, wall_s, cpu_s, peak_memory, limit_hit\n"
		 "(and network, with an allowlist)"},
	{"--net-log", NULL, CLI_STRING, RA(net_log), .metavar = "FILE",
	 .help = "with an allowlist: append each egress decision to\n"
		 "FILE as a JSON line (see docs/policy.md)"},
	CLI_HELP_OPTION,
	{0},
};

/* The image's ENTRYPOINT then CMD, as Docker runs them without a command
 * (malloc'd array of the image's strings), or NULL when it has neither. */
static size_t strv_len(char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

static char **image_command(const struct rootfs_image *img)
{
	size_t ne = strv_len(img->entrypoint), nc = strv_len(img->cmd);
	char **argv = ne + nc ? calloc(ne + nc + 1, sizeof(*argv)) : NULL;
	if (!argv)
		return NULL;
	for (size_t k = 0; k < ne; k++)
		argv[k] = img->entrypoint[k];
	for (size_t k = 0; k < nc; k++)
		argv[ne + k] = img->cmd[k];
	return argv;
}

int cmd_run(int argc, char **argv)
{
	_cleanup_cli_cell_opts_ struct cli_cell_opts opts = {0};
	struct run_args a = {0};
	struct cli_ports ports = {0};
	/* the common options first in the help */
	const struct cli_table tables[] = {
		{CLI_CELL_OPTIONS, &opts, 0}, {CLI_PORT_OPTIONS, &ports, 0}, {RUN_OPTIONS, &a, 0}};
	const struct cli_command cmd = {.name = "run", .help = RUN_HELP, .tables = tables,
					.ntables = SC_ARRAY_LEN(tables), .flags = CLI_REST | CLI_DASHDASH};
	_cleanup_fd_ int net_log_fd = -1;
	int nop, i;
	int done = cli_parse_args(&cmd, argc, argv, &nop, &i);
	if (done >= 0)
		return done;
	if (i >= argc && !opts.image) {
		cli_error("run: no command given (usage: sandcell run [OPTIONS] -- CMD [ARG...])");
		return CLI_EXIT_USAGE;
	}

	_cleanup_cli_cell_ struct cli_cell cell;
	_cleanup_free_ char **image_argv = NULL;
	int rc = CLI_EXIT_USAGE;
	if (cli_cell_build(&cell, &opts) < 0)
		goto out;
	struct cell_spec *spec = &cell.spec;
	spec->argv = argv + i;
	if (i >= argc && !(spec->argv = image_argv = image_command(&opts.img))) {
		cli_error("run: no command given, and image '%s' has no ENTRYPOINT or CMD (usage: "
			  "sandcell run [OPTIONS] -- CMD [ARG...])", opts.image);
		goto out;
	}
	if (a.net_log) {
		if (!spec->egress) {
			cli_error("--net-log: the cell has no allowlist (add --allow-net or a policy "
				  "with \"network\")");
			goto out;
		}
		net_log_fd = open(a.net_log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (net_log_fd < 0) {
			cli_error("--net-log: cannot open %s: %s", a.net_log, strerror(errno));
			goto out;
		}
		spec->egress_log_fd = net_log_fd;
	}
	if (a.json && a.tty) {
		cli_error("run: -t cannot go with --json (a pty's output is not captured)");
		goto out;
	}
	if (a.json)
		spec->stdout_fd = spec->stderr_fd = -1;
	if ((rc = cli_ports_open(&ports, spec)) != 0)
		goto out;
	rc = CLI_EXIT_USAGE;
	/* a free port was picked: say which, before the command runs */
	for (size_t p = 0; p < spec->nports; p++)
		if (cli_port_was_free(ports.specs[p]))
			cli_ports_print(stderr, &spec->ports[p], 1);
	spec->tty = cli_want_tty(a.tty, a.json);
	if (spec->tty)
		cli_term_raw(0);

	struct cell_result res;
	struct sc_err err = {0};
	int run_rc = cell_run(spec, &res, &err);
	cli_term_restore();
	cell_ports_close(spec->ports, spec->nports);
	if (run_rc < 0) {
		rc = cli_fail(&err);
		goto out;
	}
	if (res.warning)
		cli_warn("%s", res.warning);
	if (a.json)
		cli_print_result_json(stdout, &res);
	rc = res.exit_code;
	cell_result_free(&res);
out:
	cell_ports_close(cell.spec.ports, cell.spec.nports);
	fflush(stdout);
	return rc;
}
