/* Private to runtime/: one regular file read or written inside a cell, by
 * a worker of its init (fileops.c). Both return 0 or an errno value:
 * ENOENT, EISDIR, EINVAL (not a regular file), EACCES, EEXIST (create),
 * EFBIG (more than max bytes arrived), ... */
#pragma once
#include <stdint.h>

#include "../common/sc.h"
#include "copy.h"
#include "proto.h"

/* Send the file's bytes to out: at most max + 1, so that the reader can
 * tell a larger file. */
int rt_fileop_read(int out, const char *path, uint64_t max);
/* Write what arrives on in (a pipe) as the file's new contents.
 * PROTO_FILE_CREATE: a new file, 0644, its missing parent directories
 * made (0755); else an existing regular file, truncated first. Both with
 * PROTO_FILE_REPLACE: the new file, else the existing one. */
int rt_fileop_write(int in, const char *path, uint64_t max, unsigned flags);

/* REQ_CONNECT's worker (portconnect.c): relay host_fd <-> 127.0.0.1:port;
 * 0, or the errno of the failed connect. */
int rt_port_relay(int host_fd, uint16_t port);
