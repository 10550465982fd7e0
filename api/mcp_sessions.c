/* The MCP server's sessions (its own table of long-lived cells, made with
 * cell_create: the server is single-threaded) and the tools that use
 * them: create_session, close_session, run_command, write_file,
 * read_file. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp_priv.h"
#include "ops.h"

/* ---- sessions ---- */

static struct mcp_session *find_session(struct mcp *m, const char *sid)
{
	for (size_t i = 0; sid && i < API_MCP_MAX_SESSIONS; i++)
		if (m->sessions[i].used && !strcmp(m->sessions[i].id, sid))
			return &m->sessions[i];
	return NULL;
}

/* The session of argument session_id (required: it must be given), or a
 * tool error sent (NULL); *absent: it was not given. */
struct mcp_session *mcp_need_session(struct mcp *m, const cJSON *id, const cJSON *args,
					bool required, bool *absent)
{
	const char *sid;
	struct api_bad bad;
	*absent = false;
	if (!api_req_str(args, "session_id", &sid, &bad)) {
		mcp_refuse(m, id, &bad);
		return NULL;
	}
	if (!sid) {
		*absent = true;
		if (required)
			mcp_tool_error(m, id, "session_id is required: call create_session first");
		return NULL;
	}
	struct mcp_session *s = find_session(m, sid);
	if (!s)
		mcp_tool_error(m, id, "no session '%.64s': it was closed or never made; call create_session for a new one",
			       sid);
	return s;
}

bool mcp_optional_session(struct mcp *m, const cJSON *id, const cJSON *args,
			  struct mcp_session **s)
{
	bool absent;
	*s = mcp_need_session(m, id, args, false, &absent);
	return *s || absent;
}

static void drop_session(struct mcp_session *s)
{
	struct sc_err err = {0};
	if (s->c && cell_destroy(s->c, &err) < 0)
		(void)cell_remove(s->id, true, NULL);
	memset(s, 0, sizeof(*s));
}

void mcp_sessions_end(struct mcp *m)
{
	for (size_t i = 0; i < API_MCP_MAX_SESSIONS; i++)
		if (m->sessions[i].used) {
			char sid[64];
			snprintf(sid, sizeof(sid), "%s", m->sessions[i].id);
			drop_session(&m->sessions[i]);
			sc_log(&m->cfg->log, SC_LOG_INFO, "mcp: session %s removed", sid);
		}
}

/* A fresh cell of the server's spec for one call, killed with the server
 * (SIGKILL included). */
int mcp_fresh_cell(struct mcp *m, char name[64], struct cell **c, struct sc_err *err)
{
	struct cell_spec spec = *m->cfg->spec;
	spec.die_with_creator = true;
	snprintf(name, 64, "mcp-%ld-%u", (long)getpid(), ++m->next_id);
	return cell_create(&spec, name, c, err);
}

/* ---- sessions: create_session, close_session ---- */

/* limits: {"memory_mb": N}, the one limit a session may ask for (the
 * server's options set the rest); MiB, not above the server's. */
static bool session_limits(struct mcp *m, const cJSON *id, const cJSON *args, double *mem_mb)
{
	const cJSON *lim, *k;
	struct api_bad bad;
	*mem_mb = 0;
	if (!api_req_typed(args, "limits", cJSON_Object, "an object such as {\"memory_mb\": 512}",
			   &lim, &bad)) {
		mcp_refuse(m, id, &bad);
		return false;
	}
	cJSON_ArrayForEach(k, lim)
	{
		if (strcmp(k->string, "memory_mb") != 0) {
			mcp_tool_error(m, id, "limits: unknown key '%.64s' (known: memory_mb; the server's options set the rest)",
				       k->string);
			return false;
		}
	}
	if (!api_req_num(lim, "memory_mb", 0, mem_mb, &bad) || *mem_mb < 0) {
		mcp_tool_error(m, id, "limits.memory_mb must be a number of MiB");
		return false;
	}
	return true;
}

/* A session's cell: Python keeps an interpreter in it. */
static int session_start(struct mcp *m, struct mcp_session *s, const struct lang_def *l,
			 struct sc_err *err)
{
	s->lang = l;
	s->python = !strcmp(l->name, "python");
	if (!s->python)
		return mcp_fresh_cell(m, s->id, &s->c, err);
	struct cell_spec spec = *m->cfg->spec;
	spec.die_with_creator = true; /* a killed server takes its cells along */
	snprintf(s->id, sizeof(s->id), "mcp-%ld-%u", (long)getpid(), ++m->next_id);
	if (lang_session_start(&spec, s->id, l, err) < 0)
		return -1;
	if (cell_open(s->id, &s->c, err) < 0) {
		(void)cell_remove(s->id, true, NULL);
		return -1;
	}
	return 0;
}

void mcp_tool_create_session(struct mcp *m, const cJSON *id, const cJSON *args)
{
	const char *language, *image;
	struct api_bad bad;
	double mem_mb;
	if (!api_req_str(args, "language", &language, &bad) ||
	    !api_req_str(args, "image", &image, &bad) || !api_image_ok(&m->lim, image, &bad)) {
		mcp_refuse(m, id, &bad);
		return;
	}
	const struct lang_def *l = lang_find(language ? language : "python");
	if (!l) {
		mcp_tool_error(m, id, "unknown language '%.64s': see get_supported_languages", language);
		return;
	}
	if (!session_limits(m, id, args, &mem_mb))
		return;
	struct mcp_session *s = NULL;
	for (size_t i = 0; i < API_MCP_MAX_SESSIONS && !s; i++)
		if (!m->sessions[i].used)
			s = &m->sessions[i];
	if (!s) {
		mcp_tool_error(m, id, "at most %d sessions at once: close_session one first",
			       API_MCP_MAX_SESSIONS);
		return;
	}
	struct sc_err err = {0};
	if (session_start(m, s, l, &err) < 0) {
		mcp_tool_error(m, id, "could not start the session: %s", err.msg);
		memset(s, 0, sizeof(*s));
		return;
	}
	s->used = true;
	s->memory_mb = mem_mb;
	if (api_op_memory(s->c, &m->lim, mem_mb, &err) < 0) {
		mcp_tool_error(m, id, "limits.memory_mb cannot be enforced here (%s); omit it", err.msg);
		drop_session(s);
		return;
	}
	sc_log(&m->cfg->log, SC_LOG_INFO, "mcp: session %s (%s) started", s->id, l->name);
	char text[160];
	snprintf(text, sizeof(text), "{\"session_id\":\"%s\",\"language\":\"%s\"}", s->id, l->name);
	mcp_send_tool_text(m, id, text, false);
}

void mcp_tool_close_session(struct mcp *m, const cJSON *id, const cJSON *args)
{
	bool absent;
	struct mcp_session *s = mcp_need_session(m, id, args, true, &absent);
	if (!s)
		return;
	char sid[64];
	snprintf(sid, sizeof(sid), "%s", s->id);
	drop_session(s);
	sc_log(&m->cfg->log, SC_LOG_INFO, "mcp: session %s closed", sid);
	char text[160];
	snprintf(text, sizeof(text), "{\"closed\":\"%s\"}", sid);
	mcp_send_tool_text(m, id, text, false);
}

/* ---- commands and files ---- */

void mcp_tool_run_command(struct mcp *m, const cJSON *id, const cJSON *args)
{
	struct mcp_session *s;
	if (!mcp_optional_session(m, id, args, &s))
		return;
	struct api_exec x;
	struct api_bad bad;
	if (api_parse_exec(args, &API_EXEC_MCP, &m->lim, &x, &bad) < 0) {
		mcp_refuse(m, id, &bad);
		return;
	}
	struct sc_err err = {0};
	struct cell *c = s ? s->c : NULL;
	char tmp[64] = "";
	if (!c && mcp_fresh_cell(m, tmp, &c, &err) < 0) {
		mcp_tool_error(m, id, "could not start a cell: %s", err.msg);
		api_exec_free(&x);
		return;
	}
	struct cell_result res;
	int rc = api_op_exec(c, &x, &res, &err);
	api_exec_free(&x);
	if (tmp[0]) {
		struct sc_err e2 = {0};
		if (cell_destroy(c, &e2) < 0)
			(void)cell_remove(tmp, true, NULL);
	}
	if (rc < 0) {
		mcp_tool_error(m, id, "could not run the command: %s", err.msg);
		return;
	}
	struct api_jbuf j;
	FILE *f = api_jb_open(&j);
	if (f) {
		api_json_cell_result(f, &res);
		char *text = api_jb_close(&j);
		if (text)
			mcp_send_tool_text(m, id, text, false);
		else
			mcp_tool_error(m, id, "out of memory encoding the result");
		free(text);
	}
	cell_result_free(&res);
}

/* The session and the cell path of a file tool; NULL after a tool error. */
static struct mcp_session *file_args(struct mcp *m, const cJSON *id, const cJSON *args,
				     char path[API_CELL_PATH])
{
	bool absent;
	const char *p;
	struct mcp_session *s = mcp_need_session(m, id, args, true, &absent);
	if (!s)
		return NULL;
	if (!api_req_str(args, "path", &p, NULL) || !api_cell_path(p, path, API_CELL_PATH)) {
		mcp_tool_error(m, id, "path must be a cell path (absolute, or relative to /testbed) without '..'");
		return NULL;
	}
	return s;
}

void mcp_tool_write_file(struct mcp *m, const cJSON *id, const cJSON *args)
{
	char cpath[API_CELL_PATH];
	const char *content;
	struct mcp_session *s = file_args(m, id, args, cpath);
	if (!s)
		return;
	if (!api_req_str(args, "content", &content, NULL) || !content) {
		mcp_tool_error(m, id, "content is required and must be a string");
		return;
	}
	size_t n = strlen(content);
	if (n > API_MAX_FILE) {
		mcp_tool_error(m, id, "content is larger than %u bytes", API_MAX_FILE);
		return;
	}
	struct sc_err err = {0};
	if (api_op_write_file(s->c, cpath, content, n, &err) < 0) {
		mcp_tool_error(m, id, "could not write %.200s: %s", cpath, err.msg);
		return;
	}
	struct api_jbuf j;
	FILE *f = api_jb_open(&j);
	if (!f)
		return;
	fputs("{\"path\":", f);
	api_json_string(f, cpath, strlen(cpath));
	fprintf(f, ",\"bytes\":%zu}", n);
	char *text = api_jb_close(&j);
	if (text)
		mcp_send_tool_text(m, id, text, false);
	free(text);
}

void mcp_tool_read_file(struct mcp *m, const cJSON *id, const cJSON *args)
{
	char cpath[API_CELL_PATH];
	struct mcp_session *s = file_args(m, id, args, cpath);
	if (!s)
		return;
	struct cell_file cf = {0};
	struct sc_err err = {0};
	if (cell_read_file(s->c, cpath, API_MAX_FILE, API_FILE_TIMEOUT, &cf, &err) < 0) {
		mcp_tool_error(m, id, "could not read %.200s: %s", cpath, err.msg);
		return;
	}
	if (cf.truncated) {
		free(cf.data);
		mcp_tool_error(m, id, "%.200s is larger than %u bytes: read a part with run_command (head -c, split)",
			       cpath, API_MAX_FILE);
		return;
	}
	/* The file's text as it is (invalid UTF-8 shows as U+FFFD). */
	struct api_jbuf j;
	FILE *f = api_jb_open(&j);
	if (f) {
		mcp_text_item(f, cf.data, cf.len);
		char *items = api_jb_close(&j);
		if (items)
			mcp_send_tool(m, id, items, false);
		free(items);
	}
	free(cf.data);
}
