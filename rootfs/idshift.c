/* Ownership of layers made by a root caller. A root caller's cells map
 * cell ids 0..N onto an unprivileged host range (runtime/idmap.c), so a
 * layer file owned by host root would be "nobody" in the cell. Layers are
 * therefore written already shifted into that range: cell root owns its
 * image's files, and on the host they belong to no real user. The range
 * is read the same way as runtime/idmap.c does: the "sandcell" entry of
 * /etc/subuid and /etc/subgid, else 524288 + 65536. */
#include <fcntl.h>
#include <string.h>

#include "../common/parse.h"
#include "internal.h"

#define DEFAULT_START 524288u
#define DEFAULT_COUNT 65536u

static void range_from(const char *path, uint32_t *start, uint32_t *count)
{
	char buf[16384];
	*start = DEFAULT_START;
	*count = DEFAULT_COUNT;
	_cleanup_fd_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;
	ssize_t n = sc_read_all(fd, buf, sizeof(buf) - 1);
	if (n < 0)
		return;
	buf[n] = '\0';
	uint32_t s, c;
	if (sc_parse_subid(buf, "sandcell", &s, &c) == 0 && c >= 1 && s != 0) {
		*start = s;
		*count = c;
	}
}

void idshift_for_caller(struct idshift *s)
{
	memset(s, 0, sizeof(*s));
	if (geteuid() != 0)
		return;
	uint32_t ucount, gcount;
	range_from("/etc/subuid", &s->uid_start, &ucount);
	range_from("/etc/subgid", &s->gid_start, &gcount);
	s->count = ucount < gcount ? ucount : gcount;
	if (s->count > DEFAULT_COUNT)
		s->count = DEFAULT_COUNT;
	s->chown = true;
}
