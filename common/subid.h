/* The one rule for the host id range a root caller's cells map and its
 * image layers are shifted into (runtime/idmap.c and rootfs/idshift.c both
 * use it, so a layer is never shifted into a range the cells do not map). */
#pragma once
#include <stdint.h>

#include "sc.h"

/* systemd's documented container range (524288-1879048191), which useradd
 * never hands out; the first 64K block of it. */
#define SC_SUBID_DEFAULT_START 524288u
#define SC_SUBID_DEFAULT_COUNT 65536u

struct sc_subid_range {
	uint32_t uid_start, gid_start;
	uint32_t count; /* the same for uids and gids */
};

/* The rule, on the texts of /etc/subuid and /etc/subgid (NULL: absent or
 * unreadable): the "sandcell" entry of each, else the default range; the
 * count is the smaller of the two, at most SC_SUBID_DEFAULT_COUNT. A
 * "sandcell" entry that starts at 0 (host root) is refused, not ignored. */
int sc_subid_range_from(const char *subuid, const char *subgid, struct sc_subid_range *r,
			struct sc_err *err);
/* The same on the host's /etc/subuid and /etc/subgid. Thread-safe. */
int sc_subid_range(struct sc_subid_range *r, struct sc_err *err);
