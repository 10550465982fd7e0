/* Ownership of layers made by a root caller. A root caller's cells map
 * cell ids 0..N onto an unprivileged host range (runtime/idmap.c), so a
 * layer file owned by host root would be "nobody" in the cell. Layers are
 * therefore written already shifted into that range: cell root owns its
 * image's files, and on the host they belong to no real user. The range
 * is the one rule of common/subid.c, which runtime/idmap.c uses too. */
#include <string.h>

#include "../common/subid.h"
#include "internal.h"

int rootfs_idshift_for_caller(struct idshift *s, struct sc_err *err)
{
	memset(s, 0, sizeof(*s));
	if (geteuid() != 0)
		return 0;
	struct sc_subid_range r;
	if (sc_subid_range(&r, err) < 0)
		return -1;
	s->uid_start = r.uid_start;
	s->gid_start = r.gid_start;
	s->count = r.count;
	s->chown = true;
	return 0;
}
