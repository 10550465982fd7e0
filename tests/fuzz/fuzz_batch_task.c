/* libFuzzer target for batch task files: one line of a TASKS.jsonl.
 * Kept to one call into the parser so it follows the parser when it moves
 * (agent/batch_task.c today). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "batch/batch_priv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct batch_task t;
	char why[256] = "";
	memset(&t, 0, sizeof(t));
	if (batch_task_parse((const char *)data, size, "/nonexistent/tasks", &t, why, sizeof(why)) == 0)
		batch_task_free(&t);
	else if (!why[0] || strlen(why) >= sizeof(why))
		abort();
	return 0;
}
