/* libFuzzer target for the scorers' extractors (agent/batch_score.c today):
 * the input is "answer\0expected"; every pure scorer and extractor runs on
 * it and must return a score in [0, 1]. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/batch.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_cstr(data, size);
	const char *answer = s;
	size_t alen = strlen(s);
	const char *expected = alen < size ? s + alen + 1 : "";
	double d;
	bool letters[26];
	(void)score_parse_number(answer, &d);
	(void)score_last_number(answer, &d);
	if (score_choice_letters(answer, letters) > 26)
		abort();
	free(score_boxed_extract(answer));
	free(score_math_normalize(answer));
	double v[] = {score_exact(answer, expected), score_numeric(answer, expected, 1e-6),
		      score_choice(answer, expected), score_boxed(answer, expected),
		      score_contains(answer, expected), score_from_checker(0, answer, alen)};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (isnan(v[i]) || v[i] < 0 || v[i] > 1)
			abort();
	free(s);
	return 0;
}
