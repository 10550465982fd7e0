/* Host names and egress allow entries: pure, bounded syntax shared by
 * policy/ (validation with errors naming the field) and net/ (the rules the
 * proxy applies). Nothing here resolves a name. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SC_NET_NAME_MAX 253 /* a DNS name without its trailing dot */
#define SC_NET_DEFAULT_PORT 443

/* One allow entry: "name", "name:port" or "*.suffix[:port]". */
struct sc_net_allow {
	char name[SC_NET_NAME_MAX + 1]; /* lower-case, no trailing dot; for a
					 * suffix entry, the part after "*." */
	bool suffix;                    /* matches names strictly below name */
	uint16_t port;
};

/* Normalise a host name of `len` bytes into out (lower case, one trailing
 * dot dropped). Refuses empty names, labels of more than 63 bytes, names of
 * more than 253, characters other than letters, digits, '-' and '_', labels
 * that begin or end with '-', and IP literals (dotted or numeric forms that
 * inet_aton would take, a last label of digits only, anything with ':' or
 * '['). On failure *why says what is wrong (a static string). */
int sc_net_name_norm(const char *s, size_t len, char out[SC_NET_NAME_MAX + 1],
		     const char **why);

/* Parse one allow entry; '*' alone and "*." without a suffix are refused,
 * ports are 1..65535 in decimal, the default port is 443. */
int sc_net_allow_parse(const char *s, struct sc_net_allow *out, const char **why);

/* Does the entry allow (normalised name, port)? */
bool sc_net_allow_match(const struct sc_net_allow *a, const char *name, uint16_t port);

/* A trusted address for a `hosts` entry: an IPv4 or IPv6 literal.
 * family is AF_INET or AF_INET6; addr holds 4 or 16 bytes. */
int sc_net_addr_parse(const char *s, int *family, uint8_t addr[16], const char **why);
