/* The cell's uid/gid map: a rootless caller maps only itself (cell root =
 * the caller); a root caller maps cell ids onto an unprivileged host range
 * so that an escaped process is nobody on the host. */
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "../common/subid.h"
#include "internal.h"

int rt_idmap_for_caller(struct idmap *m, struct sc_err *err)
{
	memset(m, 0, sizeof(*m));
	if (geteuid() != 0) {
		m->uid_start = geteuid();
		m->gid_start = getegid();
		m->count = 1;
		return 0;
	}
	/* read once per process: a pool worker or a batch makes many cells */
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	static pid_t read_by;
	static struct sc_subid_range range;
	static struct sc_err range_err;
	static int range_rc;
	pthread_mutex_lock(&mu);
	if (read_by != getpid()) {
		range_rc = sc_subid_range(&range, &range_err);
		read_by = getpid();
	}
	struct sc_subid_range r = range;
	int rc = range_rc;
	if (rc < 0 && err)
		*err = range_err;
	pthread_mutex_unlock(&mu);
	if (rc < 0)
		return -1;
	m->uid_start = r.uid_start;
	m->gid_start = r.gid_start;
	m->count = r.count;
	m->range = true;
	return 0;
}

int rt_idmap_format(uint32_t start, uint32_t count, char *buf, size_t size)
{
	if (count == 0 || (uint64_t)start + count > UINT32_MAX)
		return -1;
	int n = snprintf(buf, size, "0 %u %u\n", start, count);
	return (n < 0 || (size_t)n >= size) ? -1 : 0;
}

int rt_idmap_write(pid_t pid, const struct idmap *m, struct sc_err *err)
{
	char path[64], map[64];
	if (!m->range) {
		/* Without CAP_SETGID in the parent namespace, setgroups must be
		 * denied before a gid map may be written. */
		snprintf(path, sizeof(path), "/proc/%d/setgroups", (int)pid);
		if (sc_write_file(path, "deny", err) < 0)
			return -1;
	}
	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	if (rt_idmap_format(m->uid_start, m->count, map, sizeof(map)) < 0)
		return sc_fail(err, 0, "bad uid range %u+%u", m->uid_start, m->count);
	if (sc_write_file(path, map, err) < 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
	if (rt_idmap_format(m->gid_start, m->count, map, sizeof(map)) < 0)
		return sc_fail(err, 0, "bad gid range %u+%u", m->gid_start, m->count);
	return sc_write_file(path, map, err);
}
