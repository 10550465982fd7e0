/* What both kinds of episode share (agent/loop.c: the agent with a cell
 * and tools; agent/vanilla.c: one model call without them): the record,
 * the model client, the events and the trajectory. Private to agent/. */
#pragma once
#include "agent.h"
#include "llm.h"
#include "record.h"
#include "tools.h"

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

/* The checks every episode makes; needs_cell: a spec or a cell is given. */
int agent_episode_check(const struct agent_config *cfg, bool needs_cell, struct sc_err *err);
/* Open the record (the output directory) and the model client; tools:
 * whether the model is offered the tools. On -1, nothing is left open. */
int agent_episode_open(struct episode *e, const struct agent_config *cfg, struct agent_result *res,
		 const char *system_prompt, bool tools, struct sc_err *err);
/* The episode_start event; mode: "vanilla" or NULL. */
void agent_episode_log_start(struct episode *e, const char *mode);
/* false (and the outcome in res, e->done) when the episode must end
 * before the next step: cancelled or out of time. */
bool agent_episode_may_go_on(struct episode *e);
/* One model turn: true with r filled (tokens counted, the response logged;
 * llm_reply_free it), false with the outcome in res and e->done. */
bool agent_episode_model_turn(struct episode *e, struct llm_reply *r);
void agent_episode_add_step(struct episode *e, const struct llm_reply *r, bool first,
		      const struct llm_tool_call *c, const char *observation, double exec_s);
void agent_episode_fail(struct episode *e, const char *fmt, const char *msg);
/* Write the trajectory snapshot when the last is older than a moment. */
void agent_episode_snapshot(struct episode *e);
/* The end: rc < 0 records err as the error; the events, trajectory and
 * conversation are written. The record and client stay open. */
void agent_episode_finish(struct episode *e, int rc, const struct sc_err *err);
void agent_episode_close(struct episode *e);
/* n random bytes as 2n hex digits into buf. */
void agent_episode_random_id(char *buf, size_t n);
