/* Loading a policy for a cell start without parsing its seccomp part: the
 * top-level "seccomp" member is cut out of the text by a small scanner,
 * the rest is parsed as usual, and the seccomp text is kept. It is parsed
 * and compiled only when the filter cache has no program for exactly that
 * text (a cache entry exists only for text that compiled, so a hit stands
 * for a validated policy). Anything the scanner is unsure of falls back to
 * the full parse, which then reports errors with the right positions. */
#include <string.h>

#include "json_in.h"
#include "policy_priv.h"

struct span {
	size_t start, end; /* [start, end) */
};

static size_t skip_ws(const char *s, size_t i, size_t n)
{
	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
		i++;
	return i;
}

/* Past a string starting at s[i] == '"'; 0 on a malformed one. */
static size_t skip_string(const char *s, size_t i, size_t n)
{
	for (i++; i < n; i++) {
		if (s[i] == '\\')
			i++;
		else if (s[i] == '"')
			return i + 1;
	}
	return 0;
}

/* Past one JSON value; 0 when unsure. */
static size_t skip_value(const char *s, size_t i, size_t n)
{
	if (i >= n)
		return 0;
	if (s[i] == '"')
		return skip_string(s, i, n);
	if (s[i] == '{' || s[i] == '[') {
		int depth = 0;
		for (; i < n; i++) {
			char ch = s[i];
			if (ch == '"') {
				size_t e = skip_string(s, i, n);
				if (!e)
					return 0;
				i = e - 1;
			} else if (ch == '{' || ch == '[') {
				if (++depth > 512)
					return 0;
			} else if (ch == '}' || ch == ']') {
				if (--depth == 0)
					return i + 1;
			}
		}
		return 0;
	}
	while (i < n && s[i] != ',' && s[i] != '}' && s[i] != ' ' && s[i] != '\n' &&
	       s[i] != '\t' && s[i] != '\r')
		i++;
	return i;
}

/* Find the top-level "seccomp" member: the cut that removes it (with one
 * comma) and its value. Returns 1 found, 0 absent, -1 unsure. */
static int find_seccomp(const char *s, size_t n, struct span *cut, struct span *value)
{
	size_t i = skip_ws(s, 0, n);
	if (i >= n || s[i] != '{')
		return -1;
	i = skip_ws(s, i + 1, n);
	if (i < n && s[i] == '}')
		return 0;
	size_t prev_end = 0; /* end of the previous member's value, 0: none */
	int found = 0;
	while (i < n) {
		if (s[i] != '"')
			return -1;
		size_t key_start = i, key_end = skip_string(s, i, n);
		if (!key_end)
			return -1;
		i = skip_ws(s, key_end, n);
		if (i >= n || s[i] != ':')
			return -1;
		size_t vstart = skip_ws(s, i + 1, n), vend = skip_value(s, vstart, n);
		if (!vend)
			return -1;
		i = skip_ws(s, vend, n);
		bool more = i < n && s[i] == ',';
		if (key_end - key_start == 9 && !memcmp(s + key_start, "\"seccomp\"", 9)) {
			if (found)
				return -1; /* a duplicate: the full parse says so */
			found = 1;
			*value = (struct span){vstart, vend};
			if (prev_end)
				*cut = (struct span){prev_end, vend};
			else
				*cut = (struct span){key_start, more ? skip_ws(s, i + 1, n) : vend};
		}
		prev_end = vend;
		if (!more)
			break;
		i = skip_ws(s, i + 1, n);
	}
	if (i >= n || s[i] != '}')
		return -1;
	return found;
}

/* Keep the seccomp value (the cache key) and the document it is part of
 * (parsed in full on a cache miss, so errors point into the real text). */
static int keep_seccomp_text(struct policy *p, const char *doc, size_t doc_len, struct span value,
			     struct sc_err *err)
{
	size_t len = value.end - value.start;
	if (len == 4 && !memcmp(doc + value.start, "null", 4))
		return 0; /* explicitly no filter */
	p->seccomp_text = strndup(doc + value.start, len);
	p->seccomp_doc = strndup(doc, doc_len);
	if (!p->seccomp_text || !p->seccomp_doc)
		return sc_fail(err, ENOMEM, "policy");
	p->seccomp_pending = true;
	return 0;
}

/* The default profile's seccomp text, for documents without one. */
static int default_seccomp_text(struct policy *p, struct sc_err *err)
{
	const char *json = policy_builtin_json("default");
	struct span cut, value;
	if (find_seccomp(json, strlen(json), &cut, &value) != 1)
		return sc_fail(err, 0, "built-in default profile: no seccomp member");
	return keep_seccomp_text(p, json, strlen(json), value, err);
}

static int parse_deferred(const char *json, size_t len, const char *origin, struct policy *out,
			  struct sc_err *err)
{
	struct span cut = {0}, value = {0};
	int found = find_seccomp(json, len, &cut, &value);
	if (found < 0)
		return policy_parse(json, len, origin, out, err);
	char *head = malloc(len + 1);
	if (!head)
		return sc_fail(err, ENOMEM, "%s", origin);
	size_t hlen = 0;
	if (found) {
		memcpy(head, json, cut.start);
		memcpy(head + cut.start, json + cut.end, len - cut.end);
		hlen = len - (cut.end - cut.start);
	} else {
		memcpy(head, json, len);
		hlen = len;
	}
	int rc = policy_parse_text(head, hlen, origin, false, out, err);
	free(head);
	if (rc < 0) /* report with positions in the original text */
		return policy_parse(json, len, origin, out, err);
	if (out->seccomp) /* the scanner missed an escaped key: parsed already */
		return 0;
	rc = found ? keep_seccomp_text(out, json, len, value, err) : default_seccomp_text(out, err);
	if (rc < 0)
		policy_free(out);
	return rc;
}

int policy_load_deferred(const char *name_or_file, struct policy *out, struct sc_err *err)
{
	return policy_load_with(name_or_file, parse_deferred, out, err);
}

int policy_resolve_seccomp(struct policy *p, struct sc_err *err)
{
	if (!p->seccomp_pending)
		return 0;
	struct policy q;
	if (policy_parse(p->seccomp_doc, strlen(p->seccomp_doc), p->name ? p->name : "policy", &q,
			 err) < 0)
		return -1;
	p->seccomp = steal_ptr(&q.seccomp);
	policy_free(&q);
	free(p->seccomp_text);
	free(p->seccomp_doc);
	p->seccomp_text = p->seccomp_doc = NULL;
	p->seccomp_pending = false;
	return 0;
}
