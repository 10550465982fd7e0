/* Private to runtime/: hold a cell still while its files are read. */
#pragma once
#include <sys/types.h>

#include "../common/sc.h"

#define RT_HOLD_MAX_PIDS 4096

struct rt_hold {
	char cgroup[4096]; /* frozen through this v2 cgroup, or "" */
	pid_t pids[RT_HOLD_MAX_PIDS]; /* else these were sent SIGSTOP */
	size_t n;
	pid_t init;
	dev_t ns_dev;      /* the cell's pid namespace (0: unknown): a pid is */
	ino_t ns_ino;      /* signalled only while it names a process in it */
};

/* Freeze the cell whose init is `init` (its saved cgroup path, "" for
 * none): the cgroup v2 freezer, else SIGSTOP to each process under init.
 * Returns once all are held. rt_hold_release undoes it. */
int rt_hold_still(struct rt_hold *h, pid_t init, const char *cgroup, struct sc_err *err);
void rt_hold_release(struct rt_hold *h);
/* SIGCONT to each process under init: a cell held with SIGSTOP whose
 * struct rt_hold is gone (cell_resume after cell_pause) goes on. */
int rt_hold_thaw(pid_t init, struct sc_err *err);
