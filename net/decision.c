/* net/decision.c: one JSON line per decision, and the run summary; a
 * bounded encoder (no allocation, nothing to fail but room). */
#include <stdarg.h>
#include <string.h>

#include "net.h"

struct out {
	char *buf;
	size_t size, len;
	bool full;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->full || o->len + n >= o->size) {
		o->full = true;
		return;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
	o->buf[o->len] = '\0';
}

static void putf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct out *o, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(tmp)) {
		o->full = true;
		return;
	}
	put(o, tmp, (size_t)n);
}

#define STR_MAX 256 /* input bytes of a string in a decision line */

/* A JSON string of at most STR_MAX input bytes; bytes >= 0x80 are escaped
 * one by one (\u00XX) so that any input gives valid JSON. */
static void put_str(struct out *o, const char *s)
{
	if (!s) {
		put(o, "null", 4);
		return;
	}
	put(o, "\"", 1);
	for (size_t i = 0; s[i] && i < STR_MAX; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\') {
			char e[2] = {'\\', (char)c};
			put(o, e, 2);
		} else if (c < 0x20 || c >= 0x7f) {
			putf(o, "\\u%04x", c);
		} else {
			put(o, (const char *)&c, 1);
		}
	}
	put(o, "\"", 1);
}

static const char *const VERDICTS[] = {
	[NET_ALLOW] = "allow", [NET_DENY] = "deny", [NET_ERROR] = "error", [NET_CLOSE] = "close"};

static const char *verdict_name(enum net_verdict v)
{
	return v >= NET_ALLOW && v <= NET_CLOSE ? VERDICTS[v] : "error";
}

enum net_verdict net_verdict_of(const char *name)
{
	for (int v = NET_ALLOW; name && v <= NET_CLOSE; v++)
		if (!strcmp(name, VERDICTS[v]))
			return (enum net_verdict)v;
	return 0;
}

void net_summary_add(struct net_summary *s, enum net_verdict v, const char *host,
		     const char *reason)
{
	if (v == NET_ALLOW) {
		s->allowed++;
	} else if (v == NET_DENY || v == NET_ERROR) {
		s->denied++;
		if (s->ndenied < NET_DENIED_MAX) {
			snprintf(s->denied_list[s->ndenied].host, sizeof(s->denied_list[0].host),
				 "%s", host ? host : "");
			snprintf(s->denied_list[s->ndenied].reason,
				 sizeof(s->denied_list[0].reason), "%s", reason ? reason : "");
			s->ndenied++;
		}
	}
}

int net_decision_json(const struct net_decision *d, char *buf, size_t size)
{
	struct out o = {buf, size, 0, size == 0};
	putf(&o, "{\"time\":%.3f,\"cell\":", d->time);
	put_str(&o, d->cell);
	put(&o, ",\"host\":", 8);
	put_str(&o, d->host ? d->host : "");
	putf(&o, ",\"port\":%u,\"verdict\":\"%s\",\"reason\":", (unsigned)d->port,
	     verdict_name(d->verdict));
	put_str(&o, d->reason ? d->reason : "");
	putf(&o, ",\"up\":%llu,", (unsigned long long)d->up);
	putf(&o, "\"down\":%llu}\n", (unsigned long long)d->down);
	return o.full ? -1 : (int)o.len;
}

int net_summary_json(const struct net_summary *s, char *buf, size_t size)
{
	struct out o = {buf, size, 0, size == 0};
	putf(&o, "{\"allowed\":%llu,\"denied\":[", (unsigned long long)s->allowed);
	for (size_t i = 0; i < s->ndenied && i < NET_DENIED_MAX; i++) {
		put(&o, i ? ",{\"host\":" : "{\"host\":", i ? 9 : 8);
		put_str(&o, s->denied_list[i].host);
		put(&o, ",\"reason\":", 10);
		put_str(&o, s->denied_list[i].reason);
		put(&o, "}", 1);
	}
	put(&o, "]}", 2);
	return o.full ? -1 : (int)o.len;
}
