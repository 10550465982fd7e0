/* sandcell image build NAME --dockerfile FILE: options and printing; the
 * build is imagebuild/'s (imagebuild_dockerfile). */
#include <string.h>

#include "../common/parse.h"
#include "../imagebuild/imagebuild.h"
#include "cli.h"

#define MAX_BUILD_ARGS 64

static const struct rootfs_in_use CELLS_IN_USE = {.fn = cell_image_in_use};

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
	"  --dockerfile FILE   the Dockerfile\n"
	"  --context DIR       where COPY/ADD read from (default: FILE's directory)\n"
	"  --build-arg K=V     a value for ARG K (repeatable)\n"
	"  --json              print the result as one JSON object\n"
	"  --max-size SIZE     bound on a layer's and the image's data (default 8G)\n"
	"  --root DIR          keep data under DIR/data (or SANDCELL_ROOT)\n"
	"The RUN cells take the cell options (--policy, --memory, --net, --allow-net, ...):\n"
	"%s";

struct df_args {
	const char *name, *file, *context;
	char *build_args[MAX_BUILD_ARGS + 1];
	size_t nargs;
	bool json;
	struct rootfs_limits lim;
};

/* 1 consumed, 0 not ours, -1 bad (printed). */
static int df_opt(struct df_args *a, int argc, char **argv, int *i)
{
	const char *o = argv[*i];
	static const char *const valued[] = {"--dockerfile", "--context", "--build-arg",
					     "--max-size", "--root"};
	bool known = false;
	for (size_t k = 0; k < SC_ARRAY_LEN(valued); k++)
		known |= !strcmp(o, valued[k]);
	if (!strcmp(o, "--json")) {
		a->json = true;
		return 1;
	}
	if (!known)
		return 0;
	if (*i + 1 >= argc) {
		cli_error("%s needs a value", o);
		return -1;
	}
	const char *v = argv[++*i];
	if (!strcmp(o, "--dockerfile")) {
		a->file = v;
	} else if (!strcmp(o, "--context")) {
		a->context = v;
	} else if (!strcmp(o, "--build-arg")) {
		if (!strchr(v, '=') || v[0] == '=' || a->nargs == MAX_BUILD_ARGS) {
			cli_error("--build-arg: expected KEY=VALUE (at most %d), got '%.64s'",
				  MAX_BUILD_ARGS, v);
			return -1;
		}
		a->build_args[a->nargs++] = (char *)v;
	} else if (!strcmp(o, "--max-size")) {
		if (sc_parse_size(v, &a->lim.max_size) < 0 || !a->lim.max_size) {
			cli_error("--max-size: expected a size like 8G, got '%.64s'", v);
			return -1;
		}
	} else {
		if (v[0] != '/') {
			cli_error("--root: expected an absolute path");
			return -1;
		}
		cell_set_root(v);
	}
	return 1;
}

static int parse_args(struct df_args *a, struct cli_cell_opts *opts, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf(DF_HELP, cli_cell_opts_help());
			return 1;
		}
		int r = df_opt(a, argc, argv, &i);
		if (r == 0 && !strcmp(argv[i], "--image")) {
			cli_error("image build: --image does not apply (the Dockerfile's FROM names the base)");
			return -1;
		}
		if (r == 0)
			r = cli_cell_opts_parse(opts, argc, argv, &i);
		if (r < 0)
			return -1;
		if (r == 1)
			continue;
		if (argv[i][0] == '-' || a->name) {
			cli_error("image build: unexpected argument '%.64s' (see 'sandcell image build "
				  "--dockerfile FILE --help')", argv[i]);
			return -1;
		}
		a->name = argv[i];
	}
	if (!a->name || !a->file) {
		cli_error("image build: expected NAME and --dockerfile FILE");
		return -1;
	}
	return 0;
}

static void print_json(const struct df_args *a, const struct imagebuild_result *res)
{
	fputs("{\"name\":", stdout);
	cli_json_string(stdout, a->name, strlen(a->name));
	printf(",\"id\":\"%s\",\"size\":%llu,\"steps\":%u,\"layers\":%u,\"seconds\":%.3f,\"source\":",
	       res->rep.id, (unsigned long long)res->rep.size, res->steps, res->layers,
	       res->seconds);
	char source[4200];
	snprintf(source, sizeof(source), "dockerfile:%s", a->file);
	cli_json_string(stdout, source, strlen(source));
	puts("}");
}

int image_build_dockerfile(int argc, char **argv)
{
	_cleanup_cli_cell_opts_ struct cli_cell_opts opts = {0};
	struct df_args a = {0};
	int r = parse_args(&a, &opts, argc, argv);
	if (r)
		return r > 0 ? 0 : CLI_EXIT_USAGE;
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
				  .build_args = a.build_args, .spec = &cell.spec, .in_use = &CELLS_IN_USE,
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
