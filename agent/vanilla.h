/* The vanilla baseline's pieces (agent_run_vanilla, agent.h): the same
 * model without tools or a cell, the problem's documents inlined in the
 * prompt, one reply that is the answer. */
#pragma once
#include "../common/sc.h"
#include "agent.h"

#define VANILLA_MAX_DOCS (1U << 20) /* bytes of documents inlined */
#define VANILLA_MAX_FILES 1000
#define VANILLA_MAX_DEPTH 16

extern const char AGENT_VANILLA_SYSTEM_PROMPT[];

/* The user message: <problem>...</problem>, then each regular file under
 * input_dir (when not NULL; sorted by path, symlinks not followed) as
 * <document path="REL">...</document>. Binary files and files past the
 * size budget are named with a note instead of their text. NULL with err on
 * failure. */
char *agent_vanilla_prompt(const char *problem, const char *input_dir, struct sc_err *err);

/* Keep the reply's text as the answer: res->answer and DIR/answer.txt. */
void agent_vanilla_answer(struct agent_result *res, const char *dir, const char *content,
			  const char *secret);
