/* The end of a long-lived cell, in one place: its cgroups (cgroup.c),
 * its init's register entry, its on-disk layer and its state directory
 * (state.c); and the orphans a crash left: inits whose state directory is
 * gone. */
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/parse.h"
#include "../common/subid.h"
#include "cgroup.h"
#include "snapshot.h"
#include "state.h"

void rt_teardown_drop_init_entry(const char *dir, const struct cell_info *info)
{
	char entry[SC_PATH_BUF];
	if (info->pid > 0 && rt_state_init_entry(dir, info->pid, info->starttime, entry, sizeof(entry)) == 0 &&
	    unlink(entry) == 0) {
		*strrchr(entry, '/') = '\0';
		rmdir(entry); /* when it is empty */
	}
}

int rt_teardown_remove(const char *dir, const struct cell_info *info, struct sc_err *err)
{
	rt_teardown_drop_init_entry(dir, info);
	if (info->cgroup[0]) {
		struct cell_cgroup cg;
		rt_cgroup_from_saved(&cg, info->cgroup);
		if (rt_cgroup_destroy(&cg, err) < 0)
			return -1;
	}
	/* The shared layer it stood on goes with its last user. Before the
	 * state directory, whose info names the layer: a removal killed
	 * half-way and done again still finds it (dropping a user twice is
	 * harmless). Nothing of the cell uses the layer now: its init and
	 * mounts are gone. */
	if (info->snapshot[0]) {
		char who[RT_SNAP_WHO_LEN];
		snprintf(who, sizeof(who), "c@%s", info->name);
		rt_snapshot_unref(info->snapshot, who);
	}
	/* the message names the tree; errno is the first failure's inside it */
	struct sc_err inner = {0};
	if (info->persist_dir[0] && sc_remove_tree_path(info->persist_dir, &inner) < 0)
		return sc_fail(err, inner.errnum, "remove %s", info->persist_dir);
	if (sc_remove_tree_path(dir, &inner) < 0)
		return sc_fail(err, inner.errnum, "remove %s", dir);
	return 0;
}

/* Whether the host uid of pid is one a cell of this caller runs as: the
 * caller's own, or (root) the caller's subordinate range. */
static bool ours(pid_t pid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	ssize_t n = sc_read_small(AT_FDCWD, path, 0, buf, sizeof(buf) - 1, NULL);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	const char *u = strstr(buf, "\nUid:");
	unsigned long ruid;
	if (!u || sscanf(u + 5, "%lu", &ruid) != 1)
		return false;
	if (ruid == (unsigned long)getuid())
		return true;
	struct sc_subid_range r;
	struct sc_err ignored;
	return getuid() == 0 && sc_subid_range(&r, &ignored) == 0 && ruid >= r.uid_start &&
	       ruid - r.uid_start < r.count;
}

size_t rt_teardown_gc_orphans(const char *state_root)
{
	char reg[SC_PATH_BUF];
	if (sc_path(reg, sizeof(reg), "%s/.inits", state_root) < 0)
		return 0;
	_cleanup_fd_ int rfd = open(reg, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_dir_ DIR *d = sc_opendir_at(rfd);
	if (!d)
		return 0;
	size_t killed = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		int pid;
		unsigned long long start;
		char tail;
		if (sscanf(e->d_name, "%d-%llu%c", &pid, &start, &tail) != 2 || pid <= 1 || !start)
			continue;
		struct cell_info want = {.pid = pid, .starttime = start};
		if (!rt_state_alive(&want)) { /* it ended: the entry goes */
			unlinkat(rfd, e->d_name, 0);
			continue;
		}
		char name[64] = "", dir[SC_PATH_BUF];
		ssize_t n = sc_read_small(rfd, e->d_name, SC_READ_NOFOLLOW | SC_READ_REGULAR, name,
					  sizeof(name) - 1, NULL);
		if (n <= 0)
			continue;
		name[n] = '\0';
		if (!sc_valid_name(name) || sc_path(dir, sizeof(dir), "%s/%s", state_root, name) < 0)
			continue;
		struct cell_info info;
		struct sc_err ignored;
		if (rt_state_read_info(dir, &info, &ignored) == 0 && info.pid == pid &&
		    info.starttime == start)
			continue; /* its cell is there: not an orphan */
		/* pin the process, then check again that it is the one
		 * registered (not a reused pid) and runs as one of our cells */
		_cleanup_fd_ int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
		if (pfd < 0 || !rt_state_alive(&want) || !ours(pid))
			continue;
		if (syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0) == 0) {
			killed++;
			unlinkat(rfd, e->d_name, 0);
			/* its cgroups too, once it is dead (not a minute later) */
			struct pollfd p = {.fd = pfd, .events = POLLIN};
			if (poll(&p, 1, 2000) == 1)
				(void)rt_cgroup_remove_dead(name);
		}
	}
	rmdir(reg); /* when it is empty */
	return killed;
}
