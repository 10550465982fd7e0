/* Writing a directory tree as a tar stream (ustar + pax headers), e.g. a
 * cell's writable layer for `sandcell commit`. Symlinks are written as
 * symlinks and never followed; FIFOs and device nodes as such (sockets are
 * left out); with overlay set, overlayfs whiteouts (0/0
 * character devices) become OCI whiteout files (.wh.NAME) and opaque
 * directories get a .wh..wh..opq entry. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "sc.h"

struct tarw_opts {
	bool overlay;       /* translate overlayfs whiteouts and opaque dirs */
	uint32_t uid_offset, gid_offset; /* subtracted from owners (0: as on disk) */
	uint64_t max_bytes; /* bound on file data written (0: none) */
};

/* Write the tree under dir_fd (its contents, not the directory itself). */
int sc_tarw_tree(int out_fd, int dir_fd, const struct tarw_opts *o, struct sc_err *err);
