#include "retry.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

bool agent_retry_status(long status)
{
	return status == 429 || status == 408 || (status >= 500 && status <= 599);
}

static double parse_delta(const char *v)
{
	char *end;
	if (!isdigit((unsigned char)*v))
		return -1;
	double d = strtod(v, &end);
	while (isspace((unsigned char)*end))
		end++;
	if (*end || !isfinite(d) || d < 0)
		return -1;
	return d;
}

double agent_retry_after_parse(const char *value, time_t now)
{
	if (!value)
		return -1;
	while (isspace((unsigned char)*value))
		value++;
	if (!*value || strlen(value) > 64)
		return -1;
	double d = parse_delta(value);
	if (d < 0) {
		struct tm tm = {0};
		const char *end = strptime(value, "%a, %d %b %Y %H:%M:%S GMT", &tm);
		if (!end || *end)
			return -1;
		time_t at = timegm(&tm);
		if (at == (time_t)-1)
			return -1;
		d = at > now ? (double)(at - now) : 0;
	}
	return d > RETRY_MAX_AFTER_S ? RETRY_MAX_AFTER_S : d;
}

double agent_retry_after_hint(const char *retry_after, const char *retry_after_ms, time_t now)
{
	double best = -1;
	if (retry_after_ms) {
		while (isspace((unsigned char)*retry_after_ms))
			retry_after_ms++;
		double ms = strlen(retry_after_ms) <= 64 ? parse_delta(retry_after_ms) : -1;
		if (ms >= 0)
			best = ms / 1000.0;
	}
	double s = retry_after && *retry_after ? agent_retry_after_parse(retry_after, now) : -1;
	if (s > best)
		best = s;
	return best > RETRY_MAX_AFTER_S ? RETRY_MAX_AFTER_S : best;
}

double agent_retry_backoff_s(unsigned attempt, unsigned base_ms, double jitter)
{
	if (attempt < 1)
		attempt = 1;
	double d = base_ms / 1000.0;
	for (unsigned i = 1; i < attempt && d < RETRY_MAX_BACKOFF_S; i++)
		d *= 2;
	if (d > RETRY_MAX_BACKOFF_S)
		d = RETRY_MAX_BACKOFF_S;
	if (jitter < 0)
		jitter = 0;
	if (jitter >= 1)
		jitter = 0.999999;
	return d * (0.5 + 0.5 * jitter);
}

double agent_retry_delay_s(unsigned attempt, unsigned base_ms, double retry_after, double jitter)
{
	if (retry_after >= 0)
		return retry_after;
	return agent_retry_backoff_s(attempt, base_ms, jitter);
}
