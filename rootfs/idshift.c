/* Ownership of layers made by a root caller. A root caller's cells map
 * cell ids 0..N onto an unprivileged host range (runtime/idmap.c). Where
 * the kernel and the data directory's filesystem allow, a layer keeps the
 * image's own owners (host root owns root's files, so an escaped cell
 * process cannot change them) and cells see it through an idmapped mount.
 * Elsewhere (or with SANDCELL_LAYER_IDMAP=0) layers are written shifted
 * into the range: cell root owns its image's files, and on the host they
 * belong to no real user. The range is the one rule of common/subid.c,
 * which runtime/idmap.c uses too. */
#include <string.h>

#include "../common/idmapfs.h"
#include "../common/subid.h"
#include "internal.h"

int rootfs_idshift_for_caller(struct idshift *s, const char *data_root, struct sc_err *err)
{
	memset(s, 0, sizeof(*s));
	if (geteuid() != 0)
		return 0;
	struct sc_subid_range r;
	if (sc_subid_range(&r, err) < 0)
		return -1;
	s->chown = true;
	s->count = r.count; /* ids beyond it are nobody either way */
	struct sc_err why = {0};
	s->shifted = sc_idmap_layers_supported(data_root, r.uid_start, r.gid_start, r.count, &why) != 1;
	if (s->shifted) {
		s->uid_start = r.uid_start;
		s->gid_start = r.gid_start;
	}
	return 0;
}
