#include <string.h>

#include "../api/api.h"
#include "cli.h"

static const char GC_HELP[] =
	"usage: sandcell gc [--root DIR]\n"
	"\n"
	"Remove what crashed cells left behind: state directories of cells whose\n"
	"init is gone, their cgroups and on-disk layers; and the inits of cells whose\n"
	"state directory was deleted by hand (killed, with their processes). Running\n"
	"cells are kept. Also the temporary trees of a killed 'sandcell serve'\n"
	"(directories sent or received as tar); a running server's are kept.\n";

int cmd_gc(int argc, char **argv)
{
	int done = cli_plain_args(argc, argv, "gc", GC_HELP, NULL);
	if (done >= 0)
		return done;
	size_t removed = 0, trees = 0;
	struct sc_err err = {0};
	int rc = cell_gc(&removed, &err);
	printf("removed %zu stale cell%s\n", removed, removed == 1 ? "" : "s");
	if (rc < 0)
		return cli_fail(&err);
	rc = api_gc(&trees, &err);
	if (trees)
		printf("removed %zu temporary tree%s of a server that died\n", trees,
		       trees == 1 ? "" : "s");
	return rc < 0 ? cli_fail(&err) : 0;
}
