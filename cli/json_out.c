/* Small JSON writers for results (no allocation, no library). */
#include <stdlib.h>
#include <string.h>

#include "../common/parse.h"
#include "../api/api.h"
#include "cli.h"

void cli_json_string(FILE *f, const char *s, size_t len)
{
	api_json_string(f, s, len); /* one encoder: api/json.c */
}

void cli_print_result_json(FILE *f, const struct cell_result *res)
{
	api_json_cell_result(f, res);
	fputc('\n', f);
}

/* The egress decisions appended to fd (a cell's egress.jsonl, opened at
 * its end before an exec) as a summary, or NULL: the API's reader. */
struct net_summary *cli_net_summary_since(int fd)
{
	return api_net_summary_since(fd);
}
