/* Small JSON writers for results (no allocation, no library). */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

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
 * its end before an exec) as a summary, or NULL. The log is the host
 * side's own, bounded by the proxy (16 MiB); lines that do not parse are
 * skipped. */
#define NET_LOG_READ_MAX (17u << 20)
struct net_summary *cli_net_summary_since(int fd)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	if (fd < 0 || sc_read_small_alloc_fd(fd, "egress.jsonl", 0, NET_LOG_READ_MAX, &buf, &len,
					     NULL) < 0)
		return NULL;
	struct net_summary *s = calloc(1, sizeof(*s));
	for (char *line = buf, *end; s && line < buf + len; line = end + 1) {
		end = memchr(line, '\n', (size_t)(buf + len - line));
		if (!end)
			break; /* a line still being written */
		cJSON *j = cJSON_ParseWithLength(line, (size_t)(end - line));
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "verdict");
		const cJSON *h = cJSON_GetObjectItemCaseSensitive(j, "host");
		const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "reason");
		if (cJSON_IsString(v))
			net_summary_add(s, net_verdict_of(v->valuestring),
					cJSON_IsString(h) ? h->valuestring : "",
					cJSON_IsString(r) ? r->valuestring : "");
		cJSON_Delete(j);
	}
	return s;
}
