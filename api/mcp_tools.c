/* The MCP server's code tools: execute_code (in a fresh cell, or in a
 * session's), get_supported_languages, get_language_details; and how a
 * refused argument is told. Arguments go through the request layer
 * (request.h), the work through the resource calls (ops.h) the HTTP routes
 * make too; what is MCP's own is the shape of the results (content items)
 * and the hints in its errors. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp_priv.h"
#include "ops.h"

/* A refused argument as a tool error, with what to do about it. */
void mcp_refuse(struct mcp *m, const cJSON *id, const struct api_bad *bad)
{
	static const struct {
		const char *field, *hint;
	} HINTS[] = {
		{"language", "; see get_supported_languages"},
		{"image", "; start 'sandcell mcp --image NAME' for another"},
		{"session_id", " (from create_session)"},
	};
	const char *hint = "";
	for (size_t i = 0; i < SC_ARRAY_LEN(HINTS); i++)
		if (!strcmp(bad->field, HINTS[i].field))
			hint = HINTS[i].hint;
	mcp_tool_error(m, id, "%s%s", bad->msg, hint);
}

/* ---- execute_code ---- */

static void result_text(FILE *f, const struct lang_result *r)
{
	const struct lang_exec *ex = r->run.present ? &r->run : &r->compile;
	fprintf(f, "{\"exit_code\":%d,\"stdout\":", ex->present ? ex->return_code : -1);
	api_json_string(f, ex->present ? ex->out : "", ex->present ? ex->out_len : 0);
	fputs(",\"stderr\":", f);
	if (r->compile.present && r->run.present && r->compile.err_len) {
		/* compiler warnings first, then the program's stderr */
		char *both = malloc(r->compile.err_len + r->run.err_len + 1);
		if (both) {
			memcpy(both, r->compile.err, r->compile.err_len);
			memcpy(both + r->compile.err_len, r->run.err, r->run.err_len);
			api_json_string(f, both, r->compile.err_len + r->run.err_len);
			free(both);
		} else {
			api_json_string(f, r->run.err, r->run.err_len);
		}
	} else {
		api_json_string(f, ex->present ? ex->err : "", ex->present ? ex->err_len : 0);
	}
	fputs(",\"limit_hit\":", f);
	if (r->limit_hit)
		api_json_string(f, r->limit_hit, strlen(r->limit_hit));
	else
		fputs("null", f);
	fprintf(f, ",\"status\":\"%s\"", lang_status_name(r->status));
	if (r->compile.present && !r->run.present)
		fputs(",\"compile_failed\":true", f);
	if (ex->out_truncated || ex->err_truncated)
		fputs(",\"truncated\":true", f);
	if (r->plots_truncated)
		fputs(",\"plots_truncated\":true", f);
	if (r->session_restarted)
		fputs(",\"session_restarted\":true", f);
	fputc('}', f);
}

static void send_lang_result(struct mcp *m, const cJSON *id, const struct lang_result *r)
{
	if (r->status == LANG_SANDBOX_ERROR && !r->run.present && !r->compile.present) {
		mcp_tool_error(m, id, "the sandbox could not run the code: %s", r->message);
		return;
	}
	struct api_jbuf j;
	FILE *f = api_jb_open(&j);
	if (!f)
		return;
	struct api_jbuf t;
	FILE *tf = api_jb_open(&t);
	if (!tf) {
		fclose(f);
		free(j.buf);
		return;
	}
	result_text(tf, r);
	char *ts = api_jb_close(&t);
	if (!ts) {
		fclose(f);
		free(j.buf);
		mcp_tool_error(m, id, "out of memory encoding the result");
		return;
	}
	mcp_text_item(f, ts, t.len);
	free(ts);
	for (size_t i = 0; i < r->nplots; i++) {
		/* PNG: an image item; HTML (plotly): an embedded resource */
		if (!strcmp(r->plots[i].format, "html"))
			fprintf(f, ",{\"type\":\"resource\",\"resource\":{\"uri\":\"sandcell:plot/%zu.html\","
				   "\"mimeType\":\"text/html\",\"blob\":", i + 1);
		else
			fputs(",{\"type\":\"image\",\"mimeType\":\"image/png\",\"data\":", f);
		api_json_base64(f, (const unsigned char *)r->plots[i].data, r->plots[i].len);
		fputs(strcmp(r->plots[i].format, "html") ? "}" : "}}", f);
	}
	char *s = api_jb_close(&j);
	if (s)
		mcp_send_tool(m, id, s, false);
	else
		mcp_tool_error(m, id, "out of memory encoding the result");
	free(s);
}

void mcp_tool_execute_code(struct mcp *m, const cJSON *id, const cJSON *args)
{
	struct mcp_session *s;
	if (!mcp_optional_session(m, id, args, &s))
		return;
	struct api_run r;
	struct api_bad bad;
	if (api_parse_run(args, API_RUN_CELL, &m->lim, s ? s->lang : NULL, &r, &bad) < 0) {
		mcp_refuse(m, id, &bad);
		return;
	}
	if (s && r.lang != s->lang) {
		mcp_tool_error(m, id, "session '%s' is a %s session; omit language or create a %s session",
			       s->id, s->lang->name, r.lang->name);
		return;
	}
	r.session.clear_plots = true; /* each call returns its own plots */
	struct lang_result res;
	struct sc_err err = {0};
	int rc;
	if (s) {
		rc = api_op_run(s->c, &r, s->python, &res, &err);
	} else {
		/* lang_run makes (and removes) a cell of its own */
		_cleanup_fd_ int in = api_op_stdin(r.stdin_s, r.stdin_len, &err);
		r.run.stdin_fd = in;
		rc = r.stdin_s && in < 0 ? -1 : lang_run(m->cfg->spec, &r.run, &res, &err);
	}
	if (rc < 0) {
		mcp_tool_error(m, id, "could not run the code: %s", err.msg);
		return;
	}
	send_lang_result(m, id, &res);
	lang_result_free(&res);
}

/* ---- languages ---- */

static void language_json(FILE *f, const struct mcp *m, const struct lang_def *l)
{
	fputs("{\"name\":", f);
	api_json_string(f, l->name, strlen(l->name));
	fputs(",\"aliases\":[", f);
	for (size_t i = 0; i < SC_ARRAY_LEN(l->aliases) && l->aliases[i]; i++) {
		if (i)
			fputc(',', f);
		api_json_string(f, l->aliases[i], strlen(l->aliases[i]));
	}
	fputs("],\"source_file\":", f);
	api_json_string(f, l->source_file, strlen(l->source_file));
	fputs(",\"compiler\":", f);
	if (l->compiler)
		api_json_string(f, l->compiler, strlen(l->compiler));
	else
		fputs("null", f);
	fputs(",\"runner\":", f);
	if (l->runner)
		api_json_string(f, l->runner, strlen(l->runner));
	else
		fputs("null", f);
	fputs(",\"how\":", f);
	api_json_string(f, l->how, strlen(l->how));
	fprintf(f, ",\"available\":%s,\"libraries\":%s,\"sessions_keep_state\":%s,\"plots\":%s}",
		lang_available(l, (const char *const *)m->cfg->spec->layers, m->cfg->spec->nlayers) ? "true" : "false",
		lang_has_libraries(l) ? "true" : "false",
		!strcmp(l->name, "python") ? "true" : "false",
		!strcmp(l->name, "python") || !strcmp(l->name, "r") ? "true" : "false");
}

void mcp_tool_languages(struct mcp *m, const cJSON *id, const cJSON *args)
{
	(void)args;
	size_t n;
	const struct lang_def *t = lang_table(&n);
	struct api_jbuf j;
	FILE *f = api_jb_open(&j);
	if (!f)
		return;
	fputs("{\"languages\":[", f);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc(',', f);
		language_json(f, m, &t[i]);
	}
	fputs("]}", f);
	char *s = api_jb_close(&j);
	if (s)
		mcp_send_tool_text(m, id, s, false);
	free(s);
}

void mcp_tool_language_details(struct mcp *m, const cJSON *id, const cJSON *args)
{
	const char *name;
	struct api_bad bad;
	if (!api_req_str(args, "language", &name, &bad)) {
		mcp_refuse(m, id, &bad);
		return;
	}
	if (!name) {
		mcp_tool_error(m, id, "language is required (see get_supported_languages)");
		return;
	}
	const struct lang_def *l = lang_find(name);
	if (!l) {
		mcp_tool_error(m, id, "unknown language '%.64s': see get_supported_languages", name);
		return;
	}
	struct api_jbuf j;
	FILE *f = api_jb_open(&j);
	if (!f)
		return;
	language_json(f, m, l);
	char *s = api_jb_close(&j);
	if (s)
		mcp_send_tool_text(m, id, s, false);
	free(s);
}
