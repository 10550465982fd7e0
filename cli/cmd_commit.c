#include <string.h>

#include "../common/parse.h"
#include "cli.h"

/* rootfs asks the runtime which images cells use */
static const struct rootfs_in_use CELLS_IN_USE = {.fn = cell_image_in_use};

static const char COMMIT_HELP[] =
	"usage: sandcell commit [--max-size SIZE] [--root DIR] NAME IMAGE\n"
	"\n"
	"Make image IMAGE from the long-lived cell NAME: the cell's image with\n"
	"the cell's writable layer on top (files it wrote, deletions included),\n"
	"usable with --image IMAGE, e.g. after 'pip install'. The cell must have\n"
	"been made from a stored image (--image NAME), not the host image.\n"
	"\n"
	"Options:\n"
	"  --max-size SIZE       refuse a writable layer with more file data (default 8G)\n";

struct commit_args {
	const char *base, *image, *cell;
	struct rootfs_report rep;
	uint64_t max_size;
};

static int into_image(int fd, void *ctx, struct sc_err *err)
{
	struct commit_args *a = ctx;
	struct cli_log ls = {0};
	struct sc_log log = cli_log_sink(&ls);
	struct rootfs_limits lim = {.max_size = a->max_size, .log = &log};
	return rootfs_image_commit(cell_data_root(), &CELLS_IN_USE, a->base, a->image, a->cell, fd,
				   &lim, &a->rep, err);
}

int cmd_commit(int argc, char **argv)
{
	struct commit_args a = {.max_size = 8ULL << 30};
	const char *pos[2];
	int npos = 0;
	for (int i = 1; i < argc; i++) {
		if (cli_is_help(argv[i])) {
			fputs(COMMIT_HELP, stdout);
			return 0;
		} else if (!strcmp(argv[i], "--max-size") && i + 1 < argc) {
			if (sc_parse_size(argv[++i], &a.max_size) < 0 || !a.max_size) {
				cli_error("--max-size: expected a size like 2G, got '%.64s'", argv[i]);
				return CLI_EXIT_USAGE;
			}
		} else if (!strcmp(argv[i], "--root") && i + 1 < argc) {
			cell_set_root(argv[++i]);
		} else if (argv[i][0] == '-' || npos == 2) {
			cli_error("commit: unexpected argument '%.64s' (see 'sandcell commit --help')", argv[i]);
			return CLI_EXIT_USAGE;
		} else {
			pos[npos++] = argv[i];
		}
	}
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
