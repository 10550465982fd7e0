/* Pure parsers for values that come from users, policies and files. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* "512M", "1G", "4096", "1.5G", "64k": binary units (K=1024). 0 on success. */
int sc_parse_size(const char *s, uint64_t *out);
/* Seconds as a positive decimal ("30", "0.5"; digits and one '.' only),
 * at most one year (365 days). */
#define SC_MAX_SECONDS (365.0 * 86400)
int sc_parse_seconds(const char *s, double *out);
/* Unsigned integer in [min, max]. */
int sc_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* CPU count as a positive decimal ("0.5", "2"), at most 4096. */
int sc_parse_cpus(const char *s, double *out);

/* One id range from /etc/subuid-style lines "NAME:START:COUNT" for name
 * `who`; returns 0 and fills start/count when found, -1 otherwise. */
int sc_parse_subid(const char *text, const char *who, uint32_t *start,
		   uint32_t *count);

/* The length (1 to 4) of the well-formed UTF-8 sequence at s (len bytes
 * available), or 0: overlong forms, surrogates, code points above
 * U+10FFFF, stray and cut-off bytes are not well-formed. ASCII is 1. */
size_t sc_utf8_len(const unsigned char *s, size_t len);

/* A cell or image name: [A-Za-z0-9][A-Za-z0-9_.-]{0,63}. */
bool sc_valid_name(const char *s);

/* "KEY=VAL" with a valid env key: [A-Za-z_][A-Za-z0-9_]*. */
bool sc_valid_env(const char *s);

/* "HOST:CELL[:ro|:rw]" split into parts (pointers into buf, a copy).
 * HOST is an absolute path, or a volume name (sc_valid_name). */
struct sc_bind_arg {
	char *host;
	char *cell;
	bool readonly;
	bool volume; /* HOST is a volume name */
};
int sc_parse_bind(char *buf, struct sc_bind_arg *out);
