/* The cell's network: a fresh net namespace with only `lo`, brought up. */
#include <net/if.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>

#include "internal.h"

int rt_net_loopback_up(struct sc_err *err)
{
	struct nl_sock *sk = nl_socket_alloc();
	if (!sk)
		return sc_fail(err, ENOMEM, "netlink socket");
	int rc = nl_connect(sk, NETLINK_ROUTE);
	if (rc < 0) {
		nl_socket_free(sk);
		return sc_fail(err, 0, "netlink connect: %s", nl_geterror(rc));
	}
	struct rtnl_link *orig = rtnl_link_alloc();
	struct rtnl_link *change = rtnl_link_alloc();
	if (!orig || !change) {
		rc = -NLE_NOMEM;
	} else {
		/* lo is always ifindex 1 in a new network namespace. */
		rtnl_link_set_ifindex(orig, 1);
		rtnl_link_set_flags(change, IFF_UP);
		rc = rtnl_link_change(sk, orig, change, 0);
	}
	rtnl_link_put(orig);
	rtnl_link_put(change);
	nl_socket_free(sk);
	if (rc < 0)
		return sc_fail(err, 0, "cannot bring lo up: %s", nl_geterror(rc));
	return 0;
}
