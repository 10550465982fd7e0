/* Private to runtime/: a cell's processes as the host's /proc shows them. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/sc.h"

#define RT_PROCS_MAX (1 << 16) /* processes of the host looked at */

/* Fields of /proc/PID/stat (read after the command's closing parenthesis,
 * which the name may contain). Times in clock ticks, rss in pages. */
struct rt_proc_stat {
	pid_t ppid;
	char state;
	uint64_t utime, stime, cutime, cstime;
	uint64_t rss_pages;
};
bool rt_proc_stat(pid_t pid, struct rt_proc_stat *st);

/* The processes below init now (its children, theirs, ...; not init),
 * at most max of them into out (malloc'd): their number, or -1 with err. */
ssize_t rt_procs_below(pid_t init, pid_t **out, size_t max, struct sc_err *err);
