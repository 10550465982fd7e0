/* When and how long to wait before trying a model request again. Pure. */
#pragma once
#include <stdbool.h>
#include <time.h>

#define RETRY_MAX_BACKOFF_S 60.0
#define RETRY_MAX_AFTER_S 600.0

/* 429, 408 and 5xx (incl. Anthropic's 529 "overloaded") are worth another
 * try; any other 4xx is the caller's mistake. */
bool agent_retry_status(long status);

/* A Retry-After value: delta-seconds ("120", "1.5") or an HTTP-date
 * ("Wed, 21 Oct 2015 07:28:00 GMT", compared with now). Returns seconds to
 * wait (0 for a date in the past, capped at RETRY_MAX_AFTER_S), or -1 when
 * the value is not understood. */
double agent_retry_after_parse(const char *value, time_t now);

/* The server's hint from both headers (either may be "" or NULL):
 * retry-after-ms (milliseconds, converted to seconds first) and
 * Retry-After; the larger when both are understood, capped at
 * RETRY_MAX_AFTER_S; -1 when neither is. */
double agent_retry_after_hint(const char *retry_after, const char *retry_after_ms, time_t now);

/* Exponential backoff with jitter before attempt `attempt` + 1 (attempt is
 * 1 after the first failure): base * 2^(attempt-1), capped at
 * RETRY_MAX_BACKOFF_S, scaled into [1/2, 1] of itself by jitter in [0, 1). */
double agent_retry_backoff_s(unsigned attempt, unsigned base_ms, double jitter);

/* The wait before the next attempt: the server's Retry-After when it gave
 * one (retry_after >= 0), else the backoff. */
double agent_retry_delay_s(unsigned attempt, unsigned base_ms, double retry_after, double jitter);
