#include "parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int sc_parse_size(const char *s, uint64_t *out)
{
	if (!s || !*s || strlen(s) > 32)
		return -1;
	char *end;
	errno = 0;
	if (!isdigit((unsigned char)s[0]))
		return -1;
	/* decimal digits and one '.', nothing strtod would also take (0x10,
	 * 1e3, inf) */
	size_t digits = strspn(s, "0123456789.");
	if (memchr(s, '.', digits) != memrchr(s, '.', digits))
		return -1;
	double v = strtod(s, &end);
	if (end != s + digits)
		return -1;
	if (errno || end == s || !isfinite(v) || v < 0)
		return -1;
	double mul = 1;
	switch (toupper((unsigned char)*end)) {
	case '\0': break;
	case 'B': break;
	case 'K': mul = 1024.0; break;
	case 'M': mul = 1024.0 * 1024; break;
	case 'G': mul = 1024.0 * 1024 * 1024; break;
	case 'T': mul = 1024.0 * 1024 * 1024 * 1024; break;
	default: return -1;
	}
	if (*end) {
		end++;
		if (toupper((unsigned char)*end) == 'I')
			end++;
		if (toupper((unsigned char)*end) == 'B')
			end++;
	}
	if (*end)
		return -1;
	double bytes = v * mul;
	if (bytes > 9.0e18)
		return -1;
	*out = (uint64_t)bytes;
	return 0;
}

int sc_parse_seconds(const char *s, double *out)
{
	if (!s || !*s || strlen(s) > 32 || !(isdigit((unsigned char)s[0]) || s[0] == '.'))
		return -1;
	/* decimal digits and one '.' only: no hex (0x10), exponent or inf */
	size_t n = strspn(s, "0123456789.");
	if (s[n] || memchr(s, '.', n) != memrchr(s, '.', n))
		return -1;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v <= 0 || v > SC_MAX_SECONDS)
		return -1;
	*out = v;
	return 0;
}

int sc_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	if (!s || !isdigit((unsigned char)s[0]) || strlen(s) > 20)
		return -1;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int sc_parse_cpus(const char *s, double *out)
{
	double v;
	if (sc_parse_seconds(s, &v) < 0 || v < 0.01 || v > 4096)
		return -1;
	*out = v;
	return 0;
}

int sc_parse_subid(const char *text, const char *who, uint32_t *start,
		   uint32_t *count)
{
	size_t wl = strlen(who);
	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		if (len > wl && strncmp(line, who, wl) == 0 && line[wl] == ':') {
			char buf[64];
			size_t rest = len - wl - 1;
			if (rest < sizeof(buf)) {
				memcpy(buf, line + wl + 1, rest);
				buf[rest] = '\0';
				char *colon = strchr(buf, ':');
				uint64_t s, c;
				if (colon) {
					*colon = '\0';
					if (sc_parse_uint(buf, 1, UINT32_MAX, &s) == 0 &&
					    sc_parse_uint(colon + 1, 1, UINT32_MAX, &c) == 0 &&
					    s + c <= UINT32_MAX) {
						*start = (uint32_t)s;
						*count = (uint32_t)c;
						return 0;
					}
				}
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	return -1;
}

size_t sc_utf8_len(const unsigned char *s, size_t len)
{
	if (len == 0)
		return 0;
	unsigned char ch = s[0];
	if (ch < 0x80)
		return 1;
	size_t n;
	uint32_t cp;
	if (ch >= 0xc2 && ch <= 0xdf) {
		n = 2;
		cp = ch & 0x1f;
	} else if (ch >= 0xe0 && ch <= 0xef) {
		n = 3;
		cp = ch & 0x0f;
	} else if (ch >= 0xf0 && ch <= 0xf4) {
		n = 4;
		cp = ch & 0x07;
	} else {
		return 0;
	}
	if (len < n)
		return 0;
	for (size_t k = 1; k < n; k++) {
		if ((s[k] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[k] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

bool sc_valid_name(const char *s)
{
	if (!s || !isalnum((unsigned char)s[0]))
		return false;
	size_t n = 0;
	for (; s[n]; n++) {
		unsigned char c = (unsigned char)s[n];
		if (!(isalnum(c) || c == '_' || c == '.' || c == '-'))
			return false;
		if (n >= 63)
			return false;
	}
	return true;
}

bool sc_valid_env(const char *s)
{
	if (!s || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	const char *eq = strchr(s, '=');
	if (!eq)
		return false;
	for (const char *p = s; p < eq; p++)
		if (!(isalnum((unsigned char)*p) || *p == '_'))
			return false;
	return strlen(s) < 32768;
}

int sc_parse_bind(char *buf, struct sc_bind_arg *out)
{
	char *first = strchr(buf, ':');
	if (!first || first == buf)
		return -1;
	*first = '\0';
	out->host = buf;
	out->cell = first + 1;
	out->readonly = false;
	char *second = strchr(out->cell, ':');
	if (second) {
		*second = '\0';
		if (strcmp(second + 1, "ro") == 0)
			out->readonly = true;
		else if (strcmp(second + 1, "rw") != 0)
			return -1;
	}
	if (out->cell[0] != '/')
		return -1;
	/* a source that is not a path names a volume, as Docker's -v does */
	out->volume = out->host[0] != '/';
	if (out->volume && !sc_valid_name(out->host))
		return -1;
	return 0;
}
