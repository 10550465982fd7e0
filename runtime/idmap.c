/* The cell's uid/gid map: a rootless caller maps only itself (cell root =
 * the caller); a root caller maps cell ids onto an unprivileged host range
 * so that an escaped process is nobody on the host. */
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "../common/parse.h"
#include "internal.h"

/* systemd's documented container range (524288-1879048191), which useradd
 * never hands out; the first 64K block of it. */
#define DEFAULT_RANGE_START 524288u
#define DEFAULT_RANGE_COUNT 65536u

static int read_small_file(const char *path, char *buf, size_t size)
{
	_cleanup_fd_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	ssize_t n = sc_read_all(fd, buf, size - 1);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

static void range_from_file(const char *path, uint32_t *start, uint32_t *count)
{
	char buf[16384];
	if (read_small_file(path, buf, sizeof(buf)) == 0 &&
	    sc_parse_subid(buf, "sandcell", start, count) == 0 && *count >= 1)
		return;
	*start = DEFAULT_RANGE_START;
	*count = DEFAULT_RANGE_COUNT;
}

int idmap_for_caller(struct idmap *m, struct sc_err *err)
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
	static uint32_t uid_start, gid_start, ucount, gcount;
	pthread_mutex_lock(&mu);
	if (read_by != getpid()) {
		range_from_file("/etc/subuid", &uid_start, &ucount);
		range_from_file("/etc/subgid", &gid_start, &gcount);
		read_by = getpid();
	}
	pthread_mutex_unlock(&mu);
	m->uid_start = uid_start;
	m->gid_start = gid_start;
	m->count = ucount < gcount ? ucount : gcount;
	if (m->count > DEFAULT_RANGE_COUNT)
		m->count = DEFAULT_RANGE_COUNT;
	if (m->uid_start == 0 || m->gid_start == 0)
		return sc_fail(err, 0, "the sandcell id range in /etc/subuid or /etc/subgid starts at 0 (use an unprivileged range)");
	m->range = true;
	return 0;
}

int idmap_format(uint32_t start, uint32_t count, char *buf, size_t size)
{
	if (count == 0 || (uint64_t)start + count > UINT32_MAX)
		return -1;
	int n = snprintf(buf, size, "0 %u %u\n", start, count);
	return (n < 0 || (size_t)n >= size) ? -1 : 0;
}

int idmap_write(pid_t pid, const struct idmap *m, struct sc_err *err)
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
	if (idmap_format(m->uid_start, m->count, map, sizeof(map)) < 0)
		return sc_fail(err, 0, "bad uid range %u+%u", m->uid_start, m->count);
	if (sc_write_file(path, map, err) < 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
	if (idmap_format(m->gid_start, m->count, map, sizeof(map)) < 0)
		return sc_fail(err, 0, "bad gid range %u+%u", m->gid_start, m->count);
	return sc_write_file(path, map, err);
}
