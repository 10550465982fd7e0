/* Private to runtime/: starting a cell (see start.c). */
#pragma once
#include "cgroup.h"
#include "internal.h"

struct rt_start {
	struct cell_plan plan;
	struct idmap map;
	struct cell_cgroup cg;
	pid_t pid;     /* host pid of the cell's init */
	int pidfd;
	int status_rd; /* records from init (struct cell_msg) */
	int sync_fd;   /* our end of the go channel */
	int egress_fd; /* the cell's 127.0.0.1:3128 listener (spec->egress), or -1 */
	int tty_master; /* spec->tty: the master of the cell's own pty, or -1 */
	/* the host side's own fds (the stdin relay's write end and terminal),
	 * which the child closes before anything else; -1: none */
	int host_only[2];
	/* Renewing a cell (cell_renew): its user and network namespaces and
	 * its cgroup (the info file's form), which the new init joins instead
	 * of making its own; -1 and NULL for a new cell. */
	int reuse_userns, reuse_netns;
	const char *reuse_cgroup;
};

void rt_start_init(struct rt_start *st);
/* stdio: fds for the cell's 0/1/2, or -1 for /dev/null. */
int rt_start(struct rt_start *st, const struct cell_spec *spec, const char *cell_id,
	       const int stdio[3], struct sc_err *err);
void rt_start_kill(struct rt_start *st);
void rt_start_cleanup(struct rt_start *st);
int rt_start_read_msg(int fd, struct cell_msg *m);
/* An fd the child hands over on the go channel (rt_chan_send_fd: its
 * egress listener, its pty's master); on failure the child's error record
 * when there is one. */
int rt_start_recv_fd(int sync_fd, int status_rd, int timeout_ms, char tag, const char *what,
		     int *out, struct sc_err *err);
