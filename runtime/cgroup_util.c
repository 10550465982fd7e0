/* What cgroup.c, cgroup_v2.c and cgroup_v1.c share: reading and writing
 * a cgroup file, rmdir, the host probe (once per process), the subtree of
 * cell cgroups and the age rule of gc. */
#include "cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cgroup_probe.h"
#include "pidinfo.h"

/* younger cgroups may belong to a cell being started right now */
#define CG_GC_MIN_AGE_S 60.0

ssize_t rt_cg_read_at(int dfd, const char *name, char *buf, size_t size)
{
	return sc_read_small(dfd, name, SC_READ_NOFOLLOW, buf, size, NULL);
}

int rt_cg_write_at(int dfd, const char *name, const char *val)
{
	_cleanup_fd_ int fd = openat(dfd, name, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	/* cgroup files take one write; a short one would be a partial value */
	ssize_t n = write(fd, val, strlen(val));
	if (n < 0)
		return -1;
	if ((size_t)n != strlen(val)) {
		errno = EIO;
		return -1;
	}
	return 0;
}

/* The host's cgroup setup, probed once per process (mountinfo, our own
 * cgroup, the controllers): a pool worker or a batch makes many cells,
 * and the answer does not change under it. Moving ourselves into our
 * leaf (move_self_to_leaf) keeps it true: that step is idempotent. */
const struct cg_host *rt_cg_host(void)
{
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	static struct cg_host h;
	static pid_t probed_by;
	pthread_mutex_lock(&mu);
	if (probed_by != getpid()) {
		rt_cgroup_host_status(&h);
		probed_by = getpid();
	}
	pthread_mutex_unlock(&mu);
	return &h;
}

/* rmdir, retrying briefly while the last exits settle. */
int rt_cg_rmdir_at(int parent, const char *name)
{
	for (int i = 0; unlinkat(parent, name, AT_REMOVEDIR) < 0; i++) {
		if (errno == ENOENT)
			return 0;
		if (errno != EBUSY || i >= 200)
			return -1;
		struct timespec ts = {0, 5 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	return 0;
}

bool rt_cg_stale(int parent, const char *name)
{
	struct stat st;
	struct timespec now, boot;
	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
		return false;
	clock_gettime(CLOCK_REALTIME, &now);
	clock_gettime(CLOCK_BOOTTIME, &boot);
	if ((double)(now.tv_sec - st.st_mtim.tv_sec) >= CG_GC_MIN_AGE_S)
		return true;
	/* Younger: it may belong to a cell being started right now, unless
	 * the sandcell process that made it is gone (a killed `run`). */
	long pid = rt_cg_leaf_creator(name);
	if (pid <= 0)
		return false;
	uint64_t ticks = rt_pid_starttime((pid_t)pid);
	if (ticks == 0)
		return true; /* gone, or a zombie */
	/* alive: the creator only if it started before the cgroup was made */
	long hz = sysconf(_SC_CLK_TCK);
	double started = (double)(now.tv_sec - boot.tv_sec) + (double)ticks / (double)(hz > 0 ? hz : 100);
	return started > (double)st.st_mtim.tv_sec + 2.0;
}

int rt_cg_open_subtree(const char *mount)
{
	char dir[PATH_MAX];
	if (!mount[0] || sc_path(dir, sizeof(dir), "%s/" CG_SUBTREE, mount) < 0)
		return errno = ENOENT, -1;
	return open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
}
