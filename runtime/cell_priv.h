/* Private to runtime/: the cell handle. */
#pragma once
#include <limits.h>

#include "../common/parse.h"
#include "cell.h"
#include "state.h"

struct cell {
	char name[64];
	char dir[PATH_MAX];
	struct cell_info info;
	bool child;  /* init is our child: reap it */
	int pidfd;   /* -1 unless we created it */
	bool have_token;
	uint8_t token[32]; /* from the state directory's token file (proto.h) */
	uint64_t lease;    /* cell_pool_acquire's take of it (copies share it), or 0 */
};


/* client.c */
int rt_query_info(struct cell *c, unsigned *nprocs, unsigned *nexecs, struct sc_err *err);
/* The same request: init's statfs of the cell's root, bytes used and the
 * filesystem's size (0, 0 from an init that does not tell). */
int rt_query_disk(struct cell *c, uint64_t *used, uint64_t *size, struct sc_err *err);
/* fork.c: cell_remove without dropping the cell's checkpoints (rollback). */
int rt_cell_remove_keep_checkpoints(const char *name, struct sc_err *err);
/* init's fds of its user and network namespaces (REQ_NAMESPACES),
 * O_CLOEXEC, unchecked: 0 or -1. */
int rt_query_namespaces(struct cell *c, int fds[2], struct sc_err *err);
/* init's fd of the cell's writable state (REQ_STATE_FD), O_CLOEXEC. */
int rt_query_state_fd(struct cell *c, struct sc_err *err);
