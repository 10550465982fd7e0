/* cli/: parsing and printing only. Each subcommand is cmd_<verb>.c. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../common/sc.h"
#include "../rootfs/rootfs.h"
#include "../runtime/cell.h"

#define CLI_EXIT_USAGE 125

/* Print "sandcell: <msg>" as one line on stderr. */
/* Write s to f with every control character but \n and \t (C0, DEL, the
 * C1 range of UTF-8) shown as \xHH: text from a cell, a model or a task
 * file must not drive the user's terminal. */
void cli_put_safe(FILE *f, const char *s, size_t len);
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Raise the soft RLIMIT_NOFILE towards need (at most to the hard limit):
 * 0 when the limit now holds need, else -1 with *have the limit there is
 * (cli/limits.c). */
int cli_raise_open_files(uint64_t need, uint64_t *have);
/* Print err's message as one line; returns 125. */
int cli_fail(const struct sc_err *err);
/* The sink for library messages (cli/log.c): each one line "sandcell: MSG"
 * on stderr; with live (a terminal), SC_LOG_PROGRESS lines replace each
 * other. One state per sink, used from one thread. */
struct cli_log {
	bool live;
	bool shown; /* a progress line is on the screen */
};
struct sc_log cli_log_sink(struct cli_log *st);

/* A pull's progress on stderr (cli/pull_view.c): on a terminal, bars for
 * the layers being downloaded and for the whole image, drawn in place;
 * elsewhere one plain line a layer. The view must outlive the pull. */
struct cli_pull_view {
	bool bar;
	size_t lines; /* of the bar, above the cursor */
	struct cli_log plain;
	struct sc_log log;
	struct rootfs_pull_meter meter;
};
void cli_pull_view_init(struct cli_pull_view *v);
/* o's log and meter: the view's. */
void cli_pull_view_set(struct cli_pull_view *v, struct rootfs_pull_opts *o);

/* The user's terminal (cli/term.c): whether the cell gets a pty of its own
 * (-t, or stdin and stdout are a terminal, never with --json); raw mode on
 * fd while it is relayed, restored by cli_term_restore, at exit and on
 * SIGHUP/SIGINT/SIGQUIT/SIGTERM. */
bool cli_want_tty(bool asked, bool json);
void cli_term_raw(int fd);
void cli_term_restore(void);

/* ---- options (cli/optparse.c): one table per group of options ---- */

enum cli_arg_type {
	CLI_FLAG,        /* no value; sets a bool */
	CLI_STRING,      /* the value as given (const char *) */
	CLI_COUNT,       /* a whole number in [min, max] (unsigned, size_t, uint64_t, long) */
	CLI_SIZE,        /* a size like 512M, not 0 (uint64_t) */
	CLI_SECONDS,     /* seconds like 30 or 0.5 (double) */
	CLI_CUSTOM,      /* parse(target, option, value) checks and stores */
	CLI_CUSTOM_FLAG, /* parse(target, option, NULL): no value */
	CLI_HELP,        /* -h, --help: only its help line (see CLI_HELP_OPTION) */
};

struct cli_option {
	const char *name;    /* "--memory" */
	const char *alias;   /* "-v", or NULL */
	enum cli_arg_type type;
	size_t offset, size; /* the field in the target: CLI_FIELD(type, member) */
	uint64_t min, max;   /* CLI_COUNT */
	int (*parse)(void *target, const char *option, const char *value); /* 0, -1 printed */
	const char *metavar; /* the value in the help line ("SIZE") */
	const char *help;    /* the help line ('\n': a continuation line); NULL: not listed */
	const char *usage;   /* the help line's left column, when not "NAME METAVAR" */
	bool eq_form;        /* also matches "NAME=..." */
};
#define CLI_FIELD(type, member) .offset = offsetof(type, member), .size = sizeof(((type *)0)->member)

/* A table (ended by an entry without names) and the struct it fills. */
struct cli_table {
	const struct cli_option *options;
	void *target;
	int help_width; /* the left column of its help lines (0: 22) */
};

/* The -h, --help row of a table: the line in the help text (the option
 * itself is cli_parse_args's, before any table). */
#define CLI_HELP_OPTION {"--help", "-h", CLI_HELP, .usage = "-h, --help", .help = "this help"}

/* Try to consume the option at argv[*i] (advancing *i past its value).
 * Returns 1 when consumed, 0 when the table has no such option, -1 on a
 * bad or missing value (error printed). */
int cli_parse_option(const struct cli_option *table, void *target, int argc, char **argv, int *i);
/* The same over several tables, the first that knows the option. */
int cli_parse_options(const struct cli_table *tables, size_t n, int argc, char **argv, int *i);
/* The help lines of a table, the left column `width` wide (malloc'ed;
 * NULL when out of memory). */
char *cli_options_help(const struct cli_option *table, int width);

/* --root DIR (an absolute path): the state and data root of this run,
 * one row shared by the commands that take it. */
int cli_parse_root(void *target, const char *option, const char *value);
#define CLI_ROOT_OPTION                                                                   \
	{"--root", NULL, CLI_CUSTOM, .parse = cli_parse_root, .metavar = "DIR",            \
	 .help = "state root (or SANDCELL_ROOT)"}

/* A command's command line: options from its tables (tried in order),
 * operands, and its --help, a printf format with one %s per table (that
 * table's help lines, in table order; three at most) unless print_help
 * prints it. */
struct cli_command {
	const char *name; /* "image build": "image build: unknown option ..." */
	const char *see;  /* errors' "see 'sandcell SEE --help'" (NULL: name) */
	const char *help;
	void (*print_help)(void);
	const struct cli_table *tables;
	size_t ntables;
	const char **operands; /* filled with at most max_operands */
	int max_operands;
	unsigned flags; /* CLI_REST, CLI_DASHDASH, CLI_DASH_OPERAND */
};
#define CLI_REST 1u         /* an operand past max_operands starts the rest */
#define CLI_DASHDASH 2u     /* "--": with CLI_REST, the rest starts after it;
			     * else what follows is operands (at least one) */
#define CLI_DASH_OPERAND 4u /* "-" (stdin) is an operand, not an option */
/* Parse argv[1..] as c says. Returns -1 to go on, with *noperands the
 * operands stored and (CLI_REST) *rest the index where the rest begins
 * (argc when nothing is left; rest may be NULL otherwise); else the exit
 * status: 0 after printing the help, 125 after a one-line error (a bad
 * value, an unknown option, an operand too many). */
int cli_parse_args(const struct cli_command *c, int argc, char **argv, int *noperands, int *rest);

/* The value after option argv[*i] (advancing *i), or NULL after saying
 * that the option needs one. */
const char *cli_option_value(int argc, char **argv, int *i);
/* v as a whole number in [min, max], or -1 after a one-line error naming
 * the option. */
int cli_parse_count(const char *name, const char *v, uint64_t min, uint64_t max, uint64_t *out);

/* A command's subcommands: argv[1] names one, which runs on argv + 1.
 * An unknown name is one line on stderr ("WHAT: unknown subcommand ...")
 * and 125. */
struct cli_subcommand {
	const char *name;
	int (*run)(int argc, char **argv);
};
int cli_run_subcommand(const char *what, const struct cli_subcommand *subs, size_t n, int argc,
		       char **argv);
/* The arguments of a command that takes no operands, only --root DIR, -h
 * and, where json is not NULL, --json (ps, gc, image ls): -1 to go on,
 * else the exit status (0 after the help, 125 after a one-line error). */
int cli_plain_args(int argc, char **argv, const char *what, const char *help, bool *json);
/* "-h" or "--help". */
bool cli_is_help(const char *arg);

/* Options shared by run/create/agent/batch. */
struct cli_cell_opts {
	const char *image;
	const char *policy; /* name or file, default "default" */
	struct policy overrides; /* limits/hostname/workdir set on the command line */
	const char *env[CELL_MAX_ENV];
	size_t nenv;
	char *bind_args[CELL_MAX_BINDS]; /* "HOST:CELL[:ro]" copies */
	size_t nbinds;
	size_t nbinds_owned; /* bind_args[0..n) were copied by cli_cell_build */
	char *volume_paths[CELL_MAX_VOLUMES]; /* the volumes' directories (malloc'd) */
	size_t nvolume_paths;
	bool require_cgroups;
	bool require_landlock;
	const char *net;
	struct net_rules *net_rules; /* --allow-net/--net-host, then the policy's
				      * (malloc'd on first use) */
	bool net_hosts_given;
	const char *user;        /* --user, else the image's USER */
	enum rootfs_pull_when pull; /* --pull: when an image reference is pulled */
	bool pull_insecure;
	struct rootfs_image img; /* resolved by cli_cell_build */
};
/* --pull's value (missing|never|always) into *out; -1 said why. */
int cli_parse_pull(const char *v, enum rootfs_pull_when *out);

/* --memory, --timeout, --output-limit, ... (opt, as typed) into l by the
 * policy's validator and ranges: 0, or -1 after a one-line error. */
int cli_limit_parse(const char *opt, const char *v, struct policy_limits *l);
/* -w DIR of a cell (an absolute path): 0, or -1 after a one-line error
 * naming opt. */
int cli_check_cell_dir(const char *opt, const char *v);
/* -e KEY=VALUE into env[*n] (at most CELL_MAX_ENV): 0, or -1 after a
 * one-line error naming opt. */
int cli_add_env(const char *opt, const char *v, const char **env, size_t *n);

/* How rootfs asks the runtime which images cells use (commit, image). */
extern const struct rootfs_in_use CLI_CELLS_IN_USE;

/* The common options (cli/opts.c), a table for struct cli_cell_opts. */
extern const struct cli_option CLI_CELL_OPTIONS[];
/* Try to consume one common option at argv[*i] (advancing *i past its
 * value). Returns 1 when consumed, 0 when not a common option, -1 on a bad
 * value (error already printed). */
int cli_cell_opts_parse(struct cli_cell_opts *o, int argc, char **argv, int *i);
/* The --help lines of the common options (static; "" when out of memory). */
const char *cli_cell_opts_help(void);
void cli_cell_opts_free(struct cli_cell_opts *o);
/* Frees the options when the variable goes out of scope (every return). */
#define _cleanup_cli_cell_opts_ __attribute__((cleanup(cli_cell_opts_free)))

/* A cell's spec as every command builds it from the common options: the
 * policy the spec points into and its compiled filter live beside it, so
 * one cleanup ends all three (declare it after the options it is built
 * from: the spec points into them too). */
struct cli_cell {
	struct policy pol;
	struct policy_filter filter;
	struct cell_spec spec;
};
/* Load the policy, apply it and the overrides to c->spec and record the
 * image's name (for ps and image rm). Returns 0 or prints one line and
 * returns -1; c is freed by cli_cell_free either way. */
int cli_cell_build(struct cli_cell *c, struct cli_cell_opts *o);
void cli_cell_free(struct cli_cell *c);
#define _cleanup_cli_cell_ __attribute__((cleanup(cli_cell_free)))

/* Write s as a JSON string literal (with quotes), escaping as needed. */
void cli_json_string(FILE *f, const char *s, size_t len);
/* Print a cell_result as one JSON object line. */
void cli_print_result_json(FILE *f, const struct cell_result *res);
struct net_summary *cli_net_summary_since(int fd);

int cmd_run(int argc, char **argv);
int cmd_create(int argc, char **argv);
int cmd_start(int argc, char **argv);
int cmd_pause(int argc, char **argv);
int cmd_resume(int argc, char **argv);
int cmd_exec(int argc, char **argv);
int cmd_cp(int argc, char **argv);
int cmd_ps(int argc, char **argv);
int cmd_rm(int argc, char **argv);
int cmd_gc(int argc, char **argv);
int cmd_volume(int argc, char **argv);
int cmd_commit(int argc, char **argv);
int cmd_version(int argc, char **argv);
int cmd_fork(int argc, char **argv);
int cmd_checkpoint(int argc, char **argv);
int cmd_rollback(int argc, char **argv);
/* create's options as typed (argv[1..argc), without the name operand,
 * --root, binds, ports and --persist), each ended by a NUL: the note a
 * cell keeps so that fork and rollback make their cells the same way
 * (cmd_fork.c). malloc'd, NULL when out of memory. */
char *cli_create_note(int argc, char **argv, const char *name, size_t *len);
/* The options cell `name` was made with (its note) parsed into opts; the
 * image alone for a cell without one. The strings point into like, freed
 * after opts. 0, or the exit status after a one-line error. */
struct cli_made_like {
	char *note; /* NULL: none */
	size_t len;
	char **note_argv;
};
int cli_cell_opts_of(const char *name, struct cli_cell_opts *opts, struct cli_made_like *like);
void cli_made_like_free(struct cli_made_like *m);
int cmd_doctor(int argc, char **argv);
int cmd_policy(int argc, char **argv);
int cmd_image(int argc, char **argv);
/* image build NAME --dockerfile FILE (cli/cmd_image_dockerfile.c) */
int image_build_dockerfile(int argc, char **argv);
/* The image store's cap (cmd_image.c): given when not 0, else
 * SANDCELL_STORE_MAX, else 0 (none). */
uint64_t cli_store_max(uint64_t given);
int cmd_code(int argc, char **argv);
int cmd_agent(int argc, char **argv);
int cmd_batch(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_mcp(int argc, char **argv);

/* The agent's options for sandcell batch (cmd_agent.c): one model/episode
 * option at argv[*i] (1 consumed, 0 not an agent option, -1 bad value);
 * the agent's cell defaults; $*_BASE_URL and the API key (-1: printed). */
struct agent_config;
int cli_agent_opt(struct agent_config *cfg, const char **key_env, int argc, char **argv, int *i);
void cli_agent_cell_defaults(const struct cli_cell_opts *o, struct cli_cell *c);
int cli_agent_endpoint(struct agent_config *cfg, const char *key_env);
/* $LLM_NAME/$LLM_BASE_URL where unset; $LLM_TEMPERATURE (-1: printed); the
 * --prompt-config loaded into cfg->prompts, freed. */
void cli_agent_llm_env(struct agent_config *cfg);
int cli_agent_llm_temperature(struct agent_config *cfg);
void cli_agent_prompts_free(struct agent_config *cfg);
