/* Host names and allow entries (common/netname.h). */
#include "netname.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

static int fail_why(const char **why, const char *msg)
{
	if (why)
		*why = msg;
	return -1;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

int sc_net_name_norm(const char *s, size_t len, char out[SC_NET_NAME_MAX + 1],
		     const char **why)
{
	if (len > 0 && s[len - 1] == '.')
		len--;
	if (len == 0)
		return fail_why(why, "empty host name");
	if (len > SC_NET_NAME_MAX)
		return fail_why(why, "host name longer than 253 bytes");
	size_t label = 0;
	bool last_all_digits = true;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (c == ':' || c == '[' || c == ']')
			return fail_why(why, "IP literals are not allowed (name the host, or map it in hosts)");
		if (c == '.') {
			if (label == 0)
				return fail_why(why, "empty label in host name");
			if (out[i - 1] == '-')
				return fail_why(why, "a label of the host name ends with '-'");
			label = 0;
			last_all_digits = true;
			out[i] = '.';
			continue;
		}
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (!((c >= 'a' && c <= 'z') || is_digit(c) || c == '-' || c == '_'))
			return fail_why(why, "host names have only letters, digits, '-', '_' and '.'");
		if (label == 0 && c == '-')
			return fail_why(why, "a label of the host name begins with '-'");
		if (++label > 63)
			return fail_why(why, "a label of the host name is longer than 63 bytes");
		if (!is_digit(c))
			last_all_digits = false;
		out[i] = c;
	}
	if (out[len - 1] == '-')
		return fail_why(why, "a label of the host name ends with '-'");
	out[len] = '\0';
	struct in_addr a;
	if (last_all_digits || inet_aton(out, &a))
		return fail_why(why, "IP literals are not allowed (name the host, or map it in hosts)");
	return 0;
}

int sc_net_allow_parse(const char *s, struct sc_net_allow *out, const char **why)
{
	memset(out, 0, sizeof(*out));
	size_t len = strnlen(s, SC_NET_NAME_MAX + 16);
	if (len > SC_NET_NAME_MAX + 8)
		return fail_why(why, "entry longer than 261 bytes");
	if (len == 0)
		return fail_why(why, "empty entry");
	const char *name = s;
	if (s[0] == '*') {
		if (len == 1 || (len >= 2 && s[1] == ':'))
			return fail_why(why, "'*' alone is not allowed");
		if (s[1] != '.')
			return fail_why(why, "a wildcard is only allowed as a leading '*.'");
		if (len == 2 || s[2] == ':')
			return fail_why(why, "'*.' needs a suffix (e.g. '*.example.org')");
		out->suffix = true;
		name = s + 2;
	}
	if (memchr(name, '*', len - (size_t)(name - s)))
		return fail_why(why, "a wildcard is only allowed as a leading '*.'");
	if (name[0] == '[')
		return fail_why(why, "IP literals are not allowed (name the host, or map it in hosts)");
	const char *colon = strrchr(name, ':');
	size_t nlen = colon ? (size_t)(colon - name) : strlen(name);
	if (colon && memchr(name, ':', nlen))
		return fail_why(why, "IP literals are not allowed (name the host, or map it in hosts)");
	out->port = SC_NET_DEFAULT_PORT;
	if (colon) {
		const char *p = colon + 1;
		unsigned v = 0;
		if (!*p || strlen(p) > 5)
			return fail_why(why, "port must be 1..65535");
		for (; *p; p++) {
			if (!is_digit(*p))
				return fail_why(why, "port must be 1..65535");
			v = v * 10 + (unsigned)(*p - '0');
		}
		if (v == 0 || v > 65535)
			return fail_why(why, "port must be 1..65535");
		out->port = (uint16_t)v;
	}
	if (sc_net_name_norm(name, nlen, out->name, why) < 0)
		return -1;
	if (out->suffix && !strchr(out->name, '.'))
		return fail_why(why, "'*.' needs a suffix with a dot (e.g. '*.example.org'), not a top-level domain");
	return 0;
}

bool sc_net_allow_match(const struct sc_net_allow *a, const char *name, uint16_t port)
{
	if (a->port != port)
		return false;
	if (!a->suffix)
		return strcmp(a->name, name) == 0;
	size_t n = strlen(name), m = strlen(a->name);
	return n > m + 1 && name[n - m - 1] == '.' && strcmp(name + n - m, a->name) == 0;
}

int sc_net_addr_parse(const char *s, int *family, uint8_t addr[16], const char **why)
{
	if (strnlen(s, 64) >= 64)
		return fail_why(why, "address longer than 63 bytes");
	memset(addr, 0, 16);
	if (inet_pton(AF_INET, s, addr) == 1) {
		*family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, s, addr) == 1) {
		*family = AF_INET6;
		return 0;
	}
	return fail_why(why, "not an IPv4 or IPv6 address");
}
