#include "pidinfo.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/sc.h"

uint64_t rt_pid_starttime(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (sc_read_small(AT_FDCWD, path, 0, buf, sizeof(buf), NULL) <= 0)
		return 0;
	/* comm may contain spaces and parens: fields resume after the last ')'. */
	char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return 0;
	char state = p[2];
	if (state == 'Z' || state == 'X')
		return 0;
	p += 2;
	for (int field = 3; field < 22 && p; field++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	return p ? strtoull(p, NULL, 10) : 0;
}
