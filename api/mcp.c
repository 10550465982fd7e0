/* The MCP server (`sandcell mcp`): newline-delimited JSON-RPC 2.0 over a
 * pair of fds, one message at a time, in one thread (its tools make cells
 * with cell_create, which must not run in a threaded process). This file
 * is the framing: lines in, initialize, ping, tools/list and tools/call
 * (the tool table, mcp_tools.c), answers out; every session's cell is
 * removed when the input ends or *stop is set. docs/mcp.md is the user's
 * side of it. */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp_priv.h"

#define MCP_LATEST "2025-11-25"
static const char *const MCP_VERSIONS[] = {"2024-11-05", "2025-03-26", "2025-06-18",
					   "2025-11-25"};

void api_mcp_config_init(struct api_mcp_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->max_timeout_s = API_DEFAULT_MAX_TIMEOUT;
	cfg->max_line = API_MCP_MAX_LINE;
}

/* ---- answers ---- */

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
	struct api_jbuf j;
	FILE *f = api_jb_open(&j);
	if (f) {
		fputs("{\"jsonrpc\":\"2.0\",\"id\":", f);
		put_id(f, id);
		fprintf(f, ",\"%s\":%s}", member, json);
	}
	char *s = api_jb_close(&j);
	if (s)
		send_line(m, s, j.len);
	else
		sc_log(&m->cfg->log, SC_LOG_ERROR, "mcp: out of memory for a response");
	free(s);
}

void mcp_send_result(struct mcp *m, const cJSON *id, const char *result)
{
	send_reply(m, id, "result", result);
}

void mcp_send_error(struct mcp *m, const cJSON *id, int code, const char *fmt, ...)
{
	char msg[SC_ERR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	struct api_jbuf j;
	FILE *f = api_jb_open(&j);
	if (f) {
		fprintf(f, "{\"code\":%d,\"message\":", code);
		api_json_string(f, msg, strlen(msg));
		fputc('}', f);
	}
	char *s = api_jb_close(&j);
	if (s)
		send_reply(m, id, "error", s);
	else
		sc_log(&m->cfg->log, SC_LOG_ERROR, "mcp: out of memory for a response");
	free(s);
}

/* A tool's result: its content items (already JSON, comma-separated) */
void mcp_send_tool(struct mcp *m, const cJSON *id, const char *items, bool is_error)
{
	struct api_jbuf j;
	FILE *f = api_jb_open(&j);
	if (!f)
		return;
	fprintf(f, "{\"content\":[%s],\"isError\":%s}", items, is_error ? "true" : "false");
	char *s = api_jb_close(&j);
	if (s)
		mcp_send_result(m, id, s);
	free(s);
}

/* One text item holding s. */
void mcp_text_item(FILE *f, const char *s, size_t n)
{
	fputs("{\"type\":\"text\",\"text\":", f);
	api_json_string(f, s, n);
	fputc('}', f);
}

void mcp_send_tool_text(struct mcp *m, const cJSON *id, const char *text, bool is_error)
{
	struct api_jbuf j;
	FILE *f = api_jb_open(&j);
	if (!f)
		return;
	mcp_text_item(f, text, strlen(text));
	char *s = api_jb_close(&j);
	if (s)
		mcp_send_tool(m, id, s, is_error);
	free(s);
}

void mcp_tool_error(struct mcp *m, const cJSON *id, const char *fmt, ...)
{
	char msg[SC_ERR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	mcp_send_tool_text(m, id, msg, true);
}

/* ---- the tools: name, schema (the rest of its tools/list entry), handler ---- */
static const struct mcp_tool MCP_TOOLS[] = {
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
	 mcp_tool_execute_code},
	{"get_supported_languages",
	 "\"description\":\"The languages execute_code runs, with whether their tools are "
	 "present.\",\"inputSchema\":{\"type\":\"object\",\"properties\":{}}",
	 mcp_tool_languages},
	{"get_language_details",
	 "\"description\":\"One language: its aliases, source file, tools and whether they "
	 "are present.\",\"inputSchema\":{\"type\":\"object\","
	 "\"properties\":{\"language\":{\"type\":\"string\"}},\"required\":[\"language\"]}",
	 mcp_tool_language_details},
	{"create_session",
	 "\"description\":\"Start a long-lived cell; pass its session_id to execute_code, "
	 "run_command, write_file and read_file. Python keeps interpreter state. "
	 "Sessions end with close_session or when the client disconnects.\","
	 "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"language\":{\"type\":\"string\","
	 "\"default\":\"python\"},\"image\":{\"type\":\"string\",\"description\":\"must be the "
	 "server's image (sandcell mcp --image)\"},\"limits\":{\"type\":\"object\","
	 "\"properties\":{\"memory_mb\":{\"type\":\"number\",\"description\":\"memory limit in MiB "
	 "(at most the server's)\"}}}}}",
	 mcp_tool_create_session},
	{"close_session",
	 "\"description\":\"Stop a session and remove its cell.\","
	 "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"}},"
	 "\"required\":[\"session_id\"]}",
	 mcp_tool_close_session},
	{"fork_cell",
	 "\"description\":\"Copy a session's files (not its processes) into count new "
	 "sessions of its language, each on its own from then on. A Python child starts "
	 "with an empty interpreter, or with replay_sessions with one that ran the parent's "
	 "code again, in order. Returns JSON {sessions: [{session_id[, replay: {ok, runs, "
	 "error}]} or {error}, ...]}, one entry per child.\",\"inputSchema\":{\"type\":"
	 "\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},\"count\":"
	 "{\"type\":\"integer\",\"minimum\":1,\"maximum\":100,\"default\":1},"
	 "\"replay_sessions\":{\"type\":\"boolean\",\"default\":false}},"
	 "\"required\":[\"session_id\"]}",
	 mcp_tool_fork_cell},
	{"run_command",
	 "\"description\":\"Run a shell command (bash -c) in a session's cell, or in a "
	 "fresh cell. Returns JSON {exit_code, stdout, stderr, timed_out, limit_hit, "
	 "...}.\",\"inputSchema\":{\"type\":\"object\","
	 "\"properties\":{\"command\":{\"type\":\"string\"},\"session_id\":{\"type\":\"string\"},"
	 "\"timeout\":{\"type\":\"number\",\"description\":\"seconds (default 30)\"}},"
	 "\"required\":[\"command\"]}",
	 mcp_tool_run_command},
	{"write_file",
	 "\"description\":\"Write a text file in a session's cell (absolute, or relative "
	 "to /testbed; created or replaced).\",\"inputSchema\":{\"type\":\"object\","
	 "\"properties\":{\"session_id\":{\"type\":\"string\"},\"path\":{\"type\":\"string\"},"
	 "\"content\":{\"type\":\"string\"}},\"required\":[\"session_id\",\"path\",\"content\"]}",
	 mcp_tool_write_file},
	{"read_file",
	 "\"description\":\"Read a file of a session's cell (at most 16 MiB).\","
	 "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
	 "\"path\":{\"type\":\"string\"}},\"required\":[\"session_id\",\"path\"]}",
	 mcp_tool_read_file},
};


/* ---- the protocol ---- */

/* tools/list: the tool table, as JSON. */
static void send_tools(struct mcp *m, const cJSON *id)
{
	struct api_jbuf j;
	FILE *f = api_jb_open(&j);
	if (f) {
		fputs("{\"tools\":[", f);
		for (size_t i = 0; i < SC_ARRAY_LEN(MCP_TOOLS); i++)
			fprintf(f, "%s{\"name\":\"%s\",%s}", i ? "," : "", MCP_TOOLS[i].name,
				MCP_TOOLS[i].schema);
		fputs("]}", f);
	}
	char *s = api_jb_close(&j);
	if (s)
		mcp_send_result(m, id, s);
	else
		mcp_send_error(m, id, -32603, "out of memory");
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
	mcp_send_result(m, id, buf);
}

static void do_call(struct mcp *m, const cJSON *id, const cJSON *params)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(params, "name");
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
	if (!cJSON_IsString(name)) {
		mcp_send_error(m, id, -32602, "tools/call needs params.name, a string");
		return;
	}
	cJSON *empty = NULL;
	if (!args || cJSON_IsNull(args)) {
		empty = cJSON_CreateObject();
		args = empty;
	} else if (!cJSON_IsObject(args)) {
		mcp_send_error(m, id, -32602, "tools/call: params.arguments must be an object");
		return;
	}
	const char *n = name->valuestring;
	sc_log(&m->cfg->log, SC_LOG_PROGRESS, "mcp: tools/call %.64s", n);
	const struct mcp_tool *t = NULL;
	for (size_t i = 0; i < SC_ARRAY_LEN(MCP_TOOLS) && !t; i++)
		if (!strcmp(n, MCP_TOOLS[i].name))
			t = &MCP_TOOLS[i];
	if (t)
		t->call(m, id, args);
	else
		mcp_send_error(m, id, -32602, "unknown tool '%.64s': see tools/list", n);
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
		mcp_send_error(m, NULL, -32700, "parse error: not valid JSON (or nested too deeply)");
		return;
	}
	if (cJSON_IsArray(j)) {
		mcp_send_error(m, NULL, -32600, "batches are not supported: send one message per line");
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
		mcp_send_error(m, id, -32600, "invalid request: expected a JSON-RPC 2.0 object");
	} else if (bad_id) {
		mcp_send_error(m, NULL, -32600, "invalid request: id must be a string, a number or null");
	} else if (!cJSON_IsString(method)) {
		/* a response to us (we send no requests) or junk: nothing to answer */
		if (!id)
			mcp_send_error(m, NULL, -32600, "invalid request: no method");
	} else if (!id) {
		/* notifications (initialized, cancelled, ...): nothing to answer */
	} else if (params && !cJSON_IsObject(params)) {
		mcp_send_error(m, id, -32602, "params must be an object");
	} else {
		const char *meth = method->valuestring;
		if (!strcmp(meth, "initialize"))
			do_initialize(m, id, params);
		else if (!strcmp(meth, "ping"))
			mcp_send_result(m, id, "{}");
		else if (!strcmp(meth, "tools/list"))
			send_tools(m, id);
		else if (!strcmp(meth, "tools/call"))
			do_call(m, id, params);
		else
			mcp_send_error(m, id, -32601, "method not found: %.64s", meth);
	}
	cJSON_Delete(j);
}

#define MCP_LINE_FIRST_CAP 65536 /* the input buffer's first size */
#define MCP_STOP_POLL_MS 1000    /* how soon a stop between messages is seen */

/* The input: lines gathered in a buffer of at most max_line + 1 bytes. */
struct line_in {
	char *buf;
	size_t cap, len;
	bool discarding; /* inside a line longer than max_line */
};

/* Room to read into, the buffer grown up to its bound; false when a line
 * filled it: answered once, dropped up to its end. */
static bool line_room(struct mcp *m, struct line_in *in)
{
	if (in->len < in->cap)
		return true;
	size_t max = m->cfg->max_line + 1;
	size_t ncap = in->cap * 2 > max ? max : in->cap * 2;
	char *nb = ncap > in->cap ? realloc(in->buf, ncap) : NULL;
	if (!nb) {
		/* the line is over the bound: answer once, drop the rest */
		if (!in->discarding)
			mcp_send_error(m, NULL, -32700, "a message is longer than %zu bytes",
				       m->cfg->max_line);
		in->discarding = true;
		in->len = 0;
		return false;
	}
	in->buf = nb;
	in->cap = ncap;
	return true;
}

/* The n bytes just read (at in->len): each whole line handled in turn
 * (until the output breaks or a stop), the rest kept for the next read. */
static void take_lines(struct mcp *m, struct line_in *in, size_t n, const atomic_bool *stop)
{
	size_t start = 0, end = in->len + n;
	for (size_t i = in->len; i < end; i++) {
		if (in->buf[i] != '\n')
			continue;
		if (in->discarding)
			in->discarding = false;
		else
			handle_line(m, in->buf + start, i - start);
		start = i + 1;
		if (m->out_broken || (stop && atomic_load(stop)))
			break;
	}
	if (start > end)
		start = end;
	memmove(in->buf, in->buf + start, end - start);
	in->len = in->discarding ? 0 : end - start;
}

int api_mcp_serve(const struct api_mcp_config *cfg, int in_fd, int out_fd,
		  const atomic_bool *stop, struct sc_err *err)
{
	if (!cfg || !cfg->spec || cfg->max_line < API_MCP_MIN_LINE)
		return sc_fail(err, EINVAL, "mcp: bad configuration");
	struct mcp *m = calloc(1, sizeof(*m));
	struct line_in in = {.buf = malloc(MCP_LINE_FIRST_CAP), .cap = MCP_LINE_FIRST_CAP};
	if (!m || !in.buf) {
		free(m);
		free(in.buf);
		return sc_fail(err, ENOMEM, "mcp");
	}
	m->cfg = cfg;
	api_limits_of(&m->lim, cfg->spec, cfg->max_timeout_s);
	m->out_fd = out_fd;
	int rc = 0;
	while (!m->out_broken && !(stop && atomic_load(stop))) {
		if (!line_room(m, &in))
			continue;
		/* a signal between the check of *stop and the read is seen
		 * within MCP_STOP_POLL_MS */
		struct pollfd pfd = {.fd = in_fd, .events = POLLIN};
		int pr = poll(&pfd, 1, MCP_STOP_POLL_MS);
		if (pr == 0 || (pr < 0 && errno == EINTR))
			continue;
		ssize_t n = read(in_fd, in.buf + in.len, in.cap - in.len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = sc_fail(err, errno, "mcp: reading the input");
			break;
		}
		if (n == 0) {
			if (in.len && !in.discarding)
				handle_line(m, in.buf, in.len);
			break; /* the client went away */
		}
		take_lines(m, &in, (size_t)n, stop);
	}
	free(in.buf);
	mcp_sessions_end(m);
	free(m);
	return rc;
}
