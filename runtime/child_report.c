/* How the cell's side reports to the host side over the status pipe. A leaf
 * used by the post-clone child, the one-shot init and the exec server. */
#include <string.h>

#include "internal.h"

void rt_child_send(int fd, int kind, int value, const char *text)
{
	struct cell_msg m = {.kind = kind, .value = value};
	if (text)
		snprintf(m.text, sizeof(m.text), "%s", text);
	(void)sc_write_all(fd, &m, sizeof(m));
}

void rt_child_die(const struct cell_plan *plan, const struct sc_err *err)
{
	rt_child_send(plan->status_fd, CELL_MSG_ERROR, err->errnum, err->msg);
	_exit(CELL_EXIT_INTERNAL);
}
