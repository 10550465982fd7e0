/* libFuzzer target for the scorers' extractors (agent/batch_score.c today):
 * the input is "answer\0expected"; every pure scorer and extractor runs on
 * it and must return a score in [0, 1]. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "batch/batch_priv.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_cstr(data, size);
	const char *answer = s;
	size_t alen = strlen(s);
	const char *expected = alen < size ? s + alen + 1 : "";
	double d;
	bool letters[26];
	(void)batch_score_parse_number(answer, &d);
	(void)batch_score_last_number(answer, &d);
	if (batch_score_choice_letters(answer, letters) > 26)
		abort();
	free(batch_score_boxed_extract(answer));
	free(batch_score_math_normalize(answer));
	double v[] = {batch_score_exact(answer, expected), batch_score_numeric(answer, expected, 1e-6),
		      batch_score_choice(answer, expected), batch_score_boxed(answer, expected),
		      batch_score_contains(answer, expected), batch_score_from_checker(0, answer, alen)};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (isnan(v[i]) || v[i] < 0 || v[i] > 1)
			abort();
	free(s);
	return 0;
}
