/* Private to runtime/: copying files and directories through a pipe, as a
 * stream of records, so that each side touches only its own filesystem:
 * the cell side runs inside the cell (its paths resolve in the cell), the
 * host side creates entries beneath the named destination and never
 * follows a symlink. Paths in the stream are checked on reading. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "../common/sc.h"

#define COPY_MAX_PATH 4096
#define COPY_MAX_ENTRIES 1000000
#define COPY_MAX_SKIP_LINES 20 /* lines about FIFOs/devices left out; then a count */

/* Send `path` (a file, symlink or directory tree; symlinks are sent as
 * symlinks, never followed; FIFOs, sockets and devices are named but not
 * copied, and the receiver logs one line for each) to fd. Fails past max_size bytes of data. */
int rt_copy_send(int fd, int dir_fd, const char *path, uint64_t max_size, struct sc_err *err);
/* The same for `path` in the cell, by a worker of its init (cellpath.h). */
int rt_copy_send_cell(int fd, const char *path, uint64_t max_size, struct sc_err *err);
/* rt_copy_receive flags */
#define COPY_STRIP_SPECIAL 1u /* drop setuid/setgid/sticky bits (host side) */
#define COPY_KEEP_LINKS 4u    /* keep every symlink as it is; without it,
			       * links whose target is absolute or leaves the
			       * copied tree are dropped (one line to log) */
#define COPY_DEST_IN_CELL 8u /* dest is resolved in the cell's root by a
			       * worker of its init (cellpath.h), not as a
			       * host path */
#define COPY_AS_DEST 2u       /* the entry becomes dest even when dest is an
			       * existing directory (merged into it) */
/* Receive a stream into dest: when dest is an existing directory the
 * entry lands inside it under its own name (unless COPY_AS_DEST), else it
 * is created as dest. */
int rt_copy_receive(int fd, const char *dest, uint64_t max_size, unsigned flags,
		    const struct sc_log *log, struct sc_err *err);
