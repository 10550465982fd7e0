/* The sink library code (agent/, batch/) sends its messages to: one line
 * "sandcell: MSG" each on stderr, as the commands print their own. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void print_message(void *ctx, enum sc_log_level level, const char *msg)
{
	struct cli_log *st = ctx;
	/* (the messages carry model commands, paths and task ids: escaped) */
	if (level == SC_LOG_PROGRESS && st->live) {
		/* a terminal: the running figures overwrite each other */
		fputs("\r\033[Ksandcell: ", stderr);
		cli_put_safe(stderr, msg, strlen(msg));
		st->shown = true;
	} else {
		fprintf(stderr, "%ssandcell: ", st->shown ? "\r\033[K" : "");
		cli_put_safe(stderr, msg, strlen(msg));
		fputc('\n', stderr);
		st->shown = false;
	}
	fflush(stderr);
}

struct sc_log cli_log_sink(struct cli_log *st)
{
	return (struct sc_log){.fn = print_message, .ctx = st};
}
