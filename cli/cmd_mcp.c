/* sandcell mcp: the MCP server (api/mcp.c) on stdin/stdout. Parsing, the
 * signals and the log lines only. */
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "../api/api.h"
#include "cli.h"

#ifndef SANDCELL_VERSION
#define SANDCELL_VERSION "0.1.0"
#endif

static const char MCP_HELP[] =
	"usage: sandcell mcp [--max-timeout SECS] [--verbose] [CELL OPTIONS]\n"
	"\n"
	"Serve the Model Context Protocol on stdin/stdout (docs/mcp.md): newline-\n"
	"delimited JSON-RPC 2.0, for MCP hosts (Claude Desktop, Claude Code, Cursor),\n"
	"which start it as {\"command\": \"/ABSOLUTE/PATH/sandcell\", \"args\": [\"mcp\"]}\n"
	"(a host's PATH is often not your shell's; docs/mcp.md shows each\n"
	"host's set-up, over ssh and WSL too). Tools: execute_code,\n"
	"get_supported_languages, get_language_details, create_session,\n"
	"close_session, run_command, write_file, read_file. Each call runs in a\n"
	"fresh cell, or in a session's cell. Only JSON-RPC goes to stdout; logs go\n"
	"to stderr. When stdin ends, or on SIGTERM/SIGINT/SIGHUP, every session's\n"
	"cell is removed and it exits 0.\n"
	"\n"
	"Options:\n"
	"%s"
	"\n"
	"Cell options (the cells it makes):\n"
	"%s";

struct mcp_opts {
	double max_timeout;
	bool verbose;
};

#define MO(member) CLI_FIELD(struct mcp_opts, member)

static const struct cli_option MCP_OPTIONS[] = {
	{"--max-timeout", NULL, CLI_SECONDS, MO(max_timeout), .metavar = "SECS",
	 .help = "the longest timeout a call may ask for (default 300)"},
	{"--verbose", "-v", CLI_FLAG, MO(verbose), .help = "log each call to stderr"},
	CLI_HELP_OPTION,
	{0},
};

static void mcp_log(void *ctx, enum sc_log_level level, const char *msg)
{
	const bool *verbose = ctx;
	if (level == SC_LOG_PROGRESS && !*verbose)
		return;
	fprintf(stderr, "sandcell: %s%s\n", level == SC_LOG_WARN ? "warning: " : "", msg);
}

static atomic_bool stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&stop_flag, true);
}

int cmd_mcp(int argc, char **argv)
{
	struct mcp_opts o = {0};
	_cleanup_cli_cell_opts_ struct cli_cell_opts co = {0};
	/* MCP_OPTIONS first: its -v is --verbose, not the cell's --volume */
	const struct cli_table tables[] = {{MCP_OPTIONS, &o, 24}, {CLI_CELL_OPTIONS, &co, 0}};
	const struct cli_command cmd = {.name = "mcp", .help = MCP_HELP, .tables = tables,
					.ntables = SC_ARRAY_LEN(tables)};
	int n;
	int done = cli_parse_args(&cmd, argc, argv, &n, NULL);
	if (done >= 0)
		return done;

	/* stdout is the protocol's alone: keep a private copy of it and point
	 * fd 1 at stderr, so that nothing else can write there; stdin too
	 * (fd 0 becomes /dev/null for anything that would read it). */
	int out_fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	int in_fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
	int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (out_fd < 0 || in_fd < 0 || null_fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0 ||
	    dup2(null_fd, STDIN_FILENO) < 0) {
		cli_error("mcp: cannot set up stdin/stdout");
		return CLI_EXIT_USAGE;
	}
	close(null_fd);

	_cleanup_cli_cell_ struct cli_cell cell;
	int rc = CLI_EXIT_USAGE;
	if (cli_cell_build(&cell, &co) < 0)
		goto out;

	struct api_mcp_config cfg;
	api_mcp_config_init(&cfg);
	cfg.spec = &cell.spec;
	if (o.max_timeout > 0)
		cfg.max_timeout_s = o.max_timeout;
	cfg.version = SANDCELL_VERSION;
	cfg.log = (struct sc_log){.fn = mcp_log, .ctx = &o.verbose};

	/* No SA_RESTART: a signal interrupts the read of the next message. */
	struct sigaction sa = {0};
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	struct sc_err err = {0};
	if (api_mcp_serve(&cfg, in_fd, out_fd, &stop_flag, &err) < 0)
		rc = cli_fail(&err);
	else
		rc = 0;
out:
	close(in_fd);
	close(out_fd);
	return rc;
}
