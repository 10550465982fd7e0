/* Holding a cell still while its files are read (fork, checkpoint): the
 * cgroup v2 freezer where the cell has a leaf, else SIGSTOP (which no
 * process can catch or ignore) to every process under its init, found
 * again until no new one appears, then SIGCONT to the same ones. Init
 * itself is left running: it writes no file of the cell. */
#include <stdlib.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "hold.h"
#include "procs.h"

#define HOLD_ROUNDS 64
#define HOLD_WAIT_STEPS 20000 /* of 100 us: at most 2 s for a state change */

static void pause_briefly(void)
{
	struct timespec ts = {0, 100000};
	nanosleep(&ts, NULL);
}

static int write_freeze(const char *cg, const char *v)
{
	char path[SC_PATH_BUF];
	if (sc_path(path, sizeof(path), "%s/cgroup.freeze", cg) < 0)
		return -1;
	int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	int rc = sc_write_all(fd, v, 1);
	close(fd);
	return rc;
}

static bool cgroup_frozen(const char *cg)
{
	char path[SC_PATH_BUF], buf[256];
	if (sc_path(path, sizeof(path), "%s/cgroup.events", cg) < 0)
		return false;
	ssize_t n = sc_read_small(AT_FDCWD, path, 0, buf, sizeof(buf) - 1, NULL);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return strstr(buf, "frozen 1") != NULL;
}

static void note_ns(struct rt_hold *h, pid_t init);

static bool held(const struct rt_hold *h, pid_t pid)
{
	for (size_t i = 0; i < h->n; i++)
		if (h->pids[i] == pid)
			return true;
	return false;
}

/* Whether pid names a process of the cell now: in its pid namespace, or
 * where that cannot be read (a rootless caller may not look at init's,
 * which is not dumpable) a child of init or of a held process. */
static bool in_cell(const struct rt_hold *h, pid_t pid)
{
	char path[64];
	if (h->ns_ino) {
		struct stat st;
		snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
		return stat(path, &st) == 0 && st.st_dev == h->ns_dev && st.st_ino == h->ns_ino;
	}
	struct rt_proc_stat st;
	return rt_proc_stat(pid, &st) && (st.ppid == h->init || held(h, st.ppid));
}

/* Signal pid only if it is a process of the cell. A pid read from /proc
 * may be reused by a host process before it is signalled (a cell can
 * churn processes to make that likely): the pidfd pins one process, and a
 * signal that reaches it through the pidfd means it was alive, so it held
 * pid when it was checked. */
static bool signal_in_cell(const struct rt_hold *h, pid_t pid, int sig)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0)
		return false;
	bool ok = in_cell(h, pid) && syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0) == 0;
	close(fd);
	return ok;
}

/* One pass over /proc: stop what is new below init (its children,
 * theirs, ...). How many were new. */
static int stop_new(struct rt_hold *h, pid_t init, struct sc_err *err)
{
	pid_t *below;
	ssize_t nb = rt_procs_below(init, &below, RT_PROCS_MAX, err);
	if (nb < 0)
		return -1;
	int added = 0;
	for (ssize_t k = 0; k < nb && added >= 0; k++) {
		if (held(h, below[k]))
			continue;
		if (h->n == RT_HOLD_MAX_PIDS) {
			added = sc_fail(err, 0, "the cell runs more than %d processes", RT_HOLD_MAX_PIDS);
			break;
		}
		if (signal_in_cell(h, below[k], SIGSTOP)) {
			h->pids[h->n++] = below[k];
			added++;
		}
	}
	free(below);
	return added;
}

/* Each stopped process has stopped (state T), or is gone. */
static void wait_stopped(const struct rt_hold *h)
{
	for (size_t i = 0; i < h->n; i++)
		for (int k = 0; k < HOLD_WAIT_STEPS; k++) {
			struct rt_proc_stat st;
			if (!rt_proc_stat(h->pids[i], &st) || st.state == 'T' || st.state == 't' ||
			    st.state == 'Z' || st.state == 'X')
				break;
			pause_briefly();
		}
}

int rt_hold_still(struct rt_hold *h, pid_t init, const char *cgroup, struct sc_err *err)
{
	memset(h, 0, sizeof(*h));
	if (cgroup[0] && strncmp(cgroup, RT_CG_V1_PREFIX, strlen(RT_CG_V1_PREFIX)) != 0 &&
	    write_freeze(cgroup, "1") == 0) {
		snprintf(h->cgroup, sizeof(h->cgroup), "%s", cgroup);
		for (int k = 0; k < HOLD_WAIT_STEPS && !cgroup_frozen(cgroup); k++)
			pause_briefly();
		if (cgroup_frozen(cgroup))
			return 0;
		rt_hold_release(h);
		return sc_fail(err, ETIMEDOUT, "the cell's cgroup did not freeze");
	}
	note_ns(h, init);
	for (int round = 0; round < HOLD_ROUNDS; round++) {
		int added = stop_new(h, init, err);
		if (added < 0) {
			rt_hold_release(h);
			return -1;
		}
		wait_stopped(h);
		/* a stopped process forks no more: a pass with nothing new
		 * means every process is held */
		if (added == 0)
			return 0;
	}
	rt_hold_release(h);
	return sc_fail(err, EAGAIN, "the cell kept starting processes while it was held");
}

void rt_hold_release(struct rt_hold *h)
{
	if (h->cgroup[0])
		(void)write_freeze(h->cgroup, "0");
	for (size_t i = 0; i < h->n; i++)
		(void)signal_in_cell(h, h->pids[i], SIGCONT);
	h->n = 0;
	h->cgroup[0] = '\0';
}

/* Fill h's pid namespace (for in_cell) from init's. */
static void note_ns(struct rt_hold *h, pid_t init)
{
	char ns[64];
	struct stat st;
	h->init = init;
	snprintf(ns, sizeof(ns), "/proc/%d/ns/pid", (int)init);
	if (stat(ns, &st) == 0) {
		h->ns_dev = st.st_dev;
		h->ns_ino = st.st_ino;
	}
}

int rt_hold_thaw(pid_t init, struct sc_err *err)
{
	struct rt_hold *h = calloc(1, sizeof(*h));
	if (!h)
		return sc_fail(err, ENOMEM, "thaw");
	note_ns(h, init);
	pid_t *below;
	ssize_t nb = rt_procs_below(init, &below, RT_PROCS_MAX, err);
	/* parents come before their children: each one let go vouches for
	 * its children where the pid namespace cannot be read (in_cell) */
	for (ssize_t k = 0; k < nb; k++)
		if (signal_in_cell(h, below[k], SIGCONT) && h->n < RT_HOLD_MAX_PIDS)
			h->pids[h->n++] = below[k];
	if (nb >= 0)
		free(below);
	free(h);
	return nb < 0 ? -1 : 0;
}
