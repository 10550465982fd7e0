/* sandcell image ls|build|import|pull|rm: the image store's command line. */
#include <signal.h>
#include <string.h>

#include "../common/parse.h"
#include "cli.h"

/* rootfs asks the runtime which images cells use */
static const struct rootfs_in_use CELLS_IN_USE = {.fn = cell_image_in_use};

static const char IMAGE_HELP[] =
	"usage: sandcell image COMMAND [OPTIONS]\n"
	"\n"
	"Images are read-only root filesystems that cells start from (--image NAME).\n"
	"'host' is built in: the host's /usr, /etc and /opt. The others live in the\n"
	"data directory (see docs/images.md); no daemon is involved.\n"
	"\n"
	"Commands:\n"
	"  ls [--json]                      list images\n"
	"  build NAME [--recipe FILE]       build an image from a recipe (scripts/images/NAME.sh)\n"
	"  build NAME --dockerfile FILE     build an image from a Dockerfile (a common subset)\n"
	"  import FILE NAME                 import a 'docker save' archive or an OCI image layout\n"
	"  pull REF NAME [--insecure]       pull an image from a registry (OCI distribution API)\n"
	"  rm NAME...                       remove images (refused while a cell uses one)\n"
	"\n"
	"Every command takes --root DIR (or SANDCELL_ROOT) to use DIR/data as the data\n"
	"directory. Run 'sandcell image COMMAND --help' for a command's options.\n";

static const char LS_HELP[] =
	"usage: sandcell image ls [--json] [--root DIR]\n"
	"\n"
	"List the images in the data directory: name, id (its content address),\n"
	"size, creation time and source. --json prints one JSON array with, per\n"
	"image, also its default env, workdir, entrypoint and cmd.\n";

static const char LIMITS_HELP[] =
	"  --max-size SIZE     refuse archives that unpack to more than SIZE (default 8G)\n"
	"  --max-files N       refuse archives with more than N entries (default 2000000)\n"
	"  --root DIR          keep data under DIR/data (or SANDCELL_ROOT)\n";

static const char BUILD_HELP[] =
	"usage: sandcell image build NAME [--recipe FILE] [--max-size SIZE] [--max-files N] [--root DIR]\n"
	"\n"
	"Run a recipe and store the root filesystem it writes as image NAME\n"
	"(replacing an image of that name). The recipe is FILE, else NAME.sh in\n"
	"$SANDCELL_RECIPES or the scripts/images directory shipped with sandcell\n"
	"(python: the LLM-in-Sandbox environment; minimal: Debian with python3).\n"
	"Shipped recipes use mmdebstrap; without root they need subordinate ids\n"
	"in /etc/subuid and /etc/subgid. The recipe's output goes to stderr.\n"
	"\n"
	"With --dockerfile FILE, build from a Dockerfile instead (see\n"
	"'sandcell image build --dockerfile FILE --help').\n"
	"\n"
	"Options:\n"
	"  --recipe FILE       the recipe to run (a shell script; see docs/images.md)\n";

static const char IMPORT_HELP[] =
	"usage: sandcell image import FILE NAME [--max-size SIZE] [--max-files N] [--root DIR]\n"
	"\n"
	"Import FILE as image NAME: a 'docker save' archive, or an OCI image layout\n"
	"(a directory, or a tar of one; gzip-compressed tars too). Layers are\n"
	"applied in order with their whiteouts into one tree; the config's env,\n"
	"working directory, entrypoint and cmd become the image's defaults.\n"
	"Digests are verified. Unsafe entries are refused (absolute or '..' paths,\n"
	"writes through symlinks, hard links out of the image) or neutralised\n"
	"(device nodes skipped, setuid/setgid bits stripped).\n"
	"\n"
	"Options:\n";

static const char PULL_HELP[] =
	"usage: sandcell image pull REF NAME [--insecure] [--platform OS/ARCH] [--max-size SIZE]\n"
	"                           [--max-files N] [--root DIR]\n"
	"\n"
	"Pull REF from a registry (OCI distribution / Docker registry v2 API) and\n"
	"store it as image NAME. REF is [HOST[:PORT]/]REPO[:TAG|@sha256:DIGEST];\n"
	"without HOST, Docker Hub (library/ for one-word names). Anonymous bearer\n"
	"tokens are fetched when the registry asks for them. Blobs are verified\n"
	"against their digests; an interrupted pull resumes where it stopped.\n"
	"\n"
	"Options:\n"
	"  --insecure          plain HTTP; only for registries on loopback (127.0.0.0/8, ::1, localhost)\n"
	"  --platform OS/ARCH  the variant to pick from a multi-platform image (default: this host's)\n";

static const char RM_HELP[] =
	"usage: sandcell image rm NAME... [--root DIR]\n"
	"\n"
	"Remove images, and the layers no other image shares. An image used by a\n"
	"long-lived cell is refused until the cell is removed ('sandcell rm CELL').\n";


/* rootfs's warnings, printed as the CLI prints its own */
static void warn_sink(void *ctx, enum sc_log_level level, const char *msg)
{
	(void)ctx;
	if (level <= SC_LOG_WARN)
		cli_warn("%s", msg);
}

static void fmt_size(char *buf, size_t n, uint64_t v)
{
	if (v >= (1ULL << 30))
		snprintf(buf, n, "%.1fG", (double)v / (1ULL << 30));
	else if (v >= (1ULL << 20))
		snprintf(buf, n, "%.1fM", (double)v / (1ULL << 20));
	else
		snprintf(buf, n, "%lluK", (unsigned long long)((v + 1023) / 1024));
}

static void json_strv(const char *key, char **v)
{
	printf(",\"%s\":[", key);
	for (size_t i = 0; v && v[i]; i++) {
		if (i)
			putchar(',');
		cli_json_string(stdout, v[i], strlen(v[i]));
	}
	putchar(']');
}

static int image_ls(int argc, char **argv)
{
	bool json = false;
	int done = cli_plain_args(argc, argv, "image ls", LS_HELP, &json);
	if (done >= 0)
		return done;
	struct rootfs_image_info *list;
	size_t n;
	struct sc_err err = {0};
	if (rootfs_image_list(cell_data_root(), &list, &n, &err) < 0)
		return cli_fail(&err);
	if (json) {
		putchar('[');
		for (size_t i = 0; i < n; i++) {
			const struct rootfs_image_info *it = &list[i];
			fputs(i ? ",{\"name\":" : "{\"name\":", stdout);
			cli_json_string(stdout, it->name, strlen(it->name));
			printf(",\"id\":\"%s\",\"layers\":%zu,\"size\":%llu,\"created\":", it->id,
			       it->nlayers, (unsigned long long)it->size);
			cli_json_string(stdout, it->created, strlen(it->created));
			fputs(",\"source\":", stdout);
			cli_json_string(stdout, it->source, it->source ? strlen(it->source) : 0);
			json_strv("env", it->env);
			fputs(",\"workdir\":", stdout);
			if (it->workdir)
				cli_json_string(stdout, it->workdir, strlen(it->workdir));
			else
				fputs("null", stdout);
			json_strv("entrypoint", it->entrypoint);
			json_strv("cmd", it->cmd);
			fputs(",\"user\":", stdout);
			if (it->user)
				cli_json_string(stdout, it->user, strlen(it->user));
			else
				fputs("null", stdout);
			json_strv("labels", it->labels);
			putchar('}');
		}
		puts("]");
	} else {
		printf("%-24s %-19s %8s  %-20s %s\n", "NAME", "ID", "SIZE", "CREATED", "SOURCE");
		for (size_t i = 0; i < n; i++) {
			char size[32];
			fmt_size(size, sizeof(size), list[i].size);
			/* "sha256-" + 12 hex digits, like docker's short ids. */
			printf("%-24s %-19.19s %8s  %-20s %s\n", list[i].name, list[i].id, size,
			       list[i].created, list[i].source ? list[i].source : "");
		}
	}
	rootfs_image_list_free(list, n);
	return 0;
}

/* Options shared by build/import/pull; 1 consumed, 0 not ours, -1 bad. */
static int limit_opt(struct rootfs_limits *lim, int argc, char **argv, int *i)
{
	const char *a = argv[*i];
	bool size = !strcmp(a, "--max-size"), files = !strcmp(a, "--max-files");
	if (!strcmp(a, "--root")) {
		if (*i + 1 >= argc || argv[*i + 1][0] != '/') {
			cli_error("--root: expected an absolute path");
			return -1;
		}
		cell_set_root(argv[++*i]);
		return 1;
	}
	if (!size && !files)
		return 0;
	if (*i + 1 >= argc) {
		cli_error("%s needs a value", a);
		return -1;
	}
	const char *v = argv[++*i];
	if (size && (sc_parse_size(v, &lim->max_size) < 0 || lim->max_size == 0)) {
		cli_error("--max-size: expected a size like 8G, got '%.64s'", v);
		return -1;
	}
	if (files && sc_parse_uint(v, 1, UINT32_MAX, &lim->max_files) < 0) {
		cli_error("--max-files: expected a number, got '%.64s'", v);
		return -1;
	}
	return 1;
}

static void print_report(const char *verb, const char *name, const struct rootfs_report *rep)
{
	char size[32];
	fmt_size(size, sizeof(size), rep->size);
	if (rep->shared)
		fprintf(stderr, "sandcell: %s image '%s' (%s, %s, sharing a stored layer) in %.1fs\n",
			verb, name, rep->id, size, rep->seconds);
	else
		fprintf(stderr, "sandcell: %s image '%s' (%s, %s, %llu entries) in %.1fs\n", verb, name,
			rep->id, size, (unsigned long long)rep->files, rep->seconds);
	if (rep->skipped_devices)
		cli_warn("skipped %llu device node(s)", (unsigned long long)rep->skipped_devices);
	if (rep->stripped_setid)
		cli_warn("stripped setuid/setgid bits from %llu file(s)",
			 (unsigned long long)rep->stripped_setid);
}

static int ensure_data_dir(void)
{
	struct sc_err err = {0};
	if (cell_ensure_private_dir(cell_data_root(), &err) < 0)
		return cli_fail(&err);
	return 0;
}

/* Positional arguments and the common options; returns the count. */
static int collect(const char *verb, const char *help, int argc, char **argv,
		   struct rootfs_limits *lim, const char **pos, int maxpos, const char *const *flags,
		   bool *flag_set, const char *const *valued, const char **values)
{
	int n = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (cli_is_help(a)) {
			fputs(help, stdout);
			return -2;
		}
		int rc = limit_opt(lim, argc, argv, &i);
		if (rc < 0)
			return -1;
		if (rc)
			continue;
		bool used = false;
		for (int k = 0; flags && flags[k] && !used; k++)
			if (!strcmp(a, flags[k]))
				used = flag_set[k] = true;
		for (int k = 0; valued && valued[k] && !used; k++) {
			if (strcmp(a, valued[k]) != 0)
				continue;
			if (i + 1 >= argc) {
				cli_error("%s needs a value", a);
				return -1;
			}
			values[k] = argv[++i];
			used = true;
		}
		if (used)
			continue;
		if (a[0] == '-' && a[1]) {
			cli_error("image %s: unknown option '%.64s'", verb, a);
			return -1;
		}
		if (n == maxpos) {
			cli_error("image %s: unexpected argument '%.64s'", verb, a);
			return -1;
		}
		pos[n++] = a;
	}
	return n;
}

/* While a recipe runs, SIGINT, SIGTERM and SIGHUP go on to its process
 * group; our own dispositions come back once it is gone. */
static const int RECIPE_SIGNALS[] = {SIGINT, SIGTERM, SIGHUP};
static volatile sig_atomic_t recipe_pgid;
static struct sigaction recipe_saved[SC_ARRAY_LEN(RECIPE_SIGNALS)];
static bool recipe_forwarding;

static void pass_signal(int sig)
{
	if (recipe_pgid > 0)
		kill(-recipe_pgid, sig);
}

static void forward_to_recipe(void *ctx, pid_t pgid)
{
	(void)ctx;
	if (pgid > 0 && !recipe_forwarding) {
		recipe_pgid = pgid;
		struct sigaction sa = {.sa_handler = pass_signal};
		for (size_t i = 0; i < SC_ARRAY_LEN(RECIPE_SIGNALS); i++)
			sigaction(RECIPE_SIGNALS[i], &sa, &recipe_saved[i]);
		recipe_forwarding = true;
	} else if (pgid == 0 && recipe_forwarding) {
		recipe_pgid = 0;
		for (size_t i = 0; i < SC_ARRAY_LEN(RECIPE_SIGNALS); i++)
			sigaction(RECIPE_SIGNALS[i], &recipe_saved[i], NULL);
		recipe_forwarding = false;
	}
}

static int image_build(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--dockerfile"))
			return image_build_dockerfile(argc, argv);
	struct rootfs_limits lim = {0};
	const char *pos[1], *vals[1] = {NULL};
	static const char *const valued[] = {"--recipe", NULL};
	char help[4096];
	snprintf(help, sizeof(help), "%s%s", BUILD_HELP, LIMITS_HELP);
	int n = collect("build", help, argc, argv, &lim, pos, 1, NULL, NULL, valued, vals);
	if (n == -2)
		return 0;
	if (n != 1) {
		if (n >= 0)
			cli_error("image build: expected NAME (usage: sandcell image build NAME [--recipe FILE])");
		return CLI_EXIT_USAGE;
	}
	if (ensure_data_dir())
		return CLI_EXIT_USAGE;
	struct rootfs_report rep;
	struct sc_err err = {0};
	struct rootfs_recipe_hook hook = {.group = forward_to_recipe};
	if (rootfs_image_build(cell_data_root(), &CELLS_IN_USE, pos[0], vals[0], &lim, &hook, &rep,
			       &err) < 0)
		return cli_fail(&err);
	print_report("built", pos[0], &rep);
	return 0;
}

static int image_import(int argc, char **argv)
{
	struct rootfs_limits lim = {0};
	const char *pos[2];
	char help[4096];
	snprintf(help, sizeof(help), "%s%s", IMPORT_HELP, LIMITS_HELP);
	int n = collect("import", help, argc, argv, &lim, pos, 2, NULL, NULL, NULL, NULL);
	if (n == -2)
		return 0;
	if (n != 2) {
		if (n >= 0)
			cli_error("image import: expected FILE and NAME (usage: sandcell image import FILE NAME)");
		return CLI_EXIT_USAGE;
	}
	if (ensure_data_dir())
		return CLI_EXIT_USAGE;
	struct rootfs_report rep;
	struct sc_err err = {0};
	const struct sc_log log = {.fn = warn_sink};
	if (rootfs_image_import(cell_data_root(), &CELLS_IN_USE, pos[0], pos[1], &lim, &rep, &log,
				&err) < 0)
		return cli_fail(&err);
	print_report("imported", pos[1], &rep);
	return 0;
}

static int image_pull(int argc, char **argv)
{
	struct rootfs_pull_opts o = {.progress = stderr};
	const char *pos[2], *vals[1] = {NULL};
	static const char *const flags[] = {"--insecure", NULL};
	static const char *const valued[] = {"--platform", NULL};
	bool set[1] = {false};
	char help[4096];
	snprintf(help, sizeof(help), "%s%s", PULL_HELP, LIMITS_HELP);
	int n = collect("pull", help, argc, argv, &o.limits, pos, 2, flags, set, valued, vals);
	if (n == -2)
		return 0;
	if (n != 2) {
		if (n >= 0)
			cli_error("image pull: expected REF and NAME (usage: sandcell image pull REF NAME)");
		return CLI_EXIT_USAGE;
	}
	o.insecure = set[0];
	o.platform = vals[0];
	if (ensure_data_dir())
		return CLI_EXIT_USAGE;
	struct rootfs_report rep;
	struct sc_err err = {0};
	if (rootfs_image_pull(cell_data_root(), &CELLS_IN_USE, pos[0], pos[1], &o, &rep, &err) < 0)
		return cli_fail(&err);
	print_report("pulled", pos[1], &rep);
	return 0;
}

static int image_rm(int argc, char **argv)
{
	int names = 0, rc = 0;
	for (int i = 1; i < argc; i++) {
		if (cli_is_help(argv[i])) {
			fputs(RM_HELP, stdout);
			return 0;
		}
		if (!strcmp(argv[i], "--root") && i + 1 < argc) {
			cell_set_root(argv[++i]);
		} else if (argv[i][0] == '-') {
			cli_error("image rm: unknown option '%.64s'", argv[i]);
			return CLI_EXIT_USAGE;
		}
	}
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--root")) {
			i++;
			continue;
		}
		names++;
		struct sc_err err = {0};
		if (rootfs_image_remove(cell_data_root(), &CELLS_IN_USE, argv[i], &err) < 0)
			rc = cli_fail(&err);
	}
	if (!names) {
		cli_error("image rm: no image named (usage: sandcell image rm NAME...)");
		return CLI_EXIT_USAGE;
	}
	return rc;
}

int cmd_image(int argc, char **argv)
{
	static const struct cli_subcommand subs[] = {
		{"ls", image_ls},         {"list", image_ls}, {"build", image_build},
		{"import", image_import}, {"pull", image_pull}, {"rm", image_rm}};
	if (argc < 2) {
		fputs(IMAGE_HELP, stderr);
		return CLI_EXIT_USAGE;
	}
	if (cli_is_help(argv[1]) || !strcmp(argv[1], "help")) {
		fputs(IMAGE_HELP, stdout);
		return 0;
	}
	return cli_run_subcommand("image", subs, SC_ARRAY_LEN(subs), argc, argv);
}
