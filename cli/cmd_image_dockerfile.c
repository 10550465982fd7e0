/* sandcell image build NAME --dockerfile FILE: options and printing; the
 * build is imagebuild/'s (imagebuild_dockerfile). */
#include <string.h>

#include "../imagebuild/imagebuild.h"
#include "cli.h"

#define MAX_BUILD_ARGS 64

static const char DF_HELP[] =
	"usage: sandcell image build NAME --dockerfile FILE [--context DIR] [--build-arg K=V]...\n"
	"                            [--json] [--max-size SIZE] [CELL OPTIONS]\n"
	"\n"
	"Build image NAME from a Dockerfile without Docker: FROM a stored image,\n"
	"RUN (each in a cell, committed as a layer), COPY/ADD of files beneath the\n"
	"context (never through a symlink), ENV, WORKDIR, USER, ARG, LABEL, CMD and\n"
	"ENTRYPOINT; anything else is refused with FILE:LINE. RUN's output goes to\n"
	"stderr. A failed step leaves no image. See docs/images.md.\n"
	"\n"
	"Options:\n"
	"%s"
	"The RUN cells take the cell options (--policy, --memory, --net, --allow-net, ...):\n"
	"%s";

struct df_args {
	const char *name, *file, *context;
	char *build_args[MAX_BUILD_ARGS + 1];
	size_t nargs;
	bool json;
	struct rootfs_limits lim;
};
#define DA(member) CLI_FIELD(struct df_args, member)

static int parse_build_arg(void *t, const char *opt, const char *v)
{
	struct df_args *a = t;
	if (!strchr(v, '=') || v[0] == '=' || a->nargs == MAX_BUILD_ARGS) {
		cli_error("%s: expected KEY=VALUE (at most %d), got '%.64s'", opt, MAX_BUILD_ARGS, v);
		return -1;
	}
	a->build_args[a->nargs++] = (char *)v;
	return 0;
}

static int refuse_image(void *t, const char *opt, const char *v)
{
	(void)t, (void)opt, (void)v;
	cli_error("image build: --image does not apply (the Dockerfile's FROM names the base)");
	return -1;
}

static const struct cli_option DF_OPTIONS[] = {
	{"--dockerfile", NULL, CLI_STRING, DA(file), .metavar = "FILE", .help = "the Dockerfile"},
	{"--context", NULL, CLI_STRING, DA(context), .metavar = "DIR",
	 .help = "where COPY/ADD read from (default: FILE's directory)"},
	{"--build-arg", NULL, CLI_CUSTOM, .parse = parse_build_arg, .metavar = "K=V",
	 .help = "a value for ARG K (repeatable)"},
	{"--json", NULL, CLI_FLAG, DA(json), .help = "print the result as one JSON object"},
	{"--max-size", NULL, CLI_SIZE, DA(lim.max_size), .metavar = "SIZE",
	 .help = "bound on a layer's and the image's data (default 8G)"},
	{"--root", NULL, CLI_CUSTOM, .parse = cli_parse_root, .metavar = "DIR",
	 .help = "keep data under DIR/data (or SANDCELL_ROOT)"},
	{"--image", NULL, CLI_CUSTOM_FLAG, .parse = refuse_image},
	CLI_HELP_OPTION,
	{0},
};

/* -1 to go on, else the exit status (0 after the help). */
static int parse_args(struct df_args *a, struct cli_cell_opts *opts, int argc, char **argv)
{
	const struct cli_table tables[] = {{DF_OPTIONS, a, 20}, {CLI_CELL_OPTIONS, opts, 0}};
	const struct cli_command cmd = {.name = "image build",
					.see = "image build --dockerfile FILE",
					.help = DF_HELP,
					.tables = tables,
					.ntables = SC_ARRAY_LEN(tables),
					.operands = &a->name,
					.max_operands = 1};
	int n;
	int done = cli_parse_args(&cmd, argc, argv, &n, NULL);
	if (done >= 0)
		return done;
	if (!a->name || !a->file) {
		cli_error("image build: expected NAME and --dockerfile FILE");
		return CLI_EXIT_USAGE;
	}
	return -1;
}

static void print_json(const struct df_args *a, const struct imagebuild_result *res)
{
	fputs("{\"name\":", stdout);
	cli_json_string(stdout, a->name, strlen(a->name));
	printf(",\"id\":\"%s\",\"size\":%llu,\"steps\":%u,\"layers\":%u,\"seconds\":%.3f,\"source\":",
	       res->rep.id, (unsigned long long)res->rep.size, res->steps, res->layers,
	       res->seconds);
	char source[SC_PATH_BUF];
	snprintf(source, sizeof(source), "dockerfile:%s", a->file);
	cli_json_string(stdout, source, strlen(source));
	puts("}");
}

int image_build_dockerfile(int argc, char **argv)
{
	_cleanup_cli_cell_opts_ struct cli_cell_opts opts = {0};
	struct df_args a = {0};
	int done = parse_args(&a, &opts, argc, argv);
	if (done >= 0)
		return done;
	char dir[4096];
	if (!a.context) {
		snprintf(dir, sizeof(dir), "%s", a.file);
		char *slash = strrchr(dir, '/');
		if (slash)
			*(slash == dir ? slash + 1 : slash) = '\0';
		else
			snprintf(dir, sizeof(dir), ".");
		a.context = dir;
	}
	struct sc_err err = {0};
	if (cell_ensure_private_dir(cell_data_root(), &err) < 0)
		return cli_fail(&err);
	_cleanup_cli_cell_ struct cli_cell cell;
	if (cli_cell_build(&cell, &opts) < 0)
		return CLI_EXIT_USAGE;
	struct cli_log ls = {0};
	struct sc_log log = cli_log_sink(&ls);
	a.lim.log = &log;
	struct imagebuild_req b = {.name = a.name, .file = a.file, .context = a.context,
				  .build_args = a.build_args, .spec = &cell.spec, .in_use = &CLI_CELLS_IN_USE,
				  .lim = &a.lim, .out_fd = 2, .log = a.json ? NULL : &log};
	struct imagebuild_result res;
	if (imagebuild_dockerfile(&b, &res, &err) < 0)
		return cli_fail(&err);
	if (a.json)
		print_json(&a, &res);
	else
		fprintf(stderr, "sandcell: built image '%s' (%s, %u steps, %u layers) in %.1fs\n",
			a.name, res.rep.id, res.steps, res.layers, res.seconds);
	return 0;
}
