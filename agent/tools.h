/* The three tools the model gets — execute_bash, str_replace_editor,
 * submit — run in the cell through cell_exec only: the host never touches
 * the cell's files, so paths and symlinks resolve inside the cell. */
#pragma once
#include <stdbool.h>

#include "../runtime/cell.h"
#include "llm.h"

#define TOOL_MAX_LINES 80      /* bash output past this is cut ... */
#define TOOL_KEEP_HEAD 40      /* ... to the first 40 lines ... */
#define TOOL_KEEP_TAIL 40      /* ... and the last 40 */
#define TOOL_MAX_STREAM 16000  /* characters kept per stream after that */
#define TOOL_EXEC_OUTPUT (1U << 20) /* bytes captured per stream */
#define TOOL_EDITOR_MAX 10000  /* characters of editor output */
#define TOOL_MAX_FILE (8U << 20) /* files the editor reads or writes */
#define TOOL_INLINE_COMMAND (32U << 10) /* longer commands go through a script file */

struct tool_ctx {
	struct cell *cell;
	double command_timeout_s;
	double deadline; /* sc_now() time of the episode's end */
	const char *cwd; /* where commands run (a prompt config's working_dir);
			  * NULL: /testbed */
};

struct tool_outcome {
	char *observation;  /* what the model reads (valid UTF-8) */
	bool is_error;      /* the call failed (bad arguments, editor error) */
	bool submitted;     /* submit was called */
	double exec_s;
	int exit_code;      /* execute_bash: the command's status, else 0 */
	bool timed_out;
	bool cell_failed;   /* the cell itself failed: the episode should end */
};

/* Run one tool call. Tool errors come back as observations; returns -1 only
 * when out of memory. */
int agent_tool_run(struct tool_ctx *t, const struct llm_tool_call *call, struct tool_outcome *out);
void agent_tool_outcome_free(struct tool_outcome *o);

/* Format an execute_bash observation (exposed for tests). */
char *agent_tool_bash_observation(const struct cell_result *res, double timeout_s);

/* The reply when an assistant message has no tool call. */
extern const char AGENT_TOOL_NO_CALL_REMINDER[];
