#include <string.h>

#include "cli.h"

static const char EXEC_HELP[] =
	"usage: sandcell exec [OPTIONS] NAME [--] CMD [ARG...]\n"
	"\n"
	"Run CMD in the long-lived cell NAME; exit statuses as for 'run'.\n"
	"\n"
	"Options:\n"
	"%s";

struct exec_args {
	struct cell_exec_req req;
	const char *env[CELL_MAX_ENV + 1];
	size_t nenv;
	bool json, tty, in;
};
#define EA(member) CLI_FIELD(struct exec_args, member)

static int parse_it(void *t, const char *opt, const char *v)
{
	(void)opt, (void)v;
	struct exec_args *a = t;
	a->in = a->tty = true;
	return 0;
}

static int parse_cwd(void *t, const char *opt, const char *v)
{
	struct exec_args *a = t;
	if (cli_check_cell_dir(opt, v) < 0)
		return -1;
	a->req.cwd = v;
	return 0;
}

static int parse_env(void *t, const char *opt, const char *v)
{
	struct exec_args *a = t;
	return cli_add_env(opt, v, a->env, &a->nenv);
}

static int parse_user(void *t, const char *opt, const char *v)
{
	(void)opt;
	struct exec_args *a = t;
	struct sc_err e = {0};
	if (cell_parse_user(v, &a->req.uid, &a->req.gid, &e) < 0) {
		cli_error("--user: %s", e.msg);
		return -1;
	}
	a->req.has_user = true;
	return 0;
}

/* --timeout and --output-limit: as the policy reads its limits */
static int parse_limit(void *t, const char *opt, const char *v)
{
	struct exec_args *a = t;
	struct policy_limits l = {0};
	if (cli_limit_parse(opt, v, &l) < 0)
		return -1;
	if (!strcmp(opt, "--timeout"))
		a->req.timeout_s = l.timeout_s;
	else
		a->req.output_limit = l.output;
	return 0;
}

static const struct cli_option EXEC_OPTIONS[] = {
	{"-i", NULL, CLI_FLAG, EA(in),
	 .help = "pass stdin to the command (else it reads /dev/null);\n"
		 "a terminal is relayed through a pipe without -t"},
	{"--tty", "-t", CLI_FLAG, EA(tty), .usage = "-t, --tty",
	 .help = "give the command a pty of its own (relayed; the default\n"
		 "with -i when stdin and stdout are a terminal)"},
	{"-it", "-ti", CLI_CUSTOM_FLAG, .parse = parse_it},
	{"-w", NULL, CLI_CUSTOM, .parse = parse_cwd, .metavar = "DIR",
	 .help = "working directory (default: the cell's)"},
	{"-e", NULL, CLI_CUSTOM, .parse = parse_env, .metavar = "KEY=VAL",
	 .help = "add to the cell's environment for this command"},
	{"--timeout", NULL, CLI_CUSTOM, .parse = parse_limit, .metavar = "SECS",
	 .help = "kill the command after SECS (exit 124); the cell lives on"},
	{"--user", "-u", CLI_CUSTOM, .parse = parse_user, .usage = "-u, --user UID[:GID]",
	 .help = "run as this user of the cell (numbers; GID defaults to\n"
		 "UID); default: the cell's user (its --user, else its\n"
		 "image's USER, else root); --user 0 is root"},
	{"--json", NULL, CLI_FLAG, EA(json),
	 .help = "capture output and print one JSON result object\n"
		 "(with \"network\": the egress decisions made while\n"
		 "it ran, for a cell with an allowlist)"},
	{"--output-limit", NULL, CLI_CUSTOM, .parse = parse_limit, .metavar = "SIZE",
	 .help = "with --json: bytes kept of stdout and of stderr (default 1M)"},
	CLI_ROOT_OPTION,
	CLI_HELP_OPTION,
	{0},
};

int cmd_exec(int argc, char **argv)
{
	struct exec_args a = {.req = {.stdin_fd = -1, .stdout_fd = 1, .stderr_fd = 2}};
	struct cell_exec_req *req = &a.req;
	const char *name = NULL;
	const struct cli_table tables[] = {{EXEC_OPTIONS, &a, 0}};
	const struct cli_command cmd = {.name = "exec", .help = EXEC_HELP, .tables = tables,
					.ntables = 1, .operands = &name, .max_operands = 1,
					.flags = CLI_REST | CLI_DASHDASH};
	int n, i;
	int done = cli_parse_args(&cmd, argc, argv, &n, &i);
	if (done >= 0)
		return done;
	if (!name || i >= argc) {
		cli_error("exec: usage: sandcell exec [OPTIONS] NAME -- CMD [ARG...]");
		return CLI_EXIT_USAGE;
	}
	if (a.in)
		req->stdin_fd = 0;
	a.env[a.nenv] = NULL;
	req->env = a.nenv ? a.env : NULL;
	req->argv = argv + i;
	if (a.json && a.tty) {
		cli_error("exec: -t cannot go with --json (a pty's output is not captured)");
		return CLI_EXIT_USAGE;
	}
	if (a.json)
		req->stdout_fd = req->stderr_fd = -1;
	req->tty = cli_want_tty(a.tty, a.json) && (a.tty || req->stdin_fd == 0);
	struct cell *cell;
	struct sc_err err = {0};
	if (cell_open(name, &cell, &err) < 0)
		return cli_fail(&err);
	struct cell_result res;
	_cleanup_fd_ int net_log = a.json ? cell_egress_log_open(cell, true, NULL) : -1;
	if (req->tty && req->stdin_fd == 0)
		cli_term_raw(0);
	int rc = cell_exec(cell, req, &res, &err);
	cli_term_restore();
	cell_close(cell);
	if (rc < 0)
		return cli_fail(&err);
	if (net_log >= 0)
		res.network = cli_net_summary_since(net_log);
	if (a.json)
		cli_print_result_json(stdout, &res);
	cell_result_free(&res);
	return res.exit_code;
}
