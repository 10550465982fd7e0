/* Reading typed JSON values out of a cJSON tree, with one-line errors that
 * name the JSON path and the expected form. */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "../common/parse.h"
#include "json_in.h"

int policy_json_perr(struct pj_ctx *c, const char *path, const char *fmt, ...)
{
	char msg[SC_ERR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (path && *path)
		return sc_fail(c->err, 0, "%s: %s: %s", c->origin, path, msg);
	return sc_fail(c->err, 0, "%s: %s", c->origin, msg);
}

/* A printable, bounded copy of untrusted text for an error message. */
void policy_json_quote(char *buf, size_t size, const char *s, size_t max)
{
	size_t o = 0, i = 0;
	if (size < 8)
		return;
	buf[o++] = '"';
	for (; s[i] && i < max && o + 6 < size; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == '"' || ch == '\\') {
			buf[o++] = '\\';
			buf[o++] = (char)ch;
		} else if (ch < 0x20 || ch == 0x7f) {
			o += (size_t)snprintf(buf + o, size - o, "\\x%02x", ch);
		} else {
			buf[o++] = (char)ch;
		}
	}
	if (s[i] && o + 5 < size) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o++] = '"';
	buf[o] = '\0';
}

/* "got ..." part of a message: what the document had instead. */
const char *policy_json_describe(const cJSON *it, char *buf, size_t size)
{
	if (!it)
		return "nothing";
	if (cJSON_IsString(it)) {
		policy_json_quote(buf, size, it->valuestring, 40);
		return buf;
	}
	if (cJSON_IsNumber(it)) {
		snprintf(buf, size, "%.15g", it->valuedouble);
		return buf;
	}
	if (cJSON_IsBool(it))
		return cJSON_IsTrue(it) ? "true" : "false";
	if (cJSON_IsNull(it))
		return "null";
	if (cJSON_IsArray(it))
		return "an array";
	if (cJSON_IsObject(it))
		return "an object";
	return "an invalid value";
}

int policy_json_expected(struct pj_ctx *c, const char *path, const char *what,
		    const cJSON *it)
{
	char got[64];
	if (!it)
		return policy_json_perr(c, path, "missing (expected %s)", what);
	return policy_json_perr(c, path, "expected %s, got %s", what, policy_json_describe(it, got, sizeof(got)));
}

/* snprintf for text that may be cut (paths and notes in messages). */
void policy_json_bprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, size, fmt, ap);
	va_end(ap);
}

/* "parent.key" or "parent[i]", truncated safely (paths are for messages). */
void policy_json_path_key(char *buf, size_t size, const char *parent, const char *key)
{
	char k[72];
	size_t o = 0;
	for (size_t i = 0; key[i] && i < 64 && o + 1 < sizeof(k); i++) {
		unsigned char ch = (unsigned char)key[i];
		k[o++] = (isalnum(ch) || ch == '_' || ch == '-') ? (char)ch : '?';
	}
	k[o] = '\0';
	policy_json_bprintf(buf, size, "%s%s%s", parent, *parent ? "." : "", k);
}

void policy_json_path_idx(char *buf, size_t size, const char *parent, size_t i)
{
	policy_json_bprintf(buf, size, "%s[%zu]", parent, i);
}

/* Every key of obj must be one of `keys`, at most once. */
int policy_json_check_keys(struct pj_ctx *c, const cJSON *obj, const char *path,
		      const char *const *keys, size_t nkeys)
{
	bool seen[32] = {false};
	char p[PJ_PATH_MAX];
	for (const cJSON *it = obj->child; it; it = it->next) {
		size_t k = 0;
		while (k < nkeys && strcmp(it->string, keys[k]))
			k++;
		policy_json_path_key(p, sizeof(p), path, it->string);
		if (k == nkeys) {
			char list[256] = "";
			size_t o = 0;
			for (size_t j = 0; j < nkeys && o < sizeof(list); j++)
				o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s",
						      j ? ", " : "", keys[j]);
			return policy_json_perr(c, p, "unknown key (expected one of: %s)", list);
		}
		if (seen[k])
			return policy_json_perr(c, p, "duplicate key");
		seen[k] = true;
	}
	return 0;
}

int policy_json_need_object(struct pj_ctx *c, const cJSON *it, const char *path)
{
	return cJSON_IsObject(it) ? 0 : policy_json_expected(c, path, "an object", it);
}

int policy_json_need_array(struct pj_ctx *c, const cJSON *it, const char *path, size_t max,
		      size_t *n)
{
	if (!cJSON_IsArray(it))
		return policy_json_expected(c, path, "an array", it);
	size_t count = 0;
	for (const cJSON *e = it->child; e; e = e->next)
		if (++count > max)
			return policy_json_perr(c, path, "too many entries (at most %zu)", max);
	*n = count;
	return 0;
}

int policy_json_get_string(struct pj_ctx *c, const cJSON *it, const char *path,
		      size_t maxlen, const char *what, char **out)
{
	if (!cJSON_IsString(it) || !it->valuestring)
		return policy_json_expected(c, path, what, it);
	size_t len = strlen(it->valuestring);
	if (len > maxlen)
		return policy_json_perr(c, path, "too long (at most %zu bytes)", maxlen);
	char *s = strdup(it->valuestring);
	if (!s)
		return sc_fail(c->err, ENOMEM, "%s: %s", c->origin, path);
	free(*out);
	*out = s;
	return 0;
}

int policy_json_get_bool(struct pj_ctx *c, const cJSON *it, const char *path, bool *out)
{
	if (!cJSON_IsBool(it))
		return policy_json_expected(c, path, "true or false", it);
	*out = cJSON_IsTrue(it);
	return 0;
}

/* A JSON number that is a whole number in [min, max] (max <= 2^53). */
bool policy_json_uint(const cJSON *it, uint64_t min, uint64_t max, uint64_t *out)
{
	if (!cJSON_IsNumber(it))
		return false;
	double d = it->valuedouble;
	if (!isfinite(d) || d < 0 || d != floor(d) || d >= 9007199254740992.0)
		return false;
	uint64_t v = (uint64_t)d;
	if (v < min || v > max)
		return false;
	*out = v;
	return true;
}

int policy_json_get_uint(struct pj_ctx *c, const cJSON *it, const char *path,
		    uint64_t min, uint64_t max, uint64_t *out)
{
	if (policy_json_uint(it, min, max, out))
		return 0;
	char what[96];
	snprintf(what, sizeof(what), "an integer from %" PRIu64 " to %" PRIu64, min, max);
	return policy_json_expected(c, path, what, it);
}

/* A size: "512M"-style string or a whole number of bytes, in [min, max]. */
int policy_json_get_size(struct pj_ctx *c, const cJSON *it, const char *path,
		    uint64_t min, uint64_t max, const char *range, uint64_t *out)
{
	uint64_t v;
	bool ok = false;
	if (cJSON_IsString(it))
		ok = sc_parse_size(it->valuestring, &v) == 0;
	else
		ok = policy_json_uint(it, 0, UINT64_MAX, &v);
	if (ok && v >= min && v <= max) {
		*out = v;
		return 0;
	}
	if (!ok)
		return policy_json_expected(c, path, "a size like \"512M\"", it);
	char what[128];
	snprintf(what, sizeof(what), "a size from %s", range);
	return policy_json_expected(c, path, what, it);
}

/* A decimal number (JSON number or string) checked by `parse`. */
int policy_json_get_decimal(struct pj_ctx *c, const cJSON *it, const char *path,
		       int (*parse)(const char *, double *), const char *what,
		       double *out)
{
	char buf[64];
	const char *s = NULL;
	if (cJSON_IsString(it)) {
		s = it->valuestring;
	} else if (cJSON_IsNumber(it) && isfinite(it->valuedouble) &&
		   it->valuedouble >= 0) {
		snprintf(buf, sizeof(buf), "%.17g", it->valuedouble);
		s = buf;
	}
	if (s && parse(s, out) == 0)
		return 0;
	return policy_json_expected(c, path, what, it);
}

/* A 64-bit value: a whole JSON number up to 2^53, or a string of decimal
 * digits or 0x-prefixed hex digits. */
int policy_json_get_u64(struct pj_ctx *c, const cJSON *it, const char *path, uint64_t *out)
{
	if (policy_json_uint(it, 0, UINT64_MAX, out))
		return 0;
	if (cJSON_IsString(it)) {
		const char *s = it->valuestring;
		int base = 10;
		if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
			base = 16;
			s += 2;
		}
		size_t n = strlen(s);
		bool ok = n > 0 && n <= (base == 16 ? 16 : 20);
		for (size_t i = 0; ok && i < n; i++)
			ok = base == 16 ? isxdigit((unsigned char)s[i]) : isdigit((unsigned char)s[i]);
		if (ok && base == 10 && n > 1 && s[0] == '0')
			ok = false;
		if (ok) {
			errno = 0;
			unsigned long long v = strtoull(s, NULL, base);
			if (errno == 0) {
				*out = v;
				return 0;
			}
		}
	}
	return policy_json_expected(c, path,
			"a 64-bit unsigned integer (a number up to 2^53, or a string "
			"like \"0xffffffff\")",
			it);
}

int policy_json_get_errno(struct pj_ctx *c, const cJSON *it, const char *path, int *out)
{
	uint64_t v;
	if (cJSON_IsString(it) && policy_errno_parse(it->valuestring, out) == 0)
		return 0;
	if (policy_json_uint(it, 1, POL_MAX_ERRNO, &v)) {
		*out = (int)v;
		return 0;
	}
	return policy_json_expected(c, path, "an errno name like \"EPERM\" or a number from 1 to 4095", it);
}

/* ---- paths ---- */

/* An absolute path without "." or ".." components, at most POL_MAX_PATH. */
bool policy_json_valid_abs_path(const char *s)
{
	if (s[0] != '/' || strlen(s) > POL_MAX_PATH)
		return false;
	const char *p = s;
	while (*p) {
		while (*p == '/')
			p++;
		const char *end = strchrnul(p, '/');
		size_t n = (size_t)(end - p);
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		p = end;
	}
	return true;
}

int policy_json_get_abs_path(struct pj_ctx *c, const cJSON *it, const char *path, char **out)
{
	if (!cJSON_IsString(it) || !policy_json_valid_abs_path(it->valuestring))
		return policy_json_expected(c, path,
				"an absolute path without \".\" or \"..\" components", it);
	return policy_json_get_string(c, it, path, POL_MAX_PATH, "a path", out);
}

bool policy_json_path_under(const char *p, const char *dir)
{
	size_t n = strlen(dir);
	while (p[0] == '/' && p[1] == '/')
		p++;
	return !strncmp(p, dir, n) && (p[n] == '\0' || p[n] == '/');
}

/* Same path, ignoring repeated and trailing slashes. */
bool policy_json_same_path(const char *a, const char *b)
{
	for (;;) {
		while (a[0] == '/' && (a[1] == '/' || a[1] == '\0'))
			a++;
		while (b[0] == '/' && (b[1] == '/' || b[1] == '\0'))
			b++;
		if (*a != *b)
			return false;
		if (!*a)
			return true;
		a++;
		b++;
	}
}
