/* Private to runtime/: starting a cell (see start.c). */
#pragma once
#include "cgroup.h"
#include "internal.h"

struct cell_start {
	struct cell_plan plan;
	struct idmap map;
	struct cell_cgroup cg;
	pid_t pid;     /* host pid of the cell's init */
	int pidfd;
	int status_rd; /* records from init (struct cell_msg) */
	int sync_fd;   /* our end of the go channel */
	int egress_fd; /* the cell's 127.0.0.1:3128 listener (spec->egress), or -1 */
};

void cell_start_init(struct cell_start *st);
/* stdio: fds for the cell's 0/1/2, or -1 for /dev/null. */
int cell_start(struct cell_start *st, const struct cell_spec *spec, const char *cell_id,
	       const int stdio[3], struct sc_err *err);
void cell_start_kill(struct cell_start *st);
void cell_start_cleanup(struct cell_start *st);
int cell_start_read_msg(int fd, struct cell_msg *m);
