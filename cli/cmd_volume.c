/* sandcell volume create|ls|inspect|rm: named volumes shared by cells. */
#include <string.h>
#include <time.h>

#include "cli.h"

static const char VOLUME_HELP[] =
	"usage: sandcell volume COMMAND [OPTIONS]\n"
	"\n"
	"A volume is a directory in the data directory that outlives cells and\n"
	"that several cells may mount at once: --volume NAME:/PATH[:ro] on run\n"
	"and create (or -v NAME:/PATH). Each cell's root may write it. Its size\n"
	"is capped: as root the volume is an ext4 filesystem of that size\n"
	"(writes past it fail with 'No space left on device'); without root it\n"
	"is a plain directory, measured when a cell mounts it (refused when\n"
	"over) but not while cells write. See docs/volumes.md.\n"
	"\n"
	"Commands:\n"
	"  create [--size SIZE] NAME   make a volume (default size 1G, at least 8M)\n"
	"  ls [--json]                 list volumes\n"
	"  inspect [--json] NAME       one volume: size, use, path, cells using it\n"
	"  rm NAME...                  remove volumes (refused while a cell mounts one)\n"
	"\n"
	"Every command takes --root DIR (or SANDCELL_ROOT).\n";

static const char CREATE_HELP[] =
	"usage: sandcell volume create [--size SIZE] [--root DIR] NAME\n"
	"\n"
	"Make volume NAME, empty, capped at SIZE (default 1G, 8M to 16T).\n"
	"\n"
	"Options:\n"
	"%s";

static const char INSPECT_HELP[] =
	"usage: sandcell volume inspect [--json] [--root DIR] NAME\n"
	"\n"
	"Show volume NAME: its size cap, the bytes it holds, whether the kernel\n"
	"enforces the cap, its directory on the host and the live cells that\n"
	"mount it.\n"
	"\n"
	"Options:\n"
	"%s";

static const char RM_HELP[] =
	"usage: sandcell volume rm [--root DIR] NAME...\n"
	"\n"
	"Remove volumes and everything in them. A volume that a running\n"
	"long-lived cell mounts is refused (remove the cell first).\n"
	"\n"
	"Options:\n"
	"%s";

static const char LS_HELP[] =
	"usage: sandcell volume ls [--json] [--root DIR]\n"
	"\n"
	"List volumes: name, size cap, bytes used, whether the cap is enforced\n"
	"by the kernel, and the live cells that mount each.\n";

struct volume_args {
	uint64_t size;
	bool json;
};

static const struct cli_option CREATE_OPTIONS[] = {
	{"--size", NULL, CLI_SIZE, CLI_FIELD(struct volume_args, size), .metavar = "SIZE",
	 .help = "the cap (default 1G)"},
	CLI_ROOT_OPTION,
	CLI_HELP_OPTION,
	{0},
};

static const struct cli_option JSON_OPTIONS[] = {
	{"--json", NULL, CLI_FLAG, CLI_FIELD(struct volume_args, json), .help = "print JSON"},
	CLI_ROOT_OPTION,
	CLI_HELP_OPTION,
	{0},
};

static const struct cli_option RM_OPTIONS[] = {
	CLI_ROOT_OPTION,
	CLI_HELP_OPTION,
	{0},
};

static void fmt_bytes(char *buf, size_t n, uint64_t v)
{
	if (v >= (1ULL << 30) && v % (1ULL << 30) == 0)
		snprintf(buf, n, "%lluG", (unsigned long long)(v >> 30));
	else if (v >= (1ULL << 20))
		snprintf(buf, n, "%.1fM", (double)v / (1 << 20));
	else
		snprintf(buf, n, "%.1fK", (double)v / 1024);
}

static void print_json_one(const struct cell_volume *v)
{
	fputs("{\"name\":", stdout);
	cli_json_string(stdout, v->name, strlen(v->name));
	printf(",\"size\":%llu,\"used\":%llu,\"enforced\":%s,\"created\":%.3f,\"path\":",
	       (unsigned long long)v->size, (unsigned long long)v->used,
	       v->enforced ? "true" : "false", v->created);
	cli_json_string(stdout, v->path, strlen(v->path));
	fputs(",\"cells\":[", stdout);
	const char *p = v->users;
	for (size_t i = 0; *p; i++) {
		size_t len = strcspn(p, ",");
		if (i)
			fputc(',', stdout);
		cli_json_string(stdout, p, len);
		p += len + (p[len] == ',');
	}
	fputs("]}", stdout);
}

static void print_table(const struct cell_volume *vs, size_t n)
{
	printf("%-24s %8s %8s %-9s %s\n", "NAME", "SIZE", "USED", "CAP", "CELLS");
	for (size_t i = 0; i < n; i++) {
		char size[32], used[32];
		fmt_bytes(size, sizeof(size), vs[i].size);
		fmt_bytes(used, sizeof(used), vs[i].used);
		printf("%-24s %8s %8s %-9s %s\n", vs[i].name, size, used,
		       vs[i].enforced ? "enforced" : "on-mount", vs[i].users[0] ? vs[i].users : "-");
	}
}

static int parse(const char *verb, const char *help, const struct cli_option *opts,
		 struct volume_args *a, int argc, char **argv, const char **names, int max, int *n)
{
	char name[32];
	snprintf(name, sizeof(name), "volume %s", verb);
	const struct cli_table tables[] = {{opts, a, 0}};
	const struct cli_command cmd = {.name = name, .help = help, .tables = tables,
					.ntables = 1, .operands = names, .max_operands = max};
	return cli_parse_args(&cmd, argc, argv, n, NULL);
}

static int volume_create(int argc, char **argv)
{
	struct volume_args a = {.size = CELL_VOLUME_DEFAULT_SIZE};
	const char *name = NULL;
	int n;
	int done = parse("create", CREATE_HELP, CREATE_OPTIONS, &a, argc, argv, &name, 1, &n);
	if (done >= 0)
		return done;
	if (!name) {
		cli_error("volume create: no name given (usage: sandcell volume create [--size SIZE] NAME)");
		return CLI_EXIT_USAGE;
	}
	struct sc_err err = {0};
	if (cell_ensure_private_dir(cell_data_root(), &err) < 0 ||
	    cell_volume_create(name, a.size, &err) < 0)
		return cli_fail(&err);
	printf("%s\n", name);
	return 0;
}

static int volume_ls(int argc, char **argv)
{
	bool json = false;
	int done = cli_plain_args(argc, argv, "volume ls", LS_HELP, &json);
	if (done >= 0)
		return done;
	struct cell_volume *vs;
	size_t n;
	struct sc_err err = {0};
	if (cell_volume_list(&vs, &n, &err) < 0)
		return cli_fail(&err);
	if (json) {
		fputc('[', stdout);
		for (size_t i = 0; i < n; i++) {
			if (i)
				fputc(',', stdout);
			print_json_one(&vs[i]);
		}
		fputs("]\n", stdout);
	} else {
		print_table(vs, n);
	}
	free(vs);
	return 0;
}

static int volume_inspect(int argc, char **argv)
{
	struct volume_args a = {0};
	const char *name = NULL;
	int n;
	int done = parse("inspect", INSPECT_HELP, JSON_OPTIONS, &a, argc, argv, &name, 1, &n);
	if (done >= 0)
		return done;
	if (!name) {
		cli_error("volume inspect: no name given (usage: sandcell volume inspect NAME)");
		return CLI_EXIT_USAGE;
	}
	struct cell_volume *v = malloc(sizeof(*v));
	struct sc_err err = {0};
	if (!v) {
		cli_error("volume inspect: out of memory");
		return CLI_EXIT_USAGE;
	}
	if (cell_volume_get(name, v, &err) < 0) {
		free(v);
		return cli_fail(&err);
	}
	if (a.json) {
		print_json_one(v);
		fputc('\n', stdout);
	} else {
		char size[32], used[32];
		fmt_bytes(size, sizeof(size), v->size);
		fmt_bytes(used, sizeof(used), v->used);
		printf("name:     %s\nsize:     %s (%llu bytes)\nused:     %s (%llu bytes)\n"
		       "cap:      %s\npath:     %s\ncells:    %s\n",
		       v->name, size, (unsigned long long)v->size, used,
		       (unsigned long long)v->used,
		       v->enforced ? "enforced by the kernel (ext4 image)"
				   : "checked when a cell mounts it",
		       v->path, v->users[0] ? v->users : "-");
	}
	free(v);
	return 0;
}

static int volume_rm(int argc, char **argv)
{
	_cleanup_free_ const char **names = calloc((size_t)(argc > 0 ? argc : 1), sizeof(*names));
	if (!names) {
		cli_error("volume rm: out of memory");
		return CLI_EXIT_USAGE;
	}
	int n;
	int rc = parse("rm", RM_HELP, RM_OPTIONS, NULL, argc, argv, names, argc, &n);
	if (rc >= 0)
		return rc;
	if (!n) {
		cli_error("volume rm: no volume named (usage: sandcell volume rm NAME...)");
		return CLI_EXIT_USAGE;
	}
	rc = 0;
	for (int i = 0; i < n; i++) {
		struct sc_err err = {0};
		if (cell_volume_remove(names[i], &err) < 0)
			rc = cli_fail(&err);
	}
	return rc;
}

int cmd_volume(int argc, char **argv)
{
	static const struct cli_subcommand subs[] = {
		{"create", volume_create}, {"ls", volume_ls},   {"list", volume_ls},
		{"inspect", volume_inspect}, {"rm", volume_rm}};
	if (argc < 2) {
		fputs(VOLUME_HELP, stderr);
		return CLI_EXIT_USAGE;
	}
	if (cli_is_help(argv[1]) || !strcmp(argv[1], "help")) {
		fputs(VOLUME_HELP, stdout);
		return 0;
	}
	return cli_run_subcommand("volume", subs, SC_ARRAY_LEN(subs), argc, argv);
}
