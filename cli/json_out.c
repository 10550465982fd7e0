/* Small JSON writers for results (no allocation, no library). */
#include <string.h>

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
