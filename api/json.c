/* The JSON encoders: strings, and lang's results in SandboxFusion's shape
 * (the one copy, used by /run_code and `sandcell code run --json`). */
#include <stdbool.h>
#include <string.h>

#include <stdlib.h>

#include <cjson/cJSON.h>

#include "../common/base64.h"
#include "../common/parse.h"
#include "api.h"

void api_json_string(FILE *f, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	fputc('"', f);
	for (size_t i = 0; s && i < len; i++) {
		/* a run of bytes that go out as they are: one write (a stream's
		 * output is mostly such runs; fputc per byte was most of the
		 * cost of encoding it) */
		size_t run = i;
		while (run < len && (unsigned char)s[run] >= 0x20 && (unsigned char)s[run] < 0x7f &&
		       s[run] != '"' && s[run] != '\\')
			run++;
		if (run > i) {
			fwrite(s + i, 1, run - i, f);
			i = run - 1;
			continue;
		}
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

void api_json_cell_result(FILE *f, const struct cell_result *res)
{
	fprintf(f, "{\"exit_code\":%d,\"signal\":%d,\"timed_out\":%s,", res->exit_code, res->signal,
		res->timed_out ? "true" : "false");
	fputs("\"stdout\":", f);
	api_json_string(f, res->out ? res->out : "", res->out_len);
	fputs(",\"stderr\":", f);
	api_json_string(f, res->err ? res->err : "", res->err_len);
	fprintf(f, ",\"truncated\":%s,\"stdout_truncated\":%s,\"stderr_truncated\":%s",
		(res->out_truncated || res->err_truncated) ? "true" : "false",
		res->out_truncated ? "true" : "false", res->err_truncated ? "true" : "false");
	fprintf(f, ",\"wall_s\":%.6f,\"cpu_s\":%.6f,\"peak_memory\":%llu,\"limit_hit\":", res->wall_s,
		res->cpu_s, (unsigned long long)res->peak_memory);
	if (res->limit_hit)
		api_json_string(f, res->limit_hit, strlen(res->limit_hit));
	else
		fputs("null", f);
	char net[4096];
	if (res->network && net_summary_json(res->network, net, sizeof(net)) > 0)
		fprintf(f, ",\"network\":%s", net);
	fputc('}', f);
}

/* The log is the host side's own, bounded by the proxy (16 MiB). */
#define NET_LOG_READ_MAX (17u << 20)
struct net_summary *api_net_summary_since(int fd)
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

void api_json_base64(FILE *f, const unsigned char *p, size_t n)
{
	size_t len = 0;
	char *b = sc_base64_encode(p, n, &len);
	fputc('"', f);
	if (b)
		fwrite(b, 1, len, f);
	fputc('"', f);
	free(b);
}

static void json_opt_string(FILE *f, const char *s)
{
	if (s)
		api_json_string(f, s, strlen(s));
	else
		fputs("null", f);
}

static void json_exec(FILE *f, const struct lang_exec *ex)
{
	if (!ex->present) {
		fputs("null", f);
		return;
	}
	fputs("{\"status\":", f);
	json_opt_string(f, lang_exec_status_name(ex->status));
	fprintf(f, ",\"execution_time\":%.6f,\"return_code\":%d,\"stdout\":", ex->execution_time,
		ex->return_code);
	api_json_string(f, ex->out, ex->out_len);
	fputs(",\"stderr\":", f);
	api_json_string(f, ex->err, ex->err_len);
	fprintf(f, ",\"stdout_truncated\":%s,\"stderr_truncated\":%s}",
		ex->out_truncated ? "true" : "false", ex->err_truncated ? "true" : "false");
}

void api_json_replay(FILE *f, const struct lang_replay *r)
{
	if (!r->tried)
		return;
	fprintf(f, ",\"replay\":{\"ok\":%s,\"runs\":%zu", r->ok ? "true" : "false", r->runs);
	if (!r->ok) {
		fputs(",\"error\":", f);
		api_json_string(f, r->why, strlen(r->why));
	}
	fputc('}', f);
}

void api_json_lang_result(FILE *f, const struct lang_result *r, const char *pod, bool session)
{
	fputs("{\"status\":", f);
	json_opt_string(f, lang_status_name(r->status));
	fputs(",\"message\":", f);
	api_json_string(f, r->message, strlen(r->message));
	fputs(",\"compile_result\":", f);
	json_exec(f, &r->compile);
	fputs(",\"run_result\":", f);
	json_exec(f, &r->run);
	fputs(",\"executor_pod_name\":", f);
	json_opt_string(f, pod);
	fputs(",\"files\":{", f);
	for (size_t i = 0; i < r->nfiles; i++) {
		if (i)
			fputc(',', f);
		api_json_string(f, r->files[i].path, strlen(r->files[i].path));
		fputc(':', f);
		api_json_base64(f, (const unsigned char *)r->files[i].data, r->files[i].len);
	}
	fputs("},\"files_truncated\":[", f);
	for (size_t i = 0, k = 0; i < r->nfiles; i++)
		if (r->files[i].truncated) {
			if (k++)
				fputc(',', f);
			api_json_string(f, r->files[i].path, strlen(r->files[i].path));
		}
	fputs("],\"plots\":[", f);
	for (size_t i = 0; i < r->nplots; i++) {
		fprintf(f, "%s{\"format\":\"%s\",\"content_base64\":", i ? "," : "", r->plots[i].format);
		api_json_base64(f, (const unsigned char *)r->plots[i].data, r->plots[i].len);
		fputc('}', f);
	}
	fprintf(f, "],\"plots_truncated\":%s", r->plots_truncated ? "true" : "false");
	if (session)
		fprintf(f, ",\"session_restarted\":%s", r->session_restarted ? "true" : "false");
	fputs(",\"limit_hit\":", f);
	json_opt_string(f, r->limit_hit);
	fprintf(f, ",\"peak_memory\":%llu,\"wall_s\":%.6f}", (unsigned long long)r->peak_memory,
		r->wall_s);
}
