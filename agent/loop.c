/* The agent's episode: a cell, a conversation, tool calls until submit, a
 * step budget or the clock ends it; then the answer and files are copied
 * out. (The parts shared with the vanilla baseline are in episode.c.) */
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "../net/net.h"
#include "episode.h"
#include "promptcfg.h"
#include "text.h"

#define ANSWER_MAX (4U << 20)
#define NET_CLAUSE_MAX 2048

static const char SYSTEM_PROMPT[] =
	"You are an autonomous agent with your own Linux computer: a sandboxed machine with a "
	"shell, a file system and the usual tools (bash, coreutils, python3 when installed). "
	"Solve the problem the user gives you by working on that machine: explore, write code "
	"and run it, check the results, and fix what fails. Do not guess what a command would "
	"print: run it. %s\n"
	"\n"
	"You act only through tools:\n"
	"- execute_bash runs one bash command in a fresh shell in /testbed and returns its exit "
	"code, stdout and stderr (long outputs are shortened; a command running longer than "
	"%g seconds is killed);\n"
	"- str_replace_editor views, creates and edits files (absolute paths);\n"
	"- submit ends the task.\n"
	"\n"
	"Input files for the problem, if any, are in /testbed/documents. Write your final "
	"answer, and only the answer, to /testbed/answer.txt; put any files the problem asks "
	"you to produce in /testbed/output. Then call submit. Nothing else you leave on the "
	"machine is kept. You have a limited number of steps; the number remaining is shown "
	"with every observation.";

/* What the default prompt says of the network: what the cell's allowlist
 * reaches (through the proxy the tools already use), or that there is none.
 * A caller that hands over a ready cell without its spec (none of ours:
 * batch passes the spec its pool's cells were made from) gets the
 * conditional sentence. */
static void network_clause(const struct cell_spec *spec, char *out, size_t size)
{
	if (!spec) {
		snprintf(out, size, "You may install packages (pip, apt-get) when the machine has "
				    "network access.");
		return;
	}
	const struct net_rules *r = spec->egress;
	if (!r || !r->nallow) {
		snprintf(out, size, "The machine has no network access: nothing can be downloaded "
				    "or installed, so use the tools and packages already there.");
		return;
	}
	size_t n = (size_t)snprintf(out, size, "The machine reaches the network only through a "
					       "proxy, and only these hosts: ");
	for (size_t i = 0; i < r->nallow && n < size; i++) {
		const struct sc_net_allow *a = &r->allow[i];
		char port[8] = "";
		if (a->port != 443)
			snprintf(port, sizeof(port), ":%u", (unsigned)a->port);
		n += (size_t)snprintf(out + n, size - n, "%s%s%s%s", i ? ", " : "",
				      a->suffix ? "*." : "", a->name, port);
	}
	if (n < size)
		snprintf(out + n, size - n, ". pip, npm, curl, wget and git already use the proxy, "
					    "so you may install packages from those hosts; anything "
					    "else is refused.");
}

/* The built-in system prompt, the one place it is made: `sandcell agent`
 * and every batch episode send the same bytes for the same options,
 * whether the cell is made here or taken ready from a pool (the network
 * clause comes from the spec either way). */
static void system_prompt(const struct agent_config *cfg, char *out, size_t size)
{
	char net[NET_CLAUSE_MAX];
	network_clause(cfg->spec, net, sizeof(net));
	snprintf(out, size, SYSTEM_PROMPT, net, cfg->command_timeout_s);
}

/* ---- events ---- */

static void log_tool(struct episode *e, const struct llm_tool_call *c, const struct tool_outcome *o)
{
	cJSON *ev = cJSON_CreateObject();
	cJSON_AddStringToObject(ev, "type", "tool_call");
	cJSON_AddNumberToObject(ev, "step", e->step);
	cJSON_AddStringToObject(ev, "id", c->id);
	cJSON_AddStringToObject(ev, "function", c->name);
	if (c->args)
		cJSON_AddItemToObject(ev, "parameters", cJSON_Duplicate(c->args, true));
	else
		cJSON_AddStringToObject(ev, "arguments", c->arguments);
	agent_record_event(&e->rec, ev);
	if (!o)
		return;
	ev = cJSON_CreateObject();
	cJSON_AddStringToObject(ev, "type", "tool_result");
	cJSON_AddNumberToObject(ev, "step", e->step);
	cJSON_AddStringToObject(ev, "id", c->id);
	cJSON_AddStringToObject(ev, "function", c->name);
	cJSON_AddNumberToObject(ev, "exec_time_s", o->exec_s);
	if (!strcmp(c->name, "execute_bash") && !o->is_error) {
		cJSON_AddNumberToObject(ev, "exit_code", o->exit_code);
		cJSON_AddBoolToObject(ev, "timed_out", o->timed_out);
	}
	cJSON_AddBoolToObject(ev, "is_error", o->is_error);
	cJSON_AddStringToObject(ev, "observation", o->observation);
	agent_record_event(&e->rec, ev);
}

/* ---- trajectory ---- */

/* ---- setup and teardown ---- */

const char *const AGENT_CELL_DIRS[] = {"/testbed/output", "/testbed/documents", NULL};

/* The cell already has AGENT_CELL_DIRS (the spec's make_dirs): only an
 * input is copied. */
static int prepare_cell(struct episode *e, struct sc_err *err)
{
	const struct agent_prompt_config *pc = e->cfg->prompts;
	if (pc) { /* a prompt config's own directories */
		char *argv[] = {"mkdir", "-p", "--", pc->working_dir, pc->input_dir, pc->output_dir,
				NULL};
		struct cell_exec_req req = {.argv = argv, .cwd = "/", .timeout_s = 60,
					    .stdin_fd = -1, .stdout_fd = -1, .stderr_fd = -1};
		struct cell_result r = {0};
		int rc = cell_exec(e->cell, &req, &r, err);
		bool ok = rc == 0 && r.exit_code == 0;
		cell_result_free(&r);
		if (rc < 0)
			return sc_err_wrap(err, "making the prompt config's directories");
		if (!ok)
			return sc_fail(err, 0, "cannot make %s and %s in the cell", pc->input_dir,
				       pc->output_dir);
	}
	if (!e->cfg->input_dir)
		return 0;
	uint64_t max = e->cfg->spec && e->cfg->spec->limits.disk ? e->cfg->spec->limits.disk
								 : CELL_DEFAULT_DISK;
	return cell_copy_in_as(e->cell, e->cfg->input_dir, pc ? pc->input_dir : "/testbed/documents",
			       max, err);
}

/* Blank the key out of the files copied out of the cell (dirfd: a
 * directory of them, on the host, made by the copy): the model may have
 * written it into its output, which goes on to scorers and exports. Links
 * are never followed. Returns how many files were changed. */
static unsigned redact_tree(int dirfd, const char *secret, int depth)
{
	unsigned changed = 0;
	_cleanup_dir_ DIR *d = sc_opendir_at(dirfd);
	if (!d)
		return 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode) && depth < 64) {
			_cleanup_fd_ int sub = openat(dirfd, de->d_name,
						      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				changed += redact_tree(sub, secret, depth + 1);
			continue;
		}
		if (!S_ISREG(st.st_mode) || st.st_size <= 0 || (uint64_t)st.st_size > (1ULL << 30))
			continue;
		_cleanup_fd_ int f = openat(dirfd, de->d_name, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
		_cleanup_free_ char *buf = f >= 0 ? malloc((size_t)st.st_size) : NULL;
		ssize_t n = buf ? sc_read_all(f, buf, (size_t)st.st_size) : -1;
		if (n > 0 && agent_text_redact(buf, (size_t)n, secret) &&
		    pwrite(f, buf, (size_t)n, 0) == n)
			changed++;
	}
	return changed;
}

/* The cell's egress decisions (what the model tried to reach) into the
 * run directory as egress.jsonl, the key blanked; nothing without egress. */
#define EGRESS_LOG_MAX (17u << 20)
static void keep_egress_log(struct episode *e)
{
	_cleanup_fd_ int in = cell_egress_log_open(e->cell, false, NULL);
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	char path[SC_PATH_BUF];
	if (in < 0 || sc_read_small_alloc_fd(in, "egress.jsonl", 0, EGRESS_LOG_MAX, &buf, &len,
					     NULL) < 0 ||
	    sc_path(path, sizeof(path), "%s/egress.jsonl", e->rec.dir) < 0)
		return;
	agent_text_redact(buf, len, e->cfg->api_key);
	_cleanup_fd_ int out =
		open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (out >= 0)
		(void)sc_write_all(out, buf, len);
}

static void collect(struct episode *e)
{
	keep_egress_log(e);
	struct agent_result *res = e->res;
	char path[SC_PATH_BUF];
	struct sc_err err = {0};
	cJSON *ev = cJSON_CreateObject();
	cJSON_AddStringToObject(ev, "type", "collect");
	if (sc_path(path, sizeof(path), "%s/answer.txt", e->rec.dir) == 0) {
		const char *answer = e->cfg->prompts ? e->cfg->prompts->answer_path
						     : "/testbed/answer.txt";
		if (cell_copy_out(e->cell, answer, path, ANSWER_MAX, &err) == 0) {
			size_t len = 0;
			struct stat st;
			/* a symlink (or anything but a file) would point into the host */
			if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
				unlink(path);
			char *raw = NULL;
			if (sc_read_small_alloc(AT_FDCWD, path, SC_READ_NOFOLLOW | SC_READ_REGULAR,
						ANSWER_MAX, &raw, &len, NULL) == 0) {
				res->answer = agent_text_sanitize(raw, len, &res->answer_len);
				free(raw);
				/* the model may have written the key into its answer: it
				 * would reach results and training exports */
				if (res->answer &&
				    agent_text_redact(res->answer, res->answer_len, e->cfg->api_key)) {
					_cleanup_fd_ int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC |
									 O_NOFOLLOW);
					if (fd >= 0)
						(void)sc_write_all(fd, res->answer, res->answer_len);
				}
			}
			cJSON_AddBoolToObject(ev, "answer", res->answer != NULL);
		} else {
			if (strstr(err.msg, "size limit"))
				snprintf(res->answer_error, sizeof(res->answer_error),
					 "answer.txt is larger than %u MiB: not read, so the run has no "
					 "answer; the answer file is for the short final answer (large "
					 "results belong in the output directory)",
					 ANSWER_MAX >> 20);
			cJSON_AddStringToObject(ev, "answer_error",
						res->answer_error[0] ? res->answer_error : err.msg);
			if (res->answer_error[0])
				sc_log(&e->cfg->log, SC_LOG_WARN, "agent: %s", res->answer_error);
		}
	}
	err = (struct sc_err){0};
	if (sc_path(path, sizeof(path), "%s/files", e->rec.dir) == 0) {
		const char *output = e->cfg->prompts ? e->cfg->prompts->output_dir : "/testbed/output";
		int rc = cell_copy_out_flags(e->cell, output, path, e->cfg->files_limit, 0,
					     &e->cfg->log, &err);
		const char *key = e->cfg->api_key;
		_cleanup_fd_ int dfd = key && strlen(key) >= 8
					       ? open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
					       : -1;
		if (dfd >= 0 && redact_tree(dfd, key, 0))
			cJSON_AddBoolToObject(ev, "files_redacted", true);
		if (rc == 0)
			cJSON_AddBoolToObject(ev, "files", true);
		else {
			cJSON_AddStringToObject(ev, "files_error", err.msg);
			if (strstr(err.msg, "size limit")) {
				res->files_truncated = true;
				snprintf(res->files_note, sizeof(res->files_note),
					 "%.100s holds more than --files-limit (%llu bytes): only part "
					 "of it was copied out; raise --files-limit to keep it all",
					 output, (unsigned long long)e->cfg->files_limit);
				cJSON_AddBoolToObject(ev, "files_truncated", true);
				sc_log(&e->cfg->log, SC_LOG_WARN, "agent: %s (to %s)", res->files_note,
				       path);
			}
		}
	}
	agent_record_event(&e->rec, ev);
}

/* ---- the loop ---- */

static void progress(struct episode *e, const struct llm_tool_call *c, const struct tool_outcome *o)
{
	if (e->cfg->quiet)
		return;
	const char *what = "";
	const cJSON *v = c->args ? cJSON_GetObjectItemCaseSensitive(c->args, "command") : NULL;
	if (cJSON_IsString(v))
		what = v->valuestring;
	char brief[81];
	size_t n = agent_text_utf8_prefix(what, strlen(what), 80);
	memcpy(brief, what, n);
	brief[n] = '\0';
	for (char *p = brief; *p; p++)
		if (*p == '\n' || *p == '\r' || *p == '\t')
			*p = ' ';
	const cJSON *path = c->args ? cJSON_GetObjectItemCaseSensitive(c->args, "path") : NULL;
	const char *p = cJSON_IsString(path) ? path->valuestring : "";
	sc_log(&e->cfg->log, SC_LOG_PROGRESS, "agent: step %u/%u: %.40s%s%s%s%.200s -> %s%s (%.2f s)",
	       e->step, e->cfg->max_steps, c->name, *brief ? " " : "", brief, *p ? " " : "", p,
	       o->is_error ? "error" : "ok", o->timed_out ? ", timed out" : "", o->exec_s);
}

static void run_calls(struct episode *e, const struct llm_reply *r)
{
	for (size_t i = 0; i < r->ncalls && !e->done; i++) {
		const struct llm_tool_call *c = &r->calls[i];
		struct tool_outcome o;
		if (agent_tool_run(&e->tools, c, &o) < 0) {
			agent_episode_fail(e, "%s", "out of memory");
			return;
		}
		e->tools_s += o.exec_s;
		log_tool(e, c, &o);
		progress(e, c, &o);
		e->llm.ops->add_tool_result(&e->llm, c, o.observation, o.is_error);
		agent_episode_add_step(e, r, i == 0, c, o.observation, o.exec_s);
		if (o.submitted) {
			e->res->status = AGENT_SUBMITTED;
			e->done = true;
		} else if (o.cell_failed) {
			agent_episode_fail(e, "the cell failed: %s", o.observation);
		}
		agent_tool_outcome_free(&o);
		if (!e->done && i + 1 < r->ncalls && sc_now() >= e->tools.deadline) {
			e->res->status = AGENT_EPISODE_TIMEOUT;
			e->done = true;
		}
	}
}

static void one_step(struct episode *e)
{
	const struct agent_config *cfg = e->cfg;
	char note[1200];
	unsigned left = cfg->max_steps - e->step + 1;
	if (left > 1)
		snprintf(note, sizeof(note), "Steps remaining: %u", left);
	else
		snprintf(note, sizeof(note), "Steps remaining: 1. This is your last step: make sure "
					     "%s holds your answer and call submit.",
			 cfg->prompts ? cfg->prompts->answer_path : "/testbed/answer.txt");
	if (!(cfg->prompts && e->step == 1)) /* a config's instance prompt goes as it is */
		e->llm.ops->append_note(&e->llm, note);

	struct llm_reply r;
	if (!agent_episode_model_turn(e, &r))
		return;
	if (r.ncalls == 0) {
		e->llm.ops->add_user(&e->llm, AGENT_TOOL_NO_CALL_REMINDER);
		agent_episode_add_step(e, &r, true, NULL, AGENT_TOOL_NO_CALL_REMINDER, 0);
		if (!cfg->quiet)
			sc_log(&cfg->log, SC_LOG_PROGRESS, "agent: step %u/%u: no tool call", e->step,
			       cfg->max_steps);
	} else {
		run_calls(e, &r);
		if (r.dropped_calls && !e->done) {
			char more[300];
			snprintf(more, sizeof(more),
				 "Your reply asked for %zu tool calls; only the first %d were run and "
				 "the other %zu were dropped. Ask for at most %d at a time.",
				 r.ncalls + r.dropped_calls, LLM_MAX_TOOL_CALLS, r.dropped_calls,
				 LLM_MAX_TOOL_CALLS);
			e->llm.ops->append_note(&e->llm, more);
			if (!cfg->quiet)
				sc_log(&cfg->log, SC_LOG_WARN, "agent: step %u: %s", e->step, more);
		}
	}
	llm_reply_free(&r);
}

int agent_run(const struct agent_config *cfg, struct agent_result *res, struct sc_err *err)
{
	*res = (struct agent_result){0};
	if (agent_episode_check(cfg, true, err) < 0)
		return -1;
	char sys[sizeof(SYSTEM_PROMPT) + NET_CLAUSE_MAX + 32];
	system_prompt(cfg, sys, sizeof(sys));
	struct episode e;
	if (agent_episode_open(&e, cfg, res, cfg->prompts ? cfg->prompts->system_prompt : sys, true,
			       err) < 0)
		return -1;

	char name[32] = "agent-";
	agent_episode_random_id(name + 6, 6);
	int rc = 0;
	if (cfg->cell) {
		e.cell = cfg->cell;
	} else {
		struct cell_spec spec = *cfg->spec;
		spec.make_dirs = AGENT_CELL_DIRS;
		spec.die_with_creator = !cfg->keep; /* a killed agent takes its cell along */
		if (cell_create(&spec, name, &e.cell, err) < 0) {
			sc_err_wrap(err, "create the agent's cell");
			rc = -1;
			goto out;
		}
	}
	if (prepare_cell(&e, err) < 0) {
		rc = -1;
		goto out;
	}
	e.setup_s = sc_now() - e.t0;
	e.tools = (struct tool_ctx){.cell = e.cell,
				    .command_timeout_s = cfg->command_timeout_s,
				    .deadline = e.t0 + cfg->episode_timeout_s,
				    .cwd = cfg->prompts ? cfg->prompts->working_dir : NULL};
	e.llm.deadline = e.tools.deadline;
	agent_episode_log_start(&e, NULL);

	char *problem = NULL;
	if (cfg->prompts)
		problem = agent_prompt_format(cfg->prompts->instance_prompt,
					      (const char *const[]){"problem_statement"},
					      (const char *const[]){cfg->problem}, 1);
	else if (asprintf(&problem, "<problem>\n%s\n</problem>", cfg->problem) < 0)
		problem = NULL;
	if (!problem) {
		rc = sc_fail(err, ENOMEM, "problem");
		goto out;
	}
	e.llm.ops->add_user(&e.llm, problem);
	free(problem);

	res->status = AGENT_MAX_STEPS;
	while (!e.done && e.step < cfg->max_steps && agent_episode_may_go_on(&e)) {
		e.step++;
		one_step(&e);
		agent_episode_snapshot(&e);
	}
	collect(&e);
out:
	agent_episode_finish(&e, rc, err);
	if (e.cell && !cfg->cell) {
		struct sc_err derr = {0};
		if (cfg->keep) {
			snprintf(res->cell_name, sizeof(res->cell_name), "%s", cell_name(e.cell));
			cell_close(e.cell);
		} else if (cell_destroy(e.cell, &derr) < 0 && !cfg->quiet) {
			sc_log(&cfg->log, SC_LOG_WARN, "agent: removing the cell: %s", derr.msg);
		}
	}
	agent_episode_close(&e);
	return rc;
}
