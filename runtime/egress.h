/* Private to runtime/: egress by allowlist (egress.c). The cell's child
 * makes 127.0.0.1:3128 in its network namespace and hands the listening
 * socket to the host side, which serves it with net_proxy_serve: a thread
 * of cell_run, or a helper process for a long-lived cell that ends when
 * the cell's init does. */
#pragma once
#include <pthread.h>

#include "internal.h"

/* In the child, after lo is up: listen on 127.0.0.1:3128 and send the
 * socket to the parent over plan->sync_fd (tagged RT_CHAN_TAG_EGRESS; the
 * parent takes it with rt_start_recv_fd). No-op without spec->egress. */
int rt_egress_child_listen(const struct cell_plan *plan, struct sc_err *err);

/* cell_run: the proxy as a thread of this process. */
struct egress_run {
	bool running;
	pthread_t thread;
	int stop_rd, stop_wr;
	struct net_proxy_config cfg;
	struct net_summary *sum;
	int rc;
	struct sc_err err;
};
void rt_egress_run_init(struct egress_run *e);
/* Takes listen_fd. */
int rt_egress_run_start(struct egress_run *e, const struct cell_spec *spec, int listen_fd,
		     const char *cell, struct sc_err *err);
/* Stop, wait for the connections to end, hand the summary to res. */
void rt_egress_run_finish(struct egress_run *e, struct cell_result *res);

/* Long-lived cells: a detached helper process (double-forked, reaped here)
 * serving listen_fd until cell_pidfd says init has exited, logging to
 * <dir>/egress.jsonl. With the cell's cgroup (cgroup: its path, or "" /
 * NULL), the helper moves itself into a leaf "egress" beside the cell's
 * own: its memory and tasks count against the cell's limits and the
 * cell's teardown (cgroup.kill) ends it too. Takes nothing: the caller
 * still closes its fds. */
int rt_egress_spawn_helper(const struct cell_spec *spec, int listen_fd, int cell_pidfd,
			const char *dir, const char *cell, const char *cgroup, struct sc_err *err);
