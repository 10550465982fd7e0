/* Landlock: the cell's second wall, which needs no privilege. The cell's
 * init restricts itself after pivot_root, so that every process of the
 * cell (commands, sessions, copy and file workers) inherits the domain:
 * file access only beneath the cell's own root, device ioctls and
 * truncation likewise, abstract unix sockets and signals scoped to the
 * cell, and TCP connect by policy. Applied by ABI: the best the kernel
 * offers, none where it has no Landlock. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "../common/sc.h"
#include "../policy/policy.h"

/* The kernel's Landlock ABI version; 0 where it has none (older than
 * 5.13, or Landlock not among the active LSMs). Thread-safe. */
int rt_landlock_abi(void);

/* What a domain handles: the rights it refuses unless a rule allows
 * them. */
struct rt_landlock_rules {
	uint64_t fs;     /* LANDLOCK_ACCESS_FS_* */
	uint64_t net;    /* LANDLOCK_ACCESS_NET_* */
	uint64_t scoped; /* LANDLOCK_SCOPE_* */
};

/* Pure: what a cell under `set` gets on a kernel of ABI `abi`. All zero
 * when nothing is to be enforced. */
void rt_landlock_rules_for(int abi, const struct policy_landlock *set, struct rt_landlock_rules *out);

/* Restrict the calling process (and its future children) for the cell
 * whose root is now "/": every handled file right beneath "/", reading
 * beneath keep_read_fd (the writable layer kept for commit; -1: none),
 * and, when the policy asks for it, TCP connect to ports[0..nports) only
 * (none: to no port; entries <= 0 are skipped). Needs no_new_privs. Returns the ABI applied (0: nothing
 * to apply, or no Landlock), -1 with err filled on failure. */
int rt_landlock_restrict(const struct policy_landlock *set, int keep_read_fd, const int *ports,
			 size_t nports, struct sc_err *err);

/* For a host-side helper that serves a cell but needs no file of its own
 * beyond the fds it holds (the egress proxy): read and execute anywhere
 * (name resolution reads /etc and loads NSS modules), write, create,
 * remove, truncate and device ioctl nowhere; abstract unix sockets and
 * signals scoped. Needs no_new_privs. The ABI applied, 0 without
 * Landlock, -1 with err filled. */
int rt_landlock_restrict_read_only(struct sc_err *err);

/* The parts of `rules` in words ("filesystem, truncate, ..."), into buf;
 * "none" when empty. */
void rt_landlock_describe(const struct rt_landlock_rules *rules, char *buf, size_t size);
