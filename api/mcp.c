/* The MCP server (`sandcell mcp`): newline-delimited JSON-RPC 2.0 over a
 * pair of fds, one request at a time, in one thread (lang_run and
 * lang_session_start call cell_create, which must not run in a threaded
 * process). Tools run code with lang/, commands and files with runtime/;
 * every cell a session made is removed when the input ends or *stop is
 * set. docs/mcp.md is the user's side of this file. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"

#define MCP_LATEST "2025-11-25"
static const char *const MCP_VERSIONS[] = {"2024-11-05", "2025-03-26", "2025-06-18",
					   "2025-11-25"};

struct mcp_session {
	bool used;
	char id[64];                 /* the cell's name */
	struct cell *c;
	const struct lang_def *lang;
	bool python;                 /* a kept interpreter (lang_session_*) */
};

struct mcp {
	const struct api_mcp_config *cfg;
	int out_fd;
	bool out_broken;
	struct mcp_session sessions[API_MCP_MAX_SESSIONS];
	unsigned next_id;
};

void api_mcp_config_init(struct api_mcp_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->max_timeout_s = API_DEFAULT_MAX_TIMEOUT;
	cfg->max_line = API_MCP_MAX_LINE;
}

/* ---- output ---- */

struct jbuf {
	char *p;
	size_t n;
	FILE *f;
};

static FILE *jb_open(struct jbuf *j)
{
	j->p = NULL;
	j->n = 0;
	j->f = open_memstream(&j->p, &j->n);
	return j->f;
}

/* Close the stream; NULL when it could not be written (out of memory). */
static char *jb_close(struct jbuf *j)
{
	bool bad = !j->f || ferror(j->f);
	if (j->f && fclose(j->f) != 0)
		bad = true;
	if (bad) {
		free(j->p);
		return NULL;
	}
	return j->p;
}

static void send_line(struct mcp *m, const char *s, size_t n)
{
	if (m->out_broken)
		return;
	if (sc_write_all(m->out_fd, s, n) < 0 || sc_write_all(m->out_fd, "\n", 1) < 0)
		m->out_broken = true;
}

static void put_id(FILE *f, const cJSON *id)
{
	char *s = id ? cJSON_PrintUnformatted(id) : NULL;
	fputs(s ? s : "null", f);
	free(s);
}

/* {"jsonrpc":"2.0","id":ID,"MEMBER":JSON}: a result or an error. */
static void send_reply(struct mcp *m, const cJSON *id, const char *member, const char *json)
{
	struct jbuf j;
	FILE *f = jb_open(&j);
	if (f) {
		fputs("{\"jsonrpc\":\"2.0\",\"id\":", f);
		put_id(f, id);
		fprintf(f, ",\"%s\":%s}", member, json);
	}
	char *s = jb_close(&j);
	if (s)
		send_line(m, s, j.n);
	else
		sc_log(&m->cfg->log, SC_LOG_ERROR, "mcp: out of memory for a response");
	free(s);
}

static void send_result(struct mcp *m, const cJSON *id, const char *result)
{
	send_reply(m, id, "result", result);
}

static void send_error(struct mcp *m, const cJSON *id, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void send_error(struct mcp *m, const cJSON *id, int code, const char *fmt, ...)
{
	char msg[SC_ERR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	struct jbuf j;
	FILE *f = jb_open(&j);
	if (f) {
		fprintf(f, "{\"code\":%d,\"message\":", code);
		api_json_string(f, msg, strlen(msg));
		fputc('}', f);
	}
	char *s = jb_close(&j);
	if (s)
		send_reply(m, id, "error", s);
	else
		sc_log(&m->cfg->log, SC_LOG_ERROR, "mcp: out of memory for a response");
	free(s);
}

/* A tool's result: its content items (already JSON, comma-separated) */
static void send_tool(struct mcp *m, const cJSON *id, const char *items, bool is_error)
{
	struct jbuf j;
	FILE *f = jb_open(&j);
	if (!f)
		return;
	fprintf(f, "{\"content\":[%s],\"isError\":%s}", items, is_error ? "true" : "false");
	char *s = jb_close(&j);
	if (s)
		send_result(m, id, s);
	free(s);
}

/* One text item holding s. */
static void text_item(FILE *f, const char *s, size_t n)
{
	fputs("{\"type\":\"text\",\"text\":", f);
	api_json_string(f, s, n);
	fputc('}', f);
}

static void send_tool_text(struct mcp *m, const cJSON *id, const char *text, bool is_error)
{
	struct jbuf j;
	FILE *f = jb_open(&j);
	if (!f)
		return;
	text_item(f, text, strlen(text));
	char *s = jb_close(&j);
	if (s)
		send_tool(m, id, s, is_error);
	free(s);
}

static void tool_error(struct mcp *m, const cJSON *id, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void tool_error(struct mcp *m, const cJSON *id, const char *fmt, ...)
{
	char msg[SC_ERR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	send_tool_text(m, id, msg, true);
}

/* ---- arguments ---- */

/* A string argument: absent/null -> *out NULL; false: wrong type. */
static bool arg_string(const cJSON *args, const char *key, const char **out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, key);
	*out = NULL;
	if (!v || cJSON_IsNull(v))
		return true;
	if (!cJSON_IsString(v))
		return false;
	*out = v->valuestring;
	return true;
}

static bool arg_number(const cJSON *args, const char *key, double dflt, double *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, key);
	*out = dflt;
	if (!v || cJSON_IsNull(v))
		return true;
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
		return false;
	*out = v->valuedouble;
	return true;
}

static double clamp_timeout(const struct mcp *m, double t)
{
	if (!(t > 0))
		t = LANG_DEFAULT_RUN_TIMEOUT;
	if (m->cfg->max_timeout_s > 0 && t > m->cfg->max_timeout_s)
		t = m->cfg->max_timeout_s;
	return t;
}

/* A cell path from the client: absolute, or relative to /testbed; no ".."
 * component; bounded. */
static bool cell_path(const char *p, char *out, size_t size)
{
	if (!p || !p[0] || strnlen(p, LANG_MAX_PATH) >= LANG_MAX_PATH)
		return false;
	for (const char *s = p; *s;) {
		size_t n = strcspn(s, "/");
		if (n == 2 && s[0] == '.' && s[1] == '.')
			return false;
		s += n;
		while (*s == '/')
			s++;
	}
	int n = p[0] == '/' ? snprintf(out, size, "%s", p) : snprintf(out, size, "/testbed/%s", p);
	return n > 0 && (size_t)n < size;
}

static struct mcp_session *find_session(struct mcp *m, const char *id)
{
	if (!id)
		return NULL;
	for (size_t i = 0; i < API_MCP_MAX_SESSIONS; i++)
		if (m->sessions[i].used && !strcmp(m->sessions[i].id, id))
			return &m->sessions[i];
	return NULL;
}

/* A session by the argument session_id, or a tool error sent (NULL). */
static struct mcp_session *need_session(struct mcp *m, const cJSON *id, const cJSON *args,
					bool required, bool *absent)
{
	const char *sid;
	*absent = false;
	if (!arg_string(args, "session_id", &sid)) {
		tool_error(m, id, "session_id must be a string (from create_session)");
		return NULL;
	}
	if (!sid) {
		*absent = true;
		if (required)
			tool_error(m, id, "session_id is required: call create_session first");
		return NULL;
	}
	struct mcp_session *s = find_session(m, sid);
	if (!s)
		tool_error(m, id, "no session '%.64s': it was closed or never made; call create_session for a new one",
			   sid);
	return s;
}

/* ---- tools ---- */

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
		tool_error(m, id, "the sandbox could not run the code: %s", r->message);
		return;
	}
	struct jbuf j;
	FILE *f = jb_open(&j);
	if (!f)
		return;
	struct jbuf t;
	FILE *tf = jb_open(&t);
	if (!tf) {
		fclose(f);
		free(j.p);
		return;
	}
	result_text(tf, r);
	char *ts = jb_close(&t);
	if (!ts) {
		fclose(f);
		free(j.p);
		tool_error(m, id, "out of memory encoding the result");
		return;
	}
	text_item(f, ts, t.n);
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
	char *s = jb_close(&j);
	if (s)
		send_tool(m, id, s, false);
	else
		tool_error(m, id, "out of memory encoding the result");
	free(s);
}

static void tool_execute_code(struct mcp *m, const cJSON *id, const cJSON *args)
{
	const char *code, *language;
	double timeout;
	if (!arg_string(args, "code", &code) || !code) {
		tool_error(m, id, "code is required and must be a string");
		return;
	}
	if (!arg_string(args, "language", &language)) {
		tool_error(m, id, "language must be a string (see get_supported_languages)");
		return;
	}
	if (!arg_number(args, "timeout", 0, &timeout) || timeout < 0) {
		tool_error(m, id, "timeout must be a number of seconds");
		return;
	}
	const char *libs[LANG_MAX_LIBRARIES];
	size_t nlibs = 0;
	const cJSON *jl = cJSON_GetObjectItemCaseSensitive(args, "libraries");
	if (jl && !cJSON_IsNull(jl)) {
		if (!cJSON_IsArray(jl)) {
			tool_error(m, id, "libraries must be an array of package names");
			return;
		}
		const cJSON *e;
		cJSON_ArrayForEach(e, jl)
		{
			if (nlibs >= LANG_MAX_LIBRARIES) {
				tool_error(m, id, "libraries: at most %d", LANG_MAX_LIBRARIES);
				return;
			}
			if (!cJSON_IsString(e) || !lang_library_name_ok(e->valuestring)) {
				tool_error(m, id, "libraries: each must be a package name such as \"numpy\" or \"numpy==2.0\"");
				return;
			}
			libs[nlibs++] = e->valuestring;
		}
	}
	size_t code_len = strlen(code);
	if (code_len > LANG_MAX_SOURCE) {
		tool_error(m, id, "code is larger than %u bytes", LANG_MAX_SOURCE);
		return;
	}
	bool absent;
	struct mcp_session *s = need_session(m, id, args, false, &absent);
	if (!s && !absent)
		return;
	const struct lang_def *l = language ? lang_find(language) : (s ? s->lang : lang_find("python"));
	if (!l) {
		tool_error(m, id, "unknown language '%.64s': see get_supported_languages", language);
		return;
	}
	if (s && l != s->lang) {
		tool_error(m, id, "session '%s' is a %s session; omit language or create a %s session",
			   s->id, s->lang->name, l->name);
		return;
	}
	timeout = clamp_timeout(m, timeout);
	struct lang_result res;
	struct sc_err err = {0};
	int rc;
	if (s && s->python) {
		struct lang_session_req req;
		lang_session_req_init(&req);
		req.source = code;
		req.source_len = code_len;
		req.timeout_s = timeout;
		req.clear_plots = true; /* each call returns its own plots */
		req.output_limit = m->cfg->spec->limits.output;
		for (size_t i = 0; i < nlibs; i++)
			req.libraries[i] = libs[i];
		req.nlibraries = nlibs;
		rc = lang_session_run_in(s->c, &req, &res, &err);
	} else {
		struct lang_run_req req;
		lang_run_req_init(&req);
		req.lang = l;
		req.source = code;
		req.source_len = code_len;
		req.run_timeout_s = timeout;
		req.compile_timeout_s = LANG_DEFAULT_COMPILE_TIMEOUT > timeout ? LANG_DEFAULT_COMPILE_TIMEOUT : timeout;
		req.output_limit = m->cfg->spec->limits.output;
		for (size_t i = 0; i < nlibs; i++)
			req.libraries[i] = libs[i];
		req.nlibraries = nlibs;
		req.has_network = m->cfg->spec->egress != NULL;
		rc = s ? lang_run_in(s->c, &req, &res, &err) : lang_run(m->cfg->spec, &req, &res, &err);
	}
	if (rc < 0) {
		tool_error(m, id, "could not run the code: %s", err.msg);
		return;
	}
	send_lang_result(m, id, &res);
	lang_result_free(&res);
}

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

static void tool_languages(struct mcp *m, const cJSON *id, const cJSON *args)
{
	(void)args;
	size_t n;
	const struct lang_def *t = lang_table(&n);
	struct jbuf j;
	FILE *f = jb_open(&j);
	if (!f)
		return;
	fputs("{\"languages\":[", f);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc(',', f);
		language_json(f, m, &t[i]);
	}
	fputs("]}", f);
	char *s = jb_close(&j);
	if (s)
		send_tool_text(m, id, s, false);
	free(s);
}

static void tool_language_details(struct mcp *m, const cJSON *id, const cJSON *args)
{
	const char *name;
	if (!arg_string(args, "language", &name) || !name) {
		tool_error(m, id, "language is required and must be a string (see get_supported_languages)");
		return;
	}
	const struct lang_def *l = lang_find(name);
	if (!l) {
		tool_error(m, id, "unknown language '%.64s': see get_supported_languages", name);
		return;
	}
	struct jbuf j;
	FILE *f = jb_open(&j);
	if (!f)
		return;
	language_json(f, m, l);
	char *s = jb_close(&j);
	if (s)
		send_tool_text(m, id, s, false);
	free(s);
}

static void drop_session(struct mcp_session *s, struct sc_err *err)
{
	if (s->c && cell_destroy(s->c, err) < 0)
		(void)cell_remove(s->id, true, NULL);
	memset(s, 0, sizeof(*s));
}

static void tool_create_session(struct mcp *m, const cJSON *id, const cJSON *args)
{
	const char *language, *image;
	if (!arg_string(args, "language", &language) || !arg_string(args, "image", &image)) {
		tool_error(m, id, "language and image must be strings");
		return;
	}
	const struct lang_def *l = lang_find(language ? language : "python");
	if (!l) {
		tool_error(m, id, "unknown language '%.64s': see get_supported_languages", language);
		return;
	}
	const char *mine = m->cfg->spec->image_name ? m->cfg->spec->image_name : "host";
	if (image && strcmp(image, mine) != 0) {
		tool_error(m, id, "image: this server makes cells of image '%s' only; start 'sandcell mcp --image %.64s' for another",
			   mine, image);
		return;
	}
	double mem_mb = 0;
	const cJSON *lim = cJSON_GetObjectItemCaseSensitive(args, "limits");
	if (lim && !cJSON_IsNull(lim)) {
		const cJSON *k;
		if (!cJSON_IsObject(lim)) {
			tool_error(m, id, "limits must be an object such as {\"memory_mb\": 512}");
			return;
		}
		cJSON_ArrayForEach(k, lim)
		{
			if (strcmp(k->string, "memory_mb") != 0) {
				tool_error(m, id, "limits: unknown key '%.64s' (known: memory_mb; the server's options set the rest)",
					   k->string);
				return;
			}
		}
		if (!arg_number(lim, "memory_mb", 0, &mem_mb) || mem_mb < 0) {
			tool_error(m, id, "limits.memory_mb must be a number of MiB");
			return;
		}
	}
	struct mcp_session *s = NULL;
	for (size_t i = 0; i < API_MCP_MAX_SESSIONS && !s; i++)
		if (!m->sessions[i].used)
			s = &m->sessions[i];
	if (!s) {
		tool_error(m, id, "at most %d sessions at once: close_session one first", API_MCP_MAX_SESSIONS);
		return;
	}
	struct cell_spec spec = *m->cfg->spec;
	spec.die_with_creator = true; /* a killed server takes its cells along */
	snprintf(s->id, sizeof(s->id), "mcp-%ld-%u", (long)getpid(), ++m->next_id);
	struct sc_err err = {0};
	s->lang = l;
	s->python = !strcmp(l->name, "python");
	int rc;
	if (s->python) {
		rc = lang_session_start(&spec, s->id, l, &err);
		if (rc == 0 && cell_open(s->id, &s->c, &err) < 0) {
			(void)cell_remove(s->id, true, NULL);
			rc = -1;
		}
	} else {
		rc = cell_create(&spec, s->id, &s->c, &err);
	}
	if (rc < 0) {
		tool_error(m, id, "could not start the session: %s", err.msg);
		memset(s, 0, sizeof(*s));
		return;
	}
	s->used = true;
	if (mem_mb > 0) {
		uint64_t want = mem_mb >= (double)(1ULL << 43) ? (1ULL << 63) : (uint64_t)(mem_mb * 1048576.0);
		uint64_t cap = spec.limits.memory;
		if (want < (1u << 20))
			want = 1u << 20;
		if (cap && want > cap)
			want = cap;
		if (cell_set_memory_limit(s->c, want, &err) < 0 && !(cap && cap <= want)) {
			struct sc_err e2 = {0};
			tool_error(m, id, "limits.memory_mb cannot be enforced here (%s); omit it", err.msg);
			drop_session(s, &e2);
			return;
		}
	}
	sc_log(&m->cfg->log, SC_LOG_INFO, "mcp: session %s (%s) started", s->id, l->name);
	char text[160];
	snprintf(text, sizeof(text), "{\"session_id\":\"%s\",\"language\":\"%s\"}", s->id, l->name);
	send_tool_text(m, id, text, false);
}

static void tool_close_session(struct mcp *m, const cJSON *id, const cJSON *args)
{
	bool absent;
	struct mcp_session *s = need_session(m, id, args, true, &absent);
	if (!s)
		return;
	char sid[64];
	snprintf(sid, sizeof(sid), "%s", s->id);
	struct sc_err err = {0};
	drop_session(s, &err);
	sc_log(&m->cfg->log, SC_LOG_INFO, "mcp: session %s closed", sid);
	char text[160];
	snprintf(text, sizeof(text), "{\"closed\":\"%s\"}", sid);
	send_tool_text(m, id, text, false);
}

static void tool_run_command(struct mcp *m, const cJSON *id, const cJSON *args)
{
	const char *command;
	double timeout;
	if (!arg_string(args, "command", &command) || !command) {
		tool_error(m, id, "command is required and must be a string (run with bash -c)");
		return;
	}
	if (strlen(command) > LANG_MAX_SOURCE) {
		tool_error(m, id, "command is larger than %u bytes: write a script with write_file", LANG_MAX_SOURCE);
		return;
	}
	if (!arg_number(args, "timeout", 0, &timeout) || timeout < 0) {
		tool_error(m, id, "timeout must be a number of seconds");
		return;
	}
	bool absent;
	struct mcp_session *s = need_session(m, id, args, false, &absent);
	if (!s && !absent)
		return;
	struct sc_err err = {0};
	struct cell *c = s ? s->c : NULL;
	char tmp[64] = "";
	if (!c) {
		struct cell_spec spec = *m->cfg->spec;
		spec.die_with_creator = true;
		snprintf(tmp, sizeof(tmp), "mcp-%ld-%u", (long)getpid(), ++m->next_id);
		if (cell_create(&spec, tmp, &c, &err) < 0) {
			tool_error(m, id, "could not start a cell: %s", err.msg);
			return;
		}
	}
	char *argv[] = {"bash", "-c", (char *)command, NULL};
	struct cell_exec_req req = {
		.argv = argv,
		.timeout_s = clamp_timeout(m, timeout),
		.output_limit = m->cfg->spec->limits.output,
		.stdin_fd = -1,
		.stdout_fd = -1,
		.stderr_fd = -1,
	};
	struct cell_result res;
	int rc = cell_exec(c, &req, &res, &err);
	if (tmp[0]) {
		struct sc_err e2 = {0};
		if (cell_destroy(c, &e2) < 0)
			(void)cell_remove(tmp, true, NULL);
	}
	if (rc < 0) {
		tool_error(m, id, "could not run the command: %s", err.msg);
		return;
	}
	struct jbuf j;
	FILE *f = jb_open(&j);
	if (f) {
		api_json_cell_result(f, &res);
		char *text = jb_close(&j);
		if (text)
			send_tool_text(m, id, text, false);
		else
			tool_error(m, id, "out of memory encoding the result");
		free(text);
	}
	cell_result_free(&res);
}

static void tool_write_file(struct mcp *m, const cJSON *id, const cJSON *args)
{
	bool absent;
	struct mcp_session *s = need_session(m, id, args, true, &absent);
	if (!s)
		return;
	const char *path, *content;
	char cpath[LANG_MAX_PATH + 16];
	if (!arg_string(args, "path", &path) || !cell_path(path, cpath, sizeof(cpath))) {
		tool_error(m, id, "path must be a cell path (absolute, or relative to /testbed) without '..'");
		return;
	}
	if (!arg_string(args, "content", &content) || !content) {
		tool_error(m, id, "content is required and must be a string");
		return;
	}
	size_t n = strlen(content);
	if (n > API_MAX_FILE) {
		tool_error(m, id, "content is larger than %u bytes", API_MAX_FILE);
		return;
	}
	struct sc_err err = {0};
	if (cell_write_file(s->c, cpath, content, n, CELL_FILE_CREATE, 30, &err) < 0) {
		tool_error(m, id, "could not write %.200s: %s (its directory must exist; make it with run_command mkdir -p)",
			   cpath, err.msg);
		return;
	}
	struct jbuf j;
	FILE *f = jb_open(&j);
	if (!f)
		return;
	fputs("{\"path\":", f);
	api_json_string(f, cpath, strlen(cpath));
	fprintf(f, ",\"bytes\":%zu}", n);
	char *text = jb_close(&j);
	if (text)
		send_tool_text(m, id, text, false);
	free(text);
}

static void tool_read_file(struct mcp *m, const cJSON *id, const cJSON *args)
{
	bool absent;
	struct mcp_session *s = need_session(m, id, args, true, &absent);
	if (!s)
		return;
	const char *path;
	char cpath[LANG_MAX_PATH + 16];
	if (!arg_string(args, "path", &path) || !cell_path(path, cpath, sizeof(cpath))) {
		tool_error(m, id, "path must be a cell path (absolute, or relative to /testbed) without '..'");
		return;
	}
	struct cell_file cf = {0};
	struct sc_err err = {0};
	if (cell_read_file(s->c, cpath, API_MAX_FILE, 30, &cf, &err) < 0) {
		tool_error(m, id, "could not read %.200s: %s", cpath, err.msg);
		return;
	}
	if (cf.truncated) {
		free(cf.data);
		tool_error(m, id, "%.200s is larger than %u bytes: read a part with run_command (head -c, split)",
			   cpath, API_MAX_FILE);
		return;
	}
	/* The file's text as it is (invalid UTF-8 shows as U+FFFD). */
	struct jbuf j;
	FILE *f = jb_open(&j);
	if (f) {
		text_item(f, cf.data, cf.len);
		char *items = jb_close(&j);
		if (items)
			send_tool(m, id, items, false);
		free(items);
	}
	free(cf.data);
}

/* ---- the protocol ---- */

/* ---- the tools: name, schema (the rest of its tools/list entry), handler ---- */

struct mcp_tool {
	const char *name;
	const char *schema; /* "description":...,"inputSchema":{...} */
	void (*call)(struct mcp *m, const cJSON *id, const cJSON *args);
};

static const struct mcp_tool TOOLS[] = {
	{"execute_code",
	 "\"description\":\"Run source code in a fresh isolated cell (or in a session's "
	 "cell with session_id, where Python state persists between calls). Returns a "
	 "text item with JSON {exit_code, stdout, stderr, limit_hit} and one image/png "
	 "item per matplotlib or R plot (plotly figures: a text/html resource item).\",\"inputSchema\":{\"type\":\"object\","
	 "\"properties\":{\"code\":{\"type\":\"string\",\"description\":\"the source code\"},"
	 "\"language\":{\"type\":\"string\",\"default\":\"python\",\"description\":\"see "
	 "get_supported_languages\"},\"libraries\":{\"type\":\"array\","
	 "\"items\":{\"type\":\"string\"},\"description\":\"packages to install first (needs the "
	 "server's egress allowlist)\"},\"timeout\":{\"type\":\"number\","
	 "\"description\":\"seconds (default 30)\"},\"session_id\":{\"type\":\"string\","
	 "\"description\":\"from create_session\"}},\"required\":[\"code\"]}",
	 tool_execute_code},
	{"get_supported_languages",
	 "\"description\":\"The languages execute_code runs, with whether their tools are "
	 "present.\",\"inputSchema\":{\"type\":\"object\",\"properties\":{}}",
	 tool_languages},
	{"get_language_details",
	 "\"description\":\"One language: its aliases, source file, tools and whether they "
	 "are present.\",\"inputSchema\":{\"type\":\"object\","
	 "\"properties\":{\"language\":{\"type\":\"string\"}},\"required\":[\"language\"]}",
	 tool_language_details},
	{"create_session",
	 "\"description\":\"Start a long-lived cell; pass its session_id to execute_code, "
	 "run_command, write_file and read_file. Python keeps interpreter state. "
	 "Sessions end with close_session or when the client disconnects.\","
	 "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"language\":{\"type\":\"string\","
	 "\"default\":\"python\"},\"image\":{\"type\":\"string\",\"description\":\"must be the "
	 "server's image (sandcell mcp --image)\"},\"limits\":{\"type\":\"object\","
	 "\"properties\":{\"memory_mb\":{\"type\":\"number\",\"description\":\"memory limit in MiB "
	 "(at most the server's)\"}}}}}",
	 tool_create_session},
	{"close_session",
	 "\"description\":\"Stop a session and remove its cell.\","
	 "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"}},"
	 "\"required\":[\"session_id\"]}",
	 tool_close_session},
	{"run_command",
	 "\"description\":\"Run a shell command (bash -c) in a session's cell, or in a "
	 "fresh cell. Returns JSON {exit_code, stdout, stderr, timed_out, limit_hit, "
	 "...}.\",\"inputSchema\":{\"type\":\"object\","
	 "\"properties\":{\"command\":{\"type\":\"string\"},\"session_id\":{\"type\":\"string\"},"
	 "\"timeout\":{\"type\":\"number\",\"description\":\"seconds (default 30)\"}},"
	 "\"required\":[\"command\"]}",
	 tool_run_command},
	{"write_file",
	 "\"description\":\"Write a text file in a session's cell (absolute, or relative "
	 "to /testbed; created or replaced).\",\"inputSchema\":{\"type\":\"object\","
	 "\"properties\":{\"session_id\":{\"type\":\"string\"},\"path\":{\"type\":\"string\"},"
	 "\"content\":{\"type\":\"string\"}},\"required\":[\"session_id\",\"path\",\"content\"]}",
	 tool_write_file},
	{"read_file",
	 "\"description\":\"Read a file of a session's cell (at most 16 MiB).\","
	 "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
	 "\"path\":{\"type\":\"string\"}},\"required\":[\"session_id\",\"path\"]}",
	 tool_read_file},
};

/* tools/list: the same table, as JSON. */
static void send_tools(struct mcp *m, const cJSON *id)
{
	struct jbuf j;
	FILE *f = jb_open(&j);
	if (f) {
		fputs("{\"tools\":[", f);
		for (size_t i = 0; i < SC_ARRAY_LEN(TOOLS); i++)
			fprintf(f, "%s{\"name\":\"%s\",%s}", i ? "," : "", TOOLS[i].name, TOOLS[i].schema);
		fputs("]}", f);
	}
	char *s = jb_close(&j);
	if (s)
		send_result(m, id, s);
	else
		send_error(m, id, -32603, "out of memory");
	free(s);
}

static void do_initialize(struct mcp *m, const cJSON *id, const cJSON *params)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, "protocolVersion");
	const char *ver = MCP_LATEST;
	if (cJSON_IsString(v))
		for (size_t i = 0; i < SC_ARRAY_LEN(MCP_VERSIONS); i++)
			if (!strcmp(v->valuestring, MCP_VERSIONS[i]))
				ver = MCP_VERSIONS[i];
	char buf[512];
	snprintf(buf, sizeof(buf),
		 "{\"protocolVersion\":\"%s\",\"capabilities\":{\"tools\":{\"listChanged\":false}},"
		 "\"serverInfo\":{\"name\":\"sandcell\",\"version\":\"%s\"},"
		 "\"instructions\":\"Run code and commands in isolated sandcell cells. "
		 "execute_code runs one program in a fresh cell; create_session keeps a cell "
		 "(and Python state) for later calls.\"}",
		 ver, m->cfg->version ? m->cfg->version : "0");
	send_result(m, id, buf);
}

static void do_call(struct mcp *m, const cJSON *id, const cJSON *params)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(params, "name");
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
	if (!cJSON_IsString(name)) {
		send_error(m, id, -32602, "tools/call needs params.name, a string");
		return;
	}
	cJSON *empty = NULL;
	if (!args || cJSON_IsNull(args)) {
		empty = cJSON_CreateObject();
		args = empty;
	} else if (!cJSON_IsObject(args)) {
		send_error(m, id, -32602, "tools/call: params.arguments must be an object");
		return;
	}
	const char *n = name->valuestring;
	sc_log(&m->cfg->log, SC_LOG_PROGRESS, "mcp: tools/call %.64s", n);
	const struct mcp_tool *t = NULL;
	for (size_t i = 0; i < SC_ARRAY_LEN(TOOLS) && !t; i++)
		if (!strcmp(n, TOOLS[i].name))
			t = &TOOLS[i];
	if (t)
		t->call(m, id, args);
	else
		send_error(m, id, -32602, "unknown tool '%.64s': see tools/list", n);
	cJSON_Delete(empty);
}

static void handle_line(struct mcp *m, const char *line, size_t len)
{
	while (len && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
		len--;
	size_t skip = 0;
	while (skip < len && (line[skip] == ' ' || line[skip] == '\t'))
		skip++;
	if (skip == len)
		return; /* blank lines are not messages */
	cJSON *j = cJSON_ParseWithLength(line + skip, len - skip);
	if (!j) {
		send_error(m, NULL, -32700, "parse error: not valid JSON (or nested too deeply)");
		return;
	}
	if (cJSON_IsArray(j)) {
		send_error(m, NULL, -32600, "batches are not supported: send one message per line");
		cJSON_Delete(j);
		return;
	}
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "id");
	const cJSON *method = cJSON_GetObjectItemCaseSensitive(j, "method");
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(j, "params");
	const cJSON *ver = cJSON_GetObjectItemCaseSensitive(j, "jsonrpc");
	/* JSON-RPC 2.0: an id is a string, a number or null; any other is an
	 * invalid request, answered with id null (not taken for a notification) */
	bool bad_id = id && !cJSON_IsString(id) && !cJSON_IsNumber(id) && !cJSON_IsNull(id);
	if (bad_id)
		id = NULL;
	if (!cJSON_IsObject(j) || !cJSON_IsString(ver) || strcmp(ver->valuestring, "2.0") != 0) {
		send_error(m, id, -32600, "invalid request: expected a JSON-RPC 2.0 object");
	} else if (bad_id) {
		send_error(m, NULL, -32600, "invalid request: id must be a string, a number or null");
	} else if (!cJSON_IsString(method)) {
		/* a response to us (we send no requests) or junk: nothing to answer */
		if (!id)
			send_error(m, NULL, -32600, "invalid request: no method");
	} else if (!id) {
		/* notifications (initialized, cancelled, ...): nothing to answer */
	} else if (params && !cJSON_IsObject(params)) {
		send_error(m, id, -32602, "params must be an object");
	} else {
		const char *meth = method->valuestring;
		if (!strcmp(meth, "initialize"))
			do_initialize(m, id, params);
		else if (!strcmp(meth, "ping"))
			send_result(m, id, "{}");
		else if (!strcmp(meth, "tools/list"))
			send_tools(m, id);
		else if (!strcmp(meth, "tools/call"))
			do_call(m, id, params);
		else
			send_error(m, id, -32601, "method not found: %.64s", meth);
	}
	cJSON_Delete(j);
}

int api_mcp_serve(const struct api_mcp_config *cfg, int in_fd, int out_fd, atomic_int *stop,
		  struct sc_err *err)
{
	if (!cfg || !cfg->spec || cfg->max_line < 64)
		return sc_fail(err, EINVAL, "mcp: bad configuration");
	struct mcp *m = calloc(1, sizeof(*m));
	size_t cap = 65536, len = 0;
	char *buf = malloc(cap);
	if (!m || !buf) {
		free(m);
		free(buf);
		return sc_fail(err, ENOMEM, "mcp");
	}
	m->cfg = cfg;
	m->out_fd = out_fd;
	bool discarding = false; /* inside a line longer than max_line */
	int rc = 0;
	while (!m->out_broken && !(stop && atomic_load(stop))) {
		if (len == cap) {
			size_t ncap = cap * 2 > cfg->max_line + 1 ? cfg->max_line + 1 : cap * 2;
			char *nb = ncap > cap ? realloc(buf, ncap) : NULL;
			if (!nb) {
				/* the line is over the bound: answer once, drop the rest */
				if (!discarding)
					send_error(m, NULL, -32700, "a message is longer than %zu bytes", cfg->max_line);
				discarding = true;
				len = 0;
				continue;
			}
			buf = nb;
			cap = ncap;
		}
		/* a signal between the check of *stop and the read is seen
		 * within a second */
		struct pollfd pfd = {.fd = in_fd, .events = POLLIN};
		int pr = poll(&pfd, 1, 1000);
		if (pr == 0 || (pr < 0 && errno == EINTR))
			continue;
		ssize_t n = read(in_fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = sc_fail(err, errno, "mcp: reading the input");
			break;
		}
		if (n == 0) {
			if (len && !discarding)
				handle_line(m, buf, len);
			break; /* the client went away */
		}
		size_t start = 0, end = len + (size_t)n;
		for (size_t i = len; i < end; i++) {
			if (buf[i] != '\n')
				continue;
			if (discarding)
				discarding = false;
			else
				handle_line(m, buf + start, i - start);
			start = i + 1;
			if (m->out_broken || (stop && atomic_load(stop)))
				break;
		}
		if (start > end)
			start = end;
		memmove(buf, buf + start, end - start);
		len = end - start;
		if (discarding)
			len = 0;
	}
	free(buf);
	for (size_t i = 0; i < API_MCP_MAX_SESSIONS; i++)
		if (m->sessions[i].used) {
			struct sc_err e2 = {0};
			char sid[64];
			snprintf(sid, sizeof(sid), "%s", m->sessions[i].id);
			drop_session(&m->sessions[i], &e2);
			sc_log(&cfg->log, SC_LOG_INFO, "mcp: session %s removed", sid);
		}
	free(m);
	return rc;
}
