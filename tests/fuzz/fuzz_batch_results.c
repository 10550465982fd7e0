/* libFuzzer target for batch results files: one line of results.jsonl.
 * Kept to one call into the parser so it follows the parser when it moves
 * (agent/batch_results.c today). */
#include <stdint.h>
#include <string.h>

#include "batch/batch_priv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct batch_record r;
	memset(&r, 0, sizeof(r));
	if (batch_record_parse((const char *)data, size, &r) == 0)
		batch_record_free(&r);
	return 0;
}
