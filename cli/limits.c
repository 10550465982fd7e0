/* The process's open-file limit, raised for what a command will hold. */
#include <sys/resource.h>

#include "cli.h"

int cli_raise_open_files(uint64_t need, uint64_t *have)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return 0;
	if (rl.rlim_cur < need) {
		rlim_t want = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > need ? need : rl.rlim_max;
		struct rlimit raised = {.rlim_cur = want, .rlim_max = rl.rlim_max};
		if (setrlimit(RLIMIT_NOFILE, &raised) == 0)
			rl.rlim_cur = want;
	}
	*have = rl.rlim_cur;
	return rl.rlim_cur < need ? -1 : 0;
}
