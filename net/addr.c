/* net/addr.c: which addresses are public. Everything not globally routable
 * unicast is refused unless the policy maps the name to it (IANA special-
 * purpose registries for IPv4 and IPv6). */
#include <netinet/in.h>
#include <string.h>

#include "net.h"

struct v4_range {
	uint32_t net;
	unsigned bits;
	const char *what;
};

static const struct v4_range v4_ranges[] = {
	{0x00000000, 8, "this network"},
	{0x0a000000, 8, "private"},
	{0x64400000, 10, "shared (CGNAT)"},
	{0x7f000000, 8, "loopback"},
	{0xa9fe0000, 16, "link-local"},
	{0xac100000, 12, "private"},
	{0xc0000000, 24, "IETF"},
	{0xc0000200, 24, "documentation"},
	{0xc0586300, 24, "6to4 relay"},
	{0xc0a80000, 16, "private"},
	{0xc6120000, 15, "benchmarking"},
	{0xc6336400, 24, "documentation"},
	{0xcb007100, 24, "documentation"},
	{0xe0000000, 4, "multicast"},
	{0xffffffff, 32, "broadcast"},
	{0xf0000000, 4, "reserved"},
};

static const char *v4_class(const uint8_t *a)
{
	uint32_t v = ((uint32_t)a[0] << 24) | ((uint32_t)a[1] << 16) |
		     ((uint32_t)a[2] << 8) | a[3];
	for (size_t i = 0; i < SC_ARRAY_LEN(v4_ranges); i++) {
		uint32_t mask = v4_ranges[i].bits ? ~0u << (32 - v4_ranges[i].bits) : 0;
		if ((v & mask) == v4_ranges[i].net)
			return v4_ranges[i].what;
	}
	return NULL;
}

static const char *v4_mapped_class(const char *c)
{
	/* The embedded address decides; say it was embedded. */
	if (!c)
		return NULL;
	if (!strcmp(c, "loopback"))
		return "v4-mapped loopback";
	if (!strcmp(c, "private"))
		return "v4-mapped private";
	return "v4-mapped non-public";
}

static const char *v6_class(const uint8_t *a)
{
	static const uint8_t zero[16];
	if (!memcmp(a, zero, 15))
		return a[15] == 1 ? "loopback" : a[15] == 0 ? "unspecified" : "reserved";
	/* ::ffff:a.b.c.d and the deprecated ::a.b.c.d */
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	if (!memcmp(a, mapped, 12))
		return v4_mapped_class(v4_class(a + 12)) ? v4_mapped_class(v4_class(a + 12))
							 : "v4-mapped";
	if (!memcmp(a, zero, 12))
		return "v4-compatible";
	/* NAT64's well-known prefix 64:ff9b::/96 (an IPv6-only host reaches
	 * IPv4 sites through it): the embedded IPv4 address decides. The
	 * local-use 64:ff9b:1::/48 could reach anything. */
	if (a[0] == 0x00 && a[1] == 0x64 && a[2] == 0xff && a[3] == 0x9b) {
		if (memcmp(a + 4, zero, 8) != 0)
			return "NAT64 local-use";
		return v4_class(a + 12) ? "NAT64 of a non-public IPv4 address" : NULL;
	}
	if (a[0] == 0x01 && a[1] == 0x00 && !memcmp(a + 2, zero, 6))
		return "discard";
	if (a[0] == 0x20 && a[1] == 0x01) {
		if (a[2] == 0x00 && a[3] == 0x00)
			return "Teredo";
		if (a[2] == 0x0d && a[3] == 0xb8)
			return "documentation";
		if (a[2] < 0x02) /* 2001::/23, ORCHID included */
			return "IETF";
	}
	if (a[0] == 0x20 && a[1] == 0x02)
		return "6to4";
	if (a[0] == 0x3f && a[1] == 0xff && (a[2] & 0xf0) == 0x00)
		return "documentation";
	if ((a[0] & 0xfe) == 0xfc)
		return "unique-local";
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
		return "link-local";
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0xc0)
		return "site-local";
	if (a[0] == 0xff)
		return "multicast";
	/* Only 2000::/3 is global unicast today. */
	if ((a[0] & 0xe0) != 0x20)
		return "reserved";
	return NULL;
}

const char *net_addr_class_raw(int family, const uint8_t *addr)
{
	if (family == AF_INET)
		return v4_class(addr);
	if (family == AF_INET6)
		return v6_class(addr);
	return "unknown family";
}

const char *net_addr_class(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return v4_class((const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr);
	if (sa->sa_family == AF_INET6)
		return v6_class((const uint8_t *)&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return "unknown family";
}
