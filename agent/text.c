#include "text.h"

#include <cjson/cJSON.h>

#include "../common/parse.h"
#include "../common/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s (1-4), or 0 when invalid; a
 * NUL counts as invalid here (it would cut the text where C sees it end). */
static size_t utf8_seq(const unsigned char *s, size_t len)
{
	return len && s[0] ? sc_utf8_len(s, len) : 0;
}

char *agent_text_sanitize(const char *s, size_t len, size_t *out_len)
{
	struct sc_sbuf b = {0};
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, run = 0;
	while (i < len) {
		size_t n = utf8_seq(u + i, len - i);
		if (n) {
			i += n;
			run += n;
			continue;
		}
		sc_sbuf_add(&b, s + i - run, run);
		sc_sbuf_add(&b, "\xEF\xBF\xBD", 3);
		run = 0;
		i++;
	}
	sc_sbuf_add(&b, s + i - run, run);
	if (out_len)
		*out_len = b.len;
	return sc_sbuf_take(&b);
}

char *agent_text_truncate_lines(const char *s, size_t len, size_t max_lines, size_t head,
			  size_t tail)
{
	size_t lines = 0;
	for (size_t i = 0; i < len; i++)
		if (s[i] == '\n')
			lines++;
	if (len && s[len - 1] != '\n')
		lines++;
	struct sc_sbuf b = {0};
	if (lines <= max_lines || head + tail >= lines) {
		sc_sbuf_add(&b, s, len);
		return sc_sbuf_take(&b);
	}
	/* end of the head part: after the head-th newline */
	size_t head_end = 0, seen = 0;
	while (head_end < len && seen < head)
		if (s[head_end++] == '\n')
			seen++;
	/* start of the tail part: after the (lines - tail)-th newline */
	size_t tail_start = head_end;
	for (seen = head; tail_start < len && seen < lines - tail;)
		if (s[tail_start++] == '\n')
			seen++;
	sc_sbuf_add(&b, s, head_end);
	sc_sbuf_printf(&b, "[... %zu lines cut: showing the first %zu and the last %zu of %zu lines ...]\n",
		    lines - head - tail, head, tail, lines);
	sc_sbuf_add(&b, s + tail_start, len - tail_start);
	return sc_sbuf_take(&b);
}

size_t agent_text_utf8_prefix(const char *s, size_t len, size_t max)
{
	if (len <= max)
		return len;
	size_t n = max;
	/* back up over continuation bytes to the start of a sequence */
	while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
		n--;
	return n;
}

size_t agent_text_utf8_whole(const char *s, size_t len)
{
	return len - sc_utf8_unfinished((const unsigned char *)s, len);
}

/* Start of the shortest suffix of at most max bytes on a UTF-8 boundary. */
static size_t utf8_suffix_start(const char *s, size_t len, size_t max)
{
	if (len <= max)
		return 0;
	size_t i = len - max;
	while (i < len && ((unsigned char)s[i] & 0xC0) == 0x80)
		i++;
	return i;
}

char *agent_text_cap_middle(const char *s, size_t len, size_t max)
{
	struct sc_sbuf b = {0};
	if (len <= max) {
		sc_sbuf_add(&b, s, len);
		return sc_sbuf_take(&b);
	}
	size_t head = agent_text_utf8_prefix(s, len, max / 2);
	size_t tail = utf8_suffix_start(s, len, max - max / 2);
	sc_sbuf_add(&b, s, head);
	sc_sbuf_printf(&b, "\n[... %zu characters cut ...]\n", tail - head);
	sc_sbuf_add(&b, s + tail, len - tail);
	return sc_sbuf_take(&b);
}

size_t agent_text_redact(char *s, size_t len, const char *secret)
{
	size_t slen = secret ? strlen(secret) : 0, found = 0;
	if (slen < 8)
		return 0;
	char *p = s, *end = s + len;
	while ((p = memmem(p, (size_t)(end - p), secret, slen))) {
		memset(p, '*', slen);
		p += slen;
		found++;
	}
	return found;
}

/* s with invalid UTF-8 replaced and the secrets blanked out; NULL when s
 * needs neither (or on OOM). */
static char *scrubbed(const char *s, const char *const secrets[2])
{
	size_t len = strlen(s);
	bool has_secret = false;
	for (int k = 0; k < 2; k++)
		if (secrets[k] && strlen(secrets[k]) >= 8 && memmem(s, len, secrets[k], strlen(secrets[k])))
			has_secret = true;
	size_t i = 0;
	while (i < len) {
		size_t n = utf8_seq((const unsigned char *)s + i, len - i);
		if (!n)
			break;
		i += n;
	}
	if (i == len && !has_secret)
		return NULL;
	char *clean = agent_text_sanitize(s, len, &len);
	for (int k = 0; clean && k < 2; k++)
		agent_text_redact(clean, len, secrets[k]);
	return clean;
}

static void scrub_tree(cJSON *v, const char *const secrets[2])
{
	for (; v; v = v->next) {
		if (v->string && !(v->type & cJSON_StringIsConst)) {
			char *k = scrubbed(v->string, secrets);
			char *copy = k ? cJSON_malloc(strlen(k) + 1) : NULL;
			if (copy) {
				memcpy(copy, k, strlen(k) + 1);
				cJSON_free(v->string);
				v->string = copy;
			} else if (k) { /* no memory: blank it where it is */
				memset(v->string, '*', strlen(v->string));
			}
			free(k);
		}
		if (cJSON_IsString(v) && v->valuestring) {
			char *s = scrubbed(v->valuestring, secrets);
			if (s) {
				cJSON_SetValuestring(v, s);
				free(s);
			}
		}
		if (v->child)
			scrub_tree(v->child, secrets);
	}
}

void agent_json_scrub(cJSON *v, const char *secret)
{
	/* the secret itself and as JSON spells it inside a string, for text
	 * that is JSON in a string (tool call arguments) */
	char *quoted = NULL;
	if (secret && strlen(secret) >= 8) {
		cJSON *str = cJSON_CreateString(secret);
		quoted = str ? cJSON_PrintUnformatted(str) : NULL;
		cJSON_Delete(str);
		size_t n = quoted ? strlen(quoted) : 0;
		if (n >= 2) {
			memmove(quoted, quoted + 1, n - 2);
			quoted[n - 2] = '\0';
		}
	}
	const char *const secrets[2] = {secret, quoted && strcmp(quoted, secret) ? quoted : NULL};
	scrub_tree(v, secrets);
	free(quoted);
}

void agent_text_escape_controls(const char *s, size_t len, char *out, size_t outsize)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;
	if (!outsize)
		return;
	for (size_t i = 0; i < len && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];
		size_t n = 1;
		char esc[5];
		if (c == '\n' || c == '\r' || c == '\t') {
			esc[0] = ' ';
		} else if (c < 0x20 || c == 0x7f) {
			esc[0] = '\\', esc[1] = 'x', esc[2] = hex[c >> 4], esc[3] = hex[c & 15];
			n = 4;
		} else if (c == 0xC2 && i + 1 < len && (unsigned char)s[i + 1] >= 0x80 &&
			   (unsigned char)s[i + 1] < 0xA0) {
			/* a C1 control (U+0080..U+009F): CSI and friends */
			unsigned char d = (unsigned char)s[++i];
			esc[0] = '\\', esc[1] = 'x', esc[2] = hex[d >> 4], esc[3] = hex[d & 15];
			n = 4;
		} else {
			esc[0] = (char)c;
		}
		if (o + n >= outsize)
			break;
		memcpy(out + o, esc, n);
		o += n;
	}
	/* do not end inside a UTF-8 sequence */
	out[agent_text_utf8_whole(out, o)] = '\0';
}
