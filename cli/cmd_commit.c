#include <string.h>

#include "cli.h"

static const char COMMIT_HELP[] =
	"usage: sandcell commit [--max-size SIZE] [--root DIR] NAME IMAGE\n"
	"\n"
	"Make image IMAGE from the long-lived cell NAME: the cell's image with\n"
	"the cell's writable layer on top (files it wrote, deletions included),\n"
	"usable with --image IMAGE, e.g. after 'pip install'. The cell must have\n"
	"been made from a stored image (--image NAME), not the host image.\n"
	"\n"
	"Options:\n"
	"%s";

struct commit_args {
	const char *base, *image, *cell;
	struct rootfs_report rep;
	uint64_t max_size;
};
#define CM(member) CLI_FIELD(struct commit_args, member)

static const struct cli_option COMMIT_OPTIONS[] = {
	{"--max-size", NULL, CLI_SIZE, CM(max_size), .metavar = "SIZE",
	 .help = "refuse a writable layer with more file data (default 8G)"},
	CLI_ROOT_OPTION,
	CLI_HELP_OPTION,
	{0},
};

static int into_image(int fd, void *ctx, struct sc_err *err)
{
	struct commit_args *a = ctx;
	struct cli_log ls = {0};
	struct sc_log log = cli_log_sink(&ls);
	struct rootfs_limits lim = {.max_size = a->max_size, .log = &log};
	return rootfs_image_commit(cell_data_root(), &CLI_CELLS_IN_USE, a->base, a->image, a->cell, fd,
				   &lim, &a->rep, err);
}

int cmd_commit(int argc, char **argv)
{
	struct commit_args a = {.max_size = 8ULL << 30};
	const char *pos[2];
	const struct cli_table tables[] = {{COMMIT_OPTIONS, &a, 0}};
	const struct cli_command cmd = {.name = "commit", .help = COMMIT_HELP, .tables = tables,
					.ntables = 1, .operands = pos, .max_operands = 2};
	int npos;
	int done = cli_parse_args(&cmd, argc, argv, &npos, NULL);
	if (done >= 0)
		return done;
	if (npos != 2) {
		cli_error("commit: usage: sandcell commit NAME IMAGE");
		return CLI_EXIT_USAGE;
	}
	a.cell = pos[0];
	a.image = pos[1];
	struct sc_err err = {0};
	struct cell_status st;
	struct cell *cell;
	if (cell_open(a.cell, &cell, &err) < 0)
		return cli_fail(&err);
	int rc = cell_status_get(a.cell, &st, &err);
	a.base = st.image;
	if (rc == 0)
		rc = cell_export_layer(cell, a.max_size, into_image, &a, &err);
	cell_close(cell);
	if (rc < 0)
		return cli_fail(&err);
	printf("%s\n", a.image);
	return 0;
}
