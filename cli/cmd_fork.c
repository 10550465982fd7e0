/* sandcell fork, checkpoint, rollback: a long-lived cell's files copied
 * into new cells, or saved and restored in place. The children are made
 * as the parent was (its create options, kept with it as its note), with
 * the options given here on top. */
#include <stdlib.h>
#include <string.h>

#include "../api/api.h"
#include "../lang/lang.h"
#include "cli.h"

static const char FORK_HELP[] =
	"usage: sandcell fork [OPTIONS] NAME NEW...\n"
	"       sandcell fork [OPTIONS] --count N NAME\n"
	"\n"
	"Make new long-lived cells whose files equal NAME's at one instant, byte\n"
	"for byte: every writable place of the cell (/testbed, /tmp, /root, the\n"
	"overlays over the image, with the image paths it deleted or replaced),\n"
	"with modes, owners, timestamps, links, FIFOs and extended attributes.\n"
	"-v binds are not copied (give -v again to bind them in a child).\n"
	"\n"
	"NAME keeps running; it is held still (cgroup freezer, else SIGSTOP)\n"
	"only while its files are read once into a shared read-only layer. The\n"
	"children start with fresh processes: an init and nothing else; no\n"
	"process, shell or code session of NAME is copied. They get NAME's\n"
	"image, limits, policy, network, user and environment unless the\n"
	"options below say otherwise; --disk counts a child's own writes. Each\n"
	"child is on its own: a write or delete in one is seen by no other\n"
	"cell, and it outlives NAME.\n"
	"\n"
	"Options (those of 'sandcell create', and):\n"
	"%s%s";

struct fork_args {
	bool json, replay;
	unsigned count;
};
#define FA(member) CLI_FIELD(struct fork_args, member)

static const struct cli_option FORK_OPTIONS[] = {
	{"--count", NULL, CLI_COUNT, FA(count), .min = 1, .max = 100, .metavar = "N",
	 .help = "make N children named NAME-1 ... NAME-N"},
	{"--json", NULL, CLI_FLAG, FA(json), .help = "print one JSON object: each child, made or why not"},
	{"--replay-sessions", NULL, CLI_FLAG, FA(replay),
	 .help = "NAME is a Python code session: start one in each child and run again, in order, "
		 "the code NAME's session ran (each run at most 300 s)"},
	CLI_HELP_OPTION,
	{0},
};

/* What create's note holds: its options as typed, each ended by a NUL,
 * without the name, --root, binds, ports and --persist (a child has its
 * own of each). */
static bool note_skips(const char *arg, bool *with_value)
{
	static const struct {
		const char *name;
		bool value;
	} skip[] = {{"--root", true},   {"-v", true},	      {"--volume", true},
		    {"-p", true},       {"--publish", true},  {"--publish-any-address", false},
		    {"--persist", false}};
	for (size_t i = 0; i < SC_ARRAY_LEN(skip); i++) {
		size_t n = strlen(skip[i].name);
		if (!strncmp(arg, skip[i].name, n) && (arg[n] == '\0' || arg[n] == '=')) {
			*with_value = skip[i].value && arg[n] == '\0';
			return true;
		}
	}
	return false;
}

char *cli_create_note(int argc, char **argv, const char *name, size_t *len)
{
	size_t cap = 0;
	for (int i = 1; i < argc; i++)
		cap += strlen(argv[i]) + 1;
	char *note = malloc(cap + 1);
	if (!note)
		return NULL;
	size_t used = 0;
	for (int i = 1; i < argc; i++) {
		bool with_value = false;
		if (argv[i] == name || !strcmp(argv[i], "--"))
			continue;
		if (note_skips(argv[i], &with_value)) {
			i += with_value;
			continue;
		}
		size_t n = strlen(argv[i]) + 1;
		memcpy(note + used, argv[i], n);
		used += n;
	}
	*len = used;
	return note;
}

/* The parent's create options (its note) into opts; its image where it
 * has no note (a cell made by the API or an older sandcell). */
int cli_cell_opts_of(const char *parent, struct cli_cell_opts *opts, struct cli_made_like *like)
{
	struct sc_err err = {0};
	char *note;
	size_t len;
	if (cell_note_get(parent, &note, &len, &err) < 0)
		return cli_fail(&err);
	like->note = note;
	like->len = len;
	if (!note) {
		static char image[64];
		struct cell_status st;
		if (cell_status_get(parent, &st, &err) < 0)
			return cli_fail(&err);
		snprintf(image, sizeof(image), "%s", st.image);
		opts->image = image;
		return 0;
	}
	size_t n = 1;
	for (size_t i = 0; i < len; i++)
		n += note[i] == '\0';
	char **argv = calloc(n + 1, sizeof(*argv));
	if (!argv)
		return cli_error("fork: out of memory"), CLI_EXIT_USAGE;
	like->note_argv = argv;
	int argc = 0;
	argv[argc++] = "create";
	for (size_t i = 0; i < len; i += strlen(note + i) + 1)
		argv[argc++] = note + i;
	const struct cli_table tables[] = {{CLI_CELL_OPTIONS, opts, 0}};
	const struct cli_command cmd = {.name = "fork", .help = "%s", .tables = tables,
					.ntables = SC_ARRAY_LEN(tables)};
	int ignored;
	int done = cli_parse_args(&cmd, argc, argv, &ignored, NULL);
	return done >= 0 ? CLI_EXIT_USAGE : 0;
}

void cli_made_like_free(struct cli_made_like *m)
{
	free(m->note);
	free(m->note_argv);
}

/* --replay-sessions needs a parent with a code session; false: said why. */
static bool parent_is_session(const char *parent)
{
	struct cell *c;
	struct sc_err err = {0};
	if (cell_open(parent, &c, &err) < 0)
		return cli_fail(&err), false;
	bool is = lang_session_is(c);
	cell_close(c);
	if (!is)
		cli_error("fork: --replay-sessions: '%s' has no Python code session (start one with "
			  "'sandcell code session start')", parent);
	return is;
}

static void print_children_json(const char *parent, const char *const *names, size_t n,
				const struct sc_err *errs, const struct lang_replay *replays,
				const struct cell_fork_stats *st)
{
	fputs("{\"parent\":", stdout);
	cli_json_string(stdout, parent, strlen(parent));
	printf(",\"frozen_ms\":%.3f,\"hold_ms\":%.3f,\"total_ms\":%.3f,\"children\":[",
	       st->frozen_s * 1e3, st->hold_s * 1e3, st->total_s * 1e3);
	for (size_t i = 0; i < n; i++) {
		fputs(i ? ",{\"name\":" : "{\"name\":", stdout);
		cli_json_string(stdout, names[i], strlen(names[i]));
		if (errs[i].msg[0]) {
			fputs(",\"ok\":false,\"error\":", stdout);
			cli_json_string(stdout, errs[i].msg, strlen(errs[i].msg));
			fputs("}", stdout);
		} else {
			fputs(",\"ok\":true", stdout);
			api_json_replay(stdout, &replays[i]);
			fputc('}', stdout);
		}
	}
	fputs("]}\n", stdout);
}

/* NAME-1 ... NAME-N into names (storage in buf). */
static int count_names(const char *parent, unsigned count, const char **names, char (*buf)[64])
{
	for (unsigned i = 0; i < count; i++) {
		int n = snprintf(buf[i], 64, "%s-%u", parent, i + 1);
		if (n < 0 || n >= 64) {
			cli_error("fork: '%s-%u' is too long for a cell name; name the children", parent,
				  i + 1);
			return -1;
		}
		names[i] = buf[i];
	}
	return 0;
}

static int run_fork(struct cli_cell_opts *opts, struct fork_args *a,
		    const struct cli_made_like *like, const char *const *names, size_t n)
{
	_cleanup_cli_cell_ struct cli_cell built;
	if (cli_cell_build(&built, opts) < 0)
		return CLI_EXIT_USAGE;
	/* a child is made as its parent was: a fork of it makes its kind */
	built.spec.note = like->note;
	built.spec.note_len = like->len;
	struct sc_err *errs = calloc(n, sizeof(*errs));
	struct lang_replay *replays = calloc(n, sizeof(*replays));
	struct cell **cells = calloc(n, sizeof(*cells));
	int rc = CLI_EXIT_USAGE;
	if (!errs || !replays || !cells) {
		cli_error("fork: out of memory");
		goto out;
	}
	struct cell_fork_stats st = {0};
	struct sc_err err = {0};
	const char *parent = names[0];
	if (a->replay && !parent_is_session(parent))
		goto out;
	int made = cell_fork(parent, &built.spec, names + 1, n - 1, cells, errs, &st, &err);
	if (made < 0) {
		rc = cli_fail(&err);
		goto out;
	}
	bool replays_ok = true;
	for (size_t i = 0; i + 1 < n; i++) {
		if (cells[i] && a->replay)
			replays_ok &= lang_session_replay(cells[i], &replays[i]) == 0;
		if (cells[i])
			cell_close(cells[i]);
	}
	if (a->json)
		print_children_json(parent, names + 1, n - 1, errs, replays, &st);
	for (size_t i = 1; i < n && !a->json; i++) {
		if (errs[i - 1].msg[0])
			cli_fail(&errs[i - 1]);
		else if (replays[i - 1].tried && !replays[i - 1].ok)
			cli_error("fork: %s: the session's replay failed: %s", names[i], replays[i - 1].why);
		else
			printf("%s\n", names[i]);
	}
	rc = (size_t)made == n - 1 && replays_ok ? 0 : CLI_EXIT_USAGE;
out:
	free(cells);
	free(replays);
	free(errs);
	return rc;
}

int cmd_fork(int argc, char **argv)
{
	_cleanup_cli_cell_opts_ struct cli_cell_opts opts = {0};
	struct fork_args a = {0};
	struct cli_made_like like = {0};
	const char **names = calloc((size_t)(argc > 0 ? argc : 1) + 100, sizeof(*names));
	char(*gen)[64] = calloc(100, 64);
	int rc = CLI_EXIT_USAGE;
	if (!names || !gen) {
		cli_error("fork: out of memory");
		goto out;
	}
	const struct cli_table tables[] = {{CLI_CELL_OPTIONS, &opts, 0}, {FORK_OPTIONS, &a, 0}};
	const struct cli_command cmd = {.name = "fork", .help = FORK_HELP, .tables = tables,
					.ntables = SC_ARRAY_LEN(tables), .operands = names,
					.max_operands = argc};
	int n;
	int done = cli_parse_args(&cmd, argc, argv, &n, NULL);
	if (done >= 0) {
		rc = done;
		goto out;
	}
	if (n < 1 || (n < 2 && !a.count) || (n > 1 && a.count)) {
		cli_error("fork: name the cell and its children, or give --count N (usage: sandcell "
			  "fork [OPTIONS] NAME NEW... | --count N NAME)");
		goto out;
	}
	if (opts.image) {
		cli_error("fork: a child has its parent's image (no --image)");
		goto out;
	}
	if (a.count) {
		if (count_names(names[0], a.count, names + 1, gen) < 0)
			goto out;
		n = 1 + (int)a.count;
	}
	/* again, the parent's options under ours: parse its note, then ours */
	struct cli_cell_opts mine = opts;
	memset(&opts, 0, sizeof(opts));
	rc = cli_cell_opts_of(names[0], &opts, &like);
	if (rc != 0)
		goto out_mine;
	rc = CLI_EXIT_USAGE;
	opts.nbinds = 0; /* binds are the parent's own */
	done = cli_parse_args(&cmd, argc, argv, &n, NULL);
	if (done >= 0) {
		rc = done;
		goto out_mine;
	}
	if (a.count)
		n = 1 + (int)a.count;
	rc = run_fork(&opts, &a, &like, names, (size_t)n);
out_mine:
	cli_cell_opts_free(&mine);
out:
	cli_made_like_free(&like);
	free(gen);
	free(names);
	return rc;
}
