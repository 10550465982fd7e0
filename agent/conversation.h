/* conversation.json: the episode's conversation exactly as the model last
 * saw it, in the wire format of its API ({"api", "system", "tools",
 * "messages"}), for `sandcell batch export` (fine-tuning and RL data). */
#pragma once
#include "../common/sc.h"
#include "llm.h"

/* Written atomically (temp file + rename) with the secret blanked out.
 * Failures are ignored: the trajectory and events stay the record. */
void agent_conversation_write(const char *dir, const struct llm *m, const char *secret);
