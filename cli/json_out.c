/* Small JSON writers for results (no allocation, no library). */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../common/parse.h"
#include "cli.h"

void cli_json_string(FILE *f, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	fputc('"', f);
	for (size_t i = 0; s && i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		switch (c) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		default:
			if (c < 0x20 || c == 0x7f) {
				fprintf(f, "\\u00%c%c", hex[c >> 4], hex[c & 15]);
			} else if (c < 0x80) {
				fputc(c, f);
			} else {
				/* Pass well-formed UTF-8 through; replace anything
				 * else (overlong, surrogate, > U+10FFFF, stray) */
				size_t n = sc_utf8_len((const unsigned char *)s + i, len - i);
				if (n) {
					fwrite(s + i, 1, n, f);
					i += n - 1;
				} else {
					fputs("\\ufffd", f);
				}
			}
		}
	}
	fputc('"', f);
}

void cli_print_result_json(FILE *f, const struct cell_result *res)
{
	fprintf(f, "{\"exit_code\":%d,\"signal\":%d,\"timed_out\":%s,", res->exit_code, res->signal,
		res->timed_out ? "true" : "false");
	fputs("\"stdout\":", f);
	cli_json_string(f, res->out ? res->out : "", res->out_len);
	fputs(",\"stderr\":", f);
	cli_json_string(f, res->err ? res->err : "", res->err_len);
	fprintf(f, ",\"truncated\":%s,\"stdout_truncated\":%s,\"stderr_truncated\":%s",
		(res->out_truncated || res->err_truncated) ? "true" : "false",
		res->out_truncated ? "true" : "false", res->err_truncated ? "true" : "false");
	fprintf(f, ",\"wall_s\":%.6f,\"cpu_s\":%.6f,\"peak_memory\":%llu,\"limit_hit\":", res->wall_s,
		res->cpu_s, (unsigned long long)res->peak_memory);
	if (res->limit_hit)
		cli_json_string(f, res->limit_hit, strlen(res->limit_hit));
	else
		fputs("null", f);
	char net[4096];
	if (res->network && net_summary_json(res->network, net, sizeof(net)) > 0)
		fprintf(f, ",\"network\":%s", net);
	fputs("}\n", f);
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
