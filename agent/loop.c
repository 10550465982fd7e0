/* The episode: a cell, a conversation, tool calls until submit, a step
 * budget or the clock ends it; then the answer and files are copied out. */
#include <fcntl.h>
#include <math.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "agent.h"
#include "conversation.h"
#include "llm.h"
#include "record.h"
#include "text.h"
#include "tools.h"
#include "vanilla.h"

#define ANSWER_MAX (4U << 20)
/* Seconds between trajectory.json snapshots while an episode runs. */
#define TRAJECTORY_SNAPSHOT_S 2.0

static const char SYSTEM_PROMPT[] =
	"You are an autonomous agent with your own Linux computer: a sandboxed machine with a "
	"shell, a file system and the usual tools (bash, coreutils, python3 when installed). "
	"Solve the problem the user gives you by working on that machine: explore, write code "
	"and run it, check the results, and fix what fails. Do not guess what a command would "
	"print: run it. You may install packages (pip, apt-get) when the machine has network "
	"access.\n"
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

void agent_config_init(struct agent_config *cfg)
{
	*cfg = (struct agent_config){
		.api = AGENT_API_OPENAI,
		.temperature = -1,
		.request_timeout_s = AGENT_DEFAULT_REQUEST_TIMEOUT,
		.attempts = AGENT_DEFAULT_ATTEMPTS,
		.retry_base_ms = AGENT_DEFAULT_RETRY_BASE_MS,
		.max_steps = AGENT_DEFAULT_MAX_STEPS,
		.command_timeout_s = AGENT_DEFAULT_COMMAND_TIMEOUT,
		.episode_timeout_s = AGENT_DEFAULT_EPISODE_TIMEOUT,
		.files_limit = AGENT_DEFAULT_FILES_LIMIT,
	};
}

const char *agent_status_name(enum agent_status s)
{
	switch (s) {
	case AGENT_SUBMITTED:
		return "submitted";
	case AGENT_MAX_STEPS:
		return "max_steps";
	case AGENT_EPISODE_TIMEOUT:
		return "episode_timeout";
	default:
		return "error";
	}
}

void agent_result_free(struct agent_result *res)
{
	free(res->answer);
	res->answer = NULL;
}

struct episode {
	const struct agent_config *cfg;
	struct agent_result *res;
	struct record rec;
	struct llm llm;
	struct cell *cell;
	struct tool_ctx tools;
	unsigned step;
	uint64_t requests;
	double t0, model_s, tools_s, setup_s;
	double snapshot_t; /* when trajectory.json was last written */
	bool done;
};

/* ---- events ---- */

static void on_request(void *arg, unsigned attempt, size_t bytes)
{
	struct episode *e = arg;
	cJSON *ev = cJSON_CreateObject();
	cJSON_AddStringToObject(ev, "type", "request");
	cJSON_AddNumberToObject(ev, "step", e->step);
	cJSON_AddNumberToObject(ev, "attempt", attempt);
	cJSON_AddNumberToObject(ev, "bytes", (double)bytes);
	cJSON_AddNumberToObject(ev, "messages", cJSON_GetArraySize(e->llm.messages));
	e->requests++;
	record_event(&e->rec, ev);
}

static void on_failure(void *arg, unsigned attempt, const struct http_response *resp,
		       const char *problem)
{
	struct episode *e = arg;
	cJSON *ev = cJSON_CreateObject();
	cJSON_AddStringToObject(ev, "type", "response");
	cJSON_AddNumberToObject(ev, "step", e->step);
	cJSON_AddNumberToObject(ev, "attempt", attempt);
	if (!resp->failure)
		cJSON_AddNumberToObject(ev, "status", resp->status);
	cJSON_AddNumberToObject(ev, "latency_s", resp->latency_s);
	if (resp->retry_after_s >= 0)
		cJSON_AddNumberToObject(ev, "retry_after_s", resp->retry_after_s);
	cJSON_AddStringToObject(ev, "error", problem ? problem : "");
	e->model_s += resp->latency_s;
	record_event(&e->rec, ev);
	if (!e->cfg->quiet)
		sc_log(&e->cfg->log, SC_LOG_WARN, "agent: step %u: model request attempt %u failed: %.300s",
		       e->step, attempt, problem ? problem : "");
}

static cJSON *calls_json(const struct llm_reply *r)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < r->ncalls; i++) {
		cJSON *c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "id", r->calls[i].id);
		cJSON_AddStringToObject(c, "function", r->calls[i].name);
		cJSON_AddStringToObject(c, "arguments", r->calls[i].arguments);
		cJSON_AddItemToArray(a, c);
	}
	return a;
}

static void log_reply(struct episode *e, const struct llm_reply *r)
{
	cJSON *ev = cJSON_CreateObject();
	cJSON_AddStringToObject(ev, "type", "response");
	cJSON_AddNumberToObject(ev, "step", e->step);
	cJSON_AddNumberToObject(ev, "attempt", r->attempt);
	cJSON_AddNumberToObject(ev, "status", r->http_status);
	cJSON_AddNumberToObject(ev, "latency_s", r->latency_s);
	cJSON *u = cJSON_AddObjectToObject(ev, "usage");
	cJSON_AddNumberToObject(u, "input_tokens", (double)r->input_tokens);
	cJSON_AddNumberToObject(u, "output_tokens", (double)r->output_tokens);
	cJSON_AddStringToObject(ev, "finish_reason", r->finish_reason);
	cJSON_AddStringToObject(ev, "content", r->content);
	cJSON_AddStringToObject(ev, "reasoning_content", r->reasoning);
	cJSON_AddItemToObject(ev, "tool_calls", calls_json(r));
	record_event(&e->rec, ev);
}

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
	record_event(&e->rec, ev);
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
	record_event(&e->rec, ev);
}

/* ---- trajectory ---- */

static void add_step(struct episode *e, const struct llm_reply *r, bool first,
		     const struct llm_tool_call *c, const char *observation, double exec_s)
{
	cJSON *s = cJSON_CreateObject();
	cJSON_AddStringToObject(s, "thought", first ? r->content : "");
	cJSON_AddStringToObject(s, "reasoning_content", first ? r->reasoning : "");
	cJSON *a = cJSON_AddObjectToObject(s, "action");
	cJSON_AddStringToObject(a, "function", c ? c->name : "");
	if (c && c->args)
		cJSON_AddItemToObject(a, "parameters", cJSON_Duplicate(c->args, true));
	else if (c)
		cJSON_AddStringToObject(a, "parameters", c->arguments);
	else
		cJSON_AddObjectToObject(a, "parameters");
	cJSON_AddStringToObject(s, "observation", observation);
	cJSON *m = cJSON_AddObjectToObject(s, "metadata");
	cJSON_AddNumberToObject(m, "step", e->step);
	cJSON_AddNumberToObject(m, "exec_time", exec_s);
	cJSON_AddNumberToObject(m, "llm_time", first ? r->latency_s : 0);
	if (c)
		cJSON_AddStringToObject(m, "tool_call_id", c->id);
	cJSON_AddItemToArray(e->rec.steps, s);
}

static void write_summary(struct episode *e, bool final)
{
	const struct agent_config *cfg = e->cfg;
	struct agent_result *res = e->res;
	cJSON *md = cJSON_CreateObject();
	cJSON_AddNumberToObject(md, "total_steps", e->step);
	record_set(&e->rec, "metadata", md);
	record_set(&e->rec, "status", cJSON_CreateString(final ? agent_status_name(res->status)
							       : "running"));
	if (final && res->status == AGENT_ERROR)
		record_set(&e->rec, "error", cJSON_CreateString(res->error));
	cJSON *u = cJSON_CreateObject();
	cJSON_AddNumberToObject(u, "input_tokens", (double)res->input_tokens);
	cJSON_AddNumberToObject(u, "output_tokens", (double)res->output_tokens);
	cJSON_AddNumberToObject(u, "requests", (double)e->requests);
	record_set(&e->rec, "usage", u);
	cJSON *t = cJSON_CreateObject();
	cJSON_AddNumberToObject(t, "wall_s", sc_now() - e->t0);
	cJSON_AddNumberToObject(t, "setup_s", e->setup_s);
	cJSON_AddNumberToObject(t, "model_s", e->model_s);
	cJSON_AddNumberToObject(t, "tools_s", e->tools_s);
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) == 0) /* sandcell's own CPU, not the cell's */
		cJSON_AddNumberToObject(t, "agent_cpu_s",
					(double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
						(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	record_set(&e->rec, "timings", t);
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "api", e->llm.ops->name);
	cJSON_AddStringToObject(m, "model", cfg->model);
	cJSON_AddStringToObject(m, "url", e->llm.url ? e->llm.url : "");
	record_set(&e->rec, "model", m);
	if (final && res->answer)
		record_set(&e->rec, "answer", cJSON_CreateString(res->answer));
	struct sc_err err = {0};
	if (record_write_trajectory(&e->rec, &err) < 0 && !cfg->quiet)
		sc_log(&cfg->log, SC_LOG_WARN, "agent: %s", err.msg);
}

/* ---- setup and teardown ---- */

static void random_id(char *buf, size_t bytes)
{
	unsigned char r[16] = {0};
	if (bytes > sizeof(r))
		bytes = sizeof(r);
	if (getrandom(r, bytes, GRND_NONBLOCK) != (ssize_t)bytes) {
		uint64_t x = (uint64_t)(sc_now() * 1e9) ^ ((uint64_t)getpid() << 32);
		memcpy(r, &x, bytes < 8 ? bytes : 8);
	}
	for (size_t i = 0; i < bytes; i++)
		sprintf(buf + 2 * i, "%02x", r[i]);
}

const char *const AGENT_CELL_DIRS[] = {"/testbed/output", "/testbed/documents", NULL};

/* The cell already has AGENT_CELL_DIRS (the spec's make_dirs): only an
 * input is copied. */
static int prepare_cell(struct episode *e, struct sc_err *err)
{
	if (!e->cfg->input_dir)
		return 0;
	uint64_t max = e->cfg->spec->limits.disk ? e->cfg->spec->limits.disk : CELL_DEFAULT_DISK;
	return cell_copy_in_as(e->cell, e->cfg->input_dir, "/testbed/documents", max, err);
}

static char *read_host_file(const char *path, size_t max, size_t *len)
{
	_cleanup_fd_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > max)
		return NULL;
	char *buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return NULL;
	ssize_t n = sc_read_all(fd, buf, (size_t)st.st_size);
	if (n < 0) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	*len = (size_t)n;
	return buf;
}

static void collect(struct episode *e)
{
	struct agent_result *res = e->res;
	char path[4200];
	struct sc_err err = {0};
	cJSON *ev = cJSON_CreateObject();
	cJSON_AddStringToObject(ev, "type", "collect");
	if (sc_path(path, sizeof(path), "%s/answer.txt", e->rec.dir) == 0) {
		if (cell_copy_out(e->cell, "/testbed/answer.txt", path, ANSWER_MAX, &err) == 0) {
			size_t len = 0;
			struct stat st;
			/* a symlink (or anything but a file) would point into the host */
			if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
				unlink(path);
			char *raw = read_host_file(path, ANSWER_MAX, &len);
			if (raw) {
				res->answer = text_sanitize(raw, len, &res->answer_len);
				free(raw);
			}
			cJSON_AddBoolToObject(ev, "answer", res->answer != NULL);
		} else {
			cJSON_AddStringToObject(ev, "answer_error", err.msg);
		}
	}
	err = (struct sc_err){0};
	if (sc_path(path, sizeof(path), "%s/files", e->rec.dir) == 0) {
		if (cell_copy_out(e->cell, "/testbed/output", path, e->cfg->files_limit, &err) == 0)
			cJSON_AddBoolToObject(ev, "files", true);
		else
			cJSON_AddStringToObject(ev, "files_error", err.msg);
	}
	record_event(&e->rec, ev);
}

static void fail_episode(struct episode *e, const char *fmt, const char *msg)
{
	e->res->status = AGENT_ERROR;
	snprintf(e->res->error, sizeof(e->res->error), fmt, msg);
	e->done = true;
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
	size_t n = text_utf8_prefix(what, strlen(what), 80);
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
		if (tool_run(&e->tools, c, &o) < 0) {
			fail_episode(e, "%s", "out of memory");
			return;
		}
		e->tools_s += o.exec_s;
		log_tool(e, c, &o);
		progress(e, c, &o);
		e->llm.ops->add_tool_result(&e->llm, c, o.observation, o.is_error);
		add_step(e, r, i == 0, c, o.observation, o.exec_s);
		if (o.submitted) {
			e->res->status = AGENT_SUBMITTED;
			e->done = true;
		} else if (o.cell_failed) {
			fail_episode(e, "the cell failed: %s", o.observation);
		}
		tool_outcome_free(&o);
		if (!e->done && i + 1 < r->ncalls && sc_now() >= e->tools.deadline) {
			e->res->status = AGENT_EPISODE_TIMEOUT;
			e->done = true;
		}
	}
}

static void one_step(struct episode *e)
{
	const struct agent_config *cfg = e->cfg;
	char note[160];
	unsigned left = cfg->max_steps - e->step + 1;
	if (left > 1)
		snprintf(note, sizeof(note), "Steps remaining: %u", left);
	else
		snprintf(note, sizeof(note), "Steps remaining: 1. This is your last step: make sure "
					     "/testbed/answer.txt holds your answer and call submit.");
	if (!cfg->vanilla)
		e->llm.ops->append_note(&e->llm, note);

	struct llm_reply r;
	struct sc_err err = {0};
	double t = sc_now();
	enum llm_outcome out = llm_complete(&e->llm, &r, &err);
	if (out != LLM_REPLY) {
		e->model_s += sc_now() - t;
		if (out == LLM_OUT_OF_TIME) {
			e->res->status = AGENT_EPISODE_TIMEOUT;
			e->done = true;
		} else if (out == LLM_INTERRUPTED) {
			fail_episode(e, "%s", "interrupted by a signal");
		} else {
			fail_episode(e, "%s", err.msg);
		}
		return;
	}
	e->model_s += r.latency_s;
	e->res->input_tokens += r.input_tokens;
	e->res->output_tokens += r.output_tokens;
	log_reply(e, &r);
	if (cfg->vanilla) {
		/* the baseline: the reply is the answer */
		add_step(e, &r, true, NULL, "", 0);
		vanilla_answer(e->res, e->rec.dir, r.content);
		e->res->status = AGENT_SUBMITTED;
		e->done = true;
	} else if (r.ncalls == 0) {
		e->llm.ops->add_user(&e->llm, TOOL_NO_CALL_REMINDER);
		add_step(e, &r, true, NULL, TOOL_NO_CALL_REMINDER, 0);
		if (!cfg->quiet)
			sc_log(&cfg->log, SC_LOG_PROGRESS, "agent: step %u/%u: no tool call", e->step,
			       cfg->max_steps);
	} else {
		run_calls(e, &r);
	}
	llm_reply_free(&r);
}

static void log_start(struct episode *e)
{
	const struct agent_config *cfg = e->cfg;
	cJSON *ev = cJSON_CreateObject();
	cJSON_AddStringToObject(ev, "type", "episode_start");
	cJSON_AddStringToObject(ev, "api", e->llm.ops->name);
	cJSON_AddStringToObject(ev, "model", cfg->model);
	cJSON_AddStringToObject(ev, "url", e->llm.url);
	cJSON_AddStringToObject(ev, "cell", e->cell ? cell_name(e->cell) : "");
	if (cfg->vanilla)
		cJSON_AddStringToObject(ev, "mode", "vanilla");
	cJSON_AddNumberToObject(ev, "max_steps", cfg->max_steps);
	cJSON_AddNumberToObject(ev, "command_timeout_s", cfg->command_timeout_s);
	cJSON_AddNumberToObject(ev, "episode_timeout_s", cfg->episode_timeout_s);
	cJSON_AddNumberToObject(ev, "setup_s", e->setup_s);
	record_event(&e->rec, ev);
}

static void log_end(struct episode *e)
{
	struct agent_result *res = e->res;
	cJSON *ev = cJSON_CreateObject();
	cJSON_AddStringToObject(ev, "type", "episode_end");
	cJSON_AddStringToObject(ev, "status", agent_status_name(res->status));
	if (res->status == AGENT_ERROR)
		cJSON_AddStringToObject(ev, "error", res->error);
	cJSON_AddNumberToObject(ev, "steps", e->step);
	cJSON_AddNumberToObject(ev, "input_tokens", (double)res->input_tokens);
	cJSON_AddNumberToObject(ev, "output_tokens", (double)res->output_tokens);
	cJSON_AddNumberToObject(ev, "wall_s", sc_now() - e->t0);
	record_event(&e->rec, ev);
}

static int check_config(const struct agent_config *cfg, struct sc_err *err)
{
	if (!cfg->model || !*cfg->model)
		return sc_fail(err, 0, "no model: pass --model NAME");
	if (!cfg->problem || !*cfg->problem)
		return sc_fail(err, 0, "the problem is empty");
	if (strlen(cfg->problem) > AGENT_MAX_PROBLEM)
		return sc_fail(err, 0, "the problem is longer than %u bytes", AGENT_MAX_PROBLEM);
	if (!cfg->max_steps)
		return sc_fail(err, 0, "--max-steps must be at least 1");
	if (!cfg->spec && !cfg->cell && !cfg->vanilla)
		return sc_fail(err, 0, "no cell spec");
	return 0;
}

int agent_run(const struct agent_config *cfg, struct agent_result *res, struct sc_err *err)
{
	*res = (struct agent_result){0};
	if (check_config(cfg, err) < 0)
		return -1;
	struct episode e = {.cfg = cfg, .res = res, .t0 = sc_now()};
	char id[16] = "", dir[4096];
	random_id(id, 6);
	const char *out = cfg->out_dir;
	if (!out) {
		if (record_default_dir(dir, sizeof(dir), id) < 0)
			return sc_fail(err, ENAMETOOLONG, "output directory");
		out = dir;
	}
	if (record_open(&e.rec, out, cfg->problem, cfg->api_key, err) < 0) {
		record_close(&e.rec);
		return -1;
	}
	snprintf(res->out_dir, sizeof(res->out_dir), "%s", out);

	char sys[sizeof(SYSTEM_PROMPT) + 32];
	if (cfg->vanilla)
		snprintf(sys, sizeof(sys), "%s", VANILLA_SYSTEM_PROMPT);
	else
		snprintf(sys, sizeof(sys), SYSTEM_PROMPT, cfg->command_timeout_s);
	if (llm_init(&e.llm, cfg, sys, cfg->cancel, err) < 0) {
		llm_free(&e.llm);
		record_close(&e.rec);
		return -1;
	}
	e.llm.sink = (struct llm_event_sink){.request = on_request, .failure = on_failure, .arg = &e};

	char name[32] = "agent-";
	random_id(name + 6, 6);
	int rc = 0;
	if (cfg->vanilla || cfg->cell) {
		e.cell = cfg->cell; /* none (vanilla), or the caller's */
	} else {
		struct cell_spec spec = *cfg->spec;
		spec.make_dirs = AGENT_CELL_DIRS;
		if (cell_create(&spec, name, &e.cell, err) < 0) {
			sc_err_hint(err, "creating the agent's cell");
			rc = -1;
			goto out;
		}
	}
	if (e.cell && prepare_cell(&e, err) < 0) {
		rc = -1;
		goto out;
	}
	e.setup_s = sc_now() - e.t0;
	e.tools = (struct tool_ctx){.cell = e.cell,
				    .command_timeout_s = cfg->command_timeout_s,
				    .deadline = e.t0 + cfg->episode_timeout_s};
	e.llm.deadline = e.tools.deadline;
	log_start(&e);

	char *problem = NULL;
	if (cfg->vanilla) {
		if (!(problem = vanilla_prompt(cfg->problem, cfg->input_dir, err))) {
			rc = -1;
			goto out;
		}
	} else if (asprintf(&problem, "<problem>\n%s\n</problem>", cfg->problem) < 0) {
		rc = sc_fail(err, ENOMEM, "problem");
		goto out;
	}
	e.llm.ops->add_user(&e.llm, problem);
	free(problem);

	res->status = AGENT_MAX_STEPS;
	while (!e.done && e.step < cfg->max_steps) {
		if (cfg->cancel && atomic_load(cfg->cancel)) {
			fail_episode(&e, "%s", "interrupted by a signal");
			break;
		}
		if (sc_now() >= e.tools.deadline) {
			res->status = AGENT_EPISODE_TIMEOUT;
			break;
		}
		e.step++;
		one_step(&e);
		/* events.jsonl has every step as it happens; the trajectory
		 * snapshot (the whole episode, printed again) only every
		 * TRAJECTORY_SNAPSHOT_S, so that short steps stay cheap. */
		if (sc_now() - e.snapshot_t >= TRAJECTORY_SNAPSHOT_S) {
			write_summary(&e, false);
			e.snapshot_t = sc_now();
		}
	}
	if (e.cell)
		collect(&e);
out:
	res->steps = e.step;
	res->wall_s = sc_now() - e.t0;
	if (rc < 0) {
		res->status = AGENT_ERROR;
		snprintf(res->error, sizeof(res->error), "%s", err->msg);
	}
	log_end(&e);
	write_summary(&e, true);
	conversation_write(e.rec.dir, &e.llm, cfg->api_key);
	if (e.cell && !cfg->cell) {
		struct sc_err derr = {0};
		if (cfg->keep) {
			snprintf(res->cell_name, sizeof(res->cell_name), "%s", cell_name(e.cell));
			cell_close(e.cell);
		} else if (cell_destroy(e.cell, &derr) < 0 && !cfg->quiet) {
			sc_log(&cfg->log, SC_LOG_WARN, "agent: removing the cell: %s", derr.msg);
		}
	}
	llm_free(&e.llm);
	record_close(&e.rec);
	return rc;
}
