/* sandcell image ls|build|import|pull|push|export|rm: the image store's command line. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/parse.h"
#include "cli.h"

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
	"  push NAME REF [--insecure]       push an image to a registry, with the credentials of pull\n"
	"  export NAME FILE                 write an image as an OCI layout / 'docker save' tar\n"
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
	"%s%s";

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
	"Options:\n"
	"%s";

static const char PULL_HELP[] =
	"usage: sandcell image pull REF NAME [--insecure] [--platform OS/ARCH] [--creds-file FILE]\n"
	"                           [--max-size SIZE] [--max-files N] [--store-max SIZE] [--root DIR]\n"
	"\n"
	"Pull REF from a registry (OCI distribution / Docker registry v2 API) and\n"
	"store it as image NAME. REF is [HOST[:PORT]/]REPO[:TAG|@sha256:DIGEST];\n"
	"without HOST, Docker Hub (library/ for one-word names). Layers may be\n"
	"gzip, zstd or plain. Blobs are verified against their digests; an\n"
	"interrupted pull resumes where it stopped. Progress goes to stderr: on a\n"
	"terminal, bars (per layer and total: MB, percent, rate); else a line per\n"
	"layer.\n"
	"\n"
	"Credentials are used when the registry asks for them (Basic, or bearer\n"
	"tokens): the registry's \"auths\" entry (\"auth\", \"username\"/\"password\"\n"
	"or \"identitytoken\") in --creds-file, else in $REGISTRY_AUTH_FILE,\n"
	"$XDG_RUNTIME_DIR/containers/auth.json, $DOCKER_CONFIG/config.json or\n"
	"~/.docker/config.json; without one, anonymously. Credential helpers\n"
	"(credsStore) are not used. Secrets never appear in output or metadata.\n"
	"\n"
	"Options:\n"
	"%s%s";

static const char PUSH_HELP[] =
	"usage: sandcell image push NAME REF [--insecure] [--creds-file FILE] [--json] [--root DIR]\n"
	"\n"
	"Push stored image NAME to REF, [HOST[:PORT]/]REPO[:TAG] (default tag\n"
	"latest; without HOST, Docker Hub), over the OCI distribution API: each\n"
	"layer as a gzip tar (the config's diff_ids are the plain tars'), the\n"
	"config, then an OCI image manifest under the tag. Blobs the registry has\n"
	"already are not sent again. Credentials are found as for 'image pull'\n"
	"(--creds-file, else the files docker and podman login write); bearer\n"
	"tokens are asked for push and pull. Secrets never appear in output.\n"
	"\n"
	"Prints a line per blob (pushed, or already present) and the manifest's\n"
	"digest; --json prints {\"ref\", \"digest\", \"layers\": [{\"digest\", \"size\",\n"
	"\"pushed\"}], \"config\": {...}}. Progress goes to stderr.\n"
	"\n"
	"Options:\n"
	"%s%s";

static const char EXPORT_HELP[] =
	"usage: sandcell image export NAME FILE [--root DIR]\n"
	"\n"
	"Write image NAME to FILE ('-': standard output, not a terminal) as one tar\n"
	"that is both an OCI image layout and a 'docker save' archive, tagged\n"
	"NAME:latest: 'skopeo copy oci-archive:FILE ...', 'podman load -i FILE',\n"
	"'docker load -i FILE' and 'sandcell image import FILE NAME2' take it.\n"
	"Layers are uncompressed tars with the image's owners and OCI whiteouts;\n"
	"the config keeps the image's env, workdir, user, entrypoint, cmd and\n"
	"labels. FILE is written whole or not at all (FILE.partial meanwhile).\n"
	"\n"
	"Options:\n"
	"%s";

static const char RM_HELP[] =
	"usage: sandcell image rm NAME... [--root DIR]\n"
	"\n"
	"Remove images, and the layers no other image shares. An image used by a\n"
	"long-lived cell is refused until the cell is removed ('sandcell rm CELL').\n"
	"\n"
	"Options:\n"
	"%s";

/* The options of build, import, pull and rm: their help is 20 wide. */
#define IMAGE_HELP_WIDTH 20
#define IMAGE_ROOT_OPTION                                                         \
	{"--root", NULL, CLI_CUSTOM, .parse = cli_parse_root, .metavar = "DIR",   \
	 .help = "keep data under DIR/data (or SANDCELL_ROOT)"}
#define RL(member) CLI_FIELD(struct rootfs_limits, member)

/* build, import and pull: bounds on what is unpacked */
static const struct cli_option LIMIT_OPTIONS[] = {
	{"--max-size", NULL, CLI_SIZE, RL(max_size), .metavar = "SIZE",
	 .help = "refuse archives that unpack to more than SIZE (default 8G)"},
	{"--max-files", NULL, CLI_COUNT, RL(max_files), .min = 1, .max = UINT32_MAX, .metavar = "N",
	 .help = "refuse archives with more than N entries (default 2000000)"},
	{"--store-max", NULL, CLI_SIZE, RL(store_max), .metavar = "SIZE",
	 .help = "then remove least recently used images no cell uses\nuntil the "
		 "store holds SIZE or less\n(default: SANDCELL_STORE_MAX, else no cap)"},
	IMAGE_ROOT_OPTION,
	CLI_HELP_OPTION,
	{0},
};

struct build_args {
	const char *recipe;
};

static const struct cli_option BUILD_OPTIONS[] = {
	{"--recipe", NULL, CLI_STRING, CLI_FIELD(struct build_args, recipe), .metavar = "FILE",
	 .help = "the recipe to run (a shell script; see docs/images.md)"},
	{0},
};

#define PO(member) CLI_FIELD(struct rootfs_pull_opts, member)

static const struct cli_option PULL_OPTIONS[] = {
	{"--insecure", NULL, CLI_FLAG, PO(insecure),
	 .help = "plain HTTP; only for registries on loopback (127.0.0.0/8, ::1, localhost)"},
	{"--platform", NULL, CLI_STRING, PO(platform), .metavar = "OS/ARCH",
	 .help = "the variant to pick from a multi-platform image (default: this host's)"},
	{"--creds-file", NULL, CLI_STRING, PO(creds_file), .metavar = "FILE",
	 .help = "registry credentials, as docker login writes them (see above)"},
	{0},
};

struct push_args {
	struct rootfs_push_opts o;
	bool json;
};

static const struct cli_option PUSH_OPTIONS[] = {
	{"--insecure", NULL, CLI_FLAG, CLI_FIELD(struct push_args, o.insecure),
	 .help = "plain HTTP; only for registries on loopback (127.0.0.0/8, ::1, localhost)"},
	{"--creds-file", NULL, CLI_STRING, CLI_FIELD(struct push_args, o.creds_file), .metavar = "FILE",
	 .help = "registry credentials, as docker login writes them"},
	{"--json", NULL, CLI_FLAG, CLI_FIELD(struct push_args, json),
	 .help = "print the result as one JSON object"},
	{0},
};

static const struct cli_option RM_OPTIONS[] = {
	IMAGE_ROOT_OPTION,
	CLI_HELP_OPTION,
	{0},
};


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

/* --store-max, else SANDCELL_STORE_MAX (0: no cap). */
uint64_t cli_store_max(uint64_t given)
{
	const char *env = getenv("SANDCELL_STORE_MAX");
	uint64_t v = 0;
	if (given)
		return given;
	if (env && env[0] && sc_parse_size(env, &v) < 0) {
		cli_warn("SANDCELL_STORE_MAX=%.64s is not a size (like 20G); no store cap", env);
		return 0;
	}
	return v;
}

static void info_sink(void *ctx, enum sc_log_level level, const char *msg)
{
	(void)ctx;
	if (level <= SC_LOG_WARN)
		cli_warn("%s", msg);
	else
		fprintf(stderr, "sandcell: %s\n", msg);
}

/* After image `name` was stored: the store's cap, never evicting it. */
static int trim_store(const char *name, uint64_t given)
{
	uint64_t max = cli_store_max(given);
	if (!max)
		return 0;
	const char *keep[] = {name, NULL};
	const struct sc_log log = {.fn = info_sink};
	struct sc_err err = {0};
	if (rootfs_store_trim(cell_data_root(), &CLI_CELLS_IN_USE, max, keep, &log, NULL, &err) < 0)
		return cli_fail(&err);
	return 0;
}

static int ensure_data_dir(void)
{
	struct sc_err err = {0};
	if (cell_ensure_private_dir(cell_data_root(), &err) < 0)
		return cli_fail(&err);
	return 0;
}

/* The command line of image VERB (at most npos operands): -1 to go on,
 * with *n the operands, else the exit status (0 after the help). */
static int image_args(const char *verb, const char *help, const struct cli_table *tables,
		      size_t ntables, int argc, char **argv, const char **pos, int npos, int *n)
{
	char name[32];
	snprintf(name, sizeof(name), "image %s", verb);
	const struct cli_command cmd = {.name = name, .help = help, .tables = tables,
					.ntables = ntables,
					.operands = pos, .max_operands = npos};
	return cli_parse_args(&cmd, argc, argv, n, NULL);
}

/* build, import and pull, which store an image: -1 to go on with all npos
 * operands and the data directory made, else the exit status. */
static int store_args(const char *verb, const char *help, const struct cli_table *tables,
		      size_t ntables, int argc, char **argv, const char **pos, int npos,
		      const char *expected)
{
	int n;
	int done = image_args(verb, help, tables, ntables, argc, argv, pos, npos, &n);
	if (done >= 0)
		return done;
	if (n != npos) {
		cli_error("image %s: expected %s", verb, expected);
		return CLI_EXIT_USAGE;
	}
	return ensure_data_dir() ? CLI_EXIT_USAGE : -1;
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
	struct build_args a = {0};
	const struct cli_table tables[] = {{BUILD_OPTIONS, &a, IMAGE_HELP_WIDTH},
					   {LIMIT_OPTIONS, &lim, IMAGE_HELP_WIDTH}};
	const char *pos[1];
	int done = store_args("build", BUILD_HELP, tables, 2, argc, argv, pos, 1,
			      "NAME (usage: sandcell image build NAME [--recipe FILE])");
	if (done >= 0)
		return done;
	struct rootfs_report rep;
	struct sc_err err = {0};
	struct rootfs_recipe_hook hook = {.group = forward_to_recipe};
	if (rootfs_image_build(cell_data_root(), &CLI_CELLS_IN_USE, pos[0], a.recipe, &lim, &hook, &rep,
			       &err) < 0)
		return cli_fail(&err);
	print_report("built", pos[0], &rep);
	return trim_store(pos[0], lim.store_max);
}

static int image_import(int argc, char **argv)
{
	struct rootfs_limits lim = {0};
	const struct cli_table tables[] = {{LIMIT_OPTIONS, &lim, IMAGE_HELP_WIDTH}};
	const char *pos[2];
	int done = store_args("import", IMPORT_HELP, tables, 1, argc, argv, pos, 2,
			      "FILE and NAME (usage: sandcell image import FILE NAME)");
	if (done >= 0)
		return done;
	struct rootfs_report rep;
	struct sc_err err = {0};
	const struct sc_log log = {.fn = warn_sink};
	if (rootfs_image_import(cell_data_root(), &CLI_CELLS_IN_USE, pos[0], pos[1], &lim, &rep, &log,
				&err) < 0)
		return cli_fail(&err);
	print_report("imported", pos[1], &rep);
	return trim_store(pos[1], lim.store_max);
}

static int image_pull(int argc, char **argv)
{
	struct cli_pull_view view;
	cli_pull_view_init(&view);
	struct rootfs_pull_opts o = {0};
	cli_pull_view_set(&view, &o);
	const struct cli_table tables[] = {{PULL_OPTIONS, &o, IMAGE_HELP_WIDTH},
					   {LIMIT_OPTIONS, &o.limits, IMAGE_HELP_WIDTH}};
	const char *pos[2];
	int done = store_args("pull", PULL_HELP, tables, 2, argc, argv, pos, 2,
			      "REF and NAME (usage: sandcell image pull REF NAME)");
	if (done >= 0)
		return done;
	struct rootfs_report rep;
	struct sc_err err = {0};
	if (rootfs_image_pull(cell_data_root(), &CLI_CELLS_IN_USE, pos[0], pos[1], &o, &rep, &err) < 0)
		return cli_fail(&err);
	print_report("pulled", pos[1], &rep);
	return trim_store(pos[1], o.limits.store_max);
}

static void push_blob_json(const struct rootfs_push_blob *b)
{
	printf("{\"digest\":\"%s\",\"size\":%llu,\"pushed\":%s}", b->digest,
	       (unsigned long long)b->size, b->pushed ? "true" : "false");
}

static void print_push(const struct rootfs_push_result *res, bool json)
{
	if (!json) {
		for (size_t i = 0; i < res->nblobs; i++)
			printf("%s %s: %s\n", res->blob[i].config ? "config" : "layer", res->blob[i].digest,
			       res->blob[i].pushed ? "pushed" : "already present");
		printf("%s: digest: %s\n", res->ref, res->digest);
		return;
	}
	fputs("{\"ref\":", stdout);
	cli_json_string(stdout, res->ref, strlen(res->ref));
	printf(",\"digest\":\"%s\",\"layers\":[", res->digest);
	for (size_t i = 0; i + 1 < res->nblobs; i++) {
		if (i)
			putchar(',');
		push_blob_json(&res->blob[i]);
	}
	fputs("],\"config\":", stdout);
	push_blob_json(&res->blob[res->nblobs - 1]);
	puts("}");
}

static int image_push(int argc, char **argv)
{
	struct push_args a = {0};
	const struct cli_table tables[] = {{PUSH_OPTIONS, &a, IMAGE_HELP_WIDTH},
					   {RM_OPTIONS, NULL, IMAGE_HELP_WIDTH}};
	const char *pos[2];
	int n;
	int done = image_args("push", PUSH_HELP, tables, 2, argc, argv, pos, 2, &n);
	if (done >= 0)
		return done;
	if (n != 2) {
		cli_error("image push: expected NAME and REF (usage: sandcell image push NAME REF)");
		return CLI_EXIT_USAGE;
	}
	const struct sc_log log = {.fn = info_sink};
	a.o.log = &log;
	struct rootfs_push_result *res = malloc(sizeof(*res));
	struct sc_err err = {0};
	if (!res) {
		cli_error("image push: out of memory");
		return CLI_EXIT_USAGE;
	}
	int rc = rootfs_image_push(cell_data_root(), pos[0], pos[1], &a.o, res, &err);
	if (rc == 0)
		print_push(res, a.json);
	free(res);
	return rc < 0 ? cli_fail(&err) : 0;
}

static int image_export(int argc, char **argv)
{
	const struct cli_table tables[] = {{RM_OPTIONS, NULL, IMAGE_HELP_WIDTH}};
	const char *pos[2];
	int n;
	const struct cli_command cmd = {.name = "image export", .help = EXPORT_HELP, .tables = tables,
					.ntables = 1, .operands = pos, .max_operands = 2,
					.flags = CLI_DASH_OPERAND};
	int rc = cli_parse_args(&cmd, argc, argv, &n, NULL);
	if (rc >= 0)
		return rc;
	if (n != 2) {
		cli_error("image export: expected NAME and FILE (usage: sandcell image export NAME FILE)");
		return CLI_EXIT_USAGE;
	}
	struct sc_err err = {0};
	if (!strcmp(pos[1], "-")) {
		if (isatty(STDOUT_FILENO)) {
			cli_error("image export: standard output is a terminal; name a FILE or redirect it");
			return CLI_EXIT_USAGE;
		}
		return rootfs_image_export(cell_data_root(), pos[0], STDOUT_FILENO, &err) < 0 ? cli_fail(&err)
											   : 0;
	}
	char partial[4096];
	if (sc_path(partial, sizeof(partial), "%s.partial", pos[1]) < 0) {
		cli_error("image export: %s: name too long", pos[1]);
		return CLI_EXIT_USAGE;
	}
	_cleanup_fd_ int fd = open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		cli_error("image export: %s: %s", partial, strerror(errno));
		return CLI_EXIT_USAGE;
	}
	if (rootfs_image_export(cell_data_root(), pos[0], fd, &err) < 0 || fsync(fd) < 0 ||
	    rename(partial, pos[1]) < 0) {
		if (!err.msg[0])
			snprintf(err.msg, sizeof(err.msg), "%s: %s", pos[1], strerror(errno));
		(void)unlink(partial);
		return cli_fail(&err);
	}
	struct stat st;
	if (fstat(fd, &st) == 0)
		fprintf(stderr, "sandcell: exported image '%s' to %s (%.1f MB)\n", pos[0], pos[1],
			(double)st.st_size / 1e6);
	return 0;
}

static int image_rm(int argc, char **argv)
{
	_cleanup_free_ const char **names = calloc((size_t)(argc > 0 ? argc : 1), sizeof(*names));
	if (!names) {
		cli_error("image rm: out of memory");
		return CLI_EXIT_USAGE;
	}
	const struct cli_table tables[] = {{RM_OPTIONS, NULL, IMAGE_HELP_WIDTH}};
	int n;
	int rc = image_args("rm", RM_HELP, tables, 1, argc, argv, names, argc, &n);
	if (rc >= 0)
		return rc;
	if (!n) {
		cli_error("image rm: no image named (usage: sandcell image rm NAME...)");
		return CLI_EXIT_USAGE;
	}
	rc = 0;
	for (int i = 0; i < n; i++) {
		struct sc_err err = {0};
		if (rootfs_image_remove(cell_data_root(), &CLI_CELLS_IN_USE, names[i], &err) < 0)
			rc = cli_fail(&err);
	}
	return rc;
}

int cmd_image(int argc, char **argv)
{
	static const struct cli_subcommand subs[] = {
		{"ls", image_ls},         {"list", image_ls}, {"build", image_build},
		{"import", image_import}, {"pull", image_pull}, {"push", image_push},
		{"export", image_export},
		{"rm", image_rm}};
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
