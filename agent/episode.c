/* The parts of an episode both kinds share (episode.h): configuration,
 * the record and the model client, events, the trajectory, the end. */
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>

#include "conversation.h"
#include "episode.h"

/* Seconds between trajectory.json snapshots while an episode runs. */
#define TRAJECTORY_SNAPSHOT_S 2.0

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
	agent_record_event(&e->rec, ev);
}

static void on_failure(void *arg, unsigned attempt, const struct sc_http_resp *resp,
		       double retry_after_s, const char *problem)
{
	struct episode *e = arg;
	cJSON *ev = cJSON_CreateObject();
	cJSON_AddStringToObject(ev, "type", "response");
	cJSON_AddNumberToObject(ev, "step", e->step);
	cJSON_AddNumberToObject(ev, "attempt", attempt);
	if (!resp->failure)
		cJSON_AddNumberToObject(ev, "status", resp->status);
	cJSON_AddNumberToObject(ev, "latency_s", resp->latency_s);
	if (retry_after_s >= 0)
		cJSON_AddNumberToObject(ev, "retry_after_s", retry_after_s);
	cJSON_AddStringToObject(ev, "error", problem ? problem : "");
	e->model_s += resp->latency_s;
	agent_record_event(&e->rec, ev);
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
	agent_record_event(&e->rec, ev);
}

/* ---- trajectory ---- */

void agent_episode_add_step(struct episode *e, const struct llm_reply *r, bool first,
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
	agent_record_set(&e->rec, "metadata", md);
	agent_record_set(&e->rec, "status", cJSON_CreateString(final ? agent_status_name(res->status)
							       : "running"));
	if (final && res->status == AGENT_ERROR)
		agent_record_set(&e->rec, "error", cJSON_CreateString(res->error));
	cJSON *u = cJSON_CreateObject();
	cJSON_AddNumberToObject(u, "input_tokens", (double)res->input_tokens);
	cJSON_AddNumberToObject(u, "output_tokens", (double)res->output_tokens);
	cJSON_AddNumberToObject(u, "requests", (double)e->requests);
	agent_record_set(&e->rec, "usage", u);
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
	agent_record_set(&e->rec, "timings", t);
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "api", e->llm.ops->name);
	cJSON_AddStringToObject(m, "model", cfg->model);
	cJSON_AddStringToObject(m, "url", e->llm.url ? e->llm.url : "");
	agent_record_set(&e->rec, "model", m);
	if (final && res->answer)
		agent_record_set(&e->rec, "answer", cJSON_CreateString(res->answer));
	struct sc_err err = {0};
	if (agent_record_write_trajectory(&e->rec, &err) < 0 && !cfg->quiet)
		sc_log(&cfg->log, SC_LOG_WARN, "agent: %s", err.msg);
}

/* ---- setup and teardown ---- */

void agent_episode_random_id(char *buf, size_t bytes)
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

void agent_episode_fail(struct episode *e, const char *fmt, const char *msg)
{
	e->res->status = AGENT_ERROR;
	snprintf(e->res->error, sizeof(e->res->error), fmt, msg);
	e->done = true;
}

void agent_episode_log_start(struct episode *e, const char *mode)
{
	const struct agent_config *cfg = e->cfg;
	cJSON *ev = cJSON_CreateObject();
	cJSON_AddStringToObject(ev, "type", "episode_start");
	cJSON_AddStringToObject(ev, "api", e->llm.ops->name);
	cJSON_AddStringToObject(ev, "model", cfg->model);
	cJSON_AddStringToObject(ev, "url", e->llm.url);
	cJSON_AddStringToObject(ev, "cell", e->cell ? cell_name(e->cell) : "");
	if (mode)
		cJSON_AddStringToObject(ev, "mode", mode);
	cJSON_AddNumberToObject(ev, "max_steps", cfg->max_steps);
	cJSON_AddNumberToObject(ev, "command_timeout_s", cfg->command_timeout_s);
	cJSON_AddNumberToObject(ev, "episode_timeout_s", cfg->episode_timeout_s);
	cJSON_AddNumberToObject(ev, "setup_s", e->setup_s);
	agent_record_event(&e->rec, ev);
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
	agent_record_event(&e->rec, ev);
}

int agent_episode_check(const struct agent_config *cfg, bool needs_cell, struct sc_err *err)
{
	if (!cfg->model || !*cfg->model)
		return sc_fail(err, 0, "no model: pass --model NAME");
	if (!cfg->problem || !*cfg->problem)
		return sc_fail(err, 0, "the problem is empty");
	if (strlen(cfg->problem) > AGENT_MAX_PROBLEM)
		return sc_fail(err, 0, "the problem is longer than %u bytes", AGENT_MAX_PROBLEM);
	if (!cfg->max_steps)
		return sc_fail(err, 0, "--max-steps must be at least 1");
	if (needs_cell && !cfg->spec && !cfg->cell)
		return sc_fail(err, 0, "no cell spec");
	return 0;
}

int agent_episode_open(struct episode *e, const struct agent_config *cfg, struct agent_result *res,
		 const char *system_prompt, bool tools, struct sc_err *err)
{
	*e = (struct episode){.cfg = cfg, .res = res, .t0 = sc_now()};
	char id[16] = "", dir[4096];
	agent_episode_random_id(id, 6);
	const char *out = cfg->out_dir;
	if (!out) {
		if (agent_record_default_dir(dir, sizeof(dir), id) < 0)
			return sc_fail(err, ENAMETOOLONG, "output directory");
		out = dir;
	}
	if (agent_record_open(&e->rec, out, cfg->problem, cfg->api_key, err) < 0) {
		agent_record_close(&e->rec);
		return -1;
	}
	snprintf(res->out_dir, sizeof(res->out_dir), "%s", out);
	if (llm_init(&e->llm, cfg, system_prompt, tools, cfg->cancel, err) < 0) {
		llm_free(&e->llm);
		agent_record_close(&e->rec);
		return -1;
	}
	e->llm.sink = (struct llm_event_sink){.request = on_request, .failure = on_failure, .arg = e};
	return 0;
}

bool agent_episode_may_go_on(struct episode *e)
{
	if (e->cfg->cancel && atomic_load(e->cfg->cancel)) {
		agent_episode_fail(e, "%s", "interrupted by a signal");
		return false;
	}
	if (sc_now() >= e->llm.deadline) {
		e->res->status = AGENT_EPISODE_TIMEOUT;
		e->done = true;
		return false;
	}
	return true;
}

bool agent_episode_model_turn(struct episode *e, struct llm_reply *r)
{
	struct sc_err err = {0};
	double t = sc_now();
	enum llm_outcome out = llm_complete(&e->llm, r, &err);
	if (out != LLM_REPLY) {
		e->model_s += sc_now() - t;
		if (out == LLM_OUT_OF_TIME) {
			e->res->status = AGENT_EPISODE_TIMEOUT;
			e->done = true;
		} else if (out == LLM_INTERRUPTED) {
			agent_episode_fail(e, "%s", "interrupted by a signal");
		} else {
			agent_episode_fail(e, "%s", err.msg);
		}
		return false;
	}
	e->model_s += r->latency_s;
	e->res->input_tokens += r->input_tokens;
	e->res->output_tokens += r->output_tokens;
	log_reply(e, r);
	return true;
}

/* events.jsonl has every step as it happens; the trajectory snapshot (the
 * whole episode, printed again) only every TRAJECTORY_SNAPSHOT_S, so that
 * short steps stay cheap. */
void agent_episode_snapshot(struct episode *e)
{
	if (sc_now() - e->snapshot_t >= TRAJECTORY_SNAPSHOT_S) {
		write_summary(e, false);
		e->snapshot_t = sc_now();
	}
}

void agent_episode_finish(struct episode *e, int rc, const struct sc_err *err)
{
	struct agent_result *res = e->res;
	res->steps = e->step;
	res->wall_s = sc_now() - e->t0;
	if (rc < 0) {
		res->status = AGENT_ERROR;
		snprintf(res->error, sizeof(res->error), "%s", err->msg);
	}
	log_end(e);
	write_summary(e, true);
	agent_conversation_write(e->rec.dir, &e->llm, e->cfg->api_key);
}

void agent_episode_close(struct episode *e)
{
	llm_free(&e->llm);
	agent_record_close(&e->rec);
}
