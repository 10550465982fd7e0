/* Landlock for the cell's init (see landlock.h). */
#include "landlock.h"

#include <fcntl.h>
#include <linux/landlock.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Debian 12's uapi header stops at ABI 2; the values are the kernel's. */
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#endif
#ifndef LANDLOCK_ACCESS_NET_CONNECT_TCP
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#endif
#ifndef LANDLOCK_SCOPE_SIGNAL
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif
#define RULE_NET_PORT 2 /* LANDLOCK_RULE_NET_PORT */

/* The ruleset attribute and the port rule as the newest kernels know
 * them; older ones get the prefix they know (the size says which). */
struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net; /* ABI 4 */
	uint64_t scoped;             /* ABI 6 */
};
struct ll_net_port_attr {
	uint64_t allowed_access;
	uint64_t port;
};

#define FS_ABI1 ((1ULL << 13) - 1) /* execute .. make_sym */
#define FS_READ (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)

int rt_landlock_abi(void)
{
	long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	return v > 0 ? (int)v : 0;
}

void rt_landlock_rules_for(int abi, const struct policy_landlock *set, struct rt_landlock_rules *out)
{
	*out = (struct rt_landlock_rules){0};
	if (abi < 1)
		return;
	/* ABI 1 refuses every rename or link into another directory, even
	 * beneath one rule (EXDEV): mv, pip and editors' atomic saves would
	 * break. The file rules start at ABI 2, which can allow them. */
	if (!set->no_filesystem && abi >= 2) {
		out->fs = FS_ABI1 | LANDLOCK_ACCESS_FS_REFER;
		if (abi >= 3)
			out->fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
		if (abi >= 5)
			out->fs |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	}
	if (abi >= 4 && set->connect == POLICY_CONNECT_PROXY)
		out->net = LANDLOCK_ACCESS_NET_CONNECT_TCP;
	if (abi >= 6 && !set->no_scope)
		out->scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
}

static size_t attr_size(int abi)
{
	if (abi >= 6)
		return sizeof(struct ll_ruleset_attr);
	if (abi >= 4)
		return offsetof(struct ll_ruleset_attr, scoped);
	return offsetof(struct ll_ruleset_attr, handled_access_net);
}

static int add_beneath(int ruleset, int dir, uint64_t access, const char *what, struct sc_err *err)
{
	struct landlock_path_beneath_attr pb = {.allowed_access = access, .parent_fd = dir};
	if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
		return sc_fail(err, errno, "landlock: allow %s", what);
	return 0;
}

static int add_rules(int ruleset, const struct rt_landlock_rules *r, int keep_read_fd,
		     const int *ports, size_t nports, struct sc_err *err)
{
	if (r->fs) {
		_cleanup_fd_ int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (root < 0)
			return sc_fail(err, errno, "landlock: open the cell's root");
		if (add_beneath(ruleset, root, r->fs, "the cell's root", err) < 0)
			return -1;
		if (keep_read_fd >= 0 &&
		    add_beneath(ruleset, keep_read_fd, r->fs & FS_READ, "the writable layer", err) < 0)
			return -1;
	}
	for (size_t i = 0; r->net && i < nports; i++) {
		if (ports[i] <= 0)
			continue;
		struct ll_net_port_attr np = {.allowed_access = LANDLOCK_ACCESS_NET_CONNECT_TCP,
					      .port = (uint64_t)ports[i]};
		if (syscall(SYS_landlock_add_rule, ruleset, RULE_NET_PORT, &np, 0) < 0)
			return sc_fail(err, errno, "landlock: allow connecting to port %d", ports[i]);
	}
	return 0;
}

int rt_landlock_restrict(const struct policy_landlock *set, int keep_read_fd, const int *ports,
			 size_t nports, struct sc_err *err)
{
	int abi = rt_landlock_abi();
	struct rt_landlock_rules r;
	rt_landlock_rules_for(abi, set, &r);
	if (!r.fs && !r.net && !r.scoped)
		return 0;
	struct ll_ruleset_attr attr = {
		.handled_access_fs = r.fs, .handled_access_net = r.net, .scoped = r.scoped};
	_cleanup_fd_ int ruleset =
		(int)syscall(SYS_landlock_create_ruleset, &attr, attr_size(abi), 0);
	if (ruleset < 0)
		return sc_fail(err, errno, "landlock: create the ruleset (ABI %d)", abi);
	if (add_rules(ruleset, &r, keep_read_fd, ports, nports, err) < 0)
		return -1;
	if (syscall(SYS_landlock_restrict_self, ruleset, 0) < 0)
		return sc_fail(err, errno, "landlock: restrict the cell");
	return abi;
}

int rt_landlock_restrict_read_only(struct sc_err *err)
{
	int abi = rt_landlock_abi();
	struct policy_landlock set = {0};
	struct rt_landlock_rules r;
	rt_landlock_rules_for(abi, &set, &r);
	if (!r.fs)
		return 0;
	struct ll_ruleset_attr attr = {.handled_access_fs = r.fs, .scoped = r.scoped};
	_cleanup_fd_ int ruleset =
		(int)syscall(SYS_landlock_create_ruleset, &attr, attr_size(abi), 0);
	if (ruleset < 0)
		return sc_fail(err, errno, "landlock: create the ruleset (ABI %d)", abi);
	_cleanup_fd_ int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return sc_fail(err, errno, "landlock: open /");
	if (add_beneath(ruleset, root, r.fs & (FS_READ | LANDLOCK_ACCESS_FS_EXECUTE), "reading /",
			err) < 0)
		return -1;
	if (syscall(SYS_landlock_restrict_self, ruleset, 0) < 0)
		return sc_fail(err, errno, "landlock: restrict the helper");
	return abi;
}

void rt_landlock_describe(const struct rt_landlock_rules *r, char *buf, size_t size)
{
	const struct {
		bool on;
		const char *name;
	} parts[] = {
		{r->fs != 0, "filesystem"},
		{(r->fs & LANDLOCK_ACCESS_FS_TRUNCATE) != 0, "truncate"},
		{(r->fs & LANDLOCK_ACCESS_FS_IOCTL_DEV) != 0, "device ioctl"},
		{(r->net & LANDLOCK_ACCESS_NET_CONNECT_TCP) != 0, "tcp connect"},
		{(r->scoped & LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET) != 0, "abstract unix sockets"},
		{(r->scoped & LANDLOCK_SCOPE_SIGNAL) != 0, "signals"},
	};
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < SC_ARRAY_LEN(parts); i++) {
		if (!parts[i].on || used >= size)
			continue;
		int n = snprintf(buf + used, size - used, "%s%s", used ? ", " : "", parts[i].name);
		if (n > 0)
			used += (size_t)n;
	}
	if (!used)
		snprintf(buf, size, "none");
}
