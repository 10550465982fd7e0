/* MCP's fork_cell: a session's files copied into new sessions (cell_fork:
 * the MCP server is single-threaded, so it forks in-process, with its own
 * spec). Each child is a session of the parent's language; a Python one
 * gets a fresh interpreter (processes are never copied). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp_priv.h"
#include "ops.h"

struct fork_kid {
	struct mcp_session *s; /* its slot, NULL: none was free */
	char err[SC_ERR_MAX];
	struct lang_replay replay; /* replay_sessions: the parent's runs again */
};

/* A Python session in c: an empty one, or (replay) one that ran the
 * parent's code again; a replay that failed is reported, not fatal. */
static int kid_session(struct fork_kid *k, const struct mcp_session *parent, bool replay,
		       struct cell *c, struct sc_err *err)
{
	if (!replay)
		return lang_session_install(c, parent->lang, err);
	if (lang_session_replay(c, &k->replay) < 0)
		return sc_fail(err, 0, "%s", k->replay.why);
	return 0;
}

/* Free session slots and names for the children; *n of them got one. */
static void kids_plan(struct mcp *m, struct fork_kid *kids, unsigned count, const char **names,
		      size_t *n)
{
	size_t next = 0;
	*n = 0;
	for (unsigned i = 0; i < count; i++) {
		while (next < API_MCP_MAX_SESSIONS && m->sessions[next].used)
			next++;
		if (next == API_MCP_MAX_SESSIONS) {
			snprintf(kids[i].err, sizeof(kids[i].err),
				 "at most %d sessions at once: close_session one first",
				 API_MCP_MAX_SESSIONS);
			continue;
		}
		struct mcp_session *s = &m->sessions[next++];
		snprintf(s->id, sizeof(s->id), "mcp-%ld-%u", (long)getpid(), ++m->next_id);
		kids[i].s = s;
		names[(*n)++] = s->id;
	}
}

/* Child k made (c): a session of the parent's kind, with its memory
 * limit (the server's options give the rest). */
static void kid_start(struct mcp *m, struct fork_kid *k, const struct mcp_session *parent,
		      bool replay, struct cell *c)
{
	struct sc_err err = {0};
	if (api_op_memory(c, &m->lim, parent->memory_mb, &err) < 0)
		snprintf(k->err, sizeof(k->err), "the parent's memory limit: %.400s", err.msg);
	else if (parent->python && kid_session(k, parent, replay, c, &err) < 0)
		snprintf(k->err, sizeof(k->err), "the child's Python session: %.400s", err.msg);
	if (k->err[0]) {
		struct sc_err ignored;
		if (cell_destroy(c, &ignored) < 0)
			(void)cell_remove(k->s->id, true, NULL);
		return;
	}
	k->s->c = c;
	k->s->lang = parent->lang;
	k->s->python = parent->python;
	k->s->memory_mb = parent->memory_mb;
	k->s->used = true;
}

static void send_kids(struct mcp *m, const cJSON *id, const struct fork_kid *kids,
		      unsigned count)
{
	struct api_jbuf j;
	FILE *f = api_jb_open(&j);
	if (!f)
		return;
	fputs("{\"sessions\":[", f);
	for (unsigned i = 0; i < count; i++) {
		bool ok = !kids[i].err[0];
		fputs(i ? ",{" : "{", f);
		fputs(ok ? "\"session_id\":" : "\"error\":", f);
		const char *s = ok ? kids[i].s->id : kids[i].err;
		api_json_string(f, s, strlen(s));
		if (ok)
			api_json_replay(f, &kids[i].replay);
		fputc('}', f);
	}
	fputs("]}", f);
	char *s = api_jb_close(&j);
	if (s)
		mcp_send_tool_text(m, id, s, false);
	free(s);
}

void mcp_tool_fork_cell(struct mcp *m, const cJSON *id, const cJSON *args)
{
	bool absent;
	unsigned count = 1;
	bool replay = false;
	struct api_bad bad;
	struct mcp_session *p = mcp_need_session(m, id, args, true, &absent);
	if (!p)
		return;
	if (api_parse_fork(args, &count, &replay, &bad) < 0) {
		mcp_refuse(m, id, &bad);
		return;
	}
	struct fork_kid kids[API_FORK_MAX] = {0};
	const char *names[API_FORK_MAX];
	struct cell *cells[API_FORK_MAX];
	struct sc_err errs[API_FORK_MAX], err = {0};
	size_t n;
	kids_plan(m, kids, count, names, &n);
	struct cell_spec spec = *m->cfg->spec;
	spec.die_with_creator = true; /* a killed server takes its cells along */
	if (n && cell_fork(p->id, &spec, names, n, cells, errs, NULL, &err) < 0) {
		for (unsigned i = 0; i < count; i++)
			if (kids[i].s)
				memset(kids[i].s, 0, sizeof(*kids[i].s));
		mcp_tool_error(m, id, "could not fork session '%s': %s", p->id, err.msg);
		return;
	}
	for (unsigned i = 0, k = 0; i < count; i++) {
		if (!kids[i].s)
			continue;
		if (cells[k])
			kid_start(m, &kids[i], p, replay, cells[k]);
		else
			snprintf(kids[i].err, sizeof(kids[i].err), "%s", errs[k].msg);
		k++;
		if (kids[i].err[0]) {
			memset(kids[i].s, 0, sizeof(*kids[i].s));
			kids[i].s = NULL;
		} else {
			sc_log(&m->cfg->log, SC_LOG_INFO, "mcp: session %s forked from %s",
			       kids[i].s->id, p->id);
		}
	}
	send_kids(m, id, kids, count);
}
