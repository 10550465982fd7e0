/* net/rules.c: allow entries and the hosts map. */
#include <string.h>

#include "net.h"

void net_rules_init(struct net_rules *r) { memset(r, 0, sizeof(*r)); }

int net_rules_allow(struct net_rules *r, const char *entry, struct sc_err *err)
{
	const char *why = NULL;
	struct sc_net_allow a;
	if (sc_net_allow_parse(entry, &a, &why) < 0)
		return sc_fail(err, 0, "'%.64s': %s", entry, why);
	for (size_t i = 0; i < r->nallow; i++)
		if (r->allow[i].suffix == a.suffix && r->allow[i].port == a.port &&
		    strcmp(r->allow[i].name, a.name) == 0)
			return 0;
	if (r->nallow >= NET_ALLOW_MAX)
		return sc_fail(err, 0, "more than %d allow entries", NET_ALLOW_MAX);
	r->allow[r->nallow++] = a;
	return 0;
}

int net_rules_host(struct net_rules *r, const char *name, const char *addr,
		   struct sc_err *err)
{
	const char *why = NULL;
	struct net_host h = {0};
	size_t len = strnlen(name, NET_NAME_MAX + 2);
	if (sc_net_name_norm(name, len, h.name, &why) < 0)
		return sc_fail(err, 0, "'%.64s': %s", name, why);
	if (sc_net_addr_parse(addr, &h.family, h.addr, &why) < 0)
		return sc_fail(err, 0, "'%.64s': %s", addr, why);
	for (size_t i = 0; i < r->nhosts; i++)
		if (strcmp(r->hosts[i].name, h.name) == 0) {
			r->hosts[i] = h;
			return 0;
		}
	if (r->nhosts >= NET_HOSTS_MAX)
		return sc_fail(err, 0, "more than %d hosts entries", NET_HOSTS_MAX);
	r->hosts[r->nhosts++] = h;
	return 0;
}

int net_rules_host_arg(struct net_rules *r, const char *arg, struct sc_err *err)
{
	const char *eq = strchr(arg, '=');
	if (!eq || eq == arg || !eq[1])
		return sc_fail(err, 0, "'%.64s': expected NAME=ADDR", arg);
	char name[NET_NAME_MAX + 2];
	size_t n = (size_t)(eq - arg);
	if (n >= sizeof(name))
		return sc_fail(err, 0, "'%.64s': host name longer than 253 bytes", arg);
	memcpy(name, arg, n);
	name[n] = '\0';
	return net_rules_host(r, name, eq + 1, err);
}

bool net_rules_allows(const struct net_rules *r, const char *name, uint16_t port)
{
	for (size_t i = 0; i < r->nallow; i++)
		if (sc_net_allow_match(&r->allow[i], name, port))
			return true;
	return false;
}

const struct net_host *net_rules_find_host(const struct net_rules *r, const char *name)
{
	for (size_t i = 0; i < r->nhosts; i++)
		if (strcmp(r->hosts[i].name, name) == 0)
			return &r->hosts[i];
	return NULL;
}
