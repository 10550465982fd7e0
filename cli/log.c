/* The sink library code (agent/, batch/) sends its messages to: one line
 * "sandcell: MSG" each on stderr, as the commands print their own. */
#include <stdio.h>

#include "cli.h"

static void print_message(void *ctx, enum sc_log_level level, const char *msg)
{
	struct cli_log *st = ctx;
	if (level == SC_LOG_PROGRESS && st->live) {
		/* a terminal: the running figures overwrite each other */
		fprintf(stderr, "\r\033[Ksandcell: %s", msg);
		st->shown = true;
	} else {
		fprintf(stderr, "%ssandcell: %s\n", st->shown ? "\r\033[K" : "", msg);
		st->shown = false;
	}
	fflush(stderr);
}

struct sc_log cli_log_sink(struct cli_log *st)
{
	return (struct sc_log){.fn = print_message, .ctx = st};
}
