/* Whether a root caller's image layers can stay owned by the image's own
 * ids (host root) and be shown to cells through idmapped mounts
 * (mount_setattr MOUNT_ATTR_IDMAP), instead of being stored shifted into
 * the cells' host range. overlayfs takes idmapped lower layers from Linux
 * 5.19; the filesystem under the data directory must support idmapped
 * mounts too. rootfs decides how to store a layer with it, doctor shows it. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "sc.h"

/* The variable that, set to 0, forces shifted layers (the fallback). */
#define SC_IDMAP_ENV "SANDCELL_LAYER_IDMAP"

/* 1: layers under dir can be idmapped onto a user namespace that maps
 * 0..count-1 onto uid_start/gid_start; 0: not (why says why); root only
 * (others get 0). Forks a short-lived child (async-signal-safe calls only),
 * so it may be called from a multi-threaded process. */
int sc_idmap_layers_supported(const char *dir, uint32_t uid_start, uint32_t gid_start,
			      uint32_t count, struct sc_err *why);
