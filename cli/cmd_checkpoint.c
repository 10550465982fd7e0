/* sandcell checkpoint, checkpoint ls, checkpoint rm, rollback: a
 * long-lived cell's files saved and restored in place. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static const char CHECKPOINT_HELP[] =
	"usage: sandcell checkpoint [--json] NAME [TAG]\n"
	"       sandcell checkpoint ls [--json] NAME\n"
	"       sandcell checkpoint rm NAME TAG\n"
	"\n"
	"Save the files of long-lived cell NAME as checkpoint TAG (default: the\n"
	"time, e.g. 20261204-231500), for 'sandcell rollback NAME TAG'. The cell\n"
	"keeps running; it is held still (cgroup freezer, else SIGSTOP) only\n"
	"while its files are read. Processes are not saved. A checkpoint lives\n"
	"until it is removed or its cell is ('sandcell rm').\n"
	"\n"
	"Options:\n"
	"%s";

static const char ROLLBACK_HELP[] =
	"usage: sandcell rollback NAME TAG\n"
	"\n"
	"Restore the files of long-lived cell NAME exactly as they were at\n"
	"checkpoint TAG. This kills every process of the cell: it is replaced by\n"
	"a new cell of the same name, options and checkpoints, with a fresh init\n"
	"and nothing else running.\n"
	"\n"
	"Options:\n"
	"%s";

struct ck_args {
	bool json;
};
#define CK(member) CLI_FIELD(struct ck_args, member)

static const struct cli_option CK_OPTIONS[] = {
	{"--json", NULL, CLI_FLAG, CK(json), .help = "print one JSON object"},
	CLI_ROOT_OPTION,
	CLI_HELP_OPTION,
	{0},
};

static const struct cli_option RB_OPTIONS[] = {
	CLI_ROOT_OPTION,
	CLI_HELP_OPTION,
	{0},
};

static int parse(const char *name, const char *help, const struct cli_option *opts, void *target,
		 int argc, char **argv, const char **operands, int max, int *n)
{
	const struct cli_table tables[] = {{opts, target, 0}};
	const struct cli_command cmd = {.name = name, .help = help, .tables = tables, .ntables = 1,
					.operands = operands, .max_operands = max};
	return cli_parse_args(&cmd, argc, argv, n, NULL);
}

static int checkpoint_ls(int argc, char **argv)
{
	struct ck_args a = {0};
	const char *ops[1] = {0};
	int n;
	int done = parse("checkpoint ls", CHECKPOINT_HELP, CK_OPTIONS, &a, argc, argv, ops, 1, &n);
	if (done >= 0)
		return done;
	if (n != 1) {
		cli_error("checkpoint ls: name the cell (usage: sandcell checkpoint ls NAME)");
		return CLI_EXIT_USAGE;
	}
	char(*tags)[64];
	size_t nt;
	struct sc_err err = {0};
	if (cell_checkpoint_list(ops[0], &tags, &nt, &err) < 0)
		return cli_fail(&err);
	qsort(tags, nt, sizeof(*tags), (int (*)(const void *, const void *))strcmp);
	if (a.json)
		fputs("[", stdout);
	for (size_t i = 0; i < nt; i++) {
		if (a.json) {
			fputs(i ? "," : "", stdout);
			cli_json_string(stdout, tags[i], strlen(tags[i]));
		} else {
			printf("%s\n", tags[i]);
		}
	}
	if (a.json)
		fputs("]\n", stdout);
	free(tags);
	return 0;
}

static int checkpoint_rm(int argc, char **argv)
{
	struct ck_args a = {0};
	const char *ops[2] = {0};
	int n;
	int done = parse("checkpoint rm", CHECKPOINT_HELP, CK_OPTIONS, &a, argc, argv, ops, 2, &n);
	if (done >= 0)
		return done;
	if (n != 2) {
		cli_error("checkpoint rm: name the cell and the tag (usage: sandcell checkpoint rm NAME TAG)");
		return CLI_EXIT_USAGE;
	}
	struct sc_err err = {0};
	return cell_checkpoint_remove(ops[0], ops[1], &err) < 0 ? cli_fail(&err) : 0;
}

static int checkpoint_save(int argc, char **argv)
{
	struct ck_args a = {0};
	const char *ops[2] = {0};
	int n;
	int done = parse("checkpoint", CHECKPOINT_HELP, CK_OPTIONS, &a, argc, argv, ops, 2, &n);
	if (done >= 0)
		return done;
	if (n < 1) {
		cli_error("checkpoint: name the cell (usage: sandcell checkpoint NAME [TAG])");
		return CLI_EXIT_USAGE;
	}
	char tag[64];
	if (n == 2) {
		snprintf(tag, sizeof(tag), "%s", ops[1]);
	} else {
		time_t now = time(NULL);
		struct tm tm;
		gmtime_r(&now, &tm);
		strftime(tag, sizeof(tag), "%Y%m%d-%H%M%S", &tm);
	}
	struct sc_err err = {0};
	struct cell_fork_stats st = {0};
	if (cell_checkpoint(ops[0], tag, &st, &err) < 0)
		return cli_fail(&err);
	if (a.json) {
		fputs("{\"cell\":", stdout);
		cli_json_string(stdout, ops[0], strlen(ops[0]));
		fputs(",\"tag\":", stdout);
		cli_json_string(stdout, tag, strlen(tag));
		printf(",\"frozen_ms\":%.3f}\n", st.frozen_s * 1e3);
	} else {
		printf("%s\n", tag);
	}
	return 0;
}

int cmd_checkpoint(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "ls"))
		return checkpoint_ls(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "rm"))
		return checkpoint_rm(argc - 1, argv + 1);
	return checkpoint_save(argc, argv);
}

int cmd_rollback(int argc, char **argv)
{
	const char *ops[2] = {0};
	int n;
	int done = parse("rollback", ROLLBACK_HELP, RB_OPTIONS, NULL, argc, argv, ops, 2, &n);
	if (done >= 0)
		return done;
	if (n != 2) {
		cli_error("rollback: name the cell and the tag (usage: sandcell rollback NAME TAG)");
		return CLI_EXIT_USAGE;
	}
	_cleanup_cli_cell_opts_ struct cli_cell_opts opts = {0};
	struct cli_made_like like = {0};
	int rc = cli_cell_opts_of(ops[0], &opts, &like);
	if (rc == 0) {
		_cleanup_cli_cell_ struct cli_cell built;
		struct sc_err err = {0};
		if (cli_cell_build(&built, &opts) < 0) {
			rc = CLI_EXIT_USAGE;
		} else {
			built.spec.note = like.note;
			built.spec.note_len = like.len;
			if (cell_rollback(ops[0], ops[1], &built.spec, &err) < 0)
				rc = cli_fail(&err);
		}
	}
	cli_made_like_free(&like);
	return rc;
}
