/* The MCP server's parts (private to api/mcp*.c): the JSON-RPC framing
 * and the tool table (mcp.c), the code tools (mcp_tools.c), the sessions
 * and the tools that use them (mcp_sessions.c). */
#pragma once
#include <cjson/cJSON.h>

#include "api_priv.h"

/* A session: a long-lived cell of create_session, in MCP's own table (the
 * server is single-threaded and makes its cells with cell_create). */
struct mcp_session {
	bool used;
	char id[64];                 /* the cell's name, "mcp-PID-N" */
	struct cell *c;
	const struct lang_def *lang;
	bool python;                 /* a kept interpreter (lang_session_*) */
	double memory_mb;            /* limits.memory_mb (0: the server's); its forks' too */
};

struct mcp {
	const struct api_mcp_config *cfg;
	struct api_limits lim;       /* the request layer's clamps, from cfg */
	int out_fd;
	bool out_broken;
	struct mcp_session sessions[API_MCP_MAX_SESSIONS];
	unsigned next_id;
};

/* One row of the tool table (mcp.c): its name, the rest of its
 * tools/list entry ("description":...,"inputSchema":{...}) and its
 * handler, which answers the call (a result, or a tool error). */
typedef void mcp_handler(struct mcp *m, const cJSON *id, const cJSON *args);
struct mcp_tool {
	const char *name;
	const char *schema;
	mcp_handler *call;
};
/* mcp_tools.c */
mcp_handler mcp_tool_execute_code, mcp_tool_languages, mcp_tool_language_details;
/* mcp_sessions.c */
mcp_handler mcp_tool_create_session, mcp_tool_close_session, mcp_tool_run_command,
	mcp_tool_write_file, mcp_tool_read_file;
/* mcp_fork.c */
mcp_handler mcp_tool_fork_cell;

/* ---- sessions (mcp_sessions.c) ---- */

/* The session named by the argument session_id, or NULL with a tool
 * error sent; *absent: none was given (an error only when required). */
struct mcp_session *mcp_need_session(struct mcp *m, const cJSON *id, const cJSON *args,
				     bool required, bool *absent);
/* The same for a tool where a session is optional: false with a tool
 * error sent; else *s is the session, or NULL when none was given. */
bool mcp_optional_session(struct mcp *m, const cJSON *id, const cJSON *args,
			  struct mcp_session **s);
/* A fresh cell of the server's spec (named into name), killed with the
 * server, SIGKILL included. */
int mcp_fresh_cell(struct mcp *m, char name[64], struct cell **c, struct sc_err *err);
/* Every session's cell removed (the input ended, or a stop). */
void mcp_sessions_end(struct mcp *m);

/* ---- answers (mcp.c) ---- */

/* A JSON-RPC result (JSON text) or error. */
void mcp_send_result(struct mcp *m, const cJSON *id, const char *result);
void mcp_send_error(struct mcp *m, const cJSON *id, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* A tool's result: its content items (JSON, comma-separated). */
void mcp_send_tool(struct mcp *m, const cJSON *id, const char *items, bool is_error);
/* One text item holding s[0..n). */
void mcp_text_item(FILE *f, const char *s, size_t n);
/* A tool result of one text item. */
void mcp_send_tool_text(struct mcp *m, const cJSON *id, const char *text, bool is_error);
/* A tool error ("isError": true) saying what to do. */
void mcp_tool_error(struct mcp *m, const cJSON *id, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* An argument the request layer refused, as a tool error with MCP's hint
 * (mcp_tools.c). */
void mcp_refuse(struct mcp *m, const cJSON *id, const struct api_bad *bad);
