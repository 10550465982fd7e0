#include <string.h>

#include "../common/parse.h"
#include "cli.h"

static const char EXEC_HELP[] =
	"usage: sandcell exec [OPTIONS] NAME [--] CMD [ARG...]\n"
	"\n"
	"Run CMD in the long-lived cell NAME; exit statuses as for 'run'.\n"
	"\n"
	"Options:\n"
	"  -i                    pass stdin to the command (else it reads /dev/null);\n"
	"                        a terminal is relayed through a pipe without -t\n"
	"  -t, --tty             give the command a pty of its own (relayed; the default\n"
	"                        with -i when stdin and stdout are a terminal)\n"
	"  -w DIR                working directory (default: the cell's)\n"
	"  -e KEY=VAL            add to the cell's environment for this command\n"
	"  --timeout SECS        kill the command after SECS (exit 124); the cell lives on\n"
	"  -u, --user UID[:GID]  run as this user of the cell (numbers; GID defaults to\n"
	"                        UID); default: the cell's user (its --user, else its\n"
	"                        image's USER, else root); --user 0 is root\n"
	"  --json                capture output and print one JSON result object\n"
	"                        (with \"network\": the egress decisions made while\n"
	"                        it ran, for a cell with an allowlist)\n"
	"  --output-limit SIZE   with --json: bytes kept of stdout and of stderr (default 1M)\n"
	"  --root DIR            state root (or SANDCELL_ROOT)\n"
	"  -h, --help            this help\n";

int cmd_exec(int argc, char **argv)
{
	struct cell_exec_req req = {.stdin_fd = -1, .stdout_fd = 1, .stderr_fd = 2};
	const char *env[CELL_MAX_ENV + 1];
	size_t nenv = 0;
	bool json = false, tty = false;
	const char *name = NULL;
	int i = 1;
	for (; i < argc; i++) {
		const char *a = argv[i];
		bool has_value = i + 1 < argc;
		if (cli_is_help(a)) {
			fputs(EXEC_HELP, stdout);
			return 0;
		} else if (!strcmp(a, "--")) {
			i++;
			break;
		} else if (!strcmp(a, "-i")) {
			req.stdin_fd = 0;
		} else if (!strcmp(a, "-t") || !strcmp(a, "--tty")) {
			tty = true;
		} else if (!strcmp(a, "-it") || !strcmp(a, "-ti")) {
			req.stdin_fd = 0;
			tty = true;
		} else if (!strcmp(a, "--json")) {
			json = true;
		} else if (!strcmp(a, "-w") && has_value) {
			req.cwd = argv[++i];
			if (req.cwd[0] != '/') {
				cli_error("-w: expected an absolute path in the cell, got '%.64s'", req.cwd);
				return CLI_EXIT_USAGE;
			}
		} else if (!strcmp(a, "-e") && has_value) {
			const char *kv = argv[++i];
			if (!sc_valid_env(kv) || nenv >= CELL_MAX_ENV) {
				cli_error("-e: expected KEY=VALUE, got '%.64s'", kv);
				return CLI_EXIT_USAGE;
			}
			env[nenv++] = kv;
		} else if ((!strcmp(a, "-u") || !strcmp(a, "--user")) && has_value) {
			struct sc_err e = {0};
			if (cell_parse_user(argv[++i], &req.uid, &req.gid, &e) < 0) {
				cli_error("--user: %s", e.msg);
				return CLI_EXIT_USAGE;
			}
			req.has_user = true;
		} else if (!strcmp(a, "--timeout") && has_value) {
			struct policy_limits l = {0};
			struct sc_err e = {0};
			if (policy_limit_parse("timeout", argv[++i], &l, &e) < 0) {
				cli_error("--timeout: %s", e.msg);
				return CLI_EXIT_USAGE;
			}
			req.timeout_s = l.timeout_s;
		} else if (!strcmp(a, "--output-limit") && has_value) {
			struct policy_limits l = {0};
			struct sc_err e = {0};
			if (policy_limit_parse("output", argv[++i], &l, &e) == 0) {
				req.output_limit = l.output;
			} else {
				cli_error("--output-limit: %s", e.msg);
				return CLI_EXIT_USAGE;
			}
		} else if (!strcmp(a, "--root") && has_value) {
			cell_set_root(argv[++i]);
		} else if (a[0] == '-') {
			cli_error("exec: unknown option or missing value '%.64s' (see 'sandcell exec --help')", a);
			return CLI_EXIT_USAGE;
		} else if (!name) {
			name = a;
		} else {
			break;
		}
	}
	if (!name || i >= argc) {
		cli_error("exec: usage: sandcell exec [OPTIONS] NAME -- CMD [ARG...]");
		return CLI_EXIT_USAGE;
	}
	env[nenv] = NULL;
	req.env = nenv ? env : NULL;
	req.argv = argv + i;
	if (json && tty) {
		cli_error("exec: -t cannot go with --json (a pty's output is not captured)");
		return CLI_EXIT_USAGE;
	}
	if (json)
		req.stdout_fd = req.stderr_fd = -1;
	req.tty = cli_want_tty(tty, json) && (tty || req.stdin_fd == 0);
	struct cell *cell;
	struct sc_err err = {0};
	if (cell_open(name, &cell, &err) < 0)
		return cli_fail(&err);
	struct cell_result res;
	_cleanup_fd_ int net_log = json ? cell_egress_log_open(cell, true, NULL) : -1;
	if (req.tty && req.stdin_fd == 0)
		cli_term_raw(0);
	int rc = cell_exec(cell, &req, &res, &err);
	cli_term_restore();
	cell_close(cell);
	if (rc < 0)
		return cli_fail(&err);
	if (net_log >= 0)
		res.network = cli_net_summary_since(net_log);
	if (json)
		cli_print_result_json(stdout, &res);
	cell_result_free(&res);
	return res.exit_code;
}
